"""``run --json-stream``: the session's events as NDJSON on stdout (jq reads them), progress on stderr."""

from __future__ import annotations

import io
import json
import shutil
import subprocess
import sys
from pathlib import Path

from app.eventstream import EventWriter, ended_object, event_object
from conftest import interrupt_run
from test_procedure import ROOT, lines

RUN = ["run", "custom", "--set", "size=16m", "--set", "runtime=2", "--set", "ramp_time=0", "--set", "rw=randread",
       "--set", "iodepth=1,4", "--yes", "--json-stream"]


def test_json_stream_through_jq_has_every_event_and_the_results_lines(tmp_path: Path) -> None:
    jq = shutil.which("jq")
    assert jq, "jq is installed by make setup"
    out = tmp_path / "run"
    app = subprocess.Popen([sys.executable, "-m", "app", *RUN, "--target", str(tmp_path / "t.img"), "--out", str(out)],
                           cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert app.stdout is not None
    filt = subprocess.run([jq, "-c", "{event, index, status}"], stdin=app.stdout, capture_output=True, text=True,
                          timeout=120)
    app.stdout.close()
    _, err = app.communicate(timeout=120)
    assert app.returncode == 0 and filt.returncode == 0, (err, filt.stderr)
    kinds = [json.loads(ln)["event"] for ln in filt.stdout.splitlines()]
    assert kinds[0] == "run_started" and kinds[-1] == "run_finished"
    assert kinds.count("point_started") == 2 and kinds.count("point_done") == 2 and "sample" in kinds
    assert "complete: 2/2 points" in err.decode() and "IOPS" in err.decode(), "the human summary goes to stderr"


def test_each_line_is_one_event_and_point_done_carries_the_results_line(tmp_path: Path) -> None:
    out = tmp_path / "run"
    proc = subprocess.run([sys.executable, "-m", "app", *RUN, "--target", str(tmp_path / "t.img"), "--out", str(out)],
                          cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    events = [json.loads(ln) for ln in proc.stdout.splitlines()]
    assert all(e["schema_version"] == 1 and e["at"].endswith("+00:00") for e in events)
    done = [e["record"] for e in events if e["event"] == "point_done"]
    assert done == lines(out), "the stream's records are the results.jsonl lines"
    samples = [e for e in events if e["event"] == "sample"]
    assert all(set(e["sample"]) >= {"t", "iops", "bw_bytes"} for e in samples)
    finished = events[-1]
    assert finished == {**finished, "event": "run_finished", "status": "complete", "done": 2, "total": 2, "failed": 0}


def test_an_interrupted_stream_ends_with_run_ended(tmp_path: Path) -> None:
    out = tmp_path / "run"
    args = [a if a != "runtime=2" else "runtime=30" for a in RUN] + ["--target", str(tmp_path / "t.img"),
                                                                     "--out", str(out)]
    stdout: list[str] = []
    code, _ = interrupt_run(args, out, after_lines=0, settle_s=2.0, stdout=stdout)
    assert code == 130
    events = [json.loads(ln) for ln in stdout[0].splitlines()]
    assert events[0]["event"] == "run_started" and events[-1]["event"] == "run_ended"
    assert events[-1]["status"] == "interrupted" and "resume" in events[-1]["reason"]


def test_a_reader_that_goes_away_stops_the_stream_not_the_run(tmp_path: Path) -> None:
    out = tmp_path / "run"
    argv = [sys.executable, "-m", "app", *RUN, "--target", str(tmp_path / "t.img"), "--out", str(out)]
    proc = subprocess.run(f"{' '.join(argv)} 2>{tmp_path / 'err'} | head -1; echo \"${{PIPESTATUS[0]}}\"",
                          shell=True, executable="/bin/bash", cwd=ROOT, capture_output=True, text=True, timeout=120)
    first, status = proc.stdout.splitlines()
    assert json.loads(first)["event"] == "run_started" and status == "0"
    assert len(lines(out)) == 2
    assert "Broken pipe" not in (tmp_path / "err").read_text()


def test_event_objects_are_json_without_nan_and_unknown_events_are_left_out() -> None:
    from app.runners.base import Sample

    buf = io.StringIO()
    w = EventWriter(buf)
    w.handle(Sample(3, {"t": 1.0, "iops": float("nan"), "lat_p99_ns": float("inf")}))
    w.handle(object())
    w.write(ended_object("failed", "no space"))
    first, second = [json.loads(ln) for ln in buf.getvalue().splitlines()]
    assert first["sample"] == {"t": 1.0, "iops": None, "lat_p99_ns": None} and first["index"] == 3
    assert second["event"] == "run_ended" and second["reason"] == "no space"
    assert event_object(object()) is None
