"""Presets (docs/presets.md): TOML files validated on load, expanded into a plan of typed points
(:mod:`app.points`).

A preset file::

    name = "quick"
    kind = "storage"            # or "memory"
    description = "..."

    [settings]                  # scalars shared by every point
    runtime = 5

    [matrix]                    # axes: the plan is their cartesian product
    bs = ["4k", "128k"]

or, instead of ``[matrix]``, several ``[[group]]`` tables, each a small matrix of
its own (a scalar is a one-value axis) with an optional ``label``.  ``--set``
overrides apply to every group; identical points are merged.

Every value is checked by the parser of its key; errors name file, key and value.  The same
parsers re-check a plan read back from a results directory (:func:`validate_plan`).  Limits
(docs/presets.md): a preset file is at most 1 MiB, a plan at most 100 000 points, and every
numeric key has an upper bound named in its help text.
"""

from __future__ import annotations

import itertools
import json
import math
import os
import re
import stat
import sys
import tomllib
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Callable, Iterable, TypedDict

from app.errors import UsageError
from app.points import WRITE_MODES, Kind, Point, StoragePoint, point_from_dict
from app.procedure import (
    MAX_ROUNDS,
    MAX_TELEMETRY_INTERVAL_S,
    PRECONDITION_MODES,
    TELEMETRY_INTERVAL_S,
    WORKLOAD_PRECONDITION_CAP_S,
    Procedure,
    in_rounds,
    matches,
    precondition_estimate_s,
)
from app.results import is_plain_name
from app.sanitize import escape_control, has_control, show_value
from app.units import format_duration, parse_duration, parse_size, setting_text

STORAGE = Kind.STORAGE
MEMORY = Kind.MEMORY
KINDS = tuple(Kind)

RW_MODES = ("read", "write", "randread", "randwrite", "rw", "randrw", "trim", "randtrim")
IOENGINES = ("libaio", "io_uring", "psync", "sync", "pvsync2", "posixaio")
MLC_DELAYS = (0, 2, 8, 15, 50, 100, 200, 300, 400, 500, 700, 1000, 1300, 1700, 2500, 3500, 5000, 9000, 20000)
TRAFFIC = ("R", "W2", "W3", "W4", "W5", "W6", "W7", "W8", "W9", "W10", "W11", "W12")
MEMORY_MODES = ("loaded", "idle")
ENGINES = ("auto", "mlc", "builtin")

# --- limits (each documented in docs/presets.md) ------------------------------------------------

MAX_PRESET_BYTES = 1 << 20  # a preset (or any TOML file read by read_toml) is at most 1 MiB
MAX_TOML_NESTING = 32  # brackets/braces nested, or segments of one dotted key (a.b.c) in a TOML file
MAX_PLAN_POINTS = 100_000  # points of one plan, counted from the axes before expanding
MAX_NAME_CHARS = 100  # name, and a group's label
MAX_DESCRIPTION_CHARS = 2000
MAX_SECONDS = 7 * 24 * 3600  # runtime and ramp_time: 7 days
MAX_MEMORY_SECONDS = 3600  # memory duration: the built-in engine's limit (MLC's -t is whole seconds)
MAX_BS = 64 << 20  # 64 MiB
MAX_SIZE = 1 << 50  # 1 PiB
MIN_BUFFER, MAX_BUFFER = 1 << 10, 1 << 50  # 1 KiB … 1 PiB per thread, whole KiB (-b takes KiB; memlat's limit)
MAX_STRIDE = 4096  # the built-in engine's limit
MIN_TLB_LOCALITY = 4 << 10  # tlb_locality groups: 4 KiB (one page; at least one slot at the largest stride) …
MAX_TLB_LOCALITY = 1 << 30  # … to 1 GiB, in whole KiB (the engine's --tlb_locality takes KiB)
MAX_DELAY = 10_000_000
MAX_CPU = 1023  # CPU numbers 0 … 1023 (the built-in engine's limit)
MAX_CPUS_CHARS = 4096


# --- control characters: refused in every string a preset, --set or a plan carries ---------------

# has_control and show_value live in app.sanitize (one way to show a value in an error, for every reader)


# --- value parsers: each takes a TOML or command-line value, returns the canonical one ---------


def _int(lo: int | None = None, hi: int | None = None) -> Callable[[Any], int]:
    def parse(v: Any) -> int:
        if isinstance(v, bool):
            raise ValueError("expected a whole number")
        if isinstance(v, str) and re.fullmatch(r" *-?[0-9]+ *", v):
            if len(v.strip().lstrip("-")) > 18:  # beyond every bound (and int()'s 4300-digit limit)
                raise ValueError(f"must be at least {lo}" if "-" in v else f"must be at most {hi}")
            v = int(v)
        if isinstance(v, float) and v.is_integer():
            v = int(v)
        if not isinstance(v, int):
            raise ValueError("expected a whole number")
        if lo is not None and v < lo:
            raise ValueError(f"must be at least {lo}")
        if hi is not None and v > hi:
            raise ValueError(f"must be at most {hi}")
        return v

    return parse


def _choice(options: tuple[str, ...], fold: Callable[[str], str] = str.lower) -> Callable[[Any], str]:
    canon = {fold(o): o for o in options}

    def parse(v: Any) -> str:
        # only spaces are stripped: "randread\n" is refused (control characters), not read as randread
        if not isinstance(v, str) or fold(v.strip(" ")) not in canon:
            raise ValueError("must be one of " + ", ".join(options))
        return canon[fold(v.strip(" "))]

    return parse


def _bool(v: Any) -> bool:
    if isinstance(v, bool):
        return v
    if isinstance(v, int) and v in (0, 1):
        return bool(v)
    if isinstance(v, str) and v.strip(" ").lower() in ("1", "true", "yes", "on", "0", "false", "no", "off"):
        return v.strip(" ").lower() in ("1", "true", "yes", "on")
    raise ValueError("expected true or false")


def _optional(parse: Callable[[Any], Any]) -> Callable[[Any], Any]:
    def wrapped(v: Any) -> Any:
        if v is None or (isinstance(v, str) and v.strip(" ").lower() in ("", "none", "null", "default")):
            return None
        return parse(v)

    return wrapped


def _seconds(lo: float, hi: float) -> Callable[[Any], float | int]:
    """Seconds with millisecond resolution: an int when whole (10), else a float of at most three
    decimals (1.5 for "1.5" or "1500ms"); finer values are refused, not rounded."""

    def parse(v: Any) -> float | int:
        s = parse_duration(v)
        if s < lo:
            raise ValueError(f"must be at least {lo:g} s")
        if s > hi:
            raise ValueError(f"must be at most {hi:g} s")
        ms = round(s * 1000)
        if abs(s * 1000 - ms) > 1e-6 * max(1.0, ms):
            raise ValueError("must be a whole number of milliseconds (e.g. 1.5 or 1500ms)")
        return ms // 1000 if ms % 1000 == 0 else ms / 1000

    return parse


def _bytes_text(n: int) -> str:
    for unit, mult in (("PiB", 1 << 50), ("TiB", 1 << 40), ("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= mult and n % mult == 0:
            return f"{n // mult} {unit}"
    return f"{n} bytes"


def _size(lo: int, hi: int, unit: int = 1) -> Callable[[Any], int]:
    def parse(v: Any) -> int:
        n = parse_size(v)
        if n < lo:
            raise ValueError(f"must be at least {_bytes_text(lo)}")
        if n > hi:
            raise ValueError(f"must be at most {_bytes_text(hi)}")
        if n % unit:
            raise ValueError(f"must be a whole number of {_bytes_text(unit)}")
        return n

    return parse


def _stride(v: Any) -> int:
    n = parse_size(v)
    if n < 64 or n > MAX_STRIDE or n & (n - 1):
        raise ValueError(f"must be a power of two from 64 to {MAX_STRIDE} bytes")
    return n


def _tlb_locality(v: Any) -> int | None:
    """None (the default) chases the whole buffer in one random order; a size chases randomly within
    groups of that many bytes, groups in random order (multichase's -T). 0, "0", "none", "whole" = None."""
    if v is None or (isinstance(v, int) and not isinstance(v, bool) and v == 0):
        return None
    if isinstance(v, str) and v.strip(" ").lower() in ("", "0", "none", "null", "default", "whole", "whole-buffer"):
        return None
    if isinstance(v, bool):
        raise ValueError("expected a size such as 256k, or none for the whole buffer")
    return _size(MIN_TLB_LOCALITY, MAX_TLB_LOCALITY, 1024)(v)


def _traffic(v: Any) -> str:
    if isinstance(v, int) and not isinstance(v, bool):
        v = f"W{v}"
    if isinstance(v, str):
        s = v.strip().upper()
        if s in ("R", "READ", "READS", "ALL-READS", "-R"):
            return "R"
        s = s.lstrip("-")
        if s.isdigit():
            s = "W" + s
        if s in TRAFFIC:
            return s
    raise ValueError("must be R (all reads) or an MLC traffic code W2 … W12")


def _cpus(v: Any) -> str:
    if isinstance(v, int) and not isinstance(v, bool):
        v = str(v)
    if isinstance(v, list) and all(isinstance(x, (int, str)) and not isinstance(x, bool) for x in v):
        v = ",".join(str(x) for x in v)
    if not isinstance(v, str) or len(v) > MAX_CPUS_CHARS:
        raise ValueError("expected a CPU list such as 0-3 or 0,2,4")
    v = v.replace(" ", "")
    if not re.fullmatch(r"[0-9]{1,4}(-[0-9]{1,4})?(,[0-9]{1,4}(-[0-9]{1,4})?)*", v):
        raise ValueError("expected a CPU list such as 0-3 or 0,2,4")
    seen: set[int] = set()
    for part in v.split(","):
        a, _, b = part.partition("-")
        first, last = int(a), int(b or a)
        if last < first or last > MAX_CPU:
            raise ValueError(f"expected a CPU list such as 0-3 or 0,2,4 with CPUs 0 to {MAX_CPU}, ranges ascending")
        if seen.intersection(range(first, last + 1)):
            raise ValueError("lists a CPU twice")
        seen.update(range(first, last + 1))
    return v


STEADY_METRICS = ("iops", "bw", "iops_slope", "bw_slope")
MAX_STEADY_PERCENT = 100


def _steady(v: Any) -> str:
    """A fio steady-state criterion: METRIC:PERCENT% with METRIC one of STEADY_METRICS ("iops:2%",
    "iops_slope:0.3%"); canonical as ``f"{metric}:{percent:g}%"``."""
    shape = "a fio steady-state criterion such as iops:2%, iops_slope:0.3% or bw:2%"
    if not isinstance(v, str):
        raise ValueError(f"expected {shape}")
    m = re.fullmatch(r" *([a-z_]+) *: *([0-9]{1,6}(?:\.[0-9]{1,6})?) *% *", v.lower())
    if not m or m.group(1) not in STEADY_METRICS:
        raise ValueError(f"expected {shape} (metric {', '.join(STEADY_METRICS)}, a percentage)")
    percent = float(m.group(2))
    if not 0 < percent <= MAX_STEADY_PERCENT:
        raise ValueError(f"the percentage must be above 0 and at most {MAX_STEADY_PERCENT}")
    return f"{m.group(1)}:{percent:g}%"


MAX_LATENCY_BOUND_US = 60_000_000  # 60 s


def _latency_bound(v: Any) -> int:
    """A latency bound in whole microseconds: ``1ms``, ``500us``, ``800µs``, ``0.25s``; a bare number
    is microseconds (as fio's latency_target reads it)."""
    shape = "a latency such as 1ms or 500us"
    if isinstance(v, bool):
        raise ValueError(f"expected {shape}")
    if isinstance(v, str):
        m = re.fullmatch(r" *([0-9]{1,12}(?:\.[0-9]{1,6})?) *(us|µs|ms|s)? *", v.lower())
        if not m:
            raise ValueError(f"expected {shape}")
        us = float(m.group(1)) * {"us": 1, "µs": 1, "ms": 1000, "s": 1_000_000, None: 1}[m.group(2)]
    elif isinstance(v, int):
        if not 1 <= v <= MAX_LATENCY_BOUND_US:  # before float(): a huge int overflows it
            raise ValueError("must be from 1us to 60s")
        us = float(v)
    elif isinstance(v, float) and math.isfinite(v):
        us = v
    else:
        raise ValueError(f"expected {shape}")
    if not us.is_integer():
        raise ValueError("must be a whole number of microseconds")
    if not 1 <= us <= MAX_LATENCY_BOUND_US:
        raise ValueError("must be from 1us to 60s")
    return int(us)


def _percentile(v: Any) -> float | int:
    """A percentile above 0 and at most 100 (99, 99.9); an int when whole."""
    if isinstance(v, bool) or not isinstance(v, (int, float, str)):
        raise ValueError("expected a percentile such as 99 or 99.9")
    if isinstance(v, int) and not 0 < v <= 100:  # before float(): a huge int overflows it
        raise ValueError("must be above 0 and at most 100")
    try:
        p = float(v.strip(" ").rstrip("%")) if isinstance(v, str) else float(v)
    except ValueError:
        raise ValueError("expected a percentile such as 99 or 99.9") from None
    if not (math.isfinite(p) and 0 < p <= 100):
        raise ValueError("must be above 0 and at most 100")
    if round(p, 4) != p:
        raise ValueError("at most four decimals")
    return int(p) if p.is_integer() else p


def _no_control(parse: Callable[[Any], Any]) -> Callable[[Any], Any]:
    """Every key's parser refuses a string holding a control character before reading it."""

    def guarded(v: Any) -> Any:
        if isinstance(v, str) and has_control(v):
            raise ValueError("contains a control character (newline, tab, NUL, escape …)")
        if isinstance(v, list) and any(isinstance(x, str) and has_control(x) for x in v):
            raise ValueError("contains a control character (newline, tab, NUL, escape …)")
        return parse(v)

    return guarded


@dataclass(frozen=True)
class Key:
    parse: Callable[[Any], Any]
    default: Any
    help: str

    def __post_init__(self) -> None:
        object.__setattr__(self, "parse", _no_control(self.parse))


STORAGE_KEYS: dict[str, Key] = {
    "rw": Key(_choice(RW_MODES), "randread", "I/O pattern: " + ", ".join(RW_MODES)),
    "bs": Key(_size(1, MAX_BS), 4096, "block size in bytes (4k, 128k, 1m), at most 64 MiB"),
    "rwmixread": Key(_optional(_int(0, 100)), None, "percentage of reads in rw/randrw mixes, 0 to 100"),
    "iodepth": Key(_int(1, 65536), 1, "I/Os in flight per job, 1 to 65536"),
    "numjobs": Key(_int(1, 1024), 1, "parallel jobs (threads of I/O), 1 to 1024"),
    "ioengine": Key(_choice(IOENGINES), "libaio", "fio ioengine: " + ", ".join(IOENGINES)),
    "direct": Key(_bool, True, "O_DIRECT, bypassing the page cache"),
    "runtime": Key(_seconds(1, MAX_SECONDS), 10,
                   "measured seconds per point (10, 1.5, 1500ms, 2m), 1 s to 7 days, millisecond resolution"),
    "ramp_time": Key(_seconds(0, MAX_SECONDS), 0, "seconds run before measuring, 0 to 7 days, millisecond resolution"),
    "size": Key(_size(1, MAX_SIZE), 1 << 30, "file size, or the region of a device exercised, at most 1 PiB"),
    "time_based": Key(_bool, True, "run for runtime even when size is covered"),
    "steady": Key(_optional(_steady), None,
                  "stop the point when fio sees steady state: iops:2%, iops_slope:0.3%, bw:2% or bw_slope:…; "
                  "runtime is then the cap (default: off)"),
    "steady_window": Key(_optional(_seconds(1, MAX_SECONDS)), None,
                         "seconds of the steady-state window (fio's ss_dur), with steady; default 5"),
    "steady_ramp": Key(_optional(_seconds(0, MAX_SECONDS)), None,
                       "seconds before the steady-state window starts collecting (fio's ss_ramp), with steady; "
                       "default 2"),
    "latency_bound": Key(_optional(_latency_bound), None,
                         "search the deepest queue (up to iodepth) whose latency percentile meets this bound, "
                         "with fio's latency_target: 1ms, 500us (default: off)"),
    "latency_percentile": Key(_optional(_percentile), None,
                              "share of I/Os that must meet latency_bound, in percent; default 99"),
    "latency_window": Key(_optional(_seconds(0.1, 3600)), None,
                          "seconds each queue depth is tried during the search (fio's latency_window); default 1"),
}

# settings that only take effect with another one, and their defaults then
DEPENDENT_KEYS: dict[str, tuple[str, Any]] = {
    "steady_window": ("steady", 5),
    "steady_ramp": ("steady", 2),
    "latency_percentile": ("latency_bound", 99),
    "latency_window": ("latency_bound", 1),
}

MEMORY_KEYS: dict[str, Key] = {
    "mode": Key(_choice(MEMORY_MODES), "loaded", "idle (one latency figure) or loaded (latency under load)"),
    "traffic": Key(_traffic, "R", "R for all reads or an MLC -W code (W2 … W12)"),
    "delay": Key(_int(0, MAX_DELAY), 0, "injection delay between load-thread accesses, 0 to 10000000"),
    "stride": Key(_stride, 64, "bytes between accesses, a power of two from 64 to 4096"),
    "buffer": Key(_optional(_size(MIN_BUFFER, MAX_BUFFER, 1024)), None,
                  "buffer per thread, whole KiB from 1 KiB to 1 PiB (default: 2x the last-level cache)"),
    "duration": Key(_seconds(1, MAX_MEMORY_SECONDS), 2,
                    "measured seconds per point, 1 to 3600, millisecond resolution (MLC -t rounds up to whole s)"),
    "cpus": Key(_optional(_cpus), None, "CPU list of CPUs 0 to 1023 (0-3, 0,2,4); the first runs the latency thread"),
    "tlb_locality": Key(_tlb_locality, None,
                        "latency chase within random groups of this size (256k, like multichase -T), whole KiB from "
                        "4 KiB to 1 GiB; none or 0 (default) chases the whole buffer; built-in engine only"),
}

def _track(v: Any) -> dict[str, Any]:
    """The settings that pick a round's tracked point: "bs=4k rwmixread=0" (storage keys, space separated)."""
    if isinstance(v, dict):
        items = list(v.items())
    elif isinstance(v, str):
        items = []
        for word in v.split():
            key, eq, value = word.partition("=")
            if not eq:
                raise ValueError("expected KEY=VALUE pairs separated by spaces, e.g. \"bs=4k rwmixread=0\"")
            items.append((key, value))
    else:
        raise ValueError("expected KEY=VALUE pairs separated by spaces, e.g. \"bs=4k rwmixread=0\"")
    track: dict[str, Any] = {}
    for key, value in items:
        if key not in STORAGE_KEYS:
            raise ValueError(f"{show_value(key)} is not a storage key")
        try:
            track[key] = STORAGE_KEYS[key].parse(value)
        except ValueError as e:
            raise ValueError(f"{key}={show_value(value)}: {e}") from None
    return track


def _timeseries(v: Any) -> str:
    """The points whose IOPS and p99 over time the report draws: "none" (the default; points with a write cliff
    or a throttled flag are drawn anyway), "all", or KEY=VALUE pairs as for ``track``; kept as canonical text."""
    if not isinstance(v, str):
        raise ValueError('expected "none", "all" or KEY=VALUE pairs separated by spaces, e.g. "rw=write bs=128k"')
    if v.strip() in ("", "none"):
        return "none"
    if v.strip() == "all":
        return "all"
    return " ".join(f"{k}={value}" for k, value in _track(v).items())


def timeseries_filter(text: str) -> dict[str, Any] | None:
    """The filter a ``timeseries`` setting means: None for none, {} for all (each point matches)."""
    try:
        canonical = _timeseries(text)
    except ValueError:
        return None
    if canonical == "none":
        return None
    return {} if canonical == "all" else _track(canonical)


# settings of how a storage plan is run rather than of its points (app/procedure.py); in [settings] or --set
PROCEDURE_KEYS: dict[str, Key] = {
    "precondition": Key(_choice(PRECONDITION_MODES), "none",
                        "before the first point: none, sequential (128 KiB sequential writes over the region, twice) "
                        "or workload (the first write point until steady); writes to the target"),
    "adaptive": Key(_bool, False, "skip the rest of a QD or numjobs axis once it is saturated"),
    "rounds": Key(_int(1, MAX_ROUNDS), 1,
                  f"measure the plan in up to this many rounds, stopping once the tracked point is steady by "
                  f"SNIA's rule; 1 to {MAX_ROUNDS}"),
    "precondition_cap": Key(_seconds(1, MAX_SECONDS), WORKLOAD_PRECONDITION_CAP_S,
                            "seconds a workload preconditioning pass may take if fio never sees steady state; "
                            f"default {WORKLOAD_PRECONDITION_CAP_S}"),
    "track": Key(_track, {}, "the point whose IOPS decides steady state in rounds: KEY=VALUE pairs "
                             "(\"bs=4k rwmixread=0\"); default: the first point of a round"),
    "timeseries": Key(_timeseries, "none", "the points whose IOPS and p99 over time the report draws: none, all, "
                                           "or KEY=VALUE pairs (\"rw=write bs=128k\"); points with a write cliff "
                                           "or flagged throttled are always drawn"),
    "telemetry_interval": Key(_int(1, MAX_TELEMETRY_INTERVAL_S), TELEMETRY_INTERVAL_S,
                              "seconds between readings of the drive's health log (NVMe, SATA/SAS) while a point "
                              f"runs, besides one at each point's start and end; 1 to {MAX_TELEMETRY_INTERVAL_S}, "
                              f"default {TELEMETRY_INTERVAL_S}"),
}

KEYS: dict[str, dict[str, Key]] = {STORAGE: STORAGE_KEYS, MEMORY: MEMORY_KEYS}
# keys added after plans were first recorded in run.json: a plan without one had the key's default
LATER_KEYS: dict[Kind, frozenset[str]] = {
    STORAGE: frozenset({"steady", "steady_window", "steady_ramp", "latency_bound", "latency_percentile",
                        "latency_window"}),
    MEMORY: frozenset({"tlb_locality"}),
}
# keys a point's JSON table holds only when set (app.points): an explicit null is not a stored form
OMITTED_WHEN_UNSET: dict[Kind, frozenset[str]] = {STORAGE: LATER_KEYS[STORAGE], MEMORY: frozenset()}
TOP_LEVEL = ("name", "kind", "description", "settings", "matrix", "group")


@dataclass
class Group:
    label: str | None
    axes: dict[str, list[Any]]


@dataclass
class Preset:
    name: str
    kind: Kind
    description: str
    source: str
    settings: dict[str, Any] = field(default_factory=dict)
    groups: list[Group] = field(default_factory=list)
    overrides: dict[str, list[Any]] = field(default_factory=dict)
    procedure: Procedure = field(default_factory=Procedure)
    track_source: str = ""  # where procedure.track was given when not in the preset file (--set track=…)
    # (fingerprint of kind/settings/groups/overrides, points): expand() is called several times per
    # command (plan, summary, axes), each call copies this list instead of expanding again
    _cache: tuple[str, list[Point]] | None = field(default=None, repr=False, compare=False)

    @property
    def keys(self) -> dict[str, Key]:
        return KEYS[self.kind]

    def _base(self) -> tuple[dict[str, Any], dict[str, list[Any]]]:
        base = {k: spec.default for k, spec in self.keys.items()}
        if self.kind == MEMORY and "delay" not in self.settings:
            base_axes: dict[str, list[Any]] = {"delay": list(MLC_DELAYS)}
        else:
            base_axes = {}
        base.update(self.settings)
        return base, base_axes

    def group_axes(self) -> list[tuple[Group, dict[str, list[Any]]]]:
        """Each group with the axes it expands over (overrides applied), in expansion order."""
        base, base_axes = self._base()
        result = []
        for group in self.groups or [Group(None, {})]:
            axes = dict(base_axes)
            axes.update(group.axes)
            for key, values in self.overrides.items():
                axes[key] = values
            # delay varies fastest: the delays of one curve are consecutive, so the runner measures
            # them in one MLC/engine invocation (sweep batches consecutive points)
            if self.kind == MEMORY and "delay" in axes:
                axes["delay"] = axes.pop("delay")
            # an idle-latency point has no injection delay
            if self.kind == MEMORY and axes.get("mode", [base["mode"]]) == ["idle"]:
                axes.pop("delay", None)
            result.append((group, axes))
        return result

    def plan_size(self) -> int:
        """Points before duplicates are merged: the sum over groups of the product of axis lengths.
        Cheap (no expansion), an upper bound of ``len(expand())``."""
        return self.procedure.rounds * sum(math.prod(len(v) for v in axes.values()) for _, axes in self.group_axes())

    def check_plan_size(self) -> None:
        """UsageError naming the axes when the plan would exceed MAX_PLAN_POINTS."""
        groups = self.group_axes()
        sizes = [math.prod(len(v) for v in axes.values()) for _, axes in groups]
        total = sum(sizes) * self.procedure.rounds
        if total <= MAX_PLAN_POINTS:
            return
        parts = []
        for (group, axes), n in sorted(zip(groups, sizes), key=lambda gn: -gn[1])[:3]:
            varying = " × ".join(f"{k} ({len(v)} values)" for k, v in axes.items() if len(v) > 1) or "one point"
            parts.append((f"group '{show_value(group.label)[1:-1]}': " if group.label and len(groups) > 1 else "")
                         + varying)
        more = f" and {len(groups) - 3} more groups" if len(groups) > 3 else ""
        if self.procedure.rounds > 1:
            more += f", in {self.procedure.rounds} rounds"
        raise _fail(self.source, f"the plan has {total:,} points ({'; '.join(parts)}{more}), more than the limit "
                                 f"of {MAX_PLAN_POINTS:,} points per run; use fewer values on an axis "
                                 "(--set KEY=V replaces one).")

    def _fingerprint(self) -> str:
        return repr((self.kind, self.settings, [(g.label, g.axes) for g in self.groups], self.overrides,
                     self.procedure))

    def _points(self) -> list[Point]:
        """The expanded plan, shared: callers must not modify the list (expand() gives a copy)."""
        fingerprint = self._fingerprint()
        if self._cache is not None and self._cache[0] == fingerprint:
            return self._cache[1]
        self.check_plan_size()
        base, _ = self._base()
        order = list(base)  # every point has these keys; "group" is not part of a point's identity
        points: list[Point] = []
        seen: set[tuple[Any, ...]] = set()
        for group, axes in self.group_axes():
            names = list(axes)
            for combo in itertools.product(*(axes[n] for n in names)):
                values = dict(base)  # a point being built: its settings by key
                values.update(zip(names, combo))
                _normalise(self.kind, values)
                # the same identity as point_key(), in linear time: each key has one canonical type,
                # so equal tuples mean equal JSON
                key = tuple(values[k] for k in order)
                if key not in seen:
                    seen.add(key)
                    points.append(point_from_dict(self.kind, {**values, "group": group.label or None}))
        if self.procedure.rounds > 1:
            points = list(in_rounds([p for p in points if isinstance(p, StoragePoint)], self.procedure.rounds))
        check_track(self.track_source or self.source, points, self.procedure.track)
        self._cache = (fingerprint, points)
        return points

    def expand(self) -> list[Point]:
        """Every point of the plan, in order, duplicates merged.  UsageError above MAX_PLAN_POINTS."""
        return list(self._points())  # points are frozen: a copy of the list is a copy of the plan

    def writes(self) -> bool:
        """True when the run may write to the target: a write point, or preconditioning."""
        return plan_writes(self._points()) or self.procedure.precondition != "none"


def _normalise(kind: Kind, values: dict[str, Any]) -> None:
    """:func:`normalise_point` on the settings of a point being built (by key)."""
    if kind == STORAGE:
        if values["rw"] not in ("rw", "randrw"):
            values["rwmixread"] = None
        elif values.get("rwmixread") is None:
            values["rwmixread"] = 50
        for key, (needs, default) in DEPENDENT_KEYS.items():
            if values.get(needs) is None:
                values[key] = None
            elif values.get(key) is None:
                values[key] = default
    elif values.get("mode") == "idle":
        values["delay"] = None
        values["traffic"] = None


def normalise_point(point: Point) -> Point:
    """The point with settings that have no effect made canonical, so equal jobs compare equal: a
    storage point's ``rwmixread`` only for rw/randrw (50 unless given), an idle memory point without
    ``delay`` and ``traffic``."""
    if isinstance(point, StoragePoint):
        values = point.to_dict()
        values.update({k: getattr(point, k) for k in DEPENDENT_KEYS})
        _normalise(STORAGE, values)
        return point_from_dict(STORAGE, values)
    if point.mode == "idle":
        return replace(point, delay=None, traffic=None)
    return point


def point_key(point: Point) -> str:
    """A stable identity of a point, used to merge duplicates and to resume."""
    return table_key(point.to_dict())


def table_key(table: dict[str, Any]) -> str:
    """:func:`point_key` of a point's JSON table as results.jsonl records it (untrusted, not re-typed)."""
    # "engine" is added to memory records by the runner (README.md, "Results"), never part of the plan
    return json.dumps({k: v for k, v in table.items() if k not in ("group", "engine")}, sort_keys=True)


def plan_writes(points: Iterable[Point]) -> bool:
    """True when a point may write to the storage target (a memory plan never does).
    rw/randrw count as writes even at rwmixread=100: fio opens the target for writing."""
    return any(isinstance(p, StoragePoint) and p.rw in WRITE_MODES for p in points)


# --- loading ---------------------------------------------------------------------------------


def _fail(where: str, msg: str) -> UsageError:
    return UsageError(f"{escape_control(where) if has_control(where) else where}: {msg}")


def _shown_path(path: str | os.PathLike[str]) -> str:
    text = os.fspath(path)
    text = text if isinstance(text, str) else os.fsdecode(text)
    return escape_control(text) if has_control(text) else text


def _check_value(where: str, kind: str, key: str, value: Any) -> Any:
    keys = KEYS[kind]
    if key not in keys:
        known = list(keys) + (list(PROCEDURE_KEYS) if kind == STORAGE else [])
        raise _fail(where, f"unknown key {show_value(key)} for a {kind} preset; known keys: {', '.join(known)}.")
    try:
        return keys[key].parse(value)
    except ValueError as e:
        raise _fail(where, f"key '{key}' has invalid value {show_value(value)}: {e}.") from None


def _check_procedure(where: str, key: str, value: Any) -> Any:
    try:
        return PROCEDURE_KEYS[key].parse(value)
    except ValueError as e:
        raise _fail(where, f"key '{key}' has invalid value {show_value(value)}: {e}.") from None


def _axis(where: str, kind: str, key: str, value: Any) -> list[Any]:
    values = value if isinstance(value, list) else [value]
    if not values:
        raise _fail(where, f"axis {show_value(key)} is an empty list.")
    if len(values) > MAX_PLAN_POINTS:
        raise _fail(where, f"axis {show_value(key)} has {len(values):,} values, more than the limit of "
                           f"{MAX_PLAN_POINTS:,} points per run.")
    return [_check_value(where, kind, key, v) for v in values]


def _text(where: str, key: str, value: Any, limit: int, *, required: bool) -> str:
    """A name, description or label: a string of at most ``limit`` characters, no control characters."""
    if value is None and not required:
        return ""
    if not isinstance(value, str) or (required and not value.strip()):
        raise _fail(where, f"key '{key}' is missing or empty." if value is None or isinstance(value, str)
                    else f"key '{key}' must be a string, not {show_value(value)}.")
    if has_control(value):
        raise _fail(where, f"key '{key}' has invalid value {show_value(value)}: contains a control character "
                           "(newline, tab, NUL, escape …).")
    if len(value) > limit:
        raise _fail(where, f"key '{key}' is {len(value):,} characters long; at most {limit:,} are allowed.")
    return value


def parse_preset(data: dict[str, Any], source: str) -> Preset:
    if not isinstance(data, dict):
        raise _fail(source, "a preset must be a table of key = value.")
    for key in data:
        if key not in TOP_LEVEL:
            raise _fail(source, f"unknown top-level key {show_value(key)}; expected one of {', '.join(TOP_LEVEL)}.")
    kind = data.get("kind")
    if not isinstance(kind, str) or kind not in KINDS:
        shown = json.dumps(kind) if isinstance(kind, str) and not has_control(kind) else show_value(kind)
        raise _fail(source, f"key 'kind' has invalid value {shown}: must be storage or memory.")
    kind = Kind(kind)
    name = _text(source, "name", data.get("name"), MAX_NAME_CHARS, required=True)
    if not is_plain_name(name):  # it names the run's results directory: one plain component, never a path
        raise _fail(source, f"key 'name' has invalid value {show_value(name)}: a preset name may use letters, "
                            "digits, '.', '-' and '_' only (not '.' or '..').")
    description = _text(source, "description", data.get("description"), MAX_DESCRIPTION_CHARS, required=False)
    settings_raw = data.get("settings", {})
    if not isinstance(settings_raw, dict):
        raise _fail(source, "[settings] must be a table of key = value.")
    settings = {}
    procedure: dict[str, Any] = {}
    for key, value in settings_raw.items():
        if kind == STORAGE and key in PROCEDURE_KEYS:
            procedure[key] = _check_procedure(source, key, value)
            continue
        if isinstance(value, list):
            raise _fail(source, f"[settings] key {show_value(key)} is a list; put axes under [matrix] or [[group]].")
        settings[key] = _check_value(source, kind, key, value)
    if "matrix" in data and "group" in data:
        raise _fail(source, "use either [matrix] or [[group]] tables, not both.")
    groups: list[Group] = []
    raw_groups = data.get("group", [data["matrix"]] if "matrix" in data else [])
    if not isinstance(raw_groups, list) or not all(isinstance(g, dict) for g in raw_groups):
        raise _fail(source, "[matrix] must be a table and [[group]] an array of tables.")
    if len(raw_groups) > MAX_PLAN_POINTS:
        raise _fail(source, f"{len(raw_groups):,} [[group]] tables, more than the limit of {MAX_PLAN_POINTS:,} "
                            "points per run.")
    for i, raw in enumerate(raw_groups):
        label = _text(f"{source}: group {i + 1}", "label", raw.get("label"), MAX_NAME_CHARS, required=False) or None
        axes = {k: _axis(source, kind, k, v) for k, v in raw.items() if k != "label"}
        groups.append(Group(label, axes))
    return Preset(name=name, kind=kind, description=description, source=source, settings=settings, groups=groups,
                  procedure=Procedure(**procedure))


_FILE_TYPES = ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO (named pipe)"),
               (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"))


def _require_regular(shown: str, mode: int, what: str) -> None:
    if stat.S_ISREG(mode):
        return
    kind = next((name for test, name in _FILE_TYPES if test(mode)), "not a regular file")
    raise UsageError(f"{shown}: is {kind}, not a {what}; give a regular file.")


def toml_nesting(text: str) -> int:
    """The deepest nesting of ``[``/``{`` or the most segments of one dotted key (``a.b.c`` = 3) in
    TOML text, outside strings and comments.  tomllib recurses per level (RecursionError) and keeps
    every prefix of a dotted key (memory grows with the square of its length), so read_toml refuses
    text above MAX_TOML_NESTING before parsing it."""
    depth = deepest = dots = most_dots = 0
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c == '"' or c == "'":
            delim = c * 3 if text.startswith(c * 3, i) else c
            j = i + len(delim)
            while j < n:
                if c == '"' and text[j] == "\\":
                    j += 2
                elif text.startswith(delim, j):
                    break
                elif len(delim) == 1 and text[j] == "\n":
                    break  # unterminated: tomllib reports it
                else:
                    j += 1
            j += len(delim)
            while len(delim) == 3 and j < n and text[j] == c:  # """ may end with up to two more quotes
                j += 1
            i = j
            continue  # a quoted key segment keeps the dotted run going
        if c == "#":
            j = text.find("\n", i)
            i = n if j < 0 else j
            continue
        if c == "[" or c == "{":
            depth += 1
            deepest = max(deepest, depth)
        elif c == "]" or c == "}":
            depth = max(0, depth - 1)
        if c == ".":
            dots += 1
            most_dots = max(most_dots, dots)
        elif not (c.isascii() and (c.isalnum() or c in "_- \t")):
            dots = 0
        i += 1
    return max(deepest, most_dots + 1)


def _parse_toml(text: str, shown: str) -> dict[str, Any]:
    if toml_nesting(text) > MAX_TOML_NESTING:
        raise UsageError(f"{shown}: TOML nested more than {MAX_TOML_NESTING} levels deep (brackets, braces or "
                         "the parts of a dotted key); a preset needs two.")
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise UsageError(f"{shown}: TOML syntax error: {e}.") from None
    except (ValueError, RecursionError) as e:  # e.g. an integer of more than 4300 digits
        raise UsageError(f"{shown}: TOML cannot be read ({type(e).__name__}: {str(e)[:80]}).") from None


def read_toml(path: str | os.PathLike[str], what: str = "preset file") -> dict[str, Any]:
    """A TOML file's table; a missing, unreadable, special (FIFO, device, socket, directory), larger
    than MAX_PRESET_BYTES or malformed file is a UsageError naming it.  A special file is refused
    before it is opened for reading: a FIFO without a writer would block, /dev/zero never ends."""
    shown = _shown_path(path)
    try:
        _require_regular(shown, os.stat(path).st_mode, what)
        # O_NONBLOCK: if the path was swapped for a FIFO after stat(), open() still returns at once
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC)
    except FileNotFoundError:
        raise UsageError(f"{shown}: no such {what}.") from None
    except OSError as e:
        raise UsageError(f"{shown}: cannot be read ({e.strerror or e}).") from None
    try:
        _require_regular(shown, os.fstat(fd).st_mode, what)
        chunks: list[bytes] = []
        left = MAX_PRESET_BYTES + 1  # at most one byte past the cap is read
        while left > 0:
            chunk = os.read(fd, min(left, 1 << 16))
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
    except OSError as e:
        raise UsageError(f"{shown}: cannot be read ({e.strerror or e}).") from None
    finally:
        os.close(fd)
    data = b"".join(chunks)
    if len(data) > MAX_PRESET_BYTES:
        raise UsageError(f"{shown}: larger than {MAX_PRESET_BYTES // (1 << 20)} MiB, the limit for a {what}.")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise UsageError(f"{shown}: is not UTF-8 text (byte {e.start}).") from None
    return _parse_toml(text, shown)


def load_file(path: str | os.PathLike[str]) -> Preset:
    return parse_preset(read_toml(path), str(path))


# --- plans read back from a results directory ---------------------------------------------------

PLAN_EXTRAS: dict[Kind, tuple[str, ...]] = {STORAGE: ("group", "round"), MEMORY: ("group", "engine")}
RECORDED_ENGINES = ("mlc", "builtin")  # what the memory runner records in a point's "engine"


def validate_plan(kind: object, plan: object, source: str) -> list[Point]:
    """Re-check a plan read from an untrusted file (a results directory's run.json) with the preset
    validators; the points, each rebuilt from canonical values, or a UsageError naming ``source``,
    the point (``plan[3]``) and the key.

    Every point is a table holding exactly the keys of ``kind`` (plus a ``group`` label and, for
    memory, the ``engine`` a record names); every value is what its key's parser makes of it (so
    no control character, no out-of-range number, no "4k" where 4096 is stored); settings that
    :func:`normalise_point` fixes hold; no point repeats another; at most MAX_PLAN_POINTS points.
    """
    if not isinstance(kind, str) or kind not in KINDS:
        raise _fail(source, f"key 'kind' has invalid value {show_value(kind)}: must be storage or memory.")
    if not isinstance(plan, list) or not plan:
        raise _fail(source, f"key 'plan' has invalid value {show_value(plan)}: must be a non-empty list of points.")
    if len(plan) > MAX_PLAN_POINTS:
        raise _fail(source, f"key 'plan' has {len(plan):,} points, more than the limit of {MAX_PLAN_POINTS:,}.")
    kind = Kind(kind)
    keys = KEYS[kind]
    extras = PLAN_EXTRAS[kind]
    seen: dict[tuple[Any, ...], int] = {}
    points: list[Point] = []
    for i, entry in enumerate(plan):
        where = f"{source}: plan[{i}]"
        if not isinstance(entry, dict):
            raise UsageError(f"{where} is {show_value(entry)}, not a table of settings.")
        for key in entry:
            if key not in keys and key not in extras:
                raise UsageError(f"{where} has unknown key {show_value(key)} for a {kind} plan; known keys: "
                                 f"{', '.join(list(keys) + list(extras))}.")
        # a key added after a run was recorded may be absent from its plan: it then had the key's default
        missing = [k for k in keys if k not in entry and k not in LATER_KEYS[kind]]
        if missing:
            raise UsageError(f"{where} lacks key{'s' if len(missing) > 1 else ''} "
                             f"{', '.join(repr(k) for k in missing)}.")
        for key in OMITTED_WHEN_UNSET[kind]:
            if key in entry and entry[key] is None:
                raise UsageError(f"{where} key '{key}' has invalid value null: not the form the tool stores (the key "
                                 "is left out when it is not set).")
        point: dict[str, Any] = {}  # the point being rebuilt: canonical values by key
        idle = kind == MEMORY and entry.get("mode") == "idle"
        for key, spec in keys.items():
            value = entry.get(key, keys[key].default)
            if value is None and idle and key in ("delay", "traffic"):
                point[key] = None  # an idle point has neither (normalise_point)
                continue
            try:
                parsed = spec.parse(value)
            except ValueError as e:
                raise UsageError(f"{where} key '{key}' has invalid value {show_value(value)}: {e}.") from None
            if type(parsed) is not type(value) or parsed != value:
                raise UsageError(f"{where} key '{key}' has invalid value {show_value(value)}: not the form the "
                                 f"tool stores (that is {show_value(parsed)}).")
            point[key] = parsed
        normalised = dict(point)
        _normalise(kind, normalised)
        for key in keys:
            if type(normalised[key]) is not type(point[key]) or normalised[key] != point[key]:
                raise UsageError(f"{where} key '{key}' has invalid value {show_value(point[key])}: this point "
                                 f"needs {show_value(normalised[key])} (as planned for its other keys).")
        if "group" in entry:
            label = entry["group"]
            if not isinstance(label, str) or not label or has_control(label) or len(label) > MAX_NAME_CHARS:
                raise UsageError(f"{where} key 'group' has invalid value {show_value(label)}: must be a label of 1 "
                                 f"to {MAX_NAME_CHARS} characters without control characters.")
            point["group"] = label
        if "engine" in entry:
            if not isinstance(entry["engine"], str) or entry["engine"] not in RECORDED_ENGINES:
                raise UsageError(f"{where} key 'engine' has invalid value {show_value(entry['engine'])}: must be "
                                 f"one of {', '.join(RECORDED_ENGINES)}.")
            point["engine"] = entry["engine"]
        if "round" in entry:
            r = entry["round"]
            if not isinstance(r, int) or isinstance(r, bool) or not 1 <= r <= MAX_ROUNDS:
                raise UsageError(f"{where} key 'round' has invalid value {show_value(r)}: must be a whole number from "
                                 f"1 to {MAX_ROUNDS}.")
            point["round"] = r
        identity = tuple(point[k] for k in keys) + (point.get("round"),)
        if identity in seen:
            raise UsageError(f"{where} repeats plan[{seen[identity]}] (the same settings twice).")
        seen[identity] = i
        points.append(point_from_dict(kind, point))
    return points


def check_track(where: str, plan: Iterable[Point], track: dict[str, Any]) -> None:
    """A ``track`` that picks no point of the plan would leave rounds without a tracked figure, never steady:
    refused, naming the values the plan has for its keys."""
    points = list(plan)
    if not track or any(matches(p, track) for p in points):
        return
    def values(key: str) -> str:
        found = sorted({getattr(p, key, None) for p in points}, key=lambda v: (v is None, str(type(v)), v))
        return ", ".join(setting_text(key, v) for v in found[:8]) + (" …" if len(found) > 8 else "")

    shown = " ".join(f"{k}={setting_text(k, v)}" for k, v in track.items())
    has = "; ".join(f"{k} {values(k)}" for k in track)
    raise _fail(where, f"key 'track' has value {show_value(shown)}, which matches no point of the plan (the plan's "
                       f"{has}).")


def validate_procedure(kind: Kind, value: object, source: str) -> Procedure:
    """The procedure a results directory's run.json records (untrusted), checked by the keys' parsers;
    a run without one had the default."""
    if value is None:
        return Procedure()
    if kind != STORAGE or not isinstance(value, dict):
        raise _fail(source, f"key 'procedure' has invalid value {show_value(value)}: must be a table of "
                            f"{', '.join(PROCEDURE_KEYS)} (storage runs only).")
    parsed: dict[str, Any] = {}
    for key, raw in value.items():
        if key not in PROCEDURE_KEYS:
            raise _fail(source, f"key 'procedure' has unknown key {show_value(key)}; known keys: "
                                f"{', '.join(PROCEDURE_KEYS)}.")
        parsed[key] = _check_procedure(f"{source}: procedure", key, raw)
    return Procedure(**parsed)


# --- where presets live -----------------------------------------------------------------------


def shipped_dir() -> Path:
    """The shipped presets: the repository's presets/ or the installed copy."""
    env = os.environ.get("PROFILER_TUI_PRESETS")
    if env:
        return Path(env)
    here = Path(__file__).resolve().parent.parent / "presets"
    if here.is_dir():
        return here
    return Path(sys.prefix) / "share" / "profiler-tui" / "presets"


def user_dir() -> Path:
    base = os.environ.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config")
    return Path(base) / "profiler-tui" / "presets"


def available() -> dict[str, Path]:
    """Preset name → file; a user preset of the same name shadows a shipped one."""
    found: dict[str, Path] = {}
    for directory in (shipped_dir(), user_dir()):
        if directory.is_dir():
            for f in sorted(directory.glob("*.toml")):
                found[f.stem] = f
    return found


def load(name_or_path: str) -> Preset:
    """A shipped or user preset by name, or a TOML file by path."""
    if name_or_path.endswith(".toml") or os.sep in name_or_path:
        return load_file(name_or_path)
    table = available()
    if name_or_path not in table:
        raise UsageError(
            f"Unknown preset {show_value(name_or_path, 200)}; available: {', '.join(sorted(table))} "
            "(or give a path to a .toml file)."
        )
    return load_file(table[name_or_path])


def load_all() -> list[Preset]:
    return [load_file(p) for p in available().values()]


# --- --set overrides --------------------------------------------------------------------------


def parse_overrides(kind: str, items: list[str] | tuple[str, ...]) -> dict[str, list[Any]]:
    """``["bs=4k,64k", "runtime=3"]`` → ``{"bs": [4096, 65536], "runtime": [3]}``.

    Spaces around keys and values are ignored; any other control character (tab, newline …) is an
    error, so ``--set $'rw=randread\n'`` is refused rather than read as randread."""
    result: dict[str, list[Any]] = {}
    for item in items:
        shown = escape_control(item) if has_control(item) else item
        if "=" not in item:
            raise UsageError(f"--set '{shown}' is not KEY=VALUE (for example --set bs=4k,64k).")
        key, _, value = item.partition("=")
        key = key.strip(" ")
        where = f"--set {shown}"
        if kind == STORAGE and key in PROCEDURE_KEYS:  # one value, not an axis
            if not value.strip(" "):
                raise _fail(where, f"key {show_value(key)} has an empty value.")
            result[key] = [_check_procedure(where, key, value.strip(" "))]
            continue
        values = [v.strip(" ") for v in value.split(",")]
        if not value.strip(" ") or any(v == "" for v in values):
            raise _fail(where, f"key {show_value(key)} has an empty value.")
        if len(values) > MAX_PLAN_POINTS:
            raise _fail(where, f"key {show_value(key)} has {len(values):,} values, more than the limit of "
                               f"{MAX_PLAN_POINTS:,} points per run.")
        result[key] = [_check_value(where, kind, key, v) for v in values]
    return result


def apply_overrides(preset: Preset, items: list[str] | tuple[str, ...]) -> Preset:
    overrides = parse_overrides(preset.kind, items)
    for key in [k for k in overrides if preset.kind == STORAGE and k in PROCEDURE_KEYS]:
        preset.procedure = replace(preset.procedure, **{key: overrides.pop(key)[0]})
    preset.overrides.update(overrides)
    for key in overrides:
        preset.settings.pop(key, None)
    given = [item for item in items if item.partition("=")[0].strip(" ") == "track"]
    if given:  # a track that matches no point is refused naming the --set that chose it, not the preset file
        preset.track_source = f"--set {given[-1]}"
    return preset


def save_user_preset(preset_toml: str, name: str) -> Path:
    """Write a user preset (validated first) into the user directory."""
    if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_.-]*", name):
        raise UsageError(f"Preset name '{name}' may use letters, digits, '-', '_' and '.' only.")
    directory = user_dir()
    path = directory / f"{name}.toml"
    if len(preset_toml.encode("utf-8")) > MAX_PRESET_BYTES:
        raise UsageError(f"{path}: larger than {MAX_PRESET_BYTES // (1 << 20)} MiB, the limit for a preset file.")
    parse_preset(_parse_toml(preset_toml, str(path)), str(path))
    directory.mkdir(parents=True, exist_ok=True)
    path.write_text(preset_toml, encoding="utf-8")
    return path


# --- estimates --------------------------------------------------------------------------------

# Wall time a point costs beyond what it measures (process start, file layout check, teardown);
# bench/fio_overhead.py measures the real figure.
STORAGE_OVERHEAD_S = 0.5
MEMORY_OVERHEAD_S = 1.0


def estimate_point_seconds(point: Point) -> float:
    if isinstance(point, StoragePoint):
        return float(point.runtime) + float(point.ramp_time) + STORAGE_OVERHEAD_S
    return float(point.duration) + MEMORY_OVERHEAD_S


def estimate_seconds(points: Iterable[Point], procedure: Procedure | None = None) -> float:
    """Seconds a plan is expected to take: every point (a steady-state or latency-search point at its cap),
    plus preconditioning."""
    points = list(points)
    extra = precondition_estimate_s(procedure, points) if procedure is not None else 0.0
    return sum(estimate_point_seconds(p) for p in points) + extra


def describe_axes(preset: Preset) -> dict[str, list[Any]]:
    """Every key that varies across the plan, with its values in plan order."""
    points = preset._points()
    axes: dict[str, list[Any]] = {}
    for key in preset.keys:
        values = list(dict.fromkeys(getattr(p, key) for p in points))  # distinct, first-seen order, linear
        if len(values) > 1:
            axes[key] = values
    return axes


class PlanSummary(TypedDict):
    """A preset's plan in figures (``presets show --json`` prints it, with the axes and the plan)."""

    name: str
    kind: Kind
    description: str
    source: str
    points: int
    estimated_seconds: float
    estimated: str  # estimated_seconds for people: "1m 30s"
    writes: bool  # some point may write to the target


def summary(preset: Preset) -> PlanSummary:
    points = preset._points()
    seconds = estimate_seconds(points, preset.procedure)
    return {
        "name": preset.name,
        "kind": preset.kind,
        "description": preset.description,
        "source": preset.source,
        "points": len(points),
        "estimated_seconds": seconds,
        "estimated": format_duration(seconds),
        "writes": preset.writes(),
    }
