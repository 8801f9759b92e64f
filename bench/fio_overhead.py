"""Benchmark: the tool against plain fio, alternated in one run (issue 2, acceptance 3 and 8).

1. The same 4K random-read job, once through profiler-tui's runner and once with plain
   ``fio JOBFILE``, alternated ROUNDS times: prints IOPS of each and the ratio tool/plain.
2. Per-point overhead: wall time of a multi-point sweep beyond runtime + ramp_time per point,
   next to plain fio's own wall time beyond its runtime (the reference, same run).
"""

from __future__ import annotations

import asyncio
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from app.engine.sweep import Session, new_session  # noqa: E402 - after the sys.path line above
from app.model.points import StoragePoint  # noqa: E402 - after the sys.path line above
from app.plan import presets  # noqa: E402 - after the sys.path line above
from app.runners.fio import job_file  # noqa: E402 - after the sys.path line above

ROUNDS = 5
RUNTIME = 3


async def _drain(session: Session) -> None:
    async for _ in session.events():
        pass


def tool_point(tmp: Path, overrides: list[str], tag: str) -> tuple[float, float, dict]:
    preset = presets.apply_overrides(presets.load("custom"), overrides)
    session = new_session(preset, target=str(tmp / "bench.bin"), out=tmp / f"tool-{tag}")
    t0 = time.monotonic()
    asyncio.run(_drain(session))
    wall = time.monotonic() - t0
    rec: dict[str, Any] = session.results.records()[0]
    return rec["metrics"]["iops"], wall, rec


def plain_fio(job_path: Path) -> tuple[float, float]:
    t0 = time.monotonic()
    out = subprocess.run(["fio", "--output-format=json", str(job_path)], capture_output=True, text=True,
                         check=True).stdout
    wall = time.monotonic() - t0
    doc = json.loads(out[out.index("{"):])
    job = doc["jobs"][0]
    return job["read"]["iops"] + job["write"]["iops"], wall


def main() -> None:
    overrides = ["rw=randread", "bs=4k", "iodepth=16", f"runtime={RUNTIME}", "size=256m"]
    with tempfile.TemporaryDirectory(prefix="bench-fio-", dir=ROOT) as d:
        tmp = Path(d)
        point = presets.apply_overrides(presets.load("custom"), overrides).expand()[0]
        assert isinstance(point, StoragePoint)  # the custom preset: storage
        job = tmp / "plain.fio"
        job.write_text(job_file(point, str(tmp / "bench.bin")))
        plain_fio(job)  # lay the file out once, outside the measurement
        tool_iops, plain_iops, tool_wall, plain_wall = [], [], [], []
        for r in range(ROUNDS):
            i, w, _ = tool_point(tmp, overrides, f"r{r}")
            tool_iops.append(i)
            tool_wall.append(w)
            i, w = plain_fio(job)
            plain_iops.append(i)
            plain_wall.append(w)
            print(f"round {r + 1}: tool {tool_iops[-1]:,.0f} IOPS ({tool_wall[-1]:.2f} s)   "
                  f"plain fio {plain_iops[-1]:,.0f} IOPS ({plain_wall[-1]:.2f} s)")
        ratio = statistics.median(tool_iops) / statistics.median(plain_iops)
        print(f"4K randread QD16, {RUNTIME} s, file target: median tool/plain IOPS ratio = {ratio:.3f} "
              f"({'within' if abs(ratio - 1) <= 0.10 else 'OUTSIDE'} 10%)")

        # per-point overhead of a sweep
        sweep_overrides = ["rw=randread", "bs=4k", "iodepth=1,2,4,8,16,32", "runtime=1",
                           "size=256m"]
        preset = presets.apply_overrides(presets.load("custom"), sweep_overrides)
        n = len(preset.expand())
        session = new_session(preset, target=str(tmp / "bench.bin"), out=tmp / "sweep")
        t0 = time.monotonic()
        asyncio.run(_drain(session))
        wall = time.monotonic() - t0
        per_point = (wall - n * 1.0) / n
        records: list[dict[str, Any]] = session.results.records()
        runner_walls = [r["wall_s"] - 1.0 for r in records]
        plain_over = statistics.median(plain_wall) - RUNTIME
        print(f"sweep of {n} points x 1 s: wall {wall:.2f} s, overhead per point {per_point:.3f} s "
              f"(fio process alone: median {statistics.median(runner_walls):.3f} s; "
              f"plain fio's own wall beyond runtime: {plain_over:.3f} s) — target < 0.5 s")


if __name__ == "__main__":
    main()
