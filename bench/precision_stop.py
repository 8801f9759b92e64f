"""Simulation: how soon a ``precision`` stop ends a point, and how often the mean it stopped on is wrong.

``python bench/precision_stop.py [--series N] [--seed S] [--rules a,b] [--oracle 5,10,15,20] [--smooth]``

The model is an IOPS process sampled as the runner samples a precision point: a mean every 250 ms
(app.runners.fio.PRECISION_FINE_MS), each the mean of five 50 ms values of an AR(1) process whose lag-1
correlation over 100 ms is 0.6 (as measured on this project's 2-vCPU VM), plus a slow level that is an AR(1)
series with lag-1 ``φ`` from one second to the next (0, 0.5, 0.9), held for the second (``--smooth``: moving
every 50 ms; right for φ 0.5 and 0.9 only).  Both come from :func:`bench.claims.synth.ar1`.  The two carry
equal shares of the long-run variance, which is set so that an interval knowing the true variance (the
``oracle`` rule) reaches ±2 % after ``T*`` seconds.  Each series is checked as the runner checks it
(:func:`app.stats.precision.due` from :data:`app.stats.precision.MIN_SECONDS`, up to the bench's 30 s cap) and stops the
first time the rule says ±2 %.

Printed for each rule and case: the median stop as a share of the cap (a series that never stops counts as
the cap), the share that stopped, and of the stopped ones the share whose mean is more than 2 % from the truth
and the share whose stated 95 % interval (the rule's own) misses it.

The rules (docs/uncertainty.md, "Stopping at a precision", has the table and what it shows):

- ``current``: app.stats.precision's rule, the sub-second interval (app.stats.finesamples), no stop on a level shift.
- ``oracle``: the true long-run variance, known: what no rule can beat on average.
- ``bm``, ``ar1``: the two halves of the sub-second interval alone (batch means of 4-sample means; the AR(1)
  effective-size interval of the samples): which one sets the stop.
- ``obm``: overlapping batch means (Meketon & Schmeiser 1984; ~2/3 the variance of non-overlapping batch means,
  ``1.5 (n/b − 1)`` degrees of freedom) with batches of 3 correlation times (at one standard error above the
  estimated lag-1 correlation) and at least the batch size the interval's batch means chose; ``obm_ar1`` the
  same, never narrower than the AR(1) half.
- ``ar1g2``: the sub-second interval with its AR(1) half computed on means of two samples (500 ms).
- ``l99``: the stop asks the 99 % interval to be within ±2 % (a Bonferroni-like price for checking often); the
  point still states its 95 % interval.
- ``stein``: Stein's two-stage rule: the first interval fixes the length, (half-width / 2 %)² times the
  samples so far, and the point runs to it.
- ``--two``: any rule, the precision must hold on two consecutive checks.
"""

from __future__ import annotations

import argparse
import math
import random
import statistics
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Sequence

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from app.stats import precision  # noqa: E402
from app.stats.finesamples import GROUP, MAX_R, MIN_BATCHES, R_MARGIN, fine_interval, fine_shift, grouped  # noqa: E402
from app.stats.uncertainty import (  # noqa: E402
    LEVEL,
    Interval,
    batch_means_interval,
    correlation_time,
    student_t_quantile,
    unbiased_lag1,
)
from bench.claims.synth import ar1  # noqa: E402 - after the sys.path line above

SAMPLE_S = 0.25  # the runner's sub-second interval of a precision point
FAST_STEP_S = 0.05
FAST_PHI = math.sqrt(0.6)  # 50 ms steps: 0.6 over 100 ms
CAP_S = 30
TARGET_PCT = 2.0
TRUTH = 10_000.0
PHIS = (0.0, 0.5, 0.9)
Z95 = 1.959964


def long_run_var(oracle_s: float) -> float:
    """The relative long-run variance (per second) that a known-variance 95 % interval needs ``oracle_s`` s for."""
    return oracle_s * (TARGET_PCT / 100 / Z95) ** 2


def series(rng: random.Random, seconds: int, phi: float, oracle_s: float, smooth: bool = False) -> list[float]:
    """``seconds`` of 250 ms IOPS means of the model (module docstring), true mean :data:`TRUTH`."""
    lr_var = long_run_var(oracle_s)
    # a 50 ms AR(1) of marginal cv c has long-run variance c²(1 + φ)/(1 − φ)·0.05 s per second
    fast_cv = math.sqrt(lr_var / 2 / ((1 + FAST_PHI) / (1 - FAST_PHI) * FAST_STEP_S))
    slow_cv = math.sqrt(lr_var / 2 / ((1 + phi) / (1 - phi)))
    per_s = round(1 / FAST_STEP_S)
    fast = ar1(rng, seconds * per_s, 1.0, fast_cv, FAST_PHI)
    if smooth:
        slow = ar1(rng, seconds * per_s, 1.0, slow_cv, phi ** FAST_STEP_S)
    else:
        slow = [v for v in ar1(rng, seconds, 1.0, slow_cv, phi) for _ in range(per_s)]
    group = round(SAMPLE_S / FAST_STEP_S)
    return [TRUTH * (math.fsum(slow[i:i + group]) / group + math.fsum(fast[i:i + group]) / group - 1.0)
            for i in range(0, seconds * per_s, group)]


Pair = tuple[float, float]  # (centre, half-width)


def _pair(got: object) -> Pair | None:
    if not isinstance(got, Interval):
        return None
    return (got.low + got.high) / 2, (got.high - got.low) / 2


def current(values: Sequence[float]) -> Pair | None:
    """app.stats.precision's rule: the sub-second interval, none on a level shift."""
    return None if fine_shift(values) is not None else _pair(fine_interval(values, LEVEL))


def _parts(values: Sequence[float]) -> tuple[Pair, Pair, list[float], Interval] | None:
    """The sub-second interval's two halves (batch means of 4-sample means; AR(1) effective size), its samples."""
    if fine_shift(values) is not None:
        return None
    got = batch_means_interval(grouped(values, GROUP), LEVEL, MIN_BATCHES, gate=False)
    if not isinstance(got, Interval):
        return None
    kept = [float(v) for v in values[len(values) - got.batches * got.batch_size * GROUP:]]
    return (got.mean, (got.high - got.low) / 2), (got.mean, _ar1_half(kept)), kept, got


def _ar1_half(kept: Sequence[float]) -> float:
    n = len(kept)
    centre = math.fsum(kept) / n
    sd = math.sqrt(math.fsum((v - centre) ** 2 for v in kept) / (n - 1))
    r = unbiased_lag1(list(kept))
    r = min(max(r + R_MARGIN * math.sqrt(max(1 - r * r, 0.0) / n), 0.0), MAX_R) if sd > 0 else 0.0
    factor = (1 + r) / (1 - r)
    df = max(1, math.floor(n / factor) - 1)
    return student_t_quantile(0.975, df) * sd / math.sqrt(n) * math.sqrt(factor / max(1 - factor / n, 0.25))


def bm_part(values: Sequence[float]) -> Pair | None:
    got = _parts(values)
    return got[0] if got else None


def ar1_part(values: Sequence[float]) -> Pair | None:
    got = _parts(values)
    return got[1] if got else None


def obm(values: Sequence[float], with_ar1: bool = False, taus: float = 3.0) -> Pair | None:
    got = _parts(values)
    if got is None:
        return None
    _, ar1_pair, kept, bm = got
    n = len(kept)
    b = max(GROUP * bm.batch_size, math.ceil(taus * correlation_time(kept, 1.0)))
    df = math.floor(1.5 * (n / b - 1))
    if df < 4:
        return None
    centre = math.fsum(kept) / n
    prefix = [0.0]
    for v in kept:
        prefix.append(prefix[-1] + v)
    ss = math.fsum(((prefix[j + b] - prefix[j]) / b - centre) ** 2 for j in range(n - b + 1))
    var = n * b * ss / ((n - b + 1) * (n - b))  # the long-run variance, per sample
    half = student_t_quantile(0.975, df) * math.sqrt(var / n)
    return centre, max(half, ar1_pair[1]) if with_ar1 else half


def ar1g2(values: Sequence[float]) -> Pair | None:
    got = _parts(values)
    if got is None:
        return None
    pair = _pair(fine_interval(grouped(values, 2), LEVEL))
    return (got[0][0], max(got[0][1], pair[1])) if pair else None


@dataclass
class Model:
    phi: float
    oracle_s: float
    smooth: bool = False


@dataclass
class Outcome:
    stops: list[float] = field(default_factory=list)  # seconds at the stop, CAP_S when none
    stopped: int = 0
    off: int = 0  # stopped with the mean more than the target from the truth
    missed: int = 0  # stopped with the stated 95 % interval missing the truth

    @property
    def median_share(self) -> float:
        return statistics.median(self.stops) / CAP_S

    def rate(self, count: int) -> float:
        return count / self.stopped if self.stopped else 0.0


# may the point stop with these samples: the 95 % interval it states then (centre, half-width), else None
Decide = Callable[[list[float], Model], "Pair | None"]


def shipped(xs: list[float], model: Model) -> Pair | None:
    """app.stats.precision's own decision (the ``current`` rule as the runner calls it); the interval the point states
    is app.stats.precision.reached_percent's, the sub-second one."""
    return current(xs) if precision.decide(xs, TARGET_PCT).stop else None


def by_rule(rule: Callable[[Sequence[float]], Pair | None], share: float = 1.0) -> Decide:
    """Stop when ``rule``'s half-width is within ``share`` of the target; the point states ``rule``'s interval
    (with ``share`` below 1, the stop asks a wider interval than the 95 % one stated: ``rule``'s, scaled)."""
    def decide(xs: list[float], model: Model) -> Pair | None:
        if rule is oracle_marker:
            half = Z95 * math.sqrt(long_run_var(model.oracle_s) / (len(xs) * SAMPLE_S))
            return (math.fsum(xs) / len(xs), half * TRUTH) if 100 * half <= TARGET_PCT * share else None
        got = rule(xs)
        return got if got is not None and got[0] > 0 and 100 * got[1] / got[0] <= TARGET_PCT * share else None
    return decide


def oracle_marker(values: Sequence[float]) -> Pair | None:
    return None


def simulate(decide: Decide, model: Model, n: int, seed: int, two: bool = False, stein: bool = False,
             min_s: float = precision.MIN_SECONDS) -> Outcome:
    """``n`` series of the model checked as the runner checks a point, each stopped by ``decide``; the stopped
    point states the 95 % interval the rule gives (the shipped rule: app.stats.precision.reached_percent's)."""
    rng = random.Random(seed)
    per_s = round(1 / SAMPLE_S)
    out = Outcome()
    for _ in range(n):
        xs = series(rng, CAP_S, model.phi, model.oracle_s, model.smooth)
        last, held, planned = 0, 0, None
        stop: int | None = None
        stated: Pair | None = None
        for k in range(math.ceil(min_s * per_s), len(xs) + 1):
            if k - last < max(1, k // precision.CHECKS_PER_SPAN):  # app.stats.precision.due past the minimum
                continue
            last = k
            if stein:  # the first interval fixes the length
                if planned is None:
                    first = current(xs[:k])
                    if first is None or first[0] <= 0:
                        continue
                    planned = math.ceil(k * (100 * first[1] / first[0] / TARGET_PCT) ** 2)
                got = current(xs[:k]) if k >= planned else None
            else:
                got = decide(xs[:k], model)
            held = held + 1 if got is not None else 0
            if held >= (2 if two else 1):
                stop, stated = k, got
                break
        if stop is None or stated is None:
            out.stops.append(CAP_S)
            continue
        centre, half = stated
        out.stops.append(stop / per_s)
        out.stopped += 1
        out.off += abs(centre - TRUTH) > TARGET_PCT / 100 * TRUTH
        out.missed += not centre - half <= TRUTH <= centre + half
    return out


RULES: dict[str, Decide] = {
    "current": shipped, "oracle": by_rule(oracle_marker), "bm": by_rule(bm_part),
    "ar1": by_rule(ar1_part), "obm": by_rule(obm), "obm_ar1": by_rule(lambda v: obm(v, with_ar1=True)),
    "ar1g2": by_rule(ar1g2), "l99": by_rule(current, Z95 / 2.575829), "stein": by_rule(current),
}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--series", type=int, default=400)
    ap.add_argument("--seed", type=int, default=44)
    ap.add_argument("--rules", default="current,oracle")
    ap.add_argument("--oracle", default="5,10,15,20", help="the T* of the cases, seconds, comma-separated")
    ap.add_argument("--smooth", action="store_true", help="the slow level moves every 50 ms, not once a second")
    ap.add_argument("--min-seconds", type=float, default=precision.MIN_SECONDS)
    ap.add_argument("--two", action="store_true", help="the precision must hold on two consecutive checks")
    args = ap.parse_args()
    print(f"{args.series} series a case, {CAP_S} s cap, ±{TARGET_PCT:g} % asked, 250 ms samples "
          f"(100 ms lag-1 0.6), seed {args.seed}" + (", two consecutive checks" if args.two else "")
          + (", smooth slow level" if args.smooth else ""))
    print(f"{'rule':<10} {'φ/s':>4} {'T*':>4} {'median stop':>12} {'stopped':>8} {'off > 2%':>9} {'misses':>7}")
    for name in args.rules.split(","):
        t0 = time.monotonic()
        for phi in PHIS:
            for oracle_s in (float(v) for v in args.oracle.split(",")):
                o = simulate(RULES[name], Model(phi, oracle_s, args.smooth), args.series, args.seed, args.two,
                             stein=name == "stein", min_s=args.min_seconds)
                print(f"{name:<10} {phi:>4g} {oracle_s:>4g} {o.median_share:>12.0%} {o.stopped / args.series:>8.0%} "
                      f"{o.rate(o.off):>9.1%} {o.rate(o.missed):>7.1%}", flush=True)
        print(f"  ({time.monotonic() - t0:.0f} s)")


if __name__ == "__main__":
    main()
