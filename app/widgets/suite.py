"""Live panels of the memory suite, one per mode: the working-set curve, peak-bandwidth bars, bandwidth against
threads, the latency and bandwidth matrices and the cache-to-cache tables.

Every panel takes figures as they arrive (:meth:`SuitePanel.add`: a live sample's data or a results line's point
with its value), the plan's figures before any is measured (:meth:`SuitePanel.expect`: shown pending, "…") and
the figure being measured now (:meth:`SuitePanel.begin`).  Like the live charts, ``add`` only stores (bounded:
at most MAX_FIGURES per panel) and marks the panel dirty; ``redraw`` (the run screen's 1–2 Hz tick) draws."""

from __future__ import annotations

import math
from typing import Any, Hashable, Mapping, cast

from rich import box
from rich.columns import Columns
from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult, RenderResult
from textual.containers import VerticalScroll
from textual.widget import Widget
from textual.widgets import Static

from app.core.units import format_size
from app.stats.summary import TRAFFIC_LABELS, figure_buffer, figure_pages, traffic_label
from app.widgets.charts import LINE_COLORS, LINE_NAMES, Chart, nice_ticks
from app.widgets.glyphs import ascii_mode, line_marker, line_name, mbps, mbps_unit, point_marker
from app.widgets.series import plottable

MAX_FIGURES = 4096  # figures kept per panel: a 64-node matrix, or a working-set curve of any length
PENDING = "…"
# the panels' names on the run screen's line of panels: all seven fit in 80 columns
MODE_NAMES = {"loaded": "loaded", "idle": "idle", "peak": "peak", "scaling": "scaling",
              "latency_matrix": "lat matrix", "bandwidth_matrix": "bw matrix", "c2c": "c2c",
              "working_set": "working set"}


def figure_number(data: Mapping[str, object]) -> float | None:
    """A live sample's (or results line's metrics') figure: its latency or bandwidth, None when it has none."""
    for key in ("latency_ns", "bandwidth_mbps"):
        value = data.get(key)
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            try:
                shown = plottable(float(value))  # a figure no chart can draw (infinite, 1e307) is none
            except OverflowError:  # an integer beyond a float
                continue
            if shown is not None:
                return shown
    return None


def _int(data: Mapping[str, object], key: str) -> int | None:
    value = data.get(key)
    return value if isinstance(value, int) and not isinstance(value, bool) else None


class Figures:
    """Figures by key, in the order first seen; a key expected but not measured holds None.  Bounded: beyond
    MAX_FIGURES keys, a new key is not kept."""

    def __init__(self) -> None:
        self.values: dict[Hashable, float | None] = {}

    def put(self, key: Hashable, value: float | None) -> bool:
        if key not in self.values and len(self.values) >= MAX_FIGURES:
            return False
        if value is not None or key not in self.values:
            self.values[key] = value
        return True


class SuitePanel:
    """What every panel does; ``key`` turns a figure (a sample's data or a point's JSON table) into the panel's
    key of it (None: not a figure of this panel)."""

    mode = ""

    def init_panel(self) -> None:
        self.figures = Figures()
        self.current: Hashable | None = None
        self.dirty = True

    def key(self, figure: Mapping[str, object]) -> Hashable | None:  # pragma: no cover - overridden
        raise NotImplementedError

    def expect(self, figure: Mapping[str, object]) -> None:
        key = self.key(figure)
        if key is not None and self.figures.put(key, None):
            self.dirty = True

    def begin(self, figure: Mapping[str, object]) -> None:
        self.current = self.key(figure)
        self.expect(figure)

    def add(self, figure: Mapping[str, object], value: float | None) -> None:
        key = self.key(figure)
        if key is not None and value is not None and self.figures.put(key, value):
            self.dirty = True

    def measured(self) -> dict[Hashable, float]:
        return {k: v for k, v in self.figures.values.items() if v is not None}


# --- charts (textual-plotext) ----------------------------------------------------------------------------------


def _pow2_ticks(lo: float, hi: float, count: int = 5) -> list[int]:
    """Exponents of two from lo to hi (log2 values), every one or every few octaves: about ``count`` ticks."""
    a, b = math.ceil(lo - 1e-9), math.floor(hi + 1e-9)
    step = max(1, math.ceil((b - a) / max(1, count - 1)))
    return list(range(a, b + 1, step)) or [round(lo)]


def _log10_ticks(lo: float, hi: float) -> list[float]:
    """1, 2, 5 × powers of ten inside [lo, hi] (values, not logarithms); the ends when none is inside."""
    ticks = [m * 10.0 ** e for e in range(math.floor(math.log10(lo)), math.ceil(math.log10(hi)) + 1)
             for m in (1, 2, 5)]
    inside = [t for t in ticks if lo * 0.999 <= t <= hi * 1.001]
    return inside if len(inside) >= 2 else [lo, hi] if hi > lo else [lo]


def _xrange(chart: Chart, lo: float, hi: float) -> tuple[float, float]:
    """An x range a little wider than the data's, set on the plot: the first and last tick labels are then
    inside the frame, not cut (and dropped) at its edges."""
    pad = (hi - lo) * 0.04 if hi > lo else 0.5
    chart.plt.xlim(lo - pad, hi + pad)
    return lo - pad, hi + pad


def _ns(value: float) -> str:
    return f"{value:.3g}ns" if value < 1000 else f"{value / 1000:.3g}µs"


class SuiteChart(SuitePanel, Chart):
    """A panel drawn with plotext: its figures stored by ``add``, drawn by ``draw`` at the redraw tick."""

    def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:
        Chart.__init__(self, id=id, classes=classes)
        self.init_panel()


class WorkingSetChart(SuiteChart):
    """Idle latency against buffer size, point by point: x log2 (buffer bytes), y log10 (ns, so the L1, L2, L3
    and DRAM plateaus, 1 ns to 100 ns, are all visible), one line per page size."""

    mode = "working_set"
    title = "latency vs buffer"
    xlabel = "buffer"

    def key(self, figure: Mapping[str, object]) -> Hashable | None:
        buffer = figure_buffer(figure)
        return None if buffer is None else (figure_pages(figure), buffer)

    def series(self) -> dict[str, list[tuple[int, float]]]:
        """Each page size's (buffer, ns) points, by buffer; only measured figures, only positive latencies."""
        out: dict[str, list[tuple[int, float]]] = {}
        for key, value in self.measured().items():
            pages, buffer = cast("tuple[str, int]", key)
            if value > 0:
                out.setdefault(pages, []).append((buffer, value))
        return {pages: sorted(points) for pages, points in sorted(out.items())}

    def draw(self) -> None:
        series = self.series()
        title = ("latency vs buffer: " + ", ".join(f"{p} pages {line_name(self, i, c)}"
                                                   for i, (p, c) in enumerate(zip(series, LINE_NAMES)))
                 if len(series) > 1 else f"latency vs buffer ({next(iter(series))} pages)" if series
                 else "latency vs buffer")
        self.plt.title(title)
        if not series:
            return
        xs = [math.log2(b) for points in series.values() for b, _ in points]
        ys = [v for points in series.values() for _, v in points]
        for index, ((pages, points), color) in enumerate(zip(series.items(), LINE_COLORS)):
            px, py = [math.log2(b) for b, _ in points], [math.log10(v) for _, v in points]
            self.plt.plot(px, py, marker=line_marker(self, index), color=color)
            self.plt.scatter(px, py, marker=point_marker(self, index), color=color)
        yticks = _log10_ticks(min(ys), max(ys))
        ylabels = [_ns(t) for t in yticks]
        self.ylabel_width = max(map(len, ylabels)) + 1
        self.plt.yticks([math.log10(t) for t in yticks], ylabels)
        xticks = [float(e) for e in _pow2_ticks(min(xs), max(xs))]
        xlabels = [format_size(1 << int(e)) for e in xticks]
        self.plt.xticks(*self.fitting(xticks, xlabels, *_xrange(self, min(xs), max(xs))))


class ScalingChart(SuiteChart):
    """Bandwidth against the number of load threads, one line per traffic."""

    mode = "scaling"
    title = "bandwidth vs threads"
    xlabel = "load threads"
    yunit = "MB/s"

    def key(self, figure: Mapping[str, object]) -> Hashable | None:
        threads = _int(figure, "threads")
        return None if threads is None else (str(figure.get("traffic")), threads)

    def draw(self) -> None:
        series: dict[str, list[tuple[int, float]]] = {}
        for key, value in self.measured().items():
            traffic, threads = cast("tuple[str, int]", key)
            series.setdefault(traffic, []).append((threads, value))
        self.plt.title("bandwidth vs threads" + (": " + ", ".join(f"{t} {line_name(self, i, c)}"
                                                                  for i, (t, c) in enumerate(zip(series, LINE_NAMES)))
                                                 if series else ""))
        if not series:
            return
        for index, (points, color) in enumerate(zip(series.values(), LINE_COLORS)):
            points.sort()
            self.plt.plot([p[0] for p in points], [p[1] for p in points], marker=line_marker(self, index), color=color)
            self.plt.scatter([p[0] for p in points], [p[1] for p in points], marker=point_marker(self, index),
                             color=color)
        counts = sorted({p[0] for points in series.values() for p in points})
        self.ticks("y", [p[1] for points in series.values() for p in points])
        # whole thread counts: each count up to 8, else round steps (never "1.5 threads")
        ticks = [float(t) for t in counts] if len(counts) <= 8 else [
            t for t in nice_ticks(counts[0], counts[-1]) if float(t).is_integer()]
        labels = [str(int(t)) for t in ticks]
        self.plt.xticks(*self.fitting(ticks, labels, *_xrange(self, counts[0], counts[-1])))


# --- bars and tables (rich) -------------------------------------------------------------------------------------


class PeakBars(SuitePanel, Widget):
    """Peak injection bandwidth, one horizontal bar per traffic mix in MLC's order (ALL Reads, 3:1, 2:1, 1:1,
    Triad, then any other code), each with its figure in MB/s; a mix of the plan not yet measured reads "…"."""

    mode = "peak"
    DEFAULT_CSS = "PeakBars { height: 1fr; padding: 0 1; }"

    def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:
        Widget.__init__(self, id=id, classes=classes)
        self.init_panel()

    def key(self, figure: Mapping[str, object]) -> Hashable | None:
        traffic = figure.get("traffic")
        return traffic if isinstance(traffic, str) else None

    def redraw(self) -> None:
        if self.dirty:
            self.dirty = False
            self.refresh()

    def rows(self) -> list[tuple[str, float | None]]:
        order = list(TRAFFIC_LABELS)
        keys = sorted(self.figures.values, key=lambda t: (order.index(t) if t in order else len(order)))
        return [(str(k), self.figures.values[k]) for k in keys]

    def render(self) -> RenderResult:
        text = Text(f"peak injection bandwidth, {mbps_unit(self)}\n", style="bold")
        rows = [(traffic, None if value is None else mbps(self, value)) for traffic, value in self.rows()]
        top = max((v for _, v in rows if v is not None), default=0.0)
        label_w = max((len(traffic_label(t)) for t, _ in rows), default=0)
        value_w = max((len(f"{v:.1f}") for _, v in rows if v is not None), default=1)
        width = max(1, self.size.width - 2 - label_w - value_w - 2)
        for traffic, value in rows:
            text.append(f"{traffic_label(traffic):<{label_w}} ")
            if value is None:  # pending; the mix being measured now in reverse video
                text.append(" " * width + " ")
                text.append(PENDING.rjust(value_w), style="bold reverse" if traffic == self.current else "dim")
                text.append("\n")
                continue
            eighths = round(8 * width * value / top) if top > 0 else 0
            if ascii_mode(self):  # whole cells only: a partial block has no ASCII look-alike
                bar = "#" * round(eighths / 8)
            else:
                bar = "█" * (eighths // 8) + ("", "▏", "▎", "▍", "▌", "▋", "▊", "▉")[eighths % 8]
            text.append(bar.ljust(width), style="rgb(60,120,255)")
            text.append(f" {value:>{value_w}.1f}\n")
        if not rows:
            text.append("waiting for the first figure", style="dim")
        return text


class Grid:
    """One table of a grid panel: figures by (row, column) with their header labels."""

    def __init__(self, title: str, corner: str, row_name: str, col_name: str) -> None:
        self.title, self.corner, self.row_name, self.col_name = title, corner, row_name, col_name
        self.rows: list[object] = []
        self.cols: list[object] = []
        self.cells: dict[tuple[object, object], float | None] = {}

    def table(self, unit_digits: int, current: tuple[object, object] | None, scale: float = 1.0) -> Table:
        """The table; each figure times ``scale`` (a bandwidth in MiB/s)."""
        table = Table(title=self.title, title_justify="left", box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False,
                      title_style="bold", min_width=len(self.title))  # the title on one line
        table.add_column(self.corner, style="bold")
        for col in self.cols:
            table.add_column(f"{self.col_name}{col}", justify="right")
        for row in self.rows:
            cells: list[RenderableType] = [f"{self.row_name}{row}"]
            for col in self.cols:
                if (row, col) not in self.cells:
                    cells.append(Text("-", style="dim"))  # not a figure of the plan (a c2c diagonal)
                    continue
                value = self.cells[(row, col)]
                if value is None:
                    cells.append(Text(PENDING, style="bold reverse" if (row, col) == current else "dim"))
                else:
                    cells.append(f"{value * scale:.{unit_digits}f}")
            table.add_row(*cells)
        return table


class GridPanel(SuitePanel, VerticalScroll):
    """Small tables filling in as their cells are measured; a panel's key is (table, row, column), each table's
    title and headers from :meth:`table_of`.  The tables sit side by side where the width allows."""

    DEFAULT_CSS = "GridPanel { height: 1fr; padding: 0 1; } GridPanel > Static { width: 100%; }"
    heading = ""

    def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:
        VerticalScroll.__init__(self, id=id, classes=classes)
        self.init_panel()

    def compose(self) -> ComposeResult:
        yield Static(self.heading, classes="grid-body")

    def table_of(self, name: Hashable) -> Grid:  # pragma: no cover - overridden
        raise NotImplementedError

    def grids(self) -> list[tuple[Hashable, Grid]]:
        grids: dict[Hashable, Grid] = {}
        for key, value in self.figures.values.items():
            name, row, col = cast("tuple[Hashable, Any, Any]", key)
            grid = grids.get(name) or grids.setdefault(name, self.table_of(name))
            if row not in grid.rows:
                grid.rows.append(row)
            if col not in grid.cols:
                grid.cols.append(col)
            grid.cells[(row, col)] = value
        for grid in grids.values():
            grid.rows.sort(key=str)
            grid.cols.sort(key=str)
        return list(grids.items())

    def heading_text(self) -> str:
        return self.heading

    def cell_scale(self) -> float:
        """What a cell's figure is multiplied by when shown (1: as measured)."""
        return 1.0

    def renderable(self) -> RenderableType:
        current = self.current
        tables = [grid.table(1, (current[1], current[2]) if isinstance(current, tuple) and current[0] == name
                             else None, self.cell_scale()) for name, grid in self.grids()]
        if not tables:
            return Text(self.heading_text() + "\nwaiting for the first figure", style="dim")
        return Group(Text(self.heading_text(), style="bold"), Columns(tables, padding=(0, 3)))

    def redraw(self) -> None:
        if self.dirty and self.is_mounted:
            self.dirty = False
            self.query_one(".grid-body", Static).update(self.renderable())


class MatrixPanel(GridPanel):
    """The latency or bandwidth matrix: rows CPU node, columns memory node (one table per traffic)."""

    def __init__(self, mode: str, *, id: str | None = None, classes: str | None = None) -> None:
        self.mode = mode
        self.heading = ("idle latency, ns" if mode == "latency_matrix" else "bandwidth, MB/s") + \
            ": rows CPU node, columns memory node"
        super().__init__(id=id, classes=classes)

    def heading_text(self) -> str:
        return self.heading.replace("MB/s", mbps_unit(self))

    def cell_scale(self) -> float:
        return 1.0 if self.mode == "latency_matrix" else mbps(self, 1.0)

    def key(self, figure: Mapping[str, object]) -> Hashable | None:
        cpu, mem = _int(figure, "cpu_node"), _int(figure, "mem_node")
        if cpu is None or mem is None:
            return None
        name = figure_pages(figure) if self.mode == "latency_matrix" else str(figure.get("traffic"))
        return (name, cpu, mem)

    def table_of(self, name: Hashable) -> Grid:
        title = f"{name} pages" if self.mode == "latency_matrix" else f"{traffic_label(name)} traffic"
        return Grid(title, "", "cpu ", "mem ")


class C2CPanel(GridPanel):
    """Cache-to-cache transfer latency: local HIT and HITM, then per line home a writer node × reader node table."""

    mode = "c2c"
    heading = "cache-to-cache transfer latency, ns"

    def key(self, figure: Mapping[str, object]) -> Hashable | None:
        kind = "hit" if figure.get("c2c") == "hit" else "hitm"
        reader = _int(figure, "reader_node")
        if reader is None:
            return ("local", "local", kind.upper())
        writer = _int(figure, "cpu_node")
        home = "reader" if figure.get("home") == "reader" else "writer"
        return ((kind, home), writer if writer is not None else "?", reader)

    def table_of(self, name: Hashable) -> Grid:
        if name == "local":
            return Grid("local L2→L2", "", "", "")
        kind, home = cast("tuple[str, str]", name)
        return Grid(f"remote {kind.upper()}, homed at {home}", "wr\\rd", "", "")
