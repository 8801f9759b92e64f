"""The report's analysis on hand-checkable data: knees of synthetic curves, Little's law, bounds."""

from __future__ import annotations

import math

import pytest

from app.model import runmeta
from app.model.records import JSONObject
from app.report.compute import analysis as an
from app.report.data.model import MemoryRow, RunData, StorageRow


def sp(index: int, iops: float, lat_us: float, *, rw: str = "randread", bs: int = 4096, qd: int = 1, jobs: int = 1,
       p99_us: float | None = None, engine: str = "libaio", mix: int | None = None) -> StorageRow:
    point: JSONObject = {"rw": rw, "bs": bs, "rwmixread": mix, "iodepth": qd, "numjobs": jobs, "ioengine": engine,
             "direct": True, "runtime": 1}
    lat: JSONObject = {"min": 1, "max": 2, "mean": lat_us * 1e3, "stddev": 0.0, "p50": 0, "p90": 0,
           "p99": int((p99_us if p99_us is not None else lat_us * 2) * 1e3), "p99_9": 0, "p99_99": 0}
    return StorageRow.of(index, point, {"iops": iops, "bw_bytes": iops * bs, "lat_ns": lat})


# --- knee ------------------------------------------------------------------------------------------


def test_knee_of_a_piecewise_curve_is_its_corner() -> None:
    # latency flat at 1 until 40 units of throughput, then it shoots up: the corner is (40, 1)
    xs = [10, 20, 30, 40, 41, 42]
    ys = [1, 1, 1, 1, 5, 10]
    assert an.knee(xs, ys) == 3


def test_knee_of_mm1_curve_matches_the_analytic_point() -> None:
    # R = 1 / (1 - x) for utilisation x in [0, 0.95]; in the unit square the farthest point from the
    # chord is where the curve's slope equals the chord's: (1 - x)^2 = 0.95 / 19  →  x = 1 - sqrt(0.05)
    xs = [i / 1000 for i in range(0, 951)]
    ys = [1 / (1 - x) for x in xs]
    k = an.knee(xs, ys)
    assert k is not None
    assert xs[k] == pytest.approx(1 - math.sqrt(0.05), abs=0.002)


def test_knee_of_a_saturating_qd_sweep() -> None:
    # throughput X(N) = 8N/(N+8), latency from Little's law R = N/X = 8/(8 - X).  Over the sampled
    # range (X from 0.89 to 7.53, R from 1.125 to 17) the chord's slope is 2.39, and the curve has
    # that slope where 8/(8 - X)^2 = 2.39: X = 6.17, N = 8X/(8 - X) = 27 → the nearest load, 32
    loads = [1, 2, 4, 8, 16, 32, 64, 128]
    xs = [8 * n / (n + 8) for n in loads]
    ys = [n / x for n, x in zip(loads, xs)]
    k = an.knee(xs, ys)
    assert k is not None and loads[k] == 32


def test_no_knee_on_a_straight_line_or_too_few_points() -> None:
    assert an.knee([1, 2, 3, 4, 5], [10, 20, 30, 40, 50]) is None
    assert an.knee([1, 2], [1, 5]) is None
    assert an.knee([], []) is None


def test_storage_curves_find_the_knee_per_workload() -> None:
    loads = [1, 2, 4, 8, 16, 32, 64]
    pts = []
    for i, n in enumerate(loads):
        x = 100_000 * n / (n + 8)
        pts.append(sp(i, x, n / x * 1e6, qd=n))
    # a second workload at one load only: no curve
    pts.append(sp(99, 5000, 200, bs=65536, qd=1))
    curves = an.storage_curves(pts)
    assert len(curves) == 1
    c = curves[0]
    assert [p.iodepth for p in c.points] == loads
    assert c.knee_point is not None and c.knee_point.iodepth in (8, 16)


def test_curves_split_by_jobs_when_loads_collide() -> None:
    pts = [sp(0, 1000, 1000, qd=4, jobs=1), sp(1, 3000, 1333, qd=4, jobs=2), sp(2, 2000, 2000, qd=1, jobs=4),
           sp(3, 900, 1111, qd=1, jobs=1), sp(4, 1500, 1333, qd=2, jobs=1), sp(5, 2500, 3200, qd=2, jobs=4)]
    curves = an.storage_curves(pts)
    # N=4 appears as QD4×1 and QD1×4: the curve splits by numjobs instead of mixing them
    for c in curves:
        assert len({p.numjobs for p in c.points}) == 1


# --- Little's law ------------------------------------------------------------------------------------


def test_littles_law_hand_computed() -> None:
    # 20,000 IOPS × 400 µs = 8.0 I/Os in flight at QD8: ratio 1
    ll = an.littles_law(sp(0, 20_000, 400, qd=8))
    assert ll is not None
    assert ll.n == 8 and ll.l == pytest.approx(8.0) and ll.ratio == pytest.approx(1.0)
    # 50,000 IOPS × 150 µs = 7.5 against N = 16 × 2 = 32: ratio 0.234375
    ll = an.littles_law(sp(1, 50_000, 150, qd=16, jobs=2))
    assert ll is not None
    assert ll.n == 32 and ll.l == pytest.approx(7.5) and ll.ratio == pytest.approx(0.234375)


def test_littles_law_caps_synchronous_engines_at_depth_one() -> None:
    ll = an.littles_law(sp(0, 10_000, 300, qd=8, jobs=4, engine="psync"))
    assert ll is not None and ll.n == 4 and ll.l == pytest.approx(3.0) and ll.ratio == pytest.approx(0.75)


def test_littles_law_undefined_without_throughput() -> None:
    assert an.littles_law(sp(0, 0, 300)) is None


def test_memory_lines_in_flight() -> None:
    # 6400 MB/s of 64-byte lines = 1e8 lines/s; × 100 ns = 10 lines in flight
    p = MemoryRow.of(0, {"mode": "loaded", "traffic": "R", "delay": 0, "stride": 64},
                    {"latency_ns": 100.0, "bandwidth_mbps": 6400.0})
    assert an.lines_in_flight(p) == pytest.approx(10.0)


# --- latency bound, ratio ---------------------------------------------------------------------------------


def test_best_under_bound_picks_most_iops_within_p99() -> None:
    pts = [sp(0, 10_000, 100, qd=1, p99_us=200), sp(1, 30_000, 130, qd=4, p99_us=600),
           sp(2, 40_000, 400, qd=16, p99_us=1500), sp(3, 41_000, 1600, qd=64, p99_us=4000)]
    (choice,) = an.best_under_bound(pts, 1000e3)
    assert choice.best is pts[1]
    assert choice.next_over is pts[2]
    (choice,) = an.best_under_bound(pts, 100e3)
    assert choice.best is None and choice.lowest_p99 == pytest.approx(200e3)


def test_memory_storage_ratio_uses_idle_latency() -> None:
    storage = [sp(0, 20_000, 50), sp(1, 5_000, 200)]
    memory = [MemoryRow.of(0, {"mode": "idle", "stride": 64}, {"latency_ns": 100.0}),
              MemoryRow.of(1, {"mode": "loaded", "traffic": "R", "delay": 0, "stride": 64},
                          {"latency_ns": 90.0, "bandwidth_mbps": 1000.0})]
    r = an.memory_storage_ratio(RunData(None, runmeta.from_json({}, "run.json"), storage, memory))  # type: ignore[arg-type]
    assert r is not None
    assert r.storage is storage[0] and r.memory_ns == 100.0 and r.ratio == pytest.approx(500.0)


def test_memory_curve_knee_from_delay_sweep() -> None:
    # seed 000, stride 64, W6: flat ~77 ns at long delays, 186 ns at delay 0 — the knee is where the
    # bandwidth stops growing (delay 50 is the last point before latency shoots up)
    rows = [(0, 185.86, 71162.7), (2, 185.14, 71158.3), (8, 201.66, 71061.2), (15, 187.80, 71122.5),
            (50, 95.81, 47125.8), (100, 89.60, 27759.9), (200, 82.71, 14812.7), (300, 80.90, 10260.8),
            (400, 79.79, 7936.6), (500, 78.85, 6541.1), (700, 78.16, 4919.9), (1000, 77.45, 3711.3),
            (1300, 77.29, 3052.4), (1700, 77.52, 2530.3), (2500, 77.15, 1991.7), (3500, 76.54, 1668.2),
            (5000, 76.32, 1420.6), (9000, 76.48, 1161.1), (20000, 76.17, 986.4)]
    pts = [MemoryRow.of(i, {"mode": "loaded", "traffic": "W6", "delay": d, "stride": 64},
                       {"latency_ns": lat, "bandwidth_mbps": bw}) for i, (d, lat, bw) in enumerate(rows)]
    (c,) = an.memory_curves(pts)
    assert [p.delay for p in c.points][:2] == [20000, 9000]  # lightest load first
    assert c.knee is not None and c.points[c.knee].delay == 50


def test_workloads_group_in_first_seen_order_with_labels() -> None:
    pts = [sp(0, 100, 10, bs=8192), sp(1, 200, 10, rw="read"), sp(2, 150, 20, bs=8192, qd=2),
           sp(3, 300, 10, rw="read", engine="psync"), sp(4, 90, 30, bs=8192, qd=4)]
    ws = an.workloads(pts)
    assert [w.label for w in ws] == ["randread 8K (ioengine=libaio)", "read 4K (ioengine=libaio)",
                                     "read 4K (ioengine=psync)"]
    assert [[p.index for p in w.points] for w in ws] == [[0, 2, 4], [1], [3]]
    assert an.workloads([]) == []
