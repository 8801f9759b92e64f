"""Validity flags: the checks on each point's figures, provoked for real with fio where this machine can
(a memory filesystem, a starved load generator, direct=0, a link slower than the loop device), and the link
reader on fake sysfs trees."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any, Iterator

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from app.host.link import link_of
from app.model.records import Parts, ResultLine, StorageMetrics, read_line
from app.stats.validity import FLAGS, LEGEND, NO_STEADY, RESULTS, TargetFacts, flags_of, point_checks, point_flags
from tests.helpers.loopdev import loop_device
from tests.helpers.schema_check import validate_dir
from tests.integration.test_procedure import cli, lines, meta

POINT = {"rw": "randread", "bs": 4096, "iodepth": 8, "numjobs": 2, "ioengine": "libaio", "direct": True}


def metrics(iops: float = 1000.0, mean_ns: float = 16e6, usr: float = 10.0, sys: float = 20.0,
            bw: float = 4096e3) -> StorageMetrics:
    return StorageMetrics.of({"iops": iops, "bw_bytes": bw, "usr_cpu": usr, "sys_cpu": sys,
                              "lat_ns": {"mean": mean_ns}})


def _line(record: dict[str, Any]) -> ResultLine:
    """A storage line of these keys, typed as the reader types them."""
    return read_line({"kind": "storage", "point": {}, "metrics": {}, **record}, check=False)


# --- the rules ------------------------------------------------------------------------------------------


def test_a_clean_point_has_no_flags() -> None:
    assert point_flags(POINT, metrics(), Parts()) == []  # 1000 IOPS × 16 ms = 16 in flight of 8 × 2


def test_cpu_bound_at_ninety_percent_of_one_cpu() -> None:
    assert point_flags(POINT, metrics(usr=40, sys=49.9), Parts()) == []
    (f,) = point_flags(POINT, metrics(usr=40, sys=50), Parts())
    assert f == {"flag": "cpu-bound", "reason": "fio used 90 % of a CPU per job (usr+sys), at or above 90 %"}


def test_depth_not_reached_counts_jobs_and_one_per_job_for_synchronous_engines() -> None:
    (f,) = point_flags(POINT, metrics(mean_ns=14e6), Parts())  # 14 of 16
    assert f["flag"] == "depth-not-reached" and "14.00 I/Os in flight of 16 asked (88%" in f["reason"]
    sync = {**POINT, "ioengine": "psync", "iodepth": 32}
    assert point_flags(sync, metrics(mean_ns=1.9e6), Parts()) == []  # 1.9 of 2 (1 per job)
    # a latency-bound search changes its depth on purpose: not judged by the ceiling
    assert point_flags({**POINT, "latency_bound": 1000}, metrics(mean_ns=1e6), Parts(operating_point={})) == []


def test_above_link_and_buffered_and_not_steady_and_throttled() -> None:
    usb2 = TargetFacts(link={"kind": "usb", "text": "USB 480 Mb/s", "bytes_per_s": 60e6})
    (f,) = point_flags(POINT, metrics(bw=61e6), Parts(), usb2)
    assert f == {"flag": "above-link", "reason": "61 MB/s is above the USB 480 Mb/s link's 60 MB/s"}
    assert point_flags(POINT, metrics(bw=59e6), Parts(), usb2) == []
    assert [f["flag"] for f in point_flags({**POINT, "direct": False}, metrics(), Parts())] == ["buffered"]
    for fs in ("tmpfs", "ramfs", "overlay"):
        (f,) = point_flags(POINT, metrics(), Parts(), TargetFacts(filesystem=fs))
        assert f["flag"] == "buffered" and fs[:4] in f["reason"]
    assert point_flags(POINT, metrics(), Parts(), TargetFacts(filesystem="zfs", zfs_version="2.3.0-1")) == []
    (f,) = point_flags(POINT, metrics(), Parts(), TargetFacts(filesystem="zfs", zfs_version="2.1.11-1"))
    assert "ZFS 2.1.11-1" in f["reason"]
    assert point_flags(POINT, metrics(), Parts(), TargetFacts(filesystem="ext4")) == []
    (f,) = point_flags(POINT, metrics(), Parts(steady={"attained": False, "criterion": "iops:2%"}))
    assert f == {"flag": "not-steady", "reason": "iops:2% never held before the cap"}
    assert point_flags(POINT, metrics(), Parts(steady={"attained": True})) == []
    (f,) = point_flags(POINT, metrics(), Parts(), throttled="thermal management transitions rose from 3 to 5")
    assert f["flag"] == "throttled" and "3 to 5" in f["reason"]


def test_every_flag_has_a_legend_line() -> None:
    assert set(LEGEND) == set(FLAGS) and all(LEGEND[f] for f in FLAGS)


@settings(max_examples=300, deadline=None)
@given(st.recursive(st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20),
                    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
                    max_leaves=20))
def test_flags_of_a_hostile_line_keeps_only_well_formed_known_flags(value: Any) -> None:
    for record in ({"flags": value}, {"flags": [value]}, {"flags": [{"flag": "cpu-bound", "reason": value}]}):
        out = flags_of(_line(record))
        assert [f["flag"] for f in out] == [n for n in FLAGS if n in {f["flag"] for f in out}]
        assert all(isinstance(f["reason"], str) and "\n" not in f["reason"] for f in out)


@settings(max_examples=200, deadline=None)
@given(st.dictionaries(st.sampled_from(["iops", "bw_bytes", "usr_cpu", "sys_cpu", "lat_ns"]),
                       st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=5)
                       | st.dictionaries(st.just("mean"), st.none() | st.floats() | st.text(max_size=3))),
       st.dictionaries(st.sampled_from(["iodepth", "numjobs", "ioengine", "direct", "latency_bound"]),
                       st.none() | st.booleans() | st.integers(-5, 1 << 40) | st.text(max_size=5)))
def test_point_flags_of_any_metrics_never_raises(m: dict[str, Any], p: dict[str, Any]) -> None:
    typed = StorageMetrics.of(m)
    flags = point_flags(p, typed, Parts())
    for f in flags:
        assert f["flag"] in FLAGS and f["reason"]
    checks = point_checks(p, typed, Parts(), None, TargetFacts(), flags)
    assert list(checks) == list(FLAGS) and all(c["result"] in RESULTS for c in checks.values())
    assert {n for n, c in checks.items() if c["result"] == "flagged"} == {f["flag"] for f in flags}


# --- the link, from sysfs ----------------------------------------------------------------------------------


def fake_sysfs(root: Path, target: str, device_dir: str, attrs: dict[str, str]) -> Path:
    """A sysfs tree in which ``target``'s device number leads to ``device_dir`` under devices/, with ``attrs``
    (paths relative to devices/) written."""
    st_ = os.stat(target)
    number = st_.st_rdev if os.path.exists(target) and Path(target).is_block_device() else st_.st_dev
    dev = root / "devices" / device_dir
    dev.mkdir(parents=True)
    (root / "dev" / "block").mkdir(parents=True)
    os.symlink(os.path.relpath(dev, root / "dev" / "block"),
               root / "dev" / "block" / f"{os.major(number)}:{os.minor(number)}")
    for rel, text in attrs.items():
        (root / "devices" / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / "devices" / rel).write_text(text + "\n")
    return root


PCI = "pci0000:00/0000:00:01.0"
USB = "pci0000:00/0000:00:14.0/usb1/1-2"
ATA = "pci0000:00/0000:00:17.0/ata3"


@pytest.mark.parametrize("device_dir, attrs, kind, text, rate", [
    (f"{PCI}/nvme/nvme0/nvme0n1", {f"{PCI}/current_link_speed": "8.0 GT/s PCIe",
                                   f"{PCI}/current_link_width": "4"}, "pcie", "PCIe 8 GT/s x4",
     8e9 * 128 / 130 * 4 / 8),
    (f"{PCI}/nvme/nvme0/nvme0n1", {f"{PCI}/current_link_speed": "2.5 GT/s",
                                   f"{PCI}/current_link_width": "1"}, "pcie", "PCIe 2.5 GT/s x1", 250e6),
    (f"{ATA}/host2/target2:0:0/2:0:0:0/block/sda", {f"{ATA}/link3/ata_link/link3/sata_spd": "6.0 Gbps"},
     "sata", "SATA 6 Gb/s", 600e6),
    (f"{USB}/1-2:1.0/host6/target6:0:0/6:0:0:0/block/sdb", {f"{USB}/speed": "480", f"{USB}/idVendor": "0781"},
     "usb", "USB 480 Mb/s", 60e6),
    (f"{USB}/1-2:1.0/host6/target6:0:0/6:0:0:0/block/sdb", {f"{USB}/speed": "5000", f"{USB}/idVendor": "0781"},
     "usb", "USB 5000 Mb/s", 500e6),
])
def test_link_of_reads_the_nearest_link(tmp_path: Path, device_dir: str, attrs: dict[str, str], kind: str,
                                        text: str, rate: float) -> None:
    target = tmp_path / "file"
    target.write_bytes(b"x")
    root = fake_sysfs(tmp_path / "sys", str(target), device_dir, attrs)
    link = link_of(str(target), root)
    assert link is not None and link["kind"] == kind and link["text"] == text
    assert link["bytes_per_s"] == pytest.approx(rate)
    assert link.get("speed") and f" {link['speed']}" in link["text"]  # per lane, as sysfs gives it
    assert link.get("width") == (int(text.rsplit("x", 1)[1]) if kind == "pcie" else None)
    assert link_of(str(target / "not-yet"), root) == link  # a path to be created: its directory's device


@pytest.mark.parametrize("speed", ["", "fast", "8.0 GT/s PCIe\n" * 40, "-8 GT/s", "1e308 GT/s", "nan GT/s"])
def test_link_of_garbage_is_no_link(tmp_path: Path, speed: str) -> None:
    target = tmp_path / "file"
    target.write_bytes(b"x")
    root = fake_sysfs(tmp_path / "sys", str(target), f"{PCI}/nvme/nvme0/nvme0n1",
                      {f"{PCI}/current_link_speed": speed, f"{PCI}/current_link_width": "4"})
    assert link_of(str(target), root) is None


def test_link_of_special_files_and_loops_is_no_link(tmp_path: Path) -> None:
    target = tmp_path / "file"
    target.write_bytes(b"x")
    root = fake_sysfs(tmp_path / "sys", str(target), f"{PCI}/nvme/nvme0/nvme0n1", {f"{PCI}/current_link_width": "4"})
    os.mkfifo(root / "devices" / PCI / "current_link_speed")  # a FIFO never blocks the reader
    assert link_of(str(target), root) is None
    loop = tmp_path / "loop"
    number = os.stat(target).st_dev
    (loop / "dev" / "block").mkdir(parents=True)
    os.symlink("a", loop / "dev" / "block" / "b")
    os.symlink("b", loop / "dev" / "block" / f"{os.major(number)}:{os.minor(number)}")
    os.symlink("b", loop / "dev" / "block" / "a")
    assert link_of(str(target), loop) is None
    assert link_of(str(tmp_path / "missing" / "deep" / "file"), tmp_path / "nothing") is None


# --- provoked for real ------------------------------------------------------------------------------------


@contextlib.contextmanager
def tmpfs(tmp_path: Path) -> Iterator[Path]:
    """A tmpfs, 0755 (a tmpfs root is 1777 otherwise: no file target of root's there)."""
    where = tmp_path / "tmpfs"
    where.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=128m,mode=755", "tmpfs", str(where)], check=True)
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], check=False)


def run(target: str, out: Path, *sets: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    args = ["run", "custom", "--target", target, "--yes", "--out", str(out), "--set", "runtime=2",
            "--set", "ramp_time=0"]
    args += [a for item in sets for a in ("--set", item)]
    if env is None:
        return cli(*args)
    return subprocess.run([sys.executable, "-m", "app", *args], capture_output=True, text=True, timeout=300,
                          cwd=Path(__file__).resolve().parents[2], env={**os.environ, **env})


def test_a_memory_filesystem_with_a_synchronous_engine_is_cpu_bound_short_of_depth_and_buffered(
        tmp_path: Path) -> None:
    """A tmpfs file answers from memory: fio's own thread does all the work (100 % of a CPU), the gap between
    one read and the next (sync: lseek, then read) is a large share of each I/O, and no device is reached."""
    out = tmp_path / "mem"
    with tmpfs(tmp_path) as where:
        proc = run(str(where / "file"), out, "size=64m", "rw=randread", "ioengine=sync", "iodepth=1")
    assert proc.returncode == 0, proc.stderr
    validate_dir(out)  # every line written validates against the JSON Schemas
    (record,) = lines(out)
    got = {f["flag"]: f["reason"] for f in record["flags"]}
    assert set(got) == {"cpu-bound", "depth-not-reached", "buffered"}, record["flags"]
    assert got["buffered"].startswith("the target file is on tmpfs")
    assert meta(out)["target_info"]["filesystem"] == "tmpfs"
    checks = record["checks"]  # every check's result, those that could not run with why
    assert checks["above-link"] == {"result": "not-applicable", "why": "no link speed known: the file is on tmpfs, "
                                                                      "in memory"}
    assert checks["throttled"]["result"] == "not-applicable" and checks["throttled"]["why"].startswith(
        "no drive telemetry: ")
    assert checks["not-steady"] == {"result": "not-applicable", "why": NO_STEADY}
    assert checks["buffered"] == {"result": "flagged"}


def test_direct_0_is_buffered_on_a_real_filesystem(tmp_path: Path) -> None:
    out = tmp_path / "buf"
    with loop_device(tmp_path, size_mb=96, mkfs="ext4", mount=True, ram=True) as dev:
        assert dev.mountpoint is not None
        proc = run(str(Path(dev.mountpoint) / "file"), out, "size=32m", "rw=read", "bs=128k", "direct=0")
    assert proc.returncode == 0, proc.stderr
    validate_dir(out)  # every line written validates against the JSON Schemas
    (record,) = lines(out)
    assert {"flag": "buffered", "reason": "direct=0: the I/O went through the page cache"} in record["flags"]


def test_a_loop_device_faster_than_its_fake_usb2_link_is_above_link(tmp_path: Path) -> None:
    out = tmp_path / "link"
    with loop_device(tmp_path, size_mb=64, ram=True) as dev:
        root = fake_sysfs(tmp_path / "sys", dev.path, f"{USB}/1-2:1.0/host6/target6:0:0/6:0:0:0/block/sdb",
                          {f"{USB}/speed": "480", f"{USB}/idVendor": "0781"})
        proc = run(dev.path, out, "size=64m", "rw=read", "bs=128k", "iodepth=8",
                   env={"PROFILER_TUI_SYSFS": str(root)})
    assert proc.returncode == 0, proc.stderr
    validate_dir(out)  # every line written validates against the JSON Schemas
    (record,) = lines(out)
    assert record["metrics"]["bw_bytes"] > 60e6, "a RAM-backed loop device reads faster than USB 2.0"
    (f,) = [f for f in record["flags"] if f["flag"] == "above-link"]
    assert "USB 480 Mb/s link's 60 MB/s" in f["reason"]
    assert record["checks"]["above-link"] == {"result": "flagged"}
    assert record["checks"]["cpu-bound"] in ({"result": "passed"}, {"result": "flagged"})
    assert meta(out)["target_info"]["link"] == {"kind": "usb", "text": "USB 480 Mb/s", "bytes_per_s": 60e6,
                                                "speed": "480 Mb/s"}
    assert json.loads(json.dumps(record["flags"])) == flags_of(_line(record))
