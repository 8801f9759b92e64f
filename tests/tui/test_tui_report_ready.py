"""The report of a run is rendered when the run ends (by a child process, off the event loop), and the report view
opens from that rendering instead of rendering it again.  Real fio on a small file; no timing asserted (the key
latencies are `make bench-tui`'s)."""

from __future__ import annotations

from pathlib import Path

import pytest

import app.report
from app.screens.report import ReportScreen
from app.screens.results import ResultsScreen
from app.screens.run import RunScreen
from app.tui import create_app
from tests.tui.helpers import DEVICES, FIXED_PRESETS, choose_preset, wait_for

SIZE = (100, 30)


@pytest.fixture(autouse=True)
def fixed_presets(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PROFILER_TUI_PRESETS", str(FIXED_PRESETS))


async def test_report_is_rendered_when_the_run_ends_and_the_view_opens_from_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    rendered: list[Path] = []  # in this process
    real = app.report.render_report

    def counting(directory, *args, **kwargs):  # type: ignore[no-untyped-def]
        rendered.append(Path(directory))
        return real(directory, *args, **kwargs)

    monkeypatch.setattr(app.report, "render_report", counting)
    tui = create_app(devices=DEVICES, results_dir=tmp_path / "results", overrides=["runtime=1", "size=4m"])
    async with tui.run_test(size=SIZE) as pilot:
        await pilot.press("enter")  # the test file
        await choose_preset(pilot, "custom")  # one point
        run = await wait_for(pilot, lambda: isinstance(tui.screen, RunScreen) and tui.screen, 30, "the run screen")
        await wait_for(pilot, lambda: run.state.finished is not None or run.state.error, 60, "the run to end")
        assert run.state.error is None and run.state.finished.done == 1
        path = run.state.path
        # rendered when the run ended, before anyone asked for the report
        await wait_for(pilot, lambda: (path / "report.md").is_file() and (path / "results.csv").is_file(), 60,
                       "the report of the run")
        before = (path / "report.md").stat()

        await pilot.press("r")
        await wait_for(pilot, lambda: isinstance(tui.screen, ResultsScreen), 30, "the results")
        for _ in range(2):  # the first view and the next: each from what was rendered when the run ended
            await pilot.press("v")
            view = await wait_for(pilot, lambda: isinstance(tui.screen, ReportScreen) and tui.screen.loaded
                                  and tui.screen, 60, "the report view")
            assert "custom" in view.loaded.markdown
            await pilot.press("escape")
            await wait_for(pilot, lambda: isinstance(tui.screen, ResultsScreen), 10, "the results again")
        assert rendered == [], "the report view rendered the report again"
        after = (path / "report.md").stat()
        assert (after.st_ino, after.st_mtime_ns) == (before.st_ino, before.st_mtime_ns)
