"""iops_per_cpu: the I/Os per CPU-second of fio's job threads, from a group-reported entry or several jobs."""

from __future__ import annotations

import json

from app.model.records import read_line
from app.runners.fio_parse import iops_per_cpu, metrics


def _job(usr: float, sys: float, runtime_ms: int, ios: int) -> dict[str, object]:
    return {"jobname": "j", "usr_cpu": usr, "sys_cpu": sys, "job_runtime": runtime_ms,
            "read": {"total_ios": ios, "iops": ios / (runtime_ms / 1000), "io_bytes": ios * 4096, "bw_bytes": 0,
                     "lat_ns": {"N": ios, "min": 1, "max": 2, "mean": 1.5, "stddev": 0.1}}}


def test_a_group_of_two_threads_counts_both_threads_cpu() -> None:
    """group_reporting with numjobs=2: fio gives the threads' mean usr+sys and their runtimes added (6 s of 3 s
    each): two CPUs busy, so 600k I/Os in 3 s are 100k I/Os per CPU-second, not 200k."""
    assert iops_per_cpu([_job(99.0, 1.0, 6000, 600_000)], 600_000) == 100_000.0


def test_separate_jobs_add_their_cpu_time() -> None:
    jobs = [_job(50.0, 0.0, 3000, 150_000), _job(100.0, 0.0, 3000, 300_000)]  # 1.5 + 3 CPU-seconds
    assert iops_per_cpu(jobs, 450_000) == 100_000.0


def test_no_cpu_figures_give_no_figure_and_the_line_reads_it() -> None:
    assert iops_per_cpu([_job(0.0, 0.0, 3000, 1000)], 1000) is None
    assert iops_per_cpu([{"jobname": "j"}], 1000) is None
    m = metrics({"jobs": [_job(20.0, 30.0, 2000, 10_000)]})
    assert m["iops_per_cpu"] == 10_000.0
    line = {"kind": "storage", "point": {"rw": "randread", "bs": 4096}, "metrics": m}
    assert read_line(json.dumps(line)).storage.iops_per_cpu == 10_000.0
    line["metrics"] = {**m, "iops_per_cpu": "fast"}
    assert read_line(json.dumps(line), check=False).storage.iops_per_cpu is None
