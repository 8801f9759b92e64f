"""tail-unstable on real fio: a RAM-backed loop device the kernel throttles for a few seconds in the middle of a
point (cgroup blkio/io.max, set and lifted while fio runs) is flagged with its worst second named; the same
device undisturbed is not.  The samples carry p50 and p99.9 beside p99, and samples.csv has them."""

from __future__ import annotations

import csv
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Callable

from tests.helpers.loopdev import loop_device
from tests.helpers.schema_check import validate_dir
from tests.helpers.throttle import iops_throttle
from tests.integration.test_procedure import ROOT, cli, lines

STALL_IOPS = 2000  # the throttled seconds still complete the 1,000 I/Os a per-second p99 needs
STALL_S = 3.0


def run_point(out: Path, target: str, runtime: int, enter: Callable[[], None] | None = None) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-m", "app", "run", "custom", "--target", target, "--yes",
                             "--out", str(out), "--set", "rw=randread", "--set", "bs=4k", "--set", "iodepth=16",
                             "--set", "size=64m", "--set", f"runtime={runtime}", "--set", "ramp_time=0"],
                            cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, preexec_fn=enter)


def samples_seen(out: Path) -> int:
    found = list((out / "raw").glob("*.samples.jsonl")) if (out / "raw").is_dir() else []
    return len(found[0].read_text().splitlines()) if found else 0


def tail_flag(record: dict[str, Any]) -> dict[str, str] | None:
    return next((f for f in record["flags"] if f["flag"] == "tail-unstable"), None)


def test_a_point_whose_device_stalls_for_seconds_is_tail_unstable_and_an_undisturbed_one_is_not(tmp_path: Path) -> None:
    stalled, quiet = tmp_path / "stalled", tmp_path / "quiet"
    with loop_device(tmp_path, size_mb=64, ram=True) as dev, iops_throttle(dev.path) as (enter, set_iops):
        with run_point(stalled, dev.path, 10, enter) as proc:  # fio's runtime bounds it: no kill needed
            deadline = time.monotonic() + 30
            while samples_seen(stalled) < 4 and time.monotonic() < deadline:
                time.sleep(0.05)
            began = samples_seen(stalled)
            set_iops(STALL_IOPS)
            time.sleep(STALL_S)
            set_iops(0)
            _, stderr = proc.communicate(timeout=60)
        assert proc.returncode == 0, stderr
        quiet_run = run_point(quiet, dev.path, 7)
        _, quiet_err = quiet_run.communicate(timeout=60)
        assert quiet_run.returncode == 0, quiet_err
    validate_dir(stalled)
    validate_dir(quiet)

    (record,) = lines(stalled)
    tail = record["tail"]
    assert tail["ratio"] > tail["factor"] and tail["intervals"] >= 5, tail
    assert began <= tail["worst_t"] <= began + STALL_S + 2, (began, tail)  # a second of the stall, not another
    flag = tail_flag(record)
    assert flag is not None, record["flags"]
    assert re.fullmatch(rf"p99 of the second ending at {tail['worst_t']:g} s was [\d,]+ µs, [\d.]+× the median "
                        r"second's [\d,]+ µs \(above \d+(\.\d+)?×\)", flag["reason"]), flag

    (calm,) = lines(quiet)
    assert "ratio" in calm["tail"] and calm["tail"]["ratio"] <= calm["tail"]["factor"], calm["tail"]
    assert tail_flag(calm) is None, calm["flags"]

    report = cli("report", str(stalled))
    assert report.returncode == 0, report.stderr
    text = (stalled / "report.md").read_text()
    assert "| tail-unstable |" in text and "plots/timeseries.svg" in text  # the point is drawn over time
    rows = list(csv.DictReader((stalled / "samples.csv").open()))
    whole = [r for r in rows if float(r["interval_s"]) >= 0.5]
    assert whole and all(0 < float(r["lat_p50_us"]) <= float(r["lat_p99_us"]) <= float(r["lat_p99_9_us"])
                         for r in whole)
