"""How the controller reaches each fleet host: the address ``fio --client`` connects to, and how the host's
target is judged (``devices --json --target PATH`` run on that host).

* ``ssh://[user@]host[:port]``: one OpenSSH master connection per host (``ssh -M -N``, BatchMode: the user's
  own keys and known_hosts, never a password prompt in the middle of a run) carries a local forward
  ``127.0.0.1:LOCAL → 127.0.0.1:AGENT_PORT`` on the host (the agent listens on the host's loopback) and every
  command run there (``profiler-tui devices --json --target PATH``) through the same connection.
* ``tcp://ADDR:PORT``: fio connects directly.  When ADDR is a loopback address the agent runs on this machine
  and the target is judged here; any other tcp host cannot be examined, so a plan that writes is refused for
  it and a read-only plan needs ``--yes``.

``PROFILER_TUI_SSH_CONFIG`` names an ssh_config file passed to every ssh (``-F``); ``PROFILER_TUI_REMOTE_COMMAND``
is the command that runs profiler-tui on an ssh host (default ``profiler-tui``).
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import socket
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

from app import points, safety
from app.errors import ProfilerError, SafetyError, ToolMissing, UsageError
from app.fleet.hosts import DEFAULT_AGENT_PORT, Host
from app.external import describe_failure, run_bounded
from app.fleet.inspect import (BadAnswer, Contradiction, describe_target, device_of, parse_answer, read_target,
                               shape_of, verdict_of)
from app.sanitize import clean_json, clean_line
from app.runners.fio import TargetShape

CONNECT_TIMEOUT_S = 15.0
REMOTE_TIMEOUT_S = 60.0
MAX_ANSWER_BYTES = 4 << 20


class HostUnreachable(ProfilerError):
    """A fleet host cannot be reached (ssh fails, the tunnel does not come up); exit 1."""


def end_process(proc: subprocess.Popen[bytes], grace: float = 5.0) -> None:
    """SIGTERM a helper process (an ssh connection, a stream), SIGKILL it after ``grace`` s; close its pipes."""
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(grace)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    for pipe in (proc.stdin, proc.stdout, proc.stderr):
        if pipe:
            pipe.close()


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on now (for a tunnel's local end)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def ssh_binary() -> str:
    path = shutil.which("ssh")
    if not path:
        raise ToolMissing("ssh is not installed; install the OpenSSH client (Debian: apt-get install openssh-client) "
                          "to reach ssh:// hosts.")
    return path


def ssh_base(host: Host) -> list[str]:
    argv = [ssh_binary(), "-o", "BatchMode=yes", "-o", f"ConnectTimeout={int(CONNECT_TIMEOUT_S)}",
            "-o", "ServerAliveInterval=5", "-o", "ServerAliveCountMax=3", "-p", str(host.port)]
    config = os.environ.get("PROFILER_TUI_SSH_CONFIG")
    if config:
        argv[1:1] = ["-F", config]
    return argv


def remote_command() -> list[str]:
    text = os.environ.get("PROFILER_TUI_REMOTE_COMMAND") or "profiler-tui"
    try:
        words = shlex.split(text)
    except ValueError:
        words = []
    if not words:
        raise UsageError(f"PROFILER_TUI_REMOTE_COMMAND={text!r} is not a command.")
    return words


@dataclass
class Judged:
    """A host's target as judged for one plan: the confirmed verdict and the target's shape."""

    verdict: safety.Verdict
    shape: TargetShape
    device: tuple[int, int] | None = None  # the block device the target is or lives on (live figures)


@dataclass
class Link:
    host: Host
    agent_port: int = DEFAULT_AGENT_PORT
    local_port: int | None = None  # the tunnel's local end (ssh)
    _master: subprocess.Popen[bytes] | None = field(default=None, repr=False)
    _dir: tempfile.TemporaryDirectory[str] | None = field(default=None, repr=False)

    # --- fio ---------------------------------------------------------------------------------

    @property
    def fio_address(self) -> tuple[str, int]:
        """(hostname, port) as fio connects to them, and as it writes them into client_stats."""
        if self.host.scheme == "ssh":
            assert self.local_port is not None, "the tunnel is not open"
            return "127.0.0.1", self.local_port
        return self.host.address, self.host.port

    @property
    def fio_client(self) -> str:
        addr, port = self.fio_address
        return f"ip6:{addr},{port}" if ":" in addr else f"{'ip:' if _is_ip(addr) else ''}{addr},{port}"

    # --- opening and closing -------------------------------------------------------------------

    def open(self) -> "Link":
        if self.host.scheme == "ssh" and self._master is None:
            self._open_ssh()
        return self

    def _control(self) -> str:
        assert self._dir is not None
        return str(Path(self._dir.name) / "ctl")

    def _open_ssh(self) -> None:
        self._dir = tempfile.TemporaryDirectory(prefix="profiler-tui-ssh-")
        self.local_port = free_port()
        argv = ssh_base(self.host) + ["-M", "-S", self._control(), "-N", "-o", "ExitOnForwardFailure=yes",
                                      "-o", "ControlPersist=no",
                                      "-L", f"127.0.0.1:{self.local_port}:127.0.0.1:{self.agent_port}",
                                      "--", self.host.ssh_destination]
        self._master = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                        stderr=subprocess.PIPE, start_new_session=True)
        deadline = time.monotonic() + CONNECT_TIMEOUT_S + 5
        while time.monotonic() < deadline:
            if self._master.poll() is not None:
                err = (self._master.stderr.read() if self._master.stderr else b"").decode("utf-8", "replace")
                self.close()
                raise HostUnreachable(f"host {self.host.name}: ssh could not connect "
                                      f"({_first_line(err) or f'exit status {self._master.returncode}'}).")
            if os.path.exists(self._control()) and self._check():
                return
            time.sleep(0.1)
        self.close()
        raise HostUnreachable(f"host {self.host.name}: ssh did not connect within {CONNECT_TIMEOUT_S:.0f} s.")

    def _check(self) -> bool:
        argv = ssh_base(self.host) + ["-S", self._control(), "-O", "check", "--", self.host.ssh_destination]
        try:
            return subprocess.run(argv, capture_output=True, timeout=10).returncode == 0
        except (OSError, subprocess.TimeoutExpired):
            return False

    @property
    def alive(self) -> bool:
        return self.host.scheme != "ssh" or (self._master is not None and self._master.poll() is None)

    def close(self) -> None:
        """End the SSH connection (its tunnel with it); nothing of it stays running."""
        master, self._master = self._master, None
        if master is not None:
            end_process(master)
        if self._dir is not None:
            self._dir.cleanup()
            self._dir = None

    # --- commands on the host ------------------------------------------------------------------

    def remote_argv(self, words: Sequence[str]) -> list[str]:
        """ssh's command line running ``words`` (each quoted for the remote shell) on the host, over the open
        master connection."""
        return ssh_base(self.host) + ["-S", self._control(), "--", self.host.ssh_destination,
                                      " ".join(shlex.quote(w) for w in words)]

    def run_remote(self, args: Sequence[str], timeout: float = REMOTE_TIMEOUT_S) -> str:
        """Run ``profiler-tui ARGS`` on the host (ssh) and return its stdout; HostUnreachable when it fails."""
        assert self.host.scheme == "ssh"
        self.open()
        words = remote_command() + list(args)
        argv = self.remote_argv(words)
        outcome = run_bounded(argv, timeout, MAX_ANSWER_BYTES)
        if outcome.failure == "too large":
            raise HostUnreachable(f"host {self.host.name}: its answer is larger than {MAX_ANSWER_BYTES} bytes.")
        if not outcome.ok:
            raise HostUnreachable(f"host {self.host.name}: "
                                  f"{describe_failure(outcome, clean_line(' '.join(words)), timeout)}.")
        if outcome.returncode != 0:
            err = outcome.stderr.decode("utf-8", "replace")
            raise HostUnreachable(f"host {self.host.name}: `{clean_line(' '.join(words[:2]))} …` failed "
                                  f"({_first_line(err) or f'exit status {outcome.returncode}'}).")
        return outcome.stdout.decode("utf-8", "replace")

    def devices(self) -> list[dict[str, Any]]:
        """The host's `devices --json` listing (this machine's for a loopback tcp host; none for other tcp hosts)."""
        if self.host.scheme == "ssh":
            try:
                doc = parse_answer(self.run_remote(["devices", "--json"]))
            except BadAnswer as e:
                raise HostUnreachable(f"host {self.host.name}: its `devices --json` answer is not usable ({e}).") \
                    from None
            cleaned = clean_json(doc)  # every string the TUI or the CLI shows, as the local listing's
            return [d for d in cleaned if isinstance(d, dict)] if isinstance(cleaned, list) else []
        if self.host.is_loopback:
            from app.devices import list_devices

            return list_devices()
        return []

    def describe(self, target: str) -> dict[str, Any] | None:
        """The host's answer about ``target`` (:func:`app.fleet.inspect.describe_target` there), checked; None
        for a tcp host that cannot be examined from here."""
        if self.host.scheme != "ssh" and not self.host.is_loopback:
            return None
        try:
            if self.host.scheme == "ssh":
                doc = parse_answer(self.run_remote(["devices", "--json", "--target", target]))
            else:  # the agent runs here: this machine's answer, read exactly as a remote host's
                doc = json.loads(json.dumps({"target": describe_target(target)}))
            return read_target(doc)
        except Contradiction as e:
            raise SafetyError(f"host {self.host.name}: refusing its target {clean_line(target)}, because its "
                              f"`devices --json --target` answer contradicts itself ({e}).") from None
        except BadAnswer as e:
            raise HostUnreachable(f"host {self.host.name}: its `devices --json --target` answer is not "
                                  f"usable ({e}).") from None

    def _unexamined(self, target: str, writes: bool) -> Judged:
        """A tcp host's target, which the controller cannot examine: a write is refused, a read needs --yes."""
        why = (f"host {self.host.name} is reached over tcp:// and its devices cannot be examined from here; "
               "use ssh:// so the safety rules can be checked on that host")
        verdict = (safety.Verdict(target, "other", points.Verdict.REFUSED, [why], True) if writes else
                   safety.Verdict(target, "other", points.Verdict.OK,
                                  [why + " (a read-only plan runs when confirmed)"], True))
        return Judged(verdict, TargetShape(True, False, None))

    def judge(self, target: str, writes: bool, *, yes: bool, allow_destructive: bool) -> Judged:
        """The controller's verdict on the host's ``target`` for this plan, from the facts the host reported and
        the controller's own rules, with the user's confirmations: SafetyError (exit 3) naming the host when the
        plan may not run there."""
        answer = self.describe(target)
        judged = self._unexamined(target, writes) if answer is None else \
            Judged(verdict_of(answer, writes), shape_of(answer), device_of(answer))
        try:
            confirmed = safety.confirm(judged.verdict, writes, yes=yes, allow_destructive=allow_destructive)
        except SafetyError as e:
            raise SafetyError(f"host {clean_line(self.host.name)}: {e}") from None
        return Judged(confirmed, judged.shape, judged.device)


def _is_ip(text: str) -> bool:
    try:
        socket.inet_aton(text)
        return text.count(".") == 3
    except OSError:
        return False


def _first_line(text: str) -> str:
    """The first line of another program's words (ssh's stderr), cleaned of control sequences."""
    for line in text.splitlines():
        if line.strip():
            return clean_line(line)
    return ""


def open_links(hosts: Sequence[Host], agent_port: int = DEFAULT_AGENT_PORT) -> list[Link]:
    """A link per host, every ssh connection opened (all closed again when one fails)."""
    links: list[Link] = []
    try:
        for h in hosts:
            links.append(Link(h, agent_port).open())
    except BaseException:
        close_links(links)
        raise
    return links


def close_links(links: Sequence[Link]) -> None:
    for link in links:
        link.close()


def agent_reachable(link: Link, timeout: float = 3.0) -> bool:
    """Whether the host's agent accepts connections.  For an ssh host the tunnel's local end always accepts one
    (ssh opens the channel only then), so the check asks the host itself: ``ssh -W 127.0.0.1:AGENT_PORT`` over
    the master connection fails at once when nothing listens there, and stays open when the agent answered."""
    if link.host.scheme == "ssh":
        return _agent_answers_over_ssh(link, timeout)
    addr, port = link.fio_address
    try:
        with socket.create_connection((addr, port), timeout=timeout):
            return True
    except OSError:
        return False


def _agent_answers_over_ssh(link: Link, timeout: float) -> bool:
    if not link.alive or link._dir is None:
        return False
    argv = ssh_base(link.host) + ["-S", link._control(), "-W", f"127.0.0.1:{link.agent_port}", "--",
                                  link.host.ssh_destination]
    try:
        proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    except OSError:
        return False
    try:
        proc.wait(timeout)
        return False  # ssh ended: the channel was refused ("connect failed"), or the connection is gone
    except subprocess.TimeoutExpired:
        return True  # the channel stayed open: something listens at the agent's port on the host
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        if proc.stdin:
            proc.stdin.close()
