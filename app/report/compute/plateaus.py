"""Plateaus of a working-set curve (idle latency against buffer size), found from the curve itself, and the
cache boundaries they imply compared with the cache sizes sysfs gave.

The rule (docs/report.md, "Working-set curve"): walk the sizes from the smallest; a size joins the current
run when its latency is within ``TOLERANCE`` of the run's median so far, else it starts a new run.  A
single size that leaves the run while the next size comes back within it is an outlier (a disturbed
window), kept in the run but not in its median.  A run of at least ``MIN_RUN`` sizes is a plateau, its
latency the median of its sizes; shorter runs are the transitions between plateaus.  A detected cache
boundary is the gap between two neighbouring plateaus: the latency left the smaller one after its last
size and reached the larger one at its first.  A sysfs cache size agrees with a boundary when it lies
within ``OCTAVES`` octave of that gap (a random chase starts missing a cache before it is full: the
cache is shared, physically indexed and not fully associative).
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass, field
from typing import Sequence

TOLERANCE = 0.15  # a size within 15 % of its run's median latency is on the same plateau
MIN_RUN = 3  # sizes a plateau needs (fewer are a transition)
MIN_SIZES = 2 * MIN_RUN  # a curve with fewer sizes cannot show two plateaus: no detection claimed
OCTAVES = 1.0  # a cache size within one octave of a detected boundary agrees with it


@dataclass
class Plateau:
    sizes: list[int]  # buffer bytes of its sizes, increasing (outliers included)
    latencies: list[float]  # ns, of the sizes the median is taken over (outliers left out)
    outliers: int = 0

    @property
    def first(self) -> int:
        return self.sizes[0]

    @property
    def last(self) -> int:
        return self.sizes[-1]

    @property
    def latency(self) -> float:
        return statistics.median(self.latencies)

    @property
    def middle(self) -> float:
        """The geometric middle of its sizes (where its label goes on a log axis)."""
        return math.sqrt(self.first * self.last)


@dataclass
class _Run:
    sizes: list[int] = field(default_factory=list)
    latencies: list[float] = field(default_factory=list)
    outliers: int = 0

    def fits(self, ns: float) -> bool:
        return abs(ns / statistics.median(self.latencies) - 1) <= TOLERANCE


def runs(curve: Sequence[tuple[int, float]]) -> list[_Run]:
    """The curve's (size, ns) pairs, by increasing size, cut into runs of like latency (the module's rule)."""
    pts = sorted((s, ns) for s, ns in curve if ns > 0 and math.isfinite(ns))
    out: list[_Run] = []
    for i, (size, ns) in enumerate(pts):
        cur = out[-1] if out else None
        if cur is not None and cur.fits(ns):
            cur.sizes.append(size)
            cur.latencies.append(ns)
        elif cur is not None and len(cur.latencies) >= 2 and i + 1 < len(pts) and cur.fits(pts[i + 1][1]):
            cur.sizes.append(size)  # one disturbed size inside a run: not a new level
            cur.outliers += 1
        else:
            out.append(_Run([size], [ns]))
    return out


def detect(curve: Sequence[tuple[int, float]]) -> list[Plateau] | None:
    """The plateaus of the curve, smallest buffer first; None when it has too few sizes to tell (MIN_SIZES)."""
    if len({s for s, ns in curve if ns > 0 and math.isfinite(ns)}) < MIN_SIZES:
        return None
    return [Plateau(r.sizes, r.latencies, r.outliers) for r in runs(curve) if len(r.sizes) >= MIN_RUN]


@dataclass(frozen=True)
class Cache:
    name: str  # L1d, L2, L3 (sysfs: level and type)
    size: int  # bytes


@dataclass(frozen=True)
class Boundary:
    below: Plateau  # the plateau the latency leaves
    above: Plateau  # the next one

    @property
    def lo(self) -> int:
        return self.below.last

    @property
    def hi(self) -> int:
        return self.above.first

    def octaves_from(self, size: int) -> float:
        """How far ``size`` lies outside the gap (lo, hi], in octaves; 0 inside it."""
        if size < self.lo:
            return math.log2(self.lo / size)
        return math.log2(size / self.hi) if size > self.hi else 0.0


def boundaries(plateaus: Sequence[Plateau]) -> list[Boundary]:
    return [Boundary(a, b) for a, b in zip(plateaus, plateaus[1:])]


def labels(plateaus: Sequence[Plateau], caches: Sequence[Cache]) -> list[str]:
    """What each plateau is, from the boundaries measured on the curve, never from where its sizes fall among the
    sysfs sizes (a virtual machine's sysfs may list a cache the guest's data never stays in): a plateau is the cache
    whose sysfs size agrees with the boundary that ends it; the last plateau is memory when it lies beyond the
    largest cache's agreed boundary or beyond every sysfs size; any other says that no cache agrees with its edges."""
    matches, _ = compare(plateaus, caches)
    # a boundary by its sizes (compare() builds its own Boundary objects); the nearest agreeing cache wins
    agreed = {(m.boundary.lo, m.boundary.hi): m.cache for m in sorted(matches, key=lambda m: -m.octaves)
              if m.agrees and m.boundary is not None}
    found = [(b.lo, b.hi) for b in boundaries(plateaus)]
    largest = max(caches, key=lambda c: c.size, default=None)
    out = []
    for i, p in enumerate(plateaus):
        after = found[i] if i < len(found) else None
        if after is not None and after in agreed:
            out.append(agreed[after].name)
        elif after is None and largest is not None and (p.first > largest.size or any(
                agreed.get(b) == largest for b in found)):
            out.append("memory")
        else:
            out.append(f"plateau {i + 1} (no sysfs cache agrees with its edges)")
    return out


def level_of(size: float, caches: Sequence[Cache]) -> str:
    """The level that holds a buffer of ``size`` bytes: the smallest cache at least that large, else memory."""
    for c in sorted(caches, key=lambda c: c.size):
        if size <= c.size:
            return c.name
    return "memory"


@dataclass(frozen=True)
class Match:
    cache: Cache
    boundary: Boundary | None  # the detected boundary nearest to the cache's size (None: no boundary at all)
    octaves: float  # its distance from that boundary

    @property
    def agrees(self) -> bool:
        return self.boundary is not None and self.octaves <= OCTAVES


def compare(plateaus: Sequence[Plateau], caches: Sequence[Cache]) -> tuple[list[Match], list[Boundary]]:
    """Each sysfs cache against the nearest detected boundary, and the boundaries no cache agrees with."""
    found = boundaries(plateaus)
    matches = []
    for c in sorted(caches, key=lambda c: c.size):
        near = min(found, key=lambda b: b.octaves_from(c.size), default=None)
        matches.append(Match(c, near, near.octaves_from(c.size) if near is not None else math.inf))
    used = {id(m.boundary) for m in matches if m.agrees}
    return matches, [b for b in found if id(b) not in used]
