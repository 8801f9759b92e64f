"""The thermal path on a real NVMe controller: QEMU's keeps no thermal-management counters (they stay 0), but
it implements the Temperature Threshold feature (0x04): with the over-temperature threshold at or below its
composite temperature (323 K, 50 °C) its SMART log's critical warning has the temperature bit (0x02) set.  The
test lowers the threshold while point 1 of 3 runs and restores it when that point's end reading is taken: only
point 1 is flagged ``over-temperature``, read by the real nvme-cli through the kernel's NVMe driver."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from tests.helpers.vm_guest import Guest
from tests.helpers.vm_image import ROOT

DEFAULT_THRESHOLD_K = 343  # QEMU's over-temperature threshold (70 °C) until the host sets another
LOW_THRESHOLD_K = 300  # below the controller's 323 K: the temperature bit is set
SET_THRESHOLD = "nvme set-feature /dev/nvme0 -f 4 -v {}"
# each point runs 3 s (about 6 s with fio's start under TCG): the host sees the start reading over 9p and
# sets the feature through the serial console (about 1.5 s) well before the point's end reading, and restores
# it as well before point 2's; telemetry_interval=3600 leaves no reading in between, so point 2's window is its
# start reading (which may still see the bit: not counted) and its end reading
RUN = ["run", "custom", "--set", "rw=randread", "--set", "bs=4k,16k,64k", "--set", "runtime=3",
       "--set", "ramp_time=0", "--set", "size=64m", "--set", "telemetry_interval=3600", "--yes",
       "--target", "/dev/nvme0n1", "--out", "/run/xchg/thermal"]


def readings(path: Path) -> list[dict[str, Any]]:
    """The complete lines of a telemetry file being written (the last may be half written)."""
    try:
        text = path.read_text()
    except FileNotFoundError:
        return []
    return [json.loads(line) for line in text.splitlines(keepends=True) if line.endswith("\n")]


def wait_for(path: Path, phase: str, index: int, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while not any(r["phase"] == phase and r["index"] == index for r in readings(path)):
        assert time.monotonic() < deadline, f"no {phase} reading of point {index} within {timeout} s: {readings(path)}"
        time.sleep(0.1)


def test_a_point_run_past_the_drives_temperature_threshold_is_flagged_over_temperature(lab: Guest) -> None:
    out = lab.xchg / "thermal"
    shutil.rmtree(out, ignore_errors=True)
    telemetry = out / "raw" / "telemetry.jsonl"
    quoted = " ".join(RUN)
    run = lab.spawn(f"exec {ROOT}/.venv/bin/profiler-tui {quoted}")
    set_at: dict[str, float] = {}  # when the feature was set (Unix seconds): a timing failure says by how much
    try:
        wait_for(telemetry, "start", 1, timeout=60)
        lab.run(SET_THRESHOLD.format(LOW_THRESHOLD_K), timeout=30)
        set_at["lowered"] = time.time()
        wait_for(telemetry, "end", 1, timeout=30)
    finally:  # as found, and the run over (also when the test failed) before another test uses the guest
        lab.run(SET_THRESHOLD.format(DEFAULT_THRESHOLD_K), timeout=30)
        set_at["restored"] = time.time()
        done = lab.wait(run, timeout=90)
    assert done.rc == 0, done.err[-3000:]
    assert "(343 Kelvin)" in lab.run("nvme get-feature /dev/nvme0 -f 4 -H").out
    assert json.loads(lab.run("nvme smart-log /dev/nvme0 -o json").out)["critical_warning"] == 0

    lines = readings(telemetry)
    assert all("error" not in r for r in lines), lines
    assert {r["temperature_c"] for r in lines} == {49.85}  # 323 K
    assert all(r["counters"][k] == 0 for r in lines for k in ("thm_temp1_trans_count", "thm_temp2_trans_count",
                                                               "thm_temp1_total_time", "thm_temp2_total_time",
                                                               "warning_temp_time", "critical_comp_time"))
    by_phase = {(r["phase"], r["index"]): r["critical_warning"] for r in lines}
    timing = f"threshold {set_at}, readings {[(r['t'], r['phase'], r['index']) for r in lines]}"
    assert by_phase[("start", 1)] == 0 and by_phase[("end", 1)] == 2 and by_phase[("end", 2)] == 0, timing
    assert by_phase[("before", None)] == by_phase[("end", 0)] == by_phase[("after", None)] == 0

    recs = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    assert [r["index"] for r in recs] == [0, 1, 2]
    assert [[f["flag"] for f in r["flags"] if f["flag"] in ("over-temperature", "throttled")] for r in recs] == [
        [], ["over-temperature"], []]
    assert [r["checks"]["over-temperature"]["result"] for r in recs] == ["passed", "flagged", "passed"]
    assert [r["checks"]["throttled"]["result"] for r in recs] == ["passed"] * 3  # no counter moved
    assert recs[1]["telemetry"]["warnings"] == ["temperature"] and "rose" not in recs[1]["telemetry"]
    assert "warnings" not in recs[0]["telemetry"] and "warnings" not in recs[2]["telemetry"]
    (flag,) = [f for f in recs[1]["flags"] if f["flag"] == "over-temperature"]
    assert "temperature bit (0x02)" in flag["reason"] and "50 °C" in flag["reason"]

    # the report, made on the host from the guest's results (the same files, the same code)
    report = subprocess.run([sys.executable, "-m", "app", "report", str(out)], cwd=ROOT, capture_output=True,
                            text=True, timeout=120)
    assert report.returncode == 0, report.stderr
    md = (out / "report.md").read_text()
    section = md.split("## Drive telemetry", 1)[1].split("\n## ", 1)[0]
    assert "`nvme smart-log /dev/nvme0 -o json`" in section and "| Temperature " in section and "50–50 °C" in section
    assert "| Critical warning " in section and "temperature (0x02) set in " in section
    assert ("while 1 point(s) ran, flagged **over-temperature**: randread 16K QD1." in section), section
    assert "No throttle counter rose." in section
    row = next(ln for ln in md.splitlines() if ln.startswith("| over-temperature "))
    assert "flagged (1 point), passed (2)" in row
