"""Snapshots of ASCII mode at 80x24 (fixed devices, presets, fake run events, fixed clock): the live charts with
their ASCII markers and the results table, in 16 colours.  The tmux walk (test_tui_ascii.py) checks every screen's
characters; these keep what they look like.  Update with ``--snapshot-update`` and review the SVGs."""

from __future__ import annotations

from app.plan import presets as core
from app.screens.results import ResultsScreen
from app.tui import create_app
from tests.tui.helpers import DEVICES, results_shown
from tests.tui.test_tui_snapshots import (
    RUN_DIR,
    SMALL,
    fake_run,
    fixed_world,  # noqa: F401  the snapshots' autouse fixture: fixed presets, the test's folder, colours on
    show_run,
    storage_events,
    write_results,
)

SIZE = (80, 24)


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
        await results_shown(pilot)  # a read of RUN_DIR ahead (an earlier test's) may still run: its rows
        await pilot.pause()
        await pilot.press("u")

    assert snap_compare(ascii_app(), run_before=before, terminal_size=SIZE)
