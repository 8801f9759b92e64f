"""The TUI in a real pseudo-terminal (tests/tui/pty_harness.py): losing the terminal on every screen, and
the exit code of every way out (0 clean quit, 1 crash, 130 interrupted run or signal)."""

from __future__ import annotations

import json
import shutil
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from app.screens import strings
from tests.conftest import fio_processes
from tests.tui.helpers import wait_until
from tests.tui.pty_harness import ALT_SCREEN_OFF, ROOT, PtyApp, write_presets

EXIT_BUDGET_S = 5.0  # from losing the terminal (or a signal) to the process gone


def run_json(results: Path) -> dict:
    found = sorted(results.glob("*/run.json"))
    assert len(found) == 1, found
    return json.loads(found[0].read_text())


def start_long_run(app: PtyApp) -> None:
    """devices → presets (test file) → a-long: wait until fio measures."""
    app.wait_for(strings.TEST_FILE_LABEL)
    app.send("\r")
    app.wait_for("a-long")
    app.send("\r")
    wait_until(lambda: fio_processes(app.tmp_path), 30, "fio to start")
    wait_until(lambda: list(app.results.glob("*/run.json")) and run_json(app.results)["status"] == "running",
               30, "run.json to say running")


def finish_short_run(app: PtyApp) -> None:
    app.wait_for(strings.TEST_FILE_LABEL)
    app.send("\r")
    app.wait_for("b-short")
    app.send("\x1b[B", 0.5)  # down
    app.send("\r")
    wait_until(lambda: list(app.results.glob("*/run.json")) and run_json(app.results)["status"] == "complete",
               60, "the short run to complete")


def assert_gone_within_budget(app: PtyApp, t0: float, code: int = 130) -> float:
    try:
        rc = app.wait(timeout=EXIT_BUDGET_S)
    except subprocess.TimeoutExpired:
        raise AssertionError(f"the TUI still runs {EXIT_BUDGET_S} s after losing its terminal") from None
    elapsed = time.monotonic() - t0
    print(f"exit {rc} {elapsed:.2f} s after the hang-up")
    assert rc == code, (rc, app.text()[-2000:])
    return elapsed


# --- 1: an SSH drop ends the TUI, from every screen ------------------------------------------------


def test_hang_up_mid_run_stops_fio_marks_interrupted_and_exits_130(tmp_path: Path) -> None:
    with PtyApp(tmp_path) as app:
        start_long_run(app)
        t0 = app.hang_up()
        assert_gone_within_budget(app, t0)
    assert not fio_processes(tmp_path), fio_processes(tmp_path)
    assert run_json(app.results)["status"] == "interrupted"


@pytest.mark.serial  # a deadline (EXIT_BUDGET_S) from the hang-up
@pytest.mark.parametrize("screen", ["devices", "presets", "results"])
def test_hang_up_on_each_screen_exits_within_budget(tmp_path: Path, screen: str) -> None:
    with PtyApp(tmp_path) as app:
        app.wait_for(strings.TEST_FILE_LABEL)
        if screen == "presets":
            app.send("\r")
            app.wait_for("b-short")
        elif screen == "results":
            finish_short_run(app)
            app.send("r")
            app.wait_for("sorted by")
        t0 = app.hang_up()
        assert_gone_within_budget(app, t0)
    assert not fio_processes(tmp_path)
    if screen == "results":
        assert run_json(app.results)["status"] == "complete"


@pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed (apt-get install tmux)")
def test_tmux_kill_session_mid_run(tmp_path: Path) -> None:
    """As a person sees it: the TUI in a tmux pane (a child of the pane's shell, not its session leader,
    so no SIGHUP reaches it — only the hang-up of its tty); the pane is killed mid-run."""
    presets = write_presets(tmp_path / "presets")
    results = tmp_path / "results"
    rc_file = tmp_path / "rc"
    # the wrapper survives the hang-up (a no-op SIGHUP handler, reset for the child at exec) to report
    # the TUI's exit code; it is what a login shell is to the TUI over SSH
    wrapper = (f"import signal, subprocess, sys; signal.signal(signal.SIGHUP, lambda *a: None); "
               f"rc = subprocess.call([sys.executable, '-m', 'app']); open({str(rc_file)!r}, 'w').write(str(rc))")
    env = {"PROFILER_TUI_RESULTS": results, "PROFILER_TUI_PRESETS": presets, "XDG_CONFIG_HOME": tmp_path / "cfg",
           "TERM": "xterm-256color"}
    exports = " ".join(f"{k}={v}" for k, v in env.items())
    session = f"ptui-{uuid.uuid4().hex[:8]}"
    cmd = f"cd {ROOT} && exec env {exports} {sys.executable} -c \"{wrapper}\""
    subprocess.run(["tmux", "new-session", "-d", "-s", session, "-x", "80", "-y", "24", cmd], check=True)
    try:
        def pane() -> str:
            return subprocess.run(["tmux", "capture-pane", "-p", "-t", session], capture_output=True,
                                  text=True).stdout

        wait_until(lambda: strings.TEST_FILE_LABEL in pane(), 20, "the devices screen")
        subprocess.run(["tmux", "send-keys", "-t", session, "Enter"], check=True)
        wait_until(lambda: "a-long" in pane(), 20, "the presets screen")
        subprocess.run(["tmux", "send-keys", "-t", session, "Enter"], check=True)
        wait_until(lambda: fio_processes(tmp_path), 30, "fio to start")
        wait_until(lambda: run_json(results)["status"] == "running", 30, "run.json to say running")
    finally:
        subprocess.run(["tmux", "kill-session", "-t", session], capture_output=True)
    t0 = time.monotonic()
    wait_until(lambda: rc_file.exists() and rc_file.read_text(), EXIT_BUDGET_S, "the TUI to exit")
    print(f"exit {rc_file.read_text()} {time.monotonic() - t0:.2f} s after tmux kill-session")
    assert rc_file.read_text() == "130"
    assert not fio_processes(tmp_path)
    assert run_json(results)["status"] == "interrupted"


# --- 2: exit codes tell the truth ------------------------------------------------------------------


def test_clean_quit_exits_0(tmp_path: Path) -> None:
    with PtyApp(tmp_path) as app:
        app.wait_for(strings.TEST_FILE_LABEL)
        app.send("q")
        assert app.wait(timeout=10) == 0


def test_ctrl_c_when_idle_quits_with_0(tmp_path: Path) -> None:
    with PtyApp(tmp_path) as app:
        app.wait_for(strings.TEST_FILE_LABEL)
        app.send("\r")
        app.wait_for("a-long")
        app.send("\x03")
        assert app.wait(timeout=10) == 0


def test_ctrl_c_during_a_run_asks_then_a_second_ctrl_c_stops_it_with_130(tmp_path: Path) -> None:
    with PtyApp(tmp_path) as app:
        start_long_run(app)
        mark = len(app.text())
        app.send("\x03")
        app.wait_for("Stop it and quit?", since=mark)
        app.send("n", 1.0)
        assert app.proc.poll() is None and fio_processes(tmp_path), "'n' keeps the run going"
        mark = len(app.text())
        app.send("\x03")
        app.wait_for("Stop it and quit?", since=mark)
        app.send("\x03")
        assert app.wait(timeout=EXIT_BUDGET_S * 2) == 130
    assert not fio_processes(tmp_path)
    assert run_json(app.results)["status"] == "interrupted"


def test_quitting_a_running_run_exits_130(tmp_path: Path) -> None:
    with PtyApp(tmp_path) as app:
        start_long_run(app)
        app.send("q")
        app.wait_for("Stop it and quit?")
        app.send("y")
        assert app.wait(timeout=EXIT_BUDGET_S * 2) == 130
        assert app.raw().rfind(ALT_SCREEN_OFF) > app.raw().rfind("\x1b[?1049h"), "terminal restored"
    assert not fio_processes(tmp_path)
    assert run_json(app.results)["status"] == "interrupted"


def test_quitting_after_a_finished_run_exits_0(tmp_path: Path) -> None:
    with PtyApp(tmp_path) as app:
        finish_short_run(app)
        app.send("q")
        assert app.wait(timeout=10) == 0


def test_sighup_mid_run_exits_130_and_restores_the_terminal(tmp_path: Path) -> None:
    with PtyApp(tmp_path) as app:
        start_long_run(app)
        t0 = time.monotonic()
        app.proc.send_signal(signal.SIGHUP)
        assert_gone_within_budget(app, t0)
        time.sleep(0.2)
        assert app.raw().rfind(ALT_SCREEN_OFF) > app.raw().rfind("\x1b[?1049h"), "terminal restored"
    assert not fio_processes(tmp_path)
    assert run_json(app.results)["status"] == "interrupted"


def test_sigterm_mid_run_exits_130(tmp_path: Path) -> None:
    with PtyApp(tmp_path) as app:
        start_long_run(app)
        t0 = time.monotonic()
        app.proc.send_signal(signal.SIGTERM)
        assert_gone_within_budget(app, t0)
    assert not fio_processes(tmp_path)
    assert run_json(app.results)["status"] == "interrupted"


CRASH = """
import sys
from app.screens.devices import DevicesScreen

def crash(self):
    raise RuntimeError("injected crash for the test")

DevicesScreen.action_presets = crash  # "p" on the devices screen raises inside the app
from app.cli.commands import main
main([])
"""


def test_a_crash_exits_1_with_the_error_after_the_terminal_is_restored(tmp_path: Path) -> None:
    with PtyApp(tmp_path, code=CRASH) as app:
        app.wait_for(strings.TEST_FILE_LABEL)
        app.send("p")
        assert app.wait(timeout=10) == 1
        time.sleep(0.2)
        raw = app.raw()
    after = ALT_SCREEN_OFF.join(raw.split(ALT_SCREEN_OFF)[1:])
    assert raw.count(ALT_SCREEN_OFF) >= 1, "the terminal is restored"
    assert "injected crash for the test" in after, after[-2000:]
    assert "profiler-tui: the TUI stopped on an internal error (RuntimeError: injected crash" in after.replace(
        "\r\n", " ").replace("\n", " ")


CRASH_MID_RUN = """
from app.screens.run import RunScreen

def crash(self, tab):
    raise RuntimeError("injected crash mid-run")

RunScreen.action_tab = crash  # '2' on the run screen raises inside the app
from app.cli.commands import main
main([])
"""


def test_a_crash_mid_run_exits_1_stops_fio_and_marks_the_run_interrupted(tmp_path: Path) -> None:
    with PtyApp(tmp_path, code=CRASH_MID_RUN) as app:
        start_long_run(app)
        app.send("2", 0)
        assert app.wait(timeout=15) == 1
        time.sleep(0.2)
        assert "injected crash mid-run" in app.raw().split(ALT_SCREEN_OFF)[-1]
    assert not fio_processes(tmp_path)
    assert run_json(app.results)["status"] == "interrupted"
