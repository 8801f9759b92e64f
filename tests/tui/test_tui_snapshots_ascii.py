"""Snapshots of ASCII mode at 80x24 (fixed devices, presets, fake run events, fixed clock): the live charts with
their ASCII markers and the results table, in 16 colours.  The tmux walk (test_tui_ascii.py) checks every screen's
characters; these keep what they look like.  Update with ``--snapshot-update`` and review the SVGs."""

from __future__ import annotations

from pathlib import Path

import pytest

from app import presets as core
from app.screens.results import ResultsScreen
from app.tui import create_app
from tests.tui.helpers import DEVICES, FIXED_PRESETS
from tests.tui.test_tui_snapshots import RUN_DIR, SMALL, fake_run, show_run, storage_events, write_results

SIZE = (80, 24)


@pytest.fixture(autouse=True)
def fixed_world(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("PROFILER_TUI_PRESETS", str(FIXED_PRESETS))
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("NO_COLOR", raising=False)


def ascii_app():
    return create_app(devices=DEVICES, results_dir="results", overrides=SMALL, clock=lambda: 0.0, ascii=True)


def test_ascii_run_storage_live(snap_compare) -> None:
    plan = core.apply_overrides(core.load("quick"), list(SMALL)).expand()
    events = storage_events(plan, completed=5)

    async def before(pilot) -> None:
        await show_run(pilot, fake_run("quick", events), len(events))

    assert snap_compare(ascii_app(), run_before=before, terminal_size=SIZE)


def test_ascii_devices(snap_compare) -> None:
    assert snap_compare(ascii_app(), terminal_size=SIZE)


def test_ascii_results_in_mib(snap_compare) -> None:
    async def before(pilot) -> None:
        write_results()
        pilot.app.push_screen(ResultsScreen(RUN_DIR))
        await pilot.pause()
        await pilot.press("u")

    assert snap_compare(ascii_app(), run_before=before, terminal_size=SIZE)
