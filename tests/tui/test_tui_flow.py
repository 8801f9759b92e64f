"""The keyboard paths of the TUI with real fio on files in tmp_path (docs/tui.md)."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path
from typing import Any

import pytest
from textual.widgets import Input

from app.plan import presets as core
from app.screens.custom import CustomSweepScreen
from app.screens.presets import PresetsScreen
from app.screens.run import RunScreen
from app.store.results import ResultsDir
from app.tui import create_app
from app.widgets import ErrorLine
from app.widgets.charts import CurveChart, LatencyChart, ThroughputChart
from app.widgets.rowtable import RowTable
from tests.tui.helpers import DEVICES, FIXED_PRESETS, fio_for, our_processes, results_shown, wait_for

SIZE = (80, 24)
SMALL = ["runtime=1", "size=16m"]


@pytest.fixture(autouse=True)
def fixed_presets(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PROFILER_TUI_PRESETS", str(FIXED_PRESETS))


async def pick_preset(pilot, name: str) -> None:
    screen = pilot.app.screen
    assert isinstance(screen, PresetsScreen)
    for _ in range(len(screen.presets) + len(screen.errors)):
        if screen._current() == name:
            break
        await pilot.press("down")
    assert screen._current() == name


async def key_latency(app, key: str, handled, timeout: float = 2.0) -> float:
    """Seconds from the terminal driver receiving ``key`` to its effect being visible in the app's state.

    (Pilot.press also waits for animations to finish, which is not what a user perceives as lag.)"""
    from textual import events

    event = events.Key(key, key)
    event.set_sender(app)
    t0 = time.perf_counter()
    app._driver.send_message(event)
    while not handled():
        if time.perf_counter() - t0 > timeout:
            raise AssertionError(f"key {key!r} not handled within {timeout} s")
        await asyncio.sleep(0.002)
    return time.perf_counter() - t0


async def type_into(pilot, selector: str, text: str) -> None:
    """Clear a focused-by-keyboard input and type ``text`` key by key."""
    pilot.app.screen.query_one(selector).focus()
    await pilot.press("end", "ctrl+u", *text)


async def test_quick_preset_end_to_end_with_export(tmp_path: Path) -> None:
    app = create_app(devices=DEVICES, results_dir=tmp_path / "results", overrides=SMALL)
    export_dir = tmp_path / "export"
    async with app.run_test(size=SIZE) as pilot:
        # devices: the test-file row comes first and is highlighted
        await pilot.press("enter")
        await pick_preset(pilot, "quick")
        await pilot.press("enter")
        run = app.screen
        assert isinstance(run, RunScreen)
        await wait_for(pilot, lambda: run.state.finished is not None or run.state.error, 120, "the quick run to finish")
        assert run.state.error is None
        assert run.state.finished is not None
        assert run.state.finished.status == "complete" and run.state.finished.done == 8
        assert len(run.query_one(ThroughputChart).t) >= 8  # at least one live sample per point
        assert len(run.query_one(LatencyChart).t) >= 8
        assert len(run.query_one("#curve-chart", CurveChart).points) == 8

        await pilot.press("r")
        results = await results_shown(pilot)
        assert results.query_one("#results", RowTable).row_count == 8
        await pilot.press("s", "s", "S")  # sort by IOPS, descending
        iops = [r["iops"] for r in sorted(results.records, key=lambda r: -r["iops"])]
        first = results.query_one("#results", RowTable).get_row_at(0)
        assert str(first[2]) == __import__("app.core.units", fromlist=["x"]).format_count(iops[0])

        await pilot.press("e")
        await pilot.press("end", "ctrl+u", *str(export_dir), "enter")
        await wait_for(pilot, lambda: results.exported is not None or "fail" in str(
            results.query_one("#results-status").render()).lower() or "not available" in str(
            results.query_one("#results-status").render()), 120, "the export")
        # an export that failed is a failure, not a skip: app.report is part of every build
        assert results.exported is not None, "export: " + str(results.query_one("#results-status").render())
    report = results.exported
    assert report.parent == export_dir and report.name == "report.md"
    text = report.read_text()
    assert "IOPS" in text and "SEQ1M" in text
    for ref in __import__("re").findall(r"\]\(([^)]+\.(?:svg|png))\)", text):
        assert (report.parent / ref).is_file(), ref
    assert any((export_dir / "plots").iterdir())
    assert (export_dir / "results.csv").is_file()


async def test_custom_sweep_form_validates_saves_and_runs(tmp_path: Path) -> None:
    app = create_app(devices=DEVICES, results_dir=tmp_path / "results", overrides=SMALL)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("p", "c")
        form = app.screen
        assert isinstance(form, CustomSweepScreen)
        # runtime and size come from the app's overrides
        assert form.query_one("#storage-runtime", Input).value == "1"
        await type_into(pilot, "#storage-bs", "4x")
        error = form.query_one("#err-storage-bs", ErrorLine)
        assert "bs" in error.text and error.display
        await pilot.press("ctrl+r")
        assert app.screen is form, "an invalid form must not start a run"
        assert "errors" in form.query_one("#form-status", ErrorLine).text
        assert not (tmp_path / "results").exists()

        await type_into(pilot, "#storage-bs", "4k,64k")
        assert error.text == "" and not error.display
        await type_into(pilot, "#storage-iodepth", "0")
        assert "at least 1" in form.query_one("#err-storage-iodepth", ErrorLine).text
        await type_into(pilot, "#storage-iodepth", "1")
        await pilot.press("ctrl+s")
        assert "name" in form.query_one("#err-name", ErrorLine).text
        await type_into(pilot, "#name", "my-sweep")
        await pilot.press("ctrl+s")
        saved = core.load("my-sweep")
        assert saved.kind == "storage" and [p.bs for p in saved.expand()] == [4096, 65536]
        assert saved.expand()[0].runtime == 1

        await pilot.press("ctrl+r")
        run = app.screen
        assert isinstance(run, RunScreen)
        await wait_for(pilot, lambda: run.state.finished is not None or run.state.error, 60, "the custom run")
        assert run.state.error is None and run.state.finished.status == "complete" and run.state.finished.done == 2
        records = ResultsDir(run.state.path).records()
        assert sorted(r["point"]["bs"] for r in records) == [4096, 65536]

        # the saved preset shows up in the list
        await pilot.press("escape", "escape")
        assert isinstance(app.screen, PresetsScreen)
        assert "my-sweep" in app.screen.presets


async def start_quick_run(pilot: Any) -> Any:
    """From the devices screen: the test file, the quick preset, run; returns the run screen once fio's first
    live sample is drawn."""
    await pilot.press("enter")
    await pick_preset(pilot, "quick")
    await pilot.press("enter")
    run = pilot.app.screen
    await wait_for(pilot, lambda: run.query_one(ThroughputChart).t, 30, "fio's first live sample")
    return run


@pytest.mark.serial  # asserts a key's delay
async def test_cancel_keeps_completed_points_and_keys_stay_fast(tmp_path: Path) -> None:
    app = create_app(devices=DEVICES, results_dir=tmp_path / "results", overrides=["runtime=2", "size=16m"])
    async with app.run_test(size=SIZE) as pilot:
        run = await start_quick_run(pilot)
        assert fio_for(tmp_path), "fio should be running now"

        # (7) a key press is handled promptly while fio runs.  The product target (200 ms) is measured by
        # `make bench-tui`; this asserts 1 s, over 5x the figures measured on a busy 2-core machine
        # (max 36-280 ms, mean 21-75 ms at load average 6), so that only a real stall fails it
        latencies = []
        tabs = run.query_one("#run-tabs")
        for key, tab in [("2", "curve"), ("3", "log"), ("1", "live")] * 4:
            latencies.append(await key_latency(app, key, lambda: tabs.active == tab))
            await asyncio.sleep(0.3)  # let samples and chart redraws interleave with the next press
        print(f"key latency while fio runs: max {max(latencies) * 1000:.0f} ms, "
              f"mean {sum(latencies) / len(latencies) * 1000:.0f} ms over {len(latencies)} presses")
        assert max(latencies) < 1.0, latencies

        # (5) cancel mid-run: asks, stops fio, keeps completed points
        await wait_for(pilot, lambda: run.state.done >= 1 and run.state.current, 30,
                       "a completed point and the next started")
        await pilot.press("c")
        await pilot.press("n")  # "no" keeps running
        assert run.running
        await pilot.press("c", "y")
        await wait_for(pilot, lambda: not run.running, 15, "the run to stop")
        assert run.state.status == "interrupted"
        meta = json.loads((run.state.path / "run.json").read_text())
        records = ResultsDir(run.state.path).records()
        assert meta["status"] == "interrupted"
        assert 1 <= len(records) < 8 and len(records) >= run.state.done - 0
        assert not fio_for(tmp_path) and not our_processes()


async def test_quitting_mid_run_leaves_no_fio(tmp_path: Path) -> None:
    app = create_app(devices=DEVICES, results_dir=tmp_path / "results", overrides=["runtime=5", "size=16m"])
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("enter")
        await pick_preset(pilot, "quick")
        await pilot.press("enter")
        run = app.screen
        await wait_for(pilot, lambda: fio_for(tmp_path), 30, "fio to start")
        await pilot.press("q")
        await pilot.press("y")
        await wait_for(pilot, lambda: not app.is_running, 20, "the app to exit")
    assert not fio_for(tmp_path), fio_for(tmp_path)
    assert not our_processes()
    assert isinstance(run, RunScreen) and run.state.path is not None
    assert json.loads((run.state.path / "run.json").read_text())["status"] == "interrupted"


async def test_a_run_that_cannot_start_shows_the_error_and_the_app_stays(tmp_path: Path) -> None:
    blocker = tmp_path / "not-a-directory"
    blocker.write_text("")
    app = create_app(devices=DEVICES, results_dir=blocker, overrides=SMALL)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("enter")
        await pick_preset(pilot, "custom")
        await pilot.press("enter")
        run = app.screen
        assert isinstance(run, RunScreen)
        await wait_for(pilot, lambda: run.state.error, 30, "the error")
        assert app.is_running and run.state.status == "failed" and not run.running
        assert run.state.error is not None
        assert "not-a-directory" in run.state.error or "Not a directory" in run.state.error
        await pilot.press("escape")
        assert isinstance(app.screen, PresetsScreen)


async def test_custom_form_past_the_point_cap_says_so_and_stays(tmp_path: Path) -> None:
    """A plan over the point cap is refused in the form (one sentence), never a crash, never a run."""
    app = create_app(devices=DEVICES, results_dir=tmp_path / "results", overrides=SMALL)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("p", "c")
        form = app.screen
        assert isinstance(form, CustomSweepScreen)
        # pasted, not typed: a thousand key presses would only slow the test
        form.query_one("#storage-bs", Input).value = ",".join(f"{k}k" for k in range(4, 404, 4))
        form.query_one("#storage-iodepth", Input).value = ",".join(str(i) for i in range(1, 101))
        await type_into(pilot, "#storage-numjobs", "1,2,3,4,5,6,7,8,9,10,11")
        await pilot.pause()
        plan_text = str(form.query_one("#form-plan").render())
        assert "110,000 points" in plan_text and "limit" in plan_text, plan_text
        await pilot.press("ctrl+r")
        assert app.screen is form and not (tmp_path / "results").exists()


async def test_the_live_screen_says_fio_lays_out_the_test_file_before_its_first_sample(tmp_path: Path) -> None:
    """A 1 GiB test file that does not exist yet: fio writes it whole before its first I/O (seconds), and the
    run screen says so, with how much is written, instead of charts sitting at 0; then that fio measures."""
    import re

    app = create_app(devices=DEVICES, results_dir=tmp_path / "results", overrides=["runtime=1", "size=1g"])
    shown: list[tuple[str, int]] = []  # every phase line shown, with the live samples drawn by then
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("p")  # presets on the test file
        await pick_preset(pilot, "custom")
        await pilot.press("enter")
        run = app.screen
        assert isinstance(run, RunScreen)
        phase = run.query_one("#run-phase")
        chart = run.query_one(ThroughputChart)

        def watch() -> bool:
            text = str(phase.render())
            if text and (not shown or shown[-1][0] != text):
                shown.append((text, len(chart.t)))
            return run.state.finished is not None or bool(run.state.error)

        await wait_for(pilot, watch, 120, "the run to finish")
        assert run.state.error is None and run.state.finished is not None and run.state.finished.status == "complete"
        assert str(phase.render()) == "", "no phase once the run is over"
    print("phase lines shown (with the samples drawn by then):", shown)
    layout = [(text, n) for text, n in shown if text.startswith("Laying out")]
    assert layout, shown
    pattern = re.compile(r"Laying out the test file: ([\d.]+) (B|KiB|MiB|GiB) of 1 GiB \((\d+) %\)")
    assert all(pattern.fullmatch(text) and n == 0 for text, n in layout), f"before any sample: {shown}"
    figures = [int(pattern.fullmatch(text).group(3)) for text, _ in layout]  # type: ignore[union-attr]
    assert figures == sorted(figures) and any(0 < f < 100 for f in figures), f"progress in between: {shown}"
    after = [text for text, _ in shown[len(layout):]]
    # then "Measuring", followed by the running interval of IOPS once a sample came in
    assert shown[:len(layout)] == layout and after and after[0].startswith("Measuring"), shown
    assert all(t in ("Measuring", "Measuring  ·  IOPS ± — (needs 10 s)") for t in after), shown  # a 1 s runtime
    assert (tmp_path / "results").exists()
