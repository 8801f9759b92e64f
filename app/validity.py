"""Validity flags: what the tool checks of every storage point's figures, and says when they are in doubt.

Each flag is stored in the point's results line as ``{"flag": name, "reason": one line}``; the report's
storage table, the TUI's results table and ``compare`` show them (docs/results-schema.md, "flags"):

- ``cpu-bound``: fio's usr+sys CPU per job at or above :data:`CPU_BOUND_PERCENT` % of one CPU — the load
  generator, not the device, set the pace;
- ``depth-not-reached``: Little's law, IOPS × mean latency ÷ the I/Os the workload should keep in flight
  (iodepth × numjobs; 1 per job for synchronous engines), below :data:`DEPTH_RATIO`;
- ``above-link``: throughput above what the device's link can carry (app.link) — a cache answered;
- ``buffered``: direct=0, or a target file on a filesystem that does not honour O_DIRECT as asked: tmpfs
  or ramfs (memory), ZFS before 2.3 (caches in its ARC anyway), overlayfs (a container's own layer);
- ``not-steady``: a point with a steady-state criterion that fio never saw hold before the cap;
- ``throttled``: a drive thermal-management counter rose while the point ran (app.telemetry).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Mapping

from app.link import Link, sysfs_root
from app.units import format_bandwidth

FLAGS = ("cpu-bound", "depth-not-reached", "above-link", "buffered", "not-steady", "throttled")
LEGEND = {
    "cpu-bound": "fio used ≥ 90 % of a CPU per job: the load generator, not the device, set the pace",
    "depth-not-reached": "IOPS × mean latency (Little's law) below 90 % of the I/Os the workload asks to keep "
                         "in flight: the queue was not kept full",
    "above-link": "throughput above what the device's link can carry: a cache answered, not the medium",
    "buffered": "the page cache or a memory filesystem served the I/O (direct=0, tmpfs, ZFS < 2.3, overlayfs)",
    "not-steady": "fio's steady-state criterion never held before the runtime cap",
    "throttled": "a drive thermal-management counter rose while the point ran",
}
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


def target_facts(target_info: Mapping[str, Any] | None, link: Link | None) -> TargetFacts:
    info = target_info if isinstance(target_info, Mapping) else {}
    fs = info.get("filesystem") if info.get("type") == "file" or info.get("kind") == "file" else None
    fs = fs if isinstance(fs, str) else None
    zfs = None
    if fs == "zfs":
        try:
            zfs = (sysfs_root() / "module" / "zfs" / "version").read_text(errors="replace")[:64].strip() or None
        except OSError:
            zfs = None
    return TargetFacts(link=link, filesystem=fs, zfs_version=zfs)


def flag(name: str, reason: str) -> dict[str, str]:
    assert name in FLAGS
    return {"flag": name, "reason": " ".join(reason.split())}


def _num(v: Any) -> float | None:
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else None


def _in_flight(point: Mapping[str, Any]) -> int:
    depth, jobs = point.get("iodepth"), point.get("numjobs")
    depth = depth if isinstance(depth, int) and point.get("ioengine") not in SYNC_ENGINES else 1
    jobs = jobs if isinstance(jobs, int) else 1
    return max(1, depth) * max(1, jobs)


def _zfs_before_direct(version: str) -> bool:
    m = re.match(r"(\d+)\.(\d+)", version)
    return m is not None and (int(m.group(1)), int(m.group(2))) < ZFS_DIRECT_FROM


def buffered_reason(point: Mapping[str, Any], facts: TargetFacts) -> str | None:
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


def point_flags(point: Mapping[str, Any], metrics: Mapping[str, Any], extra: Mapping[str, Any],
                facts: TargetFacts = TargetFacts(), throttled: str | None = None) -> list[dict[str, str]]:
    """The flags of one storage point from its JSON table, its metrics and the runner's extras (``steady``,
    ``operating_point``)."""
    out: list[dict[str, str]] = []
    cpu = (_num(metrics.get("usr_cpu")) or 0.0) + (_num(metrics.get("sys_cpu")) or 0.0)
    if cpu >= CPU_BOUND_PERCENT:
        out.append(flag("cpu-bound", f"fio used {cpu:.0f} % of a CPU per job (usr+sys), at or above "
                                     f"{CPU_BOUND_PERCENT:.0f} %"))
    iops = _num(metrics.get("iops")) or 0.0
    lat = metrics.get("lat_ns")
    mean = (_num(lat.get("mean")) if isinstance(lat, Mapping) else None) or 0.0
    searched = "operating_point" in extra or point.get("latency_bound") is not None
    if iops > 0 and mean > 0 and not searched:
        n = _in_flight(point)
        held = iops * mean * 1e-9
        if held / n < DEPTH_RATIO:
            out.append(flag("depth-not-reached", f"IOPS × mean latency = {held:.2f} I/Os in flight of {n} asked "
                                                 f"({held / n:.0%}, below {DEPTH_RATIO:.0%})"))
    bw = _num(metrics.get("bw_bytes")) or 0.0
    if facts.link is not None and bw > facts.link["bytes_per_s"]:
        out.append(flag("above-link", f"{format_bandwidth(bw)} is above the {facts.link['text']} link's "
                                      f"{format_bandwidth(facts.link['bytes_per_s'])}"))
    reason = buffered_reason(point, facts)
    if reason:
        out.append(flag("buffered", reason))
    steady = extra.get("steady")
    if isinstance(steady, Mapping) and steady.get("attained") is False:
        out.append(flag("not-steady", f"{steady.get('criterion') or 'the criterion'} never held before the cap"))
    if throttled:
        out.append(flag("throttled", throttled))
    return out


def flags_of(record: Mapping[str, Any]) -> list[dict[str, str]]:
    """The well-formed flags of a results line (a hostile or old line: what can be used of it, in FLAGS order)."""
    raw = record.get("flags")
    seen: dict[str, str] = {}
    for f in raw if isinstance(raw, list) else []:
        if isinstance(f, Mapping) and f.get("flag") in FLAGS and isinstance(f.get("reason"), str):
            seen.setdefault(str(f["flag"]), " ".join(str(f["reason"]).split())[:300])
    return [{"flag": name, "reason": seen[name]} for name in FLAGS if name in seen]


def names(flags: Iterable[Mapping[str, str]]) -> list[str]:
    return [f["flag"] for f in flags]
