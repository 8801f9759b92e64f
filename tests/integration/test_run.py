"""Headless runs with the real fio: results directory, raw files, live samples, interrupt and resume."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from app.engine.sweep import new_session
from app.model.points import RunStatus, StoragePoint
from app.model.records import StorageMetrics
from app.plan import presets
from app.runners.base import Context, Result, Sample
from app.runners.fio import FioRunner
from tests.conftest import ROOT, fio_processes, interrupt_run, run_cli

STORAGE_FIELDS = {"iops", "read_iops", "write_iops", "bw_bytes", "read_bw_bytes", "write_bw_bytes", "lat_ns",
                  "usr_cpu", "sys_cpu"}
LAT_FIELDS = {"min", "max", "mean", "stddev", "p50", "p90", "p99", "p99_9", "p99_99"}


def _lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in (path / "results.jsonl").read_text().splitlines()]


def test_quick_without_target_writes_eight_complete_points(tmp_path: Path) -> None:
    out = tmp_path / "quick"
    # size=64m: the scratch file fio lays out is the same kind of file at a sixteenth of quick's 1 GiB write
    proc = run_cli("run", "quick", "--out", str(out), "--set", "runtime=1", "--set", "repeat=1",
                   "--set", "size=64m", "--yes", timeout=240)
    assert proc.returncode == 0, proc.stderr
    records = _lines(out)
    assert len(records) == 8
    for r in records:
        assert r["kind"] == "storage"
        assert {"rw", "bs", "iodepth", "numjobs", "rwmixread", "ioengine", "runtime"} <= set(r["point"])
        assert STORAGE_FIELDS <= set(r["metrics"]) and LAT_FIELDS <= set(r["metrics"]["lat_ns"])
        assert r["metrics"]["iops"] > 0 and r["metrics"]["lat_ns"]["mean"] > 0
        for kind in ("json", "fio"):
            assert (out / r["raw"][kind]).is_file()
    raw = sorted(p.name for p in (out / "raw").iterdir())
    assert len([n for n in raw if n.endswith(".json")]) == 8 and len([n for n in raw if n.endswith(".fio")]) == 8
    meta = json.loads((out / "run.json").read_text())
    assert meta["status"] == "complete" and meta["points_done"] == 8 and len(meta["plan"]) == 8
    assert meta["tools"]["fio"].startswith("fio-") and meta["environment"]["cpu"]["threads"] >= 1
    assert not Path(meta["target"]).exists(), "the scratch test file is removed after a complete run"


def test_raw_job_file_reproduces_the_job_with_plain_fio(tmp_path: Path) -> None:
    out = tmp_path / "r"
    target = tmp_path / "t.bin"
    run_cli("run", "custom", "--target", str(target), "--out", str(out), "--set", "rw=randrw",
            "--set", "rwmixread=70", "--set", "bs=8k", "--set", "iodepth=4", "--set", "numjobs=2",
            "--set", "runtime=1", "--set", "size=16m", "--yes", check=True)
    rec = _lines(out)[0]
    ours = json.loads((out / rec["raw"]["json"]).read_text())
    plain = json.loads(subprocess.run(["fio", "--output-format=json", str(out / rec["raw"]["fio"])],
                                      capture_output=True, text=True, check=True, timeout=60).stdout)
    assert plain["global options"] == ours["global options"]
    assert [j["job options"] for j in plain["jobs"]] == [j["job options"] for j in ours["jobs"]]
    opts = {**ours["global options"], **ours["jobs"][0]["job options"]}
    assert opts["rw"] == "randrw" and opts["rwmixread"] == "70" and opts["bs"] == "8192"
    assert opts["iodepth"] == "4" and opts["numjobs"] == "2" and opts["filename"] == str(target)
    assert opts["ioengine"] == "libaio" and opts["direct"] == "1" and opts["lat_percentiles"] == "1"
    assert plain["jobs"][0]["read"]["total_ios"] > 0 and plain["jobs"][0]["write"]["total_ios"] > 0


@pytest.mark.serial  # each second's IOPS within 0.3-3x of the point's: another test's load moves it
def test_five_second_point_streams_live_samples(tmp_path: Path) -> None:
    point = presets.apply_overrides(presets.load("custom"), ["runtime=5", "size=32m", "iodepth=4"]).expand()[0]
    ctx = Context(target=str(tmp_path / "live.bin"), raw_dir=tmp_path / "raw")

    async def collect() -> tuple[list[dict], list[Result]]:
        samples, results = [], []
        async for ev in FioRunner().run([(0, point)], ctx):
            if isinstance(ev, Sample):
                samples.append(ev.data)
            elif isinstance(ev, Result):  # (Phase events say what fio is doing: tests/integration/test_phase.py)
                results.append(ev)
        return samples, results

    samples, results = asyncio.run(collect())
    assert len(results) == 1 and results[0].error is None
    assert len(samples) >= 4
    assert isinstance(results[0].metrics, StorageMetrics) and results[0].metrics.iops
    final_iops = results[0].metrics.iops
    for s in samples[:-1]:  # whole intervals (the last one may be a sliver before exit)
        assert 0.3 * final_iops < s["iops"] < 3 * final_iops
        assert s["lat_mean_ns"] and s["lat_mean_ns"] > 0 and s["lat_p99_ns"] >= s["lat_mean_ns"] * 0.5
        assert s["bw_bytes"] == pytest.approx(s["iops"] * 4096, rel=0.01)


def test_fio_job_error_is_recorded_with_fios_message(tmp_path: Path) -> None:
    out = tmp_path / "e"
    proc = run_cli("run", "custom", "--target", str(tmp_path / "e.bin"), "--out", str(out),
                   "--set", "runtime=1", "--set", "size=1m", "--set", "bs=2m")
    assert proc.returncode == 1
    meta = json.loads((out / "run.json").read_text())
    assert "size too small" in meta["failures"][0]["error"]
    assert meta["status"] == "partial" and _lines(out) == []


def test_sigint_keeps_completed_points_and_resume_finishes_exactly_the_rest(tmp_path: Path) -> None:
    out = tmp_path / "int"
    args = ["run", "custom", "--target", str(tmp_path / "i.bin"), "--out", str(out),
            "--set", "iodepth=1,2,4,8", "--set", "runtime=2", "--set", "size=16m"]

    def running() -> None:
        assert fio_processes(out), "fio should be running the second point"

    returncode, stderr = interrupt_run(args, out, after_lines=1, settle_s=0.8, check=running)  # inside point 2
    assert returncode == 130, stderr
    assert "resume" in stderr and "Traceback" not in stderr
    assert fio_processes(out) == []
    kept = _lines(out)
    assert 1 <= len(kept) < 4
    assert json.loads((out / "run.json").read_text())["status"] == "interrupted"

    resumed = run_cli("resume", str(out), check=True)
    assert f"{4 - len(kept)} of 4 points to run" in resumed.stdout
    final = _lines(out)
    assert final[: len(kept)] == kept, "completed lines are untouched"
    assert sorted(r["point"]["iodepth"] for r in final) == [1, 2, 4, 8]
    assert json.loads((out / "run.json").read_text())["status"] == "complete"
    assert "Nothing to resume" in run_cli("resume", str(out), check=True).stdout


def test_torn_last_line_is_ignored_and_rerun(tmp_path: Path) -> None:
    out = tmp_path / "torn"
    run_cli("run", "custom", "--target", str(tmp_path / "t.bin"), "--out", str(out), "--set", "iodepth=1,2",
            "--set", "runtime=1", "--set", "size=16m", check=True)
    lines = (out / "results.jsonl").read_text().splitlines()
    (out / "results.jsonl").write_text(lines[0] + "\n" + lines[1][: len(lines[1]) // 2])  # crash mid-append
    run_cli("resume", str(out), check=True)
    final = _lines_tolerant(out)
    assert sorted(r["point"]["iodepth"] for r in final) == [1, 2]


def test_a_line_whose_index_and_point_disagree_is_no_measurement_for_resume(tmp_path: Path) -> None:
    """A results.jsonl holding only a line with index 0 and plan[1]'s point: resume measured plan[0] again, never
    plan[1], and marked the run complete while the report said 1 measured of 2.  The line measures neither:
    resume measures both, and the report and the runs browser count what resume counts."""
    from app.report import render_report
    from app.store.runs import summarise

    out = tmp_path / "mixed"
    run_cli("run", "custom", "--target", str(tmp_path / "m.bin"), "--out", str(out), "--set", "iodepth=1,2",
            "--set", "runtime=1", "--set", "size=4m", check=True)
    second = _lines(out)[1]
    (out / "results.jsonl").write_text(json.dumps({**second, "index": 0}) + "\n")
    meta = json.loads((out / "run.json").read_text())
    (out / "run.json").write_text(json.dumps({**meta, "status": "interrupted", "points_done": 1}))
    assert summarise(out).done == 0
    resumed = run_cli("resume", str(out), check=True)
    assert "2 of 2 points to run" in resumed.stdout
    final = [json.loads(x) for x in (out / "results.jsonl").read_text().splitlines()]
    assert [(r["index"], r["point"]["iodepth"]) for r in final] == [(0, 2), (0, 1), (1, 2)]
    meta = json.loads((out / "run.json").read_text())
    assert meta["status"] == "complete" and meta["points_done"] == 2 and summarise(out).done == 2
    report = render_report(out).read_text()
    assert "2 measured of 2 planned" in report and "left out (line 1)." in report


def _lines_tolerant(path: Path) -> list[dict]:
    from app.store.results import ResultsDir

    return ResultsDir(path).records()


def test_existing_results_directory_is_not_overwritten(tmp_path: Path) -> None:
    out = tmp_path / "twice"
    run_cli("run", "custom", "--target", str(tmp_path / "t.bin"), "--out", str(out), "--set", "runtime=1",
            "--set", "size=16m", check=True)
    again = run_cli("run", "custom", "--target", str(tmp_path / "t.bin"), "--out", str(out), "--set", "runtime=1")
    assert again.returncode == 2 and "already holds a run" in again.stderr
    assert len(_lines(out)) == 1


def test_missing_fio_exits_4(tmp_path: Path) -> None:
    proc = run_cli("run", "custom", "--out", str(tmp_path / "o"), env={"PATH": str(tmp_path)})
    assert proc.returncode == 4 and "fio is not installed" in proc.stderr


def test_session_api_is_what_the_cli_runs(tmp_path: Path) -> None:
    preset = presets.apply_overrides(presets.load("custom"), ["runtime=1", "size=16m"])
    session = new_session(preset, target=str(tmp_path / "s.bin"), out=tmp_path / "s")

    async def drive() -> list[Any]:
        return [ev async for ev in session.events()]

    events = asyncio.run(drive())
    names = [type(ev).__name__ for ev in events]
    assert names[0] == "RunStarted" and names[1] == "PointStarted" and names[-1] == "RunFinished"
    assert "Sample" in names and "PointDone" in names
    # the events carry the plan's typed point; the record, the point's JSON table
    started, done = events[1], next(ev for ev in events if type(ev).__name__ == "PointDone")
    assert started.point == session.plan[0] == done.point and isinstance(done.point, StoragePoint)
    assert done.record["point"] == session.plan[0].to_dict() and events[-1].status == RunStatus.COMPLETE
    assert os.path.exists(tmp_path / "s.bin"), "a target the user named is never deleted"


def test_fio_dies_with_a_killed_profiler(tmp_path: Path) -> None:
    """SIGKILL (or a crash) of profiler-tui leaves no fio running on."""
    out = tmp_path / "killed"
    args = [sys.executable, "-m", "app", "run", "custom", "--target", str(tmp_path / "k.bin"), "--out", str(out),
            "--set", "runtime=60", "--set", "size=16m"]
    proc = subprocess.Popen(args, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 30
        while not fio_processes(out) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert fio_processes(out), "fio never started"
        proc.kill()
        proc.wait(timeout=10)
        deadline = time.monotonic() + 5
        while fio_processes(out) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert fio_processes(out) == []
    finally:
        if proc.poll() is None:
            proc.kill()
        subprocess.run(["pkill", "-KILL", "-f", str(out)], check=False)
