"""The results screen's export (`e`) writes report.html beside report.md: into a directory, and to a .html path
the user typed (the Markdown report then beside it as .md); the status line names both (docs/tui.md)."""

from __future__ import annotations

from pathlib import Path

import pytest
from textual.widgets import Input, Static

from app.screens.messages import ShowResults
from app.screens.results import ResultsScreen
from app.tui import create_app
from tests.tui.helpers import fixed_results, wait_for

SIZE = (80, 24)


@pytest.fixture
def results(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    monkeypatch.delenv("PROFILER_TUI_RESULTS", raising=False)
    root = tmp_path / "results"
    fixed_results(root)
    return root


async def _export(results: Path, typed: str) -> tuple[Path, str]:
    app = create_app(devices=[], results_dir=results, clock=lambda: 0.0)
    async with app.run_test(size=(160, 24)) as pilot:
        app.post_message(ShowResults(results / "golden-20261122-021000"))
        view = await wait_for(pilot, lambda: isinstance(app.screen, ResultsScreen) and app.screen, 10, "results")
        await pilot.press("e")
        field = await wait_for(pilot, lambda: app.screen.query("#export-path") and app.screen.query_one(
            "#export-path", Input), 5, "the export field")
        field.value = typed
        await pilot.press("enter")
        status = view.query_one("#results-status", Static)
        await wait_for(pilot, lambda: view.exported is not None or "failed" in str(status.render()), 60, "the export")
        assert view.exported is not None, str(status.render())
        return view.exported, str(status.render())


@pytest.mark.parametrize("where, md, page", [
    ("out", "out/report.md", "out/report.html"),
    ("share/ticket.html", "share/ticket.md", "share/ticket.html"),
])
async def test_the_export_writes_the_html_report_and_says_so(results: Path, tmp_path: Path, where: str, md: str,
                                                             page: str) -> None:
    report, status = await _export(results, str(tmp_path / where))
    assert report == tmp_path / md
    text = (tmp_path / page).read_text(encoding="utf-8")
    figures = report.read_text(encoding="utf-8").count("](plots/")
    assert figures > 0 and text.count("<svg ") == figures and "<script" not in text
    assert f"Report written: {tmp_path / md} and {Path(page).name}" in status.replace("\n", "")
