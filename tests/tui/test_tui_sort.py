"""The results table sorts its test column naturally: QD1, QD8, QD32 (a string sort gave QD1, QD32, QD8)."""

from __future__ import annotations

from pathlib import Path

from textual.widgets import DataTable

from app.screens.results import ResultsScreen
from app.tui import create_app
from tests.helpers.interval_runs import storage_point, write_storage_run
from tests.tui.helpers import DEVICES


async def test_sorting_by_test_puts_qd8_before_qd32(tmp_path: Path) -> None:
    run = write_storage_run(tmp_path / "qd", [(storage_point(iodepth=q), 1000.0 * q, None) for q in (32, 1, 8)])
    app = create_app(devices=DEVICES, results_dir=str(tmp_path), clock=lambda: 0.0, settings=tmp_path / "c.toml")
    async with app.run_test(size=(100, 24)) as pilot:
        app.push_screen(ResultsScreen(run))
        await pilot.pause()
        await pilot.press("s")  # from # to test
        await pilot.pause()
        table = app.screen.query_one("#results", DataTable)
        col = [str(c.label) for c in table.ordered_columns].index("test")
        tests = [str(table.get_row_at(i)[col]) for i in range(table.row_count)]
        assert [t.split()[2] for t in tests] == ["QD1", "QD8", "QD32"], tests
