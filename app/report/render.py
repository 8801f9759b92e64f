"""The text of report.md (its sections) and results.csv of a results directory.

:func:`app.report.write.render_report` writes them, with plots/, beside each other.  The text depends
only on the directory's contents (no clock, no absolute path of the directory itself), so
rendering the same directory twice gives the same report.
"""

from __future__ import annotations

import math
import re
import statistics
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Mapping, Sequence

from app.core.sanitize import Markup, clean_line, clean_text, md_text
from app.core.textable import markdown_figure, markdown_table
from app.core.units import format_count, format_size, size_text, us
from app.model.points import Kind
from app.model.records import number
from app.model.runmeta import Numa, RunMeta
from app.report.compute import analysis, contention, intervals, replicates, support
from app.report.compute import memory as mem
from app.report.data.model import TRAFFIC_DESCRIPTIONS, MemoryRow, RunData, StorageRow
from app.report.figures import heat, series
from app.report.sections import (
    answer,
    conditions,
    drive,
    host,
    open_loop,
    peak_text,
    procedure,
    queue_text,
    suite,
    tails,
    trends,
)
from app.stats.summary import delay_header, point_label
from app.stats.validity import (
    CHECKED,
    FLAGS,
    IN_FLIGHT_WHY,
    LEGEND,
    WARMUP_SHARE,
    checks_of,
    names,
    recorded_facts,
    warmup_of,
)

if TYPE_CHECKING:
    from app.report.figures.plots import Figure

MB = 1e6
MIB = float(1 << 20)


# --- small formatting helpers ---------------------------------------------------------------------------


def pct(x: float) -> str:
    return f"{x:.2f}%"


def cache_size(text: object) -> str:
    t = str(text).strip().upper()
    try:
        if t.endswith("K"):
            return size_text(int(t[:-1]) * 1024)
        if t.endswith("M"):
            return size_text(int(t[:-1]) << 20)
    except ValueError:
        pass
    return str(text)


def test_type(p: StorageRow) -> str:
    pattern = "Random" if p.random else "Sequential"
    if p.mixed:
        t = f"{pattern} {p.read_pct}% read {100 - p.read_pct}% write"
    elif "trim" in p.rw:
        t = f"{pattern} trim"
    else:
        t = f"{pattern} {'write' if p.read_pct == 0 else 'read'}"
    return f"{p.group}: {t}" if p.group else t


def workload(p: StorageRow) -> str:
    return f"{p.mix} {format_size(p.bs)} QD{p.iodepth}" + (f"×{p.numjobs}" if p.numjobs > 1 else "")


def workload_namer(points: Sequence[StorageRow]) -> Callable[[StorageRow], str]:
    """:func:`workload`, and each point's file after it when the points were imported from several (files
    imported together may be different machines: no table may show two of them as one workload)."""
    if len({p.source for p in points}) < 2:
        return workload
    return lambda p: workload(p) + (f" from {p.source}" if p.source else "")


def with_replicate(label: Callable[[StorageRow], str]) -> Callable[[StorageRow], str]:
    """``label`` with the row's replicate after it, as the storage results table names it: a per-row table of a
    repeated run would otherwise show a point's replicates as identical rows."""
    return lambda p: label(p) + (f", replicate {p.replicate}" if p.replicate is not None else "")


def _p99_text(p: StorageRow) -> str:
    v = p.p99
    if v is None:
        return "n/a"
    lat = p.metrics.lat_ns
    mark = "≈" if lat is not None and lat.percentiles_approx else ""
    mark += "†" if p.metrics.percentiles_source == "clat_ns" else ""
    return mark + us(v)


# --- sections -------------------------------------------------------------------------------------------


def _numa_rows(numa: Numa | None) -> list[list[str]]:
    """One row per NUMA node (its CPUs and memory), or one saying the layout is unknown; none for a run.json
    written before the layout was recorded."""
    if numa is None:
        return []
    if not numa.nodes:
        return [["NUMA nodes", f"unknown ({clean_line(numa.unknown)})" if numa.unknown else "unknown"]]
    return [[f"NUMA node {n.node if n.node is not None else '?'}",
             f"CPUs {clean_line(n.cpus) if n.cpus else 'none' if n.cpus == '' else 'unknown'}, "
             f"memory {size_text(n.memory_bytes)}"] for n in numa.nodes]


def environment_section(data: RunData) -> list[str]:
    env = data.meta.environment
    tools = data.meta.tools or {}
    out = ["## Environment", ""]
    rows: list[list[str]] = []
    cpu = (env.cpu if env else None) or {}
    mem = (env.memory if env else None) or {}
    system = (env.system if env else None) or {}
    if cpu:
        rows.append(["CPU model", clean_line(cpu.get("model", "unknown"))])
        rows.append(["Sockets / cores / threads",
                     f"{cpu.get('sockets', '?')} / {cpu.get('cores', '?')} / {cpu.get('threads', '?')}"])
        caches = env.caches if env else ()
        if caches:
            rows.append(["Caches (CPU 0)", ", ".join(f"{clean_line(c.get('name'), 40)} "
                                                     f"{clean_line(cache_size(c.get('size', '?')), 40)}"
                                                     for c in caches[:16]) + (", …" if len(caches) > 16 else "")])
        if cpu.get("arch"):
            rows.append(["Architecture", str(cpu["arch"])])
    if mem:
        rows.append(["Memory", size_text(mem.get("total_bytes"))])
        hp = mem.get("hugepages_total")
        thp = mem.get("transparent_hugepages")
        if hp is not None or thp:
            rows.append(["Huge pages", f"{hp if hp is not None else '?'} reserved; transparent: {thp or 'unknown'}"])
    rows += _numa_rows(env.numa if env else None)
    if system:
        rows.append(["OS", str(system.get("os", "unknown"))])
        rows.append(["Kernel", str(system.get("kernel", "unknown"))])
        where = []
        if system.get("virtualization"):
            where.append(str(system["virtualization"]))
        if system.get("container"):
            where.append("container")
        rows.append(["Runs in", ", ".join(where) if where else "bare metal (no hypervisor flag seen)"])
    for name in sorted(tools):
        value = tools[name]
        if isinstance(value, dict):
            value = ", ".join(f"{k} {v}" for k, v in value.items())
        rows.append([f"Tool: {name}", str(value)])
    if env is None or not env.entry:
        out.append("The machine was not recorded: this directory was imported from tool outputs, which do not "
                   "describe the hardware they ran on." if data.imported else
                   "The machine was not recorded in run.json.")
        out.append("")
    if rows:
        out.append(markdown_table(["Property", "Value"], rows, right=()))
        out.append("")
    return out


def _target(data: RunData) -> list[str]:
    info = data.meta.target_info or {}
    target = data.meta.target
    if not data.storage and not target:
        return []
    out = ["## Target", ""]
    rows: list[list[str]] = []
    kind = info.get("type") or info.get("kind")
    if kind == "file":
        rows.append(["Kind", "regular file"])
        rows.append(["Path", str(info.get("path") or target)])
        rows.append(["Filesystem", f"{info.get('filesystem', 'unknown')} mounted at {info.get('mount_point', '?')}"])
        rows.append(["Filesystem source", str(info.get("source", "unknown"))])
        dev = info.get("device")
        if isinstance(dev, Mapping) and dev:
            rows += _device_rows(dev, prefix="Device ")
    elif info:
        rows.append(["Kind", f"block device ({info.get('type') or 'disk'})"])
        rows.append(["Path", str(info.get("path") or target)])
        rows += _device_rows(info)
    elif target:
        rows.append(["Path", str(target)])
        rows.append(["Details", "not probed (imported run: the path comes from the fio job options)" if data.imported
                     else "not recorded"])
    else:
        targets = sorted({p.line.target for p in data.storage if p.line.target})
        rows.append(["Path", ", ".join(targets) if targets else "not recorded"])
        rows.append(["Details", "not probed (imported run: the path comes from the fio job options)" if data.imported
                     else "not recorded"])
    out.append(markdown_table(["Property", "Value"], rows, right=()))
    out.append("")
    return out


def _device_rows(d: Mapping[str, object], prefix: str = "") -> list[list[str]]:
    """The rows of a device's details: text as recorded (one line, bounded), which the table escapes."""
    rows = []
    model = " ".join(str(x) for x in (d.get("vendor"), d.get("model")) if x) or "unknown"
    rows.append([f"{prefix}model", model])
    if d.get("name") or d.get("disk"):
        rows.append([f"{prefix}name", clean_line(d.get("name") or d.get("disk"))])
    rows.append([f"{prefix}size", size_text(d.get("size_bytes"))])
    rows.append([f"{prefix}transport", clean_line(d.get("transport") or "unknown")])
    rot = d.get("rotational")
    rows.append([f"{prefix}rotational", "unknown" if rot is None else ("yes (spinning disk)" if rot else "no")])
    rows.append([f"{prefix}I/O scheduler", clean_line(d.get("scheduler") or "unknown")])
    if d.get("logical_sector_size"):
        rows.append([f"{prefix}sector size (logical/physical)",
                     f"{d.get('logical_sector_size')} / {d.get('physical_sector_size') or '?'} B"])
    if d.get("backing_file"):
        rows.append([f"{prefix}backing file", clean_line(d["backing_file"])])
    return rows


def run_section(data: RunData) -> list[str]:
    m = data.meta
    preset = m.preset
    out = ["## Run", ""]
    rows = []
    if preset:
        kind = preset.kind or m.kind or "?"
        rows.append(["Preset", f"{clean_line(preset.name or '?')} ({clean_line(kind)})"])
        if preset.description:
            rows.append(["Description", preset.description])
        if preset.overrides:
            rows.append(["Overrides", " ".join(f"--set {o}" for o in preset.overrides)])
    rows.append(["Status", data.status])
    total = m.points_total or len(m.plan) or (len(data.storage) + len(data.memory))
    rows.append(["Points", _points_text(data, total)])
    if m.started:
        rows.append(["Started", m.started])
    if m.ended:
        rows.append(["Ended", m.ended])
    if m.sources:
        rows.append(["Imported from", ", ".join(clean_line(s.file, 200) for s in m.sources[:20])
                     + (", …" if len(m.sources) > 20 else "")])
    if m.failures:
        rows.append(["Failed points", str(len(m.failures)) + " (see run.json)"])
    skipped = procedure.skipped_entries(m)
    if skipped:
        rows.append(["Skipped points", f"{len(skipped)} (see Skipped points)"])
    rows += procedure.precondition_rows(m)
    out.append(markdown_table(["Property", "Value"], rows, right=()))
    out.append("")
    warnings = data.warnings()
    if warnings:
        out += ["### Warnings", ""]
        out += ["- " + md_text(w) for w in warnings]  # run.json's and the imported files' own: foreign text
        out.append("")
    return out


STORAGE_UNITS = ("Latency is fio's total latency (`lat`: submission to completion) in microseconds; bandwidth in "
                 "MB/s (10^6 B/s) with MiB/s (2^20 B/s) in brackets; CPU is fio's user/system share of one CPU.")


def _points_text(data: RunData, total: int) -> str:
    """The Run table's Points: measured of planned (a fleet run: host-points, each point once per host)."""
    if data.fleet is None:
        return f"{data.measured or len(data.storage) + len(data.memory)} measured of {total} planned"
    n = len(data.fleet.hosts)
    return (f"{len(data.storage)} host-points measured of {total * n} planned ({total} point{'s' if total != 1 else ''}"
            f" × {n} host{'s' if n != 1 else ''})")


def storage_table(points: Sequence[StorageRow], heading: str = "## Storage results", intro: bool = True,
                  meta: RunMeta | None = None, run_dir: Path | None = None) -> list[str]:
    """``run_dir``: where the points' samples are, to compute the interval of a line that records none."""
    out = [heading, ""]
    if intro:
        out += [STORAGE_UNITS, ""]
    rows = []
    flagged = any(p.flags or p.other_flags for p in points)
    cis = [intervals.storage_intervals(run_dir, p) for p in points]
    several = len({p.source for p in points}) > 1  # imported from several files: each row names its own
    for p, c in zip(points, cis):
        name = test_type(p) + (f", replicate {p.replicate}" if p.replicate is not None else "")
        name += f", from {clean_line(p.source, 120)}" if several and p.source else ""
        rows.append([Markup(md_text(name, cell=True) + " — *not steady*") if procedure.not_steady(p) else name,
                     format_size(p.bs).replace("K", " KiB").replace("M", " MiB").replace("G", " GiB")
                     if p.bs % 1024 == 0 else f"{p.bs} B",
                     intervals.pm_count(p.iops, c.get("iops")), _bw_text(p.bw, c.get("bw_bytes")),
                     us(p.lat("min"), 1), us(p.lat("max"), 1), _us_pm(p.lat_mean, c.get("lat_mean_ns")), _p99_text(p),
                     pct(p.usr), pct(p.sys), p.iodepth,
                     p.numjobs] + ([", ".join(names(p.flags) + names(p.other_flags)) or "—"] if flagged else []))
    head = ["Test Type", "Block Size", "IOPS", "Bandwidth MB/s (MiB/s)", "Latency min (µs)", "Latency max (µs)",
            "Latency avg (µs)", "Latency p99 (µs)", "CPU usr", "CPU sys", "IO Depth", "Jobs"]
    whole = intervals.whole_run_cells([[(p.iops, c.get("iops"), format_count),
                                        (p.bw, c.get("bw_bytes"), lambda v: f"{v / MB:.1f}"),
                                        (p.lat_mean, c.get("lat_mean_ns"), lambda v: us(v, 2))]
                                       for p, c in zip(points, cis)])
    if whole is not None:  # fio's own figures, where one reads differently from the centre shown with ±
        head.append(f"{intervals.WHOLE_RUN}: IOPS · MB/s · avg µs")
        rows = [r[:12] + [w] + r[12:] for r, w in zip(rows, whole)]
    out.append(markdown_table(head + (["Flags"] if flagged else []), rows, right=range(2, len(head))))
    out.append("")
    if intro:  # what ± is, and which points have none: once (a fleet report says it once for all its hosts)
        out += interval_notes(points, cis)
    if whole is not None:
        out += [intervals.whole_run_note(), ""]
    out += _flags_legend(points, meta)
    marks = []
    if any(p.metrics.lat_ns is not None and p.metrics.lat_ns.percentiles_approx for p in points):
        marks.append("≈ p99 of several jobs without json+ histograms: the I/O-weighted mean of their p99s.")
    if any(p.metrics.percentiles_source == "clat_ns" for p in points):
        marks.append("† the source file has no total-latency percentiles; this is fio's completion-latency (`clat`) "
                     "p99, which leaves out submission time.")
    for m in marks:
        out.append(f"{m}  ")
    if marks:
        out.append("")
    mixed = [p for p in points if p.mixed]
    if mixed:
        out.append("Read and write sides of the mixed workloads:")
        out.append("")
        rows = []
        for p in mixed:
            fig = p.metrics
            rows.append([workload(p), format_count(float(fig.read_iops or 0)), format_count(float(fig.write_iops or 0)),
                         f"{float(fig.read_bw_bytes or 0) / MB:.1f}", f"{float(fig.write_bw_bytes or 0) / MB:.1f}",
                         _side_us(p, "read", "mean"), _side_us(p, "write", "mean"), _side_us(p, "read", "p99"),
                         _side_us(p, "write", "p99")])
        out.append(markdown_table(["Workload", "Read IOPS", "Write IOPS", "Read MB/s", "Write MB/s", "Read avg (µs)",
                             "Write avg (µs)", "Read p99 (µs)", "Write p99 (µs)"], rows))
        out.append("")
    return out


def interval_notes(points: Sequence[StorageRow], cis: Sequence[Mapping[str, object]]) -> list[str]:
    """Under a storage table: what ± is (when a point has one) and which points have none, and why."""
    return ([intervals.interval_note(), ""] if any(cis) else []) + intervals.unshown_note(points, _row_name)


def _row_name(p: StorageRow | MemoryRow) -> str:
    """A point as the notes under a table name it: the workload (and replicate), or the memory row."""
    if isinstance(p, StorageRow):
        return workload(p) + (f", replicate {p.replicate}" if p.replicate is not None else "")
    return point_label(Kind.MEMORY, p.point)


def _bw_text(bw: float, iv: tuple[float, float] | None) -> str:
    """Bandwidth in MB/s with its ± (MB/s), and MiB/s in brackets."""
    return f"{intervals.pm_fixed(bw, iv, 1, scale=MB)} ({intervals.shown(bw, iv, MIB)[0]:.1f})"


def _us_pm(ns: float, iv: tuple[float, float] | None) -> str:
    """A latency in µs (two decimals) with its ± in µs."""
    return intervals.pm_fixed(ns, iv, 2, scale=1e3)


def _side_us(p: StorageRow, side: str, key: str) -> str:
    """A latency of one direction of a point in µs, "n/a" when that direction did no I/O (fio reports its
    latencies as 0 then: a 0/100 mix has no read latency, not a read latency of 0.00 µs)."""
    iops = p.metrics.figure(f"{side}_iops")
    lat = p.metrics.latency(f"{side}_lat_ns")
    value = number(lat.get(key)) if lat is not None else None
    return us(value) if iops and value else "n/a"


def _traffic_order(t: str) -> int:
    keys = list(TRAFFIC_DESCRIPTIONS)
    return keys.index(t) if t in keys else len(keys)


def _memory_tables(points: Sequence[MemoryRow], env: Mapping[str, object] | None = None,
                   before: Sequence[str] = ()) -> list[str]:
    """``env``: run.json's environment (caches, TLB) for the note under each table; ``before``: the sections
    plain `mlc` prints before its loaded latencies (suite.py)."""
    out = ["## Memory results", "", *before]
    idle = [p for p in points if p.mode == "idle"]
    loaded = [p for p in points if p.mode == "loaded"]  # the suite's modes have their own sections (suite.py)
    if idle:
        out.append("Idle latency (one pointer-chasing thread, no load):")
        out.append("")
        rows = [[p.stride or "default", format_size(p.buffer) if p.buffer else "default",
                 _mem_pm(p, "latency_ns", p.latency, 2, "n/a"), p.engine or "?"] for p in idle]
        head = ["Stride (B)", "Buffer", "Latency (ns)", "Engine"]
        whole = intervals.whole_run_cells([_mem_whole(p) for p in idle])
        if whole is not None:
            head.insert(3, f"{intervals.WHOLE_RUN} (ns)")
            rows = [r[:3] + [w] + r[3:] for r, w in zip(rows, whole)]
        nodes = [p.series[6] for p in idle]
        if any(nodes):  # mem_node points: which node's memory each latency is of
            head.append("NUMA node")
            rows = [row + [node or "kernel's choice"] for row, node in zip(rows, nodes)]
        if len({p.source for p in points}) > 1:  # imported from several files: each may be another machine
            head.append("Imported from")
            rows = [row + [md_text(p.source, 120, cell=True)] for row, p in zip(rows, idle)]
        out.append(markdown_table(head, rows))
        out.append("")
        out += _chase_line(idle)
        out += [mem.buffer_note(idle, env, None), ""]
    series: dict[analysis.MemKey, list[MemoryRow]] = {}
    for p in loaded:
        series.setdefault(p.series, []).append(p)
    if series:
        engines = sorted({p.engine for p in loaded})
        units = "; ".join(mem.delay_unit_text(e, [p for p in loaded if p.engine == e]) for e in engines)
        out.append("Loaded latency, as MLC prints it: the latency of a pointer-chasing thread while the other CPUs "
                   "generate traffic with the given injection delay between accesses (0 = as fast as possible). "
                   f"Delays in {units}. Bandwidth in MB/sec (10^6 B/s) of {mem.bandwidth_words(loaded)}.")
        out.append("")
    several = len({p.source for p in points}) > 1  # imported from several files: a table each, named
    for key in sorted(series, key=lambda k: (str(k[4]), k[1], _traffic_order(k[0]), k[2], k[3], k[5], k[6])):
        traffic, stride, buffer, engine, source, groups, node = key
        title = (f"### {md_text(traffic)} ({TRAFFIC_DESCRIPTIONS.get(traffic) or 'traffic type ' + md_text(traffic)}), "
                 f"stride {stride} B")
        if buffer:
            title += f", buffer {format_size(buffer)}"
        if groups:
            title += f", chase within {format_size(int(groups))} groups"
        if node:
            title += f", memory on NUMA node {md_text(node)}"
        if engine:
            title += f" — {md_text(engine)}"
        if several and source:
            title += f", from {md_text(source, 120)}"
        out.append(title)
        out.append("")
        rows = []
        busy = any(contention.contended(p) for p in series[key])
        ordered = sorted(series[key], key=lambda p: p.delay or 0)
        for p in ordered:
            rows.append([f"{p.delay:05d}" if p.delay is not None else "-",
                         _mem_pm(p, "latency_ns", p.latency, 2, "-"),
                         _mem_pm(p, "bandwidth_mbps", p.bandwidth, 1, "-")]
                        + ([contention.contended_text(p) or "clean"] if busy else []))  # type: ignore[arg-type]
        head = [delay_header("Inject", [engine]), "Latency (ns)", "Bandwidth (MB/sec)"] + (["CPU"] if busy else [])
        whole = intervals.whole_run_cells([_mem_whole(p) for p in ordered])
        if whole is not None:
            head.append(f"{intervals.WHOLE_RUN}: ns · MB/sec")
            rows = [r + [w] for r, w in zip(rows, whole)]
        out.append(markdown_table(head, rows, right=()))
        out.append("")
        if busy:
            out += [contention.rule_text(), ""]
        if any(contention.unchecked(p) for p in series[key]):
            out += [contention.unchecked_text(), ""]
        out += suite.warnings_line(series[key])
        out += _chase_line(series[key])
        out += [mem.buffer_note(series[key], env, idle), ""]
    if idle or series:
        out += _memory_interval_note([*idle, *loaded])
        out += mem.buffer_dependence(idle, [c for c in analysis.memory_curves(loaded)])
    return out


def _mem_pm(p: MemoryRow, key: str, value: float | None, digits: int, none: str) -> str:
    """A memory figure with its ± where the line records an interval; without one, as its source printed it
    (MLC's ``80.9`` stays ``80.9``: at most ``digits`` decimals, never more than the source gave)."""
    if value is None:
        return none
    iv = intervals.memory_intervals(p).get(key)
    return intervals.pm_fixed(value, iv, digits if iv is not None else intervals.source_decimals(p, key, digits))


def _mem_whole(p: MemoryRow) -> list[tuple[float | None, tuple[float, float] | None, Callable[[float], str]]]:
    """A memory row's own figures (the whole window's) beside their intervals, as its table prints them."""
    ivs = intervals.memory_intervals(p)
    return [(p.latency, ivs.get("latency_ns"), lambda v: f"{v:.2f}"),
            (p.bandwidth, ivs.get("bandwidth_mbps"), lambda v: f"{v:.1f}")]


def _memory_warmup_note(points: Sequence[MemoryRow]) -> list[str]:
    """One sentence naming the memory rows whose warm-up took a large share of their windows (as a storage
    point's ``warmup-cut`` flag: memory rows carry no flags); [] when none did."""
    found = []
    for p in points:
        cuts = [w for k in intervals.memory_intervals(p) if (w := warmup_of(p.metrics.ci_method, k)) is not None]
        got = max(cuts, key=lambda w: w[0] / w[1], default=None)
        if got is not None and got[0] >= WARMUP_SHARE * got[1]:
            cut, total = got
            found.append(f"{md_text(point_label(Kind.MEMORY, p.point))}: {cut} of {total} ({cut / total:.0%})")
    if not found:
        return []
    return [f"**Warm-up cut** (as `warmup-cut` flags a storage point): MSER-5 took {WARMUP_SHARE:.0%} or more of a "
            "row's windows as warm-up — " + "; ".join(found[:4]) + (" …" if len(found) > 4 else "") + " windows: "
            "the figure with ± is the mean of the windows after it, the whole-window figure counts them all.", ""]


def _memory_interval_note(points: Sequence[MemoryRow]) -> list[str]:
    """What ± means under the memory tables, and (once) which points have none and why."""
    shown = [bool(intervals.memory_intervals(p)) for p in points]
    if not any(shown):
        return intervals.unshown_note(points, _row_name)
    whole = intervals.whole_run_cells([_mem_whole(p) for p in points])
    return [*_memory_warmup_note(points),
            "± is the 95 % confidence interval, within this run, of the figure's mean over the engine's windows of "
            "that row (batch means after the warm-up, docs/uncertainty.md), and the figure before it is that "
            "interval's centre.", "",
            *([intervals.whole_run_note("the engine's figure over the row's whole window"), ""] if whole else []),
            *intervals.unshown_note(points, _row_name)]


def _chase_line(points: Sequence[MemoryRow]) -> list[str]:
    """One line under a memory table naming the chase its latency comes from (:func:`mem.chase_texts`)."""
    texts = mem.chase_texts(points)
    if not texts:
        return []
    return ["Chase: " + "; ".join(texts[:4]) + ("; …" if len(texts) > 4 else "") + ".", ""]


def section_figures(figs: Sequence[Figure], section: Kind) -> list[str]:
    out = []
    for f in figs:
        if f.section != section:
            continue
        out += markdown_figure(f.title, f.caption, f.file)
    return out


# --- analysis sections ------------------------------------------------------------------------------------------


def _littles_law(points: Sequence[StorageRow], table: bool = True,
                 heading: str = "### Little's law per point",
                 label: Callable[[StorageRow], str] = workload) -> list[str]:
    """With the per-point table (``table``) or, for a large run, the summary only (the table is
    then in the appendix)."""
    out = [heading, ""]
    out.append("Little's law: the mean number of requests in a system equals throughput × mean time in the system, "
               "L = X · R. fio keeps N = iodepth × numjobs I/Os outstanding (synchronous engines such as psync cap "
               "the depth at 1), so IOPS × mean total latency should come out close to N. A ratio well below 1 "
               "means fio did not keep N in flight: time outside the measured latency (submitting, reaping, "
               "the CPU) is part of each I/O's cycle.")
    out.append("")
    rows = []
    ratios = []
    for p in points:
        ll = analysis.littles_law(p)
        if ll is None:
            rows.append([label(p), p.inflight, format_count(p.iops), us(p.lat_mean), "n/a", "n/a"])
            continue
        ratios.append((ll.ratio, p))
        rows.append([label(p), ll.n, format_count(p.iops), us(p.lat_mean), f"{ll.l:.2f}", f"{ll.ratio:.3f}"])
    if table:
        out.append(markdown_table(["Workload", "N = QD × jobs", "IOPS", "Mean latency (µs)", "L = IOPS × latency",
                                   "L / N"], rows))
    else:
        out.append(f"The table of all {len(points)} points is in the appendix (Little's law, every point).")
    out.append("")
    if ratios:
        med = statistics.median(r for r, _ in ratios)
        low = [p for r, p in ratios if r < 0.9]
        line = f"Median L/N = {med:.3f} over {len(ratios)} points."
        if low:
            shown = ", ".join(md_text(label(p)) for p in low[:6]) + (" …" if len(low) > 6 else "")
            line += (f" {len(low)} point(s) stay below 0.9 ({shown}): there the submitting side, not the device, "
                     "limited the I/Os in flight.")
        else:
            line += " Every point keeps at least 90 % of its nominal queue in flight: the measured latency is the " \
                    "whole cycle of an I/O."
        out.append(line)
        out.append("")
    return out


def _knees(curves: Sequence[analysis.Curve], run_dir: Path) -> list[str]:
    out = ["### Saturation knee of each latency–throughput curve", ""]
    out.append("Method: the points of one workload, taken by increasing load, give a curve of mean latency against "
               "IOPS. Both axes are scaled to [0, 1]; the knee is the point farthest from the straight line (chord) "
               "joining the lightest and the heaviest load, on the low-latency side (max-distance-to-chord, the core "
               f"of Kneedle). A curve whose farthest point is closer than {analysis.MIN_KNEE_DISTANCE} to the chord is "
               "nearly straight: no knee. Past the knee, extra queue depth buys little throughput and costs latency.")
    out.append("")
    rows = []
    short = [c for c in curves if len(c.points) < 3]
    supported = []
    for c in curves:
        if len(c.points) < 3:
            continue
        last = c.points[-1]
        loads = ", ".join(str(n) for n in c.loads)
        k = c.knee_point
        if k is None:
            rows.append([c.label, loads, "none (nearly straight)", "", "", format_count(last.iops), us(last.lat_mean),
                         "", ""])
            continue
        sup = support.knee_support(run_dir, c)
        supported.append((c, sup))
        gain = (last.iops / k.iops - 1) * 100 if k.iops else math.nan
        growth = last.lat_mean / k.lat_mean if k.lat_mean else math.nan
        rows.append([c.label, loads, f"{c.load_label(k)} ({sup.verdict})", format_count(k.iops), us(k.lat_mean),
                     format_count(last.iops), us(last.lat_mean), f"{gain:+.1f}%", f"×{growth:.2f}"])
    if rows:
        out.append(markdown_table(["Workload", "Loads (QD × jobs)", "Knee", "IOPS at knee", "Mean lat. at knee (µs)",
                             "IOPS at max load", "Mean lat. at max load (µs)", "Throughput past knee",
                             "Latency past knee"], rows))
        out.append("")
    if supported:
        out += _knee_support(supported)
    if short:
        out.append(f"{len(short)} workload(s) were measured at only two loads "
                   f"({', '.join(md_text(c.label) for c in short[:6])}"
                   f"{' …' if len(short) > 6 else ''}): a knee needs at least three.")
        out.append("")
    return out


def _knee_support(supported: Sequence[tuple[analysis.Curve, support.KneeSupport]]) -> list[str]:
    """How firmly each knee holds: margin over the runner-up, without the last load, bootstrap."""
    out = [f"How firmly each knee holds. Margin: the knee's chord distance against the runner-up's (a margin below "
           f"{support.MARGIN_CLEAR} is no clear winner). Without the last load: the knee of the curve cut one load "
           f"short (the chord ends at the heaviest load, so the knee depends on where the sweep stopped). Bootstrap: "
           f"{support.RESAMPLES} curves, each point's means recomputed from its whole seconds drawn with replacement "
           f"(fixed seed {support.SEED}; consecutive seconds are correlated, so this is a lower bound of the spread). "
           f"Stable: every check ran, the margin is clear, the cut curve agrees and the knee wins at least "
           f"{support.BOOTSTRAP_AGREE * 100:.0f} % of the resamples; fragile: a check failed, and the alternatives "
           f"are named; unconfirmed: none failed but one could not run. All three see only this run's seconds: "
           f"whether another run finds the same knee (a virtual disk drifts ±20 % between runs) is what "
           f"`profiler-tui compare` of two runs tells.", ""]
    repeated = any(sup.per_replicate is not None for _, sup in supported)
    if repeated:
        out[-2] = out[-2].split(" All three see only this run's seconds")[0]
        out[-2] += (" With replicates, each load is the mean over its replicates; the bootstrap draws the replicates "
                    "with replacement and then each drawn replicate's seconds (so the spread between runs is in it), "
                    "and each replicate's own curve is searched for its knee: the knee is stable only when every "
                    "replicate finds it.")
    rows = []
    for c, sup in supported:
        rows.append([c.label, sup.name(sup.knee), sup.margin_text(), sup.drop_last_text(), sup.boot_text()]
                    + ([sup.replicates_text()] if repeated else []) + [sup.verdict_text()])
    out.append(markdown_table(["Workload", "Knee", "Chord distance vs runner-up: margin",
                               "Without the last load", "Bootstrap: knee found at"]
                              + (["Each replicate's knee"] if repeated else []) + ["Verdict"], rows))
    out.append("")
    return out


def _load(p: StorageRow) -> str:
    return f"QD{p.iodepth}×{p.numjobs}"


def _binds(p: StorageRow) -> str:
    """The p99 the bound binds on: "write 962.56" (with the other direction for a mixed workload)."""
    sides = analysis.direction_p99s(p)
    b = analysis.binding(p)
    if b is None:
        return "n/a"
    others = [f"{k} {us(v)}" for k, v in sides.items() if k != b[0]]
    return f"{b[0]} {us(b[1])}" + "".join(f"; {o}" for o in others) + (f"; both {us(p.p99)}" if others else "")


def _binds_load(lb: analysis.LoadBound | None, unit: str = " µs") -> str:
    """The p99 a load binds on: one row's (:func:`_binds`), or over replicates the binding direction's range."""
    if lb is None:
        return "n/a"
    if lb.n == 1:
        return _binds(lb.rows[0]) + unit
    worst = max(lb.rows, key=lambda r: analysis.binding(r)[1] if analysis.binding(r) else 0.0)  # type: ignore[index]
    side = (analysis.binding(worst) or ("total", 0.0))[0]
    return f"{side} {us(min(lb.p99s))}–{us(max(lb.p99s))}{unit} over {lb.n} replicates"


def _met(lb: analysis.LoadBound) -> str:
    return f"{_load(lb.rows[0])} (p99 {_binds_load(lb)}, met in {lb.met} of {lb.n})"


def _bound(points: Sequence[StorageRow], bound_ns: float, run_dir: Path) -> list[str]:
    out = [f"### Best operating point under p99 ≤ {bound_ns / 1e3:g} µs", ""]
    out.append(f"For each workload, the load with the most IOPS whose 99th-percentile total latency stays within "
               f"{bound_ns / 1e3:g} µs (`profiler-tui report --p99-bound-us N` changes the bound) — for a mixed "
               "workload in each direction, read and write, and the p99 column names the direction that binds — "
               "and the next heavier load that breaks it. Per-second p99: the lowest and highest whole second of "
               "that load (both directions together); when they lie on both sides of the bound the load is within "
               "noise of it.")
    choices = analysis.best_under_bound(points, bound_ns)
    if any(lb.n > 1 for b in choices for lb in (b.best_load, b.lowest_load) if lb is not None):
        out[-1] += (" With replicates, a load meets the bound only when every replicate does: its IOPS is the mean "
                    "over the replicates and its p99 the range they spanned; a load that met the bound in some "
                    "replicates only is named below, not chosen (one lucky run is not an operating point).")
    out.append("")
    rows = []
    notes = []
    for b in choices:
        if b.best is None or b.best_load is None:
            low = ("no p99 recorded" if b.lowest_load is None
                   else f"none (lowest p99 {_binds_load(b.lowest_load)})")
            rows.append([b.label, low, "", "", "", "", "", ""])
        else:
            p, lb = b.best, b.best_load
            noise = support.bound_noise(run_dir, p, bound_ns, lb.rows)
            nxt = "—" if b.next_load is None else f"{_load(b.next_over or p)}: {_binds_load(b.next_load, '')}"
            what = _load(p) + (" (only load measured)" if b.only_load else "")
            name = md_text(b.label)
            rows.append([b.label, what, format_count(p.iops) + (f" (mean of {lb.n})" if lb.n > 1 else ""),
                         f"{p.bw / MB:.1f}", us(p.lat_mean), _binds_load(lb, ""), noise.text(), nxt])
            if noise.within_noise and noise.spread is not None:
                p99 = us(p.p99) if lb.n == 1 else _binds_load(lb, "")
                notes.append(f"{name} {_load(p)}: p99 {p99} ≤ {bound_ns / 1e3:g} µs, but its seconds "
                             f"ranged {noise.spread.lo / 1e3:.1f}–{noise.spread.hi / 1e3:.1f} µs: within noise of "
                             "the bound.")
            if b.only_load:
                notes.append(f"{name}: {_load(p)} is the only load measured, so it is the best by construction; a "
                             "sweep of loads shows where the bound is met with the most IOPS.")
        if b.partial:
            notes.append(f"{md_text(b.label)}: " + "; ".join(_met(lb) for lb in b.partial) + " met the bound in some "
                         "replicates only, so it is not an operating point: the replicates disagree on whether this "
                         "load stays within the bound.")
    out.append(markdown_table(["Workload", "Best load", "IOPS", "MB/s", "Mean (µs)", "p99 (µs), binding direction",
                               "Per-second p99 (µs)", "Next load: p99 (µs)"], rows))
    out.append("")
    out += [f"{n}  " for n in notes[:-1]] + notes[-1:] + ([""] if notes else [])
    ok = [b for b in choices if b.best is not None and b.best_load is not None]
    if ok:
        by_bw = max(ok, key=lambda b: b.best.bw)  # type: ignore[union-attr]
        by_iops = max(ok, key=lambda b: b.best.iops)  # type: ignore[union-attr]

        def noted(b: analysis.BoundChoice) -> str:
            assert b.best is not None and b.best_load is not None
            near = support.bound_noise(run_dir, b.best, bound_ns, b.best_load.rows).within_noise
            return (f"{md_text(workload(b.best))}, p99 {_binds_load(b.best_load)}"
                    + (", within noise of the bound" if near else ""))

        out.append(f"Across all workloads within the bound: the most bandwidth is {by_bw.best.bw / MB:.1f} MB/s "  # type: ignore[union-attr]
                   f"({noted(by_bw)}); the most IOPS is {format_count(by_iops.best.iops)} ({noted(by_iops)}).")  # type: ignore[union-attr]
    else:
        out.append("No point meets the bound.")
    out.append("")
    return out


def _machine_cpus(data: RunData) -> int | None:
    """CPUs of the machine that measured (run.json's environment); None for an import (not recorded)."""
    env = data.meta.environment
    cpu = env.cpu if env is not None and not data.imported else None
    n = number(cpu.get("threads")) if cpu is not None else None
    return int(n) if n is not None and n >= 1 else None


def _delay_text(c: analysis.MemCurve, delay: int | None) -> str:
    """A delay of the curve, with its time when the engine's unit was measured."""
    unit = mem.delay_unit_ns(c.points) if c.engine == "builtin" else None
    if delay is None or unit is None:
        return f"{delay}"
    t = delay * unit
    return f"{delay} (≈ {t:.0f} ns)" if t < 1000 else f"{delay} (≈ {t / 1000:.3g} µs)"


def _knee_cell(c: analysis.MemCurve) -> str:
    """The knee's delay with how firmly it holds (the storage knee's margin and cut-curve checks)."""
    if c.knee is None:
        return "none"
    sup = support.memory_knee_support(c)
    return f"{_delay_text(c, c.points[c.knee].delay)} ({sup.verdict_text()}; margin {sup.margin_text()})"


def _memory_row(c: analysis.MemCurve) -> list[str]:
    """One curve's row of the memory analysis table: its clean points only (contended rows are left out)."""
    if not c.clean:
        return [c.label, "n/a (every delay contended)"] + ["n/a"] * 8
    light, heavy = c.clean[0], c.clean[-1]
    k = None if c.knee is None else c.points[c.knee]
    load = mem.load_mbps(heavy)
    return [c.label, f"{light.latency:.2f}" if light.latency else "n/a",
            _knee_cell(c),
            "" if k is None or k.bandwidth is None else f"{k.bandwidth:.1f}",
            "" if k is None or k.latency is None else f"{k.latency:.2f}",
            f"{heavy.bandwidth:.1f}" if heavy.bandwidth is not None else "n/a",
            f"{load:.1f}" if load is not None else "n/a",
            f"{heavy.latency:.2f}" if heavy.latency else "n/a",
            f"{heavy.latency / light.latency:.2f}" if heavy.latency and light.latency else "n/a",
            analysis.lines_in_flight_text(heavy)]


def _memory_analysis(curves: Sequence[analysis.MemCurve], cpus: int | None = None,
                     peaks: Sequence[MemoryRow] = ()) -> list[str]:
    """``cpus``: the measuring machine's CPU count, to say whether a run there could add load threads;
    ``peaks``: the run's peak injection bandwidths, to set a curve without a knee against."""
    loaded = [c for c in curves if len(c.points) >= 2]
    if not loaded:
        return []
    out = ["### Memory: loaded-latency knees and Little's law", ""]
    out.append("Each traffic type's points, from the longest injection delay (lightest load) to none, form a "
               "latency–bandwidth curve; its knee is found as for storage, and kept only when the heaviest load's "
               "latency rises above the latencies of the loads lighter than the bend by more than their own spread "
               f"(one figure per delay, no repeats: that spread is the curve's noise) and by more than "
               f"{mem.MATERIAL:.0%} (a chase's latency drifts that much on its own). Little's law for memory: cache "
               "lines in flight = (bandwidth / 64 B) × latency, an estimate of the memory-level parallelism the "
               "traffic needs (it assumes the load threads see the chasing thread's latency).")
    out.append("")
    rows = []
    notes = []
    every = [p for c in loaded for p in c.points]
    good = contention.valid_peaks(peaks, every)
    for c in sorted(loaded, key=lambda c: (c.source, c.stride, _traffic_order(c.traffic), c.buffer)):
        rows.append(_memory_row(c))
        peak = next((p for p in good if p.engine == c.engine and (p.traffic or "R") == c.traffic
                     and p.source == c.source), None)  # another file's peak may be another machine's
        reason = mem.no_knee_reason(c, cpus, peak)
        if reason:
            notes.append(f"- {md_text(c.label)}, no knee: {reason}")
        jumpy = mem.not_monotonic(c.clean)
        if jumpy:
            notes.append(f"- {md_text(c.label)}: {jumpy}")
        left = len(c.points) - len(c.clean)
        if left and len(c.clean) >= 3:  # fewer: the no-knee sentence says so
            notes.append(f"- {md_text(c.label)}: {left} of {len(c.points)} delays contended (a thread got less than "
                         f"{contention.CONTENDED_SHARE:.0%} of a CPU), left out of the knee and of the columns above.")
    unchecked = [c for c in loaded if any(contention.unchecked(p) for p in c.points)]
    if unchecked:
        names = ("Every curve above" if len(unchecked) == len(loaded) else
                 ", ".join(md_text(c.label) for c in unchecked))
        notes.append(f"- {names}: contention {contention.UNCHECKED}; the knees and columns rest on rows no one "
                     "could check for a busy machine.")
    for p in peaks:
        why = contention.peak_problem(p, every)
        if why:
            notes.append(f"- The peak injection bandwidth {md_text(p.traffic or 'R')} ({p.bandwidth or 0:,.1f} MB/s) "
                         f"is no peak and no reference here: {why}.")
    heavy_delay = next((c.clean[-1].delay for c in loaded if c.clean), loaded[0].points[-1].delay)
    knee = delay_header("Knee delay", {c.engine for c in loaded})
    out.append(markdown_table(["Traffic", "Latency at lightest load (ns)", knee, "Bandwidth at knee (MB/s)",
                         "Latency at knee (ns)", f"Bandwidth at delay {heavy_delay} (MB/s)",
                         "Load threads' part (MB/s)", "Latency there (ns)", "Latency growth", "Lines in flight"], rows))
    out.append("")
    points = [p for c in loaded for p in c.points]
    part = (f"the load threads' part is {mem.load_words(points)}" if any(mem.counts_latency_thread(p) for p in points)
            else "the load threads' part is all of it")
    out.append("Bandwidth is " + mem.bandwidth_words(points) + "; " + part + ". Delays are in "
               + "; ".join(mem.delay_unit_text(e, [p for c in loaded if c.engine == e for p in c.points])
                           for e in sorted({c.engine for c in loaded})) + ".")
    out.append("")
    if notes:
        out += notes + [""]
    return out


def _mem_storage(data: RunData) -> list[str]:
    r = analysis.memory_storage_ratio(data)
    if r is None:
        return []
    return ["### Memory vs storage latency", "",
            f"The fastest storage point ({md_text(workload(r.storage))}) has a mean latency of "
            f"{us(r.storage.lat_mean)} µs; the {md_text(r.memory_what)} is {r.memory_ns:.2f} ns. Storage is "
            f"{r.ratio:,.0f}× slower per access ({math.log10(r.ratio):.1f} orders of magnitude)."
            + _sources_apart(r), ""]


def _sources_apart(r: analysis.MemStorageRatio) -> str:
    """Of an import, the two files the ratio's figures come from when they differ (maybe two machines)."""
    a, b = r.storage.source, r.memory_row.source if r.memory_row is not None else ""
    if not (a and b) or a == b:
        return ""
    return (f" The storage figure is from {md_text(a, 120)} and the memory figure from {md_text(b, 120)}: files "
            "imported together may come from different machines, and then the ratio compares two machines.")


def _flags_legend(points: Sequence[StorageRow], meta: RunMeta | None = None) -> list[str]:
    """The tool's checks of the points' figures, one row each: flagged (on how many points), passed, or not
    applicable and why — a check that could not run is never counted as passed.  Lines without ``checks``
    get theirs derived from ``meta`` (run.json); lines written before the checks existed are left out."""
    facts = recorded_facts(meta)
    results = [c for p in points if (c := checks_of(p.line, facts)) is not None]
    if not results:  # a line with flags (those of another version too) has checks: none means none were run
        return []
    out = [f"Validity checks — each check's result over the {len(results)} point{'s' if len(results) != 1 else ''} "
           "it was run on (the Flags column names the points a check flagged):", ""]
    # the open-loop check only where the run has an open-loop point (elsewhere it says nothing of the points)
    opened = any(p.line.point.get("rate") is not None for p in points)
    rows = [[name, *_check_row(name, [c[name] for c in results])] for name in FLAGS
            if name != "closed-by-generator" or opened]
    rows += _other_flag_rows(points)
    out.append(markdown_table(["Check", "Result", "Why"], rows, right=()))
    out.append("")
    if len(results) < len(points):
        n = len(points) - len(results)
        out += [f"{n} point{'s were' if n != 1 else ' was'} recorded before the tool checked its points: not "
                "counted above.", ""]
    return out


# flags a newer version may raise that the checks above do not list: what each means, where known
OTHER_FLAGS: dict[str, str] = {}


def _other_flag_rows(points: Sequence[StorageRow]) -> list[list[str]]:
    """One row per flag outside FLAGS: on how many points, what it means (when known) and the first reasons."""
    seen: dict[str, list[str]] = {}
    for p in points:
        for f in p.other_flags:
            seen.setdefault(f["flag"], []).append(clean_line(f["reason"], 300))  # foreign: the table escapes it
    rows = []
    for name, reasons in seen.items():
        shown = "; ".join(list(dict.fromkeys(reasons))[:3]) + (" …" if len(set(reasons)) > 3 else "")
        meaning = OTHER_FLAGS.get(name, "a flag this version of the report does not describe")
        rows.append([name, f"flagged ({len(reasons)} point{'s' if len(reasons) != 1 else ''})",
                     f"{meaning}: {shown}"])
    return rows


def _same_why(why: str) -> str:
    """A point's reason as one reason of many: a line recorded before the reason dropped its count of I/Os in
    flight ("16 I/Os in flight: …") reads as the reason a line records now."""
    return IN_FLIGHT_WHY if re.match(r"\d+ I/Os in flight: a CPU or drive saving power", why) else why


def _check_row(name: str, entries: Sequence[dict[str, str]]) -> list[str]:
    """The Result and Why of one check over its points' results."""
    count = {r: sum(1 for e in entries if e["result"] == r) for r in ("flagged", "passed", "not-applicable")}
    whys = list(dict.fromkeys(_same_why(clean_line(e.get("why") or "not recorded", 600)) for e in entries
                              if e["result"] == "not-applicable"))  # foreign text, bounded: the table escapes it
    n_a = count["not-applicable"]
    parts, why = [], []
    if count["flagged"]:
        parts.append(f"flagged ({count['flagged']} point{'s' if count['flagged'] != 1 else ''})")
        why.append(LEGEND[name])
    if count["passed"]:
        parts.append(f"passed ({count['passed']})" if count["flagged"] or n_a else "passed")
        why += [] if count["flagged"] else [f"checked: {CHECKED[name]}"]
    if n_a:
        parts.append("not applicable" + (f" ({n_a})" if len(parts) else ""))
        shown = "; ".join(whys[:3]) + (" …" if len(whys) > 3 else "")
        why.append(shown if len(parts) == 1 else f"not applicable to {n_a}: {shown}")
    return [", ".join(parts), "; ".join(why)]


# --- csv ------------------------------------------------------------------------------------------------------

def results_csv(data: RunData) -> str:
    """results.csv: the rows :func:`app.stats.frame.load_results` gives, one per measured point (``data`` as loaded:
    every round of a run in rounds, and the latency-bound searches); a fleet run's has one row per (point, host)
    and a ``host`` column after ``index``, a run in rounds a ``round`` column after ``index``, a run with repeats
    a ``replicate`` column after that (both before ``host``), an imported run an ``imported_from`` column last
    of these.
    Written with the csv module: pandas' import would cost the report ~0.3 s."""
    from app.stats.frame import CSV_COLUMNS, MAX_TEXT_CELL, csv_text, records

    rows = records(data.storage, data.memory, data.path)
    extra = []
    if any(p.round is not None for p in data.storage):
        extra.append("round")
    if any(p.replicate is not None for p in [*data.storage, *data.memory]):
        extra.append("replicate")
    if data.fleet is not None:
        extra.append("host")
    if data.imported:  # each row's file: files imported together may come from different machines
        extra.append("imported_from")
    for row, p in zip(rows, data.storage):  # the memory rows leave round and host empty
        row.update({"round": p.round, "host": p.host})
    for row, q in zip(rows, [*data.storage, *data.memory]):
        row["replicate"] = q.replicate
        row["imported_from"] = clean_text(q.source, limit=MAX_TEXT_CELL)  # a file's name: foreign text
    at = CSV_COLUMNS.index("index") + 1
    return csv_text(CSV_COLUMNS[:at] + extra + CSV_COLUMNS[at:], rows)


# --- the report -------------------------------------------------------------------------------------------------


def _title(data: RunData) -> str:
    preset = data.meta.preset_name
    kinds = [k.value for k, pts in ((Kind.STORAGE, data.storage), (Kind.MEMORY, data.memory)) if pts]
    what = " and ".join(kinds) or "empty"
    if preset:
        return f"# Performance report: {md_text(preset)} ({what})"
    return f"# Performance report ({what}{', imported' if data.imported else ''})"


MAX_BODY_POINTS = 200  # above this, the body has a summary per workload and the per-point tables an appendix


def _storage_summary(points: Sequence[StorageRow], curves: Sequence[analysis.Curve], bound_ns: float,
                     run_dir: Path) -> list[str]:
    """One row per workload (pattern, block size, other settings): its best point, knee and
    operating point under the p99 bound — the body of a report of more than MAX_BODY_POINTS points."""
    out = ["## Storage results", ""]
    out.append(f"{len(points)} points: more than {MAX_BODY_POINTS}, so this section summarises each workload (access "
               "pattern, block size and other settings over its loads) and the table of every point is in the "
               "appendix (Storage results, every point); results.csv has every point too. Latency is fio's total "
               "latency in microseconds; bandwidth in MB/s (10^6 B/s).")
    out.append("")
    knees: dict[tuple[object, ...], tuple[StorageRow, str]] = {}
    for c in curves:
        if c.knee_point is not None and len(c.points) >= 3:
            knees.setdefault((c.mix, c.bs, c.key[2]), (c.knee_point, support.knee_support(run_dir, c).verdict))
    ops = analysis.best_under_bound(points, bound_ns)  # one per workload, in the same order

    def load(p: StorageRow) -> str:
        return f"QD{p.iodepth}" + (f"×{p.numjobs}" if p.numjobs > 1 else "")

    rows = []
    for w, b in zip(analysis.workloads(points), ops):
        key, pts, label = w.key, w.points, w.label
        # a load: its mean
        top = max((analysis.mean_row(r) for r in analysis.replicate_sets(pts)), key=lambda p: p.iops)
        kv = knees.get(key)
        knee_text = ("—" if kv is None
                     else f"{load(kv[0])}: {format_count(kv[0].iops)} IOPS, {us(kv[0].lat_mean)} µs ({kv[1]})")
        if b.best is None or b.best_load is None:
            op = "none" if b.lowest_load is None else f"none (lowest p99 {_binds_load(b.lowest_load)})"
        else:
            op = f"{load(b.best)}: {format_count(b.best.iops)} IOPS, p99 {_binds_load(b.best_load)}"
            if b.only_load:
                op += ", only load measured"
            if support.bound_noise(run_dir, b.best, bound_ns, b.best_load.rows).within_noise:
                op += ", within noise of the bound"
        loads = sorted({p.inflight for p in pts})
        rows.append([label, len(pts), f"{loads[0]}–{loads[-1]}" if len(loads) > 1 else str(loads[0]),
                     f"{load(top)}: {format_count(top.iops)} IOPS, {top.bw / MB:.1f} MB/s", knee_text, op])
    out.append(markdown_table(["Workload", "Points", "Loads (QD × jobs)", "Best point (most IOPS)", "Knee",
                         f"Operating point (p99 ≤ {bound_ns / 1e3:g} µs)"], rows, right=(1,)))
    out.append("")
    return out


def render_markdown(data: RunData, figures: Sequence[Figure], bound_ns: float,
                    curves: Sequence[analysis.Curve], mem_curves: Sequence[analysis.MemCurve],
                    views: procedure.StorageViews | None = None) -> str:
    """``data.storage``: the rows of the tables and figures (:func:`rp.storage_views`'s ``main``);
    ``views``: the latency-bound searches and every round of a run in rounds, for their own sections."""
    views = views or procedure.StorageViews(list(data.storage), [], [])
    lines: list[str] = [_title(data), ""]
    intro = ("Generated by profiler-tui from the results directory alone (run.json, results.jsonl): storage "
             "measured with fio, memory with Intel MLC's loaded-latency method or the built-in engine. Units: "
             "µs = 10^-6 s, ns = 10^-9 s, MB = 10^6 bytes, MiB = 2^20 bytes, block sizes in KiB (2^10 bytes).")
    lines += [intro, ""]
    lines += answer.section(data, curves, bound_ns, views.opened)
    lines += environment_section(data)
    lines += run_section(data)
    lines += _target(data)
    lines += conditions.section(data)
    lines += host.section(data)
    named = workload_namer(data.storage)
    lines += drive.section(data, named)
    lines += peak_text.section(data)
    big = len(data.storage) > MAX_BODY_POINTS
    if data.storage:
        lines += (_storage_summary(data.storage, curves, bound_ns, data.path) if big
                  else storage_table(data.storage, meta=data.meta, run_dir=data.path)
                  + peak_text.cpu_cost_section(data.storage, with_replicate(named)))
        lines += procedure.steady_section(data.storage)
        lines += replicates.storage_section(data.path, data.storage, named)
        lines += series.cliff_section(data)
        lines += tails.section(data.storage, figures, named, table=not big)
        lines += heat.section(data.path, data.storage, figures, named)
    lines += procedure.skipped_section(data.meta)
    if data.storage or views.searches:
        lines += section_figures([f for f in figures if not tails.owns(f) and not heat.owns(f)], Kind.STORAGE)
    suite_rows = suite.rows(data)
    if data.memory or suite_rows:
        env = data.meta.environment
        lines += _memory_tables(data.memory, env.entry if env is not None else None,
                                suite.section(data, figures, suite.BEFORE_LOADED))
        lines += replicates.memory_section(data.memory)
        lines += section_figures([f for f in figures if not suite.owns(f)], Kind.MEMORY)
        lines += suite.section(data, figures, suite.AFTER_LOADED)
    heading = len(lines)
    lines += ["## Analysis", ""]
    if data.storage:
        lines += trends.summary_section(data.path, data.storage)
        lines += _littles_law(data.storage, table=not big, label=with_replicate(named))
        if curves:
            lines += _knees(curves, data.path)
        lines += _bound(data.storage, bound_ns, data.path)
        lines += queue_text.section(curves, figures, data.path, data.storage)
    lines += open_loop.section(views.opened, data.storage, bound_ns, data.path)
    lines += procedure.operating_point_section(views.searches,
                                               {f"{c.mix} {c.bs}" for c in curves if len(c.points) >= 2})
    lines += procedure.rounds_section(data, views.rounds)
    lines += _memory_analysis(mem_curves, _machine_cpus(data), [p for p in data.memory if p.mode == "peak"])
    lines += _mem_storage(data)
    if not data.storage and not data.memory and not views.searches and not views.opened:
        lines += ["No completed point: nothing to analyse.", ""]
    if len(lines) == heading + 2:  # nothing under the heading: no heading either
        del lines[heading:]
    if big:
        lines += ["## Appendix: every point", ""]
        lines += storage_table(data.storage, heading="### Storage results, every point", meta=data.meta,
                                 run_dir=data.path)
        lines += _littles_law(data.storage, heading="### Little's law, every point", label=with_replicate(named))
        lines += peak_text.cpu_cost_section(data.storage, with_replicate(named))
        lines += tails.appendix(data.storage, named)
    while lines and lines[-1] == "":
        lines.pop()
    return clean_text("\n".join(lines) + "\n", newlines=True)  # no terminal control reaches report.md
