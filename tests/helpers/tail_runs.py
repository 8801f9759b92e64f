"""Results directories whose storage lines carry fio's json+ histogram (``metrics.lat_hist``), the tail
percentiles and a ``device`` part, shaped as the contract of the latency-distribution records says; the
histograms are made without randomness from a log-normal latency on fio's bucket grid (64 buckets per power of
two), so every test sees the same lines."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any, Sequence

from app.model.records import Parts, StorageMetrics
from app.model.tails import TAIL_PERCENTILES, hist_record, percentile
from app.stats.validity import TargetFacts, point_checks, point_flags
from bench.claims.synth import fio_buckets
from tests.helpers.compare_util import POINT


def lognormal_hist(ios: int, median_ns: float, sigma: float = 0.6, tail_ns: float | None = None,
                   tail_frac: float = 0.0) -> list[tuple[int, int]]:
    """``ios`` I/Os spread over fio's buckets by a log-normal of ``median_ns`` and ``sigma``; with ``tail_ns`` a
    fraction ``tail_frac`` of them sits around that slow latency instead (a second mode)."""
    buckets = fio_buckets()

    def mass(med: float, n: float) -> list[float]:
        cdf = [0.5 * (1 + math.erf(math.log(b / med) / (sigma * math.sqrt(2)))) for b in buckets[1:]]
        return [n * (b - a) for a, b in zip([0.0, *cdf], [*cdf, 1.0])]

    w = mass(median_ns, ios * (1 - tail_frac))
    if tail_ns is not None:
        w = [a + b for a, b in zip(w, mass(tail_ns, ios * tail_frac))]
    counts = [math.floor(x) for x in w]
    counts[counts.index(max(counts))] += ios - sum(counts)  # the rounding's remainder on the mode: ``ios`` I/Os
    return [(v, c) for v, c in zip(buckets, counts) if c > 0]


def storage_line(index: int, ios: int, median_ns: float, hist: bool = True, device: dict[str, Any] | None = None,
                 host: str | None = None, **point: Any) -> dict[str, Any]:
    """A storage line of ``ios`` I/Os (a 4 KiB randread at QD16 unless ``point`` says otherwise)."""
    h = lognormal_hist(ios, median_ns, tail_ns=median_ns * 8, tail_frac=0.002)
    n = sum(c for _, c in h)
    mean = sum(v * c for v, c in h) / n
    lat: dict[str, Any] = {"min": h[0][0], "max": h[-1][0], "mean": mean, "p50": percentile(h, 50.0),
                           "p90": percentile(h, 90.0)}
    lat.update({k: percentile(h, pct) for k, pct, _l in TAIL_PERCENTILES})
    pt = {**POINT, "runtime": 10, **point}
    iops = ios / pt["runtime"]
    m: dict[str, Any] = {"iops": iops, "read_iops": iops, "write_iops": 0.0, "bw_bytes": iops * pt["bs"],
                         "read_bw_bytes": iops * pt["bs"], "write_bw_bytes": 0.0, "lat_ns": lat, "total_ios": ios,
                         "io_bytes": ios * pt["bs"], "jobs": pt["numjobs"]}
    if hist:
        m["lat_hist"] = hist_record(h)
    line: dict[str, Any] = {"kind": "storage", "index": index, "point": pt, "metrics": m, "fio_version": "fio-3.33",
                            "target": "/dev/loop9"}
    if device is not None:
        line["device"] = device
    if host is not None:
        line["host"] = host
    return checked(line)


def checked(line: dict[str, Any]) -> dict[str, Any]:
    """The line with the flags and checks the session would give it."""
    metrics, parts = StorageMetrics.of(line["metrics"]), Parts(device=line.get("device"))
    flags = point_flags(line["point"], metrics, parts)
    line.update(flags=flags, checks=point_checks(line["point"], metrics, parts, None, TargetFacts(), flags))
    return line


def device_part(fio_bytes: float, ratio: float, lat_mean_ns: float | None, **more: Any) -> dict[str, Any]:
    """A read point's ``device`` part: the device moved ``ratio`` × fio's bytes."""
    dev = round(fio_bytes * ratio)
    return {"name": "loop9", "source": "target", "read_bytes": dev, "write_bytes": 0, "read_ios": dev // 4096,
            "write_ios": 0, "ios": dev // 4096, "read_ms": 1000, "write_ms": 0, "busy_ms": 900, "in_queue_ms": 1000,
            "window_s": 10.0, "fio_read_bytes": round(fio_bytes), "fio_write_bytes": 0, "read_ratio": ratio,
            "write_ratio": None, "lat_mean_ns": lat_mean_ns, **more}


def write_run(path: Path, lines: Sequence[dict[str, Any]], hosts: Sequence[str] = ()) -> Path:
    """A results directory of these lines (a fleet run's when ``hosts`` are given)."""
    path.mkdir(parents=True, exist_ok=True)
    (path / "raw").mkdir(exist_ok=True)
    plan = list({ln["index"]: ln["point"] for ln in lines}.values())
    meta: dict[str, Any] = {"tool": "profiler-tui", "preset": {"name": "tails", "kind": "storage"},
                            "kind": "storage", "plan": plan, "points_total": len(plan), "points_done": len(plan),
                            "target": None if hosts else "/dev/loop9", "status": "complete"}
    if hosts:
        meta["fleet"] = {"hosts": [{"host": h, "scheme": "tcp", "address": "127.0.0.1", "port": 18801 + i,
                                    "user": None, "target": f"/dev/loop{i}"} for i, h in enumerate(hosts)],
                         "agent_socket": "/run/profiler-tui/agent.sock"}
    (path / "run.json").write_text(json.dumps(meta, indent=1))
    (path / "results.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    return path


def matrix(mixes: Sequence[str], bss: Sequence[int], qds: Sequence[int], ios: int = 200_000) -> list[dict[str, Any]]:
    """One line per (rw, bs, qd), the median latency growing with the load and the block size."""
    out: list[dict[str, Any]] = []
    for rw in mixes:
        for bs in bss:
            for qd in qds:
                out.append(storage_line(len(out), ios, 20_000 * qd ** 0.7 * (bs / 4096) ** 0.5, rw=rw, bs=bs,
                                        iodepth=qd, rwmixread=50 if rw in ("rw", "randrw") else None))
    return out
