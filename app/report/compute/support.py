"""The support of the report's derived claims: how firmly a curve's knee holds, and whether an operating
point under a latency bound sits within the noise of that bound.

A knee (app.report.compute.analysis.knee) is one point out of a handful; it is reported with three checks:

- **margin**: its chord distance minus the runner-up's, in the unit square.  Below ``MARGIN_CLEAR`` the
  two points are as good a knee as each other.
- **drop-last**: the knee of the same curve without its heaviest load.  The chord ends at the last point,
  so a knee that moves when it goes is a property of where the sweep stopped, not of the device.
- **bootstrap**: ``RESAMPLES`` curves, each point's mean IOPS and mean latency recomputed from its
  whole-second samples drawn with replacement (a fixed seed, so the report is the same every time it is
  rendered); how often each load wins.  Consecutive seconds of one device are correlated and a second run
  meets other device states, so this spread is a lower bound of the knee's uncertainty.

With replicates (``repeat`` ≥ 2) the curve's points are the means over each load's replicates, and the spread
between runs enters the support twice: the bootstrap draws each load's replicates with replacement and, within
each drawn replicate, its seconds (a two-level bootstrap: between runs, then within one), and a fourth check,
**replicates**, finds the knee of each replicate's own curve; it passes only when every replicate finds the
same knee.

Verdict: **stable** when every check ran and passed (margin ≥ MARGIN_CLEAR, drop-last gives the same
knee, the knee wins at least BOOTSTRAP_AGREE of the resamples); **fragile** when one that ran failed
(the alternatives are named); **unconfirmed** when none failed but one could not run (no runner-up in a
three-point curve, no fourth point to drop, no per-second samples).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

from app.model.records import number
from app.report.compute import analysis
from app.report.compute.intervals import memory_intervals
from app.report.compute.noise import MIN_SAMPLES, SAMPLE_KEYS, Spread, samples_of, spread
from app.report.data.model import MemoryRow, StorageRow

MARGIN_CLEAR = 0.05  # chord distance in the unit square, the scale of MIN_KNEE_DISTANCE
RESAMPLES = 200
SEED = 20240525  # fixed: the same directory gives the same bootstrap, byte for byte
BOOTSTRAP_AGREE = 0.8  # share of resamples the knee must win to count as stable
PLAUSIBLE = 1e18  # a per-second IOPS or ns latency beyond this is junk, not a measurement
MAX_BOOT_SECONDS = 3600  # a longer point is bootstrapped from this many of its seconds, evenly spaced (time bound)


# --- knee ----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class KneeSupport:
    loads: tuple[str, ...]  # the curve's load labels, by index
    knee: int | None
    ranking: tuple[tuple[int, float], ...]  # interior points by chord distance, farthest first
    drop_last: int | None  # the knee without the last point (when the curve has four points or more)
    drop_last_checked: bool
    boot: tuple[tuple[int | None, int], ...] | None  # (knee index or None = no knee, resamples), most first
    boot_why: str  # why there is no bootstrap
    per_replicate: tuple[int | None, ...] | None = None  # each replicate's own knee (None: no replicates)

    @property
    def margin(self) -> float | None:
        return self.ranking[0][1] - self.ranking[1][1] if len(self.ranking) >= 2 else None

    @property
    def runner_up(self) -> int | None:
        return self.ranking[1][0] if len(self.ranking) >= 2 else None

    def share(self, index: int | None) -> float:
        if not self.boot:
            return 0.0
        return dict(self.boot).get(index, 0) / sum(n for _, n in self.boot)

    def checks(self) -> tuple[bool | None, bool | None, bool | None]:
        """(margin, drop-last, bootstrap): True passed, False failed, None could not run."""
        m = self.margin
        return (None if m is None else m >= MARGIN_CLEAR,
                self.drop_last == self.knee if self.drop_last_checked else None,
                None if self.boot is None else self.share(self.knee) >= BOOTSTRAP_AGREE)

    @property
    def replicates_agree(self) -> bool | None:
        """Every replicate's own curve finds this knee (None: no replicates)."""
        return None if self.per_replicate is None else all(k == self.knee for k in self.per_replicate)

    def replicates_text(self) -> str:
        if self.per_replicate is None:
            return "—"
        return ", ".join(self.name(k) for k in self.per_replicate) + (" (all agree)" if self.replicates_agree else "")

    @property
    def verdict(self) -> str:
        if self.knee is None:
            return "none"
        checks = self.checks()
        if False in checks or self.replicates_agree is False:
            return "fragile"
        return "unconfirmed" if None in checks else "stable"

    def name(self, index: int | None) -> str:
        return "no knee" if index is None else self.loads[index]

    def boot_text(self) -> str:
        if self.boot is None:
            return f"not possible ({self.boot_why})"
        total = sum(n for _, n in self.boot)
        parts = [f"{self.name(i)} in {n * 100 / total:.0f} %" for i, n in self.boot if n * 20 >= total]
        rest = total - sum(n for i, n in self.boot if n * 20 >= total)
        return ", ".join(parts) + (f", others {rest * 100 / total:.0f} %" if rest else "") + f" of {total} resamples"

    def margin_text(self) -> str:
        if self.knee is None or not self.ranking:
            return "—"
        if self.margin is None:
            return f"{self.ranking[0][1]:.3f}; no runner-up (one inner point)"
        return (f"{self.ranking[0][1]:.3f} vs {self.ranking[1][1]:.3f} ({self.name(self.runner_up)}): "
                f"{self.margin:.3f}")

    def drop_last_text(self) -> str:
        if not self.drop_last_checked:
            return "not possible (three loads)"
        same = " (same)" if self.drop_last == self.knee else ""
        return f"{self.name(self.drop_last)}{same}"

    def alternatives(self) -> list[str]:
        """The loads the failed checks point to instead of the knee."""
        m_ok, d_ok, b_ok = self.checks()
        alt: list[int | None] = []
        if m_ok is False:
            alt.append(self.runner_up)
        if d_ok is False:
            alt.append(self.drop_last)
        if b_ok is False and self.boot:
            total = sum(n for _, n in self.boot)
            alt += [i for i, n in self.boot if i != self.knee and n * 20 >= total]
        if self.replicates_agree is False and self.per_replicate is not None:
            alt += [i for i in self.per_replicate if i != self.knee]
        out: list[str] = []
        for i in alt:
            if i != self.knee and self.name(i) not in out:
                out.append(self.name(i))
        return out

    def verdict_text(self) -> str:
        v = self.verdict
        if v == "fragile":
            return "fragile: " + " or ".join([self.name(self.knee)] + self.alternatives())
        if v == "unconfirmed":
            m_ok, d_ok, b_ok = self.checks()
            missing = [what for ok, what in ((m_ok, "margin"), (d_ok, "cut-curve"), (b_ok, "bootstrap")) if ok is None]
            return f"unconfirmed: the {', '.join(missing)} check{'s' if len(missing) > 1 else ''} could not run"
        return v


def ranking(xs: Sequence[float], ys: Sequence[float]) -> tuple[tuple[int, float], ...]:
    """The inner points of a curve by chord distance, farthest first (ties: the lighter load first)."""
    d = analysis.chord_distances(xs, ys)
    return tuple(sorted(((i, d[i]) for i in range(1, len(d) - 1)), key=lambda t: (-t[1], t[0])))


def _seconds(run_dir: Path, row: StorageRow) -> list[tuple[float, float]]:
    """(IOPS, mean latency ns) of each whole second of a point with both figures plausible."""
    out = []
    for s in samples_of(run_dir, row):
        x, y = number(s.get("iops")), number(s.get("lat_mean_ns"))
        if x is not None and y is not None and 0 <= x <= PLAUSIBLE and 0 < y <= PLAUSIBLE:
            out.append((x, y))
    step = max(1, -(-len(out) // MAX_BOOT_SECONDS))  # ceiling division: 1 up to MAX_BOOT_SECONDS seconds
    return out[::step]


def bootstrap(run_dir: Path, points: Sequence[StorageRow], labels: Sequence[str],
              replicates: Sequence[Sequence[StorageRow]] | None = None
              ) -> tuple[tuple[tuple[int | None, int], ...] | None, str]:
    """How often each point is the knee when each point's means come from its seconds drawn with
    replacement; (None, why) when a point has fewer than MIN_SAMPLES whole seconds.  With ``replicates`` (per
    point, its replicates' rows) each resample first draws the point's replicates with replacement, then each
    drawn replicate's seconds, and takes the mean over the drawn replicates: the spread between runs is in it."""
    import numpy as np

    sets = [list(r) for r in replicates] if replicates else [[p] for p in points]
    seconds = [[_seconds(run_dir, r) for r in reps] for reps in sets]
    short = [lab for lab, s in zip(labels, seconds) if min(len(x) for x in s) < MIN_SAMPLES]
    if short:
        if len(short) == len(points) and not any(x for s in seconds for x in s):
            return None, "no per-second samples"
        return None, (f"{', '.join(short[:3])}{' …' if len(short) > 3 else ''} "
                      f"kept fewer than {MIN_SAMPLES} whole seconds" + (" in a replicate" if replicates else ""))
    # RandomState's stream is frozen by NumPy's compatibility policy: the same draws on every version
    rng = np.random.RandomState(SEED)
    means = []
    for reps in seconds:
        arrs = [np.array(s, dtype=float) for s in reps]
        rows = []
        # one resample at a time: memory stays at one point's seconds, however many a samples file holds
        for _ in range(RESAMPLES):
            picks = [arrs[rng.randint(0, len(arrs))] for _ in arrs] if len(arrs) > 1 else arrs
            rows.append(np.mean([a[rng.randint(0, len(a), size=len(a))].mean(axis=0) for a in picks], axis=0))
        means.append(np.array(rows))
    counts: dict[int | None, int] = {}
    for r in range(RESAMPLES):
        k = analysis.knee([float(m[r, 0]) for m in means], [float(m[r, 1]) for m in means])
        counts[k] = counts.get(k, 0) + 1
    return tuple(sorted(counts.items(), key=lambda t: (-t[1], -1 if t[0] is None else t[0]))), ""


def replicate_knees(curve: analysis.Curve) -> tuple[int | None, ...] | None:
    """The knee of each replicate's own curve (replicate k of every load), None without replicates (or when a
    replicate misses a load: its curve is not the same sweep)."""
    if not curve.repeated:
        return None
    numbers = sorted({r.replicate for reps in curve.replicates for r in reps if r.replicate is not None})
    out = []
    for k in numbers:
        rows = [next((r for r in reps if r.replicate == k), None) for reps in curve.replicates]
        if any(r is None for r in rows):
            return None
        out.append(analysis.knee([r.iops for r in rows if r], [r.lat_mean for r in rows if r]))
    return tuple(out) if len(out) >= 2 else None


def knee_support(run_dir: Path, curve: analysis.Curve) -> KneeSupport:
    """The checks of a storage curve's knee (cached on the curve: several sections ask)."""
    cached = curve.__dict__.get("_support")
    if isinstance(cached, KneeSupport):
        return cached
    pts = curve.points
    xs, ys = [p.iops for p in pts], [p.lat_mean for p in pts]
    labels = tuple(curve.load_label(p) for p in pts)
    checked = len(pts) >= 4
    drop = analysis.knee(xs[:-1], ys[:-1]) if checked else None
    reps = curve.replicates if curve.repeated else None
    boot, why = bootstrap(run_dir, pts, labels, reps) if curve.knee is not None else (None, "no knee")
    sup = KneeSupport(labels, curve.knee, ranking(xs, ys), drop, checked, boot, why, replicate_knees(curve))
    curve.__dict__["_support"] = sup
    return sup


# --- operating point under a bound -------------------------------------------------------------------------


@dataclass(frozen=True)
class BoundNoise:
    spread: Spread | None  # the point's per-second p99 (both directions together)
    bound_ns: float
    seconds: int  # whole-second samples kept

    @property
    def within_noise(self) -> bool:
        return self.spread is not None and self.spread.straddles(self.bound_ns)

    def text(self) -> str:
        s = self.spread
        if s is None:
            return ("not known (no per-second samples)" if not self.seconds else
                    f"not known ({self.seconds} whole second{'s' if self.seconds > 1 else ''}; {MIN_SAMPLES} needed)")
        span = f"{s.lo / 1e3:.1f}–{s.hi / 1e3:.1f}"
        if self.within_noise:
            return f"{span}: within noise of the bound"
        return f"{span}: every second within" if s.hi <= self.bound_ns else f"{span}: every second over"


def bound_noise(run_dir: Path, p: StorageRow, bound_ns: float,
                replicates: Sequence[StorageRow] | None = None) -> BoundNoise:
    """The per-second p99 of a load against the bound: its seconds, or with ``replicates`` every replicate's
    seconds together (the lowest and highest second of any run)."""
    rows = list(replicates) if replicates else [p]
    values = [v for r in rows for s in samples_of(run_dir, r) if (v := number(s.get(SAMPLE_KEYS["p99"]))) is not None]
    return BoundNoise(spread(values), bound_ns, sum(len(samples_of(run_dir, r)) for r in rows))


# --- memory knees ------------------------------------------------------------------------------------------

MEMORY_NO_BOOT = "a delay's line records no 95 % interval of its latency and bandwidth to resample from"


def memory_bootstrap(points: Sequence[MemoryRow]) -> tuple[tuple[tuple[int | None, int], ...] | None, str]:
    """How often each point is the knee when each point's latency and bandwidth are drawn from a normal law with the
    centre and width of its 95 % interval over the engine's windows (the lines keep the interval, not the windows);
    (None, why) when a point has no interval of both figures.  Windows of one run share its machine state, so this
    spread is a lower bound of the knee's uncertainty, as the storage bootstrap's is."""
    import numpy as np

    ivs = [memory_intervals(p) for p in points]
    if not all("latency_ns" in iv and "bandwidth_mbps" in iv for iv in ivs):
        return None, MEMORY_NO_BOOT
    rng = np.random.RandomState(SEED)
    draws = []
    for iv in ivs:
        (blo, bhi), (llo, lhi) = iv["bandwidth_mbps"], iv["latency_ns"]
        draws.append((rng.normal((blo + bhi) / 2, (bhi - blo) / 2 / 1.96, RESAMPLES),
                      rng.normal((llo + lhi) / 2, (lhi - llo) / 2 / 1.96, RESAMPLES)))
    counts: dict[int | None, int] = {}
    for r in range(RESAMPLES):
        k = analysis.knee([float(b[r]) for b, _ in draws], [float(lat[r]) for _, lat in draws])
        counts[k] = counts.get(k, 0) + 1
    return tuple(sorted(counts.items(), key=lambda t: (-t[1], -1 if t[0] is None else t[0]))), ""


def memory_knee_support(curve: analysis.MemCurve) -> KneeSupport:
    """The checks of a memory curve's knee, as for storage, over the curve's clean points (contended rows are no
    part of a knee): margin over the runner-up, the curve cut one delay short, and the bootstrap of
    :func:`memory_bootstrap` (a curve whose lines record no intervals: "unconfirmed" at best)."""
    cached = curve.__dict__.get("_support")
    if isinstance(cached, KneeSupport):
        return cached
    pts = curve.clean
    xs, ys = [p.bandwidth or 0.0 for p in pts], [p.latency or 0.0 for p in pts]
    labels = tuple(f"delay {p.delay}" for p in pts)
    k = None if curve.knee is None else next((i for i, p in enumerate(pts) if p is curve.points[curve.knee]), None)
    checked = len(pts) >= 4
    drop = analysis.knee(xs[:-1], ys[:-1]) if checked else None
    boot, why = memory_bootstrap(pts) if k is not None else (None, "no knee")
    sup = KneeSupport(labels, k, ranking(xs, ys), drop, checked, boot, why)
    curve.__dict__["_support"] = sup
    return sup
