"""run.json as a type: :class:`RunMeta`, its one reader and its one writer.

run.json says what a run is and how it went (docs/results-schema.md, ``app/schemas/run.schema.json``).  It is
untrusted input when read back (``report``, ``compare``, ``resume``, the runs browser), so every key the tool
reads is checked here, once, and read as a typed attribute; a wrong type is a :class:`RunMetaError` (a
UsageError, exit 2) whose one sentence names the file, the key and its value.  Null reads as absent.

A ``RunMeta`` keeps the whole JSON object as the file holds it (``doc``, its keys in their order, unknown keys
included), so a run.json written by a newer version still loads and is written back unchanged; the typed
attributes are read from ``doc`` by :func:`from_json` and nothing else builds a ``RunMeta``.  A change is a
new ``RunMeta`` (:meth:`RunMeta.with_changes`: a key that exists keeps its place, a new key goes last).

:func:`parse` (bytes or text) and :func:`from_json` (a decoded object) are the reader; :func:`dumps` is the
writer: two-space indented JSON and a newline, the bytes :meth:`app.store.results.ResultsDir.write_meta` writes.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Mapping, NoReturn

from app.core.errors import UsageError
from app.model.points import MemoryPoint, StoragePoint
from app.model.records import MAX_NUMBER  # no count in run.json exceeds a results line's largest figure

JSONObject = Mapping[str, object]  # a JSON object as read: every value still to be checked before use


class RunMetaError(UsageError):
    """run.json is not JSON, not an object, or a key the tool reads has the wrong type (exit 2)."""


def json_default(value: object) -> object:
    """What run.json and results.jsonl write for a value JSON has no type for: a plan point as its JSON
    table (:meth:`app.model.points.StoragePoint.to_dict`, the bytes a dict of its keys gives), anything else
    (a path) as its string."""
    if isinstance(value, (StoragePoint, MemoryPoint)):
        return value.to_dict()
    return str(value)


def shown(value: object) -> str:
    """A value as an error message quotes it: JSON, at most 60 characters."""
    try:
        text = json.dumps(value, default=str)
    except (ValueError, RecursionError):
        text = type(value).__name__
    if isinstance(value, str):
        text = "'" + text[1:-1] + "'"
    return text if len(text) <= 60 else text[:59] + "…"


# --- the checked reading of one JSON object ----------------------------------------------------------------


class _Fields:
    """The values of one JSON object in run.json, each read with its type checked (null reads as absent);
    ``where`` is the object's key path, so an error names the full key (``preset.overrides``)."""

    def __init__(self, obj: JSONObject, where: str, source: str) -> None:
        self.obj, self.where, self.source = obj, where, source

    def key(self, name: str) -> str:
        return f"{self.where}.{name}" if self.where else name

    def fail(self, key: str, value: object, must: str) -> NoReturn:
        raise RunMetaError(f"{self.source}: key '{key}' has invalid value {shown(value)}: must be {must}.")

    def text(self, name: str) -> str | None:
        v = self.obj.get(name)
        if v is None or isinstance(v, str):
            return v
        self.fail(self.key(name), v, "a string")

    def whole(self, name: str) -> int | None:
        v = self.obj.get(name)
        if v is None:
            return None
        if not isinstance(v, int) or isinstance(v, bool) or not 0 <= v <= MAX_NUMBER:
            self.fail(self.key(name), v, "a whole number")
        return v

    def number(self, name: str) -> float | None:
        v = self.obj.get(name)
        if v is None:
            return None
        if not isinstance(v, (int, float)) or isinstance(v, bool) or not math.isfinite(v) or v < 0:
            self.fail(self.key(name), v, "a number")
        return v

    def flag(self, name: str) -> bool | None:
        v = self.obj.get(name)
        if v is None or isinstance(v, bool):
            return v
        self.fail(self.key(name), v, "true or false")

    def mapping(self, name: str) -> JSONObject | None:
        v = self.obj.get(name)
        if v is None or isinstance(v, dict):
            return v
        self.fail(self.key(name), v, "an object")

    def fields(self, name: str) -> _Fields | None:
        obj = self.mapping(name)
        return None if obj is None else _Fields(obj, self.key(name), self.source)

    def items(self, name: str) -> list[object]:
        v = self.obj.get(name)
        if v is None:
            return []
        if not isinstance(v, list):
            self.fail(self.key(name), v, "a list")
        return v

    def texts(self, name: str) -> tuple[str, ...]:
        out = self.items(name)
        for i, item in enumerate(out):
            if not isinstance(item, str):
                self.fail(f"{self.key(name)}[{i}]", item, "a string")
        return tuple(str(item) for item in out)

    def objects(self, name: str) -> list[_Fields]:
        out = []
        for i, item in enumerate(self.items(name)):
            key = f"{self.key(name)}[{i}]"
            if not isinstance(item, dict):
                self.fail(key, item, "an object")
            out.append(_Fields(item, key, self.source))
        return out


# --- the parts ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class PresetRef:
    """``preset``: the preset the run was planned from."""

    name: str | None = None
    kind: str | None = None
    description: str | None = None
    source: str | None = None
    overrides: tuple[str, ...] = ()  # the --set values given, as typed

    @classmethod
    def read(cls, f: _Fields) -> PresetRef:
        return cls(f.text("name"), f.text("kind"), f.text("description"), f.text("source"), f.texts("overrides"))


@dataclass(frozen=True)
class RecordedProcedure:
    """``procedure`` (present only when not the default): ``entry`` is the object as recorded, which
    :func:`app.plan.presets.validate_procedure` turns into a :class:`app.plan.procedure.Procedure` for ``resume``."""

    entry: JSONObject
    precondition: str | None = None
    rounds: int | None = None
    track: JSONObject | None = None
    timeseries: str | None = None
    telemetry_interval: int | None = None

    @classmethod
    def read(cls, f: _Fields) -> RecordedProcedure:
        return cls(f.obj, f.text("precondition"), f.whole("rounds"), f.mapping("track"), f.text("timeseries"),
                   f.whole("telemetry_interval"))


@dataclass(frozen=True)
class Failure:
    """One entry of ``failures``: a point that failed (a fleet run: on ``host``)."""

    entry: JSONObject  # as recorded, with its point and time
    index: int | None = None
    error: str | None = None
    host: str | None = None

    @classmethod
    def read(cls, f: _Fields) -> Failure:
        f.mapping("point")
        return cls(f.obj, f.whole("index"), f.text("error"), f.text("host"))


@dataclass(frozen=True)
class Skip:
    """One entry of ``skipped``: a point the procedure's rules left out, and why."""

    entry: JSONObject
    index: int | None = None
    reason: str | None = None
    point: JSONObject | None = None

    @classmethod
    def read(cls, f: _Fields) -> Skip:
        return cls(f.obj, f.whole("index"), f.text("reason"), f.mapping("point"))


@dataclass(frozen=True)
class Source:
    """One entry of ``sources`` (an imported run): a file read, and what was wrong with it."""

    file: str | None = None
    warnings: tuple[str, ...] = ()


@dataclass(frozen=True)
class NumaNode:
    """One entry of ``environment.numa.nodes``: a node, its CPU list and its memory."""

    node: int | None = None
    cpus: str | None = None  # "0-3,8"; "" for a node without CPUs
    memory_bytes: int | None = None

    @classmethod
    def read(cls, f: _Fields) -> NumaNode:
        return cls(f.whole("node"), f.text("cpus"), f.whole("memory_bytes"))


@dataclass(frozen=True)
class Numa:
    """``environment.numa``: the NUMA nodes, or (no nodes) why the layout is unknown; absent before it was recorded."""

    nodes: tuple[NumaNode, ...] = ()
    unknown: str | None = None

    @classmethod
    def read(cls, f: _Fields) -> Numa:
        return cls(tuple(NumaNode.read(n) for n in f.objects("nodes")), f.text("unknown"))


@dataclass(frozen=True)
class Environment:
    """``environment``: the machine that measured (app.host.envinfo.collect); ``entry`` is the object as recorded."""

    entry: JSONObject
    cpu: JSONObject | None = None  # model, sockets, cores, threads, arch, tlb, caches
    caches: tuple[JSONObject, ...] = ()  # cpu.caches: CPU 0's caches, each with name, level, size
    memory: JSONObject | None = None  # total_bytes, hugepages_total, transparent_hugepages
    system: JSONObject | None = None  # os, kernel, virtualization, container
    numa: Numa | None = None

    @classmethod
    def read(cls, f: _Fields) -> Environment:
        cpu = f.fields("cpu")
        caches = tuple(c.obj for c in cpu.objects("caches")) if cpu is not None else ()
        numa = f.fields("numa")
        return cls(f.obj, cpu.obj if cpu is not None else None, caches, f.mapping("memory"), f.mapping("system"),
                   Numa.read(numa) if numa is not None else None)


# --- run.json ------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class RunMeta:
    """run.json, read by :func:`from_json` only.  Absent and null keys read as None (lists as empty)."""

    doc: JSONObject = field(repr=False)  # the whole object as written, unknown keys included, in its order
    source: str = field(repr=False, compare=False)  # the file, for error messages
    schema_version: int | None = None
    tool: str | None = None
    status: str | None = None  # planned, running, complete, partial, interrupted, failed, imported (unchecked)
    kind: str | None = None  # storage or memory (checked by resume against the kinds)
    preset: PresetRef | None = None
    plan: tuple[object, ...] = ()  # the plan's points as their JSON tables (validated by resume)
    points_total: int | None = None
    points_done: int | None = None
    estimated_seconds: float | None = None
    target: str | None = None  # None for a memory run or a fleet run
    target_created_by_tool: bool | None = None
    target_info: JSONObject | None = None
    engine: str | None = None
    procedure: RecordedProcedure | None = None
    environment: Environment | None = None
    tools: JSONObject | None = None
    started: str | None = None
    ended: str | None = None
    resumed_at: str | None = None
    imported_at: str | None = None
    error: str | None = None  # why a failed run stopped
    failures: tuple[Failure, ...] = ()
    skipped: tuple[Skip, ...] = ()
    warnings: tuple[str, ...] = ()
    sources: tuple[Source, ...] = ()
    precondition: JSONObject | None = None  # the preconditioning pass as it ran
    telemetry: JSONObject | None = None  # the drive's health log: where it is read, or why there is none
    fleet: JSONObject | None = None  # a fleet run's hosts (checked by app.report.data.fleet_read / app.fleet.runner)
    audit: JSONObject | None = None  # the host settings read before the first point (app.host.audit)
    tune: JSONObject | None = None  # settings --tune changed, their previous values and whether restored
                                    # (app.host.tune)

    @property
    def is_fleet(self) -> bool:
        return self.fleet is not None

    @property
    def imported(self) -> bool:
        return self.status == "imported"

    @property
    def preset_name(self) -> str | None:
        return self.preset.name if self.preset is not None else None

    @property
    def precondition_done(self) -> bool:
        """The preconditioning pass ran to its end (a resumed run does not repeat it)."""
        return self.precondition is not None and self.precondition.get("status") == "done"

    def listed(self, key: str) -> list[object]:
        """The list under ``key`` as written ([] when there is none), to append an entry to."""
        kept = self.doc.get(key)
        return list(kept) if isinstance(kept, list) else []

    def with_changes(self, **changes: object) -> RunMeta:
        """This run.json with ``changes`` (a key that exists keeps its place, a new key goes last), read again."""
        return from_json({**self.doc, **_plain(changes)}, self.source)


def _plain(values: Mapping[str, object]) -> dict[str, object]:
    """``values`` as JSON holds them (points as their tables, paths as text, tuples as lists): what is written
    and what is read back are the same object."""
    out = json.loads(json.dumps(values, default=json_default))
    assert isinstance(out, dict)
    return out


def _sources(f: _Fields) -> tuple[Source, ...]:
    return tuple(Source(s.text("file"), s.texts("warnings")) for s in f.objects("sources"))


def from_json(obj: object, source: str | Path) -> RunMeta:
    """The reader: ``obj`` (a decoded run.json) checked and typed; RunMetaError naming ``source``, the key
    and the value when a key the tool reads has the wrong type."""
    where = str(source)
    if not isinstance(obj, dict):
        raise RunMetaError(f"{where}: expected a JSON object.")
    f = _Fields(obj, "", where)
    preset, procedure, env = f.fields("preset"), f.fields("procedure"), f.fields("environment")
    return RunMeta(
        doc=obj, source=where, schema_version=f.whole("schema_version"), tool=f.text("tool"),
        status=f.text("status"), kind=f.text("kind"),
        preset=PresetRef.read(preset) if preset is not None and preset.obj else None,
        plan=tuple(f.items("plan")), points_total=f.whole("points_total"), points_done=f.whole("points_done"),
        estimated_seconds=f.number("estimated_seconds"), target=f.text("target"),
        target_created_by_tool=f.flag("target_created_by_tool"), target_info=f.mapping("target_info"),
        engine=f.text("engine"), procedure=RecordedProcedure.read(procedure) if procedure is not None else None,
        environment=Environment.read(env) if env is not None else None, tools=f.mapping("tools"),
        started=f.text("started"),
        ended=f.text("ended"), resumed_at=f.text("resumed_at"), imported_at=f.text("imported_at"),
        error=f.text("error"), failures=tuple(Failure.read(e) for e in f.objects("failures")),
        skipped=tuple(Skip.read(e) for e in f.objects("skipped")), warnings=f.texts("warnings"),
        sources=_sources(f), precondition=f.mapping("precondition"), telemetry=f.mapping("telemetry"),
        fleet=f.mapping("fleet"), audit=f.mapping("audit"), tune=f.mapping("tune"),
    )


def parse(data: bytes | str, source: str | Path) -> RunMeta:
    """The reader from the file's bytes: RunMetaError when they are not JSON (see :func:`from_json`)."""
    text = data.decode("utf-8", "replace") if isinstance(data, bytes) else data
    try:
        obj = json.loads(text)
    except (ValueError, RecursionError) as e:
        raise RunMetaError(f"{source}: cannot be read ({e}).") from None
    return from_json(obj, source)


def new(values: Mapping[str, object], source: str | Path) -> RunMeta:
    """The run.json the tool makes from ``values`` (points, paths and enums as JSON writes them)."""
    return from_json(_plain(values), source)


def dumps(meta: RunMeta) -> str:
    """The writer: run.json's text, two-space indented, keys in ``doc``'s order, and a newline."""
    return json.dumps(meta.doc, indent=2) + "\n"
