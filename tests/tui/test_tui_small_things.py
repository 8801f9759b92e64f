"""Small things users hit (issue 11, item 6): stopping while a run starts, saving over a preset, narrow
terminals, and the output encoding."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest

from app import presets as core
from app import sweep
from app.screens.confirm import YesNo
from app.screens.custom import CustomSweepScreen
from app.screens.run import RunScreen
from app.tui import create_app
from tests.tui.helpers import DEVICES, FIXED_PRESETS, wait_for

SIZE = (80, 24)
SMALL = ["runtime=1", "size=16m"]


@pytest.fixture(autouse=True)
def fixed_presets(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PROFILER_TUI_PRESETS", str(FIXED_PRESETS))


# --- stopping while the session is being created -------------------------------------------------


@pytest.mark.parametrize("blocked", ["before run.json", "after run.json"])
async def test_stop_while_the_session_starts_marks_the_run_interrupted(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, blocked: str) -> None:
    """new_session runs in a thread (it probes tools and the environment); the user stops the run
    meanwhile. When the thread returns, run.json must say interrupted, not planned."""
    release = threading.Event()
    entered = threading.Event()
    real = sweep.new_session

    def slow_new_session(*args, **kwargs):
        entered.set()
        if blocked == "before run.json":
            release.wait(30)
            return real(*args, **kwargs)
        session = real(*args, **kwargs)
        release.wait(30)
        return session

    monkeypatch.setattr(sweep, "new_session", slow_new_session)
    app = create_app(devices=DEVICES, results_dir=tmp_path / "results", overrides=SMALL)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("enter")  # test file → presets; the first preset is 'custom'
        await pilot.press("enter")
        run = app.screen
        assert isinstance(run, RunScreen)
        await wait_for(pilot, entered.is_set, 10, "new_session to be called")
        await pilot.press("c")
        assert isinstance(app.screen, YesNo)
        await pilot.press("y")
        await wait_for(pilot, lambda: not run.running, 10, "the worker to be cancelled")
        assert run.status == "interrupted"
        release.set()
        found = await wait_for(pilot, lambda: list((tmp_path / "results").glob("*/run.json")), 20, "run.json")
        meta = await wait_for(pilot, lambda: (m := json.loads(found[0].read_text()))["status"] != "planned" and m,
                              20, "run.json to leave 'planned'")
    assert meta["status"] == "interrupted" and meta["ended"]
