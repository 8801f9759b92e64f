"""``run --start-agent``: the agent of each fleet host started in a container for the run, and removed after it.

The container (``docker run --rm --privileged --network none -v /dev:/dev -v /run/profiler-tui:/run/profiler-tui
IMAGE agent --socket /run/profiler-tui/agent.sock``, see docs/fleet.md) has no network at all: the agent listens
on its Unix socket in the bind-mounted directory, which must exist on the host, owned by root with mode 0700
(``install -d -m 0700 /run/profiler-tui``; the agent refuses another owner or mode).  It is created and started
through the Docker Engine API of the host with the ``docker`` SDK; a
``podman system service`` answers that API as well.  Nothing is pulled: the image must be on the host already.

* An ``ssh://[user@]host[:port]`` host's engine is reached through an OpenSSH forward of its socket
  (``ssh -N -L LOCAL.sock:/var/run/docker.sock``, with the options of every other ssh of a fleet run:
  BatchMode, the user's keys and known_hosts, ``PROFILER_TUI_SSH_CONFIG``).  ``PROFILER_TUI_DOCKER_SOCKET``
  names another socket on the hosts (podman: ``/run/podman/podman.sock``).
* A ``unix:///PATH`` host (an agent on this machine) uses this machine's engine (``DOCKER_HOST``, else
  ``unix:///var/run/docker.sock``), the socket's directory mounted; tcp hosts cannot have their agent started.
* ``PROFILER_TUI_DOCKER_URL`` (``unix:///PATH``, ``tcp://ADDR:PORT``, ``ssh://…``) is the engine of every host.

A container is ours when it carries the label ``io.profiler-tui.role=agent``; its name says which controller
started it (``profiler-tui-agent-PID-N``).  It counts as started once it runs and its log shows the agent's
start line; it is removed (stopped, then deleted) when the run ends, fails or is interrupted.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from typing import Callable, Iterator, Sequence

import docker
import requests.exceptions
from docker.errors import APIError, DockerException, ImageNotFound, NotFound
from docker.models.containers import Container

from app.core import settings
from app.core.errors import ProfilerError, UsageError
from app.fleet.hosts import DEFAULT_AGENT_SOCKET, Host, parse_host
from app.fleet.links import CONNECT_TIMEOUT_S, end_process, ssh_base, start_ssh

URL_ENV = settings.DOCKER_URL.name
SOCKET_ENV = settings.DOCKER_SOCKET.name
DEFAULT_SOCKET = "/var/run/docker.sock"
LOCAL_ENGINE = "unix:///var/run/docker.sock"
AGENT_LINE = "profiler-tui agent: fio server on"  # app.fleet.agent.run_agent prints it once fio's server runs
ROLE_LABEL = "io.profiler-tui.role"
START_TIMEOUT_S = 30.0
SETTLE_S = 1.0  # the start line must stay true this long: an agent that fails right after it exits within it
POLL_S = 0.2
STOP_TIMEOUT_S = 5
API_TIMEOUT_S = 60
LOG_TAIL = 50

_SDK_ERRORS = (DockerException, requests.exceptions.RequestException, OSError)
_names = itertools.count(1)


class AgentContainerError(ProfilerError):
    """An agent container could not be started (engine unreachable, image missing, agent exited); exit 1."""


class _Failure(Exception):
    """Why an engine or a container failed (the parenthesis of an AgentContainerError) and what to do."""

    def __init__(self, reason: str, hint: str = "") -> None:
        super().__init__(reason)
        self.reason, self.hint = reason, hint


def engine_url(host: Host) -> str:
    """The Docker Engine API that starts ``host``'s agent: ``PROFILER_TUI_DOCKER_URL`` when set, else
    ``ssh://[user@]host:port`` for an ssh host and this machine's engine for a loopback tcp host."""
    override = settings.docker_url()
    if override:
        return override
    if host.scheme == "ssh":
        address = f"[{host.address}]" if host.is_ipv6 else host.address
        return f"ssh://{host.user + '@' if host.user else ''}{address}:{host.port}"
    if host.scheme == "unix":
        return settings.docker_host() or LOCAL_ENGINE
    raise UsageError(f"host {host.name}: --start-agent starts agents on ssh:// hosts and unix:// sockets here; a "
                     f"tcp:// host's agent listens on TCP, which a started agent never does.")


def agent_socket(host: Host, socket: str = DEFAULT_AGENT_SOCKET) -> str:
    """The socket the host's agent listens on: a unix host names it, an ssh host's agent uses ``socket``."""
    return host.address if host.scheme == "unix" else socket


def _clean(text: str, limit: int = 300) -> str:
    return "".join(c if c.isprintable() else " " for c in text).strip()[:limit]


def _last_line(text: str) -> str:
    lines = [_clean(ln) for ln in text.splitlines() if _clean(ln)]
    return lines[-1] if lines else "(none)"


def _failure(err: BaseException, image: str) -> _Failure:
    """An SDK error as a reason, with what to do about it."""
    text = _clean(str(err)) or type(err).__name__
    if isinstance(err, ImageNotFound) or (isinstance(err, APIError) and "no such image" in text.lower()):
        return _Failure(f"image {image} not found", "build or load the image there first")
    if isinstance(err, APIError):
        return _Failure(_clean(str(err.explanation or "")) or text)
    cause = _os_error(err)
    if cause is not None and cause.strerror:
        text = cause.strerror
    return _Failure(f"cannot connect: {text}", "check that a Docker Engine or `podman system service` runs there "
                                                "and that this user may use its socket")


def _os_error(err: BaseException) -> OSError | None:
    """The OSError (connection refused, no such socket, permission denied) at the root of an SDK error: the SDK
    and requests wrap it in their own errors, as the cause or among the arguments."""
    todo, seen = [err], set()
    while todo:
        e = todo.pop(0)
        if id(e) in seen:
            continue
        seen.add(id(e))
        if isinstance(e, OSError) and e.errno is not None:
            return e
        todo += [x for x in (e.__cause__, e.__context__, *e.args) if isinstance(x, BaseException)]
    return None


class _Engine:
    """A DockerClient for one engine URL, through an ssh forward of the remote socket for ``ssh://``."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.client: docker.DockerClient | None = None
        self._ssh: subprocess.Popen[bytes] | None = None
        self._dir: tempfile.TemporaryDirectory[str] | None = None

    def open(self) -> docker.DockerClient:
        base = f"unix://{self._forward()}" if self.url.startswith("ssh://") else self.url
        self.client = docker.DockerClient(base_url=base, timeout=API_TIMEOUT_S)  # asks the engine's API version
        return self.client

    def reopen(self) -> docker.DockerClient:
        self.close()
        return self.open()

    def _forward(self) -> str:
        try:
            host = parse_host(self.url, URL_ENV if settings.docker_url() else "--host")
        except UsageError as e:
            raise _Failure(str(e).rstrip(".")) from None
        remote = settings.docker_socket() or DEFAULT_SOCKET
        if not remote.startswith("/"):
            raise UsageError(f"{SOCKET_ENV}={remote[:120]!r}: expected the absolute path of the engine's socket.")
        self._dir = tempfile.TemporaryDirectory(prefix="profiler-tui-engine-")
        local = os.path.join(self._dir.name, "engine.sock")
        argv = ssh_base(host) + ["-N", "-o", "ExitOnForwardFailure=yes", "-o", "StreamLocalBindMask=0177",
                                 "-L", f"{local}:{remote}",
                                 "--", host.ssh_destination]
        self._ssh = start_ssh(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        deadline = time.monotonic() + CONNECT_TIMEOUT_S + 5
        while not os.path.exists(local):
            if self._ssh.poll() is not None:
                err = (self._ssh.stderr.read() if self._ssh.stderr else b"").decode("utf-8", "replace")
                raise _Failure(f"ssh could not forward {remote}: {_last_line(err)}",
                               "check that ssh reaches the host and that the engine's socket is there (podman: "
                               f"{SOCKET_ENV}=/run/podman/podman.sock)")
            if time.monotonic() > deadline:
                raise _Failure(f"ssh did not connect within {CONNECT_TIMEOUT_S + 5:.0f} s")
            time.sleep(0.05)
        return local

    def close(self) -> None:
        client, self.client = self.client, None
        ssh, self._ssh = self._ssh, None
        if client is not None:
            with contextlib.suppress(Exception):
                client.close()
        if ssh is not None:
            end_process(ssh)
        if self._dir is not None:
            self._dir.cleanup()
            self._dir = None


@dataclass
class AgentContainer:
    """A started agent container; :meth:`remove` stops and deletes it."""

    host: str  # the host as named to the user (--host), or the engine URL
    url: str  # the engine's URL
    name: str
    socket: str
    _engine: _Engine = field(repr=False)
    _container: Container = field(repr=False)
    removed: bool = False

    @property
    def id(self) -> str:
        return str(self._container.id)

    def remove(self) -> str | None:
        """Stop (SIGTERM, SIGKILL after a few seconds) and delete the container, once; never raises.  When the
        engine cannot be reached (an ssh forward that dropped), connects again once.  None when the container
        is gone, else one sentence saying it could not be removed and how to remove it by hand."""
        if self.removed:
            return None
        self.removed = True
        try:
            problem = self._remove()
            return problem if problem is None else self._remove(again=True)
        finally:
            self._engine.close()

    def _remove(self, again: bool = False) -> str | None:
        try:
            container = self._engine.reopen().containers.get(self.name) if again else self._container
            with contextlib.suppress(*_SDK_ERRORS):
                container.stop(timeout=STOP_TIMEOUT_S)
            container.remove(force=True)
        except NotFound:
            pass
        except Exception as e:  # a cleanup never raises; the sentence says what is left
            return (f"host {self.host}: could not remove the agent container {self.name} through the Docker "
                    f"Engine API at {self.url} ({_clean(str(e)) or type(e).__name__}); remove it there with "
                    f"`docker rm -f {self.name}`.")
        return None


def container_name() -> str:
    """A name for this controller's next agent container: ``profiler-tui-agent-PID-N``."""
    return f"profiler-tui-agent-{os.getpid()}-{next(_names)}"


def _wait_started(container: Container, timeout: float) -> None:
    """Until the container runs and its log shows the agent's start line (for SETTLE_S); _Failure when it exits
    first or takes longer than ``timeout``."""
    deadline = time.monotonic() + timeout
    seen: float | None = None
    while True:
        container.reload()
        logs = container.logs(stdout=True, stderr=True, tail=LOG_TAIL).decode("utf-8", "replace")
        if container.status in ("exited", "dead", "stopped"):
            code = container.attrs.get("State", {}).get("ExitCode")
            raise _Failure(f"the container exited with status {code} before the agent started; its last log "
                           f"line: {_last_line(logs)!r}")
        if container.status == "running" and AGENT_LINE in logs:
            seen = time.monotonic() if seen is None else seen
            if time.monotonic() - seen >= SETTLE_S:
                return
        if time.monotonic() > deadline:
            raise _Failure(f"the agent did not start within {timeout:.0f} s; the container is {container.status}, "
                           f"its last log line: {_last_line(logs)!r}")
        time.sleep(POLL_S)


def _create(engine: _Engine, image: str, socket: str, name: str, who: str) -> Container:
    """The agent's container: no network, /dev and the socket's directory (same path inside) bound.  The
    directory is bound as an existing one: an engine that would create a missing bind source (mode 0755)
    refuses instead, and so would the agent."""
    client = engine.open()
    labels = {ROLE_LABEL: "agent", "io.profiler-tui.host": who, "io.profiler-tui.socket": socket,
              "io.profiler-tui.controller-pid": str(os.getpid())}
    directory = os.path.dirname(socket)
    mounts = [docker.types.Mount("/dev", "/dev", type="bind"), docker.types.Mount(directory, directory, type="bind")]
    return client.containers.create(image, ["agent", "--socket", socket], name=name, detach=True,
                                    network_mode="none", privileged=True, labels=labels, mounts=mounts)


def _remove_by_name(engine: _Engine, name: str) -> None:
    """Remove the container ``name`` if its creation went through after all (^C during the call); close."""
    if engine.client is not None:
        with contextlib.suppress(Exception):
            engine.client.containers.get(name).remove(force=True)
    engine.close()


def start_agent(url: str, image: str, socket: str = DEFAULT_AGENT_SOCKET, name: str | None = None, *,
                host: str | None = None, timeout: float = START_TIMEOUT_S) -> AgentContainer:
    """Start ``IMAGE agent --socket SOCKET`` (privileged, no network, /dev and the socket's directory bound)
    through the engine at ``url`` and wait until the agent runs.  AgentContainerError (one sentence naming
    ``host``, else the URL, and the engine) when it cannot; nothing is left running then, also when interrupted."""
    who = host or url
    name = name or container_name()
    engine = _Engine(url)
    agent: AgentContainer | None = None
    try:
        agent = AgentContainer(who, url, name, socket, engine, _create(engine, image, socket, name, who))
        agent._container.start()
        _wait_started(agent._container, timeout)
        return agent
    except BaseException as e:
        if agent is not None:
            agent.remove()
        else:
            _remove_by_name(engine, name)
        if not isinstance(e, (_Failure, *_SDK_ERRORS)):
            raise
        why = e if isinstance(e, _Failure) else _failure(e, image)
        hint = f"; {why.hint}" if why.hint else ""
        raise AgentContainerError(f"host {who}: cannot start the agent container {name} through the Docker Engine "
                                  f"API at {url} ({why.reason}){hint}.") from None


def _warn(text: str) -> None:
    print(f"warning: {text}", file=sys.stderr, flush=True)


@contextlib.contextmanager
def started_agents(hosts: Sequence[Host], image: str, socket: str = DEFAULT_AGENT_SOCKET,
                   warn: Callable[[str], None] = _warn) -> Iterator[list[AgentContainer]]:
    """One agent container per host (in order) for the block; all of them removed when it ends, also on an
    error or ^C, and those already started when one cannot be (its AgentContainerError goes on).  A container
    that cannot be removed is reported through ``warn`` (one sentence; default: stderr)."""
    engines = [(h, engine_url(h)) for h in hosts]  # every host's engine is known before any agent starts
    agents: list[AgentContainer] = []
    try:
        for h, url in engines:
            agents.append(start_agent(url, image, agent_socket(h, socket), host=h.name))
        yield agents
    finally:
        for agent in reversed(agents):
            problem = agent.remove()
            if problem:
                warn(problem)
