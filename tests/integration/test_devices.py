"""Device discovery, the `devices` command and report details (issue 3, acceptance 8).

Loop devices are built by the test (tests/helpers/loopdev.py) and always detached;
pre-existing devices are only listed and classified, never opened for writing.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from app.host import devices, safety
from tests.helpers.loopdev import loop_factory, needs_loop  # noqa: F401 - the fixture and the skip mark

ROOT = Path(__file__).resolve().parents[2]
VERDICTS = {safety.OK, safety.NEEDS_DESTRUCTIVE, safety.REFUSED}
KEYS = {"name", "path", "type", "size", "model", "transport", "rotational", "mountpoints", "fstype", "pttype",
        "read_only", "holders", "verdict", "reasons", "write", "read", "children"}


def cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "app", *args], capture_output=True, text=True, timeout=120,
                          cwd=ROOT, check=False)


def by_path(devs: list[dict]) -> dict[str, dict]:
    return {d["path"]: d for _, d in devices.iter_devices(devs)}


def real_disks() -> list[str]:
    """Whole disks the kernel has (size > 0), excluding loop/ram/zram."""
    out = []
    for name in os.listdir("/sys/block"):
        if name.startswith(("loop", "ram", "zram")) or safety.size_bytes(name) == 0:
            continue
        out.append(safety.dev_path(name))
    return sorted(out)


def check_node(d: dict) -> None:
    assert KEYS <= d.keys(), KEYS - d.keys()
    assert d["verdict"] in VERDICTS and d["reasons"] and all(isinstance(r, str) and r for r in d["reasons"])
    assert d["write"]["verdict"] == d["verdict"]
    assert d["read"]["verdict"] in VERDICTS and d["read"]["reasons"]
    assert isinstance(d["mountpoints"], list) and isinstance(d["holders"], list)
    for c in d["children"]:
        check_node(c)


def test_lists_the_machines_disks_with_verdicts():
    devs = devices.list_devices()
    for d in devs:
        check_node(d)
    paths = by_path(devs)
    for disk in real_disks():
        assert disk in paths, f"{disk} missing from {sorted(paths)}"
        assert paths[disk]["size"] == safety.size_bytes(os.path.basename(disk))


def test_root_disk_listed_as_refused():
    src = subprocess.run(["findmnt", "-no", "SOURCE", "/"], capture_output=True, text=True).stdout.strip()
    if not src.startswith("/dev/"):
        pytest.skip("/ is not on a block device here")
    name = safety.sys_name(src)
    disk = safety.dev_path(safety.parent_disk(name) or name)
    paths = by_path(devices.list_devices())
    for p in {src, disk}:
        if p in paths:
            assert paths[p]["verdict"] == safety.REFUSED


def test_devices_json_cli_acceptance_8():
    """Acceptance 8 (without loops): this machine's disks, each with verdicts and reasons."""
    cp = cli("devices", "--json")
    assert cp.returncode == 0, cp.stderr
    data = json.loads(cp.stdout)
    devs = data["devices"] if isinstance(data, dict) else data
    for d in devs:
        check_node(d)
    assert set(real_disks()) <= set(by_path(devs))


@needs_loop
def test_devices_json_cli_lists_loop_devices(loop_factory):
    """Acceptance 8: loop devices appear with the verdict that matches their state."""
    blank = loop_factory()
    ext4 = loop_factory(mkfs="ext4")
    parted = loop_factory(partitions=["32M", ""], mkfs="ext4", mount=True)
    cp = cli("devices", "--json")
    assert cp.returncode == 0, cp.stderr
    data = json.loads(cp.stdout)
    devs = data["devices"] if isinstance(data, dict) else data
    paths = by_path(devs)
    assert paths[blank.path]["verdict"] == safety.OK
    assert paths[blank.path]["type"] == "loop" and paths[blank.path]["backing_file"] == str(blank.image)
    assert paths[ext4.path]["verdict"] == safety.NEEDS_DESTRUCTIVE
    assert paths[ext4.path]["fstype"] == "ext4"  # probed: lsblk's FSTYPE is empty without udev
    assert paths[parted.path]["verdict"] == safety.REFUSED
    assert paths[parted.path]["pttype"] == "dos"
    kids = {c["path"]: c for c in paths[parted.path]["children"]}
    assert set(parted.partitions) <= set(kids)
    p1 = kids[parted.partitions[0]]
    assert p1["fstype"] == "ext4" and str(parted.mountpoint) in p1["mountpoints"] and p1["verdict"] == safety.REFUSED
    assert p1["parent"] == parted.path
    assert kids[parted.partitions[1]]["verdict"] == safety.OK
    for p in (blank.path, ext4.path, parted.path):
        assert paths[p]["read"]["verdict"] == safety.OK and paths[p]["read"]["needs_yes"]


@needs_loop
def test_devices_plain_table(loop_factory):
    dev = loop_factory(mkfs="ext4")
    cp = cli("devices")
    assert cp.returncode == 0, cp.stderr
    lines = cp.stdout.splitlines()
    assert lines[0].split()[:2] == ["DEVICE", "SIZE"]
    row = next(line for line in lines if line.startswith(dev.path))
    assert "needs --allow-destructive" in row and "ext4" in row
    assert "Traceback" not in cp.stderr


def test_render_empty_table():
    assert "no block devices" in devices.render_devices_table([])


@needs_loop
def test_sysfs_fallback_without_lsblk(loop_factory, monkeypatch):
    dev = loop_factory(mkfs="ext4")
    monkeypatch.setattr(devices, "_lsblk", lambda extra=None: None)
    paths = by_path(devices.list_devices())
    assert paths[dev.path]["fstype"] == "ext4" and paths[dev.path]["verdict"] == safety.NEEDS_DESTRUCTIVE
    for disk in real_disks():
        assert disk in paths


def test_old_lsblk_column_set_fallback(monkeypatch):
    monkeypatch.setattr(devices, "LSBLK_COLUMNS", devices.LSBLK_COLUMNS + ["NO-SUCH-COLUMN"])
    paths = by_path(devices.list_devices())
    for disk in real_disks():
        assert disk in paths and paths[disk]["verdict"] in VERDICTS


def test_listing_is_quick():
    t0 = time.perf_counter()
    devices.list_devices()
    assert time.perf_counter() - t0 < 5


@needs_loop
def test_device_details_of_a_loop_partition(loop_factory):
    dev = loop_factory(partitions=["16M", ""])
    d = devices.device_details(dev.partitions[1])
    assert d["kind"] == "block" and d["disk"] == dev.path and d["type"] == "part"
    assert d["size_bytes"] == safety.size_bytes(os.path.basename(dev.partitions[1]))
    text = Path(f"/sys/block/{dev.name}/queue/scheduler").read_text()
    assert d["scheduler"] in d["schedulers"] and (f"[{d['scheduler']}]" in text or d["schedulers"] == [d["scheduler"]])
    assert d["logical_sector_size"] == int(Path(f"/sys/block/{dev.name}/queue/logical_block_size").read_text())
    assert d["physical_sector_size"] == int(Path(f"/sys/block/{dev.name}/queue/physical_block_size").read_text())
    assert isinstance(d["rotational"], bool) and d["backing_file"] == str(dev.image)


def test_device_details_of_the_disks():
    for disk in real_disks():
        d = devices.device_details(disk)
        assert d["kind"] == "block" and d["size_bytes"] > 0
        assert {"model", "transport", "rotational", "scheduler", "logical_sector_size",
                "physical_sector_size"} <= d.keys()


def test_device_details_of_a_file_target(tmp_path):
    d = devices.device_details(str(tmp_path / "not-yet.dat"))
    assert d["kind"] == "file" and d["exists"] is False
    assert d.get("filesystem") and d.get("mount_point")


@needs_loop
def test_identity_tools_used_when_present_and_skipped_silently_when_absent(loop_factory, tmp_path, monkeypatch):
    dev = loop_factory()
    monkeypatch.setenv("PATH", "/nonexistent")
    d = devices.device_details(dev.path)  # no lsblk, no smartctl, no nvme: still answers
    assert "smart" not in d and "nvme" not in d and d["size_bytes"] > 0

    fake = tmp_path / "bin"
    fake.mkdir()
    (fake / "smartctl").write_text(
        "#!/bin/sh\n"
        'echo \'{"model_name": "FAKE SSD 1TB", "serial_number": "S123", "firmware_version": "1.0", '
        '"user_capacity": {"bytes": 1000}, "rotation_rate": 0}\'\n')
    (fake / "smartctl").chmod(0o755)
    monkeypatch.setenv("PATH", f"{fake}:/usr/sbin:/usr/bin:/sbin:/bin")
    d = devices.device_details(dev.path)
    assert d["smart"]["model"] == "FAKE SSD 1TB" and d["smart"]["serial"] == "S123"
    assert d["model"] == "FAKE SSD 1TB"


def test_core_modules_import_no_ui_library():
    code = ("import sys, app.host.devices, app.host.safety; "
            "bad = sorted(m for m in sys.modules "
            "if m.split('.')[0] in {'textual', 'rich', 'plotext', 'textual_plotext'}); "
            "print(bad); sys.exit(1 if bad else 0)")
    cp = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert cp.returncode == 0, cp.stdout + cp.stderr
