"""Validity flags: what the tool checks of every storage point's figures, and says when they are in doubt.

Each flag is stored in the point's results line as ``{"flag": name, "reason": one line}``; the report's
storage table, the TUI's results table and ``compare`` show them (docs/results-schema.md, "flags"):

- ``cpu-bound``: fio's usr+sys CPU per job at or above :data:`CPU_BOUND_PERCENT` % of one CPU — the load
  generator, not the device, set the pace;
- ``depth-not-reached``: Little's law, IOPS × mean latency ÷ the I/Os the workload should keep in flight
  (iodepth × numjobs; 1 per job for synchronous engines), below :data:`DEPTH_RATIO`;
- ``above-link``: throughput above what the device's link can carry (app.host.link) — a cache answered;
- ``buffered``: direct=0, or a target file on a filesystem that does not honour O_DIRECT as asked: tmpfs
  or ramfs (memory), ZFS before 2.3 (caches in its ARC anyway), overlayfs (a container's own layer);
- ``not-steady``: a point with a steady-state criterion that fio never saw hold before the cap;
- ``imprecise``: a point with a ``precision`` whose 95 % interval of mean IOPS was still wider than asked when
  the runtime cap (or fio's steady state) ended it (app.stats.precision);
- ``warmup-cut``: the warm-up MSER-5 cut from the interval of mean IOPS took at least :data:`WARMUP_SHARE` of the
  point's measured seconds (its ``ci_method`` says how many): the IOPS shown with ± is the mean after it, and
  fio's whole-run figure, which counts those seconds too, is shown beside it as such;
- ``throttled``: a drive thermal-management counter rose while the point ran (app.host.telemetry);
- ``over-temperature``: the drive set its critical warning's temperature bit while the point ran — its
  temperature was past a threshold, and it may have throttled; for drives that keep no throttle counter
  (app.host.telemetry says why this is not ``throttled``);
- ``link-degraded``, ``numa-remote``, ``power-saving``, ``write-throttled``: a host setting that bends this point's
  result, as the audit read before the run's first point (run.json ``audit``, app.host.audit) — the PCIe link trained
  below the device's maximum (every point), the CPUs all off the device's NUMA node (a pinned point's own
  ``cpus``, else the run's), a frequency governor, deep C-states or NVMe APST saving power (points with at most
  :data:`LOW_LOAD` I/Os in flight, where a CPU or drive idles between I/Os), write-back throttling on (points that
  write through the page cache: it does not delay O_DIRECT writes).

A check that cannot run on a point is not passed: :func:`point_checks` gives each check's result per point —
``flagged``, ``passed`` or ``not-applicable`` with why (no link speed known, no drive telemetry, no steady-state
criterion, an operating-point search, no CPU figures) — stored in the results line as ``checks``.  Lines
written before ``checks`` existed get theirs from :func:`checks_of`, which derives the same from what the line
and run.json record (``target_info.link``, ``telemetry``, the point's ``steady`` setting).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import Iterable, Mapping

from app.core.sanitize import cut_at_word
from app.core.units import format_bandwidth
from app.host.audit import ITEMS, Audit, Item, from_json, tuned_by
from app.host.devstat import MIN_DEVICE_BYTES
from app.host.link import Link, sysfs_root
from app.host.topology import cpu_list, cpu_list_text
from app.model.points import WRITE_MODES
from app.model.records import Parts, ResultLine, StorageMetrics, is_num, number
from app.model.runmeta import RunMeta
from app.model.tails import TAIL_UNSTABLE_FACTOR
from app.stats.precision import imprecise_reason

WARMUP_SHARE = 0.25  # a warm-up cut of at least this share of a point's measured seconds is flagged
FLAGS = ("cpu-bound", "depth-not-reached", "above-link", "buffered", "not-steady", "imprecise", "warmup-cut",
         "throttled", "over-temperature", "not-on-device", "amplified", "tail-unstable", "link-degraded", "numa-remote",
         "power-saving", "write-throttled", "level-shift", "closed-by-generator")
LEGEND = {
    "cpu-bound": "fio used ≥ 90 % of a CPU per job: the load generator, not the device, set the pace",
    "depth-not-reached": "IOPS × mean latency (Little's law) below 90 % of the I/Os the workload asks to keep "
                         "in flight: the queue was not kept full",
    "above-link": "throughput above what the device's link can carry: a cache answered, not the medium",
    "buffered": "the page cache or a memory filesystem served the I/O (direct=0, tmpfs, ZFS < 2.3, overlayfs)",
    "not-steady": "fio's steady-state criterion never held before the runtime cap",
    "imprecise": "the 95 % interval of mean IOPS was wider than the precision asked when the point ended",
    "warmup-cut": f"the warm-up MSER-5 found took at least {WARMUP_SHARE:.0%} of the point's measured seconds: the "
                  "IOPS shown with ± is the mean of the seconds after it, fio's whole-run figure (shown as such) "
                  "counts them all",
    "throttled": "a drive thermal-management counter rose while the point ran",
    "over-temperature": "the drive reported its temperature past a threshold (critical warning, temperature bit) "
                        "while the point ran: it may have throttled",
    "not-on-device": "the device's own counters moved less than 90 % of the bytes fio reports: a page cache, a "
                     "cache in the stack, compression, dedupe or a sparse file answered — the figure is not the "
                     "device's",
    "amplified": "the device's own counters moved more than 110 % of the bytes fio reports: read-modify-write, "
                 "misaligned blocks, filesystem journal or metadata, or other I/O on the device",
    "tail-unstable": f"one second's p99 latency was more than {TAIL_UNSTABLE_FACTOR:g}× the point's median "
                     "second's: the tail changed while the point ran",
    "link-degraded": "the device's PCIe link trained below its maximum speed or width: bandwidth is capped",
    "numa-remote": "the run's CPUs are not on the device's NUMA node: every I/O crosses the interconnect",
    "power-saving": "a CPU frequency governor, deep CPU idle states or NVMe APST saved power at a load of at most "
                    "4 I/Os in flight: waking the CPU or the drive adds latency to each I/O",
    "write-throttled": "write-back throttling was on for buffered writes (direct=0): the kernel delayed them to keep "
                       "reads fast",
    "level-shift": "the per-second samples stepped from one level to another while the point ran (not a warm-up): "
                   "both levels are stated and the point's mean gets no ± (docs/uncertainty.md)",
    "closed-by-generator": "an open-loop point whose generator fell behind its offered rate or filled its iodepth: "
                           "the loop closed, and its latency (timed from issue, not from arrival) understates the "
                           "waiting; it is not used as an open-loop figure",
}
CHECKED = {  # what a passed check verified, for the report's table of checks
    "cpu-bound": "fio's usr+sys CPU per job stayed below 90 % of one CPU",
    "depth-not-reached": "IOPS × mean latency held at least 90 % of the I/Os asked in flight",
    "above-link": "throughput stayed within the device link's capacity",
    "buffered": "direct=1, and the target is on no filesystem known to ignore O_DIRECT (tmpfs, ramfs, ZFS < 2.3, "
                "overlayfs)",
    "not-steady": "fio's steady-state criterion held before the runtime cap",
    "imprecise": "the 95 % interval of mean IOPS reached the precision asked",
    "warmup-cut": f"the warm-up cut from the interval of mean IOPS was under {WARMUP_SHARE:.0%} of the measured "
                  "seconds",
    "throttled": "no drive thermal-management counter rose while the point ran",
    "over-temperature": "the drive's critical warning never had its temperature bit set while the point ran",
    "not-on-device": "the device's counters moved at least 90 % of the bytes fio reports, in each direction",
    "amplified": "the device's counters moved at most 110 % of the bytes fio reports, in each direction",
    "tail-unstable": f"every measured second's p99 stayed within {TAIL_UNSTABLE_FACTOR:g}× of the point's median "
                     "second's",
    "link-degraded": "the device's PCIe link ran at its maximum speed and width",
    "numa-remote": "the run's CPUs were on the device's NUMA node",
    "power-saving": "none of the CPU frequency governor, CPU idle states and NVMe APST that could be read saved power",
    "write-throttled": "write-back throttling was off for the device",
    "level-shift": "the per-second samples held one level (no step past the warm-up)",
    "closed-by-generator": "the offered rate was achieved in every second and the in-flight count stayed below the "
                           "iodepth cap: the loop stayed open",
}
RESULTS = ("flagged", "passed", "not-applicable")
NOT_AUDITED = "the run was recorded before the tool audited the host's settings"
FLEET_NOT_AUDITED = "a fleet run does not audit its hosts' settings"
NO_LINK = "no link speed known"
NO_TELEMETRY = "no drive telemetry (no NVMe/SMART counters)"
NO_STEADY = "no steady-state criterion set"
NO_PRECISION = "no precision asked"
NO_WARMUP = "no interval of mean IOPS recorded, so no warm-up cut from one"
# checks added after results lines carried ``checks``: a line recorded before one has no result for it, and
# its passing cannot be derived (nothing in the line says the drive's critical warning was looked at)
ADDED_LATER = {"over-temperature": "the point was recorded before the tool checked the drive's critical warning",
               "not-on-device": "the point was recorded before the tool read the device's counters",
               "amplified": "the point was recorded before the tool read the device's counters",
               "tail-unstable": "the point was recorded before the tool checked its tail over time",
               "level-shift": "the point was recorded before the tool tested its samples for a level shift",
               **dict.fromkeys(("link-degraded", "numa-remote", "power-saving", "write-throttled"), NOT_AUDITED)}
# of these, a line without a stored result predates the check whatever the line holds (its parts were not recorded)
PARTS_LATER = frozenset({"not-on-device", "amplified", "tail-unstable"})
DEVICE_LOW, DEVICE_HIGH = 0.9, 1.1  # device bytes / fio bytes outside these: not-on-device, amplified
DIRECTION_WORDS = {"read": ("read", "reads"), "write": ("wrote", "writes")}

LOW_LOAD = 4  # I/Os in flight at or below which a CPU or drive idles between I/Os (power-saving)
# the audit's warnings behind each point flag, and the audit items each flag's check reads
AUDIT_FLAGS: dict[str, tuple[str, ...]] = {"link-degraded": ("link-degraded",), "numa-remote": ("numa-remote",),
                                           "power-saving": ("governor", "cstates", "apst-on"),
                                           "write-throttled": ("wbt-on",)}
AUDIT_ITEMS: dict[str, tuple[str, ...]] = {"link-degraded": ("pcie_link",), "numa-remote": ("numa_node",),
                                           "power-saving": ("governor", "cstates", "apst"),
                                           "write-throttled": ("wbt",)}
_NODE_CPUS = re.compile(r"node ([0-9]{1,5}) \(CPUs ([0-9,-]{1,200})\)")  # the audit's numa_node value
BUFFERED_WRITES = WRITE_MODES - {"trim", "randtrim"}  # modes whose writes go through the page cache at direct=0
SEARCHED = "operating-point searches are not checked for depth: fio's latency_target search varies the depth"
CPU_BOUND_PERCENT = 90.0
DEPTH_RATIO = 0.9
SYNC_ENGINES = frozenset({"psync", "sync", "pvsync", "pvsync2", "vsync"})
MEMORY_FILESYSTEMS = frozenset({"tmpfs", "ramfs"})
ZFS_DIRECT_FROM = (2, 3)


@dataclass(frozen=True)
class TargetFacts:
    """What the checks need to know of the target, read once per session: its link, and for a file the
    filesystem that holds it (and ZFS's version when that is ZFS)."""

    link: Link | None = None
    filesystem: str | None = None
    zfs_version: str | None = None
    no_link: str = NO_LINK  # why there is no link, when ``link`` is None
    telemetry: bool = False  # the drive's health log is read during the run (app.host.telemetry)
    no_telemetry: str = NO_TELEMETRY  # why not, when ``telemetry`` is False
    audit: Audit | None = None  # the host's settings read before the run's first point (run.json ``audit``)
    no_audit: str = NOT_AUDITED  # why there is none, when ``audit`` is None


def no_link_why(target_info: Mapping[str, object] | None, environment: Mapping[str, object] | None) -> str:
    """Why the above-link check has no link to compare with, from what run.json records of the target and
    the machine: a memory filesystem, a loop device and a virtual disk have no SATA/USB/PCIe link in sysfs."""
    info = target_info if isinstance(target_info, Mapping) else {}
    env = environment if isinstance(environment, Mapping) else {}
    system = env.get("system")
    virt = system.get("virtualization") if isinstance(system, Mapping) else None
    fs, kind = info.get("filesystem"), info.get("type") or info.get("kind")
    names = " ".join(str(info.get(k) or "") for k in ("name", "path", "source"))
    if not info:
        return f"{NO_LINK}: the target's details are not recorded"
    if fs in MEMORY_FILESYSTEMS:
        return f"{NO_LINK}: the file is on {fs}, in memory"
    if kind == "loop" or "loop" in names or info.get("backing_file"):
        return f"{NO_LINK} for a loop device (a file on another filesystem)"
    if virt:
        return f"{NO_LINK} for a virtual disk"
    return f"{NO_LINK}: sysfs shows no SATA, USB or PCIe link above the target"


def target_facts(target_info: Mapping[str, object] | None, link: Link | None,
                 environment: Mapping[str, object] | None = None) -> TargetFacts:
    info = target_info if isinstance(target_info, Mapping) else {}
    fs = info.get("filesystem") if info.get("type") == "file" or info.get("kind") == "file" else None
    fs = fs if isinstance(fs, str) else None
    zfs = None
    if fs == "zfs":
        try:
            zfs = (sysfs_root() / "module" / "zfs" / "version").read_text(errors="replace")[:64].strip() or None
        except OSError:
            zfs = None
    return TargetFacts(link=link, filesystem=fs, zfs_version=zfs, no_link=no_link_why(info, environment))


def flag(name: str, reason: str) -> dict[str, str]:
    assert name in FLAGS
    return {"flag": name, "reason": " ".join(reason.split())}


def _in_flight(point: Mapping[str, object]) -> int:
    depth, jobs = point.get("iodepth"), point.get("numjobs")
    depth = depth if isinstance(depth, int) and point.get("ioengine") not in SYNC_ENGINES else 1
    jobs = jobs if isinstance(jobs, int) else 1
    return max(1, depth) * max(1, jobs)


def _zfs_before_direct(version: str) -> bool:
    m = re.match(r"(\d+)\.(\d+)", version)
    return m is not None and (int(m.group(1)), int(m.group(2))) < ZFS_DIRECT_FROM


def buffered_reason(point: Mapping[str, object], facts: TargetFacts) -> str | None:
    if point.get("direct") in (False, 0):
        return "direct=0: the I/O went through the page cache"
    fs = facts.filesystem
    if fs in MEMORY_FILESYSTEMS:
        return f"the target file is on {fs}, which keeps files in memory: O_DIRECT reaches no device"
    if fs == "zfs" and facts.zfs_version and _zfs_before_direct(facts.zfs_version):
        return f"the target file is on ZFS {facts.zfs_version}, which caches O_DIRECT I/O in its ARC before 2.3"
    if fs == "overlay":
        return ("the target file is on overlayfs (a container's own layer, not a bind-mounted host filesystem): "
                "the figures are the layered filesystem's, not the disk's")
    return None


def point_flags(point: Mapping[str, object], metrics: StorageMetrics, parts: Parts,
                facts: TargetFacts = TargetFacts(), throttled: str | None = None,
                over_temperature: str | None = None) -> list[dict[str, str]]:
    """The flags of one storage point from its JSON table, its metrics and the runner's parts (``steady``,
    ``operating_point``)."""
    out: list[dict[str, str]] = []
    cpu = (metrics.usr_cpu or 0.0) + (metrics.sys_cpu or 0.0)
    if cpu >= CPU_BOUND_PERCENT:
        out.append(flag("cpu-bound", f"fio used {cpu:.0f} % of a CPU per job (usr+sys), at or above "
                                     f"{CPU_BOUND_PERCENT:.0f} %"))
    iops = metrics.iops or 0.0
    mean = _mean(metrics) or 0.0
    if iops > 0 and mean > 0 and not _searched(point, parts) and point.get("rate") is None:
        n = _in_flight(point)
        held = iops * mean * 1e-9
        if held / n < DEPTH_RATIO:
            out.append(flag("depth-not-reached", f"IOPS × mean latency = {held:.2f} I/Os in flight of {n} asked "
                                                 f"({held / n:.0%}, below {DEPTH_RATIO:.0%})"))
    bw = metrics.bw_bytes or 0.0
    if facts.link is not None and bw > facts.link["bytes_per_s"]:
        out.append(flag("above-link", f"{format_bandwidth(bw)} is above the {facts.link['text']} link's "
                                      f"{format_bandwidth(facts.link['bytes_per_s'])}"))
    reason = buffered_reason(point, facts)
    if reason:
        out.append(flag("buffered", reason))
    steady = parts.steady
    if steady is not None and steady.get("attained") is False:
        out.append(flag("not-steady", f"{steady.get('criterion') or 'the criterion'} never held before the cap"))
    imprecise = imprecise_reason(parts.precision) if parts.precision is not None else None
    if imprecise:
        out.append(flag("imprecise", imprecise))
    cut = warmup_reason(metrics)
    if cut:
        out.append(flag("warmup-cut", cut))
    if throttled:
        out.append(flag("throttled", throttled))
    if over_temperature:
        out.append(flag("over-temperature", over_temperature))
    low, high = device_reasons(parts.device)
    if low:
        out.append(flag("not-on-device", low))
    if high:
        out.append(flag("amplified", high))
    unstable = tail_reason(parts.tail)
    if unstable:
        out.append(flag("tail-unstable", unstable))
    out += [flag(name, reason) for name, reason in audit_reasons(point, facts).items()]
    shift = shift_reason(metrics.ci_method)
    if shift:
        out.append(flag("level-shift", shift))
    loop = parts.open_loop
    if loop is not None and loop.get("valid") is not True:
        why = loop.get("closed_because")
        out.append(flag("closed-by-generator", why if isinstance(why, str) and why else "the loop did not stay open"))
    return out


def warmup_of(method: object, key: str = "iops") -> tuple[int, int] | None:
    """(samples the warm-up cut took from the interval of figure ``key``, samples of the point) as a line's
    ``ci_method`` records them; None without a batch-means interval of ``key`` or with counts that are not
    counts (a line is untrusted)."""
    if not isinstance(method, Mapping) or method.get("method") != "batch-means":
        return None
    series = method.get("series")
    one = series.get(key) if isinstance(series, Mapping) else None
    cut = one.get("warmup") if isinstance(one, Mapping) else None
    total = method.get("samples")
    if not (isinstance(cut, int) and isinstance(total, int) and not isinstance(cut, bool)
            and not isinstance(total, bool) and 0 <= cut <= total and total > 0):
        return None
    return cut, total


def _warmup(metrics: StorageMetrics) -> tuple[int, int] | None:
    """:func:`warmup_of` the point's interval of mean IOPS."""
    return warmup_of(metrics.ci_method)


def warmup_reason(metrics: StorageMetrics) -> str | None:
    """Why a point is flagged ``warmup-cut``: its warm-up took at least :data:`WARMUP_SHARE` of its measured
    seconds (None: it did not, or the line records no interval of IOPS)."""
    got = _warmup(metrics)
    if got is None or got[0] < WARMUP_SHARE * got[1]:
        return None
    cut, total = got
    return (f"MSER-5 cut {cut} of {total} measured seconds ({cut / total:.0%}) as warm-up: the IOPS with ± is the "
            f"mean of the last {total - cut}, fio's whole-run figure counts all {total}")


SHIFT_FIGURES = {"iops": "IOPS", "bw_bytes": "bandwidth (B/s)", "lat_mean_ns": "mean latency (ns)"}


def shifts_found(ci_method: Mapping[str, object] | None) -> Mapping[str, object] | None:
    """The level-shift test's findings a line's ``ci_method`` records (figure → shift), None when untested."""
    test = ci_method.get("level_shift") if ci_method is not None else None
    found = test.get("found") if isinstance(test, Mapping) else None
    return found if isinstance(found, Mapping) else None


def shift_reason(ci_method: Mapping[str, object] | None) -> str | None:
    """The reason of a ``level-shift`` flag: each figure that stepped, with both levels; None without one."""
    found = shifts_found(ci_method)
    parts = []
    for key, name in SHIFT_FIGURES.items():
        s = found.get(key) if found is not None else None
        before, after = (number(s.get("before")), number(s.get("after"))) if isinstance(s, Mapping) else (None, None)
        at = s.get("at") if isinstance(s, Mapping) else None
        if before is None or after is None or not isinstance(at, int):
            continue
        change = f" ({after / before - 1:+.1%})" if before else ""
        parts.append(f"{name} {before:,.0f} before sample {at + 1}, {after:,.0f} from it on{change}")
    return "; ".join(parts) or None


def _mb(v: float) -> str:
    return f"{v / 1e6:,.1f} MB"


MAX_RATIO = 1e6  # a recorded ratio beyond this is no measurement (a device moved a million times fio's bytes)


def recorded_ratio(device: Mapping[str, object] | None, key: str) -> float | None:
    """A ``device`` part's ``read_ratio``/``write_ratio`` as recorded, None when absent or out of range: the
    report, the TUI and the checks read a results line from anywhere."""
    if not isinstance(device, Mapping) or "unavailable" in device:
        return None
    v = number(device.get(key))
    return v if v is not None and 0 <= v < MAX_RATIO else None


def recorded_ns(device: Mapping[str, object] | None, key: str = "lat_mean_ns") -> float | None:
    """A ``device`` part's nanoseconds (the device-side mean), None when absent or not a figure (0 … 2^64)."""
    if not isinstance(device, Mapping) or "unavailable" in device:
        return None
    v = device.get(key)
    return number(v) if is_num(v) else None


def judged_directions(device: Mapping[str, object] | None) -> list[tuple[str, float, float]]:
    """(direction, device bytes / fio bytes, fio bytes) of each direction of the ``device`` part in which fio
    moved at least MIN_DEVICE_BYTES and the ratio is known."""
    if not isinstance(device, Mapping) or "unavailable" in device:
        return []
    out = []
    for d in DIRECTION_WORDS:
        fio_b, ratio = number(device.get(f"fio_{d}_bytes")), recorded_ratio(device, f"{d}_ratio")
        if fio_b is not None and ratio is not None and fio_b >= MIN_DEVICE_BYTES:
            out.append((d, ratio, fio_b))
    return out


def device_reasons(device: Mapping[str, object] | None) -> tuple[str | None, str | None]:
    """The reasons of ``not-on-device`` and ``amplified`` from the ``device`` part (None: not raised)."""
    name = device.get("name") if isinstance(device, Mapping) else None
    dev = f"{name}" if isinstance(name, str) and name else "the device"
    low, high = [], []
    for d, ratio, fio_b in judged_directions(device):
        verb, noun = DIRECTION_WORDS[d]
        text = f"{noun}: {dev} {verb} {ratio:.2f}× the bytes fio {verb} ({_mb(ratio * fio_b)} of {_mb(fio_b)})"
        if ratio < DEVICE_LOW:
            low.append(text)
        elif ratio > DEVICE_HIGH:
            high.append(text)
    return "; ".join(low) or None, "; ".join(high) or None


def tail_reason(tail: Mapping[str, object] | None) -> str | None:
    """The reason of ``tail-unstable`` from the ``tail`` part (None: not raised)."""
    if not isinstance(tail, Mapping):
        return None
    ratio, factor = number(tail.get("ratio")), number(tail.get("factor")) or TAIL_UNSTABLE_FACTOR
    worst, median, at = number(tail.get("worst_p99_ns")), number(tail.get("median_p99_ns")), number(tail.get("worst_t"))
    if ratio is None or worst is None or median is None or ratio <= factor:
        return None
    when = f"the second ending at {at:g} s" if at is not None else "its worst second"
    return (f"p99 of {when} was {worst / 1e3:,.0f} µs, {ratio:.1f}× the median second's {median / 1e3:,.0f} µs "
            f"(above {factor:g}×)")


def _audit_item(a: Audit, key: str) -> Item | None:
    return next((i for i in a.items if i.key == key), None)


def setting_text(i: Item) -> str:
    """One audited setting as a flag's reason states it: what, its value, what a benchmark wants, what was found."""
    value = _line(i.value, 80) or "not available here"
    text = f"{i.label}: {value} (a benchmark wants {_line(i.want, 80) or 'not recorded'})"
    note = _line(i.note, 160)
    return f"{text}, {note}" if note else text


def _writes_buffered(point: Mapping[str, object]) -> str | None:
    """Why the point's writes do not go through the page cache (None: some do), for ``write-throttled``."""
    if point.get("rw") not in BUFFERED_WRITES or point.get("rwmixread") == 100:
        return "the point does not write"
    if point.get("direct") not in (False, 0):
        return "direct=1: write-back throttling does not delay O_DIRECT writes"
    return None


# the same words for every point above the load (a count per point made six reasons of one)
IN_FLIGHT_WHY = (f"more than {LOW_LOAD} I/Os in flight: a CPU or drive saving power idles between I/Os only at "
                 f"{LOW_LOAD} or fewer in flight")


def _audit_scope(name: str, point: Mapping[str, object]) -> str | None:
    """Why the audit's flag ``name`` does not concern this point whatever the host's settings (None: it does)."""
    if name == "power-saving" and _in_flight(point) > LOW_LOAD:
        return IN_FLIGHT_WHY
    if name == "write-throttled":
        return _writes_buffered(point)
    return None


def audit_reasons(point: Mapping[str, object], facts: TargetFacts) -> dict[str, str]:
    """The flags the run's audit (``facts.audit``) raises on one storage point: flag name → reason, in FLAGS
    order ({} without an audit)."""
    a = facts.audit
    if a is None:
        return {}
    out = {}
    for name, warnings in AUDIT_FLAGS.items():
        found = [i for w in warnings if (i := a.warned(w)) is not None]
        if _audit_scope(name, point) is not None:
            continue
        reason = _numa_reason(point, a) if name == "numa-remote" else "; ".join(setting_text(i) for i in found)
        if reason and name == "power-saving":
            reason += f"; {_in_flight(point)} I/O{'s' if _in_flight(point) != 1 else ''} in flight"
        if reason:
            out[name] = reason
    return out


def _numa_reason(point: Mapping[str, object], a: Audit) -> str | None:
    """``numa-remote`` of one point: a point pinned to CPUs (its ``cpus``) is judged by them against the device's
    node as the audit read it ("node 1 (CPUs 2-3)"); any other point by the audit's warning on the run's CPUs."""
    item = _audit_item(a, "numa_node")
    cpus = point.get("cpus")
    pinned = cpu_list(cpus) if isinstance(cpus, str) else ()
    node = _NODE_CPUS.fullmatch(item.value or "") if item is not None and item.status in ("ok", "warn") else None
    if pinned and node is not None:
        if set(pinned) & set(cpu_list(node.group(2))):
            return None
        return (f"the point's CPUs {cpu_list_text(pinned)} are all off the device's NUMA node {node.group(1)} "
                f"(CPUs {node.group(2)})")
    warned = a.warned("numa-remote")
    return setting_text(warned) if warned is not None else None


def _audit_not_applicable(name: str, point: Mapping[str, object], facts: TargetFacts) -> str | None:
    """Why the audit's check ``name`` cannot judge this point: no audit, a point it does not concern, or none of
    the settings it reads was judged (each unavailable here, or only reported)."""
    if facts.audit is None:
        return facts.no_audit
    scope = _audit_scope(name, point)
    if scope is not None:
        return scope
    items = [i for key in AUDIT_ITEMS[name] if (i := _audit_item(facts.audit, key)) is not None]
    if any(i.status in ("ok", "warn") for i in items):
        return None
    whys = [f"{i.label}: {_line(i.note, 300) or _line(i.value, 80) or 'not available here'}" for i in items]
    return "; ".join(whys) or "the audit did not read " + " or ".join(ITEMS[k] for k in AUDIT_ITEMS[name])


def _mean(metrics: StorageMetrics) -> float | None:
    return metrics.lat_ns.get("mean") if metrics.lat_ns is not None else None


def _searched(point: Mapping[str, object], parts: Parts) -> bool:
    return "operating_point" in parts.keys or point.get("latency_bound") is not None


OPEN_LOOP = ("an open-loop point: the I/Os in flight follow the offered load, not iodepth (a cap there; "
             "closed-by-generator checks it)")


def _not_applicable(name: str, point: Mapping[str, object], metrics: StorageMetrics, parts: Parts,
                    telemetry: Mapping[str, object] | None, facts: TargetFacts) -> str | None:
    """Why check ``name`` cannot judge this point, or None when it can."""
    if name == "cpu-bound" and metrics.usr_cpu is None and metrics.sys_cpu is None:
        return "fio reported no CPU use"
    if name == "depth-not-reached":
        if _searched(point, parts):
            return SEARCHED
        if point.get("rate") is not None:
            return OPEN_LOOP
        if not (metrics.iops or 0) > 0 or not (_mean(metrics) or 0) > 0:
            return "no IOPS or mean latency to apply Little's law to"
    if name == "above-link" and facts.link is None:
        return facts.no_link
    if name == "not-steady" and not point.get("steady") and parts.steady is None:
        return NO_STEADY
    if name == "imprecise" and not point.get("precision") and parts.precision is None:
        return NO_PRECISION
    if name == "warmup-cut" and _warmup(metrics) is None:
        return NO_WARMUP
    if name in ("not-on-device", "amplified"):
        return _device_not_applicable(parts.device)
    if name == "tail-unstable":
        return _tail_not_applicable(parts.tail)
    if name == "level-shift" and shifts_found(metrics.ci_method) is None:
        method = metrics.ci_method
        if method is None or method.get("method") == "batch-means":  # samples were there: the test was not
            return ADDED_LATER["level-shift"]
        return "fewer than 10 per-second samples (or none kept): not tested for a level shift"
    if name in AUDIT_FLAGS:
        return _audit_not_applicable(name, point, facts)
    if name == "closed-by-generator" and parts.open_loop is None:
        return ("not an open-loop point (no rate)" if point.get("rate") is None
                else "the point's open-loop record is missing")
    if name in ("throttled", "over-temperature"):
        if not facts.telemetry:
            return facts.no_telemetry
        readings = number(telemetry.get("readings")) if telemetry is not None else None
        if readings is not None and readings < 2:
            return "fewer than two drive health readings while the point ran"
    return None


def _part_missing(part: Mapping[str, object] | None, missing: str) -> str | None:
    """Why a runner's part (``device``, ``tail``) cannot be judged: ``missing`` when the line has none, its own
    ``unavailable`` sentence (or ``missing``) when the runner said why; None when it has figures."""
    if not isinstance(part, Mapping):
        return missing
    why = part.get("unavailable")
    return None if why is None else _line(why) or missing


def _device_not_applicable(device: Mapping[str, object] | None) -> str | None:
    why = _part_missing(device, "the device's counters were not read")
    if why is not None or device is None:
        return why
    if not judged_directions(device):
        return f"fio moved less than {MIN_DEVICE_BYTES >> 20} MiB in each direction, or no byte ratio is known"
    return None


def _tail_not_applicable(tail: Mapping[str, object] | None) -> str | None:
    missing = "no per-second samples of the point's p99"
    why = _part_missing(tail, missing)
    if why is not None or tail is None:
        return why
    if number(tail.get("ratio")) is None:
        return missing
    return None


def point_checks(point: Mapping[str, object], metrics: StorageMetrics, parts: Parts,
                 telemetry: Mapping[str, object] | None, facts: TargetFacts,
                 flags: Iterable[Mapping[str, str]]) -> dict[str, dict[str, str]]:
    """The results line's ``checks``: every check's result for this point — ``{"result": "flagged"}``,
    ``{"result": "passed"}`` or ``{"result": "not-applicable", "why": one line}``."""
    raised = set(names(flags))
    out: dict[str, dict[str, str]] = {}
    for name in FLAGS:
        why = None if name in raised else _not_applicable(name, point, metrics, parts, telemetry, facts)
        out[name] = ({"result": "flagged"} if name in raised else {"result": "passed"} if why is None
                     else {"result": "not-applicable", "why": why})
    return out


def _line(v: object, limit: int = 200) -> str | None:
    """Recorded text as one line of at most ``limit`` characters, cut at a word ("…"), never mid-word."""
    return cut_at_word(" ".join(v.split()), limit) or None if isinstance(v, str) else None


def recorded_facts(meta: RunMeta | None) -> TargetFacts:
    """The facts the checks had, as run.json records them (None: none recorded)."""
    info = (meta.target_info if meta is not None else None) or {}
    raw = info.get("link")
    link = raw if isinstance(raw, Mapping) and (number(raw.get("bytes_per_s")) or 0) > 0 else None
    tele = meta.telemetry if meta is not None else None
    on = tele is not None and tele.get("available") is True
    why = _line(tele.get("reason")) if tele is not None else None
    env = meta.environment.entry if meta is not None and meta.environment is not None else None
    recorded = from_json(meta.audit) if meta is not None and meta.audit is not None else None
    elsewhere = tuned_by(meta.audit) if meta is not None else None  # another run's values: no judge of a point
    return TargetFacts(link=link, no_link=no_link_why(info, env),  # type: ignore[arg-type]
                       telemetry=on, no_telemetry=f"no drive telemetry: {why}" if why else NO_TELEMETRY,
                       audit=None if elsewhere else recorded,
                       no_audit=elsewhere or (FLEET_NOT_AUDITED if meta is not None and meta.is_fleet else NOT_AUDITED))


def checks_of(line: ResultLine, facts: TargetFacts) -> dict[str, dict[str, str]] | None:
    """A results line's check results (its ``checks``, each entry checked; what is missing or malformed derived
    from the line and ``facts`` = :func:`recorded_facts` of run.json); None for a line written before the
    checks existed (no ``flags``)."""
    if line.flags is None:
        return None
    derived = point_checks(line.point, line.storage, _parts_of(line), line.telemetry, facts, flags_of(line))
    stored = line.checks or {}
    out = {}
    for name in FLAGS:
        entry = stored.get(name)
        result = entry.get("result") if isinstance(entry, Mapping) else None
        # a flag in the line's flags is flagged whatever its checks say; a recorded result is trusted otherwise
        if name in ADDED_LATER and not isinstance(entry, Mapping) and (
                derived[name]["result"] == "passed" or (name in PARTS_LATER and derived[name]["result"] != "flagged")):
            out[name] = {"result": "not-applicable", "why": ADDED_LATER[name]}
        elif isinstance(entry, Mapping) and result in RESULTS and "flagged" not in (result, derived[name]["result"]):
            why = _line(entry.get("why"), 600)
            out[name] = ({"result": "not-applicable", "why": why or "not recorded"}
                         if result == "not-applicable" else {"result": "passed"})
        else:
            out[name] = derived[name]
    return out


def _parts_of(line: ResultLine) -> Parts:
    """The line's parts, ``operating_point`` among their keys when the line has that key (null included)."""
    if "operating_point" in line.keys and "operating_point" not in line.parts.keys:
        return replace(line.parts, keys=line.parts.keys + ("operating_point",))
    return line.parts


def flags_of(line: ResultLine) -> list[dict[str, str]]:
    """The well-formed flags of a results line (a hostile or old line: what can be used of it, in FLAGS order),
    with ``warmup-cut`` where the line's own interval record shows it and a line written before that check
    does not carry it."""
    seen: dict[str, str] = {}
    for f in line.flags or []:
        if isinstance(f, Mapping) and f.get("flag") in FLAGS and isinstance(f.get("reason"), str):
            seen.setdefault(str(f["flag"]), cut_at_word(" ".join(str(f["reason"]).split()), 300))
    if line.flags is not None and (cut := warmup_reason(line.storage)):
        seen.setdefault("warmup-cut", cut)
    return [{"flag": name, "reason": seen[name]} for name in FLAGS if name in seen]


def names(flags: Iterable[Mapping[str, str]]) -> list[str]:
    return [f["flag"] for f in flags]
