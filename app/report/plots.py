"""The report's figures (matplotlib, Agg backend, imported only here and only when drawing).

Every figure is drawn only where the data has its dimension: a block-size plot needs a
workload measured at two or more block sizes, a heatmap needs at least two rows and two
columns with data, a latency-throughput curve needs two or more loads.  SVG output is made
reproducible (fixed hash salt, no date) so re-rendering the same directory gives the same files.
"""

from __future__ import annotations

import math
import multiprocessing as mp
import os
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Sequence

from app.report.analysis import Curve, MemCurve
from app.report.model import StoragePoint
from app.units import format_size

MAX_PANELS = 6


@dataclass
class Figure:
    file: str  # relative to the report: plots/NAME.svg
    title: str
    caption: str
    section: str  # "storage" | "memory"


def _plt() -> Any:
    import matplotlib

    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    matplotlib.rcParams.update({
        "svg.hashsalt": "profiler-tui",
        "svg.fonttype": "none",
        "figure.dpi": 100,
        "font.size": 8,
        "axes.titlesize": 9,
        "legend.fontsize": 7,
        "axes.grid": True,
        "grid.alpha": 0.3,
    })
    return plt


def _save(plt: Any, fig: Any, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, format="svg", metadata={"Date": None})
    plt.close(fig)


def _grid(plt: Any, rows: int, cols: int, w: float = 3.4, h: float = 2.7, left: float = 0.75,
          colorbar: bool = False) -> tuple[Any, list[list[Any]]]:
    """Subplots with fixed margins in inches (no tight-layout pass: it doubles the drawing time)."""
    width, height = w * cols, h * rows
    fig, axes = plt.subplots(rows, cols, figsize=(width, height), squeeze=False)
    fig.subplots_adjust(left=left / width, right=1 - (0.15 if not colorbar else 0.1) / width,
                        bottom=0.5 / height, top=1 - 0.3 / height,
                        wspace=(0.9 if colorbar else 0.55) * cols / width, hspace=0.75 * rows / height)
    return fig, [list(r) for r in axes]


def _mix_order(points: Sequence[StoragePoint]) -> list[str]:
    order: dict[str, tuple[int, int]] = {}
    for p in points:
        order.setdefault(p.mix, p.mix_order)
    return sorted(order, key=lambda m: (order[m], m))


def _plain_log(ax: Any, which: str = "y") -> None:
    """A log axis labelled with plain numbers (matplotlib's default 10^n labels go through the slow
    mathtext parser)."""
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter, NullLocator

    axis = ax.yaxis if which == "y" else ax.xaxis
    axis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0), numticks=8))
    axis.set_major_formatter(FuncFormatter(lambda v, _pos: _tick(v)))
    axis.set_minor_locator(NullLocator())
    axis.set_minor_formatter(NullFormatter())


def _tick(v: float) -> str:
    if v <= 0:
        return ""
    if v >= 1e6:
        return f"{v / 1e6:g}M"
    if v >= 1e3:
        return f"{v / 1e3:g}k"
    return f"{v:g}"


def _bs_ticks(ax: Any, values: Sequence[int]) -> None:
    ax.set_xscale("log", base=2)
    ax.set_xticks(list(values))
    ax.set_xticklabels([format_size(v) for v in values])
    ax.minorticks_off()


def _log2_ticks(ax: Any, values: Sequence[int]) -> None:
    ax.set_xscale("log", base=2)
    ax.set_xticks(list(values))
    ax.set_xticklabels([str(v) for v in values])
    ax.minorticks_off()


# --- storage -----------------------------------------------------------------------------------------


def _series(points: Sequence[StoragePoint], x: Callable[[StoragePoint], Any],
            line: Callable[[StoragePoint], Any]) -> dict[Any, list[StoragePoint]]:
    out: dict[Any, list[StoragePoint]] = {}
    for p in points:
        out.setdefault(line(p), []).append(p)
    return {k: sorted(v, key=x) for k, v in out.items() if len({x(p) for p in v}) >= 2}


def storage_vs_axis(points: Sequence[StoragePoint], plots_dir: Path, axis: str) -> Figure | None:
    """Throughput and mean latency vs block size (axis="bs") or vs queue depth × jobs (axis="qd")."""
    if axis == "bs":
        x = lambda p: p.bs  # noqa: E731
        line = lambda p: (p.mix, p.inflight, p.iodepth, p.numjobs, p.rest)  # noqa: E731
        legend = lambda p: f"QD{p.iodepth}" + (f"×{p.numjobs}" if p.numjobs > 1 else "")  # noqa: E731
    else:
        x = lambda p: p.inflight  # noqa: E731
        line = lambda p: (p.mix, p.bs, p.rest, p.numjobs if _jobs_split(points) else 0)  # noqa: E731
        legend = lambda p: format_size(p.bs) + (f" T{p.numjobs}" if _jobs_split(points) else "")  # noqa: E731
    series = _series(points, x, line)
    if not series:
        return None
    mixes = [m for m in _mix_order(points) if any(k[0] == m for k in series)][:MAX_PANELS]
    plt = _plt()
    fig, axes = _grid(plt, 2, len(mixes))
    throughput_iops = axis == "qd"
    for col, mix in enumerate(mixes):
        top, bottom = axes[0][col], axes[1][col]
        xs_all: set[int] = set()
        for key, pts in series.items():
            if key[0] != mix:
                continue
            xs = [x(p) for p in pts]
            xs_all.update(xs)
            label = legend(pts[0])
            if throughput_iops:
                top.plot(xs, [p.iops / 1e3 for p in pts], marker="o", label=label)
            else:
                top.plot(xs, [p.bw / 1e6 for p in pts], marker="o", label=label)
            bottom.plot(xs, [p.lat_mean / 1e3 for p in pts], marker="o", label=label)
        for ax in (top, bottom):
            (_bs_ticks if axis == "bs" else _log2_ticks)(ax, sorted(xs_all))
        top.set_title(mix)
        top.set_ylabel("throughput (kIOPS)" if throughput_iops else "throughput (MB/s)")
        bottom.set_ylabel("mean latency (µs)")
        bottom.set_yscale("log")
        _plain_log(bottom)
        bottom.set_xlabel("block size" if axis == "bs" else "outstanding I/Os (QD × jobs)")
        top.legend(loc="upper left")
    name = "storage-vs-block-size" if axis == "bs" else "storage-vs-queue-depth"
    _save(plt, fig, plots_dir / f"{name}.svg")
    if axis == "bs":
        return Figure(f"plots/{name}.svg", "Throughput and latency vs block size",
                      "Top: bandwidth (MB/s, 10^6 B/s); bottom: mean total latency (µs, log scale); one panel per "
                      "access pattern, one line per queue depth.", "storage")
    return Figure(f"plots/{name}.svg", "Throughput and latency vs queue depth",
                  "Top: IOPS (thousands); bottom: mean total latency (µs, log scale) against the I/Os kept "
                  "outstanding (queue depth × jobs); one panel per access pattern, one line per block size.",
                  "storage")


def _jobs_split(points: Sequence[StoragePoint]) -> bool:
    seen: dict[tuple[Any, ...], set[int]] = {}
    for p in points:
        key = (p.mix, p.bs, p.rest, p.inflight)
        seen.setdefault(key, set()).add(p.numjobs)
    return any(len(v) > 1 for v in seen.values())


def latency_throughput(curves: Sequence[Curve], plots_dir: Path) -> Figure | None:
    curves = [c for c in curves if len(c.points) >= 2]
    if not curves:
        return None
    mixes: list[str] = []
    for c in curves:
        if c.mix not in mixes:
            mixes.append(c.mix)
    mixes = mixes[:MAX_PANELS]
    plt = _plt()
    fig, axes = _grid(plt, 1, len(mixes), w=3.6, h=3.0)
    for col, mix in enumerate(mixes):
        ax = axes[0][col]
        for c in curves:
            if c.mix != mix:
                continue
            xs = [p.iops / 1e3 for p in c.points]
            ys = [p.lat_mean / 1e3 for p in c.points]
            (ln,) = ax.plot(xs, ys, marker="o", markersize=3, label=c.label.replace(mix + " ", "", 1))
            p99 = [(p.iops / 1e3, p.p99 / 1e3) for p in c.points if p.p99]
            if len(p99) == len(c.points):
                ax.plot([a for a, _ in p99], [b for _, b in p99], linestyle=":", color=ln.get_color(), linewidth=1)
            if c.knee is not None:
                k = c.points[c.knee]
                ax.plot([k.iops / 1e3], [k.lat_mean / 1e3], marker="*", markersize=11, color=ln.get_color(),
                        markeredgecolor="black", linestyle="none")
                ax.annotate(c.load_label(k), (k.iops / 1e3, k.lat_mean / 1e3), textcoords="offset points",
                            xytext=(4, -10), fontsize=7)
        ax.set_xscale("log")
        ax.set_yscale("log")
        _plain_log(ax, "x")
        _plain_log(ax, "y")
        ax.set_title(mix)
        ax.set_xlabel("throughput (kIOPS)")
        ax.set_ylabel("latency (µs): mean —, p99 ···")
        ax.legend(loc="upper left")
    _save(plt, fig, plots_dir / "latency-throughput.svg")
    return Figure("plots/latency-throughput.svg", "Latency–throughput curves",
                  "Each line is one workload at increasing queue depth; solid: mean latency, dotted: p99; the star "
                  "marks the saturation knee (farthest point from the chord, see Analysis). Log–log axes.", "storage")


def _heatmap_panels(points: Sequence[StoragePoint], rows_of: Callable[[StoragePoint], Any],
                    cols_of: Callable[[StoragePoint], Any], panel_of: Callable[[StoragePoint], Any]
                    ) -> list[tuple[Any, list[Any], list[Any], dict[tuple[Any, Any], StoragePoint]]]:
    panels: dict[Any, dict[tuple[Any, Any], StoragePoint]] = {}
    for p in points:
        panels.setdefault(panel_of(p), {}).setdefault((rows_of(p), cols_of(p)), p)
    out = []
    for key, cells in panels.items():
        cells = _dense(cells)
        rows = sorted({r for r, _ in cells})
        cols = sorted({c for _, c in cells})
        if len(rows) >= 2 and len(cols) >= 2:
            out.append((key, rows, cols, cells))
    return out[:MAX_PANELS]


def _dense(cells: dict[tuple[Any, Any], StoragePoint]) -> dict[tuple[Any, Any], StoragePoint]:
    """Drop rows and columns holding fewer than two measured cells, until none is left: a heatmap
    row with one value compares nothing (e.g. CrystalDiskMark-style presets, where each access
    pattern has its own block size)."""
    cells = dict(cells)
    while True:
        rows: dict[Any, int] = {}
        cols: dict[Any, int] = {}
        for r, c in cells:
            rows[r] = rows.get(r, 0) + 1
            cols[c] = cols.get(c, 0) + 1
        keep = {k: v for k, v in cells.items() if rows[k[0]] >= 2 and cols[k[1]] >= 2}
        if len(keep) == len(cells):
            return keep
        cells = keep


def heatmap(points: Sequence[StoragePoint], plots_dir: Path, kind: str,
            metrics: Sequence[str] = ("throughput", "latency")) -> list[Figure]:
    """Block size × mix (kind="bs") or queue depth × mix (kind="qd") heatmaps of MB/s and latency."""
    order = {m: i for i, m in enumerate(_mix_order(points))}
    rows_of = lambda p: order[p.mix]  # noqa: E731
    if kind == "bs":
        cols_of = lambda p: p.bs  # noqa: E731
        panel_of = lambda p: (p.iodepth, p.numjobs, p.rest)  # noqa: E731
        col_label = format_size
        panel_label = lambda k: f"QD{k[0]}" + (f"×{k[1]}" if k[1] > 1 else "")  # noqa: E731
        xlabel = "block size"
    else:
        cols_of = lambda p: p.inflight  # noqa: E731
        panel_of = lambda p: (p.bs, p.rest)  # noqa: E731
        col_label = str
        panel_label = lambda k: format_size(k[0])  # noqa: E731
        xlabel = "outstanding I/Os (QD × jobs)"
    panels = _heatmap_panels(points, rows_of, cols_of, panel_of)
    if not panels:
        return []
    mixes = {i: m for m, i in order.items()}
    figures = []
    plt = _plt()
    for metric, unit, value in (("throughput", "MB/s", lambda p: p.bw / 1e6),
                                ("latency", "mean µs", lambda p: p.lat_mean / 1e3)):
        if metric not in metrics:
            continue
        cmap = plt.get_cmap("viridis" if metric == "throughput" else "magma_r")
        fig, axes = _grid(plt, 1, len(panels), w=3.9, h=0.5 + 0.4 * max(len(r) for _, r, _, _ in panels) + 0.9,
                          left=1.1)
        for col, (key, rows, cols, cells) in enumerate(panels):
            ax = axes[0][col]
            grid = [[(value(cells[(r, c)]) if (r, c) in cells else math.nan) for c in cols] for r in rows]
            finite = [v for row in grid for v in row if not math.isnan(v)]
            norm = _lognorm(finite) if metric == "latency" else None
            ax.imshow(grid, aspect="auto", cmap=cmap, norm=norm)
            lo, hi = min(finite), max(finite)
            for i, row in enumerate(grid):
                for j, v in enumerate(row):
                    if not math.isnan(v):
                        ax.text(j, i, _short(v), ha="center", va="center", fontsize=6,
                                color="black" if _bright(cmap, v, lo, hi, norm is not None) else "white")
            ax.set_xticks(range(len(cols)))
            ax.set_xticklabels([col_label(c) for c in cols])
            ax.set_yticks(range(len(rows)))
            ax.set_yticklabels([mixes[r] for r in rows] if col == 0 else [])
            ax.set_xlabel(xlabel)
            ax.set_title(f"{panel_label(key)}: {unit}")
            ax.grid(False)
            ax.minorticks_off()
        name = f"heatmap-{'bs' if kind == 'bs' else 'qd'}-mix-{metric}"
        _save(plt, fig, plots_dir / f"{name}.svg")
        what = "block size × access pattern" if kind == "bs" else "queue depth × access pattern"
        per = "one panel per queue depth" if kind == "bs" else "one panel per block size"
        figures.append(Figure(f"plots/{name}.svg", f"Heatmap: {metric} over {what}",
                              f"Cells: {'bandwidth in MB/s (10^6 B/s)' if metric == 'throughput' else 'mean total latency in µs (log colour scale)'}"
                              + f"; {per}; blank cells were not measured.", "storage"))
    return figures


def _lognorm(values: Sequence[float]) -> Any:
    from matplotlib.colors import LogNorm

    pos = [v for v in values if v > 0]
    if not pos or min(pos) == max(pos):
        return None
    return LogNorm(vmin=min(pos), vmax=max(pos))


def _bright(cmap: Any, v: float, lo: float, hi: float, log: bool) -> bool:
    if hi <= lo:
        x = 0.5
    elif log and lo > 0:
        x = (math.log(v) - math.log(lo)) / (math.log(hi) - math.log(lo))
    else:
        x = (v - lo) / (hi - lo)
    r, g, b, _ = cmap(min(1.0, max(0.0, x)))
    return 0.299 * r + 0.587 * g + 0.114 * b > 0.5


def _short(v: float) -> str:
    if v >= 1000:
        return f"{v / 1000:.1f}k"
    if v >= 100:
        return f"{v:.0f}"
    return f"{v:.1f}" if v >= 10 else f"{v:.2f}"


# --- memory ------------------------------------------------------------------------------------------------


def memory_figures(curves: Sequence[MemCurve], plots_dir: Path) -> list[Figure]:
    curves = [c for c in curves if len(c.points) >= 2]
    if not curves:
        return []
    strides = sorted({c.stride for c in curves})[:MAX_PANELS]
    plt = _plt()
    figures = []
    # latency vs bandwidth (the loaded-latency curve)
    with_bw = [c for c in curves if all(p.bandwidth is not None for p in c.points)]
    if with_bw:
        fig, axes = _grid(plt, 1, len(strides), w=3.8, h=3.0)
        for col, stride in enumerate(strides):
            ax = axes[0][col]
            for c in with_bw:
                if c.stride != stride:
                    continue
                (ln,) = ax.plot([p.bandwidth / 1e3 for p in c.points], [p.latency for p in c.points],  # type: ignore
                                marker="o", markersize=3, label=c.traffic + (f" {format_size(c.buffer)}" if c.buffer else ""))
                if c.knee is not None:
                    k = c.points[c.knee]
                    ax.plot([k.bandwidth / 1e3], [k.latency], marker="*", markersize=11, color=ln.get_color(),  # type: ignore
                            markeredgecolor="black", linestyle="none")
            ax.set_title(f"stride {stride} B")
            ax.set_xlabel("bandwidth (GB/s, 10^9 B/s)")
            ax.set_ylabel("latency (ns)")
            ax.legend(loc="upper left")
        _save(plt, fig, plots_dir / "memory-latency-bandwidth.svg")
        figures.append(Figure("plots/memory-latency-bandwidth.svg", "Memory latency vs bandwidth",
                              "MLC-style loaded latency: each line is one traffic type, from the largest injection "
                              "delay (left, light load) to none (right); the star marks the knee.", "memory"))
    # latency and bandwidth vs injection delay
    fig, axes = _grid(plt, 2, len(strides), w=3.8, h=2.6)
    for col, stride in enumerate(strides):
        top, bottom = axes[0][col], axes[1][col]
        for c in curves:
            if c.stride != stride:
                continue
            pts = sorted(c.points, key=lambda p: p.delay or 0)
            label = c.traffic + (f" {format_size(c.buffer)}" if c.buffer else "")
            top.plot([p.delay for p in pts], [p.latency for p in pts], marker="o", markersize=3, label=label)
            if all(p.bandwidth is not None for p in pts):
                bottom.plot([p.delay for p in pts], [p.bandwidth / 1e3 for p in pts], marker="o", markersize=3,  # type: ignore
                            label=label)
        for ax in (top, bottom):
            ax.set_xscale("symlog", linthresh=10)
            from matplotlib.ticker import FuncFormatter, NullFormatter

            ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _pos: _tick(v) if v > 0 else "0"))
            ax.xaxis.set_minor_formatter(NullFormatter())
        top.set_title(f"stride {stride} B")
        top.set_ylabel("latency (ns)")
        bottom.set_ylabel("bandwidth (GB/s)")
        bottom.set_xlabel("injection delay (MLC delay units, symlog)")
        top.legend(loc="upper right")
    _save(plt, fig, plots_dir / "memory-vs-delay.svg")
    figures.append(Figure("plots/memory-vs-delay.svg", "Memory latency and bandwidth vs injection delay",
                          "Top: latency of the pointer-chasing thread (ns); bottom: bandwidth of the load threads "
                          "(GB/s); one panel per stride, one line per traffic type.", "memory"))
    return figures


def _job(args: tuple[Any, ...]) -> list[Figure]:
    what, storage, curves, mem_curves, plots_dir, extra = args
    if what == "vs":
        f = storage_vs_axis(storage, plots_dir, extra)
        return [f] if f else []
    if what == "lt":
        f = latency_throughput(curves, plots_dir)
        return [f] if f else []
    if what == "heat":
        return heatmap(storage, plots_dir, extra[0], (extra[1],))
    return memory_figures(mem_curves, plots_dir)


def draw_all(storage: Sequence[StoragePoint], curves: Sequence[Curve], mem_curves: Sequence[MemCurve],
             plots_dir: Path, parallel: bool = True) -> list[Figure]:
    """Draw every figure the data supports, in a fixed order.

    matplotlib spends its time laying out text, one CPU per figure; on a machine with several
    CPUs the figures are drawn by forked worker processes (only when this process runs a single
    thread, where fork is safe), which keeps a 120-point report well under five seconds.
    """
    jobs: list[tuple[Any, ...]] = []
    if storage:
        jobs += [("vs", storage, curves, (), plots_dir, "bs"), ("vs", storage, curves, (), plots_dir, "qd"),
                 ("lt", (), curves, (), plots_dir, None)]
        for kind in ("bs", "qd"):
            for metric in ("throughput", "latency"):
                jobs.append(("heat", storage, (), (), plots_dir, (kind, metric)))
    if mem_curves:
        jobs.append(("mem", (), (), mem_curves, plots_dir, None))
    _plt()  # import (and configure) matplotlib once, before any fork
    workers = min(len(jobs), os.cpu_count() or 1)
    if parallel and workers > 1 and threading.active_count() == 1 and "fork" in mp.get_all_start_methods():
        with mp.get_context("fork").Pool(workers) as pool:
            results = pool.map(_job, jobs, chunksize=1)
    else:
        results = [_job(j) for j in jobs]
    return [f for r in results for f in r]
