"""Per-interval latency histograms (the samples line's ``hist``), the heat map drawn from them and the stall
events named from it (app.stats.latmap)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from app.model.tails import merge, percentile
from app.runners.fio_parse import SampleTracker
from app.stats.latmap import (
    HIST_KEY,
    Interval,
    decode,
    encode,
    heat_map,
    interval_of,
    intervals_of,
    merge_hosts,
    merged,
    row_of,
    sample_hist,
    stall_events,
)
from tests.helpers.typed import as_dict


def _dump(ts_ms: int, read_bins: dict[int, int], write_bins: dict[int, int] | None = None) -> dict[str, Any]:
    def part(bins: dict[int, int]) -> dict[str, Any]:
        n = sum(bins.values())
        return {"total_ios": n, "io_bytes": n * 4096, "runtime": ts_ms - 1_000_000,
                "lat_ns": {"N": n, "mean": 1000.0, "bins": {str(k): v for k, v in bins.items()}}}
    job = {"read": part(read_bins), "write": part(write_bins or {})}
    return {"timestamp_ms": ts_ms, "jobs": [job]}


def test_each_second_keeps_its_own_histogram_per_direction_as_the_difference_of_two_dumps() -> None:
    tracker = SampleTracker()
    first = tracker.update(_dump(1_001_000, {1000: 5, 2000: 1}, {5000: 2}), 1.0)
    second = tracker.update(_dump(1_002_000, {1000: 9, 2000: 1, 900_000: 3}, {5000: 2}), 2.0)
    assert first is not None and second is not None
    assert decode(as_dict(first[HIST_KEY])["read"]) == [(1000, 5), (2000, 1)]
    assert decode(as_dict(first[HIST_KEY])["write"]) == [(5000, 2)]
    # the second second: 4 more at 1 µs and 3 at 900 µs read; no write completed, so no write record
    assert set(as_dict(second[HIST_KEY])) == {"read"}
    assert sample_hist(second) == [(1000, 4), (900_000, 3)]
    assert sample_hist(second, "write") == []
    json.dumps(second)  # a samples line as written


def test_the_record_is_compact_and_round_trips() -> None:
    bins = {12288: 3, 12544: 5, 1_000_000_000: 1}
    rec = encode(bins)
    assert rec == [12288, 3, 256, 5, 1_000_000_000 - 12544, 1]
    assert decode(rec) == sorted(bins.items())


@pytest.mark.parametrize("bad", [
    [], [1], [1, 2, 3], [1, 0], [5, 1, 0, 1], [-1, 1], [1.5, 1], [True, 1], ["1", 1], [2 ** 63, 1, 1, 1],
    [1, 1] * 5000, "1,2", None, {"a": 1},
])
def test_a_hostile_record_reads_as_absent(bad: object) -> None:
    assert decode(bad) is None
    assert sample_hist({"t": 1, "interval_s": 1, "read": bad}) is None


def test_a_line_without_a_direction_or_whose_record_is_not_an_object_reads_as_absent() -> None:
    assert sample_hist({"t": 1, "interval_s": 1, "read": [1, 1], "other": 5}) == [(1, 1)]
    assert sample_hist({HIST_KEY: [[1, 1]]}) is None
    assert sample_hist({"t": 1.0}) is None  # an old run: no histograms at all


def _iv(t: float, hist: dict[int, int], dt: float = 1.0) -> dict[str, Any]:
    return {"t": t, "interval_s": dt, "read": encode(hist)}  # a line of raw/NNNN-JOB.hist.jsonl


def test_ramp_seconds_and_lines_without_a_sane_time_are_left_out() -> None:
    assert interval_of({**_iv(1.0, {10: 1}), "ramp": True}) is None
    assert interval_of({**_iv(1.0, {10: 1}), "t": float("nan")}) is None
    assert interval_of({**_iv(1.0, {10: 1}), "interval_s": 0}) is None
    assert [iv.t for iv in intervals_of([_iv(2.0, {10: 1}), _iv(1.0, {10: 1})])] == [1.0, 2.0]


def test_a_long_point_merges_seconds_into_columns_by_adding_histograms() -> None:
    samples = [_iv(float(i + 1), {20_000: 100, 40_000: 1}) for i in range(3600)]
    ivs = intervals_of(samples)
    m = heat_map(ivs, max_columns=240)
    assert m is not None and len(m.counts) == 240 and m.per_column == 15
    assert m.ios == 3600 * 101
    assert m.seconds[0] == pytest.approx(15.0) and m.starts[0] == 0.0 and m.ends[-1] == 3600.0
    assert m.rate(0, row_of(20_000)) == pytest.approx(100.0)  # I/Os per second, not per column
    assert m.lines["p50"][0] == 20_000 and m.lines["p99.9"][0] == 40_000


def test_a_stall_is_named_once_with_its_time_duration_and_io_count() -> None:
    quiet = {10_000: 50_000, 20_000: 400}
    samples = [_iv(float(t), quiet) for t in range(1, 11)]
    for t in (5, 6, 7):  # three seconds of I/Os completing at 8 ms, far above the point's p99 (20 µs)
        samples[t - 1] = _iv(float(t), {10_000: 1_000, 8_000_000: 2_000})
    events, bound = stall_events(intervals_of(samples))
    # the stall holds 1.7 % of the I/Os, so the p99 of all of them is 8 ms: the bound is ten times the median
    # second's p99 (10 µs), which a stall of fewer than half the seconds does not move
    assert percentile(merged(intervals_of(samples)), 99.0) == 8_000_000
    assert bound == pytest.approx(10 * 10_000)
    assert len(events) == 1
    (e,) = events
    assert (e.start_s, e.duration_s, e.ios, e.worst_ns) == (4.0, 3.0, 6_000, 8_000_000)


def test_a_lone_slow_io_or_a_gap_in_time_makes_no_single_event() -> None:
    quiet = {10_000: 50_000, 20_000: 400}
    samples = [_iv(float(t), quiet) for t in range(1, 11)]
    samples[2] = _iv(3.0, {**quiet, 5_000_000: 1})  # one I/O: no cluster
    events, _ = stall_events(intervals_of(samples))
    assert events == []
    gap = [_iv(1.0, quiet), _iv(2.0, {9_000_000: 5}), _iv(5.0, {9_000_000: 5})] + [_iv(float(t), quiet)
                                                                                  for t in range(6, 10)]
    events, _ = stall_events(intervals_of(gap))
    assert [(e.start_s, e.ios) for e in events] == [(1.0, 5), (4.0, 5)]


def test_a_tail_that_every_second_has_is_no_stall_but_a_second_with_many_more_is() -> None:
    usual = {10_000: 50_000, 20_000: 400, 900_000: 30}  # every second: 30 I/Os at 900 µs
    samples = [_iv(float(t), usual) for t in range(1, 11)]
    assert stall_events(intervals_of(samples))[0] == []
    samples[6] = _iv(7.0, {10_000: 20_000, 900_000: 400})
    (e,) = stall_events(intervals_of(samples))[0]
    assert (e.start_s, e.duration_s, e.ios) == (6.0, 1.0, 400)


def test_hosts_merge_bucket_by_bucket_and_the_merged_p99_is_the_unions() -> None:
    a = intervals_of([_iv(1.0, {10_000: 990, 50_000: 10}), _iv(2.0, {10_000: 1000})])
    b = intervals_of([_iv(1.1, {30_000: 500, 900_000: 20}), _iv(2.05, {30_000: 500})])
    both = merge_hosts([a, b])
    assert [iv.t for iv in both] == [1.0, 2.0]
    direct = merge([iv.hist() for iv in a + b])
    assert merged(both) == direct
    assert percentile(merged(both), 99.0) == percentile(direct, 99.0) == 30_000
    # averaging the hosts' own p99s (10 µs and 900 µs) would say 455 µs
    assert (percentile(merged(a), 99.0), percentile(merged(b), 99.0)) == (10_000, 900_000)
    assert isinstance(both[0], Interval) and both[0].ios == 1520


def test_a_stalled_second_is_judged_by_the_share_of_its_i_os_that_are_late_not_their_count() -> None:
    """The seconds of a real run on a RAM loop device throttled to 200 IOPS for 3 s, on a loaded VM: each ordinary
    second completes ~200,000 I/Os of which 48–383 land beyond 10× the typical p99 (its tail); each throttled second
    completes ~180, of which ~150 are late.  Counting late I/Os saw no stall (150 < 10 × the median 94); their share
    sees exactly the throttled seconds, as one event."""
    from array import array

    from app.stats.latmap import Interval, stall_events

    def second(end: float, fast: int, late: int, late_ns: int = 100_000_000) -> Interval:
        tail = max(1, fast // 1000)  # each second's ordinary p99 region
        values = array("q", [100_000, 250_000, 2_500_000, late_ns])
        counts = array("q", [fast - tail, tail, 0, 0])
        if late:
            counts[3 if late_ns > 10_000_000 else 2] = late
        return Interval(end, 1.0, values, counts)

    ordinary = [(48, 2_500_000), (94, 2_500_000), (64, 2_500_000), (383, 2_500_000), (95, 2_500_000),
                (125, 2_500_000)]
    seconds = [second(1.0 + i, 200_000, late, ns) for i, (late, ns) in enumerate(ordinary[:3])]
    seconds += [second(4.0 + i, 30, 150) for i in range(3)]  # the throttle's three seconds
    seconds += [second(7.0 + i, 200_000, late, ns) for i, (late, ns) in enumerate(ordinary[3:])]
    events, bound = stall_events(seconds)
    assert bound == 1_000_000.0  # 10 × the ordinary seconds' p99 (100 µs)
    assert len(events) == 1, events
    (e,) = events
    assert (e.start_s, e.duration_s, e.ios) == (3.0, 3.0, 450)
