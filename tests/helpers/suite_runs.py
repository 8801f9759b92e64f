"""Results directories of the memory suite's modes, written with the project's own writer (ResultsDir,
app.model.records), for the report's tests.

``mlc_default_lines`` are the lines an import of tests/data/mlc/v3.10-default-run-2socket-skylake.txt gives
for its idle matrix, peak bandwidths, bandwidth matrix and c2c sections (one line per figure, as the
results-line contract defines them); its numbers are copied from that file.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any, Sequence

from app.model.points import MemoryPoint
from app.model.records import ResultLine, read_line
from app.model.runmeta import new
from app.store.results import ResultsDir

KIB = 1 << 10
MIB = 1 << 20
CACHES = [{"name": "L1d", "level": 1, "type": "Data", "size_bytes": 32 * KIB, "shared_cpus": "0"},
          {"name": "L1i", "level": 1, "type": "Instruction", "size_bytes": 32 * KIB, "shared_cpus": "0"},
          {"name": "L2", "level": 2, "type": "Unified", "size_bytes": 1024 * KIB, "shared_cpus": "0"},
          {"name": "L3", "level": 3, "type": "Unified", "size_bytes": 32 * MIB, "shared_cpus": "0-1"}]


def point(mode: str, engine: str = "builtin", **keys: Any) -> dict[str, Any]:
    base: dict[str, Any] = {"traffic": None, "delay": None, "stride": 64, "buffer": None, "duration": 2, "cpus": None,
                            "tlb_locality": None}
    return MemoryPoint(mode=mode, engine=engine, **{**base, **keys}).to_dict()


def line(index: int, pt: dict[str, Any], metrics: dict[str, Any], **parts: Any) -> ResultLine:
    return read_line({"schema_version": 1, "kind": "memory", "index": index, "point": pt, "metrics": metrics,
                      **parts}, check=False)


def write_run(path: Path, lines: Sequence[ResultLine], plan: Sequence[dict[str, Any]] | None = None,
              failures: Sequence[dict[str, Any]] = (), status: str = "complete") -> Path:
    """A results directory: run.json (plan = the lines' points unless given) and results.jsonl."""
    plan = list(plan) if plan is not None else [ln.point for ln in lines]
    rd = ResultsDir(path)
    rd.create(new({"schema_version": 1, "tool": "profiler-tui", "kind": "memory", "plan": plan, "status": status,
                   "points_total": len(plan), "failures": list(failures)}, path / "run.json"))
    for ln in lines:
        rd.append(ln)
    rd.close()
    return path


MLC_IDLE = {(0, 0): 90.2, (0, 1): 144.3, (1, 0): 143.2, (1, 1): 89.1}
MLC_PEAK = {"R": 211194.2, "W3": 193422.0, "W2": 192554.0, "W5": 185556.1, "W10": 172770.4}
MLC_BW = {(0, 0): 104362.2, (0, 1): 34290.6, (1, 0): 34283.3, (1, 1): 106028.4}
MLC_C2C_LOCAL = {"hit": 50.5, "hitm": 49.9}
MLC_C2C_REMOTE = {("writer", 0, 1): 114.0, ("writer", 1, 0): 114.6, ("reader", 0, 1): 114.0, ("reader", 1, 0): 123.2}


def mlc_default_lines(start: int = 0) -> list[ResultLine]:
    """The suite's lines of MLC's default run on a 2-socket Skylake (engine mlc, imported)."""
    src = {"imported_from": "v3.10-default-run-2socket-skylake.txt", "engine": "mlc"}
    out: list[tuple[dict[str, Any], dict[str, Any]]] = []
    out += [(point("latency_matrix", "mlc", cpu_node=c, mem_node=m), {"latency_ns": v})
            for (c, m), v in MLC_IDLE.items()]
    out += [(point("peak", "mlc", traffic=t), {"bandwidth_mbps": v}) for t, v in MLC_PEAK.items()]
    out += [(point("bandwidth_matrix", "mlc", traffic="R", cpu_node=c, mem_node=m), {"bandwidth_mbps": v})
            for (c, m), v in MLC_BW.items()]
    out += [(point("c2c", "mlc", c2c=k), {"latency_ns": v}) for k, v in MLC_C2C_LOCAL.items()]
    out += [(point("c2c", "mlc", c2c="hitm", cpu_node=w, reader_node=r, home=h), {"latency_ns": v})
            for (h, w, r), v in MLC_C2C_REMOTE.items()]
    return [line(start + i, pt, m, **src) for i, (pt, m) in enumerate(out)]


def stepped_curve(sizes: Sequence[int], noise: float = 0.0, seed: int = 1) -> list[tuple[int, float]]:
    """A working-set curve with known steps: 1.2 ns up to 24 KiB, 4.0 ns from 48 KiB to 768 KiB, 14 ns from
    1.5 MiB to 24 MiB, 95 ns from 40 MiB; between them a latency halfway; ``noise``: ± that fraction,
    deterministic."""
    def level(s: int) -> float:
        for top, ns in ((24 * KIB, 1.2), (32 * KIB, 2.0), (768 * KIB, 4.0), (1 * MIB, 8.0), (24 * MIB, 14.0),
                        (32 * MIB, 40.0)):
            if s <= top:
                return ns
        return 95.0
    return [(s, level(s) * (1 + noise * math.sin(seed * 7.3 + i * 2.1))) for i, s in enumerate(sizes)]


def octave_sizes(lo: int = 4 * KIB, hi: int = 256 * MIB, per_octave: int = 4) -> list[int]:
    """Buffer sizes from ``lo`` to ``hi`` at ``per_octave`` points per octave, whole KiB (as the engine plans them)."""
    n = round(math.log2(hi / lo) * per_octave)
    return sorted({round(lo * 2 ** (i / per_octave) / KIB) * KIB for i in range(n + 1)})


def working_set_lines(start: int, sizes: Sequence[int], pages: str, scale: float = 1.0, noise: float = 0.0,
                      caches: Any = CACHES) -> list[ResultLine]:
    chase = {"text": f"random chase within each buffer, {'2 MiB' if pages == '2m' else '4 KiB'} pages, stride 64 B"}
    return [line(start + i, point("working_set", buffer=s, pages=pages, cpus="0"), {"latency_ns": round(ns * scale, 2)},
                 engine="builtin", caches=caches, chase=chase)
            for i, (s, ns) in enumerate(stepped_curve(sizes, noise))]
