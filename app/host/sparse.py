"""A target file whose blocks were never written: its reads are answered by the filesystem (zeros, no device
I/O), so every read figure measured on it is the page cache's or the filesystem's, never the device's.  The
results line's ``not-on-device`` flag says so after the point; this module says it before the run.

The file is looked at as the run opens its target: by its resolved path (the run checked that no other user's
link is on the way), opened read-only without following a link and without blocking (a FIFO swapped in never
stalls the check), never read: only its allocation map is asked, with ``lseek(SEEK_DATA/SEEK_HOLE)`` (an
unwritten extent that a filesystem reserved with fallocate counts as a hole there too), or ``st_blocks`` where
the filesystem has no such seek.
"""

from __future__ import annotations

import errno
import os
import stat
from typing import Sequence

from app.model.points import Point, StoragePoint

HOLE_SHARE = 0.5  # a file of which more than this share of the region read is holes is named before the run
MAX_EXTENTS = 100_000  # extents walked at most (a file of a million fragments: the rest counts as data)
READING = frozenset({"read", "randread"})
MIXED = frozenset({"rw", "randrw"})


def _size(n: int) -> str:
    return f"{n / (1 << 20):.0f} MiB" if n >= 1 << 20 else f"{n / 1024:.0f} KiB"


def reads(point: Point) -> bool:
    """Whether a storage point reads its target (a mix reads unless it asks 0 % reads)."""
    return isinstance(point, StoragePoint) and (point.rw in READING or (point.rw in MIXED and point.rwmixread != 0))


def data_bytes(fd: int, end: int) -> int:
    """Bytes of ``[0, end)`` of the open file ``fd`` that hold written data (SEEK_DATA/SEEK_HOLE; st_blocks where
    the filesystem has no such seek)."""
    data, at = 0, 0
    try:
        for _ in range(MAX_EXTENTS):
            if at >= end:
                return data
            try:
                start = os.lseek(fd, at, os.SEEK_DATA)
            except OSError as e:
                if e.errno == errno.ENXIO:  # no data after ``at``
                    return data
                raise
            if start >= end:
                return data
            stop = min(os.lseek(fd, start, os.SEEK_HOLE), end)
            data += stop - start
            at = stop
        return data + max(0, end - at)
    except (OSError, AttributeError):  # no SEEK_DATA here: what the filesystem allocated
        return min(end, os.fstat(fd).st_blocks * 512)


def hole_warning(target: str | None, plan: Sequence[Point], precondition: str = "none") -> str | None:
    """One sentence naming ``target`` when the plan reads it and more than HOLE_SHARE of the region its read points
    cover was never written; None otherwise (no target, a device, a file that does not exist yet — fio writes
    the file it lays out —, a plan that only writes, or preconditioning, which writes the region first)."""
    sizes = [p.size for p in plan if reads(p) and isinstance(p, StoragePoint)]
    if target is None or not sizes or precondition != "none":
        return None
    flags = os.O_RDONLY | os.O_CLOEXEC | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_NOCTTY", 0)
    try:
        fd = os.open(target, flags)
    except OSError:
        return None  # absent (the tool creates it), or not ours to look at: the run's own checks say why
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_size == 0:
            return None
        end = min(st.st_size, max(sizes))
        data = data_bytes(fd, end)
    except OSError:
        return None
    finally:
        os.close(fd)
    holes = end - data
    if holes <= HOLE_SHARE * end:
        return None
    return (f"{target}: its blocks are unwritten ({_size(holes)} of the {_size(end)} the "
            "plan reads are holes): reads never reach the device, and their figures are the filesystem's. Fill it "
            "first (a write run on it, or dd), or let the tool fill it: --set precondition=sequential writes the "
            "region twice before the first point.")
