"""The typed values that travel from a preset to the report: plan points and the small vocabularies
(kind, run status, safety verdict) that were plain strings before.

A *plan point* is one measurement's settings: :class:`StoragePoint` (one fio job) or
:class:`MemoryPoint` (one latency figure at one injection delay).  Presets expand into points,
the sweep hands them to a runner, results.jsonl and run.json store them as JSON tables with the
same keys in the same order (:meth:`to_dict`), and a plan read back from run.json becomes points
again (:func:`point_from_dict`, after :func:`app.plan.presets.validate_plan` has checked every value).

The enums are ``StrEnum``: each member *is* its string (``Kind.STORAGE == "storage"``), so JSON
files keep their bytes and code comparing with a literal keeps working while it is converted.
"""

from __future__ import annotations

from dataclasses import Field, dataclass, field, fields
from enum import StrEnum
from typing import Mapping, TypeAlias, get_type_hints

from app.model import keys as parse
from app.model.keys import (
    C2C_HOMES,
    C2C_KINDS,
    IOENGINES,
    KEY,
    MAX_BS,
    MAX_BUFFER,
    MAX_DELAY,
    MAX_MEMORY_SECONDS,
    MAX_NODE,
    MAX_SECONDS,
    MAX_SIZE,
    MAX_THREADS,
    MEMORY_MODES,
    MIN_BUFFER,
    MIN_MEMORY_SECONDS,
    PAGE_SIZES,
    ROLE,
    RW_MODES,
    Key,
    Role,
    Value,
    key,
    record,
)

# storage modes that may write to the target (rw/randrw even at rwmixread=100: fio opens it for writing)
WRITE_MODES = frozenset({"write", "randwrite", "rw", "randrw", "trim", "randtrim"})
# fio's engine options a storage point may set, and the ioengines that take each (fio refuses them elsewhere)
ENGINE_FLAGS: dict[str, tuple[str, ...]] = {"registerfiles": ("io_uring",), "fixedbufs": ("io_uring",),
                                            "sqthread_poll": ("io_uring",), "hipri": ("io_uring", "pvsync2")}


class Kind(StrEnum):
    STORAGE = "storage"
    MEMORY = "memory"


class RunStatus(StrEnum):
    """``status`` in run.json: planned → running → one of the endings."""

    PLANNED = "planned"
    RUNNING = "running"
    COMPLETE = "complete"
    PARTIAL = "partial"  # finished, some points failed
    INTERRUPTED = "interrupted"
    FAILED = "failed"


class Verdict(StrEnum):
    """What the safety checks say of running a plan on a target, before any confirmation."""

    OK = "ok"
    NEEDS_DESTRUCTIVE = "needs --allow-destructive"
    REFUSED = "refused"


@dataclass(frozen=True, slots=True)
class StoragePoint:
    """One fio job.  Sizes in bytes, times in seconds (an int when whole).

    Each field declares its key (:func:`app.model.keys.key`: parser, preset default, help, role): the preset
    tables, run.json's plan check, the results line's point and results.csv's columns are all read from
    these declarations.  A field with a default of None is written in a point's JSON table only when set,
    so results written before it existed keep their bytes.
    """

    rw: str = field(metadata=key(
        parse.choice(RW_MODES), "randread", "I/O pattern: " + ", ".join(RW_MODES), Role.WORKLOAD, csv=1))
    bs: int = field(metadata=key(
        parse.size(1, MAX_BS), 4096, "block size in bytes (4k, 128k, 1m), at most 64 MiB", Role.WORKLOAD, csv=3))
    rwmixread: int | None = field(metadata=key(
        parse.optional(parse.whole(0, 100)), None, "percentage of reads in rw/randrw mixes, 0 to 100", Role.WORKLOAD,
        csv=2))
    iodepth: int = field(metadata=key(
        parse.whole(1, 65536), 1, "I/Os in flight per job, 1 to 65536", Role.WORKLOAD, csv=4))
    numjobs: int = field(metadata=key(
        parse.whole(1, 1024), 1, "parallel jobs (threads of I/O), 1 to 1024", Role.WORKLOAD, csv=5))
    ioengine: str = field(metadata=key(
        parse.choice(IOENGINES), "libaio", "fio ioengine: " + ", ".join(IOENGINES), Role.DETAIL, csv=6))
    direct: bool = field(metadata=key(
        parse.boolean, True, "O_DIRECT, bypassing the page cache", Role.DETAIL, csv=7))
    runtime: float | int = field(metadata=key(
        parse.seconds(1, MAX_SECONDS), 10,
        "measured seconds per point (10, 1.5, 1500ms, 2m), 1 s to 7 days, millisecond resolution", csv=8))
    ramp_time: float | int = field(metadata=key(
        parse.seconds(0, MAX_SECONDS), 0, "seconds run before measuring, 0 to 7 days, millisecond resolution"))
    size: int = field(metadata=key(
        parse.size(1, MAX_SIZE), 1 << 30, "file size, or the region of a device exercised, at most 1 PiB"))
    time_based: bool = field(metadata=key(
        parse.boolean, True, "run for runtime even when size is covered"))
    # keys added later, each in a point's JSON table only when set (so older results keep their bytes):
    steady: str | None = field(default=None, metadata=key(
        parse.optional(parse.steady), None,
        "stop the point when fio sees steady state: iops:2%, iops_slope:0.3%, bw:2% or bw_slope:…; "
        "runtime is then the cap (default: off)", later=True))
    steady_window: float | int | None = field(default=None, metadata=key(
        parse.optional(parse.seconds(1, MAX_SECONDS)), None,
        "seconds of the steady-state window (fio's ss_dur), with steady; default 5",
        needs="steady", implied=5, later=True))
    steady_ramp: float | int | None = field(default=None, metadata=key(
        parse.optional(parse.seconds(0, MAX_SECONDS)), None,
        "seconds before the steady-state window starts collecting (fio's ss_ramp), with steady; default 2",
        needs="steady", implied=2, later=True))
    latency_bound: int | None = field(default=None, metadata=key(
        parse.optional(parse.latency_bound), None,
        "search the deepest queue (up to iodepth) whose latency percentile meets this bound, "
        "with fio's latency_target: 1ms, 500us (default: off)", Role.DETAIL, later=True))
    latency_percentile: float | int | None = field(default=None, metadata=key(
        parse.optional(parse.percentile), None, "share of I/Os that must meet latency_bound, in percent; default 99",
        needs="latency_bound", implied=99, later=True))
    latency_window: float | int | None = field(default=None, metadata=key(
        parse.optional(parse.seconds(0.1, 3600)), None,
        "seconds each queue depth is tried during the search (fio's latency_window); default 1",
        needs="latency_bound", implied=1, later=True))
    precision: str | None = field(default=None, metadata=key(
        parse.optional(parse.precision), None,
        "stop the point once the 95 % interval of mean IOPS is within this share of the mean (0.1% to 50%), "
        "after at least 10 measured seconds; runtime is then the cap (default: off)", later=True))
    invalidate: bool | None = field(default=None, metadata=key(
        parse.optional(parse.boolean), None,
        "drop the file's pages from the page cache before the point (fio's invalidate; default true); false with "
        "direct=false lets a read be answered from what an earlier point left cached", Role.DETAIL, later=True,
        fio="invalidate"))
    # io_uring's ways of spending less CPU per I/O (false is fio's default and is stored as unset)
    registerfiles: bool | None = field(default=None, metadata=key(
        parse.optional(parse.boolean), None,
        "register the file with io_uring once, not per I/O (fio's registerfiles); io_uring only", Role.DETAIL,
        later=True, fio="registerfiles"))
    fixedbufs: bool | None = field(default=None, metadata=key(
        parse.optional(parse.boolean), None,
        "register the I/O buffers with io_uring once, not mapped per I/O (fio's fixedbufs); io_uring only",
        Role.DETAIL, later=True, fio="fixedbufs"))
    sqthread_poll: bool | None = field(default=None, metadata=key(
        parse.optional(parse.boolean), None,
        "a kernel thread polls io_uring's submission queue, no system call per submission (fio's sqthread_poll; "
        "its CPU time is not in fio's usr+sys); io_uring only", Role.DETAIL, later=True, fio="sqthread_poll"))
    hipri: bool | None = field(default=None, metadata=key(
        parse.optional(parse.boolean), None,
        "polled completions (fio's hipri); io_uring or pvsync2; a point on a device without poll queues "
        "(queue/io_poll 0) is skipped", Role.DETAIL, later=True, fio="hipri"))
    layers: bool | None = field(default=None, metadata=key(
        parse.optional(parse.boolean), None,
        "trace the target's block requests with bpftrace during the point: each request's queue (plug, I/O "
        "scheduler), device and completion time, beside fio's latency (root, BTF, tracefs and bpftrace needed; "
        "default: off)", later=True))
    cpus: str | None = field(default=None, metadata=key(
        parse.optional(parse.cpus_or_node), None,
        "CPUs the jobs run on, one job per CPU (fio's cpus_allowed, cpus_allowed_policy=split): a CPU list (0-3, "
        "0,2) or node, the CPUs of the target device's NUMA node (every allowed CPU when it has none)",
        Role.DETAIL, later=True))
    rate: str | None = field(default=None, metadata=key(
        parse.optional(parse.rate), None,
        "offered load, open loop: Poisson arrivals at this many I/Os per second (20000, 20k) or at this share of "
        "X_max (50%), whatever the device has finished (fio's rate_iops, rate_process=poisson); iodepth is then "
        "the cap on I/Os in flight (default: off, a closed loop)", Role.WORKLOAD, later=True))
    xmax: int | None = field(default=None, metadata=key(
        parse.optional(parse.whole(1, parse.MAX_RATE_IOPS)), None,
        "the device's X_max in IOPS that a rate given as a share (50%) is a share of; default: the highest IOPS "
        "the plan's closed-loop points of the same workload measured", Role.DETAIL, needs="rate", later=True))
    # the round of a preset run in rounds (1, 2, …); part of the point's identity
    round: int | None = field(default=None, metadata=record(Role.SETTING))
    # the replicate of a point a preset repeats (1, 2, …; procedure key ``repeat``); part of its identity
    replicate: int | None = field(default=None, metadata=record(Role.SETTING))
    # the preset group's label; not part of the point's identity
    group: str | None = field(default=None, metadata=record(Role.SETTING))

    kind = Kind.STORAGE

    def to_dict(self) -> dict[str, PointValue]:
        return _to_dict(self)


@dataclass(frozen=True, slots=True)
class MemoryPoint:
    """One latency figure: an idle chase, or the chase beside load threads at one injection delay.

    ``delay`` and ``traffic`` are None for an idle point; ``engine`` is set on the points a runner
    records (``mlc`` or ``builtin``), never on a planned point.  Fields declare their keys as
    :class:`StoragePoint`'s do.
    """

    mode: str = field(metadata=key(
        parse.choice(MEMORY_MODES), "loaded",
        "idle (one latency figure), loaded (latency under load), peak (peak injection bandwidth of one traffic), "
        "scaling (bandwidth of N load threads), latency_matrix / bandwidth_matrix (CPU node x memory node), "
        "c2c (cache-to-cache transfer latency) or working_set (idle latency of one buffer size)",
        Role.WORKLOAD, csv=1))
    traffic: str | None = field(metadata=key(
        parse.traffic, "R", "R for all reads or an MLC -W code (W2 … W12)", Role.WORKLOAD, csv=2))
    delay: int | None = field(metadata=key(
        parse.whole(0, MAX_DELAY), 0, "injection delay between load-thread accesses, 0 to 10000000", Role.WORKLOAD,
        csv=4))
    stride: int = field(metadata=key(
        parse.stride, 64, "bytes between accesses, a power of two from 64 to 4096", Role.WORKLOAD, csv=3))
    buffer: int | None = field(metadata=key(
        parse.optional(parse.size(MIN_BUFFER, MAX_BUFFER, 1024)), None,
        "buffer per thread, whole KiB from 1 KiB to 4 GiB (default: 4x the last-level cache, at least 256 MiB)",
        Role.DETAIL, csv=5))
    duration: float | int = field(metadata=key(
        parse.seconds(MIN_MEMORY_SECONDS, MAX_MEMORY_SECONDS), 2,
        "measured seconds per point, 0.05 to 3600, millisecond resolution (MLC -t rounds up to whole s)"))
    cpus: str | None = field(metadata=key(
        parse.optional(parse.cpus), None,
        "CPU list of CPUs 0 to 1023 (0-3, 0,2,4); the first runs the latency thread", Role.DETAIL))
    tlb_locality: int | None = field(metadata=key(
        parse.tlb_locality, None,
        "latency chase within random groups of this size (256k, like multichase -T), whole KiB from 4 KiB to 1 GiB; "
        "none or 0 (default) chases the whole buffer; built-in engine only", Role.DETAIL, later=True))
    # in a point's JSON table only when set, so the lines of runs without it keep their bytes
    mem_node: int | None = field(default=None, metadata=key(
        parse.optional(parse.whole(0, MAX_NODE)), None,
        "NUMA node (0 to 1023) every buffer is bound to before its first touch, each page's node verified; "
        "none (default) leaves placement to the kernel; built-in engine only", Role.DETAIL, later=True))
    cpu_node: int | None = field(default=None, metadata=key(
        parse.optional(parse.whole(0, MAX_NODE)), None,
        "NUMA node (0 to 1023) whose CPUs run the threads, as cpus would list them (its first CPU runs the "
        "latency thread); not with cpus; none (default): cpus decides", Role.DETAIL, later=True))
    threads: int | None = field(default=None, metadata=key(
        parse.optional(parse.whole(1, MAX_THREADS)), None,
        "load threads of a scaling point, 1 to 1024: the first N CPUs of cpus (scaling only)", Role.WORKLOAD,
        later=True))
    pages: str | None = field(default=None, metadata=key(
        parse.optional(parse.choice(PAGE_SIZES)), None,
        "page size of the buffers: 2m (huge pages where the kernel allows; the default) or 4k", Role.DETAIL,
        later=True))
    c2c: str | None = field(default=None, metadata=key(
        parse.optional(parse.choice(C2C_KINDS)), None,
        "cache-to-cache transfer of a modified line (hitm, the default) or of a clean one (hit); c2c only",
        Role.WORKLOAD, later=True))
    reader_node: int | None = field(default=None, metadata=key(
        parse.optional(parse.whole(0, MAX_NODE)), None,
        "NUMA node of the reader of a remote c2c point (cpu_node is the writer's); c2c only", Role.DETAIL,
        later=True))
    home: str | None = field(default=None, metadata=key(
        parse.optional(parse.choice(C2C_HOMES)), None,
        "node a remote c2c line's memory is bound to: the writer's (default) or the reader's; with reader_node",
        Role.DETAIL, later=True))
    # the replicate of a point a preset repeats (1, 2, …; procedure key ``repeat``); part of its identity
    replicate: int | None = field(default=None, metadata=record(Role.SETTING))
    group: str | None = field(default=None, metadata=record())
    engine: str | None = field(default=None, metadata=record(csv=6))

    kind = Kind.MEMORY

    def to_dict(self) -> dict[str, PointValue]:
        return _to_dict(self)


Point: TypeAlias = StoragePoint | MemoryPoint
PointType: TypeAlias = type[StoragePoint] | type[MemoryPoint]
PointValue: TypeAlias = Value  # what a point's field holds
POINT_TYPES: dict[Kind, PointType] = {Kind.STORAGE: StoragePoint, Kind.MEMORY: MemoryPoint}


def keys_of(cls: PointType) -> dict[str, Key[PointValue]]:
    """The keys a preset may set on a point of this type, by name in declaration order."""
    return {f.name: f.metadata[KEY] for f in fields(cls) if KEY in f.metadata}


def records_of(cls: PointType) -> tuple[str, ...]:
    """The fields the tool writes and no preset sets (a group's label, the round, the engine)."""
    return tuple(f.name for f in fields(cls) if KEY not in f.metadata)


def role_of(f: Field[object]) -> Role:
    return f.metadata[KEY].role if KEY in f.metadata else f.metadata[ROLE]


def with_role(cls: PointType, *roles: Role) -> tuple[str, ...]:
    """The fields of these roles, in results.csv's column order where they have one, then declaration order."""
    chosen = [f for f in fields(cls) if role_of(f) in roles]
    return tuple(f.name for f in sorted(chosen, key=lambda f: csv_rank(f) or len(chosen) + 1))


def csv_rank(f: Field[object]) -> int | None:
    rank: int | None = f.metadata[KEY].csv if KEY in f.metadata else f.metadata.get("csv")
    return rank


def csv_columns(cls: PointType) -> tuple[str, ...]:
    """The point's columns of results.csv, in their order."""
    ranked = [(rank, f.name) for f in fields(cls) if (rank := csv_rank(f)) is not None]
    return tuple(name for _, name in sorted(ranked))


def omitted_when_unset(cls: PointType) -> frozenset[str]:
    """Fields a point's JSON table holds only when set: the ones declared with a default of None."""
    return frozenset(f.name for f in fields(cls) if f.default is None)


def later_keys(cls: PointType) -> frozenset[str]:
    """Keys added after plans were first recorded: a run.json plan without one had the key's default."""
    return frozenset(name for name, k in keys_of(cls).items() if k.later)


def implied(point: Point, name: str) -> PointValue:
    """A key's value as the point runs: what it holds, else (for a key that ``needs`` another, that is set)
    the value the key's declaration implies; fio's steady-state window is 5 s unless the point says."""
    value: PointValue = getattr(point, name)
    k = keys_of(type(point))[name]
    if value is None and k.needs is not None and getattr(point, k.needs) is not None:
        return k.implied
    return value


_JSON_TYPES: dict[object, tuple[type, ...]] = {str: (str,), int: (int,), bool: (bool,), float: (int, float)}


def json_types(cls: PointType) -> dict[str, tuple[type, ...]]:
    """Each field's Python types as JSON gives them back (``type(None)`` when it may be null): what a results
    line's point may hold for it.  An int is not a bool here, though Python says so: check ``bool`` first."""
    hints = get_type_hints(cls)
    out: dict[str, tuple[type, ...]] = {}
    for f in fields(cls):
        parts = getattr(hints[f.name], "__args__", (hints[f.name],))
        types: tuple[type, ...] = ()
        for part in parts:
            types += (type(None),) if part is type(None) else _JSON_TYPES[part]
        out[f.name] = tuple(dict.fromkeys(types))
    return out


def value_fits(types: tuple[type, ...], value: object) -> bool:
    """``value`` is one of ``types`` (from :func:`json_types`), a bool only where bool is meant."""
    if isinstance(value, bool):
        return bool in types
    return isinstance(value, types)


def point_problem(kind: Kind, point: Mapping[str, object]) -> str | None:
    """Why a results line's point table (untrusted) holds a value its field cannot (None when each fits): the
    type check of a line's point, from the fields.  null passes (an imported point may not know a setting);
    which keys a line must have and their ranges are the reader's to check."""
    types = POINT_JSON_TYPES[kind]
    for name, value in point.items():
        if name in types and value is not None and not value_fits(types[name], value):
            return f"key 'point.{name}' has the wrong type"
    return None


def _to_dict(point: Point) -> dict[str, PointValue]:
    """The JSON table of a point, keys in declaration order; the :func:`omitted_when_unset` keys only when set
    (so results.jsonl and run.json keep the bytes they had before those keys existed)."""
    optional = _OMITTED[point.kind]
    out: dict[str, PointValue] = {}
    for f in fields(point):
        value = getattr(point, f.name)
        if value is None and f.name in optional:
            continue
        out[f.name] = value
    return out


_OMITTED = {kind: omitted_when_unset(cls) for kind, cls in POINT_TYPES.items()}
# a results line's point: key → the JSON types its field holds (see point_problem)
POINT_JSON_TYPES = {kind: json_types(cls) for kind, cls in POINT_TYPES.items()}


def point_from_dict(kind: str, data: Mapping[str, object]) -> Point:
    """A point from its (already validated) JSON table; unknown keys are a TypeError."""
    cls = POINT_TYPES[Kind(kind)]
    return cls(**data)  # type: ignore[arg-type]  # each value was checked by its key's parser
