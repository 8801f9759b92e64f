"""The report's latency over time (docs/tails.md, "Latency heat map"): each storage point's heat map from its
per-second histograms (raw/NNNN-JOB.hist.jsonl, app.stats.latmap) — time on x, log latency on y, the I/Os completed
per second in a cell as its colour, the per-column p50/p99/p99.9 over it — and the stall events named from it.

One strip per point, stacked under each other on one colour scale (small multiples), at most STRIPS per figure
and MAX_FIGURES figures; a point of more than app.stats.latmap.MAX_COLUMNS seconds has runs of seconds merged into one
column by adding their histograms (the caption says how many).
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Sequence

from app.core.textable import markdown_figure, markdown_table
from app.core.units import us
from app.model.points import Kind
from app.model.tails import percentile
from app.report.data.model import StorageRow
from app.report.figures.plots import TEXT_PT, Figure, load_pyplot, page_name, page_title, plain_log, save_figure
from app.stats.latmap import (
    STALL_FACTOR,
    STALL_MIN_IOS,
    HeatMap,
    Interval,
    Stall,
    heat_map,
    merge_hosts,
    merged,
    read_intervals,
    row_edge_ns,
    stall_events,
)

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.colors import Colormap, Normalize
    from matplotlib.figure import Figure as MplFigure

NAME = "latency-heatmap"
FIGURE_PREFIX = f"plots/{NAME}"
STRIPS = 30  # points a figure stacks
FULL_STRIPS = 6  # up to this many strips a figure has each its own legend and time axis name, and more height
MAX_FIGURES = 8  # 240 points drawn; more are named in the last caption
MAX_EVENTS = 40  # stall events listed; more are counted
CMAP = "YlOrRd"  # white → yellow → red: an empty cell is the page, a busy one dark (Gregg's heat maps)
LINE_COLOUR = "tab:blue"
STALL_BAR = 0.06  # the share of a strip's height above its slowest row where stall events are marked
LINES = (("p50", "-", 0.9), ("p99", ":", 1.3), ("p99.9", "--", 1.0))

Label = Callable[[StorageRow], str]
Point = tuple[StorageRow, list[Interval]]


def owns(f: Figure) -> bool:
    """Whether a figure is this section's (the storage figures' list leaves it out)."""
    return f.file.startswith(FIGURE_PREFIX)


def point_intervals(run_dir: Path, points: Sequence[StorageRow]) -> list[Point]:
    """The points with per-second histograms and those histograms (a run written before them has none)."""
    out = []
    for p in points:
        ivs = read_intervals(run_dir, p.line.raw)
        if ivs:
            out.append((p, ivs))
    return out


# --- the figures ------------------------------------------------------------------------------------------------


def figures(run_dir: Path, points: Sequence[StorageRow], plots_dir: Path, label: Label) -> list[Figure]:
    return draw([(label(p), ivs, stall_events(ivs)[0]) for p, ivs in point_intervals(run_dir, points)], plots_dir)


Strip = tuple[str, list[Interval], list[Stall]]  # a point's label, its intervals, its stall events


def draw(strips: Sequence[Strip], plots_dir: Path, name: str = NAME, title: str = "Latency over time: heat map"
         ) -> list[Figure]:
    maps = [(lab, m, ev) for lab, ivs, ev in strips if (m := heat_map(ivs)) is not None]
    if not maps:
        return []
    pages = [maps[i:i + STRIPS] for i in range(0, len(maps), STRIPS)]
    note = ""
    if len(pages) > MAX_FIGURES:
        left = [lab for page in pages[MAX_FIGURES:] for lab, _, _ in page]
        note = (f" Not drawn: {len(left)} further point(s) ({', '.join(left[:6])}{' …' if len(left) > 6 else ''}); "
                "their stall events are in the table.")
        pages = pages[:MAX_FIGURES]
    rates = [m.rate(c, r) for _, m, _ in maps for c in range(len(m.counts)) for r in range(m.low, m.high + 1)]
    positive = [r for r in rates if r > 0]
    lo, hi = min(positive), max(positive)
    merged = max(m.per_column for _, m, _ in maps)
    out = []
    for i, page in enumerate(pages):
        file = page_name(name, i)
        _figure(page, plots_dir / file, lo, max(hi, lo * 10))
        out.append(Figure(f"plots/{file}", page_title(title, i, len(pages)), _caption(merged, len(maps) > 1)
                          + (note if i == len(pages) - 1 else ""), Kind.STORAGE))
    return out


def _caption(merged: int, several: bool) -> str:
    return ((("One strip per point, on one colour scale: " if several else "")
             + "time since fio started on x, each I/O's total latency (submission to completion, fio's `lat`) on y "
             "in log rows of an eighth of a decade, and the colour of a cell the I/Os per second that completed "
             "in that time at that latency (scale at the right; white: none). Blue lines: each column's p50 (solid), "
             "p99 (dotted) and p99.9 (dashed) from its own histogram. A black bar along the top marks a stall event "
             "(table below).")
            + (f" Columns merge up to {merged} consecutive seconds by adding their histograms bucket by bucket."
               if merged > 1 else " One column per second."))


def _figure(page: Sequence[tuple[str, HeatMap, list[Stall]]], path: Path, lo: float, hi: float) -> None:
    save_figure(load_pyplot(), _compose(page, lo, hi), path)


LEGEND_IN = 0.3  # inches under the last strip for the lines' legend


def _compose(page: Sequence[tuple[str, HeatMap, list[Stall]]], lo: float, hi: float) -> MplFigure:
    """The figure of a page of strips.  The lines' legend is the figure's, under the last strip: over a strip it
    ran into the strip's title when that was long (a fleet host's socket path)."""
    from matplotlib.colors import LogNorm

    plt = load_pyplot()
    many = len(page) > FULL_STRIPS
    h, width = (1.05 if many else 1.9), 9.0
    height = h * len(page) + 0.8 + LEGEND_IN
    fig, axes = plt.subplots(len(page), 1, figsize=(width, height), squeeze=False)
    # between strips: room for a time axis with its name and the next strip's title (small multiples: ticks only)
    fig.subplots_adjust(left=0.8 / width, right=1 - 1.3 / width, bottom=(0.55 + LEGEND_IN) / height,
                        top=1 - 0.3 / height, hspace=(0.75 if many else 1.0) * len(page) / height)
    norm, cmap = LogNorm(vmin=lo, vmax=hi), plt.get_cmap(CMAP).with_extremes(bad="white")
    mesh = None
    for i, ((ax,), (lab, m, events)) in enumerate(zip(axes, page)):
        # small multiples: the time axis's name under the last only
        mesh = _strip(ax, lab, m, events, norm, cmap, time_label=i == len(page) - 1 or not many)
    handles, names = axes[0][0].get_legend_handles_labels()
    if handles:
        fig.legend(handles, names, loc="lower center", bbox_to_anchor=(0.5 * (1 - 0.5 / width), 0.0), ncol=3,
                   fontsize=TEXT_PT - 1, frameon=False, borderaxespad=0.2)
    if mesh is not None:
        bar = fig.colorbar(mesh, ax=[a for (a,) in axes], fraction=0.04, pad=0.02)
        ticks = [10.0 ** k for k in range(math.floor(math.log10(lo)), math.ceil(math.log10(hi)) + 1)
                 if lo <= 10.0 ** k <= hi]
        bar.set_ticks(ticks, labels=[_count(t) for t in ticks])  # plain numbers: no mathtext
        bar.ax.minorticks_off()
        bar.set_label("I/Os per second in the cell", fontsize=TEXT_PT)
        bar.ax.tick_params(labelsize=TEXT_PT)
    return fig


def _strip(ax: Axes, label: str, m: HeatMap, events: Sequence[Stall], norm: Normalize, cmap: Colormap,
           time_label: bool = True) -> object:
    import numpy as np

    x = np.array([m.starts[0], *m.ends]) if _contiguous(m) else None
    xs = x if x is not None else np.array([*m.starts, m.ends[-1]])
    ys = np.array([row_edge_ns(k) / 1e3 for k in range(m.low, m.high + 2)])
    z = np.ma.masked_less_equal(np.array([[m.rate(c, r) for c in range(len(m.counts))]
                                          for r in range(m.low, m.high + 1)]), 0.0)
    # the cells as one picture inside the SVG (thousands of cells: tens of thousands of SVG paths otherwise)
    mesh = ax.pcolormesh(xs, ys, z, norm=norm, cmap=cmap, shading="flat", rasterized=True)
    mids = [(a + b) / 2 for a, b in zip(m.starts, m.ends)]
    for name, style, lw in LINES:
        pts = [(t, v / 1e3) for t, v in zip(mids, m.lines[name]) if v is not None and v > 0]
        if pts:
            ax.plot([t for t, _ in pts], [v for _, v in pts], linestyle=style, linewidth=lw, color=LINE_COLOUR,
                    label=name)
    for e in events:  # in the headroom above the slowest row: the band itself stays visible
        ax.axvspan(e.start_s, e.start_s + e.duration_s, ymin=1 - STALL_BAR, ymax=1.0, color="black", linewidth=0)
    ax.set_yscale("log")
    ax.set_ylim(ys[0], ys[-1] * (ys[-1] / ys[0]) ** (STALL_BAR / (1 - STALL_BAR)) * 1.02)
    ax.set_xlim(xs[0], xs[-1])
    plain_log(ax)
    ax.set_ylabel("latency (µs)", fontsize=TEXT_PT)
    if time_label:
        ax.set_xlabel("time (s)", fontsize=TEXT_PT)
    ax.set_title(label, fontsize=TEXT_PT, loc="left")
    ax.tick_params(labelsize=TEXT_PT)
    return mesh


def _count(v: float) -> str:
    return f"{v / 1e6:g}M" if v >= 1e6 else f"{v / 1e3:g}k" if v >= 1e3 else f"{v:g}"


def _contiguous(m: HeatMap) -> bool:
    return all(abs(a - b) < 0.5 for a, b in zip(m.ends, m.starts[1:]))


# --- the text ---------------------------------------------------------------------------------------------------


INTRO = ("Each point's latency over time from the latency histogram of every second (fio's json+ buckets, kept in "
         "`raw/NNNN-JOB.hist.jsonl`): where a stall, a second mode or a periodic pause shows as a band.")


def section(run_dir: Path, points: Sequence[StorageRow], figs: Sequence[Figure], label: Label) -> list[str]:
    """The heat map and the stall events of a single-target run's storage points ([] when none kept its
    histograms: a run written before them, an import without them)."""
    if not points:
        return []
    found = point_intervals(run_dir, points)
    if not found:
        return []
    out = ["### Latency over time", "", INTRO, ""]
    for f in figs:
        if owns(f):
            out += markdown_figure(f.title, f.caption, f.file)
    drawn = {id(p) for p, _ in found}
    unread = [p for p in points if id(p) not in drawn and _names_hist(p)]
    missing = len(points) - len(found) - len(unread)
    if missing:
        out += [f"{missing} point{'s keep' if missing != 1 else ' keeps'} no per-second histograms (written before "
                "they were kept, or imported without them) and are not drawn.", ""]
    if unread:
        named = ", ".join(label(p) for p in unread[:3]) + (" …" if len(unread) > 3 else "")
        out += [f"{len(unread)} point{'s name' if len(unread) != 1 else ' names'} a histograms file in raw/ that "
                f"could not be read or held no usable second ({named}: not a regular file, a link, too large, or "
                "garbled) and " + ("are" if len(unread) != 1 else "is") + " not drawn.", ""]
    return out + stall_section([(label(p), stall_events(ivs)) for p, ivs in found])


def _names_hist(p: StorageRow) -> bool:
    raw = p.line.raw
    return isinstance(raw, dict) and isinstance(raw.get("hist"), str) and bool(raw.get("hist"))


def stall_section(found: Sequence[tuple[str, tuple[list[Stall], float | None]]]) -> list[str]:
    """The stall events table of the points' (label, (events, bound))."""
    out = ["#### Stall events", "",
           "A stall event is a run of consecutive seconds in each of which a larger share of the I/Os completed "
           f"above a bound — {STALL_FACTOR:g}× the point's typical p99 (the median of its seconds' p99s) — than "
           f"{STALL_FACTOR:g}× a typical second's share, at least {STALL_MIN_IOS} in all: when it started (seconds "
           "since fio started), how long it lasted, how many I/Os completed above the bound and the slowest one (fio's "
           "bucket). A few such I/Os in every second are the point's tail (the table above), not a stall.", ""]
    rows = [[lab, f"{e.start_s:g} s", f"{e.duration_s:g} s", f"{e.ios:,}", us(e.worst_ns), us(e.bound_ns)]
            for lab, (events, _) in found for e in events]
    if not rows:
        judged = sum(1 for _, (_, bound) in found if bound is not None)
        return out + [f"No stall event in the {judged} point{'s' if judged != 1 else ''} with per-second histograms.",
                      ""]
    more = len(rows) - MAX_EVENTS
    out += [markdown_table(["Workload", "Start", "Duration", "I/Os above the bound", "Slowest (µs)", "Bound (µs)"],
                           rows[:MAX_EVENTS]), ""]
    if more > 0:
        out += [f"{more} further stall event{'s' if more != 1 else ''} not listed.", ""]
    return out


# --- a fleet run ------------------------------------------------------------------------------------------------


MERGED = "all hosts merged"


def fleet_strips(run_dir: Path, points: Sequence[StorageRow], label: Label) -> list[Strip]:
    """A strip per host of each point that kept per-second histograms, then the hosts' merge: their seconds added
    bucket by bucket (app.stats.latmap.merge_hosts), never their percentiles averaged."""
    by_index: dict[int, list[tuple[StorageRow, list[Interval]]]] = {}
    for p, ivs in point_intervals(run_dir, points):
        by_index.setdefault(p.index, []).append((p, ivs))
    out: list[Strip] = []
    for index in sorted(by_index):
        hosts = sorted(by_index[index], key=lambda pi: pi[0].host or "")
        for p, ivs in hosts:
            out.append((f"{label(p)} on {p.host or '?'}", ivs, stall_events(ivs)[0]))
        if len(hosts) > 1:
            both = merge_hosts([ivs for _, ivs in hosts])
            out.append((f"{label(hosts[0][0])}, {MERGED} ({len(hosts)})", both, stall_events(both)[0]))
    return out


def fleet_figures(run_dir: Path, points: Sequence[StorageRow], plots_dir: Path, label: Label) -> list[Figure]:
    return draw(fleet_strips(run_dir, points, label), plots_dir)


def fleet_section(run_dir: Path, points: Sequence[StorageRow], figs: Sequence[Figure], label: Label) -> list[str]:
    """A fleet run's heat maps: each host's and the hosts' merge per point, their p99 over the point's seconds
    (the merge's from the merged histogram), and the stall events of each."""
    strips = fleet_strips(run_dir, points, label)
    if not strips:
        return []
    out = ["## Latency over time", "", INTRO + " A fleet run has a strip per host and one of all hosts merged: their "
           "seconds added bucket by bucket (seconds whose ends lie within half a second are one), so the merge's "
           "percentiles are those of every host's I/Os together, never a mean of the hosts' percentiles.", ""]
    for f in figs:
        if owns(f):
            out += markdown_figure(f.title, f.caption, f.file)
    rows = [[lab, f"{sum(iv.ios for iv in ivs):,}", us(percentile(merged(ivs), 99.0))] for lab, ivs, _ in strips]
    out += [markdown_table(["Strip", "I/Os", "p99 (µs)"], rows), ""]
    return out + stall_section([(lab, stall_events(ivs)) for lab, ivs, _ in strips])
