"""What a point's per-second samples tell beyond its averages: a write cliff, and the samples as CSV.

**Write cliff.** Flash drives take writes into a fast cache (SLC, DRAM) and slow down, sometimes several
times over, once it is full.  During a sequential write or a preconditioning pass, :func:`write_cliff` fits
the bandwidth series with two constant levels (the split with the least squared error, at least
:data:`MIN_SIDE` samples each side) and calls it a cliff when the level after is at most
:data:`CLIFF_RATIO` of the level before and the drop holds: at least :data:`HELD_SHARE` of the samples on
each side lie on their side of the midpoint between the two levels.  A one-second dip, or the ±25 % jitter
of a shared VM, is not a cliff.  It reports the bytes written before the drop and the two levels.
"""

from __future__ import annotations

import csv
import io
from typing import Iterable, Mapping, Sequence

from app.model.records import number

MIN_SIDE = 3
CLIFF_RATIO = 0.6
HELD_SHARE = 0.8
MAX_SERIES = 200_000  # samples looked at (a day at one a second is 86,400)


def _reading(v: object) -> float | None:
    """A sample's figure (:func:`app.model.records.number`); a negative one is no reading here."""
    f = number(v)
    return f if f is not None and f >= 0 else None


def _series(samples: Iterable[Mapping[str, object]]) -> list[tuple[float, float, float]]:
    """(end time s, interval s, bytes/s) of the usable samples, in order."""
    out: list[tuple[float, float, float]] = []
    for s in samples:
        if len(out) >= MAX_SERIES:
            break
        if not isinstance(s, Mapping):
            continue
        t, dt, bw = _reading(s.get("t")), _reading(s.get("interval_s")), _reading(s.get("bw_bytes"))
        if t is not None and dt is not None and dt > 0 and bw is not None:
            out.append((t, dt, bw))
    return out


def write_cliff(samples: Iterable[Mapping[str, object]]) -> dict[str, float | int] | None:
    """``{at_bytes, at_s, before_bw_bytes, after_bw_bytes}`` when the bandwidth series drops and stays down
    (module docstring), else None.  ``at_s`` is the sample time (seconds since the job started) at which the
    lower level begins; the levels are time-weighted means."""
    series = _series(samples)
    n = len(series)
    if n < 2 * MIN_SIDE:
        return None
    bw = [b for _, _, b in series]
    # prefix sums for the squared error of each two-level split
    s1 = [0.0]
    s2 = [0.0]
    for b in bw:
        s1.append(s1[-1] + b)
        s2.append(s2[-1] + b * b)

    def sse(lo: int, hi: int) -> float:
        k = hi - lo
        total = s1[hi] - s1[lo]
        return (s2[hi] - s2[lo]) - total * total / k

    best = min(range(MIN_SIDE, n - MIN_SIDE + 1), key=lambda k: sse(0, k) + sse(k, n))
    before, after = series[:best], series[best:]

    def level(part: Sequence[tuple[float, float, float]]) -> float:
        return sum(b * dt for _, dt, b in part) / sum(dt for _, dt, _ in part)

    hi, lo = level(before), level(after)
    if hi <= 0 or lo > CLIFF_RATIO * hi:
        return None
    mid = (hi + lo) / 2
    if sum(b > mid for _, _, b in before) < HELD_SHARE * len(before):
        return None
    if sum(b < mid for _, _, b in after) < HELD_SHARE * len(after):
        return None
    return {"at_bytes": int(sum(b * dt for _, dt, b in before)), "at_s": round(before[-1][0], 3),
            "before_bw_bytes": round(hi, 1), "after_bw_bytes": round(lo, 1)}


SAMPLE_COLUMNS = ("index", "t", "interval_s", "iops", "read_iops", "write_iops", "bw_MBps", "lat_mean_us",
                  "lat_p99_us", "lat_p50_us", "lat_p99_9_us")


def samples_csv(series: Iterable[tuple[int, Sequence[Mapping[str, object]]]]) -> str:
    """samples.csv: one row per sample of each point (``index`` is the point's plan index), bandwidth in MB/s
    and latency in µs like results.csv; a value a sample does not have is an empty cell."""
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(SAMPLE_COLUMNS)

    def cell(v: object, scale: float = 1.0) -> str:
        f = _reading(v)
        return "" if f is None else f"{f / scale:.6f}".rstrip("0").rstrip(".")

    for index, samples in series:
        for s in samples:
            w.writerow([index, cell(s.get("t")), cell(s.get("interval_s")), cell(s.get("iops")),
                        cell(s.get("read_iops")), cell(s.get("write_iops")), cell(s.get("bw_bytes"), 1e6),
                        cell(s.get("lat_mean_ns"), 1e3), cell(s.get("lat_p99_ns"), 1e3), cell(s.get("lat_p50_ns"), 1e3),
                        cell(s.get("lat_p99_9_ns"), 1e3)])
    return buf.getvalue()
