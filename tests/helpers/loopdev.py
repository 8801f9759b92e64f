"""Loop devices built for real by a test, and always taken apart again.

    with loop_device(tmp_path, mkfs="ext4", mount=True) as dev:
        dev.path          # /dev/loopN (whole device)
        dev.fs_device     # the device that got the filesystem/swap (whole or a partition)
        dev.mountpoint    # where it is mounted, when mount=True

or, in a test, the ``loop_factory`` fixture: ``dev = loop_factory(mkfs="ext4")``.

Every step registers its undo the moment it succeeds, and the undos run in
reverse order on exit — also when a later step or the test fails: umount,
swapoff, ``partx -d``, ``losetup -d``.  Only devices this helper attached are
ever touched.  Tests using it are skipped cleanly when not root or when
losetup/loop devices are unavailable (``needs_loop``).

Notes for this machine: there is no udev, ``losetup -P`` does
not create partition nodes, ``partx -a`` does; ``sfdisk`` is in Debian's fdisk.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import tempfile
import time
import warnings
from dataclasses import dataclass, field
from pathlib import Path

import pytest

TOOLS = ("losetup",)


def _loop_unavailable() -> str | None:
    if os.geteuid() != 0:
        return "needs root to create loop devices"
    missing = [t for t in TOOLS if not shutil.which(t)]
    if missing:
        return f"{', '.join(missing)} not installed"
    if not os.path.exists("/dev/loop-control"):
        return "no /dev/loop-control (loop devices unavailable)"
    return None


LOOP_SKIP_REASON = _loop_unavailable()
needs_loop = pytest.mark.skipif(LOOP_SKIP_REASON is not None, reason=LOOP_SKIP_REASON or "")


def require_tools(*tools: str) -> None:
    """Skip the calling test when one of ``tools`` is missing."""
    missing = [t for t in tools if not shutil.which(t)]
    if missing:
        pytest.skip(f"{', '.join(missing)} not installed")


def sh(*argv: str, input: str | None = None, check: bool = True) -> subprocess.CompletedProcess:
    cp = subprocess.run(list(argv), input=input, capture_output=True, text=True, timeout=60, check=False)
    if check and cp.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)} failed ({cp.returncode}): {cp.stderr.strip() or cp.stdout.strip()}")
    return cp


@dataclass
class LoopDevice:
    path: str
    image: Path
    read_only: bool = False
    partitions: list[str] = field(default_factory=list)
    fs_device: str | None = None  # whole device or partition carrying the fs / swap
    mountpoint: Path | None = None
    swap: bool = False
    mounted: bool = False

    @property
    def name(self) -> str:
        return os.path.basename(self.path)

    def umount(self) -> None:
        """Unmount now (e.g. to fsck); clean-up then skips the umount."""
        if self.mounted:
            sh("umount", str(self.mountpoint))
            self.mounted = False

    def mount(self, *options: str) -> None:
        """Mount fs_device on mountpoint again (``mount("-o", "ro")``)."""
        if not self.mounted:
            sh("mount", *options, str(self.fs_device), str(self.mountpoint))
            self.mounted = True

    def _cleanup_mount(self) -> None:
        if self.mounted:
            _undo("umount", str(self.mountpoint))
            self.mounted = False


def _wait_for(path: str, timeout: float = 5.0) -> None:
    end = time.monotonic() + timeout
    while not os.path.exists(path):
        if time.monotonic() > end:
            raise RuntimeError(f"{path} did not appear")
        time.sleep(0.05)


def _undo(*argv: str) -> None:
    """Run a clean-up step; never raise (later undos must still run), but warn."""
    for attempt in range(10):
        cp = subprocess.run(list(argv), capture_output=True, text=True, timeout=60, check=False)
        if cp.returncode == 0:
            return
        time.sleep(0.2 * (attempt + 1))  # a device can stay busy for a moment after fio/umount
    warnings.warn(f"clean-up step {' '.join(argv)} failed: {cp.stderr.strip()}", stacklevel=2)


def _mkfs_options(fs: str) -> list[str]:
    """mkfs options that leave the kernel nothing to write later on its own.

    ext4 defers zeroing its inode tables to the ext4lazyinit thread, which updates the group
    descriptors in the first MiB about 30-40 s after mount: a test comparing an image before and
    after a refused run would see the kernel's write and blame the tool.
    """
    if fs.startswith("ext"):
        return ["-q", "-F", "-E", "lazy_itable_init=0,lazy_journal_init=0"]
    return ["-q", "-F"]


@contextlib.contextmanager
def loop_device(tmp_path: Path, *, size_mb: int = 64, partitions: list[str] | None = None,
                part: int = 1, mkfs: str | None = None, mount: bool = False, swap: bool = False,
                read_only: bool = False, name: str = "loop", ram: bool = False):
    """Attach a loop device over a fresh image file in ``tmp_path``.

    partitions: sfdisk size fields for a DOS table, e.g. ``["32M", ""]`` (rest of disk).
    part:       which partition (1-based) gets mkfs/mount/swap when partitioned.
    mkfs:       "ext4" (or any mkfs.TYPE) on the whole device or the chosen partition.
    mount:      mount that filesystem on a directory in tmp_path.
    swap:       mkswap + swapon.
    read_only:  attach with ``losetup -r`` (mkfs then goes onto the image first).
    ram:        the image lives in /dev/shm (RAM-backed: fast and steady), removed again on exit.
    """
    if LOOP_SKIP_REASON:
        pytest.skip(LOOP_SKIP_REASON)
    if read_only and (partitions or mount or swap):
        raise ValueError("a read-only loop device supports mkfs only")
    tmp_path = Path(tmp_path)
    if ram:
        shm = Path(tempfile.mkdtemp(prefix="profiler-tui-test-", dir="/dev/shm"))
        image = shm / f"{name}.img"
    else:
        image = tmp_path / f"{name}.img"
    with open(image, "wb") as f:
        f.truncate(size_mb * 1024 * 1024)
    if read_only and mkfs:
        require_tools(f"mkfs.{mkfs}")
        sh(f"mkfs.{mkfs}", *_mkfs_options(mkfs), str(image))

    with contextlib.ExitStack() as undo:
        if ram:
            undo.callback(shutil.rmtree, image.parent, True)
        argv = ["losetup", "-f", "--show"] + (["-r"] if read_only else []) + [str(image)]
        path = sh(*argv).stdout.strip()
        if not path.startswith("/dev/loop"):
            raise RuntimeError(f"losetup returned {path!r}")
        undo.callback(_undo, "losetup", "-d", path)
        dev = LoopDevice(path=path, image=image, read_only=read_only)
        target = path

        if partitions:
            require_tools("sfdisk", "partx")
            table = "label: dos\n" + "".join(f",{size}\n" for size in partitions)
            # sfdisk's re-read fails on loop devices without partscan; partx adds the nodes.
            sh("sfdisk", "-q", "--no-reread", path, input=table)
            sh("partx", "-a", path)
            undo.callback(_undo, "partx", "-d", path)
            dev.partitions = [f"{path}p{i + 1}" for i in range(len(partitions))]
            for p in dev.partitions:
                _wait_for(p)
            target = dev.partitions[part - 1]

        if mkfs and not read_only:
            require_tools(f"mkfs.{mkfs}")
            sh(f"mkfs.{mkfs}", *_mkfs_options(mkfs), target)
            dev.fs_device = target
        elif mkfs:
            dev.fs_device = target

        if mount:
            mnt = tmp_path / f"{name}-mnt"
            mnt.mkdir(exist_ok=True)
            dev.mountpoint = mnt
            dev.fs_device = target
            undo.callback(dev._cleanup_mount)
            dev.mount()

        if swap:
            require_tools("mkswap", "swapon", "swapoff")
            sh("mkswap", target)
            dev.fs_device = target
            sh("swapon", target)
            undo.callback(_undo, "swapoff", target)
            dev.swap = True

        yield dev


@pytest.fixture
def loop_factory(tmp_path):
    """``loop_factory(**options)`` → LoopDevice; every device is detached at teardown."""
    with contextlib.ExitStack() as stack:
        count = [0]

        def make(**options) -> LoopDevice:
            count[0] += 1
            options.setdefault("name", f"loop{count[0]}")
            return stack.enter_context(loop_device(tmp_path, **options))

        yield make
