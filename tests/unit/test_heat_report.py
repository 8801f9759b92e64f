"""The report's latency heat map and stall events from per-second histograms (app.report.figures.heat): a 1-hour point
merges its seconds into columns and names its periodic pauses, a 120-point sweep gets one strip per point over
several figures, a run without histograms has no such section, and a hostile histograms file is read bounded."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from app.report import render_report
from app.report.data.model import load
from app.report.figures import heat
from app.stats.latmap import MAX_COLUMNS, read_intervals
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


@pytest.mark.slow
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


@pytest.mark.slow
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


def test_a_fleet_report_shows_each_hosts_heat_map_and_their_merge_whose_p99_is_the_unions(tmp_path: Path) -> None:
    from app.model.tails import merge, percentile
    from app.stats.latmap import merged
    from tests.helpers.tail_runs import storage_line as line_of

    # host a fast and steady; host b slower with a 2 s pause: the merge's p99 is that of both hosts' I/Os
    a = hist_lines(10, 20_000, 30_000)
    b = hist_lines(10, 5_000, 90_000, stalls=(5, 6), stall_ios=400)
    run = write_heat_run(tmp_path / "fleet", [(line_of(0, 200_000, 30_000, host="a"), a),
                                              ({**line_of(0, 50_000, 90_000, host="b"), "index": 0}, b)])
    meta = json.loads((run / "run.json").read_text())  # a fleet run's run.json names its hosts
    meta["fleet"] = {"hosts": [{"host": h, "scheme": "tcp", "address": "127.0.0.1", "port": 18801 + i, "user": None,
                                "target": f"/dev/loop{i}"} for i, h in enumerate("ab")],
                     "agent_socket": "/run/profiler-tui/agent.sock"}
    meta["target"] = None
    (run / "run.json").write_text(json.dumps(meta))
    # the second host's histograms file under its own name
    lines = [json.loads(x) for x in (run / "results.jsonl").read_text().splitlines()]
    (run / "raw" / "0000-b.hist.jsonl").write_text("".join(json.dumps(h) + "\n" for h in b))
    (run / "raw" / "0000-p.hist.jsonl").write_text("".join(json.dumps(h) + "\n" for h in a))
    lines[1]["raw"] = {"hist": "raw/0000-b.hist.jsonl"}
    (run / "results.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    render_report(run)
    text = (run / "report.md").read_text()
    assert "## Latency over time" in text and "plots/latency-heatmap.svg" in text
    table = text.split("| Strip")[1].split("\n\n")[0].splitlines()[2:]
    rows = {r[0]: r for r in ([c.strip() for c in ln.strip("|").split("|")] for ln in table)}
    assert len(rows) == 3 and any(k.endswith(" on a") for k in rows) and any(k.endswith(" on b") for k in rows)
    merged_row = next(r for k, r in rows.items() if "all hosts merged (2)" in k)
    direct = percentile(merge([merged(read_intervals(run, {"hist": f"raw/0000-{h}.hist.jsonl"})) for h in "pb"]),
                        99.0)
    assert direct is not None and float(merged_row[2]) == round(direct / 1e3, 2)
    mean_of_p99s = sum(percentile(merged(read_intervals(run, {"hist": f"raw/0000-{h}.hist.jsonl"})), 99.0) or 0
                       for h in "pb") / 2
    assert direct != mean_of_p99s
    stalls = _stall_rows(text)
    # b's pause, on b's strip and in the merge (host a has none): at its time, 2 s, its 800 I/Os
    assert [(r[0].endswith(" on b"), "all hosts merged" in r[0]) for r in stalls] == [(True, False), (False, True)]
    assert all(r[1:4] == ["4 s", "2 s", "800"] for r in stalls), stalls


def test_a_point_whose_histograms_file_cannot_be_read_is_named_not_counted_as_kept_none(tmp_path: Path) -> None:
    """A point's results line names its histograms file, but raw/ holds a FIFO there: the point is said to be
    undrawn because of its file, by name — not lumped with the points of a run written before histograms."""
    import os

    run = sweep(tmp_path / "sweep", n=3)
    fifo = run / "raw" / "0001-p.hist.jsonl"
    fifo.unlink()
    os.mkfifo(fifo)
    text = _heat_text(run)
    assert ("1 point names a histograms file in raw/ that could not be read or held no usable second (QD2: "
            "not a regular file, a link, too large, or garbled) and is not drawn.") in text
    assert "keep no per-second histograms" not in text and "keeps no per-second histograms" not in text
    assert "No stall event in the 2 points with per-second histograms." in text
