"""Latency tails: fio's json+ histogram of a point as a record, its percentiles, its exceedance curve, and the rule
that says which high percentile a point's I/O count supports (docs/tails.md).

fio keeps every completion latency in a log-linear histogram (64 buckets per power of two above 2^6 ns, so a
bucket is at most 1/64 ≈ 1.6 % wide) and writes the buckets that were hit with ``--output-format=json+`` as
``bins``: bucket value (ns) → count.  A results line keeps the point's histogram, merged over its jobs and
directions, as ``metrics.lat_hist``: ``[[ns, count], …]``, ascending, counts > 0.  Merging histograms bucket by
bucket gives exact percentiles of the union; averaging percentiles does not (fio issues 1881, 1918).

A percentile p is *supported* when at least ten **distinct stall events** lie beyond it, so it is set by more
than one slow moment of the device.  The histogram keeps no completion times, so events are bounded from what it
does carry: a point keeps N = QD × jobs I/Os in flight, and one stall can hold at most those N, which then
complete together (within one service time of each other) — so the I/Os beyond p, (1 − p)·n of n, are at least
⌈(1 − p)·n / N⌉ events.  Requiring ten gives n ≥ 10·N / (1 − p) (:func:`min_ios`): at N = 1, p99 needs 1,000
I/Os, p99.9 10,000, p99.99 100,000, p99.999 1,000,000; at QD32, 32 times as many.  The bound is conservative:
it counts every tail I/O as part of a stall that held the whole queue, so it can withhold a percentile that ten
independent slow I/Os did set, never shows one set by fewer than ten stalls.  An unsupported percentile is
shown as "—" with the count beside it, never bare.
"""

from __future__ import annotations

import math
from typing import Iterable, Mapping, Sequence

Hist = list[tuple[int, int]]  # (bucket value ns, count), ascending by value, counts > 0

# the tail percentiles the tables show: the key in a latency summary, the percentile, its label
TAIL_PERCENTILES: tuple[tuple[str, float, str], ...] = (
    ("p99", 99.0, "p99"), ("p99_9", 99.9, "p99.9"), ("p99_99", 99.99, "p99.99"), ("p99_999", 99.999, "p99.999"))
SUPPORT_BEYOND = 10  # I/Os that must lie beyond a percentile for it to be shown
MAX_BINS = 4096  # fio has 29 groups of 64 buckets (1,856); a record with more is not fio's
MAX_COUNT = 1 << 63
EXCEEDANCE_FLOOR = 1e-6  # the exceedance figure's lowest fraction


def min_ios(pct: float, inflight: int = 1) -> int:
    """The completions percentile ``pct`` (in percent) needs to be supported at ``inflight`` I/Os in flight:
    ⌈10 · N / (1 − p)⌉ (p99 at N = 1 → 1,000; at N = 32 → 32,000), ten stall events of up to N I/Os each."""
    tail = 1.0 - pct / 100.0
    if tail <= 0:
        raise ValueError(f"percentile {pct} leaves no tail")
    return math.ceil(round(SUPPORT_BEYOND * max(1, inflight) / tail, 6))


def supported(pct: float, ios: float | None, inflight: int = 1) -> bool:
    """Whether a point of ``ios`` completions at ``inflight`` I/Os in flight supports percentile ``pct``: False
    when the count is unknown."""
    return ios is not None and ios >= min_ios(pct, inflight)


def stall_events(pct: float, ios: float, inflight: int = 1) -> int:
    """The fewest distinct stall events the I/Os beyond percentile ``pct`` can be: ⌈(1 − p) · n / N⌉."""
    return math.ceil(round((1.0 - pct / 100.0) * ios / max(1, inflight), 6))


def hist_of_bins(bins: Mapping[int, int]) -> Hist:
    """A histogram record of fio's ``bins`` (value → count; zero counts dropped)."""
    return sorted((int(v), int(c)) for v, c in bins.items() if c > 0)


def merge(hists: Iterable[Sequence[tuple[int, int]]]) -> Hist:
    """The histograms added bucket by bucket (fio's buckets are the same in every job and every fio version)."""
    total: dict[int, int] = {}
    for h in hists:
        for v, c in h:
            total[v] = total.get(v, 0) + c
    return sorted((v, c) for v, c in total.items() if c > 0)


def count(hist: Sequence[tuple[int, int]]) -> int:
    return sum(c for _, c in hist)


def percentile(hist: Sequence[tuple[int, int]], pct: float) -> int | None:
    """fio's percentile of a histogram: the first bucket whose cumulative count reaches pct % of the I/Os
    (None for an empty one)."""
    n = count(hist)
    if n == 0:
        return None
    threshold = n * pct / 100.0
    running = 0
    for v, c in hist:
        running += c
        if running >= threshold:
            return v
    return hist[-1][0]


def exceedance(hist: Sequence[tuple[int, int]], floor: float = EXCEEDANCE_FLOOR) -> list[tuple[int, float]]:
    """The exceedance curve: (x ns, fraction of I/Os slower than x) at each bucket, from the fastest bucket's
    fraction down to the slowest I/O's 1/N (points below ``floor`` are left out, as is the last bucket, where
    no I/O is slower)."""
    n = count(hist)
    out: list[tuple[int, float]] = []
    if n == 0:
        return out
    running = 0
    for v, c in hist:
        running += c
        frac = (n - running) / n
        if frac < floor or frac <= 0:
            break
        out.append((v, frac))
    return out


def hist_record(hist: Sequence[tuple[int, int]]) -> list[list[int]]:
    """The JSON of a histogram (``metrics.lat_hist``)."""
    return [[v, c] for v, c in hist]


def hist_of_record(v: object) -> Hist | None:
    """A ``lat_hist`` read from a results line (untrusted): pairs of whole numbers 0 … 2^63, ascending values,
    counts > 0, at most MAX_BINS; None for anything else (the line keeps it as read; it reads as absent)."""
    if not isinstance(v, list) or not v or len(v) > MAX_BINS:
        return None
    out: Hist = []
    last = -1
    for pair in v:
        if not (isinstance(pair, list) and len(pair) == 2):
            return None
        x, c = pair
        if not (_whole(x) and _whole(c)) or c == 0 or x <= last:
            return None
        out.append((x, c))
        last = x
    return out


def _whole(x: object) -> bool:
    return isinstance(x, int) and not isinstance(x, bool) and 0 <= x <= MAX_COUNT


# --- the tail over time: per-second p99 of a point -----------------------------------------------------------

# a second's p99 more than this many times the point's median second's p99: tail-unstable.  Measured
# (docs/tails.md, "Tail over time"): undisturbed 20 s points on a RAM loop device and on a virtio disk shared
# with other work reached 1.2-5.0×; a device the kernel throttled for 4 s mid-point 130-770×.
TAIL_UNSTABLE_FACTOR = 10.0
TAIL_PERCENTILE = 99.0  # the per-second percentile the stability check reads (samples' lat_p99_ns)
MIN_TAIL_INTERVALS = 5  # seconds with a supported p99 the check needs


def tail_stability(samples: Iterable[Mapping[str, object]]) -> dict[str, object]:
    """The results line's ``tail`` part of a storage point from its per-second samples: how far its worst
    second's p99 lies above its median second's.  Only measured whole seconds count (not ``ramp``, at least half
    a second long) whose I/Os support a p99 (:func:`min_ios`); ``{"unavailable": why}`` with fewer than
    MIN_TAIL_INTERVALS of them."""
    kept: list[tuple[float, float]] = []
    need = min_ios(TAIL_PERCENTILE)
    for s in samples:
        t, dt, iops, p99 = (_figure(s.get(k)) for k in ("t", "interval_s", "iops", "lat_p99_ns"))
        if (s.get("ramp") is True or t is None or t < 0 or dt is None or dt < 0.5 or iops is None or p99 is None
                or p99 <= 0):
            continue
        if iops * dt >= need:
            kept.append((t, p99))
    if len(kept) < MIN_TAIL_INTERVALS:
        return {"unavailable": f"{len(kept)} measured second{'s' if len(kept) != 1 else ''} with the "
                               f"{need:,} I/Os a p99 needs; the check needs {MIN_TAIL_INTERVALS}"}
    ordered = sorted(p for _, p in kept)
    mid = len(ordered) // 2
    median = ordered[mid] if len(ordered) % 2 else (ordered[mid - 1] + ordered[mid]) / 2
    worst_t, worst = max(kept, key=lambda tp: tp[1])
    return {"intervals": len(kept), "median_p99_ns": median, "worst_p99_ns": worst, "worst_t": worst_t,
            "ratio": round(worst / median, 3), "factor": TAIL_UNSTABLE_FACTOR}


def _figure(v: object) -> float | None:
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return None
    f = float(v)
    return f if math.isfinite(f) else None
