"""The device's own word, for real: fio points on loop devices this test makes, their ``device`` part (the target
device's /sys stat counters over fio's measured window) set against fio's bytes.

- a RAM-backed loop device with direct=1: the device moved fio's bytes (a ramp's I/O left out);
- a file on ext4 read twice with direct=0 and invalidate=0: the second read came from the page cache;
- a loop device of 512-byte logical blocks over a file on a 4 KiB-block ext4: 4 KiB and misaligned 6 KiB writes
  reach the loop device byte for byte, the read-modify-write happens below it (docs/tails.md).
"""

from __future__ import annotations

import contextlib
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.loopdev import loop_device, needs_loop, sh
from tests.helpers.schema_check import validate_dir
from tests.integration.test_procedure import cli, lines

pytestmark = needs_loop
DEVICE_FLAGS = {"not-on-device", "amplified"}


def point(target: str, out: Path, *sets: str) -> dict[str, Any]:
    """One ``run custom`` point of about 3 s on ``target``; its results line (validated against the schemas)."""
    args = ["run", "custom", "--target", target, "--yes", "--out", str(out), "--set", "runtime=3"]
    proc = cli(*args, *[a for item in sets for a in ("--set", item)])
    assert proc.returncode == 0, proc.stderr
    validate_dir(out)
    (record,) = lines(out)
    return record


def flags(record: dict[str, Any]) -> set[str]:
    return {f["flag"] for f in record["flags"]}


def stat_of(device: str) -> list[int]:
    return [int(v) for v in Path(f"/sys/class/block/{os.path.basename(device)}/stat").read_text().split()]


@pytest.mark.parametrize("rw, ramp, direction", [("randread", 0, "read"), ("randwrite", 1, "write")])
def test_a_ram_loop_device_with_direct_io_moves_fios_bytes(tmp_path: Path, rw: str, ramp: int,
                                                           direction: str) -> None:
    """The window matches fio's: with a ramp, from the dump where fio's counters restarted (the ramp's I/O,
    which fio leaves out, is left out here too)."""
    with loop_device(tmp_path, size_mb=128, ram=True) as dev:
        record = point(dev.path, tmp_path / rw, f"rw={rw}", "size=128m", "iodepth=8", f"ramp_time={ramp}")
    d = record["device"]
    assert (d["name"], d["source"]) == (dev.name, "target")
    assert d[f"fio_{direction}_bytes"] > 64 << 20, d
    assert 0.98 <= d[f"{direction}_ratio"] <= 1.02, d
    other = "write" if direction == "read" else "read"
    assert d[f"{other}_ratio"] is None and d[f"{other}_bytes"] == 0
    assert d["ios"] > 0 and d["lat_mean_ns"] > 0 and 0 < d["window_s"] <= 3.5
    assert not flags(record) & DEVICE_FLAGS, record["flags"]
    assert record["checks"]["not-on-device"] == record["checks"]["amplified"] == {"result": "passed"}


def test_a_buffered_read_run_twice_comes_from_the_page_cache_the_second_time(tmp_path: Path) -> None:
    """invalidate=0, direct=0: the second point reads what the first left cached; the device under the file's
    filesystem moved almost nothing. The same point with direct=1 reads the device byte for byte."""
    with loop_device(tmp_path, size_mb=96, mkfs="ext4", mount=True, ram=True) as dev:
        assert dev.mountpoint is not None
        target = str(dev.mountpoint / "file")
        same = ("rw=read", "bs=128k", "size=32m", "direct=0", "invalidate=0")
        point(target, tmp_path / "first", *same)
        second = point(target, tmp_path / "second", *same)
        direct = point(target, tmp_path / "direct", "rw=read", "bs=128k", "size=32m", "direct=1")
    d = second["device"]
    assert (d["name"], d["source"]) == (dev.name, "filesystem")
    assert d["fio_read_bytes"] > 32 << 20 and d["read_ratio"] < 0.1, d
    assert {"not-on-device", "buffered"} <= flags(second), second["flags"]
    assert second["point"]["invalidate"] is False
    assert "invalidate=0" in (tmp_path / "second").joinpath("raw").glob("*.fio").__next__().read_text()
    assert 0.98 <= direct["device"]["read_ratio"] <= 1.02, direct["device"]
    assert not flags(direct) & DEVICE_FLAGS


def _evict(path: Path) -> None:
    """The file's pages written out and dropped from the page cache: the next partial-page write must read."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)


def test_misaligned_writes_reach_a_512_byte_loop_device_as_they_are_and_are_amplified_below_it(
        tmp_path: Path) -> None:
    """bs=6k on a loop device of 512-byte logical blocks whose backing file's filesystem has 4 KiB blocks: every
    6 KiB write is whole sectors, so the loop device counts fio's bytes exactly (no ``amplified``); the partial
    4 KiB pages are read from the backing file's device below it (read-modify-write in its page cache)."""
    with loop_device(tmp_path, size_mb=160, ram=True) as fs, contextlib.ExitStack() as undo:
        sh("mkfs.ext4", "-q", "-F", "-b", "4096", "-E", "lazy_itable_init=0,lazy_journal_init=0", fs.path)
        mnt = tmp_path / "fs"
        mnt.mkdir()
        sh("mount", fs.path, str(mnt))
        undo.callback(sh, "umount", str(mnt))
        assert os.statvfs(mnt).f_bsize == 4096
        image = mnt / "backing.img"
        sh("dd", "if=/dev/zero", f"of={image}", "bs=1M", "count=128", "oflag=direct", "status=none")
        loop = sh("losetup", "-f", "--show", "--sector-size", "512", str(image)).stdout.strip()
        assert loop.startswith("/dev/loop")
        try:
            assert sh("blockdev", "--getss", loop).stdout.strip() == "512"
            below: dict[str, int] = {}
            records = {}
            for bs in ("4k", "6k"):
                _evict(image)
                before = stat_of(fs.path)
                records[bs] = point(loop, tmp_path / bs, "rw=randwrite", f"bs={bs}", "size=128m", "iodepth=8")
                below[bs] = (stat_of(fs.path)[2] - before[2]) * 512  # sectors the backing file's device read
        finally:
            subprocess.run(["losetup", "-d", loop], check=False, capture_output=True)
    for bs, record in records.items():
        d = record["device"]
        assert d["name"] == os.path.basename(loop) and d["read_bytes"] == 0
        assert 0.98 <= d["write_ratio"] <= 1.02, (bs, d)
        assert not flags(record) & DEVICE_FLAGS, (bs, record["flags"])
    # the read-modify-write, one device down: 6 KiB writes over partly covered 4 KiB pages read them first
    assert below["6k"] >= max(4 * below["4k"], 8 << 20), below


def test_the_counters_are_readable_by_anyone_and_writable_by_no_user(tmp_path: Path) -> None:
    """The tool opens only /sys stat files (and /proc/self/mountinfo): another user (nobody) can read them, as the
    tool does, but cannot write them, so cannot feed the parser."""
    with loop_device(tmp_path, size_mb=16, ram=True) as dev:
        stat = f"/sys/class/block/{dev.name}/stat"
        read = subprocess.run(["runuser", "-u", "nobody", "--", "cat", stat], capture_output=True, text=True,
                              timeout=30)
        assert read.returncode == 0 and len(read.stdout.split()) >= 11
        write = subprocess.run(["runuser", "-u", "nobody", "--", "sh", "-c", f"echo 9 > {stat}"],
                               capture_output=True, text=True, timeout=30)
        assert write.returncode != 0 and "ermission denied" in write.stderr
