"""The fleet report's figure: the hosts side by side (matplotlib, Agg, SVG, through app.report.figures.plots: imported
only there, only when drawing).

Grouped bars, one group per point and one bar per host in the fleet's order and colour: on top each host's
IOPS (log scale: a fleet's points span orders of magnitude), below the same IOPS as a deviation from the fleet
median of the point (percent), the band of ±3 MADs around it and the outliers marked.  A figure holds as many
points as fit in MAX_WIDTH_IN inches (a group is wider the more hosts there are); more continue in
fleet-iops-2.svg and on, at most MAX_PAGES figures.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import TYPE_CHECKING, Sequence

from app.core.units import format_size
from app.model.points import Kind
from app.report.compute.fleet import MEASURES, MIN_OUTLIER_HOSTS, OUTLIER_MADS, FleetPoint, spread
from app.report.figures.plots import (
    MAX_PAGES,
    TEXT_PT,
    Figure,
    load_pyplot,
    page_name,
    page_title,
    plain_log,
    save_figure,
)

if TYPE_CHECKING:
    from types import ModuleType

    from matplotlib.artist import Artist
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure as MplFigure
    from matplotlib.typing import ColorType

MAX_WIDTH_IN = 14.0
BAR_IN = 0.09  # one host's bar
GROUP_PAD_IN = 0.35  # between two points' groups
MIN_GROUP_IN = 0.9  # room for the point's label under it
LEFT_IN = 0.8
NAME = "fleet-iops"
IOPS = MEASURES[0]


def group_width(hosts: int) -> float:
    return max(MIN_GROUP_IN, GROUP_PAD_IN + BAR_IN * hosts)


def legend_width(hosts: Sequence[str]) -> tuple[float, int]:
    """Inches the legend takes at the right, and its columns (at most 24 hosts a column)."""
    cols = math.ceil(len(hosts) / 24)
    return 0.3 + cols * (0.4 + 0.05 * max(len(h) for h in hosts)), cols


def points_per_figure(hosts: Sequence[str]) -> int:
    room = MAX_WIDTH_IN - LEFT_IN - legend_width(hosts)[0]
    return max(1, int(room // group_width(len(hosts))))


def distinct_colours(plt: ModuleType, n: int) -> list[ColorType]:
    if n <= 10:
        return [plt.get_cmap("tab10")(i) for i in range(n)]
    if n <= 20:  # the ten dark shades first, then the light ones: neighbouring bars differ in hue
        return [plt.get_cmap("tab20")((2 * i) % 20 + (1 if i >= 10 else 0)) for i in range(n)]
    cmap = plt.get_cmap("turbo")
    return [cmap(0.05 + 0.9 * i / (n - 1)) for i in range(n)]


def _label(fp: FleetPoint) -> str:
    p = next(iter(fp.rows.values()))
    rep = f"\nreplicate {fp.replicate}" if fp.replicate else ""
    return f"{p.mix} {format_size(p.bs)}\nQD{p.iodepth} T{p.numjobs}{rep}"


def _band(ax: Axes, fp: FleetPoint, x0: float, x1: float) -> None:
    """The outlier band of the point's IOPS (±3 spreads: MAD, at least 2 % of the median), in percent of the
    median (none with too few hosts)."""
    values = list(fp.values(IOPS).values())
    m = fp.medians.get("iops") or 0.0
    if len(values) < MIN_OUTLIER_HOSTS or m <= 0:
        return
    half = OUTLIER_MADS * spread(values, m) / m * 100
    if half > 0:
        ax.fill_between([x0, x1], [-half, -half], [half, half], color="grey", alpha=0.18, linewidth=0)


def _draw_group(axes: tuple[Axes, Axes], x: float, fp: FleetPoint, hosts: Sequence[str], colours: Sequence[ColorType],
                width: float) -> None:
    top, bottom = axes
    bar = width / len(hosts)
    left = x - width / 2
    _band(bottom, fp, left, left + width)
    for i, (h, c) in enumerate(zip(hosts, colours)):
        p = fp.rows.get(h)
        if p is None:
            continue
        cx = left + (i + 0.5) * bar
        if p.iops > 0:
            top.bar(cx, p.iops, width=bar, color=c, linewidth=0)
        d = fp.deviation(h, IOPS)
        if d is None:
            continue
        bottom.bar(cx, d, width=bar, color=c, linewidth=0)
        if fp.is_outlier(h, IOPS):
            bottom.plot([cx], [d], marker="x", color="red", markersize=6, markeredgewidth=1.5, linestyle="none")


def _legend(plt: ModuleType, fig: MplFigure, hosts: Sequence[str], colours: Sequence[ColorType], cols: int) -> None:
    handles: list[Artist] = [plt.Rectangle((0, 0), 1, 1, color=c, label=h) for h, c in zip(hosts, colours)]
    if len(hosts) >= MIN_OUTLIER_HOSTS:
        handles += [plt.Rectangle((0, 0), 1, 1, color="grey", alpha=0.18, label=f"±{OUTLIER_MADS:g} MAD"),
                    plt.Line2D([], [], marker="x", color="red", linestyle="none", label="outlier")]
    fig.legend(handles=handles, loc="center right", ncols=cols, frameon=False, fontsize=TEXT_PT)


def _draw_page(page: Sequence[FleetPoint], hosts: Sequence[str], path: Path) -> None:
    plt = load_pyplot()
    legend_in, cols = legend_width(hosts)
    gw = group_width(len(hosts))
    width = LEFT_IN + gw * len(page) + legend_in
    height = 5.6
    fig, (top, bottom) = plt.subplots(2, 1, figsize=(width, height), sharex=True)
    fig.subplots_adjust(left=LEFT_IN / width, right=1 - legend_in / width, bottom=0.6 / height,
                        top=1 - 0.35 / height, hspace=0.12)
    colours = distinct_colours(plt, len(hosts))
    for x, fp in enumerate(page):  # a group is one unit of x wide, its bars all of it but the padding
        _draw_group((top, bottom), float(x), fp, hosts, colours, (gw - GROUP_PAD_IN) / gw)
    top.set_yscale("log")
    top.set_ylabel("IOPS (log scale)")
    top.set_title("IOPS per point and host")
    plain_log(top, "y")
    bottom.axhline(0, color="black", linewidth=0.8)
    bottom.set_ylabel("IOPS vs fleet median (%)")
    bottom.set_xticks(range(len(page)), labels=[_label(fp) for fp in page], fontsize=TEXT_PT)
    bottom.set_xlim(-0.5, len(page) - 0.5)
    for ax in (top, bottom):
        ax.grid(axis="x", visible=False)
    _legend(plt, fig, hosts, colours, cols)
    save_figure(plt, fig, path)


def fleet_figures(points: Sequence[FleetPoint], hosts: Sequence[str], plots_dir: Path) -> list[Figure]:
    """The hosts-side-by-side figures (none for a fleet of one host or without a measured point)."""
    points = [fp for fp in points if fp.rows]
    if len(hosts) < 2 or not points:
        return []
    per = points_per_figure(hosts)
    pages = [points[i:i + per] for i in range(0, len(points), per)]
    left_out = sum(len(p) for p in pages[MAX_PAGES:])
    pages = pages[:MAX_PAGES]
    figures = []
    for i, page in enumerate(pages):
        _draw_page(page, hosts, plots_dir / page_name(NAME, i))
        note = ""
        if left_out and i == len(pages) - 1:
            note = (f" Not drawn: {left_out} further point(s), past {MAX_PAGES} figures; they are in the fleet "
                    "table and results.csv.")
        caption = (f"One group of bars per point, one bar per host ({len(hosts)} hosts, colours as in the legend). "
                   "Top: each host's IOPS, log scale; bottom: the same IOPS as a deviation from the fleet median "
                   f"of the point in percent" + (f", the grey band ±{OUTLIER_MADS:g} MADs around it, outliers "
                                                  "marked ×" if len(hosts) >= MIN_OUTLIER_HOSTS else "")
                   + "." + (f" {per} points per figure." if len(pages) > 1 else "") + note)
        figures.append(Figure(f"plots/{page_name(NAME, i)}", page_title("Hosts side by side: IOPS per point", i,
                                                                           len(pages)), caption, Kind.STORAGE))
    return figures
