"""--tune round trips on the real sysfs of a loop device the test makes (scheduler, wbt_lat_usec, nomerges of its
queue): the values are changed while a point runs and restored after a normal end, after every signal that would
end the process (the CLI, a terminal that hangs up under its progress bar, the TUI, a closed output pipe), and
after a SIGKILL by the ``resume`` of that run or by the next ``run``; a second --tune run on the device is refused
while the first tunes, and an untuned run says its audit read the first one's values.  The audit's reading is
replaced by one naming those files (tests/helpers/tune_run.py); the changes, the restore record, the locks and
the signals are the tool's own."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Iterator

import pytest

from app.core.errors import ENDING_SIGNALS
from app.host import tune
from app.screens import strings
from tests.conftest import ROOT, fio_processes
from tests.helpers.loopdev import loop_device
from tests.helpers.schema_check import validate_dir
from tests.helpers.tune_run import TUNE_ENV
from tests.tui.pty_harness import PtyApp

HELPER = ROOT / "tests" / "helpers" / "tune_run.py"
BEFORE = {"scheduler": "mq-deadline", "wbt_lat_usec": "2000", "nomerges": "0"}
TUNED = {"scheduler": "none", "wbt_lat_usec": "0", "nomerges": "2"}
KEYS = {"scheduler": "scheduler", "wbt_lat_usec": "wbt", "nomerges": "nomerges"}


@contextlib.contextmanager
def queue(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    """A RAM-backed loop device (detached at the end, also on failure) with its queue set to BEFORE."""
    with loop_device(tmp_path, size_mb=32, ram=True) as dev:
        q = Path(f"/sys/block/{dev.name}/queue")
        for name, value in BEFORE.items():
            (q / name).write_text(value + "\n")
        assert values(q) == BEFORE
        yield dev.path, q


def values(q: Path) -> dict[str, str]:
    return {name: tune.read_setting(str(q / name)) for name in BEFORE}


def env_for(q: Path, tune_dir: Path | None, *extra: list[str]) -> dict[str, str]:
    env = dict(os.environ)
    env[TUNE_ENV] = json.dumps([[KEYS[n], str(q / n), v] for n, v in TUNED.items()] + list(extra))
    env.pop(tune.TUNE_DIR_ENV, None)
    if tune_dir is not None:
        env[tune.TUNE_DIR_ENV] = str(tune_dir)
    return env


@contextlib.contextmanager
def spawned(env: dict[str, str], *args: str) -> Iterator[subprocess.Popen[str]]:
    """The tool with the test's audit, in the background; killed if the test leaves it running."""
    proc = subprocess.Popen([sys.executable, str(HELPER), *args], cwd=ROOT, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        yield proc
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate(timeout=10)


def run_args(dev: str, out: Path) -> list[str]:
    """One 2 s point: long enough to be seen tuned, interrupted or killed in it."""
    return ["run", "custom", "--target", dev, "--yes", "--out", str(out), "--tune", "--set", "size=16m",
            "--set", "runtime=2"]


def wait_tuned_and_running(proc: subprocess.Popen, q: Path, out: Path) -> dict[str, str]:
    """The queue's values seen while fio runs a point (asserted tuned)."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        assert proc.poll() is None, proc.communicate()
        if fio_processes(out):
            seen = values(q)
            if seen == TUNED:
                return seen
        time.sleep(0.05)
    raise AssertionError(f"no tuned point seen: {values(q)}")


def record_path(tune_dir: Path, out: Path) -> Path:
    return tune_dir / f"{tune.run_id(out)}.json"


def meta(out: Path) -> dict:
    return json.loads((out / "run.json").read_text())


def test_values_are_tuned_during_the_run_and_restored_after_it(tmp_path: Path) -> None:
    """The machine's own record directory (/run/profiler-tui/tune) is used.  A value the kernel refuses (a
    read-ahead of "many") is recorded and the other changes go on."""
    out = tmp_path / "r"
    with queue(tmp_path) as (dev, q):
        read_ahead = tune.read_setting(str(q / "read_ahead_kb"))
        refused = ["read_ahead", str(q / "read_ahead_kb"), "many"]
        with spawned(env_for(q, None, refused), *run_args(dev, out)) as proc:
            during = wait_tuned_and_running(proc, q, out)
            record = record_path(Path(tune.TUNE_DIR), out)
            assert record.is_file() and record.stat().st_mode & 0o777 == 0o600
            assert record.parent.stat().st_mode & 0o777 == 0o700 and record.parent.stat().st_uid == 0
            _, err = proc.communicate(timeout=60)
        after = values(q)
        print(f"\nbefore {BEFORE}\nduring {during}\nafter {after}")
        assert proc.returncode == 0, err
        assert after == BEFORE
        assert not record.exists()
        assert f"tune: scheduler: {q}/scheduler: mq-deadline → none" in err
        t = meta(out)["tune"]
        assert t["requested"] is True and "restored_at" in t
        assert [(c["path"], c["previous"], c["value"], c["applied"], c["restored"]) for c in t["changes"]] == [
            (str(q / n), BEFORE[n], TUNED[n], True, True) for n in TUNED] + [
            (str(q / "read_ahead_kb"), read_ahead, "many", False, None)]
        assert t["changes"][-1]["error"] == "writing many failed: Invalid argument"
        assert tune.read_setting(str(q / "read_ahead_kb")) == read_ahead
        validate_dir(out)


# every signal that ends the process by default and can be caught (app.core.errors.ENDING_SIGNALS), one real-time one
SIGNALS = [signal.Signals(s) for s in ENDING_SIGNALS if s < signal.SIGRTMIN] + [signal.SIGRTMIN]


def short_args(out: Path) -> list[str]:
    """Two 1 s points: a signal at the first one leaves the second unmeasured."""
    return ["--out", str(out), "--set", "size=4m", "--set", "runtime=1", "--set", "iodepth=1,2"]


def assert_ended_interrupted(proc: subprocess.Popen[str], err: str, out: Path) -> dict:
    """What every signal's ending leaves: exit 130 with the one line, run.json interrupted, no reserve, no fio."""
    assert proc.returncode == 130, err
    assert "Traceback" not in err and "Interrupted: " in err, err
    assert not fio_processes(out), "no child outlives the tool"
    assert not (out / ".space-reserve").exists()
    m = meta(out)
    assert m["status"] == "interrupted" and m["ended"]
    return m


@pytest.mark.parametrize("sig", SIGNALS, ids=lambda s: s.name)
def test_every_ending_signal_restores_and_records_the_run_interrupted(tmp_path: Path, sig: signal.Signals) -> None:
    """SIGHUP (an SSH drop), SIGUSR1, SIGALRM … once ended the CLI by their default action (exit 129 and the like):
    settings left tuned, run.json ``running``, ``.space-reserve`` left behind."""
    out, tune_dir = tmp_path / "i", tmp_path / "records" / "tune"
    with queue(tmp_path) as (dev, q):
        args = ["run", "custom", "--target", dev, "--yes", "--tune", *short_args(out)]
        with spawned(env_for(q, tune_dir), *args) as proc:
            during = wait_tuned_and_running(proc, q, out)
            if sig == signal.SIGINT:  # a live run's record is left alone
                os.environ[tune.TUNE_DIR_ENV] = str(tune_dir)
                try:
                    assert tune.restore_leftovers() == ([], [])
                finally:
                    del os.environ[tune.TUNE_DIR_ENV]
            assert values(q) == TUNED and record_path(tune_dir, out).exists()
            proc.send_signal(sig)
            _, err = proc.communicate(timeout=60)
        after = values(q)
        print(f"\nbefore {BEFORE}\nduring {during}\nafter {sig.name} {after}")
        m = assert_ended_interrupted(proc, err, out)
        assert after == BEFORE
        assert not record_path(tune_dir, out).exists()
        assert all(c["restored"] is True for c in m["tune"]["changes"])


def test_an_ssh_drop_under_the_progress_bar_restores(tmp_path: Path) -> None:
    """The CLI on a terminal (rich's progress bar) whose terminal hangs up: SIGHUP, then every write fails (EIO)."""
    out, tune_dir = tmp_path / "p", tmp_path / "records" / "tune"
    with queue(tmp_path) as (dev, q):
        argv = [str(HELPER), "run", str(ROOT / "presets" / "custom.toml"), "--target", dev, "--yes", "--tune",
                *short_args(out)]  # (the harness names presets of its own)
        code = f"import runpy, sys; sys.argv = {argv!r}; runpy.run_path(sys.argv[0], run_name='__main__')"
        with PtyApp(tmp_path, code=code, env=env_for(q, tune_dir)) as app:
            wait_tuned_and_running(app.proc, q, out)
            app.hang_up()
            assert app.wait(timeout=30) == 130, app.text()[-2000:]
        assert values(q) == BEFORE
        assert not fio_processes(out) and not (out / ".space-reserve").exists()
        m = meta(out)
        assert m["status"] == "interrupted" and all(c["restored"] is True for c in m["tune"]["changes"])


TUI_TUNED_RUN = """
import sys
sys.path.insert(0, {helpers!r})
import app.host.audit, tune_run
app.host.audit.audit = tune_run.fake_audit  # the test's audit, as for the CLI
from app.screens.state import TargetChoice
TargetChoice.test_file = classmethod(lambda cls, d: cls(label="the test's loop device", path={dev!r}, yes=True,
                                                         tune=True, test_file_dir=d))
from app.cli.commands import main
main([])
"""


@pytest.mark.parametrize("ending", ["hang-up", "SIGUSR1"])
def test_a_tuned_run_in_the_tui_restores_when_the_terminal_goes_or_a_signal_comes(tmp_path: Path,
                                                                                    ending: str) -> None:
    """The TUI's run with tuning on (the target confirmation's ctrl+t; here the test file's choice says so): an SSH
    drop, and a signal it did not handle before (SIGUSR1 ended it by the default action)."""
    tune_dir = tmp_path / "records" / "tune"
    with queue(tmp_path) as (dev, q):
        code = TUI_TUNED_RUN.format(helpers=str(HELPER.parent), dev=dev)
        with PtyApp(tmp_path, code=code, env=env_for(q, tune_dir)) as app:
            app.wait_for(strings.TEST_FILE_LABEL)
            app.send("\r")
            app.wait_for("a-long")
            app.send("\r")
            wait_tuned_and_running(app.proc, q, app.results)
            if ending == "hang-up":
                app.hang_up()
            else:
                app.proc.send_signal(signal.SIGUSR1)
            assert app.wait(timeout=30) == 130, app.text()[-2000:]
        assert values(q) == BEFORE
        [out] = [p.parent for p in app.results.glob("*/run.json")]
        assert not fio_processes(out) and not (out / ".space-reserve").exists()
        m = meta(out)
        assert m["status"] == "interrupted" and all(c["restored"] is True for c in m["tune"]["changes"])
        assert not record_path(tune_dir, out).exists()


def test_a_closed_output_pipe_ends_the_run_as_interrupted(tmp_path: Path) -> None:
    """Python ignores SIGPIPE: a reader of the progress that goes away (``run … | head``) makes the next write fail
    (EPIPE), which ends the run as a signal would — it was an error with a traceback and exit 1."""
    out, tune_dir = tmp_path / "c", tmp_path / "records" / "tune"
    with queue(tmp_path) as (dev, q):
        args = ["run", "custom", "--target", dev, "--yes", "--tune", *short_args(out)]
        with spawned(env_for(q, tune_dir), *args) as proc:
            wait_tuned_and_running(proc, q, out)
            assert proc.stdout is not None and proc.stderr is not None
            proc.stdout.close()
            err = proc.stderr.read()
            proc.wait(timeout=60)
        assert values(q) == BEFORE
        assert_ended_interrupted(proc, err, out)


def test_a_signal_ends_an_untuned_run_and_its_resume_alike(tmp_path: Path) -> None:
    """Without --tune too, and for ``resume``: interrupted, the completed point kept, nothing left running."""
    out = tmp_path / "u"
    env = {k: v for k, v in os.environ.items() if k != TUNE_ENV}  # no setting named: nothing tuned
    for args, sig in ((["run", "custom", "--target", str(tmp_path / "t.bin"), *short_args(out)], signal.SIGHUP),
                      (["resume", str(out)], signal.SIGUSR1)):
        with spawned(env, *args) as proc:
            wait_running(proc, out, done=1)  # the run's second point; the resume's first
            proc.send_signal(sig)
            _, err = proc.communicate(timeout=60)
        assert_ended_interrupted(proc, err, out)
        assert len((out / "results.jsonl").read_text().splitlines()) == 1, "the completed point is kept"


def wait_running(proc: subprocess.Popen[str], out: Path, done: int) -> None:
    """Until fio measures a point after ``done`` points are in results.jsonl."""
    results = out / "results.jsonl"
    deadline = time.monotonic() + 60
    while not (results.exists() and len(results.read_text().splitlines()) >= done and fio_processes(out)):
        assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
        time.sleep(0.05)


def test_one_tune_run_at_a_time_and_an_untuned_run_says_its_audit_is_not_the_hosts(tmp_path: Path) -> None:
    """Run A tunes a loop device.  A second --tune run B on it once started, planned nothing (the values were already
    A's), recorded wbt "ok", and measured on while A put 2000 back: it is refused now (exit 3, nothing created), naming
    A's process and the device.  A run C without --tune on it measures, but its run.json says another run was tuning:
    its audit holds A's values, not the host's, so its buffered writes are not judged 'write-throttled: passed'."""
    a_out, b_out, c_out, tune_dir = tmp_path / "a", tmp_path / "b", tmp_path / "c", tmp_path / "records" / "tune"
    with queue(tmp_path) as (dev, q):
        env = env_for(q, tune_dir)
        tuned = ["run", "custom", "--target", dev, "--yes", "--tune", "--set", "size=4m"]
        with spawned(env, *tuned, "--out", str(a_out), "--set", "runtime=20") as a:
            wait_tuned_and_running(a, q, a_out)
            b = subprocess.run([sys.executable, str(HELPER), *tuned, "--out", str(b_out), "--set", "runtime=1"],
                               cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)
            print(f"\nB: exit {b.returncode}: {b.stderr}")
            assert b.returncode == 3, b.stderr
            lines = [ln for ln in b.stderr.splitlines() if not ln.startswith("Note:")]
            assert len(lines) == 1 and f"process {a.pid}, results in {a_out}" in lines[0], b.stderr
            assert f"the queue settings of {dev}" in lines[0], b.stderr
            assert not b_out.exists() and values(q) == TUNED and record_path(tune_dir, a_out).exists()
            c = subprocess.run([sys.executable, "-m", "app", "run", "custom", "--target", dev, "--yes", "--out",
                                str(c_out), "--set", "rw=write", "--set", "direct=0", "--set", "size=4m", "--set",
                                "runtime=1"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)
            assert c.returncode == 0, c.stderr
            a.send_signal(signal.SIGINT)
            _, err = a.communicate(timeout=60)
        assert a.returncode == 130, err
        assert values(q) == BEFORE
    m = meta(c_out)
    print("\n" + "\n".join(m["warnings"]))
    said = m["audit"]["tuned_by"]
    assert f"another run (process {a.pid}, results in {a_out}) was tuning the queue settings of {dev}" in said
    assert m["warnings"] == [f"profiler-tui: {said}."]
    [line] = [json.loads(ln) for ln in (c_out / "results.jsonl").read_text().splitlines()]
    assert line["checks"]["write-throttled"] == {"result": "not-applicable", "why": said}
    validate_dir(c_out)


def killed_run(tmp_path: Path, dev: str, q: Path, out: Path, tune_dir: Path) -> None:
    with spawned(env_for(q, tune_dir), *run_args(dev, out)) as proc:
        wait_tuned_and_running(proc, q, out)
        proc.kill()
        proc.communicate(timeout=10)
    deadline = time.monotonic() + 10
    while fio_processes(out) and time.monotonic() < deadline:  # fio dies with its parent
        time.sleep(0.05)
    assert values(q) == TUNED, "SIGKILL leaves the values set"
    assert record_path(tune_dir, out).exists(), "and the restore record"


def test_sigkill_then_resume_restores_then_tunes_again(tmp_path: Path) -> None:
    out, tune_dir = tmp_path / "k", tmp_path / "records" / "tune"
    with queue(tmp_path) as (dev, q):
        killed_run(tmp_path, dev, q, out, tune_dir)
        resumed = subprocess.run([sys.executable, str(HELPER), "resume", str(out), "--yes"], cwd=ROOT,
                                 env=env_for(q, tune_dir), capture_output=True, text=True, timeout=120)
        after = values(q)
        print(f"\nafter SIGKILL {TUNED}\nafter resume {after}\n{resumed.stderr}")
        assert resumed.returncode == 0, resumed.stderr
        assert after == BEFORE
        assert "a killed --tune run" in resumed.stderr and "3 restored" in resumed.stderr
        m = meta(out)
        assert any("3 restored" in w for w in m["warnings"])
        assert m["status"] == "complete"
        # the resume tuned again (the run asked --tune) and restored at its end
        assert [(c["previous"], c["applied"], c["restored"]) for c in m["tune"]["changes"]] == [
            (BEFORE[n], True, True) for n in TUNED]
        assert not record_path(tune_dir, out).exists()
        validate_dir(out)


def test_sigkill_then_the_next_run_restores(tmp_path: Path) -> None:
    out, tune_dir = tmp_path / "k", tmp_path / "records" / "tune"
    with queue(tmp_path) as (dev, q):
        killed_run(tmp_path, dev, q, out, tune_dir)
        env = env_for(q, tune_dir)
        del env[TUNE_ENV]
        nxt = subprocess.run([sys.executable, "-m", "app", "run", "custom", "--target", str(tmp_path / "t.bin"),
                              "--out", str(tmp_path / "next"), "--set", "runtime=1", "--set", "size=4m"],
                             cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
        assert nxt.returncode == 0, nxt.stderr
        assert values(q) == BEFORE
        assert not record_path(tune_dir, out).exists()
        lines = [ln for ln in nxt.stderr.splitlines() if "a killed --tune run" in ln]
        assert len(lines) == 1 and str(out) in lines[0], nxt.stderr
        assert meta(tmp_path / "next")["warnings"] == lines

