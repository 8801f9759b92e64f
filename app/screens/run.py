"""The run screen: owns the async worker that iterates ``session.events()`` and renders them.

Leaving the screen or quitting cancels the worker; the runner's ``finally`` stops fio (or the memory
engine) and the session marks the run interrupted, keeping every completed point."""

from __future__ import annotations

import asyncio
import math
import threading
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, AsyncIterator, Callable, ClassVar

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import Screen
from textual.widget import Widget
from textual.widgets import ContentSwitcher, Footer, Header, ProgressBar, RichLog, Static, TabbedContent, TabPane
from textual.worker import Worker, WorkerState

from app.core.sanitize import clean_text
from app.core.units import format_duration, rate_text
from app.engine import sweep
from app.host.container import results_volume_warning, shown_path
from app.model.points import Kind, MemoryPoint, StoragePoint
from app.plan import presets as core
from app.runners.base import Phase, Sample
from app.screens import strings
from app.screens.ascii import AsciiProgressBar
from app.screens.confirm import YesNo
from app.screens.messages import ReadAhead, ShowResults, ShowResultsAhead
from app.screens.prerender import render_when_done
from app.screens.state import RunRequest, app_options, app_sessions
from app.screens.words import tui_words
from app.stats.latmap import sample_hist
from app.stats.summary import (
    DELAY_UNITS,
    SUITE_MODES,
    delay_unit,
    live_interval,
    live_line,
    metrics_line,
    outcome_line,
    point_label,
)
from app.widgets import TooSmall
from app.widgets.charts import BandwidthChart, CurveChart, DelayChart, LatencyChart, ThroughputChart, TimeSeries
from app.widgets.glyphs import ASCII_HOST_MARKERS, ascii_mode, binary_units
from app.widgets.heatmap import LiveHeatMap
from app.widgets.suite import (
    MODE_NAMES,
    C2CPanel,
    MatrixPanel,
    PeakBars,
    ScalingChart,
    SuitePanel,
    WorkingSetChart,
    figure_number,
)

EventSource = Callable[[], AsyncIterator[object]]  # the session's events (app.engine.sweep)
# a line of the run's log: its text, or its text in the app's units (True: MiB/s) for a line with a bandwidth
LogLine = str | Callable[[bool], str]
MAX_LOG = 2000  # lines the Log tab keeps (the live tab's short log the last 200 of them)
def describe_error(error: BaseException | None) -> str:
    """One plain sentence for the user: the core's own message, or the OS error and its file."""
    if error is None:
        return "unknown error"
    if isinstance(error, OSError) and error.strerror:
        return f"{error.strerror}: {error.filename}" if error.filename else error.strerror
    return str(error) or type(error).__name__


def _size(nbytes: float) -> str:
    """Binary units, never rounded up: 412 MiB, 1 GiB, 1.5 GiB (a figure in progress must not read done)."""
    for unit, mult in (("TiB", 1 << 40), ("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if nbytes >= mult:
            value = nbytes / mult
            shown = math.floor(value) if value >= 10 else math.floor(value * 10) / 10
            return f"{shown:g} {unit}"
    return f"{max(0, int(nbytes))} B"


def _seconds(value: float) -> str:
    return f"{math.floor(value + 1e-9):d}" if value >= 1 or value == 0 else f"{value:.1f}"


def phase_text(phase: Phase | None) -> str:
    """What fio is doing, in words: "Laying out the test file: 412 MiB of 1 GiB (40 %)", "Ramp: 2 of 5 s, not
    measured", "Measuring", "Steady-state window: 3 of 5 s" ("" with no phase)."""
    if phase is None:
        return ""
    done, total = phase.done, phase.total
    if phase.phase == "layout" and total:
        if done is None:
            return strings.PHASE_LAYOUT_UNKNOWN.format(total=_size(total))
        return strings.PHASE_LAYOUT.format(done=_size(done), total=_size(total),
                                           percent=math.floor(100 * min(done, total) / total))
    if phase.phase == "ramp" and total:
        return strings.PHASE_RAMP.format(done=_seconds(done or 0), total=f"{total:g}")
    if phase.phase == "steady" and total:
        text = strings.PHASE_PRECONDITION_STEADY if phase.index < 0 else strings.PHASE_STEADY
        return text.format(done=_seconds(done or 0), total=f"{total:g}")
    return strings.PHASE_PRECONDITIONING if phase.index < 0 else strings.PHASE_MEASURING


def fleet_legend(chart: TimeSeries) -> Text:
    """"per host: ● tcp://a:1  ● ssh://b" in the colours of the hosts' lines."""
    text = Text(strings.FLEET_LEGEND_PREFIX, style="bold")
    drawn = chart.drawn_hosts()
    for i, (host, color) in enumerate(drawn):
        # ASCII mode: the character the host's line is drawn with (16 colours may not tell 7 hosts apart)
        mark = ASCII_HOST_MARKERS[i % len(ASCII_HOST_MARKERS)] if ascii_mode(chart) else "●"
        text.append(f" {mark} ", style="rgb({},{},{})".format(*color))
        text.append(host)
    if len(chart.hosts) > len(drawn):
        text.append("  " + strings.FLEET_LEGEND_MORE.format(n=len(chart.hosts) - len(drawn)))
    return text


def panel_modes(preset: core.Preset) -> list[str]:
    """The live panels a memory plan needs, in the order its modes come in the plan: the idle and loaded
    points share the loaded-latency charts.  Read from the preset's axes (cheap: the plan is not expanded)."""
    default = preset.settings.get("mode", preset.keys["mode"].default)
    modes: list[str] = []
    for _, axes in preset.group_axes():
        for mode in axes.get("mode", [default]):
            panel = "loaded" if mode in ("idle", "loaded") else str(mode)
            if panel not in modes:
                modes.append(panel)
    return modes


def suite_panel(mode: str) -> Widget:
    """The live panel of a memory-suite mode (app.stats.summary.SUITE_MODES)."""
    classes = "mem-panel"
    if mode == "working_set":
        return WorkingSetChart(id=f"panel-{mode}", classes=classes)
    if mode == "scaling":
        return ScalingChart(id=f"panel-{mode}", classes=classes)
    if mode == "peak":
        return PeakBars(id=f"panel-{mode}", classes=classes)
    if mode == "c2c":
        return C2CPanel(id=f"panel-{mode}", classes=classes)
    return MatrixPanel(mode, id=f"panel-{mode}", classes=classes)


def panel_bar(modes: list[str], shown: str, measuring: str) -> Text:
    """"● lat matrix  peak  bw matrix  loaded  c2c": the panel shown in reverse video, the mode being measured
    marked ● (the footer says that m shows the next)."""
    text = Text()
    for mode in modes:
        text.append("● " if mode == measuring else "  ", style="bold")
        text.append(MODE_NAMES.get(mode, mode), style="bold reverse" if mode == shown else "")
        text.append(" ")
    return text


def mark_interrupted(session: sweep.Session) -> None:
    """A session that never started its events: run.json goes from ``planned`` to ``interrupted`` and the
    results directory's lock is released."""
    session.mark_interrupted()


MAX_SECONDS = 3600  # samples of one point kept for its running interval (an hour of seconds)


@dataclass
class RunState:
    """What the run screen shows, updated by the run's events (one handler per event type)."""

    total: int = 0
    done: int = 0
    failed: int = 0
    skipped: int = 0
    remaining_s: float = 0.0  # the estimate of the points not yet measured
    point_started: float = 0.0  # clock() when the current point started
    status: str = "starting"  # starting, running, then the run's ending (complete, partial, interrupted, failed)
    path: Path | None = None  # the results directory, once known
    t_offset: float = 0.0  # storage charts: seconds of the points before the current one
    t_last: float = 0.0
    current: str = ""  # the current point's label
    live: str = ""  # its latest figures
    live_sample: dict[str, Any] | None = None  # the sample they are from (written again when the units change)
    finished: sweep.RunFinished | None = None
    error: str | None = None
    events_seen: int = 0
    phase: Phase | None = None  # what fio is doing in the current point (layout, ramp, measuring, steady)
    # the current storage point's samples (its whole seconds give the running interval of its IOPS)
    seconds: deque[dict[str, Any]] = field(default_factory=lambda: deque(maxlen=MAX_SECONDS))
    interval: str = ""  # the running interval of its IOPS (app.stats.summary.live_interval), on the phase line


class RunScreen(Screen[None]):
    BINDINGS = [
        Binding("c", "cancel", "Stop run"),
        Binding("escape", "back", "Back"),
        Binding("r", "results", "Results"),
        Binding("1", "tab('live')", "Live", show=False),
        Binding("2", "tab('curve')", "Curve", show=False),
        Binding("3", "tab('log')", "Log", show=False),
        Binding("4", "tab('heat')", "Heat", show=False),
        Binding("m", "panel", "Panel"),
        Binding("t", "tail", "p99.9"),
    ]

    def __init__(self, request: RunRequest, source: EventSource | None = None) -> None:
        """``source`` replaces the session's events (tests and snapshots feed fixed events)."""
        super().__init__()
        self.request = request
        self.kind: str = request.preset.kind
        self.source = source
        self.session: sweep.Session | None = None
        self.worker: Worker[str] | None = None
        self.state = RunState()
        self.log_lines: deque[tuple[LogLine, bool]] = deque(maxlen=MAX_LOG)
        self._start_lock = threading.Lock()
        self._start_abandoned = False  # the run was stopped while its session was being created
        # a memory plan with the suite's modes: one live panel per mode, the one being measured shown
        modes = panel_modes(request.preset) if self.kind == Kind.MEMORY else []
        self.panels: list[str] = modes if any(m in SUITE_MODES for m in modes) else []
        self.shown_panel = self.measuring = self.panels[0] if self.panels else ""

    # --- layout -------------------------------------------------------------------------------

    def compose(self) -> ComposeResult:
        yield Header(show_clock=False)
        yield TooSmall()
        with Vertical(id="run-body"):
            yield Static(Text(clean_text(strings.RUN_STARTING.format(preset=self.request.preset.name))),
                         id="run-point")
            with Horizontal(id="run-progress"):
                yield (AsciiProgressBar if ascii_mode(self) else ProgressBar)(total=None, show_eta=False, id="progress")
                yield Static("", id="eta")
            if self.kind != Kind.MEMORY:  # what fio is doing (the memory engines report no phases)
                yield Static("", id="run-phase")
            with TabbedContent(initial="live", id="run-tabs"):
                with TabPane("Live 1", id="live"):
                    if self.panels:
                        yield Static(panel_bar(self.panels, self.shown_panel, self.measuring), id="mem-panel-bar")
                        with ContentSwitcher(initial=f"panel-{self.shown_panel}", id="mem-panels"):
                            for mode in self.panels:
                                yield from self.memory_charts() if mode == "loaded" else [suite_panel(mode)]
                    elif self.kind == Kind.MEMORY:
                        yield from self.memory_charts()
                    else:
                        with Horizontal(classes="charts"):
                            yield ThroughputChart(id="throughput")
                            yield BandwidthChart(id="bandwidth")
                            yield LatencyChart(id="latency")
                    if self.fleet:  # the colour of each host's line
                        yield Static(strings.FLEET_LEGEND_WAITING, id="fleet-legend")
                    yield RichLog(id="log-short", max_lines=200, wrap=True, markup=False, min_width=20)
                with TabPane("Curve 2", id="curve"):
                    yield CurveChart(self.kind, id="curve-chart")
                with TabPane("Log 3", id="log"):
                    yield RichLog(id="log-full", max_lines=MAX_LOG, wrap=True, markup=False, min_width=20)
                if self.kind != Kind.MEMORY:  # the point's latency a second, as fio's histograms give it
                    with TabPane("Heat 4", id="heat"):
                        yield LiveHeatMap(id="heatmap")
        yield Footer()

    def memory_charts(self) -> ComposeResult:
        """The loaded-latency charts: the curve and latency against delay."""
        with Horizontal(classes="charts", id="panel-loaded"):
            yield CurveChart("memory", id="curve-live")
            yield DelayChart(id="delay", unit=delay_unit(self.engine))

    def on_mount(self) -> None:
        self.sub_title = f"{self.request.preset.name} — " + (
            self.request.target.display if self.request.target else "memory")
        self.set_interval(app_options(self.app).chart_interval, self.tick)
        self.worker = self.run_session()

    @property
    def fleet(self) -> bool:
        """A fleet run: every point runs on the request's hosts."""
        return self.request.target is not None and self.request.target.fleet

    def points_of(self, total: int) -> int:
        """Plan points of a count of results: a fleet run counts one per host and point."""
        hosts = len(self.request.target.hosts) if self.request.target is not None else 0
        return total // hosts if hosts > 1 else total

    @property
    def clock(self) -> Callable[[], float]:
        return app_options(self.app).clock

    @property
    def running(self) -> bool:
        return self.worker is not None and self.worker.state in (WorkerState.PENDING, WorkerState.RUNNING)

    # --- the worker ---------------------------------------------------------------------------

    def _new_session(self) -> sweep.Session:
        r = self.request
        t = r.target
        if r.resume:  # the run in r.out, its target checked again with the confirmations given now
            return sweep.load_session(r.out, yes=bool(t and t.yes), allow_destructive=bool(t and t.allow_destructive))
        if t is not None and t.fleet:  # every point on each host; new_session judges each host's target there
            from app.fleet.runner import open_fleet

            fleet = open_fleet(list(t.hosts), t.target_values(), t.agent_socket)
            return sweep.new_session(r.preset, target=None, out=r.out, yes=t.yes,
                                     allow_destructive=t.allow_destructive, engine=r.engine, overrides=r.overrides,
                                     fleet=fleet)
        return sweep.new_session(r.preset, target=t.path if t else None, out=r.out, yes=bool(t and t.yes),
                                 allow_destructive=bool(t and t.allow_destructive), engine=r.engine,
                                 overrides=r.overrides, tune_settings=bool(t and t.tune))

    def _start_session(self, sessions: list[sweep.Session]) -> sweep.Session:
        """In a thread: create the session; if the run was stopped meanwhile, its run.json says so."""
        session = self._new_session()
        sessions.append(session)  # the app's list: the exit deadline marks what did not end
        with self._start_lock:
            self.session = session
            abandoned = self._start_abandoned
        if abandoned:
            mark_interrupted(session)
        return session

    @work(exclusive=True, group="run", exit_on_error=False)
    async def run_session(self) -> str:
        if self.source is not None:
            events = self.source()
        else:
            # new_session probes the environment and tool versions (subprocesses): off the event loop.
            # It takes the results directory's lock.  Stopped meanwhile, the thread still finishes;
            # whichever side comes second marks run.json interrupted and releases the lock.
            try:
                session = await asyncio.to_thread(self._start_session, app_sessions(self.app))
            except asyncio.CancelledError:
                with self._start_lock:
                    self._start_abandoned = True
                    started = self.session
                if started is not None:
                    mark_interrupted(started)
                raise
            self.state.path = session.path
            notice = session.runner.notice
            if notice:
                self.log_line(notice)
            lost = await asyncio.to_thread(results_volume_warning, session.path)
            if lost:  # in a container without a /results volume: said before the run starts measuring
                self.log_line(f"Warning: {lost}")
                self.app.notify(lost, title="Results", severity="warning", timeout=15)
            events = session.events()
        try:
            async for event in events:
                self.handle(event)
        finally:
            aclose = getattr(events, "aclose", None)
            if aclose is not None:
                await aclose()  # the run's own clean-up (child stopped, run.json, lock) when we leave early
            if self.session is not None:
                self.session.close()
        return self.state.status

    async def stop(self, timeout: float = 15.0) -> None:
        """Cancel the run and wait until the runner has stopped its child process."""
        worker = self.worker
        if worker is None or not self.running:
            return
        worker.cancel()
        try:
            await asyncio.wait_for(worker.wait(), timeout)
        except Exception:  # WorkerCancelled / WorkerFailed / timeout: the outcome is handled below
            pass

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        """The one place a run's end is reported: finished, cancelled or failed."""
        if event.worker is not self.worker:
            return
        event.stop()
        if event.state in (WorkerState.ERROR, WorkerState.CANCELLED, WorkerState.SUCCESS):
            self.state.phase = None  # fio is no longer doing anything
        if event.state == WorkerState.ERROR:
            self.state.error = describe_error(event.worker.error)
            self.state.status = "failed"
            self.log_line(strings.RUN_ERROR.format(error=self.state.error))
            self.notify(strings.RUN_ERROR.format(error=self.state.error), severity="error", timeout=10)
        elif event.state == WorkerState.CANCELLED:
            self.state.status = "interrupted"
            self.log_line(strings.RUN_CANCELLED.format(done=self.state.done, path=self.state.path or self.request.out))
        elif event.state == WorkerState.SUCCESS and self.state.finished is None:
            self.state.status = "complete" if self.source is None else self.state.status
        if event.state in (WorkerState.SUCCESS, WorkerState.CANCELLED):
            self.render_report()
        self.update_progress()
        self.refresh_bindings()

    def render_report(self) -> None:
        """The run ended: its report rendered now, by a child process, so that the report view opens from it (not
        when the app is quitting, nor for events replayed from a finished run's files, nor without a point
        measured)."""
        path = self.state.path
        quitting: int = getattr(self.app, "exit_code", 0)  # 130: the app is quitting (app.screens.application)
        if self.source is not None or path is None or not self.state.done or quitting:
            return
        render_when_done(path)
        self.post_message(ReadAhead(path))  # its results table too, for `r`
        self.post_message(ShowResultsAhead(path))  # and its screen

    # --- events → state -----------------------------------------------------------------------

    def handle(self, ev: object) -> None:
        """Apply one event of the run to the screen's state (the handler of its type), then redraw."""
        self.state.events_seen += 1
        handler = self.HANDLERS.get(type(ev))
        if handler is not None:
            handler(self, ev)
        self.update_progress()

    def _on_run_started(self, ev: sweep.RunStarted) -> None:
        st = self.state
        st.total, st.done, st.remaining_s = ev.total, ev.total - ev.pending, ev.estimate_s
        st.path = Path(ev.path)
        st.status = "running"
        st.point_started = self.clock()
        for point in getattr(ev.meta, "plan", ()):  # the suite's figures of the plan, pending until measured
            panel = self.suite_panel(point.get("mode")) if isinstance(point, dict) else None
            if panel is not None:
                panel.expect(point)
        self.log_line(strings.RUN_STARTED.format(pending=ev.pending, total=ev.total,
                                                 estimate=format_duration(ev.estimate_s), path=shown_path(ev.path)))

    def _on_point_started(self, ev: sweep.PointStarted) -> None:
        st = self.state
        st.done, st.total, st.remaining_s = ev.done, ev.total, ev.remaining_s
        st.point_started = self.clock()
        st.t_offset = st.t_last
        for chart in self.query(TimeSeries):
            chart.gap()  # the lines of two points are not joined across what runs between them
        st.current = self.label_of(ev.point)
        st.live = st.interval = ""
        st.seconds.clear()
        for heat in self.query(LiveHeatMap):
            heat.clear()
        if self.kind == Kind.MEMORY:
            self.follow(ev.point.to_dict())
        st.phase = None
        self.log_line(strings.RUN_POINT.format(n=ev.index + 1, total=self.points_of(ev.total), label=st.current),
                      short=False)

    def _on_point_done(self, ev: sweep.PointDone) -> None:
        self.state.done = ev.done
        self.state.phase = None
        label = self.label_of(ev.record["point"])
        if ev.record.get("host") is not None:  # a fleet run: one PointDone per host
            label = strings.RUN_FLEET_LABEL.format(label=label, host=ev.record["host"])
        outcome = outcome_line(ev.record)
        n, total, metrics = ev.index + 1, self.points_of(ev.total), ev.record["metrics"]
        self.log_line(lambda binary: strings.RUN_POINT_DONE.format(
            n=n, total=total, label=label, metrics=metrics_line(self.kind, metrics, binary))
            + (strings.RUN_OUTCOME.format(outcome=outcome) if outcome else ""))
        record = dict(ev.record, index=ev.index)
        panel = self.suite_panel(ev.record["point"].get("mode"))
        if panel is not None:  # a memory-suite figure: its panel, not the loaded-latency curve
            panel.add(ev.record["point"], figure_number(ev.record["metrics"]))
            return
        for chart in self.query(CurveChart):
            chart.add_record(record)
        if self.kind == Kind.MEMORY:
            point = ev.record["point"]
            m = ev.record["metrics"]
            if point.get("delay") is not None and m.get("latency_ns") is not None:
                self.query_one(DelayChart).add_point(ev.index, float(point["delay"]), float(m["latency_ns"]))

    def _on_point_failed(self, ev: sweep.PointFailed) -> None:
        self.state.failed += 1
        self.state.phase = None
        label = self.label_of(ev.point)
        if ev.host is not None:
            label = strings.RUN_FLEET_LABEL.format(label=label, host=ev.host)
        self.log_line(strings.RUN_POINT_FAILED.format(n=ev.index + 1, total=self.points_of(self.state.total),
                                                      label=label, error=ev.error))

    def _on_point_skipped(self, ev: sweep.PointSkipped) -> None:
        self.state.skipped += 1
        self.state.total = max(self.state.done, self.state.total - 1)
        self.log_line(strings.RUN_POINT_SKIPPED.format(n=ev.index + 1, label=self.label_of(ev.point),
                                                       reason=ev.reason))

    def _on_precondition_started(self, ev: sweep.PreconditionStarted) -> None:
        st = self.state
        st.current = strings.RUN_PRECONDITION_LABEL.format(mode=ev.mode)
        st.live = ""
        st.phase = None
        st.point_started = self.clock()
        self.log_line(strings.RUN_PRECONDITION.format(mode=ev.mode, description=ev.description,
                                                      estimate=format_duration(ev.estimate_s)))

    def _on_precondition_progress(self, ev: sweep.PreconditionProgress) -> None:
        self.add_sample(Sample(-1, ev.data))

    def _on_precondition_done(self, ev: sweep.PreconditionDone) -> None:
        r = ev.record
        outcome = outcome_line(r)
        self.state.current = ""
        self.state.live = ""
        self.state.phase = None
        self.log_line(lambda binary: strings.RUN_PRECONDITION_DONE.format(
            seconds=format_duration(float(r.get("seconds") or 0)), written=float(r.get("io_bytes") or 0) / 1e9,
            bw=rate_text(float(r.get("bw_bytes") or 0) / 1e6, binary, digits=0),
            outcome=strings.RUN_OUTCOME.format(outcome=outcome) if outcome else ""))

    def _on_run_finished(self, ev: sweep.RunFinished) -> None:
        self.log_line(strings.RUN_FINISHED.format(**self.finish(ev)))

    def finish(self, ev: sweep.RunFinished) -> dict[str, object]:
        """The state of a run that ended (live or replayed); the fields of its closing log line."""
        st = self.state
        st.finished = ev
        st.done, st.total, st.failed, st.status = ev.done, ev.total, ev.failed, ev.status
        st.remaining_s = 0
        st.current = ""
        st.phase = None
        failed = strings.RUN_FAILED_N.format(n=ev.failed) if ev.failed else ""
        if st.skipped:
            failed += strings.RUN_SKIPPED_N.format(n=st.skipped)
        return {"status": ev.status, "done": ev.done, "total": ev.total, "failed": failed}

    def _on_phase(self, ev: Phase) -> None:
        self.state.phase = ev

    def add_sample(self, ev: Sample) -> None:
        d = ev.data
        if self.kind == Kind.MEMORY:
            self.state.live = self.live_of(d)
            if d.get("mode") in SUITE_MODES:  # the suite's figure: its panel (when the plan has one)
                panel = self.suite_panel(d["mode"])
                if panel is not None:
                    panel.add(d, figure_number(d))
                return
            if d.get("bandwidth_mbps") is not None:
                for chart in self.query(CurveChart):
                    chart.add_point(ev.index, float(d["bandwidth_mbps"]), float(d.get("latency_ns") or 0))
            if d.get("delay") is not None and d.get("latency_ns") is not None:
                self.query_one(DelayChart).add_point(ev.index, float(d["delay"]), float(d["latency_ns"]))
            return
        t = self.state.t_offset + float(d.get("t") or 0)
        self.state.t_last = t
        if self.state.phase is not None and self.state.phase.phase == "ramp" and not d.get("iops"):
            d = {**d, "iops": None, "bw_bytes": None}  # fio counts nothing in the ramp: no figure, not zero
        for series in self.query(TimeSeries):  # a fleet host's sample (``host``) is its own line
            series.add_sample(t, d)
        hist = sample_hist(ev.hist) if ev.hist is not None and not d.get("ramp") else None
        if hist:
            for heat in self.query(LiveHeatMap):
                heat.add(hist)
        if d.get("host") is not None:
            return
        self.state.seconds.append(d)
        self.state.live = self.live_of(d)
        if d.get("hosts") is None and not (self.state.phase is not None and self.state.phase.index < 0):
            self.state.interval = live_interval(self.state.seconds)  # a point's (not the fleet's, not a fill's)

    def live_of(self, d: dict[str, Any]) -> str:
        """A sample's live figures in one line, bandwidths in the app's units (kept to write them again)."""
        self.state.live_sample = d
        line = live_line(self.kind, d, binary=binary_units(self))
        if self.kind != Kind.MEMORY and d.get("hosts") is not None:  # the fleet total
            line += strings.RUN_FLEET_HOSTS.format(n=d["hosts"])
        return line

    def units_changed(self) -> None:
        """The units toggle: the live figures and every chart's bandwidth axis in the new unit, now."""
        if self.state.live and self.state.live_sample is not None:
            self.state.live = self.live_of(self.state.live_sample)
        for chart in self.query(".charts > *, #curve-chart, .mem-panel, CurveChart"):
            redraw = getattr(chart, "redraw", None)
            if redraw is not None:
                chart.dirty = True  # type: ignore[attr-defined]  # every widget with redraw() keeps a dirty flag
                redraw()
        self.rewrite_logs()
        self.update_progress()

    HANDLERS: ClassVar[dict[type, Callable[[RunScreen, Any], None]]] = {
        sweep.RunStarted: _on_run_started,
        sweep.PointStarted: _on_point_started,
        Phase: _on_phase,
        Sample: add_sample,
        sweep.PointDone: _on_point_done,
        sweep.PointFailed: _on_point_failed,
        sweep.PointSkipped: _on_point_skipped,
        sweep.PreconditionStarted: _on_precondition_started,
        sweep.PreconditionProgress: _on_precondition_progress,
        sweep.PreconditionDone: _on_precondition_done,
        sweep.RunFinished: _on_run_finished,
    }

    # --- the memory suite's panels -------------------------------------------------------------

    def suite_panel(self, mode: object) -> SuitePanel | None:
        """The live panel of a memory-suite mode; None for another mode, or a plan without that panel."""
        if mode not in SUITE_MODES or mode not in self.panels:
            return None
        panel = self.query_one(f"#panel-{mode}")
        return panel if isinstance(panel, SuitePanel) else None

    def follow(self, point: dict[str, Any]) -> None:
        """A point starts: its figure is the one being measured; a new mode brings its panel into view."""
        mode = point.get("mode")
        panel = self.suite_panel(mode)
        if panel is not None:
            panel.begin(point)
        mode = "loaded" if mode in ("idle", "loaded") else str(mode)
        if mode in self.panels and mode != self.measuring:
            self.measuring = mode
            self.show_panel(mode)

    def show_panel(self, mode: str) -> None:
        self.shown_panel = mode
        self.query_one("#mem-panels", ContentSwitcher).current = f"panel-{mode}"
        self.query_one("#mem-panel-bar", Static).update(panel_bar(self.panels, mode, self.measuring))

    def action_tail(self) -> None:
        """The latency chart's p99.9 line shown or hidden (a memory run has no such chart)."""
        for chart in self.query(LatencyChart):
            chart.toggle_third()

    def action_panel(self) -> None:
        """The next mode's panel (until the next mode starts, which brings its own into view)."""
        if self.panels:
            self.show_panel(self.panels[(self.panels.index(self.shown_panel) + 1) % len(self.panels)])

    # --- rendering ----------------------------------------------------------------------------

    def log_line(self, line: LogLine, short: bool = True) -> None:
        """A line of the run's log; a line with a bandwidth is a function of the units (True: MiB/s), written again
        in the other unit when they change (:meth:`rewrite_logs`): one unit everywhere on screen."""
        self.log_lines.append((line, short))
        self._write_log(line, short)

    def _write_log(self, line: LogLine, short: bool) -> None:
        # wrapped, and a long path folded rather than cut: the resume hint must stay readable; what a line quotes
        # (fio's errors, a replayed run's labels and paths) without control characters or escape sequences
        shown = line if isinstance(line, str) else line(binary_units(self))
        text = Text(clean_text(tui_words(shown), newlines=True), overflow="fold")
        self.query_one("#log-full", RichLog).write(text)
        if short:
            self.query_one("#log-short", RichLog).write(text)

    def rewrite_logs(self) -> None:
        """Both logs written again from their lines, bandwidths in the app's units now."""
        for log in self.query("#log-full, #log-short").results(RichLog):
            log.clear()
        for line, short in self.log_lines:
            self._write_log(line, short)

    def label_of(self, point: object) -> str:
        """A point in a few words (app.stats.summary.point_label); a memory point's injection delay with its unit, the
        engine's own (MLC's units, or the built-in engine's spin steps)."""
        table = point.to_dict() if isinstance(point, (StoragePoint, MemoryPoint)) else point
        engine = table.get("engine") if isinstance(table, dict) else None
        return point_label(self.kind, point, delay_unit(engine or self.engine))  # type: ignore[arg-type]

    @property
    def engine(self) -> str | None:
        """The memory engine the run uses: the session's, else the one asked for (None for auto, not known yet)."""
        runner = getattr(self.session, "runner", None)
        engine = getattr(runner, "engine", None) or self.request.engine
        return engine if engine in DELAY_UNITS else None

    def update_progress(self) -> None:
        bar = self.query_one("#progress", ProgressBar)
        if self.state.total:
            bar.update(total=self.state.total, progress=self.state.done)
        if self.state.finished is not None or self.state.status in ("interrupted", "failed"):
            eta = strings.ETA_DONE.format(done=self.state.done, total=self.state.total, status=self.state.status)
        elif self.state.total:
            left = max(0.0, self.state.remaining_s - (self.clock() - self.state.point_started))
            eta = strings.ETA.format(done=self.state.done, total=self.state.total, eta=format_duration(left))
        else:
            eta = ""
        if eta and self.state.skipped:
            eta += strings.ETA_SKIPPED.format(n=self.state.skipped)
        self.query_one("#eta", Static).update(eta)
        point = (self.state.current + (f"  ·  {self.state.live}" if self.state.live else "")
                 if self.state.current else "")
        if not point and self.state.status not in ("starting",):
            point = self.request.preset.name + f": {self.state.status}"
        if point:
            self.query_one("#run-point", Static).update(Text(clean_text(point)))
        for line in self.query("#run-phase").results(Static):
            phase = phase_text(self.state.phase)
            measuring = self.state.phase is not None and self.state.phase.phase in ("measuring", "steady")
            line.update(phase + strings.PHASE_INTERVAL.format(interval=self.state.interval)
                        if phase and measuring and self.state.interval else phase)

    def tick(self) -> None:
        for chart in self.query(".charts > *, #curve-chart, .mem-panel"):
            redraw = getattr(chart, "redraw", None)
            if redraw is not None:
                redraw()
        self.update_legend()
        self.update_progress()

    def update_legend(self) -> None:
        """A fleet run: the colour of each host's line in the live charts."""
        for legend in self.query("#fleet-legend").results(Static):
            chart = self.query_one(ThroughputChart)
            if chart.hosts:
                legend.update(fleet_legend(chart))

    # --- intents ------------------------------------------------------------------------------

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "cancel":
            return self.running
        if action == "results":
            return not self.running and self.state.path is not None
        if action == "panel":
            return len(self.panels) > 1
        if action == "tail":  # a fleet's live latency is the block layer's mean: it has no percentiles
            return self.kind != Kind.MEMORY and not self.fleet
        return True

    def action_tab(self, tab: str) -> None:
        self.query_one("#run-tabs", TabbedContent).active = tab

    def action_cancel(self) -> None:
        if not self.running:
            return

        def answered(yes: bool | None) -> None:
            if yes:
                self.run_worker(self.stop(), group="stop")

        self.app.push_screen(YesNo(strings.RUN_CONFIRM_CANCEL), answered)

    def action_back(self) -> None:
        if self.running:
            self.action_cancel()
        else:
            self.app.pop_screen()

    def action_results(self) -> None:
        if self.state.path is not None and not self.running:
            self.post_message(ShowResults(self.state.path))
