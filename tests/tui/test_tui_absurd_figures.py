"""Figures no device has, handed to the charts: a replayed samples line with an IOPS of 1e307 (finite, so JSON
allows it) stopped the TUI with plotext's OverflowError (it multiplies by 10^8 when it rounds).  The replay's
reader now names such a line and skips it, and the charts themselves draw only what they can (a gap for the
rest), whether the figure comes from a samples file, a live fio sample or a results line."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from app.engine import sweep
from app.plan import presets as core
from app.runners.base import Phase, Sample
from app.screens.replay import ReplayScreen
from app.screens.run import RunScreen
from app.tui import create_app
from app.widgets.charts import CurveChart, TimeSeries
from tests.tui.helpers import DEVICES, FIXED_PRESETS, NO_META, chart_text, open_runs, wait_for
from tests.tui.test_tui_charts import live_run

TELEMETRY = Path(__file__).resolve().parents[1] / "data" / "report" / "telemetry-run"
FIRST = "0000-write-128k-qd8-j1.samples.jsonl"
ABSURD = 1e307


@pytest.fixture(autouse=True)
def fixed_presets(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PROFILER_TUI_PRESETS", str(FIXED_PRESETS))


def log_text(screen: RunScreen) -> str:
    from textual.widgets import RichLog

    return "".join(strip.text for strip in screen.query_one("#log-full", RichLog).lines)


async def test_a_replayed_sample_of_1e307_iops_is_named_and_skipped_and_the_app_keeps_running(tmp_path: Path) -> None:
    run = tmp_path / "results" / "telemetry"
    shutil.copytree(TELEMETRY, run)
    samples = run / "raw" / FIRST
    lines = samples.read_text().splitlines()
    line = json.loads(lines[2])
    line.update(iops=ABSURD, bw_bytes=1.7e308, lat_mean_ns=ABSURD)
    lines[2] = json.dumps(line)
    samples.write_text("\n".join(lines) + "\n")
    app = create_app(devices=DEVICES, results_dir=run.parent)
    async with app.run_test(size=(100, 30)) as pilot:
        await open_runs(pilot)
        await pilot.press("ctrl+y")
        screen = await wait_for(pilot, lambda: isinstance(app.screen, ReplayScreen) and app.screen, 15, "the replay")
        assert isinstance(screen, ReplayScreen)
        for _ in range(3):
            await pilot.press("plus")  # 60×
        await wait_for(pilot, lambda: screen.state.finished is not None, 30, "the replay's end")
        screen.tick()
        await pilot.pause()
        assert app.is_running and app.screen is screen
        for chart in screen.query(TimeSeries):
            assert all(v is None or v <= 1e15 for v in [*chart.a, *chart.b, *chart.c])
            assert "┤" in chart_text(chart)  # drawn, with its axis
        await pilot.press("3")  # the log tab: a RichLog lays out its lines once shown
        await pilot.pause()
        assert isinstance(screen, ReplayScreen)  # (the `is` above leaves mypy with the type of app.screen)
        said = "".join(log_text(screen).split())  # however the log wrapped the sentence
        assert "".join(f"{FIRST}, line 3, key 'iops': has value 1e+307, more than any device's figure (at most "
                       "1e+15); the line is skipped.".split()) in said


def absurd_events(plan: list[Any]) -> list[Any]:
    """A live point whose fio samples carry figures no device has (1e307, infinity, NaN, 1.7e308) between ordinary
    ones, and a results line of 1e18 IOPS."""
    total = len(plan)
    events: list[Any] = [sweep.RunStarted(total, total, 10.0, NO_META, Path("results/live")),
                         sweep.PointStarted(0, plan[0], 0, total, 10.0), Phase(0, "measuring")]
    figures = [20000.0, ABSURD, float("inf"), float("nan"), 1.7e308, 21000.0]
    for t, iops in enumerate(figures, start=1):
        events.append(Sample(0, {"t": t, "iops": iops, "bw_bytes": iops, "lat_mean_ns": iops, "lat_p99_ns": iops,
                                 "lat_p99_9_ns": iops}))
    events.append(Sample(0, {"t": ABSURD, "iops": 1.0}))  # a time no axis can take
    record = {"kind": "storage", "index": 0, "point": plan[0].to_dict(),
              "metrics": {"iops": 1e18, "lat_ns": {"mean": ABSURD}, "bw_bytes": 1e18}}
    events.append(sweep.PointDone(0, record, 1, total))
    return events


async def test_live_samples_with_absurd_figures_leave_gaps_and_the_charts_draw(tmp_path: Path,
                                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    plan = core.apply_overrides(core.load("quick"), ["runtime=1", "size=16m"]).expand()
    app = create_app(devices=DEVICES, results_dir="results", clock=lambda: 0.0)
    async with app.run_test(size=(100, 30)) as pilot:
        screen = await live_run(app, pilot, absurd_events(plan))
        assert app.is_running and app.screen is screen
        for chart in screen.query(TimeSeries):
            kept = [v for v in [*chart.a, *chart.b, *chart.c] if v is not None]
            assert kept and all(v <= 1e15 for v in kept), (chart.id, kept)
            assert len(chart.t) == 6  # the sample at t = 1e307 is not kept
            assert "┤" in chart_text(chart)
        await pilot.press("2")  # the curve: 1e18 IOPS is no point of it
        screen.tick()
        await pilot.pause()
        assert app.is_running and screen.query_one(CurveChart).points == {}
