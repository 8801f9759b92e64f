"""Hand-made storage results directories with per-second samples and replicates, for the report's intervals.

Each point's samples are a deterministic wobble around a chosen mean (no random source): ``seconds`` whole
seconds with the IOPS of second ``i`` at ``mean · (1 + wobble · sin(2.3 i))`` (a fast, nearly uncorrelated
pattern: batch means find an interval), latency by Little's law at the point's depth.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any, Sequence

from app.model.points import StoragePoint
from app.model.records import read_line
from app.model.runmeta import new
from app.store.results import ResultsDir


def storage_point(rw: str = "randread", bs: int = 4096, iodepth: int = 4, replicate: int | None = None) -> dict:
    return StoragePoint(rw=rw, bs=bs, rwmixread=None, iodepth=iodepth, numjobs=1, ioengine="libaio", direct=True,
                        runtime=30, ramp_time=0, size=1 << 25, time_based=True, replicate=replicate).to_dict()


def samples(mean: float, bs: int, depth: int, seconds: int = 30, wobble: float = 0.01) -> list[dict[str, Any]]:
    out = []
    for i in range(seconds):
        iops = mean * (1 + wobble * math.sin(2.3 * i))
        out.append({"t": float(i + 1), "interval_s": 1.0, "iops": iops, "read_iops": iops, "write_iops": 0.0,
                    "bw_bytes": iops * bs, "lat_mean_ns": depth / iops * 1e9, "lat_p99_ns": 2 * depth / iops * 1e9})
    return out


def metrics(iops: float, bs: int, depth: int) -> dict[str, Any]:
    lat = depth / iops * 1e9
    lat_ns = {"min": lat / 4, "max": lat * 8, "mean": lat, "stddev": lat / 2, "p50": lat, "p90": 1.5 * lat,
              "p99": 2 * lat, "p99_9": 3 * lat, "p99_99": 4 * lat}
    return {"iops": iops, "read_iops": iops, "write_iops": 0.0, "bw_bytes": iops * bs, "read_bw_bytes": iops * bs,
            "write_bw_bytes": 0.0, "lat_ns": lat_ns, "usr_cpu": 5.0, "sys_cpu": 20.0}


def write_storage_run(path: Path, points: Sequence[tuple[dict[str, Any], float, float | None]],
                      ci95: bool = False) -> Path:
    """A storage run: one line per (point, IOPS, wobble); ``wobble`` None keeps no samples; ``ci95`` puts the
    interval computed from the samples into the line (as a run of this version does) instead of leaving it to
    the report."""
    from app.stats.uncertainty import intervals_of, storage_series

    rd = ResultsDir(path)
    plan = [p for p, _, _ in points]
    rd.create(new({"schema_version": 1, "tool": "profiler-tui", "kind": "storage", "plan": plan,
                   "status": "complete", "points_total": len(plan)}, path / "run.json"))
    for i, (pt, iops, wobble) in enumerate(points):
        m = metrics(iops, pt["bs"], pt["iodepth"])
        raw = {}
        if wobble is not None:
            s = samples(iops, pt["bs"], pt["iodepth"], wobble=wobble)
            raw["samples"] = rd.write_raw(i, "p", ".samples.jsonl", "".join(json.dumps(x) + "\n" for x in s))
            if ci95:
                u = intervals_of(storage_series(s))
                m = {**m, "ci95": u.ci95, "ci_method": u.ci_method}
        rd.append(read_line({"schema_version": 1, "kind": "storage", "index": i, "point": pt, "metrics": m,
                             **({"raw": raw} if raw else {})}, check=False))
    rd.close()
    return path
