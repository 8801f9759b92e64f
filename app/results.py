"""The results directory of SPEC §7.

``run.json`` is rewritten atomically (temp file, fsync, rename) whenever the run's status
changes; ``results.jsonl`` gets one line per completed point, appended and fsync'd before the
next point starts, so an interrupt or crash never loses a completed point.  A torn last line
(power cut mid-append) is ignored on read and the point is simply run again by ``resume``.
"""

from __future__ import annotations

import json
import os
import re
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from app.errors import UsageError

RUN_JSON = "run.json"
RESULTS_JSONL = "results.jsonl"
RAW = "raw"


def now_iso() -> str:
    return datetime.now(timezone.utc).astimezone().isoformat(timespec="seconds")


def _fsync_dir(path: Path) -> None:
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_atomic(path: Path, text: str) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(text)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
    _fsync_dir(path.parent)


class ResultsDir:
    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)

    @property
    def run_json(self) -> Path:
        return self.path / RUN_JSON

    @property
    def results_jsonl(self) -> Path:
        return self.path / RESULTS_JSONL

    @property
    def raw_dir(self) -> Path:
        return self.path / RAW

    def exists(self) -> bool:
        return self.run_json.is_file()

    # --- run.json -------------------------------------------------------------------------

    def create(self, meta: dict[str, Any]) -> None:
        if self.exists() or (self.results_jsonl.exists() and self.results_jsonl.stat().st_size):
            raise UsageError(
                f"{self.path} already holds a run; finish it with `profiler-tui resume {self.path}` "
                "or choose another --out directory."
            )
        self.raw_dir.mkdir(parents=True, exist_ok=True)
        self.results_jsonl.touch()
        self.write_meta(meta)

    def read_meta(self) -> dict[str, Any]:
        try:
            meta = json.loads(self.run_json.read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise UsageError(f"{self.path}: not a results directory (no {RUN_JSON}).") from None
        except (OSError, json.JSONDecodeError) as e:
            raise UsageError(f"{self.run_json}: cannot be read ({e}).") from None
        if not isinstance(meta, dict):
            raise UsageError(f"{self.run_json}: expected a JSON object.")
        return meta

    def write_meta(self, meta: dict[str, Any]) -> None:
        write_atomic(self.run_json, json.dumps(meta, indent=2, default=str) + "\n")

    def update_meta(self, **changes: Any) -> dict[str, Any]:
        meta = self.read_meta()
        meta.update(changes)
        self.write_meta(meta)
        return meta

    # --- results.jsonl ----------------------------------------------------------------------

    def append(self, record: dict[str, Any]) -> None:
        line = json.dumps(record, separators=(",", ":"), default=str)
        with open(self.results_jsonl, "a", encoding="utf-8") as f:
            f.write(line + "\n")
            f.flush()
            os.fsync(f.fileno())

    def records(self) -> list[dict[str, Any]]:
        """Every complete line; a torn or garbled line is skipped."""
        out: list[dict[str, Any]] = []
        try:
            text = self.results_jsonl.read_text(encoding="utf-8", errors="replace")
        except FileNotFoundError:
            return out
        for line in text.splitlines():
            line = line.strip()
            if not line:
                continue
            try:
                rec = json.loads(line)
            except json.JSONDecodeError:
                continue
            if isinstance(rec, dict) and "point" in rec and "metrics" in rec:
                out.append(rec)
        return out

    def repair_tail(self) -> None:
        """Terminate a torn last line so the next append starts on a line of its own."""
        try:
            with open(self.results_jsonl, "rb+") as f:
                f.seek(0, os.SEEK_END)
                if f.tell() == 0:
                    return
                f.seek(-1, os.SEEK_END)
                if f.read(1) != b"\n":
                    f.write(b"\n")
                    f.flush()
                    os.fsync(f.fileno())
        except FileNotFoundError:
            pass

    # --- raw/ --------------------------------------------------------------------------------

    def write_raw(self, index: int, stem: str, suffix: str, content: str | bytes) -> str:
        """Write raw/NNNN-stem.suffix; returns its path relative to the directory."""
        self.raw_dir.mkdir(parents=True, exist_ok=True)
        safe = re.sub(r"[^A-Za-z0-9_.+-]", "_", stem)
        path = self.raw_dir / f"{index:04d}-{safe}{suffix}"
        mode = "wb" if isinstance(content, bytes) else "w"
        with open(path, mode) as f:
            f.write(content)
        return str(path.relative_to(self.path))
