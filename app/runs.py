"""The runs a results root holds: one summary per results directory, for the TUI's runs browser and its bench.

A results root is ``$PROFILER_TUI_RESULTS`` (else ``results/``), plus the container's ``/results`` when it
exists.  Each directory with a ``run.json`` directly under a root is a run; its summary comes from run.json
(read bounded, by :func:`app.runmeta.parse`: a run.json larger than :data:`MAX_META_BYTES`, not JSON, or with
a key of the wrong type is listed as unreadable with that sentence, never an error) and, for a run that did
not end, the lines of results.jsonl that measure a point of its plan, counted as resume counts them.  The
status is :func:`app.lock.effective_status`: ``running`` only while a process holds the directory's lock.

Headless: no UI library; the TUI calls :func:`list_runs` in a thread.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable

from app.errors import ProfilerError
from app.lock import effective_status
from app.results import NotRegularFile, ResultsDir, read_regular
from app.runmeta import RunMeta, RunMetaError
from app.runmeta import parse as parse_run_json

MAX_META_BYTES = 64 << 20  # as app.results reads run.json
MAX_RUNS = 5000  # directories looked at per root, newest names first
CONTAINER_RESULTS = Path("/results")
RESUMABLE = frozenset({"interrupted", "partial", "failed", "planned"})


@dataclass(frozen=True)
class RunSummary:
    path: Path
    preset: str
    kind: str  # storage, memory, mixed, or "?" when run.json does not say
    target: str  # the path measured, "memory" for a memory run, "" when unknown
    started: str  # ISO-8601 as run.json has it ("" when unknown)
    done: int
    planned: int
    status: str  # complete, partial, interrupted, running, failed, planned, imported, unreadable
    problem: str = ""  # why run.json could not be read

    @property
    def resumable(self) -> bool:
        return self.status in RESUMABLE

    def matches(self, words: str) -> bool:
        """Every word of ``words`` appears in one of the shown fields (case-insensitive)."""
        hay = " ".join((self.path.name, self.preset, self.kind, self.target, self.started, self.status)).lower()
        return all(w in hay for w in words.lower().split())


def results_roots(configured: str | os.PathLike[str] | None = None) -> list[Path]:
    """The roots to list: the configured one (or $PROFILER_TUI_RESULTS, else results/) and /results."""
    first = Path(configured or os.environ.get("PROFILER_TUI_RESULTS") or "results")
    roots = [first]
    try:
        if CONTAINER_RESULTS.is_dir() and CONTAINER_RESULTS.resolve() != first.resolve():
            roots.append(CONTAINER_RESULTS)
    except OSError:
        pass
    return roots


def _read_meta(path: Path) -> RunMeta | str:
    """run.json by :func:`app.runmeta.parse`, or why it cannot be read."""
    try:
        data = read_regular(path, MAX_META_BYTES)
    except NotRegularFile:
        return "run.json is not a regular file"
    except OSError as e:
        return e.strerror or str(e)
    if len(data) > MAX_META_BYTES:
        return "run.json is too large"
    try:
        return parse_run_json(data, path)
    except RunMetaError as e:
        return str(e)


def _count_measured(path: Path, meta: RunMeta) -> int:
    """The lines of results.jsonl that measure a point of run.json's plan, counted as resume and the report count
    them (:meth:`app.results.ResultsDir.read_records` with the plan: a torn last line, a line whose index and
    point disagree with the plan are not one); 0 when it cannot be read."""
    try:
        return len(ResultsDir(path).lines(meta.plan))
    except (ProfilerError, OSError):
        return 0


def _text(v: str | None, limit: int = 200) -> str:
    return " ".join(v.split())[:limit] if v is not None else ""


def summarise(path: Path) -> RunSummary:
    """The summary of one results directory (never raises for what it finds there)."""
    meta = _read_meta(path / "run.json")
    if isinstance(meta, str):
        return RunSummary(path, path.name, "?", "", "", 0, 0, "unreadable", meta)
    name = _text(meta.preset_name)
    kind = _text(meta.kind, 16) or "?"
    target = _text(meta.target, 400) or ("memory" if kind == "memory" else "")
    planned = meta.points_total or len(meta.plan)
    hosts = meta.fleet.get("hosts") if meta.fleet is not None else None
    if isinstance(hosts, list) and 0 < len(hosts) <= 4096:  # a fleet run: a result per point and host
        target = f"fleet of {len(hosts)} host{'s' if len(hosts) > 1 else ''}"
        planned *= len(hosts)
    status = str(effective_status(path, meta.status))[:16]
    done = meta.points_done or 0
    if status not in ("complete", "imported") or not done:
        done = _count_measured(path, meta)
    started = _text(meta.started, 40) or _text(meta.imported_at, 40)
    return RunSummary(path, name or path.name, kind, target, started, done, planned, status)


def _candidates(root: Path) -> Iterable[tuple[Path, tuple[int, int]]]:
    """(directory, its device and inode) of each subdirectory of ``root`` holding a run.json."""
    try:
        with os.scandir(root) as it:
            entries = [e for e in it if e.is_dir(follow_symlinks=False)]
    except OSError:
        return []
    entries.sort(key=lambda e: e.name, reverse=True)
    out = []
    for e in entries[:MAX_RUNS]:
        try:
            st = e.stat(follow_symlinks=False)
        except OSError:
            continue
        if os.path.exists(os.path.join(e.path, "run.json")):
            out.append((Path(e.path), (st.st_dev, st.st_ino)))
    return out


def list_runs(roots: Iterable[Path]) -> list[RunSummary]:
    """Every run under the roots, newest first (by start time, then name); a directory reached from two
    roots is listed once."""
    seen: set[tuple[int, int]] = set()
    runs: list[RunSummary] = []
    for root in roots:
        for path, identity in _candidates(root):
            if identity in seen:
                continue
            seen.add(identity)
            runs.append(summarise(path))
    runs.sort(key=lambda r: (r.started, r.path.name), reverse=True)
    return runs
