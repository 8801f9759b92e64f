"""A results directory read for the report: typed views of its storage and memory result rows
(`StorageRow`, `MemoryRow`: a measured line of results.jsonl; the plan's points are app.model.points).

Nothing here draws or formats; :mod:`app.report.compute.analysis` computes, :mod:`app.report.render`
writes markdown, :mod:`app.report.figures.plots` draws.  Units inside: bytes, bytes/s, nanoseconds.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import ClassVar, Mapping, TypeVar

from app.model.keys import Role
from app.model.points import Kind, StoragePoint, with_role
from app.model.records import JSONObject, JSONValue, MemoryMetrics, ResultLine, StorageMetrics, read_line
from app.model.runmeta import RunMeta
from app.report.data.fleet_read import FleetHost, fleet_hosts, is_fleet
from app.stats.validity import FLAGS, SYNC_ENGINES, flags_of
from app.store.lock import effective_status
from app.store.results import ResultsDir

# point keys that identify the workload; the others (runtime, size, ...) are run settings
WORKLOAD_KEYS = with_role(StoragePoint, Role.WORKLOAD)
SETTING_KEYS = with_role(StoragePoint, Role.SETTING)

TRAFFIC_DESCRIPTIONS = {
    "R": "all reads",
    "W2": "2:1 read:write",
    "W3": "3:1 read:write",
    "W4": "3:2 read:write",
    "W5": "1:1 read:write",
    "W6": "0:1 read : non-temporal write",
    "W7": "2:1 read : non-temporal write",
    "W8": "1:1 read : non-temporal write",
    "W9": "3:1 read : non-temporal write",
    "W10": "2:1 read : non-temporal write, stream-triad-like",
    "W11": "3:1 read:write, stream-triad-like with RFO",
    "W12": "4:1 read:write",
}


def _whole(v: JSONValue, default: int) -> int:
    """A point key the reader checked as a whole number (or null)."""
    return v if isinstance(v, int) and not isinstance(v, bool) else default


def _float(v: float | None, default: float = 0.0) -> float:
    return default if v is None else float(v)


R = TypeVar("R", bound="_Row")
FLAG_NAME = re.compile(r"[a-z0-9][a-z0-9-]{0,39}")  # a flag's name as the tool writes them


def replicate_of(point: Mapping[str, object]) -> int | None:
    """The replicate of a repeated point's settings (1-based, a whole number), else None."""
    r = point.get("replicate")
    return r if isinstance(r, int) and not isinstance(r, bool) else None


@dataclass
class _Row:
    """A measured line of results.jsonl by its plan index."""

    index: int
    line: ResultLine = field(repr=False)
    kind: ClassVar[Kind]

    @classmethod
    def of(cls: type[R], index: int, point: JSONObject, metrics: JSONObject, more: JSONObject | None = None) -> R:
        """A row from the JSON pieces of a line (``more``: its other keys), typed as the reader types them."""
        return cls(index, read_line({**(more or {}), "kind": cls.kind.value, "point": point, "metrics": metrics},
                                    check=False))

    @property
    def point(self) -> JSONObject:
        return self.line.point

    @property
    def replicate(self) -> int | None:
        """The replicate of a repeated point (1-based, a whole number), else None."""
        return replicate_of(self.point)

    @property
    def source(self) -> str:
        """Where the figure comes from when it was not measured by this run: the imported file it was read from
        (the point's ``source`` when it names one), else "".  Figures of different sources may come from
        different machines: no table, curve or baseline mixes them."""
        s = self.point.get("source") or self.line.imported_from
        return s if isinstance(s, str) else ""


@dataclass
class StorageRow(_Row):
    """One measured storage point (a results.jsonl line, :class:`app.model.records.ResultLine`). The derived workload
    fields are computed once (cached): a row is read-only once loaded."""

    kind: ClassVar[Kind] = Kind.STORAGE
    # its whole-second samples once app.report.compute.noise has read them (several analyses ask for them)
    whole_samples: list[Mapping[str, object]] | None = field(default=None, repr=False, compare=False)
    # figure → (low, high) once app.report.compute.intervals has found them (recorded, or computed from the
    # samples), why
    # the headline figure has none, and figure → why what the line records (or its samples give) is no interval
    computed_ci: tuple[dict[str, tuple[float, float]], str, dict[str, str]] | None = field(
        default=None, repr=False, compare=False)

    @property
    def metrics(self) -> StorageMetrics:
        return self.line.storage

    # -- workload ------------------------------------------------------------------------------
    @property
    def rw(self) -> str:
        return str(self.point.get("rw") or "read")

    @property
    def bs(self) -> int:
        return _whole(self.point.get("bs"), 0)

    @property
    def iodepth(self) -> int:
        return _whole(self.point.get("iodepth"), 0) or 1

    @property
    def numjobs(self) -> int:
        return _whole(self.point.get("numjobs"), 0) or 1

    @property
    def ioengine(self) -> str:
        return str(self.point.get("ioengine") or "")

    @cached_property
    def read_pct(self) -> int:
        """Percentage of reads the workload asks for."""
        rw = self.rw
        if rw in ("rw", "randrw", "readwrite"):
            return _whole(self.point.get("rwmixread"), 50)
        return 0 if ("write" in rw or "trim" in rw) else 100

    @property
    def random(self) -> bool:
        return self.rw.startswith("rand")

    @property
    def mixed(self) -> bool:
        return self.rw in ("rw", "randrw", "readwrite")

    @cached_property
    def mix(self) -> str:
        """The access pattern and read/write mix, the 'mix' axis of tables and heatmaps."""
        if self.mixed:
            return f"{self.rw} {self.read_pct}/{100 - self.read_pct}"
        return self.rw

    @cached_property
    def mix_order(self) -> tuple[int, int]:
        return (1 if self.random else 0, -self.read_pct)

    @cached_property
    def effective_depth(self) -> int:
        """I/Os one job can keep in flight: synchronous engines cap the queue depth at 1."""
        return 1 if self.ioengine in SYNC_ENGINES else self.iodepth

    @cached_property
    def flags(self) -> list[dict[str, str]]:
        """The validity flags the run recorded for this point (app.stats.validity), in their fixed order."""
        return flags_of(self.line)

    @cached_property
    def other_flags(self) -> list[dict[str, str]]:
        """The well-formed flags of the line that are not among this version's checks (FLAGS): a flag a newer
        version raised, shown by its name and the line's reason (whitespace folded, at most 300 characters)."""
        out: dict[str, str] = {}
        for f in self.line.flags or []:
            name = f.get("flag") if isinstance(f, dict) else None
            reason = f.get("reason") if isinstance(f, dict) else None
            if isinstance(name, str) and name not in FLAGS and FLAG_NAME.fullmatch(name) and isinstance(reason, str):
                out.setdefault(name, " ".join(reason.split())[:300])
        return [{"flag": k, "reason": v} for k, v in out.items()]

    @property
    def checked(self) -> bool:
        """The line carries the validity checks (lines written before they existed do not)."""
        return self.line.flags is not None

    @cached_property
    def inflight(self) -> int:
        """N of Little's law: the I/Os the workload keeps outstanding (depth × jobs)."""
        return self.effective_depth * self.numjobs

    @cached_property
    def rest(self) -> tuple[tuple[str, JSONValue], ...]:
        """Everything else that defines the workload (ioengine, direct, ...)."""
        skip = set(WORKLOAD_KEYS) | set(SETTING_KEYS)
        own = [(k, v) for k, v in self.point.items() if k not in skip and not isinstance(v, (dict, list))]
        if self.line.imported_from:  # files imported together may be different machines: never one workload
            own.append(("imported_from", self.source))
        return tuple(sorted(own, key=lambda kv: kv[0]))

    # -- measurements ------------------------------------------------------------------------
    @property
    def iops(self) -> float:
        return _float(self.metrics.iops)

    @property
    def bw(self) -> float:
        return _float(self.metrics.bw_bytes)

    def lat(self, key: str) -> float:
        return _float(self.metrics.lat_ns.get(key) if self.metrics.lat_ns is not None else None)

    @property
    def lat_mean(self) -> float:
        return self.lat("mean")

    @property
    def p99(self) -> float | None:
        v = self.metrics.lat_ns.get("p99") if self.metrics.lat_ns is not None else None
        return None if v is None or v == 0 else float(v)

    @property
    def usr(self) -> float:
        return _float(self.metrics.usr_cpu)

    @property
    def sys(self) -> float:
        return _float(self.metrics.sys_cpu)

    @property
    def round(self) -> int | None:
        """The round of a run in rounds that measured this row (a whole number), else None."""
        r = self.point.get("round")
        return r if isinstance(r, int) and not isinstance(r, bool) else None

    @property
    def group(self) -> str | None:
        g = self.point.get("group")
        return str(g) if g else None

    @property
    def host(self) -> str | None:
        """The fleet host that measured this point (a fleet run's lines carry it), else None."""
        return self.line.host


@dataclass
class MemoryRow(_Row):
    kind: ClassVar[Kind] = Kind.MEMORY

    @property
    def metrics(self) -> MemoryMetrics:
        return self.line.memory

    @property
    def mode(self) -> str:
        return str(self.point.get("mode") or ("idle" if self.point.get("delay") is None else "loaded"))

    @property
    def traffic(self) -> str | None:
        t = self.point.get("traffic")
        return t if isinstance(t, str) else None

    def _int(self, key: str) -> int | None:
        v = self.point.get(key)
        return v if isinstance(v, int) and not isinstance(v, bool) else None

    @property
    def stride(self) -> int | None:
        return self._int("stride")

    @property
    def delay(self) -> int | None:
        return self._int("delay")

    @property
    def buffer(self) -> int | None:
        return self._int("buffer")

    @property
    def engine(self) -> str:
        return str(self.point.get("engine") or "")

    @property
    def latency(self) -> float | None:
        v = self.metrics.latency_ns
        return None if v is None else float(v)

    @property
    def bandwidth(self) -> float | None:
        v = self.metrics.bandwidth_mbps
        return None if v is None else float(v)

    @property
    def series(self) -> tuple[str, int, int, str, str, str, str]:
        """One MLC table: traffic, stride, buffer, engine, source, chase, NUMA node (the delays are its rows)."""
        node = self.point.get("mem_node")
        return (self.traffic or "R", self.stride or 0, self.buffer or 0, self.engine,
                self.source, str(self.point.get("tlb_locality") or ""),
                str(node) if node is not None else "")


@dataclass
class FleetInfo:
    """A fleet run's hosts (run.json's ``fleet``, in its order), and the lines naming none of them."""

    hosts: list[FleetHost]
    strangers: int = 0  # storage lines left out: their ``host`` is not one of ``hosts``

    @property
    def names(self) -> list[str]:
        return [h.host for h in self.hosts]


@dataclass
class RunData:
    path: Path
    meta: RunMeta
    storage: list[StorageRow]
    memory: list[MemoryRow]
    unreadable: int = 0  # results.jsonl lines left out: not JSON, or not a well-formed record
    replaced: int = 0  # lines of a plan index measured again later (the last one is used)
    outside: int = 0  # records that measure no point of run.json's plan (app.model.records.plan_mismatch)
    measured: int = 0  # points measured, when ``storage`` holds fewer rows than that (a run in rounds): 0 = all
    fleet: FleetInfo | None = None  # a fleet run: ``storage`` holds one row per (point, host)
    outside_lines: list[int] = field(default_factory=list)  # the outside lines' numbers in results.jsonl (first few)
    problems: list[str] = field(default_factory=list)  # why lines were left out, one sentence each (the first few)

    @property
    def left_out(self) -> int:
        """results.jsonl lines no figure of the report uses: unreadable, or measuring no point of the plan."""
        return self.unreadable + self.outside

    @property
    def imported(self) -> bool:
        return self.meta.imported

    @property
    def status(self) -> str:
        """The run's status as it is now: ``running`` or ``planned`` with no process holding the
        directory's lock means the process died, so the run is ``interrupted``."""
        return effective_status(self.path, self.meta.status)

    def _named_problems(self, most: int = 3) -> list[str]:
        """The first ``most`` reasons a line was left out, with the directory's path cut (the report names
        results.jsonl alone), and how many more there were."""
        prefix = f"{self.path}/"
        shown = [p[len(prefix):] if p.startswith(prefix) else p for p in self.problems[:most]]
        more = self.left_out - len(shown)
        return shown + ([f"({more} more.)"] if more > 0 else [])

    def warnings(self) -> list[str]:
        """Every warning the directory carries: run.json's ``warnings``, each source's ``warnings``
        (e.g. a truncated MLC table), and the lines of results.jsonl that were not used."""
        out = list(self.meta.warnings)
        for src in self.meta.sources:
            out += [f"{src.file or 'an imported file'}: {w}" for w in src.warnings]
        if self.unreadable:
            out.append(f"{self.unreadable} line{'s' if self.unreadable != 1 else ''} of results.jsonl could not be "
                       "read and " + ("were" if self.unreadable != 1 else "was") + " left out.")
        if self.outside:
            n = self.outside
            where = ", ".join(str(x) for x in self.outside_lines) + (" …" if n > len(self.outside_lines) else "")
            out.append(f"{n} line{'s' if n != 1 else ''} of results.jsonl name{'s' if n == 1 else ''} a point that "
                       f"is not in run.json's plan at {'their' if n != 1 else 'its'} index (no index, one past the "
                       "plan, or another point than the plan's there: a measurement of neither) and "
                       + ("were" if n != 1 else "was") + " left out" + (f" (line {where})." if where else "."))
        if self.problems:
            out.append("Why: " + " ".join(self._named_problems()))
        if self.replaced:
            out.append(f"{self.replaced} point{'s were' if self.replaced != 1 else ' was'} measured more than once; "
                       "the last measurement is used.")
        if self.fleet is not None and self.fleet.strangers:
            n = self.fleet.strangers
            out.append(f"{n} line{'s' if n != 1 else ''} of results.jsonl name{'s' if n == 1 else ''} no host of "
                       f"run.json's fleet and {'were' if n != 1 else 'was'} left out.")
        return out


def split_records(lines: list[ResultLine], plan: object = None) -> tuple[list[StorageRow], list[MemoryRow], int]:
    """Results lines as storage and memory rows, each by plan index; lines whose index is past the end of a
    non-empty ``plan`` are left out and counted (the third value)."""
    storage: list[StorageRow] = []
    memory: list[MemoryRow] = []
    outside = 0
    for i, line in enumerate(lines):
        index = i if line.index is None else line.index
        if isinstance(plan, list) and plan and index >= len(plan):
            outside += 1
            continue
        if line.kind == Kind.MEMORY:
            memory.append(MemoryRow(index, line))
        else:
            storage.append(StorageRow(index, line))
    storage.sort(key=lambda p: p.index)
    memory.sort(key=lambda p: p.index)
    return storage, memory, outside


def load(path: str | Path) -> RunData:
    """Read a results directory for the report and compare: run.json by :func:`app.model.runmeta.parse` (a wrong
    type is a UsageError naming the key), results.jsonl by :meth:`ResultsDir.read_records`."""
    rd = ResultsDir(path)
    meta = rd.read_meta()
    if is_fleet(meta):
        return _load_fleet(rd, meta)
    read = rd.read_records(meta.plan)
    storage, memory, outside = split_records(read.lines, list(meta.plan))
    return RunData(Path(path), meta, storage, memory, read.unreadable, read.replaced, read.outside + outside,
                   outside_lines=read.outside_lines, problems=read.problems)


def _load_fleet(rd: ResultsDir, meta: RunMeta) -> RunData:
    """A fleet run: one storage row per (point, host) of run.json's hosts, by plan index then host order."""
    fleet = FleetInfo(fleet_hosts(meta, rd.run_json))
    read = rd.read_records(meta.plan)  # keyed by (index, host)
    storage, memory, outside = split_records(read.lines, list(meta.plan))
    order = {name: i for i, name in enumerate(fleet.names)}
    kept = [p for p in storage if p.host in order]
    fleet.strangers = len(storage) - len(kept)
    kept.sort(key=lambda p: (p.index, order[p.host or ""]))
    return RunData(rd.path, meta, kept, memory, read.unreadable, read.replaced, read.outside + outside,
                   fleet=fleet, outside_lines=read.outside_lines, problems=read.problems)
