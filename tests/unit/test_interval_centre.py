"""The figure shown with ± is the centre of its interval, everywhere: report.md, results.csv (the TUI's results
table reads its rows), ``compare`` and its ``--json``; the line's own whole-run figure stays, labelled as such.

The numbers are the review's: a ``precision=2%`` point of 4K random 70/30 whose fio figure was 62.9k IOPS while
its own 95 % interval, past a warm-up MSER-5 set at 10 of its 20 seconds, was [55.06k, 61.66k] — printed
``62.9k ± 3.3k``, a figure outside the interval it claimed; a memory row ``24891.1 ± 1294.7`` for
[24,237, 26,826]; and ``compare`` reporting +24.1k where the centred difference is +19.6k.
"""

from __future__ import annotations

import csv
import io
import json
import re
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from app.cli.compare import compare_reference, compare_runs, load_reference
from app.core.textable import markdown_cells
from app.report.compute import analysis as an
from app.report.data.model import load
from app.report.render import render_markdown, results_csv

POINT = {"rw": "randrw", "rwmixread": 70, "bs": 4096, "iodepth": 16, "numjobs": 1, "ioengine": "libaio",
         "direct": True, "runtime": 60, "ramp_time": 0, "size": 1 << 30, "time_based": True}
LOW, HIGH, WHOLE = 55_060.0, 61_660.0, 62_900.0  # the review's interval and fio's whole-run IOPS


def _method(cut: int, total: int, keys: tuple[str, ...] = ("iops", "bw_bytes")) -> dict[str, Any]:
    series: dict[str, Any] = {k: {"batch_size": 1, "batches": total - cut, "warmup": cut} for k in keys}
    series.update({k: {"reason": "left out by this test"} for k in ("iops", "bw_bytes", "lat_mean_ns")
                   if k not in keys})
    return {"method": "batch-means", "level": 0.95, "samples": total, "series": series}


def _storage(iops: float, ci: tuple[float, float] | None, cut: int = 10, total: int = 20) -> dict[str, Any]:
    m: dict[str, Any] = {"iops": iops, "read_iops": 0.7 * iops, "write_iops": 0.3 * iops, "bw_bytes": iops * 4096,
                         "lat_ns": {"mean": 16e9 / iops, "p99": 5e9 / iops * 8, "min": 1e4, "max": 5e6}}
    if ci is not None:
        m["ci95"] = {"iops": list(ci), "bw_bytes": [ci[0] * 4096, ci[1] * 4096]}
        m["ci_method"] = _method(cut, total)
    return m


def _run(path: Path, lines: list[tuple[dict[str, Any], dict[str, Any]]], kind: str = "storage") -> Path:
    """A results directory of (point, metrics) lines as a run of this version writes them (``flags`` checked)."""
    path.mkdir(parents=True)
    recs = [{"schema_version": 1, "kind": kind, "index": i, "point": p, "metrics": m,
             **({"flags": []} if kind == "storage" else {})} for i, (p, m) in enumerate(lines)]
    plan = [p for p, _ in lines]
    (path / "run.json").write_text(json.dumps({"tool": "profiler-tui", "preset": {"name": "t", "kind": kind},
                                               "kind": kind, "plan": plan, "points_total": len(plan),
                                               "points_done": len(plan), "status": "complete"}))
    (path / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in recs))
    return path


def _report(path: Path) -> tuple[str, list[dict[str, str]]]:
    data = load(path)
    md = render_markdown(data, [], 1e6, an.storage_curves(data.storage), an.memory_curves(data.memory))
    return md, list(csv.DictReader(io.StringIO(results_csv(data))))


def _table(md: str, first: str) -> list[dict[str, str]]:
    """The rows of the markdown table whose header starts with ``first``."""
    lines = md.splitlines()
    start = next(i for i, x in enumerate(lines) if x.startswith(f"| {first}"))
    rows = []
    for x in lines[start:]:
        if not x.startswith("|"):
            break
        if not re.match(r"^\|[-:| ]+\|$", x):
            rows.append(markdown_cells(x))
    return [dict(zip(rows[0], r)) for r in rows[1:]]


UNITS = {"k": 1e3, "M": 1e6, "": 1.0}


def _pm(cell: str) -> tuple[float, float]:
    """``58.4k ± 3.3k`` → (58400, 3300)."""
    m = re.fullmatch(r"([\d.]+)([kM]?) ± ([\d.]+)([kM]?)(?: \(.*\))?", cell.strip())
    assert m, cell
    return float(m[1]) * UNITS[m[2]], float(m[3]) * UNITS[m[4]]


def assert_headlines_inside(rows: list[dict[str, str]]) -> None:
    """Every results.csv figure that has an interval lies inside it (the acceptance rule, by construction)."""
    centred = {"iops": 1.0, "bw_MBps": 1e-6, "lat_mean_us": 1e-3, "latency_ns": 1.0, "bandwidth_MBps": 1.0}
    ci_of = {"iops": "iops", "bw_MBps": "bw_bytes", "lat_mean_us": "lat_mean_ns", "latency_ns": "latency_ns",
             "bandwidth_MBps": "bandwidth_mbps"}
    checked = 0
    for r in rows:
        for col, factor in centred.items():
            low, high = r.get(f"{ci_of[col]}_ci_low"), r.get(f"{ci_of[col]}_ci_high")
            if low and high:
                assert float(low) * factor <= float(r[col]) <= float(high) * factor, (col, r)
                checked += 1
    assert checked


def test_the_figure_with_its_interval_is_the_centre_in_the_report_and_results_csv(tmp_path: Path) -> None:
    run = _run(tmp_path / "precision", [(POINT, _storage(WHOLE, (LOW, HIGH)))])
    md, rows = _report(run)
    (row,) = _table(md, "Test Type")
    # not fio's 62.9k ± 3.3k, a figure outside the interval it claims: the interval's centre
    assert row["IOPS"] == "58.4k ± 3.3k" and "62.9k ±" not in md
    centre, half = _pm(row["IOPS"])
    assert LOW <= centre <= HIGH and half == pytest.approx((HIGH - LOW) / 2, rel=0.02)
    assert row["Bandwidth MB/s (MiB/s)"].startswith("239.0 ± 13.5 (")
    # fio's own figure is kept, labelled as the whole run's, and the cut is flagged with its share
    assert row["Whole run: IOPS · MB/s · avg µs"].startswith("62.9k · 257.6 · ")
    assert "Whole run: fio's figure over all of the point's measured seconds, warm-up included" in md
    assert row["Flags"] == "warmup-cut"
    check = next(x for x in md.splitlines() if x.startswith("| warmup-cut"))
    assert "flagged (1 point)" in check
    assert "± is the 95 % confidence interval, within this run," in md
    # results.csv: the centre, inside its interval, and the whole-run figure in its own column
    (r,) = rows
    assert float(r["iops"]) == pytest.approx((LOW + HIGH) / 2) and float(r["iops_whole_run"]) == WHOLE
    assert float(r["bw_MBps_whole_run"]) == pytest.approx(WHOLE * 4096 / 1e6)
    assert r["lat_mean_us_whole_run"] == ""  # no interval of the mean latency: its figure is the line's own
    assert "warmup-cut" in r["flags"].split(";")
    assert_headlines_inside(rows)


def test_the_warm_up_flag_says_the_share_cut_and_a_short_cut_raises_none(tmp_path: Path) -> None:
    from app.report.data.model import load as load_run

    run = _run(tmp_path / "cuts", [(POINT, _storage(WHOLE, (LOW, HIGH))),
                                   ({**POINT, "iodepth": 4}, _storage(30_000.0, (29_500.0, 30_400.0), 5, 60))])
    big, small = load_run(run).storage
    (flag,) = big.flags
    assert flag["reason"].startswith("MSER-5 cut 10 of 20 measured seconds (50%) as warm-up")
    assert small.flags == []  # 5 of 60 seconds: under a quarter


def test_a_memory_row_shows_the_centre_of_its_interval(tmp_path: Path) -> None:
    point = {"mode": "loaded", "traffic": "R", "stride": 64, "delay": 0, "engine": "memlat"}
    m = {"latency_ns": 150.0, "bandwidth_mbps": 24891.1, "ci95": {"bandwidth_mbps": [24237.0, 26826.0]},
         "ci_method": {"method": "batch-means", "level": 0.95, "samples": 20,
                       "series": {"bandwidth_mbps": {"batch_size": 1, "batches": 15, "warmup": 5}}}}
    md, rows = _report(_run(tmp_path / "mem", [(point, m)], kind="memory"))
    (row,) = _table(md, "Inject")
    assert row["Bandwidth (MB/sec)"] == "25531.5 ± 1294.5" and "24891.1 ±" not in md
    # its warm-up took 5 of its 20 windows: said, as a storage point's warmup-cut flag would
    assert ("MSER-5 took 25% or more of a row's windows as warm-up — R stride 64 delay 0: 5 of 20 (25%) windows: "
            "the figure with ± is the mean of the windows after it") in md
    (r,) = rows
    assert float(r["bandwidth_MBps"]) == 25531.5 and float(r["bandwidth_MBps_whole_run"]) == 24891.1
    assert_headlines_inside(rows)


def test_compare_differs_the_centres_and_keeps_the_whole_run_figures(tmp_path: Path) -> None:
    a = _run(tmp_path / "a", [(POINT, _storage(38_800.0, (37_800.0, 39_800.0), 0, 20))])
    b = _run(tmp_path / "b", [(POINT, _storage(WHOLE, (LOW, HIGH)))])
    out: dict[str, object] = {}
    md = compare_runs(str(a), str(b), out)
    rows = [r for r in _table(md, "Workload") if r["Figure"] == "IOPS"]
    (row,) = rows
    # fio's figures differ by +24.1k; the figures with intervals, the centres, by +19.6k
    assert row["A"] == "38.8k" and row["B"] == "58.4k" and row["B − A (95 %)"].startswith("+19.6k ± ")
    assert row["How"] == "within-run intervals"
    assert "A point shows its interval's centre (fio's whole-run figure: `--json`)" in md
    storage: Any = out["storage"]
    iops = next(d for d in storage["differences"] if d["figure"] == "IOPS")
    assert iops["diff"] == pytest.approx(19_560.0) and iops["b_whole_run"] == WHOLE and "a_whole_run" in iops
    assert LOW <= iops["b"] <= HIGH and 37_800.0 <= iops["a"] <= 39_800.0


def test_a_reference_sheet_is_judged_by_the_centre(tmp_path: Path) -> None:
    run = _run(tmp_path / "r", [(POINT, _storage(WHOLE, (LOW, HIGH)))])
    sheet = tmp_path / "s.toml"
    sheet.write_text('name = "s"\nsource = "test"\n[[figure]]\nlabel = "r"\nrw = "randrw"\nrwmixread = 70\n'
                     'bs = "4k"\nmetric = "iops"\nvalue = 62000\n')
    (row,) = _table(compare_reference(str(run), load_reference(str(sheet))), "Figure")
    # the run's own 62.9k would sit beside the sheet's 62k; the interval [55.06k, 61.66k] lies below it
    assert row["This run"].startswith("58.4k ± ") and row["Verdict"] == "below"


def test_replicates_in_compare_show_the_within_run_interval_beside_welch(tmp_path: Path) -> None:
    def reps(values: list[float]) -> list[tuple[dict[str, Any], dict[str, Any]]]:
        return [({**POINT, "replicate": k}, _storage(v, (v * 0.99, v * 1.01), 0, 20))
                for k, v in enumerate(values, 1)]

    a = _run(tmp_path / "a", reps([100.0, 102.0, 98.0]))
    b = _run(tmp_path / "b", reps([200.0, 205.0, 195.0]))
    (row,) = [r for r in _table(compare_runs(str(a), str(b)), "Workload") if r["Figure"] == "IOPS"]
    assert row["How"] == "Welch, 3 + 3 runs (within one run: A ±1 %, B ±1 %)"


def test_a_point_without_an_interval_is_said_to_have_none(tmp_path: Path) -> None:
    run = _run(tmp_path / "one", [(POINT, _storage(WHOLE, (LOW, HIGH))), ({**POINT, "iodepth": 4},
                                                                         _storage(30_000.0, None))])
    md, _ = _report(run)
    assert "Shown without ± (no 95 % interval" in md
    assert " — 1 point: randrw 70/30 4K QD4 (IOPS, MB/s, mean latency)." in md


    # a cut never ends on a bare figure: "20…" of "20 samples" reads as twenty of anything
@pytest.mark.parametrize("text,limit,cut", [
    ("too few samples after the warm-up, 20 samples needed", 44, "too few samples after the warm-up…"),
    ("too few samples after the warm-up, 20 samples needed", 200, "too few samples after the warm-up, 20 samples "
                                                                  "needed"),
    ("unbreakable-reason-without-spaces", 10, "unbreakab…")])
def test_a_reason_is_cut_at_a_word_boundary(text: str, limit: int, cut: str) -> None:
    from app.core.sanitize import cut_at_word

    assert cut_at_word(text, limit) == cut and len(cut) <= limit


def test_compare_cuts_a_reason_between_words() -> None:
    from app.cli.compare import _short

    # was "too few samples after the warm-up of 2…": a different number
    assert _short("too few samples after the warm-up of 20 samples", 38) == "too few samples after the warm-up of…"


def _mlc_idle_report(tmp_path: Path) -> str:
    from app.engine.importer import import_files
    from tests.conftest import DATA

    out, _ = import_files([str(DATA / "mlc" / "v3.7-idle-latency.txt")], tmp_path / "imp")
    return _report(Path(out))[0]


def test_an_imported_mlc_figure_keeps_its_digits(tmp_path: Path) -> None:
    """MLC printed "( 80.9    ns)": the report says 80.9, not 80.90."""
    md = _mlc_idle_report(tmp_path)
    (row,) = _table(md, "Stride (B)")
    assert row["Latency (ns)"] == "80.9" and "80.90" not in md


def test_no_heading_stands_empty(tmp_path: Path) -> None:
    """An idle-only memory run has nothing to analyse: no empty "## Analysis" heading."""
    lines = _mlc_idle_report(tmp_path).splitlines()
    heads = [i for i, x in enumerate(lines) if x.startswith("## ")]
    for i, j in zip(heads, heads[1:] + [len(lines)]):
        assert any(x.strip() for x in lines[i + 1:j]), f"{lines[i]} has nothing under it"


def _decimals_of(text: str) -> int:
    return len(text.split(".")[1]) if "." in text else 0


@settings(max_examples=300, deadline=None)
@given(st.floats(1e-3, 1e9), st.floats(1e-3, 1e9), st.floats(0.001, 0.9))
def test_a_figure_printed_with_its_interval_lies_inside_it(value: float, centre: float, rel: float) -> None:
    """Whatever the line's own figure, the figure printed with ± is within its interval (at the precision
    printed: the last digit shown is at most half a unit off)."""
    from app.report.compute import intervals as ci

    iv = (centre * (1 - rel), centre * (1 + rel))
    for text, scale in ((ci.pm_fixed(value, iv, 2), 1.0), (ci.pm_fixed(value, iv, 1, scale=1e3), 1e3),
                        (ci.pm_count(value, iv), 1.0)):
        shown, _half = text.split(" ± ")
        unit = UNITS[shown[-1]] if shown[-1] in "kM" else 1.0
        number = shown.rstrip("kM")
        slack = 0.5 * 10 ** -_decimals_of(number) * unit * scale
        got = float(number) * unit * scale
        assert iv[0] - slack <= got <= iv[1] + slack, (text, iv)
