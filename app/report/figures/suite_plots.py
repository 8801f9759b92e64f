"""The memory suite's figures: matrix heatmaps, peak-bandwidth bars, bandwidth against load threads and the
working-set curve (log-log, sysfs caches as vertical lines, each detected plateau's latency labelled).

File names and groups are :mod:`app.report.sections.suite`'s, so its text places each figure in its section.
"""

from __future__ import annotations

import math
import statistics
from pathlib import Path
from typing import TYPE_CHECKING, Sequence

from app.core.units import format_size
from app.model.points import Kind
from app.report.compute import contention, intervals, plateaus
from app.report.data.model import TRAFFIC_DESCRIPTIONS, MemoryRow
from app.report.figures.plots import (
    CONTENDED_NOTE,
    TEXT_PT,
    Figure,
    bright,
    contended_entry,
    legend_with,
    load_pyplot,
    mark_contended,
    plain_log,
    save_figure,
)
from app.report.sections import suite

if TYPE_CHECKING:
    from matplotlib.axes import Axes


def figures(points: Sequence[MemoryRow], plots_dir: Path) -> list[Figure]:
    """Every figure of the suite's points (measured ones: a figure draws numbers)."""
    done = [p for p in points if p.mode in suite.MODES and suite.value(p) is not None]
    by_mode: dict[str, list[MemoryRow]] = {}
    for p in done:
        by_mode.setdefault(p.mode, []).append(p)
    out: list[Figure] = []
    for mode in ("latency_matrix", "bandwidth_matrix"):
        keys = ("traffic",) if mode == "bandwidth_matrix" else ()
        grouped = suite.groups(by_mode.get(mode, []), *keys)
        for key, pts in grouped.items():
            out += matrix_figure(mode, key, pts, len(grouped) > 1, plots_dir)
    for mode, draw in (("peak", peak_figure), ("scaling", scaling_figure)):
        grouped = suite.groups(by_mode.get(mode, []))
        for key, pts in grouped.items():
            out += draw(key, pts, len(grouped) > 1, plots_dir)
    if by_mode.get("working_set"):
        out += working_set_figure(by_mode["working_set"], plots_dir)
    return out


def _file(plots_dir: Path, file: str) -> Path:
    return plots_dir / file.removeprefix("plots/")


# --- matrices ------------------------------------------------------------------------------------------------


def matrix_figure(mode: str, key: tuple[str, ...], pts: Sequence[MemoryRow], several: bool,
                  plots_dir: Path) -> list[Figure]:
    from matplotlib.colors import Normalize

    m = suite.matrix(pts, "cpu_node", "mem_node")
    if not m.cells:
        return []
    latency = mode == "latency_matrix"
    plt = load_pyplot()
    cell_in = 0.55 if latency else 0.8  # wide enough for "144.3" / "104362.2" at 7 pt
    w = 1.6 + cell_in * len(m.cols) + 1.0
    h = 1.3 + max(0.4, cell_in * 0.75) * len(m.rows)
    fig = plt.figure(figsize=(max(w, 3.6), max(h, 2.4)))
    width, height = fig.get_figwidth(), fig.get_figheight()
    ax = fig.add_axes((1.0 / width, 0.6 / height, 1 - 2.1 / width, 1 - 1.0 / height))
    grid = [[m.cell(r, c) for c in m.cols] for r in m.rows]
    values = [v for row in grid for v in row if v is not None]
    cmap = plt.get_cmap("magma_r" if latency else "viridis")
    lo, hi = min(values), max(values)
    norm = Normalize(vmin=lo, vmax=hi if hi > lo else lo + 1)
    image = ax.imshow([[math.nan if v is None else v for v in row] for row in grid], cmap=cmap, norm=norm,
                      aspect="auto")
    for i, row in enumerate(grid):
        for j, v in enumerate(row):
            ax.text(j, i, suite.mlc_number(v), ha="center", va="center", fontsize=TEXT_PT,
                    color="black" if v is None or bright(cmap, norm, v) else "white")
    ax.set_xticks(range(len(m.cols)), labels=[str(c) for c in m.cols])
    ax.set_yticks(range(len(m.rows)), labels=[str(r) for r in m.rows])
    ax.set_xlabel("memory node (buffer bound here)")
    ax.set_ylabel("CPU node (threads run here)")
    ax.grid(False)
    ax.minorticks_off()
    unit = "ns" if latency else "MB/sec"
    traffic = key[2] if len(key) > 2 else ""
    ax.set_title(("Idle latency" if latency else "Bandwidth" + (f", {traffic}" if traffic else "")) + f" ({unit})"
                 + (f"\n{suite.engine_text(pts)}, {suite.pages_text(pts)}" if several else ""), fontsize=TEXT_PT)
    if len(values) > 1:  # one cell has no scale to show
        cax = fig.add_axes((1 - 0.9 / width, 0.6 / height, 0.12 / width, 1 - 1.0 / height))
        fig.colorbar(image, cax=cax).set_label(f"{'latency' if latency else 'bandwidth'} ({unit}), linear")
    file = suite.figure_file(mode, key, several)
    save_figure(plt, fig, _file(plots_dir, file))
    what = ("idle latency of a chase on the row's CPU node over memory of the column's node, ns" if latency else
            f"bandwidth of load threads on the row's CPU node reading memory of the column's node, MB/sec"
            f"{', traffic ' + traffic if traffic else ''}")
    one = " One NUMA node: a 1×1 matrix." if len(m.rows) == 1 and len(m.cols) == 1 else ""
    return [Figure(file, "Idle latency matrix" if latency else "Bandwidth matrix",
                   f"Cells: {what} (the table's numbers); colour on a linear scale; '—' not measured.{one}",
                   Kind.MEMORY)]


# --- peak bandwidth and scaling ------------------------------------------------------------------------------


def peak_figure(key: tuple[str, ...], pts: Sequence[MemoryRow], several: bool, plots_dir: Path) -> list[Figure]:
    by = sorted(pts, key=lambda p: suite.peak_order(p.traffic or "R"))
    plt = load_pyplot()
    fig = plt.figure(figsize=(6.4, 0.9 + 0.42 * len(by)))
    width, height = fig.get_figwidth(), fig.get_figheight()
    ax = fig.add_axes((1.5 / width, 0.55 / height, 1 - 2.3 / width, 1 - 0.85 / height))
    ivs = [intervals.memory_intervals(p).get("bandwidth_mbps") for p in by]  # a bar with an interval ends at its centre
    vals = [intervals.shown(suite.value(p) or 0.0, iv, 1e3)[0] for p, iv in zip(by, ivs)]
    errs = [(h or 0.0) / 1e3 for h in (intervals.half(iv) for iv in ivs)]
    if any(errs):  # the 95 % interval of each bar's mean, where the engine measured one
        ax.barh(range(len(by)), vals, color="#3b75af", xerr=errs, capsize=3,
                error_kw={"elinewidth": 0.8, "capthick": 0.8})
    else:
        ax.barh(range(len(by)), vals, color="#3b75af")
    ax.set_yticks(range(len(by)), labels=[suite.peak_label(p.traffic or "R") for p in by])
    ax.invert_yaxis()  # MLC's order from the top
    for i, p in enumerate(by):  # the label past the whisker, not on it
        ax.text(vals[i] + errs[i], i, " " + suite.mlc_number(suite.value(p)), va="center", ha="left", fontsize=TEXT_PT)
    ax.set_xlim(0, max(vals) * 1.25 if max(vals) > 0 else 1)
    ax.set_xlabel("bandwidth (GB/s, 10^9 B/s); labels in MB/sec as the table")
    ax.grid(axis="y", visible=False)
    file = suite.figure_file("peak", key, several)
    save_figure(plt, fig, _file(plots_dir, file))
    return [Figure(file, "Peak injection bandwidth",
                   f"One bar per traffic mix in MLC's order, every load thread at full speed; "
                   f"{suite.load_threads_text(pts)}; {suite.engine_text(pts)}, {suite.pages_text(pts)}."
                   + (" Whiskers: the 95 % interval of each bar's mean." if any(errs) else ""), Kind.MEMORY)]


def scaling_figure(key: tuple[str, ...], pts: Sequence[MemoryRow], several: bool, plots_dir: Path) -> list[Figure]:
    traffics = sorted({p.traffic or "R" for p in pts}, key=suite.peak_order)
    plt = load_pyplot()
    fig = plt.figure(figsize=(5.6, 3.4))
    width, height = fig.get_figwidth(), fig.get_figheight()
    ax = fig.add_axes((0.75 / width, 0.55 / height, 1 - 0.95 / width, 1 - 0.85 / height))
    counts: set[int] = set()
    busy = False
    for t in traffics:
        line = sorted((n, v) for p in pts if (p.traffic or "R") == t
                      and (n := suite.threads_of(p)) is not None and (v := suite.value(p)) is not None)
        counts |= {n for n, _ in line}
        (ln,) = ax.plot([n for n, _ in line], [v / 1e3 for _, v in line], marker="o", markersize=3,
                        label=f"{t} ({TRAFFIC_DESCRIPTIONS.get(t, t)})")
        mine = [p for p in pts if (p.traffic or "R") == t and suite.threads_of(p) is not None
                and suite.value(p) is not None]
        busy |= mark_contended(ax, mine, lambda p: float(suite.threads_of(p) or 0),
                               lambda p: (suite.value(p) or 0.0) / 1e3, ln.get_color())
    ax.set_xticks(sorted(counts) if len(counts) <= 16 else sorted(counts)[::math.ceil(len(counts) / 16)])
    ax.set_ylim(bottom=0)
    ax.set_xlabel("load threads")
    ax.set_ylabel("bandwidth (GB/s, 10^9 B/s)")
    legend_with(ax, contended_entry() if busy else [], loc="lower right", fontsize=TEXT_PT)
    file = suite.figure_file("scaling", key, several)
    save_figure(plt, fig, _file(plots_dir, file))
    return [Figure(file, "Bandwidth against load threads",
                   f"One line per traffic type: bandwidth of N load threads on the first N CPUs (y from 0); "
                   f"{suite.engine_text(pts)}, {suite.pages_text(pts)}." + (CONTENDED_NOTE if busy else ""),
                   Kind.MEMORY)]


# --- working set ---------------------------------------------------------------------------------------------


def _size_axis(ax: Axes, lo: int, hi: int) -> None:
    """x: buffer size on a log₂ axis, a labelled tick every power of four that fits."""
    ax.set_xscale("log", base=2)
    first, last = math.floor(math.log2(lo)), math.ceil(math.log2(hi))
    step = 2 if last - first <= 16 else 4
    ticks = [2.0 ** e for e in range(first - first % 2, last + 1, step)]
    ax.set_xticks(ticks, labels=[format_size(int(t)) for t in ticks])
    ax.minorticks_off()
    ax.set_xlim(2.0 ** first / 1.2, 2.0 ** last * 1.2)


def _plateau_labels(ax: Axes, found: Sequence[plateaus.Plateau], colour: object, above: bool) -> None:
    """Each plateau as a shaded bar over its sizes, its median latency written above (or below) it."""
    for pla in found:
        ax.plot([pla.first, pla.last], [pla.latency] * 2, color=colour, linewidth=4, alpha=0.3,
                solid_capstyle="butt")
        ax.annotate(f"{pla.latency:.2f} ns", (pla.middle, pla.latency), xytext=(0, 7 if above else -12),
                    textcoords="offset points", ha="center", fontsize=TEXT_PT, color=colour,
                    bbox={"boxstyle": "round,pad=0.15", "fc": "white", "ec": "none", "alpha": 0.8})


def _cache_lines(ax: Axes, caches: Sequence[plateaus.Cache]) -> None:
    for cache in caches:
        ax.axvline(cache.size, color="0.35", linestyle=":", linewidth=1)
        ax.text(cache.size, 1.0, f" {cache.name} {format_size(cache.size)}", transform=ax.get_xaxis_transform(),
                ha="center", va="bottom", fontsize=TEXT_PT, color="0.25")


def _curves(ax: Axes, grouped: dict[tuple[str, ...], list[MemoryRow]]) -> list[str]:
    """One line per page size with its plateaus; the notes of the curves too short to detect any."""
    notes = []
    # the slower curve's plateau labels above its line, the faster one's below: two page sizes do not collide
    order = sorted(grouped, key=lambda k: statistics.median([v for _, v in suite.curve(grouped[k])] or [0.0]))
    for key, group in grouped.items():
        points = suite.curve(group)
        if not points:
            continue
        label = suite.page_words(key[1]) + (f", {suite.engine_text(group)}" if len({k[0] for k in grouped}) > 1 else "")
        (ln,) = ax.plot([s for s, _ in points], [v for _, v in points], marker="o", markersize=2.5, linewidth=1.2,
                        label=label)
        mark_contended(ax, [p for p in group if p.buffer is not None and p.latency is not None],
                       lambda p: float(p.buffer or 0), lambda p: p.latency or 0.0, ln.get_color())
        clean = suite.curve(group, clean=True)  # plateaus from the sizes whose thread got its CPU
        found = plateaus.detect(clean)
        if found is None:
            notes.append(f"{label}: {len(clean)} {'clean ' if len(clean) < len(points) else ''}sizes, too few to "
                         "detect plateaus")
        else:
            _plateau_labels(ax, found, ln.get_color(), above=order.index(key) == len(order) - 1)
    return notes


def working_set_figure(pts: Sequence[MemoryRow], plots_dir: Path) -> list[Figure]:
    grouped = suite.groups(pts)
    caches = suite.sysfs_caches(pts)
    plt = load_pyplot()
    fig = plt.figure(figsize=(7.6, 4.6))
    width, height = fig.get_figwidth(), fig.get_figheight()
    ax = fig.add_axes((0.75 / width, 0.55 / height, 1 - 0.95 / width, 1 - 1.0 / height))
    sizes = [b for p in pts if (b := p.buffer) is not None]
    notes = _curves(ax, grouped)
    ax.set_yscale("log")
    _size_axis(ax, min(sizes), max(sizes + [c.size for c in caches]))
    lo, hi = ax.get_ylim()
    ax.set_ylim(lo / 1.3, hi * 1.6)  # room for the labels above the top plateau and the cache names
    plain_log(ax, "y")
    _cache_lines(ax, caches)
    if notes:  # said on the figure too: a reader of the image alone must not look for plateaus
        ax.text(0.99, 0.03, "\n".join(notes), transform=ax.transAxes, ha="right", va="bottom", fontsize=TEXT_PT,
                bbox={"boxstyle": "round,pad=0.3", "fc": "white", "ec": "0.6"})
    ax.set_xlabel("buffer size (bytes, log₂)")
    ax.set_ylabel("latency (ns, log)")
    busy = any(contention.contended(p) for p in pts if p.buffer is not None and p.latency is not None)
    legend_with(ax, contended_entry() if busy else [], loc="upper left", fontsize=TEXT_PT)
    file = suite.figure_file("working_set", (), False)
    save_figure(plt, fig, _file(plots_dir, file))
    listed = ", ".join(f"{c.name} {format_size(c.size)}" for c in caches)
    cache_text = f"dotted lines: the caches sysfs lists ({listed})" if caches else "cache sizes not recorded"
    caption = (f"Idle latency against buffer size, log-log, one line per page size; {cache_text}; shaded bars and "
               "labels: the plateaus detected from the curve (median latency of each), see the table"
               + ("; " + "; ".join(notes) if notes else "") + "." + (CONTENDED_NOTE if busy else ""))
    return [Figure(file, "Latency against working-set size", caption, Kind.MEMORY)]
