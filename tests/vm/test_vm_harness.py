"""The harness itself: without QEMU the VM tests skip with one sentence; nothing outlives a VM test (a test
that fails with its guest running, and a pytest SIGKILLed mid-guest, leave no QEMU process, no port forward
and no loop device behind)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import ROOT
from tests.helpers.fleet_agents import listening

VICTIM = Path(__file__).resolve().parent / "victim_session.py"


def _alive(pid: int) -> bool:
    """Any thread of the process still running (not a zombie): its files, the forward's socket among them,
    close with the last one."""
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return False
    for task in tasks:
        try:
            with open(f"/proc/{pid}/task/{task}/stat") as f:
                if f.read().rsplit(") ", 1)[1].split()[0] != "Z":
                    return True
        except (OSError, IndexError):
            continue
    return False


def _processes_mentioning(text: str) -> list[str]:
    out = subprocess.run(["pgrep", "-a", "-f", text], capture_output=True, text=True).stdout
    return [ln for ln in out.splitlines() if "pgrep" not in ln]


@pytest.mark.parametrize("mode", ["fail", "sigkill"])
def test_nothing_is_left_when_a_test_dies_mid_guest(boot_files, tmp_path: Path, mode: str) -> None:
    marker = tmp_path / "marker.json"
    victim = subprocess.Popen([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(VICTIM),
                               "--basetemp", str(tmp_path / "base")],
                              cwd=ROOT, env={**os.environ, "VICTIM_MARKER": str(marker), "VICTIM_MODE": mode},
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        deadline = time.monotonic() + 180
        while not marker.exists():
            assert victim.poll() is None, victim.communicate()[0]
            assert time.monotonic() < deadline, "the victim's guest never came up"
            time.sleep(0.1)
        time.sleep(0.2)  # the marker is written in one go, but its reader may be quicker than the write
        guest = json.loads(marker.read_text())
        assert _alive(guest["pid"]) and listening(guest["port"])  # mid-guest: QEMU runs, its forward listens
        if mode == "sigkill":
            victim.send_signal(signal.SIGKILL)
        else:
            Path(f"{marker}.go").touch()
        output = victim.communicate(timeout=120)[0]
        assert victim.returncode == (-signal.SIGKILL if mode == "sigkill" else 1), output
    finally:
        if victim.poll() is None:
            victim.kill()
            victim.wait()
    # QEMU's threads exit one by one after the SIGKILL; the forward's socket closes with the last one
    deadline = time.monotonic() + 30
    while (_alive(guest["pid"]) or listening(guest["port"])) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not _alive(guest["pid"]), "QEMU outlived its test"
    assert not listening(guest["port"]), "the port forward outlived its test"
    assert _processes_mentioning(guest["dir"]) == []
    loops = subprocess.run(["losetup", "-a"], capture_output=True, text=True).stdout
    assert str(tmp_path) not in loops


def test_without_qemu_the_vm_tests_skip_with_one_sentence(tmp_path: Path) -> None:
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-rs", "-p", "no:cacheprovider",
                           "tests/vm/test_nvme_devices.py", "--basetemp", str(tmp_path / "base")], cwd=ROOT,
                          env={**os.environ, "PROFILER_TUI_TEST_QEMU": "qemu-system-x86_64-not-installed"},
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    skips = [ln for ln in proc.stdout.splitlines() if ln.startswith("SKIPPED")]
    assert skips and all("qemu-system-x86_64-not-installed is not installed and could not be (Debian: "
                         "qemu-system-x86" in ln for ln in skips), proc.stdout
    assert " passed" not in proc.stdout and "failed" not in proc.stdout and "error" not in proc.stdout.lower()
