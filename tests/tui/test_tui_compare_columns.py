"""The compare view's tables, wider than the terminal, scroll sideways a whole column at a time (as the results
pages its columns): ←/→ put the next or previous column's first character at the left edge, never a column cut
in the middle (the page scrolled a character a press)."""

from __future__ import annotations

from pathlib import Path

import pytest
from textual.widgets import DataTable

from app.screens.compare import CompareScreen
from app.tui import create_app
from tests.tui.helpers import fixed_results, open_compare


@pytest.fixture
def results(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("PROFILER_TUI_RESULTS", raising=False)
    fixed_results(Path("results"))
    return Path("results")


def starts(view: CompareScreen) -> list[int]:
    """Where each column of the widest table on screen starts."""
    body = view.query_one("#compare-body")
    tables = [t for t in view.query(".compare-table").results(DataTable) if t.region.overlaps(body.region)]
    table = max(tables, key=lambda t: t.virtual_size.width)
    assert table.virtual_size.width > body.scrollable_content_region.width, "a table wider than the terminal"
    edges, x = [], 0
    for column in table.ordered_columns:
        edges.append(x)
        x += column.get_render_width(table)
    return edges


async def test_left_and_right_scroll_the_compare_tables_by_whole_columns(results: Path) -> None:
    app = create_app(devices=[], results_dir=results, clock=lambda: 0.0)
    async with app.run_test(size=(80, 24)) as pilot:
        view = await open_compare(pilot, results / "golden-20261122-021000", results / "cliff-20261123-212547")
        body = view.query_one("#compare-body")
        table = max(view.query(".compare-table").results(DataTable), key=lambda t: t.virtual_size.width)
        body.scroll_to_widget(table, top=True, animate=False)  # the run-vs-run table in view
        await pilot.pause(0.2)
        edges = starts(view)
        assert len(edges) > 3 and body.max_scroll_x > edges[1]
        await pilot.press("right")
        await pilot.pause(0.2)
        assert body.scroll_x == edges[1], (body.scroll_x, edges)
        await pilot.press("right")
        await pilot.pause(0.2)
        assert body.scroll_x == min(edges[2], body.max_scroll_x), (body.scroll_x, edges)
        await pilot.press("left")
        await pilot.pause(0.2)
        assert body.scroll_x == edges[1]
        await pilot.press("left", "left")
        await pilot.pause(0.2)
        assert body.scroll_x == 0
        for _ in range(len(edges) + 1):  # to the end: the last columns whole, at the right edge
            await pilot.press("right")
        await pilot.pause(0.2)
        assert body.scroll_x == body.max_scroll_x
