"""Results directories of open-loop runs whose truth is known: an M/M/1 server of service time S (so X_max = 1/S),
measured closed-loop at QD1 and QD4, then open-loop at shares ρ of X_max with the mean response time M/M/1
predicts, S / (1 − ρ), and its p99, S / (1 − ρ) · ln 100; plus points flagged closed-by-generator whose (too
low) latency would change every answer if it were used."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any, Sequence

from tests.helpers.tail_runs import checked, storage_line, write_run

S_NS = 100_000.0  # 100 µs: X_max 10,000 IOPS
RUNTIME = 10


def _set_latency(line: dict[str, Any], mean_ns: float, p99_ns: float, iops: float) -> dict[str, Any]:
    m = line["metrics"]
    ios = round(iops * RUNTIME)
    m.pop("lat_hist", None)
    m["lat_ns"] = {**m["lat_ns"], "mean": mean_ns, "p99": p99_ns}
    m.update(iops=iops, read_iops=iops, bw_bytes=iops * 4096, read_bw_bytes=iops * 4096, total_ios=ios,
             io_bytes=ios * 4096)
    m["ci95"] = {"lat_mean_ns": [mean_ns * 0.98, mean_ns * 1.02], "iops": [iops * 0.99, iops * 1.01]}
    m["ci_method"] = {"method": "batch-means", "batches": 10}
    return line


def closed_line(index: int, qd: int, s_ns: float = S_NS) -> dict[str, Any]:
    """A closed-loop point of an M/M/1 server at QD ``qd``: X = 1/S, R = qd · S (p99 ≈ its mean × 4.6 at QD1)."""
    line = storage_line(index, 100_000, s_ns, iodepth=qd, runtime=RUNTIME, group="closed loop")
    return checked(_set_latency(line, qd * s_ns, qd * s_ns * math.log(100), 1e9 / s_ns))


def open_line(index: int, rho: float, valid: bool = True, mean_ns: float | None = None, p99_ns: float | None = None,
              achieved: float | None = None, s_ns: float = S_NS, xmax_from: str = "measured") -> dict[str, Any]:
    """An open-loop point at ρ of X_max = 1/S: M/M/1's mean and p99 unless given; ``valid`` False flags it."""
    xmax = 1e9 / s_ns
    offered = rho * xmax
    mean = mean_ns if mean_ns is not None else s_ns / (1 - rho)
    p99 = p99_ns if p99_ns is not None else mean * math.log(100)
    got = achieved if achieved is not None else offered
    given: dict[str, Any] = {"xmax": round(xmax)} if xmax_from == "given" else {}
    line = storage_line(index, 100_000, mean, iodepth=64, runtime=RUNTIME, group="open loop",
                        rate=f"{rho * 100:g}%", **given)
    _set_latency(line, mean, p99, got)
    loop: dict[str, Any] = {"offered_iops": offered, "rho": rho, "xmax_iops": xmax, "xmax_from": xmax_from,
                            "per_job_rate_iops": [round(offered)], "arrivals": "poisson", "achieved_iops": got,
                            "achieved_per_s": [got] * RUNTIME, "seconds_checked": RUNTIME, "z": 2.87,
                            "iodepth_cap": 64, "iodepth_level": {"1": 90.0, "2": 10.0}, "valid": valid,
                            "lateness_bound_s": 0.01 if valid else None}
    if not valid:
        loop.update(flag="closed-by-generator", closed_because="fewer I/Os than offered in 3 of 10 seconds "
                                                                "(first: second 4)")
    line["open_loop"] = loop
    from app.model.records import Parts, StorageMetrics
    from app.stats.validity import TargetFacts, point_checks, point_flags

    metrics, parts = StorageMetrics.of(line["metrics"]), Parts(open_loop=loop)
    flags = point_flags(line["point"], metrics, parts)
    line.update(flags=flags, checks=point_checks(line["point"], metrics, parts, None, TargetFacts(), flags))
    return line


def mm1_run(path: Path, rhos: Sequence[float] = (0.1, 0.3, 0.45, 0.6, 0.8, 0.9), closed: Sequence[int] = (1, 4),
            flagged: Sequence[dict[str, Any]] = ()) -> Path:
    """Closed-loop points at ``closed`` depths, then open-loop points at ``rhos`` (M/M/1's truth), then the
    ``flagged`` ones (open_line's arguments)."""
    lines = [closed_line(i, qd) for i, qd in enumerate(closed)]
    lines += [open_line(len(lines) + i, rho) for i, rho in enumerate(rhos)]
    lines += [open_line(len(lines) + i, **f) for i, f in enumerate(flagged)]
    return write_run(path, lines)
