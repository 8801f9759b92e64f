"""Acceptance 1: started in a real terminal at 80x24, the first screen shows the block devices and the
key hints.  Measured with tmux (a real pseudo-terminal) polling the pane.

The product target is 1.5 s, measured by `make bench-tui` (bench/tui_latency.py).  This test asserts a
bound about 5x the median measured on a busy 2-core machine (1.85 s at load average 5.8), so that a
loaded machine does not fail it while a start-up that hangs or regresses by an order does."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from app.screens import strings

ROOT = Path(__file__).resolve().parents[2]
BUDGET_S = 10.0  # >= 5x the median measured under load; the 1.5 s target is `make bench-tui`'s
POLL_S = 30.0


def capture(session: str) -> str:
    return subprocess.run(["tmux", "capture-pane", "-p", "-t", session], capture_output=True, text=True).stdout


def devices_shown(screen: str) -> bool:
    lines = screen.splitlines()
    listed = any(ln.lstrip().startswith("/dev/") for ln in lines) or strings.NO_DEVICES[:40] in screen
    hints = bool(lines) and "Quit" in lines[-1] and "Presets" in lines[-1]
    return "write plan" in screen and strings.TEST_FILE_LABEL in screen and listed and hints


def first_screen_seconds(tmp_path: Path) -> tuple[float | None, str]:
    """Start ``python -m app`` in an 80x24 tmux pane; seconds until devices and key hints show; quit."""
    session = f"ptui-{uuid.uuid4().hex[:8]}"
    env = {"XDG_CONFIG_HOME": str(tmp_path / "cfg"), "PROFILER_TUI_RESULTS": str(tmp_path / "results"),
           "TERM": "xterm-256color"}
    exports = " ".join(f"{k}={v}" for k, v in env.items())
    cmd = f"cd {ROOT} && env {exports} {sys.executable} -m app"
    t0 = time.monotonic()
    subprocess.run(["tmux", "new-session", "-d", "-s", session, "-x", "80", "-y", "24", cmd], check=True)
    try:
        screen, elapsed = "", None
        while time.monotonic() - t0 < POLL_S:
            screen = capture(session)
            if devices_shown(screen):
                elapsed = time.monotonic() - t0
                break
            time.sleep(0.01)
        if elapsed is not None:  # q quits: the app exits and the pane closes
            subprocess.run(["tmux", "send-keys", "-t", session, "q"], check=True)
            deadline = time.monotonic() + 5
            while subprocess.run(["tmux", "has-session", "-t", session], capture_output=True).returncode == 0:
                if time.monotonic() > deadline:
                    raise AssertionError("q did not quit the app")
                time.sleep(0.05)
        return elapsed, screen
    finally:
        subprocess.run(["tmux", "kill-session", "-t", session], capture_output=True)


@pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed (apt-get install tmux)")
def test_first_screen_within_budget(tmp_path: Path) -> None:
    """Three starts; the median must be within budget (other work on a shared machine adds noise)."""
    times = []
    for _ in range(3):
        elapsed, screen = first_screen_seconds(tmp_path)
        assert elapsed is not None, "the devices screen never appeared:\n" + screen
        times.append(elapsed)
    times.sort()
    load = os.getloadavg()[0]
    print(f"\nfirst screen (devices + key hints) at 80x24: {', '.join(f'{t:.2f}' for t in times)} s "
          f"(median {times[1]:.2f} s, load average {load:.1f})\n{screen}")
    assert times[1] < BUDGET_S, f"median {times[1]:.2f} s > {BUDGET_S} s: {times}"
