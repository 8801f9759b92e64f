"""The parser's streamed figures (``LineParser.figures``): MLC's matrix, peak-bandwidth and c2c sections and the
built-in engine's peak, scaling, matrix, c2c and working-set sections, each figure as its line completes, with
the number printed, its key, and what the engine said about it (placement, caches, CPUs, read/write split)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from app.runners.mlc_parse import LineParser, parse, peak_traffic
from tests.helpers.typed import as_dict, as_list

DATA = Path(__file__).resolve().parents[1] / "data" / "mlc"
BANNER = ("Intel(R) Memory Latency Checker - compatible output: profiler-tui memlat v0.4\n"
          "Command line parameters: {}\n\n")

PEAK = BANNER.format("--max_bandwidth -t 0.1") + """\
Measuring Maximum Memory Bandwidths for the system
Bandwidths are in MB/sec (1 MB/sec = 1,000,000 Bytes/sec)
Using all the threads from each core if Hyper-threading is enabled
Using traffic with the following read-write ratios
Traffic R: reads 21194.2 MB/sec, writes 0.0 MB/sec
ALL Reads        :\t21194.2\t
Traffic W3: reads 15000.5 MB/sec, writes 4422.0 MB/sec
3:1 Reads-Writes :\t19422.5\t
2:1 Reads-Writes :\t19255.0\t
1:1 Reads-Writes :\t18555.1\t
Stream-triad like:\t17277.4\t
W7 traffic       :\t1000.5\t
"""
SCALING = BANNER.format("--bandwidth_scaling -W5 --threads 1,2") + """\
Measuring Memory Bandwidth against the number of load threads
Bandwidths are in MB/sec (1 MB/sec = 1,000,000 Bytes/sec)
Using 1:1 read-write ratio traffic type
Using load threads on CPU(s) 1,0 in this order (N threads use the first N)
Threads\tBandwidth
\tMB/sec
==========================
Traffic W5: reads 14000.0 MB/sec, writes 14123.4 MB/sec
 1\t  28123.4
 2\t  32001.9
"""
MATRIX = BANNER.format("--latency_matrix") + """\
Measuring idle latencies for random access (in ns)...
\t\tNuma node
Numa node\t     0\t     1\t
Placement verified: CPU node 0, memory node 0: pages N0=32768 (4096-byte pages; /proc/self/numa_maps)
Placement verified: CPU node 0, memory node 1: pages N1=32768 (4096-byte pages; /proc/self/numa_maps)
       0\t  90.2\t 144.3\t
Placement verified: CPU node 1, memory node 0: pages N0=32000 N1=768 (4096-byte pages; /proc/self/numa_maps)
       1\t 143.2\t     -\t
"""
WORKING_SET = BANNER.format("--working_set --sizes 4,48") + """\
Measuring idle latency against buffer size (working set)
Using latency thread on CPU 0, stride 64 bytes, random chase within each buffer
Using huge pages: no (--no_huge_pages: 4 KiB pages)
Cache L1d: 32 KiB (level 1, Data, shared by CPU(s) 0)
Cache L3: 32768 KiB (level 3, Unified, shared by CPU(s) 0-1)
Buffer\tLatency
(KiB)\t(ns)
==========================
 4\t    1.25
 48\t    3.50
"""
C2C_ONE_NODE = BANNER.format("--c2c_latency -k0,1") + """\
Measuring cache-to-cache transfer latency (in ns)...
Using writer thread on CPU 0 and reader thread on CPU 1
Local Socket L2->L2 HIT  latency\t50.5
Local Socket L2->L2 HITM latency\t49.9
*** One NUMA node: no remote cache-to-cache figures
"""


def figures(text: str) -> list[tuple[str, tuple[object, ...], float, str]]:
    return [(f.kind, f.key, f.value, f.unit) for f in parse(text).figures]


def test_plain_mlc_run_gives_every_matrix_peak_and_c2c_figure() -> None:
    p = parse((DATA / "v3.10-default-run-2socket-skylake.txt").read_text())
    got = [(f.kind, f.key, f.value) for f in p.figures]
    assert got == [
        ("idle_matrix", (0, 0), 90.2), ("idle_matrix", (0, 1), 144.3), ("idle_matrix", (1, 0), 143.2),
        ("idle_matrix", (1, 1), 89.1),
        ("peak_bandwidth", ("R",), 211194.2), ("peak_bandwidth", ("W3",), 193422.0),
        ("peak_bandwidth", ("W2",), 192554.0), ("peak_bandwidth", ("W5",), 185556.1),
        ("peak_bandwidth", ("W10",), 172770.4),
        ("bandwidth_matrix", (0, 0), 104362.2), ("bandwidth_matrix", (0, 1), 34290.6),
        ("bandwidth_matrix", (1, 0), 34283.3), ("bandwidth_matrix", (1, 1), 106028.4),
        ("c2c", ("hit", None, None, None), 50.5), ("c2c", ("hitm", None, None, None), 49.9),
        ("c2c", ("hitm", 0, 1, "writer"), 114.0), ("c2c", ("hitm", 1, 0, "writer"), 114.6),
        ("c2c", ("hitm", 0, 1, "reader"), 114.0), ("c2c", ("hitm", 1, 0, "reader"), 123.2),
    ]
    assert {f.unit for f in p.figures if f.kind in ("idle_matrix", "c2c")} == {"ns"}
    assert all(f.section is p.sections[2] for f in p.figures if f.kind == "bandwidth_matrix")
    assert p.sections[2].params["traffic"] == "R"
    assert len(p.sections[3].rows) == 19 and not p.warnings  # loaded rows keep their own path


def test_engine_peak_bandwidth_title_labels_and_split() -> None:
    p = parse(PEAK)
    assert [(f.kind, f.key, f.value) for f in p.figures] == [
        ("peak_bandwidth", ("R",), 21194.2), ("peak_bandwidth", ("W3",), 19422.5), ("peak_bandwidth", ("W2",), 19255.0),
        ("peak_bandwidth", ("W5",), 18555.1), ("peak_bandwidth", ("W10",), 17277.4),
        ("peak_bandwidth", ("W7",), 1000.5)]
    assert p.figures[1].extra == {"read_mbps": 15000.5, "write_mbps": 4422.0}
    assert p.figures[2].extra == {}  # no split line before it
    assert as_dict(p.sections[0].values["split"])["W3"] == {"read_mbps": 15000.5, "write_mbps": 4422.0}


@pytest.mark.parametrize("label, code", [("ALL Reads", "R"), ("3:1  reads-writes", "W3"), ("Stream-triad like", "W10"),
                                         ("W12 traffic", "W12"), ("1:1 Reads-Writes", "W5"), ("4:1 Reads", None),
                                         ("W123 traffic", None)])
def test_peak_labels_map_to_traffic_codes(label: str, code: str | None) -> None:
    assert peak_traffic(label) == code


def test_scaling_table_is_two_columns_never_loaded_rows() -> None:
    p = parse(SCALING)
    assert [s.kind for s in p.sections] == ["scaling"]
    assert not p.sections[0].rows
    assert figures(SCALING) == [("scaling", (1,), 28123.4, "MB/s"), ("scaling", (2,), 32001.9, "MB/s")]
    assert p.sections[0].params["load_cpus"] == [1, 0] and p.sections[0].params["traffic"] == "W5"
    assert p.figures[0].extra == {"read_mbps": 14000.0, "write_mbps": 14123.4}


def test_matrix_placement_lines_and_dash_cells() -> None:
    p = parse(MATRIX)
    assert figures(MATRIX) == [("idle_matrix", (0, 0), 90.2, "ns"), ("idle_matrix", (0, 1), 144.3, "ns"),
                               ("idle_matrix", (1, 0), 143.2, "ns")]  # "-": no figure
    placement = as_dict(p.sections[0].values["placement"])
    assert placement["0,1"] == {"node": 1, "pages": {"1": 32768}, "page_bytes": 4096, "verified_with": "numa_maps"}
    assert placement["1,0"]["pages"] == {"0": 32000, "1": 768}


def test_working_set_buffer_in_bytes_caches_and_pages() -> None:
    p = parse(WORKING_SET)
    assert figures(WORKING_SET) == [("working_set", (4096,), 1.25, "ns"), ("working_set", (48 * 1024,), 3.5, "ns")]
    sec = p.sections[0]
    assert sec.params["caches"] == [
        {"name": "L1d", "level": 1, "type": "Data", "size_bytes": 32768, "shared_cpus": "0"},
        {"name": "L3", "level": 3, "type": "Unified", "size_bytes": 32 << 20, "shared_cpus": "0-1"}]
    assert sec.params["huge_pages"] is False


def test_c2c_on_one_node_local_figures_cpus_and_warning() -> None:
    p = parse(C2C_ONE_NODE)
    assert figures(C2C_ONE_NODE) == [("c2c", ("hit", None, None, None), 50.5, "ns"),
                                     ("c2c", ("hitm", None, None, None), 49.9, "ns")]
    assert p.sections[0].params["c2c_cpus"] == [0, 1]
    assert "One NUMA node: no remote cache-to-cache figures" in as_list(p.sections[0].params["warnings"])


def test_a_remote_matrix_without_its_home_title_gives_no_figure() -> None:
    text = (DATA / "v3.10-default-run-2socket-skylake.txt").read_text()
    text = text.replace("Remote Socket L2->L2 HITM latency (data address homed in writer socket)\n", "")
    keys = [f.key for f in parse(text).figures if f.kind == "c2c"]
    assert keys == [("hit", None, None, None), ("hitm", None, None, None), ("hitm", 0, 1, "reader"),
                    ("hitm", 1, 0, "reader")]


def test_figures_stream_as_each_line_completes() -> None:
    p = LineParser()
    counts = []
    for line in (MATRIX + SCALING + WORKING_SET).splitlines(keepends=True):
        for piece in (line[:3], line[3:]):
            p.feed(piece)
            counts.append(len(p.figures))
    p.close()
    # a figure appears with the line end of its row, never from half a line
    assert counts[-1] == len(p.figures) == 7
    assert all(b - a in (0, 1, 2) for a, b in zip(counts, counts[1:]))
    assert all(counts[i] == counts[i - 1] for i in range(2, len(counts), 2))  # nothing from a line's first half


@pytest.mark.parametrize("text, cut, left, kept", [
    (SCALING, " 2\t  32001.9\n", " 2\t  320", 1),
    (MATRIX, "       1\t 143.2\t     -\t\n", "       1\t 14", 2),
    (MATRIX, "       1\t 143.2\t     -\t\n", "       1\t 143.2\t 1", 2),
    (PEAK, "W7 traffic       :\t1000.5\t\n", "W7 traffic       :\t10", 5),
    (WORKING_SET, " 48\t    3.50\n", " 48\t    3.5", 1),
])
def test_a_last_line_cut_mid_number_gives_no_figure_and_a_warning(text: str, cut: str, left: str, kept: int) -> None:
    whole = parse(text)
    p = parse(text.replace(cut, left))
    assert [f.value for f in p.figures] == [f.value for f in whole.figures][:kept]
    assert any("cut mid-number" in w and "section" in w for w in p.warnings), p.warnings


def test_a_complete_last_line_without_line_end_is_read() -> None:
    assert len(parse(SCALING.rstrip("\n")).figures) == 2
    assert len(parse(MATRIX.rstrip("\n")).figures) == 3


def test_an_unsteady_c2c_figure_keeps_the_engines_warning() -> None:
    note = ("Unsteady c2c figure (HITM): its 5 windows ranged from 30.1 to 125.2 ns; the cores behind CPUs 0 and 1 "
            "may have changed during the run (a hypervisor moving vCPUs)")
    text = C2C_ONE_NODE.replace("Local Socket L2->L2 HITM", f"*** {note}\nLocal Socket L2->L2 HITM")
    hit, hitm = parse(text).figures
    assert (hit.warnings, hitm.warnings) == ((), (note,))
    from app.engine.importer import mlc_points

    points, _ = mlc_points(text)
    hit_line, hitm_line = (as_list(pt.extra.get("warnings", [])) for pt in points)
    assert note in hitm_line and note not in hit_line


def test_star_lines_go_with_the_figure_they_precede() -> None:
    text = SCALING.replace(" 2\t", "*** Busy machine at 2 threads: a thread got 26% of a CPU in its window\n 2\t")
    f1, f2 = parse(text).figures
    assert f1.warnings == () and f2.warnings == ("Busy machine at 2 threads: a thread got 26% of a CPU in its window",)


# --- import of the engine's single-mode outputs (app.engine.importer.mlc_points) ---------------------------------


def test_engine_outputs_import_with_their_keys_and_parts() -> None:
    from app.engine.importer import mlc_points

    points, info = mlc_points(PEAK + SCALING + MATRIX + WORKING_SET + C2C_ONE_NODE)
    assert not info["warnings"] and info["sections"] == [
        "peak injection bandwidth", "bandwidth scaling", "idle latency matrix", "working set", "cache-to-cache"]
    by_mode: dict[str, list[tuple[dict, dict, dict]]] = {}
    for pt in points:
        assert pt.point["engine"] == "builtin"
        # text without the engine's sub-window lines: every figure says why it has no interval
        assert pt.metrics["ci_method"]["method"] == "none"  # type: ignore[index]
        metrics = {k: v for k, v in pt.metrics.items() if k != "ci_method"}
        by_mode.setdefault(str(pt.point["mode"]), []).append((pt.point, metrics, pt.extra))
    peak = by_mode["peak"]
    assert [(p["traffic"], m["bandwidth_mbps"]) for p, m, _ in peak] == [
        ("R", 21194.2), ("W3", 19422.5), ("W2", 19255.0), ("W5", 18555.1), ("W10", 17277.4), ("W7", 1000.5)]
    assert peak[1][1] == {"bandwidth_mbps": 19422.5, "read_mbps": 15000.5, "write_mbps": 4422.0}
    assert [(p["threads"], p["traffic"], m) for p, m, _ in by_mode["scaling"]] == [
        (1, "W5", {"bandwidth_mbps": 28123.4, "read_mbps": 14000.0, "write_mbps": 14123.4}),
        (2, "W5", {"bandwidth_mbps": 32001.9})]
    matrix = by_mode["latency_matrix"]
    assert [(p["cpu_node"], p["mem_node"], m["latency_ns"]) for p, m, _ in matrix] == [
        (0, 0, 90.2), (0, 1, 144.3), (1, 0, 143.2)]
    assert matrix[2][2]["numa"] == {"node": 0, "pages": {"0": 32000, "1": 768}, "page_bytes": 4096,
                                    "verified_with": "numa_maps"}
    ws = by_mode["working_set"]
    assert [(p["buffer"], p["pages"], m["latency_ns"]) for p, m, _ in ws] == [(4096, "4k", 1.25), (49152, "4k", 3.5)]
    assert [c["name"] for c in ws[0][2]["caches"]] == ["L1d", "L3"] and ws[0][2]["huge_pages"] is False
    assert [(p["c2c"], p.get("cpu_node"), m["latency_ns"], x["c2c_cpus"]) for p, m, x in by_mode["c2c"]] == [
        ("hit", None, 50.5, [0, 1]), ("hitm", None, 49.9, [0, 1])]
    assert by_mode["c2c"][0][2]["warnings"] == ["One NUMA node: no remote cache-to-cache figures"]


C2C_TWO_NODES = BANNER.format("--c2c_latency") + """\
Measuring cache-to-cache transfer latency (in ns)...
Using writer thread on CPU 0 and reader thread on CPU 1
Local Socket L2->L2 HIT  latency\t50.5
Local Socket L2->L2 HITM latency\t49.9
Remote Socket L2->L2 HITM latency (data address homed in reader socket)
\t\t\tReader Numa Node
Writer Numa Node     0\t     1\t
Placement verified: writer node 0, reader node 1, memory node 1: pages N1=1 (4096-byte pages; /proc/self/numa_maps)
            0\t     -\t 114.0\t
Placement verified: writer node 1, reader node 0, memory node 0: pages N0=1 (4096-byte pages; /proc/self/numa_maps)
            1\t 123.2\t     -\t
"""


def test_remote_c2c_cells_and_their_placement() -> None:
    from app.engine.importer import mlc_points

    p = parse(C2C_TWO_NODES)
    assert [f.key for f in p.figures][2:] == [("hitm", 0, 1, "reader"), ("hitm", 1, 0, "reader")]
    assert set(as_dict(p.sections[0].values["placement"])) == {"0,1,reader", "1,0,reader"}
    points, info = mlc_points(C2C_TWO_NODES)
    remote = [(pt.point["cpu_node"], pt.point["reader_node"], pt.point["home"], as_dict(pt.extra["numa"])["node"],
               "c2c_cpus" in pt.extra) for pt in points if "reader_node" in pt.point]
    assert remote == [(0, 1, "reader", 1, False), (1, 0, "reader", 0, False)] and not info["warnings"]


def test_a_large_matrix_with_star_lines_imports_in_linear_time() -> None:
    """90 x 250 cells, a '*' line before each row: each figure's warnings are found without comparing it with
    every other figure (that took minutes)."""
    from app.engine.importer import mlc_points

    n, m = 90, 250
    rows = "".join(f"*** Busy machine at CPU node {r}\n{r}" + "".join(f"\t{r + c}.5" for c in range(m)) + "\n"
                   for r in range(n))
    text = "Measuring idle latencies for random access (in ns)...\nNuma node" + "".join(
        f"\t{c}" for c in range(m)) + "\n" + rows
    started = time.monotonic()
    points, info = mlc_points(text)
    assert time.monotonic() - started < 30  # loose: about 1 s on a busy 2-core machine
    assert len(points) == n * m and not info["warnings"]
    assert points[m + 1].extra["warnings"] == ["Busy machine at CPU node 1"]
