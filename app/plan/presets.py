"""Presets (docs/presets.md): TOML files validated on load, expanded into a plan of typed points
(:mod:`app.model.points`).

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

import errno
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
from typing import Iterable, Mapping, TypeAlias, TypedDict

from app.core import settings
from app.core.errors import UsageError
from app.core.sanitize import escape_control, has_control, show_value
from app.core.units import format_duration, format_size_human, setting_text
from app.host import topology as machine
from app.host.topology import Topology, cpu_list, cpu_list_text
from app.model.keys import ENGINES as ENGINES  # the memory engines, named here too for the CLI and the TUI
from app.model.keys import (
    MAX_SECONDS,
    MLC_DELAYS,
    NODE,
    Key,
    boolean,
    choice,
    seconds,
    whole,
)
from app.model.keys import RW_MODES as RW_MODES  # the storage modes, named here too for the readers of presets
from app.model.points import (
    ENGINE_FLAGS,
    WRITE_MODES,
    Kind,
    MemoryPoint,
    Point,
    PointValue,
    StoragePoint,
    keys_of,
    later_keys,
    omitted_when_unset,
    point_from_dict,
    records_of,
)
from app.model.records import base_key as base_key  # a point's identity less the replicate
from app.model.records import table_key as table_key  # a point's identity: the results reader needs it too
from app.plan.procedure import (
    AUTO,
    MAX_ORDER_SEED,
    MAX_REPEAT,
    MAX_ROUNDS,
    MAX_TELEMETRY_INTERVAL_S,
    MIN_AUTO_REPLICATES,
    ORDERS,
    PRECONDITION_MODES,
    REPEAT_CV_PCT,
    REPEAT_MAX,
    TELEMETRY_INTERVAL_S,
    WORKLOAD_PRECONDITION_CAP_S,
    Procedure,
    check_repeat,
    in_replicates,
    in_rounds,
    matches,
    precondition_estimate_s,
)
from app.store.results import (
    NotRegularFile,
    check_links,
    is_plain_name,
    make_dirs,
    open_trusted_dir,
    read_regular,
    trusted_uids,
    write_atomic,
)

STORAGE = Kind.STORAGE
MEMORY = Kind.MEMORY
KINDS = tuple(Kind)


# --- limits (each documented in docs/presets.md; the keys' own limits are in app/model/keys.py) ---------

MAX_PRESET_BYTES = 1 << 20  # a preset (or any TOML file read by read_toml) is at most 1 MiB
MAX_TOML_NESTING = 32  # brackets/braces nested, or segments of one dotted key (a.b.c) in a TOML file
MAX_PLAN_POINTS = 100_000  # points of one plan, counted from the axes before expanding
MAX_NAME_CHARS = 100  # name, and a group's label
MAX_DESCRIPTION_CHARS = 2000


# --- the keys of a point, as its fields declare them (app.model.points) --------------------------------

Axes: TypeAlias = dict[str, list[PointValue]]  # key → the values a plan takes for it, in plan order

STORAGE_KEYS = keys_of(StoragePoint)
MEMORY_KEYS = keys_of(MemoryPoint)
# settings that only take effect with another one, and their values then
DEPENDENT_KEYS: dict[str, tuple[str, PointValue]] = {name: (k.needs, k.implied) for name, k in STORAGE_KEYS.items()
                                                 if k.needs is not None}


def _track(v: object) -> dict[str, PointValue]:
    """The settings that pick a round's tracked point: "bs=4k rwmixread=0" (storage keys, space separated)."""
    items: list[tuple[object, object]]
    if isinstance(v, dict):
        items = list(v.items())
    elif isinstance(v, str):
        items = []
        for word in v.split():
            name, eq, text = word.partition("=")
            if not eq:
                raise ValueError("expected KEY=VALUE pairs separated by spaces, e.g. \"bs=4k rwmixread=0\"")
            items.append((name, text))
    else:
        raise ValueError("expected KEY=VALUE pairs separated by spaces, e.g. \"bs=4k rwmixread=0\"")
    track: dict[str, PointValue] = {}
    for key, value in items:
        if not isinstance(key, str) or key not in STORAGE_KEYS:
            raise ValueError(f"{show_value(key)} is not a storage key")
        try:
            track[key] = STORAGE_KEYS[key].parse(value)
        except ValueError as e:
            raise ValueError(f"{key}={show_value(value)}: {e}") from None
    return track


def _timeseries(v: object) -> str:
    """The points whose IOPS and p99 over time the report draws: "none" (the default; points with a write cliff
    or a throttled flag are drawn anyway), "all", or KEY=VALUE pairs as for ``track``; kept as canonical text."""
    if not isinstance(v, str):
        raise ValueError('expected "none", "all" or KEY=VALUE pairs separated by spaces, e.g. "rw=write bs=128k"')
    if v.strip() in ("", "none"):
        return "none"
    if v.strip() == "all":
        return "all"
    return " ".join(f"{k}={value}" for k, value in _track(v).items())


def timeseries_filter(text: str) -> dict[str, PointValue] | None:
    """The filter a ``timeseries`` setting means: None for none, {} for all (each point matches)."""
    try:
        canonical = _timeseries(text)
    except ValueError:
        return None
    if canonical == "none":
        return None
    return {} if canonical == "all" else _track(canonical)


def _repeat(v: object) -> int | str:
    """Replicates of every point: a whole number from 1 to MAX_REPEAT, or "auto"."""
    if isinstance(v, str) and v.strip(" ").lower() == AUTO:
        return AUTO
    try:
        return whole(1, MAX_REPEAT)(v)
    except ValueError:
        raise ValueError(f"expected \"auto\" or a whole number from 1 to {MAX_REPEAT}") from None


MAX_REPEAT_CV_PCT = 50.0


def _repeat_cv(v: object) -> float:
    """A coefficient of variation in per cent, "3%" or 3: above 0, at most MAX_REPEAT_CV_PCT."""
    shape = f"expected a percentage above 0 and at most {MAX_REPEAT_CV_PCT:g}, e.g. \"3%\""
    if isinstance(v, str):
        m = re.fullmatch(r" *([0-9]{1,6}(?:\.[0-9]{1,6})?) *%? *", v)
        if m is None:
            raise ValueError(shape)
        v = float(m.group(1))
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not 0 < v <= MAX_REPEAT_CV_PCT:
        raise ValueError(shape)
    return float(v)


# settings of how a storage plan is run rather than of its points (app/plan/procedure.py); in [settings] or --set
PROCEDURE_KEYS: dict[str, Key] = {
    "precondition": Key(choice(PRECONDITION_MODES), "none",
                        "before the first point: none, sequential (128 KiB sequential writes over the region, twice) "
                        "or workload (the first write point until steady); writes to the target"),
    "adaptive": Key(boolean, False, "skip the rest of a QD or numjobs axis once it is saturated"),
    "rounds": Key(whole(1, MAX_ROUNDS), 1,
                  f"measure the plan in up to this many rounds, stopping once the tracked point is steady by "
                  f"SNIA's rule; 1 to {MAX_ROUNDS}"),
    "precondition_cap": Key(seconds(1, MAX_SECONDS), WORKLOAD_PRECONDITION_CAP_S,
                            "seconds a workload preconditioning pass may take if fio never sees steady state; "
                            f"default {WORKLOAD_PRECONDITION_CAP_S}"),
    "track": Key(_track, {}, "the point whose IOPS decides steady state in rounds: KEY=VALUE pairs "
                             "(\"bs=4k rwmixread=0\"); default: the first point of a round"),
    "timeseries": Key(_timeseries, "none", "the points whose IOPS and p99 over time the report draws: none, all, "
                                           "or KEY=VALUE pairs (\"rw=write bs=128k\"); points with a write cliff "
                                           "or flagged throttled are always drawn"),
    "telemetry_interval": Key(whole(1, MAX_TELEMETRY_INTERVAL_S), TELEMETRY_INTERVAL_S,
                              "seconds between readings of the drive's health log (NVMe, SATA/SAS) while a point "
                              f"runs, besides one at each point's start and end; 1 to {MAX_TELEMETRY_INTERVAL_S}, "
                              f"default {TELEMETRY_INTERVAL_S}"),
    "repeat": Key(_repeat, 1, f"measure every point this many times, interleaved (every point once, then again …), "
                              f"1 to {MAX_REPEAT}; or \"auto\": until the replicates' IOPS CV is under repeat_cv"),
    "repeat_cv": Key(_repeat_cv, REPEAT_CV_PCT, "repeat = \"auto\" stops a point's replicates once their coefficient "
                                               f"of variation is under this per cent; default {REPEAT_CV_PCT:g}"),
    "repeat_max": Key(whole(MIN_AUTO_REPLICATES, MAX_REPEAT), REPEAT_MAX,
                      f"repeat = \"auto\" measures a point at most this many times, {MIN_AUTO_REPLICATES} to "
                      f"{MAX_REPEAT}; default {REPEAT_MAX}"),
    "order": Key(choice(ORDERS), "auto",
                 "the points' order within each replicate: auto (shuffled when there are replicates), shuffled, "
                 "or plan; results keep their plan index"),
    "order_seed": Key(whole(0, MAX_ORDER_SEED), None,
                      f"the seed of a shuffled order, 0 to {MAX_ORDER_SEED}; default: drawn when the run is created "
                      "and recorded in run.json"),
}
# the procedure settings a memory plan takes (the others are about a storage target)
MEMORY_PROCEDURE_KEYS = ("repeat", "repeat_cv", "repeat_max")


def procedure_keys(kind: str) -> tuple[str, ...]:
    """The procedure settings a plan of ``kind`` takes, in [settings] or --set."""
    return tuple(PROCEDURE_KEYS) if kind == STORAGE else MEMORY_PROCEDURE_KEYS

KEYS: dict[str, dict[str, Key]] = {STORAGE: STORAGE_KEYS, MEMORY: MEMORY_KEYS}
# keys added after plans were first recorded in run.json: a plan without one had the key's default
LATER_KEYS: dict[Kind, frozenset[str]] = {STORAGE: later_keys(StoragePoint), MEMORY: later_keys(MemoryPoint)}
# keys a point's JSON table holds only when set (app.model.points): an explicit null is not a stored form
OMITTED_WHEN_UNSET: dict[Kind, frozenset[str]] = {kind: frozenset(keys) & omitted_when_unset(cls)
                                                  for kind, keys, cls in ((STORAGE, STORAGE_KEYS, StoragePoint),
                                                                          (MEMORY, MEMORY_KEYS, MemoryPoint))}
TOP_LEVEL = ("name", "kind", "description", "settings", "matrix", "group")

# plan-time values: resolved by Preset.expand() from the machine's topology (app/host/topology.py), never stored in a
# plan; each key takes only its own word.  In resolution order when several come from [settings].
EACH = "each"
WORKING_SET = "working-set"
SENTINELS: dict[str, str] = {"threads": EACH, "buffer": WORKING_SET, "cpu_node": EACH, "reader_node": EACH,
                             "mem_node": EACH}


@dataclass
class Group:
    label: str | None
    axes: dict[str, list[PointValue]]


@dataclass
class Preset:
    name: str
    kind: Kind
    description: str
    source: str
    settings: dict[str, PointValue] = field(default_factory=dict)
    groups: list[Group] = field(default_factory=list)
    overrides: dict[str, list[PointValue]] = field(default_factory=dict)
    procedure: Procedure = field(default_factory=Procedure)
    track_source: str = ""  # where procedure.track was given when not in the preset file (--set track=…)
    # the machine plan-time values resolve on (app/host/topology.py); read on first need when None (tests set one)
    topology: Topology | None = field(default=None, repr=False, compare=False)
    # (fingerprint of kind/settings/groups/overrides, points): expand() is called several times per
    # command (plan, summary, axes), each call copies this list instead of expanding again
    _cache: tuple[str, list[Point]] | None = field(default=None, repr=False, compare=False)

    @property
    def keys(self) -> dict[str, Key]:
        return KEYS[self.kind]

    def _base(self) -> tuple[dict[str, PointValue], Axes]:
        base = {k: spec.default for k, spec in self.keys.items()}
        if self.kind == MEMORY and "delay" not in self.settings:
            base_axes: Axes = {"delay": list(MLC_DELAYS)}
        else:
            base_axes = {}
        base.update(self.settings)
        return base, base_axes

    def group_axes(self) -> list[tuple[Group, Axes]]:
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
            if self.kind == MEMORY:
                self._resolve(axes, base)
            if self.kind == MEMORY and "delay" in axes:
                axes["delay"] = axes.pop("delay")
            # only a loaded-latency point has an injection delay
            if self.kind == MEMORY and "loaded" not in axes.get("mode", [base["mode"]]):
                axes.pop("delay", None)
            result.append((group, axes))
        return result

    def machine(self) -> Topology:
        if self.topology is None:
            self.topology = machine.read()
        return self.topology

    def uses_sentinels(self) -> bool:
        """Some value of the plan is resolved from the machine (``cpu_node = "each"`` …)."""
        values = [*self.settings.values(), *(v for g in self.groups for vs in g.axes.values() for v in vs),
                  *(v for vs in self.overrides.values() for v in vs)]
        return any(isinstance(v, str) and v in (EACH, WORKING_SET) for v in values)

    def _resolve(self, axes: Axes, base: Mapping[str, PointValue]) -> None:
        """Plan-time values in ``axes`` (or in [settings]: they become one-value axes) replaced by what they mean
        on this machine, in place; an axis keeps its other values, in order, without repeats."""
        for key, word in SENTINELS.items():
            if key not in axes and base.get(key) == word:
                axes[key] = [word]
        for key, word in SENTINELS.items():
            if word not in axes.get(key, []):
                continue
            values: list[PointValue] = []
            for v in axes[key]:
                values.extend(self._meaning(key, axes, base) if v == word else [v])
            if not values:
                raise _fail(self.source, f"{key} = {json.dumps(word)}: {self._nothing(key)}")
            axes[key] = list(dict.fromkeys(values))

    def _meaning(self, key: str, axes: Axes, base: Mapping[str, PointValue]) -> list[PointValue]:
        topo = self.machine()
        if key == "buffer":
            return list(topo.working_set())
        if key == "threads":  # the CPUs of the group's one cpus list or cpu_node, else every allowed CPU
            cpus, nodes = axes.get("cpus", [base.get("cpus")]), axes.get("cpu_node", [base.get("cpu_node")])
            node = topo.node(nodes[0]) if len(nodes) == 1 and isinstance(nodes[0], int) else None
            n = len(cpu_list(str(cpus[0]))) if len(cpus) == 1 and cpus[0] else \
                len(node.cpus) if node is not None else len(topo.cpus)
            return list(range(1, max(1, n) + 1))
        return list(topo.memory_nodes() if key == "mem_node" else topo.cpu_nodes())

    def _nothing(self, key: str) -> str:
        topo = self.machine()
        if topo.unknown:
            return f"this machine reports no NUMA nodes ({topo.unknown}); give {key} a node number or none."
        if key == "mem_node":
            return "no NUMA node of this machine reports memory."
        return "no NUMA node of this machine has a CPU this process may run on."

    def notes(self) -> list[str]:
        """What the plan-time values came to on this machine, when that changes what the plan measures (one
        node: 1x1 matrices, no remote c2c points)."""
        if self.kind != MEMORY or not self.uses_sentinels():
            return []
        points = [p for p in self._points() if isinstance(p, MemoryPoint)]
        modes = {p.mode for p in points}
        topo = self.machine()
        notes = []
        matrices = [p for p in points if p.mode in ("latency_matrix", "bandwidth_matrix")]
        if matrices and len({p.cpu_node for p in matrices}) == 1 and len({p.mem_node for p in matrices}) == 1:
            notes.append(f"one NUMA node (node {matrices[0].cpu_node}): the matrices are 1x1")
        if self._remote_c2c_planned() and not any(p.reader_node is not None for p in points):
            notes.append(f"{'no' if not topo.cpu_nodes() else 'only one'} NUMA node with CPUs: no remote "
                         "cache-to-cache points (they need a writer and a reader on two nodes)")
        if "working_set" in modes and topo.llc_bytes:
            notes.append(f"working set: {len({p.buffer for p in points if p.mode == 'working_set'})} buffer sizes "
                         f"up to {format_size_human(max(p.buffer or 0 for p in points))} "
                         f"(4 x the {format_size_human(topo.llc_bytes)} last-level cache, at least 64 MiB)")
        return notes

    def _remote_c2c_planned(self) -> bool:
        return any(v is not None for _, axes in self._raw_axes() for v in axes.get("reader_node", []))

    def _raw_axes(self) -> list[tuple[Group, Axes]]:
        """Each group's axes before plan-time values are resolved."""
        return [(g, {**{k: [v] for k, v in self.settings.items()}, **g.axes, **self.overrides})
                for g in self.groups or [Group(None, {})]]

    def plan_size(self) -> int:
        """Points before duplicates are merged: the sum over groups of the product of axis lengths.
        Cheap (no expansion), an upper bound of ``len(expand())``."""
        return self._copies() * sum(math.prod(len(v) for v in axes.values()) for _, axes in self.group_axes())

    def _copies(self) -> int:
        """How many times the plan's points are measured: rounds, or replicates."""
        return self.procedure.rounds * self.procedure.replicates

    def check_plan_size(self) -> None:
        """UsageError naming the axes when the plan would exceed MAX_PLAN_POINTS."""
        groups = self.group_axes()
        sizes = [math.prod(len(v) for v in axes.values()) for _, axes in groups]
        total = sum(sizes) * self._copies()
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
        if self.procedure.replicates > 1:
            more += f", × {self.procedure.replicates} replicates"
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
        check_repeat(self.procedure, self.source)
        self.check_plan_size()
        base, _ = self._base()
        order = list(base)  # every point has these keys; "group" is not part of a point's identity
        points: list[Point] = []
        seen: set[tuple[PointValue, ...]] = set()
        for group, axes in self.group_axes():
            names = list(axes)
            for combo in itertools.product(*(axes[n] for n in names)):
                values = dict(base)  # a point being built: its settings by key
                values.update(zip(names, combo))
                _normalise(self.kind, values)
                problem = memory_problem(values) if self.kind == MEMORY else storage_problem(values)
                if problem:
                    raise _fail(self.source, problem)
                if self.kind == MEMORY:
                    if values["mode"] == "c2c" and values["reader_node"] is not None \
                            and values["reader_node"] == values["cpu_node"]:
                        continue  # a remote transfer needs two nodes: "each" x "each" meets itself on the diagonal
                # the same identity as point_key(), in linear time: each key has one canonical type,
                # so equal tuples mean equal JSON
                key = tuple(values[k] for k in order)
                if key not in seen:
                    seen.add(key)
                    points.append(point_from_dict(self.kind, {**values, "group": group.label or None}))
        if self.procedure.rounds > 1:
            points = list(in_rounds([p for p in points if isinstance(p, StoragePoint)], self.procedure.rounds))
        points = in_replicates(points, self.procedure.replicates)
        check_track(self.track_source or self.source, points, self.procedure.track)
        self._cache = (fingerprint, points)
        return points

    def expand(self) -> list[Point]:
        """Every point of the plan, in order, duplicates merged.  UsageError above MAX_PLAN_POINTS."""
        return list(self._points())  # points are frozen: a copy of the list is a copy of the plan

    def writes(self) -> bool:
        """True when the run may write to the target: a write point, or preconditioning."""
        return plan_writes(self._points()) or self.procedure.precondition != "none"


def _normalise(kind: Kind, values: dict[str, PointValue]) -> None:
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
        if isinstance(values.get("rate"), str) and not str(values["rate"]).endswith("%"):
            values["xmax"] = None  # an absolute offered load is no share of anything
        for key in (*ENGINE_FLAGS, "layers"):
            if values.get(key) is False:  # fio's default (no trace: the tool's): one identity for one job
                values[key] = None
    else:
        _normalise_memory(values)


# the memory keys that only some modes read, and the modes that read each (others hold None)
MODE_ONLY_KEYS: dict[str, frozenset[str]] = {
    "delay": frozenset({"loaded"}),
    "traffic": frozenset({"loaded", "peak", "scaling", "bandwidth_matrix"}),
    "threads": frozenset({"scaling"}),
    "c2c": frozenset({"c2c"}),
    "reader_node": frozenset({"c2c"}),
    "home": frozenset({"c2c"}),
}


def _normalise_memory(values: dict[str, PointValue]) -> None:
    mode = values.get("mode")
    for name, modes in MODE_ONLY_KEYS.items():
        if mode not in modes:
            values[name] = None
    if values.get("pages") == "2m":  # the engines' default: one identity for one setting
        values["pages"] = None
    if mode in ("latency_matrix", "bandwidth_matrix") or (mode == "c2c" and values.get("reader_node") is not None):
        values["cpus"] = None  # the engine runs these on their nodes' CPUs
    if mode == "scaling" and values.get("threads") is None:
        values["threads"] = 1
    if mode == "c2c":
        if values.get("c2c") is None:
            values["c2c"] = "hitm"
        if values.get("reader_node") is None:
            values["home"] = None
        elif values.get("home") is None:
            values["home"] = "writer"


def storage_problem(values: Mapping[str, PointValue]) -> str | None:
    """Why a (normalised) storage point's keys contradict each other, in one sentence; None when they agree."""
    engine = values.get("ioengine")
    for key, engines in ENGINE_FLAGS.items():
        if values.get(key) and engine not in engines:
            return (f"key '{key}' has value true, which needs ioengine {' or '.join(engines)} (this point's ioengine "
                    f"is {engine}).")
    rate = values.get("rate")
    if rate is not None:
        for other in ("latency_bound", "steady", "precision"):
            if values.get(other) is not None:
                return (f"key 'rate' has value {rate}, an offered load, which cannot be combined with {other} "
                        "(that changes or ends the point by what it measures; an open-loop point offers its load "
                        "for its whole runtime).")
        if values.get("rw") in ("trim", "randtrim"):
            return f"key 'rate' has value {rate}, an offered load of reads or writes; rw={values.get('rw')} trims."
    return None


def memory_problem(values: Mapping[str, PointValue]) -> str | None:
    """Why a (normalised) memory point's keys contradict each other, in one sentence; None when they agree."""
    mode, cpus = values.get("mode"), values.get("cpus")
    if mode in ("latency_matrix", "bandwidth_matrix") and (values.get("cpu_node") is None
                                                          or values.get("mem_node") is None):
        return (f"mode={mode} needs cpu_node and mem_node (one matrix cell: the CPUs' node and the memory's node); "
                'cpu_node = "each" and mem_node = "each" plan the whole matrix.')
    if mode != "c2c":
        return None
    if values.get("reader_node") is not None:
        if values.get("cpu_node") is None:
            return (f"reader_node={values['reader_node']} needs cpu_node, the writer's node (a remote c2c point "
                    "measures a writer on cpu_node and a reader on reader_node).")
        if cpus:
            return f"reader_node and cpus={cpus} both choose the c2c CPUs; a remote point takes them from the nodes."
    elif isinstance(cpus, str) and cpus and len(cpu_list(cpus)) != 2:
        return (f"mode=c2c with cpus={cpus}: a local cache-to-cache pair is exactly 2 CPUs, the writer then the "
                "reader (e.g. cpus = \"0,1\"; on the command line --set 'cpus=\"0,1\"').")
    return None


def normalise_point(point: Point) -> Point:
    """The point with settings that have no effect made canonical, so equal jobs compare equal: a
    storage point's ``rwmixread`` only for rw/randrw (50 unless given); a memory point holds None in the keys
    its mode does not read (:data:`MODE_ONLY_KEYS`: an idle point has no ``delay`` or ``traffic``; a matrix cell
    or remote c2c point no ``cpus``, its nodes choose them), ``pages``
    None for the default 2m, a scaling point 1 thread and a c2c point ``hitm`` unless given, and a remote c2c
    point's line homed at the writer unless given."""
    if isinstance(point, StoragePoint):
        values = point.to_dict()
        values.update({k: getattr(point, k) for k in DEPENDENT_KEYS})
        _normalise(STORAGE, values)
        return point_from_dict(STORAGE, values)
    changes = {k: getattr(point, k) for k in (*MODE_ONLY_KEYS, "mode", "pages", "cpus")}
    _normalise_memory(changes)
    if all(changes[k] == getattr(point, k) for k in changes):
        return point  # already canonical: the same point
    return replace(point, delay=changes["delay"], traffic=changes["traffic"], threads=changes["threads"],
                   c2c=changes["c2c"], reader_node=changes["reader_node"], home=changes["home"],
                   pages=changes["pages"], cpus=changes["cpus"])


def point_key(point: Point) -> str:
    """A stable identity of a point, used to merge duplicates and to resume."""
    return table_key(point.to_dict())


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


def _check_value(where: str, kind: str, key: str, value: object) -> PointValue:
    keys = KEYS[kind]
    if key not in keys:
        known = list(keys) + list(procedure_keys(kind))
        raise _fail(where, f"unknown key {show_value(key)} for a {kind} preset; known keys: {', '.join(known)}.")
    word = value.strip(" ").lower() if isinstance(value, str) else None
    if kind == MEMORY and word in (EACH, WORKING_SET):
        if SENTINELS.get(key) == word:
            return word
        takers = [k for k, w in SENTINELS.items() if w == word]
        takers_text = ", ".join(takers[:-1]) + " and " + takers[-1] if len(takers) > 1 else takers[0]
        raise _fail(where, f"key '{key}' has invalid value {show_value(value)}: {json.dumps(word)} is a value of "
                           f"{takers_text} only, resolved from this machine when the plan is made.")
    try:
        return keys[key].parse(value)
    except ValueError as e:
        raise _fail(where, f"key '{key}' has invalid value {show_value(value)}: {e}.") from None


def _procedure(base: Procedure, values: Mapping[str, object]) -> Procedure:
    """``base`` with the procedure settings ``values`` (each read by its key's parser, so of its field's type)."""
    return replace(base, **values)  # type: ignore[arg-type]


def _check_procedure(where: str, key: str, value: object) -> object:
    try:
        return PROCEDURE_KEYS[key].parse(value)
    except ValueError as e:
        raise _fail(where, f"key '{key}' has invalid value {show_value(value)}: {e}.") from None


def _axis(where: str, kind: str, key: str, value: object) -> list[PointValue]:
    values: list[object] = value if isinstance(value, list) else [value]
    if not values:
        raise _fail(where, f"axis {show_value(key)} is an empty list.")
    if len(values) > MAX_PLAN_POINTS:
        raise _fail(where, f"axis {show_value(key)} has {len(values):,} values, more than the limit of "
                           f"{MAX_PLAN_POINTS:,} points per run.")
    return [_check_value(where, kind, key, v) for v in values]


def _text(where: str, key: str, value: object, limit: int, *, required: bool) -> str:
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


def parse_preset(data: object, source: str) -> Preset:
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
    settings: dict[str, PointValue] = {}
    procedure: dict[str, object] = {}
    for key, value in settings_raw.items():
        if key in procedure_keys(kind):
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
                  procedure=_procedure(Procedure(), procedure))


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


def _parse_toml(text: str, shown: str) -> dict[str, object]:
    if toml_nesting(text) > MAX_TOML_NESTING:
        raise UsageError(f"{shown}: TOML nested more than {MAX_TOML_NESTING} levels deep (brackets, braces or "
                         "the parts of a dotted key); a preset needs two.")
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise UsageError(f"{shown}: TOML syntax error: {e}.") from None
    except (ValueError, RecursionError) as e:  # e.g. an integer of more than 4300 digits
        raise UsageError(f"{shown}: TOML cannot be read ({type(e).__name__}: {str(e)[:80]}).") from None


def read_toml(path: str | os.PathLike[str], what: str = "preset file") -> dict[str, object]:
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
    return _toml_of(b"".join(chunks), shown, what)


def _toml_of(data: bytes, shown: str, what: str) -> dict[str, object]:
    if len(data) > MAX_PRESET_BYTES:
        raise UsageError(f"{shown}: larger than {MAX_PRESET_BYTES // (1 << 20)} MiB, the limit for a {what}.")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise UsageError(f"{shown}: is not UTF-8 text (byte {e.start}).") from None
    return _parse_toml(text, shown)


# what a preset file another user can change would let them do (app.store.results: the same rules as --out)
PRESET_RISK = ("root would run the plan another user wrote; a preset is read only from a file (and a user preset "
               "only from a directory) that no one but root or this user can change")


def _file_problem(st: os.stat_result) -> str | None:
    """Why root does not read the preset file ``st`` describes (None: only root or this user can change it):
    another user's file, or one its group or others can write."""
    if st.st_uid not in trusted_uids():
        return f"is owned by another user (uid {st.st_uid})"
    if st.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        return "is writable by other users" if st.st_mode & stat.S_IWOTH else "is writable by its group"
    return None


class _NotOurs(Exception):
    """A preset file another user can change (the message says why)."""


def read_preset(path: str | os.PathLike[str], dir_fd: int | None = None) -> dict[str, object]:
    """A preset file's table, read once from one descriptor and checked on it: a regular file (a special file
    refused before it is opened), opened without following a last symbolic link, that only root or this user
    can change (:func:`_file_problem`; another user's file could be changed between a check and the read, and
    root runs what it says).  ``dir_fd``: ``path`` is a name in that (checked) directory; else every symbolic
    link on the way must be root's or this user's (:func:`app.store.results.check_links`) and the file the one they
    lead to.  One sentence (UsageError, exit 2) naming the file otherwise."""
    shown = _shown_path(path)
    what = "preset file"
    if dir_fd is None:
        check_links(Path(path), PRESET_RISK)
        path = os.path.realpath(path)

    def ours(st: os.stat_result) -> None:
        why = _file_problem(st)
        if why:
            raise _NotOurs(why)

    try:
        _require_regular(shown, os.stat(path, dir_fd=dir_fd, follow_symlinks=False).st_mode, what)
        data = read_regular(path, MAX_PRESET_BYTES, dir_fd=dir_fd, check=ours)
    except FileNotFoundError:
        raise UsageError(f"{shown}: no such {what}.") from None
    except NotRegularFile:  # swapped for a special file after the first look
        raise UsageError(f"{shown}: is not a regular file, not a {what}; give a regular file.") from None
    except _NotOurs as e:
        raise UsageError(f"{shown}: {e}, so {PRESET_RISK}.") from None
    except OSError as e:
        if e.errno == errno.ELOOP:
            raise UsageError(f"{shown}: is a symbolic link, which is not followed here, so {PRESET_RISK}.") from None
        raise UsageError(f"{shown}: cannot be read ({e.strerror or e}).") from None
    return _toml_of(data, shown, what)


def load_file(path: str | os.PathLike[str], dir_fd: int | None = None) -> Preset:
    """The preset in ``path`` (a name in ``dir_fd`` when given), read by :func:`read_preset`."""
    return parse_preset(read_preset(path, dir_fd), str(path))


# --- plans read back from a results directory ---------------------------------------------------

# the fields of a plan's point the tool writes, not a preset (checked one by one in validate_plan)
PLAN_EXTRAS: dict[Kind, tuple[str, ...]] = {STORAGE: tuple(sorted(records_of(StoragePoint))),
                                            MEMORY: tuple(sorted(records_of(MemoryPoint)))}
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
    seen: dict[tuple[PointValue, ...], int] = {}
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
        point: dict[str, PointValue] = {}  # the point being rebuilt: canonical values by key
        mode = entry.get("mode") if kind == MEMORY else None
        for key, spec in keys.items():
            value = entry.get(key, keys[key].default)
            if value is None and key in MODE_ONLY_KEYS and mode not in MODE_ONLY_KEYS[key]:
                point[key] = None  # a key this point's mode does not read (normalise_point)
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
        if kind == STORAGE and point.get("cpus") == NODE:
            raise UsageError(f"{where} key 'cpus' has invalid value \"node\": a recorded plan holds the CPU list the "
                             "word was resolved to for its target.")
        problem = memory_problem(normalised) if kind == MEMORY else storage_problem(normalised)
        if problem:
            raise UsageError(f"{where}: {problem}")
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
        for key, limit in (("round", MAX_ROUNDS), ("replicate", MAX_REPEAT)):
            if key in entry:
                n = entry[key]
                if not isinstance(n, int) or isinstance(n, bool) or not 1 <= n <= limit:
                    raise UsageError(f"{where} key '{key}' has invalid value {show_value(n)}: must be a whole number "
                                     f"from 1 to {limit}.")
                point[key] = n
        identity = tuple(point[k] for k in keys) + (point.get("round"), point.get("replicate"))
        if identity in seen:
            raise UsageError(f"{where} repeats plan[{seen[identity]}] (the same settings twice).")
        seen[identity] = i
        points.append(point_from_dict(kind, point))
    return points


def check_track(where: str, plan: Iterable[Point], track: Mapping[str, object]) -> None:
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


def procedure_entry(kind: str, procedure: Procedure) -> dict[str, object]:
    """run.json's ``procedure`` of a run of ``kind``: the settings such a run takes (a memory run: its repeats)."""
    return {k: v for k, v in procedure.to_dict().items() if k in procedure_keys(kind)}


def validate_procedure(kind: Kind, value: object, source: str) -> Procedure:
    """The procedure a results directory's run.json records (untrusted), checked by the keys' parsers;
    a run without one had the default."""
    if value is None:
        return Procedure()
    known = procedure_keys(kind)
    if not isinstance(value, dict):
        raise _fail(source, f"key 'procedure' has invalid value {show_value(value)}: must be a table of "
                            f"{', '.join(known)}.")
    parsed: dict[str, object] = {}
    for key, raw in value.items():
        if key not in known:
            raise _fail(source, f"key 'procedure' has unknown key {show_value(key)}; known keys for a {kind} run: "
                                f"{', '.join(known)}.")
        parsed[key] = _check_procedure(f"{source}: procedure", key, raw)
    procedure = _procedure(Procedure(), parsed)
    check_repeat(procedure, f"{source}: procedure")
    return procedure


# --- where presets live -----------------------------------------------------------------------


def shipped_dir() -> Path:
    """The shipped presets: the repository's presets/ or the installed copy."""
    env = settings.presets_dir()
    if env:
        return env
    here = Path(__file__).resolve().parent.parent.parent / "presets"
    if here.is_dir():
        return here
    return Path(sys.prefix) / "share" / "profiler-tui" / "presets"


def user_dir() -> Path:
    return settings.config_home() / "profiler-tui" / "presets"


MAX_USER_PRESETS = 10_000  # names looked at in the user presets directory


@dataclass(frozen=True)
class UserPresets:
    """The user presets directory as root may use it: the files it may read (each checked again when read), the
    names it refuses (one sentence each), and the notes a listing shows (what was refused, and why)."""

    files: dict[str, Path] = field(default_factory=dict)
    refused: dict[str, str] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)


def _preset_names(names: Iterable[str]) -> list[str]:
    """The preset names among a directory's entries (``NAME.toml``, not hidden; a name with a control character,
    which would reach the terminal, is none), sorted."""
    out = [n[:-5] for n in itertools.islice(names, MAX_USER_PRESETS) if n.endswith(".toml")]
    return sorted(n for n in out if n and not n.startswith(".") and not has_control(n))


def user_presets() -> UserPresets:
    """The user presets (:func:`user_dir`), under the rules root reads them by: the directory and every
    directory above it changeable only by root or this user (no other user's symbolic link on the way:
    :func:`app.store.results.open_trusted_dir`, as for ``--out``), and each file a regular file, not a symbolic link,
    that only root or this user can change.  What breaks a rule is refused by name, never read."""
    directory = user_dir()
    try:
        os.lstat(directory)
    except OSError:
        return UserPresets()  # no user presets (or none to be seen)
    try:
        fd = open_trusted_dir(directory, risk=PRESET_RISK)
    except UsageError as e:
        try:  # the names only, to refuse them by name rather than fall back to a shipped preset of that name
            with os.scandir(directory) as it:
                names = _preset_names(entry.name for entry in it)
        except OSError:
            names = []
        return UserPresets({}, dict.fromkeys(names, str(e)), [str(e)])
    out = UserPresets()
    try:
        for name in _preset_names(os.listdir(fd)):
            path = directory / f"{name}.toml"
            try:
                st = os.stat(f"{name}.toml", dir_fd=fd, follow_symlinks=False)
            except OSError:
                continue
            why = "is a symbolic link, which is not followed here" if stat.S_ISLNK(st.st_mode) else _file_problem(st)
            if why:
                out.refused[name] = f"{_shown_path(path)}: {why}, so {PRESET_RISK}."
                out.notes.append(out.refused[name])
            else:
                out.files[name] = path
    finally:
        os.close(fd)
    return out


def _shipped() -> dict[str, Path]:
    d = shipped_dir()
    return {f.stem: f for f in sorted(d.glob("*.toml"))} if d.is_dir() else {}


def available(user: UserPresets | None = None) -> dict[str, Path]:
    """Preset name → file; a user preset of the same name shadows a shipped one, and a refused user preset
    (:func:`user_presets`) hides it: the name is not run from either."""
    user = user_presets() if user is None else user
    found = {name: path for name, path in _shipped().items() if name not in user.refused}
    return found | user.files


def load(name_or_path: str) -> Preset:
    """A shipped or user preset by name, or a TOML file by path (:func:`read_preset`: root reads only a file that
    no other user can change)."""
    if name_or_path.endswith(".toml") or os.sep in name_or_path:
        return load_file(name_or_path)
    user = user_presets()
    if name_or_path in user.refused:
        raise UsageError(user.refused[name_or_path])
    if name_or_path in user.files:
        return _load_user(name_or_path)
    table = available(user)
    if name_or_path not in table:
        not_read = f" The user presets were not read: {user.notes[0]}" if user.notes and not user.files else ""
        raise UsageError(
            f"Unknown preset {show_value(name_or_path, 200)}; available: {', '.join(sorted(table))} "
            "(or give a path to a .toml file)." + not_read
        )
    return load_file(table[name_or_path])


def _load_user(name: str) -> Preset:
    """A user preset, read relative to its directory opened and checked again (it may have changed since it was
    listed)."""
    directory = user_dir()
    fd = open_trusted_dir(directory, risk=PRESET_RISK)
    try:
        return parse_preset(read_preset(f"{name}.toml", fd), str(directory / f"{name}.toml"))
    finally:
        os.close(fd)


def load_listed(name: str, path: Path) -> Preset:
    """The preset ``available()`` listed as ``name`` at ``path``: a user preset read as :func:`load` reads it."""
    if path.parent == user_dir() and path.name == f"{name}.toml":
        return _load_user(name)
    return load_file(path)


def load_all(user: UserPresets | None = None) -> list[Preset]:
    user = user_presets() if user is None else user
    return [load_listed(name, path) for name, path in available(user).items()]


# --- --set overrides --------------------------------------------------------------------------


def parse_overrides(kind: str, items: list[str] | tuple[str, ...]) -> dict[str, list[object]]:
    """``["bs=4k,64k", "runtime=3"]`` → ``{"bs": [4096, 65536], "runtime": [3]}``.

    Spaces around keys and values are ignored; any other control character (tab, newline …) is an
    error, so ``--set $'rw=randread\n'`` is refused rather than read as randread."""
    axes, procedure = _overrides(kind, items)
    result: dict[str, list[object]] = {key: list(values) for key, values in axes.items()}
    return result | {key: [value] for key, value in procedure.items()}


_CPU_AXIS = ("key 'cpus' has value {value}, which --set reads as an axis of {n} points, each on one CPU; for one "
             "point on CPUs {listed} write the list in quotes, --set 'cpus=\"{listed}\"'{ranges}, and for the axis "
             "quote each CPU, --set 'cpus={quoted}'.")


def _split_values(value: str) -> list[tuple[str, bool]] | None:
    """The values of a ``--set`` item, each stripped and whether it was quoted: split at commas, except inside
    double or single quotes (a quoted value is one value, commas and all: the CPU list ``"0,2"``); None when a quote
    is not closed."""
    out: list[tuple[str, bool]] = []
    text: list[str] = []
    quote, quoted = "", False
    for ch in value:
        if quote:
            if ch == quote:
                quote = ""
            else:
                text.append(ch)
        elif ch in "\"'":
            quote, quoted = ch, True
        elif ch == ",":
            out.append(("".join(text).strip(" "), quoted))
            text, quoted = [], False
        else:
            text.append(ch)
    if quote:
        return None
    return out + [("".join(text).strip(" "), quoted)]


def _overrides(kind: str, items: list[str] | tuple[str, ...]) -> tuple[Axes, dict[str, object]]:
    """:func:`parse_overrides`, the point keys' axes apart from the procedure's settings (storage only)."""
    axes: Axes = {}
    procedure: dict[str, object] = {}
    for item in items:
        shown = escape_control(item) if has_control(item) else item
        if "=" not in item:
            raise UsageError(f"--set '{shown}' is not KEY=VALUE (for example --set bs=4k,64k).")
        key, _, value = item.partition("=")
        key = key.strip(" ")
        where = f"--set {shown}"
        if key in procedure_keys(kind):  # one value, not an axis
            if not value.strip(" "):
                raise _fail(where, f"key {show_value(key)} has an empty value.")
            procedure[key] = _check_procedure(where, key, value.strip(" "))
            continue
        split = _split_values(value)
        if split is None:
            raise _fail(where, f"key {show_value(key)} has a value whose quote is not closed.")
        values = [v for v, _ in split]
        if not value.strip(" ") or any(v == "" for v in values):
            raise _fail(where, f"key {show_value(key)} has an empty value.")
        if key == "cpus" and len(split) > 1 and all(v.isdigit() and not quoted for v, quoted in split):
            cpus = [int(v) for v in values]
            ranges = cpu_list_text(cpus) if cpus == sorted(set(cpus)) else None  # the same list, in the same order
            raise _fail(where, _CPU_AXIS.format(
                value=value.strip(" "), n=len(values), listed=",".join(values),
                ranges=f" (or as ranges, --set cpus={ranges})" if ranges and "-" in ranges else "",
                quoted=",".join(f'"{v}"' for v in values)))
        if len(values) > MAX_PLAN_POINTS:
            raise _fail(where, f"key {show_value(key)} has {len(values):,} values, more than the limit of "
                               f"{MAX_PLAN_POINTS:,} points per run.")
        axes[key] = [_check_value(where, kind, key, v) for v in values]
    return axes, procedure


def apply_overrides(preset: Preset, items: list[str] | tuple[str, ...]) -> Preset:
    overrides, procedure = _overrides(preset.kind, items)
    preset.procedure = _procedure(preset.procedure, procedure)
    preset.overrides.update(overrides)
    for key in overrides:
        preset.settings.pop(key, None)
    given = [item for item in items if item.partition("=")[0].strip(" ") == "track"]
    if given:  # a track that matches no point is refused naming the --set that chose it, not the preset file
        preset.track_source = f"--set {given[-1]}"
    return preset


PRESET_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*")


def save_user_preset(preset_toml: str, name: str) -> Path:
    """Write a user preset (validated first) into the user directory: the directory (and those above it) made or
    checked under the rules :func:`user_presets` reads by, then the file replaced atomically relative to the
    directory's descriptor (a temp file opened without following a link, then renamed: nothing is written
    through a symbolic link or into another user's directory).  UsageError (exit 2) naming the file otherwise."""
    if not PRESET_NAME.fullmatch(name):
        raise UsageError(f"Preset name '{name}' may use letters, digits, '-', '_' and '.' only.")
    directory = user_dir()
    path = directory / f"{name}.toml"
    if len(preset_toml.encode("utf-8")) > MAX_PRESET_BYTES:
        raise UsageError(f"{path}: larger than {MAX_PRESET_BYTES // (1 << 20)} MiB, the limit for a preset file.")
    parse_preset(_parse_toml(preset_toml, str(path)), str(path))
    make_dirs(directory, PRESET_RISK)
    fd = open_trusted_dir(directory, risk=PRESET_RISK)
    try:
        write_atomic(Path(path.name), preset_toml, dir_fd=fd)
    except OSError as e:
        raise UsageError(f"{_shown_path(path)}: cannot be written ({e.strerror or e}).") from None
    finally:
        os.close(fd)
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


def describe_axes(preset: Preset) -> Axes:
    """Every key that varies across the plan, with its values in plan order."""
    points = preset._points()
    axes: Axes = {}
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
