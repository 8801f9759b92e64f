"""A memory run's injection delay is shown with its unit wherever it is a column or an axis: the results table's
``delay`` column, the report's loaded-latency tables (``Inject``) and knee table, and the run screen's latency vs
delay chart — the engine's own unit (the built-in engine's spin steps, MLC's units), since the same number is not
the same time in both."""

from __future__ import annotations

from pathlib import Path

from app.model.points import Kind
from app.screens.messages import ShowReport, ShowResults
from app.screens.report import ReportScreen
from app.screens.results import ResultsScreen
from app.tui import create_app
from tests.tui.helpers import wait_for
from tests.tui.test_tui_report_keys import rendered, runs  # noqa: F401  (the golden run, its report rendered)

GOLDEN = Path("results/golden-20261122-021000")  # storage and the built-in engine's memory points


def test_delay_headers_name_the_engines_unit() -> None:
    from app.stats.summary import delay_header
    from app.widgets.charts import DelayChart

    assert delay_header("delay", {"builtin"}) == "delay (spin steps)"
    assert delay_header("Inject", ["mlc"]) == "Inject (MLC units)"
    assert delay_header("delay", {"mlc", "builtin"}) == "delay (engine units)"  # not comparable: no one unit
    assert DelayChart(unit="spin steps").xlabel == "delay (spin steps)"


async def test_the_results_delay_column_and_the_reports_tables_carry_the_unit() -> None:
    app = create_app(devices=[], results_dir="results", clock=lambda: 0.0)
    async with app.run_test(size=(120, 40)) as pilot:
        app.post_message(ShowResults(GOLDEN))
        view = await wait_for(pilot, lambda: isinstance(app.screen, ResultsScreen) and app.screen.records
                              and app.screen, 20, "the results")
        view.show_kind(Kind.MEMORY)
        await pilot.pause(0.2)
        labels = [str(c.label) for c in view.query_one("#results").columns.values()]
        assert "delay (spin steps)" in labels, labels
        app.post_message(ShowReport(GOLDEN))
        report = await wait_for(pilot, lambda: isinstance(app.screen, ReportScreen) and app.screen.loaded
                                and app.screen, 60, "the report")
        source = report.query_one("#report-md").document.source
        assert "| Inject (spin steps)" in source and "Knee delay (spin steps)" in source
        assert "| Inject |" not in source
