"""app.model.tails: the histogram record, its percentiles and exceedance curve, the support rule; the validity flags
read
from the device and tail parts."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from app.model import tails
from app.model.records import JSONObject, Parts, StorageMetrics, read_line
from app.runners.fio_parse import _percentile_from_bins, combine_latency, latency_hist
from app.stats.validity import TargetFacts, device_reasons, point_checks, point_flags, tail_reason

hists = st.dictionaries(st.integers(1, 10**12), st.integers(1, 10**9), min_size=1, max_size=60)


def test_support_rule_needs_ten_ios_beyond_the_percentile() -> None:
    assert [tails.min_ios(p) for _, p, _ in tails.TAIL_PERCENTILES] == [1_000, 10_000, 100_000, 1_000_000]
    assert not tails.supported(99.999, 999_999) and tails.supported(99.999, 1_000_000)
    assert not tails.supported(99.0, None)


@given(hists, st.sampled_from([50.0, 90.0, 99.0, 99.9, 99.99, 99.999]))
def test_percentile_is_fios_rule(bins: dict[int, int], pct: float) -> None:
    assert tails.percentile(tails.hist_of_bins(bins), pct) == _percentile_from_bins(bins, pct)


@given(st.lists(hists, min_size=1, max_size=4))
def test_merged_histogram_counts_every_io_once(parts: list[dict[int, int]]) -> None:
    merged = tails.merge(tails.hist_of_bins(b) for b in parts)
    assert tails.count(merged) == sum(sum(b.values()) for b in parts)
    assert [v for v, _ in merged] == sorted({v for b in parts for v in b})


@given(hists)
def test_exceedance_falls_from_below_one_to_at_least_one_io(bins: dict[int, int]) -> None:
    h = tails.hist_of_bins(bins)
    curve = tails.exceedance(h, floor=0.0)
    n = tails.count(h)
    fracs = [f for _, f in curve]
    assert fracs == sorted(fracs, reverse=True)
    assert all(1 / n <= f < 1 for f in fracs)
    assert len(curve) == len(h) - 1  # the slowest bucket has nothing slower


def test_exceedance_stops_at_its_floor() -> None:
    h = [(100, 999_999), (200, 1)]  # one I/O in a million is slower than 100 ns
    assert tails.exceedance(h) == [(100, 1e-6)]
    assert tails.exceedance([(100, 9_999_999), (200, 1)]) == []


@given(hists)
def test_a_record_reads_back(bins: dict[int, int]) -> None:
    h = tails.hist_of_bins(bins)
    assert tails.hist_of_record(json.loads(json.dumps(tails.hist_record(h)))) == h


@given(st.recursive(st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=3),
                    lambda c: st.lists(c, max_size=4), max_leaves=12))
def test_a_hostile_record_reads_as_absent_or_as_a_histogram(v: object) -> None:
    h = tails.hist_of_record(v)
    if h is not None:
        assert all(isinstance(x, int) and isinstance(c, int) and c > 0 for x, c in h)
        assert [x for x, _ in h] == sorted({x for x, _ in h})


def test_hostile_records() -> None:
    for bad in ([], [[1, 0]], [[2, 1], [1, 1]], [[1, 1], [1, 1]], [[True, 1]], [[1.5, 1]], [[-1, 1]],
                [[1, 2**64]], [[1, 1, 1]], "[[1,1]]", [[i, 1] for i in range(tails.MAX_BINS + 1)]):
        assert tails.hist_of_record(bad) is None, bad


def test_a_line_keeps_a_bad_histogram_as_read_and_reads_none() -> None:
    line: dict[str, Any] = {"kind": "storage", "point": {"rw": "randread", "bs": 4096},
                            "metrics": {"iops": 1.0, "lat_hist": [[5, 1], [3, 1]]}}
    got = read_line(json.dumps(line))
    assert got.storage.hist() is None
    assert got.json()["metrics"] == line["metrics"]
    line["metrics"]["lat_hist"] = [[3, 1], [5, 2]]
    assert read_line(json.dumps(line)).storage.hist() == [(3, 1), (5, 2)]


def _lat(bins: dict[int, int], **pcts: int) -> dict[str, object]:
    n = sum(bins.values())
    return {"N": n, "min": min(bins), "max": max(bins), "mean": 1.0, "stddev": 0.0,
            "bins": {str(k): v for k, v in bins.items()},
            "percentile": {f"{p:f}": v for p, v in pcts.items()}}


def test_two_jobs_merge_their_bins_and_get_p99_999() -> None:
    fast = {100: 999_000, 200: 1000}
    slow = {100: 10, 5000: 990}
    jobs: list[dict[str, Any]] = [{"read": {"lat_ns": _lat(fast)}}, {"read": {"lat_ns": _lat(slow)}}]
    assert latency_hist(jobs) == [(100, 999_010), (200, 1000), (5000, 990)]
    lat = combine_latency([j["read"]["lat_ns"] for j in jobs])
    assert (lat["p99"], lat["p99_9"], lat["p99_999"]) == (100, 200, 5000)


def test_one_job_without_the_percentile_in_its_list_gets_it_from_its_bins_and_never_a_zero() -> None:
    lat = combine_latency([_lat({100: 10, 900: 1})])
    assert lat["p99_999"] == 900
    plain = {"N": 5, "min": 1, "max": 2, "mean": 1.0, "stddev": 0.0, "percentile": {"99.000000": 2}}
    got = combine_latency([plain])
    assert "p99_999" not in got and got["p99_9"] == 0  # the older percentiles stay as they were written
    assert latency_hist([{"read": {"lat_ns": plain}}]) is None


def _device(read: float, write: float | None = None, fio_read: int = 100 << 20, fio_write: int = 0) -> dict:
    return {"name": "loop3", "read_ratio": read, "write_ratio": write, "fio_read_bytes": fio_read,
            "fio_write_bytes": fio_write}


def test_device_flags_at_their_boundaries() -> None:
    assert device_reasons(_device(0.9)) == (None, None)
    assert device_reasons(_device(1.1)) == (None, None)
    low, high = device_reasons(_device(0.05))
    assert low is not None and high is None and "0.05×" in low and "loop3 read" in low
    low, high = device_reasons(_device(1.0, 1.5, fio_write=10 << 20))
    assert low is None and high is not None and high.startswith("writes: loop3 wrote 1.50×")
    # a direction with less than 1 MiB moved is not judged: other I/O on the device would decide it
    assert device_reasons(_device(0.0, fio_read=(1 << 20) - 1)) == (None, None)
    assert device_reasons({"unavailable": "tmpfs"}) == (None, None)


def test_tail_flag_and_the_checks_of_a_point() -> None:
    tail: JSONObject = {"intervals": 20, "median_p99_ns": 100_000.0, "worst_p99_ns": 900_000.0, "worst_t": 12.0,
            "ratio": 9.0, "factor": 4.0}
    reason = tail_reason(tail)
    assert reason is not None and "12 s" in reason and "9.0×" in reason
    assert tail_reason({**tail, "ratio": 4.0}) is None
    point = {"rw": "randread", "iodepth": 1, "numjobs": 1}
    m = StorageMetrics(iops=1000.0, usr_cpu=1.0, sys_cpu=1.0)
    parts = Parts(device=_device(0.01), tail=tail)
    flags = point_flags(point, m, parts)
    assert [f["flag"] for f in flags] == ["not-on-device", "tail-unstable"]
    checks = point_checks(point, m, parts, None, TargetFacts(), flags)
    assert checks["amplified"] == {"result": "passed"}
    none = point_checks(point, m, Parts(device={"unavailable": "a file on tmpfs has no block device"},
                                        tail={"unavailable": "3 measured seconds"}), None, TargetFacts(), [])
    assert none["not-on-device"]["why"] == "a file on tmpfs has no block device"
    assert none["tail-unstable"]["why"] == "3 measured seconds"


@settings(max_examples=50)
@given(st.lists(st.fixed_dictionaries({
    "t": st.floats(0, 1e6) | st.none() | st.booleans(), "interval_s": st.floats(0, 2) | st.text(max_size=2),
    "iops": st.floats(allow_nan=True, allow_infinity=True) | st.none(),
    "lat_p99_ns": st.floats(allow_nan=True, allow_infinity=True) | st.integers(-5, 10**9)}), max_size=30))
def test_tail_stability_of_hostile_samples_is_a_record(samples: list[dict[str, object]]) -> None:
    got = tails.tail_stability(samples)
    assert "unavailable" in got or (got["ratio"] >= 1 and got["intervals"] >= tails.MIN_TAIL_INTERVALS)  # type: ignore[operator]


def test_a_recorded_ratio_or_device_mean_out_of_range_reads_as_absent() -> None:
    """A results line from anywhere: 1e308 or a negative ratio is no measurement, and is not printed."""
    from app.stats.validity import recorded_ns, recorded_ratio

    for bad in (1e308, -1, "1.0", True, None, float("nan")):
        assert recorded_ratio({"read_ratio": bad}, "read_ratio") is None
    assert recorded_ratio({"read_ratio": 0.04}, "read_ratio") == 0.04
    assert recorded_ratio({"unavailable": "x", "read_ratio": 1.0}, "read_ratio") is None
    assert recorded_ns({"lat_mean_ns": 1e308}) is None and recorded_ns({"lat_mean_ns": 14_200}) == 14_200
    assert device_reasons(_device(1e308)) == (None, None)
