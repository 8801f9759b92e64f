"""The results directory of SPEC §7.

``run.json`` is rewritten atomically (temp file, fsync, rename) whenever the run's status
changes; ``results.jsonl`` gets one line per completed point, appended and fsync'd before the
next point starts, so an interrupt or crash never loses a completed point.  A torn last line
(power cut mid-append) is ignored on read and the point is simply run again by ``resume``.

Every write cleans up after itself when it fails (full filesystem, I/O error, interrupt): a failed
``run.json`` rewrite removes its temp file and leaves the previous ``run.json``; a failed append cuts
``results.jsonl`` back to its last complete line; a failed raw file is removed.  A run keeps a small
reserve file (``.space-reserve``, :data:`RESERVE_MIN_BYTES` or more) while it runs, deleted to make room
for the last ``run.json`` update when the filesystem fills up.
"""

from __future__ import annotations

import errno
import json
import os
import re
import stat
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from app.errors import UsageError

RUN_JSON = "run.json"
RESULTS_JSONL = "results.jsonl"
RAW = "raw"
RESERVE = ".space-reserve"
# the reserve: at least 64 KiB, and twice the size of run.json when the run starts
RESERVE_MIN_BYTES = 64 * 1024


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


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def _named(e: OSError, path: Path) -> OSError:
    """``e`` naming ``path`` (a failed write() or fsync() names no file)."""
    if e.filename is None:
        e.filename = str(path)
    return e


def write_new(path: Path, data: bytes, *, fsync: bool = False) -> None:
    """Write ``path`` (created or truncated); when that fails, for whatever reason, remove it again.
    An OSError names ``path``."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC | os.O_NOFOLLOW, 0o644)
    try:
        try:
            _write_all(fd, data)
            if fsync:
                os.fsync(fd)
        finally:
            os.close(fd)
    except BaseException as e:
        try:
            os.unlink(path)
        except OSError:
            pass
        if isinstance(e, OSError):
            raise _named(e, path)
        raise


def write_atomic(path: Path, text: str) -> None:
    """Replace ``path`` with ``text`` all at once (temp file, fsync, rename).  On failure the temp file
    is removed and ``path`` keeps its previous content."""
    tmp = path.with_name(f".{path.name}.tmp")
    write_new(tmp, text.encode("utf-8"), fsync=True)
    try:
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    _fsync_dir(path.parent)


def check_dir_path(path: Path) -> list[Path]:
    """Refuse, before anything is written, a results directory that cannot be one (UsageError, exit 2,
    one sentence): ``path`` or a parent is a file, the name is too long, the nearest existing directory
    is not writable (permission, read-only filesystem).  Returns the missing directories, innermost first."""
    missing: list[Path] = []
    p = path
    while True:
        try:
            st = os.stat(p)
        except FileNotFoundError:
            if os.path.islink(p):
                raise UsageError(f"{path}: {p} is a dangling symbolic link; choose a directory for the results.") from None
            missing.append(p)
            if p.parent == p:
                break
            p = p.parent
            continue
        except NotADirectoryError:
            missing.append(p)
            p = p.parent
            continue
        except OSError as e:
            raise UsageError(f"{path}: cannot be used as a results directory ({e.strerror}).") from None
        if not stat.S_ISDIR(st.st_mode):
            what = "is not a directory" if p == path else f"cannot be created: {p} is not a directory"
            raise UsageError(f"{path}: {what}; choose a directory for the results.")
        if not os.access(p, os.W_OK | os.X_OK):
            from app.container import unwritable_hint  # says which flag or permission to change

            code = errno.EROFS if _read_only(p) else errno.EACCES
            what = "" if p == path else "cannot be created: "
            raise UsageError(f"{path}: {what}{unwritable_hint(p, OSError(code, os.strerror(code)))}")
        return missing
    return missing


def _read_only(path: Path) -> bool:
    try:
        return bool(os.statvfs(path).f_flag & os.ST_RDONLY)
    except OSError:
        return False


def make_dirs(path: Path) -> list[Path]:
    """Create ``path`` and its missing parents; the directories created, outermost first.

    Refusals are one sentence (UsageError, exit 2), see :func:`check_dir_path`.  Whatever this call
    created is removed again when it fails.
    """
    missing = check_dir_path(path)
    created: list[Path] = []
    try:
        for d in reversed(missing):
            created.append(d)  # before mkdir: an interrupt right after it still finds it on the list
            try:
                os.mkdir(d)
            except FileExistsError:
                created.pop()  # made by someone else meanwhile: not ours to remove
                if not os.path.isdir(d):
                    raise UsageError(f"{path}: cannot be created: {d} is not a directory.") from None
            except OSError as e:
                created.pop()
                raise UsageError(f"{path}: cannot be created ({e.strerror}).") from None
    except BaseException:
        remove_dirs(created)
        raise
    return created


def remove_dirs(created: list[Path]) -> None:
    """Remove directories :func:`make_dirs` created, innermost first, if they are (still) empty."""
    for d in reversed(created):
        try:
            os.rmdir(d)
        except FileNotFoundError:
            continue
        except OSError:
            return


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

    def check_empty(self) -> None:
        """UsageError when the directory already holds a run (call it holding the directory's lock)."""
        if self.exists() or (self.results_jsonl.exists() and self.results_jsonl.stat().st_size):
            raise UsageError(
                f"{self.path} already holds a run; finish it with `profiler-tui resume {self.path}` "
                "or choose another --out directory."
            )

    def create(self, meta: dict[str, Any]) -> None:
        """The directory (with its parents) if missing, raw/, an empty results.jsonl and run.json.  When
        this fails what it made is removed again, so a refused run leaves nothing behind.  (A run calls
        it holding the directory's lock.)"""
        made: list[Path] = make_dirs(self.path)
        try:
            self.check_empty()
            if not self.raw_dir.is_dir():
                self.raw_dir.mkdir()
                made.append(self.raw_dir)
            if not self.results_jsonl.exists():
                write_new(self.results_jsonl, b"")
                made.append(self.results_jsonl)
            made.append(self.run_json)
            self.write_meta(meta)
        except BaseException:
            for p in reversed(made):
                try:
                    p.rmdir() if p.is_dir() else p.unlink()
                except OSError:
                    pass  # not there (yet), or not empty
            raise

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
        """Append one line and fsync it; when that fails the file is cut back to its previous end, so it
        never keeps a partial line of a point that was not recorded."""
        line = json.dumps(record, separators=(",", ":"), default=str) + "\n"
        fd = os.open(self.results_jsonl, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o644)
        try:
            end = os.lseek(fd, 0, os.SEEK_END)
            try:
                _write_all(fd, line.encode("utf-8"))
                os.fsync(fd)
            except BaseException as e:
                try:
                    os.ftruncate(fd, end)
                except OSError:
                    pass
                if isinstance(e, OSError):
                    raise _named(e, self.results_jsonl)
                raise
        finally:
            os.close(fd)

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
        """Write raw/NNNN-stem.suffix (removed again if the write fails); returns its path relative to
        the directory."""
        self.raw_dir.mkdir(parents=True, exist_ok=True)
        safe = re.sub(r"[^A-Za-z0-9_.+-]", "_", stem)
        path = self.raw_dir / f"{index:04d}-{safe}{suffix}"
        write_new(path, content if isinstance(content, bytes) else content.encode("utf-8"))
        return str(path.relative_to(self.path))

    # --- the space reserve ------------------------------------------------------------------------

    @property
    def reserve(self) -> Path:
        return self.path / RESERVE

    def make_reserve(self) -> bool:
        """Set space aside for the final run.json update (best effort: False when the filesystem has
        no room even for that)."""
        try:
            size = max(RESERVE_MIN_BYTES, 2 * self.run_json.stat().st_size)
        except OSError:
            size = RESERVE_MIN_BYTES
        try:
            fd = os.open(self.reserve, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC | os.O_NOFOLLOW, 0o600)
        except OSError:
            return False
        try:
            try:
                os.posix_fallocate(fd, 0, size)
            except OSError as e:
                if e.errno not in (errno.EOPNOTSUPP, errno.EINVAL):
                    raise
                _write_all(fd, bytes(size))  # a filesystem without fallocate: real blocks
                os.fsync(fd)
            return True
        except OSError:
            self.drop_reserve()
            return False
        finally:
            os.close(fd)

    def drop_reserve(self) -> None:
        try:
            os.unlink(self.reserve)
        except OSError:
            pass
