"""The capability query inside a real tmux pane returns within 0.5 s: tmux answers DA1 itself, so the read ends
at its answer whether the Kitty query was dropped (no passthrough) or handed on (allow-passthrough on)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

SCRIPT = """
import json, sys, time
from app.widgets import termcaps
start = time.monotonic()
caps = termcaps.detect()
took = time.monotonic() - start
json.dump({"renderer": caps.renderer, "tmux": caps.tmux, "why": caps.why, "took": took}, open(sys.argv[1], "w"))
"""

pytestmark = pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed (apt-get install tmux)")


def detect_in_tmux(tmp_path: Path, passthrough: bool) -> dict[str, object]:
    socket = f"figs-{os.getpid()}-{int(passthrough)}"
    conf = tmp_path / "tmux.conf"
    conf.write_text(f"set -g allow-passthrough {'on' if passthrough else 'off'}\n")
    out = tmp_path / "caps.json"
    script = tmp_path / "detect.py"
    script.write_text(SCRIPT)
    env = {k: v for k, v in os.environ.items() if k not in ("TMUX", "PROFILER_TUI_IMAGES")}
    cmd = f"cd {ROOT} && {sys.executable} {script} {out}"
    subprocess.run(["tmux", "-L", socket, "-f", str(conf), "new-session", "-d", "-x", "80", "-y", "24", cmd],
                   check=True, env=env)
    try:
        deadline = time.monotonic() + 30
        while not out.exists() or not out.read_text():
            assert time.monotonic() < deadline, "the detection did not finish in the tmux pane"
            time.sleep(0.05)
        time.sleep(0.05)
        return dict(json.loads(out.read_text()))
    finally:
        subprocess.run(["tmux", "-L", socket, "kill-server"], capture_output=True)


def test_query_in_tmux_without_passthrough(tmp_path: Path) -> None:
    caps = detect_in_tmux(tmp_path, passthrough=False)
    assert float(caps["took"]) < 0.5  # type: ignore[arg-type]
    assert caps["renderer"] == "halfblock" and caps["tmux"] is False
    assert caps["why"] == "tmux without passthrough answers neither Kitty nor Sixel: half-blocks"  # DA1 came


def test_query_in_tmux_with_passthrough(tmp_path: Path) -> None:
    caps = detect_in_tmux(tmp_path, passthrough=True)
    assert float(caps["took"]) < 0.5  # type: ignore[arg-type]
    # no terminal outside this detached tmux answers the Kitty query; tmux's own DA1 answer ends the read
    assert caps["renderer"] == "halfblock"
    assert caps["why"] == "the terminal answers neither Kitty nor Sixel: half-blocks"
