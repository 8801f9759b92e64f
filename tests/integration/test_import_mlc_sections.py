"""`profiler-tui import` of every section of MLC's text: a plain `mlc` run's five sections and each single-mode
output become one results line per figure with the number printed, unchanged; a section import cannot read
is named in the command's output and in run.json, never dropped without a word."""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path

import pytest

from app.store.results import ResultsDir
from tests.conftest import DATA, run_cli
from tests.helpers.schema_check import validate_dir

MLC = DATA / "mlc"
NO_CI = {"ci_method": {"method": "none", "reason": "Intel MLC prints one figure per row"}}  # no windows to batch
PLAIN = MLC / "v3.10-default-run-2socket-skylake.txt"
# a figure as MLC prints it: a number with a decimal point, alone between separators
FIGURE = re.compile(r"(?<![\w.:])\d+\.\d+(?![\w.])")
# lines whose decimals are no figure: banner (version), buffer size, clock counts
NOT_FIGURES = re.compile(r"^(Intel\(R\)|Using|Each iteration|Bandwidths are)")


def printed_figures(text: str) -> Counter[float]:
    """Every figure of an MLC text, found by a regex of its own (not the parser's)."""
    return Counter(float(n) for line in text.splitlines() if not NOT_FIGURES.match(line.strip())
                   for n in FIGURE.findall(line))


def imported(path: Path, out: Path) -> tuple[str, list[dict], dict]:
    proc = run_cli("import", str(path), "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    validate_dir(out)  # results lines and run.json as their schemas describe them
    return proc.stdout, ResultsDir(out).records(), json.loads((out / "run.json").read_text())


def metric_values(recs: list[dict]) -> Counter[float]:
    return Counter(v for r in recs for k, v in r["metrics"].items() if k in ("latency_ns", "bandwidth_mbps"))


def test_plain_mlc_run_imports_its_five_sections_number_for_number(tmp_path: Path) -> None:
    out, recs, meta = imported(PLAIN, tmp_path / "imp")
    assert ("v3.10-default-run-2socket-skylake.txt: mlc, 5 sections (idle latency matrix, peak injection bandwidth, "
            "bandwidth matrix, loaded latency, cache-to-cache), 38 point(s)") in out
    assert "warning" not in out
    assert metric_values(recs) == printed_figures(PLAIN.read_text())  # every number, unchanged, nothing else
    modes = Counter(r["point"]["mode"] for r in recs)
    assert modes == {"latency_matrix": 4, "peak": 5, "bandwidth_matrix": 4, "loaded": 19, "c2c": 6}
    by = {(r["point"]["mode"], r["point"].get("traffic"), r["point"].get("cpu_node"), r["point"].get("mem_node"),
           r["point"].get("c2c"), r["point"].get("reader_node"), r["point"].get("home")): r for r in recs}
    assert by[("latency_matrix", None, 1, 0, None, None, None)]["metrics"] == {"latency_ns": 143.2, **NO_CI}
    assert by[("bandwidth_matrix", "R", 0, 1, None, None, None)]["metrics"] == {"bandwidth_mbps": 34290.6, **NO_CI}
    assert by[("peak", "W10", None, None, None, None, None)]["metrics"] == {"bandwidth_mbps": 172770.4, **NO_CI}
    assert by[("c2c", None, None, None, "hit", None, None)]["metrics"] == {"latency_ns": 50.5, **NO_CI}
    assert by[("c2c", None, 1, None, "hitm", 0, "reader")]["metrics"] == {"latency_ns": 123.2, **NO_CI}
    assert by[("c2c", None, 1, None, "hitm", 0, "writer")]["metrics"] == {"latency_ns": 114.6, **NO_CI}
    assert {r["engine_version"] for r in recs} == {"3.10"} and {r["point"]["engine"] for r in recs} == {"mlc"}
    (src,) = meta["sources"]
    assert src["sections"] == ["idle latency matrix", "peak injection bandwidth", "bandwidth matrix",
                               "loaded latency", "cache-to-cache"] and src["points"] == 38
    assert "warnings" not in src


@pytest.mark.parametrize("name, summary", [
    ("v3.7-peak-injection-bandwidth.txt", "1 section (peak injection bandwidth), 5 point(s)"),
    ("v3.7-idle-latency.txt", "1 section (idle latency), 1 point(s)"),
    ("v3.10-loaded-latency.txt", "1 section (loaded latency), 19 point(s)"),
])
def test_single_mode_outputs(name: str, summary: str, tmp_path: Path) -> None:
    out, recs, _ = imported(MLC / name, tmp_path / "imp")
    assert f"{name}: mlc, {summary}" in out
    text = (MLC / name).read_text()
    if "Each iteration" in text:
        assert metric_values(recs) == {80.9: 1}  # the ns of "186.1 core clocks ( 80.9 ns)"
    else:
        assert metric_values(recs) == printed_figures(text)


def test_a_mangled_file_names_each_section_it_could_not_read(tmp_path: Path) -> None:
    text = PLAIN.read_text()
    text = text.replace("       1\t34283.3\t106028.4\t\n", "       1\t34283.3\t\n")  # a matrix row cut
    text = text.replace("ALL Reads        :", "ALL Writes       :")  # a label no traffic has
    text = text.replace("Measuring Loaded Latencies", "Measuring Frobnication")  # a title import does not know
    text = text.replace("Remote Socket L2->L2 HITM latency (data address homed in writer socket)\n", "")
    text = text[:text.rindex("123.2") + 2]  # the file ends mid-number
    bad = tmp_path / "mangled.txt"
    bad.write_text(text)
    out, recs, meta = imported(bad, tmp_path / "imp")
    warnings = meta["sources"][0]["warnings"]
    assert all(f"  warning: {w}" in out for w in warnings)
    joined = "\n".join(warnings)
    assert "peak injection bandwidth section printed 5 figure(s), only 4" in joined and "'ALL Writes'" in joined
    assert "bandwidth matrix section looks incomplete (row 1 has 1 of 2 cells" in joined
    assert "section 'Measuring Frobnication for the system': not a section import knows" in joined
    assert "cache-to-cache section printed" in joined and "homed" in joined
    assert "last line of the cache-to-cache section has no line end" in joined
    assert "4 sections (idle latency matrix, peak injection bandwidth, bandwidth matrix, cache-to-cache)" in out
    assert 12.0 not in metric_values(recs)  # "12" of the cut "123.2" is no figure
    # c2c: the local pair and the reader-homed row 0; the writer-homed matrix lost its title, its last row is cut
    assert len(recs) == 4 + 4 + 3 + 3


def test_a_section_without_figures_is_refused_when_nothing_else_is_there(tmp_path: Path) -> None:
    bad = tmp_path / "empty.txt"
    bad.write_text("Intel(R) Memory Latency Checker - v3.10\n"
                   "Measuring Peak Injection Memory Bandwidths for the system\n")
    proc = run_cli("import", str(bad), "--out", str(tmp_path / "imp"))
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert str(bad) in proc.stderr and "sections found: peak injection bandwidth" in proc.stderr
