"""The memory suite's live panels (peak bars, matrices, c2c tables, bandwidth vs threads, the working-set curve)
and its results lines, driven by a fake memory runner through a real session: the sweep's own events, run.json
and results.jsonl, no engine."""

from __future__ import annotations

import asyncio
from pathlib import Path
from types import SimpleNamespace
from typing import Any, AsyncGenerator, Hashable, Sequence

import pytest
from rich.console import Console
from textual.widgets import ContentSwitcher

from app.engine import sweep
from app.model.points import Kind, MemoryPoint, Point
from app.model.records import MemoryMetrics
from app.plan import presets as core
from app.runners.base import Context, Event, Result, Runner, Sample
from app.screens.report import ReportScreen
from app.screens.run import RunScreen
from app.screens.state import RunRequest
from app.tui import create_app
from app.widgets.charts import CurveChart, DelayChart
from app.widgets.suite import C2CPanel, GridPanel, MatrixPanel, PeakBars, ScalingChart, WorkingSetChart
from tests.helpers.typed import as_number
from tests.tui.helpers import DEVICES, forever, results_shown, wait_for

SUITE_PRESETS = Path(__file__).resolve().parent / "data" / "suite"
PEAK = {"R": 211194.2, "W3": 193422.0, "W2": 192554.0, "W5": 185556.1, "W10": 172770.4}


@pytest.fixture(autouse=True)
def suite_presets(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("PROFILER_TUI_PRESETS", str(SUITE_PRESETS))
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("NO_COLOR", raising=False)


def working_set_ns(buffer: int, pages: str | None) -> float:
    """L1 to 32 KiB, L2 to 1 MiB, L3 to 32 MiB, then DRAM (4k pages: slower beyond L2, TLB misses)."""
    steps = ((32 << 10, 1.25), (1 << 20, 4.5), (32 << 20, 15.0), (1 << 62, 90.0))
    ns = next(v for size, v in steps if buffer <= size)
    return ns * (1.3 if pages == "4k" and buffer > 1 << 20 else 1.0)


def figure(point: MemoryPoint) -> tuple[dict[str, Any], MemoryMetrics]:
    """The live sample (design of the runner's Sample data) and the metrics the fake engine measures."""
    keys = {"mode": point.mode, "engine": "builtin", "traffic": point.traffic, "threads": point.threads,
            "cpu_node": point.cpu_node, "mem_node": point.mem_node, "reader_node": point.reader_node,
            "home": point.home, "c2c": point.c2c, "buffer_bytes": point.buffer, "pages": point.pages}
    if point.mode == "latency_matrix":
        lat = 90.2 if point.cpu_node == point.mem_node else 144.3
    elif point.mode == "c2c":
        lat = {"hit": 50.5, "hitm": 49.9}[str(point.c2c)] if point.reader_node is None else (
            114.0 if point.home == "writer" else 123.2 + as_number(point.cpu_node))
    elif point.mode == "working_set":
        lat = working_set_ns(point.buffer or 0, point.pages)
    elif point.mode == "loaded":
        lat, bw = 80.0 + 400.0 / (1 + (point.delay or 0) / 100), 60000.0 / (1 + (point.delay or 0) / 300)
        return {"delay": point.delay, "latency_ns": lat, "bandwidth_mbps": bw}, MemoryMetrics(lat, bw)
    else:
        bw = (PEAK[str(point.traffic)] if point.mode == "peak" else 28123.4 * (point.threads or 1)
              if point.mode == "scaling" else 104362.2 if point.cpu_node == point.mem_node else 34290.6)
        return {**keys, "bandwidth_mbps": bw}, MemoryMetrics(bandwidth_mbps=bw)
    return {**keys, "latency_ns": lat}, MemoryMetrics(latency_ns=lat)


class FakeMemoryRunner(Runner):
    """One batch per mode (one engine invocation, as the engine measures a matrix), a sample then a result per
    figure, a short pause between figures so the screen sees them arrive one by one."""

    kind = Kind.MEMORY

    def __init__(self, pause: float = 0.02) -> None:
        self.pause = pause

    def batch_key(self, point: Point) -> Hashable:
        return getattr(point, "mode", None)

    def tool_versions(self) -> dict[str, str]:
        return {"memory_engine": "builtin", "memlat": "fake"}

    async def run(self, items: list[tuple[int, Point]], ctx: Context) -> AsyncGenerator[Event, None]:
        for index, point in items:
            assert isinstance(point, MemoryPoint)
            await asyncio.sleep(self.pause)
            data, metrics = figure(point)
            yield Sample(index, data)
            yield Result(index, metrics)


def suite_run(preset: str) -> RunScreen:
    return RunScreen(RunRequest(core.load(preset), None, Path("results") / preset, engine="builtin"))


def text_of(panel: Any) -> str:
    """What a rich panel shows, as plain text (100 columns)."""
    console = Console(width=100, record=True, color_system=None)
    console.print(panel.renderable() if isinstance(panel, GridPanel) else panel.render())
    return console.export_text()


async def test_each_mode_fills_its_panel_as_figures_arrive(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sweep, "get_runner", lambda kind, engine: FakeMemoryRunner())
    app = create_app(devices=DEVICES, results_dir="results", clock=lambda: 0.0)
    async with app.run_test(size=(100, 30)) as pilot:
        run = suite_run("mem-suite")
        assert run.panels == ["latency_matrix", "peak", "bandwidth_matrix", "loaded", "c2c", "scaling", "working_set"]
        shown = [run.shown_panel]  # the panels brought into view, in order
        counts: dict[str, dict[str, int]] = {}  # when each came into view: the figures each panel held
        show_panel = run.show_panel

        def spy(mode: str) -> None:
            shown.append(mode)
            counts[mode] = {m: len(panel.measured()) for m in run.panels if (panel := run.suite_panel(m))}
            show_panel(mode)

        run.show_panel = spy  # type: ignore[method-assign]
        app.push_screen(run)
        await wait_for(pilot, lambda: run.state.finished is not None or run.state.error is not None, 20,
                       "the fake memory run")
        assert run.state.finished is not None
        assert run.state.error is None and run.state.finished.status == "complete", run.state
        # the panel in view followed the mode being measured, in the plan's order
        assert shown == run.panels, shown
        # each panel filled while its mode ran: full when the next mode began, the later ones still empty
        assert counts["peak"] == {"latency_matrix": 4, "peak": 0, "bandwidth_matrix": 0, "c2c": 0, "scaling": 0,
                                  "working_set": 0}
        assert counts["loaded"]["bandwidth_matrix"] == 4 and counts["loaded"]["c2c"] == 0
        assert counts["working_set"] == {"latency_matrix": 4, "peak": 5, "bandwidth_matrix": 4, "c2c": 6,
                                         "scaling": 2, "working_set": 0}
        run.tick()

        lat = run.query_one("#panel-latency_matrix", MatrixPanel)
        assert lat.measured() == {("2m", 0, 0): 90.2, ("2m", 0, 1): 144.3, ("2m", 1, 0): 144.3, ("2m", 1, 1): 90.2}
        text = text_of(lat)
        assert "cpu 0" in text and "mem 1" in text and "144.3" in text and "…" not in text

        bars = run.query_one(PeakBars)
        assert [(label, value) for label, value in bars.rows()] == list(PEAK.items())  # MLC's order
        text = text_of(bars)
        for label in ("ALL Reads", "3:1", "2:1", "1:1", "Triad", "211194.2", "172770.4"):
            assert label in text

        bw = run.query_one("#panel-bandwidth_matrix", MatrixPanel)
        assert bw.measured()[("R", 0, 1)] == 34290.6 and len(bw.measured()) == 4
        assert "ALL Reads traffic" in text_of(bw)

        c2c = run.query_one(C2CPanel)
        assert c2c.measured() == {("local", "local", "HIT"): 50.5, ("local", "local", "HITM"): 49.9,
                                  (("hitm", "writer"), 0, 1): 114.0, (("hitm", "reader"), 0, 1): 123.2,
                                  (("hitm", "writer"), 1, 0): 114.0, (("hitm", "reader"), 1, 0): 124.2}
        text = text_of(c2c)
        assert "remote HITM, homed at writer" in text and "remote HITM, homed at reader" in text
        assert "124.2" in text and "-" in text  # a writer's own node is no remote figure

        scaling = run.query_one(ScalingChart)
        assert scaling.measured() == {("R", 1): 28123.4, ("R", 2): 56246.8}

        ws = run.query_one(WorkingSetChart)
        assert ws.series() == {"2m": [(b, working_set_ns(b, None)) for b in
                                      (4 << 10, 16 << 10, 64 << 10, 256 << 10, 1 << 20, 4 << 20, 16 << 20, 64 << 20)]}

        # the loaded-latency charts hold the three loaded points only, none of the suite's figures
        assert len(run.query_one("#curve-live", CurveChart).points) == 3
        assert len(run.query_one("#curve-chart", CurveChart).points) == 3
        assert len(run.query_one(DelayChart).points) == 3

        # m shows the next panel; the footer offers it
        await pilot.press("m")
        assert run.shown_panel == "latency_matrix"
        assert run.query_one("#mem-panels", ContentSwitcher).current == "panel-latency_matrix"

        # the results view: each figure with its mode and keys
        await pilot.press("r")
        results = await results_shown(pilot, 10, "the results screen")
        table = results.query_one("#results")
        rows = [[str(c) for c in table.get_row_at(i)] for i in range(table.row_count)]
        assert len(rows) == 32
        shown_rows = {" ".join(r[1:3]) for r in rows}
        for line in ("latency_matrix cpu 0 → mem 1", "peak ALL Reads", "peak Triad", "bandwidth_matrix R cpu 1 → mem 0",
                     "c2c HIT local", "c2c HITM writer 1 → reader 0, line homed at the reader", "scaling R 2 threads",
                     "working_set 64 KiB (2m pages)", "loaded R stride 64 delay 1000"):
            assert line in shown_rows, (line, sorted(shown_rows))
        assert ["2", "latency_matrix", "cpu 0 → mem 1", "144.3", "-"] == rows[1]
        assert ["5", "peak", "ALL Reads", "-", "211194.2"] == rows[4]

        # the report view shows the report.md the report renders of these lines
        await pilot.press("v")
        report = await wait_for(pilot, lambda: isinstance(app.screen, ReportScreen) and app.screen, 10, "the report")
        await wait_for(pilot, lambda: report.loaded is not None or "failed" in str(
            report.query_one("#report-status").render()), 60, "the report to render")
        assert report.loaded is not None, report.query_one("#report-status").render()
        assert "144.3" in report.loaded.markdown and "211194.2" in report.loaded.markdown


# --- fixed events: pending cells, and the snapshots ------------------------------------------------------------


def plan_of(preset: str) -> list[MemoryPoint]:
    return [p for p in core.load(preset).expand() if isinstance(p, MemoryPoint)]


def suite_events(plan: Sequence[MemoryPoint], measured: int) -> list[Any]:
    """The session's events of a run whose first ``measured`` figures are done and the next one is measuring;
    run.json's plan is given (its figures show pending)."""
    meta = SimpleNamespace(plan=tuple(p.to_dict() for p in plan))
    events: list[Any] = [sweep.RunStarted(len(plan), len(plan), 1.0 * len(plan), meta, Path("results/suite"))]  # type: ignore[arg-type]
    for i, point in enumerate(plan[:measured + 1]):
        events.append(sweep.PointStarted(i, point, i, len(plan), 1.0 * (len(plan) - i)))
        if i == measured:
            break
        data, metrics = figure(point)
        events.append(Sample(i, data))
        events.append(sweep.PointDone(i, {"kind": "memory", "index": i, "point": point.to_dict(),
                                          "metrics": metrics.json()}, i + 1, len(plan)))
    return events


def fixed_run(preset: str, events: list[Any]) -> RunScreen:
    async def source() -> Any:
        for ev in events:
            yield ev
        await forever()

    return RunScreen(RunRequest(core.load(preset), None, Path("results/suite")), source=source)


async def show(pilot: Any, screen: RunScreen, n_events: int) -> None:
    pilot.app.push_screen(screen)
    await wait_for(pilot, lambda: screen.state.events_seen == n_events, 10, "the fixed events")
    screen.tick()
    await pilot.pause()


async def test_matrix_cells_pending_until_measured() -> None:
    plan = plan_of("mem-matrix")
    events = suite_events(plan, measured=6)
    app = create_app(devices=DEVICES, results_dir="results", clock=lambda: 0.0)
    async with app.run_test(size=(80, 24)) as pilot:
        run = fixed_run("mem-matrix", events)
        await show(pilot, run, len(events))
        lat = run.query_one("#panel-latency_matrix", MatrixPanel)
        assert len(lat.figures.values) == 16 and len(lat.measured()) == 6 and lat.current == ("2m", 1, 2)
        text = text_of(lat)
        assert text.count("…") == 10 and "cpu 3" in text and "mem 3" in text
        bw = run.query_one("#panel-bandwidth_matrix", MatrixPanel)
        assert len(bw.figures.values) == 16 and not bw.measured()  # the plan's cells, all pending
        assert run.shown_panel == "latency_matrix"


SIZES = {"80x24": (80, 24), "120x36": (120, 36)}


@pytest.mark.parametrize("size", list(SIZES))
def test_snapshot_working_set_live(snap_compare, size: str) -> None:
    plan = plan_of("mem-ws")
    events = suite_events(plan, measured=50)  # the 2m curve done, the 4k one up to 256 KiB

    async def before(pilot: Any) -> None:
        await show(pilot, fixed_run("mem-ws", events), len(events))

    assert snap_compare(create_app(devices=DEVICES, results_dir="results", clock=lambda: 0.0), run_before=before,
                        terminal_size=SIZES[size])


@pytest.mark.parametrize("size", list(SIZES))
def test_snapshot_matrix_filling_in(snap_compare, size: str) -> None:
    plan = plan_of("mem-matrix")
    events = suite_events(plan, measured=6)

    async def before(pilot: Any) -> None:
        await show(pilot, fixed_run("mem-matrix", events), len(events))

    assert snap_compare(create_app(devices=DEVICES, results_dir="results", clock=lambda: 0.0), run_before=before,
                        terminal_size=SIZES[size])
