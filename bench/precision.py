"""Benchmark: how well the tool's 95 % intervals cover, and what stopping at a precision saves
(``make bench-precision``), on a loop device over a RAM-backed file this script creates in /dev/shm and
detaches and removes again.

1. Coverage.  ``custom`` as a 4K random read at QD16: 60 runs of 10 s, interleaved with 12 reference pieces of
   10 s (so drift affects both alike).  The reference is the mean IOPS of the 12 pieces (120 s); printed: how
   many of the runs' 95 % intervals of mean IOPS contain it (nominal 95 %: at least 17 of 20, 51 of 60).  A
   run's interval is its line's ``metrics.ci95.iops`` when the line has one, else computed as the tool does from
   its kept per-second samples (``intervals_of(storage_series(...))``).  A single run cannot see drift between
   runs; so the bench also counts the Student-t intervals of the 20 interleaved triples (runs j, j+20, j+40:
   what ``repeat = 3`` reports, ``replicate_spread``; at least 17 of 20).  Then the same for a memory row: the
   built-in engine's idle latency, 60 runs of 1 s against 12 interleaved reference pieces; with the engine's
   windows (``ci95.latency_ns`` in the line) the within-run intervals are counted, without them only the
   between-run spread and the triples can be, and the bench says so.
2. Time to precision.  Each point of ``seed-p4600`` run twice back to back: with a fixed ``runtime=30`` and with
   ``precision=2%`` (``runtime=30`` the cap), which first alternating from point to point so that drift over
   the bench falls on both alike.  Per point: both IOPS figures, their ratio, the precision reached, both wall
   times; then the median IOPS ratio (target 1.00 ± 0.03), the precision runs' wall time against the fixed
   runs' (target ≤ 50 %), and for how many fixed points ±2 % would have held after their 30 s.

A run needs 10 whole seconds past MSER-5's warm-up for an interval (fio's last partial second is no sample, so a
10 s run has 9 or 10); the bench says how many runs had none.  ``--run-seconds S`` measures the coverage runs and
pieces for S seconds instead.

``--quick``: a smoke test of a few minutes (6 runs against 3 pieces, 6 memory runs against 3 pieces, two
seed-p4600 points with a 20 s cap).  Also ``--size-mb N`` (the device, default 1024), ``--skip-coverage``,
``--skip-memory``, ``--skip-time``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import os
import statistics
import sys
import tempfile
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Sequence

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from app.engine.sweep import new_session  # noqa: E402
from app.model.points import StoragePoint  # noqa: E402
from app.plan import presets  # noqa: E402 - after the sys.path line above
from app.stats.finesamples import series_of  # noqa: E402
from app.stats.precision import reached_percent  # noqa: E402
from app.stats.uncertainty import intervals_of, replicate_spread, storage_series  # noqa: E402
from bench.steady import drain, label, ram_loop_device, run  # noqa: E402 - bench/, this script's directory

NOMINAL = 17  # of 20: what a 95 % interval should reach


@dataclass(frozen=True)
class Plan:
    runs: int  # coverage runs
    pieces: int  # reference pieces
    seconds: int  # each run's and piece's runtime
    mem_runs: int
    mem_pieces: int
    mem_seconds: float
    time_sets: tuple[str, ...]  # --set items of the time-to-precision comparison
    cap: int


# 60 runs: 20 interleaved triples (run j, j+20, j+40), as `repeat = 3` interleaves its replicates over a plan
FULL = Plan(60, 12, 10, 60, 12, 1.0, (), 30)
QUICK = Plan(6, 3, 10, 6, 3, 0.5, ("bs=4k", "rwmixread=70,100"), 20)


def run_memory(out: Path, sets: Sequence[str]) -> dict[str, Any]:
    """The one line of ``mem-idle`` with the built-in engine."""
    p = presets.apply_overrides(presets.load("mem-idle"), list(sets))
    session = new_session(p, out=out, yes=True, overrides=list(sets), engine="builtin")
    asyncio.run(drain(session))
    (record,) = session.results.records()
    return record


def samples_of(out: Path, record: dict[str, Any], which: str = "samples") -> list[dict[str, Any]]:
    """The line's raw samples file: ``samples`` (one a second) or ``fine`` (the sub-second ones)."""
    name = (record.get("raw") or {}).get(which)
    if not name:
        return []
    return [json.loads(ln) for ln in (out / name).read_text().splitlines() if ln.strip()]


def storage_interval(out: Path, record: dict[str, Any]) -> tuple[float, float] | None:
    """The line's 95 % interval of mean IOPS: its own ``ci95`` if it has one, else computed from its samples."""
    ci = (record["metrics"].get("ci95") or {}).get("iops")
    if ci:
        return float(ci[0]), float(ci[1])
    got = intervals_of(storage_series(samples_of(out, record))).intervals.get("iops")
    return (got.low, got.high) if got is not None else None


def interleaved(runs: int, pieces: int) -> list[str]:
    """The order of ``runs`` runs and ``pieces`` reference pieces, the pieces spread evenly among the runs."""
    order: list[str] = []
    for i in range(runs):
        order.append("run")
        if (i + 1) * pieces // runs > i * pieces // runs:
            order.append("ref")
    return order


def triples_cover(values: list[float], reference: float) -> tuple[int, int]:
    """Of the interleaved triples (j, j+n/3, j+2n/3), how many t intervals contain ``reference``."""
    step = len(values) // 3
    covered = 0
    for j in range(step):
        ci = replicate_spread([values[j], values[j + step], values[j + 2 * step]]).ci
        covered += ci is not None and ci[0] <= reference <= ci[1]
    return covered, step


def coverage_report(what: str, unit: str, runs: list[float], intervals: list[tuple[float, float] | None],
                    reference: float, with_intervals: bool, short: str = "") -> None:
    """``short``: why runs this short get no interval, said when some got none."""
    n = len(runs)
    cv = statistics.stdev(runs) / statistics.fmean(runs) if n > 1 else math.nan
    print(f"reference {reference:,.1f} {unit}; the {n} runs: mean {statistics.fmean(runs):,.1f} {unit}, "
          f"between-run CV {cv:.2%}")
    need = math.ceil(NOMINAL / 20 * n)  # 17 of 20, 51 of 60
    if with_intervals:
        got = [iv for iv in intervals if iv is not None]
        covered = sum(1 for lo, hi in got if lo <= reference <= hi)
        half = [100 * (hi - lo) / 2 / ((hi + lo) / 2) for lo, hi in got]
        median = statistics.median(half) if half else math.nan
        print(f"{what}: {covered}/{n} within-run 95 % intervals contain the reference "
              f"({n - len(got)} runs had none; median half-width ±{median:.2f} %)"
              f" — nominal 95 %: at least {need} of {n}: {'met' if covered >= need else 'NOT met'}")
        if covered >= need:
            return
        if len(got) < n:
            print(f"  {n - len(got)} of {n} runs got no interval (after the warm-up too few samples, or batch means "
                  f"that stay correlated{short})")
        if any(not lo <= reference <= hi for lo, hi in got):
            print("  within-run intervals undercover here: a run's interval cannot see drift between runs")
    else:
        off = [100 * (v - reference) / reference for v in runs]
        print(f"{what}: no within-run intervals in these lines (the engine printed no windows); only the "
              f"between-run spread can be judged: the runs lie {min(off):+.1f} % to {max(off):+.1f} % from the "
              f"reference, {sum(1 for o in off if abs(o) <= 2)} of {n} within ±2 %")
    k, m = triples_cover(runs, reference)
    print(f"  repeat = 3 (interleaved triples, Student t of 3): {k}/{m} intervals contain the reference "
          f"(nominal 95 %: at least {math.ceil(m * NOMINAL / 20)} of {m}: "
          f"{'met' if k >= math.ceil(m * NOMINAL / 20) else 'NOT met'})")


def storage_coverage(device: str, tmp: Path, plan: Plan) -> None:
    print(f"== coverage: 4K randread QD16, {plan.runs} runs of {plan.seconds} s interleaved with "
          f"{plan.pieces} reference pieces of {plan.seconds} s ==")
    sets = ["rw=randread", "bs=4k", "iodepth=16", f"runtime={plan.seconds}"]
    runs: list[float] = []
    intervals: list[tuple[float, float] | None] = []
    ref: list[float] = []
    for i, what in enumerate(interleaved(plan.runs, plan.pieces)):
        out = tmp / f"cov-{i:02d}"
        (record,), _ = run("custom", device, out, list(sets))
        iops = float(record["metrics"]["iops"])
        if what == "ref":
            ref.append(iops)
            continue
        runs.append(iops)
        intervals.append(storage_interval(out, record))
        iv = intervals[-1]
        print(f"run {len(runs):2d}: {iops:>10,.0f} IOPS  95 % "
              + (f"[{iv[0]:,.0f}, {iv[1]:,.0f}]" if iv else "none"))
    short = ("; a 10 s run has 9 or 10 whole seconds, and an interval needs 10 after the warm-up"
             if plan.seconds < 12 else "")
    coverage_report("storage", "IOPS", runs, intervals, statistics.fmean(ref), True, short)


def memory_coverage(tmp: Path, plan: Plan) -> None:
    print(f"== coverage: built-in engine idle latency, {plan.mem_runs} runs of {plan.mem_seconds:g} s interleaved "
          f"with {plan.mem_pieces} reference pieces ==")
    sets = [f"duration={plan.mem_seconds:g}"]
    runs: list[float] = []
    intervals: list[tuple[float, float] | None] = []
    ref: list[float] = []
    windows = False
    for i, what in enumerate(interleaved(plan.mem_runs, plan.mem_pieces)):
        record = run_memory(tmp / f"mem-{i:02d}", sets)
        lat = float(record["metrics"]["latency_ns"])
        if what == "ref":
            ref.append(lat)
            continue
        runs.append(lat)
        ci = (record["metrics"].get("ci95") or {}).get("latency_ns")
        windows = windows or bool(ci)
        intervals.append((float(ci[0]), float(ci[1])) if ci else None)
        print(f"run {len(runs):2d}: {lat:8.2f} ns  95 % " + (f"[{ci[0]:.2f}, {ci[1]:.2f}]" if ci else "none"))
    coverage_report("memory", "ns", runs, intervals, statistics.fmean(ref), windows)


def time_to_precision(device: str, tmp: Path, plan: Plan) -> None:
    """Each point of seed-p4600 run twice back to back, fixed and with the precision, the order alternating from
    point to point: drift over the bench then falls on both alike instead of on whichever ran second."""
    print(f"== seed-p4600: fixed runtime={plan.cap} against precision=2% (runtime={plan.cap} as the cap), "
          f"point by point, alternating which runs first ==")
    base = [*plan.time_sets, f"runtime={plan.cap}", "repeat=1"]  # one measurement of each point, as fixed
    preset = presets.apply_overrides(presets.load("seed-p4600"), list(base))
    points = [p for p in preset.expand() if isinstance(p, StoragePoint)]
    fixed: list[dict[str, Any]] = []
    precise: list[dict[str, Any]] = []
    for i, point in enumerate(points):
        one = [*base, f"rwmixread={point.rwmixread}", f"bs={point.bs}"]
        for which in (("fixed", "precise") if i % 2 == 0 else ("precise", "fixed")):
            extra = ["precision=2%"] if which == "precise" else []
            (record,), _ = run("seed-p4600", device, tmp / f"{which}-{i}", [*one, *extra])
            (fixed if which == "fixed" else precise).append(record)
    ratios, would_hold = [], 0
    print(f"{'point':<22} {'fixed IOPS':>11} {'2% IOPS':>10} {'ratio':>6} {'fixed ±':>8} {'2% ±':>7} "
          f"{'stop':>8} {'fixed s':>8} {'2% s':>6}")
    for i, (f, p) in enumerate(zip(fixed, precise)):
        ratio = p["metrics"]["iops"] / f["metrics"]["iops"] if f["metrics"]["iops"] else math.nan
        ratios.append(ratio)
        # the precision the stop's rule gives the fixed run's own sub-second samples (that rule is for them)
        held = reached_percent(series_of(samples_of(tmp / f"fixed-{i}", f, "fine")).get("iops", []))
        would_hold += held is not None and held <= 2.0
        part = p.get("precision") or {}
        got = part.get("reached_pct")
        print(f"{label(f):<22} {f['metrics']['iops']:>11,.0f} {p['metrics']['iops']:>10,.0f} {ratio:>6.3f} "
              f"{_pct(held):>8} {_pct(got):>7} {part.get('stop', '?'):>8} {f['wall_s']:>8.1f} {p['wall_s']:>6.1f}")
    fixed_wall = math.fsum(float(r["wall_s"]) for r in fixed)
    precise_wall = math.fsum(float(r["wall_s"]) for r in precise)
    share = precise_wall / fixed_wall
    median = statistics.median(ratios)
    reached = sum(1 for p in precise if (p.get("precision") or {}).get("stop") == "precise")
    print(f"wall (the points' own): fixed {fixed_wall:.1f} s, precision {precise_wall:.1f} s = {share:.0%} of fixed "
          f"(target ≤ 50%: {'met' if share <= 0.5 else 'NOT met'}); {reached} of {len(precise)} points reached ±2 %")
    print(f"median IOPS ratio precision/fixed = {median:.3f} (target 1.00 ± 0.03: "
          f"{'met' if abs(median - 1) <= 0.03 else 'NOT met'})")
    print(f"the fixed run states no precision: ±2 % would have held for {would_hold} of {len(fixed)} of its points "
          f"after their {plan.cap} s")


def _pct(v: float | None) -> str:
    return f"±{v:.2f}%" if v is not None else "none"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="a smoke test of a few minutes")
    ap.add_argument("--size-mb", type=int, default=1024)
    ap.add_argument("--run-seconds", type=int, default=None, help="coverage runs and pieces (default 10)")
    ap.add_argument("--skip-coverage", action="store_true")
    ap.add_argument("--skip-memory", action="store_true")
    ap.add_argument("--skip-time", action="store_true")
    args = ap.parse_args()
    plan = QUICK if args.quick else FULL
    if args.run_seconds:
        plan = replace(plan, seconds=args.run_seconds)
    with ram_loop_device(args.size_mb, "bench-precision-") as device:
        print(f"RAM-backed loop device {device} ({args.size_mb} MiB), {os.cpu_count()} CPUs"
              + (", --quick" if args.quick else ""))
        with tempfile.TemporaryDirectory(prefix="bench-precision-") as d:
            if not args.skip_coverage:
                storage_coverage(device, Path(d), plan)
            if not args.skip_memory:
                memory_coverage(Path(d), plan)
            if not args.skip_time:
                time_to_precision(device, Path(d), plan)


if __name__ == "__main__":
    main()
