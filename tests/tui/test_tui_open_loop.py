"""The run screen's curve chart during an open-loop run: latency against the offered load as points arrive, a
point flagged closed-by-generator drawn apart; a closed-loop run keeps its latency against IOPS."""

from __future__ import annotations

from typing import Any

from textual.app import App, ComposeResult

from app.widgets.charts import OPEN_LOOP_TITLE, CurveChart


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
        text = chart.render().plain
        assert "offered IOPS" in text and "o" in text.split("\n", 1)[1]
        chart.add_record(record(4, 1.0, 1.0, offered=float("nan")))  # a figure no chart can draw: left out
        assert 4 not in chart.offered
