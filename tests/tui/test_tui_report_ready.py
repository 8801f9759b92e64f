"""The report of a run is rendered when the run ends (by a child process, off the event loop), and the report view
opens from that rendering instead of rendering it again.  Real fio on a small file; no timing asserted (the key
latencies are `make bench-tui`'s)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

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

    def counting(directory: Path, *args: Any, **kwargs: Any) -> Any:
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


async def test_a_rendering_still_running_when_the_app_exits_is_stopped(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A report rendering outlives neither the app nor its own forked workers: the app stops its process group when
    it exits (the report stays stale and is rendered when next viewed)."""
    import os
    import time

    from app.screens import prerender

    # a rendering that forks a worker and never ends: both write their pid, then sleep
    monkeypatch.setattr(prerender, "RENDER", "import os, sys, time; from pathlib import Path; "
                        "os.fork() or None; "
                        "open(Path(sys.argv[2]) / f'pid.{os.getpid()}', 'w').close(); time.sleep(600)")
    tui = create_app(devices=DEVICES, results_dir=tmp_path / "results")
    async with tui.run_test(size=SIZE) as pilot:
        future = prerender.render_when_done(tmp_path)
        await wait_for(pilot, lambda: len(list(tmp_path.glob("pid.*"))) == 2, 30, "the rendering and its worker")
    pids = [int(p.name.split(".")[1]) for p in tmp_path.glob("pid.*")]

    def alive(pid: int) -> bool:
        try:
            with open(f"/proc/{pid}/stat") as f:
                return f.read().split(") ")[1][0] != "Z"
        except OSError:
            return False

    deadline = time.monotonic() + 10
    while any(alive(p) for p in pids) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not [p for p in pids if alive(p)], "a rendering outlived the app"
    with pytest.raises(RuntimeError, match="not rendered"):
        future.result(timeout=10)
    assert os.getpid() not in pids
