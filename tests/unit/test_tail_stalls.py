"""A tail percentile is supported by distinct stall events, not by I/Os: one stall of the device holds every I/O
in flight (QD × jobs) and they complete together, so a deep queue's p99.99 can be set by a single stall although
the point completed far more than 100,000 I/Os (the review's qd-scaling: p99.99 equalled the maximum, and the I/Os
within 20 % of the maximum were exactly the queue depth)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from app.model import tails
from app.model.tails import TAIL_PERCENTILES, count, hist_record, percentile
from app.report import render_report
from app.report.data.model import load
from app.report.sections.tails import tail_cells
from tests.helpers.tail_runs import checked, fio_buckets, lognormal_hist, storage_line, write_run


def clustered_stalls(ios: int, qd: int, stalls: int, median_ns: float = 400_000.0,
                     stall_ns: int = 40 << 20) -> list[tuple[int, int]]:
    """``ios`` I/Os: a log-normal body at ``median_ns`` and ``stalls`` stalls, each holding the ``qd`` I/Os in
    flight, which complete together: their latencies lie within one service time (the mean) of each other,
    spread over a few buckets at about ``stall_ns`` (the n-th stall a little later than the one before)."""
    body = dict(lognormal_hist(ios - stalls * qd, median_ns, sigma=0.3))
    grid = [b for b in fio_buckets(hi_ns=1 << 30) if b >= stall_ns]
    for s in range(stalls):
        for i in range(qd):
            b = grid[s * 8 + i % 4]  # four neighbouring buckets: within ~5 %, far less than the 400 µs service time
            body[b] = body.get(b, 0) + 1
    return sorted(body.items())


def stall_line(index: int, ios: int, qd: int, stalls: int) -> dict[str, Any]:
    line = storage_line(index, ios, 400_000.0, iodepth=qd)
    h = clustered_stalls(ios, qd, stalls)
    lat = dict(line["metrics"]["lat_ns"], max=h[-1][0], **{k: percentile(h, pct) for k, pct, _ in TAIL_PERCENTILES})
    line["metrics"].update(lat_hist=hist_record(h), lat_ns=lat, total_ios=count(h))
    return checked(line)


def test_the_rule_counts_stall_events_of_up_to_the_queue_depth() -> None:
    assert [tails.min_ios(p) for _, p, _ in TAIL_PERCENTILES] == [1_000, 10_000, 100_000, 1_000_000]
    assert [tails.min_ios(p, 32) for _, p, _ in TAIL_PERCENTILES] == [32_000, 320_000, 3_200_000, 32_000_000]
    assert tails.stall_events(99.99, 300_000, 32) == 1 and tails.stall_events(99.99, 300_000, 1) == 30
    assert not tails.supported(99.99, 300_000, 32) and tails.supported(99.99, 300_000)


def test_one_stall_holding_the_whole_queue_does_not_support_p99_99(tmp_path: Path) -> None:
    """QD32, 300,000 I/Os, one stall of 32 I/Os at ~40 ms: p99.99 (30 I/Os beyond it) sits inside the stall, at
    the maximum, and the I/Os within 20 % of the maximum are exactly the queue depth. The count rule called it
    supported (300,000 ≥ 100,000); it is one event."""
    line = stall_line(0, 300_000, 32, stalls=1)
    h = [tuple(x) for x in line["metrics"]["lat_hist"]]
    top = h[-1][0]
    assert sum(c for v, c in h if v >= 0.8 * top) == 32
    assert line["metrics"]["lat_ns"]["p99_99"] >= 0.95 * top
    d = write_run(tmp_path / "run", [line, stall_line(1, 40_000, 1, stalls=0)])
    qd32, qd1 = load(d).storage
    cells = tail_cells(qd32)
    # p99: 3,000 I/Os beyond it, at least 94 events; p99.9: 300, at least 9.4 (under ten); p99.99: 30, one stall
    assert cells[0] != "—" and cells[1:] == ["—", "—", "—"]
    assert tail_cells(qd1)[:2] != ["—", "—"] and tail_cells(qd1)[2:] == ["—", "—"]  # QD1: the old count rule
    render_report(d)
    md = (d / "report.md").read_text()
    assert "distinct stall events" in md and "at N = 32: p99 32,000, p99.9 320,000, p99.99 3,200,000" in md


def test_many_clustered_stalls_support_what_their_count_does(tmp_path: Path) -> None:
    """QD16 with 4,000,000 I/Os: p99.99 has 400 I/Os beyond it, at least 25 stall events of 16: supported."""
    d = write_run(tmp_path / "run", [stall_line(0, 4_000_000, 16, stalls=30)])
    (row,) = load(d).storage
    assert tail_cells(row)[:3] != ["—"] * 3 and tail_cells(row)[2] != "—" and tail_cells(row)[3] == "—"
