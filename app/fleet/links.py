"""How the controller reaches each fleet host: the address ``fio --client`` connects to, and how the host's
target is judged (``devices --json --target PATH`` run on that host).

* ``ssh://[user@]host[:port]``: one OpenSSH master connection per host (``ssh -M -N``, BatchMode: the user's
  own keys and known_hosts, never a password prompt in the middle of a run) carries a forward from a socket in
  this process's own 0700 temporary directory to the agent's socket on the host
  (``-L DIR/agent.sock:/run/profiler-tui/agent.sock``, the local socket bound 0600), and every command run there
  (``profiler-tui devices --json --target PATH``) through the same connection.  fio connects to the local
  socket, so no other user of either machine can reach the agent through the run.
* ``unix:///PATH``: an agent on this machine, reached at its socket; the target is judged here.
* ``tcp://ADDR:PORT`` (only with the user's consent, :class:`app.fleet.hosts.TcpConsent`): fio connects
  directly.  When ADDR is a loopback address the agent runs on this machine and the target is judged here;
  any other tcp host cannot be examined, so a plan that writes is refused for it and a read-only plan needs
  ``--yes``.

Every ssh the controller starts dies with it: the kernel SIGKILLs it when the controller dies (a parent-death
signal, never ``ControlPersist``), and :func:`close_all` ends every open link at once (the CLI's ^C during
start-up, before it exits).

``PROFILER_TUI_SSH_CONFIG`` names an ssh_config file passed to every ssh (``-F``); ``PROFILER_TUI_REMOTE_COMMAND``
is the command that runs profiler-tui on an ssh host (default ``profiler-tui``).
"""

from __future__ import annotations

import json
import os
import secrets
import shlex
import shutil
import socket
import stat
import subprocess
import tempfile
import time
import weakref
from dataclasses import dataclass, field
from typing import Sequence

from app.core import settings
from app.core.errors import ProfilerError, SafetyError, ToolMissing, UsageError
from app.core.sanitize import clean_json, clean_line
from app.fleet.hosts import DEFAULT_AGENT_SOCKET, Host
from app.fleet.inspect import (
    BadAnswer,
    Contradiction,
    describe_target,
    device_of,
    parse_answer,
    read_target,
    shape_of,
    verdict_of,
)
from app.host import safety
from app.host.external import describe_failure, run_bounded
from app.host.process import die_with_parent
from app.host.programs import untrusted, which_trusted
from app.model import points
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


def start_ssh(argv: list[str], *, stdin: int, stdout: int, stderr: int) -> subprocess.Popen[bytes]:
    """An ssh process in its own session (a terminal's ^C goes to the controller, which ends it) that the kernel
    kills when the controller dies."""
    return subprocess.Popen(argv, start_new_session=True, preexec_fn=die_with_parent, stdin=stdin, stdout=stdout,
                            stderr=stderr)


def ssh_binary() -> str:
    path, why = which_trusted("ssh")
    if why:
        raise SafetyError(f"{why}.")
    if not path:
        raise ToolMissing("ssh is not installed; install the OpenSSH client (Debian: apt-get install openssh-client) "
                          "to reach ssh:// hosts.")
    return path


def ssh_base(host: Host) -> list[str]:
    argv = [ssh_binary(), "-o", "BatchMode=yes", "-o", f"ConnectTimeout={int(CONNECT_TIMEOUT_S)}",
            "-o", "ServerAliveInterval=5", "-o", "ServerAliveCountMax=3", "-p", str(host.port)]
    config = settings.ssh_config()
    if config:
        # ssh does not check the owner or mode of a file given with -F (only of ~/.ssh/config), and a ProxyCommand
        # or LocalCommand in it runs as root: a file another user can change is refused
        if not os.path.isfile(config):
            raise UsageError(f"PROFILER_TUI_SSH_CONFIG={clean_line(config, 200)}: no such regular file.")
        why = untrusted(config)
        if why:
            raise SafetyError(f"PROFILER_TUI_SSH_CONFIG={clean_line(config, 200)}: {why}, so another user could make "
                              "ssh run any command as root; keep the file where only root can write.")
        argv[1:1] = ["-F", os.path.realpath(config)]
    return argv


def remote_command() -> list[str]:
    text = settings.remote_command()
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


_OPEN: "weakref.WeakSet[Link]" = weakref.WeakSet()  # links with an ssh connection or its directory


LINK_PREFIX = "profiler-tui-ssh-"


SOCKET_PATH_MAX = 107  # a Unix socket's path: sun_path holds 108 bytes with the closing NUL
# the longest name in a link's directory: ssh makes its control socket as ctl.<16 random characters>, then renames it
LONGEST_NAME = len("/ctl.") + 16
_LONGEST_DIR_NAME = f"{LINK_PREFIX}{2**22}-{'f' * 12}"  # a pid (at most 2^22 on Linux) and the random part


def _link_base() -> str:
    """Where links' directories go: TMPDIR, or /tmp when TMPDIR is too deep for the sockets in them (ssh would
    refuse the forward with "Bad local forwarding specification")."""
    base = tempfile.gettempdir()
    if len(os.path.join(base, _LONGEST_DIR_NAME).encode()) + LONGEST_NAME > SOCKET_PATH_MAX:
        return "/tmp"
    return base


def _link_dir() -> str:
    """A fresh path for a link's directory, not created yet (the link is registered first, so an interrupt
    at any moment finds what to remove)."""
    _remove_dead_links()
    return os.path.join(_link_base(), f"{LINK_PREFIX}{os.getpid()}-{secrets.token_hex(6)}")


def _remove_dead_links() -> None:
    """The directories of this user's controllers that were killed (SIGKILL leaves them: the kernel ended their
    ssh, nothing could remove the directory): their process is gone."""
    for base in dict.fromkeys((tempfile.gettempdir(), _link_base())):
        _remove_dead_links_in(base)


def _remove_dead_links_in(base: str) -> None:
    try:
        names = [n for n in os.listdir(base) if n.startswith(LINK_PREFIX)]
    except OSError:
        return
    for name in names:
        pid = name[len(LINK_PREFIX):].split("-", 1)[0]
        path = os.path.join(base, name)
        try:
            st = os.lstat(path)
            if not pid.isdigit() or st.st_uid != os.geteuid() or not stat.S_ISDIR(st.st_mode):
                continue
            os.kill(int(pid), 0)
        except ProcessLookupError:
            shutil.rmtree(path, ignore_errors=True)
        except OSError:
            continue


@dataclass(eq=False)
class Link:
    host: Host
    agent_socket: str = DEFAULT_AGENT_SOCKET  # the agent's socket on an ssh host
    _master: subprocess.Popen[bytes] | None = field(default=None, repr=False)
    _dir: str | None = field(default=None, repr=False)  # ssh: the control socket and the forward's local end

    # --- fio ---------------------------------------------------------------------------------

    @property
    def local_socket(self) -> str:
        """The forward's local end (ssh): fio connects here."""
        assert self._dir is not None, "the connection is not open"
        return os.path.join(self._dir, "agent.sock")

    @property
    def fio_address(self) -> tuple[str, int | None]:
        """(hostname, port) as fio writes them into client_stats: a socket's path (its port is not meaningful
        then: None), or the tcp host's address and port."""
        if self.host.scheme == "ssh":
            return self.local_socket, None
        if self.host.scheme == "unix":
            return self.host.address, None
        return self.host.address, self.host.port

    @property
    def fio_client(self) -> str:
        addr, port = self.fio_address
        if port is None:
            return f"sock:{addr}"
        return f"ip6:{addr},{port}" if ":" in addr else f"{'ip:' if _is_ip(addr) else ''}{addr},{port}"

    # --- opening and closing -------------------------------------------------------------------

    def open(self) -> "Link":
        if self.host.scheme == "ssh" and self._master is None:
            self._open_ssh()
        return self

    def _control(self) -> str:
        assert self._dir is not None
        return os.path.join(self._dir, "ctl")

    def _open_ssh(self) -> None:
        self._dir = _link_dir()
        _OPEN.add(self)
        try:
            os.mkdir(self._dir, 0o700)  # a fresh random name: an existing one (someone else's) fails here
        except OSError as e:
            self._dir = None
            raise HostUnreachable(f"host {self.host.name}: cannot make a directory for its connection "
                                  f"({e.strerror}).") from None
        argv = ssh_base(self.host) + ["-M", "-S", self._control(), "-N", "-o", "ExitOnForwardFailure=yes",
                                      "-o", "ControlPersist=no", "-o", "StreamLocalBindMask=0177",
                                      "-o", "StreamLocalBindUnlink=yes",
                                      "-L", f"{self.local_socket}:{self.agent_socket}",
                                      "--", self.host.ssh_destination]
        self._master = start_ssh(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        deadline = time.monotonic() + CONNECT_TIMEOUT_S + 5
        while time.monotonic() < deadline:
            if self._master.poll() is not None:
                err = (self._master.stderr.read() if self._master.stderr else b"").decode("utf-8", "replace")
                self.close()
                raise HostUnreachable(f"host {self.host.name}: ssh could not connect "
                                      f"({_first_line(err) or f'exit status {self._master.returncode}'}).")
            if os.path.exists(self._control()) and os.path.exists(self.local_socket) and self._check():
                return
            time.sleep(0.1)
        self.close()
        raise HostUnreachable(f"host {self.host.name}: ssh did not connect within {CONNECT_TIMEOUT_S:.0f} s.")

    def _check(self) -> bool:
        argv = ssh_base(self.host) + ["-S", self._control(), "-O", "check", "--", self.host.ssh_destination]
        outcome = run_bounded(argv, 10)
        return outcome.ok and outcome.returncode == 0

    @property
    def alive(self) -> bool:
        return self.host.scheme != "ssh" or (self._master is not None and self._master.poll() is None)

    def close(self) -> None:
        """End the SSH connection (its forward with it) and remove its directory; nothing of it stays."""
        master, self._master = self._master, None
        if master is not None:
            end_process(master)
        directory, self._dir = self._dir, None
        if directory is not None:
            shutil.rmtree(directory, ignore_errors=True)
        _OPEN.discard(self)

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

    def devices(self) -> list[dict[str, object]]:
        """The host's `devices --json` listing (this machine's for an agent here; none for other tcp hosts)."""
        if self.host.scheme == "ssh":
            try:
                doc = parse_answer(self.run_remote(["devices", "--json"]))
            except BadAnswer as e:
                raise HostUnreachable(f"host {self.host.name}: its `devices --json` answer is not usable ({e}).") \
                    from None
            cleaned = clean_json(doc)  # every string the TUI or the CLI shows, as the local listing's
            return [d for d in cleaned if isinstance(d, dict)] if isinstance(cleaned, list) else []
        if self.host.is_local:
            from app.host.devices import list_devices

            return list_devices()
        return []

    def describe(self, target: str) -> dict[str, object] | None:
        """The host's answer about ``target`` (:func:`app.fleet.inspect.describe_target` there), checked; None
        for a tcp host that cannot be examined from here."""
        if self.host.scheme != "ssh" and not self.host.is_local:
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


def open_links(hosts: Sequence[Host], agent_socket: str = DEFAULT_AGENT_SOCKET) -> list[Link]:
    """A link per host, every ssh connection opened (all closed again when one fails)."""
    links: list[Link] = []
    try:
        for h in hosts:
            links.append(Link(h, agent_socket).open())
    except BaseException:
        close_links(links)
        raise
    return links


def close_links(links: Sequence[Link]) -> None:
    for link in links:
        link.close()


def close_all() -> None:
    """Close every link of this process (^C during start-up, before the process exits)."""
    close_links(list(_OPEN))


def agent_reachable(link: Link, timeout: float = 3.0) -> bool:
    """Whether the host's agent accepts connections.  For an ssh host the forward's local end always accepts one
    (ssh opens the channel to the host's socket only then), so the check waits on it: ssh closes the connection
    at once when nothing listens at the agent's socket there, and keeps it open when the agent accepted (fio's
    server waits for the client to speak first)."""
    if link.host.scheme == "ssh":
        if not link.alive or link._dir is None:
            return False
        return _stays_open(link.local_socket, timeout)
    addr, port = link.fio_address
    family, where = (socket.AF_UNIX, addr) if port is None else (socket.AF_INET6 if ":" in addr else socket.AF_INET,
                                                                 (addr, port))
    with socket.socket(family, socket.SOCK_STREAM) as s:
        s.settimeout(timeout)
        try:
            s.connect(where)
            return True
        except OSError:
            return False


def _stays_open(path: str, timeout: float) -> bool:
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.settimeout(timeout)
        try:
            s.connect(path)
            return s.recv(1) != b""  # EOF: ssh's channel to the host's socket was refused
        except TimeoutError:
            return True  # the channel stayed open: something listens at the agent's socket on the host
        except OSError:
            return False
