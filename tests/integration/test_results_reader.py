"""The results reader, report and compare on a results directory that is untrusted input: wrong
types in run.json (exit 2 naming file, key, value), garbage and repeated lines in results.jsonl
(left out and counted; the last line of a plan index wins), a dead run's status, --out that cannot
be written, --p99-bound-us nan."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from app.model import runmeta
from app.model.points import Kind
from app.model.records import JSONObject, ResultLine, StorageMetrics, line_json
from app.report import render_report
from app.report.data.model import load
from app.store import results as results_mod
from app.store.lock import DirLock
from app.store.results import ResultsDir
from tests.conftest import DATA
from tests.helpers.readers_util import assert_one_sentence, cli, read_only_mount

GOLDEN_RUN = DATA / "report" / "golden-run"


@pytest.fixture()
def run_dir(tmp_path: Path) -> Path:
    d = tmp_path / "run"
    shutil.copytree(GOLDEN_RUN, d)
    return d


def _lines(d: Path) -> list[str]:
    return (d / "results.jsonl").read_text().splitlines()


def _set_meta(d: Path, **changes: object) -> None:
    meta = json.loads((d / "run.json").read_text())
    meta.update(changes)
    (d / "run.json").write_text(json.dumps(meta))


def _run_row(md: str, name: str) -> str:
    return next(ln for ln in md.splitlines() if ln.startswith(f"| {name} "))


# --- results.jsonl ----------------------------------------------------------------------------------------


def test_a_repeated_line_replaces_the_earlier_one(run_dir: Path) -> None:
    lines = _lines(run_dir)
    total = json.loads((run_dir / "run.json").read_text())["points_total"]
    again = json.loads(lines[0])
    again["metrics"]["iops"] = 12345.0
    with open(run_dir / "results.jsonl", "a") as f:
        f.write(json.dumps(again) + "\n")
    read = ResultsDir(run_dir).read_records()
    assert len(read.lines) == len(lines) and read.replaced == 1 and read.unreadable == 0
    assert [line_json(r) for r in read.lines if r.index == 0] == [again]  # the last line wins
    md = render_report(run_dir).read_text()
    assert f"{len(lines)} measured of {total} planned" in _run_row(md, "Points")
    assert "- 1 point was measured more than once; the last measurement is used." in md
    assert "12.3k" in md  # the later measurement is the one reported


GARBAGE = [
    "this is not json",
    "[1, 2, 3]",
    '{"kind": "storage"}',
    '{"kind": "disk", "point": {}, "metrics": {}}',
    '{"kind": "storage", "point": {"rw": "read", "bs": "abc"}, "metrics": {}}',
    '{"kind": "storage", "index": 3, "point": {"rw": "read", "bs": 4096}, "metrics": {"iops": "abc"}}',
    '{"kind": "storage", "index": true, "point": {"rw": "read", "bs": 4096}, "metrics": {}}',
    '{"kind": "memory", "point": {"stride": "x"}, "metrics": {}}',
    '{"kind": "memory", "point": {}, "metrics": {"latency_ns": NaN}}',
    '{"kind": "storage", "point": {"rw": "read", "bs": 4096}, "metrics": {"lat_ns": {"p99": [1]}}}',
    '{"kind": "storage", "point": {"rw": "read", "bs": 4096}, "metrics": {"iops": -5}}',
    '{"kind": "storage", "point": {"rw": "read", "bs": 4096}, "metrics": {"iops": 1e400}}',
    '{"torn": "line", "kind": "sto',
]


def test_garbage_lines_are_left_out_and_the_report_says_how_many(run_dir: Path) -> None:
    good = _lines(run_dir)
    with open(run_dir / "results.jsonl", "a") as f:
        f.write("\n".join(GARBAGE[:6]) + "\n\n" + "\n".join(GARBAGE[6:]))  # the last one torn: no newline
    read = ResultsDir(run_dir).read_records()
    assert len(read.lines) == len(good) and read.unreadable == len(GARBAGE)
    md = render_report(run_dir).read_text()
    assert f"- {len(GARBAGE)} lines of results.jsonl could not be read and were left out." in md
    assert md.count("### Warnings") == 1


def test_compare_with_non_numeric_values_is_not_a_statistics_error(run_dir: Path, tmp_path: Path) -> None:
    """Every IOPS turned into a string: those lines are left out and compare says so (it used to raise
    StatisticsError from the geometric mean)."""
    lines = []
    for ln in _lines(run_dir):
        rec = json.loads(ln)
        if rec["kind"] == "storage" and rec["index"] % 2:
            rec["metrics"]["iops"] = "abc"
        lines.append(json.dumps(rec))
    (run_dir / "results.jsonl").write_text("\n".join(lines) + "\n")
    code, out, err = cli("compare", str(GOLDEN_RUN), str(run_dir))
    assert code == 0, err
    assert "lines of results.jsonl could not be read and were left out" in out
    assert "Geometric mean of the IOPS ratios" in out


def test_compare_skips_zero_iops_in_the_geometric_mean(run_dir: Path) -> None:
    lines = []
    for ln in _lines(run_dir):
        rec = json.loads(ln)
        if rec["kind"] == "storage":
            rec["metrics"]["iops"] = 0.0
        lines.append(json.dumps(rec))
    (run_dir / "results.jsonl").write_text("\n".join(lines) + "\n")
    code, out, err = cli("compare", str(GOLDEN_RUN), str(run_dir))
    assert code == 0 and "Traceback" not in err


def test_records_outside_the_plan_are_left_out(run_dir: Path) -> None:
    total = len(json.loads((run_dir / "run.json").read_text())["plan"])
    rec = json.loads(_lines(run_dir)[0])
    rec["index"] = total + 5
    with open(run_dir / "results.jsonl", "a") as f:
        f.write(json.dumps(rec) + "\n")
    data = load(run_dir)
    assert data.outside == 1 and len(data.storage) + len(data.memory) == len(_lines(run_dir)) - 1
    assert "is not in run.json's plan" in render_report(run_dir).read_text()


def test_a_line_whose_point_is_not_the_plans_at_its_index_measures_neither(run_dir: Path) -> None:
    """Index 0 with plan[1]'s point, after plan[0]'s own line: it is not a measurement of either point, so it
    neither replaces index 0's line nor stands for plan[1]; the report names its line."""
    lines = _lines(run_dir)
    first, second = json.loads(lines[0]), json.loads(lines[1])
    with open(run_dir / "results.jsonl", "a") as f:
        f.write(json.dumps({**second, "index": 0, "metrics": {**second["metrics"], "iops": 1.0}}) + "\n")
    data = load(run_dir)
    assert data.outside == 1 and data.outside_lines == [len(lines) + 1] and data.replaced == 0
    assert data.storage[0].point == first["point"] and data.storage[0].iops == first["metrics"]["iops"]
    assert f"index (no index, one past the plan, or another point than the plan's there: a measurement of " \
           f"neither) and was left out (line {len(lines) + 1})." in render_report(run_dir).read_text()
    read = ResultsDir(run_dir).read_records(json.loads((run_dir / "run.json").read_text())["plan"])
    assert read.outside == 1 and read.problems == [
        f"{run_dir / 'results.jsonl'}, line {len(lines) + 1}: its point is not plan[0]'s: it measures no point of "
        "the plan and is left out."]


def test_an_over_long_line_is_skipped_and_counted(run_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(results_mod, "MAX_LINE_BYTES", 2000)
    good = _lines(run_dir)
    with open(run_dir / "results.jsonl", "a") as f:
        f.write('{"kind": "storage", "pad": "' + "x" * 10_000 + '"}\n' + good[0] + "\n")
    read = ResultsDir(run_dir).read_records()
    assert read.unreadable == 1 and read.replaced == 1 and len(read.lines) == len(good)


def test_results_jsonl_that_is_a_fifo_is_refused_without_blocking(run_dir: Path) -> None:
    (run_dir / "results.jsonl").unlink()
    os.mkfifo(run_dir / "results.jsonl")
    code, _, err = cli("report", str(run_dir))
    assert_one_sentence(code, err, "results.jsonl", "not a regular file")


# --- run.json ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("changes, key", [
    ({"environment": "x"}, "environment"),
    ({"environment": {"cpu": {"caches": [1]}}}, "environment.cpu.caches[0]"),
    ({"environment": {"cpu": {"caches": [None]}}}, "environment.cpu.caches[0]"),
    ({"preset": {"name": "n", "overrides": "abc"}}, "preset.overrides"),
    ({"preset": ["x"]}, "preset"),
    ({"sources": [None]}, "sources[0]"),
    ({"sources": [{"file": "a", "warnings": "w"}]}, "sources[0].warnings"),
    ({"points_total": "abc"}, "points_total"),
    ({"points_total": True}, "points_total"),
    ({"status": 5}, "status"),
    ({"tools": []}, "tools"),
    ({"target_info": "x"}, "target_info"),
    ({"failures": [3]}, "failures[0]"),
    ({"warnings": [{"a": 1}]}, "warnings[0]"),
])
def test_wrong_types_in_run_json_are_exit_2_naming_file_and_key(run_dir: Path, tmp_path: Path,
                                                                  changes: dict, key: str) -> None:
    _set_meta(run_dir, **changes)
    code, _, err = cli("report", str(run_dir))
    assert_one_sentence(code, err, str(run_dir / "run.json"), f"key '{key}'")
    code, _, err = cli("compare", str(GOLDEN_RUN), str(run_dir))
    assert_one_sentence(code, err, str(run_dir / "run.json"), f"key '{key}'")
    code, _, err = cli("compare", str(run_dir), "--reference", "intel-dc-p4600")
    assert_one_sentence(code, err, str(run_dir / "run.json"), f"key '{key}'")


@pytest.mark.parametrize("content", ["[1, 2]", "not json", '{"a": ' * 100_000, "9" * 5000])
def test_run_json_that_is_not_an_object_is_exit_2(run_dir: Path, content: str) -> None:
    (run_dir / "run.json").write_text(content)
    code, _, err = cli("report", str(run_dir))
    assert_one_sentence(code, err, "run.json")


def test_nulls_in_run_json_read_as_absent(run_dir: Path) -> None:
    _set_meta(run_dir, environment=None, preset=None, tools=None, target_info=None, points_total=None, status=None)
    code, _, err = cli("report", str(run_dir))
    assert code == 0, err


# --- status ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("recorded", ["running", "planned"])
def test_a_run_left_running_by_a_dead_process_reads_as_interrupted(run_dir: Path, recorded: str) -> None:
    _set_meta(run_dir, status=recorded)
    assert "interrupted" in _run_row(render_report(run_dir).read_text(), "Status")
    with DirLock(run_dir):  # a live process holds the directory: the status is what run.json says
        assert recorded in _run_row(render_report(run_dir).read_text(), "Status")


# --- --out --------------------------------------------------------------------------------------------------


def test_report_out_that_is_a_directory(run_dir: Path, tmp_path: Path) -> None:
    for out in (str(tmp_path) + "/", str(tmp_path), str(tmp_path / "new-dir") + "/"):
        code, _, err = cli("report", str(run_dir), "--out", out)
        assert_one_sentence(code, err, out, "is a directory", "report.md")
    assert not (tmp_path / "new-dir").exists()


def test_report_out_below_a_file(run_dir: Path, tmp_path: Path) -> None:
    (tmp_path / "afile").write_text("x")
    code, _, err = cli("report", str(run_dir), "--out", str(tmp_path / "afile" / "report.md"))
    assert_one_sentence(code, err, "afile", "cannot write the report")


def test_report_and_compare_out_on_a_read_only_filesystem(run_dir: Path, tmp_path: Path) -> None:
    with read_only_mount(tmp_path / "ro") as ro:
        code, _, err = cli("report", str(run_dir), "--out", str(ro / "report.md"))
        assert_one_sentence(code, err, str(ro), "Read-only file system")
        code, _, err = cli("compare", str(GOLDEN_RUN), str(run_dir), "--out", str(ro / "cmp.md"))
        assert_one_sentence(code, err, str(ro / "cmp.md"), "Read-only file system")
        code, _, err = cli("compare", str(run_dir), "--reference", "intel-dc-p4600", "--out", str(ro / "ref.md"))
        assert_one_sentence(code, err, str(ro / "ref.md"), "Read-only file system")


def test_report_of_a_directory_on_a_read_only_filesystem_needs_out(tmp_path: Path) -> None:
    files = {n: (GOLDEN_RUN / n).read_bytes() for n in ("run.json", "results.jsonl")}
    with read_only_mount(tmp_path / "ro", files) as ro:
        code, _, err = cli("report", str(ro))
        assert_one_sentence(code, err, str(ro), "Read-only file system", "--out FILE")
        code, out, err = cli("report", str(ro), "--out", str(tmp_path / "elsewhere" / "r.md"))
        assert code == 0, err
        assert (tmp_path / "elsewhere" / "r.md").is_file()


def test_compare_out_that_is_a_directory(run_dir: Path, tmp_path: Path) -> None:
    code, _, err = cli("compare", str(GOLDEN_RUN), str(run_dir), "--out", str(tmp_path) + "/")
    assert_one_sentence(code, err, str(tmp_path), "is a directory")


@pytest.mark.parametrize("bound", ["nan", "inf", "-inf", "NaN", "0", "-1"])
def test_p99_bound_must_be_a_positive_finite_number(run_dir: Path, bound: str) -> None:
    code, _, err = cli("report", str(run_dir), "--p99-bound-us", bound)
    assert code == 2 and "Traceback" not in err and "--p99-bound-us" in err
    assert not (run_dir / "report.md").exists()


def test_a_typed_point_is_written_as_its_json_table(tmp_path: Path) -> None:
    """run.json and results.jsonl hold a plan point as the table its to_dict() gives: the same bytes
    a dict of its keys writes, whether the writer is handed the point or its table."""
    from app.plan import presets

    plan = presets.load("quick").expand()
    typed, tables = ResultsDir(tmp_path / "typed"), ResultsDir(tmp_path / "tables")
    typed.create(runmeta.new({"kind": "storage", "plan": plan, "status": "complete"}, typed.run_json))
    tables.create(runmeta.new({"kind": "storage", "plan": [p.to_dict() for p in plan], "status": "complete"},
                              tables.run_json))
    assert typed.run_json.read_bytes() == tables.run_json.read_bytes()
    # a results line holds the table by its type (ResultLine.point)
    table: JSONObject = {**plan[0].to_dict()}
    typed.append(ResultLine(Kind.STORAGE, table, StorageMetrics(), 0))
    assert json.loads(typed.results_jsonl.read_text())["point"]["group"] == plan[0].group
