"""Time series: the write cliff (found in a real run whose device slows down mid-write, and by its rule on
series), samples.csv, and the report's time-series figure."""

from __future__ import annotations

import csv
import json
import random
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from app.stats.timeseries import samples_csv, write_cliff
from tests.helpers.loopdev import loop_device
from tests.helpers.schema_check import validate_dir
from tests.helpers.throttle import write_bps_throttle
from tests.integration.test_procedure import ROOT, cli, lines


def series(levels: list[float], start: float = 1.0) -> list[dict[str, Any]]:
    return [{"t": start + i, "interval_s": 1.0, "bw_bytes": v, "iops": v / 131072} for i, v in enumerate(levels)]


def test_a_drop_that_holds_is_a_cliff_with_the_bytes_before_it() -> None:
    c = write_cliff(series([2e9] * 6 + [5e8] * 8))
    assert c == {"at_bytes": 12_000_000_000, "at_s": 6.0, "before_bw_bytes": 2e9, "after_bw_bytes": 5e8}


def test_no_cliff_in_a_dip_a_small_drop_a_rise_or_a_short_series() -> None:
    assert write_cliff(series([2e9] * 6 + [5e8] + [2e9] * 6)) is None  # one slow second
    assert write_cliff(series([2e9] * 6 + [1.3e9] * 6)) is None  # 65 %: not below 60 %
    assert write_cliff(series([5e8] * 6 + [2e9] * 6)) is None
    assert write_cliff(series([2e9] * 3 + [1e8] * 2)) is None
    assert write_cliff([]) is None


@settings(max_examples=200, deadline=None)
@given(st.integers(6, 60), st.floats(0.0, 0.25), st.integers(0, 2**32 - 1))
def test_jitter_of_a_shared_vm_is_never_a_cliff(n: int, jitter: float, seed: int) -> None:
    rng = random.Random(seed)
    assert write_cliff(series([1e9 * (1 + rng.uniform(-jitter, jitter)) for _ in range(n)])) is None


@settings(max_examples=200, deadline=None)
@given(st.integers(3, 30), st.integers(3, 30), st.floats(2.0, 20.0), st.integers(0, 2**32 - 1))
def test_a_step_down_with_noise_is_found_where_it_is(before: int, after: int, factor: float, seed: int) -> None:
    rng = random.Random(seed)
    levels = [1e9 * (1 + rng.uniform(-0.1, 0.1)) for _ in range(before)]
    levels += [1e9 / factor * (1 + rng.uniform(-0.1, 0.1)) for _ in range(after)]
    c = write_cliff(series(levels))
    assert c is not None and c["at_s"] == before
    assert c["after_bw_bytes"] / c["before_bw_bytes"] < 0.6


@settings(max_examples=300, deadline=None)
@given(st.lists(st.dictionaries(st.sampled_from(["t", "interval_s", "bw_bytes", "iops", "lat_p99_ns"]),
                                st.none() | st.booleans() | st.integers(-10, 10**20) | st.floats()
                                | st.text(max_size=4)),
                max_size=40))
def test_hostile_samples_never_raise(samples: list[dict[str, Any]]) -> None:
    c = write_cliff(samples)
    assert c is None or c["before_bw_bytes"] > c["after_bw_bytes"] >= 0
    text = samples_csv([(0, samples)])
    rows = list(csv.reader(text.splitlines()))
    assert len(rows) == len(samples) + 1 and all(len(r) == len(rows[0]) for r in rows)


def test_a_real_write_whose_device_slows_mid_run_has_a_cliff_in_results_report_and_samples_csv(tmp_path: Path) -> None:
    """A RAM-backed loop device throttled to 200 MB/s of writes, lowered to 40 MB/s once fio has written for
    three seconds: what an SLC cache filling up looks like from the host."""
    out = tmp_path / "cliff"
    with (loop_device(tmp_path, size_mb=64, ram=True) as dev,
          write_bps_throttle(dev.path, 200_000_000) as (enter, set_bps)):
        proc = subprocess.Popen([sys.executable, "-m", "app", "run", "custom", "--target", dev.path, "--yes",
                                 "--out", str(out), "--set", "rw=write", "--set", "bs=128k", "--set", "iodepth=8",
                                 "--set", "size=64m", "--set", "runtime=9", "--set", "ramp_time=0"],
                                cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, preexec_fn=enter)
        try:
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline:
                found = list((out / "raw").glob("*.samples.jsonl")) if (out / "raw").is_dir() else []
                if found and len(found[0].read_text().splitlines()) >= 4:
                    break
                time.sleep(0.05)
            set_bps(40_000_000)
            stdout, stderr = proc.communicate(timeout=120)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    assert proc.returncode == 0, stderr
    validate_dir(out)  # every line written validates against the JSON Schemas
    (record,) = lines(out)
    c = record["write_cliff"]
    assert 150e6 < c["before_bw_bytes"] < 250e6 and 30e6 < c["after_bw_bytes"] < 50e6, c
    assert 3 <= c["at_s"] <= 6 and 0.5e9 < c["at_bytes"] < 1.3e9, c
    report = cli("report", str(out))
    assert report.returncode == 0, report.stderr
    text = (out / "report.md").read_text()
    assert "### Write cliff" in text and "Point 1 (write 128K QD8 T1): throughput fell from" in text
    assert "plots/timeseries.svg" in text and (out / "plots" / "timeseries.svg").is_file()
    rows = list(csv.DictReader((out / "samples.csv").open()))
    kept = [json.loads(ln) for ln in (out / record["raw"]["samples"]).read_text().splitlines()]
    assert len(rows) == len(kept) >= 8 and {r["index"] for r in rows} == {"0"}
    assert float(rows[1]["bw_MBps"]) > 150 and float(rows[-2]["bw_MBps"]) < 50


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGKILL])
def test_an_interrupted_points_samples_survive_with_every_completed_interval(tmp_path: Path, sig: int) -> None:
    out = tmp_path / "stop"
    proc = subprocess.Popen([sys.executable, "-m", "app", "run", "custom", "--target", str(tmp_path / "t.img"),
                             "--yes", "--out", str(out), "--set", "size=16m", "--set", "runtime=60",
                             "--set", "ramp_time=0"], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 60
        seen: list[str] = []
        while time.monotonic() < deadline and len(seen) < 4:
            found = list((out / "raw").glob("*.samples.jsonl")) if (out / "raw").is_dir() else []
            text = found[0].read_text() if found else ""
            seen = text.splitlines()[:text.count("\n")]  # whole lines only
            time.sleep(0.05)
        assert len(seen) >= 4
        proc.send_signal(sig)
        proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == (130 if sig == signal.SIGINT else -signal.SIGKILL)
    (path,) = (out / "raw").glob("*.samples.jsonl")
    text = path.read_text()
    assert text.endswith("\n"), "no torn last line"
    kept = text.splitlines()
    assert kept[:len(seen)] == seen, "every interval seen before the signal is still there, unchanged"
    ts = [json.loads(ln)["t"] for ln in kept]
    assert ts == sorted(ts) and not (out / "results.jsonl").read_text().strip(), "the point itself did not complete"
