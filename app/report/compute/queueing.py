"""The queueing view of a queue-depth curve, as a closed system: fio at a fixed depth keeps N = QD × jobs
I/Os outstanding and submits the next the moment one completes, so N sets the load, not an arrival rate.

Operational analysis (Denning & Buzen 1978; Lazowska et al., "Quantitative System Performance", 1984,
ch. 5) bounds such a closed loop without any assumption about distributions:

    X(N) ≤ min(N / S, X_max)        R(N) ≥ max(S, N / X_max)

S is the time of one I/O alone (the mean latency at N = 1), X_max the capacity.  The bounds cross at
N* = S · X_max.  Here X_max is the highest throughput measured on the curve, so it is a lower bound of
the capacity, and S is only exact when the lightest load is N = 1 (at N0 > 1 the latency R(N0) stands in
for it: R(N0) ≥ S, so the bound N/S drawn from it is tighter than the true one, an approximation).

How far X(N) stays below its bound is the device's internal parallelism the load did not turn into
throughput: X·S is the number of I/Os the device effectively served at once at its lightest-load speed,
against the N it was given.  R(N)'s own bound adds no check of its own: R = N/X (Little's law) and
max(S, N/X_max) = N / min(N/S, X_max), so R / its bound is 1 / (X / its bound).

Where the results line carries the device's block counters (the ``device`` part), each load's R is split
by what they support: the device's mean time per request as the kernel counts it (from the request's
allocation in the block layer to its completion: the I/O scheduler, the driver and the device), and the
rest, R minus that, which the counters do not see (waiting for a request slot when more I/Os are in
flight than the block layer's queue admits, submission and completion in the kernel and fio).  Nothing
here draws or writes text.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Mapping, Sequence

from app.model.records import StorageMetrics, number
from app.report.compute.analysis import Curve
from app.report.data.model import StorageRow
from app.runners.fio_parse import MAX_DISKS, is_disk_name
from app.stats.validity import recorded_ns


@dataclass(frozen=True)
class Disk:
    name: str
    util: float  # per cent of the run with at least one I/O in flight


@dataclass(frozen=True)
class QueuePoint:
    """One load of a curve against the closed-system bounds (times in ns, throughput in IOPS)."""

    row: StorageRow
    n: int
    x: float  # measured IOPS
    r: float  # measured mean total latency
    x_bound: float  # min(N/S, X_max)
    x_bound_is_n_over_s: bool  # which term binds: N/S (below N*) or X_max
    r_bound: float  # max(S, N/X_max)
    r_bound_is_s: bool
    slat: float | None  # fio's mean submission latency; None: not recorded
    clat: float | None  # mean completion latency; None: not recorded
    disks: tuple[Disk, ...] | None  # fio's disk_util; None: not recorded
    device: float | None = None  # ns: the device counters' mean time per request; None: not recorded

    @property
    def outside(self) -> float | None:
        """ns of R the device counters do not see (R − their time per request); None without counters, or when
        their time exceeds R (merged requests: one merged request takes longer than one of fio's I/Os)."""
        if self.device is None or self.device > self.r:
            return None
        return self.r - self.device

    @property
    def x_ratio(self) -> float:
        return self.x / self.x_bound if self.x_bound > 0 else math.nan

    @property
    def r_ratio(self) -> float:
        return self.r / self.r_bound if self.r_bound > 0 else math.nan

    @property
    def parallel(self) -> float:
        """X·S / N: the share of the N I/Os the device served as if each alone (1 at the N/S bound)."""
        return self.x_ratio if self.x_bound_is_n_over_s else math.nan


@dataclass(frozen=True)
class QueueCurve:
    curve: Curve
    s: float  # ns: the mean latency at the lightest load
    s_exact: bool  # the lightest load is N = 1
    n0: int  # the lightest load
    x_max: float  # IOPS: the highest measured
    top: StorageRow  # where X_max was measured
    points: tuple[QueuePoint, ...]

    @property
    def n_star(self) -> float:
        """Where the two bounds cross: N/S = X_max."""
        return self.s * 1e-9 * self.x_max

    @property
    def top_is_heaviest(self) -> bool:
        """X_max was measured at the heaviest load: throughput may still grow past it."""
        return self.top is self.curve.points[-1]

    def growth_past_n_star(self) -> tuple[QueuePoint, QueuePoint, float] | None:
        """(first load at or above N*, the X_max load, IOPS growth between them) when throughput still rose
        past N* — what shows N* is not where throughput stops growing."""
        past = [q for q in self.points if q.n >= self.n_star]
        top = next(q for q in self.points if q.row is self.top)
        if not past or past[0] is top or past[0].x <= 0 or top.n <= past[0].n:
            return None
        return past[0], top, top.x / past[0].x - 1


def _lat(metrics: StorageMetrics, key: str) -> float | None:
    v = metrics.latency(key)
    return number(v.get("mean")) if v is not None else None


def split_latency(p: StorageRow) -> tuple[float | None, float | None]:
    """(slat mean, clat mean) in ns as the results line recorded them; None where it did not (older lines,
    a synchronous engine's slat) or the value is not a non-negative number."""
    slat, clat = _lat(p.metrics, "slat_ns"), _lat(p.metrics, "clat_ns")
    return (slat if slat is not None and slat >= 0 else None), (clat if clat is not None and clat >= 0 else None)


def disks_of(p: StorageRow) -> tuple[Disk, ...] | None:
    """fio's device utilisation as the results line recorded it, entries a run could not have written left out;
    None when the line has none (written before it was recorded, or by an import without it)."""
    raw = p.metrics.disk_util
    if not isinstance(raw, list):
        return None
    out = []
    for d in raw[:MAX_DISKS]:
        if not isinstance(d, dict):
            continue
        util, name = number(d.get("util")), d.get("name")
        if util is not None and 0 <= util <= 100 and isinstance(name, str) and is_disk_name(name):
            out.append(Disk(name, util))
    return tuple(out) if out else None


def device_ns(p: StorageRow) -> float | None:
    """The device counters' mean time per request of ``p`` (ns), None when the line has none."""
    d = p.line.parts.device
    v = recorded_ns(d if isinstance(d, Mapping) else None)
    return v if v is not None and v > 0 else None


def queue_curve(c: Curve) -> QueueCurve | None:
    """The bounds of one curve; None when its lightest load or its throughput has no usable figure."""
    pts = [p for p in c.points if p.iops > 0 and p.lat_mean > 0]
    if len(pts) < 2:
        return None
    first = pts[0]
    s, top = first.lat_mean, max(pts, key=lambda p: p.iops)
    x_max = top.iops
    out = []
    for p in pts:
        n = p.inflight
        n_over_s = n / (s * 1e-9)
        n_over_x = n / x_max * 1e9
        slat, clat = split_latency(p)
        out.append(QueuePoint(p, n, p.iops, p.lat_mean, min(n_over_s, x_max), n_over_s <= x_max,
                              max(s, n_over_x), s >= n_over_x, slat, clat, disks_of(p), device_ns(p)))
    return QueueCurve(c, s, first.inflight == 1, first.inflight, x_max, top, tuple(out))


def queue_curves(curves: Sequence[Curve]) -> list[QueueCurve]:
    return [q for c in curves if (q := queue_curve(c)) is not None]
