"""The guest as a second host of a fleet run: reached with ssh:// through the 127.0.0.1 port forward, its agent
(``profiler-tui agent``, fio's server on a Unix socket) running in the guest, its target judged from the
``devices --json --target`` it answers over the same SSH connection — the code path of a real remote host."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.conftest import ROOT
from tests.helpers.vm_guest import Guest

AGENT = "/run/profiler-tui/agent.sock"


def test_a_fleet_run_on_the_guest_over_ssh(lab: Guest, tmp_path: Path) -> None:
    assert lab.ssh_dir is not None and lab.ssh_port is not None
    agent = lab.spawn(f"exec {ROOT}/.venv/bin/profiler-tui agent")
    try:
        lab.run(f"i=0; while [ ! -S {AGENT} ] && [ $i -lt 300 ]; do sleep 0.1; i=$((i+1)); done; test -S {AGENT}")
        host = f"ssh://root@127.0.0.1:{lab.ssh_port}"
        env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "TMPDIR": str(tmp_path),
               "PROFILER_TUI_SSH_CONFIG": str(lab.ssh_dir / "ssh_config"),
               "PROFILER_TUI_REMOTE_COMMAND": f"{ROOT}/.venv/bin/profiler-tui"}
        out = tmp_path / "fleet"
        run = subprocess.run([sys.executable, "-m", "app", "run", "custom", "--set", "rw=randread",
                              "--set", "runtime=1", "--set", "size=32m", "--yes", "--host", host,
                              "--target", "/dev/nvme0n1", "--out", str(out)],
                             cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
        assert run.returncode == 0, run.stderr
        records = [json.loads(x) for x in (out / "results.jsonl").read_text().splitlines()]
        assert len(records) == 1 and {r["host"] for r in records} == {host}
        assert all(r["metrics"]["iops"] > 0 for r in records)
        # a target the guest does not have is judged on the guest's own answer, over the same connection
        missing = subprocess.run([sys.executable, "-m", "app", "run", "custom", "--set", "rw=randread",
                                  "--set", "runtime=1", "--yes", "--host", host, "--target", "/dev/nvme7n1",
                                  "--out", str(tmp_path / "missing")],
                                 cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
        assert missing.returncode in (2, 3) and host in missing.stderr and "/dev/nvme7n1" in missing.stderr, \
            missing.stderr
        assert "Traceback" not in missing.stderr and not (tmp_path / "missing").exists()
        # and the connections ended with the run
        left = subprocess.run(["pgrep", "-f", f"127.0.0.1 -p {lab.ssh_port}|-p {lab.ssh_port}"], capture_output=True,
                              text=True)
        assert left.stdout.strip() == "", left.stdout
    finally:
        lab.run("pkill -f 'profiler-tui agent'; pkill -x fio; true", check=False)
        lab.wait(agent, timeout=60)
