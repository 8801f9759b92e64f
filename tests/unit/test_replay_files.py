"""app.engine.replay.load on a results directory: what it builds, and what it refuses (links, other users' files, a
FIFO, a path out of raw/, a run still running) — one sentence each, nothing written, the lock left alone."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from app.engine import sweep
from app.engine.replay import ReplayError, load
from app.runners.base import Phase, Sample
from app.store.lock import DirLock

RUN = Path(__file__).resolve().parents[1] / "data" / "report" / "telemetry-run"
FIRST = "0000-write-128k-qd8-j1.samples.jsonl"


@pytest.fixture
def run(tmp_path: Path) -> Path:
    path = tmp_path / "run"
    shutil.copytree(RUN, path)
    return path


def tree(path: Path) -> dict[str, tuple[int, int, int]]:
    """Every entry under ``path``: size, mode, mtime (what a write would change)."""
    out = {}
    for p in sorted(path.rglob("*")):
        st = p.lstat()
        out[str(p.relative_to(path))] = (st.st_size, st.st_mode, st.st_mtime_ns)
    st = path.lstat()
    out["."] = (0, st.st_mode, st.st_mtime_ns)
    return out


def test_the_run_comes_back_as_the_sessions_events_and_nothing_is_written(run: Path) -> None:
    before = tree(run)
    r = load(run)
    assert tree(run) == before  # not even a lock file
    kinds = [type(s.event).__name__ for s in r.steps]
    assert kinds[0] == "RunStarted" and kinds[-1] == "RunFinished"
    assert kinds.count("PointStarted") == kinds.count("PointDone") == 2
    samples = [s.event.data for s in r.steps if isinstance(s.event, Sample)]
    on_disk = [json.loads(line) for f in sorted((run / "raw").glob("*.samples.jsonl")) for line in f.open()]
    assert len(samples) == len(on_disk) == r.samples
    for got, want in zip(samples, on_disk):
        assert got["t"] == want["t"] and got.get("iops") == want.get("iops")
        assert got.get("lat_p99_ns") == want.get("lat_p99_ns") and got.get("bw_bytes") == want.get("bw_bytes")
    assert all(isinstance(s.event, Phase) for s in r.steps if type(s.event).__name__ == "Phase")
    ats = [s.at for s in r.steps]
    assert ats == sorted(ats) and r.duration_s == ats[-1]
    done = [s.event for s in r.steps if isinstance(s.event, sweep.PointDone)]
    assert [d.record["index"] for d in done] == [0, 1] and done[-1].done == 2
    assert r.problems == []


def test_a_bad_line_is_named_and_the_rest_replayed(run: Path) -> None:
    f = run / "raw" / FIRST
    good = f.read_text().splitlines()
    f.write_text("\n".join([good[0], '{"t": 1.5, "iops": "lots"}', *good[1:]]) + "\n")
    r = load(run)
    assert r.samples == 14
    assert r.problems == [f"{f}, line 2, key 'iops': has value \"lots\", not a number ≥ 0; the line is skipped."]


def refused(run: Path) -> str:
    with pytest.raises(ReplayError) as e:
        load(run)
    text = str(e.value)
    assert "\n" not in text and "Traceback" not in text
    return text


def test_a_symlinked_samples_file_is_not_followed(run: Path, tmp_path: Path) -> None:
    secret = tmp_path / "elsewhere.jsonl"
    secret.write_text('{"t": 1, "iops": 1}\n')
    (run / "raw" / FIRST).unlink()
    (run / "raw" / FIRST).symlink_to(secret)
    assert refused(run).startswith(f"{run / 'raw' / FIRST}: cannot be read")


def test_a_symlinked_raw_directory_is_refused(run: Path, tmp_path: Path) -> None:
    shutil.move(run / "raw", tmp_path / "raw-elsewhere")
    (run / "raw").symlink_to(tmp_path / "raw-elsewhere")
    assert "raw" in refused(run)


def test_a_file_other_users_can_write_is_not_read(run: Path) -> None:
    os.chmod(run / "raw" / FIRST, 0o666)
    assert refused(run) == (f"{run / 'raw' / FIRST}: is writable by other users, so what it holds could be changed by "
                            "another user while it is read; replay a run only you or root can write.")


def test_a_directory_other_users_can_write_is_refused(run: Path) -> None:
    os.chmod(run, 0o777)
    assert "writable by other users" in refused(run)


def test_a_fifo_is_not_waited_on(run: Path) -> None:
    (run / "raw" / FIRST).unlink()
    os.mkfifo(run / "raw" / FIRST)
    assert refused(run) == f"{run / 'raw' / FIRST}: is not a regular file."


def test_a_samples_path_out_of_raw_is_refused(run: Path) -> None:
    lines = (run / "results.jsonl").read_text().splitlines()
    rec = json.loads(lines[0])
    rec["raw"]["samples"] = "raw/../run.json"
    (run / "results.jsonl").write_text("\n".join([json.dumps(rec), *lines[1:]]) + "\n")
    assert "key 'raw.samples'" in refused(run)


def test_a_run_still_running_is_refused_and_its_lock_stays_with_it(run: Path) -> None:
    meta = json.loads((run / "run.json").read_text())
    (run / "run.json").write_text(json.dumps({**meta, "status": "running"}))
    with DirLock(run) as lock:
        assert "still running" in refused(run)
        assert lock.fd is not None
        with pytest.raises(Exception, match="in use by"):
            DirLock(run).acquire()  # still held by its run
    # its process gone (the lock free), the same directory is an interrupted run: replayed
    assert load(run).samples == 14


def test_a_run_without_samples_says_so(run: Path) -> None:
    shutil.rmtree(run / "raw")
    assert refused(run) == f"{run}: kept no per-second samples (raw/*.samples.jsonl); there is nothing to replay."


def test_the_preconditioning_pass_replays_before_the_first_point(run: Path) -> None:
    meta = json.loads((run / "run.json").read_text())
    meta["precondition"] = {"mode": "sequential", "description": "2x the target\x1b[2J sequentially", "status": "done",
                            "seconds": 3.0, "io_bytes": 3e9, "bw_bytes": 1e9,
                            "raw": {"samples": "raw/precondition.samples.jsonl"}}
    (run / "run.json").write_text(json.dumps(meta))
    (run / "raw" / "precondition.samples.jsonl").write_text(
        "".join(json.dumps({"t": t, "interval_s": 1.0, "iops": 100.0, "bw_bytes": 1e9}) + "\n" for t in (1, 2, 3)))
    r = load(run)
    kinds = [type(s.event).__name__ for s in r.steps]
    assert kinds[:6] == ["RunStarted", "PreconditionStarted", "PreconditionProgress", "PreconditionProgress",
                         "PreconditionProgress", "PreconditionDone"]
    started = r.steps[1].event
    assert isinstance(started, sweep.PreconditionStarted) and "\x1b" not in started.description
    assert [s.at for s in r.steps[2:5]] == [1.0, 2.0, 3.0]
    assert r.samples == 14 + 3


def test_the_samples_a_replay_keeps_are_bounded(run: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("app.engine.replay.MAX_RUN_SAMPLES", 12)
    r = load(run)
    assert r.samples == 12
    second = run / "raw" / "0001-randread-4k-qd4-j1.samples.jsonl"
    assert r.problems == [f"{run}: holds more than 12 samples; the points after {second} replay without theirs."]


def test_a_bad_results_line_is_named_and_its_point_not_replayed(run: Path) -> None:
    lines = (run / "results.jsonl").read_text().splitlines()
    rec = json.loads(lines[1])
    rec["metrics"]["iops"] = "\x1b[31mfast"
    (run / "results.jsonl").write_text("\n".join([lines[0], json.dumps(rec)]) + "\n")
    r = load(run)
    assert r.samples == 10  # the first point's
    assert len(r.problems) == 1
    problem = r.problems[0]
    assert problem.startswith(f"{run / 'results.jsonl'}, line 2: key 'metrics.iops' has invalid value")
    assert problem.endswith("Its point is not replayed.") and "\x1b" not in problem


def test_failed_points_replay_as_failed_unless_a_resume_measured_them(run: Path) -> None:
    meta = json.loads((run / "run.json").read_text())
    plan = meta["plan"]
    meta["failures"] = [{"index": 0, "point": plan[0], "error": "fio said no"},  # measured again: its line counts
                        {"index": 1, "point": plan[1], "error": "fio said no\x1b]0;x\x07"}]
    (run / "run.json").write_text(json.dumps(meta))
    lines = (run / "results.jsonl").read_text().splitlines()
    (run / "results.jsonl").write_text(lines[0] + "\n")  # point 1 never measured
    r = load(run)
    kinds = [type(s.event).__name__ for s in r.steps]
    assert kinds.count("PointDone") == 1 and kinds.count("PointStarted") == 2
    failed = [s.event for s in r.steps if isinstance(s.event, sweep.PointFailed)]
    assert [f.index for f in failed] == [1] and failed[0].error == "fio said no"
    finished = r.steps[-1].event
    assert isinstance(finished, sweep.RunFinished) and (finished.done, finished.failed, finished.total) == (1, 1, 2)


def test_a_memory_run_is_refused_in_one_clean_sentence(run: Path) -> None:
    meta = json.loads((run / "run.json").read_text())
    (run / "run.json").write_text(json.dumps({**meta, "kind": "memory"}))
    assert refused(run) == (f"{run}: a memory run keeps no per-second samples; only storage runs can be "
                            "replayed.")
