"""The terminal under the TUI: a Linux driver that survives losing it, and a last-resort deadline.

Over SSH the terminal can vanish at any moment (a dropped connection, a closed window, ``tmux
kill-session``). Textual's own Linux driver then hangs the process: its writer thread dies on the first
write to the hung-up tty (EIO), its queue (30 writes) fills, and the next write blocks the event loop
for ever — SIGTERM is then never handled either. The kernel also sends SIGCONT with the hang-up, on which
Textual starts a second application mode. :class:`SafeLinuxDriver` fixes the three:

* a write never blocks for good: when the writer thread is gone or the terminal is lost, output is
  dropped;
* a thread waits for the tty's hang-up (``poll`` reports ``POLLHUP``); then file descriptors 1 and 2 are
  pointed at ``/dev/null`` (nothing can fail or block on them any more), the input thread is stopped and
  the app is told (:meth:`ProfilerApp.terminal_lost`), which stops the run and exits with 130;
* SIGCONT resumes application mode only after the app itself suspended it (SIGTSTP).

:func:`start_deadline` is the backstop: once the app is asked to end by a signal or a lost terminal, a
daemon thread waits :data:`DEADLINE_S` seconds; if the process is still there it kills its child
process groups (fio, the memory engine), marks unfinished runs ``interrupted`` and exits with 130.
"""

from __future__ import annotations

import asyncio
import os
import select
import signal
import threading
import time
from queue import Full
from typing import TYPE_CHECKING, Callable

from textual.drivers.linux_driver import LinuxDriver

from app.cli.progress import point_at_dev_null

if TYPE_CHECKING:
    from textual.app import App
    from textual.drivers._writer_thread import WriterThread

DEADLINE_S = 3.0  # seconds from a hang-up or SIGTERM/SIGHUP/SIGINT to the forced exit
PUT_WAIT_S = 0.5  # a full output queue is re-checked for a lost terminal this often
EXIT_INTERRUPTED = 130


class SafeLinuxDriver(LinuxDriver):
    """Textual's Linux driver, made safe for a terminal that disappears (see the module docstring)."""

    def __init__(self, app: App[object], *, debug: bool = False, mouse: bool = True,
                 size: tuple[int, int] | None = None) -> None:
        super().__init__(app, debug=debug, mouse=mouse, size=size)
        self.terminal_lost = False
        self._suspended_by_app = False
        self._app_loop: asyncio.AbstractEventLoop | None = None  # the app's event loop, once started
        self._hangup_thread: threading.Thread | None = None
        self._lost_lock = threading.Lock()

    # --- output --------------------------------------------------------------------------------

    def write(self, data: str) -> None:
        writer = self._writer_thread
        if self.terminal_lost or writer is None:
            return
        while True:
            if not writer.is_alive():  # it died on a write error: the terminal is gone
                self.lose_terminal()
                return
            try:
                writer._queue.put(data, timeout=PUT_WAIT_S)
                return
            except Full:  # a stalled terminal (SSH not yet dropped): wait, but notice a hang-up
                if self.terminal_lost:
                    return

    def close(self) -> None:
        writer = self._writer_thread
        if writer is None:
            return
        if not self.terminal_lost and writer.is_alive():
            self.write_end(writer)
            writer.join(timeout=DEADLINE_S)

    def write_end(self, writer: WriterThread) -> None:
        """Ask the writer thread to finish (its ``stop()`` without the unbounded put)."""
        while writer.is_alive() and not self.terminal_lost:
            try:
                writer._queue.put(None, timeout=PUT_WAIT_S)
                return
            except Full:
                continue

    # --- application mode, suspend and resume ------------------------------------------------

    def start_application_mode(self) -> None:
        self._app_loop = asyncio.get_running_loop()
        super().start_application_mode()
        if self._hangup_thread is None and os.isatty(self.fileno):
            self._hangup_thread = threading.Thread(target=self._wait_for_hangup, name="terminal-hangup",
                                                   daemon=True)
            self._hangup_thread.start()

    def disable_input(self) -> None:
        if self.terminal_lost:
            return  # the input thread was stopped when the terminal went; nothing to write
        super().disable_input()

    def stop_application_mode(self) -> None:
        if self.terminal_lost:
            return
        super().stop_application_mode()

    def _sigtstp_application(self, *args: object) -> None:
        self._suspended_by_app = True
        super()._sigtstp_application(*args)

    def _sigcont_application(self, *args: object) -> None:
        # a hang-up comes with SIGCONT: starting application mode again would start a second writer
        if self._suspended_by_app and not self.terminal_lost:
            self._suspended_by_app = False
            super()._sigcont_application(*args)

    # --- losing the terminal ------------------------------------------------------------------

    def _wait_for_hangup(self) -> None:
        fds = sorted({self.fileno, self._file.fileno() if self._file else self.fileno})
        poller = select.poll()
        for fd in fds:
            poller.register(fd, select.POLLHUP | select.POLLERR)  # reported even when not asked for
        while not self.terminal_lost:
            try:
                events = poller.poll(1000)
            except (OSError, ValueError):
                return
            if any(mask & (select.POLLHUP | select.POLLERR | select.POLLNVAL) for _, mask in events):
                self.lose_terminal()
                return

    def lose_terminal(self) -> None:
        """The terminal is gone: stop writing to it and reading from it, and tell the app (any thread)."""
        with self._lost_lock:
            if self.terminal_lost:
                return
            self.terminal_lost = True
        point_at_dev_null(1, 2)
        self.exit_event.set()  # the input thread ends (a hung-up tty reads as endless end-of-file)
        loop, app = self._app_loop, self._app
        callback = getattr(app, "terminal_lost", None)
        if loop is not None and callback is not None:
            try:
                loop.call_soon_threadsafe(callback)
            except RuntimeError:  # the loop is closed: the app has ended already
                pass


def child_pids(parent: int | None = None) -> list[int]:
    """Direct children of this process (read from /proc)."""
    parent = os.getpid() if parent is None else parent
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", encoding="ascii", errors="replace") as f:
                stat = f.read()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2:].split()
        if len(fields) > 1 and int(fields[1]) == parent:
            found.append(int(entry))
    return found


def kill_children() -> None:
    """SIGKILL every child and its process group (fio and the engine run in their own session)."""
    for pid in child_pids():
        try:
            if os.getpgid(pid) == pid:
                os.killpg(pid, signal.SIGKILL)
            else:
                os.kill(pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass


_deadline_started = threading.Event()


def start_deadline(last_words: Callable[[], None], seconds: float = DEADLINE_S) -> None:
    """Once: after ``seconds``, if the process still runs, stop its children, call ``last_words`` (mark
    runs interrupted) and exit with 130 — whatever the event loop or the interpreter's shutdown is doing."""
    if _deadline_started.is_set():
        return
    _deadline_started.set()

    def watchdog() -> None:
        time.sleep(seconds)
        try:
            kill_children()
            last_words()
        finally:
            os._exit(EXIT_INTERRUPTED)

    threading.Thread(target=watchdog, name="exit-deadline", daemon=True).start()
