"""The end-to-end check of ``run --start-agent`` for container/test.sh: app.fleet.containers starts the image's
agent through a Docker Engine API (podman's, on a local socket), with no network and SOCKET's directory (0700,
made by test.sh) bound; ``fio --client=sock:SOCKET`` runs a small job on it, and after removal the container
is gone and nothing answers on the socket.

    .venv/bin/python container/agent_check.py ENGINE_URL IMAGE SOCKET NAME [LOOP_DEVICE]

With LOOP_DEVICE, also the whole command: ``profiler-tui run quick --set repeat=1 --set rw=read --host unix://SOCKET
--start-agent --agent-image IMAGE --target LOOP_DEVICE --yes`` (the engine named by PROFILER_TUI_DOCKER_URL):
a line per point with the host, and no agent container left afterwards.

Prints ``ok: …`` / ``bad: …`` lines (test.sh counts them) and other lines as they are; removes the container
whatever happens (test.sh's trap removes it too, by NAME, if this script is killed).
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import docker

from app.fleet.containers import AgentContainer, AgentContainerError, start_agent
from tests.helpers.fleet_agents import answering

JOB = "[global]\nioengine=null\nsize=16M\nbs=4k\n[read]\nrw=read\n"


def report(good: bool, text: str) -> bool:
    print(f"{'ok' if good else 'bad'}: {text}", flush=True)
    return good


def fio_job(sock: str) -> bool:
    """The small job through ``fio --client`` (waiting for fio's server to listen first)."""
    deadline = time.monotonic() + 20
    while not answering(sock) and time.monotonic() < deadline:
        time.sleep(0.1)
    mode = stat.S_IMODE(os.lstat(sock).st_mode) if os.path.exists(sock) else None
    report(mode == 0o600, f"the agent's socket {sock} has mode {mode:04o}" if mode is not None else f"no {sock}")
    with tempfile.TemporaryDirectory(prefix="profiler-tui-agent-check-") as d:
        job = Path(d) / "read.fio"
        job.write_text(JOB)
        cp = subprocess.run(["fio", f"--client=sock:{sock}", "--output-format=json", str(job)],
                            capture_output=True, text=True, timeout=120)
    try:
        stats = json.loads(cp.stdout[cp.stdout.index("{"):])["client_stats"]
        read = sum(int(s["read"]["io_bytes"]) for s in stats if s.get("jobname") == "read")
    except (ValueError, KeyError, TypeError):
        read = 0
    if cp.returncode != 0 or read != 16 << 20:
        print(cp.stdout[-2000:], cp.stderr[-2000:], sep="\n")
    return report(cp.returncode == 0 and read == 16 << 20,
                  f"fio --client=sock:{sock} ran a 16 MiB read (null engine) on the agent "
                  f"(exit {cp.returncode}, {read} bytes read)")


def gone(url: str, agent: AgentContainer) -> bool:
    client = docker.DockerClient(base_url=url)
    try:
        left = client.containers.list(all=True, filters={"name": f"^{agent.name}$"})
    finally:
        client.close()
    deadline = time.monotonic() + 10
    while answering(agent.socket) and time.monotonic() < deadline:
        time.sleep(0.1)
    return report(not left and not answering(agent.socket),
                  f"after remove(): container {agent.name} {'still there' if left else 'gone'}, socket "
                  f"{agent.socket} {'still answers' if answering(agent.socket) else 'closed'}")


def cli_run(url: str, image: str, sock: str, loop: str) -> bool:
    """``run --start-agent`` end to end: the agent container started, measured through, removed."""
    host = f"unix://{sock}"
    with tempfile.TemporaryDirectory(prefix="profiler-tui-agent-run-") as d:
        out = Path(d) / "r"
        cp = subprocess.run([sys.executable, "-m", "app", "run", "quick", "--set", "runtime=1", "--set", "repeat=1",
                             "--set", "rw=read",
                             "--yes", "--host", host, "--start-agent", "--agent-image", image, "--target", loop,
                             "--out", str(out)], capture_output=True, text=True, timeout=300,
                            env={**os.environ, "PROFILER_TUI_DOCKER_URL": url})
        lines = [json.loads(ln) for ln in (out / "results.jsonl").read_text().splitlines()] if cp.returncode == 0 else []
    if cp.returncode != 0:
        print(cp.stdout[-2000:], cp.stderr[-2000:], sep="\n")
    good = report(cp.returncode == 0 and len(lines) == 4 and all(r.get("host") == host for r in lines),
                  f"run quick --set repeat=1 --set rw=read --host {host} --start-agent --target {loop}: exit {cp.returncode}, "
                  f"{len(lines)} result lines from the host")
    client = docker.DockerClient(base_url=url)
    try:
        left = client.containers.list(all=True, filters={"label": "io.profiler-tui.role=agent"})
    finally:
        client.close()
    return report(not left and not answering(sock),
                  f"after the run: {len(left)} agent containers left, socket {sock} "
                  f"{'still answers' if answering(sock) else 'closed'}") and good


def main(url: str, image: str, sock: str, name: str, loop: str | None = None) -> int:
    try:
        agent = start_agent(url, image, sock, name, host="localhost")
    except AgentContainerError as e:
        report(False, f"start_agent: {e}")
        return 1
    good = report(True, f"start_agent: {agent.name} runs {image} agent --socket {sock} through {url}")
    try:
        good = fio_job(sock) and good
    finally:
        problem = agent.remove()
        good = report(problem is None, f"remove(): {problem or 'no problem'}") and good
    good = gone(url, agent) and good
    missing = "localhost/profiler-tui-no-such-image:0"
    try:
        start_agent(url, missing, sock, f"{name}-missing", host="localhost").remove()
        good = report(False, f"start_agent with {missing} did not fail")
    except AgentContainerError as e:
        good = report("build or load the image there first" in str(e), f"a missing image: {e}") and good
    if loop:
        good = cli_run(url, image, sock, loop) and good
    return 0 if good else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], *sys.argv[5:6]))
