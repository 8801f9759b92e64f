"""iops_per_cpu of a real fio run (tests/unit/test_iops_per_cpu.py holds the arithmetic): fio's own CPU figures of
two busy job threads give IOPS per busy CPU."""

from __future__ import annotations

import json
import shutil
import subprocess

import pytest

from app.runners.fio_parse import metrics


@pytest.mark.skipif(shutil.which("fio") is None, reason="fio is not installed")
def test_real_fio_with_two_busy_threads() -> None:
    """fio's null engine keeps each job thread on a CPU: with two of them the figure is IOPS ÷ about two CPUs."""
    out = subprocess.run(["fio", "--name=t", "--ioengine=null", "--size=1g", "--rw=randread", "--bs=4k",
                          "--numjobs=2", "--thread", "--group_reporting", "--runtime=1", "--time_based",
                          "--output-format=json"], capture_output=True, text=True, timeout=60, check=True).stdout
    doc = json.loads(out[out.index("{"):])
    m = metrics(doc)
    job = doc["jobs"][0]
    busy = (job["usr_cpu"] + job["sys_cpu"]) / 100 * 2  # two threads, each this share of a CPU
    assert m["iops_per_cpu"] == pytest.approx(m["iops"] / busy, rel=0.05)
