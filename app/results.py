"""The results directory (README.md, "Results"): run.json, results.jsonl and raw/.

``run.json`` is rewritten atomically (temp file, fsync, rename) whenever the run's status
changes; ``results.jsonl`` gets one line per completed point, appended and fsync'd before the
next point starts, so an interrupt or crash never loses a completed point.  A torn last line
(power cut mid-append) is ignored on read and the point is simply run again by ``resume``.

Every write cleans up after itself when it fails (full filesystem, I/O error, interrupt): a failed
``run.json`` rewrite removes its temp file and leaves the previous ``run.json``; a failed append cuts
``results.jsonl`` back to its last complete line; a failed raw file is removed.  A run keeps a small
reserve file (``.space-reserve``, :data:`RESERVE_MIN_BYTES` or more) while it runs, deleted to make room
for the last ``run.json`` update when the filesystem fills up.

Reading is defensive (a results directory is untrusted input): :meth:`ResultsDir.read_records`
keeps, of several lines with the same plan ``index``, the last one (a point measured again
replaces the earlier measurement), and leaves out, counting them, the lines that are not a JSON
object with ``kind`` storage/memory, ``point`` and ``metrics`` of the types the readers use
(:func:`record_problem`).  At most ``MAX_RESULTS_BYTES`` are read, lines longer than
``MAX_LINE_BYTES`` are left out, and at most ``MAX_RECORDS`` points are kept.
:func:`check_meta` checks the types of the run.json keys that report and compare read.
"""

from __future__ import annotations

import errno
import json
import math
import os
import re
import stat
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from app.errors import UsageError
from app.points import Kind, MemoryPoint, StoragePoint

RUN_JSON = "run.json"
RESULTS_JSONL = "results.jsonl"
RAW = "raw"
RESERVE = ".space-reserve"
# the reserve: at least 64 KiB, and twice the size of run.json when the run starts
RESERVE_MIN_BYTES = 64 * 1024
MAX_RUN_JSON_BYTES = 64 << 20
MAX_RESULTS_BYTES = 256 << 20
MAX_LINE_BYTES = 4 << 20
MAX_RECORDS = 100_000  # points kept from one results.jsonl (a plan has at most this many)
MAX_NUMBER = float(1 << 64)
# the version of the results format (docs/results-schema.md): written into run.json and every results line;
# raised when a key changes meaning or type, not when one is added
SCHEMA_VERSION = 1


@dataclass
class Records:
    """What :meth:`ResultsDir.read_records` read: the records, and the lines it did not use."""

    records: list[dict[str, Any]]
    unreadable: int = 0  # lines left out: not JSON, not an object, missing or ill-typed fields
    replaced: int = 0  # earlier lines of a plan index that a later line measured again


def _json_default(value: object) -> object:
    """What run.json and results.jsonl write for a value JSON has no type for: a plan point as its JSON
    table (:meth:`app.points.StoragePoint.to_dict`, the bytes a dict of its keys gives), anything else
    (a path) as its string."""
    if isinstance(value, (StoragePoint, MemoryPoint)):
        return value.to_dict()
    return str(value)


# --- what a results line must look like to be used ---------------------------------------------------


def _is_num(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) and 0 <= v <= MAX_NUMBER


def _is_int(v: Any, lo: int = 0, hi: float = MAX_NUMBER) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and lo <= v <= hi


_STORAGE_POINT = {"rw": lambda v: isinstance(v, str), "bs": lambda v: _is_int(v, 1),
                  "iodepth": lambda v: v is None or _is_int(v, 1), "numjobs": lambda v: v is None or _is_int(v, 1),
                  "rwmixread": lambda v: v is None or _is_int(v, 0, 100),
                  "ioengine": lambda v: v is None or isinstance(v, str),
                  "direct": lambda v: v is None or isinstance(v, (bool, int)),
                  "group": lambda v: v is None or isinstance(v, str)}
_MEMORY_POINT = {"mode": lambda v: v is None or isinstance(v, str), "traffic": lambda v: v is None or isinstance(v, str),
                 "stride": lambda v: v is None or _is_int(v, 1), "delay": lambda v: v is None or _is_int(v),
                 "buffer": lambda v: v is None or _is_int(v), "engine": lambda v: v is None or isinstance(v, str),
                 "source": lambda v: v is None or isinstance(v, str)}
_STORAGE_NUMBERS = ("iops", "read_iops", "write_iops", "bw_bytes", "read_bw_bytes", "write_bw_bytes", "usr_cpu",
                    "sys_cpu")
_LATENCIES = ("lat_ns", "read_lat_ns", "write_lat_ns")
_MEMORY_NUMBERS = ("latency_ns", "bandwidth_mbps")


def record_problem(rec: Any) -> str | None:
    """Why a parsed results line cannot be used (None when it can): the line must be an object with
    ``kind`` storage or memory, a ``point`` and ``metrics`` object, an optional whole ``index`` ≥ 0;
    the point's workload keys and the metrics the report reads have their types (numbers finite,
    0 … 2^64; null where a value may be unknown)."""
    if not isinstance(rec, dict):
        return "not a JSON object"
    kind, point, metrics = rec.get("kind"), rec.get("point"), rec.get("metrics")
    if kind not in tuple(Kind):
        return "key 'kind' is not storage or memory"
    if not isinstance(point, dict) or not isinstance(metrics, dict):
        return "keys 'point' and 'metrics' must be objects"
    if "index" in rec and not _is_int(rec["index"]):
        return "key 'index' is not a whole number"
    if "host" in rec and not (isinstance(rec["host"], str) and 0 < len(rec["host"]) <= 255):
        return "key 'host' is not a fleet host's name"
    if kind == Kind.STORAGE:
        for key in ("rw", "bs"):
            if key not in point:
                return f"key 'point.{key}' is missing"
        for key, ok in _STORAGE_POINT.items():
            if key in point and not ok(point[key]):
                return f"key 'point.{key}' has the wrong type"
        for key in _STORAGE_NUMBERS:
            if metrics.get(key) is not None and not _is_num(metrics[key]):
                return f"key 'metrics.{key}' is not a number"
        for key in _LATENCIES:
            lat = metrics.get(key)
            if lat is None:
                continue
            if not isinstance(lat, dict):
                return f"key 'metrics.{key}' is not an object"
            for k, v in lat.items():
                if v is not None and not isinstance(v, bool) and not _is_num(v):
                    return f"key 'metrics.{key}.{k}' is not a number"
    else:
        for key, ok in _MEMORY_POINT.items():
            if key in point and not ok(point[key]):
                return f"key 'point.{key}' has the wrong type"
        for key in _MEMORY_NUMBERS:
            if metrics.get(key) is not None and not _is_num(metrics[key]):
                return f"key 'metrics.{key}' is not a number"
    return None


# --- what run.json must look like to be read by report and compare ------------------------------------

_STR, _INT, _DICT, _LIST = "a string", "a whole number", "an object", "a list"
_META_SCHEMA: dict[str, Any] = {
    "schema_version": _INT, "status": _STR, "kind": _STR, "tool": _STR, "started": _STR, "ended": _STR, "imported_at": _STR,
    "target": _STR, "points_total": _INT, "points_done": _INT,
    "plan": _LIST, "failures": [_DICT], "warnings": [_STR],
    "preset": {"name": _STR, "kind": _STR, "description": _STR, "source": _STR, "overrides": [_STR]},
    "sources": [{"file": _STR, "warnings": [_STR]}],
    "environment": {"cpu": {"caches": [_DICT]}, "memory": _DICT, "system": _DICT},
    "tools": _DICT, "target_info": _DICT,
    "procedure": {"precondition": _STR, "rounds": _INT, "track": _DICT, "timeseries": _STR,
                  "telemetry_interval": _INT}, "precondition": _DICT,
    "skipped": [_DICT], "telemetry": _DICT,
}


def _shown(v: Any) -> str:
    try:
        text = json.dumps(v, default=str)
    except (ValueError, RecursionError):
        text = type(v).__name__
    if isinstance(v, str):
        text = "'" + text[1:-1] + "'"
    return text if len(text) <= 60 else text[:59] + "…"


def _check(value: Any, spec: Any, key: str, path: Path, nullable: bool = True) -> None:
    if value is None and nullable:
        return  # null reads as absent, except as an item of a list
    if isinstance(spec, dict):
        if not isinstance(value, dict):
            raise UsageError(f"{path}: key '{key}' has invalid value {_shown(value)}: must be {_DICT}.")
        for k, sub in spec.items():
            if k in value:
                _check(value[k], sub, f"{key}.{k}" if key else k, path)
        return
    if isinstance(spec, list):
        if not isinstance(value, list):
            raise UsageError(f"{path}: key '{key}' has invalid value {_shown(value)}: must be {_LIST}.")
        for i, item in enumerate(value):
            _check(item, spec[0], f"{key}[{i}]", path, nullable=False)
        return
    if value is None:
        raise UsageError(f"{path}: key '{key}' has invalid value null: must be {spec}.")
    ok = {_STR: isinstance(value, str), _INT: _is_int(value), _DICT: isinstance(value, dict),
          _LIST: isinstance(value, list)}[spec]
    if not ok:
        raise UsageError(f"{path}: key '{key}' has invalid value {_shown(value)}: must be {spec}.")


def check_meta(meta: dict[str, Any], path: Path) -> None:
    """UsageError naming the file, key and value unless every run.json key report and compare read
    has its type (null counts as absent)."""
    _check(meta, _META_SCHEMA, "", path)


def new_run_dir(base: str | os.PathLike[str], preset_name: str) -> Path:
    """A fresh results directory for one run, ``BASE/PRESET-YYYYmmdd-HHMMSS``, unique even when two runs
    start in the same second (``-2``, ``-3``, … appended)."""
    stamp = datetime.now().strftime("%Y%m%d-%H%M%S")
    first = Path(base) / f"{preset_name}-{stamp}"
    path, n = first, 1
    while path.exists():
        n += 1
        path = first.with_name(f"{first.name}-{n}")
    return path


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


class NotRegularFile(OSError):
    """A path that is a FIFO, a device, a socket or a directory: not read."""


def read_regular(path: str | os.PathLike[str], limit: int) -> bytes:
    """At most ``limit + 1`` bytes of the regular file ``path`` (one more than the limit: the caller sees it was
    longer), opened without following a last symlink, blocking on a FIFO or taking a terminal.  OSError when
    it cannot be read, :class:`NotRegularFile` when it is no regular file."""
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC | os.O_NOCTTY)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise NotRegularFile(f"{path} is not a regular file")
        chunks: list[bytes] = []
        got = 0
        while got <= limit and (chunk := os.read(fd, min(1 << 20, limit + 1 - got))):
            chunks.append(chunk)
            got += len(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)


def _open_regular(path: Path) -> Any:
    """``path`` opened for binary reading, without blocking on a FIFO; UsageError unless it is a
    regular file (OSError, e.g. FileNotFoundError, as open() raises it)."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | os.O_NOCTTY)
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise UsageError(f"{path}: is not a regular file.")
    return os.fdopen(fd, "rb")


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
            with _open_regular(self.run_json) as f:
                if os.fstat(f.fileno()).st_size > MAX_RUN_JSON_BYTES:
                    raise UsageError(f"{self.run_json}: is larger than {MAX_RUN_JSON_BYTES >> 20} MiB, more than a "
                                     "run.json can be.")
                meta = json.loads(f.read(MAX_RUN_JSON_BYTES + 1).decode("utf-8", "replace"))
        except FileNotFoundError:
            raise UsageError(f"{self.path}: not a results directory (no {RUN_JSON}).") from None
        except NotADirectoryError:
            raise UsageError(f"{self.path}: not a results directory (not a directory).") from None
        except (OSError, ValueError, RecursionError) as e:
            raise UsageError(f"{self.run_json}: cannot be read ({getattr(e, 'strerror', None) or e}).") from None
        if not isinstance(meta, dict):
            raise UsageError(f"{self.run_json}: expected a JSON object.")
        return meta

    def write_meta(self, meta: dict[str, Any]) -> None:
        write_atomic(self.run_json, json.dumps(meta, indent=2, default=_json_default) + "\n")

    def update_meta(self, **changes: Any) -> dict[str, Any]:
        meta = self.read_meta()
        meta.update(changes)
        self.write_meta(meta)
        return meta

    # --- results.jsonl ----------------------------------------------------------------------

    def append(self, record: dict[str, Any]) -> None:
        """Append one line and fsync it; when that fails the file is cut back to its previous end, so it
        never keeps a partial line of a point that was not recorded."""
        line = json.dumps(record, separators=(",", ":"), default=_json_default) + "\n"
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
        """The usable records (see :meth:`read_records`)."""
        return self.read_records().records

    def read_records(self) -> Records:
        """Every complete, well-formed line; of lines with the same ``index`` (and ``host``) the last; a torn,
        garbled or ill-typed line is left out and counted (``unreadable``)."""
        out = Records([])
        by_index: dict[tuple[int, str | None], int] = {}  # (index, fleet host) -> position in out.records
        try:
            f = _open_regular(self.results_jsonl)
        except FileNotFoundError:
            return out
        except OSError as e:
            raise UsageError(f"{self.results_jsonl}: cannot be read ({e.strerror}).") from None
        with f:
            st = os.fstat(f.fileno())
            if st.st_size > MAX_RESULTS_BYTES:
                raise UsageError(f"{self.results_jsonl}: is larger than {MAX_RESULTS_BYTES >> 20} MiB, more than a "
                                 "results file can be.")
            while True:
                raw = f.readline(MAX_LINE_BYTES + 1)
                if not raw:
                    break
                if len(raw) > MAX_LINE_BYTES and not raw.endswith(b"\n"):
                    out.unreadable += 1
                    while raw and not raw.endswith(b"\n"):  # the rest of the over-long line
                        raw = f.readline(MAX_LINE_BYTES)
                    continue
                line = raw.decode("utf-8", "replace").strip()
                if not line:
                    continue
                try:
                    rec = json.loads(line)
                except (ValueError, RecursionError):
                    out.unreadable += 1
                    continue
                if record_problem(rec) is not None:
                    out.unreadable += 1
                    continue
                index = rec.get("index")
                key = (index, rec.get("host"))  # a fleet run has a line per point and host
                if isinstance(index, int) and key in by_index:
                    out.records[by_index[key]] = rec  # measured again: the later line wins
                    out.replaced += 1
                    continue
                if len(out.records) >= MAX_RECORDS:
                    raise UsageError(f"{self.results_jsonl}: holds more than {MAX_RECORDS:,} points, more than a "
                                     "plan can have.")
                if isinstance(index, int):
                    by_index[key] = len(out.records)
                out.records.append(rec)
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
