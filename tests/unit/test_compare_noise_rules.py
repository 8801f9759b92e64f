"""`compare` knows noise: each matched difference B − A with its 95 % interval — Welch's on replicates, the two
lines' intervals in quadrature (their ``ci95``, or computed from kept samples), or none — and the verdict
"real" / "within noise" / "no interval"; a spec sheet's figure "as specified" when the run's interval holds it.
Hand-made results directories, so each method is forced."""

from __future__ import annotations

import json
import math
import random
import re
from pathlib import Path

from app.cli.compare import compare_reference, compare_runs, load_reference
from app.core.textable import markdown_cells
from tests.conftest import run_cli
from tests.helpers.compare_util import make_run, metrics, replicates


def _rows(md: str) -> list[dict[str, str]]:
    table = [markdown_cells(line) for line in md.splitlines()
             if line.startswith("|") and not re.match(r"^\|[-:| ]+\|$", line)]
    return [dict(zip(table[0], r)) for r in table[1:]]


def _figure(md: str, figure: str) -> list[dict[str, str]]:
    return [r for r in _rows(md) if r.get("Figure") == figure]


def test_replicates_on_both_sides_use_welch_and_pair_the_groups(tmp_path: Path) -> None:
    """Three replicates a side (three lines of one point each): the shown figure is their mean, the difference
    Welch's; 100/102/98 against 101/99/103 cannot show 10 % with 80 % power (three replicates' spread is known
    too roughly): too few samples, never "within noise"; five tighter replicates can; against 200/205/195 real."""
    a = make_run(tmp_path / "a", replicates([100, 102, 98]))
    same = make_run(tmp_path / "same", replicates([101, 99, 103]))
    faster = make_run(tmp_path / "faster", replicates([200, 205, 195]))
    md = compare_runs(str(a), str(same))
    (row,) = _figure(md, "IOPS")
    assert row["A"] == "100" and row["B"] == "101" and row["How"] == "Welch, 3 + 3 runs"
    assert row["Noise"] == "too few samples"
    assert "the replicates' spread is too wide, or known too roughly" in md
    # Welch: diff 1, se √(4/3 + 4/3), df 4 → t 2.776, half 4.53
    assert row["B − A (95 %)"] == "+1 ± 5"
    a5 = make_run(tmp_path / "a5", replicates([100, 101, 99, 100.5, 99.5]))
    same5 = make_run(tmp_path / "same5", replicates([100.5, 99.5, 100, 101, 99]))
    (row,) = _figure(compare_runs(str(a5), str(same5)), "IOPS")
    assert row["How"] == "Welch, 5 + 5 runs" and row["Noise"] == "within noise"
    md = compare_runs(str(a), str(faster))
    (row,) = _figure(md, "IOPS")
    assert row["Noise"] == "real" and row["B − A (95 %)"].startswith("+100 ± ")
    # mean latency and p99 too: both judged on the replicates
    assert _figure(md, "Mean µs")[0]["Noise"] == _figure(md, "p99 µs")[0]["Noise"] == "real"
    assert "**4 real**" in md and "0 within noise" in md


def test_lines_with_intervals_only_add_them_in_quadrature(tmp_path: Path) -> None:
    a = make_run(tmp_path / "a", [{"metrics": metrics(1000, (990, 1010))}])
    near = make_run(tmp_path / "near", [{"metrics": metrics(1030, (1020, 1040))}])
    far = make_run(tmp_path / "far", [{"metrics": metrics(1300, (1290, 1310))}])
    # +3 % is beyond the two intervals, not beyond the 5 % drift between runs each single run is allowed
    (row,) = _figure(compare_runs(str(a), str(near)), "IOPS")
    assert row["How"] == "within-run intervals" and row["Noise"] == "too few samples"
    assert row["B − A (95 %)"] == f"+30 ± {math.hypot(10, 10):.0f}"
    md = compare_runs(str(a), str(far))
    (row,) = _figure(md, "IOPS")
    assert row["Noise"] == "real" and row["B − A (95 %)"] == "+300 ± 14"
    # the lines' ci_method says why MB/s has none: not judged, never real, the reason given once
    (bw,) = _figure(md, "MB/s")
    assert bw["Noise"] == "no interval" and bw["How"] == "A, B: left out by this test"
    assert "**1 real**" in md and "2 not judged" in md and "- A: left out by this test (2×)" in md


def test_a_line_without_ci95_gets_its_interval_from_its_kept_samples(tmp_path: Path) -> None:
    """A run from before intervals were recorded: the interval comes from raw/…samples.jsonl (batch means)."""
    rng = random.Random(7)
    a = make_run(tmp_path / "a", [{"metrics": metrics(1000), "samples": [1000 + rng.gauss(0, 20) for _ in range(40)]}])
    b = make_run(tmp_path / "b", [{"metrics": metrics(1001), "samples": [1001 + rng.gauss(0, 20) for _ in range(40)]}])
    c = make_run(tmp_path / "c", [{"metrics": metrics(1200), "samples": [1200 + rng.gauss(0, 20) for _ in range(40)]}])
    md = compare_runs(str(a), str(b))
    # one run a side: never "within noise" (drift between runs is allowed for and a 10 % difference could hide)
    assert {r["Figure"]: r["Noise"] for r in _rows(md)} == {"IOPS": "too few samples", "MB/s": "too few samples",
                                                            "Mean µs": "too few samples", "p99 µs": ""}
    assert _figure(md, "IOPS")[0]["How"] == "within-run intervals"
    md = compare_runs(str(a), str(c))
    assert {r["Noise"] for r in _rows(md) if r["Figure"] != "p99 µs"} == {"real"}


def test_neither_replicates_nor_intervals_nor_samples_is_no_interval_and_never_real(tmp_path: Path) -> None:
    a = make_run(tmp_path / "a", [{"metrics": metrics(1000)}])
    b = make_run(tmp_path / "b", [{"metrics": metrics(3000)}])
    md = compare_runs(str(a), str(b))
    (row,) = _figure(md, "IOPS")
    assert row["B/A"] == "3.00×" and row["Noise"] == "no interval" and row["B − A (95 %)"] == ""
    assert row["How"] == "A, B: no samples"
    assert "**0 real**" in md and "3 not judged" in md


def test_one_side_repeated_uses_its_replicates_interval(tmp_path: Path) -> None:
    a = make_run(tmp_path / "a", replicates([1000, 1010, 990]))
    b = make_run(tmp_path / "b", [{"metrics": metrics(1500, (1490, 1510))}])
    (row,) = _figure(compare_runs(str(a), str(b)), "IOPS")
    assert row["How"] == "within-run intervals (A 3 runs)" and row["Noise"] == "real"


def test_memory_points_judged_on_their_ci95_else_no_interval(tmp_path: Path) -> None:
    point = {"mode": "idle", "stride": 64, "buffer": 1 << 28}
    idle = {"latency_ns": 90.0, "ci95": {"latency_ns": [89.0, 91.0]},
            "ci_method": {"method": "batch-means", "level": 0.95, "samples": 20, "series": {}}}
    a = make_run(tmp_path / "a", [{"point": point, "metrics": idle}], "memory")
    b = make_run(tmp_path / "b", [{"point": point, "metrics": {**idle, "latency_ns": 120.0,
                                                           "ci95": {"latency_ns": [119.0, 121.0]}}}], "memory")
    old = make_run(tmp_path / "old", [{"point": point, "metrics": {"latency_ns": 90.5}}], "memory")
    (row,) = _figure(compare_runs(str(a), str(b)), "Latency ns")
    assert row["Noise"] == "real" and row["B − A (95 %)"] == "+30.00 ± 1.41"
    (row,) = _figure(compare_runs(str(a), str(old)), "Latency ns")
    assert row["Noise"] == "no interval" and row["How"].startswith("B: no ci95 in the line")


def test_spec_sheet_figure_inside_the_interval_is_as_specified(tmp_path: Path) -> None:
    run = make_run(tmp_path / "run", [{"metrics": metrics(1000, (990, 1010))}])
    for value, verdict in ((1005, "as specified"), (900, "above"), (1100, "below")):
        sheet = tmp_path / f"s{value}.toml"
        sheet.write_text(f'name = "s"\nsource = "test"\n[[figure]]\nlabel = "r"\nrw = "randread"\nbs = "4k"\n'
                         f'metric = "iops"\nvalue = {value}\n')
        md = compare_reference(str(run), load_reference(str(sheet)))
        (row,) = _rows(md)
        assert row["This run"] == "1000 ± 10" and row["Verdict"] == verdict, md
    assert "**0 as specified**, 0 above, 1 below" in md
    # MB/s has no interval in this line: said, not judged
    sheet = tmp_path / "bw.toml"
    sheet.write_text('name = "s"\nsource = "test"\n[[figure]]\nlabel = "r"\nrw = "randread"\nbs = "4k"\n'
                     'metric = "bw_mbps"\nvalue = 4\n')
    (row,) = _rows(compare_reference(str(run), load_reference(str(sheet))))
    assert row["Verdict"] == "no interval: left out by this test"


def test_compare_json_carries_each_difference_and_the_counts(tmp_path: Path) -> None:
    a = make_run(tmp_path / "a", [{"metrics": metrics(1000, (990, 1010))}])
    b = make_run(tmp_path / "b", [{"metrics": metrics(1300, (1290, 1310))}])
    proc = run_cli("compare", str(a), str(b), "--json")
    assert proc.returncode == 0, proc.stderr
    got = json.loads(proc.stdout)["storage"]
    assert (got["real"], got["within_noise"], got["not_judged"]) == (1, 0, 2)
    iops = next(d for d in got["differences"] if d["figure"] == "IOPS")
    assert iops["method"] == "intervals" and iops["within_noise"] is False and iops["verdict"] == "real"
    assert iops["diff"] == 300 and math.isclose(iops["high"] - iops["diff"], math.hypot(10, 10))
    bw = next(d for d in got["differences"] if d["figure"] == "MB/s")
    assert bw["verdict"] == "no interval" and "diff" not in bw
    sheet = tmp_path / "s.toml"
    sheet.write_text('name = "s"\nsource = "test"\n[[figure]]\nlabel = "r"\nrw = "randread"\nbs = "4k"\n'
                     'metric = "iops"\nvalue = 1005\n')
    proc = run_cli("compare", str(a), "--reference", str(sheet), "--json")
    (fig,) = json.loads(proc.stdout)["reference"]["figures"]
    assert (fig["low"], fig["high"], fig["verdict"]) == (990, 1010, "as specified")


def test_a_bogus_interval_never_makes_a_run_as_specified(tmp_path: Path) -> None:
    """A run of 1,041 IOPS against a sheet of 5,205 (0.20×) whose ``ci95`` was widened to hold the sheet's
    figure is not judged (its interval is centred at 3,100, above what any warm-up cut of a run whose whole-run
    figure is 1,041 allows); a one-value interval is none either."""
    sheet = tmp_path / "s.toml"
    sheet.write_text('name = "s"\nsource = "test"\n[[figure]]\nlabel = "r"\nrw = "randread"\nbs = "4k"\n'
                     'metric = "iops"\nvalue = 5205\n')
    wide = make_run(tmp_path / "wide", [{"metrics": metrics(1041, (900, 5300))}])
    md = compare_reference(str(wide), load_reference(str(sheet)))
    (row,) = _rows(md)
    assert row["This run"] == "1041" and row["Ratio"] == "0.20×"
    assert row["Verdict"].startswith("no interval: its interval [900, 5,300] is centred at")
    assert "**0 as specified**" in md and "1 without an interval (not judged)" in md
    assert ("- its interval \\[900, 5,300\\] is centred at 3,100, more than 2.5× the whole-run figure 1,041, "
            "which no warm-up cut allows (1×)") in md
    one = make_run(tmp_path / "one", [{"metrics": metrics(924, (924, 924))}])
    (row,) = _rows(compare_reference(str(one), load_reference(str(sheet))))
    assert row["This run"] == "924" and row["Verdict"] == "no interval: its interval [924, 924] has zero width"
    # against another run: not "within noise" either
    other = make_run(tmp_path / "other", [{"metrics": metrics(5205, (5100, 5300))}])
    (row,) = _figure(compare_runs(str(wide), str(other)), "IOPS")
    assert row["Noise"] == "no interval" and row["How"].startswith("A: its interval [900, 5,300]")


def test_a_five_fold_difference_of_noisy_replicates_is_real_and_its_interval_excludes_zero(tmp_path: Path) -> None:
    """Three replicates a side, B 5.4× A and scattering in proportion (700–1700 against 200–230): on the raw
    scale B's spread hid the difference (too few samples, an interval of B − A through 0); as a ratio, with each
    side's spread relative to its level, it is real, and the interval shown — the ratio's, at A's level —
    excludes 0, in the table and in ``--json``."""
    a = make_run(tmp_path / "a", replicates([200, 214, 230]))
    b = make_run(tmp_path / "b", replicates([700, 1100, 1700]))
    out: dict[str, object] = {}
    md = compare_runs(str(a), str(b), out)
    (row,) = _figure(md, "IOPS")
    assert row["Noise"] == "real" and row["How"] == "Welch, 3 + 3 runs", md
    centre, half = (float(x) for x in re.findall(r"[\d.]+", row["B − A (95 %)"]))
    assert row["B − A (95 %)"].startswith("+") and centre - half > 0, row
    storage = out["storage"]
    assert isinstance(storage, dict)
    (rec,) = [r for r in storage["differences"] if r["figure"] == "IOPS"]
    assert rec["verdict"] == "real" and rec["low"] > 0 and rec["within_noise"] is False, rec
