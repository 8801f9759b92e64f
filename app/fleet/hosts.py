"""Fleet hosts as the user names them: ``--host ssh://[user@]host[:port]``, ``--host unix:///PATH`` (an agent's
socket on this machine) or ``--host tcp://ADDR:PORT``, and ``--target PATH`` / ``--target HOST=PATH``.

A host's name is the text given to ``--host``, exactly: it is the ``host`` of the results lines and the key of
``--target HOST=PATH``.  Every part is checked before anything is started: a host name that could be read as an
option by ssh or fio (``-oProxyCommand=…``), a control character, a port out of range or a path that is not
absolute is refused with one sentence (exit 2).

fio's server has no authentication, so a ``tcp://`` host is used only with the user's consent
(:class:`TcpConsent`): ``--allow-network`` for another machine's address, ``--allow-local-users`` for a loopback
one (every local user can reach a loopback port).
"""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass
from typing import Sequence

from app.core import settings
from app.core.errors import UsageError

DEFAULT_AGENT_PORT = 8765
DEFAULT_AGENT_SOCKET = "/run/profiler-tui/agent.sock"
AGENT_SOCKET_ENV = settings.AGENT_SOCKET.name
DEFAULT_SSH_PORT = 22
MAX_HOSTS = 64
MAX_HOST_CHARS = 255
MAX_SOCKET_CHARS = 107  # sockaddr_un's sun_path holds 108 bytes with the final NUL
SCHEMES = ("ssh", "tcp", "unix")
HOST_FORMS = "ssh://[user@]host[:port], unix:///PATH or tcp://ADDR:PORT"

# a DNS name or an IPv4 address: letters, digits, '.', '-' and '_' (never first: ssh would read '-' as an option)
_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9._-]{0,252}")
_USER = re.compile(r"[A-Za-z0-9_][A-Za-z0-9._-]{0,63}")
_BRACKETED = re.compile(r"\[([0-9A-Fa-f:.]+)\]")
_SOCKET = re.compile(r"/[A-Za-z0-9._+/-]{0,%d}" % (MAX_SOCKET_CHARS - 1))


@dataclass(frozen=True)
class Host:
    name: str  # exactly as given to --host
    scheme: str  # ssh | tcp | unix
    address: str  # host name or IP address (an IPv6 address without brackets); unix: the socket's path
    port: int  # tcp: the agent's port; ssh: the SSH server's port; unix: 0
    user: str | None = None

    @property
    def is_ipv6(self) -> bool:
        return ":" in self.address

    @property
    def is_loopback(self) -> bool:
        """The address is this machine's own (127.0.0.0/8, ::1, localhost): the agent runs here."""
        if self.address == "localhost":
            return True
        try:
            return ipaddress.ip_address(self.address).is_loopback
        except ValueError:
            return False

    @property
    def is_local(self) -> bool:
        """The agent runs on this machine (a unix:// socket, a loopback tcp:// address): its target is judged and
        its live figures read here."""
        return self.scheme == "unix" or (self.scheme == "tcp" and self.is_loopback)

    @property
    def ssh_destination(self) -> str:
        return f"{self.user}@{self.address}" if self.user else self.address

    @property
    def slug(self) -> str:
        """The host in a file name: letters, digits, '.', '-' and '_' only."""
        if self.scheme == "unix":
            return "unix" + re.sub(r"[^A-Za-z0-9._-]", "_", self.address)
        text = f"{self.scheme}-{self.user + '@' if self.user else ''}{self.address}-{self.port}"
        return re.sub(r"[^A-Za-z0-9._-]", "_", text.replace("@", "_at_"))

    def to_dict(self) -> dict[str, object]:
        return {"host": self.name, "scheme": self.scheme, "address": self.address, "port": self.port,
                "user": self.user}


def check_socket_path(path: str, option: str) -> str:
    """An agent's socket path: absolute, at most 107 characters of letters, digits and ``._+/-`` (it goes into
    fio's and ssh's command lines, and a ``--target HOST=PATH`` is split at its '=')."""
    if not isinstance(path, str) or not _SOCKET.fullmatch(path) or "/../" in f"{path}/" or path.endswith("/"):
        raise _bad(option, str(path), f"an agent's socket is an absolute path of at most {MAX_SOCKET_CHARS} "
                                      "characters (letters, digits, '.', '_', '+', '-', '/'), without '..'.")
    return path


def agent_socket_from_env() -> str:
    """The agents' socket on ssh:// hosts: ``PROFILER_TUI_AGENT_SOCKET`` when set (the TUI's, and run's default)."""
    text = settings.agent_socket()
    return check_socket_path(text, AGENT_SOCKET_ENV) if text else DEFAULT_AGENT_SOCKET


@dataclass(frozen=True)
class TcpConsent:
    """What the user allowed for tcp:// hosts (run/resume ``--allow-network``, ``--allow-local-users``)."""

    network: bool = False
    local_users: bool = False

    def refusal(self, host: Host) -> str | None:
        """Why ``host`` may not be used without more consent (None: it may)."""
        if host.scheme != "tcp":
            return None
        if host.is_loopback and not self.local_users:
            return (f"--host {host.name}: fio's server has no authentication and every user of this machine can "
                    "reach a loopback port; use the agent's socket (unix:///run/profiler-tui/agent.sock) or give "
                    "--allow-local-users.")
        if not host.is_loopback and not self.network:
            return (f"--host {host.name}: fio's server has no authentication, so anyone who can reach that port "
                    "runs jobs as root there; use ssh:// or give --allow-network.")
        return None

    def warning(self, host: Host) -> str | None:
        """What the user consented to, said once per run for each tcp:// host."""
        if host.scheme != "tcp":
            return None
        who = "every user of this machine" if host.is_loopback else "anyone who can reach that port"
        return f"warning: --host {host.name}: {who} can run any fio job as root on that agent during this run."

    def check(self, hosts: Sequence[Host]) -> None:
        for h in hosts:
            why = self.refusal(h)
            if why:
                raise UsageError(why)


# run's and resume's consent (app.cli.commands sets it); a Fleet checks its hosts against it before connecting anything
CONSENT = TcpConsent()


def _bad(option: str, text: str, why: str) -> UsageError:
    return UsageError(f"{option} {text[:120]!r}: {why}")


def _address(text: str, option: str, whole: str) -> str:
    m = _BRACKETED.fullmatch(text)
    if m:
        try:
            return str(ipaddress.IPv6Address(m.group(1)))
        except ValueError:
            raise _bad(option, whole, f"{text!r} is not an IPv6 address.") from None
    if not _NAME.fullmatch(text):
        raise _bad(option, whole, f"the host {text!r} is not a host name or an IP address "
                                  "(letters, digits, '.', '-' and '_', not starting with '-'; IPv6 in brackets).")
    return text


def _port(text: str, option: str, whole: str) -> int:
    if not text.isdigit() or not text.isascii() or len(text) > 5 or not 1 <= int(text) <= 65535:
        raise _bad(option, whole, f"the port {text[:20]!r} is not a number from 1 to 65535.")
    return int(text)


def parse_host(text: str, option: str = "--host") -> Host:
    """One ``--host`` value (UsageError, exit 2, naming it when it is not one of :data:`HOST_FORMS`)."""
    if not isinstance(text, str):
        raise UsageError(f"{option} {text!r}: expected {HOST_FORMS}.")
    if len(text) > MAX_HOST_CHARS or any(ord(c) < 33 or c == "\x7f" for c in text):
        raise _bad(option, text, f"a host is at most {MAX_HOST_CHARS} characters, without spaces or control "
                                 "characters.")
    scheme, sep, rest = text.partition("://")
    if not sep or scheme not in SCHEMES:
        raise _bad(option, text, f"expected {HOST_FORMS}.")
    if scheme == "unix":
        return Host(text, "unix", check_socket_path(rest, option), 0)
    if "/" in rest or "?" in rest or "#" in rest:
        raise _bad(option, text, f"a host has no path or query; expected {HOST_FORMS}.")
    user = None
    if "@" in rest:
        if scheme != "ssh":
            raise _bad(option, text, "only an ssh:// host names a user.")
        user, _, rest = rest.rpartition("@")
        if not _USER.fullmatch(user):
            raise _bad(option, text, f"the user {user[:40]!r} is not a user name (letters, digits, '.', '-', '_').")
    if rest.startswith("["):
        close = rest.find("]")
        addr_text, port_text = rest[:close + 1], rest[close + 1:]
        if close < 0 or (port_text and not port_text.startswith(":")):
            raise _bad(option, text, "an IPv6 address is written [ADDR] or [ADDR]:PORT.")
        port_text = port_text[1:] if port_text else ""
    else:
        addr_text, _, port_text = rest.partition(":")
        if ":" in port_text:
            raise _bad(option, text, "write an IPv6 address in brackets: [ADDR]:PORT.")
    address = _address(addr_text, option, text)
    if scheme == "tcp":
        if not port_text:
            raise _bad(option, text, "a tcp:// host needs the agent's port: tcp://ADDR:PORT.")
        return Host(text, "tcp", address, _port(port_text, option, text))
    port = _port(port_text, option, text) if port_text else DEFAULT_SSH_PORT
    return Host(text, "ssh", address, port, user)


def parse_hosts(values: Sequence[str]) -> list[Host]:
    """The ``--host`` values, each checked; the same host twice is refused (its results would be one)."""
    if len(values) > MAX_HOSTS:
        raise UsageError(f"--host was given {len(values)} times; a fleet run takes at most {MAX_HOSTS} hosts.")
    hosts = [parse_host(v) for v in values]
    seen: dict[tuple[str, str, int], str] = {}
    for h in hosts:
        key = (h.scheme, h.address, h.port)
        if key in seen:
            raise UsageError(f"--host {h.name!r} names the same host as --host {seen[key]!r}; give each host once.")
        seen[key] = h.name
    return hosts


def check_remote_path(path: str, option: str) -> str:
    """A target path on a fleet host: absolute, without control characters (it goes into a job file and into
    a command run over SSH)."""
    if not path.startswith("/") or len(path) > 4096 or any(ord(c) < 32 or c == "\x7f" for c in path):
        raise _bad(option, path, "a fleet host's target is an absolute path (a file or a block device on that "
                                 "host), without control characters.")
    return path


def host_targets(hosts: Sequence[Host], targets: Sequence[str]) -> dict[str, str]:
    """Host name → target path from ``--target PATH`` (every host) and ``--target HOST=PATH`` (one host; HOST
    exactly as given to --host).  Every host needs a target; a HOST that names no --host is refused."""
    names = {h.name for h in hosts}
    common: str | None = None
    own: dict[str, str] = {}
    for value in targets:
        if "://" in value.split("=", 1)[0] and "=" in value:
            name, _, path = value.partition("=")
            if name not in names:
                raise _bad("--target", value, f"{name!r} is not one of the --host values "
                                              f"({', '.join(sorted(names))}); write HOST exactly as given to --host.")
            if name in own:
                raise _bad("--target", value, f"{name!r} was given a target twice.")
            own[name] = check_remote_path(path, "--target")
        else:
            if common is not None:
                raise _bad("--target", value, "only one --target PATH applies to every host; "
                                              "use --target HOST=PATH for the others.")
            common = check_remote_path(value, "--target")
    out: dict[str, str] = {}
    for h in hosts:
        found = own.get(h.name, common)
        if found is None:
            raise UsageError(f"--host {h.name!r} has no target: give --target PATH (every host) or "
                             f"--target {h.name}=PATH.")
        out[h.name] = found
    return out
