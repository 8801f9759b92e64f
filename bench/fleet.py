"""Benchmark: a fleet run on 4 local agents (Unix sockets) against the same run on 1 (the hosts really run at once).

Makes 4 RAM-backed loop devices (images in /dev/shm) and starts 4 ``profiler-tui agent`` processes, each on
its own Unix socket, then runs ``quick`` with ``runtime=1`` (``--yes``) ``--repeat`` times on one agent and on all four,
alternating, and prints the median wall time of each, their ratio (target ≤ 1.3) and, for the last 4-host run,
each host's figures per point.  It also checks that every host's figures in results.jsonl are exactly the
figures fio's client reported for that host (``client_stats`` in raw/*.fleet.json) and that the fleet total is
their sum.  Everything it made (agents, loop devices, images, results) is removed at the end, also on ^C.

    python bench/fleet.py [--repeat N] [--hosts N]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Iterator

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.helpers.fleet_agents import agents  # noqa: E402 - after the sys.path line; the same agents the tests start)

TARGET_RATIO = 1.3


@contextlib.contextmanager
def ram_loops(n: int, size_mb: int = 64) -> Iterator[list[str]]:
    shm = Path(tempfile.mkdtemp(prefix="profiler-tui-bench-", dir="/dev/shm"))
    devs: list[str] = []
    try:
        for i in range(n):
            image = shm / f"h{i}.img"
            with open(image, "wb") as f:
                f.truncate(size_mb << 20)
            devs.append(subprocess.run(["losetup", "-f", "--show", str(image)], capture_output=True, text=True,
                                       check=True).stdout.strip())
        yield devs
    finally:
        for dev in devs:
            subprocess.run(["losetup", "-d", dev], check=False)
        for image in shm.glob("*.img"):
            image.unlink()
        shm.rmdir()


def run(hosts: list[str], devs: list[str], out: Path) -> float:
    args = [sys.executable, "-m", "app", "run", "quick", "--set", "runtime=1", "--set", "repeat=1", "--yes", "--out",
            str(out)]
    for host, dev in zip(hosts, devs):
        args += ["--host", host, "--target", f"{host}={dev}"]
    t0 = time.monotonic()
    proc = subprocess.run(args, cwd=ROOT, capture_output=True, text=True)
    wall = time.monotonic() - t0
    if proc.returncode != 0:
        raise SystemExit(f"the run on {len(hosts)} host(s) failed ({proc.returncode}): {proc.stderr.strip()}")
    return wall


def check_exact(out: Path) -> tuple[int, list[str]]:
    """(lines checked, problems): each host's figures equal its client_stats entry; totals are their sums."""
    from app.fleet.runner import ALL_CLIENTS

    lines = [json.loads(ln) for ln in (out / "results.jsonl").read_text().splitlines()]
    problems = []
    for r in lines:
        doc = json.loads((out / r["raw"]["fleet"]).read_text())
        sock = r["host"].removeprefix("unix://")  # fio names a socket client by its path
        entry = next(e for e in doc["client_stats"] if e["hostname"] == sock and e["jobname"] != ALL_CLIENTS)
        for direction in ("read", "write"):
            if r["metrics"][f"{direction}_iops"] != entry[direction]["iops"]:
                problems.append(f"{r['host']} point {r['index']}: {direction} IOPS differ from fio's")
            if r["metrics"][f"{direction}_bw_bytes"] != entry[direction]["bw_bytes"]:
                problems.append(f"{r['host']} point {r['index']}: {direction} bandwidth differs from fio's")
    return len(lines), problems


def table(out: Path) -> str:
    lines = [json.loads(ln) for ln in (out / "results.jsonl").read_text().splitlines()]
    rows = [f"{'point':<24} {'host':<24} {'IOPS':>10} {'MB/s':>9} {'mean µs':>9} {'p99 µs':>9}"]
    for index in sorted({r["index"] for r in lines}):
        mine = [r for r in lines if r["index"] == index]
        for r in mine:
            m = r["metrics"]
            rows.append(f"{r['job'].split('@')[0]:<24} {r['host']:<24} {m['iops']:>10.0f} {m['bw_bytes'] / 1e6:>9.1f} "
                        f"{m['lat_ns']['mean'] / 1e3:>9.1f} {m['lat_ns']['p99'] / 1e3:>9.1f}")
        rows.append(f"{'':<24} {'fleet total':<24} {sum(r['metrics']['iops'] for r in mine):>10.0f} "
                    f"{sum(r['metrics']['bw_bytes'] for r in mine) / 1e6:>9.1f}")
    return "\n".join(rows)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--hosts", type=int, default=4)
    a = ap.parse_args()
    one: list[float] = []
    many: list[float] = []
    with ram_loops(a.hosts) as devs, agents(a.hosts) as running, tempfile.TemporaryDirectory() as tmp:
        hosts = [ag.host for ag in running]
        for i in range(a.repeat):
            one.append(run(hosts[:1], devs[:1], Path(tmp) / f"one-{i}"))
            many.append(run(hosts, devs, Path(tmp) / f"many-{i}"))
            print(f"round {i + 1}: 1 host {one[-1]:.2f} s, {a.hosts} hosts {many[-1]:.2f} s", flush=True)
        last = Path(tmp) / f"many-{a.repeat - 1}"
        checked, problems = check_exact(last)
        print()
        print(table(last))
    m1, mn = statistics.median(one), statistics.median(many)
    ratio = mn / m1
    print()
    print(f"quick (runtime 1) on 1 agent: median {m1:.2f} s; on {a.hosts} agents at once: median {mn:.2f} s")
    print(f"ratio {ratio:.2f} (target ≤ {TARGET_RATIO}): {'met' if ratio <= TARGET_RATIO else 'NOT met'}")
    print(f"per-host figures equal to fio's client_stats: {checked - len(problems)}/{checked} lines"
          + ("" if not problems else "; " + "; ".join(problems[:5])))


if __name__ == "__main__":
    main()
