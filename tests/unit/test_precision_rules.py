"""The ``precision`` key and the stop decision of a point stopped at a precision (app.stats.precision): pure, no fio."""

from __future__ import annotations

import random
from array import array

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from app.core.errors import UsageError
from app.model.keys import precision
from app.model.records import Parts, StorageMetrics
from app.plan import presets
from app.runners.fio import FioRunner
from app.stats.finesamples import GROUP
from app.stats.finesamples import MIN_BATCHES as FINE_MIN_BATCHES
from app.stats.precision import (
    MAX_CHECK_SAMPLES,
    MIN_SECONDS,
    PrecisionWatch,
    decide,
    due,
    imprecise_reason,
    precision_part,
    reached_percent,
)
from app.stats.summary import outcome_line
from app.stats.validity import NO_PRECISION, TargetFacts, point_checks, point_flags
from tests.helpers.typed import storage_point


@pytest.mark.parametrize("value, canonical", [("2%", "2%"), ("2 %", "2%"), (2, "2%"), (2.5, "2.5%"), (" 0.1% ", "0.1%"),
                                              ("50", "50%"), (0.125, "0.125%")])
def test_precision_values_read_as_their_canonical_form(value: object, canonical: str) -> None:
    assert precision(value) == canonical


@pytest.mark.parametrize("value, why", [(0, "from 0.1% to 50%"), ("51 %", "from 0.1% to 50%"), ("x", "such as 2%"),
                                        (True, "such as 2%"), ("1.2345%", "three decimals"), (10 ** 400, "to 50%"),
                                        (float("nan"), "to 50%"), ("-2%", "such as 2%")])
def test_bad_precision_values_are_refused_with_the_reason(value: object, why: str) -> None:
    with pytest.raises(ValueError, match=why):
        precision(value)


@settings(max_examples=150, deadline=None)
@given(st.one_of(st.text(max_size=12), st.floats(allow_nan=True), st.integers(), st.booleans(), st.none()))
def test_the_precision_parser_gives_a_canonical_value_or_a_value_error(value: object) -> None:
    try:
        got = precision(value)
    except ValueError:
        return
    assert precision(got) == got and 0.1 <= float(got.rstrip("%")) <= 50


def test_the_key_is_set_like_any_other_left_out_when_unset_and_refused_with_one_sentence() -> None:
    preset = presets.load("quick")
    assert "precision" not in preset.expand()[0].to_dict()  # plans and lines without it keep their bytes
    point = storage_point(presets.apply_overrides(preset, ["precision=2 %"]).expand()[0])
    assert point.precision == "2%" and point.to_dict()["precision"] == "2%"
    for bad in ("precision=0", "precision=51%", "precision=x", "precision=2%\n"):
        with pytest.raises(UsageError) as e:
            presets.apply_overrides(preset, [bad]).expand()
        assert "precision" in str(e.value) and "\n" not in str(e.value).strip()


def test_a_precision_with_a_latency_bound_search_is_refused() -> None:
    plan = presets.apply_overrides(presets.load("qd-knee"), ["latency_bound=1ms", "precision=2%"]).expand()
    with pytest.raises(UsageError, match="'precision' cannot be used with latency_bound"):
        FioRunner().check_plan(plan)
    FioRunner().check_plan(presets.apply_overrides(presets.load("quick"), ["precision=2%"]).expand())


def noisy(n: int, sd: float, seed: int = 1, mean: float = 10_000.0) -> list[float]:
    rng = random.Random(seed)
    return [rng.gauss(mean, sd) for _ in range(n)]


def test_no_stop_before_the_minimum_even_for_a_flat_series() -> None:
    assert decide([5000.0] * (MIN_SECONDS - 1), 2.0) == decide([], 2.0)
    assert not decide([5000.0] * (MIN_SECONDS - 1), 2.0).stop
    got = decide([5000.0] * GROUP * FINE_MIN_BATCHES, 2.0)  # the fewest sub-second samples with an interval
    assert got.stop and got.reached_pct == 0.0


def test_a_quiet_series_stops_and_a_noisy_one_goes_on() -> None:
    # 40 samples (10 s at 250 ms): 30 of this series, averaged in fours, look correlated (too few to rule out)
    quiet, loud = noisy(40, 100.0), noisy(40, 3000.0)  # ±1 % and ±30 % a sample
    q, n = decide(quiet, 2.0), decide(loud, 2.0)
    assert q.stop and q.reached_pct is not None and q.reached_pct < 2.0
    assert not n.stop and n.reached_pct is not None and n.reached_pct > 2.0


def test_with_steady_the_precision_alone_does_not_stop_the_point() -> None:
    quiet = noisy(40, 100.0)
    assert not decide(quiet, 2.0, steady_held=False).stop
    assert decide(quiet, 2.0, steady_held=True).stop


def test_checks_come_every_second_then_every_n_over_60_seconds() -> None:
    assert not due(MIN_SECONDS - 1, 0) and due(MIN_SECONDS, 0) and due(11, 10)
    assert not due(600, 595) and due(600, 590)  # every 10 s at 600 samples
    checks, last = 0, 0
    for n in range(1, 3601):
        if due(n, last):
            checks, last = checks + 1, n
    assert checks < 400  # a 1-hour point: about 60·(1 + ln 60) checks, not 3,600


def test_a_long_series_is_grouped_before_the_interval_and_keeps_its_precision() -> None:
    long = noisy(4 * MAX_CHECK_SAMPLES, 1000.0)
    got = reached_percent(long)
    # 9,600 samples of ±10 %: the mean is known to about 1.96 · 10 % / √9600 = 0.2 %
    assert got is not None and 0.1 < got < 0.35


def steady(attained: bool) -> dict[str, object]:
    return {"window_s": 5, "filled_s": 5, "attained": attained, "deviation": 1.0}


def fed(w: PrecisionWatch, values: list[float], step_s: float = 0.25, measuring: bool = True,
        attained: bool | None = None) -> list[bool]:
    """The watch fed the point's growing series of sub-second samples, ``step_s`` apart, one at a time."""
    series: list[float] = []
    stops = []
    for v in values:
        series.append(v)
        stops.append(w.feed(series, len(series) * step_s, measuring,
                            steady(attained) if attained is not None else None))
    return stops


def test_the_watch_counts_measured_seconds_and_stops_once() -> None:
    w = PrecisionWatch(2.0)
    assert not any(fed(w, [9999.0] * 80, measuring=False))  # ramp_time: not counted
    per_s = 4  # samples 250 ms apart
    stops = fed(w, [10_000.0] * (MIN_SECONDS * per_s + 8))
    assert stops.index(True) == MIN_SECONDS * per_s - 1 and stops.count(True) == 1 and w.stopped
    assert w.measured_s == MIN_SECONDS and w.reached_pct == 0.0
    w = PrecisionWatch(2.0)
    stops = fed(w, noisy(160, 1000.0))  # ±10 % a sample: a few more seconds
    assert stops.count(True) == 1 and w.reached_pct is not None and w.reached_pct <= 2.0
    assert MIN_SECONDS <= w.measured_s < 40


def test_the_watch_of_a_steady_point_waits_for_fio_s_criterion() -> None:
    w = PrecisionWatch(2.0, steady=True)
    values = noisy(60, 50.0)
    assert not any(fed(w, values, attained=False))
    assert w.feed(values + [10_000.0], 61 * 0.25, True, steady(True))


def part(target: float, values: list[float], stopped: bool = False, steady: bool | None = None,
         after: float | None = 12.0) -> dict[str, object]:
    w = PrecisionWatch(target)
    w.iops, w.stopped = array("d", values), stopped
    return precision_part(w, after, steady)


def test_the_part_says_what_ended_the_point() -> None:
    quiet, loud = noisy(40, 100.0), noisy(40, 3000.0)
    p = part(2.0, quiet, stopped=True)
    assert p["stop"] == "precise" and p["figure"] == "iops" and p["after_s"] == 12.0 and p["target_pct"] == 2.0
    assert isinstance(p["reached_pct"], float) and p["reached_pct"] < 2.0
    assert part(2.0, loud)["stop"] == "runtime"
    assert part(2.0, quiet, steady=True)["stop"] == "precise"  # fio's steady state ended it, precision reached
    assert part(2.0, loud, steady=True)["stop"] == "steady"
    assert part(2.0, quiet[:5], after=None) == {"target_pct": 2.0, "reached_pct": None, "figure": "iops",
                                                "stop": "runtime", "after_s": 5.0}


def test_a_point_that_missed_its_precision_is_flagged_imprecise_with_what_it_reached() -> None:
    reason = imprecise_reason({"target_pct": 2.0, "reached_pct": 3.14, "stop": "runtime", "after_s": 30.0})
    assert reason == "reached ±3.1 % of mean IOPS, ±2 % asked in 30 s before the runtime cap"
    assert imprecise_reason({"target_pct": 2.0, "reached_pct": 1.7, "stop": "precise", "after_s": 14.0}) is None
    none = imprecise_reason({"target_pct": 2.0, "reached_pct": None, "stop": "runtime", "after_s": 4.0})
    assert none is not None and none.startswith("no interval of mean IOPS")
    assert "steady state" in str(imprecise_reason({"target_pct": 1, "reached_pct": 5, "stop": "steady"}))
    assert imprecise_reason({"target_pct": "x"}) is None  # a hostile line's part: nothing to judge


def test_the_point_s_outcome_line_says_the_precision_reached() -> None:
    done = {"target_pct": 2.0, "reached_pct": 1.734, "figure": "iops", "stop": "precise", "after_s": 14.9}
    assert outcome_line({"precision": done}) == "±1.7 % of mean IOPS after 14.9 s, ±2 % asked"
    capped = {**done, "reached_pct": 3.14, "stop": "runtime", "after_s": 30.0}
    assert outcome_line({"precision": capped}) == "±3.1 % of mean IOPS at the cap after 30.0 s, ±2 % asked"
    assert outcome_line({"precision": {"target_pct": "2%"}}) == ""  # a hostile line: nothing said


def test_the_imprecise_check_is_not_applicable_without_a_precision() -> None:
    point = presets.load("quick").expand()[0].to_dict()
    m = StorageMetrics.of({"iops": 1000.0})
    checks = point_checks(point, m, Parts(), None, TargetFacts(), [])
    assert checks["imprecise"] == {"result": "not-applicable", "why": NO_PRECISION}
    missed = Parts(precision={"target_pct": 2.0, "reached_pct": 3.0, "figure": "iops", "stop": "runtime",
                              "after_s": 30.0})
    flags = point_flags({**point, "precision": "2%"}, m, missed)
    assert [f["flag"] for f in flags] == ["imprecise"]
    assert point_checks({**point, "precision": "2%"}, m, missed, None, TargetFacts(), flags)["imprecise"] == \
        {"result": "flagged"}
    met = Parts(precision={"target_pct": 2.0, "reached_pct": 1.0, "figure": "iops", "stop": "precise", "after_s": 11.0})
    assert point_checks({**point, "precision": "2%"}, m, met, None, TargetFacts(), [])["imprecise"] == \
        {"result": "passed"}
