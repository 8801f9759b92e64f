"""The report's "Peak" section (app.peak: the best point, its configuration, IOPS per busy CPU, what ran out) and
its "CPU cost" table (every storage point's IOPS per CPU, by both counts).

The Peak section is given to a peak run only (:func:`app.peak.is_peak_run`: the peak or peak-write preset, or a
run comparing more than one engine or set of io_uring options); the CPU cost table to any run one of whose
points has a CPU figure (fio's ``iops_per_cpu`` or a ``host_cpu`` part).
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable, Sequence

from app.peak import (
    BUSY_SOURCE,
    FIO_SOURCE,
    Config,
    CpuCost,
    HostCpu,
    Peak,
    find_peak,
    host_cpu,
    is_peak_run,
    load_of,
    load_text,
)
from app.report import intervals as ci
from app.report.model import RunData, StorageRow
from app.sanitize import Markup, clean_line, md_text
from app.textable import markdown_table
from app.units import format_count, format_size, us


def cost_text(cost: CpuCost) -> str:
    """A point's IOPS per CPU as a cell: the figure (flagged when computed from too little) or n/a."""
    if cost.value is None:
        return "n/a"
    text = format_count(cost.value)
    return f"{text} (from only {cost.few})" if cost.few else text


def _source(cost: CpuCost) -> str:
    return "/proc/stat" if cost.busy else "fio usr+sys" if cost.source == FIO_SOURCE else md_text(cost.why or "", 300)


def _peak_rows(peak: Peak, row: StorageRow | None, run_dir: Path) -> list[list[str]]:
    iv = ci.storage_intervals(run_dir, row).get("iops") if row is not None else None
    iops = float(peak.line.storage.iops or 0)
    figure = ci.pm_count(iops, iv)
    figure += " IOPS" + (" (± the 95 % interval of its mean within this run, around its centre)" if iv is not None
                         else "")
    if ci.whole_run_differs(iops, iv):
        figure += f"; fio's whole-run figure {format_count(iops)}"
    cost = peak.cost
    per_cpu = (f"{cost_text(cost)} ({BUSY_SOURCE if cost.busy else FIO_SOURCE})" if cost.value is not None
               else f"n/a: {clean_line(cost.why, 300)}")
    lat = peak.line.storage.lat_ns
    mean = lat.get("mean") if lat is not None else None
    return [["Peak", figure],
            ["Reached by", f"{peak.config.label}, {load_text(load_of(peak.line))}, "
                           f"{peak.config.rw} {format_size(peak.config.bs)}"
                           + (f", mean latency {us(mean)} µs" if mean else "")],
            ["IOPS per CPU", per_cpu],
            ["Ran out", Markup(f"**{md_text(peak.limit.resource, 20)}**: {md_text(peak.limit.evidence, 600)}")]]


def _config_rows(peak: Peak) -> list[list[str]]:
    rows = []
    for b in peak.configs:
        rows.append([md_text(b.config.label), str(b.points), format_count(float(b.best.storage.iops or 0)),
                     load_text(load_of(b.best)), cost_text(b.cost), _source(b.cost)])
    for config, reason in peak.skipped:
        rows.append([md_text(config.label), "0", "skipped", "—", "—", md_text(reason, 300)])
    return rows


def section(data: RunData) -> list[str]:
    """The Peak section of a peak run; [] for any other run."""
    lines = [p.line for p in data.storage]
    preset = data.meta.preset_name
    if not is_peak_run(preset, lines):
        return []
    skipped = [(s.point, s.reason or "skipped") for s in data.meta.skipped if s.point is not None]
    peak = find_peak(lines, skipped)
    out = ["## Peak", ""]
    if peak is None:
        return out + ["No pure read or write point measured IOPS: no peak to report.", ""]
    row = next((p for p in data.storage if p.line is peak.line), None)
    out.append(f"The most IOPS of the run's measured pure {peak.direction} points, the configuration that reached "
               "it, its IOPS per CPU and which resource ran out there: CPU (its CPUs, or each of fio's job threads, "
               "at least 90 % busy), depth (the deepest load its configuration tried still added at least 3 % IOPS:"
               " the plan ran out, not the host), or device (IOPS stopped growing while latency rose and the CPUs "
               "had headroom).")
    out.append("")
    out.append(markdown_table(["Property", "Value"], _peak_rows(peak, row, data.path), right=()))
    out.append("")
    out.append("Each configuration's best point, most IOPS first; IOPS per CPU is per busy CPU (/proc/stat over the "
               "measured window, counting the kernel's SQ-poll thread and interrupts) where the point recorded it, "
               "else per CPU-second of fio's job threads (usr+sys), which leaves those out:")
    out.append("")
    out.append(markdown_table(["Configuration", "Points", "Best IOPS", "At", "IOPS per CPU", "CPU figure from"],
                              _config_rows(peak), right=(1, 2, 4)))
    out.append("")
    return out


# --- the CPU cost table ----------------------------------------------------------------------------------------


def _busy_text(p: StorageRow) -> tuple[str, str]:
    """The busy CPUs and IOPS per busy CPU cells of a point's ``host_cpu`` part."""
    host = host_cpu(p.line.parts.host_cpu)
    if host is None:
        return "—", "—"
    if not isinstance(host, HostCpu):
        return f"n/a: {clean_line(host, 200)}", "—"
    busy = f"{host.busy_cpus:.2f} of {host.count} ({clean_line(host.cpus, 40)})"
    if host.iops_per_busy_cpu is None:
        return busy, "—"
    per = format_count(host.iops_per_busy_cpu)
    return busy, f"{per} (from only {host.busy_s:.2f} CPU-s)" if host.few else per


def cpu_cost_section(points: Sequence[StorageRow], describe: Callable[[StorageRow], str]) -> list[str]:
    """A table of every point's CPU cost, when one of them has a CPU figure; ``describe``: the point's name."""
    if not any(p.metrics.iops_per_cpu is not None or p.line.parts.host_cpu is not None for p in points):
        return []
    out = ["### CPU cost", "",
           "What an I/O costs in CPU, per point. fio CPU per job: each job thread's usr+sys share of one CPU. IOPS per "
           "CPU-second: the point's I/Os over the CPU time of fio's job threads (leaves out the kernel's SQ-poll "
           "thread and interrupts on other CPUs; n/a when they used under 0.01 CPU-s). Busy CPUs: /proc/stat's busy "
           "time (user, nice, system, irq, softirq) over the measured window, of the CPUs counted (the point's "
           "pinned CPUs, else every online CPU), and the I/Os per busy CPU-second; a figure from under "
           "0.5 CPU-s of busy time (50 ticks of 10 ms) is marked with how little it came from.", ""]
    engines = len({Config.of(p.point).engine_key for p in points}) > 1
    rows = []
    for p in points:
        fio = p.metrics.iops_per_cpu
        busy, per_busy = _busy_text(p)
        name = (f"{clean_line(p.group, 60)}: " if p.group else
                f"{Config.of(p.point).engine_label}: " if engines else "") + describe(p)
        rows.append([name, format_count(p.iops), f"{p.usr + p.sys:.1f}%",
                     format_count(float(fio)) if fio is not None else "n/a", busy, per_busy])
    out.append(markdown_table(["Workload", "IOPS", "fio CPU per job", "IOPS per CPU-second (fio)", "Busy CPUs",
                               "IOPS per busy CPU"], rows, right=(1, 2, 3, 4, 5)))
    out.append("")
    return out
