"""The NUMA layout run.json records (app.host.envinfo.numa_info), read from a fake sysfs root: the nodes' CPU lists
and MemTotal, hostile content bounded and refused, no nodes folder recorded as unknown; run.json's reader and
schema, the report's environment rows and the memory runner's check of ``mem_node`` against it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from app.core.errors import UsageError
from app.core.textable import markdown_table
from app.host import envinfo
from app.model import runmeta
from app.report.render import _numa_rows
from app.runners.memory import check_nodes, with_node_cpus
from tests.conftest import mem_point
from tests.helpers.schema_check import schema, validator

MEMINFO = "Node {n} MemTotal:         {kib} kB\nNode {n} MemFree:          1000 kB\nNode {n} MemUsed:  5 kB\n"


def fake_nodes(root: Path, nodes: dict[str, tuple[str | bytes, str | bytes]]) -> Path:
    """``root``/devices/system/node/NAME with cpulist and meminfo as given; the root."""
    base = root / "devices" / "system" / "node"
    base.mkdir(parents=True, exist_ok=True)
    (base / "online").write_text("0-1\n")
    for name, (cpulist, meminfo) in nodes.items():
        (base / name).mkdir()
        for file, text in (("cpulist", cpulist), ("meminfo", meminfo)):
            (base / name / file).write_bytes(text if isinstance(text, bytes) else text.encode())
    return root


def two_nodes(root: Path) -> Path:
    return fake_nodes(root, {"node0": ("0\n", MEMINFO.format(n=0, kib=393216)),
                             "node1": ("1\n", MEMINFO.format(n=1, kib=393216))})


def test_two_nodes_with_their_cpus_and_memory(tmp_path: Path) -> None:
    info = envinfo.numa_info(two_nodes(tmp_path))
    assert info == {"nodes": [{"node": 0, "cpus": "0", "memory_bytes": 384 << 20},
                              {"node": 1, "cpus": "1", "memory_bytes": 384 << 20}]}
    assert envinfo.node_ids(tmp_path) == [0, 1]
    assert not list(validator("run").iter_errors({**_minimal_run(), "environment": {"numa": info}}))


def test_no_nodes_folder_is_recorded_as_unknown_not_guessed(tmp_path: Path) -> None:
    info = envinfo.numa_info(tmp_path)
    assert info["nodes"] == [] and "devices/system/node is missing" in info["unknown"]
    assert envinfo.node_ids(tmp_path) is None
    (tmp_path / "devices" / "system" / "node").mkdir(parents=True)
    assert envinfo.numa_info(tmp_path)["unknown"].endswith("lists no node")


def test_hostile_sysfs_gives_none_for_what_does_not_parse(tmp_path: Path) -> None:
    base = fake_nodes(tmp_path, {
        "node0": ("0-3,8\n", MEMINFO.format(n=1, kib=5)),  # another node's MemTotal is not this node's
        "node1": ("0-3;rm -rf /\n", "Node 1 MemTotal: 99999999999999999999 kB\n"),
        "node2": ("1" * 20000, b"\xff\xfe\x00junk"),
        "node3": ("", MEMINFO.format(n=3, kib=1024)),  # a node without CPUs (memory only)
        "node01": ("0", ""), "nodeX": ("0", ""), "node99999": ("0", ""),  # not node names: skipped
    }) / "devices" / "system" / "node"
    (base / "node4").symlink_to(base / "node0")  # sysfs has no symlinked node folders: skipped
    (base / "node5").write_text("a file, not a folder")
    nodes = envinfo.numa_info(tmp_path)["nodes"]
    assert nodes == [{"node": 0, "cpus": "0-3,8", "memory_bytes": None},
                     {"node": 1, "cpus": None, "memory_bytes": None},
                     {"node": 2, "cpus": None, "memory_bytes": None},
                     {"node": 3, "cpus": "", "memory_bytes": 1 << 20}]


def test_at_most_1024_nodes_are_read(tmp_path: Path) -> None:
    base = tmp_path / "devices" / "system" / "node"
    base.mkdir(parents=True)
    for n in range(1030):
        (base / f"node{n}").mkdir()
    nodes = envinfo.numa_info(tmp_path)["nodes"]
    assert len(nodes) == 1024 and nodes[-1]["node"] == 1023 and nodes[0] == {"node": 0, "cpus": None,
                                                                             "memory_bytes": None}


@settings(max_examples=150, deadline=None)
@given(cpulist=st.binary(max_size=300), meminfo=st.binary(max_size=300))
def test_any_bytes_in_the_node_files_never_raise(tmp_path_factory: pytest.TempPathFactory, cpulist: bytes,
                                                 meminfo: bytes) -> None:
    root = fake_nodes(tmp_path_factory.mktemp("sys"), {"node7": (cpulist, meminfo)})
    (node,) = envinfo.numa_info(root)["nodes"]
    assert node["node"] == 7
    assert node["cpus"] is None or node["cpus"] == "" or node["cpus"][0].isdigit()
    assert node["memory_bytes"] is None or 0 <= node["memory_bytes"] < 1 << 70
    assert not list(validator("run").iter_errors({**_minimal_run(), "environment": {"numa": {"nodes": [node]}}}))


def test_this_machine_records_its_layout() -> None:
    env = envinfo.collect()
    numa = env["numa"]
    assert numa["nodes"] or numa["unknown"]
    assert not list(validator("run").iter_errors({**_minimal_run(), "environment": json.loads(json.dumps(env))}))


def _minimal_run() -> dict[str, object]:
    return {"schema_version": 1, "tool": "profiler-tui", "kind": "memory", "plan": [], "status": "complete"}


def test_run_json_reader_types_the_layout_and_refuses_a_wrong_one() -> None:
    doc = {**_minimal_run(), "environment": {"numa": {"nodes": [{"node": 1, "cpus": "1", "memory_bytes": 5}]}}}
    meta = runmeta.new(doc, "run.json")
    assert meta.environment is not None and meta.environment.numa == runmeta.Numa((runmeta.NumaNode(1, "1", 5),))
    older = runmeta.new({**_minimal_run(), "environment": {"cpu": {}}}, "run.json").environment
    assert older is not None and older.numa is None  # written before the layout was recorded
    bad = {**_minimal_run(), "environment": {"numa": {"nodes": [{"node": -1}]}}}
    with pytest.raises(runmeta.RunMetaError, match=r"key 'environment\.numa\.nodes\[0\]\.node' has invalid value -1"):
        runmeta.new(bad, "run.json")
    assert "numa" in schema("run")["properties"]["environment"]["properties"]


def test_the_report_prints_one_row_per_node_or_why_unknown() -> None:
    numa = runmeta.Numa((runmeta.NumaNode(0, "0", 384 << 20), runmeta.NumaNode(1, "", None),
                         runmeta.NumaNode(2, None, 1 << 30)))
    assert _numa_rows(numa) == [["NUMA node 0", "CPUs 0, memory 384 MiB"], ["NUMA node 1", "CPUs none, memory unknown"],
                                ["NUMA node 2", "CPUs unknown, memory 1 GiB"]]
    # the cells are text: the environment table (app.core.textable.markdown_table) escapes them as it writes them
    assert _numa_rows(runmeta.Numa((), "x | y")) == [["NUMA nodes", "unknown (x | y)"]]
    assert "unknown (x \\| y)" in markdown_table(["what", "value"], _numa_rows(runmeta.Numa((), "x | y")))
    assert _numa_rows(None) == []  # a run.json written before the layout was recorded


def test_mem_node_must_be_a_node_of_this_machine() -> None:
    check_nodes([mem_point(mem_node=1)], [0, 1])
    check_nodes([mem_point()], None)  # no mem_node: the layout is not needed
    with pytest.raises(UsageError, match=r"^mem_node=5: this machine has no NUMA node 5 \(its nodes: 0, 1\)\.$"):
        check_nodes([mem_point(mem_node=0), mem_point(mem_node=5)], [0, 1])
    with pytest.raises(UsageError, match=r"^mem_node=0: this machine reports no NUMA nodes"):
        check_nodes([mem_point(mem_node=0)], None)


def test_cpu_node_is_that_nodes_cpu_list_and_not_with_cpus() -> None:
    numa: envinfo.NumaInfo = {"nodes": [{"node": 0, "cpus": "0-3,8", "memory_bytes": 1},
                                        {"node": 1, "cpus": "", "memory_bytes": 1},
                                        {"node": 2, "cpus": None, "memory_bytes": 1}]}
    plain = mem_point(cpus="1")
    assert with_node_cpus([mem_point(cpu_node=0), plain], numa) == [mem_point(cpu_node=0, cpus="0-3,8"), plain]
    with pytest.raises(UsageError, match=r"^cpu_node=1: NUMA node 1 has no CPU this tool can run on \(its CPU list: "
                                         r"none\)\.$"):
        with_node_cpus([mem_point(cpu_node=1)], numa)
    with pytest.raises(UsageError, match=r"^cpu_node=2: NUMA node 2 has no CPU"):
        with_node_cpus([mem_point(cpu_node=2)], numa)
    with pytest.raises(UsageError, match=r"^cpu_node=0 and cpus=1 both choose the CPUs; set one of them\.$"):
        check_nodes([mem_point(cpu_node=0, cpus="1")], [0])
    with pytest.raises(UsageError, match=r"^cpu_node=3: this machine has no NUMA node 3 \(its nodes: 0\)\.$"):
        check_nodes([mem_point(cpu_node=3, mem_node=0)], [0])
