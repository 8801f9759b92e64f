"""The generated cases: each writes one or two results directories (:mod:`bench.claims.synth`) and knows the
truth the claims on them are scored against.  Every case draws from its own :class:`random.Random`, seeded from
the sweep's seed and the case's name and number, so one case can be rebuilt alone.

Families (docs/claims.md lists their parameters):

- ``stationary``: points whose seconds are AR(1) (φ 0, 0.5, 0.9) about a known mean — interval coverage;
- ``nonstationary``: slow drift over the point, or a level shift at its midpoint — flagged, or an interval that
  still covers the run's true mean, never a narrow ± around something else;
- ``pair``: one point measured by two runs (``compare``) or two loads of one run (the trends), truly equal or
  apart by 3, 10 or 30 %, in configurations of high and of low power, with and without drift between runs and
  with replicates;
- ``tails``: a deep queue with clustered stalls (one stall holds every in-flight I/O);
- ``knee``: a closed-queue saturation curve over QD 1…256, replicates drifting between runs, and an operating
  point under a p99 bound;
- ``memory``: a loaded-latency curve of which some rows ran on a busy machine (a thread got 20–60 % of a CPU).
"""

from __future__ import annotations

import hashlib
import math
import random
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

from bench.claims import synth
from bench.claims.synth import MemorySpec, StorageSpec


def case_rng(seed: int, family: str, index: int) -> random.Random:
    """The random source of one case: a function of the sweep's seed, the family and the case's number."""
    digest = hashlib.sha256(f"{seed}:{family}:{index}".encode()).digest()
    return random.Random(int.from_bytes(digest[:8], "big"))


# --- stationary and non-stationary points ----------------------------------------------------------------------


@dataclass(frozen=True)
class PointTruth:
    model: str  # "ar1 phi=0.5", "drift 30 %", "level shift −15 %"
    true_mean: float  # the expected IOPS over the measured seconds
    stationary: bool


POINTS_PER_RUN = 8  # independent points written into one run (at QD 1…8, so their keys differ)


def stationary_run(path: Path, rng: random.Random, phi: float, seconds: int, cv: float
                   ) -> list[PointTruth]:
    specs, truths = [], []
    for k in range(POINTS_PER_RUN):
        mean = rng.uniform(5e3, 2e5)
        specs.append(StorageSpec(synth.ar1(rng, seconds, mean, cv, phi), iodepth=k + 1))
        truths.append(PointTruth(f"AR(1) φ={phi:g}", mean, True))
    synth.write_storage_run(path, specs)
    return truths


def warmup_run(path: Path, rng: random.Random, ramp: int, seconds: int, cv: float, phi: float) -> list[PointTruth]:
    """A real warm-up: the level climbs from half of the mean to the mean over the first ``ramp`` seconds, then
    stays (AR(1) noise throughout); the truth is the settled mean, which the interval past the warm-up is of."""
    specs, truths = [], []
    for k in range(POINTS_PER_RUN):
        mean = rng.uniform(5e3, 2e5)
        noise = synth.ar1(rng, seconds, 1.0, cv, phi)
        level = [mean * (0.5 + 0.5 * i / ramp) if i < ramp else mean for i in range(seconds)]
        specs.append(StorageSpec([lv * v for lv, v in zip(level, noise)], iodepth=k + 1))
        truths.append(PointTruth(f"warm-up ramp {ramp} s", mean, True))
    synth.write_storage_run(path, specs)
    return truths


def nonstationary_run(path: Path, rng: random.Random, kind: str, size: float, seconds: int, cv: float
                      ) -> list[PointTruth]:
    """``kind`` "drift": the level moves by ``size`` (fraction of the mean) over the point; "shift": it steps
    from the mean to mean × (1 + size) at the midpoint."""
    specs, truths = [], []
    for k in range(POINTS_PER_RUN):
        mean = rng.uniform(5e3, 2e5)
        if kind == "drift":
            iops = synth.drift(rng, seconds, mean, cv, 0.5, size)
            truth = mean
        else:
            iops = synth.level_shift(rng, seconds, mean, mean * (1 + size), cv, 0.5)
            cut = round(seconds * 0.5)
            truth = (mean * cut + mean * (1 + size) * (seconds - cut)) / seconds
        specs.append(StorageSpec(iops, iodepth=k + 1))
        truths.append(PointTruth(f"{kind} {size * 100:+.0f} %", truth, False))
    synth.write_storage_run(path, specs)
    return truths


# --- two measurements that truly differ by a known effect ---------------------------------------------------------


@dataclass(frozen=True)
class PairConfig:
    """How each side of a pair is measured: seconds per point, per-second CV and correlation, replicates per
    side, and the standard deviation of the level between runs (drift between runs; 0: none)."""

    name: str
    seconds: int
    cv: float
    phi: float
    replicates: int
    between: float


PAIR_CONFIGS: tuple[PairConfig, ...] = (
    PairConfig("30 s, CV 3 %, 1 run", 30, 0.03, 0.5, 1, 0.0),
    PairConfig("20 s, CV 25 %, 1 run", 20, 0.25, 0.5, 1, 0.0),
    PairConfig("30 s, CV 3 %, 1 run, runs drift 5 %", 30, 0.03, 0.5, 1, 0.05),
    PairConfig("3 × 10 s, CV 3 %, runs drift 6 %", 10, 0.03, 0.5, 3, 0.06),
    PairConfig("5 × 10 s, CV 3 %, runs drift 1.5 %", 10, 0.03, 0.5, 5, 0.015),
)
EFFECTS = (0.0, 0.03, 0.10, 0.30)


def _side(rng: random.Random, cfg: PairConfig, mean: float, iodepth: int) -> list[StorageSpec]:
    out = []
    for r in range(cfg.replicates):
        level = mean * (1 + rng.gauss(0.0, cfg.between)) if cfg.between else mean
        out.append(StorageSpec(synth.ar1(rng, cfg.seconds, level, cfg.cv, cfg.phi), iodepth=iodepth,
                               replicate=r + 1 if cfg.replicates > 1 else None))
    return out


def _interleaved(a: Sequence[StorageSpec], b: Sequence[StorageSpec]) -> list[StorageSpec]:
    """Two points' replicates in the order a run with ``repeat`` measures them: replicate 1 of each, then 2 …"""
    out: list[StorageSpec] = []
    for i in range(max(len(a), len(b))):
        out += [s for s in (a[i] if i < len(a) else None, b[i] if i < len(b) else None) if s is not None]
    return out


def compare_pair(dir_a: Path, dir_b: Path, rng: random.Random, cfg: PairConfig, effect: float) -> None:
    """One point (QD16 4K randread) measured by run A and by run B, B truly ``effect`` faster."""
    mean = rng.uniform(1e4, 1e5)
    synth.write_storage_run(dir_a, _side(rng, cfg, mean, 16))
    synth.write_storage_run(dir_b, _side(rng, cfg, mean * (1 + effect), 16))


def trend_pair(path: Path, rng: random.Random, cfg: PairConfig, effect: float) -> None:
    """One run of two loads of one workload, QD8 and QD16, QD16 truly ``effect`` faster (the queue-depth trend
    judges them); with replicates, the run interleaves them."""
    mean = rng.uniform(1e4, 1e5)
    synth.write_storage_run(path, _interleaved(_side(rng, cfg, mean, 8), _side(rng, cfg, mean * (1 + effect), 16)))


# --- tails: clustered stalls ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class TailTruth:
    depth: int
    stalls: int
    ios: int
    # percentile key → distinct events (one stall = one event, every other I/O its own) at or beyond it
    events_beyond: dict[str, int]


def tail_run(path: Path, rng: random.Random, depth: int, stalls: int, ios: int) -> TailTruth:
    """One point at QD ``depth`` of ``ios`` I/Os: a log-normal body (median from Little's law at 50k IOPS) and
    ``stalls`` stall events each holding all ``depth`` in-flight I/Os near 40–80× the median."""
    median = depth / 5e4 * 1e9
    body = synth.lognormal_hist(rng, ios - stalls * depth, median, sigma=0.35)
    stall_at = median * rng.uniform(40, 80)
    stall_hist: dict[int, int] = {}
    synth.add_stalls(rng, stall_hist, stalls, depth, stall_at)
    merged = dict(body)
    for v, c in stall_hist.items():
        merged[v] = merged.get(v, 0) + c
    hist = synth.as_hist(merged)
    seconds = 20
    per = ios / seconds
    # each stall in its own second: that second's p99.9 is the stall's when its QD I/Os are over 0.1 % of the
    # second's I/Os (fio's per-second histogram), the others the body's
    from app.model.tails import percentile as pct_of

    body_h = synth.as_hist(body)
    quiet = (float(pct_of(body_h, 50.0) or 0), float(pct_of(body_h, 99.0) or 0), float(pct_of(body_h, 99.9) or 0))
    stall_seconds = set(rng.sample(range(seconds), stalls))
    loud = (quiet[0], quiet[1], stall_at if depth / per > 0.001 else quiet[2])
    spec = StorageSpec([per * rng.uniform(0.98, 1.02) for _ in range(seconds)], iodepth=depth, hist=hist,
                       second_tails=[loud if i in stall_seconds else quiet for i in range(seconds)])
    synth.write_storage_run(path, [spec])
    events: dict[str, int] = {}
    from app.model.tails import TAIL_PERCENTILES, percentile

    for key, pct, _label in TAIL_PERCENTILES:
        at = percentile(hist, pct)
        if at is None:
            continue
        body_beyond = sum(c for v, c in body.items() if v >= at)
        stall_beyond = stalls if any(v >= at for v in stall_hist) else 0
        events[key] = body_beyond + stall_beyond
    return TailTruth(depth, stalls, ios, events)


# --- knees and operating points -----------------------------------------------------------------------------------


LOADS = (1, 2, 4, 8, 16, 32, 64, 128, 256)


@dataclass(frozen=True)
class KneeTruth:
    knee: int | None  # the index of the noise-free curve's knee (the same algorithm on the true figures)
    p99_true: dict[int, float]  # QD → true p99 (ns)
    bound_ns: float
    best_true: int | None  # the deepest QD whose true p99 meets the bound


def knee_run(path: Path, rng: random.Random, replicates: int, between: float, cv: float = 0.03,
             seconds: int = 10, p99_between: float = 0.0) -> KneeTruth:
    """A QD sweep of a device with ``c`` parallel units and service time ``s``: X(N) = N / (s · (1 + N/c))
    (saturating at c/s), R = N / X, its p99 three times its mean latency; ``replicates`` runs of every load,
    interleaved, each run's level off by N(0, ``between``) and its p99 by a log-normal factor of σ
    ``p99_between`` (what a device's state or a neighbour does to one run's tail).  Within a run the p99 is its
    run's: each second's p99 scatters about it by σ 0.1.  The bound lies between two loads' true p99s."""
    from app.report.compute.analysis import knee

    c = rng.choice([4, 8, 16, 32])
    s = rng.uniform(50e-6, 150e-6)
    xs = [n / (s * (1 + n / c)) for n in LOADS]
    rs = [n / x * 1e9 for n, x in zip(LOADS, xs)]
    p99 = {n: 3 * r for n, r in zip(LOADS, rs)}
    true_knee = knee(xs, rs)
    j = rng.randrange(2, len(LOADS) - 1)
    bound = math.sqrt(p99[LOADS[j]] * p99[LOADS[j + 1]])  # between QD[j] and QD[j+1]
    specs: list[StorageSpec] = []
    for r in range(replicates):
        for n, x in zip(LOADS, xs):
            level = x * (1 + rng.gauss(0.0, between)) if between else x
            tail = p99[n] * math.exp(rng.gauss(0.0, p99_between)) if p99_between else p99[n]
            iops = synth.ar1(rng, seconds, level, cv, 0.5)
            per_second = []
            for v in iops:
                e = math.exp(rng.gauss(0.0, 0.1))
                per_second.append((n / v * 1e9, tail * e, 1.5 * tail * e))
            specs.append(StorageSpec(iops, iodepth=n, replicate=r + 1 if replicates > 1 else None, p99_ns=tail,
                                     second_tails=per_second))
    synth.write_storage_run(path, specs)
    return KneeTruth(true_knee, p99, bound, LOADS[j])


# --- memory: rows of a busy machine ------------------------------------------------------------------------------


DELAYS = (5000, 2000, 1000, 500, 300, 200, 100, 50, 20, 0)


@dataclass(frozen=True)
class MemoryTruth:
    contended: frozenset[int]  # the delays whose rows ran on a busy machine
    clean_knee_delay: int | None  # the knee of the same curve measured clean


def memory_curve(rng: random.Random, contended: frozenset[int]) -> tuple[list[MemorySpec], list[MemorySpec]]:
    """The loaded-latency rows of one curve, measured clean and as measured (the ``contended`` delays' threads
    got 20–60 % of a CPU: the load threads issued less, the chase waited for its CPU)."""
    idle = rng.uniform(70, 110)
    peak = rng.uniform(8e3, 3e4)
    t0 = rng.uniform(20, 60)
    clean, measured = [], []
    for d in DELAYS:
        u = min(1.0, t0 / (d + t0) * 1.25)
        bw = peak * u
        lat = idle * (1 + 0.25 * u + 1.2 * u ** 8)
        wl = [lat * (1 + rng.gauss(0, 0.01)) for _ in range(10)]
        wb = [bw * (1 + rng.gauss(0, 0.01)) for _ in range(10)]
        clean.append(MemorySpec(d, wl, wb))
        if d in contended:
            share = rng.uniform(0.2, 0.6)
            measured.append(MemorySpec(d, [v / math.sqrt(share) * (1 + rng.gauss(0, 0.08)) for v in wl],
                                       [v * share * (1 + rng.gauss(0, 0.08)) for v in wb], cpu_share=share))
        else:
            measured.append(MemorySpec(d, wl, wb))
    return clean, measured
