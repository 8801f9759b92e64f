"""A results line the report cannot use (an ill-typed figure, a point of no plan) is left out of every figure — and
the summary on top says so, and the Run section's warnings name each line and why, in the file's own words
(escaped: the value is another program's text)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from app.report.compute import analysis as an
from app.report.data.model import load
from app.report.render import render_markdown

GOLDEN = Path(__file__).resolve().parents[1] / "data" / "report" / "golden-run"


def _run_with(tmp_path: Path, mutate) -> Path:
    d = tmp_path / "run"
    d.mkdir()
    shutil.copy(GOLDEN / "run.json", d / "run.json")
    lines = [json.loads(line) for line in (GOLDEN / "results.jsonl").read_text().splitlines()]
    mutate(lines)
    (d / "results.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    return d


def _report(d: Path) -> str:
    data = load(d)
    return render_markdown(data, [], 1e6, an.storage_curves(data.storage), an.memory_curves(data.memory))


def _summary(report: str) -> str:
    return report.split("## Summary", 1)[1].split("\n## ", 1)[0]


def test_a_line_left_out_is_said_in_the_summary_and_named_with_its_reason(tmp_path: Path) -> None:
    def mutate(lines: list[dict]) -> None:
        lines[3]["metrics"]["iops"] = -5
        lines[5]["metrics"]["iops"] = "<b>12</b>"

    d = _run_with(tmp_path, mutate)
    report = _report(d)
    summary = _summary(report)
    assert "2 lines of results.jsonl were left out" in summary
    assert "No point carries a flag" not in summary
    assert ("Why: results.jsonl, line 4: key 'metrics.iops' has invalid value -5: must be a finite number from 0 "
            "to 2^64.") in report
    assert "line 6: key 'metrics.iops' has invalid value '\\<b\\>12\\</b\\>'" in report
    assert str(tmp_path) not in report.split("### Warnings", 1)[1].split("\n## ", 1)[0]


def test_a_whole_directory_says_nothing_of_lines_left_out(tmp_path: Path) -> None:
    d = _run_with(tmp_path, lambda lines: None)
    report = _report(d)
    assert "left out (unreadable" not in report and "Why: " not in report
