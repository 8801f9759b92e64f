"""Where a storage point's time goes below fio: its block requests traced with bpftrace (the ``layers`` part).

fio times each I/O from its submission to its completion (``lat``).  The kernel's block tracepoints split the part
below the system call into three, each timed per request (matched by its sector):

- **queue**: ``block_io_start`` → ``block_rq_issue``.  ``block_io_start`` fires in ``blk_account_io_start``, where the
  kernel starts the request's I/O accounting (after the request is allocated and its first bio added);
  ``block_rq_issue`` fires in ``blk_mq_start_request``, when the driver takes it.  Between them: the submitter's plug
  (requests held until the system call ends or the plug fills), the I/O scheduler's queue, the dispatch code.  Under
  scheduler ``none`` with a free driver tag it is short, not 0: a few hundred ns here (the plug and the dispatch code,
  and the probes' own cost).
- **device**: ``block_rq_issue`` → ``block_rq_complete`` (``blk_update_request``: the driver reports the request
  done): the time the driver and the device hold it.
- **completion**: ``block_rq_complete`` → ``block_io_done`` (``blk_account_io_done``, where the kernel ends the
  request's accounting): the requests' bios ended, each calling its owner back (for fio's direct I/O, completing its
  iocb and waking it), before the request is accounted.

The three add up to the span the device counters time (``/sys/block/X/stat``: Δticks / Δrequests, app.host.devstat): the
kernel adds ``now − rq->start_time_ns`` at ``blk_account_io_done``, with ``start_time_ns`` stamped inside the queue span
(on the 6.18 kernel measured here the counters' mean lay between issue → ``block_io_done`` and ``block_io_start`` →
``block_io_done`` in each of seven runs).  The device part alone is shorter than the counters' mean by the
completion part (0.6-2.6 µs here, 2-15 % of a RAM loop device's request).  A driver that completes requests in
batches (NVMe) takes the batch's ``now`` before completing them, so there the counters end before ``block_rq_complete``.
Kernels before 6.5 have no ``block_io_start``/``block_io_done``: there the queue part is ``block_rq_insert`` →
``block_rq_issue`` (the I/O scheduler's queue only: 0 for a request issued directly) and there is no completion part
(``queue_from`` in the part says which).  What is left of fio's latency is fio's and the kernel's submission path
(system call, page cache or filesystem, allocating the request) and fio's reaping of the completion.

Only when the kernel allows it (:func:`unavailable`): the tool runs as root, the kernel has BTF
(``/sys/kernel/btf/vmlinux``), tracefs is mounted at ``/sys/kernel/tracing`` with the block tracepoints in it, and a
``bpftrace`` no other user can change is on PATH (:func:`app.host.programs.which_trusted`).  The tool does not mount
tracefs itself: a mount changes the whole machine and outlives the run, and the tool never changes what it did not
create.  Otherwise the point's part says why in one sentence and the report falls back to the device counters' mean
(:mod:`app.host.devstat`).

The program (:func:`program`) is fixed text with the traced disk's device number written into it as two integers,
checked for range: nothing a user typed reaches it.  It filters every probe on that device number, so requests of
other devices cost one comparison each.  It prints its histograms every 0.2 s (``tick`` then the buckets), cumulative
(bpftrace clears a map from user space, some time after the probe asked: what the probes count meanwhile would be
lost, 5 % of the requests on a loaded 2-CPU machine), each interval their difference from the printing before; the
buckets keep four significant bits of a time in ns (8 per power of two: a bucket is at most 12.5 % wide) and exact
sums for the means.  Its output is hostile input all the same: held bounded (a line, the intervals kept), parsed
strictly (:class:`TraceParser`: any line that is not one of the program's own refuses the whole trace).

The tracer is started with :func:`app.host.process.spawn`: its own session, and killed by the kernel when the tool
dies (a parent-death signal), so it never outlives the tool; it is stopped with SIGINT (it prints the last part
interval) and SIGKILL after a grace.  Its own CPU time is read from /proc over the point and reported.  The probes'
time in the kernel is spent in the threads that submit and complete the I/O, not in the tracer's process, so the
share is that of its user-space side (collecting the maps every 0.2 s).  Headless: no UI library.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import signal
import time
from dataclasses import dataclass, field
from pathlib import Path

from app.core.sanitize import clean_line
from app.host.devstat import locate
from app.host.link import read_attr
from app.host.process import spawn
from app.host.programs import which_trusted
from app.model.records import JSONObject

BTF = Path("/sys/kernel/btf/vmlinux")
TRACEFS = Path("/sys/kernel/tracing")
EVENTS = ("block_rq_issue", "block_rq_complete")  # needed by both programs
ACCOUNTING = ("block_io_start", "block_io_done")  # the request's accounting (Linux 6.5): the accounted program
INSERT = "block_rq_insert"  # the older kernels' queue part starts here
SUB = 16  # a bucket key is exponent * SUB + the value's top four bits
MAX_EXP = 60  # 2**64 ns is 584 years: no bucket above this exponent
MAX_LINE = 200  # bytes of one line of the program's output; its lines are under 40
MAX_STDERR = 16 << 10
MAX_INTERVALS = 4096  # intervals kept (14 minutes of 0.2 s); at this many, each pair of neighbours is merged into one
START_S = 60.0  # seconds bpftrace may take to load, compile and attach (about 1 s here; 10-30 s in a small QEMU guest)
STOP_S = 3.0  # seconds it has after SIGINT to print its last interval and exit
INTERVAL_MS = 200  # the histograms' interval: fio's measured window is matched to within it
MAJOR_MAX = (1 << 12) - 1  # the kernel's dev_t: 12 bits of major, 20 of minor
MINOR_MAX = (1 << 20) - 1

_TICK = re.compile(rb"tick ([0-9]{1,20})")
_BUCKET = re.compile(rb"@([qdc])\[([0-9]{1,4})\]: ([0-9]{1,19})")
_SUM = re.compile(rb"@([qdc])s: ([0-9]{1,20})")
_ATTACH = re.compile(rb"Attaching [0-9]{1,4} probes?\.\.\.")


def unavailable(euid: int | None = None, btf: Path | None = None, tracefs: Path | None = None,
                bpftrace: str = "bpftrace") -> str | None:
    """Why the block requests cannot be traced here, in one sentence; None when they can."""
    btf, tracefs = btf or BTF, tracefs or TRACEFS
    if (os.geteuid() if euid is None else euid) != 0:
        return "eBPF tracing needs root and the tool is not running as root"
    if not btf.is_file():
        return f"the kernel has no BTF ({btf} is missing), which bpftrace needs"
    if not (tracefs / "events").is_dir():
        return (f"tracefs is not mounted at {tracefs} (as root: mount -t tracefs nodev {tracefs}); "
                "in a container it is not there unless the host's is mounted in")
    missing = [e for e in EVENTS if not _event(tracefs, e)]
    if missing:
        return f"the kernel has no block tracepoint {missing[0]} in {tracefs}/events/block"
    if not accounted(tracefs) and not _event(tracefs, INSERT):
        return (f"the kernel has neither the block tracepoints {ACCOUNTING[0]} and {ACCOUNTING[1]} nor {INSERT} in "
                f"{tracefs}/events/block")
    return which_bpftrace(bpftrace)[1]


def _event(tracefs: Path, name: str) -> bool:
    return (tracefs / "events" / "block" / name / "format").is_file()


def accounted(tracefs: Path | None = None) -> bool:
    """Whether the kernel traces a request's accounting (``block_io_start``/``block_io_done``, Linux 6.5): then the
    three parts add up to what the device counters time."""
    return all(_event(tracefs or TRACEFS, e) for e in ACCOUNTING)


def which_bpftrace(name: str = "bpftrace") -> tuple[str | None, str | None]:
    """(its resolved path, None), or (None, why there is none to run)."""
    path, why = which_trusted(name)
    if path is None:
        return None, why or "bpftrace is not installed (not on PATH)"
    return path, None


def traced_device(target: str, sysfs: Path | None = None) -> tuple[str, int, int] | str:
    """(name, major, minor) of the disk whose requests carry ``target``'s I/O (a partition's requests are its
    disk's: the tracepoints name the disk), or why there is none."""
    where = locate(target, sysfs)
    if isinstance(where, str):
        return where
    here = where.stat_path.parent
    if read_attr(here / "partition", 16) is not None:
        here = here.parent
    text = read_attr(here / "dev", 32) or ""
    m = re.fullmatch(r"([0-9]{1,4}):([0-9]{1,7})", text)
    if m is None or int(m.group(1)) > MAJOR_MAX or int(m.group(2)) > MINOR_MAX:
        return f"the device {where.name} has no readable device number in {here / 'dev'}"
    return here.name, int(m.group(1)), int(m.group(2))


def program(major: int, minor: int, interval_ms: int = INTERVAL_MS, accounting: bool = True) -> str:
    """The bpftrace program for the disk ``major``:``minor``, printing its histograms every ``interval_ms``
    (integers only: nothing else is written into it).  ``accounting``: the three parts from ``block_io_start`` to
    ``block_io_done``; else the older kernels' two, from ``block_rq_insert`` to ``block_rq_complete``."""
    if not (isinstance(major, int) and isinstance(minor, int) and 0 <= major <= MAJOR_MAX
            and 0 <= minor <= MINOR_MAX) or isinstance(major, bool) or isinstance(minor, bool):
        raise ValueError(f"not a device number: {major!r}:{minor!r}")
    if type(interval_ms) is not int or not 10 <= interval_ms <= 60_000:
        raise ValueError(f"not an interval in ms: {interval_ms!r}")
    dev = (major << 20) | minor  # the tracepoints' dev_t (the kernel's MKDEV)

    def bucket(var: str, name: str) -> str:
        return (f"$v = {var}; $b = (uint64)0; while ($v >= {SUB}) {{ $v = $v >> 1; $b = $b + 1; }} "
                f"@{name}[$b * {SUB} + $v] = count(); @{name}s = sum({var});")

    maps = ("q", "d", "c") if accounting else ("q", "d")
    # the maps are never cleared while tracing: bpftrace reads and clears a map from user space, after the probe
    # asked, so what the probes count between the reading and the clearing would be lost (5 % of the requests on a
    # loaded 2-CPU machine); the parser takes each interval as the difference of two cumulative printings
    flush = ("printf(\"tick %llu\\n\", nsecs); " + " ".join(f"print(@{m});" for m in maps) + " "
             + " ".join(f"print(@{m}s);" for m in maps))
    last = flush + " " + " ".join(f"clear(@{m}); clear(@{m}s);" for m in maps)  # not printed again at the exit
    if accounting:
        return "\n".join([
            f"tracepoint:block:block_io_start /args->dev == {dev}/ {{ @st[args->sector] = nsecs; }}",
            f"tracepoint:block:block_rq_issue /args->dev == {dev}/ {{",
            "  $now = nsecs; $t = @st[args->sector];",
            "  if ($t) { delete(@st[args->sector]); $q = $now - $t; " + bucket("$q", "q") + " }",
            "  @iss[args->sector] = $now;",
            "}",
            f"tracepoint:block:block_rq_complete /args->dev == {dev}/ {{",
            "  $now = nsecs; $t = @iss[args->sector];",
            "  if ($t) { delete(@iss[args->sector]); $d = $now - $t; " + bucket("$d", "d")
            + " @cmp[args->sector] = $now; }",
            "}",
            f"tracepoint:block:block_io_done /args->dev == {dev}/ {{",
            "  $now = nsecs; $t = @cmp[args->sector];",
            "  if ($t) { delete(@cmp[args->sector]); $c = $now - $t; " + bucket("$c", "c") + " }",
            "}",
            f"interval:ms:{interval_ms} {{ " + flush + " }",
            "END { " + last + " clear(@st); clear(@iss); clear(@cmp); }",
            "",
        ])
    return "\n".join([
        f"tracepoint:block:block_rq_insert /args->dev == {dev}/ {{ @ins[args->sector] = nsecs; }}",
        f"tracepoint:block:block_rq_issue /args->dev == {dev}/ {{",
        "  $t = @ins[args->sector]; if ($t) { delete(@ins[args->sector]); }",
        "  $q = $t ? nsecs - $t : (uint64)0; @iss[args->sector] = nsecs;",
        "  " + bucket("$q", "q"),
        "}",
        f"tracepoint:block:block_rq_complete /args->dev == {dev}/ {{",
        "  $t = @iss[args->sector];",
        "  if ($t) { delete(@iss[args->sector]); $d = nsecs - $t; " + bucket("$d", "d") + " }",
        "}",
        f"interval:ms:{interval_ms} {{ " + flush + " }",
        "END { " + last + " clear(@ins); clear(@iss); }",
        "",
    ])


def valid_key(k: int) -> bool:
    """Whether ``k`` is a bucket key the program can print."""
    b, v = divmod(k, SUB)
    return 0 <= k and b <= MAX_EXP and (b == 0 or v >= SUB // 2)


def bucket_bounds(k: int) -> tuple[int, int]:
    """The ns a bucket holds: [low, high)."""
    b, v = divmod(k, SUB)
    return v << b, (v + 1) << b


@dataclass
class Interval:
    """One interval of the trace: ends at ``t_ns`` (the kernel's monotonic clock, as time.monotonic_ns: its tick, or
    when the tool read it if that was later, :meth:`TraceParser.feed`)."""

    t_ns: int
    queue: dict[int, int] = field(default_factory=dict)  # bucket key → requests issued (their scheduler wait)
    device: dict[int, int] = field(default_factory=dict)  # bucket key → requests completed (their device time)
    queue_sum_ns: int = 0
    device_sum_ns: int = 0
    completion: dict[int, int] = field(default_factory=dict)  # bucket key → requests accounted (their completion)
    completion_sum_ns: int = 0

    def json(self) -> JSONObject:
        return {"t_ns": self.t_ns, "queue": {str(k): n for k, n in sorted(self.queue.items())},
                "device": {str(k): n for k, n in sorted(self.device.items())},
                "completion": {str(k): n for k, n in sorted(self.completion.items())},
                "queue_sum_ns": self.queue_sum_ns, "device_sum_ns": self.device_sum_ns,
                "completion_sum_ns": self.completion_sum_ns}


def _foreign(line: bytes) -> str:
    return f"the tracer printed a line that is not its own: {clean_line(line.decode('ascii', 'replace'), 60)}"


class TraceParser:
    """The program's output, fed in chunks as it comes: its intervals, or why it was refused (:attr:`refused`).

    Every line must be the program's own — bpftrace's "Attaching N probes..." once, ``tick N`` (N rising), a bucket
    ``@q[K]: N``/``@d[K]: N``/``@c[K]: N`` with a key the program can print, a sum ``@qs: N``/``@ds: N``/``@cs: N``
    (each once per interval), or blank; anything else or a line over :data:`MAX_LINE` bytes refuses the trace, and
    nothing more is taken from it.  The counts and sums printed are cumulative (the program never clears its maps
    while tracing): an interval holds each one's increase since the interval before, and a count or sum that
    shrinks refuses the trace.  At :data:`MAX_INTERVALS` intervals each pair of neighbours is merged (their span
    doubles), so a point of any length holds at most that many, each of at most 3 × 500 buckets."""

    def __init__(self) -> None:
        self.intervals: list[Interval] = []
        self.attached = False
        self.refused: str | None = None
        self._pending = b""
        self._arrived: int | None = None
        self._last_tick = 0
        self._sums: set[bytes] = set()
        self._seen: dict[bytes, set[int]] = {b"q": set(), b"d": set(), b"c": set()}  # keys printed this interval
        self._total: dict[bytes, dict[int, int]] = {b"q": {}, b"d": {}, b"c": {}}  # the cumulative counts
        self._total_sums: dict[bytes, int] = {b"q": 0, b"d": 0, b"c": 0}

    def _refuse(self, why: str) -> None:
        if self.refused is None:
            self.refused = why
            self._pending = b""

    def feed(self, chunk: bytes, arrived_ns: int | None = None) -> None:
        """Take a chunk of output; ``arrived_ns`` (time.monotonic_ns when it was read): an interval it ends ends no
        earlier.  bpftrace reads a printed map from user space when it gets to the probe's request, so a bpftrace
        that lags (a starved CPU) prints an interval's counts as they were when it read them: they belong to then,
        not to the tick the probe stamped."""
        if self.refused is not None:
            return
        self._arrived = arrived_ns
        data = self._pending + chunk
        lines = data.split(b"\n")
        self._pending = lines.pop()
        for line in lines:
            self._line(line)
            if self.refused is not None:
                return
        if len(self._pending) > MAX_LINE:
            self._refuse(f"the tracer printed a line longer than {MAX_LINE} bytes")

    def close(self) -> None:
        """The end of the output: a last line without its newline is taken as a line."""
        if self._pending and self.refused is None:
            self._line(self._pending)
        self._pending = b""

    def _line(self, line: bytes) -> None:
        if len(line) > MAX_LINE:
            self._refuse(f"the tracer printed a line longer than {MAX_LINE} bytes")
            return
        line = line.rstrip(b"\r")
        if not line:
            return
        if m := _TICK.fullmatch(line):
            t = int(m.group(1))
            if t >= 1 << 64 or t < self._last_tick:
                self._refuse("the tracer's clock went backwards or out of range")
            else:
                self._last_tick = t
                t = max(t, self._arrived or 0, self.intervals[-1].t_ns if self.intervals else 0)
                if len(self.intervals) >= MAX_INTERVALS:
                    self.intervals = [merged(self.intervals[i:i + 2]) for i in range(0, len(self.intervals), 2)]
                self.intervals.append(Interval(t))
                self._sums = set()
                self._seen = {k: set() for k in self._seen}
            return
        if _ATTACH.fullmatch(line) and not self.attached and not self.intervals:
            self.attached = True
            return
        if not self.intervals:
            self._refuse(_foreign(line))
            return
        now = self.intervals[-1]
        if m := _BUCKET.fullmatch(line):
            which, k, n = m.group(1), int(m.group(2)), int(m.group(3))
            hist = {b"q": now.queue, b"d": now.device}.get(which, now.completion)
            total = self._total[which]
            if not valid_key(k) or k in self._seen[which] or n >= 1 << 63 or n < total.get(k, 0):
                self._refuse(f"the tracer printed a bucket it cannot have: {clean_line(line.decode('ascii'), 60)}")
            else:
                self._seen[which].add(k)
                if n > total.get(k, 0):
                    hist[k] = n - total.get(k, 0)
                total[k] = n
            return
        if m := _SUM.fullmatch(line):
            which, n = m.group(1), int(m.group(2))
            if which in self._sums or n >= 1 << 64 or n < self._total_sums[which]:
                self._refuse(f"the tracer printed a sum it cannot have: {clean_line(line.decode('ascii'), 60)}")
            else:
                self._sums.add(which)
                n, self._total_sums[which] = n - self._total_sums[which], n
                if which == b"q":
                    now.queue_sum_ns = n
                elif which == b"d":
                    now.device_sum_ns = n
                else:
                    now.completion_sum_ns = n
            return
        self._refuse(_foreign(line))


# --- the figures of a trace ---------------------------------------------------------------------------------------


def percentile(hist: dict[int, int], q: float) -> float | None:
    """The ``q`` quantile (0-1) of a bucket histogram: the middle of the bucket it falls in (a bucket of one ns:
    its value), None for an empty one."""
    total = sum(hist.values())
    if total <= 0:
        return None
    rank = q * total
    seen = 0
    for k in sorted(hist):
        seen += hist[k]
        if seen >= rank:
            lo, hi = bucket_bounds(k)
            return float(lo) if hi - lo == 1 else (lo + hi) / 2
    lo, hi = bucket_bounds(max(hist))
    return (lo + hi) / 2


def merged(intervals: list[Interval]) -> Interval:
    """The intervals added bucket by bucket (never percentiles averaged)."""
    out = Interval(intervals[-1].t_ns if intervals else 0)
    for iv in intervals:
        for k, n in iv.queue.items():
            out.queue[k] = out.queue.get(k, 0) + n
        for k, n in iv.device.items():
            out.device[k] = out.device.get(k, 0) + n
        for k, n in iv.completion.items():
            out.completion[k] = out.completion.get(k, 0) + n
        out.queue_sum_ns += iv.queue_sum_ns
        out.device_sum_ns += iv.device_sum_ns
        out.completion_sum_ns += iv.completion_sum_ns
    return out


def _layer(hist: dict[int, int], total_ns: int) -> JSONObject:
    n = sum(hist.values())
    p50, p99 = percentile(hist, 0.5), percentile(hist, 0.99)
    return {"requests": n, "mean_ns": round(total_ns / n, 1) if n else None,
            "p50_ns": None if p50 is None else round(p50, 1), "p99_ns": None if p99 is None else round(p99, 1)}


def in_window(intervals: list[Interval], start_ns: int | None, end_ns: int | None) -> list[Interval]:
    """The intervals whose middle lies in fio's measured window (each spans the time since the tick before): the
    window is matched to within half an interval either way (0.1 s; more once a long point's were merged)."""
    out = []
    for i, iv in enumerate(intervals):
        begin = intervals[i - 1].t_ns if i else iv.t_ns - INTERVAL_MS * 1_000_000
        mid = (begin + iv.t_ns) // 2
        if (start_ns is None or mid >= start_ns) and (end_ns is None or mid < end_ns):
            out.append(iv)
    return out


@dataclass(frozen=True)
class CpuReading:
    t: float  # time.monotonic()
    cpu_s: float  # the process's user + system time


def cpu_seconds(pid: int, proc: Path = Path("/proc")) -> float | None:
    """A process's user + system CPU seconds from /proc/PID/stat, None when it cannot be read."""
    try:
        with open(proc / str(pid) / "stat", "rb") as f:
            data = f.read(4096)
    except OSError:
        return None
    rest = data[data.rfind(b")") + 2:].split()
    if len(rest) < 13 or not (rest[11].isdigit() and rest[12].isdigit()):
        return None
    return (int(rest[11]) + int(rest[12])) / os.sysconf("SC_CLK_TCK")


def layers_part(device: str, intervals: list[Interval], window: tuple[int | None, int | None],
                cpu: tuple[CpuReading, CpuReading] | None, start_cpu_s: float | None,
                accounting: bool = True) -> JSONObject:
    """The results line's ``layers`` part of a trace (docs/results-schema.md); ``accounting``: the trace was the
    three-part program's (:func:`program`)."""
    kept = in_window(intervals, *window)
    m = merged(kept)
    if sum(m.device.values()) == 0:
        return {"unavailable": f"no block request of {device} completed while fio ran: its I/O did not reach a "
                               "request of its own (the page cache answered, or a device-mapper, md or other "
                               "device passes it to the devices under it)"}
    part: JSONObject = {"source": "ebpf", "device": device, "intervals": len(kept),
                        "queue_from": ACCOUNTING[0] if accounting else INSERT,
                        "queue": _layer(m.queue, m.queue_sum_ns), "device_time": _layer(m.device, m.device_sum_ns)}
    if accounting:
        part["completion"] = _layer(m.completion, m.completion_sum_ns)
    if cpu is not None:
        (a, b) = cpu
        wall = b.t - a.t
        part["tracer_cpu_s"] = round(b.cpu_s - a.cpu_s, 3)
        part["tracer_cpu_share"] = round((b.cpu_s - a.cpu_s) / wall, 4) if wall > 0 else None
    if start_cpu_s is not None:
        part["tracer_start_cpu_s"] = round(start_cpu_s, 3)
    return part


# --- the tracer process ----------------------------------------------------------------------------------------


class BlockTracer:
    """bpftrace tracing one disk's requests over one point: :meth:`start` before fio starts (returns once the probes
    are attached), :meth:`stop` after it exits, :meth:`part` for the results line."""

    def __init__(self, path: str, device: tuple[str, int, int], accounting: bool = True) -> None:
        self.path = path
        self.name, self.major, self.minor = device
        self.accounting = accounting
        self.parser = TraceParser()
        self.proc: asyncio.subprocess.Process | None = None
        self.failed: str | None = None
        self.stderr = b""
        self._reader: asyncio.Future[None] | None = None
        self._err: asyncio.Future[None] | None = None
        self._spawned = 0.0
        self._attached: CpuReading | None = None
        self._stopped: CpuReading | None = None

    @classmethod
    def for_target(cls, target: str) -> "BlockTracer | str":
        """A tracer for ``target``'s disk, or why there is none."""
        why = unavailable()
        if why is not None:
            return why
        path, why = which_bpftrace()
        if path is None:
            return why or "bpftrace is not installed (not on PATH)"
        dev = traced_device(target)
        if isinstance(dev, str):
            return dev
        return cls(path, dev, accounted())

    async def _read_out(self) -> None:
        assert self.proc is not None and self.proc.stdout is not None
        while chunk := await self.proc.stdout.read(1 << 16):
            self.parser.feed(chunk, time.monotonic_ns())
            if self.parser.refused is not None:
                self._kill()
                return
        self.parser.close()

    async def _read_err(self) -> None:
        assert self.proc is not None and self.proc.stderr is not None
        while chunk := await self.proc.stderr.read(1 << 12):
            if len(self.stderr) < MAX_STDERR:
                self.stderr += chunk[:MAX_STDERR - len(self.stderr)]

    def _kill(self) -> None:
        if self.proc is not None and self.proc.returncode is None:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass

    def _error_text(self) -> str:
        lines = [clean_line(ln, 200) for ln in self.stderr.decode("utf-8", "replace").splitlines()]
        errs = [ln for ln in lines if ln.startswith("ERROR") and "RLIMIT_MEMLOCK" not in ln]
        errs = errs or [ln for ln in lines if ln]
        return errs[0] if errs else "no message"

    async def start(self, timeout: float = START_S) -> bool:
        """Start bpftrace and wait until its probes are attached; False (and :attr:`failed` says why) when it
        exits or does not attach within ``timeout`` seconds."""
        self._spawned = time.monotonic()
        try:
            self.proc = await spawn(self.path, "-e", program(self.major, self.minor, accounting=self.accounting))
        except OSError as e:
            self.failed = f"bpftrace could not be started: {e.strerror or e}"
            return False
        self._reader = asyncio.ensure_future(self._read_out())
        self._err = asyncio.ensure_future(self._read_err())
        deadline = time.monotonic() + timeout
        while not self.parser.attached:
            if self._reader.done() or self.parser.refused is not None:
                await self.close()
                self.failed = f"bpftrace exited before it traced: {self._error_text()}"  # part() names a refusal
                return False
            if time.monotonic() > deadline:
                await self.close()
                self.failed = f"bpftrace did not attach its probes within {timeout:g} s"
                return False
            await asyncio.sleep(0.05)
        cpu = cpu_seconds(self.proc.pid)
        if cpu is not None:
            self._attached = CpuReading(time.monotonic(), cpu)
        return True

    async def stop(self) -> None:
        """SIGINT (it prints the last part interval and exits), SIGKILL after :data:`STOP_S`; its CPU time read
        first."""
        if self.proc is None:
            return
        cpu = cpu_seconds(self.proc.pid)
        if cpu is not None:
            self._stopped = CpuReading(time.monotonic(), cpu)
        if self.proc.returncode is None:
            try:
                os.kill(self.proc.pid, signal.SIGINT)
            except ProcessLookupError:
                pass
        try:
            await asyncio.wait_for(asyncio.shield(self._done()), STOP_S)
        except asyncio.TimeoutError:
            pass
        await self.close()

    async def _done(self) -> None:
        assert self.proc is not None
        await self.proc.wait()
        for task in (self._reader, self._err):
            if task is not None:
                await task

    async def close(self) -> None:
        """Stop it now (SIGKILL to its group) and wait for it; safe to call twice."""
        if self.proc is None:
            return
        self._kill()
        await self.proc.wait()
        for task in (self._reader, self._err):
            if task is not None and not task.done():
                task.cancel()
                try:
                    await task
                except (asyncio.CancelledError, Exception):
                    pass

    def part(self, window: tuple[float | None, float | None]) -> JSONObject:
        """The ``layers`` part over fio's window (monotonic seconds; None: open on that side)."""
        if self.parser.refused is not None:
            return {"unavailable": f"the tracer's output was refused: {self.parser.refused}"}
        if self.failed is not None:
            return {"unavailable": self.failed}
        ns = tuple(None if t is None else int(t * 1e9) for t in window)
        cpu = (self._attached, self._stopped) if self._attached and self._stopped else None
        start_cpu = self._attached.cpu_s if self._attached else None
        return layers_part(self.name, self.parser.intervals, (ns[0], ns[1]), cpu, start_cpu, self.accounting)

    def intervals_jsonl(self) -> str:
        """Each interval's histograms, one JSON line each (the point's raw ``.layers.jsonl``)."""
        return "".join(json.dumps(iv.json(), separators=(",", ":")) + "\n" for iv in self.parser.intervals)


async def start_tracing(target: str) -> BlockTracer | str:
    """The tracer of ``target``'s disk, started (a start that failed says why in its part), or why there is none."""
    tracer = BlockTracer.for_target(target)
    if isinstance(tracer, BlockTracer):
        await tracer.start()
    return tracer


def tracing_part(tracer: BlockTracer | str | None, window_start: float | None) -> JSONObject | None:
    """The ``layers`` part of a point (None: not asked for); the window from ``window_start`` (monotonic seconds,
    fio's first status dump with I/O, as the device counters') to the tracer's stop."""
    if tracer is None:
        return None
    if isinstance(tracer, str):
        return {"unavailable": tracer}
    return tracer.part((window_start, None))
