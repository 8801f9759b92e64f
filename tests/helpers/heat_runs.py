"""Results directories whose storage points keep per-second latency histograms (raw/NNNN-JOB.hist.jsonl, the
record app.stats.latmap reads), made without randomness from a log-normal latency on fio's bucket grid; ``stalls``
puts seconds whose I/Os complete at a slow latency instead (a device that pauses)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Sequence

from app.stats.latmap import encode
from tests.helpers.tail_runs import lognormal_hist, storage_line, write_run


def hist_lines(seconds: int, ios: int, median_ns: float, stalls: Sequence[int] = (), stall_ns: float = 50e6,
               stall_ios: int = 40, sigma: float = 0.4) -> list[dict[str, Any]]:
    """``seconds`` lines of ``ios`` I/Os each; the seconds in ``stalls`` (1-based) complete ``stall_ios`` I/Os
    around ``stall_ns`` instead."""
    quiet = dict(lognormal_hist(ios, median_ns, sigma=sigma))
    slow = {int(stall_ns): stall_ios // 2, int(stall_ns * 1.5): stall_ios - stall_ios // 2}
    return [{"t": float(t), "interval_s": 1.0, "read": encode(slow if t in stalls else quiet)}
            for t in range(1, seconds + 1)]


def write_heat_run(path: Path, points: Sequence[tuple[dict[str, Any], list[dict[str, Any]]]]) -> Path:
    """A results directory of ``points``: each a storage line and its histograms file's lines."""
    lines = []
    (path / "raw").mkdir(parents=True, exist_ok=True)
    for line, hists in points:
        rel = f"raw/{line['index']:04d}-p.hist.jsonl"
        (path / rel).write_text("".join(json.dumps(h, separators=(",", ":")) + "\n" for h in hists))
        lines.append({**line, "raw": {"hist": rel}})
    return write_run(path, lines)


def hour_point(path: Path, every_s: int = 300) -> Path:
    """One point of an hour, a 2-second pause every ``every_s`` seconds."""
    stalls = [t for start in range(every_s, 3600, every_s) for t in (start, start + 1)]
    return write_heat_run(path, [(storage_line(0, 3600 * 2_000, 40_000, runtime=3600),
                                  hist_lines(3600, 2_000, 40_000, stalls, sigma=0.15))])


def sweep(path: Path, n: int = 120, seconds: int = 10) -> Path:
    """``n`` points of ``seconds`` each, the queue depth growing; point 7 stalls for its seconds 4-5."""
    points = []
    for i in range(n):
        qd = 1 + i
        points.append((storage_line(i, seconds * 20_000, 20_000 * qd ** 0.5, iodepth=qd),
                       hist_lines(seconds, 20_000, 20_000 * qd ** 0.5, (4, 5) if i == 7 else ())))
    return write_heat_run(path, points)
