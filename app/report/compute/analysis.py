"""The report's analysis: Little's law, saturation knees, the best point under a latency bound.

Knee method (documented in docs/report.md): a curve's points are taken in order of increasing
load (queue depth × jobs for storage, decreasing injection delay for memory) as (throughput,
latency) pairs.  Both coordinates are scaled to [0, 1] over the curve; the knee is the point
farthest from the chord joining the first and the last point, on the low-latency side of it
(the "max distance to the chord" form of Kneedle, Satopää et al. 2011, without smoothing).
A curve whose farthest point is less than ``MIN_KNEE_DISTANCE`` from the chord is nearly
straight and has no knee; fewer than three points cannot show one.

Replicates (``repeat`` ≥ 2): a load measured in several replicates is one point of its curve, the **mean over
its replicates** (:func:`mean_row`), never one replicate; the knee is found on those means and its support
(app.report.compute.support) looks at each replicate's own curve.  A load **meets a latency bound only when every
replicate does** (:func:`best_under_bound`); a load that met it in some replicates only is named with the
replicates' p99 range, not chosen.  With three replicates of a load whose true p99 sits just under the bound
this is strict (each replicate must land under it), so the operating point errs on the lighter load — the
direction a bound is for.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

from app.model.records import JSONObject, JSONValue, number
from app.plan.presets import base_key
from app.report.compute import contention
from app.report.compute import memory as mem
from app.report.data.model import MemoryRow, RunData, StorageRow

MIN_KNEE_DISTANCE = 0.05  # in the unit square; about 3.5 % of the chord's length
DEFAULT_P99_BOUND_US = 1000.0


# --- knee ----------------------------------------------------------------------------------------


def chord_distances(xs: Sequence[float], ys: Sequence[float]) -> list[float]:
    """Signed distance of each point from the chord first→last in the unit square.

    Positive means below/right of the chord: more throughput for less latency than a straight
    line between the two ends would give (where a saturation knee sits).
    """
    n = len(xs)
    if n < 2 or len(ys) != n:
        return [0.0] * n
    x0, x1 = min(xs), max(xs)
    y0, y1 = min(ys), max(ys)
    sx = (x1 - x0) or 1.0
    sy = (y1 - y0) or 1.0
    nx = [(x - x0) / sx for x in xs]
    ny = [(y - y0) / sy for y in ys]
    ax, ay, bx, by = nx[0], ny[0], nx[-1], ny[-1]
    length = math.hypot(bx - ax, by - ay)
    if length == 0:
        return [0.0] * n
    # cross product of (b - a) and (p - a): > 0 when p is left of a→b; for a curve rising to the
    # right, "below the chord" is the right-hand side, so negate
    return [-((bx - ax) * (py - ay) - (by - ay) * (px - ax)) / length for px, py in zip(nx, ny)]


def knee(xs: Sequence[float], ys: Sequence[float], min_distance: float = MIN_KNEE_DISTANCE) -> int | None:
    """Index of the saturation knee of a latency (ys) vs throughput (xs) curve, or None."""
    if len(xs) < 3:
        return None
    d = chord_distances(xs, ys)
    best = max(range(1, len(d) - 1), key=lambda i: d[i])
    return best if d[best] >= min_distance else None


# --- Little's law ----------------------------------------------------------------------------------


@dataclass
class Little:
    n: int  # I/Os the workload keeps outstanding (effective depth × jobs)
    l: float  # noqa: E741 - Little's law's own letter: IOPS × mean latency
    ratio: float  # l / n


def littles_law(p: StorageRow) -> Little | None:
    if p.iops <= 0 or p.lat_mean <= 0:
        return None
    in_flight = p.iops * p.lat_mean * 1e-9
    return Little(p.inflight, in_flight, in_flight / p.inflight)


# --- storage curves ----------------------------------------------------------------------------------


Rest = tuple[tuple[str, object], ...]  # a point's other settings, (name, value) in a fixed order
# one memory table: traffic, stride, buffer, engine, source, chase, NUMA node ("": none) (MemoryRow.series)
MemKey = tuple[str, int, int, str, object, str, str]


@dataclass
class Curve:
    """Points of one workload (mix, block size, other settings) at increasing load."""

    key: tuple[str, int, Rest, tuple[str, int] | None]  # (mix, bs, rest, jobs split)
    mix: str
    bs: int
    label: str
    points: list[StorageRow]  # one per load: the row, or with replicates the mean over them (mean_row)
    knee: int | None = None
    replicates: list[list[StorageRow]] = field(default_factory=list)  # per point: its replicates (or the row)

    @property
    def repeated(self) -> bool:
        return any(len(r) > 1 for r in self.replicates)

    @property
    def loads(self) -> list[int]:
        return [p.inflight for p in self.points]

    def load_label(self, p: StorageRow) -> str:
        return f"QD{p.iodepth}×{p.numjobs}" if self.varies_jobs else f"QD{p.iodepth}"

    @property
    def varies_jobs(self) -> bool:
        return len({p.numjobs for p in self.points}) > 1

    @property
    def knee_point(self) -> StorageRow | None:
        return None if self.knee is None else self.points[self.knee]


def rest_label(rest: Rest, varying: set[str]) -> str:
    return ", ".join(f"{k}={v}" for k, v in rest if k in varying)


def varying_rest_keys(points: Sequence[StorageRow]) -> set[str]:
    values: dict[str, set[object]] = {}
    for p in points:
        for k, v in p.rest:
            values.setdefault(k, set()).add(v)
    return {k for k, v in values.items() if len(v) > 1}


@dataclass
class Workload:
    """The points of one workload: access pattern and mix, block size, other settings (any load)."""

    key: tuple[str, int, Rest]  # (mix, bs, rest)
    label: str  # "randread 4K", with the settings that vary between workloads: "randread 4K (ioengine=psync)"
    points: list[StorageRow]


def workloads(points: Sequence[StorageRow]) -> list[Workload]:
    """The points grouped by workload (mix, block size and other settings), in first-seen order; each group's
    points in their order."""
    from app.core.units import format_size

    varying = varying_rest_keys(points)
    groups: dict[tuple[str, int, Rest], list[StorageRow]] = {}
    for p in points:
        groups.setdefault((p.mix, p.bs, p.rest), []).append(p)
    out = []
    for (mix, bs, rest), group in groups.items():
        extra = rest_label(rest, varying)
        label = f"{mix} {format_size(bs)}" + (f" ({extra})" if extra else "")
        out.append(Workload((mix, bs, rest), label, group))
    return out


MEAN_FIGURES = ("iops", "read_iops", "write_iops", "bw_bytes", "read_bw_bytes", "write_bw_bytes", "usr_cpu",
                "sys_cpu")
MEAN_LATENCIES = ("lat_ns", "read_lat_ns", "write_lat_ns")
LATENCY_KEYS = ("min", "mean", "max", "stddev", "p50", "p90", "p99", "p99_9", "p99_99", "p99_999")


def replicate_sets(rows: Sequence[StorageRow]) -> list[list[StorageRow]]:
    """The rows grouped by point less its replicate, in first-seen order: each group a point's replicates (a row
    measured once is a group of one; a repeated line without a replicate number keeps its first measurement)."""
    groups: dict[str, list[StorageRow]] = {}
    for r in rows:
        g = groups.setdefault(base_key(r.point), [])
        if r.replicate is not None and all(o.replicate is not None and o.replicate != r.replicate for o in g):
            g.append(r)
        elif not g:
            g.append(r)
    return list(groups.values())


def mean_row(reps: Sequence[StorageRow], run_dir: Path | None = None) -> StorageRow:
    """One row standing for a point's replicates: each throughput figure and each latency summary figure the
    mean over them (a figure missing from one replicate is left out), and as its 95 % interval the Student-t
    interval over the replicates (:func:`app.stats.uncertainty.replicate_spread`, between runs).  Its whole seconds,
    for the analyses that judge a point by its per-second spread, are every replicate's together (with
    ``run_dir``; their spread holds the variation between runs as well as within one); without ``run_dir``
    it has none.  A single row is itself."""
    from app.stats.uncertainty import replicate_spread

    if len(reps) == 1:
        return reps[0]
    metrics: JSONObject = {}
    for k in MEAN_FIGURES:
        vals = [r.metrics.figure(k) for r in reps]
        if all(v is not None for v in vals):
            metrics[k] = math.fsum(v or 0.0 for v in vals) / len(vals)
    for k in MEAN_LATENCIES:
        lats = [r.metrics.latency(k) for r in reps]
        if not all(lat is not None for lat in lats):
            continue
        summary: JSONObject = {}
        for key in LATENCY_KEYS:
            got = [lat.get(key) for lat in lats if lat is not None]
            if all(v is not None for v in got):
                summary[key] = math.fsum(v or 0.0 for v in got) / len(got)
        metrics[k] = summary
    point: dict[str, JSONValue] = {k: v for k, v in reps[0].point.items() if k != "replicate"}
    row = StorageRow.of(reps[0].index, point, metrics)
    ivs: dict[str, tuple[float, float]] = {}
    figures = {"iops": [r.iops for r in reps], "bw_bytes": [r.bw for r in reps],
               "lat_mean_ns": [r.lat_mean for r in reps]}
    for fig, values in figures.items():
        if all(values):
            sp = replicate_spread(values)
            if sp.ci is not None:
                ivs[fig] = sp.ci
    row.computed_ci = (ivs, "" if "iops" in ivs else "the replicates give no interval", {})
    if run_dir is None:
        row.whole_samples = []
    else:
        from app.report.compute.noise import samples_of

        row.whole_samples = [s for r in reps for s in samples_of(run_dir, r)]
    return row


def storage_curves(points: Sequence[StorageRow], run_dir: Path | None = None) -> list[Curve]:
    """Every workload measured at two or more loads, in first-seen order; a load measured in replicates is the
    mean over them (:func:`mean_row`, its seconds every replicate's when ``run_dir`` is given), its replicates
    kept beside it."""
    curves: list[Curve] = []
    for w in workloads(points):
        (mix, bs, rest), pts = w.key, w.points
        # two points with the same N (QD4×4 and QD16×1) are different curves: split by jobs
        by_n: dict[int, int] = {}
        for reps in replicate_sets(pts):  # a load's replicates are one point
            by_n[reps[0].inflight] = by_n.get(reps[0].inflight, 0) + 1
        splits: dict[tuple[str, int] | None, list[StorageRow]] = {}
        if any(c > 1 for c in by_n.values()):
            for p in pts:
                splits.setdefault(("jobs", p.numjobs), []).append(p)
        else:
            splits[None] = list(pts)
        for split, sp in splits.items():
            # one point per load: its replicates' mean (repeated identical lines: the first measurement)
            seen: dict[int, list[StorageRow]] = {}
            for reps in replicate_sets(sp):
                seen.setdefault(reps[0].inflight, reps)
            sets = sorted(seen.values(), key=lambda r: r[0].inflight)
            if len(sets) < 2:
                continue
            ordered = [mean_row(r, run_dir) for r in sets]
            label = w.label + (f" T{split[1]}" if split is not None else "")
            c = Curve((mix, bs, rest, split), mix, bs, label, ordered, replicates=sets)
            c.knee = knee([q.iops for q in ordered], [q.lat_mean for q in ordered])
            curves.append(c)
    return curves


# --- latency bound -------------------------------------------------------------------------------------


@dataclass
class LoadBound:
    """One load of a workload against the bound: its replicates (one row without repeats), the p99 each binds on
    (the highest of its directions and its total), and how many meet the bound."""

    rows: list[StorageRow]
    p99s: list[float]
    met: int

    @property
    def n(self) -> int:
        return len(self.rows)

    @property
    def meets(self) -> bool:
        """Every replicate meets the bound."""
        return self.n > 0 and self.met == self.n

    @property
    def row(self) -> StorageRow:
        """The load's row: the mean over its replicates (:func:`mean_row`)."""
        return mean_row(self.rows)

    @property
    def worst(self) -> float:
        return max(self.p99s)

    @property
    def inflight(self) -> int:
        return self.rows[0].inflight


@dataclass
class BoundChoice:
    label: str
    best: StorageRow | None  # the highest-IOPS load meeting the bound in every direction (and every replicate)
    candidates: int  # points of this workload
    lowest_p99: float | None  # when none meets it: the lowest worst-direction p99 (worst replicate)
    next_over: StorageRow | None  # the next heavier load, which breaks the bound
    loads: int = 0  # distinct loads measured: with one, "best" is true by construction
    lowest: StorageRow | None = None  # the point of lowest_p99
    best_load: LoadBound | None = None  # the best load's replicates and their p99s
    next_load: LoadBound | None = None
    lowest_load: LoadBound | None = None
    partial: list[LoadBound] = field(default_factory=list)  # more IOPS, but met the bound in some replicates only

    @property
    def only_load(self) -> bool:
        return self.loads == 1


def direction_p99s(p: StorageRow) -> dict[str, float]:
    """The p99 the bound is checked against, per direction: "read" and "write" of a mixed workload (fio's
    read_lat_ns / write_lat_ns), else the point's own p99 under its direction."""
    if p.mixed:
        out = {}
        for side in ("read", "write"):
            lat = p.metrics.latency(f"{side}_lat_ns")
            v = number(lat.get("p99")) if lat is not None else None
            if v is not None and v > 0:
                out[side] = v
        if out:
            return out
    return {} if p.p99 is None else {"write" if p.read_pct == 0 else "read": p.p99}


def binding(p: StorageRow) -> tuple[str, float] | None:
    """The direction whose p99 is highest (the one the bound binds on first), with that p99."""
    sides = direction_p99s(p)
    if not sides:
        return None
    side = max(sides, key=lambda k: sides[k])
    return side, sides[side]


def meets_bound(p: StorageRow, bound_ns: float) -> bool:
    """The point's p99 and, for a mixed workload, each direction's p99 are within the bound."""
    b = binding(p)
    return p.p99 is not None and p.p99 <= bound_ns and b is not None and b[1] <= bound_ns


def load_bounds(points: Sequence[StorageRow], bound_ns: float) -> list[LoadBound]:
    """Each load of ``points`` with a p99 against the bound, its replicates together."""
    out = []
    for reps in replicate_sets(points):
        known = [(p, max(b[1], p.p99 or 0.0)) for p in reps if (b := binding(p)) is not None]
        if known:
            out.append(LoadBound([p for p, _ in known], [v for _, v in known],
                                 sum(meets_bound(p, bound_ns) for p, _ in known)))
    return out


def best_under_bound(points: Sequence[StorageRow], bound_ns: float) -> list[BoundChoice]:
    """For each workload (mix, block size, settings): the most IOPS (the mean over a load's replicates) with
    p99 ≤ bound in every direction and in every replicate."""
    out: list[BoundChoice] = []
    for w in workloads(points):
        loads = load_bounds(w.points, bound_ns)
        ok = [lb for lb in loads if lb.meets]
        best = max(ok, key=lambda lb: lb.row.iops) if ok else None
        nxt = None
        partial: list[LoadBound] = []
        if best is not None:
            heavier = sorted((lb for lb in loads if lb.inflight > best.inflight), key=lambda lb: lb.inflight)
            nxt = heavier[0] if heavier else None
        partial = [lb for lb in loads if 0 < lb.met < lb.n and (best is None or lb.row.iops > best.row.iops)]
        low = min(loads, key=lambda lb: lb.worst, default=None)
        out.append(BoundChoice(w.label, None if best is None else best.row, len(w.points),
                               None if low is None else low.worst, None if nxt is None else nxt.row,
                               len({p.inflight for p in w.points}), None if low is None else low.row,
                               best, nxt, low, partial))
    return out


# --- memory curves ----------------------------------------------------------------------------------------


@dataclass
class MemCurve:
    key: MemKey
    traffic: str
    stride: int
    buffer: int
    engine: str
    points: list[MemoryRow]  # by increasing load: decreasing injection delay
    knee: int | None = None
    rejected_knee: int | None = None  # a bend whose latency stays within the light-load spread (not a knee)
    idle: MemoryRow | None = None  # the same source's idle point of the same engine and stride (same buffer first)
    several_sources: bool = False  # the run's curves come from several imported files: each names its own

    @property
    def source(self) -> str:
        """The imported file the curve was read from ("" for a run's own measurement)."""
        return str(self.key[4] or "")

    @property
    def from_text(self) -> str:
        """" from FILE" when the run's curves come from several files (each may be another machine), else ""."""
        return f" from {self.source}" if self.several_sources and self.source else ""

    @property
    def clean(self) -> list[MemoryRow]:
        """The points whose threads got their CPU (app.report.compute.contention): the only ones a knee is found on."""
        return [p for p in self.points if not contention.contended(p)]

    @property
    def label(self) -> str:
        from app.core.units import format_size

        s = f"{self.traffic} stride {self.stride} B"
        if self.buffer:
            s += f" buffer {format_size(self.buffer)}"
        return s + self.from_text

    @property
    def legend(self) -> str:
        """The curve in a panel of one stride: its traffic type, and buffer when set (and its file, when the
        curves come from several)."""
        from app.core.units import format_size

        return self.traffic + (f" {format_size(self.buffer)}" if self.buffer else "") + self.from_text


def memory_curves(points: Sequence[MemoryRow]) -> list[MemCurve]:
    idle = [p for p in points if p.mode == "idle" and p.latency]
    groups: dict[MemKey, list[MemoryRow]] = {}
    for p in points:
        if p.mode != "loaded" or p.delay is None or p.latency is None:
            continue
        groups.setdefault(p.series, []).append(p)
    curves = []
    for key, pts in groups.items():
        seen: dict[int, MemoryRow] = {}
        for p in pts:
            seen.setdefault(p.delay, p)  # type: ignore[arg-type]
        ordered = sorted(seen.values(), key=lambda p: -(p.delay or 0))
        c = MemCurve(key, key[0], key[1], key[2], key[3], ordered)
        clean = c.clean  # a contended row is shown, never part of a knee
        if len(clean) >= 3 and all(p.bandwidth is not None for p in clean):
            k = knee([p.bandwidth or 0.0 for p in clean], [p.latency or 0.0 for p in clean])
            c.knee = None if k is None else ordered.index(clean[k])
            if c.knee is not None and not mem.knee_supported(c):
                c.rejected_knee, c.knee = c.knee, None
        c.idle = mem.idle_baseline(ordered, idle)
        curves.append(c)
    several = len({p.source for p in points}) > 1
    for c in curves:
        c.several_sources = several
    return curves


def lines_in_flight(p: MemoryRow, line_bytes: int = 64) -> float | None:
    """Little's law for memory: cache lines outstanding = (bandwidth / line size) × latency."""
    if not p.bandwidth or not p.latency:
        return None
    return p.bandwidth * 1e6 / line_bytes * p.latency * 1e-9


def lines_in_flight_text(p: MemoryRow) -> str:
    """Lines in flight as the analysis prints it: below 1 is impossible (the latency thread alone keeps one line
    in flight whenever it runs), so such a figure is flagged with its likely cause, never printed bare."""
    mlp = lines_in_flight(p)
    if mlp is None:
        return "n/a"
    if mlp >= 1:
        return f"{mlp:.0f}"
    why = ("its row is contended" if contention.contended(p) else
           "the bandwidth and the latency do not describe the same traffic")
    return f"{mlp:.2f}: impossible (below 1 line; {why})"


# --- memory vs storage ----------------------------------------------------------------------------------


@dataclass
class MemStorageRatio:
    storage: StorageRow
    memory_ns: float
    memory_what: str
    ratio: float
    memory_row: MemoryRow | None = None  # the memory figure's row


def memory_storage_ratio(data: RunData) -> MemStorageRatio | None:
    storage = [p for p in data.storage if p.lat_mean > 0]
    if not storage or not data.memory:
        return None
    fastest = min(storage, key=lambda p: p.lat_mean)
    idle = [p for p in data.memory if p.mode == "idle" and p.latency]
    if idle:
        m = min(idle, key=lambda p: p.latency or 0.0)
        what = "idle memory latency"
    else:
        loaded = [p for p in data.memory if p.mode == "loaded" and p.latency]
        if not loaded:
            return None
        m = min(loaded, key=lambda p: p.latency or 0.0)
        what = f"lowest loaded memory latency ({m.traffic}, stride {m.stride} B, delay {m.delay})"
    mem_ns = float(m.latency or 0.0)
    if mem_ns <= 0:
        return None
    ratio = fastest.lat_mean / mem_ns
    if not 0 < ratio < math.inf:  # underflow or overflow of extreme values: no ratio to state
        return None
    return MemStorageRatio(fastest, mem_ns, what, ratio, m)

