"""The typed values that travel from a preset to the report: plan points and the small vocabularies
(kind, run status, safety verdict) that were plain strings before.

A *plan point* is one measurement's settings: :class:`StoragePoint` (one fio job) or
:class:`MemoryPoint` (one latency figure at one injection delay).  Presets expand into points,
the sweep hands them to a runner, results.jsonl and run.json store them as JSON tables with the
same keys in the same order (:meth:`to_dict`), and a plan read back from run.json becomes points
again (:func:`point_from_dict`, after :func:`app.presets.validate_plan` has checked every value).

The enums are ``StrEnum``: each member *is* its string (``Kind.STORAGE == "storage"``), so JSON
files keep their bytes and code comparing with a literal keeps working while it is converted.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from enum import StrEnum
from typing import Any, TypeAlias

# storage modes that may write to the target (rw/randrw even at rwmixread=100: fio opens it for writing)
WRITE_MODES = frozenset({"write", "randwrite", "rw", "randrw", "trim", "randtrim"})


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
    """One fio job.  Sizes in bytes, times in seconds (an int when whole)."""

    rw: str
    bs: int
    rwmixread: int | None
    iodepth: int
    numjobs: int
    ioengine: str
    direct: bool
    runtime: float | int
    ramp_time: float | int
    size: int
    time_based: bool
    # keys added later, each in a point's JSON table only when set (so older results keep their bytes):
    steady: str | None = None  # fio steady-state criterion ("iops:2%"); runtime is then the cap
    steady_window: float | int | None = None  # fio's ss_dur, seconds (set when steady is)
    steady_ramp: float | int | None = None  # fio's ss_ramp, seconds (set when steady is)
    latency_bound: int | None = None  # fio's latency_target, microseconds: search the deepest queue meeting it
    latency_percentile: float | int | None = None  # share of I/Os that must meet the bound (set with the bound)
    latency_window: float | int | None = None  # fio's latency_window, seconds per queue-depth trial
    round: int | None = None  # the round of a preset run in rounds (1, 2, …); part of the point's identity
    group: str | None = None  # the preset group's label; not part of the point's identity

    kind = Kind.STORAGE

    def to_dict(self) -> dict[str, Any]:
        return _to_dict(self)


@dataclass(frozen=True, slots=True)
class MemoryPoint:
    """One latency figure: an idle chase, or the chase beside load threads at one injection delay.

    ``delay`` and ``traffic`` are None for an idle point; ``engine`` is set on the points a runner
    records (``mlc`` or ``builtin``), never on a planned point.
    """

    mode: str
    traffic: str | None
    delay: int | None
    stride: int
    buffer: int | None
    duration: float | int
    cpus: str | None
    tlb_locality: int | None
    group: str | None = None
    engine: str | None = None

    kind = Kind.MEMORY

    def to_dict(self) -> dict[str, Any]:
        return _to_dict(self)


Point: TypeAlias = StoragePoint | MemoryPoint
POINT_TYPES: dict[Kind, type[StoragePoint] | type[MemoryPoint]] = {Kind.STORAGE: StoragePoint,
                                                                      Kind.MEMORY: MemoryPoint}
# keys a point's JSON table holds only when set
_OPTIONAL = ("group", "engine", "steady", "steady_window", "steady_ramp", "latency_bound", "latency_percentile",
             "latency_window", "round")


def _to_dict(point: Point) -> dict[str, Any]:
    """The JSON table of a point, keys in declaration order; the :data:`_OPTIONAL` keys only when set
    (so results.jsonl and run.json keep the bytes they had before those keys existed)."""
    out: dict[str, Any] = {}
    for f in fields(point):
        value = getattr(point, f.name)
        if f.name in _OPTIONAL and value is None:
            continue
        out[f.name] = value
    return out


def point_from_dict(kind: str, data: dict[str, Any]) -> Point:
    """A point from its (already validated) JSON table; unknown keys are a TypeError."""
    return POINT_TYPES[Kind(kind)](**data)
