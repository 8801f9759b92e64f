"""The memory suite's figures in words (app.stats.summary): what the CLI's and the TUI's results lines and the run
log say of each figure."""

from __future__ import annotations

from app.model.records import read_line
from app.stats.summary import figure_line, live_line, metrics_line, point_label, results_table


def test_figure_lines_name_mode_keys_and_unit() -> None:
    point = {"mode": "latency_matrix", "cpu_node": 0, "mem_node": 1}
    assert figure_line(point, {"latency_ns": 144.31}) == "latency_matrix cpu 0 → mem 1: 144.3 ns"
    assert figure_line({"mode": "peak", "traffic": "R"}, {"bandwidth_mbps": 211194.2}) == \
        "peak ALL Reads: 211194.2 MB/s"
    assert figure_line({"mode": "working_set", "buffer": 65536}, {"latency_ns": 1.25}) == \
        "working_set 64 KiB (2m pages): 1.25 ns"  # below 10 ns two decimals: L1 figures differ there
    assert figure_line({"mode": "bandwidth_matrix", "traffic": "R", "cpu_node": 1, "mem_node": 0},
                       {"bandwidth_mbps": 34290.6}) == "bandwidth_matrix R cpu 1 → mem 0: 34290.6 MB/s"
    assert figure_line({"mode": "scaling", "traffic": "W5", "threads": 4}, {"bandwidth_mbps": 9.0}) == \
        "scaling W5 4 threads: 9.0 MB/s"
    assert figure_line({"mode": "c2c", "c2c": "hit", "cpus": "0,1"}, {"latency_ns": 50.5}) == \
        "c2c HIT local (CPUs 0,1): 50.5 ns"
    assert figure_line({"mode": "c2c", "c2c": "hitm", "cpu_node": 1, "reader_node": 0, "home": "reader"},
                       {"latency_ns": 123.2}) == "c2c HITM writer 1 → reader 0, line homed at the reader: 123.2 ns"
    # a live sample names its buffer buffer_bytes; every peak traffic by MLC's label, another code as itself
    assert figure_line({"mode": "working_set", "buffer_bytes": 65536, "pages": "4k"}, {"latency_ns": 1.3}) == \
        "working_set 64 KiB (4k pages): 1.30 ns"
    assert [figure_line({"mode": "peak", "traffic": t}, {"bandwidth_mbps": 1.0}).rsplit(": ", 1)[0]
            for t in ("W3", "W2", "W5", "W10", "W7")] == ["peak 3:1", "peak 2:1", "peak 1:1", "peak Triad", "peak W7"]


def test_untrusted_figures_read_question_marks() -> None:
    assert figure_line({"mode": "latency_matrix", "cpu_node": "x", "mem_node": True}, {}) == \
        "latency_matrix cpu ? → mem ?: ?"
    assert figure_line({"mode": "working_set", "buffer": -4}, {"latency_ns": "1"}) == "working_set ? (2m pages): ?"


def test_bandwidth_figures_claim_no_latency() -> None:
    """A peak figure has no latency: the run log and progress line say its bandwidth only, not "latency 0.0"."""
    assert metrics_line("memory", {"bandwidth_mbps": 211194.2}) == "bandwidth 211194.2 MB/s"
    assert live_line("memory", {"mode": "peak", "bandwidth_mbps": 1.5}) == "bandwidth 1.5 MB/s"
    assert metrics_line("memory", {"latency_ns": 90.0, "bandwidth_mbps": 10.0}) == \
        "latency 90.0 ns, bandwidth 10.0 MB/s"  # a loaded point: as before
    assert point_label("memory", {"mode": "peak", "traffic": "W10"}) == "peak Triad"
    assert point_label("memory", {"mode": "loaded", "traffic": "R", "stride": 64, "delay": 0}) == \
        "R stride 64 delay 0"


def test_results_table_lists_suite_figures() -> None:
    def line(i: int, point: dict, metrics: dict):
        return read_line({"kind": "memory", "index": i, "point": {"stride": 64, "duration": 1, **point},
                          "metrics": metrics})

    lines = [line(0, {"mode": "latency_matrix", "cpu_node": 0, "mem_node": 1}, {"latency_ns": 144.3}),
             line(1, {"mode": "peak", "traffic": "R"}, {"bandwidth_mbps": 211194.2}),
             line(2, {"mode": "loaded", "traffic": "R", "delay": 0}, {"latency_ns": 180.0, "bandwidth_mbps": 9e4})]
    table = results_table(lines).splitlines()
    assert table[0].split() == ["mode", "figure", "latency", "ns", "bandwidth", "MB/s"]
    assert [row.split()[:2] for row in table[-3:]] == [["latency_matrix", "cpu"], ["peak", "ALL"], ["loaded", "R"]]
    assert "144.30" in table[-3] and table[-2].rstrip().endswith("211194.2")
    # a run without the suite's modes keeps its table
    assert results_table(lines[2:]).splitlines()[0].split()[:3] == ["traffic", "stride", "inject"]
