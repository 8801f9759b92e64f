"""app.stats.peak: the peak point, its configuration, IOPS per CPU (fio's own, the host's beside it) and which resource
ran out — each resource, the
not-known cases, hostile host_cpu parts, a hipri configuration skipped."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from app.model.records import read_line
from app.report.sections.peak_text import cost_text_of
from app.stats.peak import FIO_SOURCE, Config, HostCpu, cpu_cost, find_peak, host_cpu, is_peak_run
from tests.helpers.peak_runs import (
    HIPRI,
    HIPRI_SKIP,
    LIBAIO,
    REGISTERED,
    SQPOLL,
    URING,
    line,
    lines_of,
    peak_lines,
    qd_sweep,
)


def test_device_bound_peak_names_its_configuration_and_the_device_figures() -> None:
    peak = find_peak(lines_of(peak_lines()))
    assert peak is not None and peak.direction == "read"
    assert peak.config == Config("randread", 4096, "io_uring", ("registerfiles", "fixedbufs"), "0-1")
    assert peak.line.storage.iops == 362e3 and peak.line.point["iodepth"] == 128
    # IOPS per CPU is fio's own (362k I/Os a second over 0.40 CPU of its job thread); the host's beside it
    assert peak.cost.value == 905e3 and peak.cost.source == FIO_SOURCE and peak.cost.fio_cpus == pytest.approx(0.4)
    assert isinstance(peak.cost.host, HostCpu) and peak.cost.host.iops_per_busy_cpu == 362e3
    assert peak.limit.resource == "device"
    ev = peak.limit.evidence
    assert "360k IOPS at QD64 × 1 job → 362k at QD128 × 1 job, +0.6 %" in ev
    assert "175.0 → 350.0 µs" in ev and "1.00 of the 2 CPUs counted (0-1) busy, 50%" in ev
    assert "loop9 busy 100% of the window, 170.0 µs mean per request" in ev
    # every configuration, best first, in fio's own CPU and in the host's busy CPUs: only the host's counts
    # sqpoll's polling thread (fio's usr+sys leaves it out)
    assert [(b.config.engine_label, b.points, round(b.cost.value or 0),
             round(b.cost.host.iops_per_busy_cpu or 0) if isinstance(b.cost.host, HostCpu) else None)
            for b in peak.configs] == [
        ("io_uring +registerfiles +fixedbufs", 4, 905000, 362000),
        ("io_uring +registerfiles +fixedbufs +sqthread_poll", 4, 1408000, 220000),
        ("io_uring", 4, 837500, 304546), ("libaio", 4, 762500, 254167)]


def test_cpu_bound_by_busy_cpus_or_by_fio_per_job() -> None:
    busy = lines_of(qd_sweep(0, URING, [100e3, 150e3, 151e3], [50, 70, 140], busy=[1.2, 1.8, 1.9], qds=(8, 16, 32)))
    peak = find_peak(busy)
    assert peak is not None and peak.limit.resource == "CPU"
    assert "1.90 of the 2 CPUs counted (0-1) busy, 95%" in peak.limit.evidence
    assert "; fio's job threads 40% busy each" in peak.limit.evidence  # the rest: the kernel or other processes
    fio = lines_of(qd_sweep(0, LIBAIO, [100e3, 150e3, 151e3], [50, 70, 140], qds=(8, 16, 32), cpu_pct=97.0))
    peak = find_peak(fio)
    assert peak is not None and peak.limit.resource == "CPU"
    assert "fio's job threads 97% busy each" in peak.limit.evidence
    assert peak.cost.source == FIO_SOURCE  # no host_cpu part: fio's own figure, saying so


def test_depth_when_the_deepest_load_still_grew() -> None:
    grid = qd_sweep(0, REGISTERED, [100e3, 180e3], [40, 45], busy=[0.5, 0.7], qds=(16, 32))
    grid += qd_sweep(2, REGISTERED, [190e3, 260e3], [42, 50], busy=[0.8, 1.0], qds=(16, 32), jobs=2)
    peak = find_peak(lines_of(grid))
    assert peak is not None and peak.limit.resource == "depth"
    assert "190k IOPS at QD16 × 2 jobs → 260k at QD32 × 2 jobs, +36.8 %" in peak.limit.evidence
    assert "raise iodepth/numjobs" in peak.limit.evidence
    # the same peak with a larger numjobs measured after it: no longer the plan's edge, and it fell back: device
    more = grid + [line(4, REGISTERED, 32, 250e3, 100, jobs=4, busy=1.0)]
    assert find_peak(lines_of(more)).limit.resource == "device"  # type: ignore[union-attr]


@pytest.mark.parametrize("raw, why", [
    ([line(0, LIBAIO, 32, 100e3, 300, busy=0.5)], "measured one load only"),
    (qd_sweep(0, LIBAIO, [100e3, 101e3], [100, 200], qds=(16, 32), cpu_pct=None), "records no CPU figure"),
    (qd_sweep(0, LIBAIO, [100e3, 101e3], [100, 90], busy=[0.5, 0.5], qds=(16, 32)), "mean latency did not rise"),
])
def test_not_known_says_why(raw: list[dict[str, Any]], why: str) -> None:
    peak = find_peak(lines_of(raw))
    assert peak is not None and peak.limit.resource == "not known" and why in peak.limit.evidence


def _qd_sweep_with(part: Any) -> list[dict[str, Any]]:
    raw = qd_sweep(0, URING, [100e3, 101e3], [100, 200], qds=(16, 32))
    for x in raw:
        x["host_cpu"] = part
    return raw


@pytest.mark.parametrize("part, why", [
    ("busy", "is not an object"),
    ({"unavailable": "no /proc/stat\x1b[31m here"}, "no /proc/stat here"),
    ({"cpus": "0-1; rm", "window_s": 10, "busy_s": 5, "busy_cpus": 0.5}, "cpus is not a CPU list"),
    ({"cpus": "0-1", "window_s": 10, "busy_s": "5", "busy_cpus": 0.5}, "busy_s is not a number"),
    ({"cpus": "0-1", "window_s": 0, "busy_s": 0, "busy_cpus": 0}, "window_s is not positive"),
    ({"cpus": "0-1", "window_s": 10, "busy_s": 5, "busy_cpus": 0.5, "steal_s": 1e9}, "steal_s is not a share"),
    ({"cpus": "0-1", "window_s": 10, "busy_s": 1e12, "busy_cpus": 1e11}, "more busy time than its 2 CPUs"),
    ({"cpus": "0", "window_s": 10, "busy_s": 15, "busy_cpus": 1.5, "iops_per_busy_cpu": 1}, "than its 1 CPUs"),
])
def test_hostile_host_cpu_parts_are_not_figures(part: Any, why: str) -> None:
    lines = lines_of(_qd_sweep_with(part))
    checked = host_cpu(lines[0].parts.host_cpu if not isinstance(part, str) else part)
    assert isinstance(checked, str) and why in checked and "\x1b" not in checked
    cost = cpu_cost(lines[0])
    assert cost.source == FIO_SOURCE and not isinstance(cost.host, HostCpu)  # fio's figure; no host figure
    peak = find_peak(lines)
    assert peak is not None and "/proc/stat" not in peak.limit.evidence  # the broken part judged nothing


def test_a_figure_from_too_little_busy_time_is_flagged() -> None:
    raw = line(0, URING, 16, 50e3, 300, host={"cpus": "0", "window_s": 0.5, "busy_s": 0.2, "busy_cpus": 0.4,
                                            "iops_per_busy_cpu": 125e3})
    cost = cpu_cost(lines_of([raw])[0])
    assert isinstance(cost.host, HostCpu) and cost.host.few
    assert cost_text_of(cost.host) == "125k (from only 0.20 CPU-s)"


def test_hipri_without_poll_queues_is_a_skipped_configuration() -> None:
    lines = lines_of(peak_lines())
    saturated: dict[str, Any] = {"point": {**lines[0].point, "iodepth": 256}, "reason": "saturated at QD 64"}
    peak = find_peak(lines, [(HIPRI_SKIP["point"], HIPRI_SKIP["reason"]), (saturated["point"], saturated["reason"])])
    assert peak is not None
    assert [(c.engine_label, why) for c, why in peak.skipped] == [
        ("io_uring +registerfiles +fixedbufs +hipri", "hipri needs poll queues: loop9's queue/io_poll is 0")]
    assert Config.of(HIPRI_SKIP["point"]).options == ("registerfiles", "fixedbufs", "hipri")


def test_which_runs_are_peak_runs_and_a_write_run() -> None:
    libaio = lines_of(qd_sweep(0, LIBAIO, [1e3, 2e3], [1, 2], qds=(1, 2)))
    assert not is_peak_run("qd-scaling", libaio) and is_peak_run("peak", libaio)
    assert is_peak_run(None, libaio + lines_of(qd_sweep(2, SQPOLL, [1e3, 2e3], [1, 2], qds=(1, 2))))
    writes = lines_of(qd_sweep(0, LIBAIO, [1e3, 2e3], [1, 2], qds=(1, 2)))
    writes = [read_line(json.dumps({**w.json(), "point": {**w.point, "rw": "randwrite"}})) for w in writes]
    peak = find_peak(writes)
    assert peak is not None and peak.direction == "write" and peak.line.storage.iops == 2e3
    # a line without the option keys (written before they existed) is its engine alone
    old = {k: v for k, v in HIPRI.items() if k == "ioengine"}
    assert Config.of({"rw": "randread", "bs": 4096, **old}).label == "io_uring"


JSONISH = st.recursive(st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
                       lambda c: st.lists(c, max_size=3) | st.dictionaries(st.text(max_size=6), c, max_size=3),
                       max_leaves=8)
KEYS = st.sampled_from(["cpus", "window_s", "busy_s", "busy_cpus", "iops_per_busy_cpu", "unavailable", "steal_s"])
VALUES = st.one_of(JSONISH, st.sampled_from(["0-1", "0", "3,5-7", "", "-1"]),
                   st.floats(min_value=-1, max_value=1e6))


@settings(derandomize=True, deadline=None, max_examples=60)
@given(st.dictionaries(KEYS, VALUES, max_size=7))
def test_any_host_cpu_part_reads_as_a_bounded_figure_or_a_sentence(part: dict[str, Any]) -> None:
    got = host_cpu(part)
    if isinstance(got, HostCpu):
        assert 0 <= got.share <= 1.05 and got.window_s > 0 and got.count >= 1
    else:
        assert isinstance(got, str) and got
