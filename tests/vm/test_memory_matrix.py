"""The memory suite's matrices on a real two-node guest (node 0: CPU 0 and 384 MiB, node 1: CPU 1 and 384 MiB):
`profiler-tui run mem-matrix` plans cpu_node = "each" x mem_node = "each" from the guest's sysfs, and the built-in
engine gives a 2x2 idle latency matrix and a 2x2 bandwidth matrix whose every cell's buffer placement it verified
from /proc/self/numa_maps (the figures themselves are emulated: only their presence and placement are checked);
`mem-c2c` plans the remote writer x reader node pairs off the diagonal, each line's memory on its home node."""

from __future__ import annotations

import json
from typing import Any

from tests.helpers.vm_guest import Guest

CELLS = [(0, 0), (0, 1), (1, 0), (1, 1)]


def test_mem_matrix_gives_2x2_matrices_and_c2c_remote_points_with_verified_placement(lab: Guest) -> None:
    out = lab.xchg / "matrix"
    done = lab.tool("run", "mem-matrix", "--engine", "builtin", "--set", "duration=0.2", "--set", "buffer=16m",
                    "--yes", "--out", "/run/xchg/matrix", timeout=60)
    assert done.rc == 0, done.out[-3000:] + done.err[-3000:]
    assert "the matrices are 1x1" not in done.err
    lines: list[dict[str, Any]] = [json.loads(x) for x in (out / "results.jsonl").read_text().splitlines()]
    plan = json.loads((out / "run.json").read_text())["plan"]
    assert [(p["mode"], p["cpu_node"], p["mem_node"]) for p in plan] == [
        (mode, c, m) for mode in ("latency_matrix", "bandwidth_matrix") for c, m in CELLS]
    by_mode: dict[str, dict[tuple[int, int], dict[str, Any]]] = {}
    for line in lines:
        p = line["point"]
        by_mode.setdefault(p["mode"], {})[(p["cpu_node"], p["mem_node"])] = line
    assert sorted(by_mode["latency_matrix"]) == sorted(by_mode["bandwidth_matrix"]) == CELLS
    for mode, metric in (("latency_matrix", "latency_ns"), ("bandwidth_matrix", "bandwidth_mbps")):
        print(mode, {cell: line["metrics"][metric] for cell, line in sorted(by_mode[mode].items())})  # pytest -s
        for (cpu_node, mem_node), line in by_mode[mode].items():
            assert line["metrics"][metric] > 0, line
            numa = line["numa"]  # every page of the cell's buffer(s) on the memory node, as numa_maps counted
            assert numa["node"] == mem_node and numa["verified_with"] == "numa_maps", line
            assert set(numa["pages"]) == {str(mem_node)} and numa["pages"][str(mem_node)] * numa["page_bytes"] >= \
                16 << 20, line
    # the remote c2c points of the same guest: writer node x reader node off the diagonal, the line's memory
    # verified on the node it is homed at
    done = lab.tool("run", "mem-c2c", "--engine", "builtin", "--set", "duration=0.2", "--yes", "--out",
                    "/run/xchg/c2c", timeout=60)
    assert done.rc == 0, done.out[-3000:] + done.err[-3000:]
    c2c = [json.loads(x) for x in (lab.xchg / "c2c" / "results.jsonl").read_text().splitlines()]
    remote = {(r["point"]["cpu_node"], r["point"]["reader_node"], r["point"]["home"]): r for r in c2c
              if r["point"].get("reader_node") is not None}
    assert sorted(remote) == [(0, 1, "reader"), (0, 1, "writer"), (1, 0, "reader"), (1, 0, "writer")]
    for (writer, reader, home), line in remote.items():
        assert line["metrics"]["latency_ns"] > 0 and line["numa"]["node"] == (writer if home == "writer" else reader)
    print("c2c", {key: line["metrics"]["latency_ns"] for key, line in sorted(remote.items())})
