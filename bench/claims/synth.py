"""Synthetic results directories in the tool's on-disk format, from models whose truth is known.

A storage point is its per-second samples (raw/NNNN-p.samples.jsonl, the keys fio's status dumps give the
runner) and its results line, written by :meth:`app.store.results.ResultsDir.append` (app.model.records' writer) with
the
interval the runner itself computes from those samples (:func:`app.runners.fio.point_uncertainty`), the
``tail`` part it computes (:func:`app.runners.fio.point_tail`) and the validity flags the session gives a line
(:func:`app.stats.validity.point_flags`).  fio's headline figures are the whole run's: the IOPS the mean of the measured
seconds (fio counts I/Os over the measured time), the mean latency by Little's law at the point's depth.  A point
may carry fio's json+ histogram (``metrics.lat_hist``) with its tail percentiles and total I/Os.

A memory point is a loaded-latency row of the built-in engine: latency (ns) and bandwidth (MB/s), the interval of
its engine sub-windows (:func:`app.stats.uncertainty.intervals_of` over the windows, as the runner does) and the
``warnings`` part the runner keeps, cumulative over the section as the engine's text gives it ("Busy machine at
delay N: a thread got S% of a CPU in its window").

Every random draw comes from a :class:`random.Random` the caller seeds: a case is reproducible from its seed.
"""

from __future__ import annotations

import json
import math
import random
import statistics
from dataclasses import dataclass, field
from pathlib import Path
from statistics import NormalDist
from typing import Any, Sequence, cast

from app.model.points import Kind, MemoryPoint, StoragePoint
from app.model.records import JSONObject, MemoryMetrics, Parts, ResultLine, StorageMetrics
from app.model.runmeta import new
from app.model.tails import TAIL_PERCENTILES, hist_record, percentile
from app.runners.fio import point_tail, point_uncertainty, with_interval
from app.stats.uncertainty import intervals_of
from app.stats.validity import TargetFacts, point_checks, point_flags
from app.store.results import ResultsDir

SCHEMA_VERSION = 1


# --- models ----------------------------------------------------------------------------------------------------


def ar1(rng: random.Random, n: int, mean: float, cv: float, phi: float) -> list[float]:
    """``n`` values of a stationary AR(1) process of mean ``mean``, marginal standard deviation ``cv · mean`` and
    lag-1 correlation ``phi`` (started from its stationary distribution: no warm-up to find)."""
    sd = cv * mean
    innov = sd * math.sqrt(1 - phi * phi)
    x = rng.gauss(0.0, sd)
    out = []
    for _ in range(n):
        out.append(mean + x)
        x = phi * x + rng.gauss(0.0, innov)
    return [max(v, mean * 1e-3) for v in out]  # a second cannot run at negative IOPS


def drift(rng: random.Random, n: int, mean: float, cv: float, phi: float, total: float) -> list[float]:
    """An AR(1) series around a level that moves linearly by ``total`` (a fraction of ``mean``) from the first
    second to the last, centred so the expected mean over the run is ``mean``."""
    base = ar1(rng, n, mean, cv, phi)
    return [v + mean * total * (i / max(n - 1, 1) - 0.5) for i, v in enumerate(base)]


def level_shift(rng: random.Random, n: int, first: float, second: float, cv: float, phi: float,
                at: float = 0.5) -> list[float]:
    """An AR(1) series at ``first`` until ``at`` of the run, then at ``second`` (a step, not a warm-up)."""
    cut = round(n * at)
    noise = ar1(rng, n, 1.0, cv, phi)
    return [(first if i < cut else second) * v for i, v in enumerate(noise)]


# --- storage ---------------------------------------------------------------------------------------------------


@dataclass
class StorageSpec:
    """One storage point to write: its per-second IOPS (the measured seconds; ``ramp`` seconds before them are
    written marked ``"ramp": true`` at ``ramp_iops``), its workload and its latency tail."""

    iops: Sequence[float]
    rw: str = "randread"
    bs: int = 4096
    iodepth: int = 16
    replicate: int | None = None
    p99_factor: float = 2.0  # p99 of a second = factor × its mean latency (when no histogram)
    p99_ns: float | None = None  # the point's p99 (whole run) when no histogram; default factor × mean latency
    hist: list[tuple[int, int]] | None = None  # fio's json+ histogram of the point (ns, count)
    # per measured second (p50, p99, p99.9) in ns, as fio's per-second histogram gives them; None: p50 = the mean
    # latency, p99 = ``p99_factor`` × it, p99.9 = 1.5 × that
    second_tails: Sequence[tuple[float, float, float]] | None = None
    ramp: int = 0
    ramp_iops: float = 0.0
    usr_cpu: float = 5.0
    sys_cpu: float = 15.0


def storage_point(spec: StorageSpec, runtime: int) -> dict[str, Any]:
    return StoragePoint(rw=spec.rw, bs=spec.bs, rwmixread=None, iodepth=spec.iodepth, numjobs=1, ioengine="libaio",
                        direct=True, runtime=runtime, ramp_time=spec.ramp, size=1 << 30, time_based=True,
                        replicate=spec.replicate).to_dict()


def _second(t: float, iops: float, spec: StorageSpec, ramp: bool = False,
            tails: tuple[float, float, float] | None = None) -> dict[str, Any]:
    lat = spec.iodepth / iops * 1e9 if iops > 0 else 0.0
    p50, p99, p999 = tails or (lat, spec.p99_factor * lat, 1.5 * spec.p99_factor * lat)
    s: dict[str, Any] = {"t": t, "interval_s": 1.0, "iops": iops, "read_iops": iops, "write_iops": 0.0,
                         "bw_bytes": iops * spec.bs, "lat_mean_ns": lat, "lat_p99_ns": p99, "lat_p50_ns": p50,
                         "lat_p99_9_ns": p999}
    if ramp:
        s["ramp"] = True
    return s


def samples_of(spec: StorageSpec) -> list[dict[str, Any]]:
    out = [_second(float(i + 1), spec.ramp_iops or spec.iops[0], spec, ramp=True) for i in range(spec.ramp)]
    out += [_second(float(spec.ramp + i + 1), v, spec, tails=spec.second_tails[i] if spec.second_tails else None)
            for i, v in enumerate(spec.iops)]
    return out


def storage_metrics(spec: StorageSpec) -> dict[str, Any]:
    """fio's whole-run figures of the point: the measured seconds' mean IOPS (I/Os over measured time)."""
    iops = statistics.fmean(spec.iops)
    lat = spec.iodepth / iops * 1e9
    total = round(sum(spec.iops))
    if spec.hist is not None:
        h = spec.hist
        n = sum(c for _, c in h)
        mean = sum(v * c for v, c in h) / n
        lat_ns: dict[str, Any] = {"min": h[0][0], "max": h[-1][0], "mean": lat, "p50": percentile(h, 50.0),
                                  "p90": percentile(h, 90.0)}
        lat_ns.update({k: percentile(h, pct) for k, pct, _l in TAIL_PERCENTILES})
        lat_ns["stddev"] = mean / 2
        total = n
    else:
        p99 = spec.p99_ns if spec.p99_ns is not None else spec.p99_factor * lat
        lat_ns = {"min": lat / 4, "max": max(lat * 8, p99 * 2), "mean": lat, "stddev": lat / 2, "p50": lat,
                  "p90": 1.5 * lat, "p99": p99, "p99_9": max(3 * lat, p99 * 1.2), "p99_99": max(4 * lat, p99 * 1.5)}
    m: dict[str, Any] = {"iops": iops, "read_iops": iops, "write_iops": 0.0, "bw_bytes": iops * spec.bs,
                         "read_bw_bytes": iops * spec.bs, "write_bw_bytes": 0.0, "lat_ns": lat_ns,
                         "total_ios": total, "io_bytes": total * spec.bs, "jobs": 1,
                         "usr_cpu": spec.usr_cpu, "sys_cpu": spec.sys_cpu}
    if spec.hist is not None:
        m["lat_hist"] = hist_record(spec.hist)
    return m


def write_storage_run(path: Path, specs: Sequence[StorageSpec], runtime: int | None = None,
                      preset: str = "synthetic") -> Path:
    """A complete storage run of these points, in plan order, the way a run of the tool leaves it."""
    runtime = runtime or max(len(s.iops) for s in specs)
    rd = ResultsDir(path)
    plan = [storage_point(s, runtime) for s in specs]
    rd.create(new({"schema_version": SCHEMA_VERSION, "tool": "profiler-tui", "kind": "storage", "plan": plan,
                   "preset": {"name": preset, "kind": "storage"}, "target": "/dev/loop9", "status": "complete",
                   "points_total": len(plan), "points_done": len(plan)}, path / "run.json"))
    try:
        for i, (spec, table) in enumerate(zip(specs, plan)):
            samples = samples_of(spec)
            rel = rd.write_raw(i, "p", ".samples.jsonl", "".join(json.dumps(s) + "\n" for s in samples))
            metrics = with_interval(StorageMetrics.of(storage_metrics(spec)), point_uncertainty(samples, path / rel))
            parts = Parts(wall_s=float(len(samples)), job="p", fio_version="fio-3.33",
                          tail=cast(JSONObject, point_tail(samples, path / rel)))
            flags = point_flags(table, metrics, parts)
            checks = point_checks(table, metrics, parts, None, TargetFacts(), flags)
            rd.append(ResultLine(Kind.STORAGE, table, metrics, i, SCHEMA_VERSION, parts, {"samples": rel},
                                 target="/dev/loop9", flags=[dict(f) for f in flags],
                                 checks={k: dict(v) for k, v in checks.items()}))
    finally:
        rd.close()
    return path


# --- fio's histogram: a log-normal body and clustered stalls ------------------------------------------------------


def fio_buckets(lo_ns: int = 1 << 12, hi_ns: int = 1 << 27) -> list[int]:
    """fio's bucket values between lo and hi: 64 evenly spaced per power of two (tests/helpers/tail_runs.py
    draws its histograms on the same grid)."""
    out = []
    k = lo_ns.bit_length() - 1
    while (1 << k) < hi_ns:
        out += [(1 << k) + j * (1 << k) // 64 for j in range(64)]
        k += 1
    return out


BUCKETS = fio_buckets(hi_ns=1 << 31)  # a stall of a deep queue lasts up to a second or two


def bucket_of(ns: float) -> int:
    """fio's bucket value holding a latency of ``ns``."""
    import bisect

    i = bisect.bisect_right(BUCKETS, ns) - 1
    return BUCKETS[max(0, min(i, len(BUCKETS) - 1))]


def lognormal_hist(rng: random.Random, ios: int, median_ns: float, sigma: float = 0.5) -> dict[int, int]:
    """``ios`` I/Os of a log-normal latency binned on fio's grid: the counts multinomial about the bucket masses
    (the body in expectation, the far tail drawn I/O by I/O so its few slowest I/Os are random, as measured)."""
    hist: dict[int, int] = {}
    mu = math.log(median_ns)
    # the bulk: expected counts per bucket, below the 99.9th percentile
    cut = math.exp(mu + 3.09 * sigma)
    edges = BUCKETS + [BUCKETS[-1] * 2]
    body = 0
    for lo, hi in zip(edges, edges[1:]):
        if lo >= cut:
            break
        top = min(hi, cut)
        p = 0.5 * (math.erf((math.log(top) - mu) / (sigma * math.sqrt(2)))
                   - math.erf((math.log(lo) - mu) / (sigma * math.sqrt(2))))
        c = round(ios * p)
        if c > 0:
            hist[lo] = hist.get(lo, 0) + c
            body += c
    # the tail beyond: each I/O drawn from the log-normal conditioned above ``cut`` (by its inverse CDF)
    top = NormalDist().cdf(3.09)
    for _ in range(max(ios - body, 0)):
        v = math.exp(mu + sigma * NormalDist().inv_cdf(top + (1 - top) * rng.random() * (1 - 1e-12)))
        b = bucket_of(v)
        hist[b] = hist.get(b, 0) + 1
    return hist


def add_stalls(rng: random.Random, hist: dict[int, int], stalls: int, depth: int, stall_ns: float) -> None:
    """``stalls`` stall events, each holding every one of ``depth`` in-flight I/Os: the ``depth`` I/Os of one
    event complete within one service time of each other, at a latency near ``stall_ns`` (each event its own)."""
    for _ in range(stalls):
        at = stall_ns * rng.uniform(0.7, 1.0)
        for _ in range(depth):
            b = bucket_of(at * rng.uniform(0.995, 1.0))
            hist[b] = hist.get(b, 0) + 1


def as_hist(hist: dict[int, int]) -> list[tuple[int, int]]:
    return sorted((v, c) for v, c in hist.items() if c > 0)


# --- memory ----------------------------------------------------------------------------------------------------


@dataclass
class MemorySpec:
    """One loaded-latency row of the built-in engine: its injection delay, the latency and bandwidth per engine
    sub-window (their means are the row's figures) and the CPU share its threads got (1.0: a whole CPU)."""

    delay: int
    latency_windows: Sequence[float]
    bandwidth_windows: Sequence[float]
    cpu_share: float = 1.0
    traffic: str = "R"
    stride: int = 64
    more_warnings: list[str] = field(default_factory=list)


CONTENDED_BELOW = 0.9  # the engine warns when a thread got less than this share of a CPU in a window


def _memory_point(mode: str, traffic: str | None, delay: int | None, stride: int) -> dict[str, Any]:
    return MemoryPoint(mode=mode, traffic=traffic, delay=delay, stride=stride, buffer=None, duration=2, cpus=None,
                       tlb_locality=None, engine="builtin").to_dict()


def write_memory_run(path: Path, specs: Sequence[MemorySpec], idle_ns: float | None = None) -> Path:
    """A memory run of these loaded rows (and an idle row first when ``idle_ns``), each line's ``warnings`` the
    section's warnings so far (cumulative, as the engine's text gives the runner)."""
    rd = ResultsDir(path)
    tables: list[dict[str, Any]] = []
    if idle_ns is not None:
        tables.append(_memory_point("idle", None, None, 64))
    tables += [_memory_point("loaded", s.traffic, s.delay, s.stride) for s in specs]
    plan = [{k: v for k, v in t.items() if k != "engine"} for t in tables]
    rd.create(new({"schema_version": SCHEMA_VERSION, "tool": "profiler-tui", "kind": "memory", "plan": plan,
                   "preset": {"name": "synthetic-memory", "kind": "memory"}, "status": "complete",
                   "points_total": len(plan), "points_done": len(plan)}, path / "run.json"))
    try:
        i = 0
        if idle_ns is not None:
            rd.append(ResultLine(Kind.MEMORY, tables[0], MemoryMetrics(latency_ns=idle_ns), 0, SCHEMA_VERSION,
                                 Parts(engine="builtin", wall_s=2.0)))
            i = 1
        warnings: list[str] = []
        for spec in specs:
            if spec.cpu_share < CONTENDED_BELOW:
                warnings.append(f"Busy machine at delay {spec.delay}: a thread got {spec.cpu_share * 100:.0f}% of "
                                "a CPU in its window")
            warnings += spec.more_warnings
            lat = statistics.fmean(spec.latency_windows)
            bw = statistics.fmean(spec.bandwidth_windows)
            u = intervals_of({"latency_ns": list(spec.latency_windows), "bandwidth_mbps": list(spec.bandwidth_windows)})
            m = MemoryMetrics(latency_ns=lat, bandwidth_mbps=bw).with_ci(cast(JSONObject, u.ci95),
                                                                          cast(JSONObject, u.ci_method))
            parts = Parts(engine="builtin", wall_s=2.0, load_threads=1, warnings=list(warnings) or None)
            rd.append(ResultLine(Kind.MEMORY, tables[i], m, i, SCHEMA_VERSION, parts))
            i += 1
    finally:
        rd.close()
    return path
