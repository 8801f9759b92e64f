"""The conditions two compared runs measured their matched points under, and which of them differ.

A verdict on a difference B − A ("real", "within noise") needs like-for-like measurements: the same point run the
same way by the same software.  ``compare`` matches points on their workload (pattern, mix, block size, queue
depth, jobs; a memory point's mode, traffic, stride, delay, buffer); everything else about how a point was measured
is a condition here, read from what the directories record:

- of each point: runtime, ramp, size, time-based, engine, direct, the stop rule (fixed time, ``precision``,
  ``steady``), the fio or memory engine version that measured it, and every other setting of the point (latency
  bound, io_uring options, CPUs, a memory point's duration, pages, placement …);
- of each run: the kernel, and the kind of storage target (a file, or a block device of its type).

The target itself and the machine are what a comparison compares, so they are no condition.  A condition recorded
by one side only (a run older than the key) is not counted as a difference: nothing says it differed.  Values are
bounded text (:func:`app.core.sanitize.clean_line`), escaped by the markdown that quotes them.
"""

from __future__ import annotations

from dataclasses import MISSING, dataclass, fields
from typing import Mapping, Sequence

from app.core.sanitize import clean_line
from app.core.units import size_text
from app.model.points import MemoryPoint, StoragePoint
from app.model.records import number
from app.report.data.model import MemoryRow, RunData, StorageRow

LIMIT = 60  # characters of a recorded value shown
LABELS = {"runtime": "runtime", "ramp_time": "ramp", "size": "size", "time_based": "time-based",
          "ioengine": "engine", "direct": "direct", "duration": "duration", "engine": "engine",
          "steady": "steady state", "precision": "precision", "cpus": "CPUs", "pages": "pages"}
SECONDS = frozenset({"runtime", "ramp_time", "duration", "steady_window", "steady_ramp", "latency_window"})
# what compare matches points on (app.cli.compare) and what only numbers a point (a replicate, a round, a group)
SKIP = frozenset({"rw", "rwmixread", "bs", "iodepth", "numjobs", "mode", "traffic", "stride", "delay", "buffer",
                  "replicate", "round", "group"})
STOP_KEYS = ("precision", "steady")  # named together as the stop rule
ORDER = ("runtime", "ramp", "stop rule", "duration", "size", "time-based", "engine", "direct", "fio version",
         "engine version", "kernel", "target kind")  # the conditions named first, in this order; then the others


@dataclass(frozen=True)
class Unlike:
    """One condition that differs between the two sides: its name and each side's value, as text."""

    name: str
    a: str
    b: str

    def text(self) -> str:
        return f"{self.name} A {self.a}, B {self.b}"


def _defaults(cls: type) -> dict[str, object]:
    """Each key of a point type with its default when absent from a point's table: a key added later (default
    None) is off when absent; a key every point records has no default here (absent: not recorded)."""
    out: dict[str, object] = {}
    for f in fields(cls):
        if f.default is not MISSING:
            out[f.name] = f.default
    return out


DEFAULTS = {StorageRow: _defaults(StoragePoint), MemoryRow: _defaults(MemoryPoint)}


def _value(key: str, v: object) -> str:
    """A recorded setting as text: seconds as "3 s", a size in binary units, on/off, else its bounded text."""
    if v is None:
        return "off" if key not in ("ramp_time",) else "none"
    if isinstance(v, bool):
        return "yes" if v else "no"
    n = number(v)
    if key in SECONDS and n is not None:
        return "none" if key == "ramp_time" and n == 0 else f"{n:g} s"
    if key == "size" and n is not None:
        return size_text(n)
    return clean_line(v if isinstance(v, str) else str(v), LIMIT)


def _name(key: str) -> str:
    """A point key as a condition's name: its label, else the key (from an untrusted line: bounded)."""
    return LABELS.get(key) or clean_line(key.replace("_", " "), 40)


def _stop_rule(point: Mapping[str, object]) -> str:
    """How the point was ended: at its runtime, at a precision, at fio's steady state (or both)."""
    parts = [f"{k} {clean_line(str(point[k]), 20)}" for k in STOP_KEYS if point.get(k) is not None]
    return " and ".join(parts) if parts else "fixed time"


def point_conditions(row: StorageRow | MemoryRow) -> dict[str, str]:
    """The conditions of one measured point (its first replicate's line), by name; a key the line does not record
    (and that has no default) is absent."""
    point = row.point
    out: dict[str, str] = {}
    for key, v in sorted(point.items()):
        if key in SKIP or key in STOP_KEYS or isinstance(v, (dict, list)):
            continue
        out[_name(key)] = _value(key, v)
    for key, default in DEFAULTS[type(row)].items():  # a later key's absence is its default (off)
        name = _name(key)
        if key not in SKIP and key not in STOP_KEYS and key not in point and default is None and name not in out:
            out[name] = _value(key, None)
    if isinstance(row, StorageRow):
        out["stop rule"] = _stop_rule(point)
    parts = row.line.parts
    version = parts.fio_version if isinstance(row, StorageRow) else parts.engine_version
    if version:
        out["fio version" if isinstance(row, StorageRow) else "engine version"] = clean_line(version, LIMIT)
    return out


def _measured(row: StorageRow | MemoryRow) -> dict[str, str]:
    """What a point's line adds to how its conditions read (not to whether they differ): the seconds a point
    stopped at a precision or at steady state measured, beside its runtime cap."""
    part = row.line.parts.precision
    after = number(part.get("after_s")) if isinstance(part, Mapping) else None
    return {} if after is None else {"runtime": f"cap, stopped after {after:g} s"}


def _text(v: object) -> str | None:
    return clean_line(v, LIMIT) if isinstance(v, str) and v.strip() else None


def run_conditions(data: RunData, storage: bool) -> dict[str, str]:
    """The conditions of a whole run for its storage points (``storage``) or its memory points: the kernel, the
    kind of storage target, the measuring tool's version (a line's own version, when it records one, is the
    point's condition instead)."""
    out: dict[str, str] = {}
    env = data.meta.environment
    system = env.system if env is not None and isinstance(env.system, Mapping) else {}
    if (kernel := _text(system.get("kernel"))) is not None:
        out["kernel"] = kernel
    info = data.meta.target_info or {}
    if storage and isinstance(info, Mapping):
        kind = _text(info.get("type"))
        if kind == "file":
            out["target kind"] = "a file"
        elif kind is not None or info.get("kind") == "block":
            out["target kind"] = f"a block device ({kind or 'disk'})"
    tools = data.meta.tools or {}
    for key in ("fio",) if storage else ("memlat", "mlc"):
        if (v := _text(tools.get(key))) is not None:
            out.setdefault("fio version" if storage else "engine version", v)
    return out


def unlike(a: Mapping[str, str], b: Mapping[str, str], more_a: Mapping[str, str] | None = None,
           more_b: Mapping[str, str] | None = None) -> list[Unlike]:
    """The conditions both sides record with different values, the main ones first (ORDER); ``more_a`` /
    ``more_b``: what each side's value is shown with (:func:`_measured`)."""
    names = sorted({*a} & {*b}, key=lambda k: (ORDER.index(k) if k in ORDER else len(ORDER), k))

    def shown(v: str, more: Mapping[str, str] | None, k: str) -> str:
        return f"{v} ({more[k]})" if more and k in more else v

    return [Unlike(k, shown(a[k], more_a, k), shown(b[k], more_b, k)) for k in names if a[k] != b[k]]


@dataclass
class Conditions:
    """Both runs, whose matched points' conditions are each point's own over its run's (a line's own value
    wins)."""

    a: RunData
    b: RunData

    def of_pair(self, ra: StorageRow | MemoryRow, rb: StorageRow | MemoryRow) -> list[Unlike]:
        """What differs between two matched points' measurements."""
        storage = isinstance(ra, StorageRow)
        return unlike({**run_conditions(self.a, storage), **point_conditions(ra)},
                      {**run_conditions(self.b, storage), **point_conditions(rb)}, _measured(ra), _measured(rb))


SHORT_NAMES = 2  # conditions named in a table cell; the rest are counted (every one is listed under the table)


def short(diffs: Sequence[Unlike]) -> str:
    """The names of the conditions that differ, for a table cell: "runtime, ramp", or "runtime, size +2" when
    more differ (a cell that lists them all made the table wider than a 120-column terminal)."""
    names = [d.name for d in diffs]
    more = len(names) - SHORT_NAMES
    return ", ".join(names[:SHORT_NAMES]) + (f" +{more}" if more > 0 else "")


def reason(diffs: Sequence[Unlike]) -> str:
    """Why a difference is not judged: the conditions, each with both values."""
    return "measured under different conditions (" + "; ".join(d.text() for d in diffs) + ")"
