"""Live charts (textual-plotext).  Data arrives as events; drawing happens at most at the screen's
redraw tick (1–2 Hz): ``add_*`` only appends to bounded deques and marks the chart dirty, ``redraw``
clears the plot data and plots again."""

from __future__ import annotations

import math
from collections import deque
from typing import Any, cast

from textual_plotext import PlotextPlot

from app.units import format_count

MAX_SAMPLES = 600  # ten minutes of 1 s fio status dumps per series
MAX_POINTS = 2000


def nice_ticks(lo: float, hi: float, count: int = 4) -> list[float]:
    """Round tick positions covering [lo, hi]."""
    if hi <= lo:
        hi = lo + 1
    raw = (hi - lo) / max(1, count)
    mag = 10 ** math.floor(math.log10(raw))
    step = next(m * mag for m in (1, 2, 2.5, 5, 10) if m * mag >= raw)
    start = math.floor(lo / step) * step
    ticks = []
    t = start
    while t <= hi + step * 1e-9:
        if t >= lo - step * 1e-9:
            ticks.append(round(t, 10))
        t += step
    return ticks or [lo]


class Chart(PlotextPlot):
    title = ""
    xlabel = ""
    ylabel = ""

    def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:  # noqa: A002
        super().__init__(id=id, classes=classes)
        self.dirty = True

    def on_mount(self) -> None:
        super().on_mount()
        self.plt.title(self.title)
        self.plt.xlabel(self.xlabel)
        if self.ylabel:
            self.plt.ylabel(self.ylabel)
        self.redraw()

    def redraw(self) -> None:
        if not self.dirty:
            return
        self.dirty = False
        self.plt.clear_data()
        self.draw()
        self.refresh()

    def draw(self) -> None:  # pragma: no cover - overridden
        raise NotImplementedError

    def ticks(self, axis: str, values: list[float], side: str | None = None) -> None:
        if not values:
            return
        ticks = nice_ticks(min(values), max(values), 3 if axis == "y" else 4)
        step = ticks[1] - ticks[0] if len(ticks) > 1 else 1.0
        if step >= 1:
            labels = [format_count(t, fractions=True) for t in ticks]
        else:
            digits = max(1, math.ceil(-math.log10(step)))
            labels = [f"{t:.{digits}f}" for t in ticks]
        if axis == "y":
            # plotext declares no types; mypy reads yside's from a default it cannot see through
            self.plt.yticks(ticks, labels, yside=cast(Any, side))
        else:
            self.plt.xticks(ticks, labels)


class TimeSeries(Chart):
    """Two series over run time (seconds since the run started)."""

    series: tuple[str, str] = ("", "")
    right_axis = False

    def __init__(self, **kw: Any) -> None:
        super().__init__(**kw)
        self.t: deque[float] = deque(maxlen=MAX_SAMPLES)
        self.a: deque[float] = deque(maxlen=MAX_SAMPLES)
        self.b: deque[float] = deque(maxlen=MAX_SAMPLES)

    def add(self, t: float, a: float, b: float) -> None:
        self.t.append(t)
        self.a.append(a)
        self.b.append(b)
        self.dirty = True

    def draw(self) -> None:
        if not self.t:
            return
        t, a, b = list(self.t), list(self.a), list(self.b)
        right = "right" if self.right_axis else "left"
        self.plt.plot(t, a, label=self.series[0], marker="braille")
        self.plt.plot(t, b, label=self.series[1], marker="braille", yside=right)
        self.ticks("x", t)
        if self.right_axis:
            self.ticks("y", a, "left")
            self.ticks("y", b, "right")
        else:
            self.ticks("y", a + b, "left")


class ThroughputChart(TimeSeries):
    title = "IOPS and MB/s"
    xlabel = "s"
    series = ("IOPS", "MB/s")
    right_axis = True

    def add_sample(self, t: float, data: dict[str, Any]) -> None:
        self.add(t, float(data.get("iops") or 0), float(data.get("bw_bytes") or 0) / 1e6)


class LatencyChart(TimeSeries):
    title = "latency µs"
    xlabel = "s"
    series = ("mean", "p99")

    def add_sample(self, t: float, data: dict[str, Any]) -> None:
        self.add(t, float(data.get("lat_mean_ns") or 0) / 1e3, float(data.get("lat_p99_ns") or 0) / 1e3)


class CurveChart(Chart):
    """One point per completed plan point: x throughput, y latency.  Storage: IOPS vs mean latency (µs);
    memory (MLC's loaded-latency curve): bandwidth MB/s vs latency ns."""

    def __init__(self, kind: str = "storage", **kw: Any) -> None:
        super().__init__(**kw)
        self.kind = kind
        self.points: dict[int, tuple[float, float]] = {}
        if kind == "memory":
            self.title, self.xlabel, self.ylabel = "loaded latency", "MB/s", "ns"
        else:
            self.title, self.xlabel, self.ylabel = "latency vs throughput", "IOPS", "µs"

    def add_point(self, index: int, x: float, y: float) -> None:
        self.points[index] = (x, y)
        while len(self.points) > MAX_POINTS:
            self.points.pop(next(iter(self.points)))
        self.dirty = True

    def add_record(self, record: dict[str, Any]) -> None:
        m = record.get("metrics") or {}
        if self.kind == "memory":
            if m.get("bandwidth_mbps") is not None:
                self.add_point(record.get("index", len(self.points)), float(m["bandwidth_mbps"]),
                               float(m.get("latency_ns") or 0))
        else:
            lat = (m.get("lat_ns") or {}).get("mean") or 0
            self.add_point(record.get("index", len(self.points)), float(m.get("iops") or 0), float(lat) / 1e3)

    def draw(self) -> None:
        if not self.points:
            return
        pts = sorted(self.points.values())
        xs, ys = [p[0] for p in pts], [p[1] for p in pts]
        self.ticks("x", xs)
        self.ticks("y", ys)
        if self.kind == "memory":
            self.plt.plot(xs, ys, marker="braille")
        self.plt.scatter(xs, ys, marker="dot" if self.kind == "memory" else "x")


class DelayChart(Chart):
    """Memory: latency against injection delay, point by point."""

    title = "latency vs delay"
    xlabel = "delay"
    ylabel = "ns"

    def __init__(self, **kw: Any) -> None:
        super().__init__(**kw)
        self.points: dict[int, tuple[float, float]] = {}

    def add_point(self, index: int, delay: float, latency: float) -> None:
        self.points[index] = (delay, latency)
        self.dirty = True

    def draw(self) -> None:
        if not self.points:
            return
        pts = sorted(self.points.values())
        self.ticks("x", [p[0] for p in pts])
        self.ticks("y", [p[1] for p in pts])
        self.plt.plot([p[0] for p in pts], [p[1] for p in pts], marker="braille")
        self.plt.scatter([p[0] for p in pts], [p[1] for p in pts], marker="dot")
