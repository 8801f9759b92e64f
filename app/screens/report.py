"""The report inside the TUI: report.md in a Markdown viewer with its table of contents (each figure a line naming
its number and SVG), the report's figures as pictures (the Figures tab, app.widgets.figure), and its curves drawn
in the terminal from the same results (latency–throughput and IOPS against queue depth; memory's loaded-latency
curve)."""

from __future__ import annotations

import os
import re
import stat
import time
import weakref
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.text import Text
from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.screen import Screen
from textual.widgets import Header, Static, TabbedContent, TabPane, Tree
from textual.worker import Worker, WorkerState

from app.core.errors import UsageError
from app.core.sanitize import clean_text
from app.screens import strings
from app.screens.prerender import render_when_done, wait_rendered
from app.store.results import file_stamp
from app.widgets import KeysFooter, TooSmall
from app.widgets.figure import FigureView
from app.widgets.reportdoc import Block, ReportViewer, blocks_of
from app.widgets.series import BYTES, Series, SeriesPlot, legend

if TYPE_CHECKING:
    from textual.timer import Timer

    from app.report.data.model import MemoryRow

FIGURE = re.compile(r"^!\[([^\]]*)\]\(([^)]+)\)\s*$")

TOC_WIDTH = 120  # the terminal columns from which the contents are shown beside the report


@dataclass
class Curves:
    latency_throughput: list[Series] = field(default_factory=list)  # IOPS → mean latency µs, per workload
    queue_depth: list[Series] = field(default_factory=list)  # outstanding I/Os → IOPS, per workload
    memory: list[Series] = field(default_factory=list)  # MB/s → latency ns, per traffic/stride
    working_set: list[Series] = field(default_factory=list)  # buffer bytes → idle latency ns, per page size
    # offered IOPS → mean latency µs, per workload: the open-loop points whose loop stayed open
    open_loop: list[Series] = field(default_factory=list)


@dataclass
class Loaded:
    markdown: str
    curves: Curves
    plots: Path
    blocks: list[Block] = field(default_factory=list)  # the markdown's, parsed (app.widgets.reportdoc)
    stamp: tuple[int, int, int] | None = None  # report.md's identity when it was read (_stamp)


def _stale(path: Path) -> bool:
    """report.md missing, or older than what it is made from.  A report.md that is no regular file (a symbolic
    link, a FIFO, a device) is not written over: its reader (app.store.runs.read_report) refuses it with a sentence."""
    try:
        st = (path / "report.md").lstat()
    except OSError:
        return True
    if not stat.S_ISREG(st.st_mode):
        return False
    made = st.st_mtime
    for name in ("run.json", "results.jsonl"):
        try:
            if (path / name).stat().st_mtime > made:
                return True
        except OSError:
            pass
    return False


def terminal_markdown(text: str, base: Path) -> str:
    """The report's markdown with each figure line replaced by a line naming its number (as the Figures tab counts
    them) and the SVG's path."""
    out = []
    n = 0
    for line in text.splitlines():
        m = FIGURE.match(line)
        if m:
            target = m.group(2)
            path = target if os.path.isabs(target) else str(base / target)
            n += 1
            out.append(strings.REPORT_FIGURE.format(n=n, title=m.group(1) or "figure", path=path))
        else:
            out.append(line)
    return "\n".join(out) + "\n"


def curves_of(path: Path) -> Curves:
    from app.report.compute import analysis
    from app.report.data.model import load
    from app.report.sections import open_loop, procedure

    data = load(path)
    views = procedure.storage_views(data.storage)
    main = views.main
    out = Curves()
    for oc in open_loop.open_curves(views.opened, main):
        valid = oc.valid
        if len(valid) >= 2:
            out.open_loop.append(Series(clean_text(oc.label), [p.offered for p in valid],
                                        [p.r_mean / 1e3 for p in valid]))
    for c in analysis.storage_curves(main):
        if len(c.points) < 2:
            continue
        label = clean_text(c.label)  # a preset group's label, from the results: shown in the legend
        out.latency_throughput.append(Series(label, [p.iops for p in c.points], [p.lat_mean / 1e3 for p in c.points]))
        out.queue_depth.append(Series(label, [float(p.inflight) for p in c.points], [p.iops for p in c.points]))
    for mc in analysis.memory_curves(data.memory):
        pts = [(p.bandwidth, p.latency) for p in mc.points if p.bandwidth is not None and p.latency is not None]
        if len(pts) >= 2:
            out.memory.append(Series(clean_text(mc.label), [float(x) for x, _ in pts], [float(y) for _, y in pts]))
    out.working_set = working_set_curves(data.memory)
    return out


def working_set_curves(points: list[MemoryRow]) -> list[Series]:
    """The working-set curves (idle latency against buffer size) as the report's figure groups them: one per engine,
    page size and source, each with at least two sizes."""
    from app.report.sections import suite

    rows = [p for p in points if p.mode == "working_set"]
    grouped = suite.groups(rows)
    out = []
    for (engine, pages, *_), pts in grouped.items():
        curve = suite.curve(pts)
        if len(curve) < 2:
            continue
        label = suite.page_words(pages) + (f", {engine}" if len({k[0] for k in grouped}) > 1 else "")
        out.append(Series(clean_text(label), [float(b) for b, _ in curve], [float(ns) for _, ns in curve]))
    return out


def load_report(path: Path) -> Loaded:
    """In a thread: report.md (rendered first when missing or stale; a run's is rendered when it ends, and read
    here once that rendering is done) and the curves.  The directory must be one
    no other user can change, and report.md is read bounded, never through a link or from a FIFO or device, its
    text cleaned (app.store.runs.read_report): nothing here can make the thread wait, so quitting never waits on it.
    UsageError, one sentence, otherwise."""
    from app.store.runs import read_report, view_problem

    problem = view_problem(path)
    if problem:
        raise UsageError(problem)
    wait_rendered(path)  # the rendering started when the run ended (app.screens.prerender), if any
    if _stale(path):  # a run of another session, or changed since: rendered now, by a child process too (a
        render_when_done(path)  # rendering here would hold the interpreter's lock for seconds: no key would answer)
        wait_rendered(path)
    if _stale(path):  # the child failed: rendered here, for the error's own sentence
        from app.report import render_report

        render_report(path)
    stamp = _stamp(path)
    text = read_report(path)
    markdown = terminal_markdown(text, path)
    return Loaded(markdown, curves_of(path), path / "plots", blocks_of(path / "report.md", markdown), stamp)


def load_before(path: Path) -> tuple[str, list[Block]] | None:
    """In a thread, beside :func:`load_report`: report.md as it is while it is stale (the run changed since it was
    rendered: resumed, imported into), read as load_report reads it, to be shown until the new one is rendered;
    None when there is none (or it is current: load_report shows it)."""
    from app.store.runs import read_report, view_problem

    if view_problem(path) or not _stale(path) or not (path / "report.md").exists():
        return None
    markdown = terminal_markdown(read_report(path), path)
    return markdown, blocks_of(path / "report.md", markdown)


class CurvesScroll(VerticalScroll):
    """The Curves tab: scrolls from the keyboard like the report text (space pages down as in a pager)."""

    BINDINGS = [Binding("space", "page_down", "Page Down", show=False)]


def _stamp(path: Path) -> tuple[int, int, int] | None:
    """report.md's identity (app.store.results.file_stamp, the link itself): a view made from it is current while it
    holds."""
    return file_stamp(path / "report.md", follow=False)


KEPT = 2  # report views kept (installed) for opening again: each a few hundred widgets and lines
_kept: weakref.WeakKeyDictionary[App[Any], list[str]] = weakref.WeakKeyDictionary()


def report_screen(app: App[Any], path: Path) -> ReportScreen:
    """The report view of ``path``: the one shown before, as it was left, when its report.md is still the one it
    shows (opening it again composes and lays out nothing); else a new one, kept for next time (the oldest kept
    one beyond KEPT let go).  A view already on the screen stack is never pushed twice: a new one then."""
    name = f"report-view {path}"
    names = _kept.setdefault(app, [])
    if app.is_screen_installed(name):
        screen = app.get_screen(name)
        if screen in app.screen_stack:
            return ReportScreen(path)
        if isinstance(screen, ReportScreen) and screen.current():
            names.remove(name)
            names.append(name)
            return screen
        app.uninstall_screen(name)
        names.remove(name)
    screen = ReportScreen(path)
    for old in [n for n in names if app.is_screen_installed(n) and app.get_screen(n) not in app.screen_stack]:
        if len(names) < KEPT:
            break
        app.uninstall_screen(old)
        names.remove(old)
    app.install_screen(screen, name)
    names.append(name)
    return screen


class ReportScreen(Screen[None]):
    BINDINGS = [
        Binding("t", "toc", "Contents"),
        Binding("1", "tab('report-text')", "Report", show=False),
        Binding("2", "tab('report-curves')", "Curves", show=False),
        Binding("3", "tab('report-figures')", "Figures", show=False),
        Binding("left", "columns(-1)", "Columns", show=False),
        Binding("right", "columns(1)", "Columns", show=False),
        Binding("escape", "back", "Back"),
    ]

    def __init__(self, path: Path) -> None:
        super().__init__()
        self.path = Path(path)
        self.loaded: Loaded | None = None
        self.stamp: tuple[int, int, int] | None = None  # report.md's, when it was read for this view
        self._progress: Timer | None = None  # the status's seconds while the report renders
        self.before_shown = False  # the report.md rendered before the run changed is shown while it renders again

    def compose(self) -> ComposeResult:
        yield Header(show_clock=False)
        yield TooSmall()
        with Vertical(id="report-body"):
            yield Static(strings.REPORT_RENDERING, id="report-status")
            with TabbedContent(initial="report-text", id="report-tabs"):
                with TabPane("Report 1", id="report-text"):
                    yield ReportViewer(show_table_of_contents=False, id="report-md")
                with TabPane("Curves 2", id="report-curves"):
                    yield CurvesScroll(id="report-plots")
                with TabPane("Figures 3", id="report-figures"):
                    pass  # the FigureView, made when first shown (show_figures)
        yield KeysFooter()

    def on_mount(self) -> None:
        self.sub_title = strings.REPORT_TITLE.format(path=self.path)
        path = self.path
        self.run_worker(lambda: load_report(path), thread=True, group="report", exclusive=True, exit_on_error=False)
        if _stale(path):  # the report.md rendered before shown meanwhile, if any
            self.run_worker(lambda: load_before(path), thread=True, group="report-before", exit_on_error=False)
        # while it renders, the status says for how long (the screen answers keys meanwhile: escape goes back)
        started = time.monotonic()
        self._progress = self.set_interval(1.0, lambda: self._rendering(time.monotonic() - started))

    def _rendering(self, elapsed: float) -> None:
        if self.loaded is None and self.stamp is None:
            text = strings.REPORT_BEFORE if self.before_shown else strings.REPORT_RENDERING_FOR
            self.query_one("#report-status", Static).update(text.format(seconds=elapsed))

    async def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        if event.worker.group == "report-before":
            event.stop()
            before = event.worker.result if event.state == WorkerState.SUCCESS else None
            if before is not None and self.loaded is None and self.stamp is None:  # the new one not shown yet
                self.before_shown = True
                viewer = self.query_one("#report-md", ReportViewer)
                viewer.update(*before)
                viewer.show_table_of_contents = self.size.width >= TOC_WIDTH
                self.query_one("#report-status", Static).update(strings.REPORT_BEFORE.format(seconds=0))
            return
        if event.worker.group != "report":
            return
        event.stop()
        status = self.query_one("#report-status", Static)
        if event.state in (WorkerState.ERROR, WorkerState.SUCCESS, WorkerState.CANCELLED) and self._progress:
            self._progress.stop()
        if event.state == WorkerState.ERROR:
            error = event.worker.error
            # a refusal is one sentence of the core's; anything else (a bug) is named, never a traceback
            text = str(error) if isinstance(error, (UsageError, OSError)) else f"{type(error).__name__}: {error}"
            status.update(Text(clean_text(strings.REPORT_FAILED.format(error=text)), style="red"))
            return
        if event.state != WorkerState.SUCCESS:
            return
        loaded = event.worker.result
        if not isinstance(loaded, Loaded):
            return
        self.stamp = loaded.stamp
        status.update(Text(clean_text(self.path / "report.md")))
        viewer = self.query_one("#report-md", ReportViewer)
        viewer.update(loaded.markdown, loaded.blocks)
        # beside the report from 120 columns: narrower, the report's six-column tables (the memory suite's peak
        # bandwidths) would have their numbers cut ("91104…")
        viewer.show_table_of_contents = self.size.width >= TOC_WIDTH
        await self.show_curves(loaded)
        self.loaded = loaded  # all shown
        self.focus_shown()

    async def show_curves(self, loaded: Loaded) -> None:
        box = self.query_one("#report-plots", VerticalScroll)
        c = loaded.curves
        plots = []
        if c.latency_throughput:
            plots.append(SeriesPlot("mean latency vs IOPS", c.latency_throughput, " IOPS", "µs", xlog=True,
                                    ylog=True, classes="report-plot"))
            plots.append(SeriesPlot("IOPS vs I/Os in flight (QD × jobs)", c.queue_depth, " in flight", " IOPS",
                                    xlog=True, classes="report-plot"))
        if c.open_loop:
            plots.append(SeriesPlot("open loop: mean latency vs offered IOPS (valid points)", c.open_loop, " IOPS",
                                    "µs", ylog=True, classes="report-plot"))
        if c.memory:
            plots.append(SeriesPlot("loaded latency: ns vs MB/s", c.memory, "MB/s", "ns", classes="report-plot"))
        if c.working_set:
            plots.append(SeriesPlot("idle latency vs working-set size", c.working_set, BYTES, "ns", xlog=True,
                                    ylog=True, classes="report-plot"))
        if not plots:
            await box.mount(Static(strings.REPORT_NO_CURVES))
            return
        await box.mount(Static(Text(clean_text(strings.REPORT_CURVES_NOTE.format(plots=loaded.plots)))))
        for plot in plots:
            await box.mount(plot)
            await box.mount(Static(legend(plot.series, plot.markers()), classes="report-legend"))

    def units_changed(self) -> None:
        """The units toggle: the curves' bandwidth axes in the new unit (each plot is drawn afresh when rendered;
        report.md itself stays as written, in the units it states)."""
        for plot in self.query(SeriesPlot):
            plot.refresh()

    def action_toc(self) -> None:
        """The contents shown, with their row cursor under the keys (↑/↓ and enter go to a section); hidden, the keys
        go back to the report (a focus left in the hidden contents would swallow PageDown)."""
        viewer = self.query_one("#report-md", ReportViewer)
        viewer.show_table_of_contents = not viewer.show_table_of_contents
        if viewer.show_table_of_contents:
            self.query_one("#report-tabs", TabbedContent).active = "report-text"
            self.call_after_refresh(self._focus_contents)
        else:
            self.focus_shown()

    def _focus_contents(self) -> None:
        tree = self.query_one("#report-md", ReportViewer).table_of_contents.query_one(Tree)
        if tree.cursor_line < 0:  # no row under the cursor yet: it would not show
            tree.cursor_line = 0
        tree.focus()

    def action_columns(self, step: int) -> None:
        """←/→: the other columns of the report's tables in view that show a page of theirs (app.widgets.fittable)."""
        if self.query_one("#report-tabs", TabbedContent).active != "report-text":
            return
        self.query_one("#report-md", ReportViewer).document.turn_tables(step)

    def action_tab(self, tab: str) -> None:
        self.query_one("#report-tabs", TabbedContent).active = tab
        self.focus_shown()

    def on_tabbed_content_tab_activated(self, event: TabbedContent.TabActivated) -> None:
        """A tab chosen with the mouse or the tab bar's arrows: its content takes the keys too."""
        self.focus_shown()

    def focus_shown(self) -> None:
        """After the next refresh, the shown tab's scrolling part takes the focus, so ↑/↓, PgUp/PgDn,
        Home/End and space scroll what is on screen (focus left in the hidden tab, or on the tab bar, would
        swallow them).  The tab is read then, not now: a focus meant for a tab left since would switch back."""
        self.call_after_refresh(self._focus_shown)

    def _focus_shown(self) -> None:
        active = self.query_one("#report-tabs", TabbedContent).active
        if active == "report-curves":
            self.query_one("#report-plots", VerticalScroll).focus()
        elif active == "report-figures":
            self.show_figures()
        else:
            self.query_one("#report-md", ReportViewer).document.focus()

    def show_figures(self) -> None:
        """The Figures tab's view, made the first time the tab is shown once report.md is current (its figures
        follow report.md's order; drawing them all takes a second or more, not spent for a reader who never
        looks)."""
        if self.loaded is None:
            return  # made when the report has loaded (focus_shown then)
        views = list(self.query("#report-figure-view").results(FigureView))
        if views:
            views[0].focus()
            return
        view = FigureView(self.path, id="report-figure-view")
        self.query_one("#report-figures", TabPane).mount(view)
        self.call_after_refresh(view.focus)

    def current(self) -> bool:
        """Whether this view shows its run's report.md as it is now (loaded, and neither report.md nor what it is
        made from changed since)."""
        return self.loaded is not None and self.stamp is not None and self.stamp == _stamp(self.path) \
            and not _stale(self.path)

    def on_screen_resume(self) -> None:
        """Shown again (a kept view): the curves in the units now chosen, the keys to the shown tab."""
        if self.loaded is not None:
            self.units_changed()
            self.focus_shown()

    def action_back(self) -> None:
        self.app.pop_screen()
