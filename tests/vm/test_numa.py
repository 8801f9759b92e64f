"""NUMA on a real two-node guest (node 0: CPU 0 and 384 MiB, node 1: CPU 1 and 384 MiB): run.json's environment
records both nodes with their CPUs and memory, and the built-in memory engine's placement (``mem_node``) is
verified twice — by the engine itself (move_pages) and from outside, in the kernel's /proc/PID/numa_maps of
the running engine, read by a guest script while the chase runs."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from app.report.write import render_report
from tests.helpers.vm_guest import Guest
from tests.helpers.vm_image import ROOT

BUFFER = 64 << 20
PAGES = BUFFER // 4096  # the guest's pages are 4 KiB (numa_maps counts a huge page as its 4 KiB pages too)

# One run of two points on node 0's CPU (cpu_node=0), mem_node=1 then mem_node=0, one engine process each, in the
# background; each engine process is found by its name (pgrep) and the first snapshot of its numa_maps that holds
# the whole touched buffer is kept (one taken before the first touch lacks it) as numa.maps.PID.
WATCH = r"""
out=/run/xchg/numa
{tool} run mem-idle --engine builtin --set mem_node=1,0 --set cpu_node=0 --set buffer=64m --set duration=2 \
    --out $out > $out.log 2>&1 &
tool=$!
while kill -0 $tool 2>/dev/null; do
    pid=$(pgrep -x memlat)
    if [ -n "$pid" ] && [ ! -e $out.maps.$pid ] && cat /proc/$pid/numa_maps > $out.maps.new 2>/dev/null \
            && grep -q "anon={pages} " $out.maps.new; then
        mv $out.maps.new $out.maps.$pid
    fi
    sleep 0.1
done
wait $tool
echo $? > $out.rc
"""


def _buffer_line(maps: str) -> str:
    """The engine's buffer in numa_maps: the one mapping of exactly its pages (its heap and stacks are small)."""
    lines = [ln for ln in maps.splitlines() if re.search(rf"\banon={PAGES}\b", ln)]
    assert len(lines) == 1, maps
    return lines[0]


@pytest.fixture(scope="module")
def run(lab: Guest) -> dict[str, Any]:
    """The run's directory, run.json, its lines by node and the numa_maps snapshots by node (from ``bind:N``)."""
    lab.run(WATCH.format(tool=f"{ROOT}/.venv/bin/profiler-tui", pages=PAGES), timeout=150)
    base = lab.xchg / "numa"
    log = Path(f"{base}.log").read_text()
    assert Path(f"{base}.rc").read_text().strip() == "0", log
    lines = [json.loads(x) for x in (base / "results.jsonl").read_text().splitlines() if x.strip()]
    maps = {}
    for snap in lab.xchg.glob("numa.maps.*"):
        buf = _buffer_line(snap.read_text())
        bind = re.search(r" bind:(\d+) ", buf)
        assert bind, buf  # the mapping carries the policy the engine set: MPOL_BIND to one node
        maps[int(bind.group(1))] = buf
    return {"dir": base, "run": json.loads((base / "run.json").read_text()), "log": log, "maps": maps,
            "lines": {line["point"]["mem_node"]: line for line in lines}}


def test_run_json_records_both_nodes_with_their_cpus_and_memory(run: dict[str, Any]) -> None:
    nodes = run["run"]["environment"]["numa"]["nodes"]
    assert [(n["node"], n["cpus"]) for n in nodes] == [(0, "0"), (1, "1")]
    for n in nodes:  # 384 MiB each, less what the kernel keeps for itself on the node
        assert 300 << 20 < n["memory_bytes"] <= 384 << 20, nodes
    report = render_report(run["dir"]).read_text()
    assert re.search(r"^\| NUMA node 0 +\| CPUs 0, memory 3\d\d(\.\d)? MiB +\|$", report, re.M), report
    assert re.search(r"^\| NUMA node 1 +\| CPUs 1, memory 3\d\d(\.\d)? MiB +\|$", report, re.M), report
    # the idle table names the node of each latency
    idle_row = r"^\| 64 +\| +64M \| +[0-9.]+(?: ± [0-9.]+)? \| builtin \| +(\d) \|$"  # latency ± its interval
    assert [int(n) for n in re.findall(idle_row, report, re.M)] == [1, 0]


@pytest.mark.parametrize("node", [1, 0])
def test_the_engine_verifies_its_placement_and_numa_maps_agrees(run: dict[str, Any], node: int) -> None:
    line = run["lines"][node]
    assert line["point"]["cpu_node"] == 0 and line["command"].endswith(f"-k 0 --mem_node {node}")  # node 0's CPU
    assert line["numa"] == {"node": node, "pages": {str(node): PAGES}, "page_bytes": 4096,
                            "verified_with": "move_pages"}
    assert 0 < line["metrics"]["latency_ns"] < 100_000
    # from outside: the kernel's own account of the running engine's buffer, bound to the node, all pages there
    buf = run["maps"][node]
    assert re.findall(r"\bN(\d+)=(\d+)", buf) == [(str(node), str(PAGES))], buf
    print(f"mem_node={node}: latency {line['metrics']['latency_ns']} ns from CPU 0; numa_maps: {buf}")
