"""Benchmark: time to truth (``make bench-steady``), on a loop device over a RAM-backed file that this script
creates in /dev/shm and removes again.

1. ``seed-p4600`` twice in one process: once with a fixed ``runtime=30``, once with
   ``steady=iops:2% runtime=30`` (fio's steady-state detection, the runtime then a cap).  Per point: both IOPS
   figures, their ratio, both wall times; then the steady run's total wall time as a share of the fixed one
   (target ≤ 35 %; the floor with the default 5 s window and 2 s ramp is about 7.3 s of 30.3 s, 24 %) and
   the median IOPS ratio (target 1.00 ± 0.05).
2. ``qd-scaling`` (the exhaustive QD sweep), then ``qd-knee`` with ``latency_bound`` set between two of the
   sweep's measured p99s: the depth fio's search found against the deepest swept depth meeting the bound
   (target: within one QD step) and the two wall times (target: the search ≤ 50 % of the sweep).

The reference of each figure is measured in the same run.  Options: ``--runtime S`` (default 30),
``--size-mb N`` (the RAM-backed device, default 1024), ``--skip-steady``, ``--skip-knee``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import math
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Iterator

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from app.engine.sweep import new_session  # noqa: E402 - after the sys.path line above
from app.plan import presets  # noqa: E402 - after the sys.path line above


async def drain(session: Any) -> None:
    async for _ in session.events():
        pass


def run(preset: str, device: str, out: Path, sets: list[str]) -> tuple[list[dict[str, Any]], float]:
    p = presets.apply_overrides(presets.load(preset), sets)
    session = new_session(p, target=device, out=out, yes=True, overrides=sets)
    t0 = time.monotonic()
    asyncio.run(drain(session))
    wall = time.monotonic() - t0
    lines: list[dict[str, Any]] = session.results.records()
    records = sorted(lines, key=lambda r: r["index"])
    return records, wall


def label(r: dict[str, Any]) -> str:
    p = r["point"]
    mix = "" if p.get("rwmixread") is None else f" {p['rwmixread']}%R"
    return f"{p['rw']}{mix} {p['bs'] // 1024}K QD{p['iodepth']}"


def steady_bench(device: str, tmp: Path, runtime: int) -> None:
    print(f"== seed-p4600: fixed runtime={runtime} against steady=iops:2% (runtime={runtime} as the cap) ==")
    fixed, fixed_wall = run("seed-p4600", device, tmp / "fixed", [f"runtime={runtime}", "repeat=1"])
    steady, steady_wall = run("seed-p4600", device, tmp / "steady", ["steady=iops:2%", f"runtime={runtime}",
                                                                     "repeat=1"])
    ratios = []
    print(f"{'point':<22} {'fixed IOPS':>11} {'steady IOPS':>12} {'ratio':>6} {'fixed s':>8} {'steady s':>9}  steady?")
    for f, s in zip(fixed, steady):
        ratio = s["metrics"]["iops"] / f["metrics"]["iops"] if f["metrics"]["iops"] else math.nan
        ratios.append(ratio)
        st = s.get("steady") or {}
        verdict = (f"after {st['after_s']:.1f} s" if st.get("attained")
                   else f"no ({st.get('deviation') or 0:.1f}% at the cap)")
        print(f"{label(f):<22} {f['metrics']['iops']:>11,.0f} {s['metrics']['iops']:>12,.0f} {ratio:>6.3f} "
              f"{f['wall_s']:>8.1f} {s['wall_s']:>9.1f}  {verdict}")
    share = steady_wall / fixed_wall
    median = statistics.median(ratios)
    attained = sum(1 for s in steady if (s.get("steady") or {}).get("attained"))
    print(f"wall: fixed {fixed_wall:.1f} s, steady {steady_wall:.1f} s = {share:.0%} of fixed "
          f"(target ≤ 35%: {'met' if share <= 0.35 else 'NOT met'}); {attained} of {len(steady)} points steady")
    print(f"median IOPS ratio steady/fixed = {median:.3f} (target 1.00 ± 0.05: "
          f"{'met' if abs(median - 1) <= 0.05 else 'NOT met'})")


def knee_bench(device: str, tmp: Path) -> None:
    print("== qd-scaling (exhaustive) against qd-knee (fio's latency_target search) ==")
    sweep, sweep_wall = run("qd-scaling", device, tmp / "sweep", [])
    p99 = [(r["point"]["iodepth"], r["metrics"]["lat_ns"]["p99"]) for r in sweep]
    for qd, v in p99:
        print(f"QD{qd:<4} p99 {v / 1e3:9.1f} µs")
    # the bound: between the p99s of the first step (from QD 8 on) where p99 grows by at least 1.5x, so that
    # the right depth is well defined
    pairs = [(a, b) for a, b in zip(p99, p99[1:]) if a[0] >= 8 and b[1] >= 1.5 * a[1]]
    if not pairs:
        print("no step where p99 grows 1.5x: cannot place a bound; skipped")
        return
    (qa, va), (qb, vb) = pairs[0]
    bound_us = int(math.sqrt(va * vb) / 1e3)
    meets = [qd for qd, v in p99 if v <= bound_us * 1e3]
    expected = max(meets)
    search, search_wall = run("qd-knee", device, tmp / "knee", [f"latency_bound={bound_us}us"])
    op = search[0].get("operating_point") or {}
    depth = op.get("depth")
    within = isinstance(depth, int) and expected / 2 <= depth <= expected * 2
    print(f"bound p99 ≤ {bound_us} µs (between QD{qa} {va / 1e3:.0f} µs and QD{qb} {vb / 1e3:.0f} µs): "
          f"sweep's deepest depth meeting it QD{expected}; qd-knee found QD{depth} "
          f"({'converged' if op.get('converged') else 'NOT converged'}) — "
          f"{'within' if within else 'NOT within'} one QD step")
    print(f"wall: qd-scaling {sweep_wall:.1f} s, qd-knee {search_wall:.1f} s = {search_wall / sweep_wall:.0%} "
          f"(target ≤ 50%: {'met' if search_wall <= 0.5 * sweep_wall else 'NOT met'})")


@contextlib.contextmanager
def ram_loop_device(size_mb: int, prefix: str, source: str = "/dev/zero") -> Iterator[str]:
    """A loop device over a file of ``size_mb`` MiB in /dev/shm, written once from ``source`` (so reads meet
    allocated pages, as on a used drive); detached and removed on exit."""
    shm = Path(tempfile.mkdtemp(prefix=prefix, dir="/dev/shm"))
    device = None
    try:
        image = shm / "ram.img"
        with open(image, "wb") as f:
            f.truncate(size_mb << 20)
        device = subprocess.run(["losetup", "-f", "--show", str(image)], capture_output=True, text=True,
                                check=True).stdout.strip()
        subprocess.run(["dd", f"if={source}", f"of={device}", "bs=1M", f"count={size_mb}", "oflag=direct",
                        "status=none"], check=True)
        yield device
    finally:
        if device:
            subprocess.run(["losetup", "-d", device], check=False)
        shutil.rmtree(shm, ignore_errors=True)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runtime", type=int, default=30)
    ap.add_argument("--size-mb", type=int, default=1024)
    ap.add_argument("--skip-steady", action="store_true")
    ap.add_argument("--skip-knee", action="store_true")
    args = ap.parse_args()
    with ram_loop_device(args.size_mb, "bench-steady-") as device:
        print(f"RAM-backed loop device {device} ({args.size_mb} MiB), {os.cpu_count()} CPUs")
        with tempfile.TemporaryDirectory(prefix="bench-steady-") as d:
            if not args.skip_steady:
                steady_bench(device, Path(d), args.runtime)
            if not args.skip_knee:
                knee_bench(device, Path(d))


if __name__ == "__main__":
    main()
