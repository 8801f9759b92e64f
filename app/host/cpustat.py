"""The CPUs' busy time over a point's measured window, from /proc/stat: the results line's ``host_cpu`` part.

fio's own CPU figures (``usr_cpu``, ``sys_cpu``) are those of its job threads.  What the kernel does for them
elsewhere is not in them: io_uring's SQ-poll thread (``sqthread_poll``: fio reported usr 49.7 %, sys 0 % while
that thread kept a CPU busy), and the interrupts and softirqs that complete I/O.  The kernel's per-CPU counters
(``cpuN`` lines of /proc/stat, in USER_HZ ticks) count every CPU's time by what it did, whoever did it; read at
the two ends of the window fio measured (the same window as the ``device`` part, app.host.devstat), their busy time
says how many of the host's CPUs were busy during the point — with fio's work, the kernel's for it, and any other
process's: on a shared machine or a VM another tenant's work counts too (1.90 of 2 CPUs busy while fio's job used
36 % of one).  So fio's I/Os per busy CPU-second is the host's figure, shown beside fio's own (its job threads'
usr+sys), never as what an I/O cost (app.stats.peak).

Busy is user + nice + system + irq + softirq (guest time is already inside user and nice); idle and iowait are
not busy; steal (time the hypervisor gave another guest) is reported apart.  The CPUs counted are the point's
own (``cpus``) when it is pinned, else every online CPU (each ``cpuN`` line present at both ends): other
processes' work on them counts too.  /proc/stat is read bounded and parsed strictly: whole numbers only,
4 to 16 of them per line, each CPU once.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

from app.host.devstat import CounterWindow, FioDone
from app.host.topology import cpu_list, cpu_list_text
from app.model.keys import MAX_CPU
from app.model.records import JSONObject

PROC_STAT = Path("/proc/stat")
MAX_PROC_STAT_BYTES = 4 << 20  # 1024 CPUs' lines are ~100 KiB; the intr line after them can be long
CHUNK = 64 << 10
MIN_FIELDS, MAX_FIELDS = 4, 16  # user nice system idle (the oldest layout) … later kernels add more
_WHOLE = re.compile(rb"[0-9]{1,20}")
_CPU = re.compile(rb"cpu([0-9]{1,4})")
MIN_WINDOW_S = 0.5  # 1/100 s ticks: a CPU's busy time is known within a tick at each end, 4 % of a shorter window


@dataclass(frozen=True)
class CpuTimes:
    """One CPU's cumulative times, in ticks."""

    busy: int  # user + nice + system + irq + softirq
    steal: int


def parse_proc_stat(data: bytes) -> dict[int, CpuTimes] | None:
    """CPU number → times, from /proc/stat's text (its ``cpuN`` lines; the all-CPU ``cpu`` line and the others are
    not read).  None when the text is longer than MAX_PROC_STAT_BYTES, a ``cpuN`` line does not hold 4 to 16 whole
    numbers below 2**64, a CPU is above MAX_CPU or is listed twice, or there is no CPU line."""
    if len(data) > MAX_PROC_STAT_BYTES:
        return None
    out: dict[int, CpuTimes] = {}
    for line in data.split(b"\n"):
        fields = line.split()
        if not fields or not fields[0].startswith(b"cpu") or fields[0] == b"cpu":
            continue
        m = _CPU.fullmatch(fields[0])
        if m is None or int(m.group(1)) > MAX_CPU or int(m.group(1)) in out:
            return None
        values = fields[1:]
        if not MIN_FIELDS <= len(values) <= MAX_FIELDS or not all(_WHOLE.fullmatch(v) for v in values):
            return None
        v = [int(x) for x in values]
        if any(x >= 1 << 64 for x in v):
            return None
        v += [0] * (8 - len(v))  # an older kernel's line has no irq, softirq or steal: none counted
        out[int(m.group(1))] = CpuTimes(busy=v[0] + v[1] + v[2] + v[5] + v[6], steal=v[7])
    return out or None


def read_proc_stat(path: Path = PROC_STAT) -> dict[int, CpuTimes] | None:
    """The CPUs' times now (None when /proc/stat cannot be read or does not parse).  Reading stops at the line
    after the CPU lines (``intr``, whose counts may be long), at most MAX_PROC_STAT_BYTES + 1 bytes."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC | os.O_NONBLOCK)
    except OSError:
        return None
    chunks: list[bytes] = []
    size = 0
    try:
        while size <= MAX_PROC_STAT_BYTES:
            chunk = os.read(fd, CHUNK)
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
            if b"\nintr" in b"".join(chunks[-2:]):  # the CPU lines are all in
                break
    except OSError:
        return None
    finally:
        os.close(fd)
    data = b"".join(chunks)
    cut = data.find(b"\nintr")
    return parse_proc_stat(data[:cut + 1] if cut >= 0 else data)


def ticks_per_second() -> int:
    """USER_HZ, the unit of /proc/stat (100 on Linux whatever the kernel's own HZ)."""
    try:
        hz = os.sysconf("SC_CLK_TCK")
    except (ValueError, OSError):
        hz = 100
    return hz if 0 < hz <= 1_000_000 else 100


def host_cpu_part(cpus: tuple[int, ...] | None, begin: tuple[float, dict[int, CpuTimes], FioDone],
                  end: tuple[float, dict[int, CpuTimes], FioDone], hz: int) -> JSONObject:
    """The ``host_cpu`` part of the window from ``begin`` to ``end`` (docs/results-schema.md): ``cpus`` counted
    (None: every CPU listed at both ends)."""
    (t0, a, d0), (t1, b, d1) = begin, end
    counted = [c for c in (cpus if cpus is not None else sorted(a)) if c in a and c in b]
    window = t1 - t0
    if not counted:
        return {"unavailable": f"/proc/stat lists none of the CPUs {cpu_list_text(list(cpus or ()))} at both ends "
                               "of the window (offline)"}
    if window < MIN_WINDOW_S:
        return {"unavailable": f"the window fio measured was {window:.3f} s, too short for /proc/stat's "
                               f"1/{hz} s ticks"}
    busy = sum(b[c].busy - a[c].busy for c in counted)
    steal = sum(b[c].steal - a[c].steal for c in counted)
    if busy < 0 or steal < 0:
        return {"unavailable": "/proc/stat's CPU times went backwards during the point (a CPU went offline and "
                               "came back)"}
    busy_s, ios = busy / hz, d1.ios - d0.ios
    return {"cpus": cpu_list_text(counted), "window_s": round(window, 3), "busy_s": round(busy_s, 3),
            "steal_s": round(steal / hz, 3), "busy_cpus": round(busy_s / window, 3),
            "iops_per_busy_cpu": round(ios / busy_s, 1) if busy_s > 0 and ios >= 0 else None}


class CpuWindow(CounterWindow[dict[int, CpuTimes]]):
    """The CPUs' busy time over fio's measured window (the ``host_cpu`` part): the point's pinned CPUs
    (``cpus``, a CPU list) or, None, every online CPU."""

    what = "/proc/stat"

    def __init__(self, cpus: str | None, ramp: bool, path: Path = PROC_STAT) -> None:
        super().__init__(ramp)
        self.cpus = cpu_list(cpus) or None if cpus else None
        self.path = path
        self.hz = ticks_per_second()

    def reading(self) -> dict[int, CpuTimes] | None:
        return read_proc_stat(self.path)

    def part(self, begin: tuple[float, dict[int, CpuTimes], FioDone],
             end: tuple[float, dict[int, CpuTimes], FioDone]) -> JSONObject:
        return host_cpu_part(self.cpus, begin, end, self.hz)
