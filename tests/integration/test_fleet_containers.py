"""app/fleet/containers.py (run --start-agent) against podman's Docker-compatible API on a local unix socket,
with tiny local images whose entry point imitates ``profiler-tui agent`` (tests/helpers/podman_service.py).  The real
image's agent, reached by ``fio --client``, is checked by container/test.sh.

Every test leaves nothing behind: the service is stopped and its socket removed, the images are removed, and
any container this process started (label io.profiler-tui.controller-pid) is removed, also on failure.
"""

from __future__ import annotations

import ast
import os
import signal
import socket
import sys
import time
from pathlib import Path
from typing import Iterator

import docker
import pytest

from app.core.errors import ProfilerError, UsageError
from app.fleet import containers
from app.fleet.containers import AgentContainerError, agent_socket, engine_url, start_agent, started_agents
from app.fleet.hosts import parse_host
from tests.helpers import podman_service

OURS = f"io.profiler-tui.controller-pid={os.getpid()}"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def sock(tmp_path: Path) -> str:
    """An agent's socket path in a 0700 directory that exists (the container binds the directory)."""
    d = tmp_path / "agent"
    d.mkdir(mode=0o700)
    return str(d / "agent.sock")


# --- engine_url and agent_socket (no engine needed) -----------------------------------------------

def test_engine_url_of_hosts(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(containers.URL_ENV, raising=False)
    monkeypatch.delenv("DOCKER_HOST", raising=False)
    assert engine_url(parse_host("ssh://bob@h")) == "ssh://bob@h:22"
    assert engine_url(parse_host("ssh://h:2222")) == "ssh://h:2222"
    assert engine_url(parse_host("ssh://[::1]:23")) == "ssh://[::1]:23"
    assert engine_url(parse_host("unix:///run/a.sock")) == "unix:///var/run/docker.sock"
    monkeypatch.setenv("DOCKER_HOST", "unix:///run/podman/podman.sock")
    assert engine_url(parse_host("unix:///run/a.sock")) == "unix:///run/podman/podman.sock"
    for tcp in ("tcp://10.0.0.2:9000", "tcp://127.0.0.1:9000"):  # a started agent never listens on TCP
        with pytest.raises(UsageError, match=r"--start-agent .*never does"):
            engine_url(parse_host(tcp))
    monkeypatch.setenv(containers.URL_ENV, "unix:///tmp/x.sock")
    for h in ("ssh://bob@h", "tcp://10.0.0.2:9000"):
        assert engine_url(parse_host(h)) == "unix:///tmp/x.sock"


def test_agent_socket() -> None:
    assert agent_socket(parse_host("ssh://h"), "/run/x/a.sock") == "/run/x/a.sock"
    assert agent_socket(parse_host("unix:///tmp/b.sock"), "/run/x/a.sock") == "/tmp/b.sock"


# --- against podman's API service ----------------------------------------------------------------

@pytest.fixture(scope="module")
def engine(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, dict[str, str]]]:
    why = podman_service.missing()
    if why:
        pytest.skip(f"no podman API service: {why}")
    absent = podman_service.absent_tools()
    assert not absent, f"{', '.join(absent)} not installed: `make setup` installs podman and runc"
    directory = tmp_path_factory.mktemp("podman")
    try:
        with podman_service.fake_agent_images(directory) as images, podman_service.service(directory) as url:
            yield url, images
    finally:
        podman_service.remove_containers(OURS)


@pytest.fixture
def url(engine: tuple[str, dict[str, str]], monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    monkeypatch.setenv(containers.URL_ENV, engine[0])
    yield engine[0]
    left = podman_service.remove_containers(OURS)
    assert not left, f"containers left behind: {left}"


@pytest.fixture
def images(engine: tuple[str, dict[str, str]]) -> dict[str, str]:
    return engine[1]


def exists(url: str, name: str) -> bool:
    client = docker.DockerClient(base_url=url)
    try:
        return bool(client.containers.list(all=True, filters={"name": f"^{name}$"}))
    finally:
        client.close()


def test_start_wait_remove(url: str, images: dict[str, str], sock: str) -> None:
    agent = start_agent(url, images["ok"], sock, host="ssh://bob@h")
    try:
        assert agent.name.startswith(f"profiler-tui-agent-{os.getpid()}-") and agent.socket == sock
        client = docker.DockerClient(base_url=url)
        c = client.containers.get(agent.name)
        host_config = c.attrs["HostConfig"]
        assert c.status == "running"
        assert c.attrs["Args"][-3:] == ["agent", "--socket", sock]
        # no network at all: the agent's socket directory is bound instead
        assert host_config["Privileged"] is True and host_config["NetworkMode"] == "none"
        assert any(m["Source"] == "/dev" and m["Destination"] == "/dev" for m in c.attrs["Mounts"])
        assert any(m["Source"] == os.path.dirname(sock) == m["Destination"] for m in c.attrs["Mounts"])
        assert c.labels[containers.ROLE_LABEL] == "agent" and c.labels["io.profiler-tui.host"] == "ssh://bob@h"
        assert f"fio server on socket {sock}" in c.logs().decode()
        client.close()
    finally:
        assert agent.remove() is None
    assert agent.removed and not exists(url, agent.name)
    assert agent.remove() is None  # idempotent


def test_started_agents_removes_all_at_the_end(url: str, images: dict[str, str], sock: str) -> None:
    hosts = [parse_host("ssh://a"), parse_host("ssh://b")]
    with started_agents(hosts, images["ok"], sock) as agents:
        assert [a.host for a in agents] == ["ssh://a", "ssh://b"] and len({a.name for a in agents}) == 2
        assert all(exists(url, a.name) for a in agents)
    assert not any(exists(url, a.name) for a in agents)


def test_started_agents_removes_them_on_interrupt(url: str, images: dict[str, str], sock: str) -> None:
    names: list[str] = []
    with pytest.raises(KeyboardInterrupt):
        with started_agents([parse_host("ssh://a")], images["ok"], sock) as agents:
            names = [a.name for a in agents]
            raise KeyboardInterrupt
    assert names and not exists(url, names[0])


def test_started_agents_removes_the_started_ones_when_one_fails(url: str, images: dict[str, str],
                                                                tmp_path: Path,
                                                                monkeypatch: pytest.MonkeyPatch, sock: str) -> None:
    nowhere = f"unix://{tmp_path}/no-engine.sock"
    monkeypatch.setattr(containers, "engine_url", lambda h: nowhere if h.name == "ssh://b" else url)
    seen: list[str] = []
    with pytest.raises(AgentContainerError, match=r"^host ssh://b: cannot start .* at unix://") as info:
        with started_agents([parse_host("ssh://a"), parse_host("ssh://b")], images["ok"], sock) as agents:
            seen.extend(a.name for a in agents)
    assert not seen  # the block never ran
    assert info.value.exit_code == 1 and isinstance(info.value, ProfilerError)
    assert not podman_service.remove_containers(OURS)  # host a's container went when host b's failed


def test_missing_image(url: str) -> None:
    image = "localhost/profiler-tui-no-such-image:nope"
    with pytest.raises(AgentContainerError) as info:
        start_agent(url, image, "/run/profiler-tui/agent.sock", host="ssh://bob@h")
    text = str(info.value)
    assert text.startswith(f"host ssh://bob@h: cannot start the agent container profiler-tui-agent-{os.getpid()}-")
    assert f"through the Docker Engine API at {url} (image {image} not found); build or load the image there first." \
        in text
    assert "\n" not in text


def test_unreachable_engine(tmp_path: Path) -> None:
    url = f"unix://{tmp_path}/nothing-here.sock"
    started = time.monotonic()
    with pytest.raises(AgentContainerError) as info:
        start_agent(url, "localhost/whatever:1", host="ssh://bob@h")
    text = str(info.value)
    assert time.monotonic() - started < 10
    assert "host ssh://bob@h: cannot start the agent container" in text and f"Docker Engine API at {url} " in text
    assert "(cannot connect: No such file or directory); check that a Docker Engine or `podman system service` " \
           "runs there and that this user may use its socket." in text and "\n" not in text


def test_engine_that_refuses_the_connection() -> None:
    url = f"tcp://127.0.0.1:{free_port()}"  # nothing listens there
    with pytest.raises(AgentContainerError, match=rf"^host {url}: .* at {url} \(cannot connect: Connection refused\)"):
        start_agent(url, "localhost/whatever:1")


@pytest.mark.parametrize("mode, last", [("dies", "fio: unable to bind to port {port}: Address already in use"),
                                        ("late", "fio: pid=1, got signal=9 (port {port} taken)")])
def test_agent_that_exits_at_once(url: str, images: dict[str, str], mode: str, last: str, sock: str) -> None:
    port = sock
    with pytest.raises(AgentContainerError) as info:
        start_agent(url, images[mode], sock, host="ssh://bob@h")
    text = str(info.value)
    assert "(the container exited with status 1 before the agent started; its last log line: " in text
    assert repr(last.format(port=port)) in text and "\n" not in text


def test_agent_that_never_starts(url: str, images: dict[str, str], sock: str) -> None:
    with pytest.raises(AgentContainerError, match=r"\(the agent did not start within 2 s; the container is running, "
                                                  r"its last log line: '\(none\)'\)\.$"):
        start_agent(url, images["mute"], sock, host="ssh://bob@h", timeout=2)


def test_interrupt_while_waiting_removes_the_container(url: str, images: dict[str, str],
                                                       monkeypatch: pytest.MonkeyPatch, sock: str) -> None:
    name = containers.container_name()

    def interrupted(*args: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(containers, "_wait_started", interrupted)
    with pytest.raises(KeyboardInterrupt):
        start_agent(url, images["ok"], sock, name)
    assert not exists(url, name)


# --- ssh:// engines: the socket forwarded by ssh (a stand-in ssh that forwards locally) -----------

FAKE_SSH = """#!{python}
# stand-in for OpenSSH: records its argv, then forwards -L LOCAL:REMOTE (unix sockets) on this machine
import os, socket, sys, threading
argv = sys.argv[1:]
with open(os.environ["FAKE_SSH_LOG"], "a") as f:
    f.write(repr([os.getpid()] + argv) + "\\n")
if os.environ.get("FAKE_SSH_FAIL"):
    sys.stderr.write("ssh: connect to host nohost port 22: Connection refused\\n")
    sys.exit(255)
local, remote = argv[argv.index("-L") + 1].split(":", 1)
server = socket.socket(socket.AF_UNIX)
server.bind(local)
server.listen(16)
def pump(a, b):
    try:
        while data := a.recv(65536):
            b.sendall(data)
    except OSError:
        pass
    finally:
        for s in (a, b):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
while True:
    conn, _ = server.accept()
    up = socket.socket(socket.AF_UNIX)
    up.connect(remote)
    threading.Thread(target=pump, args=(conn, up), daemon=True).start()
    threading.Thread(target=pump, args=(up, conn), daemon=True).start()
"""


@pytest.fixture
def fake_ssh(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    bindir = tmp_path / "bin"
    bindir.mkdir()
    ssh = bindir / "ssh"
    ssh.write_text(FAKE_SSH.format(python=sys.executable))
    ssh.chmod(0o755)
    log = tmp_path / "ssh.log"
    monkeypatch.setenv("PATH", f"{bindir}:{os.environ['PATH']}")
    monkeypatch.setenv("FAKE_SSH_LOG", str(log))
    monkeypatch.delenv("PROFILER_TUI_SSH_CONFIG", raising=False)
    return log


def test_ssh_engine_through_a_forwarded_socket(engine: tuple[str, dict[str, str]], fake_ssh: Path,
                                               monkeypatch: pytest.MonkeyPatch, sock: str) -> None:
    service_url, images = engine
    monkeypatch.delenv(containers.URL_ENV, raising=False)
    monkeypatch.setenv(containers.SOCKET_ENV, service_url.removeprefix("unix://"))
    host = parse_host("ssh://bob@fleet-1:2222")
    with started_agents([host], images["ok"], sock) as agents:
        assert agents[0].url == "ssh://bob@fleet-1:2222" and exists(service_url, agents[0].name)
        pid, *argv = ast.literal_eval(fake_ssh.read_text().splitlines()[0])  # the stand-in's own repr()
        assert "BatchMode=yes" in argv and "ExitOnForwardFailure=yes" in argv and "-N" in argv
        assert argv[argv.index("-p") + 1] == "2222" and argv[-2:] == ["--", "bob@fleet-1"]
        local, remote = argv[argv.index("-L") + 1].split(":", 1)
        assert remote == service_url.removeprefix("unix://") and Path(local).exists()
        os.kill(pid, 0)  # the forward stays up while the agent runs
    assert not exists(service_url, agents[0].name)
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)
    assert not Path(local).parent.exists()
    assert not podman_service.remove_containers(OURS)


def test_ssh_that_cannot_connect(fake_ssh: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(containers.URL_ENV, raising=False)
    monkeypatch.setenv("FAKE_SSH_FAIL", "1")
    with pytest.raises(AgentContainerError) as info:
        start_agent("ssh://bob@nohost:22", "profiler-tui", host="ssh://bob@nohost")
    assert str(info.value).startswith("host ssh://bob@nohost: cannot start the agent container ")
    assert ("through the Docker Engine API at ssh://bob@nohost:22 (ssh could not forward /var/run/docker.sock: "
            "ssh: connect to host nohost port 22: Connection refused); check that ssh reaches") in str(info.value)


def test_relative_socket_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(containers.SOCKET_ENV, "run/docker.sock")
    with pytest.raises(UsageError, match="PROFILER_TUI_DOCKER_SOCKET='run/docker.sock': expected the absolute"):
        start_agent("ssh://bob@h:22", "profiler-tui")



def test_remove_connects_again_when_the_forward_dropped(engine: tuple[str, dict[str, str]], fake_ssh: Path,
                                                        monkeypatch: pytest.MonkeyPatch, sock: str) -> None:
    service_url, images = engine
    monkeypatch.delenv(containers.URL_ENV, raising=False)
    monkeypatch.setenv(containers.SOCKET_ENV, service_url.removeprefix("unix://"))
    agent = start_agent("ssh://bob@fleet-1:22", images["ok"], sock, host="ssh://bob@fleet-1")
    try:
        first = ast.literal_eval(fake_ssh.read_text().splitlines()[0])[0]
        os.kill(first, signal.SIGKILL)  # the connection drops mid-run
        assert agent.remove() is None
        assert len(fake_ssh.read_text().splitlines()) == 2  # a second forward removed it
        assert not exists(service_url, agent.name)
    finally:
        podman_service.remove_containers(OURS)


def test_remove_that_cannot_reach_the_engine_says_what_is_left(engine: tuple[str, dict[str, str]], fake_ssh: Path,
                                                               monkeypatch: pytest.MonkeyPatch, sock: str) -> None:
    service_url, images = engine
    monkeypatch.delenv(containers.URL_ENV, raising=False)
    monkeypatch.setenv(containers.SOCKET_ENV, service_url.removeprefix("unix://"))
    try:
        agent = start_agent("ssh://bob@fleet-1:22", images["ok"], sock, host="ssh://bob@fleet-1")
        os.kill(ast.literal_eval(fake_ssh.read_text().splitlines()[0])[0], signal.SIGKILL)
        monkeypatch.setenv("FAKE_SSH_FAIL", "1")  # and the host stays unreachable
        problem = agent.remove()
        assert problem is not None and problem.startswith(
            f"host ssh://bob@fleet-1: could not remove the agent container {agent.name} through the Docker Engine "
            "API at ssh://bob@fleet-1:22 (")
        assert problem.endswith(f"); remove it there with `docker rm -f {agent.name}`.") and "\n" not in problem
        assert agent.remove() is None  # once
        assert exists(service_url, agent.name)
    finally:
        assert podman_service.remove_containers(OURS)
