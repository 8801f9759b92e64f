"""The report's "Peak" section (app.stats.peak: the best point, its configuration, IOPS per CPU, what ran out) and
its "CPU cost" table (every storage point's IOPS per CPU, by both counts).

IOPS per CPU is fio's own: the I/Os per CPU-second of its job threads (usr+sys).  The host's figures (/proc/stat:
the busy CPUs, the steal, the I/Os per busy CPU) stand beside it, labelled as the host's: they count every process
on those CPUs — another tenant's work on a shared machine or a VM — and the kernel's work for fio.

The Peak section is given to a peak run only (:func:`app.stats.peak.is_peak_run`: the peak or peak-write preset, or a
run comparing more than one engine or set of io_uring options); the CPU cost table to any run one of whose
points has a CPU figure (fio's ``iops_per_cpu`` or a ``host_cpu`` part).
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable, Sequence

from app.core.sanitize import Markup, clean_line, md_text
from app.core.textable import markdown_table
from app.core.units import format_count, format_size, us
from app.report.compute import intervals
from app.report.data.model import RunData, StorageRow
from app.stats.peak import (
    HOST_WHAT,
    Config,
    CpuCost,
    HostCpu,
    Peak,
    cpu_cost,
    find_peak,
    is_peak_run,
    load_of,
    load_text,
)
from app.stats.uncertainty import replicate_spread


def cost_text(cost: CpuCost) -> str:
    """A point's IOPS per CPU (fio's own) as a cell: the figure or n/a."""
    return "n/a" if cost.value is None else format_count(cost.value)


def host_cells(host: HostCpu | str | None) -> tuple[str, str, str]:
    """The host's busy CPUs, steal and I/Os per busy host CPU as cells (/proc/stat over the point's window)."""
    if host is None:
        return "—", "—", "—"
    if not isinstance(host, HostCpu):
        return f"n/a: {clean_line(host, 200)}", "—", "—"
    busy = f"{host.busy_cpus:.2f} of {host.count} ({clean_line(host.cpus, 40)})"
    steal = "not recorded" if host.steal_cpus is None else f"{host.steal_cpus:.2f}"
    return busy, steal, "—" if host.iops_per_busy_cpu is None else cost_text_of(host)


def _own_text(cost: CpuCost) -> str:
    """fio's own CPUs as a cell: "0.36" (CPUs its job threads kept busy), "—" without fio's CPU figures."""
    return "—" if cost.fio_cpus is None else f"{cost.fio_cpus:.2f}"


def host_text(host: HostCpu | str | None) -> str:
    """The host's CPU over a point as words, labelled as the host's (beside fio's own figure)."""
    if host is None:
        return "host CPU not recorded"
    if not isinstance(host, HostCpu):
        return f"host CPU n/a: {clean_line(host, 300)}"
    steal = "" if host.steal_cpus is None else f", steal {host.steal_cpus:.2f} CPU"
    per = "" if host.iops_per_busy_cpu is None else f"{cost_text_of(host)} IOPS per busy host CPU; "
    return (f"host: {per}{host.busy_cpus:.2f} of {host.count} CPUs busy ({clean_line(host.cpus, 40)}){steal}, "
            f"counting {HOST_WHAT}")


def cost_text_of(host: HostCpu) -> str:
    """The host's I/Os per busy CPU, flagged when from too little busy time."""
    per = format_count(host.iops_per_busy_cpu or 0.0)
    return f"{per} (from only {host.busy_s:.2f} CPU-s)" if host.few else per


def per_cpu_text(cost: CpuCost, sqpoll: bool) -> str:
    """The Peak section's IOPS per CPU: fio's own figure with its CPUs, then the host's, labelled."""
    if cost.value is None:
        own = f"n/a: {clean_line(cost.why, 300)}"
    else:
        used = "" if cost.fio_cpus is None else f", {cost.fio_cpus:.2f} CPU busy"
        own = f"{cost_text(cost)} per CPU-second of fio's own job threads (usr+sys{used})"
        if sqpoll:
            own += " — leaves out io_uring's SQ-poll thread, which the host figure counts"
    return f"{own}; {host_text(cost.host)}"


def _peak_rows(peak: Peak, row: StorageRow | None, run_dir: Path) -> list[list[str]]:
    if len(peak.replicates) > 1:
        spread = replicate_spread([float(ln.storage.iops or 0) for ln in peak.replicates])
        figure = intervals.pm_count(spread.mean, spread.ci)
        values = sorted(float(ln.storage.iops or 0) for ln in peak.replicates)
        figure += (f" IOPS, the mean over {spread.n} replicates (± the Student-t 95 % interval between runs; range "
                   f"{format_count(values[0])}–{format_count(values[-1])}); what ran out compares each load's mean, "
                   "the CPU figures are the replicate's nearest the mean")
    else:
        iv = intervals.storage_intervals(run_dir, row).get("iops") if row is not None else None
        iops = float(peak.line.storage.iops or 0)
        figure = intervals.pm_count(iops, iv)
        figure += " IOPS" + (" (± the 95 % interval of its mean within this run, around its centre)" if iv is not None
                             else "")
        if intervals.whole_run_differs(iops, iv):
            figure += f"; fio's whole-run figure {format_count(iops)}"
    per_cpu = per_cpu_text(peak.cost, peak.line.point.get("sqthread_poll") is True)
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
        busy, steal, per_busy = host_cells(b.cost.host)
        rows.append([md_text(b.config.label), str(b.points),
                     format_count(b.iops) + (f" (mean of {len(b.replicates)})" if len(b.replicates) > 1 else ""),
                     load_text(load_of(b.best)), cost_text(b.cost), _own_text(b.cost), busy, steal, per_busy])
    for config, reason in peak.skipped:
        rows.append([md_text(config.label), "0", f"skipped: {md_text(reason, 300)}"] + ["—"] * 6)
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
    out.append("Each configuration's best point, most IOPS first. IOPS per CPU is per CPU-second of fio's own job "
               "threads (usr+sys), and fio CPUs how many CPUs they kept busy; it leaves out what the kernel does "
               "for fio elsewhere (interrupts, io_uring's SQ-poll thread). Beside it, the host's: the CPUs busy over "
               "the measured window by /proc/stat, the steal (time the hypervisor gave to others) and the I/Os per "
               "busy host CPU — counting " + HOST_WHAT + ", so other tenants' work too:")
    out.append("")
    out.append(markdown_table(["Configuration", "Points", "Best IOPS", "At", "IOPS per CPU (fio)", "fio CPUs",
                               "Host busy CPUs", "Host steal (CPUs)", "IOPS per busy host CPU"],
                              _config_rows(peak), right=(1, 2, 4, 5, 7, 8)))
    out.append("")
    return out


# --- the CPU cost table ----------------------------------------------------------------------------------------


def cpu_cost_section(points: Sequence[StorageRow], describe: Callable[[StorageRow], str]) -> list[str]:
    """A table of every point's CPU cost, when one of them has a CPU figure; ``describe``: the point's name."""
    if not any(p.metrics.iops_per_cpu is not None or p.line.parts.host_cpu is not None for p in points):
        return []
    out = ["### CPU cost", "",
           "What an I/O costs in CPU, per point. fio's own CPU first: per job, each job thread's usr+sys share of "
           "one CPU; fio CPUs, how many CPUs its job threads kept busy; IOPS per CPU-second, the point's I/Os over "
           "their CPU time (leaves out the kernel's SQ-poll thread and interrupts on other CPUs; n/a when they used "
           "under 0.01 CPU-s). Then the host's, from /proc/stat over the measured window, of the CPUs counted (the "
           "point's pinned CPUs, else every online CPU): the busy CPUs (user, nice, system, irq, softirq), the steal "
           "(CPUs' worth of time the hypervisor gave to other guests) and the I/Os per busy host CPU-second. The "
           "host's figures count " + HOST_WHAT + ": on a shared machine or a VM, other tenants' work too, so they "
           "are no cost of fio's I/O alone; a figure from under 0.5 CPU-s of busy time (50 ticks of 10 ms) is "
           "marked with how little it came from.", ""]
    engines = len({Config.of(p.point).engine_key for p in points}) > 1
    rows = []
    for p in points:
        cost = cpu_cost(p.line)
        busy, steal, per_busy = host_cells(cost.host)
        name = (f"{clean_line(p.group, 60)}: " if p.group else
                f"{Config.of(p.point).engine_label}: " if engines else "") + describe(p)
        rows.append([name, format_count(p.iops), f"{p.usr + p.sys:.1f}%", _own_text(cost),
                     cost_text(cost), busy, steal, per_busy])
    out.append(markdown_table(["Workload", "IOPS", "fio CPU per job", "fio CPUs", "IOPS per CPU-second (fio)",
                               "Host busy CPUs", "Host steal (CPUs)", "IOPS per busy host CPU"], rows,
                              right=(1, 2, 3, 4, 6, 7)))
    out.append("")
    return out
