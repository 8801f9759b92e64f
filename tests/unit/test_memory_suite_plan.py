"""The memory suite's planning: the machine's topology from a faked sysfs, the plan-time values ("each",
"working-set") resolved on fake topologies (1 node, 2 nodes, a node without CPUs, a node without memory), the
refusals (exit 2, one sentence), and each engine's command lines for a batch of each mode."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from app.core.errors import UsageError
from app.host import topology
from app.host.topology import Cache, Node, Topology
from app.model.points import MemoryPoint
from app.plan import presets
from app.runners import memory
from app.runners.memory import BuiltinEngine, MemoryRunner, MlcEngine, check_suite

KIB, MIB = 1 << 10, 1 << 20
L3 = Cache("L3", 3, "Unified", 32 * MIB, "0-1")
CACHES = (Cache("L1d", 1, "Data", 32 * KIB, "0"), Cache("L1i", 1, "Instruction", 32 * KIB, "0"),
          Cache("L2", 2, "Unified", MIB, "0"), L3)
ONE_NODE = Topology((Node(0, (0, 1), 4 << 30),), (0, 1), CACHES)
TWO_NODES = Topology((Node(0, (0,), 384 * MIB), Node(1, (1,), 384 * MIB)), (0, 1), CACHES)
# node 1: memory only (e.g. CXL or PMEM); node 2: CPUs only
ODD_NODES = Topology((Node(0, (0, 1), 1 << 30), Node(1, (), 1 << 30), Node(2, (2, 3), 0)), (0, 1, 2, 3), CACHES)
ONE_CPU = Topology((Node(0, (0,), 1 << 30),), (0,), CACHES)


def plan(name: str, topo: Topology, *sets: str) -> list[MemoryPoint]:
    preset = presets.apply_overrides(presets.load(name), list(sets))
    preset.topology = topo
    points = preset.expand()
    assert all(isinstance(p, MemoryPoint) for p in points)
    return points  # type: ignore[return-value]


def cells(points: list[MemoryPoint], mode: str) -> list[tuple[int | None, int | None]]:
    return [(p.cpu_node, p.mem_node) for p in points if p.mode == mode]


# --- topology from sysfs ---------------------------------------------------------------------------


def fake_sysfs(root: Path, nodes: dict[int, tuple[str, int]], caches: list[tuple[str, str, str, str]]) -> Path:
    for n, (cpus, kib) in nodes.items():
        d = root / "devices" / "system" / "node" / f"node{n}"
        d.mkdir(parents=True)
        (d / "cpulist").write_text(cpus + "\n")
        (d / "meminfo").write_text(f"Node {n} MemTotal:       {kib} kB\nNode {n} MemFree:  1 kB\n")
    for i, (level, kind, size, shared) in enumerate(caches):
        d = root / "devices" / "system" / "cpu" / "cpu0" / "cache" / f"index{i}"
        d.mkdir(parents=True)
        for name, value in (("level", level), ("type", kind), ("size", size), ("shared_cpu_list", shared)):
            (d / name).write_text(value + "\n")
    return root


def test_topology_reads_nodes_allowed_cpus_and_caches(tmp_path: Path) -> None:
    root = fake_sysfs(tmp_path, {0: ("0-1", 1024), 1: ("2-3", 0), 2: ("", 2048)},
                      [("1", "Data", "48K", "0"), ("1", "Instruction", "32K", "0"), ("2", "Unified", "2048K", "0"),
                       ("3", "Unified", "96M", "0-3")])
    topo = topology.read(root, allowed=(1, 2, 3))
    assert topo.nodes == (Node(0, (1,), MIB), Node(1, (2, 3), 0), Node(2, (), 2 * MIB))
    assert topo.cpu_nodes() == [0, 1] and topo.memory_nodes() == [0, 2]
    assert [(c.name, c.size_bytes, c.shared_cpus) for c in topo.caches] == [
        ("L1d", 48 * KIB, "0"), ("L1i", 32 * KIB, "0"), ("L2", 2 * MIB, "0"), ("L3", 96 * MIB, "0-3")]
    assert topo.llc_bytes == 96 * MIB and topo.working_set()[-1] == 4 * 96 * MIB


def test_hostile_sysfs_values_are_left_out(tmp_path: Path) -> None:
    root = fake_sysfs(tmp_path, {0: ("0-99999999", 1), 1: ("1;rm -rf /", 1)},
                      [("1", "Data", "32K\x1b[2J", "0"), ("x", "Unified", "1M", "0"), ("2", "Bogus", "1M", "0"),
                       ("3", "Unified", "9" * 40 + "G", "0"), ("2", "Unified", "512K", "0" * 9000)])
    topo = topology.read(root, allowed=(0, 1))
    assert [n.cpus for n in topo.nodes] == [(), ()]  # an absurd or malformed CPU list names no CPU
    assert [(c.name, c.size_bytes, c.shared_cpus) for c in topo.caches] == [("L2", 512 * KIB, None)]
    assert topology.read(tmp_path / "none", allowed=(0,)).unknown


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=40))
def test_cpu_list_never_raises_and_round_trips(text: str) -> None:
    cpus = topology.cpu_list(text)
    assert cpus == tuple(sorted(set(cpus)))
    if cpus:
        assert topology.cpu_list(topology.cpu_list_text(cpus)) == cpus


def test_working_set_ladder_is_4_per_octave_in_whole_kib() -> None:
    sizes = topology.working_set_sizes(32 * MIB)
    assert sizes[:6] == [4 * KIB, 5 * KIB, 6 * KIB, 7 * KIB, 8 * KIB, 10 * KIB]
    assert sizes[-1] == 128 * MIB and len(sizes) == 15 * 4 + 1  # 4 KiB … 128 MiB: 15 octaves
    assert all(s % KIB == 0 for s in sizes) and sizes == sorted(set(sizes))
    assert topology.working_set_sizes(None)[-1] == topology.working_set_sizes(MIB)[-1] == 64 * MIB
    # a 2 GiB last-level cache would ask for 8 GiB: the ladder stops at a buffer's 4 GiB cap, which the key accepts
    top = topology.working_set_sizes(2048 * MIB)[-1]
    assert top == 4096 * MIB and presets.MEMORY_KEYS["buffer"].parse(top) == top


# --- plan-time values ----------------------------------------------------------------------------


def test_matrices_on_one_node_are_1x1_and_say_so() -> None:
    points = plan("mem-matrix", ONE_NODE)
    assert cells(points, "latency_matrix") == [(0, 0)] and cells(points, "bandwidth_matrix") == [(0, 0)]
    preset = presets.load("mem-matrix")
    preset.topology = ONE_NODE
    assert preset.notes() == ["one NUMA node (node 0): the matrices are 1x1"]


def test_matrices_on_two_nodes_and_on_odd_nodes() -> None:
    assert cells(plan("mem-matrix", TWO_NODES), "latency_matrix") == [(0, 0), (0, 1), (1, 0), (1, 1)]
    # rows: nodes with an allowed CPU (not 1); columns: nodes with memory (not 2)
    assert cells(plan("mem-matrix", ODD_NODES), "bandwidth_matrix") == [(0, 0), (0, 1), (2, 0), (2, 1)]


def test_c2c_remote_points_skip_the_diagonal_and_vanish_on_one_node() -> None:
    remote = [(p.c2c, p.cpu_node, p.reader_node, p.home) for p in plan("mem-c2c", TWO_NODES)
              if p.reader_node is not None]
    # MLC's order: the matrix of lines homed at the writer, then at the reader
    assert remote == [("hitm", 0, 1, "writer"), ("hitm", 1, 0, "writer"), ("hitm", 0, 1, "reader"),
                      ("hitm", 1, 0, "reader")]
    local = plan("mem-c2c", ONE_NODE)
    assert [(p.c2c, p.reader_node) for p in local] == [("hit", None), ("hitm", None)]
    preset = presets.load("mem-c2c")
    preset.topology = ONE_NODE
    assert any("no remote cache-to-cache points" in n for n in preset.notes())


def test_mlc_default_is_mlcs_order_and_threads_each_counts_cpus() -> None:
    points = plan("mem-mlc-default", TWO_NODES)
    order = list(dict.fromkeys(p.mode for p in points))
    assert order == ["latency_matrix", "peak", "bandwidth_matrix", "loaded", "c2c"]
    assert [p.traffic for p in points if p.mode == "peak"] == ["R", "W3", "W2", "W5", "W10"]
    assert len(points) == 4 + 5 + 4 + 19 + 2 + 4
    scaling = plan("mem-bandwidth", ODD_NODES)
    assert [p.threads for p in scaling if p.mode == "scaling"] == [1, 2, 3, 4]
    assert [p.threads for p in plan("mem-bandwidth", ODD_NODES, "cpus=0-1") if p.mode == "scaling"] == [1, 2]
    assert [p.threads for p in plan("mem-bandwidth", ODD_NODES, "cpu_node=2") if p.mode == "scaling"] == [1, 2]


def test_working_set_plan_from_the_llc_with_both_page_sizes() -> None:
    points = plan("mem-working-set", ONE_NODE)
    assert len(points) == 2 * 61 and {p.pages for p in points} == {None, "4k"}
    assert points[0].buffer == 4 * KIB and points[60].buffer == 128 * MIB and points[61].pages == "4k"
    assert plan("mem-working-set", ONE_NODE, "buffer=4k,working-set")[1].buffer == 5 * KIB  # no repeat of 4k


def test_plan_holds_resolved_values_and_resume_refuses_a_sentinel() -> None:
    points = plan("mem-matrix", TWO_NODES)
    table = json.loads(json.dumps([p.to_dict() for p in points]))
    assert all(isinstance(t["cpu_node"], int) for t in table)
    assert [p.to_dict() for p in presets.validate_plan("memory", table, "run.json")] == table
    table[0]["cpu_node"] = "each"
    with pytest.raises(UsageError, match=r"run.json: plan\[0\] key 'cpu_node' has invalid value 'each'"):
        presets.validate_plan("memory", table, "run.json")


@pytest.mark.parametrize("sets, needle", [
    (["delay=each"], "key 'delay' has invalid value 'each': \"each\" is a value of threads, cpu_node, reader_node "
                     "and mem_node only"),
    (["buffer=each"], "key 'buffer' has invalid value 'each'"),
    (["cpu_node=working-set"], "\"working-set\" is a value of buffer only"),
    (["mode=latency_matrix", "cpu_node=0"], "mode=latency_matrix needs cpu_node and mem_node"),
    (["mode=c2c", "cpus=0-2"], "a local cache-to-cache pair is exactly 2 CPUs"),
    (["mode=c2c", "reader_node=1"], "reader_node=1 needs cpu_node, the writer's node"),
])
def test_contradictions_are_refused_naming_the_key(sets: list[str], needle: str) -> None:
    with pytest.raises(UsageError) as e:
        plan("mem-idle", TWO_NODES, *sets)
    assert needle in str(e.value) and "\n" not in str(e.value)


def test_sentinel_without_numa_nodes_is_refused() -> None:
    with pytest.raises(UsageError, match="reports no NUMA nodes"):
        plan("mem-matrix", Topology((), (0,), (), unknown="/sys/devices/system/node is missing"))


# --- machine and engine checks (run and resume) ----------------------------------------------------


def point(**kw: object) -> MemoryPoint:
    p = presets.normalise_point(dataclasses.replace(plan("mem-idle", ONE_NODE)[0], **kw))  # type: ignore[arg-type]
    assert isinstance(p, MemoryPoint)
    return p


@pytest.mark.parametrize("kw, topo, engine, needle", [
    ({"mode": "scaling", "traffic": "R", "threads": 3}, ONE_NODE, "builtin", "threads=3: a scaling point runs one"),
    ({"mode": "c2c"}, ONE_CPU, "builtin", "mode=c2c needs two CPUs, a writer and a reader"),
    ({"mode": "c2c", "cpu_node": 0}, ONE_CPU, "builtin", "node 0 has 1 (0)"),
    ({"mode": "working_set", "buffer": 4096, "pages": "4k"}, ONE_NODE, "mlc", "pages=4k: Intel MLC has no option"),
    ({"mode": "peak", "traffic": "W6"}, ONE_NODE, "mlc", "measures only R, W3, W2, W5, W10"),
    ({"mode": "c2c", "cpus": "0,1"}, ONE_NODE, "mlc", "Intel MLC chooses its own c2c pair"),
    ({"mode": "latency_matrix", "cpu_node": 1, "mem_node": 0}, ODD_NODES, "builtin", "node 1 has no CPU"),
    ({"mode": "bandwidth_matrix", "traffic": "R", "cpu_node": 0, "mem_node": 2}, ODD_NODES, "builtin",
     "NUMA node 2 has no memory"),
])
def test_machine_and_engine_refusals(kw: dict[str, object], topo: Topology, engine: str, needle: str) -> None:
    with pytest.raises(UsageError) as e:
        check_suite([point(**kw)], topo, engine)
    assert needle in str(e.value)


def test_what_fits_passes() -> None:
    check_suite(plan("mem-mlc-default", TWO_NODES) + plan("mem-bandwidth", TWO_NODES), TWO_NODES, "builtin")
    check_suite(plan("mem-mlc-default", ONE_NODE), ONE_NODE, "mlc")


# --- command lines -----------------------------------------------------------------------------------


def batches(points: list[MemoryPoint], engine: str) -> list[list[MemoryPoint]]:
    runner = MemoryRunner.__new__(MemoryRunner)  # batch_key reads no engine state
    out: list[list[MemoryPoint]] = []
    last = object()
    for p in points:
        key = runner.batch_key(p)
        if out and key == last:
            out[-1].append(p)
        else:
            out.append([p])
        last = key
    return out


def argvs(points: list[MemoryPoint], engine: str) -> list[list[str]]:
    impl = MlcEngine("mlc") if engine == "mlc" else BuiltinEngine("memlat")
    return [inv.argv[1:] for batch in batches(points, engine) for inv in impl.invocations(batch)]


def test_builtin_measures_each_batch_in_one_process() -> None:
    points = plan("mem-mlc-default", TWO_NODES, "duration=0.5")
    assert argvs(points, "builtin") == [
        ["--latency_matrix", "-l", "64", "-t", "0.5"],
        ["--peak_injection_bandwidth", "-l", "64", "-t", "0.5"],
        ["--bandwidth_matrix", "-R", "-l", "64", "-t", "0.5"],
        ["--loaded_latency", "-D", ",".join(map(str, presets.MLC_DELAYS)), "-R", "-l", "64", "-t", "0.5"],
        ["--c2c_latency", "-l", "64", "-t", "0.5"],
    ]
    bw = plan("mem-bandwidth", TWO_NODES, "duration=0.2", "buffer=64m")
    assert argvs(bw, "builtin")[1] == ["--bandwidth_scaling", "-R", "--threads", "1,2", "-l", "64", "-b", "65536",
                                       "-t", "0.2"]
    ws = plan("mem-working-set", ONE_NODE, "buffer=4k,8k")
    assert argvs(ws, "builtin") == [["--working_set", "--sizes", "4,8", "-l", "64", "-t", "0.2"],
                                    ["--working_set", "--sizes", "4,8", "-l", "64", "-t", "0.2", "--no_huge_pages"]]
    one = plan("mem-bandwidth", TWO_NODES, "mode=peak", "traffic=W6")
    assert argvs(one, "builtin") == [["--peak_injection_bandwidth", "-W", "6", "-l", "64", "-t", "2"]]


def test_builtin_figures_name_the_points() -> None:
    points = plan("mem-c2c", TWO_NODES)
    (inv,) = BuiltinEngine("memlat").invocations(points)
    assert inv.figures == (("c2c", ("hit", None, None, None)), ("c2c", ("hitm", None, None, None)),
                           ("c2c", ("hitm", 0, 1, "writer")), ("c2c", ("hitm", 1, 0, "writer")),
                           ("c2c", ("hitm", 0, 1, "reader")), ("c2c", ("hitm", 1, 0, "reader")))


def test_mlc_command_lines(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(memory, "allowed_cpus", lambda: (0, 1, 2, 3))
    points = plan("mem-mlc-default", TWO_NODES, "duration=1.5")
    assert argvs(points, "mlc") == [
        ["--latency_matrix", "-l64"], ["--peak_injection_bandwidth", "-t2"], ["--bandwidth_matrix", "-t2"],
        ["--loaded_latency", "-R", "-l64", "-t2"], ["--c2c_latency"]]
    scaling = [p for p in plan("mem-bandwidth", ODD_NODES) if p.mode == "scaling"]
    assert argvs(scaling, "mlc") == [["--peak_injection_bandwidth", "-t2", f"-k{k}"]
                                     for k in ("0", "0-1", "0-2", "0-3")]
    ws = plan("mem-working-set", ONE_NODE, "buffer=4k,64m", "pages=2m")
    assert argvs(ws, "mlc") == [["--idle_latency", "-l64", "-b4"], ["--idle_latency", "-l64", "-b65536"]]


def test_free_memory_counts_each_modes_threads_and_nodes_must_exist() -> None:
    gib, available = 1 << 30, (3 << 30) - 1
    memory.check_memory([point(mode="scaling", traffic="R", threads=2, buffer=gib)], available=available)
    with pytest.raises(UsageError, match=r"3 thread\(s\) × 1 buffer\(s\) of 1 GiB"):
        memory.check_memory([point(mode="scaling", traffic="R", threads=3, buffer=gib)], available=available)
    with pytest.raises(UsageError, match=r"2 thread\(s\) × 3 buffer\(s\)"):  # a peak point loads every CPU
        memory.check_memory([point(mode="peak", traffic="W10", cpus="0-1", buffer=gib)], available=available)
    memory.check_memory([point(mode="working_set", buffer=2 * gib)], available=available)  # one chase thread
    with pytest.raises(UsageError, match="reader_node=3: this machine has no NUMA node 3"):
        memory.check_nodes([point(mode="c2c", cpu_node=0, reader_node=3)], [0, 1])


def test_mlc_huge_pages_for_suite_points_count_their_threads_and_buffers() -> None:
    """On AMD, MLC's batch reserves huge pages for its buffers: a peak point loads every CPU of its list (a
    triad-like mix: 3 buffers each), a scaling point its N threads, a working-set size one chase buffer."""
    page = 2 * MIB
    assert memory.mlc_buffer_pages(point(mode="peak", traffic="W10", cpus="0-1", buffer=64 * MIB), page) == 2 * 3 * 32
    assert memory.mlc_buffer_pages(point(mode="scaling", traffic="R", threads=1, buffer=64 * MIB), page) == 2 * 32
    assert memory.mlc_buffer_pages(point(mode="working_set", buffer=4 * KIB), page) == 1
