"""The report's queueing view: each queue-depth curve against the asymptotic bounds of a closed system
(app/report/compute/queueing.py, queue_text.py, queue_plots.py), on a synthetic sweep with the numbers of a reviewed
qd-scaling run: QD1 65.94 µs, X_max 146,617 IOPS (QD128), QD16 103k IOPS at 155 µs, QD32 260 µs, QD64 139.6k
IOPS at 458 µs, QD256 1789.35 µs; fio's disk util 79.7 % at QD1 to 96.8 % at QD256."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Any, Sequence

import pytest

from app.report import render_report
from app.report.compute import analysis as an
from app.report.compute import queueing as qm
from app.report.data.model import StorageRow

# (QD, IOPS, mean latency µs, disk util %, slat µs): R = N/X where the review gave only one of them
REVIEWED = [(1, 1e6 / 65.94, 65.94, 79.7, 16.1), (2, 28_000, 2e6 / 28_000, 85.0, 9.0),
            (4, 50_000, 80.0, 90.0, 6.0), (8, 80_000, 100.0, 93.0, 5.0), (16, 103_000, 155.0, 95.0, 4.5),
            (32, 32e6 / 260, 260.0, 95.5, 4.2), (64, 139_600, 458.0, 96.0, 4.1),
            (128, 146_617, 128e6 / 146_617, 96.5, 4.0), (256, 256e6 / 1789.35, 1789.35, 96.8, 4.0)]


def _metrics(iops: float, lat_us: float, util: float | None, slat_us: float | None) -> dict[str, Any]:
    lat = {k: 0.0 for k in ("min", "max", "stddev", "p50", "p90", "p99_9", "p99_99")}
    lat.update(mean=lat_us * 1e3, p99=lat_us * 2e3)
    m: dict[str, Any] = {"iops": iops, "bw_bytes": iops * 4096, "lat_ns": lat}
    if util is not None:
        m["disk_util"] = [{"name": "nvme0n1", "util": util}]
    if slat_us is not None:
        m["slat_ns"] = {"mean": slat_us * 1e3}
        m["clat_ns"] = {"mean": (lat_us - slat_us) * 1e3, "p99": lat_us * 2e3}
    return m


def _run(d: Path, rows: Sequence[tuple[int, float, float, float | None, float | None]],
         samples: dict[int, list[float]] | None = None) -> Path:
    """A results directory of the rows; ``samples``: per-second IOPS of some loads (QD → values)."""
    d.mkdir(parents=True, exist_ok=True)
    (d / "raw").mkdir(exist_ok=True)
    points = [{"rw": "randread", "bs": 4096, "iodepth": qd, "numjobs": 1, "ioengine": "libaio", "direct": 1}
              for qd, *_ in rows]
    (d / "run.json").write_text(json.dumps({"kind": "storage", "status": "complete", "plan": points}))
    lines = [json.dumps({"schema_version": 1, "kind": "storage", "index": i, "point": p,
                         "metrics": _metrics(iops, lat, util, slat)})
             for i, (p, (_qd, iops, lat, util, slat)) in enumerate(zip(points, rows))]
    for i, (qd, *_rest) in enumerate(rows):
        if qd in (samples or {}):
            rel = f"raw/{i:04d}.samples.jsonl"
            (d / rel).write_text("".join(json.dumps({"t": t + 1.0, "interval_s": 1.0, "iops": v}) + "\n"
                                         for t, v in enumerate((samples or {})[qd])))
            rec = json.loads(lines[i])
            rec["raw"] = {"samples": rel}
            lines[i] = json.dumps(rec)
    (d / "results.jsonl").write_text("\n".join(lines) + "\n")
    return d


def _section(md: str) -> str:
    start = md.index("### Queueing view")
    nxt = md.find("\n### ", start + 4)
    return md[start:] if nxt < 0 else md[start:nxt]


@pytest.fixture(scope="module")
def reviewed(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    d = _run(tmp_path_factory.mktemp("q") / "run", REVIEWED)
    return d, _section(render_report(d).read_text(encoding="utf-8"))


def _row(section: str, load: str) -> list[str]:
    line = next(x for x in section.splitlines() if x.startswith(f"| {load} "))
    return [c.strip() for c in line.strip("|").split("|")]


def test_no_open_queue_formula_is_applied_to_the_closed_loop(reviewed: tuple[Path, str]) -> None:
    """Wrong today: an M/M/1 wait of ρ/(1−ρ) service times, with S the QD1 latency as one server's service time."""
    text = reviewed[1]
    assert "M/M/1" not in text and "ρ/(1−ρ)" not in text and "service times" not in text
    assert "closed loop" in text and "Open-queue formulas assume arrivals that do not depend on the queue" in text


def test_n_star_is_the_crossing_of_the_bounds_not_where_throughput_stops(reviewed: tuple[Path, str]) -> None:
    """Wrong today: "N* = X_max·S = 9.7 … above it only latency grows (R ≈ N/X_max)" while IOPS still grew."""
    text = reviewed[1]
    assert "only latency grows" not in text
    assert "The bounds cross at N* = S · X_max = 9.67 I/Os in flight." in text  # 65.94e-6 × 146,617 = 9.668
    assert "N* is that crossing, not the depth where throughput stops growing" in text
    # past N*: from QD16 (the first load above 9.67) to the X_max load QD128, +42.3 % (146,617 / 103,000)
    assert "From QD16, the first load at or above N*, to QD128, where the curve peaks, IOPS changed +42.3 %" in text
    # R ≥ N/X_max is N over X's bound: R / its bound = 1 / (X / its bound) — not tabled again
    qd16, qd32 = _row(text, "QD16"), _row(text, "QD32")
    assert qd16[4:6] == ["0.70", "155.00"] and round(1 / 0.7025, 2) == round(155.00 / 109.13, 2) == 1.42
    assert qd32[4:6] == ["0.84", "260.00"]
    # below N* the throughput bound is N/S: QD8 could at best do 8 / 65.94 µs = 121,322 IOPS; 80k is 0.66 of it
    assert _row(text, "QD8")[2:5] == ["80,000", "121,322 = N/S", "0.66"]
    assert _row(text, "QD128")[2:5] == ["146,617", "146,617 = X_max", "1.00"]
    assert "X_max = 146,617 IOPS, the most measured (QD128), is a lower bound of the capacity." in text


def test_latency_beyond_qd1_is_not_called_queueing(reviewed: tuple[Path, str]) -> None:
    """Wrong today: "96 % of the 1789.35 µs is queueing", as if each I/O still took the QD1 latency."""
    text = reviewed[1]
    assert "is queueing" not in text and "not time spent waiting" not in text
    # 1789.35 / 65.94 = 27.14; 1 − 65.94 / 1789.35 = 0.963; 1789.35 − 65.94 = 1723.41
    assert ("At QD256, R = 1789.35 µs is 27.14× the QD1 latency: 96 % of it (1723.41 µs) is time more than the QD1 "
            "latency. Where it went — waiting in a queue before the device, or the device serving many I/Os at once, "
            "each slower than alone — is not split: the device counters were not recorded for this load") in text
    assert "the QD1 latency itself includes 16.10 µs of submission (slat)" in text


def test_disk_util_and_the_slat_clat_split_per_point(reviewed: tuple[Path, str]) -> None:
    text = reviewed[1]
    assert _row(text, "QD1")[6:] == ["79.7", "16.10", "49.84"]
    assert _row(text, "QD256")[6:] == ["96.8", "4.00", "1785.35"]
    assert "not X / X_max" in text


def test_old_lines_say_not_recorded_never_zero(tmp_path: Path) -> None:
    rows = [(qd, x, r, None, None) for qd, x, r, _u, _s in REVIEWED]
    text = _section(render_report(_run(tmp_path / "old", rows)).read_text(encoding="utf-8"))
    assert _row(text, "QD64")[6:] == ["n/a", "n/a", "n/a"]
    assert "Disk util, slat and clat: not recorded (n/a)" in text
    assert "includes" not in text  # no slat to quote


def test_a_curve_without_qd1_states_its_s_as_approximate(tmp_path: Path) -> None:
    rows = [r for r in REVIEWED if r[0] >= 4]
    text = _section(render_report(_run(tmp_path / "qd4", rows)).read_text(encoding="utf-8"))
    assert "S ≈ 80.00 µs, the mean latency at the lightest load, QD4 (no QD1 point" in text
    assert "the N/S bound is an approximation" in text
    assert "the QD4 latency" in text and "the QD1 latency:" not in text


def test_hostile_recorded_values_are_left_out(tmp_path: Path) -> None:
    """A results directory is untrusted: a disk name with a terminal escape, a util that is a string, NaN or
    huge, a slat that is not a number: the report shows n/a, never the value, never crashes."""
    d = _run(tmp_path / "bad", [(qd, x, r, u, s) for qd, x, r, u, s in REVIEWED[:3]])
    lines = [json.loads(x) for x in (d / "results.jsonl").read_text().splitlines()]
    lines[0]["metrics"]["disk_util"] = [{"name": "\x1b[31mnvme0n1", "util": 50.0}]
    lines[1]["metrics"]["disk_util"] = [{"name": "sda", "util": "99"}, {"name": "sdb", "util": 1e300}]
    lines[1]["metrics"]["slat_ns"] = {"mean": "16"}
    lines[2]["metrics"]["disk_util"] = "sda"
    lines[2]["metrics"]["clat_ns"] = {"mean": -5}
    (d / "results.jsonl").write_text("\n".join(json.dumps(x) for x in lines).replace("1e+300", "NaN") + "\n")
    text = _section(render_report(d).read_text(encoding="utf-8"))
    assert "\x1b" not in text and "nvme0n1" not in text
    assert _row(text, "QD1")[6] == "n/a"
    assert _row(text, "QD2")[6:8] == ["n/a", "n/a"]
    assert _row(text, "QD4")[6] == "n/a" and _row(text, "QD4")[8] == "n/a"


def test_the_figure_is_drawn_and_listed_in_the_queueing_section(reviewed: tuple[Path, str]) -> None:
    d, text = reviewed
    assert "![Throughput and latency against the closed-system bounds](plots/queueing-bounds.svg)" in text
    svg = (d / "plots" / "queueing-bounds.svg").read_text()
    assert "N* = 9.7" in svg and "N/X_max" in svg and "X_max" in svg


def _sp(qd: int, iops: float, lat_us: float) -> StorageRow:
    return StorageRow.of(qd, {"rw": "randread", "bs": 4096, "iodepth": qd, "numjobs": 1},
                      {"iops": iops, "lat_ns": {"mean": lat_us * 1e3}})


def test_bounds_hand_computed() -> None:
    """S = 100 µs, X_max = 40k: N* = 4; X(2) ≤ 20k, X(8) ≤ 40k; R(2) ≥ 100 µs, R(8) ≥ 200 µs."""
    (c,) = an.storage_curves([_sp(1, 10_000, 100), _sp(2, 15_000, 133.3), _sp(8, 40_000, 200)])
    q = qm.queue_curve(c)
    assert q is not None and math.isclose(q.n_star, 4.0) and q.s_exact
    p2, p8 = q.points[1], q.points[2]
    assert math.isclose(p2.x_bound, 20_000) and p2.x_bound_is_n_over_s and math.isclose(p2.x_ratio, 0.75)
    assert math.isclose(p2.r_bound, 100e3) and p2.r_bound_is_s
    assert math.isclose(p8.x_bound, 40_000) and not p8.x_bound_is_n_over_s
    assert math.isclose(p8.r_bound, 200e3) and not p8.r_bound_is_s and math.isclose(p8.r_ratio, 1.0)
    assert q.top_is_heaviest and q.growth_past_n_star() is None  # no load between N* and X_max's


def test_figure_caption_says_what_is_plotted(reviewed: tuple[Path, str]) -> None:
    caption = re.search(r"\*\*Figure: Throughput and latency against the closed-system bounds\.\*\* (.*)",
                        reviewed[1])
    assert caption and "N\\* = S · X_max" in caption.group(1) and "log₂" in caption.group(1)  # a caption is text


@pytest.mark.parametrize(("spread", "says"), [
    (1_000, "IOPS changed +42.3 % (103,000 → 146,617 IOPS): a real growth (within-run intervals, each widened by "
            "5 % for the drift between runs they cannot see; 99.4 % interval of the difference"),
    (60_000, "IOPS changed +42.3 % (103,000 → 146,617 IOPS), not judged: too few samples: with within-run intervals, "
             "each widened by 5 % for the drift between runs they cannot see, the test sees only a"),
])
def test_the_growth_past_n_star_carries_its_noise(tmp_path: Path, spread: float, says: str) -> None:
    """The rise QD16 → QD128 is the curve's verdict (app/report/compute/verdict.py) on the loads' batch-means
    intervals."""
    samples = {16: [103_000 - spread, 103_000, 103_000 + spread] * 4,
               128: [146_617 - spread, 146_617, 146_617 + spread] * 4}
    text = _section(render_report(_run(tmp_path / "n", REVIEWED, samples)).read_text(encoding="utf-8"))
    assert says in text, text
    assert "within noise" not in text


def test_without_samples_the_growth_is_not_judged(reviewed: tuple[Path, str]) -> None:
    assert ("From QD16, the first load at or above N*, to QD128, where the curve peaks, IOPS changed +42.3 % "
            "(103,000 → 146,617 IOPS), not judged: too few samples: the line records no interval and kept no "
            "per-second samples.") in reviewed[1]


def test_the_gap_to_the_bounds_is_named_as_parallelism_lost(reviewed: tuple[Path, str]) -> None:
    # QD8: X·S = 80,000 × 65.94 µs = 5.3 of the 8 I/Os served as fast as one alone; R 100 / 65.94 = 1.52× S
    assert ("Farthest from the bounds: QD8, X at 66 % of its bound (effectively 5.3 of 8 I/Os served at once).") \
        in reviewed[1]
    # R's bound is N over X's (Little's law): no column restates X / bound as its reciprocal
    assert "R / bound" not in reviewed[1] and "R bound" not in reviewed[1]


def test_a_lightest_load_slower_than_a_busier_one_is_said_to_overstate_s(tmp_path: Path) -> None:
    """A virtual disk answered QD1 in 396.61 µs and QD4 in 279.77 µs: X(4) = 14,237 IOPS > 4/S = 10,085, so
    N/S is no bound there, and the report says so instead of a 'parallelism' above 100 %."""
    rows = [(1, 1e6 / 396.61, 396.61, None, None), (4, 14_237, 4e6 / 14_237, None, None),
            (16, 29_531, 16e6 / 29_531, None, None)]
    text = _section(render_report(_run(tmp_path / "vm", rows)).read_text(encoding="utf-8"))
    assert "X exceeds its bound at QD4: the lightest load's latency overstates the time of one I/O" in text
    assert _row(text, "QD4")[3:5] == ["10,085 = N/S", "1.41"]
    assert "Farthest from the bounds" not in text  # no load is 5 % or more below its bound


def test_more_curves_than_the_figure_draws_get_a_summary_row_each(tmp_path: Path) -> None:
    """Eight block sizes of the reviewed curve: every curve has its row (S, X_max, N*, growth, farthest), the six
    drawn in the figure their per-load table, and the caption names the two left out."""
    d = tmp_path / "many"
    d.mkdir()
    points: list[dict[str, object]] = []
    lines: list[str] = []
    for k in range(8):
        for qd, iops, lat, _u, _s in REVIEWED:
            p = {"rw": "randread", "bs": 4096 << k, "iodepth": qd, "numjobs": 1, "ioengine": "libaio", "direct": 1}
            lines.append(json.dumps({"schema_version": 1, "kind": "storage", "index": len(points), "point": p,
                                     "metrics": _metrics(iops, lat, None, None)}))
            points.append(p)
    (d / "run.json").write_text(json.dumps({"kind": "storage", "status": "complete", "plan": points}))
    (d / "results.jsonl").write_text("\n".join(lines) + "\n")
    text = _section(render_report(d).read_text(encoding="utf-8"))
    rows = [x for x in text.splitlines() if x.startswith("| randread ")]
    assert len(rows) == 8
    cells = [c.strip() for c in rows[0].strip("|").split("|")]
    assert cells == ["randread 4K", "QD1–QD256", "65.94", "146,617 (QD128)", "9.67",
                     "+42.3 % (QD16→QD128, not judged)", "QD8: 0.66", "27.14"]
    assert text.count("| Load ") == 6 and "**randread 128K**" in text and "**randread 256K**" not in text
    assert "2 more curve(s) (randread 256K, randread 512K) are not drawn" in text


def test_the_time_is_split_by_what_the_device_counters_support(tmp_path: Path) -> None:
    """A virtio disk at QD256: R = 4213 µs of which the device counters show 1893 µs. Wrong before: "not time
    spent waiting in one queue", and the rest labelled software time in the device check."""
    rows = REVIEWED[:-1] + [(256, 256e6 / 4213, 4213.0, 96.8, 4.0)]
    d = _run(tmp_path / "dev", rows)
    device_us = {qd: lat * 0.9 for qd, _x, lat, _u, _s in rows} | {256: 1893.0}
    lines = [json.loads(x) for x in (d / "results.jsonl").read_text().splitlines()]
    for rec, (qd, *_r) in zip(lines, rows):
        rec["device"] = {"name": "vda", "source": "filesystem", "lat_mean_ns": device_us[qd] * 1e3,
                         "read_ratio": 1.0, "write_ratio": None}
    (d / "results.jsonl").write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    md = render_report(d).read_text(encoding="utf-8")
    text = _section(md)
    assert "not time spent waiting" not in text and "Software" not in md
    # 1893 / 4213 = 45 %; 4213 − 1893 = 2320 µs, 55 %
    assert ("The device counters put 1893.00 µs of R (45 %) from the block layer's queue to completion (scheduler, "
            "driver, device); the other 2320.00 µs (55 %) are outside what they see: waiting for a request slot while "
            "more I/Os are in flight than the block layer's queue admits, submission and completion") in text
    # Little's law on each part: 256 × 1893 / 4213 = 115 I/Os inside the counters, 141 outside (waiting, mostly)
    assert "of the 256 I/Os in flight on average 115 were inside the counters and 141 outside them" in text
    assert "| In the device (µs) | Outside it (µs) |" in text.replace("  ", " ").replace("  ", " ")
    assert _row(text, "QD256")[5:8] == ["4213.00", "1893.00", "2320.00"]
    assert "it is not called software time" in text
    # the device check names the same rest the same way
    assert "Outside the device (µs)" in md and "not called software time" in md
