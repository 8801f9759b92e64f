"""Fleet agents for tests: ``profiler-tui agent`` processes on this machine, each on its own Unix socket in its own
0700 directory (``unix:///tmp/profiler-tui-agent-XXXX/agent.sock``; ``tcp=True``: a free loopback port with
--allow-local-users), always stopped again (SIGTERM, as a user would; SIGKILL if that fails), with a check that
no fio server is left.

    with agents(4) as running:
        running[0].host        # "unix:///tmp/profiler-tui-agent-…/agent.sock"
        running[0].stop()      # kill one mid-run
        running[0].start()     # and bring it back on the same socket
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator

from app.fleet.agent import connects

ROOT = Path(__file__).resolve().parents[2]


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


def answering(path: str) -> bool:
    """Something accepts connections on the Unix socket ``path``."""
    return connects(path)


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


def processes(pattern: str) -> list[tuple[int, str]]:
    """(pid, command line) of every process whose command line holds ``pattern`` (pgrep -f, itself left out)."""
    out = subprocess.run(["pgrep", "-a", "-f", "--", pattern], capture_output=True, text=True).stdout
    found = []
    for line in out.splitlines():
        pid, _, cmd = line.partition(" ")
        if "pgrep" not in cmd and pid.isdigit():
            found.append((int(pid), cmd))
    return found


def kill_matching(pattern: str) -> None:
    """SIGKILL every process whose command line holds ``pattern`` (a test's own path or port)."""
    for pid, _ in processes(pattern):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


def fio_pids(where: str | int) -> list[int]:
    """fio's server processes (the server and its per-connection forks and jobs, not the agent's guard) on the
    socket path or the loopback port ``where``."""
    arg = f"--server=sock:{where}" if isinstance(where, str) else f"--server=ip:127.0.0.1,{where}"
    return [pid for pid, cmd in processes(arg) if cmd.split()[0].endswith("fio") and cmd.split()[1:2] == [arg]]


def fio_servers(where: str | int) -> list[int]:
    return fio_pids(where)


@dataclass
class Agent:
    tcp: bool = False  # a loopback TCP agent (--allow-local-users) instead of a socket
    port: int = field(default_factory=free_port)
    directory: str = field(default_factory=lambda: tempfile.mkdtemp(prefix="profiler-tui-agent-"))
    proc: subprocess.Popen[str] | None = None

    @property
    def socket(self) -> str:
        return os.path.join(self.directory, "agent.sock")

    @property
    def where(self) -> str | int:
        """What fio_servers() takes: the socket, or the port."""
        return self.port if self.tcp else self.socket

    @property
    def host(self) -> str:
        return f"tcp://127.0.0.1:{self.port}" if self.tcp else f"unix://{self.socket}"

    def argv(self) -> list[str]:
        listen = (["--bind", "127.0.0.1", "--port", str(self.port), "--allow-local-users"] if self.tcp
                  else ["--socket", self.socket])
        return [sys.executable, "-m", "app", "agent", *listen]

    def answers(self) -> bool:
        return listening(self.port) if self.tcp else answering(self.socket)

    def start(self) -> "Agent":
        self.proc = subprocess.Popen(self.argv(), cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                     text=True)
        deadline = time.monotonic() + 20
        while not self.answers() or (not self.tcp and os.stat(self.socket).st_mode & 0o777 != 0o600):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                err = self.proc.stderr.read() if self.proc.stderr else ""
                self.stop()
                raise RuntimeError(f"the agent on {self.host} did not start: {err}")
            time.sleep(0.05)
        return self

    def kill_server(self) -> None:
        """SIGKILL fio's server itself (the host 'drops'), leaving the agent process to notice."""
        self.freeze(signal.SIGKILL)

    def freeze(self, sig: int = signal.SIGSTOP) -> None:
        """SIGSTOP fio's server and its jobs: the host 'freezes' with its connections open (SIGCONT: thaw)."""
        for _ in range(3 if sig == signal.SIGSTOP else 1):  # again: forks made while the first sweep ran
            for pid in fio_pids(self.where):
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, sig)
            if sig == signal.SIGSTOP:
                time.sleep(0.1)

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

    def remove(self) -> None:
        """The agent's directory (once it is stopped)."""
        shutil.rmtree(self.directory, ignore_errors=True)


@contextlib.contextmanager
def agents(n: int, tcp: bool = False) -> Iterator[list[Agent]]:
    running: list[Agent] = []
    try:
        for _ in range(n):
            running.append(Agent(tcp=tcp).start())
        yield running
    finally:
        for a in running:
            a.thaw()  # a frozen server would not stop on SIGTERM
            a.stop()
        for a in running:  # never leave a fio server behind, even when the test failed
            kill_matching(f"--server=sock:{a.socket}" if not a.tcp else f"--server=ip:127.0.0.1,{a.port}")
            a.remove()
