"""The report's Curves tab and the live charts, driven with Pilot: what scrolls from the keyboard, what
each tick label says, and that a gap in the data is never drawn as zero."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest
from textual.containers import VerticalScroll

from app.screens.report import ReportScreen
from app.tui import create_app
from app.widgets.series import SeriesPlot
from tests.tui.helpers import wait_for

REPORT_DATA = Path(__file__).resolve().parents[1] / "data" / "report"
# a number with nothing after it but the next label or the line's end: a tick that does not say its unit
BARE = re.compile(r"(?<![\w.])\d+(?:\.\d+)?[kM]?(?=$| +\d| {2,})")


def tick_labels(plot_text: str) -> tuple[list[str], str]:
    """The y tick labels (left of "┤") and the x labels' line (the line under the "└" frame)."""
    lines = plot_text.splitlines()
    ys = [line.split("┤")[0].strip() for line in lines if "┤" in line.split("│")[0]]
    bottom = next(i for i, line in enumerate(lines) if "└" in line)
    return ys, lines[bottom + 1].strip() if bottom + 1 < len(lines) else ""


@pytest.fixture
def golden(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("PROFILER_TUI_RESULTS", raising=False)
    shutil.copytree(REPORT_DATA / "golden-run", tmp_path / "results" / "golden")
    return Path("results/golden")


async def open_report(pilot, path: Path) -> ReportScreen:
    pilot.app.push_screen(ReportScreen(path))
    screen = await wait_for(pilot, lambda: isinstance(pilot.app.screen, ReportScreen) and pilot.app.screen.loaded
                            and pilot.app.screen, 60, "the report")
    await pilot.pause(0.2)
    return screen


async def test_curves_scroll_to_their_end_at_80x24_and_every_tick_says_its_unit(golden: Path) -> None:
    app = create_app(devices=[], results_dir="results", clock=lambda: 0.0)
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await open_report(pilot, golden)
        await pilot.press("2")
        box = screen.query_one("#report-plots", VerticalScroll)
        await wait_for(pilot, lambda: app.focused is box, 5, "the curves to take the keys")
        assert box.max_scroll_y > 0  # three plots do not fit in 19 rows: the test needs a scroll
        await pilot.press("down")
        assert box.scroll_y == 1
        await pilot.press("pagedown", "space")
        assert box.scroll_y > 1 + box.size.height
        await pilot.press("end")
        await pilot.pause(0.1)
        assert box.scroll_y == box.max_scroll_y
        plots = list(screen.query(SeriesPlot))
        assert len(plots) == 3
        shown = range(round(box.scroll_y), round(box.scroll_y) + box.scrollable_content_region.height + 1)
        last = box.children[-1]  # the last plot's legend
        assert last.virtual_region.y in shown and last.virtual_region.bottom in shown
        assert plots[-1].virtual_region.y in shown  # the last plot, whole, above it
        for plot in plots:
            ys, xs = tick_labels(plot.render().plain)
            assert len(ys) >= 2 and xs, (plot.title_text, plot.render().plain)
            for label in ys:
                assert not BARE.fullmatch(label), (plot.title_text, label)
            assert not BARE.search(xs), (plot.title_text, xs)
        queue_depth = plots[1].render().plain
        assert "IOPS┤" in queue_depth and " in flight" in queue_depth


async def test_report_text_pages_down_after_switching_to_the_curves_and_back(golden: Path) -> None:
    app = create_app(devices=[], results_dir="results", clock=lambda: 0.0)
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await open_report(pilot, golden)
        await pilot.press("2")
        await pilot.pause(0.1)
        await pilot.press("1")
        await pilot.pause(0.1)
        viewer = screen.query_one("#report-md")
        await pilot.press("pagedown")
        await pilot.pause(0.1)
        assert viewer.scroll_y > 0
