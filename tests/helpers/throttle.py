"""A block device that saturates for real at a known rate: the kernel's blkio throttle (cgroup v1
``blkio.throttle.*_iops_device``, or cgroup v2 ``io.max``) on a loop device the test made, applied only to
the processes the test starts in that cgroup.

    with throttled(dev.path, read_iops=20000, write_iops=20000) as enter:
        subprocess.run(argv, preexec_fn=enter)   # the child and its fio run in the throttled cgroup

Under the limit, IOPS stop growing with queue depth and latency grows in proportion to it (Little's law):
what a saturated drive does, without the noise of a shared CPU.  The cgroup is removed on exit.
"""

from __future__ import annotations

import contextlib
import os
import time
from pathlib import Path
from typing import Callable, Iterator

import pytest

V1 = Path("/sys/fs/cgroup/blkio")
V2 = Path("/sys/fs/cgroup")


def _dev_numbers(device: str) -> str:
    st = os.stat(device)
    return f"{os.major(st.st_rdev)}:{os.minor(st.st_rdev)}"


def _write(path: Path, text: str) -> None:
    with open(path, "w") as f:
        f.write(text)


@contextlib.contextmanager
def throttled(device: str, read_iops: int, write_iops: int) -> Iterator[Callable[[], None]]:
    numbers = _dev_numbers(device)
    name = f"profiler-tui-test-{os.getpid()}-{time.monotonic_ns()}"
    if (V1 / "blkio.throttle.read_iops_device").exists():
        group = V1 / name
        group.mkdir()
        try:
            _write(group / "blkio.throttle.read_iops_device", f"{numbers} {read_iops}")
            _write(group / "blkio.throttle.write_iops_device", f"{numbers} {write_iops}")
        except OSError as e:
            group.rmdir()
            pytest.skip(f"the blkio throttle cannot be set here ({e})")
    elif ("io" in (V2 / "cgroup.controllers").read_text(errors="replace").split()
          if (V2 / "cgroup.controllers").exists() else False):
        group = V2 / name
        group.mkdir()
        try:
            _write(group / "io.max", f"{numbers} riops={read_iops} wiops={write_iops}")
        except OSError as e:
            group.rmdir()
            pytest.skip(f"io.max cannot be set here ({e})")
    else:
        pytest.skip("no blkio throttle (cgroup v1 blkio or v2 io controller) on this machine")
    enter = _joiner(group)

    try:
        yield enter
    finally:
        _remove_group(group)


@contextlib.contextmanager
def write_bps_throttle(device: str, write_bps: int) -> Iterator[tuple[Callable[[], None], Callable[[int], None]]]:
    """Like :func:`throttled`, for write bandwidth, and changeable while the test's processes run: yields the
    child's ``preexec_fn`` and ``set_write_bps(n)`` — a device whose write speed falls mid-run, as a drive's
    does when its write cache fills."""
    numbers = _dev_numbers(device)
    name = f"profiler-tui-test-bps-{os.getpid()}-{time.monotonic_ns()}"
    if (V1 / "blkio.throttle.write_bps_device").exists():
        group = V1 / name
        group.mkdir()

        def set_bps(n: int) -> None:
            _write(group / "blkio.throttle.write_bps_device", f"{numbers} {n}")
    elif (V2 / "cgroup.controllers").exists() and "io" in (V2 / "cgroup.controllers").read_text().split():
        group = V2 / name
        group.mkdir()

        def set_bps(n: int) -> None:
            _write(group / "io.max", f"{numbers} wbps={n}")
    else:
        pytest.skip("no blkio throttle (cgroup v1 blkio or v2 io controller) on this machine")
    enter = _joiner(group)
    try:
        set_bps(write_bps)
        yield enter, set_bps
    finally:
        _remove_group(group)


@contextlib.contextmanager
def iops_throttle(device: str) -> Iterator[tuple[Callable[[], None], Callable[[int], None]]]:
    """A cgroup with no limit yet whose read and write IOPS limit can be set and lifted while the test's
    processes run: yields the child's ``preexec_fn`` and ``set_iops(n)`` (0 lifts the limit) — a device that
    stalls for a few seconds mid-point."""
    numbers = _dev_numbers(device)
    name = f"profiler-tui-test-iops-{os.getpid()}-{time.monotonic_ns()}"
    if (V1 / "blkio.throttle.read_iops_device").exists():
        group = V1 / name
        group.mkdir()

        def set_iops(n: int) -> None:  # v1: a limit of 0 removes the rule
            _write(group / "blkio.throttle.read_iops_device", f"{numbers} {n}")
            _write(group / "blkio.throttle.write_iops_device", f"{numbers} {n}")
    elif (V2 / "cgroup.controllers").exists() and "io" in (V2 / "cgroup.controllers").read_text().split():
        group = V2 / name
        group.mkdir()

        def set_iops(n: int) -> None:
            limit = n or "max"
            _write(group / "io.max", f"{numbers} riops={limit} wiops={limit}")
    else:
        pytest.skip("no blkio throttle (cgroup v1 blkio or v2 io controller) on this machine")
    try:
        yield _joiner(group), set_iops
    finally:
        _remove_group(group)


def _joiner(group: Path) -> Callable[[], None]:
    procs = str(group / "cgroup.procs")

    def enter() -> None:  # in the child, between fork and exec
        with open(procs, "w") as f:
            f.write(str(os.getpid()))

    return enter


def _remove_group(group: Path) -> None:
    deadline = time.monotonic() + 10
    while True:
        try:
            group.rmdir()
            return
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.1)  # its last process is still exiting
