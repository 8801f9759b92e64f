"""The device's own word: the block-layer counters of a point's target device around its measured window.

fio reports the bytes it moved; the kernel counts, per block device, the I/Os it completed, the sectors they
carried and the milliseconds they took (``/sys/dev/block/MAJ:MIN/stat``, Documentation/block/stat.rst). Read
at the start and the end of the window fio measured, their increase says whether the I/O fio timed reached
the device at all (a page cache or another cache answered: ``not-on-device``) or was multiplied on its way
(read-modify-write, journal, parity: ``amplified``); the flags are raised by app.stats.validity from the ``device``
part built here.

Which device: a block-device target is its own (a partition has its own counters; a loop device is the loop
device, not what backs it); a regular file is the device under its filesystem (its ``st_dev``). A filesystem
with no block device of its own (tmpfs, overlay, NFS, btrfs's anonymous device numbers) has no counters to
read: the part says so in one sentence.

The stat file is opened once, when the point starts, and read again (``pread`` at 0) at every reading: the
counters are those of the device that was there when the point started, or none (a device removed meanwhile
fails its read). Only sysfs and /proc are opened (no user can write either); what they hold is read bounded
and parsed strictly all the same: whole numbers only, 11, 15 or at least 17 of them (the kernel's layouts).
"""

from __future__ import annotations

import os
import re
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Generic, TypeVar

from app.host.link import device_number, read_attr, sysfs_root
from app.model.records import JSONObject

# a direction in which fio moved less is not judged (other I/O would dominate it): the device checks' floor
MIN_DEVICE_BYTES = 1 << 20
SECTOR = 512  # the stat file counts 512-byte sectors, whatever the device's logical block size
MAX_STAT_BYTES = 4096  # a stat line is under 200 bytes; a file longer than this is not one
MAX_MOUNTINFO_BYTES = 4 << 20
MAX_FIELD_DIGITS = 20  # 2**64 has 20 digits: the kernel's counters are unsigned long
FIELD_COUNTS = (11, 15)  # before 4.18: 11 fields; 4.18: + 4 discard fields; 5.5: + 2 flush fields (17)
MIN_FIELDS_NOW = 17  # later kernels may add more: the first 17 keep their meaning
MAX_FIELDS = 64
_WHOLE = re.compile(rb"[0-9]{1,%d}" % MAX_FIELD_DIGITS)
MAX_NAME = 64


@dataclass(frozen=True)
class Stat:
    """The counters of one reading (cumulative since the device appeared; times in ms)."""

    read_ios: int
    read_sectors: int
    read_ms: int
    write_ios: int
    write_sectors: int
    write_ms: int
    busy_ms: int  # io_ticks: milliseconds the device had at least one I/O in flight
    in_queue_ms: int  # time_in_queue: milliseconds of I/O in flight, summed over the I/Os


def parse_stat(data: bytes) -> Stat | None:
    """The counters of a stat file's text, None unless it is one line of 11, 15 or 17 to 64 whole numbers below
    2**64."""
    if len(data) > MAX_STAT_BYTES or b"\n" in data.rstrip(b"\n"):
        return None
    fields = data.split()
    if not (len(fields) in FIELD_COUNTS or MIN_FIELDS_NOW <= len(fields) <= MAX_FIELDS):
        return None
    if not all(_WHOLE.fullmatch(f) for f in fields):
        return None
    v = [int(f) for f in fields]
    if any(n >= 1 << 64 for n in v):
        return None
    return Stat(read_ios=v[0], read_sectors=v[2], read_ms=v[3], write_ios=v[4], write_sectors=v[6], write_ms=v[7],
                busy_ms=v[9], in_queue_ms=v[10])


@dataclass(frozen=True)
class Located:
    """The block device whose counters stand for a target."""

    name: str  # its kernel name (vda1, loop3, dm-0)
    source: str  # "target": the target is this device; "filesystem": the device under the target file
    stat_path: Path


def _filesystem_of(number: tuple[int, int], mountinfo: Path = Path("/proc/self/mountinfo")) -> str | None:
    """The type of the mounted filesystem whose device number is ``number`` (/proc/self/mountinfo), or None."""
    try:
        with open(mountinfo, "rb") as f:
            text = f.read(MAX_MOUNTINFO_BYTES)
    except OSError:
        return None
    want = f"{number[0]}:{number[1]}".encode()
    for line in text.splitlines():
        parts = line.split()
        if len(parts) > 2 and parts[2] == want and b"-" in parts:
            sep = parts.index(b"-")
            if len(parts) > sep + 1 and re.fullmatch(rb"[A-Za-z0-9_.-]{1,32}", parts[sep + 1]):
                return parts[sep + 1].decode()
    return None


def locate(target: str, sysfs: Path | None = None) -> Located | str:
    """The device whose counters stand for ``target``, or one sentence saying why there is none."""
    try:
        block = stat.S_ISBLK(os.stat(target).st_mode)
    except OSError:
        block = False  # a file fio creates: the filesystem of its nearest existing parent
    number = device_number(target)
    if number is None:
        return f"{target} and its parent directories cannot be looked at, so its device is unknown"
    if number[0] == 0:
        fs = _filesystem_of(number)
        named = f"on {fs}, " if fs else ""
        return (f"{target} is {named}a filesystem with no block device of its own (device number "
                f"{number[0]}:{number[1]}): there are no device counters to read")
    root = sysfs or sysfs_root()
    link = root / "dev" / "block" / f"{number[0]}:{number[1]}"
    try:
        here = link.resolve(strict=True)
    except (OSError, RuntimeError):
        return f"the device {number[0]}:{number[1]} under {target} has no {link} (not a block device sysfs knows)"
    name = here.name
    if not (0 < len(name) <= MAX_NAME and name.isprintable()):
        return f"the device {number[0]}:{number[1]} under {target} has a sysfs name that cannot be shown"
    return Located(name, "target" if block else "filesystem", here / "stat")


class StatFile:
    """A device's stat file, held open from the point's start: each :meth:`read` is a pread of the same file."""

    def __init__(self, where: Located) -> None:
        self.where = where
        self.fd: int | None = os.open(where.stat_path, os.O_RDONLY | os.O_CLOEXEC | os.O_NONBLOCK)
        if not stat.S_ISREG(os.fstat(self.fd).st_mode):
            self.close()
            raise OSError(f"{where.stat_path} is not a regular file")

    def read(self) -> Stat | None:
        """The counters now, None when the file cannot be read (the device went away) or does not parse."""
        if self.fd is None:
            return None
        try:
            return parse_stat(os.pread(self.fd, MAX_STAT_BYTES + 1, 0))
        except OSError:
            return None

    def close(self) -> None:
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None


def open_counters(target: str, sysfs: Path | None = None) -> StatFile | str:
    """The target device's stat file, opened and read once to check it; or why it cannot be read."""
    where = locate(target, sysfs)
    if isinstance(where, str):
        return where
    try:
        counters = StatFile(where)
    except OSError as e:
        return f"the counters of {where.name} ({where.stat_path}) cannot be opened: {e.strerror or e}"
    if counters.read() is None:
        counters.close()
        return f"the counters of {where.name} ({where.stat_path}) do not read as a block-device stat line"
    return counters


@dataclass(frozen=True)
class Mark:
    """One end of the window: the device's counters and fio's cumulative bytes per direction at one moment."""

    t: float  # seconds on a monotonic clock
    stat: Stat
    fio_read: int
    fio_write: int


def _ratio(device: int, fio: int) -> float | None:
    return round(device / fio, 4) if fio > 0 else None


def _mb(n: int) -> str:
    return f"{n / 1e6:,.1f} MB"


def _note(name: str, dev_read: int, dev_write: int, fio_read: int, fio_write: int) -> str | None:
    """What the counters say that no flag does: a direction fio (nearly) did not move in, the device did."""
    out = []
    for verb, dev_b, fio_b in (("read", dev_read, fio_read), ("wrote", dev_write, fio_write)):
        if fio_b < MIN_DEVICE_BYTES <= dev_b:
            out.append(f"{name} {verb} {_mb(dev_b)} while fio {verb} {_mb(fio_b)}")
    if not out:
        return None
    return ("; ".join(out) + ": I/O fio did not issue (other processes on the device, the filesystem's own, or "
            "read-modify-write) — the counters are the whole device's")


def device_part(where: Located, start: Mark, end: Mark) -> JSONObject:
    """The results line's ``device`` part of the window from ``start`` to ``end`` (docs/results-schema.md)."""
    a, b = start.stat, end.stat
    d = {k: getattr(b, k) - getattr(a, k) for k in Stat.__dataclass_fields__}
    fio_read, fio_write = end.fio_read - start.fio_read, end.fio_write - start.fio_write
    if any(v < 0 for v in d.values()):
        return {"unavailable": f"the counters of {where.name} went backwards during the point: the device was "
                               "replaced or its counters reset"}
    if fio_read < 0 or fio_write < 0:
        return {"unavailable": "fio's counters restarted after its last status dump: its bytes cover less than "
                               "the window, which cannot be matched"}
    read_b, write_b = d["read_sectors"] * SECTOR, d["write_sectors"] * SECTOR
    ios, ms = d["read_ios"] + d["write_ios"], d["read_ms"] + d["write_ms"]
    part: JSONObject = {
        "name": where.name, "source": where.source,
        "read_bytes": read_b, "write_bytes": write_b, "read_ios": d["read_ios"], "write_ios": d["write_ios"],
        "ios": ios, "read_ms": d["read_ms"], "write_ms": d["write_ms"], "busy_ms": d["busy_ms"],
        "in_queue_ms": d["in_queue_ms"], "window_s": round(max(0.0, end.t - start.t), 3),
        "fio_read_bytes": fio_read, "fio_write_bytes": fio_write,
        "read_ratio": _ratio(read_b, fio_read), "write_ratio": _ratio(write_b, fio_write),
        "lat_mean_ns": round(ms * 1e6 / ios, 1) if ios else None,
    }
    note = _note(where.name, read_b, write_b, fio_read, fio_write)
    if note:
        part["note"] = note
    return part


NO_DUMP = "fio gave no status dump while its I/O ran, so the window it measured has no start to read the counters at"
NO_RESET = ("ramp_time was asked but fio's counters were not seen to restart when it ended, so the window fio "
            "measured cannot be matched")

C = TypeVar("C")  # one reading of a window's counters


@dataclass(frozen=True)
class FioDone:
    """fio's cumulative figures in one status dump (or its final document), over all jobs."""

    read_bytes: int
    write_bytes: int
    ios: int


class CounterWindow(Generic[C]):
    """Counters read over fio's measured window, in one point: :meth:`start` at fio's first status dump after its
    I/O starts, and again at every restart of its counters (the end of ramp_time), each with fio's cumulative
    figures in that dump; :meth:`finish` after fio exits, with its final figures.  File layout and ramp I/O fall
    before the last start: they never count.  A subclass reads its counters (:meth:`reading`, taken as soon as
    fio's output arrives) and makes its part of the two ends (:meth:`part`)."""

    what = "the counters"  # named in the sentences of an unavailable part

    def __init__(self, ramp: bool) -> None:
        self.ramp = ramp
        self.begin: tuple[float, C, FioDone] | None = None
        self.restarted = False
        self.failed: str | None = None

    def unavailable(self) -> str | None:
        """Why there are no counters to read at all (None: there are)."""
        return None

    def reading(self) -> C | None:
        raise NotImplementedError

    def part(self, begin: tuple[float, C, FioDone], end: tuple[float, C, FioDone]) -> JSONObject:
        raise NotImplementedError

    def close(self) -> None:
        pass

    def start(self, now: C | None, t: float, done: FioDone, reset: bool) -> None:
        if self.unavailable() is not None:
            return
        if now is None:
            self.failed = f"{self.what} could not be read at the window's start"
            return
        self.begin = (t, now, done)
        self.restarted = self.restarted or reset

    def finish(self, t: float, done: FioDone) -> JSONObject:
        """The window's part (``{"unavailable": why}`` when the window cannot be matched); closes what it holds."""
        why = self.unavailable()
        if why is not None:
            return {"unavailable": why}
        try:
            now = self.reading()
        finally:
            self.close()
        if self.failed:
            return {"unavailable": self.failed}
        if self.begin is None:
            return {"unavailable": NO_DUMP}
        if self.ramp and not self.restarted:
            return {"unavailable": NO_RESET}
        if now is None:
            return {"unavailable": f"{self.what} could not be read after fio exited"}
        return self.part(self.begin, (t, now, done))


class DeviceWindow(CounterWindow[Stat]):
    """The device's counters over fio's measured window (the ``device`` part)."""

    def __init__(self, counters: StatFile | str, ramp: bool) -> None:
        super().__init__(ramp)
        self.counters = counters
        if isinstance(counters, StatFile):
            self.what = f"the counters of {counters.where.name}"

    def unavailable(self) -> str | None:
        return self.counters if isinstance(self.counters, str) else None

    def reading(self) -> Stat | None:
        """The counters now (None without a device)."""
        return self.counters.read() if isinstance(self.counters, StatFile) else None

    def part(self, begin: tuple[float, Stat, FioDone], end: tuple[float, Stat, FioDone]) -> JSONObject:
        assert isinstance(self.counters, StatFile)
        (t0, a, d0), (t1, b, d1) = begin, end
        return device_part(self.counters.where, Mark(t0, a, d0.read_bytes, d0.write_bytes),
                           Mark(t1, b, d1.read_bytes, d1.write_bytes))

    def close(self) -> None:
        if isinstance(self.counters, StatFile):
            self.counters.close()


NO_POLL_QUEUES = "the device has no poll queues (queue/io_poll is 0): polled completions would not be measured"


def poll_problem(target: str, sysfs: Path | None = None) -> str | None:
    """Why a polled point (fio's hipri) is not run on ``target``, None when its device's queue has poll queues
    (``queue/io_poll`` is 1; a partition's is its disk's).  fio with hipri on a queue without poll queues runs, and
    its figures are not those of polled completions: such a point is skipped, never measured."""
    where = locate(target, sysfs)
    if isinstance(where, str):
        return f"{where}, so its poll queues cannot be read: polled completions would not be measured"
    device = where.stat_path.parent
    for d in (device, device.parent):  # a partition's queue is its disk's
        text = read_attr(d / "queue" / "io_poll", 8)
        if text == "1":
            return None
        if text == "0":
            return NO_POLL_QUEUES
    return (f"{where.name} has no readable queue/io_poll, so its poll queues are unknown: polled completions would "
            "not be measured")
