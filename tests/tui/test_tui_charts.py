"""The report's Curves tab and the live charts, driven with Pilot: what scrolls from the keyboard, what
each tick label says, and that a gap in the data is never drawn as zero."""

from __future__ import annotations

import re
import shutil
from pathlib import Path
from typing import Any

import pytest
from textual.containers import VerticalScroll
from textual.widgets import RichLog

from app.engine import sweep
from app.plan import presets as core
from app.runners.base import Phase, Sample
from app.screens.report import ReportScreen
from app.screens.run import RunScreen
from app.screens.state import RunRequest, TargetChoice
from app.tui import create_app
from app.widgets.charts import LatencyChart, TimeSeries
from app.widgets.reportdoc import ReportViewer
from app.widgets.series import SeriesPlot
from tests.tui.helpers import DEVICES, FIXED_PRESETS, NO_META, chart_text, forever, wait_for

REPORT_DATA = Path(__file__).resolve().parents[1] / "data" / "report"
# a number with nothing after it but the next label or the line's end: a tick that does not say its unit
BARE = re.compile(r"(?<![\w.])\d+(?:\.\d+)?[kM]?(?=$| +\d| {2,})")


def tick_labels(plot_text: str) -> tuple[list[str], str]:
    """The y tick labels (left of "┤") and the x labels' line (the line under the "└" frame)."""
    lines = plot_text.splitlines()
    ys = [line.split("┤")[0].strip() for line in lines if "┤" in line.split("│")[0]]
    bottom = next(i for i, line in enumerate(lines) if "└" in line)
    return ys, lines[bottom + 1].strip() if bottom + 1 < len(lines) else ""


@pytest.fixture(scope="module")
def golden_rendered(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The golden run with its report rendered once for the module: the tests here look at how the report is
    shown, and rendering it cost each of them seconds (tests/tui/test_tui_runs.py covers rendering when missing)."""
    from app.report import render_report

    run = tmp_path_factory.mktemp("golden-rendered") / "golden"
    shutil.copytree(REPORT_DATA / "golden-run", run)
    render_report(run)
    return run


@pytest.fixture
def golden(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, golden_rendered: Path) -> Path:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("PROFILER_TUI_RESULTS", raising=False)
    shutil.copytree(golden_rendered, tmp_path / "results" / "golden")  # copy2 keeps report.md newer: not stale
    return Path("results/golden")


async def open_report(pilot, path: Path) -> ReportScreen:
    pilot.app.push_screen(ReportScreen(path))
    screen = await wait_for(pilot, lambda: isinstance(pilot.app.screen, ReportScreen) and pilot.app.screen.loaded
                            and pilot.app.screen, 60, "the report")
    await pilot.pause(0.2)
    return screen


async def test_curves_scroll_to_their_end_at_80x24_and_every_tick_says_its_unit(golden: Path) -> None:
    app = create_app(devices=[], results_dir="results", clock=lambda: 0.0)
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await open_report(pilot, golden)
        await pilot.press("2")
        box = screen.query_one("#report-plots", VerticalScroll)
        await wait_for(pilot, lambda: app.focused is box, 5, "the curves to take the keys")
        assert box.max_scroll_y > 0  # three plots do not fit in 19 rows: the test needs a scroll
        await pilot.press("down")
        assert box.scroll_y == 1
        await pilot.press("pagedown", "space")
        assert box.scroll_y > 1 + box.size.height
        await pilot.press("end")
        await pilot.pause(0.1)
        assert box.scroll_y == box.max_scroll_y
        plots = list(screen.query(SeriesPlot))
        assert len(plots) == 3
        shown = range(round(box.scroll_y), round(box.scroll_y) + box.scrollable_content_region.height + 1)
        last = box.children[-1]  # the last plot's legend
        assert last.virtual_region.y in shown and last.virtual_region.bottom in shown
        assert plots[-1].virtual_region.y in shown  # the last plot, whole, above it
        for plot in plots:
            ys, xs = tick_labels(chart_text(plot))
            assert len(ys) >= 2 and xs, (plot.title_text, chart_text(plot))
            for label in ys:
                assert not BARE.fullmatch(label), (plot.title_text, label)
            assert not BARE.search(xs), (plot.title_text, xs)
        queue_depth = chart_text(plots[1])
        assert "IOPS┤" in queue_depth and " in flight" in queue_depth


async def test_report_text_pages_down_after_switching_to_the_curves_and_back(golden: Path) -> None:
    app = create_app(devices=[], results_dir="results", clock=lambda: 0.0)
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await open_report(pilot, golden)
        await pilot.press("2")
        await pilot.pause(0.1)
        await pilot.press("1")
        await pilot.pause(0.1)
        viewer = screen.query_one("#report-md", ReportViewer).document
        await pilot.press("pagedown")
        await pilot.pause(0.1)
        assert viewer.scroll_y > 0


# --- live charts ------------------------------------------------------------------------------------


def live_events(plan: list[Any]) -> list[Any]:
    """Two points: the first measured for 4 s with one interval that completed no I/O (no latency); the
    second ramps for 2 s (fio counts nothing: 0 IOPS, no latency) and then measures for 4 s."""
    total = len(plan)
    events: list[Any] = [sweep.RunStarted(total, total, 10.0, NO_META, Path("results/live")),
                         sweep.PointStarted(0, plan[0], 0, total, 10.0), Phase(0, "measuring")]

    def sample(index: int, t: float, iops: float, lat_us: float | None) -> Sample:
        lat = None if lat_us is None else lat_us * 1e3
        return Sample(index, {"t": t, "iops": iops, "bw_bytes": iops * 4096,
                              "lat_mean_ns": lat, "lat_p99_ns": None if lat is None else lat * 3,
                              "lat_p99_9_ns": None if lat is None else lat * 10})

    events += [sample(0, 1, 21000, 180), sample(0, 2, 22000, 175), sample(0, 3, 23500, None),
               sample(0, 4, 22500, 178)]
    events += [sweep.PointStarted(1, plan[1], 1, total, 6.0), Phase(1, "ramp", 0.0, 2.0),
               sample(1, 1, 0, None), sample(1, 2, 0, None), Phase(1, "measuring")]
    events += [sample(1, t, 30000 + 500 * t, 120 + t) for t in (3, 4, 5, 6)]
    return events


def screen_rows(app) -> list[str]:
    return [strip.text for strip in app.screen._compositor.render_strips()]


async def live_run(app, pilot, events: list[Any]) -> RunScreen:
    preset = core.apply_overrides(core.load("quick"), ["runtime=1", "size=16m"])

    async def source():
        for ev in events:
            yield ev
        await forever()

    screen = RunScreen(RunRequest(preset, TargetChoice.test_file(Path("results")), Path("results/live")),
                       source=source)
    app.push_screen(screen)
    await wait_for(pilot, lambda: screen.state.events_seen == len(events), 10, "the fake events")
    screen.tick()
    await pilot.pause()
    return screen


@pytest.mark.parametrize("size", [(80, 24), (120, 40)])
async def test_live_charts_draw_gaps_as_gaps_and_their_labels_never_touch(size, tmp_path: Path,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PROFILER_TUI_PRESETS", str(FIXED_PRESETS))
    monkeypatch.chdir(tmp_path)
    plan = core.apply_overrides(core.load("quick"), ["runtime=1", "size=16m"]).expand()
    app = create_app(devices=DEVICES, results_dir="results", clock=lambda: 0.0)
    async with app.run_test(size=size) as pilot:
        screen = await live_run(app, pilot, live_events(plan))
        charts = list(screen.query(TimeSeries))
        assert len(charts) >= 2
        for chart in charts:
            text = chart_text(chart)
            labels = [line.split("┤")[0].strip() for line in text.splitlines() if "┤" in line]
            # a gap drawn as zero would stretch the axis down to a "0/s", "0MB/s" or "0µs" label
            assert labels and not any(re.fullmatch(r"0\D*", label) for label in labels), (chart.id, text)
            if size == (120, 40):  # a tall chart: more than one label on its axis
                assert len(labels) >= 2, (chart.id, text)
            inside = [line.split("│" if "│" in line else "┤", 1)[-1] for line in text.splitlines()
                      if ("│" in line or "┤" in line) and "┌" not in line and "└" not in line]
            assert not any(re.search(r"[A-Za-z⅃]", line) for line in inside), (chart.id, text)  # no legend on the data
        for row in screen_rows(app):
            words = row.split()
            for before, label in zip(words, words[1:]):
                if label.endswith("┤"):  # a y label: what precedes it is no other chart's label
                    assert not re.search(r"\d", before), row


def _top_label_us(chart: LatencyChart) -> float:
    """The largest y tick label of a latency chart, in µs."""
    scale = {"ns": 1e-3, "µs": 1.0, "ms": 1e3, "s": 1e6}
    labels = [line.split("┤")[0].strip() for line in chart_text(chart).splitlines() if "┤" in line]
    values = [float(m[1]) * scale[m[2]] for x in labels if (m := re.fullmatch(r"([\d.]+)(ns|µs|ms|s)", x))]
    assert values, chart_text(chart)
    return max(values)


def _quick_app(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[list[Any], Any]:
    """quick's plan (1 s points) and an app to play it on, in ``tmp_path`` with the fixed presets."""
    monkeypatch.setenv("PROFILER_TUI_PRESETS", str(FIXED_PRESETS))
    monkeypatch.chdir(tmp_path)
    plan = core.apply_overrides(core.load("quick"), ["runtime=1", "size=16m"]).expand()
    return plan, create_app(devices=DEVICES, results_dir="results", clock=lambda: 0.0)


async def test_t_shows_p99_and_p99_9_with_their_history_and_back(tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    plan, app = _quick_app(tmp_path, monkeypatch)
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await live_run(app, pilot, live_events(plan))
        chart = screen.query_one(LatencyChart)
        assert chart.title == "mean blue, p99 green" and _top_label_us(chart) < 1000  # p99 tops at 3 × 180 µs
        # kept while hidden, with the interval without I/O a gap (None), not a zero
        assert list(chart.c)[:4] == [1800.0, 1750.0, None, 1780.0]
        await pilot.press("t")
        await pilot.pause()
        assert chart.title == "p99 green, p99.9 red"  # the tail view: mean gives way, so the legend fits
        assert _top_label_us(chart) >= 1500  # the axis now reaches p99.9 (10 × 180 µs)
        assert "p99 green, p99.9 red" in "\n".join(screen_rows(app))  # the title, the legend, is on screen
        await pilot.press("t")
        await pilot.pause()
        assert chart.title == "mean blue, p99 green" and _top_label_us(chart) < 1000


def test_a_series_with_gaps_is_drawn_in_segments() -> None:
    from app.widgets.charts import segments

    assert segments([1, 2, 3, 4, 5, 6], [1.0, None, 3.0, 4.0, None, None]) == [([1], [1.0]), ([3, 4], [3.0, 4.0])]
    assert segments([], []) == []


async def test_the_run_log_names_the_host_folder_of_a_containers_results(tmp_path: Path,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    from app.host import container

    monkeypatch.setenv("PROFILER_TUI_PRESETS", str(FIXED_PRESETS))
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PROFILER_TUI_RESULTS", "/results")
    monkeypatch.setenv(container.HOST_RESULTS_ENV, "/home/me/results")
    monkeypatch.setattr(container, "container_engine", lambda root="/": "docker")
    plan = core.apply_overrides(core.load("quick"), ["runtime=1", "size=16m"]).expand()
    events = [sweep.RunStarted(len(plan), len(plan), 10.0, NO_META, Path("/results/quick-1"))]
    app = create_app(devices=DEVICES, results_dir="results", clock=lambda: 0.0)
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await live_run(app, pilot, events)
        lines = screen.query_one("#log-short", RichLog).lines
        log = " ".join(" ".join(str(line.text) for line in lines).split())  # unwrapped
        assert "/results/quick-1 (on the host: /home/me/results/quick-1)" in log


async def test_with_no_color_the_lines_are_told_apart_by_their_markers(tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """NO_COLOR draws every line grey: "mean blue, p99 green" named two identical lines."""
    monkeypatch.setenv("NO_COLOR", "1")  # before the app is made: Textual reads it then
    plan, app = _quick_app(tmp_path, monkeypatch)
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await live_run(app, pilot, live_events(plan))
        chart = screen.query_one(LatencyChart)
        assert chart.title == "mean *, p99 +"
        text = chart_text(chart)
        assert "*" in text and "+" in text  # each line drawn with the marker its name says
