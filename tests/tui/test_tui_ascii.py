"""ASCII mode in a real terminal: ``profiler-tui --ascii`` (and ``TERM=linux`` alone) at 80x24 in a tmux pane,
walked through every screen (devices, the target confirmation, presets, a real fio run on a file with the live
charts, results, the report view, the runs browser, help); every captured pane must hold nothing but ASCII and
every colour the app sends must be one of the 16 standard ones.

The device list is fixed (tests.tui.helpers.DEVICES, with a model and a mount point outside ASCII: text from the
machine goes through the same filter), injected before the CLI's own entry point runs; the TUI is started the
way ``python -m app --ascii`` starts it.  The same walk's first screen without ASCII mode must show characters
outside ASCII, so the scan can see them."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from tests.tui.helpers import DEVICES

pytestmark = pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed (apt-get install tmux)")

ROOT = Path(__file__).resolve().parents[2]
PRESET = ('name = "b-short"\nkind = "storage"\ndescription = "one 3 s point"\n\n[settings]\n'
          'rw = "randread"\nbs = "4k"\niodepth = 1\nruntime = 3\nsize = "16m"\n')
# colours a terminal of 16 colours understands: SGR 30-37/40-47, 90-97/100-107, default 39/49 (tmux writes what
# each cell holds); 256-colour (38;5) and truecolour (38;2) ones must not appear
RICH_COLOUR = re.compile(r"\x1b\[[0-9;]*[34]8;[25][;0-9]*m")


def fixed_devices() -> list[dict[str, object]]:
    devices = json.loads(json.dumps(DEVICES))
    devices[1]["model"] = "Ünïcode SSD — 漢字 ★"
    devices[1]["mountpoints"] = []
    devices[0]["children"][0]["mountpoints"] = ["/mnt/données/漢字"]
    return devices


def launcher(args: list[str]) -> str:
    """``python -c`` code: the fixed device list, then the CLI's own entry point (app.__main__) with ``args``."""
    return (f"import sys, json, app.host.devices; devices = json.loads({json.dumps(json.dumps(fixed_devices()))}); "
            f"app.host.devices.list_devices = lambda *a, **k: json.loads(json.dumps(devices)); "
            f"sys.argv = ['profiler-tui', *{args!r}]; from app.__main__ import main; main()")


class Pane:
    """One TUI in an 80x24 tmux pane; every capture is kept for the scan."""

    def __init__(self, tmp_path: Path, args: list[str], term: str) -> None:
        self.session = f"ptui-ascii-{uuid.uuid4().hex[:8]}"
        presets = tmp_path / "presets"
        presets.mkdir()
        (presets / "b-short.toml").write_text(PRESET)
        self.results = tmp_path / "results"
        script = tmp_path / "launch.py"
        script.write_text(launcher(args))
        env = {"TERM": term, "PROFILER_TUI_RESULTS": str(self.results), "PROFILER_TUI_PRESETS": str(presets),
               "XDG_CONFIG_HOME": str(tmp_path / "cfg"), "LANG": "C.UTF-8"}
        exports = " ".join(f"{k}={v}" for k, v in env.items())
        cmd = f"cd {ROOT} && env -u NO_COLOR -u PROFILER_TUI_ASCII {exports} {sys.executable} {script}"
        subprocess.run(["tmux", "new-session", "-d", "-s", self.session, "-x", "80", "-y", "24", cmd], check=True)
        self.captures: list[tuple[str, str, str]] = []  # (what, text, text with escapes)

    def text(self) -> str:
        return subprocess.run(["tmux", "capture-pane", "-p", "-t", self.session], capture_output=True,
                              text=True, encoding="utf-8", errors="replace").stdout

    def wait(self, what: str, needle: str, timeout: float = 20) -> str:
        """Poll until ``needle`` shows; the pane is captured then (as ``what``)."""
        deadline = time.monotonic() + timeout
        screen = ""
        while time.monotonic() < deadline:
            screen = self.text()
            if needle in screen:
                time.sleep(0.3)  # the rest of the screen drawn too
                return self.capture(what)
            time.sleep(0.1)
        raise AssertionError(f"{what}: {needle!r} never showed:\n{screen}")

    def capture(self, what: str) -> str:
        text = self.text()
        escaped = subprocess.run(["tmux", "capture-pane", "-p", "-e", "-t", self.session], capture_output=True,
                                 text=True, encoding="utf-8", errors="replace").stdout
        self.captures.append((what, text, escaped))
        return text

    def keys(self, *keys: str, pause: float = 0.4) -> None:
        for key in keys:
            subprocess.run(["tmux", "send-keys", "-t", self.session, key], check=True)
            time.sleep(pause)

    def close(self) -> None:
        subprocess.run(["tmux", "kill-session", "-t", self.session], capture_output=True)

    def assert_ascii(self) -> None:
        for what, text, escaped in self.captures:
            outside = sorted({c for c in text if not c.isascii()})
            assert not outside, f"{what}: characters outside ASCII {outside}:\n{text}"
            rich = RICH_COLOUR.findall(escaped)
            assert not rich, f"{what}: colours beyond the 16 standard ones {sorted(set(rich))[:5]}"


def walk_to_confirm_and_presets(pane: Pane) -> None:
    pane.wait("devices", "/dev/loop7")
    pane.keys("Down", "Down", "Down")  # the test file, /dev/sdz, /dev/sdz1, then /dev/loop7 (the model's device)
    pane.capture("devices, a device highlighted")
    pane.keys("Enter")
    pane.wait("confirmation", "Confirm")
    pane.keys("Escape")
    pane.keys("p")
    pane.wait("presets", "b-short")


def test_ascii_flag_every_screen_is_ascii_with_16_colours(tmp_path: Path) -> None:
    pane = Pane(tmp_path, ["--ascii"], "xterm-256color")  # a terminal that could draw anything: the flag decides
    try:
        walk_to_confirm_and_presets(pane)
        pane.keys("Enter", pause=0.1)
        pane.wait("run: live charts", "IOPS", timeout=20)
        deadline = time.monotonic() + 20
        while "s+" not in pane.text() and "s|" not in pane.text() and time.monotonic() < deadline:
            time.sleep(0.2)  # the first samples plotted (an x tick label such as "2s")
        live = pane.capture("run: live charts with samples")
        assert "*" in live, live  # the IOPS line's ASCII marker
        pane.wait("run: complete", "complete", timeout=30)
        pane.keys("2")
        pane.capture("run: curve tab")
        pane.keys("3")
        pane.capture("run: log tab")
        pane.keys("r")
        results = pane.wait("results", "sorted by")
        assert " MB/s " in results.splitlines()[1], results  # the table's header
        pane.keys("u")
        assert " MiB/s " in pane.wait("results in binary units", "MiB/s").splitlines()[1]
        pane.keys("u")
        pane.keys("v")
        pane.wait("report", "Performance report", timeout=30)
        pane.keys("2")
        pane.capture("report: curves")
        pane.keys("3")
        pane.wait("report: figures, no pictures in ASCII mode", "Pictures are off (ASCII mode)", timeout=30)
        pane.keys("Escape", "Escape", "Escape")
        pane.keys("h")
        pane.wait("runs browser", "b-short")
        pane.keys("C-y")
        pane.wait("replay of the run", "Replay over", timeout=30)
        pane.keys("Escape")
        pane.wait("runs browser again", "b-short")
        pane.keys("Escape")
        pane.keys("?")
        pane.wait("help", "command palette")
        pane.keys("Down", "Down", "Down", "Down", "Down")
        pane.capture("help scrolled")
        for what, text, _ in pane.captures:
            print(f"--- {what}\n{text}")
        pane.assert_ascii()
    finally:
        pane.close()


def test_term_linux_alone_gives_ascii(tmp_path: Path) -> None:
    pane = Pane(tmp_path, [], "linux")
    try:
        walk_to_confirm_and_presets(pane)
        pane.keys("h")
        pane.wait("runs browser", "Runs")
        pane.keys("Escape", "?")
        pane.wait("help", "command palette")
        pane.assert_ascii()
    finally:
        pane.close()


def test_without_ascii_mode_the_scan_sees_unicode(tmp_path: Path) -> None:
    """The control: the same first screens on xterm-256color draw boxes and a model outside ASCII, in colours beyond
    the 16 standard ones."""
    pane = Pane(tmp_path, [], "xterm-256color")
    try:
        walk_to_confirm_and_presets(pane)
        with pytest.raises(AssertionError, match="outside ASCII"):
            pane.assert_ascii()
        assert any(RICH_COLOUR.search(escaped) for _, _, escaped in pane.captures)
    finally:
        pane.close()
