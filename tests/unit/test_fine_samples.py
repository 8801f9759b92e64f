"""Short points get an interval: fio's status dumps come every 100–1000 ms (about 40 over the runtime), so a 2 s
point has 20 samples for its interval where whole seconds gave it 2 (none).  Sub-second samples are correlated
(lag-1 0.58–0.67 at 100 ms on the project's 2-CPU VM), so the interval (app.stats.finesamples) is checked against
AR(1) series whose mean is known: it covers it at least 93 % of the time up to φ = 0.8, where plain batch means
of the same samples cover 71–78 %."""

from __future__ import annotations

import json
import math
import random
from pathlib import Path
from typing import Any, Callable

import pytest

from app.model.points import StoragePoint
from app.plan import presets
from app.runners.fio import FineSamples, point_uncertainty, status_interval_ms
from app.stats.finesamples import fine_interval, series_of
from app.stats.uncertainty import Interval, batch_means_interval

TRUTH = 100.0


def ar1(n: int, phi: float, rng: random.Random) -> list[float]:
    x = rng.gauss(0, 1) / math.sqrt(1 - phi * phi)
    out = []
    for _ in range(n):
        x = phi * x + rng.gauss(0, 1)
        out.append(TRUTH + x)
    return out


def coverage(rule: Callable[..., Any], n: int, phi: float, cases: int, seed: int) -> tuple[float, float]:
    rng = random.Random(seed)
    got = covered = 0
    for _ in range(cases):
        iv = rule(ar1(n, phi, rng))
        if isinstance(iv, Interval):
            got += 1
            covered += iv.low <= TRUTH <= iv.high
    return got / cases, covered / max(got, 1)


@pytest.mark.parametrize("n", [20, 100])
@pytest.mark.parametrize("phi", [0.0, 0.5, 0.65, 0.8])
def test_the_sub_second_interval_covers_the_known_mean_of_correlated_samples(n: int, phi: float) -> None:
    given, covers = coverage(fine_interval, n, phi, 1000, seed=int(100 * phi) + n)
    assert given >= 0.95, (n, phi, given)
    assert covers >= 0.93, (n, phi, covers)


def test_plain_batch_means_of_the_same_samples_undercover_or_refuse() -> None:
    """Why the rule is not plain batch means: 20 samples with φ = 0.65 (a 2 s point at 100 ms).  Without its
    correlation rules batch means undercovers; with them it covers but gives most such points no interval."""
    _, covers = coverage(lambda v: batch_means_interval(v, 0.95, 10, gate=False), 20, 0.65, 1000, seed=7)
    assert covers < 0.85
    given, covers = coverage(lambda v: batch_means_interval(v, 0.95, 10), 20, 0.65, 1000, seed=7)
    assert covers >= 0.93 and given < 0.5


@pytest.mark.parametrize(("runtime", "precision", "ms"), [
    (1, None, 100), (2, None, 100), (5, None, 100), (10, None, 250), (30, None, 750), (60, None, 1000),
    (3600, None, 1000), (30, "2%", 250), (2, "2%", 100),
])
def test_the_status_interval_gives_about_40_samples_a_point(runtime: int, precision: str | None, ms: int) -> None:
    sets = [f"runtime={runtime}"] + ([f"precision={precision}"] if precision else [])
    (point,) = presets.apply_overrides(presets.load("custom"), sets).expand()
    assert isinstance(point, StoragePoint)
    assert status_interval_ms(point) == ms
    assert status_interval_ms(None) == 1000  # preconditioning: once a second, as before


def test_a_2_s_point_has_an_interval_where_its_whole_seconds_gave_none(tmp_path: Path) -> None:
    rng = random.Random(3)
    fine = FineSamples(100, tmp_path / "0000-x.fine.jsonl")
    t = 0.0
    fine.take({"t": 0.1, "interval_s": 0.1, "iops": 5000.0, "bw_bytes": 1.0, "lat_mean_ns": 1.0}, ramp=True)
    for _ in range(20):
        t += 0.1
        v = 10000 + rng.gauss(0, 300)
        fine.take({"t": t, "interval_s": 0.1, "iops": v, "bw_bytes": v * 4096, "lat_mean_ns": 1e9 / v}, ramp=False)
    fine.take({"t": t + 0.004, "interval_s": 0.004, "iops": 1.0, "bw_bytes": 1.0, "lat_mean_ns": 1.0}, ramp=False)
    fine.close()
    assert fine.measured_s == pytest.approx(2.0) and len(fine.values["iops"]) == 20  # ramp and the short one out
    whole = [{"t": 1.0, "interval_s": 1.0, "iops": 10000.0, "bw_bytes": 4.1e7, "lat_mean_ns": 1e5},
             {"t": 2.0, "interval_s": 1.0, "iops": 10100.0, "bw_bytes": 4.1e7, "lat_mean_ns": 1e5}]
    before = point_uncertainty(whole, tmp_path / "none")  # what a 2 s point had: no interval
    assert not before.intervals and "too few samples" in str(before.ci_method["reason"])
    after = point_uncertainty(whole, tmp_path / "none", fine.series)
    assert set(after.intervals) == {"iops", "bw_bytes", "lat_mean_ns"}
    low, high = after.ci95["iops"]
    assert low < 10000 < high and high - low < 2000
    kept = [json.loads(ln) for ln in (tmp_path / "0000-x.fine.jsonl").read_text().splitlines()]
    assert len(kept) == 22 and kept[0]["ramp"] is True
    assert series_of(kept) == fine.series  # the kept file gives the same series, so the same interval, again
