"""Benchmark: how quickly the TUI shows its first screen, and how quickly it answers a key while fio runs.

* start-up: ``python -m app`` in an 80x24 tmux pane (a real pseudo-terminal), seconds until the
  devices and the key hints are on screen; the median of ``--starts`` starts.  Target: < 1.5 s.
* key latency: the quick preset running with the real fio (runtime 2 s, 16 MiB test file in a temp
  directory); a tab key (1/2/3) is sent to the app's driver every 0.3 s and timed until the tab
  changes; the median and the maximum of 12 presses.  Target: every press < 200 ms.

These are the product figures; the tests (tests/tui/test_tui_startup.py, tests/tui/test_tui_flow.py)
only assert bounds about 5x looser, so that a busy machine does not fail them.

    python bench/tui_latency.py [--starts N]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

START_TARGET_S = 1.5
KEY_TARGET_S = 0.2


def start_up(starts: int, tmp: Path) -> list[float]:
    from tests.tui.test_tui_startup import first_screen_seconds

    times = []
    for _ in range(starts):
        elapsed, screen = first_screen_seconds(tmp)
        if elapsed is None:
            raise SystemExit("the devices screen never appeared:\n" + screen)
        times.append(elapsed)
    return times


async def key_latencies(tmp: Path) -> list[float]:
    from app.tui import create_app
    from tests.tui.helpers import DEVICES
    from tests.tui.test_tui_flow import SIZE, key_latency, start_quick_run

    app = create_app(devices=DEVICES, results_dir=tmp / "results", overrides=["runtime=2", "size=16m"])
    latencies: list[float] = []
    async with app.run_test(size=SIZE) as pilot:
        run = await start_quick_run(pilot)
        tabs = run.query_one("#run-tabs")
        for key, tab in [("2", "curve"), ("3", "log"), ("1", "live")] * 4:
            latencies.append(await key_latency(app, key, lambda: tabs.active == tab))
            await asyncio.sleep(0.3)
        await run.stop()
    return latencies


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--starts", type=int, default=5, help="TUI starts to time (the median is reported)")
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="tui-bench-"))
    os.environ.setdefault("XDG_CONFIG_HOME", str(tmp / "cfg"))
    os.environ["PROFILER_TUI_PRESETS"] = str(ROOT / "tests" / "tui" / "data" / "presets")
    ok = True
    try:
        load = os.getloadavg()[0]
        if shutil.which("tmux"):
            times = start_up(max(1, args.starts), tmp)
            median = statistics.median(times)
            ok &= median < START_TARGET_S
            print(f"TUI first screen (devices + key hints, 80x24): median {median:.2f} s of {len(times)} starts "
                  f"({', '.join(f'{t:.2f}' for t in times)}; target < {START_TARGET_S} s; load average {load:.1f})")
        else:
            print("TUI first screen: not measured (tmux is not installed)")
        lat = asyncio.run(key_latencies(tmp))
        ok &= max(lat) < KEY_TARGET_S
        print(f"TUI key latency while fio runs: median {statistics.median(lat) * 1000:.0f} ms, "
              f"max {max(lat) * 1000:.0f} ms over {len(lat)} presses "
              f"(target every press < {KEY_TARGET_S * 1000:.0f} ms)")
        return 0 if ok else 1
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
