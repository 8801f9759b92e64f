"""The results-directory lock: exclusive, named holder, released by the kernel when the holder dies."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest

from app.core.errors import UsageError
from app.store.lock import DirLock, effective_status, holder


def test_second_lock_names_the_holder(tmp_path):
    with DirLock(tmp_path):
        assert holder(tmp_path) == os.getpid()
        with pytest.raises(UsageError, match=f"in use by process {os.getpid()}"):
            DirLock(tmp_path).acquire()
        assert effective_status(tmp_path, "running") == "running"
    assert holder(tmp_path) is None
    assert effective_status(tmp_path, "running") == "interrupted"
    assert effective_status(tmp_path, "planned") == "interrupted"
    assert effective_status(tmp_path, "complete") == "complete"
    assert effective_status(tmp_path, 7) == "unknown"


def test_lock_of_a_killed_process_is_free(tmp_path):
    code = (f"from app.store.lock import DirLock; DirLock({str(tmp_path)!r}).acquire(); print('locked', flush=True); "
            "import time; time.sleep(60)")
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True,
                            cwd=os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
    try:
        assert proc.stdout.readline().strip() == "locked"
        assert holder(tmp_path) == proc.pid
        with pytest.raises(UsageError, match=f"process {proc.pid}"):
            DirLock(tmp_path).acquire()
    finally:
        proc.kill()
        proc.wait()
    deadline = time.monotonic() + 10
    while holder(tmp_path) is not None and time.monotonic() < deadline:
        time.sleep(0.05)
    assert holder(tmp_path) is None
    assert effective_status(tmp_path, "running") == "interrupted"
    with DirLock(tmp_path):
        pass


def test_symlinked_lock_file_is_refused(tmp_path):
    victim = tmp_path / "victim"
    victim.write_text("keep me")
    d = tmp_path / "run"
    d.mkdir()
    (d / ".lock").symlink_to(victim)
    with pytest.raises(UsageError, match="symbolic link"):
        DirLock(d).acquire()
    assert victim.read_text() == "keep me"


def test_a_holder_that_has_not_yet_written_its_pid_is_still_named(tmp_path):
    """The holder flocks, then writes its PID: a second process that looks in between saw an empty file, or the
    PID of the previous (dead) holder, and said "another process" (a resume race in CI)."""
    import fcntl
    import threading

    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True,
                          text=True, check=True).stdout.strip()
    lock = tmp_path / ".lock"
    lock.write_text(f"{dead}\n")  # the previous holder's PID, a process that has exited
    fd = os.open(lock, os.O_RDWR)
    fcntl.flock(fd, fcntl.LOCK_EX)
    writer = threading.Timer(0.1, lambda: (os.ftruncate(fd, 0), os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)))
    writer.start()
    try:
        with pytest.raises(UsageError, match=f"in use by process {os.getpid()};"):
            DirLock(tmp_path).acquire()
    finally:
        writer.join()
        os.close(fd)
