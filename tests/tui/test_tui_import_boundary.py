"""The headless core imports no UI package — at runtime and by the import-linter contract."""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.unit.test_structure import core_modules

ROOT = Path(__file__).resolve().parents[2]
UI = ("textual", "rich", "plotext", "textual_plotext")
def test_core_modules_load_no_ui_package() -> None:
    """Every module the import-linter contract names (read from pyproject.toml, packages expanded),
    imported in a fresh interpreter, loads no UI package."""
    present = core_modules()
    assert "app.engine.sweep" in present and "app.cli.commands" in present and "app.report.render" in present
    assert all(importlib.util.find_spec(m) is not None for m in present)
    code = (
        "import importlib, json, sys\n"
        f"for m in {present!r}: importlib.import_module(m)\n"
        "import app.tui\n"  # the entry point's module too: it imports the UI only when run
        f"print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] in {UI!r})))\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout) == [], f"UI packages loaded by the core: {proc.stdout}"
    # and the check is able to see them: the TUI itself does load Textual
    probe = subprocess.run([sys.executable, "-c", "import app.screens.application, sys; "
                            "print('textual' in sys.modules)"], capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert probe.stdout.strip() == "True", probe.stderr
    # the CLI's rich output on a terminal is UI too: outside the core, and it does load rich
    assert "app.cli.console" not in present
    probe = subprocess.run([sys.executable, "-c", "import app.cli.console, sys; print('rich' in sys.modules)"],
                           capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert probe.stdout.strip() == "True", probe.stderr


def test_import_linter_contract_is_kept() -> None:
    exe = shutil.which("lint-imports", path=os.path.dirname(sys.executable)) or shutil.which("lint-imports")
    if exe is None:
        pytest.skip("import-linter is not installed (pip install -e '.[dev]')")
    proc = subprocess.run([exe], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    assert "0 broken" in proc.stdout


CHROME = {"ff5f57", "febc2e", "28c840", "c5c8c6"}  # the SVG's window buttons and title, not the app


def screenshot_colours(no_color: bool, monkeypatch: pytest.MonkeyPatch) -> tuple[bool, set[str]]:
    import asyncio
    import re

    from app.tui import create_app
    from tests.tui.helpers import DEVICES

    if no_color:
        monkeypatch.setenv("NO_COLOR", "1")
    else:
        monkeypatch.delenv("NO_COLOR", raising=False)
    app = create_app(devices=DEVICES, results_dir="results")

    async def shot() -> str:
        async with app.run_test(size=(80, 24)) as pilot:
            await pilot.pause()
            return app.export_screenshot()

    svg = asyncio.run(shot())
    colours = {c.lower() for c in re.findall(r"#([0-9a-fA-F]{6})\b", svg)} - CHROME
    return app.no_color, {c for c in colours if not (c[0:2] == c[2:4] == c[4:6])}


def test_no_color_is_respected(monkeypatch: pytest.MonkeyPatch) -> None:
    """With NO_COLOR set Textual renders in monochrome: every colour of the screen is a grey."""
    flag, coloured = screenshot_colours(False, monkeypatch)
    assert not flag and coloured, "control: without NO_COLOR the screen has colours"
    flag, coloured = screenshot_colours(True, monkeypatch)
    assert flag and not coloured, f"colours with NO_COLOR set: {sorted(coloured)[:10]}"
