"""The tail-over-time check (app.model.tails.tail_stability): which seconds count, the median and worst second, the
factor's boundary, and hostile sample values."""

from __future__ import annotations

import csv
import io
import json
import math
from pathlib import Path
from typing import Any, cast

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from app.model.records import JSONObject, Parts, StorageMetrics
from app.model.tails import MIN_TAIL_INTERVALS, TAIL_UNSTABLE_FACTOR, tail_stability
from app.plan import presets
from app.runners.fio import point_tail
from app.stats.timeseries import MAX_SERIES, samples_csv
from app.stats.validity import point_flags


def seconds(p99s: list[float], iops: float = 5000.0, **extra: Any) -> list[dict[str, Any]]:
    return [{"t": 1.0 + i, "interval_s": 1.0, "iops": iops, "lat_p99_ns": v, **extra} for i, v in enumerate(p99s)]


def test_the_worst_second_is_named_against_the_median() -> None:
    tail = tail_stability(seconds([100e3, 110e3, 90e3, 2000e3, 105e3, 95e3]))
    assert tail == {"intervals": 6, "median_p99_ns": 102500.0, "worst_p99_ns": 2000e3, "worst_t": 4.0,
                    "ratio": round(2000e3 / 102500.0, 3), "factor": TAIL_UNSTABLE_FACTOR}


def test_ramp_seconds_short_intervals_and_thin_seconds_do_not_count() -> None:
    steady = seconds([100e3] * MIN_TAIL_INTERVALS)
    ramp = seconds([9e9], ramp=True)  # the ramp's seconds are not the point's
    short = [{"t": 9.0, "interval_s": 0.2, "iops": 50_000.0, "lat_p99_ns": 9e9}]  # the last few ms of a job
    thin = seconds([9e9], iops=999.0)  # 999 I/Os: its p99 is its slowest I/O
    tail = tail_stability(ramp + steady + short + thin)
    assert tail["intervals"] == MIN_TAIL_INTERVALS and tail["ratio"] == 1.0
    assert tail_stability(steady + seconds([9e9], iops=1000.0))["worst_p99_ns"] == 9e9  # 1,000 I/Os count


def test_too_few_seconds_is_unavailable_with_the_reason() -> None:
    tail: dict[str, Any] = tail_stability(seconds([100e3] * (MIN_TAIL_INTERVALS - 1)) + seconds([1e9] * 20, iops=10.0))
    assert set(tail) == {"unavailable"}
    assert tail["unavailable"].startswith(f"{MIN_TAIL_INTERVALS - 1} measured seconds with the 1,000 I/Os")
    assert "1 measured second with" in str(tail_stability(seconds([1.0]))["unavailable"])
    assert "0 measured seconds" in str(tail_stability([])["unavailable"])


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf, True, False, None, "100", -5.0, 0, [1], {}])
def test_hostile_values_are_skipped_never_raised(bad: object) -> None:
    good = seconds([100e3] * MIN_TAIL_INTERVALS)
    for key in ("t", "interval_s", "iops", "lat_p99_ns"):
        if key == "t" and type(bad) is int:
            continue  # a second that ended at the job's start is a time, if an odd one
        hostile = {**good[0], "t": 99.0, "lat_p99_ns": 9e9, key: bad}  # would be the worst second if it counted
        tail = tail_stability(good + [hostile])
        assert tail["intervals"] == MIN_TAIL_INTERVALS, (key, bad, tail)


def test_the_factor_is_the_boundary_of_the_flag() -> None:
    median = 100e3
    at: dict[str, Any] = tail_stability(seconds([median] * 6 + [median * TAIL_UNSTABLE_FACTOR]))
    above: dict[str, Any] = tail_stability(seconds([median] * 6 + [median * TAIL_UNSTABLE_FACTOR * 1.01]))
    assert at["ratio"] == TAIL_UNSTABLE_FACTOR and above["ratio"] > TAIL_UNSTABLE_FACTOR

    def flagged(tail: dict[str, object]) -> bool:
        return any(f["flag"] == "tail-unstable" for f in point_flags_of(tail))

    assert not flagged(at) and flagged(above)


def point_flags_of(tail: dict[str, object]) -> list[dict[str, str]]:
    point = presets.load("quick").expand()[0].to_dict()
    return point_flags(point, StorageMetrics.of({"iops": 1000.0}), Parts(tail=cast(JSONObject, tail)))


@settings(max_examples=40, deadline=None)
@given(st.lists(st.fixed_dictionaries({}, optional={
    "t": st.one_of(st.floats(), st.integers(), st.booleans(), st.none(), st.text(max_size=3)),
    "interval_s": st.one_of(st.floats(), st.integers(), st.none()),
    "iops": st.one_of(st.floats(), st.integers(), st.booleans()),
    "lat_p99_ns": st.one_of(st.floats(), st.integers(-10, 10**12), st.booleans()),
    "ramp": st.booleans()}), max_size=12))
def test_any_samples_give_a_tail_part_or_a_reason(samples: list[dict[str, Any]]) -> None:
    tail = tail_stability(samples)
    if "unavailable" not in tail:
        assert isinstance(tail["ratio"], float) and tail["ratio"] >= 1.0 and math.isfinite(tail["ratio"])


def test_samples_csv_has_the_seconds_p50_and_p99_9_in_us_and_empty_cells_for_older_samples() -> None:
    new = {"t": 1.0, "interval_s": 1.0, "iops": 5000.0, "lat_p50_ns": 42752, "lat_p99_ns": 85504,
           "lat_p99_9_ns": 150528}
    old = {"t": 2.0, "interval_s": 1.0, "iops": 5000.0, "lat_p99_ns": 85504}  # written before p50/p99.9 were kept
    rows = list(csv.DictReader(io.StringIO(samples_csv([(3, [new, old])]))))
    assert (rows[0]["lat_p50_us"], rows[0]["lat_p99_us"], rows[0]["lat_p99_9_us"]) == ("42.752", "85.504", "150.528")
    assert (rows[1]["lat_p50_us"], rows[1]["lat_p99_9_us"]) == ("", "")


def test_a_point_that_outran_the_samples_kept_in_memory_is_judged_from_its_samples_file(tmp_path: Path) -> None:
    path = tmp_path / "0000-randread.samples.jsonl"
    on_file = seconds([100e3] * 6 + [5000e3])
    path.write_text("not json\n[1]\n" + "".join(json.dumps(s) + "\n" for s in on_file))
    assert point_tail(seconds([100e3] * 6), path)["ratio"] == 1.0  # in memory: the samples in hand
    kept: list[dict[str, object]] = [{}] * MAX_SERIES  # as many as memory keeps: the file has them all
    assert point_tail(kept, path)["worst_p99_ns"] == 5000e3
    assert "0 measured seconds" in str(point_tail(kept, tmp_path / "gone.jsonl")["unavailable"])
