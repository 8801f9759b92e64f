"""Benchmark: the ``peak`` preset against the fio command lines it should match, side by side on one device.

On a RAM-backed loop device this makes (an image in /dev/shm, ``losetup -f --show``; always detached and
removed again), ROUNDS times in turn:

1. ``python -m app run peak --target LOOP --yes`` with a short runtime (``--set``): its best point's IOPS, and
   that point's IOPS per busy CPU (its results line's ``host_cpu``, /proc/stat over fio's measured window);
2. fio io_uring ``--registerfiles --fixedbufs --iodepth=128 --numjobs=<CPUs> --cpus_allowed=<CPUs>
   --cpus_allowed_policy=split``, one job per CPU;
3. the same with libaio.

For the fio command lines, IOPS are fio's; busy CPUs are /proc/stat's busy time (user+nice+system+irq+softirq,
every CPU the jobs run on) over fio's whole process (its ramp and start included) ÷ its wall time, and IOPS per
busy CPU is IOPS ÷ busy CPUs.  Prints each round, the medians, and peak ÷ the best reference (the acceptance
asks at least 0.9).  Root only (losetup).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from app.host.cpustat import read_proc_stat, ticks_per_second  # noqa: E402 - after the sys.path line above
from app.host.topology import cpu_list_text, device_cpus  # noqa: E402 - after the sys.path line above
from bench.steady import ram_loop_device  # noqa: E402 - bench/, this script's directory

ROUNDS = 3
RUNTIME = 2  # seconds measured per point and per reference run
RAMP = 1
IMAGE_MB = 1024
ACCEPT = 0.9


def busy_ticks(cpus: tuple[int, ...]) -> int:
    times = read_proc_stat()
    if times is None:
        raise SystemExit("/proc/stat cannot be read")
    return sum(times[c].busy for c in cpus if c in times)


def reference(loop: str, engine: str, cpus: tuple[int, ...], runtime: int) -> tuple[float, float]:
    """(IOPS, busy CPUs) of one fio command line."""
    argv = ["fio", "--name=ref", f"--filename={loop}", f"--ioengine={engine}", "--direct=1", "--rw=randread",
            "--bs=4k", "--iodepth=128", f"--numjobs={len(cpus)}", f"--cpus_allowed={cpu_list_text(cpus)}",
            "--cpus_allowed_policy=split", "--time_based", f"--runtime={runtime}", f"--ramp_time={RAMP}",
            "--group_reporting", "--readonly", "--output-format=json"]
    if engine == "io_uring":
        argv[4:4] = ["--registerfiles", "--fixedbufs"]
    before, t0 = busy_ticks(cpus), time.monotonic()
    out = subprocess.run(argv, capture_output=True, text=True, check=True).stdout
    busy, wall = busy_ticks(cpus) - before, time.monotonic() - t0
    job = json.loads(out[out.index("{"):])["jobs"][0]
    return job["read"]["iops"], busy / ticks_per_second() / wall


def peak_run(loop: str, out: Path, runtime: int) -> tuple[float, float | None, str]:
    """(IOPS, IOPS per busy CPU, configuration) of the best point of one ``peak`` run."""
    subprocess.run([sys.executable, "-m", "app", "run", "peak", "--target", loop, "--yes", "--out", str(out),
                    "--set", f"runtime={runtime}", "--set", f"ramp_time={RAMP}"],
                   cwd=ROOT, check=True, stdout=subprocess.DEVNULL)
    lines = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines() if line.strip()]
    best = max(lines, key=lambda line: line["metrics"]["iops"])
    host = best.get("host_cpu") or {}
    p = best["point"]
    return (best["metrics"]["iops"], host.get("iops_per_busy_cpu"),
            f"{p.get('group')} QD{p['iodepth']} T{p['numjobs']}")


def main() -> None:
    args = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    args.add_argument("--rounds", type=int, default=ROUNDS)
    args.add_argument("--runtime", type=int, default=RUNTIME)
    opts = args.parse_args()
    # written from urandom: reads of a hole would cost nothing
    with ram_loop_device(IMAGE_MB, "bench-peak-", source="/dev/urandom") as loop, \
            tempfile.TemporaryDirectory(prefix="bench-peak-out-", dir="/dev/shm") as scratch:
        shm = Path(scratch)
        cpus, what = device_cpus(loop)
        print(f"{loop} ({IMAGE_MB} MiB in /dev/shm); CPUs {cpu_list_text(cpus)}: {what}; {opts.runtime} s + {RAMP} s "
              f"ramp per point and per reference run")
        got: dict[str, list[float]] = {"peak": [], "io_uring": [], "libaio": []}
        per_cpu: dict[str, list[float]] = {k: [] for k in got}
        for r in range(opts.rounds):
            iops, per, config = peak_run(loop, shm / f"peak-{r}", opts.runtime)
            got["peak"].append(iops)
            if per is not None:
                per_cpu["peak"].append(per)
            line = f"round {r + 1}: peak {iops:,.0f} IOPS ({config}; {per or 0:,.0f} IOPS/busy CPU)"
            for engine in ("io_uring", "libaio"):
                iops, busy = reference(loop, engine, cpus, opts.runtime)
                got[engine].append(iops)
                per_cpu[engine].append(iops / busy if busy > 0 else 0.0)
                line += f"   fio {engine} {iops:,.0f} IOPS ({busy:.2f} busy CPUs, {per_cpu[engine][-1]:,.0f}/CPU)"
            print(line, flush=True)
        med = {k: statistics.median(v) for k, v in got.items()}
        med_cpu = {k: statistics.median(v) if v else float("nan") for k, v in per_cpu.items()}
        for k in got:
            print(f"median {k:>9}: {med[k]:>12,.0f} IOPS   {med_cpu[k]:>10,.0f} IOPS per busy CPU")
        best = max(("io_uring", "libaio"), key=lambda k: med[k])
        ratio = med["peak"] / med[best]
        print(f"peak / best reference (fio {best}): {ratio:.3f} ({'meets' if ratio >= ACCEPT else 'BELOW'} {ACCEPT})")


if __name__ == "__main__":
    main()
