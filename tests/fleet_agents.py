"""Fleet agents for tests: ``profiler-tui agent`` processes on 127.0.0.1, each on its own free port, always
stopped again (SIGTERM, as a user would; SIGKILL if that fails), with a check that no fio server is left.

    with agents(4) as running:
        running[0].host        # "tcp://127.0.0.1:PORT"
        running[0].stop()      # kill one mid-run
        running[0].start()     # and bring it back on the same port
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator

ROOT = Path(__file__).resolve().parent.parent


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def listening(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5):
            return True
    except OSError:
        return False


def stop_process(proc: subprocess.Popen) -> int | None:
    """SIGTERM, as a user would; SIGKILL after 10 s.  The exit status."""
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    return proc.returncode


def kill_matching(pattern: str) -> None:
    """SIGKILL every process whose command line holds ``pattern`` (a test's own path or port)."""
    out = subprocess.run(["pgrep", "-a", "-f", pattern], capture_output=True, text=True).stdout
    for line in out.splitlines():
        if "pgrep" not in line:
            with contextlib.suppress(ProcessLookupError, ValueError):
                os.kill(int(line.split()[0]), signal.SIGKILL)


def fio_servers(port: int) -> list[str]:
    out = subprocess.run(["pgrep", "-a", "-f", f"fio --server=ip:127.0.0.1,{port}"], capture_output=True,
                         text=True).stdout
    return [ln for ln in out.splitlines() if "pgrep" not in ln]


@dataclass
class Agent:
    port: int = field(default_factory=free_port)
    proc: subprocess.Popen[str] | None = None

    @property
    def host(self) -> str:
        return f"tcp://127.0.0.1:{self.port}"

    def start(self) -> "Agent":
        self.proc = subprocess.Popen([sys.executable, "-m", "app", "agent", "--port", str(self.port)], cwd=ROOT,
                                     stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        deadline = time.monotonic() + 20
        while not listening(self.port):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                err = self.proc.stderr.read() if self.proc.stderr else ""
                self.stop()
                raise RuntimeError(f"the agent on port {self.port} did not start: {err}")
            time.sleep(0.05)
        return self

    def kill_server(self) -> None:
        """SIGKILL fio's server itself (the host 'drops'), leaving the agent process to notice."""
        for line in fio_servers(self.port):
            with contextlib.suppress(ProcessLookupError):
                os.kill(int(line.split()[0]), signal.SIGKILL)

    def freeze(self, sig: int = signal.SIGSTOP) -> None:
        """SIGSTOP fio's server and its jobs: the host 'freezes' with its connections open (SIGCONT: thaw)."""
        for line in fio_servers(self.port):
            with contextlib.suppress(ProcessLookupError):
                os.kill(int(line.split()[0]), sig)

    def thaw(self) -> None:
        self.freeze(signal.SIGCONT)

    def stop(self) -> int | None:
        proc, self.proc = self.proc, None
        if proc is None:
            return None
        code = stop_process(proc)
        if proc.stderr:
            proc.stderr.close()
        return code


@contextlib.contextmanager
def agents(n: int) -> Iterator[list[Agent]]:
    running: list[Agent] = []
    try:
        for _ in range(n):
            running.append(Agent().start())
        yield running
    finally:
        for a in running:
            a.thaw()  # a frozen server would not stop on SIGTERM
            a.stop()
        for a in running:  # never leave a fio server behind, even when the test failed
            kill_matching(f"fio --server=ip:127.0.0.1,{a.port}")
