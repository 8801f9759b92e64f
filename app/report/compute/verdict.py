"""One judgement of a difference between measured points, and of a curve along an axis: every sentence of the
report that says "real", "within noise" or "flat" (the summary of trends, the queueing view's growth past N*,
the host write-back check) asks this module, so one curve gets one verdict and every verdict the same rule.

Throughput and latency are multiplicative: a device twice as fast scatters twice as far, so the spread of a fast
point's replicates says little about a slow one's.  The rule therefore works on the logarithm of the figure, where a
difference is a ratio and each side's spread is relative.  Each side of a comparison is one point, or the
replicates of one point (``repeat`` ≥ 2), read as an estimate of the log of its figure with a standard error and
degrees of freedom:

- **replicates** (two or more): the mean of the replicates' logs, s/√n with s their standard deviation, n − 1 df.
  The replicates ran interleaved over the plan, so drift between runs is in their spread;
- **one measurement**: the log of the centre c of its batch-means 95 % interval (:mod:`app.report.compute.intervals`,
  ramp seconds left out), with standard error half-width / (t(0.975, k − 1) · c) — the delta method, se(log X) ≈
  se(X) / X — with k the batches the interval was computed from (9 df when the line does not record them).  It
  covers this run only: drift between runs is not in it;
- neither (too few samples for an interval, no samples kept, a figure of 0): no estimate, so "not judged", with
  the reason.

The difference d = log b − log a has the two standard errors in quadrature and the Welch–Satterthwaite degrees of
freedom (rounded down); the effect is the ratio e^d, shown as a percent difference e^d − 1, with its interval
e^(d ± t·se) − 1.  With α = 5 %, divided by the number of comparisons a curve makes (Bonferroni):

- **real** when |d| / se is beyond t(1 − α/2, df): a false "real" at most α of the time when the two are equal
  (at most α per curve);
- **within noise** when it is not real *and* the test had at least 80 % power to see a 10 % ratio:
  (t(1 − α/2, df) + t(0.80, df)) · se⁺ ≤ log 1.1, where se⁺ = √(se_a² u(df_a)² + se_b² u(df_b)²) puts each
  side's standard error at the 99 % upper bound of a spread estimated with that side's own degrees of freedom
  (u(2) = 9.97, u(4) = 3.67, u(9) = 2.08).  Three replicates can agree by chance far more closely than the runs
  truly scatter (a side's 2 df put its spread below a tenth of the truth one time in a hundred), and the power
  must hold for the spread the runs may truly have, not the one they happened to show: a test short of the
  power is called "within noise" at most about 2 % of the time even at the edge of 80 % power (1 % per side),
  and far less below it.  Only then is "no difference", "flat" said;
- **not judged** otherwise, with the reason ("too few samples: …"): a test that would miss a 10 % difference
  more than one time in five says nothing about whether there is one.

:class:`Verdict` is the structured result (``verdict``, ``effect``, ``reason`` …); :func:`judge` compares two
sides of a results directory, :func:`compare_estimates` two estimates built by :func:`replicate_estimate` or
:func:`interval_estimate` (what a harness with known truth scores), :func:`curve` judges a curve once (where it
peaks, the rise to it, what follows), and the text modules word it.  Nothing here draws or writes markdown.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from statistics import NormalDist
from typing import Callable, Sequence

from app.model.records import number
from app.report.compute.intervals import storage_intervals, why_none
from app.report.data.model import StorageRow
from app.stats.uncertainty import MIN_BATCHES, student_t_quantile

REAL, WITHIN, NOT_JUDGED = "real", "within noise", "not judged"
ALPHA = 0.05  # a false "real" at most this often per comparison (per curve: divided by its comparisons)
POWER = 0.80  # "within noise" only when the test would have seen MIN_EFFECT this often
MIN_EFFECT = 0.10  # the relative difference a "within noise" verdict must have been able to see
# A single run's interval sees only that run's own seconds, not how far the device's level moves from one run (or
# one point of a sweep) to the next.  That drift is added to a single run's standard error in quadrature, as a
# coefficient of variation of the run's mean: measured on a 2-vCPU KVM guest (docs/uncertainty.md, "What it
# does not cover"), 60 ten-second runs of a RAM-backed loop device varied by 4.5 % between runs, rounded up.
RUN_DRIFT = 0.05
# The power rule takes each side's standard error at an upper confidence bound of it, at this level, with that
# side's own degrees of freedom: a few replicates' spread can be a fraction of the true one by chance (with 3
# replicates, below a tenth of it one time in a hundred), and a spread that happens to be small must not make a
# test look able to see 10 %.  At 90 % on the two sides' pooled (Welch) degrees of freedom, 2 of 800 pairs of 3
# replicates drifting 6 % between runs (power 18 % to see 10 %) were called flat in the claims harness.
SPREAD_CONFIDENCE = 0.99
TOO_FEW = "too few samples"

FIGURE_KEYS = {"iops": "iops", "bw": "bw_bytes"}  # a figure → its key among a line's intervals


@dataclass(frozen=True)
class Estimate:
    """One side of a comparison: the centre of its figure (shown), the log of the figure the rule compares, that
    log's standard error (a relative one) and its degrees of freedom."""

    mean: float  # the replicates' mean, or the centre of the one interval
    log: float  # the mean of the replicates' logs, or the log of the interval's centre
    se: float  # the standard error of ``log``
    df: int
    n: int  # replicates, or batches of one run
    how: str  # "replicates" or "within-run"


@dataclass(frozen=True)
class Verdict:
    """How side b compares with side a on one figure.

    ``verdict``: "real", "within noise" or "not judged"; ``effect``: the ratio of b to a less 1 (of the
    replicates' geometric means, or of the intervals' centres; None when a side has no figure); ``low``/``high``:
    the (1 − α) interval of that relative effect (None when not computed); ``detectable``: the smallest relative
    difference the test saw with 80 % power (None: no test);
    ``reason``: one clause saying what the verdict rests on, or why there is none."""

    verdict: str
    effect: float | None
    reason: str
    a: float | None = None  # the centres compared
    b: float | None = None
    low: float | None = None
    high: float | None = None
    detectable: float | None = None
    how: str = ""  # "replicates", "within-run" or "replicates and within-run"

    @property
    def real(self) -> bool:
        return self.verdict == REAL

    @property
    def within(self) -> bool:
        return self.verdict == WITHIN

    @property
    def ratio(self) -> float | None:
        return None if self.effect is None else 1 + self.effect


@dataclass(frozen=True)
class NoEstimate:
    """A side without an estimate: why, and its headline figure (the mean over its replicates) to show."""

    reason: str
    mean: float | None


Side = Estimate | NoEstimate


def t_quantile(p: float, df: float) -> float:
    return student_t_quantile(p, df if df >= 1 else 1)


def _value(p: StorageRow, figure: str) -> float:
    return p.iops if figure == "iops" else p.bw


def _batches(p: StorageRow, key: str) -> int:
    """The batches the line's interval of ``key`` was computed from, MIN_BATCHES when it does not say."""
    method = p.metrics.ci_method
    series = method.get("series") if isinstance(method, dict) else None
    entry = series.get(key) if isinstance(series, dict) else None
    k = number(entry.get("batches")) if isinstance(entry, dict) else None
    return int(k) if k is not None and 2 <= k < 1e9 and k == int(k) else MIN_BATCHES


def replicate_estimate(values: Sequence[float]) -> Side:
    """The estimate from two or more replicates' figures (independent runs: the mean of their logs, s/√n, n − 1
    df)."""
    n = len(values)
    if n < 2:
        return NoEstimate(f"{TOO_FEW}: one replicate has no spread", values[0] if values else None)
    mean = math.fsum(values) / n
    if not min(values) > 0:
        return NoEstimate("a replicate measured nothing: no ratio to judge by", mean)
    logs = [math.log(x) for x in values]
    centre = math.fsum(logs) / n
    sd = math.sqrt(math.fsum((v - centre) ** 2 for v in logs) / (n - 1))
    if sd == 0:
        return NoEstimate(f"its {n} replicates are identical: no spread to judge by", mean)
    return Estimate(mean, centre, sd / math.sqrt(n), n - 1, n, "replicates")


def relative_se(low: float, high: float, batches: int = MIN_BATCHES) -> float | None:
    """The standard error, relative to its centre, of one run's batch-means 95 % interval [low, high] of
    ``batches`` batch means (the log-scale standard error by the delta method); None without a width."""
    half, centre = (high - low) / 2, (low + high) / 2
    if not (half > 0 and centre > 0):
        return None
    return half / t_quantile(0.975, max(2, batches) - 1) / centre


def interval_estimate(low: float, high: float, batches: int = MIN_BATCHES) -> Side:
    """The estimate from one run's batch-means 95 % interval [low, high] of ``batches`` batch means."""
    centre = (low + high) / 2
    if not centre > 0:
        return NoEstimate("its interval is not of a positive figure", centre)
    se = relative_se(low, high, batches)
    if se is None:
        return NoEstimate("its interval has no width", centre)
    k = max(2, batches)
    return Estimate(centre, math.log(centre), se, k - 1, k, "within-run")


def estimate(run_dir: Path | None, rows: Sequence[StorageRow], figure: str) -> Side:
    """The estimate of ``figure`` ("iops" or "bw") over ``rows`` (one point, or its replicates), or why none."""
    rows = [p for p in rows if _value(p, figure) > 0]
    if not rows:
        return NoEstimate("the point moved no data", None)
    xs = [_value(p, figure) for p in rows]
    if len(xs) >= 2:
        return replicate_estimate(xs)
    mean = xs[0]
    got = _interval(run_dir, rows[0], figure)
    if got is None:
        why = why_none(rows[0])
        return NoEstimate(why if why.startswith(TOO_FEW) else f"{TOO_FEW}: {why}", mean)
    return interval_estimate(got[0][0], got[0][1], got[1])


def _interval(run_dir: Path | None, p: StorageRow, figure: str) -> tuple[tuple[float, float], int] | None:
    """The line's batch-means 95 % interval of ``figure`` and the batches it was computed from (None: none)."""
    key = FIGURE_KEYS[figure]
    ivs = storage_intervals(run_dir, p)
    iv = ivs.get(key)
    if iv is None and figure == "bw" and p.bs > 0 and "iops" in ivs:  # bandwidth is IOPS × block size: the same
        key = "iops"                                                    # relative spread at one block size
        iv = (ivs["iops"][0] * p.bs, ivs["iops"][1] * p.bs)
    return None if iv is None else (iv, _batches(p, key))


def _welch_df(a: Estimate, b: Estimate) -> int:
    va, vb = a.se ** 2, b.se ** 2
    den = va ** 2 / a.df + vb ** 2 / b.df
    return max(1, math.floor((va + vb) ** 2 / den)) if den > 0 else min(a.df, b.df)


def compare_estimates(a: Side, b: Side, comparisons: int = 1) -> Verdict:
    """The verdict on b against a, with ``comparisons`` the number of tests the same claim rests on."""
    if isinstance(a, NoEstimate) or isinstance(b, NoEstimate):
        why = a.reason if isinstance(a, NoEstimate) else b.reason  # type: ignore[union-attr]
        effect = b.mean / a.mean - 1 if a.mean and b.mean is not None else None
        return Verdict(NOT_JUDGED, effect, why, a.mean, b.mean)
    alpha = ALPHA / max(1, comparisons)
    a, b = _with_drift(a), _with_drift(b)
    se = math.hypot(a.se, b.se)
    df = _welch_df(a, b)
    crit = t_quantile(1 - alpha / 2, df)
    diff = b.log - a.log
    effect = math.expm1(diff)
    how = a.how if a.how == b.how else "replicates and within-run"
    low, high = math.expm1(diff - crit * se), math.expm1(diff + crit * se)
    # the power rule: each side's spread at its upper bound, with that side's own degrees of freedom
    upper = math.hypot(a.se * spread_bound(a.df), b.se * spread_bound(b.df))
    detectable = math.expm1((crit + t_quantile(POWER, df)) * upper)
    basis = (f"{_sides(a, b)}; {(1 - alpha) * 100:.1f} % interval of the difference {low * 100:+.1f} … "
             f"{high * 100:+.1f} %" + (f", 5 % shared by {comparisons} comparisons" if comparisons > 1 else ""))
    if abs(diff) > crit * se:
        return Verdict(REAL, effect, basis, a.mean, b.mean, low, high, detectable, how)
    if math.log1p(detectable) <= math.log1p(MIN_EFFECT) + 1e-12:
        return Verdict(WITHIN, effect, f"{basis}; a {MIN_EFFECT * 100:.0f} % difference would show "
                       f"{POWER * 100:.0f} % of the time", a.mean, b.mean, low, high, detectable, how)
    return Verdict(NOT_JUDGED, effect, f"{TOO_FEW}: with {_sides(a, b)}, the test sees only "
                   f"{difference_text(detectable)} {POWER * 100:.0f} % of the time "
                   f"({MIN_EFFECT * 100:.0f} % needed)", a.mean, b.mean, low, high, detectable, how)


MAX_FOLD = 1000  # beyond this many times, the size a test could see is "over 1000-fold", not a 10-digit per cent


def size_text(effect: float) -> str:
    """A relative difference as a reader takes it in: "640 %" below tenfold, "40-fold" above, "over 1000-fold"
    beyond :data:`MAX_FOLD` (few replicates at their spread's upper bound see only huge differences)."""
    fold = 1 + effect
    if fold < 10:
        return f"{effect * 100:.0f} %"
    return f"{fold:.0f}-fold" if fold < MAX_FOLD else f"over {MAX_FOLD}-fold"


def difference_text(effect: float) -> str:
    """"a 640 % difference", "a 40-fold difference", or "differences over 1000-fold"."""
    size = size_text(effect)
    return f"differences {size}" if size.startswith("over") else f"a {size} difference"


def _chi2_cdf(x: float, df: int) -> float:
    """P(χ²(df) ≤ x): the regularized lower incomplete gamma function P(df/2, x/2), by its power series."""
    if x <= 0:
        return 0.0
    s, z = df / 2, x / 2
    term = total = 1.0 / s
    n = 1
    while term > total * 1e-15 and n < 100_000:
        term *= z / (s + n)
        total += term
        n += 1
    return min(1.0, math.exp(s * math.log(z) - z - math.lgamma(s)) * total)


@lru_cache(maxsize=512)
def spread_bound(df: int) -> float:
    """How much larger than the estimated standard error the true one can be at :data:`SPREAD_CONFIDENCE`:
    √(df / χ²(1 − c, df)), the one-sided upper bound of a standard deviation estimated with ``df`` degrees of
    freedom (9.97 at 2 df, 3.67 at 4, 2.08 at 9, 1.27 at 60)."""
    df = max(1, df)
    q = 1 - SPREAD_CONFIDENCE
    if df > 300:  # Wilson–Hilferty: χ²(q, df) ≈ df (1 − 2/(9 df) + z_q √(2/(9 df)))³, exact to 0.1 % here
        h = 2 / (9 * df)
        return math.sqrt(1 / (1 - h - NormalDist().inv_cdf(SPREAD_CONFIDENCE) * math.sqrt(h)) ** 3)
    lo, hi = 0.0, float(df)
    while _chi2_cdf(hi, df) < q:
        hi *= 2
    for _ in range(80):
        mid = (lo + hi) / 2
        if _chi2_cdf(mid, df) < q:
            lo = mid
        else:
            hi = mid
    return math.sqrt(df / ((lo + hi) / 2))


def _with_drift(e: Estimate) -> Estimate:
    """A single run's estimate with the between-run drift it cannot see (:data:`RUN_DRIFT`) in its standard
    error; replicates measured theirs."""
    if e.how != "within-run":
        return e
    return Estimate(e.mean, e.log, math.hypot(e.se, RUN_DRIFT), e.df, e.n, e.how)


def _sides(a: Estimate, b: Estimate) -> str:
    """What the two estimates are: "3 and 3 replicates", "within-run intervals", or one of each."""
    if a.how == b.how == "replicates":
        return f"{a.n} and {b.n} replicates"
    if a.how == b.how:
        return (f"within-run intervals, each widened by {RUN_DRIFT * 100:.0f} % for the drift between runs they "
                "cannot see")
    reps = a if a.how == "replicates" else b
    return f"{reps.n} replicates against a within-run interval"


def judge(run_dir: Path | None, a: Sequence[StorageRow], b: Sequence[StorageRow], figure: str,
          comparisons: int = 1) -> Verdict:
    """Point (or replicates) b against a on ``figure`` ("iops" or "bw")."""
    return compare_estimates(estimate(run_dir, a, figure), estimate(run_dir, b, figure), comparisons)


def replicates_of(p: StorageRow, rows: Sequence[StorageRow]) -> list[StorageRow]:
    """``p`` and every other measurement of the same point among ``rows`` (its replicates), ``p`` first."""
    key = (p.rw, p.read_pct, p.bs, p.rest, p.iodepth, p.numjobs)
    return [p] + [r for r in rows if r is not p and (r.rw, r.read_pct, r.bs, r.rest, r.iodepth, r.numjobs) == key]


def along(rows: Sequence[StorageRow], axis: Callable[[StorageRow], int]) -> list[list[StorageRow]]:
    """``rows`` grouped by their value of ``axis`` (each group a point and its replicates), along the axis."""
    groups: dict[int, list[StorageRow]] = {}
    for p in rows:
        groups.setdefault(axis(p), []).append(p)
    return [groups[k] for k in sorted(groups)]


@dataclass
class Curve:
    """One judgement of a figure along an axis: where it peaks (``top``), the rise to it from the first point
    and what follows to the last.  Every comparison made on the curve counts in its α (Bonferroni over the
    points the peak could have been), so a curve of equal points is called rising at most α of the time."""

    run_dir: Path | None
    groups: list[list[StorageRow]]
    figure: str
    estimates: list[Side] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.estimates = [estimate(self.run_dir, g, self.figure) for g in self.groups]

    @property
    def comparisons(self) -> int:
        return max(1, len(self.groups) - 1)

    def centre(self, i: int) -> float:
        return self.estimates[i].mean or 0.0

    @property
    def top(self) -> int:
        """The point with the highest centre (the first of equals)."""
        return max(range(len(self.groups)), key=lambda i: (self.centre(i), -i))

    def between(self, i: int, j: int) -> Verdict:
        """Point j against point i, at the curve's α."""
        return compare_estimates(self.estimates[i], self.estimates[j], self.comparisons)

    @property
    def rise(self) -> Verdict:
        return self.between(0, self.top)

    @property
    def after(self) -> Verdict | None:
        """The last point against the peak, None when the peak is the last point."""
        last = len(self.groups) - 1
        return None if self.top == last else self.between(self.top, last)

    @property
    def reached(self) -> int:
        """The first point not below the peak beyond noise: where the curve reaches its top (≤ ``top``)."""
        t = self.top
        return next(i for i in range(t + 1) if i == t or not self.between(i, t).real)

    @property
    def whole(self) -> Verdict:
        return self.between(0, len(self.groups) - 1)


def curve(run_dir: Path | None, groups: Sequence[Sequence[StorageRow]], figure: str) -> Curve:
    return Curve(run_dir, [list(g) for g in groups], figure)
