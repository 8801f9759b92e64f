"""``--tune``: set the benchmark-friendly values the audit names for a run, record the previous ones, put them back.

What is changed: the files each audit :class:`~app.host.audit.Item` with status ``warn`` or ``info`` names in its
``tune`` pairs (the target queue's scheduler → none, wbt_lat_usec → 0, the run's CPUs' scaling_governor →
performance, their deep idle states' ``disable`` → 1, …), only where the file does not already hold the value.
Every path comes from data (the audit read it from sysfs), so it is written only when it lies under the sysfs
root (``/sys``, or ``PROFILER_TUI_SYSFS``), also once its directories are resolved, and is opened without
following a last symbolic link; a file that is not a regular file of root's is left alone.  A file's value is
its first line; a file that lists choices (``none [mq-deadline] kyber``) has the bracketed one as its value.

Order, so that no moment leaves a change unrecorded: the changes are planned (each file read), written to
run.json's ``tune`` and to the machine-wide restore record ``/run/profiler-tui/tune/<run id>.json``
(``PROFILER_TUI_TUNE_DIR`` names another directory) before anything is written; then each file is read again
(one that changed since it was planned is left alone), written, and read back — the kernel may refuse a value:
the error is recorded and the next change goes on.  Restoring (when the run ends, fails or is interrupted: the
session's ``finally``, with an ``atexit`` fallback; only SIGKILL skips both) writes each previous value back,
in reverse order, only if the file still holds what the run set — another process that changed it meanwhile
wins — records ``restored`` per change and removes the restore record.

One --tune run at a time: from before it plans its changes until it has put them back, a run holds an exclusive
``flock`` per thing it may change (:func:`lock_scopes`: its device's queue, the CPU settings) in the records'
directory, so a second --tune run is refused (SafetyError, exit 3) naming the first; a run without --tune learns
from the same locks that what its audit reads is another run's (:func:`tuned_elsewhere`).

The restore record is what a SIGKILLed run leaves: it names the run's process (PID and start time, so a live
run is told from a dead one whose PID was reused) and its results directory; its run holds it locked while it
lives, which tells a live run's record from a dead one's in any PID namespace.  Every local ``run`` and
``resume`` first restores every record whose process is gone (:func:`restore_leftovers`).  The record's
directory is made by root, mode 0700; a directory or record that another user owns or can write is refused
(never read, never acted on); records are created with O_CREAT|O_EXCL|O_NOFOLLOW.  /run is emptied at boot, as
the sysfs settings reset at boot, so a record never outlives the settings it restores.
"""

from __future__ import annotations

import atexit
import errno
import fcntl
import hashlib
import json
import os
import re
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping

from app.core import settings
from app.core.errors import SafetyError, UsageError
from app.core.sanitize import clean_line
from app.host.audit import Audit, Device, find_device
from app.host.link import sysfs_root
from app.store.lock import claim, let_go, note, peek, take
from app.store.results import now_iso, read_regular

TUNE_DIR = settings.DEFAULT_TUNE_DIR
TUNE_DIR_ENV = settings.TUNE_DIR.name
TUNED_STATUSES = ("warn", "info")
MAX_VALUE_BYTES = 4096  # a sysfs attribute is at most a page
MAX_RECORD_BYTES = 1 << 20
MAX_CHANGES = 4096  # one file per CPU idle state and CPU: generous, bounded
RECORD_NAME = re.compile(r"[0-9a-f]{20}\.json")
_CHOICE = re.compile(r"\[([^\]\s]{1,64})\]")
_WRITE_FLAGS = os.O_WRONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NOCTTY | os.O_NONBLOCK
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC

NEEDS_ROOT = "--tune changes kernel settings in /sys and needs root: run as root, or without --tune."


def tune_dir() -> Path:
    return settings.tune_dir()


def run_id(run_dir: str | os.PathLike[str]) -> str:
    """The restore record's name for a results directory: the same for its ``run`` and its ``resume``."""
    return hashlib.sha256(os.path.realpath(run_dir).encode(errors="surrogateescape")).hexdigest()[:20]


# --- one file -------------------------------------------------------------------------------------------------


def setting_text(raw: str) -> str:
    """A sysfs file's value: its first line, or the bracketed word of a list of choices."""
    line = raw.strip().split("\n", 1)[0].strip()
    chosen = _CHOICE.search(line)
    return chosen.group(1) if chosen else line[:MAX_VALUE_BYTES]


def read_setting(path: str) -> str:
    """The value ``path`` holds (OSError when it cannot be read, is no regular file, or is longer than a page)."""
    data = read_regular(path, MAX_VALUE_BYTES)
    if len(data) > MAX_VALUE_BYTES:
        raise OSError(errno.EFBIG, "longer than a sysfs attribute", path)
    return setting_text(data.decode("utf-8", "replace"))


def path_problem(path: str, root: Path | None = None) -> str | None:
    """Why ``path`` (from data) may not be written by --tune, or None: it must be absolute, normalized and under
    the sysfs root, also once its directories are resolved (sysfs's own links, /sys/block/X → /sys/devices/…,
    stay inside)."""
    base = os.path.normpath(str(root or sysfs_root()))
    if not path.startswith("/") or os.path.normpath(path) != path or any(ord(c) < 32 for c in path):
        return "not an absolute, normalized path"
    if os.path.commonpath([base, path]) != base:
        return f"outside {base}"
    top = os.path.realpath(base)
    resolved = os.path.join(os.path.realpath(os.path.dirname(path)), os.path.basename(path))
    if os.path.commonpath([top, resolved]) != top:
        return f"outside {base} once its directories are resolved ({resolved[:200]})"
    return None


def write_setting(path: str, value: str) -> None:
    """Write ``value`` to the sysfs file ``path``: not through a last symlink, only into a regular file of root's
    (EPERM otherwise, before anything is written)."""
    fd = os.open(path, _WRITE_FLAGS)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_uid not in (0, os.geteuid()) or st.st_nlink > 1:
            raise OSError(errno.EPERM, "not a kernel setting (no regular file of root's)", path)
        os.ftruncate(fd, 0)  # sysfs ignores it; a plain file (a fake root) must not keep a longer old value
        os.write(fd, f"{value}\n".encode())
    finally:
        os.close(fd)


def _reason(e: OSError) -> str:
    return e.strerror or str(e)


# --- the changes ----------------------------------------------------------------------------------------------


@dataclass
class Change:
    """One file --tune sets: run.json ``tune.changes[]``."""

    key: str  # the audit item's key
    path: str
    previous: str
    value: str
    applied: bool = False
    error: str | None = None
    restored: bool | None = None
    restore_error: str | None = None
    set_to: str | None = field(default=None, repr=False)  # what the file held after the write (restored from)

    def to_json(self) -> dict[str, object]:
        out: dict[str, object] = {"key": self.key, "path": self.path, "previous": self.previous,
                                  "value": self.value, "applied": self.applied}
        if self.error:
            out["error"] = self.error
        out["restored"] = self.restored
        if self.restore_error:
            out["restore_error"] = self.restore_error
        return out

    @classmethod
    def from_json(cls, obj: object) -> Change | None:
        """A change read back from a restore record (hostile: bounded text, None when it is not one)."""
        if not isinstance(obj, dict):
            return None
        texts = [obj.get(k) for k in ("key", "path", "previous", "value")]
        if not all(isinstance(t, str) and len(t) <= MAX_VALUE_BYTES and "\n" not in t for t in texts):
            return None
        key, path, previous, value = (str(t) for t in texts)
        return cls(key, path, previous, value)

    @property
    def text(self) -> str:
        return f"{self.path}: {self.previous} → {self.value}"


def plan_changes(audit: Audit, root: Path | None = None) -> tuple[list[Change], list[str]]:
    """The files to change for ``audit`` (items ``warn``/``info`` whose tune pairs differ from the file's value),
    and a sentence for each pair that is left alone (outside the sysfs root, unreadable)."""
    changes: list[Change] = []
    skipped: list[str] = []
    seen: set[str] = set()
    for item in audit.items:
        if item.status not in TUNED_STATUSES:
            continue
        for path, value in item.tune:
            if path in seen or len(changes) >= MAX_CHANGES:
                continue
            seen.add(path)
            problem = path_problem(path, root)
            if problem is None:
                try:
                    now = read_setting(path)
                except OSError as e:
                    problem = f"cannot be read ({_reason(e)})"
            if problem is not None:
                skipped.append(f"{path[:300]}: {problem}: not changed")
            elif now != value:
                changes.append(Change(item.key, path, now, value))
    return changes, skipped


def describe(audit: Audit, root: Path | None = None) -> list[str]:
    """What --tune will change, one line per file (for the confirm text and the CLI), or one line saying
    nothing needs changing."""
    changes, skipped = plan_changes(audit, root)
    lines = [f"tune: {c.key}: {c.text}" for c in changes] + [f"tune: {s}" for s in skipped]
    return lines or ["tune: every setting the audit names already has its benchmark value: nothing to change"]


# --- the restore record ---------------------------------------------------------------------------------------


def process_start(pid: int) -> int | None:
    """A process's start time (clock ticks after boot, /proc/PID/stat field 22), None when it is gone."""
    try:
        text = read_regular(f"/proc/{pid}/stat", 4096).decode("ascii", "replace")
        fields = text[text.rindex(")") + 2:].split()
        return None if fields[0] in ("Z", "X") else int(fields[19])
    except (OSError, ValueError, IndexError):
        return None


def _refusal(path: Path, fd: int, private: bool) -> str | None:
    """Why the directory ``path`` (open as ``fd``) could let another user in; ``private``: it must be 0700."""
    st = os.fstat(fd)
    mode = stat.S_IMODE(st.st_mode)
    if st.st_uid not in (0, os.geteuid()):
        return f"{path} is owned by uid {st.st_uid}"
    if mode & 0o022:
        return f"{path} is writable by other users (mode {mode:04o})"
    if private and mode & 0o077:
        return f"{path} has mode {mode:04o}, not 0700"
    return None


def open_record_dir(create: bool) -> int | None:
    """The restore records' directory as a descriptor (None when it does not exist and ``create`` is false).
    Created root's, mode 0700, its parent too; SafetyError when it, or its parent, is a symlink, owned by
    another user or writable by one."""
    where = tune_dir()
    parent = where.parent
    if create:
        for d in (parent, where):
            try:
                os.mkdir(d, 0o700)
            except FileExistsError:
                pass
            except OSError as e:
                raise SafetyError(f"{d}: cannot create the directory of --tune's restore records ({_reason(e)}).")
    fds: list[int] = []
    try:
        for d in (parent, where):
            try:
                fd = os.open(d.name if fds else d, _DIR_FLAGS, dir_fd=fds[-1] if fds else None)
            except FileNotFoundError:
                return None
            except PermissionError:  # another user's /run/profiler-tui (root's, 0700): nothing of ours there
                if not create:
                    return None
                raise SafetyError(f"{d}: cannot be opened by uid {os.geteuid()}; --tune needs root.") from None
            except OSError as e:
                if e.errno in (errno.ELOOP, errno.ENOTDIR):
                    raise SafetyError(f"{d}: is a symlink or not a directory; --tune's restore records are kept "
                                      "only in a directory of root's: remove it.") from None
                raise SafetyError(f"{d}: cannot be opened ({_reason(e)}).") from None
            fds.append(fd)
            problem = _refusal(d, fd, private=d == where)
            if problem:
                raise SafetyError(f"{problem}: --tune's restore records are kept only in a directory of root's that "
                                  "no other user can write; remove it.")
        return fds.pop()
    finally:
        for fd in fds:
            os.close(fd)


def _write_record(dir_fd: int, name: str, record: dict[str, object]) -> int:
    """The restore record, created and locked: the run holds it open and locked for its life, which tells it from
    the record of a run that is gone (:func:`restore_leftovers`), whatever its PID says."""
    fd = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600, dir_fd=dir_fd)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        os.write(fd, json.dumps(record, ensure_ascii=False).encode())
        os.fsync(fd)
    except BaseException:
        os.close(fd)
        raise
    return fd


def _open_own(dir_fd: int, name: str, flags: int) -> int:
    """``name`` in the records' directory, opened without following a link: OSError (EPERM) when it is not a
    regular file of this user, mode 0600 at most, with one name."""
    fd = os.open(name, flags | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, 0o600, dir_fd=dir_fd)
    st = os.fstat(fd)
    problem = ("is not a regular file with one name" if not stat.S_ISREG(st.st_mode) or st.st_nlink != 1 else
               f"is owned by uid {st.st_uid} with mode {stat.S_IMODE(st.st_mode):04o}, not this user's 0600"
               if st.st_uid != os.geteuid() or st.st_mode & 0o077 else None)
    if problem:
        os.close(fd)
        raise OSError(errno.EPERM, problem, name)
    return fd


def _read_record(fd: int) -> dict[str, Any] | str:
    """The restore record open as ``fd`` (:func:`_open_own`), or why it is refused."""
    data = os.read(fd, MAX_RECORD_BYTES + 1)
    try:
        obj = json.loads(data) if len(data) <= MAX_RECORD_BYTES else None
    except ValueError:
        obj = None
    if not isinstance(obj, dict) or not isinstance(obj.get("changes"), list):
        return "is not a restore record"
    return obj


# --- one run's tuning -----------------------------------------------------------------------------------------

_ACTIVE: dict[int, "Tuning"] = {}


@atexit.register
def _restore_at_exit() -> None:  # a run that ends without reaching its finally (e.g. a loop torn down)
    for t in list(_ACTIVE.values()):
        t.restore()


class Tuning:
    """The changes of one run: :meth:`apply` them, :meth:`restore` them; ``record`` is called with run.json's
    ``tune`` each time it changes."""

    def __init__(self, run_dir: Path, changes: list[Change], record: Callable[[dict[str, object]], object]) -> None:
        self.run_dir = run_dir
        self.changes = changes
        self.record = record
        self.restored_at: str | None = None
        self._dir_fd: int | None = None
        self._record_fd: int | None = None  # the restore record, locked while the run lives
        self._name = run_id(run_dir) + ".json"

    def to_json(self) -> dict[str, object]:
        out: dict[str, object] = {"requested": True, "changes": [c.to_json() for c in self.changes]}
        if self.restored_at:
            out["restored_at"] = self.restored_at
        return out

    def _save(self) -> None:
        try:
            self.record(self.to_json())
        except Exception:  # run.json unwritable (full disk): the change itself goes on, the restore record holds it
            pass

    def apply(self) -> None:
        """Record, then change.  SafetyError (nothing changed) when the restore record cannot be made safely."""
        self.record(self.to_json())
        if not self.changes:
            return
        dir_fd = open_record_dir(create=True)
        if dir_fd is None:  # removed again between its creation and its opening
            raise SafetyError(f"{tune_dir()}: vanished while it was made: nothing was changed.")
        pid = os.getpid()
        try:
            self._record_fd = _write_record(dir_fd, self._name, {
                "pid": pid, "pid_start": process_start(pid), "run_dir": os.path.realpath(self.run_dir),
                "created": now_iso(),
                "changes": [{k: c.to_json()[k] for k in ("key", "path", "previous", "value")} for c in self.changes]})
        except OSError as e:
            os.close(dir_fd)
            raise SafetyError(f"{tune_dir() / self._name}: cannot create --tune's restore record ({_reason(e)}"
                              + ("; a run of the same results directory holds it" if e.errno == errno.EEXIST
                                 else "") + "): nothing was changed.") from None
        self._dir_fd = dir_fd
        _ACTIVE[id(self)] = self
        for c in self.changes:
            _apply_one(c)
        self._save()

    def restore(self) -> None:
        """Put back every change that still holds what this run set; never raises."""
        if _ACTIVE.pop(id(self), None) is None:
            return
        for c in reversed(self.changes):
            if c.set_to is not None:
                _restore_one(c, c.set_to)
        self.restored_at = now_iso()
        self._save()
        try:
            if self._dir_fd is not None:
                os.unlink(self._name, dir_fd=self._dir_fd)
        except OSError:
            pass
        finally:
            for fd in (self._record_fd, self._dir_fd):
                if fd is not None:
                    os.close(fd)
            self._record_fd = self._dir_fd = None


def _apply_one(c: Change) -> None:
    try:
        now = read_setting(c.path)
        if now != c.previous:
            c.error = f"changed to {now} by another process since it was read: left as it is"
            return
        write_setting(c.path, c.value)
    except OSError as e:
        c.error = f"writing {c.value} failed: {_reason(e)}"
    try:
        back = read_setting(c.path)
    except OSError as e:
        c.error = c.error or f"cannot be read back: {_reason(e)}"
        return
    c.applied = back == c.value
    if back != c.previous:
        c.set_to = back
    if not c.applied and not c.error:
        c.error = f"the kernel kept {back}"


def _restore_one(c: Change, set_to: str) -> None:
    try:
        now = read_setting(c.path)
    except OSError as e:
        c.restored, c.restore_error = False, f"cannot be read: {_reason(e)}"
        return
    if now != set_to:
        c.restored, c.restore_error = False, f"changed to {now} by another process during the run: left as it is"
        return
    try:
        write_setting(c.path, c.previous)
        back = read_setting(c.path)
    except OSError as e:
        c.restored, c.restore_error = False, f"writing {c.previous} back failed: {_reason(e)}"
        return
    c.restored = back == c.previous
    if not c.restored:
        c.restore_error = f"the kernel kept {back}"


def start(audit: Audit, run_dir: Path, record: Callable[[dict[str, object]], object]) -> Tuning:
    """Plan, record and apply --tune's changes for ``audit`` (needs root: UsageError otherwise, nothing
    changed)."""
    if os.geteuid() != 0:
        raise UsageError(NEEDS_ROOT)
    changes, _skipped = plan_changes(audit)
    tuning = Tuning(run_dir, changes, record)
    tuning.apply()
    return tuning


# --- one --tune run at a time on what it changes --------------------------------------------------------------

CPU_LOCK = ("cpus.lock", "the CPU settings (frequency governor, idle states)")


def lock_scopes(target: str | None) -> list[tuple[str, str]]:
    """The lock files of what a --tune run on ``target`` may change, each with what it guards in words: the queue
    of the target's device (a partition's is its disk's; a file's, the device under its filesystem), and the CPU
    settings, which are the machine's — every run uses CPUs, so two --tune runs never overlap on one machine."""
    scopes: list[tuple[str, str]] = []
    try:
        device = find_device(target, sysfs_root()) if target is not None else None
    except Exception:  # the audit reads the same as it can (app.host.audit.audit): its device is then unknown
        device = None
    if isinstance(device, Device):
        queue = os.path.realpath(device.queue).encode(errors="surrogateescape")
        scopes.append((f"device-{hashlib.sha256(queue).hexdigest()[:20]}.lock",
                       f"the queue settings of /dev/{clean_line(device.name, 64)}"))
    return scopes + [CPU_LOCK]


def _holder(pid: int, fd: int) -> str:
    run = clean_line(note(fd), 300)
    return (f"process {pid}" if pid else "another process") + (f", results in {run}" if run else "")


class SettingsLock:
    """The locks a --tune run holds on what it may change (:func:`lock_settings`), from before it plans its changes
    until it has put them back; the kernel drops them when the process ends, however it ends."""

    def __init__(self) -> None:
        self.fds: list[int] = []

    def release(self) -> None:
        while self.fds:
            let_go(self.fds.pop())


def lock_settings(target: str | None, run_dir: str | os.PathLike[str]) -> SettingsLock:
    """Lock what a --tune run on ``target`` may change (:func:`lock_scopes`), in the restore records' directory
    (root's, 0700), so that no other --tune run changes it — or reads the values this one set as the host's own —
    until this run ends.  SafetyError (exit 3), nothing held, when another run holds one (the sentence names what,
    the other run's process and its results directory), or when the directory is not root's alone."""
    dir_fd = open_record_dir(create=True)
    if dir_fd is None:  # removed again between its creation and its opening
        raise SafetyError(f"{tune_dir()}: vanished while it was made: nothing was changed.")
    held = SettingsLock()
    try:
        for name, what in lock_scopes(target):
            try:
                fd = _open_own(dir_fd, name, os.O_RDWR | os.O_CREAT)
            except OSError as e:
                raise SafetyError(f"{tune_dir() / name}: cannot lock {what} for --tune ({_reason(e)}): nothing was "
                                  "changed.") from None
            try:
                pid = take(fd)
                if pid is not None:
                    raise SafetyError(f"--tune refused: {what} are being tuned by another run ({_holder(pid, fd)}); "
                                      "two --tune runs would change them under each other and read each other's "
                                      "values as the host's own. Wait for it to end, or stop it.")
            except BaseException:
                os.close(fd)  # another run's lock: its file is left as it is
                raise
            claim(fd, os.path.realpath(run_dir))
            held.fds.append(fd)
    except BaseException:
        held.release()
        raise
    finally:
        os.close(dir_fd)
    return held


def tuned_elsewhere(target: str | None) -> str | None:
    """For a run without --tune: one sentence when another run is tuning what this run's audit reads (the queue of
    its device, the CPU settings) — the values read are then that run's, not the host's own, and that run puts the
    host's back when it ends, maybe while this one measures — else None.  Without access to the restore records'
    directory (not root) nothing can be known: None."""
    try:
        dir_fd = open_record_dir(create=False)
    except SafetyError:  # the leftover scan says why the directory is refused
        return None
    if dir_fd is None:
        return None
    busy: list[str] = []
    who = ""
    try:
        for name, what in lock_scopes(target):
            try:
                fd = _open_own(dir_fd, name, os.O_RDONLY)
            except OSError:
                continue
            try:
                pid = peek(fd)
                if pid is not None:
                    busy.append(what)
                    who = who or _holder(pid, fd)
            finally:
                os.close(fd)
    finally:
        os.close(dir_fd)
    if not busy:
        return None
    return (f"another run ({who}) was tuning {' and '.join(busy)} with --tune when this run read the host's settings: "
            "the audit holds that run's values, not the host's own, and that run puts the host's back when it ends, "
            "maybe while this one measures")


# --- records a killed run left --------------------------------------------------------------------------------


@dataclass
class Leftover:
    """A restore record of a run whose process is gone, and what restoring it did."""

    run_dir: str
    changes: list[Change]

    @property
    def line(self) -> str:
        """One line: how many were restored and how many left, naming the first few of each."""
        done = [f"{c.path} → {c.previous}" for c in self.changes if c.restored]
        left = [f"{c.path}: {c.restore_error}" for c in self.changes if c.restored is False]
        text = (f"profiler-tui: a killed --tune run ({self.run_dir[:300]}) left settings changed: {len(done)} restored"
                + _first_few(done))
        if left:
            text += f", {len(left)} left as they are" + _first_few(left)
        return text + "."


def _first_few(texts: list[str], n: int = 3) -> str:
    if not texts:
        return ""
    more = f"; and {len(texts) - n} more" if len(texts) > n else ""
    return f" ({'; '.join(t[:300] for t in texts[:n])}{more})"


def _alive(record: dict[str, Any]) -> bool:
    pid, start_ticks = record.get("pid"), record.get("pid_start")
    if not isinstance(pid, int) or isinstance(pid, bool) or pid <= 0:
        return False
    return start_ticks is not None and process_start(pid) == start_ticks


def restore_leftovers() -> tuple[list[Leftover], list[str]]:
    """Restore every record whose process is gone (a live run's is left alone) and remove it: what was restored,
    and a sentence for each record or directory refused.  Without access to the directory (not root) there is
    nothing this process could restore: nothing is done."""
    try:
        dir_fd = open_record_dir(create=False)
    except SafetyError as e:
        return [], [str(e)]
    if dir_fd is None:
        return [], []
    found: list[Leftover] = []
    refused: list[str] = []
    try:
        for name in sorted(os.listdir(dir_fd))[:1000]:
            if not RECORD_NAME.fullmatch(name):
                continue
            try:
                fd = _open_own(dir_fd, name, os.O_RDONLY)
            except OSError as e:
                refused.append(f"{tune_dir() / name}: {_reason(e)}: not acted on.")
                continue
            try:
                if take(fd, wait=0) is not None:  # its run holds it: alive (in any PID namespace)
                    continue
                record = _read_record(fd)
                if isinstance(record, str):
                    refused.append(f"{tune_dir() / name}: {record}: not acted on.")
                    continue
                if _alive(record):
                    continue
                found.append(_restore_record(record))
                try:
                    os.unlink(name, dir_fd=dir_fd)
                except OSError:
                    pass
            finally:
                os.close(fd)
    except OSError:
        pass
    finally:
        os.close(dir_fd)
    return found, refused


def _restore_record(record: dict[str, Any]) -> Leftover:
    changes = [c for c in (Change.from_json(o) for o in record["changes"][:MAX_CHANGES]) if c is not None]
    for c in reversed(changes):
        problem = path_problem(c.path)
        if problem:
            c.restored, c.restore_error = False, f"{problem}: not written"
        else:
            _restore_one(c, c.value)
    run_dir = record.get("run_dir")
    return Leftover(run_dir if isinstance(run_dir, str) else "?", changes)


def merge_restored(tune: Mapping[str, object] | None, restored: Iterable[Change]) -> dict[str, object] | None:
    """run.json ``tune`` of a killed run with what restoring its leftover record did (``resume``)."""
    entries = tune.get("changes") if tune is not None else None
    if tune is None or not isinstance(entries, list):
        return None if tune is None else dict(tune)
    by_path = {c.path: c for c in restored}
    changes = []
    for entry in entries:
        c = by_path.get(str(entry.get("path"))) if isinstance(entry, dict) else None
        if c is not None:
            entry = {**entry, "restored": c.restored,
                     **({"restore_error": c.restore_error} if c.restore_error else {})}
        changes.append(entry)
    return {**tune, "changes": changes, "restored_at": now_iso()}
