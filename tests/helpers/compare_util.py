"""Hand-made results directories for the compare tests: storage or memory lines with the interval record, the
replicates or the kept per-second samples each test needs (app.cli.compare judges each difference by them)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

POINT = {"rw": "randread", "bs": 4096, "rwmixread": None, "iodepth": 16, "numjobs": 1, "ioengine": "libaio",
         "direct": True, "runtime": 30, "ramp_time": 0, "size": 1 << 30, "time_based": True}


def metrics(iops: float, ci: tuple[float, float] | None = None) -> dict[str, Any]:
    m: dict[str, Any] = {"iops": iops, "bw_bytes": iops * 4096, "lat_ns": {"mean": 16e9 / iops, "p99": 4e9 / iops * 8}}
    if ci is not None:
        m["ci95"] = {"iops": list(ci)}
        m["ci_method"] = {"method": "batch-means", "level": 0.95, "samples": 30,
                          "series": {"iops": {"batch_size": 1, "batches": 28, "warmup": 2},
                                     "bw_bytes": {"reason": "left out by this test"},
                                     "lat_mean_ns": {"reason": "left out by this test"}}}
    return m


def make_run(path: Path, lines: list[dict[str, Any]], kind: str = "storage") -> Path:
    """A results directory of ``lines`` (each: ``point`` overrides, ``metrics``, optional ``samples``)."""
    (path / "raw").mkdir(parents=True)
    plan, records = [], []
    for i, spec in enumerate(lines):
        point = {**POINT, **spec.get("point", {})} if kind == "storage" else spec["point"]
        rec: dict[str, Any] = {"kind": kind, "index": i, "point": point, "metrics": spec["metrics"]}
        if "samples" in spec:
            name = f"raw/{i:04d}.samples.jsonl"
            (path / name).write_text("".join(json.dumps({"t": t + 1.0, "interval_s": 1.0, "iops": v,
                                                         "bw_bytes": v * 4096, "lat_mean_ns": 16e9 / v}) + "\n"
                                             for t, v in enumerate(spec["samples"])))
            rec["raw"] = {"samples": name}
        plan.append(point)
        records.append(rec)
    meta = {"tool": "profiler-tui", "preset": {"name": "t", "kind": kind}, "kind": kind, "plan": plan,
            "points_total": len(plan), "points_done": len(plan), "status": "complete"}
    (path / "run.json").write_text(json.dumps(meta))
    (path / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


def replicates(iops: list[float], **point: object) -> list[dict[str, Any]]:
    return [{"point": {**point, "replicate": k}, "metrics": metrics(v)} for k, v in enumerate(iops, 1)]
