"""A memory preset with the built-in engine: the loaded-latency curve grows point by point."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from app.screens.run import RunScreen
from app.tui import create_app
from app.widgets.charts import CurveChart, DelayChart
from tests.tui.helpers import DEVICES, FIXED_PRESETS, choose_preset, our_processes, wait_for


def engine_or_skip() -> None:
    from app.runners.memory import find_engine

    path, problem = find_engine()
    if path is None:
        pytest.skip(f"the built-in memory engine is not built ({problem or 'run make native'})")


async def test_memory_preset_curve_fills_point_by_point(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    engine_or_skip()
    monkeypatch.setenv("PROFILER_TUI_PRESETS", str(FIXED_PRESETS))
    app = create_app(devices=DEVICES, results_dir=tmp_path / "results", engine="builtin",
                     overrides=["runtime=1", "size=16m", "duration=1", "delay=0,1000,20000"])
    seen: list[int] = []
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("enter")
        await choose_preset(pilot, "mem-loaded")
        run = app.screen
        assert isinstance(run, RunScreen) and run.kind == "memory"
        curve = run.query_one("#curve-live", CurveChart)

        def progress() -> bool:
            n = len(curve.points)
            if not seen or seen[-1] != n:
                seen.append(n)
            return run.state.finished is not None or run.state.error is not None

        await wait_for(pilot, progress, 90, "the memory run")
        assert run.state.error is None, run.state.error
        assert run.state.finished is not None
        assert run.state.finished.status == "complete" and run.state.finished.done == 3
        assert len(curve.points) == 3 and len(run.query_one(DelayChart).points) == 3
        assert run.query_one(DelayChart).xlabel == "delay (spin steps)", "the axis carries the engine's unit"
        assert len(run.query_one("#curve-chart", CurveChart).points) == 3
        # the curve grew one point at a time, not all at the end
        assert [n for n in seen if 0 < n < 3], f"point counts seen while running: {seen}"
        assert run.state.path is not None
        records = [json.loads(line) for line in (run.state.path / "results.jsonl").read_text().splitlines()]
        assert sorted(r["point"]["delay"] for r in records) == [0, 1000, 20000]
        assert all(r["point"]["engine"] == "builtin" for r in records)
    assert not our_processes()


async def test_quitting_mid_memory_run_leaves_no_engine(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    engine_or_skip()
    monkeypatch.setenv("PROFILER_TUI_PRESETS", str(FIXED_PRESETS))
    app = create_app(devices=DEVICES, results_dir=tmp_path / "results", engine="builtin",
                     overrides=["duration=2", "delay=0,1000,20000"])
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("enter")
        await choose_preset(pilot, "mem-loaded")
        run = app.screen
        assert isinstance(run, RunScreen)
        await wait_for(pilot, lambda: our_processes(("memlat", "mlc")), 30, "the memory engine to start")
        await pilot.press("ctrl+q")
        await wait_for(pilot, lambda: not app.is_running, 20, "the app to exit")
    assert not our_processes(), our_processes()
    assert run.state.path is not None
    assert json.loads((run.state.path / "run.json").read_text())["status"] == "interrupted"
