"""Target safety (docs/safety.md).

Classifier tests build each situation for real with loop devices this test
creates (tests/helpers/loopdev.py) and always detaches; the CLI tests (acceptance 1–5
and 7) run `profiler-tui run custom` on those loop devices with a 1 s, 16 MiB
point.  Nothing here writes to a device the test did not create: the root
device is only classified (acceptance 6).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from app.core.errors import EXIT_SAFETY, SafetyError
from app.host import safety
from tests.helpers.loopdev import LoopDevice, loop_factory, needs_loop, require_tools, sh  # noqa: F401 - loop_factory: a fixture

ROOT = Path(__file__).resolve().parents[2]


# --------------------------------------------------------------------------- helpers


def _cli_available() -> str | None:
    try:
        import app.cli.commands  # noqa: F401 - imported only to see that it imports
    except Exception as e:  # any error: the tests that need the CLI skip, naming it
        return f"app.cli.commands not importable yet ({e})"
    if not shutil.which("fio"):
        return "fio not installed"
    return None


def needs_cli(fn):
    return pytest.mark.skipif(_cli_available() is not None, reason=_cli_available() or "")(fn)


@pytest.fixture
def fio_log(tmp_path):
    """A ``fio`` shim first on PATH: logs every invocation, then runs the real fio."""
    real = shutil.which("fio")
    if not real:
        pytest.skip("fio not installed")
    shim_dir = tmp_path / "shim"
    shim_dir.mkdir()
    log = tmp_path / "fio-calls.log"
    shim = shim_dir / "fio"
    shim.write_text(f'#!/bin/sh\nprintf "%s\\n" "$*" >> "{log}"\nexec "{real}" "$@"\n')
    shim.chmod(0o755)
    return shim_dir, log


def fio_jobs(log: Path) -> list[str]:
    """The fio invocations that ran a job (not --version / --help probes)."""
    if not log.exists():
        return []
    return [line for line in log.read_text().splitlines()
            if line.strip() and not any(x in line for x in ("--version", "--help", "--enghelp"))]


def run_cli(*args: str, shim=None, timeout: float = 120) -> subprocess.CompletedProcess:
    env = dict(os.environ)
    if shim is not None:
        env["PATH"] = f"{shim[0]}{os.pathsep}{env.get('PATH', '')}"
    return subprocess.run([sys.executable, "-m", "app", *args], capture_output=True, text=True,
                          timeout=timeout, cwd=ROOT, env=env, check=False)


FAST = ["--set", "runtime=1", "--set", "size=16M", "--set", "ramp_time=0", "--set", "iodepth=4"]
WRITE = ["--set", "rw=randwrite", *FAST]
READ = ["--set", "rw=randread", *FAST]


def run_plan(target: str, out: Path, plan: list[str], *flags: str, shim=None) -> subprocess.CompletedProcess:
    return run_cli("run", "custom", "--target", target, "--out", str(out), *plan, *flags, shim=shim)


def results(out: Path) -> list[dict]:
    path = out / "results.jsonl"
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def assert_refused(cp: subprocess.CompletedProcess, device: str, *words: str) -> None:
    assert cp.returncode == EXIT_SAFETY, (cp.returncode, cp.stdout, cp.stderr)
    assert "Traceback" not in cp.stderr
    assert device in cp.stderr, cp.stderr
    for w in words:
        assert w in cp.stderr, cp.stderr


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def fsck_clean(device: str) -> None:
    require_tools("e2fsck")
    cp = sh("e2fsck", "-n", "-f", device, check=False)
    assert cp.returncode == 0, f"fsck -n {device}: {cp.returncode}\n{cp.stdout}\n{cp.stderr}"


def blkid_type(device: str) -> str | None:
    cp = sh("blkid", "-p", "-o", "value", "-s", "TYPE", device, check=False)
    return cp.stdout.strip() or None


# --------------------------------------------------------------------------- files and other targets


def test_public_api():
    assert (safety.OK, safety.NEEDS_DESTRUCTIVE, safety.REFUSED) == ("ok", "needs --allow-destructive", "refused")
    v = safety.Verdict("/x", "file", safety.OK, ["why"])
    assert v.allowed and not safety.Verdict("/x", "block", safety.REFUSED, ["why"]).allowed
    assert SafetyError("x").exit_code == EXIT_SAFETY == 3


def test_regular_files_are_ok_and_created_when_absent(tmp_path):
    new = tmp_path / "new.dat"
    for writes in (True, False):
        v = safety.check_target(str(new), writes)
        assert v.allowed and v.kind == "file" and v.reasons
    existing = tmp_path / "old.dat"
    existing.write_bytes(b"x" * 10)
    v = safety.classify(str(existing), True)
    assert v.allowed and "overwrites" in v.reasons[0]


def test_symlinks_are_resolved_first(tmp_path):
    real = tmp_path / "real.dat"
    real.write_bytes(b"")
    link = tmp_path / "link.dat"
    link.symlink_to(real)
    assert safety.classify(str(link), True).target == str(real)
    assert safety.resolve(str(link)) == str(real)


def test_directories_character_devices_and_missing_dev_paths_are_refused(tmp_path):
    for target in (str(tmp_path), "/dev/null", "/dev/profiler-tui-no-such-disk"):
        v = safety.classify(target, False)
        assert v.verdict == safety.REFUSED and v.reasons, target
        with pytest.raises(SafetyError) as err:
            safety.check_target(target, True, yes=True, allow_destructive=True)
        assert target in str(err.value)


def test_missing_dev_path_is_never_created(tmp_path):
    with pytest.raises(SafetyError):
        safety.check_target("/dev/profiler-tui-no-such-disk", True, yes=True)
    assert not os.path.exists("/dev/profiler-tui-no-such-disk")


# --------------------------------------------------------------------------- acceptance 6: the root device


def root_device() -> str:
    src = subprocess.run(["findmnt", "-no", "SOURCE", "/"], capture_output=True, text=True).stdout.strip()
    src = src.split("[")[0]  # btrfs subvolumes: /dev/sda2[/@]
    if not src.startswith("/dev/") or not os.path.exists(src):
        pytest.skip(f"/ is not on a block device here ({src or 'unknown'})")
    return src


def test_root_device_write_plan_is_refused_and_starts_nothing(monkeypatch):
    """Acceptance 6: classify the real root device; never run anything on it."""
    dev = root_device()
    spawned: list[list[str]] = []
    real_run = subprocess.run

    def spy(argv, *a, **k):
        spawned.append(list(argv))
        return real_run(argv, *a, **k)

    monkeypatch.setattr(subprocess, "run", spy)
    v = safety.classify(dev, writes=True)
    assert v.verdict == safety.REFUSED
    assert any("root filesystem" in r for r in v.reasons), v.reasons
    with pytest.raises(SafetyError) as err:
        safety.check_target(dev, True, yes=True, allow_destructive=True)
    assert err.value.exit_code == EXIT_SAFETY and dev in str(err.value)
    assert not any("fio" in os.path.basename(a[0]) for a in spawned)


def test_root_device_parent_disk_refuses_writes():
    """Whole disk holding / (or the root device itself when / is on a whole disk)."""
    dev = root_device()
    name = safety.sys_name(dev)
    disk = safety.parent_disk(name) if name else None
    v = safety.classify(safety.dev_path(disk) if disk else dev, True)
    assert v.verdict == safety.REFUSED


# --------------------------------------------------------------------------- block devices: classifier


@needs_loop
def test_blank_loop_write_plan_ok_but_needs_yes(loop_factory):
    dev = loop_factory()
    v = safety.classify(dev.path, True)
    assert v.verdict == safety.OK and v.confirm and v.kind == "block" and v.reasons
    with pytest.raises(SafetyError, match="--yes"):
        safety.check_target(dev.path, True)
    assert safety.check_target(dev.path, True, yes=True).allowed
    assert safety.check_target(dev.path, True, allow_destructive=True).allowed  # the stronger confirmation


@needs_loop
def test_read_plan_needs_yes_and_runs_mounted(loop_factory):
    dev = loop_factory(mkfs="ext4", mount=True)
    v = safety.classify(dev.path, False)
    assert v.verdict == safety.OK and v.confirm
    assert any("mounted" in r for r in v.reasons)
    with pytest.raises(SafetyError, match="--yes") as err:
        safety.check_target(dev.path, False)
    assert dev.path in str(err.value)
    assert safety.check_target(dev.path, False, yes=True).allowed


@needs_loop
def test_mounted_loop_refused_even_with_allow_destructive(loop_factory):
    dev = loop_factory(mkfs="ext4", mount=True)
    v = safety.classify(dev.path, True)
    assert v.verdict == safety.REFUSED and any("mounted" in r for r in v.reasons)
    with pytest.raises(SafetyError, match="mounted"):
        safety.check_target(dev.path, True, yes=True, allow_destructive=True)


@needs_loop
def test_ext4_signature_needs_allow_destructive_without_udev(loop_factory):
    dev = loop_factory(mkfs="ext4")
    v = safety.classify(dev.path, True)
    assert v.verdict == safety.NEEDS_DESTRUCTIVE and "ext4" in v.reasons[0]
    with pytest.raises(SafetyError, match="--allow-destructive"):
        safety.check_target(dev.path, True, yes=True)
    assert safety.check_target(dev.path, True, allow_destructive=True).allowed
    assert safety.classify(dev.path, False).verdict == safety.OK  # reading it destroys nothing


@needs_loop
def test_partition_table_is_a_signature_and_a_blank_partition_is_not(loop_factory):
    dev = loop_factory(partitions=["16M", ""])
    v = safety.classify(dev.path, True)
    assert v.verdict == safety.NEEDS_DESTRUCTIVE and "dos" in v.reasons[0]
    p2 = safety.classify(dev.partitions[1], True)
    assert p2.verdict == safety.OK, p2.reasons


@needs_loop
def test_partitioned_disk_in_use_when_a_partition_is_mounted(loop_factory):
    dev = loop_factory(partitions=["32M", ""], mkfs="ext4", mount=True)
    v = safety.classify(dev.path, True)
    assert v.verdict == safety.REFUSED
    assert any(dev.partitions[0] in r and "mounted" in r for r in v.reasons), v.reasons
    assert safety.classify(dev.partitions[0], True).verdict == safety.REFUSED
    assert safety.classify(dev.partitions[1], True).verdict == safety.OK  # the unused sibling
    assert safety.classify(dev.path, False).verdict == safety.OK


@needs_loop
def test_swap_loop_refused(loop_factory):
    dev = loop_factory(swap=True)
    v = safety.classify(dev.path, True)
    assert v.verdict == safety.REFUSED and any("swap" in r for r in v.reasons)


@needs_loop
def test_read_only_loop_refused(loop_factory):
    dev = loop_factory(read_only=True)
    v = safety.classify(dev.path, True)
    assert v.verdict == safety.REFUSED and any("read-only" in r for r in v.reasons)
    assert safety.classify(dev.path, False).verdict == safety.OK


@needs_loop
def test_partition_of_a_read_only_disk_refused(loop_factory, tmp_path):
    require_tools("sfdisk", "partx")
    dev = loop_factory(partitions=["16M", ""])
    sh("blockdev", "--setro", dev.path)
    try:
        v = safety.classify(dev.partitions[1], True)
        assert v.verdict == safety.REFUSED and any("read-only" in r for r in v.reasons), v.reasons
    finally:
        sh("blockdev", "--setrw", dev.path, check=False)


@needs_loop
def test_holders_make_a_device_a_member(loop_factory, monkeypatch):
    """dm/md holders (no device-mapper on every test machine: the sysfs answer is faked)."""
    dev = loop_factory()
    real = safety.holders
    monkeypatch.setattr(safety, "holders", lambda name: ["dm-7"] if name == dev.name else real(name))
    v = safety.classify(dev.path, True)
    assert v.verdict == safety.REFUSED and any("/dev/dm-7" in r and "member" in r for r in v.reasons)


@needs_loop
def test_dm_holder_for_real(loop_factory):
    if not shutil.which("dmsetup") or "device-mapper" not in Path("/proc/misc").read_text():
        pytest.skip("device-mapper unavailable")
    dev = loop_factory()
    name = f"ptui-test-{os.getpid()}"
    sectors = int(sh("blockdev", "--getsz", dev.path).stdout)
    sh("dmsetup", "create", name, "--table", f"0 {sectors} linear {dev.path} 0")
    try:
        v = safety.classify(dev.path, True)
        assert v.verdict == safety.REFUSED and any("member" in r for r in v.reasons)
    finally:
        sh("dmsetup", "remove", name, check=False)


@needs_loop
def test_backing_file_of_a_loop_device_refused_for_writes(loop_factory):
    dev = loop_factory()
    v = safety.classify(str(dev.image), True)
    assert v.verdict == safety.REFUSED and dev.path in v.reasons[0]
    assert safety.classify(str(dev.image), False).allowed


@needs_loop
def test_active_swap_file_refused_for_writes(tmp_path):
    require_tools("mkswap", "swapon", "swapoff")
    f = tmp_path / "swapfile"
    with open(f, "wb") as fh:
        fh.write(b"\0" * (16 << 20))
    f.chmod(0o600)
    sh("mkswap", str(f))
    if sh("swapon", str(f), check=False).returncode != 0:
        pytest.skip("swap files not supported here")
    try:
        v = safety.classify(str(f), True)
        assert v.verdict == safety.REFUSED and "swap" in v.reasons[0]
    finally:
        sh("swapoff", str(f), check=False)


@needs_loop
def test_symlink_to_mounted_loop_resolved(loop_factory, tmp_path):
    dev = loop_factory(mkfs="ext4", mount=True)
    link = tmp_path / "disk-link"
    link.symlink_to(dev.path)
    v = safety.classify(str(link), True)
    assert v.target == dev.path and v.verdict == safety.REFUSED


@needs_loop
@pytest.mark.serial  # a bound in seconds per call
def test_check_is_fast(loop_factory):
    """The sweep engine calls check_target before every point."""
    dev = loop_factory(partitions=["16M", ""])
    for target, writes in ((dev.partitions[1], True), (dev.path, False), (dev.path, True)):
        safety.classify(target, writes)  # warm caches
        t0 = time.perf_counter()
        for _ in range(5):
            safety.classify(target, writes)
        per_call = (time.perf_counter() - t0) / 5
        # 0.5 s: over 5x the figures measured on a busy 2-core machine (12-113 ms, median 41 ms)
        assert per_call < 0.5, f"{target} writes={writes}: {per_call * 1000:.1f} ms"


# --------------------------------------------------------------------------- CLI acceptance


def mounted_ext4_with_payload(loop_factory):
    """A mounted ext4 loop device holding 1 MiB of random data, and that file's SHA-256."""
    dev = loop_factory(mkfs="ext4", mount=True)
    payload = dev.mountpoint / "keep.bin"
    payload.write_bytes(os.urandom(1 << 20))
    os.sync()
    return dev, payload, sha256(payload)


@needs_loop
@needs_cli
def test_acceptance_1_mounted_ext4_write_refused_and_data_intact(loop_factory, tmp_path, fio_log):
    dev, payload, before = mounted_ext4_with_payload(loop_factory)
    cp = run_plan(dev.path, tmp_path / "out", WRITE, "--yes", "--allow-destructive", shim=fio_log)
    assert_refused(cp, dev.path, "mounted")
    assert fio_jobs(fio_log[1]) == []
    assert results(tmp_path / "out") == []
    dev.umount()  # drop the page cache: what follows reads the device itself
    fsck_clean(dev.path)
    dev.mount("-o", "ro")
    assert sha256(payload) == before


@needs_loop
@needs_cli
def test_acceptance_2_unmounted_ext4_needs_allow_destructive(loop_factory, tmp_path, fio_log):
    dev = loop_factory(mkfs="ext4", mount=True)
    (dev.mountpoint / "keep.bin").write_bytes(os.urandom(1 << 16))
    before = sha256(dev.mountpoint / "keep.bin")
    dev.umount()
    cp = run_plan(dev.path, tmp_path / "refused", WRITE, "--yes", shim=fio_log)
    assert_refused(cp, dev.path, "--allow-destructive", "ext4")
    assert fio_jobs(fio_log[1]) == []
    assert blkid_type(dev.path) == "ext4"
    fsck_clean(dev.path)
    dev.mount("-o", "ro")
    assert sha256(dev.mountpoint / "keep.bin") == before
    dev.umount()

    cp = run_plan(dev.path, tmp_path / "destroyed", WRITE, "--allow-destructive", shim=fio_log)
    assert cp.returncode == 0, cp.stderr
    rows = results(tmp_path / "destroyed")
    assert len(rows) == 1 and rows[0]["metrics"]["write_iops"] > 0
    assert fio_jobs(fio_log[1])


@needs_loop
@needs_cli
def test_acceptance_3_whole_disk_refused_when_a_partition_is_mounted(loop_factory, tmp_path, fio_log):
    dev = loop_factory(partitions=["32M", ""], mkfs="ext4", mount=True)
    cp = run_plan(dev.path, tmp_path / "out", WRITE, "--yes", "--allow-destructive", shim=fio_log)
    assert_refused(cp, dev.path, dev.partitions[0], "mounted")
    assert fio_jobs(fio_log[1]) == []
    dev.umount()
    fsck_clean(dev.partitions[0])


@needs_loop
@needs_cli
def test_acceptance_4_swap_loop_write_refused(loop_factory, tmp_path, fio_log):
    dev = loop_factory(swap=True)
    cp = run_plan(dev.path, tmp_path / "out", WRITE, "--yes", "--allow-destructive", shim=fio_log)
    assert_refused(cp, dev.path, "swap")
    assert fio_jobs(fio_log[1]) == []
    assert dev.path in Path("/proc/swaps").read_text()
    assert blkid_type(dev.path) == "swap"


@needs_loop
@needs_cli
def test_acceptance_4_read_only_loop_write_refused(loop_factory, tmp_path, fio_log):
    dev = loop_factory(read_only=True)
    cp = run_plan(dev.path, tmp_path / "out", WRITE, "--yes", "--allow-destructive", shim=fio_log)
    assert_refused(cp, dev.path, "read-only")
    assert fio_jobs(fio_log[1]) == []


@needs_loop
@needs_cli
def test_acceptance_5_blank_loop_write_with_yes(loop_factory, tmp_path, fio_log):
    dev = loop_factory()
    cp = run_plan(dev.path, tmp_path / "noyes", WRITE, shim=fio_log)
    assert_refused(cp, dev.path, "--yes")
    assert fio_jobs(fio_log[1]) == []

    # Two points: the check before the second one sees the device after the first wrote it.
    cp = run_plan(dev.path, tmp_path / "out", [*WRITE, "--set", "bs=4k,128k"], "--yes", shim=fio_log)
    assert cp.returncode == 0, cp.stderr
    rows = results(tmp_path / "out")
    assert len(rows) == 2 and {r["kind"] for r in rows} == {"storage"}
    assert all(r["point"]["rw"] == "randwrite" and r["metrics"]["write_iops"] > 0 for r in rows)
    assert len(fio_jobs(fio_log[1])) == 2
    jobs = list((tmp_path / "out" / "raw").glob("*.fio"))
    assert jobs and f"filename={dev.path}" in jobs[0].read_text()


@needs_loop
@needs_cli
def test_acceptance_7_read_plan_on_mounted_loop_with_yes(loop_factory, tmp_path, fio_log):
    dev, payload, before = mounted_ext4_with_payload(loop_factory)

    cp = run_plan(dev.path, tmp_path / "noyes", READ, shim=fio_log)
    assert_refused(cp, dev.path, "--yes")
    assert fio_jobs(fio_log[1]) == []

    cp = run_plan(dev.path, tmp_path / "out", READ, "--yes", shim=fio_log)
    assert cp.returncode == 0, cp.stderr
    rows = results(tmp_path / "out")
    assert len(rows) == 1 and rows[0]["metrics"]["read_iops"] > 0
    assert rows[0]["metrics"]["write_iops"] == 0
    dev.umount()
    fsck_clean(dev.path)
    dev.mount("-o", "ro")
    assert sha256(payload) == before


@needs_loop
def test_mount_in_another_mount_namespace_is_caught(loop_factory, tmp_path):
    """Inside a container the host's mounts are invisible in /proc/self/mountinfo; the
    kernel's exclusive-open answer (EBUSY) still reports the device in use."""
    require_tools("unshare")
    dev = loop_factory(mkfs="ext4")
    mnt = tmp_path / "ns-mnt"
    mnt.mkdir()
    ready = tmp_path / "ready"
    proc = subprocess.Popen(["unshare", "-m", "--propagation", "private", "sh", "-c",
                             f"mount {dev.path} {mnt} && touch {ready} && exec sleep 60"],
                            start_new_session=True)
    try:
        deadline = time.monotonic() + 10
        while not ready.exists():
            assert proc.poll() is None and time.monotonic() < deadline, "mount in a new namespace failed"
            time.sleep(0.05)
        assert str(mnt) not in Path("/proc/self/mountinfo").read_text()
        v = safety.classify(dev.path, True)
        assert v.verdict == safety.REFUSED and "in use" in v.reasons[0], v.reasons
    finally:
        os.killpg(proc.pid, 9)
        proc.wait()  # the namespace, and its mount, die with its last process
    deadline = time.monotonic() + 10
    while safety.classify(dev.path, True).verdict == safety.REFUSED and time.monotonic() < deadline:
        time.sleep(0.1)


@needs_loop
def test_loop_helper_cleans_up_after_a_failed_step(tmp_path):
    from tests.helpers.loopdev import loop_device
    with pytest.raises(RuntimeError):
        with loop_device(tmp_path, partitions=["16M", ""], mount=True) as dev:  # no filesystem: mount fails
            pytest.fail("unreachable")
    image = tmp_path / "loop.img"
    assert sh("losetup", "-j", str(image)).stdout.strip() == ""
    with pytest.raises(ZeroDivisionError):
        with loop_device(tmp_path, mkfs="ext4", mount=True, name="boom") as dev:
            path, mnt = dev.path, dev.mountpoint
            1 / 0
    assert str(mnt) not in Path("/proc/self/mountinfo").read_text()
    assert sh("losetup", "-j", str(tmp_path / "boom.img")).stdout.strip() == ""
    assert path


@needs_loop
@needs_cli
@pytest.mark.serial  # a watcher must act between two 2 s points
def test_state_change_during_a_sweep_stops_it_before_the_next_point(loop_factory, tmp_path, fio_log):
    """The check runs again before each point: a device made read-only after the first
    point stops the sweep with exit 3; the completed point is kept, no further fio runs."""
    import threading

    dev = loop_factory()
    out = tmp_path / "out"
    stop = threading.Event()

    def make_read_only_after_first_point():
        while not stop.is_set():
            if len(results(out)) >= 1:
                sh("blockdev", "--setro", dev.path)
                return
            time.sleep(0.01)

    plan = ["--set", "rw=randwrite", "--set", "runtime=2", "--set", "size=16M", "--set", "bs=4k,8k,16k"]
    watcher = threading.Thread(target=make_read_only_after_first_point, daemon=True)
    watcher.start()
    try:
        cp = run_plan(dev.path, out, plan, "--yes", shim=fio_log)
    finally:
        stop.set()
        watcher.join()
        sh("blockdev", "--setrw", dev.path, check=False)
    assert_refused(cp, dev.path, "read-only")
    # Normally the second point is refused; if the watcher lost the race, the third is.
    assert 1 <= len(results(out)) < 3
    assert len(fio_jobs(fio_log[1])) < 3


@needs_loop
def test_udev_database_counts_as_signature_evidence(loop_factory, tmp_path, monkeypatch):
    """With udev (lsblk's FSTYPE/PTTYPE source) its record is evidence too; without it the probe decides."""
    dev = loop_factory()
    assert safety.classify(dev.path, True).verdict == safety.OK
    major, minor = Path(f"/sys/class/block/{dev.name}/dev").read_text().strip().split(":")
    (tmp_path / "udev").mkdir()
    (tmp_path / "udev" / f"b{major}:{minor}").write_text("E:ID_FS_TYPE=xfs\nE:ID_FS_USAGE=filesystem\n")
    monkeypatch.setattr(safety, "UDEV_DATA", str(tmp_path / "udev"))
    v = safety.classify(dev.path, True)
    assert v.verdict == safety.NEEDS_DESTRUCTIVE and "xfs filesystem (udev)" in v.reasons[0]


@needs_loop
def test_no_probe_tool_means_not_shown_blank(loop_factory, monkeypatch):
    dev = loop_factory()
    monkeypatch.setattr(safety.shutil, "which", lambda name: None)
    v = safety.classify(dev.path, True)
    assert v.verdict == safety.NEEDS_DESTRUCTIVE and "could not be probed" in v.reasons[0]
