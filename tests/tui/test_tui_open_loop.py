"""The run screen's curve chart during an open-loop run: latency against the offered load as points arrive, a
point flagged closed-by-generator drawn apart; a closed-loop run keeps its latency against IOPS."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from textual.app import App, ComposeResult

from app.widgets.charts import OPEN_LOOP_TITLE, CurveChart
from tests.tui.helpers import chart_text


def record(index: int, iops: float, lat_us: float, offered: float | None = None, valid: bool = True) -> dict[str, Any]:
    line: dict[str, Any] = {"index": index, "metrics": {"iops": iops, "lat_ns": {"mean": lat_us * 1e3}}}
    if offered is not None:
        line["open_loop"] = {"offered_iops": offered, "valid": valid}
    return line


class One(App[None]):
    def compose(self) -> ComposeResult:
        yield CurveChart("storage", id="curve")


async def test_open_loop_points_plot_latency_against_offered_load() -> None:
    app = One()
    async with app.run_test(size=(80, 24)) as pilot:
        chart = app.query_one(CurveChart)
        chart.add_record(record(0, 2000.0, 500.0))  # the closed-loop sweep first: latency against IOPS
        assert chart.title == "mean latency vs IOPS" and chart.points
        chart.add_record(record(1, 400.0, 60.0, offered=400.0))
        chart.add_record(record(2, 1600.0, 150.0, offered=1600.0))
        chart.add_record(record(3, 2000.0, 30000.0, offered=2200.0, valid=False))
        chart.redraw()
        await pilot.pause()
        assert chart.title == OPEN_LOOP_TITLE
        assert chart.offered == {1: (400.0, 60.0, True), 2: (1600.0, 150.0, True), 3: (2200.0, 30000.0, False)}
        text = chart_text(chart)
        assert "offered IOPS" in text and "o" in text.split("\n", 1)[1]
        chart.add_record(record(4, 1.0, 1.0, offered=float("nan")))  # a figure no chart can draw: left out
        assert 4 not in chart.offered


def test_the_report_curves_draw_the_open_loop_points_that_stayed_open(tmp_path: Path) -> None:
    from app.screens.report import curves_of
    from tests.helpers.open_runs import mm1_run

    d = mm1_run(tmp_path / "run", rhos=(0.2, 0.5, 0.8), flagged=[{"rho": 0.6, "valid": False, "mean_ns": 1e5}])
    curves = curves_of(d)
    (series,) = curves.open_loop
    assert series.xs == [2000.0, 5000.0, 8000.0]  # the flagged point at ρ 0.6 is not drawn
    assert series.ys == pytest.approx([125.0, 200.0, 500.0])  # M/M/1: S / (1 − ρ), µs
    assert all(len(s.xs) == 2 for s in curves.latency_throughput)  # the closed-loop curve keeps its QD1 and QD4


async def test_the_report_screen_shows_the_open_loop_curve_with_units(tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    from app.report import render_report
    from app.tui import create_app
    from app.widgets.series import SeriesPlot
    from tests.helpers.open_runs import mm1_run
    from tests.tui.test_tui_charts import open_report, tick_labels

    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("PROFILER_TUI_RESULTS", raising=False)
    run = mm1_run(tmp_path / "results" / "open")
    render_report(run)
    app = create_app(devices=[], results_dir="results", clock=lambda: 0.0)
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await open_report(pilot, Path("results/open"))
        await pilot.press("2")
        await pilot.pause(0.2)
        plots = {p.title_text: p for p in screen.query(SeriesPlot)}
        plot = plots["open loop: mean latency vs offered IOPS (valid points)"]
        ys, xs = tick_labels(chart_text(plot))
        assert ys and all(label.endswith("µs") or label.endswith("ms") for label in ys), ys
        assert "IOPS" in xs or "k" in xs, xs
