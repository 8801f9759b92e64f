"""A still plot of a few labelled series (textual-plotext): the report view's curves in the terminal.

Every tick label carries its unit ("120µs", "45k IOPS", "16 in flight"), so a reader at 80 columns never
has to guess what a bare "2000" means.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

from rich.text import Text
from textual.app import RenderResult
from textual_plotext import PlotextPlot

from app.core.units import MIB_PER_MB, format_short, format_size_human
from app.widgets.glyphs import ascii_mode, binary_units

# RGB: plotext and rich draw the same colour (their colour names differ)
COLORS = ((0, 200, 255), (255, 160, 0), (80, 220, 80), (230, 80, 230), (255, 80, 80), (240, 230, 60), (230, 230, 230))
MAX_SERIES = len(COLORS)
ASCII_MARKERS = "*+ox#@%"  # ASCII mode: a character per series (its colour alone may not show)
# the largest |value| a chart draws, in its own unit (IOPS, MB/s, µs, ns, s): beyond any device's figure, and far
# within what plotext's arithmetic takes (it multiplies by 10^8 when it rounds: 1e307 overflowed to infinity and
# stopped the app).  A value above it, infinite or NaN is not drawn (a gap in a line, a point left out).
MAX_PLOTTED = 1e15
BYTES = "B"  # the unit of an axis of sizes in bytes: ticks at powers of two, labelled "64KiB", "1MiB"


def plottable(value: float | None) -> float | None:
    """``value`` when a chart can draw it (finite, at most :data:`MAX_PLOTTED` either way), else None."""
    if value is None or not math.isfinite(value) or abs(value) > MAX_PLOTTED:
        return None
    return value


@dataclass(frozen=True)
class Series:
    label: str
    xs: list[float]
    ys: list[float]


def _log_ticks(lo: float, hi: float) -> list[float]:
    """Powers of ten, with 2 and 5 between them when the range is short, covering [lo, hi]."""
    if lo <= 0 or hi <= 0:
        return []
    a, b = math.floor(math.log10(lo)), math.ceil(math.log10(hi))
    steps = (1, 2, 5) if b - a <= 2 else (1,)
    out = [m * 10.0 ** e for e in range(a, b + 1) for m in steps]
    return [t for t in out if lo * 0.999 <= t <= hi * 1.001] or [lo, hi]


def _power_of_two_ticks(lo: float, hi: float, most: int = 8) -> list[float]:
    """Powers of two covering [lo, hi], every second or fourth … one when there would be more than ``most``."""
    a, b = math.ceil(math.log2(lo) - 1e-9), math.floor(math.log2(hi) + 1e-9)
    step = 1
    while (b - a) // step + 1 > most:
        step *= 2
    return [2.0 ** e for e in range(a, b + 1, step)] or [lo, hi]


def _lin_ticks(lo: float, hi: float, count: int = 4) -> list[float]:
    """Round ticks inside [lo, hi] (plotext shows only those in the data's range)."""
    if hi <= lo:
        return [lo]
    raw = (hi - lo) / count
    mag = 10 ** math.floor(math.log10(raw))
    step = next(m * mag for m in (1, 2, 2.5, 5, 10) if m * mag >= raw)
    t = math.ceil(lo / step) * step
    out = []
    while t <= hi + step * 1e-9:
        out.append(round(t, 10))
        t += step
    return out or [lo, hi]


def spaced(ticks: list[float], labels: list[str], where: list[float]) -> tuple[list[float], list[str]]:
    """The ticks whose labels fit side by side, each two columns from the last (plotext rounds positions);
    ``where`` is each tick's column.  plotext itself drops labels that collide, but which ones varies from
    run to run."""
    kept: list[tuple[float, str]] = []
    end = -1.0
    for t, label, column in zip(ticks, labels, where):
        start = column - len(label) / 2
        if start >= end + 2:
            kept.append((t, label))
            end = start + len(label)
    return [t for t, _ in kept] or ticks[:1], [label for _, label in kept] or labels[:1]


def tick_label(value: float, unit: str) -> str:
    """"120µs", "2ms", "45k IOPS" → compact: the value and its unit in every label (a unit that is a word
    is given with its leading space: " IOPS")."""
    if unit == BYTES:
        return format_size_human(int(value)).replace(" ", "")
    if unit == "µs" and value >= 1000:
        return format_short(value / 1000) + "ms"
    if unit == "ns" and value >= 1000:
        return format_short(value / 1000) + "µs"
    if unit == "MB/s" and value >= 1000:
        return format_short(value / 1000) + "GB/s"  # not "2kMB/s"
    if unit == "MiB/s" and value >= 1024:
        return format_short(value / 1024) + "GiB/s"
    return format_short(value) + unit


def legend(series: Sequence[Series], markers: str | None = None) -> Text:
    """The series' names in their plot colours, one line (wrapped by the widget showing it); ``markers``: each
    series' plot character (ASCII mode), else a coloured dot."""
    text = Text()
    for i, (color, s) in enumerate(zip(COLORS, list(series)[:MAX_SERIES])):
        text.append(f"{markers[i]} " if markers else "● ", style="rgb({},{},{})".format(*color))
        text.append(s.label + "   ")
    if len(series) > MAX_SERIES:
        text.append(f"(+{len(series) - MAX_SERIES} more not drawn)")
    return text


class SeriesPlot(PlotextPlot):
    """``series`` drawn as lines with markers; ``xunit``/``yunit`` written on every tick label."""

    def __init__(self, title: str, series: Sequence[Series], xunit: str, yunit: str, *, xlog: bool = False,
                 ylog: bool = False, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self.title_text = title
        self.series = list(series)[:MAX_SERIES]
        self.xunit, self.yunit = xunit, yunit
        self.xlog, self.ylog = xlog, ylog

    def markers(self) -> str | None:
        """Each series' plot character in ASCII mode (None: coloured dots)."""
        return ASCII_MARKERS if ascii_mode(self) else None

    def render(self) -> RenderResult:
        """Plotted afresh at each rendering (a few dozen points): plotext's build takes the logarithm of a
        log axis's data in place, so a second build of the same data (the tab shown again, a scroll, a
        resize) drew an empty frame."""
        self.plot_data()
        return super().render()

    def plot_data(self) -> None:
        plt = self.plt
        plt.clear_data()
        # bandwidths in the unit of the app's toggle: the data stay in MB/s, ticks fall on round MiB/s
        xscale = MIB_PER_MB if self.xunit == "MB/s" and binary_units(self) else 1.0
        xunit = "MiB/s" if xscale != 1.0 else self.xunit
        plt.title(self.title_text.replace("MB/s", xunit) if xscale != 1.0 else self.title_text)
        markers = self.markers()
        drawn = [self.drawable(s) for s in self.series]
        xs = [x for pts in drawn for x, _ in pts]
        ys = [y for pts in drawn for _, y in pts]
        if not xs or not ys:
            return
        if self.xlog:
            plt.xscale("log")
        if self.ylog:
            plt.yscale("log")
        for i, (color, pts) in enumerate(zip(COLORS, drawn)):
            if pts:
                # no plotext label: its legend breaks on some markers; legend() gives the names below the plot
                plt.plot([p[0] for p in pts], [p[1] for p in pts], color=color, marker=markers[i] if markers else "dot")
        yticks, ylabels = self.axis(ys, self.yunit, self.ylog)
        plt.yticks(yticks, ylabels)
        xticks, xlabels = self.axis([x * xscale for x in xs], xunit, self.xlog)
        xticks = [t / xscale for t in xticks]
        width = self.size.width - max(map(len, ylabels), default=0) - 2  # the plot area beside the y labels
        plt.xticks(*spaced(xticks, xlabels, [self.column(t, min(xs), max(xs), width) for t in xticks]))

    def drawable(self, s: Series) -> list[tuple[float, float]]:
        """The points of ``s`` this plot draws: both coordinates :func:`plottable`, and above 0 on a log axis."""
        return [(x, y) for x, y in zip(s.xs, s.ys) if plottable(x) is not None and plottable(y) is not None
                and (x > 0 or not self.xlog) and (y > 0 or not self.ylog)]

    @staticmethod
    def axis(values: list[float], unit: str, log: bool) -> tuple[list[float], list[str]]:
        lo, hi = min(values), max(values)
        if unit == BYTES and log and lo >= 1:
            ticks = _power_of_two_ticks(lo, hi)
        else:
            ticks = _log_ticks(lo, hi) if log else _lin_ticks(lo, hi)
        return ticks, [tick_label(t, unit) for t in ticks]

    def column(self, value: float, lo: float, hi: float, width: int) -> float:
        """Where along an x axis ``width`` columns wide ``value`` is drawn."""
        if self.xlog and lo > 0:
            value, lo, hi = math.log10(value), math.log10(lo), math.log10(hi)
        return (value - lo) / (hi - lo) * width if hi > lo else 0.0
