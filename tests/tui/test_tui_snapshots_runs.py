"""Snapshots of the runs browser, the compare view and the report view at 80x24, on fixed results
directories (tests/data/report: the golden run and the telemetry run) copied under a relative results/.

Update after an intended change with ``pytest tests/tui/test_tui_snapshots_runs.py --snapshot-update`` and
review the SVGs."""

from __future__ import annotations

from pathlib import Path

import pytest

from app.screens.compare import CompareScreen
from app.screens.report import ReportScreen
from app.tui import create_app
from tests.tui.helpers import fixed_results, wait_for

SIZE = (80, 24)


@pytest.fixture(autouse=True)
def fixed_runs(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.chdir(tmp_path)  # results/ is relative: the same text on every machine
    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.delenv("PROFILER_TUI_RESULTS", raising=False)
    fixed_results(Path("results"))


def app_():
    return create_app(devices=[], results_dir="results", clock=lambda: 0.0)


def test_runs_browser(snap_compare) -> None:
    async def before(pilot) -> None:
        await pilot.press("h")
        await wait_for(pilot, lambda: getattr(pilot.app.screen, "loaded", False), 10, "the runs")
        await pilot.press("down", "ctrl+t")

    assert snap_compare(app_(), run_before=before, terminal_size=SIZE)


def test_runs_browser_filtered(snap_compare) -> None:
    """"/" starts the filter (a letter that is no key of the screen would too); the words narrow the list."""
    async def before(pilot) -> None:
        await pilot.press("h")
        await wait_for(pilot, lambda: getattr(pilot.app.screen, "loaded", False), 10, "the runs")
        await pilot.press("slash", "g", "o", "l", "d")

    assert snap_compare(app_(), run_before=before, terminal_size=SIZE)


def test_compare_view(snap_compare) -> None:
    async def before(pilot) -> None:
        pilot.app.push_screen(CompareScreen(Path("results/golden-20261122-021000"),
                                            Path("results/cliff-20261123-212547")))
        await wait_for(pilot, lambda: getattr(pilot.app.screen, "markdown", None), 20, "the comparison")
        await pilot.pause(0.3)

    assert snap_compare(app_(), run_before=before, terminal_size=SIZE)


def test_report_view(snap_compare) -> None:
    async def before(pilot) -> None:
        pilot.app.push_screen(ReportScreen(Path("results/cliff-20261123-212547")))
        await wait_for(pilot, lambda: getattr(pilot.app.screen, "loaded", None), 60, "the report")
        await pilot.pause(0.3)

    assert snap_compare(app_(), run_before=before, terminal_size=SIZE)


def test_report_view_curves(snap_compare) -> None:
    async def before(pilot) -> None:
        pilot.app.push_screen(ReportScreen(Path("results/golden-20261122-021000")))
        await wait_for(pilot, lambda: getattr(pilot.app.screen, "loaded", None), 60, "the report")
        await pilot.press("2")
        await wait_for(pilot, lambda: getattr(pilot.app.focused, "id", None) == "report-plots", 5, "the curves")
        await pilot.pause(0.3)

    assert snap_compare(app_(), run_before=before, terminal_size=SIZE)
