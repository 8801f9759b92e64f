"""Running the small external tools the core reads (lsblk, blkid, wipefs, nvme, smartctl, a fleet host's
answer over ssh): every one through :func:`run_bounded`, the one reader of another program's output.

Another program's output is untrusted in size and in time: a tool that prints without end (``/dev/zero``),
hangs, or a host that answers for ever must neither fill the memory nor hold the run up.  The reader takes
the output in small slices (``select`` with a short wait), so it

* stops at its cap: the child's process group is killed and the result says the output was too large;
* enforces the timeout itself, also when the child closed its pipes but keeps running;
* stays interruptible: in the main thread a ^C runs Python's handler within one slice; a reader in a worker
  thread (telemetry) is stopped through the ``cancel`` event it is given.

A tool that is missing, cannot be started or outlives its timeout answers None from :func:`run_tool`
instead of raising: every caller treats "no answer" as "unknown" and goes on.  Headless: no UI library.
"""

from __future__ import annotations

import os
import selectors
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass

from app.host.process import die_with_parent
from app.host.programs import which_trusted

SLICE_S = 0.05  # how long one wait for output lasts: the longest a ^C or a cancel waits
DEFAULT_LIMIT = 1 << 20  # bytes of stdout a tool may print (a device listing or a health log is a few KiB)
STDERR_LIMIT = 64 << 10  # bytes of stderr kept; more ends the tool like too much stdout


@dataclass(frozen=True)
class Outcome:
    """What a bounded run of a tool gave: its exit status and output, or why there is none."""

    returncode: int | None
    stdout: bytes = b""
    stderr: bytes = b""
    failure: str | None = None  # "timeout", "too large", "cancelled" or "cannot start: …"

    @property
    def ok(self) -> bool:
        return self.failure is None


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    """SIGKILL the child's process group (a tool's own children die with it) and reap the child."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except OSError:
        pass
    try:
        proc.kill()
    except OSError:
        pass
    proc.wait()


def run_bounded(argv: list[str], timeout: float, limit: int = DEFAULT_LIMIT,
                cancel: threading.Event | None = None) -> Outcome:
    """Run ``argv`` (stdin /dev/null, its own process group) and collect at most ``limit`` bytes of stdout
    and :data:`STDERR_LIMIT` of stderr within ``timeout`` seconds.  Never raises for the tool's sake; a
    KeyboardInterrupt (^C in the main thread) kills the child and propagates."""
    path, why = which_trusted(argv[0]) if argv else (None, None)
    if why:
        return Outcome(None, failure=f"cannot start: {why}")
    if path:
        argv = [path, *argv[1:]]
    try:
        # its own session, so the group can be killed whole; and killed by the kernel when profiler-tui dies
        # (an exit through os._exit at start-up, SIGKILL), so no tool outlives the reader
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                start_new_session=True,
                                preexec_fn=die_with_parent if sys.platform.startswith("linux") else None)
    except (OSError, ValueError, subprocess.SubprocessError) as e:
        return Outcome(None, failure=f"cannot start: {getattr(e, 'strerror', None) or e}")
    deadline = time.monotonic() + timeout
    chunks: dict[int, list[bytes]] = {}
    caps: dict[int, int] = {}
    sel = selectors.DefaultSelector()
    try:
        for pipe, cap in ((proc.stdout, limit), (proc.stderr, min(limit, STDERR_LIMIT))):
            assert pipe is not None
            fd = pipe.fileno()
            os.set_blocking(fd, False)
            sel.register(fd, selectors.EVENT_READ)
            chunks[fd], caps[fd] = [], cap
        failure = _collect(proc, sel, chunks, caps, deadline, cancel)
        if failure is not None:
            _kill_group(proc)
            return Outcome(proc.returncode, failure=failure)
        out_fd, err_fd = list(chunks)
        return Outcome(proc.returncode, b"".join(chunks[out_fd]), b"".join(chunks[err_fd]))
    finally:
        sel.close()
        if proc.poll() is None:  # interrupted (KeyboardInterrupt) or a bug: the child never outlives the reader
            _kill_group(proc)
        for pipe in (proc.stdout, proc.stderr):
            if pipe:
                pipe.close()


def _collect(proc: subprocess.Popen[bytes], sel: selectors.BaseSelector, chunks: dict[int, list[bytes]],
             caps: dict[int, int], deadline: float, cancel: threading.Event | None) -> str | None:
    """Read both pipes until they close and the child exits; the failure that stopped it, or None."""
    sizes = dict.fromkeys(chunks, 0)
    while True:
        if cancel is not None and cancel.is_set():
            return "cancelled"
        left = deadline - time.monotonic()
        if left <= 0:
            return "timeout"
        if not sel.get_map():
            if proc.poll() is not None:
                return None
            time.sleep(min(SLICE_S, left))  # pipes closed, child still running: wait for it in slices
            continue
        for key, _ in sel.select(min(SLICE_S, left)):
            fd = int(key.fd)
            try:
                data = os.read(fd, 65536)
            except BlockingIOError:
                continue
            if not data:
                sel.unregister(fd)
                continue
            sizes[fd] += len(data)
            if sizes[fd] > caps[fd]:
                return "too large"
            chunks[fd].append(data)


def describe_failure(outcome: Outcome, what: str, timeout: float, limit: int = DEFAULT_LIMIT) -> str:
    """One clause saying why ``what`` (a tool's command) gave no usable answer."""
    if outcome.failure == "timeout":
        return f"{what} gave no answer within {timeout:g} s"
    if outcome.failure == "too large":
        return f"{what} printed more than {limit} bytes (stopped)"
    if outcome.failure == "cancelled":
        return f"{what} was stopped (the run is ending)"
    return f"{what} could not be run ({(outcome.failure or '').removeprefix('cannot start: ')})"


def run_tool(argv: list[str], timeout: float, limit: int = DEFAULT_LIMIT) -> subprocess.CompletedProcess[str] | None:
    """``argv``'s exit code and text output (never raises for a non-zero exit), or None when it could not be
    run, took longer than ``timeout`` seconds or printed more than ``limit`` bytes."""
    outcome = run_bounded(argv, timeout, limit)
    if not outcome.ok or outcome.returncode is None:
        return None
    return subprocess.CompletedProcess(argv, outcome.returncode, outcome.stdout.decode("utf-8", "replace"),
                                       outcome.stderr.decode("utf-8", "replace"))
