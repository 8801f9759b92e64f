"""The interval record of a results line, replicate spreads and differences (app.stats.uncertainty,
app.model.records)."""

from __future__ import annotations

import json
from typing import Mapping, cast

import numpy as np
import pytest

from app.model.records import JSONObject, MemoryMetrics, StorageMetrics, read_line, write_line
from app.stats.uncertainty import (
    interval_difference,
    intervals_of,
    none_because,
    replicate_spread,
    storage_series,
    welch_difference,
)
from tests.helpers.typed import as_dict


def _line(metrics: Mapping[str, object]) -> dict[str, object]:
    return {"schema_version": 1, "kind": "storage", "index": 0,
            "point": {"rw": "randread", "bs": 4096, "iodepth": 1, "numjobs": 1}, "metrics": metrics}


def test_an_interval_record_reads_back_byte_for_byte_and_typed() -> None:
    rng = np.random.default_rng(1)
    u = intervals_of({"iops": list(1000 + rng.normal(0, 10, 60)), "lat_mean_ns": [5.0] * 3})
    m = StorageMetrics.of({"iops": 1000.0}).with_ci(cast(JSONObject, u.ci95), cast(JSONObject, u.ci_method))
    text = write_line(read_line(_line(m.json())))
    again = read_line(json.loads(text))
    assert write_line(again) == text
    low, high = again.storage.interval("iops") or (0, 0)
    assert low < 1000 < high
    assert again.storage.interval("lat_mean_ns") is None
    method = again.storage.ci_method or {}
    assert method["method"] == "batch-means" and method["samples"] == 60
    assert "reason" in as_dict(as_dict(method["series"])["lat_mean_ns"])


@pytest.mark.parametrize("bad", [{"iops": [2, 1]}, {"iops": [1]}, {"iops": ["1", 2]}, {"iops": [1, float("nan")]},
                                 [1, 2], "x"])
def test_a_bad_interval_record_is_kept_as_read_and_reads_as_absent(bad: object) -> None:
    line = read_line(_line({"iops": 1.0, "ci95": bad}), check=False)
    assert line.storage.interval("iops") is None
    assert line.json()["metrics"]["ci95"] == bad  # type: ignore[index, call-overload]


def test_no_samples_say_why_and_memory_metrics_carry_the_record() -> None:
    u = none_because("imported fio JSON has no per-second samples")
    assert u.ci95 == {} and u.ci_method == {"method": "none", "reason": "imported fio JSON has no per-second samples"}
    m = MemoryMetrics(latency_ns=80.0).with_ci(cast(JSONObject, u.ci95), cast(JSONObject, u.ci_method))
    assert list(m.json()) == ["latency_ns", "ci_method"]


def test_storage_series_keeps_whole_seconds_and_usable_figures() -> None:
    samples: list[dict[str, object]] = [{"t": 1, "interval_s": 1.0, "iops": 10, "bw_bytes": 40960, "lat_mean_ns": 100},
               {"t": 2, "interval_s": 1.0, "iops": "x", "bw_bytes": -1, "lat_mean_ns": 110},
               {"t": 2.01, "interval_s": 0.01, "iops": 1, "bw_bytes": 4096, "lat_mean_ns": 1}]
    assert storage_series(samples) == {"iops": [10.0], "bw_bytes": [40960.0], "lat_mean_ns": [100.0, 110.0]}


def test_replicate_spread_is_a_t_interval() -> None:
    r = replicate_spread([10.0, 11.0, 12.0])
    assert r.mean == 11.0 and r.sd == 1.0 and r.cv == pytest.approx(1 / 11)
    assert r.ci == pytest.approx((11 - 4.302653 / 3 ** 0.5, 11 + 4.302653 / 3 ** 0.5))
    one = replicate_spread([5.0])
    assert one.ci is None and one.sd == 0


def test_welch_covers_the_true_difference_about_95_percent() -> None:
    rng = np.random.default_rng(7)
    hits = 0
    for _ in range(400):
        a, b = rng.normal(100, 3, 3), rng.normal(104, 6, 4)
        d = welch_difference(list(a), list(b))
        assert d is not None
        hits += d.low <= 4 <= d.high
    assert 0.91 <= hits / 400 <= 0.99
    assert welch_difference([1.0], [1.0, 2.0]) is None


def test_interval_difference_adds_half_widths_in_quadrature() -> None:
    d = interval_difference(100, (97, 103), 110, (106, 114))
    assert d.diff == 10 and d.high - d.diff == pytest.approx(5) and not d.within_noise
    assert interval_difference(100, (97, 103), 101, (98, 104)).within_noise


def test_a_heavy_tailed_series_gets_an_interval_that_starts_at_zero_not_below() -> None:
    """Seen on a shared disk: 20 seconds of 100 µs mean latency, one of them 190 ms; the t interval's low end
    fell below 0, and the record then read as malformed (no interval at all).  It is written from 0, and read
    back it is no interval of the figure (its half-width is larger than the mean: it bounds nothing), said as
    such, while the record and the other figures' intervals stand."""
    lat = [100_000.0] * 19 + [190_000_000.0]
    u = intervals_of({"lat_mean_ns": lat, "iops": [1000.0 + (i % 3) for i in range(20)]})
    assert "lat_mean_ns" in u.intervals and u.intervals["lat_mean_ns"].low < 0
    low, high = u.ci95["lat_mean_ns"]
    assert low == 0.0 and high > 190_000_000 / 20
    line = _line({"iops": 1001.0, "lat_ns": {"mean": sum(lat) / 20}, "ci95": u.ci95, "ci_method": u.ci_method})
    m = read_line(json.dumps(line)).storage
    assert m.interval("lat_mean_ns") is None and m.interval("iops") is not None
    assert str(m.interval_or_why("lat_mean_ns")).startswith(f"its interval [0, {high:,.0f}] reaches 0")


@pytest.mark.parametrize("pair,why", [
    ([1041.0, 1041.0], "its interval [1,041, 1,041] has zero width"),
    ([1100.0, 1000.0], "its interval [1,100, 1,000] has its lower bound above the upper"),
    ([0.0, 5205.0], "its interval [0, 5,205] reaches 0: its half-width is as large as its centre 2,602.5"),
    ([1.0, float("inf")], "its interval is not finite"), ([-1.0, 2000.0], "its interval is not within 0 … 2^64"),
    ([1000.0], "its interval is not two numbers")])
def test_an_interval_that_is_no_interval_of_its_figure_reads_as_none_with_why(pair: list[float], why: str) -> None:
    """The reader's rule (app.model.records.interval_problem): degenerate, or a half-width as large as its centre (it
    reaches 0 and bounds nothing below); the line itself is kept byte for byte."""
    text = json.dumps(_line({"iops": 1041.0, "ci95": {"iops": pair}}))
    line = read_line(text)
    assert line.storage.interval("iops") is None and line.storage.interval_or_why("iops") == why
    assert json.loads(write_line(line)) == json.loads(text)
    ok = read_line(json.dumps(_line({"iops": 1041.0, "ci95": {"iops": [1000.0, 1082.0]}})))
    assert ok.storage.interval("iops") == (1000.0, 1082.0)
