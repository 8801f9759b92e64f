"""Every derived claim carries its support: a knee's margin, its stability without the last load and under a
bootstrap of the per-second samples; an operating point within noise of its bound, measured at one load, or
broken by one direction of a mixed workload.  Synthetic results directories with raw/*.samples.jsonl."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Any

from app.cli.compare import compare_runs
from app.report import render
from app.report.compute import analysis as an
from app.report.compute import support
from app.report.data.model import load

SQRT2 = math.sqrt(2)
# a QD sweep in the unit square whose knee, QD64, beats QD32 by 0.520 vs 0.510 in chord distance (chord from
# (0, 0) to (1, 1): distance (x − y)/√2); without QD128 the knee is QD16 (0.294 vs QD32's 0.286)
FRAGILE = {1: (0.0, 0.0), 2: (0.10, 0.0), 4: (0.25, 0.01), 8: (0.45, 0.02), 16: (0.65, 0.04),
           32: (0.78, 0.78 - 0.510 * SQRT2), 64: (0.85, 0.85 - 0.520 * SQRT2), 128: (1.0, 1.0)}
# a sharp corner at QD8: flat latency, then latency shoots up for little throughput
CORNER = {1: (0.0, 0.0), 2: (0.3, 0.0), 4: (0.6, 0.0), 8: (0.93, 0.0), 16: (0.97, 0.45), 32: (1.0, 1.0)}
JITTER = (-0.03, 0.03, -0.02, 0.02, -0.01, 0.01, 0.0, 0.0, 0.015, -0.015)  # mean 0: the seconds average to the point


def _lat(mean_us: float, p99_us: float) -> dict[str, Any]:
    return {"min": 1000, "max": int(p99_us * 2e3), "mean": mean_us * 1e3, "stddev": 0.0, "p50": 0, "p90": 0,
            "p99": int(round(p99_us * 1e3)), "p99_9": 0, "p99_99": 0}


def _write(path: Path, points: list[dict[str, Any]]) -> Path:
    """A results directory of ``points`` (keys: rw, bs, qd, iops, lat_us, p99_us, mix, rlat/wlat p99 µs, and
    ``seconds``: the raw/*.samples.jsonl lines, or a string written as it is)."""
    path.mkdir(parents=True, exist_ok=True)
    (path / "raw").mkdir(exist_ok=True)
    plan, lines = [], []
    for i, d in enumerate(points):
        mixed = d["rw"] in ("rw", "randrw")
        point = {"rw": d["rw"], "bs": d.get("bs", 4096), "rwmixread": d.get("mix") if mixed else None,
                 "iodepth": d["qd"], "numjobs": 1, "ioengine": "libaio", "direct": True, "runtime": 10}
        p99 = d.get("p99_us", d["lat_us"] * 2)
        metrics: dict[str, Any] = {"iops": d["iops"], "bw_bytes": d["iops"] * point["bs"],
                                   "lat_ns": _lat(d["lat_us"], p99)}
        if mixed:
            metrics["read_lat_ns"] = _lat(d["lat_us"], d["read_p99_us"])
            metrics["write_lat_ns"] = _lat(d["lat_us"], d["write_p99_us"])
        rec: dict[str, Any] = {"kind": "storage", "index": i, "point": point, "metrics": metrics}
        seconds = d.get("seconds")
        if seconds is not None:
            name = f"raw/{i:04d}.samples.jsonl"
            text = seconds if isinstance(seconds, str) else "".join(json.dumps(s) + "\n" for s in seconds)
            (path / name).write_text(text)
            rec["raw"] = {"samples": name}
        plan.append(point)
        lines.append(rec)
    meta = {"tool": "profiler-tui", "kind": "storage", "plan": plan, "points_total": len(plan),
            "points_done": len(plan), "status": "complete", "environment": {}, "tools": {}}
    (path / "run.json").write_text(json.dumps(meta))
    (path / "results.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    return path


def _seconds(iops: float, lat_us: float, p99s: list[float] | None = None) -> list[dict[str, Any]]:
    return [{"t": t + 1.0, "interval_s": 1.0, "iops": iops * (1 + e), "lat_mean_ns": lat_us * 1e3 * (1 - e),
             "lat_p99_ns": (p99s[t % len(p99s)] if p99s else lat_us * 2) * 1e3} for t, e in enumerate(JITTER)]


def _sweep(shape: dict[int, tuple[float, float]], samples: bool = True) -> list[dict[str, Any]]:
    """The unit-square shape as a 4K random-read sweep: 20k → 146,617 IOPS, 65.94 → 873 µs."""
    out = []
    for qd, (nx, ny) in shape.items():
        iops, lat = 20_000 + nx * 126_617, 65.94 + ny * 807.06
        out.append({"rw": "randread", "qd": qd, "iops": iops, "lat_us": lat, "p99_us": lat * 1.5,
                    "seconds": _seconds(iops, lat) if samples else None})
    return out


def _curve(directory: Path) -> tuple[an.Curve, support.KneeSupport]:
    (c,) = an.storage_curves(load(directory).storage)
    return c, support.knee_support(directory, c)


def _knee_text(directory: Path) -> str:
    data = load(directory)
    return "\n".join(render._knees(an.storage_curves(data.storage), data.path))


# --- knees ---------------------------------------------------------------------------------------------------


def test_a_knee_won_by_a_hair_and_moved_by_the_last_load_is_fragile(tmp_path: Path) -> None:
    c, sup = _curve(_write(tmp_path / "run", _sweep(FRAGILE)))
    assert sup.name(sup.knee) == "QD64" and sup.name(sup.runner_up) == "QD32"
    assert round(sup.ranking[0][1], 3) == 0.520 and round(sup.ranking[1][1], 3) == 0.510
    assert round(sup.margin or 0, 3) == 0.010
    assert sup.name(sup.drop_last) == "QD16"  # cut at QD64 (QD128 dropped), the knee moves
    assert sup.boot is not None and sum(n for _, n in sup.boot) == support.RESAMPLES
    assert sup.verdict == "fragile" and {"QD32", "QD16"} <= set(sup.alternatives())
    text = _knee_text(tmp_path / "run")
    assert "| QD64 (fragile) |" in text.replace("  ", "")
    assert "0.520 vs 0.510 (QD32): 0.010" in text
    assert re.search(r"QD64 in \d+ %.* of 200 resamples", text)
    assert "fragile: QD64 or QD32 or QD16" in text


def test_the_bootstrap_is_the_same_every_time(tmp_path: Path) -> None:
    d = _write(tmp_path / "run", _sweep(FRAGILE))
    assert _knee_text(d) == _knee_text(d)


def test_a_sharp_corner_is_stable(tmp_path: Path) -> None:
    c, sup = _curve(_write(tmp_path / "run", _sweep(CORNER)))
    assert sup.name(sup.knee) == "QD8"
    assert sup.checks() == (True, True, True) and sup.verdict == "stable"
    assert sup.share(sup.knee) >= support.BOOTSTRAP_AGREE
    assert "| QD8 (stable) |" in _knee_text(tmp_path / "run").replace("  ", "")


def test_without_samples_the_bootstrap_says_so_and_the_knee_is_unconfirmed(tmp_path: Path) -> None:
    c, sup = _curve(_write(tmp_path / "run", _sweep(CORNER, samples=False)))
    assert sup.boot is None and sup.verdict == "unconfirmed"
    text = _knee_text(tmp_path / "run")
    assert "not possible (no per-second samples)" in text
    assert "unconfirmed: the bootstrap check could not run" in text


def test_hostile_samples_never_crash_and_short_points_are_named(tmp_path: Path) -> None:
    pts = _sweep(CORNER)
    junk = ("not json\n{\"t\": 1, \"iops\": NaN, \"lat_mean_ns\": 5}\n[1, 2]\n"
            "{\"t\": 2, \"interval_s\": 1, \"iops\": 1e308, \"lat_mean_ns\": 1e308}\n"
            "{\"t\": 3, \"interval_s\": 1, \"iops\": -5, \"lat_mean_ns\": \"x\"}\n"
            "{\"t\": 4, \"interval_s\": 1, \"iops\": true, \"lat_mean_ns\": 100}\n"
            + "".join(json.dumps(s) + "\n" for s in _seconds(pts[2]["iops"], pts[2]["lat_us"])[:2]))
    pts[2]["seconds"] = junk  # QD4: two usable seconds among the junk
    c, sup = _curve(_write(tmp_path / "run", pts))
    assert sup.boot is None and sup.boot_why == "QD4 kept fewer than 3 whole seconds"
    assert sup.verdict == "unconfirmed"
    pts[2]["seconds"] = junk + "".join(json.dumps(s) + "\n" for s in _seconds(pts[2]["iops"], pts[2]["lat_us"]))
    c, sup = _curve(_write(tmp_path / "run2", pts))
    assert sup.boot is not None and sup.verdict == "stable"  # the implausible seconds were left out
    pts[2]["seconds"] = _seconds(pts[2]["iops"], pts[2]["lat_us"]) * 500  # 5000 seconds: 3600 of them are drawn
    c, sup = _curve(_write(tmp_path / "run3", pts))
    assert len(support._seconds(tmp_path / "run3", c.points[2])) <= support.MAX_BOOT_SECONDS
    assert sup.boot is not None and sup.verdict == "stable"


def test_memory_curves_keep_their_knee() -> None:
    from app.report.data.model import MemoryRow

    pts = [MemoryRow.of(i, {"mode": "loaded", "traffic": "R", "delay": d, "stride": 64},
                     {"latency_ns": lat, "bandwidth_mbps": bw})
           for i, (d, lat, bw) in enumerate([(2000, 90, 1000), (500, 91, 4000), (100, 93, 8000), (50, 95, 9000),
                                              (0, 200, 9300)])]
    (c,) = an.memory_curves(pts)
    assert c.knee is not None and c.points[c.knee].delay == 50


# --- operating points ------------------------------------------------------------------------------------------


def _bound_points() -> list[dict[str, Any]]:
    sweep = [{"rw": "randread", "qd": qd, "iops": iops, "lat_us": lat, "p99_us": p99,
              "seconds": _seconds(iops, lat, seconds)}
             for qd, iops, lat, p99, seconds in [
                 (16, 103_000, 155.0, 400.0, [380.0, 420.0]),
                 (32, 123_000, 260.0, 700.0, [650.0, 760.0]),
                 (64, 139_600, 458.0, 962.56, [888.8, 1187.8, 930.0, 905.0]),
                 (128, 146_617, 873.0, 1789.35, [1700.0, 1900.0])]]
    single = [{"rw": "randread", "bs": 131072, "qd": 16, "iops": 20_000, "lat_us": 800.0, "p99_us": 950.0,
               "seconds": _seconds(20_000, 800.0, [900.0, 940.0])}]
    mixed = [{"rw": "randrw", "mix": 70, "bs": 32768, "qd": 16, "iops": 40_000, "lat_us": 400.0, "p99_us": 880.64,
              "read_p99_us": 610.3, "write_p99_us": 1646.59, "seconds": _seconds(40_000, 400.0, [850.0, 900.0])}]
    return sweep + single + mixed


def test_operating_points_say_noise_single_load_and_the_binding_direction(tmp_path: Path) -> None:
    data = load(_write(tmp_path / "run", _bound_points()))
    choices = an.best_under_bound(data.storage, 1000e3)
    rand4k, seq, mixed = choices
    assert rand4k.best is not None and rand4k.best.iodepth == 64 and not rand4k.only_load
    assert seq.best is not None and seq.only_load
    assert mixed.best is None and an.binding(mixed.lowest) == ("write", 1646.59e3)  # type: ignore[arg-type]
    text = "\n".join(render._bound(data.storage, 1000e3, data.path))
    assert ("randread 4K QD64×1: p99 962.56 ≤ 1000 µs, but its seconds ranged 888.8–1187.8 µs: within noise of "
            "the bound.") in text
    assert "888.8–1187.8: within noise of the bound" in text
    assert "QD16×1 (only load measured)" in text and "the only load measured" in text
    assert "none (lowest p99 write 1646.59; read 610.30; both 880.64 µs)" in text
    assert "randrw 70/30" not in text.split("Across all workloads")[1]  # its write side breaks the bound
    assert "650.0–760.0" not in text  # QD32 is not the chosen point
    assert "the most IOPS is 140k (randread 4K QD64, p99 read 962.56 µs, within noise of the bound)" in text
    summary = "\n".join(render._storage_summary(data.storage, an.storage_curves(data.storage), 1000e3, data.path))
    assert "p99 read 962.56 µs, within noise of the bound" in summary
    assert "only load measured" in summary and "none (lowest p99 write 1646.59" in summary


def test_a_point_with_every_second_within_the_bound_says_so(tmp_path: Path) -> None:
    data = load(_write(tmp_path / "run", _bound_points()))
    text = "\n".join(render._bound(data.storage, 2000e3, data.path))
    assert "1700.0–1900.0: every second within" in text and "within noise of the bound" not in text


# --- compare ---------------------------------------------------------------------------------------------------


def _swap(shape: dict[int, tuple[float, float]]) -> dict[int, tuple[float, float]]:
    """The same sweep where QD32 wins by a hair over QD64."""
    out = dict(shape)
    out[32] = (0.78, 0.78 - 0.522 * SQRT2)
    return out


def test_compare_says_a_moved_fragile_knee_is_within_noise(tmp_path: Path) -> None:
    a = _write(tmp_path / "a", _sweep(FRAGILE))
    b = _write(tmp_path / "b", _sweep(_swap(FRAGILE)))
    text = compare_runs(str(a), str(b))
    assert ("randread 4K: the knee moved from QD64 (A) to QD32 (B), and both runs rate their knee fragile: the "
            "difference is within noise.") in text
    assert re.search(r"\| randread 4K QD64 +\|", text)  # the point tables are still there


def test_compare_says_when_two_stable_knees_disagree_beyond_each_runs_noise(tmp_path: Path) -> None:
    """Each run's bootstrap sees only its own seconds: two runs on a virtual disk measured QD32 ×1.27 and QD64
    ×0.81 apart and each called its (different) knee stable. Compare names the loads that moved and says
    neither knee is reproducible, instead of blaming the device."""
    moved = {1: (0.0, 0.0), 2: (0.3, 0.0), 4: (0.90, 0.0), 8: (0.93, 0.4), 16: (0.97, 0.6), 32: (1.0, 1.0)}
    text = compare_runs(str(_write(tmp_path / "a", _sweep(CORNER))), str(_write(tmp_path / "b", _sweep(moved))))
    assert "the knee moved from QD8 (A) to QD4 (B), though each run rates its own knee stable" in text
    assert re.search(r"measured differently in the two runs \(QD4 ×[0-9.]+(, QD8 ×[0-9.]+)? IOPS B/A\)", text)
    assert "neither knee is reproducible" in text and "real difference" not in text
    same = compare_runs(str(tmp_path / "a"), str(tmp_path / "a"))
    assert "randread 4K: the knee is QD8 in both runs (A stable, B stable)." in same
