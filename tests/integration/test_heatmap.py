"""Latency over time on real fio: every storage point keeps each second's latency histogram per direction
(raw/NNNN-JOB.hist.jsonl), the report draws its heat map, and a RAM-backed loop device the kernel throttles for
3 s mid-point shows the stall as a band at the right time, named as one stall event."""

from __future__ import annotations

import json
import re
import time
from pathlib import Path
from typing import Any

from app.engine import replay
from app.runners.base import Sample
from app.runners.fio_parse import job_list
from app.stats.latmap import ROWS_PER_DECADE, read_intervals, row_of, sample_hist, stall_events
from tests.helpers.loopdev import loop_device
from tests.helpers.schema_check import validate_dir
from tests.helpers.throttle import iops_throttle
from tests.integration.test_procedure import cli, lines
from tests.integration.test_tail_unstable import STALL_S, run_point, samples_seen

# the throttled seconds' I/Os wait 16 / 200 s = 80 ms at QD16: far above ten times a loaded VM's p99 (~3 ms)
STALL_IOPS = 200


def test_each_second_keeps_its_latency_histogram_per_direction_and_they_add_up_to_fios_count(tmp_path: Path) -> None:
    out = tmp_path / "r"
    got = cli("run", "custom", "--target", str(tmp_path / "f.bin"), "--yes", "--out", str(out), "--set", "rw=randrw",
              "--set", "bs=4k", "--set", "iodepth=4", "--set", "size=4m", "--set", "runtime=2", "--set", "ramp_time=0")
    assert got.returncode == 0, got.stderr
    validate_dir(out)
    (record,) = lines(out)
    assert record["raw"]["hist"].endswith(".hist.jsonl")
    hist_lines = [json.loads(ln) for ln in (out / record["raw"]["hist"]).read_text().splitlines()]
    samples = [json.loads(ln) for ln in (out / record["raw"]["samples"]).read_text().splitlines()]
    assert "hist" not in samples[0]  # the samples file stays as small as before
    assert [h["t"] for h in hist_lines] == [s["t"] for s in samples if s["iops"]]
    assert all({"read", "write"} <= set(h) for h in hist_lines)
    final: dict[str, Any] = job_list(json.loads((out / record["raw"]["json"]).read_text()))[0]
    for d in ("read", "write"):
        counted = sum(iv.ios for iv in read_intervals(out, record["raw"], d))
        # fio's final document lands a few ms after its last dump: a handful of I/Os may be in neither
        assert abs(counted - final[d]["total_ios"]) <= max(20, final[d]["total_ios"] // 100), (d, counted)


def test_a_device_throttled_for_three_seconds_mid_point_shows_one_stall_at_that_time(tmp_path: Path) -> None:
    out = tmp_path / "stalled"
    with loop_device(tmp_path, size_mb=64, ram=True) as dev, iops_throttle(dev.path) as (enter, set_iops):
        with run_point(out, dev.path, 10, enter) as proc:
            deadline = time.monotonic() + 30
            while samples_seen(out) < 4 and time.monotonic() < deadline:
                time.sleep(0.05)
            samples = (out / "raw").glob("*.samples.jsonl")
            began = json.loads(next(samples).read_text().splitlines()[-1])["t"]  # fio's clock as the throttle starts
            set_iops(STALL_IOPS)
            time.sleep(STALL_S)
            set_iops(0)
            _, stderr = proc.communicate(timeout=60)
        assert proc.returncode == 0, stderr
    (record,) = lines(out)
    intervals = read_intervals(out, record["raw"])
    events, bound = stall_events(intervals)
    assert bound is not None and len(events) == 1, (bound, events)
    (e,) = events
    # the throttle's 3 s, within a second each side (the loop's sleep, fio's one-second samples)
    assert began - 1.0 <= e.start_s <= began + 1.5 and STALL_S - 1.5 <= e.duration_s <= STALL_S + 1.5, (began, e)
    assert e.ios >= STALL_IOPS * (STALL_S - 1.0), e  # a throttled second completes about STALL_IOPS I/Os
    # the band: the rows of the stall's slowest I/Os (half a decade below its slowest, 100 ms at 200 IOPS) hold I/Os
    # only in its seconds; an ordinary second of a noisy VM may reach the bound itself (its tail), not the band
    slow = row_of(int(e.worst_ns)) - ROWS_PER_DECADE // 2
    in_band = [iv for iv in intervals if any(row_of(v) >= slow for v in iv.values)]
    # (a second that began within the event: the I/Os the throttle held complete at the start of the second after)
    assert in_band and all(e.start_s - 0.5 <= iv.start <= e.start_s + e.duration_s + 0.5 for iv in in_band)

    # a replay gives the Heat tab the same seconds: each replayed sample with its histograms
    replayed = [step.event for step in replay.load(out).steps if isinstance(step.event, Sample)]
    with_hist = [ev for ev in replayed if ev.hist is not None]
    assert len(with_hist) == len(intervals) and all(ev.hist is not None and sample_hist(ev.hist) for ev in with_hist)

    report = cli("report", str(out))
    assert report.returncode == 0, report.stderr
    text = (out / "report.md").read_text()
    assert "plots/latency-heatmap.svg" in text and (out / "plots" / "latency-heatmap.svg").is_file()
    row = re.search(r"^\|[^|]+\|\s*([\d.]+) s \|\s*([\d.]+) s \|\s*([\d,]+) \|.*\|$",
                    text.split("#### Stall events")[1], re.MULTILINE)
    assert row is not None, text.split("#### Stall events")[1][:800]
    assert float(row[1]) == e.start_s and float(row[2]) == e.duration_s and int(row[3].replace(",", "")) == e.ios
