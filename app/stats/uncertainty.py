"""How precisely a series of samples knows its mean: a confidence interval by the method of batch means.

A point's per-second samples (IOPS, bandwidth, mean latency) are neither independent nor stationary: the
first seconds may be a warm-up, and consecutive seconds of one device are correlated.  A plain Student-t
interval of the samples is then too narrow.  Here:

1. A warm-up is dropped: MSER-5's cut (:func:`mser5_truncation`), kept only when the samples it drops differ
   from the rest beyond their noise (:func:`warmup_cut`); a stationary series keeps all its samples.
2. A series too short for its own correlation gets no interval (:func:`too_correlated`): batch means needs
   10 batches of at least half a correlation time, that time taken at an upper bound of its estimate.
3. The rest is cut into ``k`` batches of ``m`` consecutive samples; ``m`` doubles from 1 until the lag-1
   autocorrelation of the batch means is no longer significant, as long as ``min_batches`` batches remain
   (the LBATCH idea of Fishman & Yarberry, "An implementation of the batch means method", INFORMS Journal
   on Computing 9(3), 1997).
4. The interval is ``mean ± t(1 − α/2, k − 1) · s / √k · √((1 + r)/(1 − r))`` with ``s`` the standard
   deviation of the batch means and ``r`` what lag-1 correlation they keep (0 when none), and never narrower
   than the samples' effective-size interval at the 99 % upper bound of their correlation (:func:`_at_least`),
   a bound taken with the lag-1 estimate's small-sample standard error (:func:`lag1_se`), so it holds for the
   few short, strongly correlated series the gate lets through.

On AR(1) series (tests/unit/test_uncertainty.py, docs/uncertainty.md) the 95 % interval covers the true mean
in 94–99.6 % of the series that get one, at φ 0, 0.5 and 0.9 and 30–1200 samples; φ 0.5 with 30 samples gets
an interval about two times in three, φ 0.9 (correlation time ≈ 19 samples) one time in ten with 30–60
samples, three in four with 300, nearly always with 1200.

The interval covers the uncertainty of one run's mean given that run's own fluctuations.  It says nothing
of drift between runs (a device that is 5 % slower ten minutes later): only repeated runs show that.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Callable, Mapping, Sequence

from app.model.records import MAX_NUMBER, number

MSER_BATCH = 5  # MSER-5: the statistic is computed on means of 5 consecutive samples
# the lag-1 autocorrelation of k independent batch means, corrected for its bias, is about N(0, 1/k): above
# 2/√k is significant (one-sided: only positive correlation makes the interval too narrow)
R1_Z = 2.0
WARMUP_Z = 3.0  # MSER-5's cut is kept when the dropped samples' mean is this many standard errors off the rest's,
WARMUP_TAU_Z = 1.0  # the standard error widened by the correlation time one standard error above its estimate
MAX_R = 0.95  # the largest lag-1 correlation a correlation time is computed from (τ ≤ 39 samples)
# batch means needs min_batches batches of at least half a correlation time, that time taken at the one-sided
# 84 % upper bound of the lag-1 correlation (one standard error above its estimate)
BATCH_TAUS = 0.5
GATE_Z = 1.0
# no interval is narrower than the samples' effective-size interval at the 99 % upper bound of their correlation,
# a bound that holds at 99 % for a short, strongly correlated series too (:func:`lag1_se`, docs/uncertainty.md)
FLOOR_Z = 2.7


@dataclass(frozen=True)
class Interval:
    """A confidence interval of the mean of a series (units of the series)."""

    low: float
    high: float
    mean: float
    batches: int  # k: how many batch means the interval is computed from
    batch_size: int  # m: samples per batch
    truncated: int  # samples dropped from the start as warm-up (:func:`warmup_cut`)
    method: str = "batch-means"


@dataclass(frozen=True)
class NoInterval:
    """Why a series has no interval: one sentence."""

    reason: str


def mser5_truncation(values: Sequence[float]) -> int:
    """How many samples to drop from the start of ``values`` as warm-up, by MSER-5.

    The rule (White, "An effective truncation heuristic for bias reduction in simulation output",
    Simulation 69(6), 1997; Franklin & White, "Stationarity tests and MSER-5", Winter Simulation Conference
    2008): average the series in ``b`` batches of 5 (a remainder at the end is left out of the statistic);
    for each ``d`` drop the first ``d`` batches and compute the marginal standard error
    ``MSER(d) = Σ_{j>d} (Z_j − Z̄_d)² / (b − d)²`` of the ``b − d`` batch means ``Z_j`` left; the warm-up is
    ``5·d`` for the ``d`` minimising it.  The search stops at half the batches and always keeps two (past
    that the statistic rewards throwing data away: one batch left has no spread at all); of equal minima
    (within rounding) the earliest wins, so a flat series keeps all its samples.  A series of fewer than
    three batches has no warm-up.  The statistics of every ``d`` come from one backward pass (Welford's
    update), so a day of per-second samples costs milliseconds.
    """
    xs = _centred(values)
    b = len(xs) // MSER_BATCH
    last = min(b // 2, b - 2)  # the largest cut tried
    if last < 1:
        return 0
    z = [math.fsum(xs[j * MSER_BATCH:(j + 1) * MSER_BATCH]) / MSER_BATCH for j in range(b)]
    stats = _suffix_mser(z)
    best_d, best = 0, math.inf
    for d in range(last + 1):
        if stats[d] < best * (1 - 1e-9):  # strictly better beyond rounding: ties keep the earlier, smaller cut
            best_d, best = d, stats[d]
    return best_d * MSER_BATCH


def _suffix_mser(z: Sequence[float]) -> list[float]:
    """``Σ_{j≥d} (z_j − mean)² / (b − d)²`` for every ``d``: the suffixes' sums of squares by Welford's update,
    accumulated from the end (stable where a sum of squares less a squared sum would cancel)."""
    out = [0.0] * len(z)
    mean = m2 = 0.0
    for n, d in enumerate(range(len(z) - 1, -1, -1), start=1):
        delta = z[d] - mean
        mean += delta / n
        m2 += delta * (z[d] - mean)
        out[d] = max(m2, 0.0) / (n * n)
    return out


def batch_means_interval(values: Sequence[float], level: float = 0.95,
                         min_batches: int = 10, gate: bool = True) -> Interval | NoInterval:
    """The ``level`` confidence interval of the mean of ``values`` by batch means after the warm-up
    (:func:`warmup_cut`), for a series long enough for its correlation (:func:`too_correlated`).

    The batch size ``m`` starts at 1 and doubles, while ``k ≥ min_batches`` batches remain, until the lag-1
    autocorrelation of the ``k`` batch means, corrected for its small-sample bias (``r1 + (1 + 3·r1)/k``),
    is below ``2/√k`` (about two standard deviations of the estimate for independent means; one-sided, as
    only positive correlation makes the interval too narrow).  What correlation the test lets through with
    few batches still narrows the interval, so its half-width ``t · s/√k`` is widened by the AR(1)
    effective-size factor ``√((1 + r)/(1 − r))``, ``r`` that corrected ``r1`` clipped to 0–0.9 (Wilks,
    Statistical Methods in the Atmospheric Sciences, "effective sample size"); for independent means it
    is 1 on average; and the half-width is at least the samples' own effective-size one (:func:`_at_least`).
    When ``k·m`` is short of the samples left, the earliest samples (nearest the warm-up)
    are the ones left out.  A constant series gives a zero-width interval.  No interval when a value is not
    a finite number within ±2^64, when fewer than ``min_batches`` samples are left after the warm-up, when
    they are too few for their correlation, or when no batch size leaves ``min_batches`` uncorrelated
    batches.  ``gate`` False skips the too-few-for-their-correlation test and the floor, for a caller that widens the
    interval for the samples' correlation itself (app.stats.finesamples: the AR(1) effective-size interval of the
    raw sub-second samples, whose batches of grouped means are few by design).
    """
    if not 0 < level < 1:
        raise ValueError(f"level {level!r} must lie between 0 and 1")
    if min_batches < 2:
        raise ValueError(f"min_batches {min_batches!r} must be at least 2")
    bad = next((i for i, v in enumerate(values) if not (math.isfinite(v) and abs(v) <= MAX_NUMBER)), None)
    if bad is not None:
        return NoInterval(f"sample {bad} is {values[bad]!r}, not a finite number within ±2^64")
    xs = _centred(values)  # the interval of the series less its first value, shifted back at the end
    cut = warmup_cut(xs)
    kept = xs[cut:]
    if len(kept) < min_batches:
        return NoInterval(f"too few samples: {len(kept)} left after dropping {cut} as warm-up, "
                          f"{min_batches} needed")
    offset = float(values[0])
    if min(kept) == max(kept):
        level_value = offset + kept[0]
        return Interval(level_value, level_value, level_value, len(kept), 1, cut)
    short = too_correlated(kept, min_batches) if gate else None
    if short is not None:
        return short
    m = 1
    while (k := len(kept) // m) >= min_batches:
        means = _batch_means(kept, m)
        if unbiased_lag1(means) < R1_Z / math.sqrt(k):
            iv = _interval(means, level, m, cut, offset)
            return _at_least(iv, kept, level) if gate else iv
        m *= 2
    return NoInterval(f"batch means stay correlated: no batch size leaves {min_batches} uncorrelated batches "
                      f"of the {len(kept)} samples after the warm-up")


def warmup_cut(values: Sequence[float]) -> int:
    """How many samples to drop from the start of ``values`` as warm-up: MSER-5's cut
    (:func:`mser5_truncation`) when the samples it drops are a real transient, else none.

    MSER-5 always finds some cut that lowers its statistic, also on a stationary series, where it threw away
    up to half of the samples and with them the interval's coverage.  Its cut is kept only when the mean of
    the dropped samples differs from the mean of the rest by more than :data:`WARMUP_Z` standard errors of
    that difference, the standard error taken from the rest's variance widened by its correlation time
    (:func:`correlation_time`, one standard error above its estimate: a short correlated series looks less
    correlated than it is).  MSER-5 picks the cut that looks most like a transient, so the threshold is above
    the usual 2.  On stationary AR(1) series (docs/uncertainty.md) about 1 % of the series lose samples at
    φ 0 and 0.5 (MSER-5 alone: 30–50 %), 3–8 % at φ 0.9; a ramp over the first seconds is still cut."""
    cut = mser5_truncation(values)
    if cut == 0:
        return 0
    head, rest = [float(v) for v in values[:cut]], [float(v) for v in values[cut:]]
    n = len(rest)
    centre = math.fsum(rest) / n
    gap = abs(math.fsum(head) / cut - centre)
    var = math.fsum((v - centre) ** 2 for v in rest) / (n - 1)
    se = math.sqrt(var * correlation_time(rest, WARMUP_TAU_Z) * (1 / cut + 1 / n))
    return cut if gap > WARMUP_Z * se else 0


def correlation_time(values: Sequence[float], z: float = 0.0, small_sample: bool = False) -> float:
    """The integrated correlation time of ``values`` in samples, ``(1 + r)/(1 − r)``, ``r`` their lag-1
    autocorrelation less its small-sample bias (:func:`unbiased_lag1`), raised by ``z`` of its standard error,
    clipped to 0–:data:`MAX_R`: the factor by which correlation inflates the variance of a mean of AR(1)
    samples (1 for independent ones).  The standard error is the large-sample ``√((1 − r²)/n)``, or with
    ``small_sample`` :func:`lag1_se`, which a bound that must hold on a short series needs."""
    xs = [float(v) for v in values]
    if len(xs) < 3:
        return 1.0
    r = unbiased_lag1(xs)
    n = len(xs)
    se = lag1_se(r, n) if small_sample else math.sqrt(max(1 - r * r, 0.0) / n)
    r = min(max(r + z * se, 0.0), MAX_R)
    return (1 + r) / (1 - r)


def lag1_se(r: float, n: int) -> float:
    """The standard error of the bias-corrected lag-1 autocorrelation ``r`` (:func:`unbiased_lag1`) of ``n``
    samples: ``√((1 − r²)/n + ((1 + 3r)/n)²)``.

    The first term is the large-sample one (Bartlett).  On a short, strongly correlated series the estimate
    spreads up to twice as far (AR(1) ρ 0.9: 0.148 for 30 samples against 0.080, 0.086 for 60 against 0.056),
    and the corrected estimate is still low (0.825 for 30 samples); what is missing is about the size of the
    bias correction ``(1 + 3r)/n`` itself, the second term.  With it the spread is matched within a few per cent
    at ρ 0–0.95 and 30–300 samples, within 10 % at 15 (docs/uncertainty.md); the large-sample term alone
    matches it only at ρ ≤ 0.5 or from some hundreds of samples on."""
    return math.sqrt(max(1 - r * r, 0.0) / n + ((1 + 3 * max(r, 0.0)) / n) ** 2)


def too_correlated(values: Sequence[float], min_batches: int) -> NoInterval | None:
    """Why ``values`` (after the warm-up) are too few for batch means at their own correlation, or None.

    Batch means needs ``min_batches`` batches of at least :data:`BATCH_TAUS` correlation times
    (:func:`correlation_time` at :data:`GATE_Z` standard errors above the estimated lag-1 correlation: a
    short, strongly correlated series looks less correlated than it is).  With fewer samples LBATCH's test
    of the batch means has too little to go on and lets correlated means through (AR(1) φ 0.9, 30–60
    samples: half of such intervals missed the mean); such a series gets no interval."""
    tau = correlation_time(values, GATE_Z)
    need = math.ceil(min_batches * BATCH_TAUS * tau)
    if len(values) >= need:
        return None
    r = (tau - 1) / (tau + 1)
    return NoInterval(f"too few samples for their correlation: {len(values)} samples correlated up to {r:.2f} "
                      f"from one to the next (correlation time {tau:.1f} samples), {need} needed for "
                      f"{min_batches} batches of {BATCH_TAUS:g} correlation time")


def _at_least(iv: Interval, kept: Sequence[float], level: float) -> Interval:
    """``iv`` widened about its centre, where it is narrower, to the effective-size interval of the samples at
    the 99 % upper bound of their correlation (:data:`FLOOR_Z`).

    With ``τ`` that correlation time (:func:`correlation_time`), ``n`` samples carry about ``n/τ``
    independent ones, and their standard deviation ``s`` is low by the factor ``√((n − τ)/n)`` (a mean of
    correlated samples is near each of them); the floor is ``t(n/τ − 1) · s · √(τ/(n − τ))`` (Wilks,
    Statistical Methods in the Atmospheric Sciences, "effective sample size").  On a short series LBATCH's test
    passes the series that look least correlated, whose batch means then undercover (AR(1) φ 0.5, 30 samples:
    80 %); the floor restores the coverage.  At strong correlation only the series whose correlation came out
    lowest pass the gate (AR(1) φ 0.9, 30–60 samples: one in ten), so for them the bound must hold too: it
    takes the small-sample standard error (:func:`lag1_se`), with which it is below the true correlation in
    about 1 % of series (with the large-sample one, 3–4.5 % at φ 0.9, and 8–15 % of those intervals missed)."""
    n = len(kept)
    tau = correlation_time(kept, FLOOR_Z, small_sample=True)
    centre = math.fsum(kept) / n
    sd = math.sqrt(math.fsum((v - centre) ** 2 for v in kept) / (n - 1))
    df = max(1, math.floor(n / tau) - 1)
    half = student_t_quantile((1 + level) / 2, df) * sd * math.sqrt(tau / (n - tau if n > 2 * tau else n))
    if half <= (iv.high - iv.low) / 2:
        return iv
    mid = (iv.low + iv.high) / 2
    return Interval(mid - half, mid + half, iv.mean, iv.batches, iv.batch_size, iv.truncated, iv.method)


@lru_cache(maxsize=256)  # a series of runs asks for the same few df again and again
def student_t_quantile(p: float, df: float) -> float:
    """The ``p`` quantile of Student's t distribution with ``df`` degrees of freedom (a whole number ≥ 1, or
    ``math.inf`` for the normal distribution), to about 1e-12.

    For whole ``df`` the probability ``A(t) = P(|T| ≤ t)`` is a finite sum in ``θ = atan(t/√df)``
    (Abramowitz & Stegun, Handbook of Mathematical Functions, 26.7.3–26.7.4); the quantile is found by
    bisection on it.
    """
    if not 0 < p < 1:
        raise ValueError(f"probability {p!r} must lie between 0 and 1")
    if df == math.inf:
        return statistics.NormalDist().inv_cdf(p)
    if df < 1 or df != int(df):
        raise ValueError(f"degrees of freedom {df!r} must be a whole number ≥ 1 or infinity")
    if p < 0.5:
        return -student_t_quantile(1 - p, df)
    target = 2 * p - 1
    lo, hi = 0.0, 1.0
    while _t_central(hi, int(df)) < target:
        lo, hi = hi, hi * 2
    for _ in range(200):
        mid = (lo + hi) / 2
        if mid in (lo, hi):
            break
        lo, hi = (mid, hi) if _t_central(mid, int(df)) < target else (lo, mid)
    return (lo + hi) / 2


def _t_central(t: float, df: int) -> float:
    """P(|T| ≤ t) for Student's t with ``df`` degrees of freedom (A&S 26.7.3 for odd, 26.7.4 for even df)."""
    theta = math.atan(t / math.sqrt(df))
    c2 = math.cos(theta) ** 2
    term, total = 1.0, 1.0
    if df % 2:
        for j in range(1, (df - 1) // 2):  # 1 + (2/3)c² + (2·4)/(3·5)c⁴ + …
            term *= c2 * (2 * j) / (2 * j + 1)
            total += term
        tail = math.sin(theta) * math.cos(theta) * total if df > 1 else 0.0
        return 2 / math.pi * (theta + tail)
    for j in range(1, df // 2):  # 1 + (1/2)c² + (1·3)/(2·4)c⁴ + …
        term *= c2 * (2 * j - 1) / (2 * j)
        total += term
    return math.sin(theta) * total


def _centred(values: Sequence[float]) -> list[float]:
    """``values`` less the first of them: the arithmetic then sees the same numbers whatever the offset of the
    series, and keeps its precision when the offset is large against the spread (1e6 IOPS ± 10)."""
    return [float(v) - float(values[0]) for v in values] if values else []


def _batch_means(xs: list[float], m: int) -> list[float]:
    """The means of the last ``len(xs) // m`` whole batches of ``m`` (the earliest remainder left out)."""
    start = len(xs) % m
    return [math.fsum(xs[i:i + m]) / m for i in range(start, len(xs), m)]


def _lag1(means: list[float]) -> float:
    """The lag-1 autocorrelation of ``means`` (0 for a constant series: nothing to correlate)."""
    centre = math.fsum(means) / len(means)
    dev = [v - centre for v in means]
    var = math.fsum(d * d for d in dev)
    return math.fsum(a * b for a, b in zip(dev, dev[1:])) / var if var > 0 else 0.0


def unbiased_lag1(means: list[float]) -> float:
    """The lag-1 autocorrelation of ``means`` less its small-sample bias: for an AR(1) series of ``k`` values
    the estimate is low by about ``(1 + 3ρ)/k`` (Kendall 1954; Marriott & Pope, Biometrika 41, 1954)."""
    r = _lag1(means)
    return r + (1 + 3 * r) / len(means)


def _interval(means: list[float], level: float, m: int, cut: int, offset: float) -> Interval:
    k = len(means)
    centre = math.fsum(means) / k
    sd = math.sqrt(math.fsum((v - centre) ** 2 for v in means) / (k - 1))
    # what correlation the test let through still narrows the interval: widen by the AR(1) factor
    r1 = min(max(unbiased_lag1(means), 0.0), 0.9)  # the test keeps it below 2/√k: the bound is for min_batches < 5
    half = student_t_quantile((1 + level) / 2, k - 1) * sd / math.sqrt(k) * math.sqrt((1 + r1) / (1 - r1))
    return Interval(offset + (centre - half), offset + (centre + half), offset + centre, k, m, cut)


# --- the interval record of a results line --------------------------------------------------------------

LEVEL = 0.95
MIN_BATCHES = 10  # batch means an interval is computed from, at least
WHOLE_INTERVAL_S = 0.5  # a sample covering less (fio's last dump, a few ms after the one before) is no second
STORAGE_SERIES = ("iops", "bw_bytes", "lat_mean_ns")  # what a storage sample calls each figure


@dataclass(frozen=True)
class Uncertainty:
    """The interval record of one point: ``ci95`` (figure → [low, high]) and ``ci_method`` (how, or why not),
    as a results line's ``metrics`` holds them (docs/results-schema.md)."""

    intervals: dict[str, Interval]
    reasons: dict[str, str]  # figure → why it has no interval
    samples: int
    reason: str | None = None  # why no figure has one (no samples at all, an imported file …)
    shifts: dict[str, LevelShift] = field(default_factory=dict)  # figure → the level shift its series has
    shift_tested: bool = False  # a series was long enough to be tested for a level shift

    @property
    def ci95(self) -> dict[str, list[float]]:
        # every figure is ≥ 0: a heavy-tailed series (one second of 190 ms latency among 100 µs ones) can give a
        # half-width wider than the mean, and the interval then says "at least 0", not a negative latency
        return {k: [max(0.0, iv.low), iv.high] for k, iv in self.intervals.items()}

    @property
    def ci_method(self) -> dict[str, object]:
        shift: dict[str, object] = ({"level_shift": {"test": SHIFT_TEST, "found": {k: v.json() for k, v in
                                                                                  self.shifts.items()}}}
                                    if self.shift_tested else {})
        if not self.intervals:
            reasons = list(dict.fromkeys(self.reasons.values()))
            return {"method": "none", "reason": self.reason or "; ".join(reasons) or "no samples", **shift}
        series: dict[str, object] = {}
        for k, iv in self.intervals.items():
            series[k] = {"batch_size": iv.batch_size, "batches": iv.batches, "warmup": iv.truncated}
        for k, why in self.reasons.items():
            series[k] = {"reason": why}
        return {"method": "batch-means", "level": LEVEL, "samples": self.samples, "series": series, **shift}


def none_because(reason: str) -> Uncertainty:
    """The record of a point that has no samples to compute an interval from (one sentence why)."""
    return Uncertainty({}, {}, 0, reason)


def intervals_of(series: Mapping[str, Sequence[float]], min_batches: int = MIN_BATCHES) -> Uncertainty:
    """The 95 % batch-means interval of each named series (:func:`batch_means_interval`); a series with a level
    shift (:func:`level_shift`) has none: the interval of the mean of two levels is meaningless, and the shift
    is recorded instead."""
    return uncertainty_of(series, lambda v: batch_means_interval(v, LEVEL, min_batches), level_shift)


def uncertainty_of(series: Mapping[str, Sequence[float]], interval: Callable[[Sequence[float]], Interval | NoInterval],
                   shift_of: Callable[[Sequence[float]], LevelShift | None], per_value: int = 1) -> Uncertainty:
    """The interval record of named series: each tested for a level shift by ``shift_of`` (a shifted series gets
    no interval, the shift recorded instead), the others given ``interval``; ``per_value`` samples make one value
    of the shift test (a series is tested from :data:`SHIFT_MIN_SAMPLES` values on)."""
    intervals: dict[str, Interval] = {}
    reasons: dict[str, str] = {}
    shifts: dict[str, LevelShift] = {}
    tested = False
    for name, values in series.items():
        tested = tested or len(values) // per_value >= SHIFT_MIN_SAMPLES
        shift = shift_of(values)
        if shift is not None:
            shifts[name] = shift
            reasons[name] = shift.reason()
            continue
        got = interval(values)
        if isinstance(got, Interval):
            intervals[name] = got
        else:
            reasons[name] = got.reason
    return Uncertainty(intervals, reasons, max((len(v) for v in series.values()), default=0), shifts=shifts,
                       shift_tested=tested)


def storage_series(samples: Sequence[Mapping[str, object]]) -> dict[str, list[float]]:
    """A storage point's per-second samples (raw/…samples.jsonl, untrusted) as one series per figure: whole
    seconds only (``interval_s`` ≥ 0.5 where given), measured ones only (not marked ``ramp``: fio's
    ``ramp_time``, which its own figures leave out), a sample without a usable figure skipped for that figure."""
    out: dict[str, list[float]] = {k: [] for k in STORAGE_SERIES}
    for s in samples:
        span = number(s.get("interval_s"))
        if (span is not None and span < WHOLE_INTERVAL_S) or s.get("ramp") is True:
            continue
        for k in STORAGE_SERIES:
            v = number(s.get(k))
            if v is not None and 0 <= v <= MAX_NUMBER:
                out[k].append(v)
    return {k: v for k, v in out.items() if v}


def half_width(ci: tuple[float, float]) -> float:
    return (ci[1] - ci[0]) / 2


# --- replicates and differences ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Replicates:
    """A figure over the replicates of one point: their mean, standard deviation, coefficient of variation
    (sd / mean; None for a mean of 0) and the Student-t 95 % interval of the mean (None for one replicate)."""

    n: int
    mean: float
    sd: float
    cv: float | None
    ci: tuple[float, float] | None


def replicate_spread(values: Sequence[float]) -> Replicates:
    """The spread of one figure over ``values``, one per replicate (at least one; independent runs, so a plain
    t interval: the runs were interleaved over the plan, so drift shows up as their variation)."""
    if not values:
        raise ValueError("no replicates")
    n = len(values)
    mean = math.fsum(values) / n
    sd = statistics.stdev(values) if n > 1 else 0.0
    cv = sd / abs(mean) if mean else None
    ci = None
    if n > 1:
        half = student_t_quantile((1 + LEVEL) / 2, n - 1) * sd / math.sqrt(n)
        ci = (mean - half, mean + half)
    return Replicates(n, mean, sd, cv, ci)


@dataclass(frozen=True)
class Difference:
    """``b − a`` with its 95 % interval; ``method``: ``welch`` (replicates) or ``intervals`` (two points'
    batch-means intervals).  Within noise when the interval contains 0."""

    diff: float
    low: float
    high: float
    method: str

    @property
    def within_noise(self) -> bool:
        return self.low <= 0 <= self.high


def welch_difference(a: Sequence[float], b: Sequence[float]) -> Difference | None:
    """Welch's interval of mean(b) − mean(a) from two runs' replicates (at least 2 each; None otherwise), with
    the Welch–Satterthwaite degrees of freedom rounded down (a whole df ≥ 1: conservative)."""
    if len(a) < 2 or len(b) < 2:
        return None
    va, vb = statistics.variance(a) / len(a), statistics.variance(b) / len(b)
    diff = statistics.fmean(b) - statistics.fmean(a)
    se = math.sqrt(va + vb)
    if se == 0:
        return Difference(diff, diff, diff, "welch")
    df = (va + vb) ** 2 / ((va ** 2 / (len(a) - 1) if va else 0.0) + (vb ** 2 / (len(b) - 1) if vb else 0.0))
    half = student_t_quantile((1 + LEVEL) / 2, max(1, math.floor(df))) * se
    return Difference(diff, diff - half, diff + half, "welch")


def interval_difference(a_mean: float, a_ci: tuple[float, float], b_mean: float,
                        b_ci: tuple[float, float]) -> Difference:
    """b_mean − a_mean from two points' 95 % intervals: the half-widths add in quadrature (each interval is
    about ±1.96 standard errors of its mean; the two runs are independent)."""
    diff = b_mean - a_mean
    half = math.hypot(half_width(a_ci), half_width(b_ci))
    return Difference(diff, diff - half, diff + half, "intervals")


# --- a level shift --------------------------------------------------------------------------------------------

SHIFT_Z = 4.0  # the standardised step a level shift must exceed, plus SHIFT_Z_SMALL / n (docs/uncertainty.md)
SHIFT_Z_SMALL = 16.0  # few samples estimate the noise's correlation poorly: a short series needs a larger step
SHIFT_MATERIAL = 0.03  # and its size, as a share of the series' mean: a smaller step is within any noisy device's
SHIFT_MIN_SAMPLES = 10  # a series shorter than this is not tested
SHIFT_MIN_SIDE = 3  # samples each level has, at least
SHIFT_WARMUP_SHARE = 0.2  # a first level shorter than this share of the series is a warm-up, not a level
SHIFT_TEST = "max-t-cusum"  # ci_method's name of the test (a line written since records it)


@dataclass(frozen=True)
class LevelShift:
    """A step in a series: the mean of ``values[skipped:at]`` (``before``) and of ``values[at:]`` (``after``),
    a warm-up of ``skipped`` samples left out, and the step's standardised size ``z``."""

    at: int
    before: float
    after: float
    z: float
    skipped: int = 0

    @property
    def change(self) -> float:
        """The step as a share of the first level (−0.14 for a 14 % drop)."""
        return self.after / self.before - 1 if self.before else math.inf

    def reason(self, show: Callable[[float], str] | None = None) -> str:
        """One clause: both levels and where the step is, and that no interval of the mean is meaningful."""
        fmt = show or (lambda v: f"{v:,.0f}" if abs(v) >= 100 else f"{v:.3g}")
        return (f"a level shift from sample {self.at + 1} on: {fmt(self.before)} before, {fmt(self.after)} after "
                f"({self.change:+.1%}), so no interval of the mean")

    def json(self) -> dict[str, object]:
        return {"at": self.at, "before": self.before, "after": self.after, "z": round(self.z, 2),
                "skipped": self.skipped}


def level_shift(values: Sequence[float], z: float | None = None,
                material: float = SHIFT_MATERIAL) -> LevelShift | None:
    """A level shift in ``values`` (a series of samples in time order), or None.

    The split ``τ`` (each side at least :data:`SHIFT_MIN_SIDE` samples) maximises the two-sample statistic
    ``|m₂ − m₁| · √(τ(n − τ)/n)``, which is the CUSUM's; at ``τ`` it is standardised by the long-run standard
    deviation of the residuals about the two means, ``s·√((1 + r)/(1 − r))`` with ``r`` their lag-1
    autocorrelation corrected for its small-sample bias and clipped to 0–0.9 (correlated noise makes runs that
    look like steps).  A step is a level shift when that exceeds ``z`` (by default :data:`SHIFT_Z` +
    :data:`SHIFT_Z_SMALL`/n: the correlation of few samples is estimated poorly) and the step is at least
    ``material`` of the series' mean.  A first level shorter than :data:`SHIFT_WARMUP_SHARE` of the series is a
    warm-up, not a level: it is left out and the rest is tested again (binary segmentation, at most three
    times), so a warm-up followed by a steady run is no level shift.  Fewer than :data:`SHIFT_MIN_SAMPLES`
    samples are not tested.  The false-alarm and detection rates of these settings are measured in
    docs/uncertainty.md ("Level shifts")."""
    xs = _centred(values)
    offset = float(values[0]) if values else 0.0
    start = 0
    for _ in range(3):
        found = _best_split(xs[start:])
        if found is None:
            return None
        tau, stat, m1, m2 = found
        n = len(xs) - start
        if stat < (z if z is not None else SHIFT_Z + SHIFT_Z_SMALL / n):
            return None
        if tau < SHIFT_WARMUP_SHARE * n:  # a short first level: a warm-up; test what follows it
            start += tau
            continue
        mean = offset + (tau * m1 + (n - tau) * m2) / n
        if mean == 0 or abs(m2 - m1) < material * abs(mean):
            return None
        return LevelShift(start + tau, offset + m1, offset + m2, stat, start)
    return None


def _best_split(xs: Sequence[float]) -> tuple[int, float, float, float] | None:
    """The split of ``xs`` with the largest CUSUM statistic: (τ, its standardised value, mean before, after)."""
    n = len(xs)
    if n < SHIFT_MIN_SAMPLES:
        return None
    prefix = [0.0]
    for v in xs:
        prefix.append(prefix[-1] + v)
    total = prefix[-1]
    best_tau, best = 0, -1.0
    for tau in range(SHIFT_MIN_SIDE, n - SHIFT_MIN_SIDE + 1):
        m1, m2 = prefix[tau] / tau, (total - prefix[tau]) / (n - tau)
        stat = abs(m2 - m1) * math.sqrt(tau * (n - tau) / n)
        if stat > best * (1 + 1e-12):
            best_tau, best = tau, stat
    if best_tau == 0:
        return None
    tau = best_tau
    m1, m2 = prefix[tau] / tau, (total - prefix[tau]) / (n - tau)
    resid = [v - (m1 if i < tau else m2) for i, v in enumerate(xs)]
    var = math.fsum(r * r for r in resid) / (n - 2)
    if var <= 0:
        return (tau, math.inf if m1 != m2 else 0.0, m1, m2)
    r1 = math.fsum(a * b for a, b in zip(resid, resid[1:])) / (var * (n - 2))
    r1 = min(max(r1 + (1 + 3 * r1) / n, 0.0), 0.9)
    sd = math.sqrt(var * (1 + r1) / (1 - r1))
    return (tau, best / sd, m1, m2)
