"""Steady-state points, preconditioning, rounds, the latency-bound search and adaptive axes, for real: fio on
RAM-backed loop devices the tests create (and detach), some behind the kernel's blkio throttle so that the
device saturates at a known rate (tests/helpers/throttle.py)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Callable

from tests.conftest import ROOT, fio_processes, interrupt_run
from tests.helpers.loopdev import loop_device, needs_loop
from tests.helpers.schema_check import validate_dir
from tests.helpers.throttle import throttled

pytestmark = needs_loop


def cli(*args: str, enter: Callable[[], None] | None = None, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "app", *args], capture_output=True, text=True, timeout=timeout,
                          cwd=ROOT, preexec_fn=enter, env=dict(os.environ))


def lines(out: Path) -> list[dict[str, Any]]:
    path = out / "results.jsonl"
    return [json.loads(ln) for ln in path.read_text().splitlines()] if path.exists() else []


def meta(out: Path) -> dict[str, Any]:
    return json.loads((out / "run.json").read_text())


def run_custom(tmp_path: Path, out: Path, *sets: str) -> subprocess.CompletedProcess[str]:
    """``run custom`` on a 64 MiB RAM-backed loop device made (and detached) for it, with ``--set`` items."""
    with loop_device(tmp_path, size_mb=64, ram=True) as dev:
        args = ["run", "custom", "--target", dev.path, "--yes", "--out", str(out), "--set", "size=64m"]
        return cli(*args, *[a for item in sets for a in ("--set", item)])


def preset_file(tmp_path: Path, name: str, text: str) -> str:
    path = tmp_path / f"{name}.toml"
    path.write_text(f'name = "{name}"\nkind = "storage"\ndescription = "test"\n' + text)
    return str(path)


# --- steady-state points ------------------------------------------------------------------------------


def test_steady_point_ends_when_fio_sees_steady_state_and_keeps_its_time_series(tmp_path: Path) -> None:
    out = tmp_path / "steady"
    t0 = time.monotonic()
    proc = run_custom(tmp_path, out, "iodepth=4", "steady=iops:60%", "steady_window=2", "steady_ramp=1", "runtime=40")
    wall = time.monotonic() - t0
    assert proc.returncode == 0, proc.stderr
    validate_dir(out)  # every line written validates against the JSON Schemas
    (record,) = lines(out)
    steady = record["steady"]
    assert steady["attained"] is True and steady["criterion"] == "iops:60%"
    assert 2 <= steady["after_s"] < 20 and steady["window_s"] == 2
    assert wall < 30, "fio ended the point at steady state, long before the 40 s cap"
    assert "steady after" in proc.stdout
    job = (out / record["raw"]["fio"]).read_text()
    assert "steadystate=iops:60%" in job and "steadystate_duration=2" in job and "steadystate_ramp_time=1" in job
    samples = [json.loads(ln) for ln in (out / record["raw"]["samples"]).read_text().splitlines()]
    assert len(samples) >= 3 and all("iops" in s and "t" in s for s in samples)
    assert samples[-1]["steady"]["window_s"] == 2 and any(s["steady"]["filled_s"] > 0 for s in samples)
    assert record["point"]["steady"] == "iops:60%" and record["point"]["steady_window"] == 2

    report = cli("report", str(out))
    assert report.returncode == 0, report.stderr
    text = (out / "report.md").read_text()
    assert "### Steady state" in text and "1 of 1 points reached steady state" in text
    assert (out / "plots" / "steady-state.svg").exists()


def test_a_point_that_never_settles_runs_to_its_cap_and_is_marked(tmp_path: Path) -> None:
    out = tmp_path / "never"
    proc = run_custom(tmp_path, out, "steady=iops_slope:0.0001%", "steady_window=1", "steady_ramp=0", "runtime=3")
    assert proc.returncode == 0, proc.stderr
    validate_dir(out)  # every line written validates against the JSON Schemas
    (record,) = lines(out)
    assert record["steady"]["attained"] is False and record["steady"]["after_s"] is None
    assert {"flag": "not-steady", "reason": "iops_slope:0.0001% never held before the cap"} in record["flags"]
    assert "not steady at the cap" in proc.stdout
    cli("report", str(out))
    text = (out / "report.md").read_text()
    assert "*not steady*" in text and "0 of 1 points reached steady state" in text


# --- adaptive axes ---------------------------------------------------------------------------------------


def test_adaptive_qd_scaling_skips_the_saturated_tail_and_resume_runs_none_of_it(tmp_path: Path) -> None:
    out = tmp_path / "adaptive"
    with loop_device(tmp_path, size_mb=64, ram=True) as dev, throttled(dev.path, 4000, 4000) as enter:
        proc = cli("run", "qd-scaling", "--adaptive", "--target", dev.path, "--yes", "--out", str(out),
                   "--set", "runtime=1", "--set", "ramp_time=0", "--set", "size=64m", enter=enter)
        assert proc.returncode == 0, proc.stderr
        validate_dir(out)  # every line written validates against the JSON Schemas
        done = sorted(r["point"]["iodepth"] for r in lines(out))
        skipped = meta(out)["skipped"]
        assert skipped, proc.stdout
        assert len(done) + len(skipped) == 9 and len(done) < 9
        reason = skipped[0]["reason"]
        assert reason.startswith("saturated at QD ")
        assert all(s["point"]["iodepth"] > max(done) for s in skipped)
        assert f"skipped: {reason}" in proc.stdout and f"{len(skipped)} skipped" in proc.stdout
        assert meta(out)["status"] == "complete"
        again = cli("resume", str(out), "--yes", enter=enter)
    assert again.returncode == 0 and "Nothing to resume" in again.stdout and f"({len(skipped)} skipped)" in again.stdout
    cli("report", str(out))
    text = (out / "report.md").read_text()
    assert "### Skipped points" in text and reason in text


def test_resume_of_an_adaptive_run_interrupted_mid_axis_decides_as_an_uninterrupted_run(tmp_path: Path) -> None:
    out = tmp_path / "cut"
    with loop_device(tmp_path, size_mb=64, ram=True) as dev, throttled(dev.path, 4000, 4000) as enter:
        args = ["run", "qd-scaling", "--adaptive", "--target", dev.path, "--yes", "--out", str(out),
                "--set", "runtime=1", "--set", "ramp_time=0", "--set", "size=64m"]
        returncode, stderr = interrupt_run(args, out, after_lines=2, preexec_fn=enter)
        assert returncode == 130, stderr
        kept = lines(out)
        assert 2 <= len(kept) <= 3 and not meta(out).get("skipped")
        assert fio_processes(out) == []
        resumed = cli("resume", str(out), "--yes", enter=enter)
    assert resumed.returncode == 0, resumed.stderr
    validate_dir(out)  # every line written validates against the JSON Schemas
    final = lines(out)
    assert final[: len(kept)] == kept
    depths = sorted(r["point"]["iodepth"] for r in final)
    skipped = [s["point"]["iodepth"] for s in meta(out)["skipped"]]
    assert skipped and sorted(depths + skipped) == [1, 2, 4, 8, 16, 32, 64, 128, 256]
    assert min(skipped) > max(depths) and meta(out)["status"] == "complete"
    assert "skipped: saturated at QD" in resumed.stdout


# --- the latency-bound search --------------------------------------------------------------------------


def test_latency_bound_search_lands_within_one_qd_step_of_the_sweep_and_the_report_draws_it(tmp_path: Path) -> None:
    """A QD sweep and the latency-bound search of the same workload in one run, on a device throttled to 20k
    IOPS (latency grows with depth): fio's answer is within one QD step of the sweep's boundary between the depths
    whose p99 meets the bound and those whose p99 misses it."""
    out = tmp_path / "knee"
    preset = preset_file(tmp_path, "knee-sweep", '''
[settings]
rw = "randread"
bs = "4k"
size = "64m"
runtime = 1
[[group]]
iodepth = [1, 2, 4, 8, 16, 32, 64]
[[group]]
iodepth = 256
latency_bound = "1ms"
runtime = 120
''')
    with loop_device(tmp_path, size_mb=64, ram=True) as dev, throttled(dev.path, 20000, 20000) as enter:
        proc = cli("run", preset, "--target", dev.path, "--yes", "--out", str(out), enter=enter)
    assert proc.returncode == 0, proc.stderr
    validate_dir(out)  # every line written validates against the JSON Schemas
    records = lines(out)
    search = [r for r in records if "operating_point" in r]
    assert len(search) == 1
    op = search[0]["operating_point"]
    assert op["bound_us"] == 1000 and op["percentile"] == 99
    assert op["converged"] is True, f"fio's search did not settle within the 120 s cap: {op}"
    meets = [r["point"]["iodepth"] for r in records if "operating_point" not in r
             and r["metrics"]["lat_ns"]["p99"] <= 1_000_000]
    misses = [r["point"]["iodepth"] for r in records if "operating_point" not in r
              and r["metrics"]["lat_ns"]["p99"] > 1_000_000]
    assert meets, "the sweep's lightest loads meet a 1 ms p99 on this device"
    # one QD step either side of the sweep's boundary: a depth between two swept ones (QD 16's p99 just over the
    # bound, fio settling at 17) is as right as the sweep can tell
    assert max(meets) / 2 <= op["depth"] <= min([d for d in misses if d > max(meets)], default=max(meets)) * 2, \
        (op, meets, misses)
    assert "latency_target=1000us" in (out / search[0]["raw"]["fio"]).read_text()
    assert f"QD {op['depth']}" in proc.stdout
    report = cli("report", str(out))
    assert report.returncode == 0, report.stderr
    text = (out / "report.md").read_text()
    assert "### Operating point" in text and f"settled on **QD {op['depth']}**" in text
    assert "diamond" in text
    svg = (out / "plots" / "latency-throughput.svg").read_text()
    assert f"QD {op['depth']} (p99 ≤ 1 ms)" in svg


# --- preconditioning and rounds -------------------------------------------------------------------------

SNIA_SMALL = '''
[settings]
rw = "randrw"
iodepth = 4
runtime = 1
size = "64m"
precondition = "sequential"
rounds = 6
track = "bs=4k rwmixread=0"

[matrix]
bs = ["64k", "4k"]
rwmixread = [100, 0]
'''


def test_preconditioning_and_rounds_stop_once_snia_steady_with_the_verification_table(tmp_path: Path) -> None:
    out = tmp_path / "snia"
    preset = preset_file(tmp_path, "snia-small", SNIA_SMALL)
    shown = cli("presets", "show", preset)
    assert "precondition: sequential — 128 KiB sequential writes over 64M, 2 passes" in shown.stdout
    assert "rounds: up to 6" in shown.stdout and "estimated at most" in shown.stdout
    with loop_device(tmp_path, size_mb=64, ram=True) as dev, throttled(dev.path, 3000, 3000) as enter:
        proc = cli("run", preset, "--target", dev.path, "--yes", "--out", str(out), enter=enter)
    assert proc.returncode == 0, proc.stderr
    validate_dir(out)  # every line written validates against the JSON Schemas
    m = meta(out)
    pre = m["precondition"]
    assert pre["status"] == "done" and pre["mode"] == "sequential" and pre["io_bytes"] == 128 << 20
    assert (out / pre["raw"]["fio"]).read_text().count("loops=2") == 1
    assert "Preconditioned in" in proc.stdout
    rounds = sorted({r["point"]["round"] for r in lines(out)})
    assert rounds == [1, 2, 3, 4, 5], "steady by SNIA's rule at round 5: round 6 is skipped"
    assert len(m["skipped"]) == 4 and all(s["point"]["round"] == 6 for s in m["skipped"])
    assert m["skipped"][0]["reason"].startswith("steady by round 5")
    report = cli("report", str(out))
    assert report.returncode == 0, report.stderr
    text = (out / "report.md").read_text()
    assert "### Steady-state verification (SNIA PTS)" in text and "Window: rounds 1–5, **steady**." in text
    assert "IOPS by block size and read/write mix" in text and "| Block size | 100/0 | 0/100 |" in text
    assert "| Preconditioning | sequential: 128 KiB sequential writes over 64M" in text


def test_workload_preconditioning_runs_the_first_write_point_until_steady(tmp_path: Path) -> None:
    out = tmp_path / "wl"
    proc = run_custom(tmp_path, out, "rw=randwrite", "runtime=1", "precondition=workload", "precondition_cap=4")
    assert proc.returncode == 0, proc.stderr
    validate_dir(out)  # every line written validates against the JSON Schemas
    pre = meta(out)["precondition"]
    assert pre["status"] == "done" and pre["mode"] == "workload" and pre["seconds"] < 15
    assert "steady" in pre and pre["steady"]["criterion"] == "iops:10%"
    assert "steadystate=iops:10%" in (out / pre["raw"]["fio"]).read_text()
    assert len(lines(out)) == 1


def test_preconditioning_a_mounted_device_is_refused_like_any_write(tmp_path: Path) -> None:
    out = tmp_path / "mounted"
    with loop_device(tmp_path, size_mb=64, mkfs="ext4", mount=True) as dev:
        before = dev.image.read_bytes()[:1 << 20]
        reads = cli("run", "qd-scaling", "--target", dev.path, "--yes", "--out", str(tmp_path / "ro"),
                    "--set", "iodepth=1", "--set", "runtime=1", "--set", "size=16m")
        refused = cli("run", "qd-scaling", "--target", dev.path, "--yes", "--allow-destructive", "--out", str(out),
                      "--set", "iodepth=1", "--set", "runtime=1", "--set", "precondition=sequential")
        after = dev.image.read_bytes()[:1 << 20]
    assert reads.returncode == 0, reads.stderr
    assert refused.returncode != 0 and "mounted" in refused.stderr and "Traceback" not in refused.stderr
    assert not out.exists()
    changed = [i for i, (x, y) in enumerate(zip(before, after)) if x != y]
    assert not changed, f"{len(changed)} bytes of the first MiB changed, the first at offset {changed[0]:#x}"
