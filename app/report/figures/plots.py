"""The report's figures (matplotlib, Agg backend, imported only here and only when drawing).

Every figure is drawn only where the data has its dimension: a block-size plot needs a
workload measured at two or more block sizes, a heatmap needs at least two rows and two
columns with data, a latency-throughput curve needs two or more loads.  SVG output is made
reproducible (fixed hash salt, no date) so re-rendering the same directory gives the same files.
"""

from __future__ import annotations

import io
import math
import multiprocessing as mp
import os
import threading
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Literal, Mapping, Sequence, TypeVar, cast

from app.core.sanitize import clean_text
from app.core.units import format_short, format_size, format_us
from app.model.points import Kind
from app.report.compute import contention, intervals
from app.report.compute import memory as mem
from app.report.compute.analysis import Curve, MemCurve, Rest, mean_row, replicate_sets
from app.report.data.model import MemoryRow, StorageRow
from app.report.figures.series import sample_figure
from app.stats.summary import point_label
from app.store.results import open_file

if TYPE_CHECKING:
    from types import ModuleType

    from matplotlib.artist import Artist
    from matplotlib.axes import Axes
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.colors import Colormap, Normalize
    from matplotlib.figure import Figure as MplFigure
    from matplotlib.lines import Line2D
    from matplotlib.ticker import FuncFormatter
    from matplotlib.typing import ColorType

    from app.report.figures.series import SeriesTrace

T = TypeVar("T")
K = TypeVar("K")
PanelKey = tuple[int, int, Rest]  # a heatmap panel: (queue depth, jobs, rest) or (block size, 0, rest)

MAX_PANELS = 6  # panels per figure; more continue in NAME-2.svg, NAME-3.svg, ...
MAX_COLS = 3  # panels per row
MAX_PAGES = 8  # figures per kind (48 panels); what is left beyond is named in the last caption
MAX_LEGEND = 6  # series per panel shown with a legend; more are coloured along a colour scale
# the smallest text a figure draws: 12 px at the figure's own size, so report.html (which never shows a figure
# smaller than makes its smallest text 11 px) shows a figure up to 1,100 px wide without shrinking it past that
TEXT_PT = 9.0
LABEL_EM = 0.7  # width of a tick label's character, in ems (DejaVu Sans digits and K/M: 0.64–0.86)


@dataclass
class Figure:
    file: str  # relative to the report: plots/NAME.svg
    title: str
    caption: str
    section: Kind  # the report section the figure goes in


@dataclass(slots=True)
class Row:
    """The fields of a storage point the figures use, computed once (the point's properties
    re-derive them on every access)."""

    index: int
    mix: str
    mix_order: tuple[int, int]
    bs: int
    iodepth: int
    numjobs: int
    inflight: int
    rest: Rest
    iops: float
    bw: float
    lat_mean: float
    # half-widths of the 95 % intervals (app.report.compute.intervals), units of the figure; None where there is none
    iops_err: float | None = None
    bw_err: float | None = None
    lat_err: float | None = None


def rows_of(points: Sequence[StorageRow]) -> list[Row]:
    """The rows of ``points``, with the intervals :func:`ci.storage_intervals` found for them (the report
    computes them, with the run's directory, before it draws): a figure with an interval is drawn at its
    centre, the bar around it, as the tables show it."""
    out = []
    for p in points:
        iv = intervals.storage_intervals(None, p)
        out.append(Row(p.index, p.mix, p.mix_order, p.bs, p.iodepth, p.numjobs, p.inflight, p.rest,
                       intervals.shown(p.iops, iv.get("iops"))[0], intervals.shown(p.bw, iv.get("bw_bytes"))[0],
                       intervals.shown(p.lat_mean, iv.get("lat_mean_ns"))[0], intervals.half(iv.get("iops")),
                       intervals.half(iv.get("bw_bytes")), intervals.half(iv.get("lat_mean_ns"))))
    return out


def _errs(values: Sequence[float | None], scale: float) -> list[float] | None:
    """Error-bar half-widths in a plot's unit (``1/scale`` of the figure's), 0 where a point has none; None when
    no point has one (then the line is drawn as before, without bars)."""
    if all(v is None for v in values):
        return None
    return [(v or 0.0) / scale for v in values]




def _bars(ax: Axes, xs: Sequence[float], ys: Sequence[float], colour: ColorType,
          xerr: Sequence[float] | None = None, yerr: Sequence[float] | None = None) -> None:
    """95 % interval bars around points already drawn: thin, short caps, no line or marker of their own."""
    ax.errorbar(xs, ys, xerr=xerr, yerr=yerr, fmt="none", ecolor=colour, capsize=2, elinewidth=0.8, capthick=0.8)

BARS = " Bars: the 95 % interval of each point's mean, where it has one (often narrower than the marker)."


_PLT: ModuleType | None = None


def load_pyplot() -> ModuleType:
    global _PLT
    if _PLT is not None:
        return _PLT
    import matplotlib

    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    matplotlib.rcParams.update({
        "svg.hashsalt": "profiler-tui",
        "svg.fonttype": "none",
        "text.parse_math": False,  # labels are text from the results directory: a "$x$" in one is no formula
        "figure.dpi": 100,
        "font.size": TEXT_PT,
        "axes.titlesize": TEXT_PT + 1,
        "legend.fontsize": TEXT_PT,
        "axes.grid": True,
        "grid.alpha": 0.3,
    })
    _PLT = plt
    return plt


PARALLEL = True  # tests that inspect figures in this process turn the worker pool off

# set by tests: called with each finished figure before it is saved (layout checks with the renderer)
CHECK: Callable[[MplFigure, str], None] | None = None


# app.report.raster draws a report's figures for the screen in a thread: there each finished figure is handed to
# ``taken.sink`` (with its file name) instead of being written, while a report written meanwhile in another thread
# still saves its SVGs
TAKEN = threading.local()
# one report's figures at a time in this process: draw_all keeps the data its jobs read in _DATA
DRAWING = threading.Lock()


def save_figure(plt: ModuleType, fig: MplFigure, path: Path) -> None:
    sink: Callable[[MplFigure, str], None] | None = getattr(TAKEN, "sink", None)
    if sink is not None:
        plt.close(fig)  # out of pyplot's list; the figure itself stays whole for the sink to draw again
        sink(fig, path.name)
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    if CHECK is not None:
        CHECK(fig, path.name)
    # opened here without following a symbolic link, the file mode fixed (matplotlib would open the path itself)
    svg = io.StringIO()
    fig.savefig(svg, format="svg", metadata={"Date": None})
    plt.close(fig)
    # a label from the results directory may hold control characters, which no SVG (XML) may: dropped
    text = clean_text(svg.getvalue(), newlines=True)
    with os.fdopen(open_file(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC), "wb") as f:
        f.write(text.encode("utf-8"))


def panel_grid(plt: ModuleType, panels: int, per_panel: int = 1, w: float = 3.4, h: float = 2.7, left: float = 0.75,
               right: float = 0.15, wspace: float = 0.85) -> tuple[MplFigure, list[list[Axes]]]:
    """A figure of ``panels`` panels, at most three per row, each ``per_panel`` axes high; fixed
    margins in inches (no tight-layout pass: it doubles the drawing time). ``right`` leaves room
    for a colour scale."""
    cols = min(MAX_COLS, panels)
    prows = math.ceil(panels / cols)
    rows = prows * per_panel
    width, height = w * cols + right, h * rows
    fig, axes = plt.subplots(rows, cols, figsize=(width, height), squeeze=False)
    fig.subplots_adjust(left=left / width, right=1 - (right + 0.15) / width,
                        bottom=0.5 / height, top=1 - 0.3 / height,
                        wspace=wspace * cols / (width - right), hspace=0.9 * rows / height)
    out = []
    for i in range(prows * cols):
        r, c = divmod(i, cols)
        group = [axes[r * per_panel + k][c] for k in range(per_panel)]
        if i < panels:
            out.append(group)
        else:
            for ax in group:
                fig.delaxes(ax)
    return fig, out


def colour_scale(plt: ModuleType, fig: MplFigure, values: Sequence[int], label: str, fmt: Callable[[int], str],
                 cmap_name: str = "viridis") -> tuple[Normalize, Colormap]:
    """A log₂ colour scale over the series' values, drawn as a colorbar at the figure's right edge."""
    from matplotlib.cm import ScalarMappable
    from matplotlib.colors import LogNorm

    lo, hi = min(values), max(values)
    norm = LogNorm(vmin=lo, vmax=hi if hi > lo else lo * 2)
    cmap = plt.get_cmap(cmap_name)
    height = fig.get_figheight()
    width = fig.get_figwidth()
    cax = fig.add_axes((1 - 0.85 / width, 0.5 / height, 0.12 / width, 1 - 0.8 / height))
    bar = fig.colorbar(ScalarMappable(norm=norm, cmap=cmap), cax=cax)
    ticks = _thin(sorted(set(values)), cax.get_position().height * height, vertical=True,
                  labels=[fmt(v) for v in values])
    bar.set_ticks(ticks, labels=[fmt(v) for v in ticks])
    bar.ax.minorticks_off()
    bar.set_label(label)
    return norm, cmap


def _thin(values: Sequence[T], length_in: float, vertical: bool = False, labels: Sequence[str] | None = None,
          fontsize: float = TEXT_PT) -> list[T]:
    """Every k-th of ``values`` (first included), k as small as keeps their labels apart along an
    axis ``length_in`` inches long."""
    n = len(values)
    if n <= 1:
        return list(values)
    if vertical:
        per = fontsize * 1.6 / 72
    else:
        chars = max(len(t) for t in (labels or [str(v) for v in values]))
        per = (chars * LABEL_EM * fontsize + 6) / 72
    fit = max(1, int(length_in / per))
    step = math.ceil(n / fit)
    return list(values[::step])


def _axis_len(ax: Axes, which: str = "x") -> float:
    pos = ax.get_position()
    fig = cast("MplFigure", ax.figure)  # the report draws no subfigures
    return pos.width * fig.get_figwidth() if which == "x" else pos.height * fig.get_figheight()


def _mix_order(points: Sequence[Row]) -> list[str]:
    order: dict[str, tuple[int, int]] = {}
    for p in points:
        order.setdefault(p.mix, p.mix_order)
    return sorted(order, key=lambda m: (order[m], m))


def plain_log(ax: Axes, which: str = "y") -> None:
    """A log axis labelled with plain numbers (matplotlib's default 10^n labels go through the slow
    mathtext parser), as densely as its labels stay apart: 1…9, 1-2-3-4-5-6-8, 1-2-3-5-7, 1-2-5 and
    1-3 steps, then every decade, then
    every few decades.  Call it once the axis has its data (it reads the view limits)."""
    from matplotlib.ticker import FixedLocator, FuncFormatter, NullFormatter, NullLocator

    axis = ax.yaxis if which == "y" else ax.xaxis
    lo, hi = sorted(ax.get_ylim() if which == "y" else ax.get_xlim())
    if not (hi > 0 and math.isfinite(hi)):
        return
    lo = max(lo, hi * 1e-12)
    length = _axis_len(ax, which)
    span = math.log10(hi) - math.log10(lo) or 1.0
    ticks: list[float] = []
    for subs, every in (((1, 2, 3, 4, 5, 6, 7, 8, 9), 1), ((1, 2, 3, 4, 5, 6, 8), 1), ((1, 2, 3, 5, 7), 1),
                        ((1, 2, 5), 1), ((1, 3), 1), ((1,), 1), ((1,), 2), ((1,), 3), ((1,), 5), ((1,), 10)):
        ticks = [m * 10.0 ** e for e in range(math.floor(math.log10(lo)), math.ceil(math.log10(hi)) + 1)
                 if e % every == 0 for m in subs if lo <= m * 10.0 ** e <= hi]
        if _apart(ticks, [format_short(t) for t in ticks], length, span, vertical=which == "y"):
            break
    axis.set_major_locator(FixedLocator(ticks))
    axis.set_major_formatter(FuncFormatter(lambda v, _pos: format_short(v)))
    axis.set_minor_locator(NullLocator())
    axis.set_minor_formatter(NullFormatter())


def _apart(ticks: Sequence[float], labels: Sequence[str], length_in: float, span: float, vertical: bool,
           fontsize: float = TEXT_PT) -> bool:
    """Whether labels at these log-spaced ticks keep apart on an axis ``length_in`` inches long."""
    for (a, la), (b, lb) in zip(zip(ticks, labels), zip(ticks[1:], labels[1:])):
        gap = length_in * (math.log10(b) - math.log10(a)) / span
        need = fontsize * 1.5 / 72 if vertical else ((len(la) + len(lb)) / 2 * LABEL_EM * fontsize + 6) / 72
        if gap < need:
            return False
    return True


def log2_axis(ax: Axes, values: Sequence[int], fmt: Callable[[int], str]) -> None:
    """A log₂ x axis with a tick at each measured value, labelled as many as fit."""
    ax.set_xscale("log", base=2)
    shown = _thin(list(values), _axis_len(ax), labels=[fmt(v) for v in values])
    ax.set_xticks(shown, labels=[fmt(v) for v in shown])
    ax.minorticks_off()


def paginate(items: list[T], what: str) -> tuple[list[list[T]], str]:
    """Items split into figures of MAX_PANELS; past MAX_PAGES figures, the note names what is left out."""
    pages = [items[i:i + MAX_PANELS] for i in range(0, len(items), MAX_PANELS)]
    note = ""
    if len(pages) > MAX_PAGES:
        left = [x for page in pages[MAX_PAGES:] for x in page]
        shown = ", ".join(str(x) for x in left[:8]) + (" …" if len(left) > 8 else "")
        note = (f" Not drawn: {len(left)} further panel(s) ({what}: {shown}) — at most {MAX_PAGES * MAX_PANELS} "
                "panels per figure kind; their points are in the tables and results.csv.")
        pages = pages[:MAX_PAGES]
    return pages, note


def page_name(name: str, i: int) -> str:
    return f"{name}.svg" if i == 0 else f"{name}-{i + 1}.svg"


def page_title(title: str, i: int, n: int) -> str:
    return title if n == 1 else f"{title} ({i + 1} of {n})"


# --- storage -----------------------------------------------------------------------------------------


def _series(points: Sequence[Row], x: Callable[[Row], int], line: Callable[[Row], K]) -> dict[K, list[Row]]:
    out: dict[K, list[Row]] = {}
    for p in points:
        out.setdefault(line(p), []).append(p)
    return {k: sorted(v, key=x) for k, v in out.items() if len({x(p) for p in v}) >= 2}


SeriesLine = tuple[str, int, Sequence[float], Sequence[float], Sequence[float] | None]  # label, colour, xs, ys, errs


def _draw_series(ax: Axes, lines: Sequence[SeriesLine], norm: Normalize | None, cmap: Colormap | None) -> None:
    """Lines (label, colour value, xs, ys, 95 % half-widths or None): with a legend's colours, or on the colour
    scale as one line collection and one marker collection per axes; error bars where a point has an interval."""
    if norm is None or cmap is None:
        for label, _v, xs, ys, errs in lines:
            (ln,) = ax.plot(xs, ys, marker="o", markersize=3.5, label=label)
            if errs is not None:
                _bars(ax, xs, ys, ln.get_color(), yerr=errs)
        return
    from matplotlib.collections import LineCollection

    segs = [list(zip(xs, ys)) for _l, _v, xs, ys, _e in lines]
    colours = [cmap(norm(v)) for _l, v, _x, _y, _e in lines]
    ax.add_collection(LineCollection(segs, colors=colours, linewidths=1.2))
    ax.scatter([x for _l, _v, xs, _y, _e in lines for x in xs], [y for _l, _v, _x, ys, _e in lines for y in ys],
               c=[c for (_l, _v, xs, _y, _e), c in zip(lines, colours) for _ in xs], s=7, zorder=3, linewidths=0)
    for (_l, _v, xs, ys, errs), colour in zip(lines, colours):
        if errs is not None:
            _bars(ax, xs, ys, colour, yerr=errs)
    ax.autoscale_view()


def storage_vs_axis(points: Sequence[Row], plots_dir: Path, axis: str, jobs_split: bool = False,
                    page: int | None = None) -> list[Figure]:
    """Throughput and mean latency vs block size (axis="bs") or vs queue depth × jobs (axis="qd")."""
    x: Callable[[Row], int]
    line: Callable[[Row], tuple[str, *tuple[object, ...]]]  # (access pattern, what else tells the lines apart)
    legend: Callable[[Row], str]
    value: Callable[[Row], int]
    if axis == "bs":
        x = lambda p: p.bs  # noqa: E731 - typed slots filled per axis
        line = lambda p: (p.mix, p.inflight, p.iodepth, p.numjobs, p.rest)  # noqa: E731 - typed slots filled per axis
        legend = lambda p: f"QD{p.iodepth}" + (f"×{p.numjobs}" if p.numjobs > 1 else "")  # noqa: E731 - typed slots filled per axis
        value = lambda p: p.inflight  # noqa: E731 - typed slots filled per axis
    else:
        x = lambda p: p.inflight  # noqa: E731 - typed slots filled per axis
        line = lambda p: (p.mix, p.bs, p.rest, p.numjobs if jobs_split else 0)  # noqa: E731 - typed slots filled per axis
        legend = lambda p: format_size(p.bs) + (f" T{p.numjobs}" if jobs_split else "")  # noqa: E731 - typed slots filled per axis
        value = lambda p: p.bs  # noqa: E731 - typed slots filled per axis
    series = _series(points, x, line)
    if not series:
        return []
    mixes = [m for m in _mix_order(points) if any(k[0] == m for k in series)]
    pages, note = paginate(mixes, "access patterns")
    name = "storage-vs-block-size" if axis == "bs" else "storage-vs-queue-depth"
    per_mix: dict[object, int] = {}
    for k in series:
        per_mix[k[0]] = per_mix.get(k[0], 0) + 1
    scale = max(per_mix.values()) > MAX_LEGEND
    values = sorted({value(pts[0]) for pts in series.values()})
    figures = []
    for i, mixes_here in enumerate(pages):
        if page is not None and i != page:
            continue
        plt = load_pyplot()
        fig, panels = panel_grid(plt, len(mixes_here), per_panel=2, right=1.0 if scale else 0.0)
        norm = cmap = None
        if scale:
            norm, cmap = colour_scale(plt, fig, values, "queue depth × jobs" if axis == "bs" else "block size",
                                      str if axis == "bs" else format_size)
        throughput_iops = axis == "qd"
        for (top, bottom), mix in zip(panels, mixes_here):
            xs_all: set[int] = set()
            tops, bottoms = [], []
            for key, pts in series.items():
                if key[0] != mix:
                    continue
                xs = [x(p) for p in pts]
                xs_all.update(xs)
                label, v = legend(pts[0]), value(pts[0])
                tops.append((label, v, xs, [p.iops / 1e3 if throughput_iops else p.bw / 1e6 for p in pts],
                             _errs([p.iops_err for p in pts], 1e3) if throughput_iops
                             else _errs([p.bw_err for p in pts], 1e6)))
                bottoms.append((label, v, xs, [p.lat_mean / 1e3 for p in pts], _errs([p.lat_err for p in pts], 1e3)))
            bottom.set_yscale("log")
            for ax, lines in ((top, tops), (bottom, bottoms)):
                log2_axis(ax, sorted(xs_all), format_size if axis == "bs" else str)
                _draw_series(ax, lines, norm, cmap)
            top.set_title(mix)
            top.set_ylabel("throughput (kIOPS)" if throughput_iops else "throughput (MB/s)")
            bottom.set_ylabel("mean latency (µs)")
            bottom.set_xlabel("block size" if axis == "bs" else "outstanding I/Os (QD × jobs)")
            if not scale:
                top.legend(loc="upper left", fontsize=TEXT_PT, framealpha=0.7)
        _share_y([t for t, _ in panels], [b for _, b in panels])
        save_figure(plt, fig, plots_dir / page_name(name, i))
        legend_text = ("one line per queue depth" if axis == "bs" else "one line per block size") + (
            ", coloured along the scale on the right" if scale else "")
        tail = note if i == len(pages) - 1 else ""
        if any(p.iops_err is not None or p.lat_err is not None for p in points):
            tail = BARS + tail
        if axis == "bs":
            figures.append(Figure(f"plots/{page_name(name, i)}",
                                  page_title("Throughput and latency vs block size", i, len(pages)),
                                  "Top: bandwidth (MB/s, 10^6 B/s, from 0); "
                                  "bottom: mean total latency (µs, log scale); "
                                  f"one panel per access pattern, {legend_text}; the panels share their y axes."
                                  + tail, Kind.STORAGE))
        else:
            figures.append(Figure(f"plots/{page_name(name, i)}",
                                  page_title("Throughput and latency vs queue depth", i, len(pages)),
                                  "Top: IOPS (thousands, from 0); bottom: mean total latency (µs, log scale) against "
                                  "the I/Os kept outstanding (queue depth × jobs); one panel per access pattern, "
                                  f"{legend_text}; the panels share their y axes." + tail, Kind.STORAGE))
    return figures


def _share_y(tops: Sequence[Axes], bottoms: Sequence[Axes]) -> None:
    """One y scale for the panels a reader compares side by side: throughput from 0 to the highest panel's
    top (a bar of 1,870 MB/s must not look as tall as one of 2,250), latency (log) over every panel's range."""
    hi = max(ax.get_ylim()[1] for ax in tops)
    for ax in tops:
        ax.set_ylim(0, hi)
        ax.yaxis.set_major_formatter(_plain_formatter())  # "20k", not "20000" running into the axis label
    lo_l = min(ax.get_ylim()[0] for ax in bottoms)
    hi_l = max(ax.get_ylim()[1] for ax in bottoms)
    for ax in bottoms:
        ax.set_ylim(lo_l, hi_l)
        plain_log(ax)


def jobs_split(points: Sequence[Row]) -> bool:
    seen: dict[tuple[object, ...], set[int]] = {}
    for p in points:
        key = (p.mix, p.bs, p.rest, p.inflight)
        seen.setdefault(key, set()).add(p.numjobs)
    return any(len(v) > 1 for v in seen.values())


def _p99_line(c: Curve) -> list[tuple[float, float]]:
    """(kIOPS, p99 µs) of a curve's points, or [] when a point has no p99 (no dotted line then)."""
    line = [(p.iops / 1e3, p99 / 1e3) for p in c.points if (p99 := p.p99)]
    return line if len(line) == len(c.points) else []


@dataclass(frozen=True)
class OperatingPoint:
    """A latency-bound search's answer, drawn on the latency–throughput curve of the same workload."""

    mix: str
    bs: int
    numjobs: int
    iops: float
    lat_mean: float
    label: str  # "QD 83 (p99 ≤ 1 ms)"


def latency_throughput(curves: Sequence[Curve], plots_dir: Path, page: int | None = None,
                       ops: Sequence[OperatingPoint] = ()) -> list[Figure]:
    curves = [c for c in curves if len(c.points) >= 2]
    if not curves:
        return []
    mixes: list[str] = []
    for c in curves:
        if c.mix not in mixes:
            mixes.append(c.mix)
    pages, note = paginate(mixes, "access patterns")
    per_mix: dict[str, int] = {}
    for c in curves:
        per_mix[c.mix] = per_mix.get(c.mix, 0) + 1
    scale = max(per_mix.values()) > MAX_LEGEND
    figures = []
    for i, mixes_here in enumerate(pages):
        if page is not None and i != page:
            continue
        plt = load_pyplot()
        fig, panels = panel_grid(plt, len(mixes_here), w=3.6, h=3.0, right=1.0 if scale else 0.0)
        norm: Normalize | None = None
        cmap: Colormap | None = None
        if scale:
            norm, cmap = colour_scale(plt, fig, sorted({c.bs for c in curves}), "block size", format_size)
        for (ax,), mix in zip(panels, mixes_here):
            here = [c for c in curves if c.mix == mix]
            ax.set_yscale("log")
            colours = [cmap(norm(c.bs)) for c in here] if norm and cmap else _lt_lines(ax, here, mix)
            if scale:
                _lt_collections(ax, here, colours)
            for op in ops:
                if op.mix == mix and any(c.bs == op.bs for c in here) and op.iops > 0 and op.lat_mean > 0:
                    ax.plot([op.iops / 1e3], [op.lat_mean / 1e3], marker="D", markersize=7, color="black",
                            markerfacecolor="gold", linestyle="none", zorder=5)
                    ax.annotate(op.label, (op.iops / 1e3, op.lat_mean / 1e3), textcoords="offset points",
                                xytext=(-6, 8), fontsize=TEXT_PT, ha="right")
            _lt_axes(ax, mix)
            _lt_legend(ax, scale)
            _label_loads(ax, here, colours)
        name = page_name("latency-throughput", i)
        save_figure(plt, fig, plots_dir / name)
        colour = "coloured by block size along the scale on the right; " if scale else ""
        figures.append(Figure(f"plots/{name}", page_title("Latency–throughput curves", i, len(pages)),
                              f"Each line is one workload at increasing queue depth ({colour}one panel per access "
                              "pattern), each point labelled with its load (QDn; a label that would overlap another "
                              "is left out); solid: mean latency, dotted: p99; the star marks the saturation knee "
                              "(farthest point from the chord, see Analysis)"
                              + ("; the diamond is the operating point found by the latency-bound search "
                                 "(see Operating point)" if any(op.mix in mixes_here for op in ops) else "")
                              + ". Throughput on a linear axis from 0, latency on a log axis."
                              + (BARS if any(intervals.storage_intervals(None, p) for c in curves for p in c.points)
                                 else "")
                              + (note if i == len(pages) - 1 else ""), Kind.STORAGE))
    return figures


def _lt_lines(ax: Axes, here: Sequence[Curve], mix: str) -> list[ColorType]:
    """Each curve's mean (solid) and p99 (dotted) lines and its knee's star, in the legend's colours."""
    colours = []
    for c in here:
        xs = [p.iops / 1e3 for p in c.points]
        ys = [p.lat_mean / 1e3 for p in c.points]
        (ln,) = ax.plot(xs, ys, marker="o", markersize=3, label=c.label.replace(mix + " ", "", 1))
        colours.append(ln.get_color())
        _lt_errorbars(ax, c, ln.get_color())
        p99 = _p99_line(c)
        if p99:
            ax.plot([a for a, _ in p99], [b for _, b in p99], linestyle=":", color=ln.get_color(), linewidth=1)
        if c.knee is not None:
            k = c.points[c.knee]
            ax.plot([k.iops / 1e3], [k.lat_mean / 1e3], marker="*", markersize=11, color=ln.get_color(),
                    markeredgecolor="black", linestyle="none")
    return colours


def _lt_errorbars(ax: Axes, c: Curve, colour: ColorType) -> None:
    """A curve's 95 % intervals: IOPS across, mean latency up and down (none drawn where no point has one)."""
    ivs = [intervals.storage_intervals(None, p) for p in c.points]
    xerr = _errs([intervals.half(iv.get("iops")) for iv in ivs], 1e3)
    yerr = _errs([intervals.half(iv.get("lat_mean_ns")) for iv in ivs], 1e3)
    if xerr is not None or yerr is not None:
        _bars(ax, [intervals.shown(p.iops, iv.get("iops"), 1e3)[0] for p, iv in zip(c.points, ivs)],
              [intervals.shown(p.lat_mean, iv.get("lat_mean_ns"), 1e3)[0] for p, iv in zip(c.points, ivs)],
              colour, xerr, yerr)


def _lt_collections(ax: Axes, here: Sequence[Curve], colours: Sequence[ColorType]) -> None:
    """The same on a colour scale: one line collection per line style, one marker collection."""
    from matplotlib.collections import LineCollection

    mean = [[(p.iops / 1e3, p.lat_mean / 1e3) for p in c.points] for c in here]
    ax.add_collection(LineCollection(mean, colors=colours, linewidths=1.2))
    dotted = [(line, col) for c, col in zip(here, colours) if (line := _p99_line(c))]
    if dotted:
        ax.add_collection(LineCollection([ln for ln, _ in dotted], colors=[col for _, col in dotted],
                                         linewidths=0.8, linestyles=":"))
    ax.scatter([xy[0] for m in mean for xy in m], [xy[1] for m in mean for xy in m],
               c=[col for m, col in zip(mean, colours) for _ in m], s=6, linewidths=0, zorder=3)
    for c, col in zip(here, colours):
        _lt_errorbars(ax, c, col)
    knees = [(c.points[c.knee], col) for c, col in zip(here, colours) if c.knee is not None]
    if knees:
        ax.scatter([k.iops / 1e3 for k, _ in knees], [k.lat_mean / 1e3 for k, _ in knees],
                   c=[col for _, col in knees], marker="*", s=90, edgecolors="black", linewidths=0.6, zorder=4)
    ax.autoscale_view()


def _lt_axes(ax: Axes, mix: str) -> None:
    """Throughput linear from 0 with plain ticks across the whole range (a log axis squeezed 100–147k IOPS
    into a sliver), latency log; the limits are final here: the load labels are placed against them."""
    from matplotlib.ticker import MaxNLocator

    ax.set_xlim(0, ax.get_xlim()[1])
    ax.xaxis.set_major_locator(MaxNLocator(nbins=6, steps=[1, 2, 2.5, 5, 10]))
    ax.xaxis.set_major_formatter(_plain_formatter())
    ax.set_xlim(0, ax.get_xlim()[1])
    plain_log(ax, "y")
    ax.set_title(mix)
    ax.set_xlabel("throughput (kIOPS)")
    ax.set_ylabel("latency (µs): mean —, p99 ···")


def _plain_formatter() -> FuncFormatter:
    from matplotlib.ticker import FuncFormatter

    return FuncFormatter(lambda v, _pos: format_short(v) if v else "0")  # a linear axis labels its 0


def _lt_legend(ax: Axes, scale: bool) -> None:
    """The curves (block sizes) when they fit a legend, and what the two line styles mean."""
    from matplotlib.lines import Line2D

    handles: list[Artist]
    labels: list[str]
    handles, labels = ax.get_legend_handles_labels() if not scale else ([], [])
    styles = [Line2D([], [], color="dimgrey", linewidth=1.2, marker="o", markersize=3),
              Line2D([], [], color="dimgrey", linewidth=1, linestyle=":")]
    shown: list[Artist] = [*handles, *styles]
    ax.legend(shown, labels + ["mean", "p99"], loc="best", fontsize=TEXT_PT, framealpha=0.7)


LOAD_OFFSETS = ((4, 2, "left"), (4, -8, "left"), (-4, 2, "right"), (-4, -8, "right"), (0, 5, "center"),
                (0, -11, "center"))  # label's bottom from the marker, in points: right-above first, then around it
LOAD_FONT = TEXT_PT

Box = tuple[float, float, float, float]  # x0, y0, x1, y1 in display pixels


def _label_loads(ax: Axes, here: Sequence[Curve], colours: Sequence[ColorType]) -> None:
    """Every point labelled with its load (QDn), small, in its curve's colour, at the first offset where the label
    stays inside the axes and clear of the legend, every point's marker and the labels placed before; a label
    with no such place is left out (dense sweeps).  The places are found arithmetically, one text measured per
    distinct label: trying each place as a matplotlib text costs seconds on a 1,000-point sweep."""
    renderer = cast("FigureCanvasAgg", ax.figure.canvas).get_renderer()  # the Agg backend (_plt)
    frame = ax.get_window_extent(renderer)
    px = ax.figure.dpi / 72
    legend = ax.get_legend()
    taken: list[Box] = []
    if legend is not None:
        x0, y0, x1, y1 = legend.get_window_extent(renderer).extents
        taken.append((x0, y0, x1, y1))
    half = 2.5 * px  # a marker's half-width: labels keep off every point
    xy = {id(p): ax.transData.transform((p.iops / 1e3, p.lat_mean / 1e3)) for c in here for p in c.points}
    taken += [(x - half, y - half, x + half, y + half) for x, y in xy.values()]
    sizes: dict[str, tuple[float, float]] = {}
    for c, colour in zip(here, colours):
        for p in c.points:
            text = c.load_label(p)
            if text not in sizes:
                probe = ax.text(0, 0, text, fontsize=LOAD_FONT)
                ext = probe.get_window_extent(renderer)
                sizes[text] = (ext.width, ext.height)
                probe.remove()
            w, h = sizes[text]
            x, y = xy[id(p)]
            for dx, dy, ha in LOAD_OFFSETS:
                x0 = x + dx * px - (w if ha == "right" else w / 2 if ha == "center" else 0)
                b: Box = (x0, y + dy * px, x0 + w, y + dy * px + h)
                if frame.x0 <= b[0] and b[2] <= frame.x1 and frame.y0 <= b[1] and b[3] <= frame.y1 and \
                        not any(b[0] < o[2] and o[0] < b[2] and b[1] < o[3] and o[1] < b[3] for o in taken):
                    taken.append(b)
                    ax.annotate(text, (p.iops / 1e3, p.lat_mean / 1e3), textcoords="offset points", xytext=(dx, dy),
                                fontsize=LOAD_FONT, ha=ha, va="bottom", color=colour, zorder=6,
                                bbox={"boxstyle": "square,pad=0.05", "fc": "white", "ec": "none", "alpha": 0.7})
                    break


@dataclass(frozen=True)
class SteadyTrace:
    """A steady-state point's IOPS per second (from its samples file) and fio's verdict."""

    label: str
    t: tuple[float, ...]
    iops: tuple[float, ...]
    window_s: float
    attained: bool


def steady_figure(traces: Sequence[SteadyTrace], plots_dir: Path) -> list[Figure]:
    """IOPS per second of each steady-state point, the last window shaded (green: steady, red: not)."""
    traces = [t for t in traces if len(t.t) >= 2]
    if not traces:
        return []
    pages, note = paginate(list(traces), "points")
    figures = []
    for i, here in enumerate(pages):
        plt = load_pyplot()
        fig, panels = panel_grid(plt, len(here), w=3.4, h=2.8)
        for (ax,), tr in zip(panels, here):
            ax.plot(tr.t, [v / 1e3 for v in tr.iops], marker="o", markersize=2, linewidth=1)
            end = tr.t[-1]
            ax.axvspan(max(tr.t[0], end - tr.window_s), end, color="tab:green" if tr.attained else "tab:red",
                       alpha=0.15, linewidth=0)
            ax.set_ylim(bottom=0)
            ax.set_title(tr.label + ("" if tr.attained else " (not steady)"), fontsize=TEXT_PT)
            ax.set_xlabel("time (s)")
            ax.set_ylabel("kIOPS per second")
        name = page_name("steady-state", i)
        save_figure(plt, fig, plots_dir / name)
        figures.append(Figure(f"plots/{name}", page_title("Steady state: IOPS per second", i, len(pages)),
                              "One panel per steady-state point: IOPS in each one-second interval as measured live; "
                              "the shaded band is fio's last steady-state window (green: the criterion held there and "
                              "fio ended the point; red: it never held before the runtime cap)."
                              + (note if i == len(pages) - 1 else ""), Kind.STORAGE))
    return figures


def timeseries_figure(traces: Sequence[SeriesTrace], plots_dir: Path) -> list[Figure]:
    """IOPS (solid, left axis) and p99 latency (dotted, right axis) per second of the points drawn over time
    (app.report.figures.series.SeriesTrace); a dashed line marks a write cliff."""
    if not traces:
        return []
    pages, note = paginate(list(traces), "points")
    figures = []
    for i, here in enumerate(pages):
        plt = load_pyplot()
        fig, panels = panel_grid(plt, len(here), w=4.0, h=2.8, right=0.55, wspace=1.4)  # room for the right axis
        for (ax,), tr in zip(panels, here):
            ax.plot(tr.t, [v / 1e3 for v in tr.iops], linewidth=1, color="tab:blue")
            ax.set_ylim(bottom=0)
            ax.set_xlabel("time (s)")
            ax.set_ylabel("kIOPS per second", color="tab:blue")
            if any(v is not None for v in tr.p99_us):
                _latency_lines(ax.twinx(), tr)
            if tr.cliff_s is not None:
                ax.axvline(tr.cliff_s, color="black", linestyle="--", linewidth=1)
            ax.set_title(f"{tr.label}\n({tr.why})", fontsize=TEXT_PT)
        name = page_name("timeseries", i)
        save_figure(plt, fig, plots_dir / name)
        figures.append(Figure(f"plots/{name}", page_title("Over time: IOPS and latency percentiles per second", i,
                                                          len(pages)),
                              "One panel per point with a write cliff, a throttled or tail-unstable flag, or named by "
                              "the run's timeseries setting: IOPS in each one-second interval (solid blue, left axis) "
                              "and that interval's p50, p99 and p99.9 latency from fio's histogram (right axis, "
                              "log scale: p50 thin solid, p99 dotted, p99.9 dashed, the band between p50 and p99.9 "
                              "shaded); a second of fewer than 1,000 I/Os has a p99 that is its slowest I/Os, and "
                              "of fewer than 10,000 a p99.9 that is. The black dashed line is where a write cliff "
                              "began." + (note if i == len(pages) - 1 else ""), Kind.STORAGE))
    return figures


def _latency_lines(right: Axes, tr: SeriesTrace) -> None:
    """p50, p99 and p99.9 per second on the latency axis (log: p99.9 of a stalled second can be 100 × p50), with
    the band between p50 and p99.9 shaded where a second has both."""
    drawn = []
    for values, style, width, label in ((tr.p50_us, "-", 0.8, "p50"), (tr.p99_us, ":", 1.2, "p99"),
                                        (tr.p99_9_us, "--", 0.9, "p99.9")):
        pts = [(t, v) for t, v in zip(tr.t, values) if v is not None and v > 0]
        if pts:
            right.plot([t for t, _ in pts], [v for _, v in pts], linestyle=style, linewidth=width, color="tab:red",
                       label=label)
            drawn.append(label)
    band = [(t, lo, hi) for t, lo, hi in zip(tr.t, tr.p50_us, tr.p99_9_us)
            if lo is not None and hi is not None and 0 < lo <= hi]
    if band:
        right.fill_between([t for t, _, _ in band], [lo for _, lo, _ in band], [hi for _, _, hi in band],
                           color="tab:red", alpha=0.12, linewidth=0)
    right.set_yscale("log")
    plain_log(right)
    right.set_ylabel(f"{' / '.join(drawn)} (µs)", color="tab:red")
    right.legend(loc="upper right", fontsize=TEXT_PT, frameon=False)


def _heatmap_panels(points: Sequence[Row], rows_of: Callable[[Row], int],
                    cols_of: Callable[[Row], int], panel_of: Callable[[Row], PanelKey]
                    ) -> list[tuple[PanelKey, list[int], list[int], dict[tuple[int, int], Row]]]:
    """The heatmap panels the points fill: the first point of each (row, column) cell of each panel,
    then :func:`_dense` per panel; panels of fewer than two rows or columns are left out."""
    panels: dict[PanelKey, dict[tuple[int, int], Row]] = {}
    for p in points:
        panels.setdefault(panel_of(p), {}).setdefault((rows_of(p), cols_of(p)), p)
    out = []
    for key in sorted(panels, key=_sort_key):
        cells = _dense(panels[key])
        rows = sorted({r for r, _ in cells})
        cols = sorted({c for _, c in cells})
        if len(rows) >= 2 and len(cols) >= 2:
            out.append((key, rows, cols, cells))
    return out


def _sort_key(k: PanelKey) -> tuple[int | float | str, ...]:
    return tuple(repr(x) if not isinstance(x, (int, float)) else x for x in k)


def _dense(cells: dict[tuple[int, int], Row]) -> dict[tuple[int, int], Row]:
    """Drop rows and columns holding fewer than two measured cells, until none is left: a heatmap
    row with one value compares nothing (e.g. CrystalDiskMark-style presets, where each access
    pattern has its own block size)."""
    while True:
        in_row = Counter(r for r, _ in cells)
        in_col = Counter(c for _, c in cells)
        keep = {rc: p for rc, p in cells.items() if in_row[rc[0]] >= 2 and in_col[rc[1]] >= 2}
        if len(keep) == len(cells):
            return keep
        cells = keep


def heatmap_plan(points: Sequence[Row], kind: str
                 ) -> tuple[list[tuple[PanelKey, list[int], list[int], dict[tuple[int, int], Row]]], int]:
    """The heatmap panels of a kind and how many figures they fill."""
    spec = _heatmap_spec(points, kind)
    panels = _heatmap_panels(points, spec.rows_of, spec.cols_of, spec.panel_of)
    pages, _ = paginate(list(range(len(panels))), "")
    return panels, len(pages)


@dataclass(frozen=True)
class _HeatSpec:
    """What a heatmap kind puts on its rows (access pattern), columns and panels, and how it labels them."""

    order: dict[str, int]  # access pattern -> row
    rows_of: Callable[[Row], int]
    cols_of: Callable[[Row], int]
    panel_of: Callable[[Row], PanelKey]
    col_label: Callable[[int], str]
    panel_label: Callable[[PanelKey], str]
    xlabel: str


def _heatmap_spec(points: Sequence[Row], kind: str) -> _HeatSpec:
    order = {m: i for i, m in enumerate(_mix_order(points))}
    if kind == "bs":
        return _HeatSpec(order, lambda p: order[p.mix], lambda p: p.bs, lambda p: (p.iodepth, p.numjobs, p.rest),
                         format_size, lambda k: f"QD{k[0]}" + (f"×{k[1]}" if k[1] > 1 else ""), "block size")
    # the panel's second place is constant here (0): panels are per block size and the other settings
    return _HeatSpec(order, lambda p: order[p.mix], lambda p: p.inflight, lambda p: (p.bs, 0, p.rest), str,
                     lambda k: format_size(k[0]), "outstanding I/Os (QD × jobs)")


def heatmap(points: Sequence[Row], plots_dir: Path, kind: str, metrics: Sequence[str] = ("throughput", "latency"),
            page: int | None = None) -> list[Figure]:
    """Block size × mix (kind="bs") or queue depth × mix (kind="qd") heatmaps of MB/s and latency,
    six panels per figure; more continue in heatmap-…-2.svg and on."""
    spec = _heatmap_spec(points, kind)
    panels = _heatmap_panels(points, spec.rows_of, spec.cols_of, spec.panel_of)
    if not panels:
        return []
    labels = [spec.panel_label(k) for k, _, _, _ in panels]
    pages, note = paginate(labels, "queue depths" if kind == "bs" else "block sizes")
    mixes = {i: m for m, i in spec.order.items()}
    figures = []
    plt = load_pyplot()
    for metric, unit, value in (("throughput", "MB/s", lambda p: p.bw / 1e6),
                                ("latency", "mean µs", lambda p: p.lat_mean / 1e3)):
        if metric not in metrics:
            continue
        cmap = plt.get_cmap("viridis" if metric == "throughput" else "magma_r")
        every = [v for _, _, _, cells in panels for v in (value(p) for p in cells.values())]
        norm = _lognorm(every)
        name = f"heatmap-{'bs' if kind == 'bs' else 'qd'}-mix-{metric}"
        for i in range(len(pages)):
            if page is not None and i != page:
                continue
            here = panels[i * MAX_PANELS:(i + 1) * MAX_PANELS]
            nrows = max(len(r) for _, r, _, _ in here)
            fig, grid = panel_grid(plt, len(here), w=3.9, h=0.5 + 0.4 * nrows + 0.9, left=1.1, right=1.0, wspace=0.3)
            image = None
            for col, ((ax,), (key, rows, cols, cells)) in enumerate(zip(grid, here)):
                grid_v = [[(value(cells[(r, c)]) if (r, c) in cells else math.nan) for c in cols] for r in rows]
                image = ax.imshow(grid_v, aspect="auto", cmap=cmap, norm=norm)
                cell_w = _axis_len(ax) / len(cols)
                if cell_w >= 0.34 * TEXT_PT / 6:  # room for a value such as "1.2k" (0.34 in at 6 pt)
                    for r_i, row in enumerate(grid_v):
                        for c_i, v in enumerate(row):
                            if not math.isnan(v):
                                ax.text(c_i, r_i, format_short(v, fixed=True), ha="center", va="center",
                                        fontsize=TEXT_PT, color="black" if bright(cmap, norm, v) else "white")
                shown = _thin(list(range(len(cols))), _axis_len(ax), labels=[spec.col_label(c) for c in cols])
                ax.set_xticks(shown, labels=[spec.col_label(cols[j]) for j in shown])
                ax.set_yticks(range(len(rows)), labels=[mixes[r] for r in rows] if col % MAX_COLS == 0 else [])
                ax.set_xlabel(spec.xlabel)
                ax.set_title(f"{spec.panel_label(key)}: {unit}")
                ax.grid(False)
                ax.minorticks_off()
            height, width = fig.get_figheight(), fig.get_figwidth()
            cax = fig.add_axes((1 - 0.85 / width, 0.5 / height, 0.12 / width, 1 - 0.8 / height))
            assert image is not None  # a page has at least one panel
            bar = fig.colorbar(image, cax=cax)
            bar.set_label(f"{'bandwidth (MB/s)' if metric == 'throughput' else 'mean latency (µs)'}, log scale")
            plain_log(bar.ax, "y")
            save_figure(plt, fig, plots_dir / page_name(name, i))
            what = "block size × access pattern" if kind == "bs" else "queue depth × access pattern"
            per = "one panel per queue depth" if kind == "bs" else "one panel per block size"
            if len(pages) > 1:
                first, last = labels[i * MAX_PANELS], labels[min(len(labels), (i + 1) * MAX_PANELS) - 1]
                per += f" ({first} … {last} here; {len(labels)} in all, {MAX_PANELS} per figure)"
            values = ("bandwidth in MB/s (10^6 B/s)" if metric == "throughput" else "mean total latency in µs")
            figures.append(Figure(f"plots/{page_name(name, i)}",
                                  page_title(f"Heatmap: {metric} over {what}", i, len(pages)),
                                  f"Cells: {values}, one log colour scale for every panel (printed in the cells where "
                                  f"they are wide enough); {per}; blank cells were not measured."
                                  + (note if i == len(pages) - 1 else ""), Kind.STORAGE))
    return figures


def _lognorm(values: Sequence[float]) -> Normalize:
    from matplotlib.colors import LogNorm, Normalize

    pos = [v for v in values if v > 0]
    if not pos:
        return Normalize(vmin=0, vmax=1)
    lo, hi = min(pos), max(pos)
    return LogNorm(vmin=lo, vmax=hi if hi > lo else lo * 2)


def bright(cmap: Colormap, norm: Normalize, v: float) -> bool:
    x = norm(v) if v > 0 else 0.0
    r, g, b, _ = cmap(min(1.0, max(0.0, float(x))))
    return 0.299 * r + 0.587 * g + 0.114 * b > 0.5


# --- memory ------------------------------------------------------------------------------------------------


def _idle_lines(ax: Axes, curves: Sequence[MemCurve]) -> None:
    """A dashed grey line at each idle latency the panel's curves have (their baseline), in the legend."""
    limits = ax.get_xlim()
    for ns, src in sorted({(round(c.idle.latency, 2), c.from_text) for c in curves
                           if c.idle is not None and c.idle.latency}):
        ax.axhline(ns, color="0.45", linestyle="--", linewidth=0.9, zorder=0, label=f"idle {ns:.1f} ns{src}")
    ax.set_xlim(limits)  # a horizontal line must not widen a symlog axis into negative delays


def _memory_captions(curves: Sequence[MemCurve]) -> tuple[str, str]:
    """The two memory figures' captions: what each axis counts, for these curves."""
    points = [p for c in curves for p in c.points]
    counted = mem.bandwidth_words(points)
    idle = sorted({round(c.idle.latency, 2) for c in curves if c.idle is not None and c.idle.latency})
    several = any(c.several_sources for c in curves)
    if several:  # imported files: each curve's baseline is its own file's (another file may be another machine)
        base = ("dashed grey line: a curve's idle latency from its own file" if idle else
                "no curve's file has an idle latency (another file's may be another machine's)")
    else:
        base = (f"dashed grey line: the run's idle latency, {' and '.join(f'{v:.2f}' for v in idle)} ns" if idle
                else "no idle latency was measured in this run")
    split = any(mem.counts_latency_thread(p) for p in points)
    engines = sorted({c.engine for c in curves})
    units = "; ".join((f"{e}: " if len(engines) > 1 else "")
                      + mem.delay_unit_text(e, [p for c in curves if c.engine == e for p in c.points]) for e in engines)
    first = (f"MLC-style loaded latency: each line is one traffic type, from the largest injection delay (left, "
             f"light load) to none (right){'; each imported file its own lines' if several else ''}. x: bandwidth "
             f"of {counted}. y: latency of the pointer-chasing thread, "
             f"from 0; {base}. The star marks the knee.")
    second = (f"Top: latency of the pointer-chasing thread (ns, from 0; {base}). Bottom: bandwidth of {counted}"
              + (f", solid; the load threads' share dashed ({mem.load_words(points)})" if split else "")
              + f". x: injection delay in {units}. One panel per stride, one line per traffic type.")
    if any(intervals.memory_intervals(p) for p in points):
        first, second = first + BARS, second + BARS
    return first, second


def _mem_errorbars(ax: Axes, pts: Sequence[MemoryRow], x: Callable[[MemoryRow], float], colour: ColorType,
                   figure: str = "latency_ns", across: bool = False) -> None:
    """The 95 % intervals of memory points that record one: ``figure`` up and down (latency in ns, bandwidth in
    GB/s), and with ``across`` the bandwidth across too (the latency–bandwidth curve)."""
    ivs = [intervals.memory_intervals(p) for p in pts]
    scale = 1e3 if figure == "bandwidth_mbps" else 1.0
    yerr = _errs([intervals.half(iv.get(figure)) for iv in ivs], scale)
    xerr = _errs([intervals.half(iv.get("bandwidth_mbps")) for iv in ivs], 1e3) if across else None
    if yerr is None and xerr is None:
        return
    # each bar at its interval's centre (the figure shown with ±), the line through the rows' own figures
    value = (lambda p: p.bandwidth or 0.0) if figure == "bandwidth_mbps" else (lambda p: p.latency or 0.0)
    ys = [intervals.shown(value(p), iv.get(figure), scale)[0] for p, iv in zip(pts, ivs)]
    xs = [intervals.shown((p.bandwidth or 0.0), iv.get("bandwidth_mbps"), 1e3)[0] if across else x(p)
          for p, iv in zip(pts, ivs)]
    _bars(ax, xs, ys, colour, xerr, yerr)


CONTENDED_MARKER = "D"  # a contended memory row: a hollow diamond over its point (a glyph, never colour alone)
CONTENDED_LABEL = f"contended (thread < {contention.CONTENDED_SHARE:.0%} CPU)".replace("%", " %")
CONTENDED_NOTE = (f" Hollow diamond: a contended row (a thread got less than "
                  f"{contention.CONTENDED_SHARE * 100:.0f} % of a CPU in its window): shown, used for no knee, peak "
                  "or plateau.")


def mark_contended(ax: Axes, pts: Sequence[MemoryRow], x: Callable[[MemoryRow], float],
                   y: Callable[[MemoryRow], float], colour: ColorType) -> bool:
    """A hollow diamond in the line's colour over each contended row of ``pts``; True when there was one."""
    busy = [p for p in pts if contention.contended(p)]
    if busy:
        ax.plot([x(p) for p in busy], [y(p) for p in busy], marker=CONTENDED_MARKER, markersize=7,
                markerfacecolor="white", markeredgecolor=colour, markeredgewidth=1.3, linestyle="none", zorder=4)
    return bool(busy)


def contended_entry() -> list[Line2D]:
    """The legend entry of the contended mark (a grey hollow diamond: it stands for every line's)."""
    from matplotlib.lines import Line2D

    return [Line2D([], [], marker=CONTENDED_MARKER, markersize=7, markerfacecolor="white", markeredgecolor="0.2",
                   markeredgewidth=1.3, linestyle="none", label=CONTENDED_LABEL)]


def legend_with(ax: Axes, extra: Sequence[Line2D], loc: Literal["lower left", "lower right", "upper left"],
                fontsize: float | None = None) -> None:
    """The axes' legend with ``extra`` entries after its lines'."""
    handles, _labels = ax.get_legend_handles_labels()
    ax.legend(handles=[*handles, *extra], loc=loc, fontsize=fontsize)


def memory_figures(curves: Sequence[MemCurve], plots_dir: Path) -> list[Figure]:
    curves = [c for c in curves if len(c.points) >= 2]
    if not curves:
        return []
    strides = sorted({c.stride for c in curves})
    plt = load_pyplot()
    figures = []
    first, second = _memory_captions(curves)
    if any(contention.contended(p) for c in curves for p in c.points):
        first, second = first + CONTENDED_NOTE, second + CONTENDED_NOTE
    # latency vs bandwidth (the loaded-latency curve)
    with_bw = [c for c in curves if all(p.bandwidth is not None for p in c.points)]
    # the ignores below: matplotlib draws a None (a figure not measured) as a gap, which its stubs do not allow
    if with_bw:
        fig, panels = panel_grid(plt, len(strides), w=3.8, h=3.0)
        for (ax,), stride in zip(panels, strides):
            busy = False
            for c in with_bw:
                if c.stride != stride:
                    continue
                (ln,) = ax.plot([(p.bandwidth or 0.0) / 1e3 for p in c.points], [p.latency for p in c.points],  # type: ignore[arg-type]
                                marker="o", markersize=3, label=c.legend)
                _mem_errorbars(ax, c.points, lambda p: (p.bandwidth or 0.0) / 1e3, ln.get_color(), across=True)
                busy |= mark_contended(ax, c.points, lambda p: (p.bandwidth or 0.0) / 1e3, lambda p: p.latency or 0.0,
                                       ln.get_color())
                if c.knee is not None:
                    k = c.points[c.knee]
                    ax.plot([(k.bandwidth or 0.0) / 1e3], [k.latency], marker="*", markersize=11, color=ln.get_color(),  # type: ignore[arg-type]
                            markeredgecolor="black", linestyle="none")
            _idle_lines(ax, [c for c in with_bw if c.stride == stride])
            ax.set_ylim(bottom=0)
            ax.set_xlim(left=0)
            ax.set_title(f"stride {stride} B")
            ax.set_xlabel(f"bandwidth{mem.bandwidth_axis_words(with_bw)} (GB/s, 10^9 B/s)")
            ax.set_ylabel("latency (ns)")
            if ax.get_lines():
                legend_with(ax, contended_entry() if busy else [], loc="lower right")
        save_figure(plt, fig, plots_dir / "memory-latency-bandwidth.svg")
        figures.append(Figure("plots/memory-latency-bandwidth.svg", "Memory latency vs bandwidth", first, Kind.MEMORY))
    # latency and bandwidth vs injection delay
    from matplotlib.lines import Line2D
    from matplotlib.ticker import FuncFormatter, NullFormatter

    fig, panels = panel_grid(plt, len(strides), per_panel=2, w=3.8, h=2.6)
    for (top, bottom), stride in zip(panels, strides):
        mine = [c for c in curves if c.stride == stride]
        split = busy = False
        for c in mine:
            pts = sorted(c.points, key=lambda p: p.delay or 0)
            (ln,) = top.plot([p.delay for p in pts], [p.latency for p in pts], marker="o", markersize=3, label=c.legend)  # type: ignore[arg-type]
            _mem_errorbars(top, pts, lambda p: float(p.delay or 0), ln.get_color())
            busy |= mark_contended(top, pts, lambda p: float(p.delay or 0), lambda p: p.latency or 0.0, ln.get_color())
            if all(p.bandwidth is not None for p in pts):
                bottom.plot([p.delay for p in pts], [(p.bandwidth or 0.0) / 1e3 for p in pts], marker="o", markersize=3,  # type: ignore[arg-type]
                            color=ln.get_color())
                _mem_errorbars(bottom, pts, lambda p: float(p.delay or 0), ln.get_color(), figure="bandwidth_mbps")
                mark_contended(bottom, pts, lambda p: float(p.delay or 0), lambda p: (p.bandwidth or 0.0) / 1e3,
                               ln.get_color())
                load = [mem.load_mbps(p) for p in pts]
                if all(v is not None for v in load) and any(mem.counts_latency_thread(p) for p in pts):
                    split = True
                    bottom.plot([p.delay for p in pts], [(v or 0.0) / 1e3 for v in load], linestyle="--",  # type: ignore[arg-type]
                                linewidth=1, color=ln.get_color())
        for ax in (top, bottom):
            ax.set_xscale("symlog", linthresh=10)
            ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _pos: format_short(v) if v > 0 else "0"))
            ax.xaxis.set_minor_formatter(NullFormatter())
            ax.set_ylim(bottom=0)
        _idle_lines(top, mine)
        top.set_title(f"stride {stride} B")
        top.set_ylabel("latency (ns)")
        bottom.set_ylabel("bandwidth (GB/s)")
        bottom.set_xlabel(mem.delay_axis_label(mine))
        legend_with(top, contended_entry() if busy else [], loc="lower left")
        if split:
            bottom.legend(handles=[Line2D([], [], color="0.2", label="all traffic"),
                                   Line2D([], [], color="0.2", linestyle="--", label="load threads")],
                          loc="upper right", fontsize=TEXT_PT)
    save_figure(plt, fig, plots_dir / "memory-vs-delay.svg")
    figures.append(Figure("plots/memory-vs-delay.svg", "Memory latency and bandwidth vs injection delay", second,
                          Kind.MEMORY))
    return figures


# how long a job's figure takes to draw, relative to the others (measured on 120- and 1,008-point sweeps):
# the figures of several panels with many ticks first, heatmap pages last
_WEIGHT = {"more": 4, "lt": 3, "vs": 3, "steady": 2, "series": 2, "mem": 2, "heat": 1}

# the data of one report, set before the worker processes fork (they inherit it: nothing is pickled
# but the small job tuples and the figures they return)
@dataclass(frozen=True)
class _Data:
    rows: list[Row]
    curves: list[Curve]
    mem_curves: list[MemCurve]
    plots_dir: Path
    jobs_split: bool
    ops: list[OperatingPoint]
    steady: list[SteadyTrace]
    series: list[SeriesTrace]
    more: list[Callable[[], Sequence[object]]]  # another module's figures (draw_all's ``more``)


_DATA: list[_Data] = []  # empty between reports

# one figure file's work: (kind of figure, axis or heatmap kind, heatmap metric, heatmap page or ``more`` index)
_Job = tuple[str, str, str, int]


def _job(job: _Job) -> Sequence[object]:
    what, extra, metric, page = job
    d = _DATA[0]
    if what == "more":
        return d.more[page]()
    if what == "vs":
        return storage_vs_axis(d.rows, d.plots_dir, extra, d.jobs_split)
    if what == "lt":
        return latency_throughput(d.curves, d.plots_dir, ops=d.ops)
    if what == "steady":
        return steady_figure(d.steady, d.plots_dir)
    if what == "series":
        return timeseries_figure(d.series, d.plots_dir)
    if what == "heat":
        return heatmap(d.rows, d.plots_dir, extra, (metric,), page=page)
    return memory_figures(d.mem_curves, d.plots_dir)


def operating_points(searches: Sequence[StorageRow]) -> list[OperatingPoint]:
    out = []
    for p in searches:
        op = p.line.parts.operating_point
        if isinstance(op, dict) and isinstance(op.get("depth"), int):
            label = f"QD {op['depth']} (p{op.get('percentile')} ≤ {format_us(op.get('bound_us'))})"
            out.append(OperatingPoint(p.mix, p.bs, p.numjobs, p.iops, p.lat_mean, label))
    return out


Steady = tuple[StorageRow, Mapping[str, object], Sequence[Mapping[str, object]]]  # a point, fio's verdict, its samples


def steady_traces(steady: Sequence[Steady]) -> list[SteadyTrace]:
    traces = []
    for p, verdict, samples in steady:
        window = verdict.get("window_s")
        # the last dump of a job covers the few ms after the previous one: not a one-second figure
        whole = [s for s in samples if not isinstance(iv := s.get("interval_s"), (int, float)) or iv >= 0.5]
        traces.append(SteadyTrace(point_label(Kind.STORAGE, p.point), tuple(sample_figure(s["t"]) for s in whole),
                                  tuple(sample_figure(s["iops"]) for s in whole),
                                  float(window) if isinstance(window, (int, float)) else 5.0,
                                  verdict.get("attained") is True))
    return traces


More = TypeVar("More")


def draw_all(storage: Sequence[StorageRow], curves: Sequence[Curve], mem_curves: Sequence[MemCurve],
             plots_dir: Path, parallel: bool = True, searches: Sequence[StorageRow] = (),
             steady: Sequence[Steady] = (), series: Sequence[SeriesTrace] = (),
             more: Sequence[Callable[[], Sequence[More]]] = ()) -> list[Figure | More]:
    """Draw every figure the data supports, in a fixed order, then the figures ``more`` draws (another
    module's, such as the queueing view's: drawn by the same workers, beside these).

    The points are reduced once to the fields the figures use; matplotlib then spends its time
    laying out text, one CPU per figure.  On a machine with several CPUs the figures are drawn by
    one pool of forked worker processes (only when this process runs a single thread, where fork
    is safe), fed one whole figure (file) per job.
    """
    with DRAWING:
        return _draw_all(storage, curves, mem_curves, plots_dir, parallel, searches, steady, series, more)


def _draw_all(storage: Sequence[StorageRow], curves: Sequence[Curve], mem_curves: Sequence[MemCurve],
              plots_dir: Path, parallel: bool, searches: Sequence[StorageRow], steady: Sequence[Steady],
              series: Sequence[SeriesTrace], more: Sequence[Callable[[], Sequence[More]]]) -> list[Figure | More]:
    sets = replicate_sets(storage)
    repeats = max((len(r) for r in sets), default=1)
    # a repeated point is drawn once, as the mean over its replicates (bars: their interval), never as one
    # replicate or as a zig-zag through all of them at one x
    rows = rows_of([mean_row(r) for r in sets] if repeats > 1 else storage)
    _DATA.clear()
    _DATA.append(_Data(rows, list(curves), list(mem_curves), plots_dir, jobs_split(rows), operating_points(searches),
                       steady_traces(steady), list(series), list(more)))
    jobs: list[_Job] = []
    if storage:
        jobs += [("vs", "bs", "", 0), ("vs", "qd", "", 0), ("lt", "", "", 0)]
        if steady:
            jobs.append(("steady", "", "", 0))
    if series:
        jobs.append(("series", "", "", 0))
    if storage:
        for kind in ("bs", "qd"):
            _panels, pages = heatmap_plan(rows, kind)
            for metric in ("throughput", "latency"):
                jobs += [("heat", kind, metric, i) for i in range(pages)]
    if mem_curves:
        jobs.append(("mem", "", "", 0))
    jobs += [("more", "", "", i) for i in range(len(more))]
    load_pyplot()  # import (and configure) matplotlib once, before any fork
    workers = min(len(jobs), os.cpu_count() or 1)
    try:
        if (parallel and PARALLEL and workers > 1 and threading.active_count() == 1
                and getattr(TAKEN, "sink", None) is None  # kept figures must stay in this process
                and "fork" in mp.get_all_start_methods()):
            # the slowest figures first, so that no worker starts one when the others are about done
            order = sorted(range(len(jobs)), key=lambda i: -_WEIGHT[jobs[i][0]])
            with mp.get_context("fork").Pool(workers) as pool:
                drawn = dict(zip(order, pool.map(_job, [jobs[i] for i in order], chunksize=1)))
            results = [drawn[i] for i in range(len(jobs))]
        else:
            results = [_job(j) for j in jobs]
    finally:
        _DATA.clear()
    if repeats > 1:
        for job, drawn_figures in zip(jobs, results):
            if job[0] in ("vs", "heat", "lt"):
                for f in drawn_figures:
                    if isinstance(f, Figure):
                        f.caption += REPLICATES.format(n=repeats)
    # each job returns its own kind of figure: Figure, or what the callable in ``more`` returns
    return cast("list[Figure | More]", [f for r in results for f in r])


REPLICATES = (" Replicates: each point (and cell) is the mean over its {n} replicates, never one of them; its bars, "
              "where drawn, are the Student-t 95 % interval of that mean between runs.")
