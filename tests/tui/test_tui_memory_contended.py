"""The results screen of a memory run measured beside busy loops: its contended rows are flagged in the table."""

from __future__ import annotations

from pathlib import Path

from textual.widgets import DataTable

from app.screens.messages import ShowResults
from app.screens.results import ResultsScreen
from app.tui import create_app
from tests.helpers.suite_runs import write_run
from tests.tui.helpers import wait_for
from tests.unit.test_memory_contention import loaded_lines


async def test_the_results_table_flags_contended_memory_rows(tmp_path: Path) -> None:
    run = write_run(tmp_path / "results" / "mem-loaded-20261129-050000", loaded_lines(cumulative=True))
    app = create_app(devices=[], results_dir=tmp_path / "results", clock=lambda: 0.0)
    async with app.run_test(size=(120, 30)) as pilot:
        app.post_message(ShowResults(run))
        view = await wait_for(pilot, lambda: isinstance(app.screen, ResultsScreen) and app.screen, 10, "results")
        table = view.query_one("#results", DataTable)
        await wait_for(pilot, lambda: table.row_count == 9, 10, "the rows")
        heads = [str(c.label) for c in table.columns.values()]
        assert heads[-1] == "flags", heads
        cells = {str(table.get_cell_at((r, 3))): str(table.get_cell_at((r, len(heads) - 1)))
                 for r in range(table.row_count)}
        assert cells["700"] == "contended" and cells["500"] == ""
