"""One process at a time on a results directory.

A run or a resume holds an exclusive ``flock`` on ``DIR/.lock`` for its whole life.  The kernel
releases it when the process ends, however it ends (exit, crash, SIGKILL), so a lock is never left
stale.  A second run or resume of the same directory is refused at once with the holder's PID
(exit 2), and readers (report, resume, the TUI) tell a run whose ``run.json`` still says
``running`` but whose lock is free — its process died — as ``interrupted``.

The steps of such a lock — :func:`take` it or learn who holds it, :func:`claim` it (the holder's PID, and a line
of note, for whoever is refused), :func:`peek` at it, :func:`let_go` of it — serve the locks of --tune too
(app.host.tune: one run at a time changes a device's or the CPUs' settings).
"""

from __future__ import annotations

import errno
import fcntl
import os
import stat
import time
from pathlib import Path

from app.core.errors import UsageError
from app.model.points import RunStatus

LOCK_NAME = ".lock"
# statuses a live process writes; without a lock holder they mean the process died
LIVE_STATUSES = (RunStatus.PLANNED, RunStatus.RUNNING)
MAX_NOTE = 4096  # bytes of a lock file read for its note


def _lines(fd: int, size: int) -> list[str]:
    try:
        return os.pread(fd, size, 0).decode("utf-8", "replace").split("\n")
    except OSError:
        return [""]


def _read_pid(fd: int) -> int | None:
    """The PID on the lock file's first line (its holder writes it there, :func:`claim`)."""
    text = _lines(fd, 32)[0].strip()
    return int(text) if text.isdigit() else None


def note(fd: int) -> str:
    """What the lock's holder wrote after its PID (:func:`claim`): one line, or ""."""
    lines = _lines(fd, MAX_NOTE)
    return lines[1] if len(lines) > 2 else ""  # a complete line only


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True  # it exists (EPERM: another user's)
    return True


def take(fd: int, wait: float = 0.5) -> int | None:
    """The exclusive flock on the lock file ``fd``: None once it is taken, or the PID of the process that holds it
    (0: unknown).  A moment may pass between a holder's flock and its :func:`claim`, during which the file is empty
    or still names the previous, dead holder, and a look by :func:`peek` holds the lock for a moment only: so the
    lock is tried again until a live holder is named, for at most ``wait`` seconds."""
    deadline = time.monotonic() + wait
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return None
        except BlockingIOError:
            pid = _read_pid(fd)
            if pid and _alive(pid):
                return pid
            if time.monotonic() >= deadline:
                return 0
            time.sleep(0.01)


def claim(fd: int, text: str = "") -> None:
    """Write this process's PID (and ``text``, one line) into the lock file it holds, for whoever is refused."""
    try:
        os.ftruncate(fd, 0)
        os.pwrite(fd, (f"{os.getpid()}\n" + (f"{text}\n" if text else "")).encode(), 0)
    except OSError:
        pass  # the flock is what counts; the PID is only for the message


def let_go(fd: int) -> None:
    """Empty the lock file (it names no holder any more) and close it, which drops the flock."""
    try:
        os.ftruncate(fd, 0)
    except OSError:
        pass
    os.close(fd)


def peek(fd: int) -> int | None:
    """The PID holding the lock file ``fd``'s lock (0 when held but the PID is unknown), or None when it is free: a
    shared lock is tried and let go at once."""
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return _read_pid(fd) or 0
    except OSError:
        return None
    fcntl.flock(fd, fcntl.LOCK_UN)
    return None


class DirLock:
    """The exclusive lock of one results directory (``with DirLock(path): ...``)."""

    def __init__(self, path: str | os.PathLike[str], dir_fd: int | None = None) -> None:
        self.path = Path(path)
        self.dir_fd = dir_fd  # the results directory, opened and checked (app.store.results.ResultsDir.open)
        self.fd: int | None = None

    @property
    def file(self) -> Path:
        return self.path / LOCK_NAME

    def acquire(self) -> "DirLock":
        if self.fd is not None:
            return self
        try:
            fd = os.open(LOCK_NAME if self.dir_fd is not None else self.file,
                         os.O_RDWR | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW, 0o644, dir_fd=self.dir_fd)
        except OSError as e:
            if e.errno == errno.ELOOP:
                raise UsageError(f"{self.file}: is a symbolic link; refusing to use it as the run's lock.") from None
            raise UsageError(f"{self.path}: cannot create its lock file {LOCK_NAME} ({e.strerror}).") from None
        try:
            pid = take(fd)
        except OSError as e:
            os.close(fd)
            raise UsageError(f"{self.path}: cannot lock {LOCK_NAME} ({e.strerror}).") from None
        if pid is not None:
            os.close(fd)
            who = f"process {pid}" if pid else "another process"
            raise UsageError(f"{self.path} is in use by {who}; wait for it to finish or stop it first.")
        claim(fd)
        self.fd = fd
        return self

    def remove(self) -> None:
        """Remove the lock file (from a directory the run made and is giving up)."""
        try:
            os.unlink(LOCK_NAME if self.dir_fd is not None else self.file, dir_fd=self.dir_fd)
        except OSError:
            pass

    def release(self) -> None:
        if self.fd is None:
            return
        let_go(self.fd)
        self.fd = None

    def __enter__(self) -> "DirLock":
        return self.acquire()

    def __exit__(self, *exc: object) -> None:
        self.release()


def holder(path: str | os.PathLike[str]) -> int | None:
    """The PID holding ``path``'s lock (0 when held but the PID is unknown), or None when free."""
    try:
        # never waits: a FIFO left under the name is not opened for a writer (the runs browser's thread would hang)
        fd = os.open(Path(path) / LOCK_NAME, os.O_RDONLY | os.O_CLOEXEC | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY)
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        return peek(fd)
    finally:
        os.close(fd)


def effective_status(path: str | os.PathLike[str], recorded: object) -> str:
    """The status to show for a run: ``running``/``planned`` in run.json with no process holding the
    lock means the process died, so the run is ``interrupted``."""
    status = recorded if isinstance(recorded, str) and recorded else "unknown"
    if status in LIVE_STATUSES and holder(path) is None:
        return RunStatus.INTERRUPTED
    return status
