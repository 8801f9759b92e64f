"""Screens that behave: a finished action leaves no stale screen behind, the report view's Curves tab draws every run
that has a curve, its focus stays where the keys go, and the TUI's own words (docs/tui.md)."""

from __future__ import annotations

from pathlib import Path

import pytest

from app.screens.devices import DevicesScreen
from app.screens.presets import PresetsScreen
from app.screens.run import RunScreen
from app.screens.runs import RunsScreen
from app.tui import create_app
from tests.tui.helpers import DEVICES, FIXED_PRESETS, choose_preset, fio_for, open_runs, wait_for

SIZE = (80, 24)


@pytest.fixture(autouse=True)
def fixed_presets(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PROFILER_TUI_PRESETS", str(FIXED_PRESETS))


# --- the back stack --------------------------------------------------------------------------------------------


async def test_a_resumed_run_leaves_no_stale_run_screen_behind(tmp_path: Path) -> None:
    """Stop a run (c, y), h, ctrl+g (it completes), h, escape: the screen under the runs browser is not the old run
    screen still saying "interrupted … profiler-tui resume …", and escape from there reaches the devices."""
    app = create_app(devices=DEVICES, results_dir=tmp_path / "results", overrides=["runtime=3", "size=4m"])
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("enter")  # the test file
        await choose_preset(pilot, "custom")  # one point
        old = await wait_for(pilot, lambda: isinstance(app.screen, RunScreen) and app.screen, 10, "the run screen")
        await wait_for(pilot, lambda: old.state.current and fio_for(tmp_path), 30, "the point to start")
        await pilot.press("c", "y")
        await wait_for(pilot, lambda: not old.running, 15, "the run to stop")
        assert old.state.status == "interrupted"
        runs = await open_runs(pilot)
        assert runs.shown[0].path == old.state.path and runs.shown[0].status == "interrupted"
        await pilot.press("ctrl+g")
        new = await wait_for(pilot, lambda: isinstance(app.screen, RunScreen) and app.screen is not old and app.screen,
                             15, "the resumed run screen")
        await wait_for(pilot, lambda: new.state.finished is not None, 60, "the resumed run to finish")
        assert new.state.status == "complete"
        assert old not in app.screen_stack, "the stopped run's screen is left under the resumed one"
        await open_runs(pilot)
        await pilot.press("escape")
        await pilot.pause()
        assert not isinstance(app.screen, RunScreen), "escape from the runs browser shows a stale run screen"
        assert isinstance(app.screen, PresetsScreen)  # where the run was started from
        await pilot.press("escape")
        await pilot.pause()
        assert isinstance(app.screen, DevicesScreen)
        assert not [s for s in app.screen_stack if isinstance(s, (RunScreen, RunsScreen))]
