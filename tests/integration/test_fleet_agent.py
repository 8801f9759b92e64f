"""The fleet agent (`profiler-tui agent`) itself, for real: its Unix socket in a root-only directory that user
`nobody` cannot use (a job with exec_prerun never runs), the directory and socket rules, one agent per socket or
port even when two start at the same moment, no fio left after SIGTERM or kill -9 of the agent mid-job, and TCP
only with the explicit flags."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable, Iterator

import pytest

from tests.conftest import ROOT, run_cli
from tests.helpers.fleet_agents import Agent, agents, fio_pids, free_port, kill_matching, listening, stop_process

NOBODY = 65534


def as_nobody(*argv: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups", "--", *argv],
                          capture_output=True, text=True, timeout=timeout, cwd="/")


@pytest.fixture
def public() -> Iterator[Path]:
    """A directory everyone may read (pytest's tmp_path is root's alone): job files nobody reads."""
    d = Path(tempfile.mkdtemp(prefix="profiler-tui-public-"))
    d.chmod(0o755)
    try:
        yield d
    finally:
        shutil.rmtree(d, ignore_errors=True)


def prerun_job(tmp: Path, marker: Path) -> Path:
    """A job that runs a command as whoever runs fio's server (the marker says it ran) and writes 1 MiB."""
    job = tmp / "job.fio"
    job.write_text(f"[j]\nfilename={tmp / 'data'}\nsize=1m\nrw=write\nexec_prerun=touch {marker}\n")
    job.chmod(0o644)
    return job


def _wait_gone(where: str | int, timeout: float = 10) -> list[int]:
    deadline = time.monotonic() + timeout
    while fio_pids(where) and time.monotonic() < deadline:
        time.sleep(0.1)
    return fio_pids(where)


def test_nobody_cannot_reach_the_agent_but_root_can(public: Path) -> None:
    tmp_path = public  # nobody may read the job file: only the socket stands in the way
    marker = tmp_path / "ran-as-root"
    job = prerun_job(tmp_path, marker)
    with agents(1) as (agent,):
        directory = os.lstat(agent.directory)
        sock = os.lstat(agent.socket)
        assert stat.S_IMODE(directory.st_mode) == 0o700 and directory.st_uid == 0
        assert stat.S_ISSOCK(sock.st_mode) and stat.S_IMODE(sock.st_mode) == 0o600 and sock.st_uid == 0
        denied = as_nobody("fio", f"--client=sock:{agent.socket}", str(job))
        assert denied.returncode != 0
        assert "fio: connect; Permission denied" in denied.stderr, denied.stdout + denied.stderr
        assert not marker.exists() and not (tmp_path / "data").exists()
        # the same job as root runs, command included: the check above could fail
        done = subprocess.run(["fio", f"--client=sock:{agent.socket}", str(job)], capture_output=True, text=True,
                              timeout=60)
        assert done.returncode == 0, done.stdout + done.stderr
        assert marker.exists() and os.stat(marker).st_uid == 0
        assert (Path(agent.directory) / "j.prerun.txt").exists()  # fio's cwd is the agent's private directory


def test_the_agent_stops_on_sigterm_and_leaves_no_fio_nor_socket() -> None:
    with agents(1) as (agent,):
        assert fio_pids(agent.socket)
        assert agent.stop() == 0
        assert not fio_pids(agent.socket) and not os.path.exists(agent.socket)


def test_kill_9_of_the_agent_mid_job_leaves_no_fio(tmp_path: Path) -> None:
    """fio's per-connection fork and its job (which calls setsid) outlive fio's server: the agent's guard kills
    them when the agent is killed."""
    job = tmp_path / "long.fio"
    job.write_text(f"[j]\nfilename={tmp_path / 'data'}\nsize=8m\nrw=randread\ntime_based=1\nruntime=60\n")
    agent = Agent().start()
    client = subprocess.Popen(["fio", f"--client=sock:{agent.socket}", str(job)], stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 20
        while len(fio_pids(agent.socket)) < 3 and time.monotonic() < deadline:  # server, connection, job
            time.sleep(0.1)
        assert len(fio_pids(agent.socket)) >= 3
        assert agent.proc is not None
        agent.proc.kill()
        client.kill()
        killed = time.monotonic()
        left = _wait_gone(agent.socket)
        assert left == [], f"fio processes left after kill -9 of the agent: {left}"
        assert time.monotonic() - killed < 5
    finally:
        client.kill()
        client.wait()
        agent.stop()
        kill_matching(f"--server=sock:{agent.socket}")
        agent.remove()


def _start_two(argv: list[str]) -> list[subprocess.Popen[str]]:
    return [subprocess.Popen(argv, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
            for _ in range(2)]


def _one_serves(procs: list[subprocess.Popen[str]], answers: Callable[[], bool]) -> str:
    """Exactly one of two agents started together refuses (exit 2, one sentence); the other one serves."""
    refused = None
    deadline = time.monotonic() + 30
    while refused is None and time.monotonic() < deadline:
        refused = next((p for p in procs if p.poll() is not None), None)
        time.sleep(0.05)
    assert refused is not None and refused.returncode == 2
    err = refused.stderr.read() if refused.stderr else ""
    assert len(err.strip().splitlines()) == 1 and "another agent serves it" in err, err
    other = next(p for p in procs if p is not refused)
    deadline = time.monotonic() + 20
    while not answers() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert other.poll() is None and answers()
    return err


def _settle(where: str | int) -> int:
    """fio's server processes once the readiness probes' connection forks have ended."""
    deadline = time.monotonic() + 15
    while len(fio_pids(where)) > 1 and time.monotonic() < deadline:
        time.sleep(0.1)
    return len(fio_pids(where))


def test_two_agents_started_at_the_same_moment_on_one_socket_or_port(tmp_path: Path) -> None:
    agent = Agent()
    procs = _start_two(agent.argv())
    try:
        _one_serves(procs, agent.answers)
        assert _settle(agent.socket) == 1  # one fio server
    finally:
        for p in procs:
            stop_process(p)
        kill_matching(f"--server=sock:{agent.socket}")
        agent.remove()
    port = free_port()
    tcp = Agent(tcp=True, port=port)
    procs = _start_two(tcp.argv())
    try:
        # fio's server binds with SO_REUSEPORT: without the lock both would serve and share connections
        _one_serves(procs, lambda: listening(port))
        assert _settle(port) == 1
    finally:
        for p in procs:
            stop_process(p)
        kill_matching(f"--server=ip:127.0.0.1,{port}")
        tcp.remove()


def test_a_port_another_program_holds_is_refused() -> None:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        port = s.getsockname()[1]
        proc = run_cli("agent", "--bind", "127.0.0.1", "--port", str(port), "--allow-local-users", timeout=30)
        assert proc.returncode == 2 and "cannot be used" in proc.stderr, proc.stderr
        assert not fio_pids(port)


def _refused(sock: Path, words: str) -> None:
    proc = run_cli("agent", "--socket", str(sock), timeout=30)
    assert proc.returncode == 2, proc.stderr
    assert words in proc.stderr and len(proc.stderr.strip().splitlines()) == 1 and "Traceback" not in proc.stderr
    assert not fio_pids(str(sock))


def test_the_socket_directory_and_socket_rules(tmp_path: Path) -> None:
    loose = tmp_path / "loose"
    loose.mkdir(mode=0o755)
    loose.chmod(0o755)
    _refused(loose / "a.sock", "mode 0755")
    theirs = tmp_path / "theirs"
    theirs.mkdir(mode=0o700)
    os.chown(theirs, NOBODY, NOBODY)
    _refused(theirs / "a.sock", f"owned by uid {NOBODY}")
    real = tmp_path / "real"
    real.mkdir(mode=0o700)
    (tmp_path / "link").symlink_to(real)
    _refused(tmp_path / "link" / "a.sock", "symlink")
    (real / "a.sock").symlink_to("/etc/passwd")
    _refused(real / "a.sock", "is a symlink")
    (real / "a.sock").unlink()
    (real / "a.sock").write_text("")
    _refused(real / "a.sock", "is not a socket")
    (real / "a.sock").unlink()
    import socket

    with socket.socket(socket.AF_UNIX) as left:  # a socket someone else left (nobody listens on it)
        left.bind(str(real / "a.sock"))
    os.chown(real / "a.sock", NOBODY, NOBODY)
    _refused(real / "a.sock", f"is owned by uid {NOBODY}")
    os.chown(real / "a.sock", 0, 0)
    (real / "a.sock").chmod(0o777)  # fio binds with umask 0: one left before the agent narrowed it
    _refused(real / "a.sock", "has mode 0777")
    (real / "a.sock").chmod(0o600)  # one a killed agent left: removed, and the agent starts
    proc = subprocess.Popen([sys.executable, "-m", "app", "agent", "--socket", str(real / "a.sock")], cwd=ROOT,
                            stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 20
        while not fio_pids(str(real / "a.sock")) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert proc.poll() is None and fio_pids(str(real / "a.sock"))
    finally:
        stop_process(proc)
        kill_matching(f"--server=sock:{real / 'a.sock'}")
    open_parent = tmp_path / "open"
    open_parent.mkdir()
    open_parent.chmod(0o777)  # not sticky: another user could swap the socket's directory
    _refused(open_parent / "d" / "a.sock", "writable by other users")
    assert not (open_parent / "d").exists()
    # a fresh directory is created 0700 whatever the umask
    fresh = tmp_path / "fresh" / "a.sock"
    proc = subprocess.Popen(["sh", "-c", f"umask 000; exec {sys.executable} -m app agent --socket {fresh}"], cwd=ROOT,
                            stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 20
        while not fresh.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert stat.S_IMODE(os.lstat(fresh.parent).st_mode) == 0o700
    finally:
        stop_process(proc)
        kill_matching(f"--server=sock:{fresh}")
    assert not fresh.exists()  # the agent removes fio's socket when it stops


def test_tcp_needs_the_explicit_flags() -> None:
    port = free_port()
    for args, words in ((["--bind", "127.0.0.1", "--port", str(port)], "--allow-local-users"),
                        (["--port", str(port)], "--allow-local-users"),
                        (["--bind", "0.0.0.0", "--port", str(port)], "--allow-network"),
                        (["--bind", "0.0.0.0", "--port", str(port), "--allow-local-users"], "--allow-network"),
                        (["--allow-network"], "give --bind ADDR --port N too"),
                        (["--socket", "/tmp/x.sock", "--port", str(port)], "give one of them")):
        proc = run_cli("agent", *args)
        assert proc.returncode == 2 and words in proc.stderr, (args, proc.stderr)
        assert len(proc.stderr.strip().splitlines()) == 1
    assert not fio_pids(port)
    with agents(1, tcp=True) as (agent,):
        assert agent.proc is not None and agent.proc.stderr is not None
        warning = agent.proc.stderr.readline()
        assert "every user of this machine" in warning and f"port {agent.port}" in warning


def test_a_loopback_tcp_agent_is_open_to_nobody_which_is_why_it_needs_consent(public: Path) -> None:
    """The other side of --allow-local-users: what its warning says is true."""
    tmp_path = public
    marker = tmp_path / "ran"
    job = prerun_job(tmp_path, marker)
    (tmp_path / "data").touch()
    (tmp_path / "data").chmod(0o666)
    with agents(1, tcp=True) as (agent,):
        done = as_nobody("fio", f"--client=127.0.0.1,{agent.port}", str(job))
        assert done.returncode == 0, done.stdout + done.stderr
        assert marker.exists() and os.stat(marker).st_uid == 0  # nobody's job ran as root: why TCP needs consent
    Path("/run/profiler-tui/j.prerun.txt").unlink(missing_ok=True)  # fio's record of exec_prerun, in its cwd
