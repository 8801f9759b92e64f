"""Benchmark: `profiler-tui report` on a 120-point and a 1,008-point results directory.

The directory is synthesised (no fio run needed): the seed-matrix plan (4K/16K/32K/128K ×
read, write, randread, randwrite, rw, randrw × QD 1/16/64/256/1024) with metrics from a
closed queueing model of an SSD — per-I/O service time S = overhead + bs / bandwidth, a
capacity of c parallel units, throughput X(N) = c·N / (S·(N + c)) saturating smoothly,
latency from Little's law R = N / X — so every figure and analysis of the report is
exercised with realistic shapes.

The 1,008-point sweep is a storage engineer's full matrix with the same model: 6 patterns ×
12 block sizes (4K … 8M) × 14 queue depths (1 … 8192).  Each report is timed as a process
(`profiler-tui report DIR`, interpreter start-up and imports included), ``--repeat`` times
each, interleaved; the medians, the ratio 1,008 / 120 and the targets (1,008-point report
≤ 2× the 120-point one and < 2 s) are printed.

    python bench/report_speed.py [--keep DIR] [--repeat N]
"""

from __future__ import annotations

import argparse
import json
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

RW = ["read", "write", "randread", "randwrite", "rw", "randrw"]
BS = [4096, 16384, 32768, 131072]
QD = [1, 16, 64, 256, 1024]
# the 1,008-point sweep
BIG_BS = [4096 << i for i in range(12)]  # 4K … 8M
BIG_QD = [1 << i for i in range(14)]  # 1 … 8192
TARGET_RATIO = 2.0
TARGET_BIG_S = 2.0


def _model(rw: str, bs: int, qd: int) -> dict:
    rand = rw.startswith("rand")
    write_share = {"read": 0.0, "randread": 0.0, "write": 1.0, "randwrite": 1.0}.get(rw, 0.5)
    overhead_ns = (80_000 if rand else 20_000) * (1 + 0.6 * write_share)  # per-I/O access time
    bandwidth = (3.2e9 - 1.6e9 * write_share)  # bytes/s of the medium
    service_ns = overhead_ns + bs / bandwidth * 1e9
    units = 32 if rand else 8  # internal parallelism
    x = units * qd / (service_ns * 1e-9 * (qd + units))  # IOPS
    r_ns = qd / x * 1e9  # Little's law
    reads = 1.0 - write_share
    lat = {"min": int(service_ns * 0.4), "max": int(r_ns * 6), "mean": r_ns, "stddev": r_ns * 0.3,
           "p50": int(r_ns * 0.95), "p90": int(r_ns * 1.4), "p99": int(r_ns * 2.1), "p99_9": int(r_ns * 3),
           "p99_99": int(r_ns * 4.5)}
    zero = {k: 0 for k in lat}
    return {
        "iops": x, "read_iops": x * reads, "write_iops": x * write_share,
        "bw_bytes": x * bs, "read_bw_bytes": x * bs * reads, "write_bw_bytes": x * bs * write_share,
        "lat_ns": lat, "read_lat_ns": lat if reads else zero, "write_lat_ns": lat if write_share else zero,
        "usr_cpu": min(99.0, 2 + x / 20_000), "sys_cpu": min(99.0, 10 + x / 5_000),
        "total_ios": int(x * 60), "io_bytes": int(x * 60 * bs), "jobs": 1,
    }


def make_results_dir(path: Path, rws=RW, bss=BS, qds=QD) -> Path:
    """A results directory shaped like a finished `run seed-matrix` (one line per point)."""
    path.mkdir(parents=True, exist_ok=True)
    plan: list[dict[str, object]] = []
    lines: list[dict[str, object]] = []
    for rw in rws:
        for bs in bss:
            for qd in qds:
                point = {"rw": rw, "bs": bs, "rwmixread": 50 if rw in ("rw", "randrw") else None, "iodepth": qd,
                         "numjobs": 1, "ioengine": "libaio", "direct": True, "runtime": 60, "ramp_time": 0,
                         "size": 1 << 30, "time_based": True}
                plan.append(point)
                lines.append({"kind": "storage", "index": len(lines), "point": point, "metrics": _model(rw, bs, qd),
                              "fio_version": "fio-3.33", "target": "/srv/bench/testfile"})
    meta = {"tool": "profiler-tui", "preset": {"name": "seed-matrix", "kind": "storage",
                                              "description": "synthetic seed-matrix-shaped run (benchmark)"},
            "kind": "storage", "plan": plan, "points_total": len(plan), "points_done": len(plan),
            "target": "/srv/bench/testfile", "target_info": {"type": "file", "path": "/srv/bench/testfile",
                                                           "mount_point": "/srv", "source": "/dev/nvme0n1p1",
                                                           "filesystem": "ext4"},
            "environment": {}, "tools": {"fio": "fio-3.33"}, "status": "complete"}
    (path / "run.json").write_text(json.dumps(meta, indent=1))
    (path / "results.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    (path / "raw").mkdir(exist_ok=True)
    return path


def time_report(path: Path) -> tuple[float, float]:
    """Wall seconds `profiler-tui report DIR` takes as a fresh process (start-up included), and the
    CPU seconds it and its figure workers used (less sensitive to other load on the machine)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    # the checkout's own code (`-m app` from ROOT), not whatever the interpreter's `profiler-tui` script
    # imports: a venv shared between checkouts would time another tree
    cmd = [sys.executable, "-m", "app"]
    t0 = time.perf_counter()
    proc = subprocess.run(cmd + ["report", str(path)], cwd=ROOT, capture_output=True,
                          text=True)
    took = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        raise SystemExit(f"report of {path} failed ({proc.returncode}): {proc.stderr.strip()}")
    return took, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--keep", metavar="DIR", help="write the directories (and their reports) here and keep them")
    ap.add_argument("--repeat", type=int, default=1, help="render each this many times, report the median")
    args = ap.parse_args()
    tmp = None
    if args.keep:
        base = Path(args.keep)
    else:
        tmp = tempfile.mkdtemp(prefix="report-bench-")
        base = Path(tmp)
    try:
        small = make_results_dir(base / "seed-matrix")
        big = make_results_dir(base / "sweep-1008", bss=BIG_BS, qds=BIG_QD)
        times: dict[Path, list[float]] = {small: [], big: []}
        cpu: dict[Path, list[float]] = {small: [], big: []}
        for _ in range(max(1, args.repeat)):
            for path in (small, big):
                wall, used = time_report(path)
                times[path].append(wall)
                cpu[path].append(used)
        med = {p: statistics.median(t) for p, t in times.items()}
        for path, n in ((small, 120), (big, 1008)):
            figures = len(list((path / "plots").glob("*.svg")))
            runs = ", ".join(f"{t:.2f}" for t in times[path])
            print(f"report of a {n:,}-point directory: {med[path]:.2f} s median of {len(times[path])} ({runs}); "
                  f"CPU {statistics.median(cpu[path]):.2f} s; {figures} figures, "
                  f"{(path / 'report.md').stat().st_size:,} bytes of markdown")
        ratio = med[big] / med[small]
        ok = ratio <= TARGET_RATIO
        print(f"ratio 1,008 / 120 points: {ratio:.2f} (target ≤ {TARGET_RATIO:g}): {'ok' if ok else 'MISSED'}")
        print(f"1,008-point report: {med[big]:.2f} s (target < {TARGET_BIG_S:g} s): "
              f"{'ok' if med[big] < TARGET_BIG_S else 'MISSED'}")
        return 0 if ok else 1  # the ratio is the acceptance; the absolute time is printed, not enforced
    finally:
        if tmp:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
