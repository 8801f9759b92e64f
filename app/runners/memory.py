"""The memory runner: Intel MLC when it is available, otherwise the built-in engine.

``MemoryRunner(engine)`` with ``engine`` one of ``auto``, ``mlc``, ``builtin``; the choice itself is
:func:`choose_engine`, a function of the machine's :class:`EngineFacts`:

* MLC is looked for in ``MLC_PATH`` (a file, or a directory holding ``mlc``), then ``mlc`` on
  ``PATH``, then ``/opt/mlc/mlc``.  ``--engine mlc`` without it is :class:`ToolMissing` (exit 4).
* The built-in engine (``native/memlat``) is looked for in ``PROFILER_TUI_MEMLAT``, then the
  repository's ``native/memlat/build/memlat``, then the installed package's ``app/bin/memlat`` (setup.py
  builds it into the wheel), then ``memlat`` on ``PATH`` (the container installs it as
  ``/usr/local/bin/memlat``).
* ``auto`` takes MLC when found and usable (x86; on AMD only when huge pages are reserved or this
  process may reserve them, below) and otherwise the built-in engine; the fallback is announced by
  :attr:`MemoryRunner.notice` (the CLI prints it) and recorded in run.json's tools and in every
  results line (``point.engine`` and ``engine``).

Huge pages for MLC on AMD: MLC needs huge pages on AMD (``vendor_id : AuthenticAMD`` in
/proc/cpuinfo; not on Intel).  When MLC runs there and this process may write
/proc/sys/vm/nr_hugepages (root with a writable /proc/sys, e.g. a privileged container), each MLC
batch (one ``MemoryRunner.run`` call: one curve, or one idle point) first reserves what its
buffers need and restores the previous value when the batch ends — also when a point fails and
when the run is interrupted (SIGINT/SIGTERM cancel the task; the restore is in a ``finally``, with
an ``atexit`` fallback); only SIGKILL can leave the pages reserved.  The need is threads × buffers
per thread × the buffer in huge pages (``Hugepagesize`` from /proc/meminfo, 2 MiB), plus 5 % (at
least 16 pages) for MLC's own allocations.  Without a buffer in the plan MLC chooses its own, so the
reservation assumes 2000 MiB for idle latency (MLC 3.7's default) and 256 MiB per buffer and
thread for loaded latency (MLC prints 100–183 MiB); MLC allocates a write buffer per thread even
for ``-R``, so a loaded point counts at least 2 buffers per thread.  Only what HugePages_Free lacks
is added, and at most 75 % of MemAvailable.  The kernel may grant fewer pages than asked (memory
too fragmented): the value is read back and what was granted is what is recorded.  The record
(``previous``, ``requested``, ``granted``, ``restored``…) goes into every results line of the batch
(``huge_pages``) and into run.json (``huge_pages``, one entry per batch, through ``Context.note``).
The previous value is written back only if nr_hugepages still holds what this batch set (another process that changed
it meanwhile wins).  Without permission, ``auto`` keeps the built-in engine when no huge pages are
reserved, and ``--engine mlc`` runs MLC as asked (it may fail).

Batches: all delays of one (traffic, stride, buffer, duration, cpus) form one batch.  The built-in
engine measures a batch in one process (``-D d1,d2,…``).  MLC measures one delay per process
(``-d N``) unless the batch is exactly its 19 default delays, which one plain ``--loaded_latency``
sweeps.  Each engine's class (:class:`MlcEngine`, :class:`BuiltinEngine`) turns a batch into
:class:`Invocation` s (a command line and the points it measures); one loop runs each of them.
Either way stdout is parsed as it prints (:class:`app.runners.mlc_parse.LineParser`) and
every row becomes a :class:`Sample` and its point's :class:`Result` at once, so a UI draws the
curve live.  The raw text of a point (``raw/NNNN-….txt``) is the output up to and including its
row: it parses on its own.

Uncertainty: the built-in engine measures each idle, loaded, bandwidth-only, peak and scaling figure also in 20
equal sub-windows of its window (``--windows``; native/memlat/README.md) and prints them before the row; each
figure's results line gets the 95 % batch-means interval of the mean of its sub-window values
(:func:`window_uncertainty`: ``metrics.ci95`` and ``ci_method``, docs/uncertainty.md).  MLC rows, c2c figures
(medians of 5 windows), working-set sizes (one window each) and matrix cells say why they have none.

Bounded memory: a point's raw text keeps the first 256 KiB (``RAW_HEAD_CHARS``) and the last
256 KiB (``RAW_TAIL_CHARS``) of the output, with a line saying how much was left out between them;
a line longer than 4096 characters is cut there (MLC's are under 200).  The parser's state is
bounded too (:mod:`app.runners.mlc_parse`).

Command lines (``-b`` is KiB per thread; MLC's ``-t`` is whole seconds, so a fractional duration
is rounded up for MLC; ``cpus`` = latency CPU first, then the load CPUs)::

    mlc --idle_latency -l64 [-b KIB] [-c CPU]
    mlc --loaded_latency [-dN] -R|-WN -l64 [-b KIB] -tS [-c CPU -k LOAD_CPUS]
    memlat --idle_latency -l 64 [-b KIB] -t S [-k CPUS] [--tlb_locality KIB] [--mem_node N]
    memlat --loaded_latency -D d1,d2,… -R|-W N -l 64 [-b KIB] -t S [-k CPUS] [--tlb_locality KIB] [--mem_node N]

The suite (peak, scaling, latency/bandwidth matrix, c2c, working set): one engine process measures a batch
(:meth:`MemoryRunner.batch_key` leaves out what the mode's table varies) and the parser's streaming
:class:`~app.runners.mlc_parse.Figure` s are matched to the points by :func:`figure_key`; each is that point's Sample
and Result as it prints, with its placement (``numa``, a matrix cell's from ``Placement verified``), ``caches`` and
``c2c_cpus``; a wanted figure the process did not print fails its point with the engine's error::

    memlat --peak_injection_bandwidth [-R|-W N] …      memlat --bandwidth_scaling -R|-W N --threads 1,2,… …
    memlat --latency_matrix …   memlat --bandwidth_matrix -R|-W N …   memlat --c2c_latency [-k W,R] …
    memlat --working_set --sizes KIB,KIB,… [--no_huge_pages] …
    mlc --latency_matrix -l64 [-bKIB]   mlc --bandwidth_matrix [-WN] -tS   mlc --peak_injection_bandwidth -tS [-kCPUS]
    mlc --c2c_latency   mlc --idle_latency -l64 -bKIB (a working-set size)
    mlc --peak_injection_bandwidth -tS -k<first N CPUs> (a scaling point: the row of its mix)

What MLC has no option for (4 KiB pages, other mixes, a chosen c2c pair) is refused by :func:`check_suite`.

NUMA: ``mem_node`` is the engine's ``--mem_node``: it binds every buffer to that node before the first touch and
verifies each page's node (a page elsewhere fails the point); the placement it verified is the line's ``numa``
part.  ``cpu_node`` is that node's CPU list (sysfs) given as ``cpus`` (to either engine; not with ``cpus``).  A node
the machine lacks is refused before the run, and so is any ``mem_node`` for MLC.

The chase: ``tlb_locality`` (bytes, None = the whole buffer) is the engine's ``--tlb_locality`` in KiB;
MLC has no such option, so a plan with it is refused for MLC (:meth:`MemoryRunner.check_plan`, exit 2).
Every result line records ``chase``: mode (``whole_buffer``/``groups``), ``group_bytes``, stride,
``buffer_bytes``, ``huge_pages`` as the engine printed them, and ``text`` for the report.
"""

from __future__ import annotations

import asyncio
import atexit
import collections
import contextlib
import math
import os
import platform
import shlex
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, AsyncGenerator, Hashable, Literal, Sequence, TypeAlias, cast

from app.core import settings
from app.core.errors import ToolMissing, UsageError
from app.core.sanitize import clean_line
from app.core.units import format_size_human
from app.host import envinfo
from app.host.external import run_tool
from app.host.programs import refusal, untrusted, which_trusted
from app.host.topology import Topology, allowed_cpus, check_cpus, cpu_list, cpu_list_text
from app.host.topology import read as read_topology
from app.model.keys import ENGINES, MLC_DELAYS
from app.model.keys import cpus as parse_cpus
from app.model.points import Kind, MemoryPoint, Point
from app.model.records import JSONObject, MemoryMetrics, Parts
from app.runners.base import Child, Context, Event, Result, Runner, Sample
from app.runners.mlc_parse import (
    MAX_LINE_CHARS,
    Figure,
    LineParser,
    Row,
    Section,
    idle_latency,
    idle_windows,
    load_mbps,
)
from app.stats.uncertainty import Uncertainty, intervals_of, none_because

MLC_DEFAULT_PATH = "/opt/mlc/mlc"
# What the huge-page logic reads and writes; module-level so tests point them at files of their own.
CPUINFO = "/proc/cpuinfo"
NR_HUGEPAGES = "/proc/sys/vm/nr_hugepages"
MEMINFO = "/proc/meminfo"
MIB = 1 << 20
MLC_IDLE_BUFFER = 2000 * MIB  # MLC's own buffer when the plan gives none (for the reservation only)
MLC_LOADED_BUFFER = 256 * MIB
HUGEPAGE_MARGIN = 0.05
HUGEPAGE_MARGIN_MIN = 16
HUGEPAGE_MAX_SHARE = 0.75  # of MemAvailable
RAW_HEAD_CHARS = 256 * 1024
RAW_TAIL_CHARS = 256 * 1024
REPO_ENGINE = Path(__file__).resolve().parent.parent.parent / "native" / "memlat" / "build" / "memlat"
PACKAGE_ENGINE = Path(__file__).resolve().parent.parent / "bin" / "memlat"  # built into the wheel by setup.py

MLC_HOWTO = ("install Intel MLC (https://www.intel.com/content/www/us/en/download/736633/) and put `mlc` on PATH, "
             f"set MLC_PATH to the binary, or mount it at {MLC_DEFAULT_PATH}; or use --engine builtin")
ENGINE_HOWTO = ("build it with `make setup` (or `make -C native/memlat`), reinstall the package where make and a "
                "C compiler are present, or set PROFILER_TUI_MEMLAT to the memlat binary")


def _executable(path: str | os.PathLike[str]) -> bool:
    return os.path.isfile(path) and os.access(path, os.X_OK)


def _trusted(name: str, path: str) -> tuple[str | None, str | None]:
    """(path, None) when only trusted users can change the program at ``path`` (app.host.programs); else (None, why)."""
    why = untrusted(path)
    return (None, refusal(name, path, why)) if why else (os.path.realpath(path), None)


def find_mlc() -> tuple[str | None, str | None]:
    """(path, problem): MLC's binary, or None and why an explicit MLC_PATH, or an MLC another user could change,
    was not usable."""
    env = settings.mlc_path()
    problem = None
    if env:
        candidate = os.path.join(env, "mlc") if os.path.isdir(env) else env
        if _executable(candidate):
            return _trusted("MLC", os.path.abspath(candidate))
        problem = f"MLC_PATH={env} is not an executable file"
    found, why = which_trusted("mlc")
    if found or why:
        return found, why
    if _executable(MLC_DEFAULT_PATH):
        return _trusted("MLC", MLC_DEFAULT_PATH)
    return None, problem


def cpu_vendor(path: str | None = None) -> str | None:
    """``vendor_id`` of /proc/cpuinfo (``GenuineIntel``, ``AuthenticAMD``…), or None when unknown."""
    try:
        with open(path or CPUINFO, errors="replace") as f:
            for line in f:
                key, _, value = line.partition(":")
                if key.strip() == "vendor_id":
                    return value.strip() or None
    except OSError:
        pass
    return None


def mlc_needs_hugepages(vendor: str | None) -> bool:
    """MLC needs reserved huge pages on AMD, not on Intel."""
    return vendor == "AuthenticAMD"


def read_nr_hugepages(path: str | None = None) -> int | None:
    try:
        with open(path or NR_HUGEPAGES) as f:
            return int(f.read().strip() or 0)
    except (OSError, ValueError):
        return None


def hugepages_writable(path: str | None = None) -> bool:
    """May this process write nr_hugepages (root, /proc/sys mounted read-write)?"""
    return os.access(path or NR_HUGEPAGES, os.W_OK)


def mlc_unusable_reason() -> str | None:
    """Why MLC cannot measure on this machine, or None: auto then prefers the built-in engine."""
    machine = platform.machine().lower()
    if machine not in ("x86_64", "amd64", "i386", "i686"):
        return f"MLC runs on x86 only and this machine is {machine}"
    if not mlc_needs_hugepages(cpu_vendor()):
        return None
    hugepages = read_nr_hugepages()
    if hugepages == 0 and not hugepages_writable():
        return (f"MLC needs huge pages on AMD and {NR_HUGEPAGES} is 0 (and this process may not raise it: that "
                f"takes root and a writable /proc/sys, e.g. a privileged container; or reserve them first, "
                f"`echo 1100 > {NR_HUGEPAGES}`)")
    return None


def find_engine() -> tuple[str | None, str | None]:
    """(path, problem): the built-in engine's binary, or None and why PROFILER_TUI_MEMLAT was not usable."""
    env = settings.memlat()
    if env:
        if _executable(env):
            return _trusted("the memory engine", os.path.abspath(env))
        return None, f"PROFILER_TUI_MEMLAT={env} is not an executable file"
    for bundled in (REPO_ENGINE, PACKAGE_ENGINE):
        if _executable(bundled):
            return _trusted("the memory engine", str(bundled))
    return which_trusted("memlat")


def _kib(nbytes: int) -> int:
    return max(1, math.ceil(nbytes / 1024))


def _seconds_arg(s: float | int) -> str:
    return str(int(s)) if float(s).is_integer() else f"{s:g}"


def _meminfo() -> dict[str, int]:
    """/proc/meminfo's figures (kB values in bytes, page counts as they are)."""
    out: dict[str, int] = {}
    try:
        with open(MEMINFO) as f:
            for line in f:
                key, _, rest = line.partition(":")
                parts = rest.split()
                if parts and parts[0].isdigit():
                    out[key.strip()] = int(parts[0]) * (1024 if parts[1:2] == ["kB"] else 1)
    except OSError:
        pass
    return out


def mem_available_bytes() -> int | None:
    return _meminfo().get("MemAvailable")


def buffers_per_thread(traffic: str | None) -> int:
    """Buffers one thread allocates: a read buffer, a second one for triad-like mixes, one for writes."""
    if traffic in (None, "R"):
        return 1
    if traffic in ("W10", "W11"):
        return 3
    return 2


CHASE_MODES = ("idle", "loaded", "latency_matrix", "working_set")  # a figure of the latency thread's chase
ONE_THREAD_MODES = ("idle", "latency_matrix", "c2c", "working_set")  # a chase (c2c: two threads, one line)


def point_threads(point: MemoryPoint) -> int:
    """Threads that hold a buffer: one chase, a scaling point's N, else a load thread on every CPU it runs on."""
    if point.mode in ONE_THREAD_MODES:
        return 1
    if point.mode == "scaling":
        return point.threads or 1
    if point.cpus:
        return len(cpu_list(point.cpus))
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def check_memory(plan: Sequence[MemoryPoint], available: int | None = None) -> None:
    """UsageError when a point's buffers (buffer × threads × buffers per thread) exceed MemAvailable."""
    available = mem_available_bytes() if available is None else available
    if not available:
        return
    for point in plan:
        buf = point.buffer
        if not buf:
            continue
        threads = point_threads(point)
        per = buffers_per_thread(point.traffic)
        need = buf * threads * per
        if need > available:
            raise UsageError(
                f"buffer={format_size_human(buf)}: {threads} thread(s) × {per} buffer(s) of {format_size_human(buf)} "
                f"need {need / 2**30:.1f} GiB, more than the {available / 2**30:.1f} GiB available "
                "(MemAvailable in /proc/meminfo); choose a smaller buffer, e.g. --set buffer=256m.")


def check_nodes(plan: Sequence[MemoryPoint], nodes: list[int] | None | Literal[False] = False) -> None:
    """UsageError when a point's ``mem_node`` or ``cpu_node`` is not a NUMA node of this machine (sysfs; ``nodes``
    for tests), or when a point sets both ``cpu_node`` and ``cpus``."""
    for p in plan:
        if p.cpu_node is not None and p.cpus:
            raise UsageError(f"cpu_node={p.cpu_node} and cpus={p.cpus} both choose the CPUs; set one of them.")
    wanted_nodes = [(name, n) for p in plan for name, n in (("mem_node", p.mem_node), ("cpu_node", p.cpu_node),
                                                            ("reader_node", p.reader_node)) if n is not None]
    wanted = sorted(set(wanted_nodes), key=lambda w: (w[0] != "mem_node", w[0], w[1]))
    if not wanted:
        return
    have = envinfo.node_ids() if nodes is False else nodes
    if have is None:
        name, node = wanted[0]
        raise UsageError(f"{name}={node}: this machine reports no NUMA nodes (no /sys/devices/system/node); "
                         f"use {name}=none.")
    for name, node in wanted:
        if node not in have:
            raise UsageError(f"{name}={node}: this machine has no NUMA node {node} (its nodes: "
                             f"{', '.join(map(str, have))}).")


def with_node_cpus(points: Sequence[MemoryPoint], numa: envinfo.NumaInfo | None = None) -> list[MemoryPoint]:
    """The points with ``cpu_node`` turned into ``cpus``: that node's CPU list from sysfs (``numa`` for tests);
    UsageError when the node has no CPU, or a list the engines cannot take."""
    nodes = {n["node"]: n["cpus"] for n in (numa or envinfo.numa_info())["nodes"]}
    out = []
    for p in points:
        if p.cpu_node is None or _engine_places(p):
            out.append(p)
            continue
        cpus = nodes.get(p.cpu_node)
        try:
            out.append(replace(p, cpus=parse_cpus(cpus)))
        except ValueError:
            raise UsageError(f"cpu_node={p.cpu_node}: NUMA node {p.cpu_node} has no CPU this tool can run on "
                             f"(its CPU list: {cpus if cpus else 'none'}).") from None
    return out


def _engine_places(p: MemoryPoint) -> bool:
    """A matrix cell or a remote c2c point: the engine runs it on its nodes' CPUs itself."""
    return p.mode in ("latency_matrix", "bandwidth_matrix") or (p.mode == "c2c" and p.reader_node is not None)


def check_suite(plan: Sequence[MemoryPoint], topo: Topology, engine: str) -> None:
    """UsageError (exit 2) for a suite point this machine or engine cannot measure: more scaling threads than
    CPUs, a c2c pair without two CPUs, and for Intel MLC what it has no option for."""
    for p in plan:
        node = topo.node(p.cpu_node) if p.cpu_node is not None else None
        cpus = cpu_list(p.cpus) if p.cpus else node.cpus if node is not None else topo.cpus
        if _engine_places(p):
            _check_cell(p, topo)
        if p.mode == "scaling" and (p.threads or 1) > len(cpus):
            raise UsageError(f"threads={p.threads}: a scaling point runs one load thread per CPU and "
                             f"{'cpus=' + str(p.cpus) if p.cpus else 'this process'} has {len(cpus)} CPU(s) "
                             f"({cpu_list_text(cpus) or 'none'}); use threads=each or at most {len(cpus)}.")
        if p.mode == "c2c" and p.reader_node is None and len(cpus) < 2:
            raise UsageError(f"mode=c2c needs two CPUs, a writer and a reader on different cores, and "
                             f"{'node ' + str(p.cpu_node) if p.cpu_node is not None else 'this process'} has "
                             f"{len(cpus)} ({cpu_list_text(cpus) or 'none'}): cache-to-cache latency cannot be "
                             "measured here.")
        if engine == "mlc":
            _check_mlc_suite(p)


def _check_cell(p: MemoryPoint, topo: Topology) -> None:
    """A matrix cell's CPU node must have a CPU this process may use, its memory node memory (the engine's rows
    and columns); a remote c2c point's two nodes CPUs."""
    for name, number in (("cpu_node", p.cpu_node), ("reader_node", p.reader_node)):
        node = topo.node(number) if number is not None else None
        if node is not None and not node.cpus:
            raise UsageError(f"{name}={number}: NUMA node {number} has no CPU this process may run on, so it is "
                             f"no row of a matrix or end of a c2c transfer (nodes with CPUs: "
                             f"{', '.join(map(str, topo.cpu_nodes())) or 'none'}).")
    mem = topo.node(p.mem_node) if p.mem_node is not None else None
    if mem is not None and mem.memory_bytes == 0:
        raise UsageError(f"mem_node={p.mem_node}: NUMA node {p.mem_node} has no memory (nodes with memory: "
                         f"{', '.join(map(str, topo.memory_nodes())) or 'none'}).")


def _check_mlc_suite(p: MemoryPoint) -> None:
    if p.pages == "4k":
        raise UsageError("pages=4k: Intel MLC has no option for 4 KiB pages (it chooses its own); use --engine "
                         "builtin, or pages=2m.")
    if p.mode in ("peak", "scaling") and _traffic(p) not in PEAK_MIXES:
        raise UsageError(f"traffic={p.traffic} with mode={p.mode}: Intel MLC's --peak_injection_bandwidth measures "
                         f"only {', '.join(PEAK_MIXES)}; use --engine builtin for other mixes.")
    if p.mode == "c2c" and (p.cpus or p.cpu_node is not None) and p.reader_node is None:
        raise UsageError("mode=c2c with cpus or cpu_node: Intel MLC chooses its own c2c pair of CPUs; use --engine "
                         "builtin to choose them.")
    if p.mode == "scaling" and (p.mem_node is not None or p.cpu_node is not None):
        raise UsageError(f"mode=scaling with {'mem_node' if p.mem_node is not None else 'cpu_node'}: Intel MLC's "
                         "scaling points are --peak_injection_bandwidth on the first N CPUs; use --engine builtin.")


def mlc_buffer_pages(point: MemoryPoint, page: int) -> int:
    """Huge pages MLC's buffers take for one point (see the module docstring for the defaults)."""
    idle = point.mode in ONE_THREAD_MODES
    buf = point.buffer or (MLC_IDLE_BUFFER if idle else MLC_LOADED_BUFFER)
    per = 1 if idle else max(2, buffers_per_thread(point.traffic))
    return point_threads(point) * per * math.ceil(buf / page)


def hugepages_needed(points: Sequence[MemoryPoint], page: int) -> int:
    pages = max(mlc_buffer_pages(p, page) for p in points)
    return pages + max(HUGEPAGE_MARGIN_MIN, math.ceil(pages * HUGEPAGE_MARGIN))


_UNRESTORED: dict[int, "HugePageReservation"] = {}


@atexit.register
def _restore_at_exit() -> None:  # a run that ends without reaching a finally (e.g. a loop torn down)
    for r in list(_UNRESTORED.values()):
        r.restore()



def _figure(v: object) -> float | None:
    """A number the engine printed, as it printed it (an int stays an int: the results line writes it so)."""
    return v if isinstance(v, (int, float)) and not isinstance(v, bool) else None

class HugePageReservation:
    """Raise nr_hugepages for one MLC batch and put it back (``record`` says what happened)."""

    def __init__(self, path: str, needed: int, page: int) -> None:
        self.path = path
        self.record: dict[str, Any] = {"path": path, "page_bytes": page, "needed": needed}
        self._set: int | None = None

    @classmethod
    def reserve(cls, points: Sequence[MemoryPoint]) -> "HugePageReservation | None":
        """Reserve what the batch needs when this machine needs it and we may; None when nothing to do."""
        if not mlc_needs_hugepages(cpu_vendor()):
            return None
        info = _meminfo()
        page = info.get("Hugepagesize") or 2 * MIB
        self = cls(NR_HUGEPAGES, hugepages_needed(points, page), page)
        rec = self.record
        previous = read_nr_hugepages(self.path)
        rec["previous"] = previous
        free = info.get("HugePages_Free")
        if free is None:
            free = 0
        rec["free_before"] = free
        lacking = rec["needed"] - free
        if previous is None:
            rec["error"] = f"{self.path} cannot be read"
            return self
        if lacking <= 0:
            rec.update(requested=None, granted=previous, note="enough free huge pages already")
            return self
        if not hugepages_writable(self.path):
            rec.update(requested=None, granted=previous,
                       error=f"{self.path} is not writable here (needs root and a writable /proc/sys)")
            return self
        available = info.get("MemAvailable")
        if available:
            cap = int(available * HUGEPAGE_MAX_SHARE) // page
            if lacking > cap:
                rec["note"] = (f"{lacking} more pages needed; at most {cap} asked for "
                               f"({HUGEPAGE_MAX_SHARE:.0%} of MemAvailable)")
                lacking = cap
        requested = previous + lacking
        rec["requested"] = requested
        try:
            with open(self.path, "w") as f:
                f.write(f"{requested}\n")
        except OSError as e:
            rec.update(granted=read_nr_hugepages(self.path), error=f"writing {self.path} failed: {e.strerror or e}")
            return self
        granted = read_nr_hugepages(self.path)
        rec["granted"] = granted
        self._set = granted
        _UNRESTORED[id(self)] = self
        if granted is None or granted < requested:
            rec["error"] = f"the kernel granted {granted} of the {requested} huge pages asked for"
        return self

    @property
    def short(self) -> str:
        """One phrase for a failure message."""
        r = self.record
        return (f"huge pages: {r.get('previous')} before, {r.get('requested')} requested, {r.get('granted')} granted"
                + (f"; {r['error']}" if r.get("error") else ""))

    def restore(self) -> None:
        _UNRESTORED.pop(id(self), None)
        if self._set is None:
            return
        set_to, self._set = self._set, None
        rec = self.record
        now = read_nr_hugepages(self.path)
        if now != set_to:
            rec.update(restored=False, note=f"{self.path} was changed to {now} by another process during the run: "
                                           "left as it is")
            return
        try:
            with open(self.path, "w") as f:
                f.write(f"{rec['previous']}\n")
        except OSError as e:
            rec.update(restored=False, error=f"restoring {self.path} to {rec['previous']} failed: {e.strerror or e}")
            return
        after = read_nr_hugepages(self.path)
        rec.update(restored=after == rec["previous"], restored_value=after)


def _restore_when_done(task: "asyncio.Future[HugePageReservation | None]") -> None:
    if not task.cancelled() and task.exception() is None and task.result() is not None:
        task.result().restore()  # type: ignore[union-attr]


class _RawText:
    """A process's output for raw/: the first RAW_HEAD_CHARS and the last RAW_TAIL_CHARS of it."""

    def __init__(self) -> None:
        self.head: list[str] = []
        self.head_len = 0
        self.tail: collections.deque[str] = collections.deque()
        self.tail_len = 0
        self.dropped_lines = 0
        self.dropped_chars = 0

    def add(self, line: str) -> None:
        if not self.tail and self.head_len + len(line) <= RAW_HEAD_CHARS:
            self.head.append(line)
            self.head_len += len(line)
            return
        self.tail.append(line)
        self.tail_len += len(line)
        while self.tail_len > RAW_TAIL_CHARS and len(self.tail) > 1:
            gone = self.tail.popleft()
            self.tail_len -= len(gone)
            self.dropped_lines += 1
            self.dropped_chars += len(gone)

    def text(self) -> str:
        gap = ""
        if self.dropped_lines:
            gap = (f"[profiler-tui: {self.dropped_lines} lines ({self.dropped_chars} characters) left out here; "
                   f"raw text keeps the first {RAW_HEAD_CHARS // 1024} KiB and the last {RAW_TAIL_CHARS // 1024} "
                   "KiB]\n")
        return "".join(self.head) + gap + "".join(self.tail)


# --- which engine ------------------------------------------------------------------------------


@dataclass(frozen=True)
class EngineFacts:
    """What the choice of engine depends on, read from the machine by :func:`engine_facts`."""

    mlc: str | None = None  # MLC's binary (looked for only when the user allows MLC)
    mlc_problem: str | None = None  # why an explicit MLC_PATH was not usable
    mlc_unusable: str | None = None  # why MLC cannot measure on this machine; None: it can
    memlat: str | None = None  # the built-in engine's binary
    memlat_problem: str | None = None  # why an explicit PROFILER_TUI_MEMLAT was not usable
    needs_hugepages: bool = False  # MLC needs reserved huge pages here (AMD)
    nr_hugepages: int | None = None
    hugepages_writable: bool = False


def engine_facts(requested: str) -> EngineFacts:
    mlc, mlc_problem = find_mlc() if requested in ("auto", "mlc") else (None, None)
    memlat, memlat_problem = find_engine()
    needs = mlc_needs_hugepages(cpu_vendor())
    return EngineFacts(mlc, mlc_problem, mlc_unusable_reason() if mlc is not None else None, memlat, memlat_problem,
                       needs, read_nr_hugepages() if needs else None, hugepages_writable() if needs else False)


@dataclass(frozen=True)
class EngineChoice:
    engine: str  # "mlc" | "builtin"
    binary: str
    notice: str | None = None  # the sentence the user sees: a fallback, or MLC's huge pages on AMD


def _hugepage_notice(facts: EngineFacts) -> str | None:
    if not facts.needs_hugepages:
        return None
    now = facts.nr_hugepages
    if facts.hugepages_writable:
        return (f"MLC needs huge pages on AMD: {NR_HUGEPAGES} (now {now}) is raised to what each MLC run's "
                "buffers need and restored afterwards (recorded in run.json, huge_pages).")
    if not now:
        return (f"MLC needs huge pages on AMD and {NR_HUGEPAGES} is {now} and not writable here "
                "(root and a writable /proc/sys are needed): MLC may fail.")
    return None


def choose_engine(requested: str, facts: EngineFacts) -> EngineChoice:
    """The engine ``--engine requested`` gets on a machine with ``facts`` (no I/O); ToolMissing (exit 4)
    when there is none.  ``auto``: MLC when found and usable, else the built-in engine, else MLC anyway."""
    mlc, memlat = facts.mlc, facts.memlat
    if requested == "mlc":
        if mlc is None:
            why = f" ({facts.mlc_problem})" if facts.mlc_problem else ""
            raise ToolMissing(f"Intel MLC was not found{why}: {MLC_HOWTO}.")
        return EngineChoice("mlc", mlc, _hugepage_notice(facts))
    if requested == "auto" and mlc is not None and facts.mlc_unusable is None:
        return EngineChoice("mlc", mlc, _hugepage_notice(facts))
    if memlat is None and requested == "auto" and mlc is not None:
        return EngineChoice("mlc", mlc, f"Intel MLC at {mlc} may fail ({facts.mlc_unusable}) and the built-in "
                                        "engine was not found: trying MLC.")
    if memlat is None:
        why = f" ({facts.memlat_problem})" if facts.memlat_problem else ""
        if requested == "builtin":
            raise ToolMissing(f"The built-in memory engine was not found{why}: {ENGINE_HOWTO}.")
        raise ToolMissing(f"Neither Intel MLC nor the built-in memory engine was found{why}: {ENGINE_HOWTO}; "
                          f"or {MLC_HOWTO.split('; or use')[0]}.")
    notice = None
    if requested == "auto" and mlc is not None:
        notice = (f"Intel MLC found at {mlc} but {facts.mlc_unusable}: using the built-in memory engine {memlat} "
                  "(--engine mlc forces MLC).")
    elif requested == "auto":
        why = f" ({facts.mlc_problem})" if facts.mlc_problem else ""
        notice = (f"Intel MLC not found{why}: using the built-in memory engine {memlat} "
                  "(--engine auto falls back; install MLC or set MLC_PATH to use it).")
    return EngineChoice("builtin", memlat, notice)


# --- the engines' command lines and chases --------------------------------------------------------


@dataclass(frozen=True)
class Invocation:
    """One process of a batch: its command line and the batch's points it measures (positions)."""

    argv: list[str]
    measures: tuple[int, ...]
    # the suite's figures: for each measured point, the (kind, key) of the parser's Figure that is its figure
    # (app.runners.mlc_parse.Figure); None: the process's idle latency (MLC's working-set points)
    figures: tuple[FigureKey | None, ...] = ()


FigureKey: TypeAlias = tuple[str, tuple[object, ...]]
SUITE_MODES = ("peak", "scaling", "latency_matrix", "bandwidth_matrix", "c2c", "working_set")
PEAK_MIXES = ("R", "W3", "W2", "W5", "W10")  # what --peak_injection_bandwidth prints, in its order
LATENCY_MODES = ("idle", "loaded", "latency_matrix", "c2c", "working_set")  # a figure in ns
# the parser's section kind of each mode's figures
FIGURE_KINDS = {"peak": "peak_bandwidth", "scaling": "scaling", "latency_matrix": "idle_matrix",
                "bandwidth_matrix": "bandwidth_matrix", "c2c": "c2c", "working_set": "working_set"}


def figure_key(p: MemoryPoint) -> FigureKey:
    """The parser's (kind, key) of the figure a suite point is (design of app.runners.mlc_parse.Figure)."""
    kind = FIGURE_KINDS[p.mode]
    if p.mode == "peak":
        return kind, (_traffic(p),)
    if p.mode == "scaling":
        return kind, (p.threads or 1,)
    if p.mode in ("latency_matrix", "bandwidth_matrix"):
        return kind, (p.cpu_node, p.mem_node)
    if p.mode == "c2c":
        remote = p.reader_node is not None
        return kind, (p.c2c or "hitm", p.cpu_node if remote else None, p.reader_node, p.home if remote else None)
    return kind, (p.buffer,)


def _traffic_args(traffic: str) -> list[str]:
    return ["-R"] if traffic == "R" else ["-W", traffic[1:]]


def _traffic(p: MemoryPoint) -> str:
    return p.traffic or "R"  # a loaded point always has one (validated); idle points have none


class Engine:
    """A memory engine's command lines: one process per idle point; loaded batches as the engine says."""

    def __init__(self, binary: str) -> None:
        self.binary = binary

    def invocations(self, points: list[MemoryPoint]) -> list[Invocation]:
        """The processes that measure a batch of points (same batch_key), in order."""
        if points[0].mode == "idle":
            return [Invocation(self.idle_argv(p), (k,)) for k, p in enumerate(points)]
        if points[0].mode in SUITE_MODES:
            return self.suite(points)
        return self.loaded(points)

    def suite(self, points: list[MemoryPoint]) -> list[Invocation]:
        """The processes of a batch of one suite mode (peak, scaling, matrices, c2c, working set)."""
        raise NotImplementedError

    def idle_argv(self, p: MemoryPoint) -> list[str]:
        raise NotImplementedError

    def loaded(self, points: list[MemoryPoint]) -> list[Invocation]:
        raise NotImplementedError

    def chase(self, point: MemoryPoint, params: dict[str, Any]) -> dict[str, Any]:
        """Which chase the latency figure comes from (recorded as ``chase`` in every results line)."""
        raise NotImplementedError


class MlcEngine(Engine):
    """Intel MLC: a loaded batch in one process when it is exactly MLC's own 19-delay sweep, else one
    process per delay (``-d N``)."""

    def loaded(self, points: list[MemoryPoint]) -> list[Invocation]:
        first = points[0]
        delays = [p.delay for p in points]
        if sorted(d or 0 for d in delays) == sorted(MLC_DELAYS) and len(delays) == len(MLC_DELAYS):
            return [Invocation(self._loaded(first, None), tuple(range(len(points))))]
        return [Invocation(self._loaded(first, d), (k,)) for k, d in enumerate(delays)]

    def suite(self, points: list[MemoryPoint]) -> list[Invocation]:
        """MLC's own modes: a matrix, the peak bandwidths or the c2c figures in one process; a working-set point
        is ``--idle_latency -bKIB``, a scaling point ``--peak_injection_bandwidth`` with ``-k`` the first N CPUs
        (one process each)."""
        first, every = points[0], tuple(range(len(points)))
        keys = tuple(figure_key(p) for p in points)
        if first.mode == "working_set":
            return [Invocation(self.idle_argv(p), (k,), (None,)) for k, p in enumerate(points)]
        if first.mode == "scaling":
            allowed = cpu_list(first.cpus) if first.cpus else allowed_cpus()
            return [Invocation(self._bandwidth(p, "--peak_injection_bandwidth") + [
                        "-k" + cpu_list_text(allowed[:p.threads or 1])], (k,), (("peak_bandwidth", (_traffic(p),)),))
                    for k, p in enumerate(points)]
        if first.mode == "latency_matrix":
            cmd = [self.binary, "--latency_matrix", f"-l{first.stride}"] + self._buffer(first)
        elif first.mode == "c2c":
            cmd = [self.binary, "--c2c_latency"]
        elif first.mode == "bandwidth_matrix":
            cmd = self._bandwidth(first, "--bandwidth_matrix")
            if _traffic(first) != "R":
                cmd.append(f"-W{_traffic(first)[1:]}")
        else:
            cmd = self._bandwidth(first, "--peak_injection_bandwidth")
            if first.cpus:
                cmd.append(f"-k{first.cpus}")
        return [Invocation(cmd, every, keys)]

    def _bandwidth(self, p: MemoryPoint, mode: str) -> list[str]:
        return [self.binary, mode] + self._buffer(p) + [f"-t{math.ceil(float(p.duration))}"]

    @staticmethod
    def _buffer(p: MemoryPoint) -> list[str]:
        return [f"-b{_kib(p.buffer)}"] if p.buffer else []

    def idle_argv(self, p: MemoryPoint) -> list[str]:
        cmd = [self.binary, "--idle_latency", f"-l{p.stride}"]
        if p.buffer:
            cmd.append(f"-b{_kib(p.buffer)}")
        if p.cpus:
            cmd.append(f"-c{cpu_list(p.cpus)[0]}")
        return cmd

    def _loaded(self, p: MemoryPoint, delay: int | None) -> list[str]:
        cmd = [self.binary, "--loaded_latency"]
        if delay is not None:
            cmd.append(f"-d{delay}")
        cmd.append("-R" if _traffic(p) == "R" else f"-W{_traffic(p)[1:]}")
        cmd.append(f"-l{p.stride}")
        if p.buffer:
            cmd.append(f"-b{_kib(p.buffer)}")
        cmd.append(f"-t{math.ceil(float(p.duration))}")
        if p.cpus:
            cpus = cpu_list(p.cpus)
            cmd.append(f"-c{cpus[0]}")
            if len(cpus) > 1:
                cmd.append("-k" + ",".join(str(c) for c in cpus[1:]))
        return cmd

    def chase(self, point: MemoryPoint, params: dict[str, Any]) -> dict[str, Any]:
        stride = params.get("stride") or point.stride
        buf = params.get("buffer_bytes") or point.buffer
        text = "chase as chosen by Intel MLC"
        if stride:
            text += f", stride {stride} B"
        if buf:
            text += f", buffer {format_size_human(buf)}"
        return {"by": "mlc", "mode": None, "group_bytes": None, "stride": stride, "buffer_bytes": buf,
                "huge_pages": None, "text": text}


class BuiltinEngine(Engine):
    """The built-in engine (native/memlat): one process per loaded batch (``-D d1,d2,…``)."""

    def idle_argv(self, p: MemoryPoint) -> list[str]:
        return [self.binary, "--idle_latency"] + self._common(p)

    def loaded(self, points: list[MemoryPoint]) -> list[Invocation]:
        first = points[0]
        cmd = [self.binary, "--loaded_latency", "-D", ",".join(str(p.delay) for p in points)]
        cmd += ["-R"] if _traffic(first) == "R" else ["-W", _traffic(first)[1:]]
        return [Invocation(cmd + self._common(first), tuple(range(len(points))))]

    def suite(self, points: list[MemoryPoint]) -> list[Invocation]:
        """One process per batch: every figure of a mode it prints is one point (a peak batch of a mix outside
        the five, or of one mix, asks for that mix alone with -R/-W N)."""
        first, every = points[0], tuple(range(len(points)))
        keys = tuple(figure_key(p) for p in points)
        mode = first.mode
        if mode == "peak":
            mixes = [_traffic(p) for p in points]
            if len(mixes) > 1 and set(mixes) <= set(PEAK_MIXES):
                return [Invocation([self.binary, "--peak_injection_bandwidth"] + self._common(first), every, keys)]
            return [Invocation([self.binary, "--peak_injection_bandwidth"] + _traffic_args(_traffic(p))
                               + self._common(p), (k,), (keys[k],)) for k, p in enumerate(points)]
        if mode == "scaling":
            cmd = [self.binary, "--bandwidth_scaling"] + _traffic_args(_traffic(first))
            cmd += ["--threads", ",".join(str(p.threads or 1) for p in points)] + self._common(first)
        elif mode in ("latency_matrix", "bandwidth_matrix"):  # the engine places each cell's CPUs and memory
            cmd = [self.binary, f"--{mode}"]
            if mode == "bandwidth_matrix":
                cmd += _traffic_args(_traffic(first))
            cmd += self._common(replace(first, cpus=None, cpu_node=None, mem_node=None))
        elif mode == "c2c":
            cmd = [self.binary, "--c2c_latency"] + self._common(replace(first, buffer=None))
        else:
            cmd = [self.binary, "--working_set", "--sizes", ",".join(str(_kib(p.buffer or 0)) for p in points)]
            cmd += self._common(replace(first, buffer=None))
        return [Invocation(cmd, every, keys)]

    @staticmethod
    def _common(p: MemoryPoint) -> list[str]:
        """The stride, buffer, duration, CPU, chase, placement and page-size arguments."""
        cmd = ["-l", str(p.stride)]
        if p.buffer:
            cmd += ["-b", str(_kib(p.buffer))]
        cmd += ["-t", _seconds_arg(p.duration)]
        if p.cpus:
            cmd += ["-k", p.cpus]
        if p.tlb_locality:
            cmd += ["--tlb_locality", str(_kib(p.tlb_locality))]
        if p.mem_node is not None:
            cmd += ["--mem_node", str(p.mem_node)]
        if p.pages == "4k":
            cmd.append("--no_huge_pages")
        return cmd

    def chase(self, point: MemoryPoint, params: dict[str, Any]) -> dict[str, Any]:
        """Which chase the latency figure comes from: whole buffer or groups of N bytes, stride, buffer and
        whether huge pages were used, as the engine reported them, and one sentence."""
        stride = params.get("stride") or point.stride
        buf = params.get("buffer_bytes") or point.buffer
        huge = params.get("huge_pages") if isinstance(params.get("huge_pages"), bool) else None
        kib = params.get("chase_kib")
        group = kib * 1024 if kib else (point.tlb_locality if kib is None else None)
        where = f"within {format_size_human(group)} groups" if group else (
            f"over {format_size_human(buf)}" if buf else "over the whole buffer")
        pages = "2 MiB pages" if huge else "4 KiB pages" if huge is False else "page size unknown"
        text = f"random chase {where}, {pages}"
        if stride:
            text += f", stride {stride} B"
        numa = params.get("numa")
        if isinstance(numa, dict) and isinstance(numa.get("node"), int):  # only a verified placement is printed
            text += f", memory on NUMA node {numa['node']} (every page verified)"
        return {"by": "builtin", "mode": "groups" if group else "whole_buffer", "group_bytes": group or None,
                "stride": stride, "buffer_bytes": buf, "huge_pages": huge, "text": text}


def _memory_point(point: Point) -> MemoryPoint:
    if not isinstance(point, MemoryPoint):
        raise TypeError(f"the memory runner measures memory points, not {point!r}")
    return point


# --- the runner ------------------------------------------------------------------------------------

# a loaded row's delay or a suite figure's (kind, key); None: the process's idle latency → (index, point)
Wanted: TypeAlias = dict[Hashable, tuple[int, MemoryPoint]]


class MemoryRunner(Runner):
    kind = Kind.MEMORY

    def __init__(self, engine: str = "auto", facts: EngineFacts | None = None) -> None:
        if engine not in ENGINES:
            raise UsageError(f"--engine {engine}: must be one of {', '.join(ENGINES)}.")
        self.requested = engine
        choice = choose_engine(engine, facts if facts is not None else engine_facts(engine))
        self.engine, self.binary, self.notice = choice.engine, choice.binary, choice.notice
        self._impl: Engine = MlcEngine(self.binary) if self.engine == "mlc" else BuiltinEngine(self.binary)
        self._hugepages: HugePageReservation | None = None  # the running MLC batch's reservation

    # --- protocol ----------------------------------------------------------------------------

    def batch_key(self, point: Point) -> Hashable:
        p = _memory_point(point)
        if p.mode == "idle":
            return ("idle", p.stride, p.buffer, p.duration, p.cpus, p.tlb_locality, p.mem_node, p.cpu_node)
        if p.mode in SUITE_MODES:  # one engine process measures the batch: the key leaves out what varies in it
            return (p.mode, *self._suite_key(p), p.stride, p.duration, p.pages, p.tlb_locality)
        return ("loaded", p.traffic, p.stride, p.buffer, p.duration, p.cpus, p.tlb_locality, p.mem_node, p.cpu_node)

    @staticmethod
    def _suite_key(p: MemoryPoint) -> tuple[Hashable, ...]:
        """What a suite batch shares beside stride, duration, pages and chase: peak batches vary the traffic,
        scaling the threads, matrices their cells, c2c the kind and the remote cells, working set the buffer."""
        if p.mode == "peak":
            return p.buffer, p.cpus, p.cpu_node, p.mem_node
        if p.mode == "scaling":
            return p.traffic, p.buffer, p.cpus, p.cpu_node, p.mem_node
        if p.mode in ("latency_matrix", "bandwidth_matrix"):
            return p.traffic, p.buffer
        if p.mode == "c2c":  # remote cells come from the same process as the local pair (no cpus of their own)
            return p.cpus, p.cpu_node if p.reader_node is None else None
        return p.cpus, p.cpu_node, p.mem_node

    def tool_versions(self) -> dict[str, str]:
        tools = {"memory_engine": self.engine, "memory_engine_path": self.binary}
        if self.engine == "builtin":
            tools["memlat"] = engine_version(self.binary)
        else:
            # MLC prints its version in the banner of every run (recorded per point as engine_version);
            # it is not started here because MLC has no side-effect-free version query on every release.
            tools["mlc"] = self.binary
        if self.notice:
            tools["memory_engine_note"] = self.notice
        return tools

    def check_plan(self, plan: Sequence[Point]) -> None:
        """Refuse, before anything starts, a plan whose buffers do not fit in free memory, that asks MLC for
        what it cannot do (tlb_locality, mem_node: MLC has no option for them), or for a NUMA node or a CPU this
        machine does not have (or this process may not use)."""
        points = [_memory_point(p) for p in plan]
        if self.engine == "mlc":
            for point in points:
                if point.tlb_locality:
                    raise UsageError(
                        f"tlb_locality={format_size_human(point.tlb_locality)}: Intel MLC has no option to chase "
                        "within groups (it chooses its own chase); use --engine builtin, or tlb_locality=none.")
                if point.mem_node is not None and not _engine_places(point):
                    raise UsageError(
                        f"mem_node={point.mem_node}: Intel MLC has no option to place its buffers on a node and "
                        "verify them; use --engine builtin, or mem_node=none.")
        check_nodes(points)
        check_cpus(points)
        if any(p.mode in SUITE_MODES for p in points):
            check_suite(points, read_topology(), self.engine)
        check_memory(with_node_cpus(points))

    async def run(self, items: list[tuple[int, Point]], ctx: Context) -> AsyncGenerator[Event, None]:
        batch = [(index, _memory_point(p)) for index, p in items]
        points = with_node_cpus([p for _, p in batch])  # the engines take CPU lists
        reservation = None
        if self.engine == "mlc":  # off the event loop: the kernel may take a while to find the pages
            pending = asyncio.ensure_future(asyncio.to_thread(HugePageReservation.reserve, points))
            try:
                reservation = await asyncio.shield(pending)
            except asyncio.CancelledError:  # cancelled while reserving: give them back once reserved
                pending.add_done_callback(_restore_when_done)
                raise
        self._hugepages = reservation
        try:
            for inv in self._impl.invocations(points):
                wanted: Wanted = {key: batch[k] for k, key in zip(inv.measures, inv.figures)} if inv.figures else {
                    None if batch[k][1].mode == "idle" else batch[k][1].delay: batch[k] for k in inv.measures}
                # aclosing: the process is stopped (its finally) before the huge pages are given back (ours)
                async with contextlib.aclosing(self._run_process(inv.argv, wanted)) as events:
                    async for ev in events:
                        yield ev
        finally:
            self._hugepages = None
            if reservation is not None:
                reservation.restore()
                ctx.note("huge_pages", reservation.record)

    # --- one process -------------------------------------------------------------------------------

    async def _run_process(self, cmd: list[str], wanted: Wanted) -> AsyncGenerator[Event, None]:
        """Run one process and stream what it prints: each loaded-latency row (keyed by delay) or suite figure
        (keyed by :func:`figure_key`) a point wants is that point's Sample and Result at once; the key None is
        the process's idle latency figure; a wanted row or figure the process never printed fails its point."""
        started = last = time.monotonic()
        try:
            child = await Child.start(*cmd)
        except OSError as e:
            for index, point in wanted.values():
                yield Result(index, None, {}, Parts(engine=self.engine, command=shlex.join(cmd)),
                             error=f"cannot start {cmd[0]}: {e}")
            return
        parser = LineParser()
        text = _RawText()
        done: set[Hashable] = set()
        try:
            async for line in child.lines(MAX_LINE_CHARS):  # line by line: a point's raw text ends with its row
                text.add(line)
                rows: list[tuple[Hashable, Row | Figure]] = [(row.delay, row) for row in parser.feed(line)]
                rows += [((fig.kind, tuple(fig.key)), fig) for fig in self._new_figures(parser)]
                for key, row in rows:
                    if key not in wanted or key in done or None in wanted:
                        continue
                    done.add(key)
                    now = time.monotonic()
                    for ev in self._row_events(*wanted[key], row, cmd, parser, text.text(), now - last):
                        yield ev
                    last = now
            parser.close()
            stderr = await child.finish()
        finally:
            await child.close()
        ended = _Ended(cmd, child.proc.returncode, stderr, text.text(), parser)
        if None in wanted:  # idle latency (or MLC's working-set point): one figure for the whole process
            for ev in self._idle_result(*wanted[None], ended, time.monotonic() - started):
                yield ev
            return
        for key, (index, point) in wanted.items():
            if key not in done:
                delay = key if isinstance(key, int) else None
                what = _figure_text(point) if point.mode in SUITE_MODES else None
                yield self._missing(index, point, ended, delay, time.monotonic() - last, what)

    @staticmethod
    def _new_figures(parser: LineParser) -> list[Figure]:
        """The figures completed since the last call (taken out of the parser, so its list stays short)."""
        figures = list(parser.figures)
        parser.figures.clear()
        return figures

    def _row_events(self, index: int, point: MemoryPoint, row: Row | Figure, cmd: list[str], parser: LineParser,
                    output: str, wall: float) -> list[Event]:
        if isinstance(row, Row):
            return [Sample(index, {**row.as_dict(), "engine": self.engine}),
                    self._row_result(index, point, row, cmd, parser, output, wall)]
        fig = row
        metric = "latency_ns" if fig.unit == "ns" else "bandwidth_mbps"
        split: JSONObject = {k: v for k, v in fig.extra.items() if k in ("read_mbps", "write_mbps")}
        metrics = MemoryMetrics(fig.value if metric == "latency_ns" else None,
                                fig.value if metric == "bandwidth_mbps" else None, keys=(metric, *split), more=split)
        metrics = window_uncertainty(self.engine, point.mode, fig.windows, metrics)
        sample = {"mode": point.mode, "engine": self.engine, metric: fig.value, **_identity(point)}
        extra = self._extra(point, cmd, parser, wall, fig.section, fig.warnings)
        return [Sample(index, sample), Result(index, metrics, {".txt": output}, extra)]

    def _idle_result(self, index: int, point: MemoryPoint, ended: "_Ended", wall: float) -> list[Event]:
        lat = idle_latency(ended.parser.sections)
        extra = self._extra(point, ended.cmd, ended.parser, wall)
        if lat is None or ended.returncode:
            return [Result(index, None, ended.raw(), extra, error=self._failure(ended, None))]
        sample = {"delay": None} if point.mode == "idle" else {"mode": point.mode, **_identity(point)}
        metrics = window_uncertainty(self.engine, point.mode, idle_windows(ended.parser.sections),
                                     MemoryMetrics(latency_ns=lat))
        return [Sample(index, {**sample, "latency_ns": lat, "engine": self.engine}),
                Result(index, metrics, ended.raw(), extra)]

    def _missing(self, index: int, point: MemoryPoint, ended: "_Ended", delay: int | None, wall: float,
                 what: str | None = None) -> Result:
        extra = self._extra(point, ended.cmd, ended.parser, wall)
        return Result(index, None, ended.raw(), extra, error=self._failure(ended, delay, what))

    def _row_result(self, index: int, point: MemoryPoint, row: Row, cmd: list[str], parser: LineParser,
                    output: str, wall: float) -> Result:
        # load_bandwidth_mbps: the built-in engine's own split of the figure MLC-style counts as one
        load = load_mbps(parser, row)
        metrics = MemoryMetrics(row.latency_ns, row.bandwidth_mbps, load,
                                keys=("latency_ns", "bandwidth_mbps")
                                + (("load_bandwidth_mbps",) if load is not None else ()))
        metrics = window_uncertainty(self.engine, point.mode, row.windows, metrics)
        sec = parser.sections[-1] if parser.sections else None
        return Result(index, metrics, {".txt": output}, self._extra(point, cmd, parser, wall, sec, row.warnings))

    def _job(self, point: MemoryPoint) -> str:
        if point.mode == "idle":
            return f"{self.engine}-idle-l{point.stride}"
        if point.mode in SUITE_MODES:
            kind, key = figure_key(point)
            parts = [str(v) for v in key if v is not None]
            return "-".join([self.engine, point.mode.replace("_", "-"), *parts] + (["4k"] if point.pages else []))
        return f"{self.engine}-{point.traffic}-l{point.stride}-d{point.delay}"

    _ENGINE_PARAMS = ("buffer_bytes", "write_buffer_bytes", "huge_pages", "delay_unit_ns", "load_threads", "numa",
                      "caches", "c2c_cpus")

    def _extra(self, point: MemoryPoint, cmd: list[str], parser: LineParser, wall: float,
               section: Section | None = None, own: Sequence[str] | None = None) -> Parts:
        """The results line's parts beside the metrics: engine, command, what the engine printed (the session
        names the engine in the line's point); ``section``: the one a row or suite figure came from; ``own``: the
        warnings printed about that row or figure alone.  With ``own`` the line's ``warnings`` are the section's
        shared ones (the file's, those before its table) and its own, never another row's; without it (an idle
        point: one figure per process; a point that failed) every warning of the section."""
        keys = ["engine", "command", "job", "wall_s"]
        version = parser.header.get("version")
        if version:
            keys.append("engine_version")
        sec = section or (parser.sections[-1] if parser.sections else None)
        # the engine's header and section values are JSON by construction (numbers, strings, lists of them)
        params = cast("JSONObject", {**parser.header, **(sec.params if sec else {})})
        params.update(_suite_params(point, sec))
        keys += [k for k in self._ENGINE_PARAMS if params.get(k) is not None]
        warnings = params.get("warnings")
        if own is not None and sec is not None and isinstance(warnings, list):
            warnings = [*warnings[:sec.shared_warnings], *own]
        if warnings:
            keys.append("warnings")
        if point.mode in CHASE_MODES:
            keys.append("chase")
        loaded = point.mode == "loaded"  # both engines' bandwidth counts the latency thread's 64 B per step
        if loaded:
            keys.append("bandwidth_includes_latency_thread")
        huge_pages = params.get("huge_pages")
        if self._hugepages is not None:
            huge_pages = dict(self._hugepages.record)
            if "huge_pages" not in keys:
                keys.append("huge_pages")
        return Parts(engine=self.engine, command=shlex.join(cmd), job=self._job(point), wall_s=round(wall, 3),
                     engine_version=str(version) if version else None, buffer_bytes=params.get("buffer_bytes"),
                     write_buffer_bytes=params.get("write_buffer_bytes"), huge_pages=huge_pages,
                     delay_unit_ns=_figure(params.get("delay_unit_ns")),
                     load_threads=_figure(params.get("load_threads")),
                     warnings=warnings or None, numa=params.get("numa"),
                     chase=self._impl.chase(point, params) if point.mode in CHASE_MODES else None,
                     caches=params.get("caches"), c2c_cpus=params.get("c2c_cpus"),
                     bandwidth_includes_latency_thread=True if loaded else None, keys=tuple(keys))

    def _failure(self, ended: "_Ended", delay: int | None, what: str | None = None) -> str:
        name = os.path.basename(ended.cmd[0])
        lines = [ln.strip() for ln in ended.stderr.splitlines() if ln.strip()]
        if not lines:  # MLC prints some errors on stdout
            lines = [ln.strip() for ln in ended.output.splitlines()[-3:] if ln.strip() and not ln.startswith("*")]
        what = what or ("no idle latency figure" if delay is None else f"no row for delay {delay}")
        rc = ended.returncode
        status = f"exited with status {rc}" if rc else "finished"
        msg = f"{name} {status} and printed {what}"
        msg = f"{msg}: {'; '.join(lines[-3:])}" if lines else msg + "."
        hp = self._hugepages
        if hp is not None and hp.record.get("error"):
            msg += f" ({hp.short})"
        return msg


def _identity(p: MemoryPoint) -> dict[str, object]:
    """The keys that name a suite figure in a live sample (traffic, threads, nodes, c2c, buffer, pages)."""
    keys = {"traffic": p.traffic, "threads": p.threads, "cpu_node": p.cpu_node, "mem_node": p.mem_node,
            "reader_node": p.reader_node, "home": p.home, "c2c": p.c2c, "buffer_bytes": p.buffer,
            "pages": p.pages or "2m"}
    return {k: v for k, v in keys.items() if v is not None}


# why a figure of the built-in engine has no sub-windows to compute an interval from, by mode
NO_WINDOWS = {
    "c2c": "a cache-to-cache figure is the median of 5 windows, not a mean: 5 windows are too few for an interval "
           "of it",
    "working_set": "each working-set size is measured in one window",
    "latency_matrix": "the engine prints no sub-windows for the cells of a matrix",
    "bandwidth_matrix": "the engine prints no sub-windows for the cells of a matrix",
}
MLC_NO_WINDOWS = "Intel MLC prints one figure per row"


def window_uncertainty(engine: str, mode: str, windows: dict[str, tuple[float, ...]],
                       metrics: MemoryMetrics) -> MemoryMetrics:
    """``metrics`` with the 95 % interval of the mean of each of its figures' sub-window values (the built-in
    engine's ``--windows``; only the figures the row has), or the reason why there is none."""
    figures = {"latency_ns": metrics.latency_ns, "bandwidth_mbps": metrics.bandwidth_mbps}
    series = {k: list(v) for k, v in windows.items() if figures.get(k) is not None and v}
    u: Uncertainty
    if engine == "mlc":
        u = none_because(MLC_NO_WINDOWS)
    elif series:
        u = intervals_of(series)
    else:
        u = none_because(NO_WINDOWS.get(mode, "the engine printed no sub-window figures for this row"))
    # the record is JSON by construction (numbers, strings and lists of them)
    return metrics.with_ci(cast("JSONObject", u.ci95), cast("JSONObject", u.ci_method))


def _figure_text(p: MemoryPoint) -> str:
    """The figure a point wanted, for the message when the engine did not print it."""
    kind, key = figure_key(p)
    return f"no {kind.replace('_', ' ')} figure for {', '.join(str(v) for v in key if v is not None)}"


def _suite_params(p: MemoryPoint, sec: Section | None) -> JSONObject:
    """A suite figure's own values: a matrix cell's verified placement (``numa``), a working-set size's buffer,
    the CPUs of a c2c pair.  Only what the engine printed is kept (the parser's values are typed and bounded)."""
    if sec is None or p.mode not in SUITE_MODES:
        return {}
    out: JSONObject = {}
    placement = sec.values.get("placement")
    if p.mode in ("latency_matrix", "bandwidth_matrix") and isinstance(placement, dict):
        out["numa"] = cast("JSONObject | None", placement.get(f"{p.cpu_node},{p.mem_node}"))
    if p.mode == "c2c" and p.reader_node is not None and isinstance(placement, dict):  # the line's home node
        out["numa"] = cast("JSONObject | None", placement.get(f"{p.cpu_node},{p.reader_node},{p.home}"))
    if p.mode == "working_set":
        out["buffer_bytes"] = p.buffer
    load_cpus = sec.params.get("load_cpus")
    if p.mode == "scaling":  # the figure's own thread count, not the list the engine printed for the batch
        out["load_threads"] = p.threads or 1
    elif p.mode in ("peak", "bandwidth_matrix") and isinstance(load_cpus, list):
        out["load_threads"] = len(load_cpus)
    elif p.mode == "peak":  # a load thread on every CPU of its list (every allowed CPU without one)
        out["load_threads"] = len(cpu_list(p.cpus) if p.cpus else allowed_cpus())
    if p.mode != "c2c" or p.reader_node is not None:
        out["c2c_cpus"] = None
    if p.mode != "working_set":
        out["caches"] = None
    return out


@dataclass(frozen=True)
class _Ended:
    """A measuring process that has ended: what it printed and how it exited."""

    cmd: list[str]
    returncode: int | None
    stderr: str
    output: str  # stdout as kept for raw/ (_RawText)
    parser: LineParser

    def raw(self) -> dict[str, str | bytes]:
        raw: dict[str, str | bytes] = {".txt": self.output}
        if self.stderr.strip():
            raw[".stderr.txt"] = self.stderr
        return raw


def engine_version(binary: str) -> str:
    out = run_tool([binary, "--version"], 10, 64 << 10)
    if out is None:
        return "unknown"
    return clean_line(out.stdout or out.stderr, 200) or "unknown"

