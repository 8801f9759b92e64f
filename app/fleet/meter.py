"""Live figures of fleet hosts while a point runs.

fio's client mode returns each host's JSON only when the jobs end, so the live charts of a fleet run read the
kernel's block-layer counters of each host's target device (``/sys/dev/block/MAJ:MIN/stat``: I/Os, sectors and
milliseconds spent, per direction) once a second: IOPS, bandwidth and mean latency (time spent / I/Os) per
host, and their fleet total.  They are live estimates; the results are fio's own figures.  An agent on this
machine (unix://, loopback tcp://) is read here; an ssh host through its SSH connection (``cat`` in a loop,
read-only); another tcp host has no live figures.  For a file target the counters are those of the file
system's device (other I/O on it counts).
"""

from __future__ import annotations

import os
import shlex
import subprocess
from dataclasses import dataclass
from typing import IO, Mapping, TypedDict

from app.fleet.links import Link, end_process, start_ssh

SECTOR = 512
MAX_LINE = 4096
MAX_CHUNKS = 64  # 16 KiB reads per call at most: the stream prints a line a second


@dataclass
class Counters:
    ios: int
    sectors: int
    ticks_ms: int


def parse_stat(text: str) -> Counters | None:
    """/sys/block/DEV/stat: reads, merges, sectors, ticks, writes, merges, sectors, ticks, … (None if not that)."""
    fields = text.split()
    if len(fields) < 8 or not all(f.isdigit() and f.isascii() and len(f) < 25 for f in fields[:8]):
        return None
    v = [int(f) for f in fields[:8]]
    return Counters(v[0] + v[4], v[2] + v[6], v[3] + v[7])


class Rates(TypedDict):
    """A host's figures over one interval (no p99: the counters have no histogram)."""

    iops: float
    bw_bytes: float
    lat_mean_ns: float | None
    lat_p99_ns: None


def rates(prev: Counters, cur: Counters, dt: float) -> Rates | None:
    if dt <= 0 or cur.ios < prev.ios or cur.sectors < prev.sectors or cur.ticks_ms < prev.ticks_ms:
        return None
    ios = cur.ios - prev.ios
    return {"iops": ios / dt, "bw_bytes": (cur.sectors - prev.sectors) * SECTOR / dt,
            "lat_mean_ns": (cur.ticks_ms - prev.ticks_ms) * 1e6 / ios if ios else None, "lat_p99_ns": None}


class _Source:
    """One host's counters: read locally, or streamed over its SSH connection."""

    def __init__(self, path: str | None, argv: list[str] | None) -> None:
        self.path = path
        self.proc: subprocess.Popen[bytes] | None = None
        self.pipe: IO[bytes] | None = None
        self.pending = b""
        self.latest: Counters | None = None
        if argv is not None:
            try:
                self.proc = start_ssh(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                      stderr=subprocess.DEVNULL)
                self.pipe = self.proc.stdout
                assert self.pipe is not None
                os.set_blocking(self.pipe.fileno(), False)
            except OSError:
                self.proc = None

    def read(self) -> Counters | None:
        if self.path is not None:
            try:
                with open(self.path, "rb") as f:
                    return parse_stat(f.read(MAX_LINE).decode("ascii", "replace"))
            except OSError:
                return None
        if self.pipe is None:
            return None
        try:
            for _ in range(MAX_CHUNKS):  # a host streaming without pause cannot keep this call reading for ever
                chunk = self.pipe.read(1 << 14)
                if not chunk:
                    break
                self.pending = (self.pending + chunk)[-MAX_LINE * 4:]
        except (BlockingIOError, OSError, ValueError):
            pass
        lines = self.pending.split(b"\n")
        self.pending = lines.pop()
        for line in reversed(lines):
            found = parse_stat(line.decode("ascii", "replace"))
            if found is not None:
                self.latest = found
                break
        return self.latest

    def close(self) -> None:
        if self.proc is not None:
            end_process(self.proc, 3.0)


class FleetMeter:
    """Per-host samples (``host`` set) and the fleet total (``host`` None, ``hosts`` the count measured)."""

    def __init__(self, links: Mapping[str, Link], devices: Mapping[str, tuple[int, int] | None],
                 names: list[str]) -> None:
        self.sources: dict[str, _Source] = {}
        self.prev: dict[str, tuple[float, Counters]] = {}
        for name in names:
            device = devices.get(name)
            link = links.get(name)
            if device is None or link is None:
                continue
            stat_path = f"/sys/dev/block/{device[0]}:{device[1]}/stat"
            if link.host.is_local:
                self.sources[name] = _Source(stat_path, None)
            elif link.host.scheme == "ssh":
                loop = f"while cat {shlex.quote(stat_path)}; do sleep 1; done"
                self.sources[name] = _Source(None, link.remote_argv(["sh", "-c", loop]))

    def read(self, t: float) -> list[dict[str, object]]:
        out: list[dict[str, object]] = []
        measured: list[tuple[float, Rates]] = []  # each host's interval and figures
        for name, source in self.sources.items():
            cur = source.read()
            if cur is None:
                continue
            before = self.prev.get(name)
            self.prev[name] = (t, cur)
            if before is None:
                continue
            r = rates(before[1], cur, t - before[0])
            if r is not None:
                measured.append((round(t - before[0], 3), r))
                out.append({"t": round(t, 3), "interval_s": round(t - before[0], 3), "host": name, **r})
        if out:
            lats = [(v, r["iops"]) for _, r in measured if (v := r["lat_mean_ns"]) is not None]
            weight = sum(w for _, w in lats)
            out.append({"t": round(t, 3), "interval_s": max(dt for dt, _ in measured), "host": None,
                        "hosts": len(out),
                        "iops": sum(r["iops"] for _, r in measured),
                        "bw_bytes": sum(r["bw_bytes"] for _, r in measured),
                        "lat_mean_ns": sum(v * w for v, w in lats) / weight if weight else None, "lat_p99_ns": None})
        return out

    def close(self) -> None:
        for source in self.sources.values():
            source.close()
