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

Root's fio reads its job files in raw/, so a results directory that another user could change is refused, and a
run, resume or import holds the directory and raw/ by descriptor (:meth:`ResultsDir.open`, :func:`foreign`;
docs/safety.md, "The results directory"); directories are made 0755 and files 0644 whatever the umask.

Reading is defensive (a results directory is untrusted input): :meth:`ResultsDir.read_records`
keeps, of several lines with the same plan ``index``, the last one (a point measured again
replaces the earlier measurement), and leaves out, counting them, the lines that the one reader of a
results line, :func:`app.model.records.read_line`, refuses.  At most ``MAX_RESULTS_BYTES`` are read, lines longer than
``MAX_LINE_BYTES`` are left out, and at most ``MAX_RECORDS`` points are kept.
run.json is read and written by :mod:`app.model.runmeta` (:meth:`ResultsDir.read_meta`, :meth:`ResultsDir.write_meta`).
"""

from __future__ import annotations

import errno
import json
import os
import re
import stat
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, BinaryIO, Callable, Iterable, Iterator, Mapping, Sequence

from app.core.errors import ProfilerError, UsageError
from app.core.owners import foreign as foreign
from app.core.owners import trusted_uids as trusted_uids
from app.model.records import SCHEMA_VERSION as SCHEMA_VERSION  # run.json carries it too
from app.model.records import (
    JSONObject,
    LineError,
    ResultLine,
    line_json,
    plan_keys,
    plan_mismatch,
    read_line,
    write_line,
)
from app.model.runmeta import RunMeta, RunMetaError
from app.model.runmeta import dumps as dumps_run_json
from app.model.runmeta import parse as parse_run_json

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
MAX_PROBLEMS = 20  # lines left out that Records names one by one


@dataclass
class Records:
    """What :meth:`ResultsDir.read_records` read: the records, and the lines it did not use."""

    lines: list[ResultLine]
    unreadable: int = 0  # lines left out: not JSON, not an object, missing or ill-typed fields
    replaced: int = 0  # earlier lines of a plan index that a later line measured again
    # why, for the first MAX_PROBLEMS of them: one sentence each naming the file, line and key (app.engine.replay shows
    # them)
    problems: list[str] = field(default_factory=list)
    outside: int = 0  # lines left out as a measurement of no plan point (app.model.records.plan_mismatch)
    outside_lines: list[int] = field(default_factory=list)  # their line numbers, the first MAX_PROBLEMS

    def left_out(self, why: str) -> None:
        self.unreadable += 1
        self._name(why)

    def not_in_plan(self, why: str, lineno: int) -> None:
        self.outside += 1
        if len(self.outside_lines) < MAX_PROBLEMS:
            self.outside_lines.append(lineno)
        self._name(why)

    def _name(self, why: str) -> None:
        if len(self.problems) < MAX_PROBLEMS:
            self.problems.append(why)




# what a run directory's name starts with: a preset's name, which names nothing outside the results base
PLAIN_NAME = re.compile(r"[A-Za-z0-9_.-]{1,100}")


def is_plain_name(name: str) -> bool:
    """A name that is one path component inside its directory: letters, digits, '.', '-', '_', not '.' or '..'."""
    return bool(PLAIN_NAME.fullmatch(name)) and name not in (".", "..")


def new_run_dir(base: str | os.PathLike[str], preset_name: str) -> Path:
    """A fresh results directory for one run, ``BASE/PRESET-YYYYmmdd-HHMMSS``, unique even when two runs
    start in the same second (``-2``, ``-3``, … appended).  The preset's name must be a plain name
    (:func:`is_plain_name`), so the directory is always inside ``BASE``."""
    if not is_plain_name(preset_name):
        raise UsageError(f"preset name {preset_name[:100]!r}: a results directory is named after the preset, which "
                         "must be a plain name (letters, digits, '.', '-', '_').")
    stamp = datetime.now().strftime("%Y%m%d-%H%M%S")
    first = Path(base) / f"{preset_name}-{stamp}"
    path, n = first, 1
    while path.exists():
        n += 1
        path = first.with_name(f"{first.name}-{n}")
    return path


def now_iso() -> str:
    return datetime.now(timezone.utc).astimezone().isoformat(timespec="seconds")


def _fsync_dir(path: Path, dir_fd: int | None = None) -> None:
    if dir_fd is not None:
        try:
            os.fsync(dir_fd)
        except OSError:
            pass
        return
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


FILE_MODE = 0o644  # every file of a results directory, whatever the umask
DIR_MODE = 0o755  # every directory of it
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


def file_stamp(path: str | os.PathLike[str], follow: bool = True) -> tuple[int, int, int] | None:
    """A file's identity as a view made from it sees it (inode, size, modification time): what was read from it is
    current while this holds.  None when it cannot be examined.  ``follow``: a symbolic link's target (else the
    link itself)."""
    try:
        st = os.stat(path, follow_symlinks=follow)
    except OSError:
        return None
    return (st.st_ino, st.st_size, st.st_mtime_ns)


def open_file(path: str | os.PathLike[str], flags: int, dir_fd: int | None = None) -> int:
    """``path`` (a name in ``dir_fd`` when given) opened without following a last symbolic link; a file it
    creates gets FILE_MODE whatever the umask.  For writing, the file must be the tool's own, and it is checked
    before it is changed: O_TRUNC is applied only after the check (opened with it, another user's file left in a
    sticky directory, or a hard link to any file, would be emptied before it was refused), and the open does not
    block (a FIFO left under the name would wait for a reader forever; it is refused as not a regular file)."""
    writes = bool(flags & (os.O_WRONLY | os.O_RDWR))
    extra = os.O_NONBLOCK if writes else 0
    fd = os.open(path, (flags & ~os.O_TRUNC) | extra | os.O_CLOEXEC | os.O_NOFOLLOW, FILE_MODE, dir_fd=dir_fd)
    try:
        if writes:
            st = os.fstat(fd)
            # a file someone else left there (in a sticky directory), or a second name of another file: not ours
            if st.st_uid not in trusted_uids() or st.st_nlink > 1 or not stat.S_ISREG(st.st_mode):
                raise OSError(errno.EPERM, "not a file of this tool's (another user's, or a hard link)", str(path))
            os.set_blocking(fd, True)
            if flags & os.O_TRUNC:
                os.ftruncate(fd, 0)
        if flags & os.O_CREAT:
            os.fchmod(fd, FILE_MODE)
    except BaseException:
        os.close(fd)
        raise
    return fd


def write_new(path: str | os.PathLike[str], data: bytes, *, fsync: bool = False, dir_fd: int | None = None) -> None:
    """Write ``path`` (created or truncated; a name in ``dir_fd`` when given, a last symbolic link not
    followed); when that fails, for whatever reason, remove it again.  An OSError names ``path``."""
    fd = open_file(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, dir_fd)
    try:
        try:
            _write_all(fd, data)
            if fsync:
                os.fsync(fd)
        finally:
            os.close(fd)
    except BaseException as e:
        try:
            os.unlink(path, dir_fd=dir_fd)
        except OSError:
            pass
        if isinstance(e, OSError):
            raise _named(e, Path(path))
        raise


def write_atomic(path: Path, text: str, dir_fd: int | None = None) -> None:
    """Replace ``path`` (a name in ``dir_fd`` when given) with ``text`` all at once (temp file, fsync,
    rename).  On failure the temp file is removed and ``path`` keeps its previous content."""
    tmp = path.with_name(f".{path.name}.tmp")
    write_new(tmp, text.encode("utf-8"), fsync=True, dir_fd=dir_fd)
    try:
        os.replace(tmp, path, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
    except BaseException:
        try:
            os.unlink(tmp, dir_fd=dir_fd)
        except OSError:
            pass
        raise
    _fsync_dir(path.parent, dir_fd)


# --- who else can change a results directory -------------------------------------------------------
#
# root runs what it finds in raw/ (fio reads its job files there), so a results directory, raw/ and every
# directory above them must be changeable by root (or the user the tool runs as) alone: owned by one of
# them and not writable by group or others.  A directory above may be world-writable when it is sticky
# (/tmp): others cannot rename or remove what they do not own in it.


RUN_RISK = ("root would run what another user puts there; choose a directory only root can write (or a new one "
            "under it, or under /tmp)")


def _refusal(path: Path, where: str, why: str, risk: str = RUN_RISK) -> UsageError:
    whose = "it" if where == str(path) else where
    return UsageError(f"{path}: {whose} {why}, so {risk}.")


def foreign_above(real: str) -> tuple[str, str] | None:
    """The first directory above ``real`` (a resolved path) that another user can change, as (the directory,
    why: :func:`foreign`), None when there is none; a sticky world-writable one, like /tmp, is fine.  OSError
    naming the directory when one cannot be examined."""
    parent = os.path.dirname(real)
    while True:
        why = foreign(os.lstat(parent), sticky_ok=True)
        if why:
            return parent, why
        if parent == os.path.dirname(parent):
            return None
        parent = os.path.dirname(parent)


def check_parents(path: Path, real: str, risk: str = RUN_RISK) -> None:
    """UsageError (exit 2) unless every directory above ``real`` (the resolved path of ``path``) is
    changeable only by root or this user (a sticky world-writable one, like /tmp, is fine)."""
    try:
        found = foreign_above(real)
    except OSError as e:
        raise UsageError(f"{path}: {e.filename} cannot be examined ({e.strerror}).") from None
    if found:
        raise _refusal(path, *found, risk)


MAX_LINKS = 40  # symbolic links followed in one path, as the kernel's limit


TOO_MANY_LINKS = "has too many levels of symbolic links"


def foreign_link(path: str | os.PathLike[str], _depth: int = 0) -> tuple[str, str] | None:
    """The first symbolic link on the way to ``path`` (and on the way to their targets) that belongs to neither
    root nor this user, as (the link, why), None when there is none: a link another user made (in /tmp, say) would
    choose where root writes.  More than MAX_LINKS links: (``path``, TOO_MANY_LINKS)."""
    if _depth > MAX_LINKS:
        return str(path), TOO_MANY_LINKS
    cur = Path("/")
    for part in Path(os.path.abspath(path)).parts[1:]:
        nxt = cur / part
        try:
            st = os.lstat(nxt)
        except OSError:
            return None  # the rest does not exist (yet): nothing to follow
        if stat.S_ISLNK(st.st_mode):
            if st.st_uid not in trusted_uids():
                return str(nxt), f"is a symbolic link of another user (uid {st.st_uid})"
            found = foreign_link(cur / os.readlink(nxt), _depth + 1)
            if found:
                return found
            nxt = Path(os.path.realpath(nxt))
        cur = nxt
    return None


def check_links(path: Path, risk: str = RUN_RISK) -> None:
    """UsageError unless every symbolic link on the way to ``path`` (and on the way to their targets) belongs to
    root or this user (:func:`foreign_link`)."""
    found = foreign_link(path)
    if found and found[1] == TOO_MANY_LINKS:
        raise UsageError(f"{path}: too many levels of symbolic links.")
    if found:
        raise _refusal(path, *found, risk)


def held_path(fd: int, fallback: Path) -> Path:
    """A path to an open directory for this process and its children (fio, a worker): /proc/PID/fd/N, which
    stays the directory that was opened and checked whatever is renamed or swapped in later (``fallback``, its
    own path, without /proc)."""
    anchor = f"/proc/{os.getpid()}/fd"
    return Path(f"{anchor}/{fd}") if os.path.isdir(anchor) else fallback


def _fd_path(fd: int, fallback: str | os.PathLike[str]) -> str:
    """The path the kernel has for an open directory (where it really is, whatever links led to it)."""
    try:
        return os.readlink(f"/proc/self/fd/{fd}")
    except OSError:
        return os.path.realpath(fallback)


def open_trusted_dir(path: Path, name: str | None = None, dir_fd: int | None = None, *, sticky_ok: bool = False,
                     risk: str = RUN_RISK) -> int:
    """The directory ``path`` (``name`` in ``dir_fd`` when given) opened once, a symbolic link not followed,
    and checked: it and every directory above it changeable only by root or this user (UsageError, exit 2,
    naming what and why, ``risk`` saying what that would allow; a sticky world-writable one only when
    ``sticky_ok``).  Everything in it is then opened relative to the descriptor."""
    if dir_fd is None:
        check_links(path, risk)
    try:
        if dir_fd is None:
            fd = os.open(os.path.realpath(path), _DIR_FLAGS)
        else:
            fd = os.open(name or path.name, _DIR_FLAGS, dir_fd=dir_fd)
    except OSError as e:
        if e.errno in (errno.ELOOP, errno.ENOTDIR):
            raise UsageError(f"{path}: is not a directory (a symbolic link or a file); refusing to use it.") from None
        raise UsageError(f"{path}: cannot be opened ({e.strerror}).") from None
    try:
        why = foreign(os.fstat(fd), sticky_ok=sticky_ok)
        if why:
            raise _refusal(path, str(path), why, risk)
        if dir_fd is None:
            check_parents(path, _fd_path(fd, path), risk)
    except BaseException:
        os.close(fd)
        raise
    return fd


def check_dir_path(path: Path, risk: str | None = RUN_RISK) -> list[Path]:
    """Refuse, before anything is written, a results directory that cannot be one (UsageError, exit 2,
    one sentence): ``path`` or a parent is a file, the name is too long, the nearest existing directory
    is not writable (permission, read-only filesystem), or another user could change it or a directory
    above it (:func:`foreign`; a sticky world-writable parent such as /tmp is fine, the tool makes its own
    directory in it), or a symbolic link on the way is another user's (:func:`check_links`).  Returns the
    missing directories, innermost first.  ``risk``: what another user's access would allow, None for a directory
    that holds no results (a test file's), which gets only the first checks."""
    if risk is not None:
        check_links(path, risk)
    missing: list[Path] = []
    p = path
    while True:
        try:
            st = os.stat(p)
        except FileNotFoundError:
            if os.path.islink(p):
                raise UsageError(f"{path}: {p} is a dangling symbolic link; "
                                 "choose a directory for the results.") from None
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
        why = foreign(st, sticky_ok=p != path)  # the tool's own new directory goes into a sticky /tmp
        if why and risk is not None:
            raise _refusal(path, str(p), why, risk)
        if risk is not None:
            check_parents(path, os.path.realpath(p), risk)
        if not os.access(p, os.W_OK | os.X_OK):
            from app.host.container import unwritable_hint  # says which flag or permission to change

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


def make_dir(name: str | os.PathLike[str], dir_fd: int | None = None) -> None:
    """mkdir, then DIR_MODE whatever the umask (FileExistsError when it exists: not ours)."""
    os.mkdir(name, DIR_MODE, dir_fd=dir_fd)
    fd = os.open(name, _DIR_FLAGS, dir_fd=dir_fd)
    try:
        os.fchmod(fd, DIR_MODE)
    finally:
        os.close(fd)


def make_dirs(path: Path, risk: str | None = RUN_RISK) -> list[Path]:
    """Create ``path`` and its missing parents (DIR_MODE); the directories created, outermost first.

    Refusals are one sentence (UsageError, exit 2), see :func:`check_dir_path`.  Whatever this call
    created is removed again when it fails.  A directory someone else made meanwhile is used only if
    :func:`open_trusted_dir` accepts it later.
    """
    missing = check_dir_path(path, risk)
    created: list[Path] = []
    try:
        for d in reversed(missing):
            created.append(d)  # before mkdir: an interrupt right after it still finds it on the list
            try:
                make_dir(d)
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


def read_regular(path: str | os.PathLike[str], limit: int, *, dir_fd: int | None = None,
                 check: Callable[[os.stat_result], None] | None = None) -> bytes:
    """At most ``limit + 1`` bytes of the regular file ``path`` (a name in ``dir_fd`` when given; one more than the
    limit: the caller sees it was longer), opened without following a last symlink, blocking on a FIFO or taking a
    terminal.  OSError when it cannot be read, :class:`NotRegularFile` when it is no regular file.  ``check`` is
    given the status of the file opened (not of a path that could change meanwhile) before anything is read, and
    raises to refuse it (its owner, its mode)."""
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC | os.O_NOCTTY, dir_fd=dir_fd)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise NotRegularFile(f"{path} is not a regular file")
        if check is not None:
            check(st)
        chunks: list[bytes] = []
        got = 0
        while got <= limit and (chunk := os.read(fd, min(1 << 20, limit + 1 - got))):
            chunks.append(chunk)
            got += len(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)


def json_objects(lines: Iterable[str]) -> Iterator[dict[str, Any]]:
    """The JSON objects among ``lines`` (a raw/ file's: samples, histograms), one at a time; a line that is not JSON,
    or not an object, is skipped."""
    for line in lines:
        try:
            v = json.loads(line)
        except ValueError:
            continue
        if isinstance(v, dict):
            yield v


def raw_lines(run_dir: Path, raw: object, key: str, limit: int) -> list[str]:
    """The lines of the raw/ file a results line's ``raw`` object names under ``key``, of its first ``limit`` bytes;
    [] when it names none or the file cannot be read (:func:`read_beneath`: inside the directory, no link, a
    regular file)."""
    rel = raw.get(key) if isinstance(raw, Mapping) else None
    if not isinstance(rel, str) or not rel:
        return []
    try:
        data = read_beneath(run_dir, rel, limit)[:limit]
    except OSError:
        return []
    return data.decode("utf-8", "replace").splitlines()


def read_beneath(base: Path, rel: str, limit: int) -> bytes:
    """:func:`read_regular` of ``rel``, a relative path inside the directory ``base`` (a results directory's
    ``raw/NAME``), no symbolic link followed below ``base``: a ``raw/`` that another user swapped for a link to one
    of root's directories is an OSError (ELOOP, ENOTDIR), never read.  ``rel`` may not be absolute or hold '..'."""
    parts = Path(rel).parts
    if not parts or os.path.isabs(rel) or ".." in parts or "\0" in rel:
        raise OSError(errno.EINVAL, "not a path inside the results directory", rel)
    fd = os.open(base, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        for part in parts[:-1]:
            inner = os.open(part, _DIR_FLAGS, dir_fd=fd)
            os.close(fd)
            fd = inner
        return read_regular(parts[-1], limit, dir_fd=fd)
    finally:
        os.close(fd)


def _open_regular(path: str | os.PathLike[str], dir_fd: int | None = None, shown: Path | None = None) -> BinaryIO:
    """``path`` (a name in ``dir_fd`` when given) opened for binary reading, without following a last symbolic
    link or blocking on a FIFO; UsageError naming ``shown`` unless it is a regular file (OSError, e.g.
    FileNotFoundError, as open() raises it)."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | os.O_NOCTTY | os.O_NOFOLLOW, dir_fd=dir_fd)
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise UsageError(f"{shown or path}: is not a regular file.")
    return os.fdopen(fd, "rb")


class ResultsDir:
    """One results directory.  A run, a resume or an import opens it once (:meth:`open`: the directory
    and raw/, each checked and held by a descriptor); from then on every file is opened relative to those
    descriptors without following a last symbolic link, so a directory or link swapped in later is never
    used.  A reader that never opens it (report, compare) reads by path, files only."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self.fd: int | None = None  # the directory, once opened
        self.raw_fd: int | None = None  # raw/, once opened

    @property
    def run_json(self) -> Path:
        return self.path / RUN_JSON

    @property
    def results_jsonl(self) -> Path:
        return self.path / RESULTS_JSONL

    @property
    def raw_dir(self) -> Path:
        """raw/ as a path for what writes into it, this process and its children (fio reads its job files
        there): once opened, the path of the held descriptor (/proc/PID/fd/N), which stays the directory
        that was checked whatever is renamed or swapped in later."""
        return self.path / RAW if self.raw_fd is None else held_path(self.raw_fd, self.path / RAW)

    def relative(self, path: str | os.PathLike[str]) -> str:
        """A file's path relative to the directory, as results lines record it (``raw/NAME``)."""
        if Path(path).parent == self.raw_dir:
            return f"{RAW}/{Path(path).name}"
        return os.path.relpath(path, self.path)

    def _name(self, name: str) -> str | Path:
        """What to open for ``name``: the name itself relative to :attr:`fd`, or its path before opening."""
        return name if self.fd is not None else self.path / name

    def exists(self) -> bool:
        try:
            return stat.S_ISREG(os.stat(self._name(RUN_JSON), dir_fd=self.fd).st_mode)
        except OSError:
            return False

    # --- the directory, opened once ----------------------------------------------------------

    def open(self) -> "ResultsDir":
        """Open the directory and its raw/ (when there) once, refusing (UsageError, exit 2, one sentence) a
        directory, raw/ or a directory above them that another user owns or can write (:func:`foreign`), or a
        raw/ that is a symbolic link: root's fio reads its job files there."""
        if self.fd is not None:
            return self
        self.fd = open_trusted_dir(self.path)
        try:
            self.open_raw(create=False)
        except BaseException:
            self.close()
            raise
        return self

    def open_raw(self, create: bool = True) -> bool:
        """Open raw/ (the directory must be open), made first when ``create``; True when this call made it."""
        assert self.fd is not None
        if self.raw_fd is not None:
            return False
        made = False
        if create:
            try:
                make_dir(RAW, self.fd)
                made = True
            except FileExistsError:
                pass
        try:
            os.stat(RAW, dir_fd=self.fd, follow_symlinks=False)
        except FileNotFoundError:
            return False
        self.raw_fd = open_trusted_dir(self.path / RAW, RAW, self.fd)
        return made

    def close(self) -> None:
        """Let go of the descriptors (the object reads by path again)."""
        for fd in (self.raw_fd, self.fd):
            if fd is not None:
                os.close(fd)
        self.fd = self.raw_fd = None

    def _unlink(self, name: str) -> None:
        try:
            if name == RAW:
                os.rmdir(self._name(name), dir_fd=self.fd)
            else:
                os.unlink(self._name(name), dir_fd=self.fd)
        except OSError:
            pass  # not there (yet), or not empty

    # --- run.json -------------------------------------------------------------------------

    def _size(self, name: str) -> int | None:
        try:
            return os.stat(self._name(name), dir_fd=self.fd, follow_symlinks=False).st_size
        except OSError:
            return None

    def check_empty(self) -> None:
        """UsageError when the directory already holds a run (call it holding the directory's lock)."""
        if self.exists() or self._size(RESULTS_JSONL):
            raise UsageError(
                f"{self.path} already holds a run; finish it with `profiler-tui resume {self.path}` "
                "or choose another --out directory."
            )

    def create(self, meta: RunMeta) -> None:
        """The directory (with its parents) if missing, raw/, an empty results.jsonl and run.json, the directory
        and raw/ opened (:meth:`open`).  When this fails what it made is removed again, so a refused run leaves
        nothing behind.  (A run calls it holding the directory's lock.)"""
        opened_here = self.fd is None
        made_dirs: list[Path] = make_dirs(self.path) if opened_here else []
        made: list[str] = []
        try:
            self.open()
            self.check_empty()
            if self.open_raw():
                made.append(RAW)
            if self._size(RESULTS_JSONL) is None:
                made.append(RESULTS_JSONL)
                write_new(self._name(RESULTS_JSONL), b"", dir_fd=self.fd)
            made.append(RUN_JSON)
            self.write_meta(meta)
        except BaseException:
            if self.fd is not None:
                for name in reversed(made):
                    if name == RAW and self.raw_fd is not None:
                        os.close(self.raw_fd)
                        self.raw_fd = None
                    self._unlink(name)
            if opened_here:
                self.close()
                remove_dirs(made_dirs)
            raise

    def read_meta(self) -> RunMeta:
        """run.json, read by :func:`app.model.runmeta.parse` (RunMetaError, exit 2, naming the file, key and value)."""
        try:
            with _open_regular(self._name(RUN_JSON), self.fd, self.run_json) as f:
                if os.fstat(f.fileno()).st_size > MAX_RUN_JSON_BYTES:
                    raise RunMetaError(f"{self.run_json}: is larger than {MAX_RUN_JSON_BYTES >> 20} MiB, more than a "
                                       "run.json can be.")
                data = f.read(MAX_RUN_JSON_BYTES + 1)
        except FileNotFoundError:
            raise UsageError(f"{self.path}: not a results directory (no {RUN_JSON}).") from None
        except NotADirectoryError:
            raise UsageError(f"{self.path}: not a results directory (not a directory).") from None
        except OSError as e:
            raise UsageError(f"{self.run_json}: cannot be read ({e.strerror or e}).") from None
        return parse_run_json(data, self.run_json)

    def write_meta(self, meta: RunMeta) -> None:
        write_atomic(Path(self._name(RUN_JSON)), dumps_run_json(meta), self.fd)

    def update_meta(self, **changes: object) -> RunMeta:
        """run.json with ``changes`` (:meth:`app.model.runmeta.RunMeta.with_changes`), written atomically."""
        meta = self.read_meta().with_changes(**changes)
        self.write_meta(meta)
        return meta

    # --- results.jsonl ----------------------------------------------------------------------

    def append(self, record: ResultLine) -> None:
        """Append one line (:func:`app.model.records.write_line`) and fsync it; when that fails the file is cut back
        to its previous end, so it never keeps a partial line of a point that was not recorded."""
        line = write_line(record)
        fd = open_file(self._name(RESULTS_JSONL), os.O_WRONLY | os.O_APPEND | os.O_CREAT, self.fd)
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

    def lines(self, plan: Sequence[object] | None = None) -> list[ResultLine]:
        """The usable lines (see :meth:`read_records`)."""
        return self.read_records(plan).lines

    def plan_lines(self) -> list[ResultLine]:
        """The lines that measure a point of run.json's plan (:meth:`read_records` with that plan); every usable
        line when run.json cannot be read (a reader that shows what there is)."""
        try:
            plan: Sequence[object] | None = self.read_meta().plan
        except ProfilerError:
            plan = None
        return self.lines(plan)

    def records(self) -> list[JSONObject]:
        """The usable lines as the JSON objects they were written as (tests and tools that look at the file)."""
        return [line_json(line) for line in self.lines()]

    def read_records(self, plan: Sequence[object] | None = None) -> Records:
        """Every complete, well-formed line; of lines with the same ``index`` (and ``host``) the last; a torn,
        garbled or ill-typed line is left out and counted (``unreadable``).  With a ``plan`` (run.json's plan
        tables; an empty one checks nothing) a line that measures none of its points — no index, an index past
        its end, or a point other than the plan's at its index (:func:`app.model.records.plan_mismatch`) — is left out
        and counted (``outside``) before the later line of an index replaces an earlier one, so it never
        replaces a measurement."""
        keys = plan_keys(plan) if plan else None
        out = Records([])
        by_index: dict[tuple[int | None, str | None], int] = {}  # (index, fleet host) -> position in out.lines
        try:
            f = _open_regular(self._name(RESULTS_JSONL), self.fd, self.results_jsonl)
        except FileNotFoundError:
            return out
        except OSError as e:
            raise UsageError(f"{self.results_jsonl}: cannot be read ({e.strerror}).") from None
        with f:
            st = os.fstat(f.fileno())
            if st.st_size > MAX_RESULTS_BYTES:
                raise UsageError(f"{self.results_jsonl}: is larger than {MAX_RESULTS_BYTES >> 20} MiB, more than a "
                                 "results file can be.")
            lineno = 0
            while True:
                raw = f.readline(MAX_LINE_BYTES + 1)
                if not raw:
                    break
                if len(raw) > MAX_LINE_BYTES and not raw.endswith(b"\n"):
                    lineno += 1
                    out.left_out(f"{self.results_jsonl}, line {lineno}: is longer than {MAX_LINE_BYTES >> 20} MiB.")
                    while raw and not raw.endswith(b"\n"):  # the rest of the over-long line
                        raw = f.readline(MAX_LINE_BYTES)
                    continue
                lineno += 1
                text = raw.decode("utf-8", "replace").strip()
                if not text:
                    continue
                try:
                    rec = read_line(text, self.results_jsonl, lineno)
                except LineError as e:
                    out.left_out(str(e))
                    continue
                if keys is not None and (why := plan_mismatch(rec, keys)) is not None:
                    out.not_in_plan(f"{self.results_jsonl}, line {lineno}: {why}: it measures no point of the plan "
                                    "and is left out.", lineno)
                    continue
                key = (rec.index, rec.host)  # a fleet run has a line per point and host
                if rec.index is not None and key in by_index:
                    out.lines[by_index[key]] = rec  # measured again: the later line wins
                    out.replaced += 1
                    continue
                if len(out.lines) >= MAX_RECORDS:
                    raise UsageError(f"{self.results_jsonl}: holds more than {MAX_RECORDS:,} points, more than a "
                                     "plan can have.")
                if rec.index is not None:
                    by_index[key] = len(out.lines)
                out.lines.append(rec)
        return out

    def repair_tail(self) -> None:
        """Terminate a torn last line so the next append starts on a line of its own."""
        try:
            with os.fdopen(open_file(self._name(RESULTS_JSONL), os.O_RDWR, self.fd), "rb+") as f:
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
        safe = re.sub(r"[^A-Za-z0-9_.+-]", "_", stem)
        return self.write_raw_file(f"{index:04d}-{safe}{suffix}", content)

    def write_raw_file(self, name: str, content: str | bytes) -> str:
        """Write raw/NAME (removed again if the write fails); returns ``raw/NAME``."""
        if self.fd is not None:
            self.open_raw()
        data = content if isinstance(content, bytes) else content.encode("utf-8")
        if self.raw_fd is not None:
            write_new(name, data, dir_fd=self.raw_fd)
        else:
            self.raw_dir.mkdir(parents=True, exist_ok=True)
            write_new(self.raw_dir / name, data)
        return f"{RAW}/{name}"

    # --- the space reserve ------------------------------------------------------------------------

    @property
    def reserve(self) -> Path:
        return self.path / RESERVE

    def make_reserve(self) -> bool:
        """Set space aside for the final run.json update (best effort: False when the filesystem has
        no room even for that)."""
        size = max(RESERVE_MIN_BYTES, 2 * (self._size(RUN_JSON) or 0))
        try:
            fd = open_file(self._name(RESERVE), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, self.fd)
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
        self._unlink(RESERVE)
