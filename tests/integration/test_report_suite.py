"""`profiler-tui report` of a run holding the memory suite's lines beside loaded-latency lines: every section
and figure written, placed in its section, and the same bytes when rendered twice."""

from __future__ import annotations

import csv as csv_module
import re
from pathlib import Path

from app.report.write import render_report
from app.stats.frame import CI_COLUMNS, CPU_COLUMNS, TAIL_COLUMNS, WHOLE_RUN_COLUMNS
from tests.conftest import DATA, run_cli
from tests.helpers.suite_runs import KIB, line, mlc_default_lines, octave_sizes, point, working_set_lines, write_run


def test_report_of_a_suite_run_has_every_section_and_figure_and_is_reproducible(tmp_path: Path) -> None:
    lines = mlc_default_lines()
    n = len(lines)
    lines += [line(n + i, point("loaded", "mlc", traffic="R", delay=d), {"latency_ns": ns, "bandwidth_mbps": bw})
              for i, (d, ns, bw) in enumerate([(0, 166.18, 210643.1), (2, 177.85, 208001.7), (20000, 91.66, 2027.6)])]
    sizes = octave_sizes(4 * KIB, 64 << 20, 2)
    lines += working_set_lines(len(lines), sizes, "4k")
    run = write_run(tmp_path / "run", lines)
    proc = run_cli("report", str(run))
    assert proc.returncode == 0, proc.stderr
    md = (run / "report.md").read_text(encoding="utf-8")
    order = ["## Memory results", "### Idle latency matrix (ns)", "### Peak injection memory bandwidth (MB/sec)",
             "### Memory bandwidth matrix (MB/sec)", "### R (all reads), stride 64 B",
             "**Figure: Memory latency vs bandwidth.**", "### Cache-to-cache transfer latency (ns)",
             "### Latency against working-set size", "## Analysis"]  # plain mlc's order, working set last
    assert [md.index(h) for h in order] == sorted(md.index(h) for h in order)
    assert re.search(r"\| 00000 +\| 166\.18 +\| 210643\.1 +\|", md)  # the loaded table as before (its Inject unit)
    figures = sorted(p.name for p in (run / "plots").glob("memory-suite-*.svg"))
    assert figures == ["memory-suite-bandwidth-matrix.svg", "memory-suite-latency-matrix.svg",
                       "memory-suite-peak.svg", "memory-suite-working-set.svg"]
    for name in figures:
        assert md.count(f"(plots/{name})") == 1
    assert md.index("(plots/memory-suite-peak.svg)") < md.index("### Memory bandwidth matrix")
    csv = (run / "results.csv").read_text(encoding="utf-8")
    assert csv.count("\n") == len(lines) + 1 and "working_set" in csv
    rows = list(csv_module.DictReader(csv.splitlines()))
    # the suite's keys after the older columns, then the intervals' (app.stats.frame.CI_COLUMNS), then the tails', the
    # CPU's and the whole-run figures'
    cols = list(rows[0])
    suite_keys = ["cpu_node", "mem_node", "threads", "pages", "c2c", "reader_node", "home"]
    at = cols.index("cpu_node")
    assert cols[at:at + len(suite_keys)] == suite_keys
    assert cols[at + len(suite_keys):] == (list(CI_COLUMNS) + list(TAIL_COLUMNS) + list(CPU_COLUMNS)
                                           + list(WHOLE_RUN_COLUMNS))
    cells = {(r["mode"], r["cpu_node"], r["mem_node"]) for r in rows if r["mode"] == "latency_matrix"}
    assert cells == {("latency_matrix", a, b) for a in "01" for b in "01"}  # each matrix row names its cell
    assert {(r["c2c"], r["reader_node"], r["home"]) for r in rows if r["mode"] == "c2c" and r["reader_node"]} == {
        ("hitm", r, h) for r in "01" for h in ("writer", "reader")}
    assert {r["pages"] for r in rows if r["mode"] == "working_set"} == {"4k"}
    first = {p.name: p.read_bytes() for p in (run / "plots").iterdir()}
    render_report(run)
    assert (run / "report.md").read_text(encoding="utf-8") == md
    assert {p.name: p.read_bytes() for p in (run / "plots").iterdir()} == first


def test_import_of_mlcs_default_run_puts_every_number_in_the_reports_tables(tmp_path: Path) -> None:
    src = DATA / "mlc" / "v3.10-default-run-2socket-skylake.txt"
    proc = run_cli("import", str(src), "--out", str(tmp_path / "imp"))
    assert proc.returncode == 0, proc.stderr
    assert "5 sections" in proc.stdout + proc.stderr
    proc = run_cli("report", str(tmp_path / "imp"))
    assert proc.returncode == 0, proc.stderr
    md = (tmp_path / "imp" / "report.md").read_text(encoding="utf-8")
    text = src.read_text(encoding="utf-8")
    numbers = re.findall(r"(?<![\w.])\d+\.\d+(?![\w.])", text) + re.findall(r"^ (\d{5})\t", text, re.M)
    assert len(numbers) == 4 + 5 + 4 + 19 * 3 + 2 + 4
    cells = set(re.findall(r"\|\s*([^|\n]*?)\s*(?=\|)", md))
    assert [n for n in numbers if n not in cells] == []  # each one a table cell, as MLC printed it
    for label in ("ALL Reads", "3:1 Reads-Writes", "2:1 Reads-Writes", "1:1 Reads-Writes", "Stream-triad like",
                  "Local Socket L2->L2 HIT  latency", "Local Socket L2->L2 HITM latency"):
        assert label in cells
    assert "Remote Socket L2->L2 HITM latency (data address homed in reader socket):" in md
