"""``run --json-stream``: the session's events as NDJSON on stdout (jq reads them), progress on stderr."""

from __future__ import annotations

import contextlib
import fcntl
import io
import json
import os
import shutil
import signal
import subprocess
import sys
import termios
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from app.cli.eventstream import EventWriter, ended_object, event_object
from tests.conftest import interrupt_run
from tests.helpers.schema_check import check
from tests.integration.test_procedure import ROOT, lines

# runtime=1: every point still streams live samples (the TUI's quick run counts one per point) and a few points
# still fill a one-page pipe; each second more per point only lengthens the stalled-reader runs
RUN = ["run", "custom", "--set", "size=16m", "--set", "runtime=1", "--set", "ramp_time=0", "--set", "rw=randread",
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
    # each point's interval record rides in its line: a 1 s point has too few samples for one, and says so
    methods = [r["metrics"]["ci_method"] for r in done]
    assert all(m["method"] == "none" and "too few samples" in m["reason"] for m in methods)
    assert not any("ci95" in r["metrics"] for r in done)
    samples = [e for e in events if e["event"] == "sample"]
    assert all(set(e["sample"]) >= {"t", "iops", "bw_bytes"} for e in samples)
    finished = events[-1]
    assert finished == {**finished, "event": "run_finished", "status": "complete", "done": 2, "total": 2, "failed": 0}


def test_an_interrupted_stream_ends_with_run_ended(tmp_path: Path) -> None:
    out = tmp_path / "run"
    args = [a if a != "runtime=1" else "runtime=30" for a in RUN] + ["--target", str(tmp_path / "t.img"),
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


@contextlib.contextmanager
def stalled_pipe() -> Iterator[tuple[int, int]]:
    """A pipe nobody reads, its buffer cut to one page (4 KiB) so that a short run fills it: (read, write)."""
    r, w = os.pipe()
    try:
        fcntl.fcntl(w, fcntl.F_SETPIPE_SZ, 4096)
        yield r, w
    finally:
        for fd in (r, w):
            with contextlib.suppress(OSError):
                os.close(fd)


def unread_bytes(fd: int) -> int:
    return int.from_bytes(fcntl.ioctl(fd, termios.FIONREAD, b"\0\0\0\0"), sys.byteorder)


def drain(fd: int) -> bytes:
    os.set_blocking(fd, False)
    chunks = []
    with contextlib.suppress(BlockingIOError):
        while chunk := os.read(fd, 65536):
            chunks.append(chunk)
    return b"".join(chunks)


def wait_for_lines(out: Path, n: int, proc: subprocess.Popen[bytes], timeout_s: float = 90) -> None:
    results = out / "results.jsonl"
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline and proc.poll() is None:
        if results.exists() and len(results.read_text().splitlines()) >= n:
            return
        time.sleep(0.1)
    raise AssertionError(f"the run did not reach {n} points with a reader that does not read "
                         f"(exit {proc.poll()}, results: {len(lines(out)) if results.exists() else 0} lines)")


@contextlib.contextmanager
def run_with_stalled_reader(tmp_path: Path, iodepths: str) -> Iterator[tuple[subprocess.Popen[bytes], int]]:
    """A run over an iodepth axis whose stdout is a pipe nobody reads: (the process, the pipe's read end).
    The process never outlives this."""
    args = [a if a != "iodepth=1,4" else f"iodepth={iodepths}" for a in RUN]
    with stalled_pipe() as (r, w):
        proc = subprocess.Popen([sys.executable, "-m", "app", *args, "--target", str(tmp_path / "t.img"),
                                 "--out", str(tmp_path / "run")], cwd=ROOT, stdout=w, stderr=subprocess.PIPE)
        try:
            yield proc, r
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_a_reader_that_never_reads_neither_holds_the_run_nor_its_signals(tmp_path: Path, sig: signal.Signals) -> None:
    """The run's events fill the one-page pipe by the end of the first point (a results line with its latency
    histogram is larger than the page: the write blocks with the pipe holding what fitted before it); the run
    goes on past it (a third point), and a signal ends it at once."""
    out = tmp_path / "run"
    with run_with_stalled_reader(tmp_path, "1,2,4,8,16,32,64,128") as (proc, r):
        wait_for_lines(out, 3, proc)
        assert unread_bytes(r) > 0, "the events sent are still in the pipe: nobody read them"
        sent = time.monotonic()
        proc.send_signal(sig)
        _, err = proc.communicate(timeout=30)
        took = time.monotonic() - sent
        stream = drain(r)
    assert proc.returncode == 130, err.decode()
    assert took < 10, f"the signal took {took:.1f} s to end the run"
    assert len(lines(out)) >= 3 and "Interrupted:" in err.decode()
    assert "events were not written" in err.decode()
    assert json.loads(stream.splitlines()[0])["event"] == "run_started"


def test_a_run_with_a_reader_that_never_reads_completes(tmp_path: Path) -> None:
    out = tmp_path / "run"
    with run_with_stalled_reader(tmp_path, "1,2,4,8") as (proc, r):
        _, err = proc.communicate(timeout=120)
        stream = drain(r)
    assert proc.returncode == 0, err.decode()
    assert len(lines(out)) == 4 and "complete: 4/4 points" in err.decode()
    assert "events were not written because its reader did not read them" in err.decode()
    events = [json.loads(ln) for ln in stream.splitlines()[:-1]]  # the last line may be cut where the reader stopped
    assert events[0]["event"] == "run_started" and all(e["event"] != "run_finished" for e in events)


def test_events_past_the_queue_are_dropped_and_counted_and_the_reader_is_told(tmp_path: Path) -> None:
    notices: list[str] = []
    with stalled_pipe() as (r, w), os.fdopen(os.dup(w), "w") as stream:
        writer = EventWriter(stream, limit_bytes=8192, notice=notices.append)
        started = time.monotonic()
        sent: list[dict[str, object]] = [{"event": "point_done" if n % 10 == 9 else "sample", "n": n, "pad": "x" * 200}
                                         for n in range(100)]
        for obj in sent:
            writer.write(obj)
        assert time.monotonic() - started < 5, "writing to a full pipe returned"
        assert notices == ["--json-stream: its reader is not keeping up; events are dropped until it does "
                           "(results.jsonl has every completed point)."]
        got: list[bytes] = []
        reader = threading.Thread(target=lambda: got.extend(iter(lambda: os.read(r, 65536), b"")))
        reader.start()
        writer.write({"event": "last"})  # the reader reads again: the gap is announced before it
        writer.close()
        os.close(w)
        stream.close()
        reader.join(timeout=10)
    events = [json.loads(ln) for ln in b"".join(got).splitlines()]
    gap = next(e for e in events if e["event"] == "events_dropped")
    check("event", gap, "the events_dropped line")
    delivered = [e["n"] for e in events if "n" in e]
    assert delivered == list(range(len(delivered))) and 0 < len(delivered) < 100, "the first ones, in order"
    assert gap["count"] == 100 - len(delivered)
    assert gap["point_done"] == sum(n % 10 == 9 for n in range(len(delivered), 100))
    assert events[-1]["event"] == "last" and events[-2] is gap
    assert len(notices) == 2 and notices[1].startswith(f"--json-stream: {gap['count']} events were not written")


def test_the_end_of_a_run_waits_for_a_slow_reader_but_not_for_a_stalled_one(tmp_path: Path) -> None:
    with stalled_pipe() as (r, w), os.fdopen(os.dup(w), "w") as stream:
        writer = EventWriter(stream, drain_s=0.5, notice=lambda _: None)
        for n in range(100):
            writer.write({"event": "sample", "n": n, "pad": "x" * 200})
        got: list[bytes] = []

        def slow_reader() -> None:  # reads a pipeful every 0.3 s: slower in total than drain_s, never idle that long
            while chunk := os.read(r, 65536):
                got.append(chunk)
                time.sleep(0.3)
        reader = threading.Thread(target=slow_reader)
        reader.start()
        writer.close()
        os.close(w)
        stream.close()
        reader.join(timeout=30)
    assert len(b"".join(got).splitlines()) == 100, "every event reached a reader that kept reading"
    with stalled_pipe() as (r, w), os.fdopen(os.dup(w), "w") as stream:
        said: list[str] = []
        writer = EventWriter(stream, drain_s=0.5, notice=said.append)
        for n in range(40):
            writer.write({"event": "sample", "n": n, "pad": "x" * 200})
        started = time.monotonic()
        writer.close()
        assert time.monotonic() - started < 5
        missed = 40 - len(os.read(r, unread_bytes(r)).splitlines())  # what reached the pipe before close gave up
    assert said == [f"--json-stream: {missed} events were not written because its reader did not read them; "
                    "results.jsonl has every completed point."] and missed > 20
