"""The peak preset for real, on a RAM-backed loop device this test makes: a reduced plan runs to the end with no
failure; its ``cpus = "node"`` became the CPUs this process may use (a loop device has no NUMA node) and numjobs
stops at their count; the io_uring points' job files hold registerfiles, fixedbufs, sqthread_poll and the pinning,
and they ran; the hipri points were skipped (a loop device has no poll queues: queue/io_poll 0), not failed; every
measured point has its host_cpu part (/proc/stat over fio's window).  peak-write asks for --allow-destructive on
a device holding a filesystem."""

from __future__ import annotations

import json
import os
from pathlib import Path

from app.host.devstat import NO_POLL_QUEUES
from app.host.topology import cpu_list_text
from tests.helpers.loopdev import loop_device, needs_loop
from tests.helpers.schema_check import validate_dir
from tests.integration.test_procedure import cli, lines

pytestmark = needs_loop


def test_a_small_peak_run_completes_on_a_loop_device(tmp_path: Path) -> None:
    cpus = sorted(os.sched_getaffinity(0))
    out = tmp_path / "peak"
    with loop_device(tmp_path, size_mb=128, ram=True) as dev:
        proc = cli("run", "peak", "--target", dev.path, "--yes", "--out", str(out), "--set", "runtime=2",
                   "--set", "ramp_time=0", "--set", "iodepth=16", "--set", f"numjobs=1,{len(cpus) + 1}")
        assert proc.returncode == 0, proc.stderr
        assert io_poll(dev.path) == "0"
    validate_dir(out)
    meta = json.loads((out / "run.json").read_text())
    assert meta["status"] == "complete" and not meta.get("failures")
    assert {p["cpus"] for p in meta["plan"]} == {cpu_list_text(cpus)}
    assert {p["numjobs"] for p in meta["plan"]} == {1}, "numjobs above the node's CPUs is cut from the plan"
    skipped = {s["point"]["group"]: s["reason"] for s in meta["skipped"]}
    assert skipped == {"io_uring registered + hipri": NO_POLL_QUEUES}
    records = {r["point"]["group"]: r for r in lines(out)}
    assert list(records) == ["libaio", "io_uring", "io_uring registered", "io_uring registered + sqthread_poll"]
    for group, r in records.items():
        assert r["metrics"]["iops"] > 0, group
        h = r["host_cpu"]
        assert h["cpus"] == cpu_list_text(cpus) and h["window_s"] >= 0.5, (group, h)
        assert 0 < h["busy_cpus"] <= len(cpus) * 1.05 and h["iops_per_busy_cpu"] > 0, (group, h)
    job = (out / "raw").glob("*-randread-4k-qd16-j1.fio")
    texts = {t for t in (p.read_text() for p in job)}
    assert any("registerfiles=1\nfixedbufs=1\nsqthread_poll=1\n" in t for t in texts)
    assert all(f"cpus_allowed={cpu_list_text(cpus)}\ncpus_allowed_policy=split\n" in t for t in texts)
    assert "1 skipped" in proc.stderr + proc.stdout


def io_poll(device: str) -> str:
    return Path(f"/sys/class/block/{os.path.basename(device)}/queue/io_poll").read_text().strip()


def test_peak_write_needs_the_destructive_confirmation_on_a_device_holding_a_filesystem(tmp_path: Path) -> None:
    with loop_device(tmp_path, size_mb=16, ram=True, mkfs="ext4") as dev:
        proc = cli("run", "peak-write", "--target", dev.path, "--yes", "--out", str(tmp_path / "w"))
    assert proc.returncode == 3, proc.stderr
    assert "--allow-destructive" in proc.stderr and "Traceback" not in proc.stderr
    assert not (tmp_path / "w").exists()
