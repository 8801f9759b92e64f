"""Benchmark: how quickly the runs browser lists 500 results directories.

Makes ``--runs`` synthetic results directories (default 500) in a temp directory — each a run.json with a
plan of ``--points`` storage points (default 24) and a results.jsonl of as many lines; a tenth of them
interrupted, so their results.jsonl is counted line by line — then measures, median of ``--repeat``:

* core: ``app.store.runs.list_runs`` reading them all (cold file cache is not attempted: the figure is the CPU
  and system-call cost a second visit pays);
* TUI: in the Textual app at 80x24, from the ``h`` key reaching the terminal driver to the table holding every
  run (the scan runs in a thread while the screen is drawn).

Target: the list appears within 0.5 s for 500 runs.  Prints both figures and their ratio to the target.

    python bench/runs_browser.py [--runs N] [--points N] [--repeat N]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

TARGET_S = 0.5


def make_runs(root: Path, runs: int, points: int) -> None:
    point = {"rw": "randread", "bs": 4096, "rwmixread": None, "iodepth": 1, "numjobs": 1, "ioengine": "libaio",
             "direct": True, "runtime": 1, "ramp_time": 0, "size": 16 << 20, "time_based": True}
    metrics = {"iops": 1000.0, "read_iops": 1000.0, "write_iops": 0.0, "bw_bytes": 4096e3, "read_bw_bytes": 4096e3,
               "write_bw_bytes": 0.0, "lat_ns": {k: 1000 for k in ("min", "max", "mean", "stddev", "p50", "p90", "p99",
                                                                  "p99_9", "p99_99")}, "usr_cpu": 1.0, "sys_cpu": 2.0}
    for i in range(runs):
        d = root / f"custom-20260101-{i:06d}"
        d.mkdir(parents=True)
        interrupted = i % 10 == 0
        plan = [dict(point, iodepth=1 << (k % 8)) for k in range(points)]
        done = points // 2 if interrupted else points
        meta = {"schema_version": 1, "tool": "profiler-tui", "kind": "storage",
                "preset": {"name": "custom", "kind": "storage"}, "plan": plan, "points_total": points,
                "points_done": done, "target": f"/srv/t{i}.img",
                "started": f"2026-01-01T00:{i // 60 % 60:02d}:{i % 60:02d}+00:00",
                "status": "interrupted" if interrupted else "complete"}
        (d / "run.json").write_text(json.dumps(meta, indent=2))
        lines = [json.dumps({"schema_version": 1, "kind": "storage", "index": k, "point": plan[k], "metrics": metrics})
                 for k in range(done)]
        (d / "results.jsonl").write_text("\n".join(lines) + "\n")


def core_times(root: Path, repeat: int) -> list[float]:
    from app.store.runs import list_runs

    out = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        runs = list_runs([root])
        out.append(time.perf_counter() - t0)
    assert runs
    return out


async def tui_time(root: Path, expected: int) -> float:
    from textual import events
    from textual.widgets import DataTable

    from app.screens.runs import RunsScreen
    from app.tui import create_app

    app = create_app(devices=[], results_dir=root, clock=lambda: 0.0)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause(0.3)
        # the key goes to the terminal driver as a user's would (Pilot.press also waits for the app to settle)
        key = events.Key("h", "h")
        key.set_sender(app)
        t0 = time.perf_counter()
        assert app._driver is not None  # the app runs under run_test
        app._driver.send_message(key)
        while True:
            screen = app.screen
            if isinstance(screen, RunsScreen) and screen.query_one("#runs", DataTable).row_count == expected:
                return time.perf_counter() - t0
            if time.perf_counter() - t0 > 30:
                raise SystemExit("the runs browser never listed every run")
            await asyncio.sleep(0.005)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=500)
    ap.add_argument("--points", type=int, default=24)
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="profiler-tui-runs-bench-") as tmp:
        root = Path(tmp) / "results"
        make_runs(root, args.runs, args.points)
        core = statistics.median(core_times(root, args.repeat))
        tui = statistics.median(asyncio.run(tui_time(root, args.runs)) for _ in range(args.repeat))
    print(f"runs browser, {args.runs} results directories of {args.points} points (median of {args.repeat}):")
    print(f"  core list_runs:          {core * 1e3:7.1f} ms")
    print(f"  TUI, key to full table:  {tui * 1e3:7.1f} ms   ({tui / TARGET_S:.2f} × the {TARGET_S:g} s target)")
    if tui > TARGET_S:
        raise SystemExit(1)


if __name__ == "__main__":
    main()
