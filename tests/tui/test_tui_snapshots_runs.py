"""Snapshots of the runs browser, the compare view and the report view at 80x24, on fixed results
directories (tests/data/report: the golden run and the telemetry run) copied under a relative results/.

Update after an intended change with ``pytest tests/tui/test_tui_snapshots_runs.py --snapshot-update`` and
review the SVGs."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from app.screens.compare import CompareScreen
from app.screens.report import ReportScreen
from app.tui import create_app
from tests.tui.helpers import wait_for

DATA = Path(__file__).resolve().parents[1] / "data" / "report"
SIZE = (80, 24)


@pytest.fixture(autouse=True)
def fixed_runs(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.chdir(tmp_path)  # results/ is relative: the same text on every machine
    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.delenv("PROFILER_TUI_RESULTS", raising=False)
    root = Path("results")
    shutil.copytree(DATA / "golden-run", root / "golden-20261122-021000")
    shutil.copytree(DATA / "telemetry-run", root / "cliff-20261123-212547")
    cut = root / "qd-scaling-20261123-230000"
    cut.mkdir()
    meta = json.loads((DATA / "golden-run" / "run.json").read_text())
    meta.update(status="running", started="2026-11-23T23:00:00+00:00", points_done=0,
                preset={"name": "qd-scaling", "kind": "storage"})
    (cut / "run.json").write_text(json.dumps(meta))  # no process holds it: shown as interrupted
    lines = (DATA / "golden-run" / "results.jsonl").read_text().splitlines()[:5]
    (cut / "results.jsonl").write_text("\n".join(lines) + "\n")


def app_():
    return create_app(devices=[], results_dir="results", clock=lambda: 0.0)


def test_runs_browser(snap_compare) -> None:
    async def before(pilot) -> None:
        await pilot.press("h")
        await wait_for(pilot, lambda: getattr(pilot.app.screen, "loaded", False), 10, "the runs")
        await pilot.press("down", "m")

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
