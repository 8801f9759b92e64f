"""The run screen's live latency heat map (tab 4): each second's histogram fills a column while the point runs,
a stall shows as a band at its seconds, a new point starts an empty map, and ASCII mode draws density as
characters."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from app.engine import sweep
from app.plan import presets as core
from app.runners.base import Phase, Sample
from app.stats.latmap import encode
from app.widgets.heatmap import DENSITY, LiveHeatMap
from tests.tui.helpers import NO_META
from tests.tui.test_tui_charts import _quick_app, live_run
from tests.tui.test_tui_snapshots import SIZE, SMALL, app_, fake_run, show_run

STALL = (8, 9, 10)  # seconds whose I/Os wait 50 ms


def heat_events(plan: list[Any], seconds: int = 20) -> list[Any]:
    """A point measured for ``seconds`` seconds at ~40 µs, stalled in the seconds of STALL."""
    total = len(plan)
    events: list[Any] = [sweep.RunStarted(total, total, 30.0, NO_META, Path("results/live")),
                         sweep.PointStarted(0, plan[0], 0, total, 30.0), Phase(0, "measuring")]
    for t in range(1, seconds + 1):
        bins = {50_000_000: 60, 75_000_000: 40} if t in STALL else {30_000: 4_000, 40_000: 5_000, 60_000: 900,
                                                                     200_000: 10}
        n = sum(bins.values())
        events.append(Sample(0, {"t": float(t), "interval_s": 1.0, "iops": float(n), "bw_bytes": n * 4096.0,
                                 "lat_mean_ns": 40_000.0, "lat_p99_ns": 60_000.0}, {"read": encode(bins)}))
    return events


def _columns_with_slow_cells(text: str) -> list[int]:
    """The columns (0-based, after the label) that hold anything in the map's top lines (≥ 10 ms)."""
    lines = text.splitlines()
    top = [ln.split("│", 1)[1] for ln in lines[:len(lines) // 3] if "│" in ln]
    return sorted({i for ln in top for i, ch in enumerate(ln) if ch != " "})


async def test_the_live_map_fills_a_column_a_second_and_shows_the_stall_at_its_seconds(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    plan, app = _quick_app(tmp_path, monkeypatch)
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await live_run(app, pilot, heat_events(plan))
        await pilot.press("4")
        await pilot.pause()
        heat = screen.query_one(LiveHeatMap)
        assert len(heat.seconds) == 20
        text = heat.render().plain  # type: ignore[union-attr]
        assert _columns_with_slow_cells(text) == [s - 1 for s in STALL], text
        assert "20 s shown" in text
        ascii_text = heat.draw(heat.size.width, heat.size.height, chars=True).plain
        assert _columns_with_slow_cells(ascii_text) == [s - 1 for s in STALL], ascii_text
        assert set("".join(ln.split("│", 1)[1] for ln in ascii_text.splitlines() if "│" in ln)) <= set(DENSITY)
        screen.handle(sweep.PointStarted(1, plan[1], 1, len(plan), 10.0))  # the next point: its own map
        await pilot.pause()
        assert len(heat.seconds) == 0


def test_run_storage_heat_tab(snap_compare) -> None:
    plan = core.apply_overrides(core.load("quick"), list(SMALL)).expand()
    events = heat_events(plan)

    async def before(pilot) -> None:
        await show_run(pilot, fake_run("quick", events), len(events))
        await pilot.press("4")

    assert snap_compare(app_(), run_before=before, terminal_size=SIZE)
