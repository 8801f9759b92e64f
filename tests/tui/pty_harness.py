"""Run ``profiler-tui`` in a real pseudo-terminal, as SSH or a terminal window would: type keys, read the
screen's text, hang up (close the master side), and collect the exit code.

The child is a session leader with the pty as its controlling terminal, so closing the master does what
an SSH drop does: the kernel hangs the tty up and sends SIGHUP and SIGCONT.
"""

from __future__ import annotations

import fcntl
import os
import re
import select
import struct
import subprocess
import sys
import termios
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
ANSI = re.compile(r"\x1b\[[0-9;?<>=$]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[@-Z\\-_]")
ALT_SCREEN_OFF = "\x1b[?1049l"

PTY_PRESETS = {
    # 1 point of 10 s: "mid-run" tests hang up while fio runs
    "a-long": 'name = "a-long"\nkind = "storage"\ndescription = "one 10 s point"\n\n[settings]\n'
              'rw = "randread"\nbs = "4k"\niodepth = 1\nruntime = 10\nsize = "16m"\n',
    # 1 point of 1 s: runs to the end, then the results screen
    "b-short": 'name = "b-short"\nkind = "storage"\ndescription = "one 1 s point"\n\n[settings]\n'
               'rw = "randread"\nbs = "4k"\niodepth = 1\nruntime = 1\nsize = "16m"\n',
}


def write_presets(directory: Path) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    for name, text in PTY_PRESETS.items():
        (directory / f"{name}.toml").write_text(text)
    return directory


def _controlling_tty() -> None:  # in the child, after setsid(): the pty on fd 0 becomes its terminal
    fcntl.ioctl(0, termios.TIOCSCTTY, 0)


class PtyApp:
    """One ``python -m app`` (or ``python -c CODE``) in an 80x24 pty."""

    def __init__(self, tmp_path: Path, *, code: str | None = None, size: tuple[int, int] = (80, 24),
                 env: dict[str, str] | None = None) -> None:
        self.tmp_path = tmp_path
        self.results = tmp_path / "results"
        full_env = dict(os.environ)
        full_env.update({
            "TERM": "xterm-256color", "PROFILER_TUI_RESULTS": str(self.results),
            "PROFILER_TUI_PRESETS": str(write_presets(tmp_path / "presets")),
            "XDG_CONFIG_HOME": str(tmp_path / "cfg"), "COLUMNS": "", "LINES": "",
        })
        full_env.pop("NO_COLOR", None)
        full_env.pop("TEXTUAL_DRIVER", None)
        full_env.update(env or {})
        self.master, slave = os.openpty()
        cols, rows = size
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))
        argv = [sys.executable, "-m", "app"] if code is None else [sys.executable, "-c", code]
        self.proc = subprocess.Popen(argv, stdin=slave, stdout=slave, stderr=slave, cwd=ROOT, env=full_env,
                                     start_new_session=True, preexec_fn=_controlling_tty, close_fds=True)
        os.close(slave)
        self.output = bytearray()
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        self.closed = False

    def _read(self) -> None:
        while not self._stop.is_set():
            try:
                ready, _, _ = select.select([self.master], [], [], 0.05)
                if ready:
                    data = os.read(self.master, 65536)
                    if not data:
                        return
                    with self._lock:
                        self.output += data
            except OSError:  # EIO: the child closed its side
                return

    # --- reading --------------------------------------------------------------------------------

    def raw(self) -> str:
        with self._lock:
            return self.output.decode("utf-8", "replace")

    def text(self) -> str:
        return ANSI.sub("", self.raw())

    def wait_for(self, needle: str, timeout: float = 20, since: int = 0) -> None:
        deadline = time.monotonic() + timeout
        while needle not in self.text()[since:]:
            if self.proc.poll() is not None:
                raise AssertionError(f"the app exited ({self.proc.returncode}) before showing {needle!r}:\n"
                                     + self.text()[-3000:])
            if time.monotonic() > deadline:
                raise AssertionError(f"{needle!r} not shown within {timeout} s:\n" + self.text()[-3000:])
            time.sleep(0.05)

    # --- writing --------------------------------------------------------------------------------

    def send(self, keys: str, pause: float = 0.3) -> None:
        os.write(self.master, keys.encode())
        time.sleep(pause)

    # --- ending ---------------------------------------------------------------------------------

    def hang_up(self) -> float:
        """Close the master side (an SSH drop); the time it happened (time.monotonic())."""
        self._stop.set()
        self._reader.join(timeout=5)
        os.close(self.master)
        self.closed = True
        return time.monotonic()

    def wait(self, timeout: float) -> int:
        return self.proc.wait(timeout=timeout)

    def close(self) -> None:
        if self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, 9)
            except ProcessLookupError:
                pass
            self.proc.wait(timeout=10)
        if not self.closed:
            self._stop.set()
            self._reader.join(timeout=5)
            os.close(self.master)
            self.closed = True

    def __enter__(self) -> "PtyApp":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
