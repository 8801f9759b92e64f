"""One rule judges every difference the report states (app.report.compute.verdict): each point with all its replicates,
"real" at a 5 % false-alarm rate, "flat" / "no difference" only where the test had 80 % power to see a 10 %
difference, otherwise "not judged" with why — and the seconds of fio's ramp_time are in none of it.

The cases carry the numbers of a review of real reports (three one-second samples of one replicate called
"no difference from 4 KiB to 128 KiB (214 vs 997 MB/s)", "+62 %" called flat, 128K random writes at 2.06 GB/s
against reads at 0.95 GB/s "not suspected" of write-back caching), in results directories in the on-disk
format (run.json, results.jsonl, raw/*.samples.jsonl)."""

from __future__ import annotations

import json
import math
import random
from pathlib import Path
from typing import Any, Sequence

from app.report.compute import noise, verdict
from app.report.data.model import load
from app.report.sections import conditions, trends

VM = {"memory": {"total_bytes": 16 << 30, "available_bytes": 12 << 30},
      "system": {"os": "Debian", "kernel": "6.1", "virtualization": "kvm"}}
FILE = {"type": "file", "path": "/srv/t/testfile", "mount_point": "/", "source": "/dev/vda", "filesystem": "ext4"}


def _point(rw: str, bs: int, qd: int, replicate: int | None = None, ramp: int = 0) -> dict[str, Any]:
    p: dict[str, Any] = {"rw": rw, "bs": bs, "rwmixread": None, "iodepth": qd, "numjobs": 1, "ioengine": "libaio",
                         "direct": True, "runtime": 3, "ramp_time": ramp, "size": 1 << 30, "time_based": True}
    if replicate is not None:
        p["replicate"] = replicate
    return p


def _run(path: Path, points: Sequence[tuple[dict[str, Any], Sequence[float]]],
         ramp: dict[int, float] | None = None) -> Path:
    """A storage run: each point with its per-second bandwidths (bytes/s); the headline is their mean.
    ``ramp``: index → the bandwidth of a first second marked as ramp_time (not in the headline, as in fio)."""
    (path / "raw").mkdir(parents=True)
    lines = []
    for i, (pt, bws) in enumerate(points):
        bw = math.fsum(bws) / len(bws)
        iops = bw / pt["bs"]
        lat = pt["iodepth"] / iops * 1e9
        reads = 100 if "read" in pt["rw"] else 0
        samples = ([{"t": 1.0, "interval_s": 1.0, "ramp": True, "iops": ramp[i] / pt["bs"], "bw_bytes": ramp[i]}]
                   if ramp and i in ramp else [])
        t0 = len(samples)
        samples += [{"t": t0 + t + 1.0, "interval_s": 1.0, "iops": v / pt["bs"], "bw_bytes": v,
                     "lat_mean_ns": pt["iodepth"] / (v / pt["bs"]) * 1e9} for t, v in enumerate(bws)]
        rel = f"raw/{i:04d}-p.samples.jsonl"
        (path / rel).write_text("".join(json.dumps(s) + "\n" for s in samples))
        side = {"min": lat / 2, "max": lat * 4, "mean": lat, "stddev": lat / 3, "p50": lat, "p90": lat, "p99": lat}
        metrics = {"iops": iops, "read_iops": iops * reads / 100, "write_iops": iops * (100 - reads) / 100,
                   "bw_bytes": bw, "read_bw_bytes": bw * reads / 100, "write_bw_bytes": bw * (100 - reads) / 100,
                   "lat_ns": side, "usr_cpu": 3.0, "sys_cpu": 5.0}
        lines.append(json.dumps({"schema_version": 1, "kind": "storage", "index": i, "point": pt, "metrics": metrics,
                                 "target": "/srv/t/testfile", "raw": {"samples": rel}}))
    run = {"schema_version": 1, "tool": "profiler-tui", "kind": "storage", "plan": [p for p, _ in points],
           "points_total": len(points), "points_done": len(points), "target": "/srv/t/testfile",
           "target_info": FILE, "environment": VM, "status": "complete"}
    (path / "run.json").write_text(json.dumps(run))
    (path / "results.jsonl").write_text("\n".join(lines) + "\n")
    return path


MB = 1e6
# three one-second samples of one replicate, as the review found them
SEQ_4K = [150 * MB, 246 * MB, 246 * MB]  # mean 214 MB/s
SEQ_128K = [500 * MB, 1245 * MB, 1246 * MB]  # mean 997 MB/s


def test_three_seconds_of_one_replicate_are_not_judged_never_no_difference(tmp_path: Path) -> None:
    d = _run(tmp_path / "r", [(_point("read", 4096, 32), SEQ_4K), (_point("read", 131072, 32), SEQ_128K)])
    (s,) = trends.block_size_trends(d, load(d).storage)
    assert "no difference" not in s and "flat" not in s, s
    assert s == ("read bandwidth at QD32: 4.7× from 4 KiB to 128 KiB (214 → 997 MB/s), not judged: too few samples: "
                 "3 left after dropping 0 as warm-up, 10 needed."), s


def test_every_replicate_is_used_and_they_judge_the_trend(tmp_path: Path) -> None:
    # repeat=3: replicate 1 is the review's noisy one; the three replicates' means tell the 4.7× apart
    pts = [(_point("read", 4096, 32, 1), SEQ_4K), (_point("read", 131072, 32, 1), SEQ_128K),
           (_point("read", 4096, 32, 2), [210 * MB] * 3), (_point("read", 131072, 32, 2), [1004 * MB] * 3),
           (_point("read", 4096, 32, 3), [218 * MB] * 3), (_point("read", 131072, 32, 3), [990 * MB] * 3)]
    d = _run(tmp_path / "r", pts)
    (s,) = trends.block_size_trends(d, load(d).storage)
    assert s == "read bandwidth at QD32 rises 4.7× from 4 KiB to 128 KiB (214 → 997 MB/s); judged on replicates.", s


def test_a_large_change_is_never_called_flat(tmp_path: Path) -> None:
    # +62 % from QD4 to QD8 over three noisy seconds each: once "flat within noise", now not judged
    pts = [(_point("randread", 4096, 1), [20 * MB, 21 * MB, 20.5 * MB]),
           (_point("randread", 4096, 4), [60 * MB, 100 * MB, 80 * MB]),
           (_point("randread", 4096, 8), [60 * MB, 200 * MB, 129 * MB])]
    d = _run(tmp_path / "r", pts)
    (s,) = trends.queue_depth_trends(d, load(d).storage)
    assert "flat" not in s and "no difference" not in s and "not judged: too few samples" in s, s
    # twelve seconds each, but so noisy (CV 30 %) that a 10 % difference would mostly go unseen: still not judged
    rng = random.Random(4)
    noisy = [(_point("randread", 4096, qd), [m * MB * (1 + 0.3 * rng.gauss(0, 1)) for _ in range(12)])
             for qd, m in ((1, 20), (4, 80), (8, 84))]
    d = _run(tmp_path / "noisy", noisy)
    (s,) = trends.queue_depth_trends(d, load(d).storage)
    assert "flat" not in s and "no difference" not in s and "not judged" in s, s


def test_flat_is_said_only_with_the_power_to_see_ten_percent(tmp_path: Path) -> None:
    # twenty steady seconds per load, one run: its interval cannot see drift between runs (5 % is allowed for it),
    # so "flat" would need more than one run can give: not judged
    steady = [(_point("randread", 4096, qd), [m * MB * (1 + 0.01 * math.sin(2.3 * i)) for i in range(20)])
              for qd, m in ((1, 80), (4, 80.2), (8, 80.1))]
    d = _run(tmp_path / "r", steady)
    (s,) = trends.queue_depth_trends(d, load(d).storage)
    assert "flat" not in s and "not judged: too few samples" in s and "drift between runs" in s, s
    rows = load(d).storage
    v = verdict.judge(d, [rows[0]], [rows[2]], "iops")
    assert v.verdict == "not judged" and v.detectable is not None and v.detectable > 0.10, v
    # eight replicates per load, 1 % apart from run to run: the test sees 10 % even at the 99 % upper bound of
    # their spread, and calls the curve flat (five were enough while the bound was 90 % on the pooled df)
    rng = random.Random(5)
    reps = [(_point("randread", 4096, qd, r), [m * MB * (1 + 0.01 * rng.gauss(0, 1))] * 20)
            for r in range(1, 9) for qd, m in ((1, 80), (4, 80.2), (8, 80.1))]
    d = _run(tmp_path / "reps", reps)
    (s,) = trends.queue_depth_trends(d, load(d).storage)
    assert s.startswith("randread 4 KiB IOPS: flat within noise from QD1 to QD8"), s
    rows = load(d).storage
    v = verdict.judge(d, [p for p in rows if p.iodepth == 1], [p for p in rows if p.iodepth == 8], "iops")
    assert v.verdict == "within noise" and v.detectable is not None and v.detectable <= 0.10, v


def test_one_run_per_point_allows_for_drift_between_runs() -> None:
    """A within-run interval is narrow; two single runs 8 % apart are not "real" on it alone (drift between runs
    of 5 % each is allowed), 30 % apart are."""
    narrow = verdict.interval_estimate(99.5, 100.5, 20)
    assert verdict.compare_estimates(narrow, verdict.interval_estimate(107.5, 108.5, 20)).verdict == "not judged"
    assert verdict.compare_estimates(narrow, verdict.interval_estimate(129.5, 130.5, 20)).verdict == "real"


def test_the_verdict_is_a_structured_value(tmp_path: Path) -> None:
    d = _run(tmp_path / "r", [(_point("read", 4096, 32), SEQ_4K), (_point("read", 131072, 32), SEQ_128K)])
    a, b = load(d).storage
    v = verdict.judge(d, [a], [b], "bw")
    assert (v.verdict, round(v.effect or 0, 2), v.reason.startswith("too few samples")) == ("not judged", 3.66, True)
    assert not v.real and not v.within and v.how == ""


def _replicates(rng: random.Random, mean: float, cv: float, n: int = 3) -> verdict.Side:
    return verdict.replicate_estimate([mean * (1 + cv * rng.gauss(0, 1)) for _ in range(n)])


def test_error_rates_of_the_rule_on_replicates() -> None:
    """Equal truth: "real" at most 5 % of the time (Welch with df rounded down: at or below α); a true 10 %
    difference: "within noise" (flat) at most 20 % of the time, whatever the noise (the power rule)."""
    rng = random.Random(44)
    cases = 3000
    for cv in (0.01, 0.03, 0.08):
        equal = [verdict.compare_estimates(_replicates(rng, 100, cv), _replicates(rng, 100, cv)) for _ in range(cases)]
        false_real = sum(v.real for v in equal) / cases
        assert false_real <= 0.06, (cv, false_real)
        apart = [verdict.compare_estimates(_replicates(rng, 100, cv), _replicates(rng, 110, cv)) for _ in range(cases)]
        false_flat = sum(v.within for v in apart) / cases
        assert false_flat <= 0.20, (cv, false_flat)


WRITE_128K = [1560 * MB, 2310 * MB, 2310 * MB]  # 2.06 GB/s
READ_128K = [650 * MB, 1100 * MB, 1100 * MB]  # 0.95 GB/s


def test_writes_twice_the_reads_are_not_called_not_suspected(tmp_path: Path) -> None:
    d = _run(tmp_path / "r", [(_point("randread", 131072, 16), READ_128K),
                              (_point("randwrite", 131072, 16), WRITE_128K)])
    (row,) = [x for x in "\n".join(conditions.section(load(d))).splitlines() if x.startswith("| Host write-back")]
    assert "not suspected" not in row, row
    assert "not judged: writes beat reads in 1 of the 1 read/write pair (random 128K QD16: write 2060.0 vs read " \
           "950.0 MB/s (+117 %)), but too few samples" in row, row
    # with its three replicates the same ratio is a real difference: suspected, and said so
    reps = [(_point(rw, 131072, 16, r), [bw * (1 + 0.02 * (r - 2))] * 3) for r in (1, 2, 3)
            for rw, bw in (("randread", 950 * MB), ("randwrite", 2060 * MB))]
    d = _run(tmp_path / "reps", reps)
    text = "\n".join(conditions.section(load(d)))
    (row,) = [x for x in text.splitlines() if x.startswith("| Host write-back")]
    assert "suspected: writes beat reads beyond noise in 1 of the 1 read/write pair" in row, row
    assert "> Host write-back caching suspected" in text


def test_ramp_seconds_are_left_out_of_the_noise_analysis(tmp_path: Path) -> None:
    d = _run(tmp_path / "r", [(_point("randread", 4096, 16, ramp=1), [80 * MB, 81 * MB, 80.5 * MB])],
             ramp={0: 2 * MB})
    (row,) = load(d).storage
    spread = noise.point_spread(d, row, "bw")
    assert spread is not None and spread.n == 3 and spread.lo == 80 * MB, spread
    assert all(s.get("ramp") is not True for s in noise.samples_of(d, row))


def _qd_curve(path: Path) -> Path:
    """A qd-scaling curve on a noisy machine: 60 one-second samples per load with a 50 % spread, QD128 40 %
    above QD64 and QD8, QD256 +15 % over QD8 (the review's numbers)."""
    rng = random.Random(7)
    means = ((1, 20_000, 0.02), (8, 100_000, 0.5), (16, 105_000, 0.5), (32, 110_000, 0.5), (64, 100_000, 0.5),
             (128, 140_000, 0.5), (256, 115_000, 0.5))
    pts = [(_point("randread", 4096, qd), [max(0.05, 1 + cv * rng.gauss(0, 1)) * m * 4096 for _ in range(60)])
           for qd, m, cv in means]
    return _run(path, pts)


def test_one_curve_gets_one_verdict_in_the_trends_and_the_queueing_view(tmp_path: Path) -> None:
    from app.report.compute import analysis
    from app.report.sections import queue_text

    d = _qd_curve(tmp_path / "r")
    rows = load(d).storage
    (trend,) = trends.queue_depth_trends(d, rows)
    queue = "\n".join(queue_text.section(analysis.storage_curves(rows), (), d, rows))
    # before: the trends said "flat within noise to QD256 (+15 %)" while the queueing view called QD8 → QD128
    # beyond noise; now both word the curve's one judgement: the peak at QD128, reached beyond noise
    assert "flat within noise" not in trend, trend
    assert trend.startswith("randread 4 KiB IOPS rises"), trend
    assert " to QD128 (" in trend, trend
    assert "From QD8, the first load at or above N*, to QD128, where the curve peaks" in queue, queue
    assert "a real growth" in queue, queue
    c = verdict.curve(d, verdict.along(rows, lambda p: p.inflight), "iops")
    assert c.top == 5 and c.rise.real and c.between(1, 5).real


def test_a_reason_quoted_from_a_results_line_is_escaped(tmp_path: Path) -> None:
    d = _run(tmp_path / "r", [(_point("read", 4096, 32), SEQ_4K), (_point("read", 131072, 32), SEQ_128K)])
    lines = [json.loads(x) for x in (d / "results.jsonl").read_text().splitlines()]
    for rec in lines:
        rec["metrics"]["ci_method"] = {"method": "none", "reason": "\x1b[31mtoo few | [x](http://e.test) *samples*"}
    (d / "results.jsonl").write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    (s,) = trends.block_size_trends(d, load(d).storage)
    assert "\x1b" not in s and "[x](" not in s and " | " not in s, s
    assert "not judged" in s, s


# repeat=3 on a noisy machine: the 4 KiB side steady, the 128 KiB side 5.5× faster and scattering in proportion
REPS_4K = (200 * MB, 214 * MB, 230 * MB)  # mean 215 MB/s
REPS_128K = (700 * MB, 1100 * MB, 1700 * MB)  # mean 1167 MB/s: 5.4× the 4 KiB side


def test_a_five_fold_difference_of_noisy_replicates_is_judged_on_the_log_scale(tmp_path: Path) -> None:
    """Bandwidth scatters in proportion to its level: on the raw scale the fast side's spread (±500 MB/s) hid a
    5.5× difference ("not judged"); as a ratio of the replicates' geometric means, with each side's spread
    relative to its level, it is real."""
    pts = [(_point("read", bs, 32, r), [bw] * 3) for r in (1, 2, 3)
           for bs, bw in ((4096, REPS_4K[r - 1]), (131072, REPS_128K[r - 1]))]
    d = _run(tmp_path / "r", pts)
    rows = load(d).storage
    v = verdict.judge(d, [p for p in rows if p.bs == 4096], [p for p in rows if p.bs == 131072], "bw")
    assert v.verdict == "real" and v.how == "replicates", v
    # the effect is the ratio of the geometric means, its interval that of the ratio: both above 1
    geo = math.exp(sum(math.log(x) for x in REPS_128K) / 3 - sum(math.log(x) for x in REPS_4K) / 3)
    assert v.effect is not None and math.isclose(1 + v.effect, geo) and v.low is not None and v.low > 0, v
    (s,) = trends.block_size_trends(d, rows)
    assert s.startswith("read bandwidth at QD32 rises") and "not judged" not in s, s


def test_equal_noisy_replicates_are_still_not_real_on_the_log_scale() -> None:
    """The same spread with no difference: never real (the ratio's interval straddles 1), and not "within noise"
    either (three replicates this scattered cannot see 10 %)."""
    v = verdict.compare_estimates(verdict.replicate_estimate(REPS_128K),
                                  verdict.replicate_estimate(tuple(x * 1.02 for x in REPS_128K[::-1])))
    assert v.verdict == "not judged" and v.low is not None and v.high is not None and v.low < 0 < v.high, v


def test_the_size_a_test_could_see_reads_as_a_size_not_a_ten_digit_percent() -> None:
    """Three noisy replicates at their spread's 99 % bound see only huge differences: "4529358162 %" was printed."""
    from app.report.compute.verdict import difference_text

    assert difference_text(0.24) == "a 24 % difference" and difference_text(6.4) == "a 640 % difference"
    assert difference_text(39.0) == "a 40-fold difference"
    assert difference_text(45293581.62) == "differences over 1000-fold"
