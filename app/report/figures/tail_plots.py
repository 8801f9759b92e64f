"""The exceedance figure (docs/tails.md, "Latency distribution"): for each point with fio's json+ histogram, the
fraction of its I/Os slower than x against x, log–log, from 1 down to 10⁻⁶.

A single-target run has a panel per access pattern with a line per workload (block size and load), named in a
legend; when an access pattern has more than MAX_LINES points its panels split by block size (and other
settings) and the lines are coloured by load on one colour scale, at most MAX_LINES loads per panel spread over
its range (the caption names how many were left out).  A fleet run has a panel per point and a line per host.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Sequence

from app.core.units import format_size
from app.model.points import Kind
from app.model.tails import EXCEEDANCE_FLOOR, Hist, count, exceedance
from app.report.compute.analysis import rest_label, varying_rest_keys
from app.report.data.model import StorageRow
from app.report.figures.fleet_plots import distinct_colours, legend_width
from app.report.figures.plots import (
    TEXT_PT,
    Figure,
    colour_scale,
    load_pyplot,
    page_name,
    page_title,
    paginate,
    panel_grid,
    plain_log,
    save_figure,
)

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.typing import ColorType

NAME = "exceedance"  # app.report.sections.tails.FIGURE_PREFIX names the same files
MAX_LINES = 8  # lines per panel
MAX_PANEL_LEGEND = 6  # hosts a panel's own legend names; more get one legend at the figure's right
DECADES = 6  # the y axis: 1 down to 10^-6 (EXCEEDANCE_FLOOR)
SUPERSCRIPT = str.maketrans("-0123456789", "⁻⁰¹²³⁴⁵⁶⁷⁸⁹")


@dataclass(frozen=True)
class Line:
    label: str
    load: int  # outstanding I/Os: the colour on a load scale
    hist: Hist


@dataclass(frozen=True)
class Panel:
    title: str
    lines: tuple[Line, ...]
    left_out: int = 0  # the panel's points not drawn (more than MAX_LINES loads)
    loads_left_out: int = 0  # the loads those points were measured at
    one_load: bool = False  # a panel of one access pattern and block size whose lines all share one load


def _load(p: StorageRow) -> str:
    return f"QD{p.iodepth}" + (f"×{p.numjobs}" if p.numjobs > 1 else "")


def _rep(p: StorageRow) -> str:
    """", replicate 2" for a repeated point's line (each replicate is its own histogram and its own line)."""
    return "" if p.replicate is None else f", replicate {p.replicate}"


def _with_hist(points: Sequence[StorageRow]) -> list[tuple[StorageRow, Hist]]:
    return [(p, h) for p in points if (h := p.metrics.hist())]


def _spread(lines: list[Line]) -> list[Line]:
    """The lines of at most MAX_LINES of their loads, spread evenly over them (the lightest and heaviest kept);
    every replicate of a kept load is kept (they share its colour)."""
    lines = sorted(lines, key=lambda ln: ln.load)
    loads = sorted({ln.load for ln in lines})
    if len(loads) <= MAX_LINES:
        return lines
    step = (len(loads) - 1) / (MAX_LINES - 1)
    kept = {loads[round(i * step)] for i in range(MAX_LINES)}
    return [ln for ln in lines if ln.load in kept]


def run_panels(points: Sequence[StorageRow]) -> tuple[list[Panel], bool]:
    """The panels of a single-target run and whether their lines are coloured by load (else: a legend; the
    panels split by block size at one load have ``one_load`` set)."""
    drawn = _with_hist(points)
    by_mix: dict[str, list[tuple[StorageRow, Hist]]] = {}
    for p, h in sorted(drawn, key=lambda ph: (ph[0].mix_order, ph[0].mix)):
        by_mix.setdefault(p.mix, []).append((p, h))
    if all(len(v) <= MAX_LINES for v in by_mix.values()):
        varying = varying_rest_keys([p for p, _ in drawn])
        return [Panel(mix, tuple(Line(f"{format_size(p.bs)} {_load(p)}" + _rest(p, varying) + _rep(p), p.inflight, h)
                                 for p, h in sorted(v, key=lambda ph: (ph[0].bs, ph[0].inflight))))
                for mix, v in by_mix.items()], False
    varying = varying_rest_keys([p for p, _ in drawn])
    # the colour scale keys the lines by load only where the load varies; lines that all share one load (the
    # replicates of one point) are told apart in a legend instead
    one_load = len({p.inflight for p, _ in drawn}) == 1
    panels = []
    for mix, v in by_mix.items():
        groups: dict[tuple[int, str], list[Line]] = {}
        for p, h in v:
            label = (_rep(p)[2:] or _load(p)) if one_load else _load(p) + _rep(p)
            groups.setdefault((p.bs, rest_label(p.rest, varying)), []).append(Line(label, p.inflight, h))
        for (bs, rest), lines in sorted(groups.items()):
            kept = lines[:MAX_LINES] if one_load else _spread(lines)
            title = f"{mix} {format_size(bs)}" + (f" ({rest})" if rest else "")
            if one_load:
                title += f" {_load(v[0][0])}"
            dropped = len({ln.load for ln in lines}) - len({ln.load for ln in kept})
            panels.append(Panel(title, tuple(kept), len(lines) - len(kept), dropped, one_load))
    return panels, not one_load


def _rest(p: StorageRow, varying: set[str]) -> str:
    extra = rest_label(p.rest, varying)
    return f" ({extra})" if extra else ""


def fleet_panels(points: Sequence[StorageRow], hosts: Sequence[str]) -> list[Panel]:
    """A panel per point (plan index), a line per host, in the fleet's host order."""
    order = {h: i for i, h in enumerate(hosts)}
    by_index: dict[int, list[tuple[StorageRow, Hist]]] = {}
    for p, h in _with_hist(points):
        by_index.setdefault(p.index, []).append((p, h))
    panels = []
    for _i, v in sorted(by_index.items()):
        p0 = v[0][0]
        v.sort(key=lambda ph: order.get(ph[0].host or "", len(order)))
        panels.append(Panel(f"{p0.mix} {format_size(p0.bs)} {_load(p0)}",
                            tuple(Line(p.host or "?", order.get(p.host or "", 0), h) for p, h in v)))
    return panels


def _curve(hist: Hist) -> tuple[list[float], list[float], tuple[float, float] | None]:
    """The exceedance line in µs, and where it ends: the slowest I/O at fraction 1/N (None when 1/N lies below
    the figure's floor: the line is cut there)."""
    pts = exceedance(hist)
    if not pts:
        return [], [], None
    # every I/O is slower than anything below the fastest bucket: the line starts at 1 there
    xs = [pts[0][0] / 1e3] + [x / 1e3 for x, _ in pts]
    ys = [1.0] + [f for _, f in pts]
    n = count(hist)
    end = (hist[-1][0] / 1e3, 1.0 / n) if 1.0 / n >= EXCEEDANCE_FLOOR else None
    if end is not None:  # the step down to the slowest I/O: a line from the last bucket with a slower one
        xs.append(end[0])
        ys.append(end[1])
    return xs, ys, end


def _y_axis(ax: Axes) -> None:
    ax.set_yscale("log")
    ax.set_ylim(EXCEEDANCE_FLOOR / 1.5, 1.5)
    ticks = [10.0 ** -k for k in range(DECADES + 1)]
    ax.set_yticks(ticks, labels=["1"] + [f"10{str(-k).translate(SUPERSCRIPT)}" for k in range(1, DECADES + 1)])
    ax.minorticks_off()
    ax.set_ylabel("fraction of I/Os slower")


def _draw_panel(ax: Axes, panel: Panel, colours: Sequence[ColorType], legend: bool) -> None:
    for line, colour in zip(panel.lines, colours):
        xs, ys, end = _curve(line.hist)
        if not xs:
            continue
        # a step: the fraction slower than x holds from one bucket to the next (fio's buckets, ≤ 1.6 % wide)
        ax.plot(xs, ys, color=colour, linewidth=1.1, label=line.label, drawstyle="steps-post")
        if end is not None:
            ax.plot([end[0]], [end[1]], marker="o", markersize=3, color=colour, linestyle="none")
    ax.set_xscale("log")
    _y_axis(ax)
    ax.set_xlabel("latency x (µs)")
    drawn = len({ln.load for ln in panel.lines})
    ax.set_title(panel.title + (f" ({drawn} of {drawn + panel.loads_left_out} loads)"
                                if panel.loads_left_out else ""), fontsize=TEXT_PT)
    plain_log(ax, "x")
    if legend:
        ax.legend(loc="lower left", fontsize=TEXT_PT, frameon=False)


def _scale_ticks(loads: Sequence[int]) -> list[int]:
    """The loads the colour scale labels: the lightest, the powers of two, and the heaviest when it lies well
    apart from the last of them (neighbouring loads such as 9 and 10 crowd a log scale's labels)."""
    lo, hi = min(loads), max(loads)
    out = [lo] + [1 << k for k in range(hi.bit_length()) if lo < 1 << k <= hi]
    return out + ([hi] if hi >= 1.5 * out[-1] else [])


def _figures(panels: list[Panel], plots_dir: Path, by_load: bool, title: str, caption: str,
             hosts: Sequence[str] = ()) -> list[Figure]:
    """The pages of panels: lines coloured by load on a colour scale (``by_load``), by host in the fleet
    figure's colours (``hosts``: a line's ``load`` is its host's place), else one colour per line."""
    pages, note = paginate(panels, "panels")
    out = []
    loads = sorted({ln.load for pn in panels for ln in pn.lines})
    side = len(hosts) > MAX_PANEL_LEGEND  # many hosts: one legend at the figure's right, not one per panel
    for i, here in enumerate(pages):
        plt = load_pyplot()
        right = 1.0 if by_load else legend_width(hosts)[0] if side else 0.15
        fig, axes = panel_grid(plt, len(here), w=3.6, h=3.0, right=right)
        norm = cmap = None
        if by_load:
            norm, cmap = colour_scale(plt, fig, _scale_ticks(loads), "outstanding I/Os (QD × jobs)", str)
        host_colours = distinct_colours(plt, len(hosts)) if hosts else []
        for (ax,), panel in zip(axes, here):
            if norm is not None and cmap is not None:
                colours: list[ColorType] = [cmap(norm(ln.load)) for ln in panel.lines]
            elif hosts:
                colours = [host_colours[ln.load] for ln in panel.lines]
            else:
                tab = plt.get_cmap("tab10")
                colours = [tab(k % 10) for k in range(len(panel.lines))]
            _draw_panel(ax, panel, colours, legend=not by_load and not side)
        if side:
            handles = [plt.Line2D([], [], color=c, label=h) for h, c in zip(hosts, host_colours)]
            fig.legend(handles=handles, loc="center right", ncols=legend_width(hosts)[1], frameon=False,
                       fontsize=TEXT_PT)
        name = page_name(NAME, i)
        save_figure(plt, fig, plots_dir / name)
        out.append(Figure(f"plots/{name}", page_title(title, i, len(pages)),
                          caption + (note if i == len(pages) - 1 else ""), Kind.STORAGE))
    return out


CURVE = ("Each line is one point's total latencies (fio's json+ histogram of `lat`, merged over its jobs and "
         "directions): at latency x, the fraction of its I/Os slower than x, log–log, down to 10⁻⁶. A line crosses "
         "10⁻² at the point's p99, 10⁻³ at its p99.9, and so on; a dot marks where it ends, at its slowest I/O "
         "(fraction 1/N of its N I/Os): below that the point says nothing. A line without a dot has more than 10⁶ "
         "I/Os and is cut at 10⁻⁶.")


def exceedance_figures(points: Sequence[StorageRow], plots_dir: Path) -> list[Figure]:
    """The exceedance figure of a single-target run (none when no point has a histogram)."""
    panels, by_load = run_panels(points)
    if not panels:
        return []
    left = sum(pn.left_out for pn in panels)
    repeated = any(p.replicate is not None for p in points)
    reps = " (each replicate of a repeated point its own line: the lines of one load show its spread between runs)"
    not_drawn = (f" ({left} point{'s' if left != 1 else ''} not drawn; the tail table has every point). "
                 if left else ". ")
    if by_load:
        which = (f"One panel per access pattern and block size; lines coloured by load (outstanding I/Os, colour "
                 f"scale), at most {MAX_LINES} loads per panel spread from the lightest to the heaviest"
                 + (reps + "; the replicates of a load share its colour" if repeated else "") + not_drawn)
    elif panels[0].one_load:
        which = ("One panel per access pattern and block size, all at one load (in the title); one line per "
                 + ("replicate" if repeated else "point") + " (in the legend)" + not_drawn)
    else:
        which = ("One panel per access pattern, one line per workload (block size and load, in the legend)"
                 + (reps if repeated else "") + ". ")
    return _figures(panels, plots_dir, by_load, "Latency distribution: fraction of I/Os slower than x",
                    which + CURVE)


def fleet_exceedance_figures(points: Sequence[StorageRow], hosts: Sequence[str], plots_dir: Path) -> list[Figure]:
    """A fleet run's exceedance figure: a panel per point, a line per host."""
    panels = fleet_panels(points, hosts)
    if not panels:
        return []
    return _figures(panels, plots_dir, False, "Latency distribution per host: fraction of I/Os slower than x",
                    "One panel per point, one line per host (in the legend; the colours of the hosts' IOPS "
                    "figure), each that host's own histogram. " + CURVE, hosts)
