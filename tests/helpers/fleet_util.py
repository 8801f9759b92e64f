"""Synthetic fleet results directories for the fleet report and compare tests.

Built from the real single-host fio lines of tests/data/report/golden-run: each of its first storage points
becomes one line per host, shaped as a fleet run writes it (``host`` exactly as given to --host, that host's
``target``, ``raw.fleet``), with the host's figures scaled by a factor (throughput × factor, latency ÷ factor:
a faster or slower host).  run.json gets the ``fleet`` key and ``target: null``.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any, Callable

from tests.conftest import DATA

GOLDEN_RUN = DATA / "report" / "golden-run"
THROUGHPUT = ("iops", "read_iops", "write_iops", "bw_bytes", "read_bw_bytes", "write_bw_bytes")
LATENCIES = ("lat_ns", "read_lat_ns", "write_lat_ns")


def host_name(i: int) -> str:
    return f"tcp://127.0.0.1:{18801 + i}"


def golden_storage_lines(n: int) -> list[dict[str, Any]]:
    lines = [json.loads(x) for x in (GOLDEN_RUN / "results.jsonl").read_text().splitlines()]
    return [rec for rec in lines if rec["kind"] == "storage"][:n]


def scaled(metrics: dict[str, Any], factor: float) -> dict[str, Any]:
    m = copy.deepcopy(metrics)
    for k in THROUGHPUT:
        if isinstance(m.get(k), (int, float)):
            m[k] *= factor
    for k in LATENCIES:
        if isinstance(m.get(k), dict):
            m[k] = {key: (v / factor if isinstance(v, (int, float)) and not isinstance(v, bool) else v)
                    for key, v in m[k].items()}
    return m


def fleet_line(rec: dict[str, Any], index: int, host: str, target: str, factor: float) -> dict[str, Any]:
    line = copy.deepcopy(rec)
    line.update(index=index, host=host, target=target, metrics=scaled(rec["metrics"], factor),
                raw={"json": f"raw/{index:04d}-job_{index}.json", "fleet": f"raw/{index:04d}-job.fleet.json"},
                flags=[])
    return line


def make_fleet_dir(path: Path, hosts: int | list[str] = 4, points: int = 3,
                   factor: Callable[[int, int], float] = lambda h, i: 1.0 + 0.01 * h) -> Path:
    """A fleet results directory: ``points`` points × ``hosts`` hosts; ``factor(host number, point index)``
    scales that host's figures at that point."""
    names = [host_name(i) for i in range(hosts)] if isinstance(hosts, int) else list(hosts)
    source = golden_storage_lines(points)
    meta = json.loads((GOLDEN_RUN / "run.json").read_text())
    meta.update(plan=[rec["point"] for rec in source], points_total=len(source), points_done=len(source),
                target=None, target_info=None, preset={"name": "fleet-test", "kind": "storage"},
                fleet={"hosts": [{"host": h, "scheme": "tcp", "address": "127.0.0.1", "port": 18801 + i,
                                  "user": None, "target": f"/dev/loop{i}"} for i, h in enumerate(names)],
                       "agent_socket": "/run/profiler-tui/agent.sock"})
    lines = [fleet_line(rec, i, h, f"/dev/loop{k}", factor(k, i))
             for i, rec in enumerate(source) for k, h in enumerate(names)]
    path.mkdir(parents=True, exist_ok=True)
    (path / "run.json").write_text(json.dumps(meta, indent=1))
    (path / "results.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    return path


def read_lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(x) for x in (path / "results.jsonl").read_text().splitlines() if x.strip()]
