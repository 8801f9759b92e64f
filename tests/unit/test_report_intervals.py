"""Every figure with its 95 % interval in the report, results.csv and the figures (app/report/compute/intervals.py,
app/report/compute/replicates.py), on hand-made results directories (tests/helpers/interval_runs.py)."""

from __future__ import annotations

import csv
import io
import json
import re
from pathlib import Path

import pytest

from app.core.sanitize import md_text
from app.report.compute import analysis as an
from app.report.compute import intervals as ci
from app.report.data.model import load
from app.report.figures import plots
from app.report.render import render_markdown, results_csv
from app.stats.uncertainty import intervals_of, storage_series
from tests.helpers.interval_runs import samples, storage_point, write_storage_run
from tests.helpers.suite_runs import line, point, write_run


def _report(path: Path) -> tuple[str, list[dict[str, str]]]:
    """report.md's text (no figures drawn) and results.csv's rows of a directory."""
    data = load(path)
    md = render_markdown(data, [], 1e6, an.storage_curves(data.storage), an.memory_curves(data.memory))
    return md, list(csv.DictReader(io.StringIO(results_csv(data))))


def _row(md: str, start: str) -> str:
    return next(x for x in md.splitlines() if x.startswith(start))


@pytest.mark.parametrize("value,half,text", [
    (123456, 1234, "123.5k ± 1.2k"), (123456, 12345, "123k ± 12k"), (5513, 40, "5513 ± 40"),
    (2.5e6, 3e4, "2.50M ± 0.03M"), (9000, 82.4, "9000 ± 82"), (30000, None, "30k")])
def test_a_count_shows_its_half_width_in_its_own_unit(value: float, half: float | None, text: str) -> None:
    assert ci.pm_count(value, None if half is None else (value - half, value + half)) == text


@pytest.mark.parametrize("value,half,native,text", [
    (36.864, 0.3371, 1, "36.86 ± 0.34"), (914.286, 22.27, 2, "914.29 ± 22.27"), (409.6, 1.23, 1, "409.6 ± 1.2"),
    (144.3, None, 2, "144.30"), (1.0, 1e-9, 1, "1.000 ± 0.000")])
def test_a_fixed_figure_keeps_at_least_its_own_decimals(value: float, half: float | None, native: int,
                                                        text: str) -> None:
    assert ci.pm_fixed(value, None if half is None else (value - half, value + half), native) == text


def test_an_older_run_gets_its_interval_from_the_kept_samples(tmp_path: Path) -> None:
    """Lines without ci95 (written before intervals): computed from raw/…samples.jsonl, the same as a new run
    would record; a line with no samples shows no ± and the report says why, once."""
    run = write_storage_run(tmp_path / "old", [(storage_point(iodepth=4), 30000.0, 0.03),
                                               (storage_point(iodepth=16), 60000.0, None)])
    md, rows = _report(run)
    qd4, qd16 = [x for x in md.splitlines() if x.startswith("| Random read ")]
    # (± 0.27k, 1.1 and 1.21 while MSER-5 cut a "warm-up" of these stationary samples: all of them are kept now)
    assert "30.00k ± 0.25k" in qd4 and "122.9 ± 1.0 (117.2)" in qd4 and "133.39 ± 1.09" in qd4
    assert "±" not in qd16
    assert md.count("- the line records no interval and kept no per-second samples — 1 point: randread 4K QD16 "
                    "(IOPS, MB/s, mean latency).") == 1
    u = intervals_of(storage_series(samples(30000.0, 4096, 4, wobble=0.03)))
    assert float(rows[0]["iops_ci_low"]) == pytest.approx(u.ci95["iops"][0], abs=1e-6)
    assert float(rows[0]["lat_mean_ns_ci_high"]) == pytest.approx(u.ci95["lat_mean_ns"][1], abs=1e-6)
    assert float(rows[0]["iops_ci_low"]) < float(rows[0]["iops"]) < float(rows[0]["iops_ci_high"])
    assert rows[1]["iops_ci_low"] == rows[1]["bw_bytes_ci_high"] == ""
    assert "replicate" not in rows[0]  # only a run with repeats has the column


def test_a_recorded_interval_is_shown_as_recorded(tmp_path: Path) -> None:
    """A line with ci95 is not recomputed from its samples (its interval is what the run measured)."""
    run = write_storage_run(tmp_path / "new", [(storage_point(), 30000.0, 0.03)], ci95=True)
    jl = run / "results.jsonl"
    rec = json.loads(jl.read_text())
    rec["metrics"]["ci95"]["iops"] = [29000.0, 31000.0]
    jl.write_text(json.dumps(rec) + "\n")
    md, rows = _report(run)
    assert (rows[0]["iops_ci_low"], rows[0]["iops_ci_high"]) == ("29000.0", "31000.0")
    assert "30.0k ± 1.0k" in md and "no ±" not in md


def test_replicates_are_grouped_and_undercoverage_asks_for_repeats(tmp_path: Path) -> None:
    """3 interleaved replicates of two points: QD4's vary by ±10 % against ±0.3 % within-run intervals (the
    interval undercovers: repeats recommended), QD16's by 0.3 % against ±0.6 % (consistent)."""
    qd4 = [(storage_point(iodepth=4, replicate=k), v, 0.01) for k, v in ((1, 100000.0), (2, 112000.0), (3, 93000.0))]
    qd16 = [(storage_point(iodepth=16, replicate=k), v, 0.02)
            for k, v in ((1, 150000.0), (2, 150500.0), (3, 149700.0))]
    run = write_storage_run(tmp_path / "rep", [x for pair in zip(qd4, qd16) for x in pair])
    md, rows = _report(run)
    assert [r["replicate"] for r in rows] == ["1", "1", "2", "2", "3", "3"]
    assert "| Random read, replicate 2 |" in md
    qd4_row, qd16_row = _row(md, "| randread 4K QD4 "), _row(md, "| randread 4K QD16 ")
    # mean 101.7k, sd 9.6k, t(2) = 4.303: ± 23.8k; CV 9.5 %
    assert "|   3 |" in qd4_row and "102k ± 24k" in qd4_row and "9.5%" in qd4_row and "undercovers" in qd4_row
    assert "150.1k ± 1.0k" in qd16_row and "consistent" in qd16_row
    advice = _row(md, "**Repeats recommended.**")
    assert "On 1 of 2 points (randread 4K QD4)" in advice and "repeat=5" in advice


def test_consistent_replicates_say_the_single_run_interval_holds(tmp_path: Path) -> None:
    reps = [(storage_point(replicate=k), v, 0.02) for k, v in ((1, 50000.0), (2, 50100.0), (3, 49950.0))]
    md, _rows = _report(write_storage_run(tmp_path / "ok", reps))
    assert "Repeats recommended" not in md and "a single run's ± holds" in md


def test_memory_figures_show_the_interval_their_line_records(tmp_path: Path) -> None:
    idle = line(0, point("idle", stride=64), {"latency_ns": 91.234, "ci95": {"latency_ns": [90.1, 92.3]},
                                            "ci_method": {"method": "batch-means"}})
    loaded = line(1, point("loaded", traffic="R", delay=0), {"latency_ns": 150.0, "bandwidth_mbps": 9000.0,
                                                             "ci95": {"bandwidth_mbps": [8900.0, 9100.0]}})
    old = line(2, point("loaded", traffic="R", delay=100), {"latency_ns": 120.0, "bandwidth_mbps": 5000.0})
    md, rows = _report(write_run(tmp_path / "mem", [idle, loaded, old]))
    # the figure with ± is its interval's centre (91.20), the line's own 91.234 lies inside it: no whole-run column
    assert "91.20 ± 1.10" in md and "9000.0 ± 100.0" in md and "Whole run" not in md
    assert re.search(r"\| 00100 +\| 120\.00 ", md)  # the Inject column as wide as its header with its unit
    assert rows[0]["latency_ns"] == "91.2" and rows[0]["latency_ns_whole_run"] == "91.234"
    assert md.count("- the line records no interval (the engine's windows were not kept) — 2 points: ") == 1
    assert rows[0]["latency_ns_ci_low"] == "90.1" and rows[1]["bandwidth_mbps_ci_high"] == "9100.0"


def test_a_flag_this_report_does_not_check_is_listed_with_its_reason(tmp_path: Path) -> None:
    run = write_storage_run(tmp_path / "flags", [(storage_point(), 30000.0, None)])
    jl = run / "results.jsonl"
    rec = json.loads(jl.read_text())
    rec["flags"] = [{"flag": "imprecise", "reason": "reached ±3.1 % of mean IOPS, ±2 % asked, in the 30 s cap"},
                    {"flag": "from-the-future", "reason": "a newer check"}, {"flag": "Bad Name!", "reason": "x"}]
    jl.write_text(json.dumps(rec) + "\n")
    md, rows = _report(run)
    assert "imprecise, from-the-future |" in _row(md, "| Random read ")
    assert "| imprecise         | flagged (1 point) | the 95 % interval of mean IOPS was wider than the precision" in md
    assert "a flag this version of the report does not describe: a newer check" in md and "Bad Name" not in md
    assert rows[0]["flags"] == "imprecise;from-the-future"


def test_figures_draw_error_bars_only_where_points_have_intervals(tmp_path: Path) -> None:
    run = write_storage_run(tmp_path / "bars", [(storage_point(iodepth=d), v, 0.05)
                                                for d, v in ((1, 9000.0), (4, 30000.0), (16, 60000.0))])
    data = load(run)
    for p in data.storage:
        ci.storage_intervals(run, p)
    bars: list[int] = []  # error-bar containers of each figure drawn, in order
    plots.CHECK = lambda fig, _name: bars.append(sum(len(ax.containers) for ax in fig.axes))
    try:
        with_ci = plots.storage_vs_axis(plots.rows_of(data.storage), tmp_path / "a", "qd")
        rows = plots.rows_of(data.storage)
        for r in rows:
            r.iops_err = r.bw_err = r.lat_err = None
        without = plots.storage_vs_axis(rows, tmp_path / "b", "qd")
    finally:
        plots.CHECK = None
    assert bars == [2, 0]  # IOPS (top) and mean latency (bottom) of the one line; none without intervals
    assert "Bars: the 95 % interval" in with_ci[0].caption and "Bars:" not in without[0].caption


def test_the_live_interval_narrows_as_seconds_arrive() -> None:
    """The run screen's running interval of IOPS: none before 10 whole seconds, then narrower with more."""
    from app.stats.summary import live_interval

    secs = samples(30000.0, 4096, 4, seconds=120, wobble=0.05)
    assert live_interval(secs[:9]) == "± — (needs 10 s)"
    assert live_interval([{**s, "interval_s": 0.2} for s in secs[:30]]) == "± — (needs 10 s)"  # no whole seconds
    texts = [live_interval(secs[:n]) for n in (20, 120)]
    pcts = [float(t.split()[1]) for t in texts]
    assert texts[0].endswith("(95 % within this run, 20 s)") and texts[1].endswith("(95 % within this run, 120 s)")
    assert pcts[1] < pcts[0] / 2


def test_the_results_tables_plus_minus_is_the_half_width_in_per_cent() -> None:
    from app.stats.summary import ci_pct, pm_pct

    assert ci_pct(1000.0, 980.0, 1020.0) == pytest.approx(2.0) and pm_pct(2.0) == "±2.0%"
    assert pm_pct(ci_pct(1000.0, 999.0, 1001.0)) == "±0.1%" and pm_pct(ci_pct(100.0, 70.0, 130.0)) == "±30%"
    assert ci_pct(1000.0, float("nan"), float("nan")) is None and pm_pct(None) == ""


def test_a_line_that_says_why_it_has_no_interval_is_not_recomputed(tmp_path: Path) -> None:
    """An imported line (ci_method none, samples or not) shows no ± and its reason, once for both points."""
    run = write_storage_run(tmp_path / "imp", [(storage_point(iodepth=d), 30000.0, 0.03) for d in (4, 16)])
    jl = run / "results.jsonl"
    recs = [json.loads(x) for x in jl.read_text().splitlines()]
    for rec in recs:
        rec["metrics"]["ci_method"] = {"method": "none", "reason": "imported fio JSON has no per-second samples"}
    jl.write_text("".join(json.dumps(r) + "\n" for r in recs))
    md, rows = _report(run)
    assert "±" not in _row(md, "| Random read ") and rows[0]["iops_ci_low"] == ""
    assert md.count("No point has a 95 % interval (shown without ±): imported fio JSON has no per-second samples.") == 1


def test_memory_replicates_are_judged_by_their_latency(tmp_path: Path) -> None:
    lines = [line(k - 1, point("idle", stride=64, replicate=k),
                  {"latency_ns": v, "ci95": {"latency_ns": [v - 0.5, v + 0.5]}})
             for k, v in ((1, 90.0), (2, 99.0), (3, 84.0))]
    md, rows = _report(write_run(tmp_path / "memrep", lines))
    row = _row(md, "| idle latency ")
    # mean 91.0, sd √57 = 7.55, t(2) 4.303: ± 18.75; CV 8.3 % against a within-run SE of 0.28 %: undercovers
    assert "| latency ns |   3 | 91.00 ± 18.75 | 8.3% |                 ±0.6% | undercovers" in row
    assert "Repeats recommended" in md and [r["replicate"] for r in rows] == ["1", "2", "3"]
    assert "`--set repeat=5` or more (this run had 3;" in md  # not "repeat=3", which it was


@pytest.mark.parametrize("ci95,why", [
    ([924.0, 924.0], "its interval has zero width"),
    ([1000.0, 900.0], "its interval has its lower bound above the upper"),
    ([0.0, 5205.0], "the interval reaches 0: its half-width is as large as its centre"),
    (["x", 1], "its interval is not two numbers")])
def test_a_recorded_interval_that_is_no_interval_of_its_figure_shows_none(tmp_path: Path, ci95: list[object],
                                                                         why: str) -> None:
    """A line's ``ci95`` that is degenerate or reaches 0 (half-width as large as its centre) is treated as absent: no
    ± (never "924 ± 0"), empty interval cells in results.csv, and the report says why."""
    run = write_storage_run(tmp_path / "bogus", [(storage_point(), 924.0, 0.03)], ci95=True)
    jl = run / "results.jsonl"
    rec = json.loads(jl.read_text())
    rec["metrics"]["ci95"]["iops"] = ci95
    jl.write_text(json.dumps(rec) + "\n")
    md, rows = _report(run)
    assert "924 ± " not in md and "± 0 " not in md
    assert rows[0]["iops_ci_low"] == rows[0]["iops_ci_high"] == ""
    assert f"- {md_text(why)}" in md and " — 1 point: randread 4K QD4 (IOPS)." in md


def test_a_level_shift_in_one_figure_takes_every_figures_interval_and_names_both_levels(tmp_path: Path) -> None:
    """A replicate of seed-p4600 (32K random read, QD16) stepped in mean latency from 551.56 to 611.57 µs after
    6.25 s of its 0.25 s samples; the test did not flag IOPS, yet at a fixed depth IOPS stepped with it (Little's
    law).  The report gave IOPS a ± while its validity table said the point's mean gets none, and stated no level."""
    run = write_storage_run(tmp_path / "shift", [(storage_point(), 27700.0, 0.03)], ci95=True)
    jl = run / "results.jsonl"
    rec = json.loads(jl.read_text())
    rec["metrics"]["ci_method"] = {
        "method": "batch-means", "level": 0.95, "samples": 41, "sample_s": 0.25,
        "series": {"iops": {"batch_size": 4, "batches": 10, "warmup": 1},
                   "lat_mean_ns": {"reason": "a level shift from sample 26 on: 551,560 before, 611,574 after (+10.9%), "
                                             "so no interval of the mean"}},
        "level_shift": {"test": "max-t-cusum", "found": {"lat_mean_ns": {"at": 25, "before": 551560.09,
                                                                         "after": 611574.30, "z": 5.99, "skipped": 1}}}}
    rec["metrics"]["ci95"].pop("lat_mean_ns", None)
    jl.write_text(json.dumps(rec) + "\n")
    md, rows = _report(run)
    (line,) = [x for x in md.splitlines() if x.startswith("| Random read ")]
    assert "±" not in line
    assert ("mean latency 551.56 µs for the first 6.25 s of the measured samples, 611.57 µs after (+10.9%)" in md)
    assert rows[0]["iops_ci_low"] == ""


def test_a_single_point_without_an_interval_is_said_to_have_none(tmp_path: Path) -> None:
    """One imported point: "The point has no 95 % interval" (it read "The point has a 95 % interval (shown without
    ±)", the opposite of the truth)."""
    run = write_storage_run(tmp_path / "one", [(storage_point(iodepth=1), 30000.0, 0.03)])
    jl = run / "results.jsonl"
    (rec,) = [json.loads(x) for x in jl.read_text().splitlines()]
    rec["metrics"]["ci_method"] = {"method": "none", "reason": "imported fio JSON has no per-second samples"}
    jl.write_text(json.dumps(rec) + "\n")
    md, _ = _report(run)
    assert "The point has no 95 % interval (shown without ±): imported fio JSON has no per-second samples." in md
    assert "The point has a 95" not in md
