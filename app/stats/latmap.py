"""Latency over time: each second's latency histogram of a storage point, the heat map drawn from them and the
stall events named from it (docs/tails.md, "Latency heat map").

fio's json+ status dumps carry the cumulative latency histogram of every job and direction (``lat_ns.bins``:
bucket value in ns → count, fio's own log-linear buckets, at most 1/64 of a power of two wide).  The difference
of two consecutive dumps is the histogram of the I/Os that completed between them, exact to fio's buckets.  A
samples line (``raw/NNNN-JOB.samples.jsonl``) keeps it under :data:`HIST_KEY`, per direction, compactly: a flat
list of whole numbers ``[v₀, c₀, d₁, c₁, d₂, c₂, …]`` — the first bucket's value (ns) and count, then each next
bucket's distance (ns) above the one before and its count; buckets ascending, counts above zero.  A
point keeps them in ``raw/NNNN-JOB.hist.jsonl`` (:data:`HIST_SUFFIX`), one line per line of its samples file
that completed I/O: that line's ``t``, ``interval_s`` and ``ramp`` and a record per direction
(:func:`hist_line`), so that the samples file, which other readers read whole, stays as small as before.

A heat map has time on x (one column per second, or per run of seconds merged into one when a point has more
seconds than :data:`MAX_COLUMNS`), latency on y in log buckets (:data:`ROWS_PER_DECADE` a decade), and the I/Os
completed per second in a cell as its colour.  Columns and hosts are merged by adding histograms bucket by bucket,
never by averaging percentiles; a column's p50/p99/p99.9 are fio's rule over its merged histogram.

A **stall event** is a run of consecutive measured seconds in each of which I/Os completed more than
:data:`STALL_FACTOR` times the point's typical p99 (the median of its seconds' p99s, :func:`typical_p99`): its
start, duration, the I/Os beyond that bound and the slowest one.  A second counts only when a larger share of its
I/Os lies beyond the bound than STALL_FACTOR times a typical second's share (the median second's): a device whose
every second has a few such I/Os has a long tail (app.model.tails), not a stall in each second.  An event of fewer than
:data:`STALL_MIN_IOS` such I/Os is no cluster and is not named.

Every record read here is untrusted: a histogram with more than MAX_BINS buckets a direction, a value or count
that is no whole number from 0 to 2^63, a zero count or a bucket not above the one before reads as absent.
"""

from __future__ import annotations

import math
from array import array
from dataclasses import dataclass, field
from itertools import accumulate
from pathlib import Path
from typing import Iterable, Mapping, Sequence

from app.model.tails import MAX_BINS, MAX_COUNT, Hist, merge, min_ios, percentile
from app.store.results import json_objects, raw_lines

HIST_KEY = "hist"  # the tracker's sample's per-interval histograms: {"read": [...], "write": [...], "trim": [...]}
HIST_SUFFIX = ".hist.jsonl"  # raw/NNNN-JOB.hist.jsonl: one line a second, beside the samples file
DIRECTIONS = ("read", "write", "trim")
MAX_COLUMNS = 240  # columns of a heat map: seconds merged in runs of equal length past this
ROWS_PER_DECADE = 8  # latency rows a decade (each ≈ 33 % wide: coarser than fio's 1.6 %, fine enough to see)
STALL_FACTOR = 10.0  # an I/O this many times the point's p99 is a stalled one (as tail-unstable's factor)
STALL_MIN_IOS = 3  # a stall event is a cluster: at least this many stalled I/Os
ADJACENT_S = 0.5  # two intervals further apart than this are not consecutive (a gap in the samples)
HEAT_PERCENTILES = ((50.0, "p50"), (99.0, "p99"), (99.9, "p99.9"))


# --- the record -------------------------------------------------------------------------------------------------


def encode(bins: Mapping[int, int]) -> list[int]:
    """The compact record of one direction's histogram (value → count; zero counts dropped)."""
    out: list[int] = []
    last = 0
    for v in sorted(bins):
        c = bins[v]
        if c > 0:
            out += [v - last, c]
            last = v
    return out


def interval_record(cur: Mapping[str, Mapping[int, int]], prev: Mapping[str, Mapping[int, int]]
                    ) -> dict[str, list[int]]:
    """The samples line's :data:`HIST_KEY` for the I/Os between two cumulative dumps' per-direction bins (only the
    directions that completed I/O in between; {} when none did)."""
    out: dict[str, list[int]] = {}
    for d, bins in cur.items():
        before = prev.get(d, {})
        diff = {v: c - before.get(v, 0) for v, c in bins.items() if c > before.get(v, 0)}
        if diff:
            out[d] = encode(diff)
    return out


def hist_line(sample: Mapping[str, object], hist: Mapping[str, list[int]]) -> dict[str, object]:
    """The histograms file's line of one per-second sample: its time and the histogram records per direction."""
    line: dict[str, object] = {k: sample[k] for k in ("t", "interval_s", "ramp") if k in sample}
    line.update(hist)
    return line


def decode(v: object) -> Hist | None:
    """One direction's histogram from its compact record (untrusted); None when it is not one."""
    if not isinstance(v, list) or not v or len(v) % 2 or len(v) > 2 * MAX_BINS:
        return None
    if all(type(x) is int for x in v):  # what the tool writes, checked at C speed
        steps, counts = v[0::2], v[1::2]
        if min(counts) > 0 and min(steps) >= 0 and (len(steps) == 1 or min(steps[1:]) > 0) and max(counts) <= MAX_COUNT:
            values = list(accumulate(steps))
            return list(zip(values, counts)) if values[-1] <= MAX_COUNT else None
        return None
    out: Hist = []
    last = 0
    for i in range(0, len(v), 2):
        d, c = v[i], v[i + 1]
        if not (_whole(d) and _whole(c)) or c == 0 or (d == 0 and i > 0):
            return None
        last += d
        if last > MAX_COUNT:
            return None
        out.append((last, c))
    return out


def sample_hists(line: Mapping[str, object]) -> dict[str, Hist] | None:
    """A histograms line's (or a live sample's ``hist``) histograms per direction; None when it has none or a
    record that is not one."""
    rec = line.get(HIST_KEY, line)
    if not isinstance(rec, Mapping):
        return None
    found = {d: rec[d] for d in DIRECTIONS if d in rec}
    out: dict[str, Hist] = {}
    for d, v in found.items():
        h = decode(v)
        if h is None:
            return None
        out[d] = h
    return out or None


def sample_hist(sample: Mapping[str, object], direction: str | None = None) -> Hist | None:
    """A samples line's histogram merged over its directions (or of one ``direction``: [] when it did no I/O that
    way); None when the line has no usable record."""
    hists = sample_hists(sample)
    if hists is None:
        return None
    if direction is not None:
        return hists.get(direction, [])
    return next(iter(hists.values())) if len(hists) == 1 else merge(hists.values())


def _whole(x: object) -> bool:
    return isinstance(x, int) and not isinstance(x, bool) and 0 <= x <= MAX_COUNT


def _number(x: object) -> float | None:
    if isinstance(x, bool) or not isinstance(x, (int, float)):
        return None
    f = float(x)
    return f if math.isfinite(f) else None


# --- a point's intervals ----------------------------------------------------------------------------------------


@dataclass
class Interval:
    """One measured interval's histogram (arrays: a long point keeps thousands of them)."""

    t: float  # its end, seconds since fio started
    dt: float  # its length
    values: array[int] = field(default_factory=lambda: array("q"))
    counts: array[int] = field(default_factory=lambda: array("q"))

    @property
    def start(self) -> float:
        return self.t - self.dt

    def hist(self) -> Hist:
        return list(zip(self.values, self.counts))

    @property
    def ios(self) -> int:
        return sum(self.counts)


def interval_of(sample: Mapping[str, object], direction: str | None = None) -> Interval | None:
    """A samples line as an :class:`Interval`: None for a ramp second, a line without a usable record or
    without a sane ``t``/``interval_s``."""
    t, dt = _number(sample.get("t")), _number(sample.get("interval_s"))
    if sample.get("ramp") is True or t is None or dt is None or dt <= 0 or t < 0 or dt > t + 1e-6:
        return None
    hist = sample_hist(sample, direction)
    if hist is None:
        return None
    return Interval(t, dt, array("q", (v for v, _ in hist)), array("q", (c for _, c in hist)))


def intervals_of(samples: Iterable[Mapping[str, object]], direction: str | None = None) -> list[Interval]:
    """The measured intervals of a point's samples that carry histograms, in time order."""
    out = [iv for s in samples if (iv := interval_of(s, direction)) is not None]
    out.sort(key=lambda iv: iv.t)
    return out


MAX_HIST_BYTES = 64 << 20  # a histograms file: at most this much is read (an hour of randrw seconds is ~18 MB)


def read_intervals(run_dir: Path, raw: object, direction: str | None = None) -> list[Interval]:
    """The measured intervals a point kept in its histograms file (``raw``: its results line's ``raw``, whose
    ``hist`` path is used); [] when it has none (a run written before them) or the file is not usable: the path
    must stay inside the results directory and name a regular file (app.store.results.read_beneath); at most
    MAX_HIST_BYTES are read and a line that is not a histograms line is skipped."""
    return intervals_of(json_objects(raw_lines(run_dir, raw, "hist", MAX_HIST_BYTES)), direction)


def merged(intervals: Iterable[Interval]) -> Hist:
    """The intervals' histograms added bucket by bucket."""
    total: dict[int, int] = {}
    for iv in intervals:
        for v, c in zip(iv.values, iv.counts):
            total[v] = total.get(v, 0) + c
    return sorted(total.items())


def merge_hosts(per_host: Sequence[Sequence[Interval]], tolerance_s: float = ADJACENT_S) -> list[Interval]:
    """Several hosts' (or jobs') intervals of one point merged bucket by bucket: intervals of different hosts whose
    ends lie within ``tolerance_s`` of each other are the same second (the first host's clock names it); two of one
    host never are (a point's last, partial second ends a moment after the one before it)."""
    out: list[Interval] = []
    members: list[set[int]] = []  # the hosts each merged interval holds
    tagged = sorted(((iv, i) for i, ivs in enumerate(per_host) for iv in ivs), key=lambda p: p[0].t)
    for iv, host in tagged:
        if out and abs(out[-1].t - iv.t) <= tolerance_s and host not in members[-1]:
            last = out[-1]
            h = merge([last.hist(), iv.hist()])
            out[-1] = Interval(last.t, max(last.dt, iv.dt), array("q", (v for v, _ in h)),
                               array("q", (c for _, c in h)))
            members[-1].add(host)
        else:
            out.append(Interval(iv.t, iv.dt, array("q", iv.values), array("q", iv.counts)))
            members.append({host})
    return out


# --- the heat map -----------------------------------------------------------------------------------------------


def row_of(ns: int, per_decade: int = ROWS_PER_DECADE) -> int:
    """The heat map row of a latency: row k spans 10^(k/per_decade) to 10^((k+1)/per_decade) ns."""
    return math.floor(math.log10(max(ns, 1)) * per_decade + 1e-9)


def row_edge_ns(k: int, per_decade: int = ROWS_PER_DECADE) -> float:
    return 10.0 ** (k / per_decade)


@dataclass
class HeatMap:
    """A point's heat map: ``counts[column][row - low]`` I/Os completed in each cell."""

    starts: list[float]  # each column's start (s)
    ends: list[float]  # each column's end (s)
    seconds: list[float]  # each column's measured seconds
    low: int  # the first row (row_of)
    high: int  # the last row
    counts: list[list[int]]
    lines: dict[str, list[float | None]]  # "p50", "p99", "p99.9" → each column's value (ns)
    per_column: int  # intervals merged into a column

    @property
    def ios(self) -> int:
        return sum(sum(c) for c in self.counts)

    def rate(self, column: int, row: int) -> float:
        """I/Os per second completed in a cell."""
        s = self.seconds[column]
        return self.counts[column][row - self.low] / s if s > 0 else 0.0


def heat_map(intervals: Sequence[Interval], max_columns: int = MAX_COLUMNS,
             per_decade: int = ROWS_PER_DECADE) -> HeatMap | None:
    """The heat map of a point's measured intervals (None without one): consecutive intervals merged in runs of
    ⌈n / max_columns⌉ into a column."""
    if not intervals:
        return None
    group = max(1, math.ceil(len(intervals) / max_columns))
    columns = [intervals[i:i + group] for i in range(0, len(intervals), group)]
    hists = [merged(col) for col in columns]
    rows = [row_of(v, per_decade) for h in hists for v, _ in h]
    if not rows:
        return None
    low, high = min(rows), max(rows)
    counts = []
    for h in hists:
        line = [0] * (high - low + 1)
        for v, c in h:
            line[row_of(v, per_decade) - low] += c
        counts.append(line)
    lines: dict[str, list[float | None]] = {name: [None if (p := percentile(h, pct)) is None else float(p)
                                                   for h in hists] for pct, name in HEAT_PERCENTILES}
    return HeatMap([col[0].start for col in columns], [col[-1].t for col in columns],
                   [math.fsum(iv.dt for iv in col) for col in columns], low, high, counts, lines, group)


# --- stall events -----------------------------------------------------------------------------------------------


def typical_p99(intervals: Sequence[Interval]) -> float | None:
    """The point's typical p99: the median of its seconds' p99s over the seconds of at least the I/Os a p99 needs
    (app.model.tails.min_ios; every second when none has them).  A stall of fewer than half the seconds leaves it where
    it was, where the p99 of all the I/Os moves into the stall once the stall holds 1 % of them."""
    need = min_ios(99.0)
    full = [iv for iv in intervals if iv.ios >= need] or list(intervals)
    p99s = sorted(p for iv in full if (p := percentile(iv.hist(), 99.0)) is not None)
    if not p99s:
        return None
    mid = len(p99s) // 2
    return float(p99s[mid]) if len(p99s) % 2 else (p99s[mid - 1] + p99s[mid]) / 2


@dataclass(frozen=True)
class Stall:
    """A stall event: consecutive seconds in which I/Os completed above ``bound_ns``."""

    start_s: float  # seconds since fio started
    duration_s: float
    ios: int  # the I/Os above the bound in those seconds
    worst_ns: int  # the slowest one's bucket
    bound_ns: float  # STALL_FACTOR × the point's typical p99


def stall_events(intervals: Sequence[Interval], factor: float = STALL_FACTOR,
                 min_ios: int = STALL_MIN_IOS) -> tuple[list[Stall], float | None]:
    """The point's stall events and the bound they exceed (None: no I/O, nothing judged)."""
    p99 = typical_p99(intervals)
    if p99 is None:
        return [], None
    bound = factor * p99
    events: list[Stall] = []
    run: list[tuple[Interval, int, int]] = []  # (interval, I/Os above the bound, slowest)

    def close() -> None:
        if run:
            ios = sum(n for _, n, _ in run)
            if ios >= min_ios:
                first, last = run[0][0], run[-1][0]
                events.append(Stall(round(first.start, 3), round(last.t - first.start, 3), ios,
                                    max(w for _, _, w in run), bound))
            run.clear()

    aboves = [[(v, c) for v, c in zip(iv.values, iv.counts) if v > bound] for iv in intervals]
    # the share of a second's I/Os beyond the bound, not their count: in a stalled second the device completes few
    # I/Os, nearly all of them late, while a busy ordinary second may hold as many late ones among 100,000 others
    shares = [sum(c for _, c in above) / max(1, sum(iv.counts)) for iv, above in zip(intervals, aboves)]
    ordered = sorted(shares)
    mid = len(ordered) // 2
    usual = ordered[mid] if len(ordered) % 2 else (ordered[mid - 1] + ordered[mid]) / 2
    for iv, above, share in zip(intervals, aboves, shares):
        if run and iv.start - run[-1][0].t > ADJACENT_S:
            close()
        n = sum(c for _, c in above)
        if n > 0 and share > factor * usual:
            run.append((iv, n, max(v for v, _ in above)))
        else:
            close()
    close()
    return events, bound
