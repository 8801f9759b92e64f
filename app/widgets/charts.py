"""Live charts (textual-plotext).  Data arrives as events; drawing happens at most at the screen's
redraw tick (1–2 Hz): ``add_*`` only appends to bounded deques and marks the chart dirty, ``redraw``
clears the plot data and plots again.  Every tick label carries its unit ("2ms", "50k/s", "120MB/s",
"10s"), so no axis needs a separate unit line."""

from __future__ import annotations

import math
from collections import deque
from typing import TYPE_CHECKING, Any, Hashable, cast

from textual_plotext import PlotextPlot

from app.core.units import format_count
from app.widgets.glyphs import (
    ASCII_HOST_MARKERS,
    binary_units,
    by_marker,
    line_marker,
    line_name,
    mbps_unit,
    point_marker,
)
from app.widgets.series import plottable, spaced

if TYPE_CHECKING:
    from textual.app import RenderResult

MAX_SAMPLES = 600  # ten minutes of 1 s fio status dumps per series
MAX_POINTS = 2000
# a fleet run: one line per host (samples with a ``host``), the fleet total (``host`` None) as the main line.
# Series are kept for up to MAX_HOST_SERIES hosts (app.fleet.hosts.MAX_HOSTS); lines are drawn for the first
# len(HOST_COLORS), in these colours (RGB: plotext and rich draw the same colour; none is blue or green, the
# main lines' colours)
MAX_HOST_SERIES = 64
HOST_COLORS: tuple[tuple[int, int, int], ...] = ((255, 160, 0), (230, 80, 230), (255, 80, 80), (240, 230, 60),
                                                 (0, 200, 255), (230, 230, 230), (255, 150, 200))
# a time series' a and b lines, and the third a chart may add on request (the latency chart's p99.9)
LINE_COLORS: tuple[tuple[int, int, int], ...] = ((60, 120, 255), (80, 220, 80), (255, 60, 60))
LINE_NAMES = ("blue", "green", "red")  # their colours as a title names them


# Units of tick labels: a chart's data unit → (scale, suffix, from) rungs.  An axis is labelled in the
# largest rung whose ``from`` its largest |value| reaches (a value v reads v / scale + suffix), every tick
# of the axis in that rung; ZERO is the label of 0 where the rung's own would be odd ("0k/s").
UNITS: dict[str, tuple[tuple[float, str, float], ...]] = {
    "IOPS": ((1.0, "/s", 0.0), (1e3, "k/s", 1e4), (1e6, "M/s", 1e6)),  # as fio prints IOPS: 5513, 22.2k, 1.2M
    "MB/s": ((1e-3, "kB/s", 0.0), (1.0, "MB/s", 1.0), (1e3, "GB/s", 1e3)),
    # the same data (MB/s) labelled in binary units (the units toggle): ticks fall on round MiB/s
    "MiB/s": ((1024 / 1e6, "KiB/s", 0.0), ((1 << 20) / 1e6, "MiB/s", (1 << 20) / 1e6),
              ((1 << 30) / 1e6, "GiB/s", (1 << 30) / 1e6)),
    "µs": ((1e-3, "ns", 0.0), (1.0, "µs", 1.0), (1e3, "ms", 1e3), (1e6, "s", 1e6)),
    "ns": ((1.0, "ns", 0.0), (1e3, "µs", 1e3), (1e6, "ms", 1e6)),
    "s": ((1.0, "s", 0.0), (60.0, "min", 300.0), (3600.0, "h", 3 * 3600.0)),
}
ZERO = {"IOPS": "0/s"}


def unit_rung(unit: str, values: list[float]) -> tuple[float, str]:
    """(scale, suffix) an axis of ``values`` in ``unit`` is labelled in."""
    top = max((abs(v) for v in values), default=0.0)
    scale, suffix = UNITS[unit][0][:2]
    for s, suf, start in UNITS[unit]:
        if top >= start:
            scale, suffix = s, suf
    return scale, suffix


def _decimals(step: float) -> int:
    """Decimals that write a tick step (and so every multiple of it) exactly: 0.25 → 2, 5 → 0."""
    for d in range(7):
        if abs(round(step, d) - step) <= 1e-9 * max(1.0, abs(step)):
            return d
    return 6


def tick_labels(ticks: list[float], unit: str, suffix: str) -> list[str]:
    """Tick values (in the rung's unit) as labels that each carry it: "500µs", "1.5ms", "50k/s"."""
    step = ticks[1] - ticks[0] if len(ticks) > 1 else 1.0
    d = _decimals(step)
    labels = []
    for t in ticks:
        if abs(t) <= abs(step) * 1e-9:
            labels.append(ZERO.get(unit, "0" + suffix))
            continue
        text = f"{t:.{d}f}"
        if "." in text:
            text = text.rstrip("0").rstrip(".")
        labels.append(text + suffix)
    return labels


def nice_ticks(lo: float, hi: float, count: int = 4) -> list[float]:
    """Round tick positions covering [lo, hi]: at least two inside it when the range is not empty (a step
    of about (hi - lo) / count can leave a single tick: 1k..17.6k in steps of 10k has only 10k)."""
    if hi <= lo:
        hi = lo + 1
    raw = (hi - lo) / max(1, count)
    mag = 10 ** math.floor(math.log10(raw))
    steps = [m * mag for m in (0.1, 0.2, 0.25, 0.5, 1, 2, 2.5, 5, 10)]
    first = next(i for i, step in enumerate(steps) if step >= raw)
    ticks: list[float] = []
    for step in steps[first::-1]:  # the round step that suits count, then finer ones until two fit
        ticks = _ticks_within(lo, hi, step)
        if len(ticks) >= 2:
            break
    return ticks or [lo]


def _ticks_within(lo: float, hi: float, step: float) -> list[float]:
    ticks = []
    t = math.floor(lo / step) * step
    while t <= hi + step * 1e-9:
        if t >= lo - step * 1e-9:
            ticks.append(round(t, 10))
        t += step
    return ticks


class Chart(PlotextPlot):
    title = ""
    xlabel = ""
    ylabel = ""
    xunit = ""  # a key of UNITS: every tick label of the axis carries its unit ("" for a bare number)
    yunit = ""

    def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self.dirty = True
        self.drawn = 0  # how many times the plot was drawn (redraw): the key of the picture kept by render
        self.built: tuple[Hashable, RenderResult] | None = None
        self.ylabel_width = 6  # the y tick labels' columns: set when the y ticks are (draw them before x's)

    def on_mount(self) -> None:
        super().on_mount()
        self.plt.title(self.title)
        self.plt.xlabel(self.xlabel)
        if self.ylabel:
            self.plt.ylabel(self.ylabel)
        self.redraw()

    def on_resize(self) -> None:
        """Plotted again at the new size (tick labels that fit depend on it), not at the next tick."""
        self.dirty = True
        self.redraw()

    def redraw(self) -> None:
        if not self.dirty:
            return
        self.dirty = False
        self.plt.clear_data()
        self.draw()
        self.drawn += 1  # the plot changed: the next render builds it again
        self.refresh()

    def render(self) -> RenderResult:
        """plotext's picture of the plot, built again only when the plot, the size or the theme changed: a tab
        switched back, or a question shown over the charts, repaints them without building them again (tens of
        milliseconds a chart on a busy machine, on the event loop, while the key waits)."""
        key = (self.drawn, self.size, self.app.theme)
        if self.built is None or self.built[0] != key:
            self.built = (key, super().render())
        return self.built[1]

    def draw(self) -> None:  # pragma: no cover - overridden
        raise NotImplementedError

    def ticks(self, axis: str, values: list[float], side: str | None = None, unit: str | None = None) -> None:
        """Tick positions and labels of an axis covering ``values``; labels carry ``unit`` (by default the
        chart's ``xunit``/``yunit``), in the rung that suits the values (µs → ms, IOPS → k/s)."""
        if not values:
            return
        unit = (self.xunit if axis == "x" else self.yunit) if unit is None else unit
        if unit == "MB/s" and binary_units(self):
            unit = "MiB/s"
        count = max(3, self.size.height // 5) if axis == "y" else 4  # a taller chart, more labels
        if unit:
            scale, suffix = unit_rung(unit, values)
            shown = nice_ticks(min(values) / scale, max(values) / scale, count)
            labels = tick_labels(shown, unit, suffix)
            ticks = [t * scale for t in shown]
        else:
            ticks = nice_ticks(min(values), max(values), count)
            step = ticks[1] - ticks[0] if len(ticks) > 1 else 1.0
            if step >= 1:
                labels = [format_count(t, fractions=True) for t in ticks]
            else:
                digits = max(1, math.ceil(-math.log10(step)))
                labels = [f"{t:.{digits}f}" for t in ticks]
        if axis == "y":
            self.ylabel_width = max(len(label) for label in labels) + 1  # and the tick mark
            # plotext declares no types; mypy reads yside's from a default it cannot see through
            self.plt.yticks(ticks, labels, yside=cast(Any, side))
        else:
            ticks, labels = self.fitting(ticks, labels, min(values), max(values))
            self.plt.xticks(ticks, labels)

    def fitting(self, ticks: list[float], labels: list[str], lo: float, hi: float) -> tuple[list[float], list[str]]:
        """The x ticks whose labels fit side by side at this width (each at least a column apart).  plotext
        itself drops labels that collide, but which ones varies from one process to the next."""
        usable = max(1, self.size.width - self.ylabel_width - 2)  # beside the y labels, inside the frame
        span = hi - lo if hi > lo else 1.0
        return spaced(ticks, labels, [(t - lo) / span * usable for t in ticks])


class HostSeries:
    """One fleet host's samples: time and the two values, bounded like the main series."""

    def __init__(self) -> None:
        self.t: deque[float] = deque(maxlen=MAX_SAMPLES)
        self.a: deque[float | None] = deque(maxlen=MAX_SAMPLES)
        self.b: deque[float | None] = deque(maxlen=MAX_SAMPLES)


class TimeSeries(Chart):
    """Up to two series over run time (seconds since the run started), each drawn in its colour of
    LINE_COLORS on the left axis and named in the title (plotext's own legend sits on the data).  A value
    that is missing (None) is a gap, never a zero: the line stops and starts again.  A fleet run adds one
    line per host (the first drawn series, in the host's colour of HOST_COLORS); the main lines are the
    fleet total."""

    series: tuple[str, str] = ("", "")  # the labels of a and b; an empty label: that series is not drawn
    # the label of c; while ``show_third`` (a key toggles it) the chart draws b and c instead of a and b, so that
    # its title, the legend, still fits a third of 80 columns; "" for none
    third: str = ""
    fleet_series: tuple[str, str] = ("", "")  # the main lines' labels when they are a fleet's total
    xunit = "s"

    def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self.t: deque[float] = deque(maxlen=MAX_SAMPLES)
        self.a: deque[float | None] = deque(maxlen=MAX_SAMPLES)
        self.b: deque[float | None] = deque(maxlen=MAX_SAMPLES)
        self.c: deque[float | None] = deque(maxlen=MAX_SAMPLES)  # kept while hidden: shown, it has the history
        self.show_third = False
        self.hosts: dict[str, HostSeries] = {}  # host name → its series, in the order they first reported

    def on_mount(self) -> None:
        self.title = self.titled(self.labels())
        super().on_mount()

    def labels(self) -> tuple[str, str, str]:
        """The labels of a, b and c as drawn now ("": not drawn): a fleet's total lines, a and b, or b and c."""
        if self.hosts:
            return (*self.fleet_series, "")
        if self.show_third and self.third:
            return ("", self.series[1], self.third)
        return (*self.series, "")

    def toggle_third(self) -> bool:
        """b and c instead of a and b, or back (no-op for a chart without c); whether c is shown now."""
        if self.third:
            self.show_third = not self.show_third
            self.title = self.titled(self.labels())
            self.plt.title(self.title)
            self.dirty = True
            self.redraw()
        return self.show_third

    def titled(self, labels: tuple[str, ...]) -> str:
        """"IOPS", or "mean blue, p99 green" when lines share the chart: the title is the legend."""
        unit = mbps_unit(self)
        drawn = [(label, name) for label, name in zip(labels, LINE_NAMES) if label]
        # ASCII mode names a line by its marker, by its place among the lines drawn (as draw() gives them)
        drawn = [(label.replace("MB/s", unit), line_name(self, i, name)) for i, (label, name) in enumerate(drawn)]
        if len(drawn) == 1:
            return drawn[0][0]
        return ", ".join(f"{label} {name}" for label, name in drawn)

    def figures(self, data: dict[str, object]) -> tuple[float | None, float | None]:  # pragma: no cover - overridden
        """A live sample's a and b (None: the sample has no such figure)."""
        raise NotImplementedError

    def figure_c(self, data: dict[str, object]) -> float | None:
        """A live sample's c (charts with a ``third`` series say which figure)."""
        return None

    def add_sample(self, t: float, data: dict[str, object]) -> None:
        """A sample; one with a ``host`` is that fleet host's (its line), else the run's (or the fleet total)."""
        a, b = self.figures(data)
        host = data.get("host")
        if host is not None:
            self.add_host(str(host), t, a, b)
        else:
            self.add(t, a, b, self.figure_c(data))

    def add(self, t: float, a: float | None, b: float | None, c: float | None = None) -> None:
        """A sample's values at ``t``; a value no chart can draw (app.widgets.series.plottable) is a gap, a
        sample at such a time is not kept."""
        if plottable(t) is None:
            return
        self.t.append(t)
        self.a.append(plottable(a))
        self.b.append(plottable(b))
        self.c.append(plottable(c))
        self.dirty = True

    def gap(self) -> None:
        """The line stops here (a new point begins: what comes next is another fio run, not a continuation)."""
        if self.t and (self.a[-1] is not None or self.b[-1] is not None or self.c[-1] is not None):
            self.add(self.t[-1], None, None)
        for series in self.hosts.values():
            if series.t and series.a[-1] is not None:
                series.t.append(series.t[-1])
                series.a.append(None)
                series.b.append(None)

    def add_host(self, host: str, t: float, a: float | None, b: float | None) -> None:
        """A fleet host's sample (beyond MAX_HOST_SERIES hosts, a new host's samples are not kept)."""
        series = self.hosts.get(host)
        if plottable(t) is None:
            return
        if series is None:
            if len(self.hosts) >= MAX_HOST_SERIES:
                return
            series = self.hosts[host] = HostSeries()
        series.t.append(t)
        series.a.append(plottable(a))
        series.b.append(plottable(b))
        self.dirty = True

    def drawn_hosts(self) -> list[tuple[str, tuple[int, int, int]]]:
        """The hosts drawn as lines, with their colours (the legend under the charts names them)."""
        return list(zip(self.hosts, HOST_COLORS))

    def draw(self) -> None:
        if not self.t and not self.hosts:
            return
        labels = self.labels()
        if self.title != self.titled(labels):
            self.title = self.titled(labels)
            self.plt.title(self.title)
        times: list[float] = list(self.t)
        values: list[float] = []
        index = 0  # among the lines drawn
        for values_of, label, color in zip((self.a, self.b, self.c), labels, LINE_COLORS):
            if label:
                values += self.line(list(self.t), list(values_of), color, line_marker(self, index))
                index += 1
        first = 0 if labels[0] else 1  # a host's line is its first drawn series
        for i, (host, color) in enumerate(self.drawn_hosts()):
            series = self.hosts[host]
            marker = ASCII_HOST_MARKERS[i % len(ASCII_HOST_MARKERS)] if by_marker(self) else "braille"
            values += self.line(list(series.t), list((series.a, series.b)[first]), color, marker)
            times += series.t
        if values:
            self.ticks("y", values, "left")
            self.ticks("x", times)

    def line(self, t: list[float], values: list[float | None], color: tuple[int, int, int],
             marker: str = "braille") -> list[float]:
        """``values`` drawn as lines broken at each None; the values drawn."""
        drawn: list[float] = []
        for times, segment in segments(t, values):
            self.plt.plot(times, segment, marker=marker, color=color)
            drawn += segment
        return drawn


def segments(t: list[float], values: list[float | None]) -> list[tuple[list[float], list[float]]]:
    """The runs of ``values`` between Nones, with their times."""
    out: list[tuple[list[float], list[float]]] = []
    run: tuple[list[float], list[float]] = ([], [])
    for x, v in zip(t, values):
        if v is None:
            if run[0]:
                out.append(run)
            run = ([], [])
        else:
            run[0].append(x)
            run[1].append(v)
    if run[0]:
        out.append(run)
    return out


def number(data: dict[str, object], key: str, per: float = 1.0) -> float | None:
    """A sample's figure in units of ``per``, or None when the sample has none or none a chart can draw (a gap in
    the line, not a zero)."""
    value = data.get(key)
    if not isinstance(value, (int, float, str)) or isinstance(value, bool):
        return None  # the runners' samples carry numbers
    try:
        return plottable(float(value) / per)
    except (OverflowError, ValueError):  # an integer beyond a float, a word
        return None


class ThroughputChart(TimeSeries):
    """IOPS alone: MB/s is IOPS times the block size, so on a second axis its line lay exactly under IOPS."""

    series = ("IOPS", "")
    fleet_series = ("total IOPS", "")
    yunit = "IOPS"

    def figures(self, data: dict[str, object]) -> tuple[float | None, float | None]:
        """Both kept (a: IOPS, b: MB/s); each of the two charts draws its own."""
        return number(data, "iops"), number(data, "bw_bytes", 1e6)


class BandwidthChart(ThroughputChart):
    series = ("", "MB/s")
    fleet_series = ("", "total MB/s")
    yunit = "MB/s"


class LatencyChart(TimeSeries):
    """Mean and p99 per second, or (the run screen's ``t``) p99 and p99.9: each second's own percentiles, from the
    histogram bins that changed in that second, not running figures."""

    series = ("mean", "p99")
    third = "p99.9"
    fleet_series = ("total mean", "")  # a fleet's live figures are block-layer counters: no percentiles
    yunit = "µs"

    def figures(self, data: dict[str, object]) -> tuple[float | None, float | None]:
        return number(data, "lat_mean_ns", 1e3), number(data, "lat_p99_ns", 1e3)

    def figure_c(self, data: dict[str, object]) -> float | None:
        return number(data, "lat_p99_9_ns", 1e3)


OPEN_LOOP_TITLE = "mean latency vs offered IOPS (o: closed-by-generator)"


class CurveChart(Chart):
    """One point per completed plan point: x throughput, y latency.  Storage: IOPS vs mean latency (µs);
    memory (MLC's loaded-latency curve): bandwidth MB/s vs latency ns."""

    def __init__(self, kind: str = "storage", *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self.kind = kind
        self.points: dict[int | tuple[int, str], tuple[float, float]] = {}  # a fleet run: (index, host)
        # open-loop points (rate set): offered IOPS, mean latency µs, whether the loop stayed open; once one came,
        # the chart is latency against offered load, the closed-loop points left to the report
        self.offered: dict[int | tuple[int, str], tuple[float, float, bool]] = {}
        if kind == "memory":
            self.title, self.xunit, self.yunit = "loaded latency vs bandwidth", "MB/s", "ns"
        else:
            self.title, self.xunit, self.yunit = "mean latency vs IOPS", "IOPS", "µs"

    def add_point(self, index: int | tuple[int, str], x: float, y: float) -> None:
        """A completed point's figures; one a chart cannot draw (app.widgets.series.plottable) is left out."""
        px, py = plottable(x), plottable(y)
        if px is None or py is None:
            self.points.pop(index, None)
            return
        self.points[index] = (px, py)
        while len(self.points) > MAX_POINTS:
            self.points.pop(next(iter(self.points)))
        self.dirty = True

    def add_record(self, record: dict[str, Any]) -> None:  # a results line (app.store.results checked it)
        m = record.get("metrics") or {}
        if self.kind == "memory":
            if m.get("bandwidth_mbps") is not None:
                self.add_point(record.get("index", len(self.points)), float(m["bandwidth_mbps"]),
                               float(m.get("latency_ns") or 0))
        else:
            lat = (m.get("lat_ns") or {}).get("mean") or 0
            index = record.get("index", len(self.points))
            key = (index, str(record["host"])) if record.get("host") is not None else index  # a fleet host's point
            loop = record.get("open_loop")
            if isinstance(loop, dict):
                self.add_offered(key, loop.get("offered_iops"), float(lat) / 1e3, loop.get("valid") is True)
                return
            self.add_point(key, float(m.get("iops") or 0), float(lat) / 1e3)

    def add_offered(self, key: int | tuple[int, str], offered: object, latency_us: float, valid: bool) -> None:
        """An open-loop point: its offered load and mean latency (a flagged one drawn apart: its latency, timed
        from issue, understates the waiting)."""
        px = plottable(float(offered)) if isinstance(offered, (int, float)) and not isinstance(offered, bool) else None
        py = plottable(latency_us)
        if px is None or py is None:
            self.offered.pop(key, None)
            return
        self.offered[key] = (px, py, valid)
        while len(self.offered) > MAX_POINTS:
            self.offered.pop(next(iter(self.offered)))
        if self.title != OPEN_LOOP_TITLE:
            self.title = OPEN_LOOP_TITLE
            if self.is_mounted:
                self.plt.title(self.title)
        self.dirty = True

    def draw(self) -> None:
        if self.offered:
            both = sorted(self.offered.values())
            self.ticks("y", [p[1] for p in both])
            self.ticks("x", [p[0] for p in both])
            for valid, marker in ((True, "x"), (False, "o")):
                chosen = [p for p in both if p[2] is valid]
                if chosen:
                    self.plt.scatter([p[0] for p in chosen], [p[1] for p in chosen], marker=marker)
            return
        if not self.points:
            return
        pts = sorted(self.points.values())
        xs, ys = [p[0] for p in pts], [p[1] for p in pts]
        self.ticks("y", ys)
        self.ticks("x", xs)
        if self.kind == "memory":
            self.plt.plot(xs, ys, marker=line_marker(self))
        self.plt.scatter(xs, ys, marker=point_marker(self) if self.kind == "memory" else "x")


class DelayChart(Chart):
    """Memory: latency against injection delay, point by point."""

    title = "latency vs delay"
    yunit = "ns"

    def __init__(self, *, id: str | None = None, classes: str | None = None, unit: str = "engine units") -> None:
        super().__init__(id=id, classes=classes)
        self.points: dict[int, tuple[float, float]] = {}
        self.xlabel = f"delay ({unit})"  # the engine's injection delay, in its own units (app.stats.summary.delay_unit)

    def add_point(self, index: int, delay: float, latency: float) -> None:
        px, py = plottable(delay), plottable(latency)
        if px is None or py is None:  # a figure no chart can draw: left out
            self.points.pop(index, None)
            return
        self.points[index] = (px, py)
        self.dirty = True

    def draw(self) -> None:
        if not self.points:
            return
        pts = sorted(self.points.values())
        self.ticks("y", [p[1] for p in pts])
        self.ticks("x", [p[0] for p in pts])
        self.plt.plot([p[0] for p in pts], [p[1] for p in pts], marker=line_marker(self))
        self.plt.scatter([p[0] for p in pts], [p[1] for p in pts], marker=point_marker(self))
