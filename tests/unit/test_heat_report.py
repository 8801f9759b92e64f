"""The report's latency heat map and stall events from per-second histograms (app.report.heat): a 1-hour point
merges its seconds into columns and names its periodic pauses, a 120-point sweep gets one strip per point over
several figures, a run without histograms has no such section, and a hostile histograms file is read bounded."""

from __future__ import annotations

import json
import re
from pathlib import Path

from app.latmap import MAX_COLUMNS, read_intervals
from app.report import heat, render_report
from app.report.model import load
from tests.helpers.heat_runs import hist_lines, hour_point, sweep, write_heat_run
from tests.helpers.tail_runs import storage_line, write_run


def _heat_text(run: Path) -> str:
    """The heat map's part of the report alone (figures into run/plots), without drawing the rest."""
    data = load(run)
    (run / "plots").mkdir()
    figs = heat.figures(run, data.storage, run / "plots", lambda p: f"QD{p.point['iodepth']}")
    return "\n".join(heat.section(run, data.storage, figs, lambda p: f"QD{p.point['iodepth']}"))


def _stall_rows(text: str) -> list[list[str]]:
    part = text.split("#### Stall events")[1].split("\n#")[0]
    return [[c.strip() for c in ln.strip("|").split("|")] for ln in part.splitlines()
            if ln.startswith("| ") and not ln.startswith("| Workload")]


def test_an_hour_long_point_merges_seconds_and_names_each_pause(tmp_path: Path) -> None:
    run = hour_point(tmp_path / "hour", every_s=300)
    text = _heat_text(run)
    assert "### Latency over time" in text and "plots/latency-heatmap.svg" in text
    assert f"Columns merge up to {-(-3600 // MAX_COLUMNS)} consecutive seconds" in text
    svg = (run / "plots" / "latency-heatmap.svg").read_text()
    assert "mathdefault" not in svg  # plain tick labels
    rows = _stall_rows(text)
    # a pause every 300 s of 2 s: 11 events, each at its time, lasting 2 s, 80 I/Os
    assert [(r[1], r[2], r[3]) for r in rows] == [(f"{t - 1:g} s", "2 s", "80") for t in range(300, 3600, 300)]


def test_a_sweep_gets_one_strip_per_point_over_figures_and_its_one_stall(tmp_path: Path) -> None:
    run = sweep(tmp_path / "sweep", n=heat.STRIPS + 1)  # a 120-point sweep: 4 figures of 30 strips, drawn alike
    text = _heat_text(run)
    files = sorted(re.findall(r"\(plots/(latency-heatmap[-\d]*\.svg)\)", text))
    assert files == ["latency-heatmap-2.svg", "latency-heatmap.svg"]
    assert "One strip per point, on one colour scale" in text
    rows = _stall_rows(text)
    assert len(rows) == 1 and rows[0][1:4] == ["3 s", "2 s", "80"], rows


def test_a_run_without_histograms_has_no_heat_map_section(tmp_path: Path) -> None:
    run = write_run(tmp_path / "old", [storage_line(0, 200_000, 40_000)])
    render_report(run)
    text = (run / "report.md").read_text()
    assert "Latency over time" not in text and "Stall events" not in text
    assert not (run / "plots" / "latency-heatmap.svg").exists()


def test_a_hostile_histograms_file_is_read_line_by_line_and_only_inside_the_run(tmp_path: Path) -> None:
    good = hist_lines(3, 1000, 40_000)
    bad = ["not json", json.dumps({"t": 4.0, "interval_s": 1.0, "read": [1, 0]}),
           json.dumps({"t": 5.0, "interval_s": 1.0, "read": [10 ** 30, 1]}),
           json.dumps({"t": -1.0, "interval_s": 1.0, "read": [10, 1]}), json.dumps([1, 2]),
           "\x1b[31m" + json.dumps({"t": 6.0, "interval_s": 1.0, "read": [10, 1]})]
    run = write_heat_run(tmp_path / "h", [(storage_line(0, 3000, 40_000), good)])
    with (run / "raw" / "0000-p.hist.jsonl").open("a") as f:
        f.write("\n".join(bad) + "\n")
    line = json.loads((run / "results.jsonl").read_text())
    assert [iv.t for iv in read_intervals(run, line["raw"])] == [1.0, 2.0, 3.0]
    for rel in ("../outside.jsonl", "/etc/passwd", "raw"):
        assert read_intervals(run, {"hist": rel}) == []
    (tmp_path / "outside.jsonl").write_text("".join(json.dumps(h) + "\n" for h in good))
    (run / "raw" / "link.jsonl").symlink_to(tmp_path / "outside.jsonl")
    assert read_intervals(run, {"hist": "raw/link.jsonl"}) == []
    render_report(run)
    assert "Latency over time" in (run / "report.md").read_text()
