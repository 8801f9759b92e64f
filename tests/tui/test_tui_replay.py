"""Replay from the runs browser (ctrl+y) of a real `quick` run (real fio, 2 s a point, 16 MiB): the run screen's
charts receive every second of the samples files, figure for figure, at about a tenth of the run's time at 10×;
the keys change the speed and pause; nothing is written, no fio starts, a running run is refused."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from textual.widgets import RichLog

from app.engine.replay import SPEEDS
from app.screens.replay import ReplayScreen
from app.screens.runs import RunsScreen
from app.store.lock import DirLock
from app.tui import create_app
from app.widgets.charts import BandwidthChart, CurveChart, LatencyChart, ThroughputChart
from tests.tui.helpers import DEVICES, FIXED_PRESETS, open_runs, our_processes, wait_for

SIZE = (80, 24)
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def fixed_presets(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PROFILER_TUI_PRESETS", str(FIXED_PRESETS))


@pytest.fixture(scope="module")
def quick_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, float]:
    """A real quick run (8 points of fio, 2 s each, on a 16 MiB test file) and its wall time."""
    out = tmp_path_factory.mktemp("replay") / "results" / "quick-replay"
    env = {**os.environ, "PROFILER_TUI_PRESETS": str(FIXED_PRESETS)}
    t0 = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "app", "run", "quick", "--out", str(out), "--set", "runtime=2",
                           "--set", "size=16m"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=240)
    assert done.returncode == 0, done.stderr[-2000:]
    return out, time.monotonic() - t0


def tree(path: Path) -> dict[str, tuple[int, int, int]]:
    """Every entry under ``path`` with its size, mode and mtime: what any write would change."""
    out = {str(p.relative_to(path)): (p.lstat().st_size, p.lstat().st_mode, p.lstat().st_mtime_ns)
           for p in sorted(path.rglob("*"))}
    out["."] = (0, path.lstat().st_mode, path.lstat().st_mtime_ns)
    return out


def file_seconds(out: Path) -> list[dict[str, Any]]:
    """Every line of every point's samples file, in plan order, read here with json alone."""
    records = sorted((json.loads(line) for line in (out / "results.jsonl").open()), key=lambda r: r["index"])
    return [json.loads(line) for r in records for line in (out / r["raw"]["samples"]).open() if line.strip()]


def received(chart: Any) -> list[tuple[float, float | None, float | None]]:
    """What a chart was given, second by second (the gaps it draws between points left out)."""
    return [(t, a, b) for t, a, b in zip(chart.t, chart.a, chart.b) if a is not None or b is not None]


async def start_replay(pilot: Any) -> ReplayScreen:
    runs = await open_runs(pilot)
    assert len(runs.shown) == 1
    await pilot.press("ctrl+y")
    # playing: its keys act only once it plays (pressed while the screen was still being mounted, on a loaded
    # machine, they were refused and the speed stayed 10×)
    return await wait_for(pilot, lambda: isinstance(pilot.app.screen, ReplayScreen) and pilot.app.screen.playing
                          and pilot.app.screen, 15, "the replay screen playing")


async def test_replay_at_10x_shows_the_samples_files_figures_in_a_tenth_of_the_time(
        quick_run: tuple[Path, float]) -> None:
    out, run_wall = quick_run
    seconds = file_seconds(out)
    assert len(seconds) >= 8  # at least one second per point
    before = tree(out)
    app = create_app(devices=DEVICES, results_dir=out.parent)
    async with app.run_test(size=SIZE) as pilot:
        screen = await start_replay(pilot)
        assert screen.replay_clock.speed == 10
        await wait_for(pilot, lambda: screen.ended_wall is not None and not screen.playing, 60, "the replay's end")
        assert our_processes() == []  # no fio, no engine
        state = screen.state
        assert state.finished is not None and state.finished.status == "complete"
        assert (state.done, state.total) == (8, 8)

        # every second of the files, figure for figure, as the live run's charts take them
        iops = received(screen.query_one(ThroughputChart))
        bw = received(screen.query_one(BandwidthChart))
        lat = received(screen.query_one(LatencyChart))
        assert len(iops) == len(bw) == len(lat) == len(seconds)
        for (t, a, _), (_, _, mbs), (_, mean, p99), line in zip(iops, bw, lat, seconds):
            assert a == pytest.approx(line["iops"], rel=1e-12)
            assert mbs == pytest.approx(line["bw_bytes"] / 1e6, rel=1e-12)
            assert mean == pytest.approx(line["lat_mean_ns"] / 1e3, rel=1e-12)
            if line.get("lat_p99_ns") is None:
                assert p99 is None
            else:
                assert p99 == pytest.approx(line["lat_p99_ns"] / 1e3, rel=1e-12)
        # within a point the chart's seconds are the file's own
        chart_t = [t for t, _, _ in iops]
        for i in range(1, len(seconds)):
            if seconds[i]["t"] > seconds[i - 1]["t"]:  # the same point
                assert chart_t[i] - chart_t[i - 1] == pytest.approx(seconds[i]["t"] - seconds[i - 1]["t"], abs=1e-9)
        # the curve: one point per measured point, as the live run adds them
        assert len(screen.query_one("#curve-chart", CurveChart).points) == 8

        # the time: the run's measured seconds (each point's last t on fio's clock) at 10×, loosely
        ends: dict[int, float] = {}
        for r in (json.loads(line) for line in (out / "results.jsonl").open()):
            lines = (out / r["raw"]["samples"]).read_text().splitlines()
            ends[r["index"]] = json.loads(lines[-1])["t"]
        measured = sum(ends.values())
        assert screen.started_wall is not None and screen.ended_wall is not None
        took = screen.ended_wall - screen.started_wall
        print(f"replay at 10x: {took:.2f} s for {measured:.2f} s measured by fio; the run took {run_wall:.1f} s")
        assert 0.5 * measured / 10 <= took <= 2.0 * measured / 10, (took, measured)
        assert took < run_wall / 5, (took, run_wall)
        await pilot.press("escape")
        await wait_for(pilot, lambda: isinstance(app.screen, RunsScreen), 5, "back to the runs browser")
    assert tree(out) == before  # nothing written: no lock file, no report, no touched file


async def test_keys_change_the_speed_and_pause_and_escape_ends_it(quick_run: tuple[Path, float]) -> None:
    out, _ = quick_run
    app = create_app(devices=DEVICES, results_dir=out.parent)
    async with app.run_test(size=SIZE) as pilot:
        screen = await start_replay(pilot)
        await pilot.press("minus", "minus", "minus", "minus")  # 10× → 5, 2, 1, and 1 stays the slowest
        assert screen.replay_clock.speed == SPEEDS[0] == 1 and "1×" in (screen.sub_title or "")
        await pilot.press("space")
        assert screen.replay_clock.paused and "paused" in (screen.sub_title or "")
        seen, at = screen.state.events_seen, screen.replay_clock.position()
        await pilot.pause(0.5)
        assert screen.state.events_seen == seen and screen.replay_clock.position() == at
        # the speed changes while paused too: up through every speed, 60× the fastest
        for want in (2, 5, 10, 30, 60, 60):
            await pilot.press("plus")
            assert screen.replay_clock.speed == want and f"{want}×" not in (screen.sub_title or "")  # still "paused"
        await pilot.press("minus", "minus", "minus", "minus")  # 30, 10, 5, 2: slow enough to outlast the test
        await pilot.press("space")
        assert not screen.replay_clock.paused and screen.replay_clock.speed == 2 and "2×" in screen.sub_title
        # playing again: the next event is at most about a second of run time away (1.5 s of wall time at 2×)
        await wait_for(pilot, lambda: screen.state.events_seen > seen, 5, "the replay to go on")
        await pilot.press("escape")
        await wait_for(pilot, lambda: isinstance(app.screen, RunsScreen), 5, "back to the runs browser")
        await wait_for(pilot, lambda: not screen.playing, 5, "the replay's worker to stop")


async def test_a_running_run_is_refused_and_keeps_its_lock(quick_run: tuple[Path, float], tmp_path: Path) -> None:
    out, _ = quick_run
    copy = tmp_path / "results" / "quick-running"
    shutil.copytree(out, copy)
    meta = json.loads((copy / "run.json").read_text())
    (copy / "run.json").write_text(json.dumps({**meta, "status": "running"}))
    app = create_app(devices=DEVICES, results_dir=copy.parent)
    with DirLock(copy) as lock:
        async with app.run_test(size=SIZE) as pilot:
            runs = await open_runs(pilot)
            assert runs.shown[0].status == "running"
            await pilot.press("ctrl+y")
            note = await wait_for(pilot, lambda: next((n for n in app._notifications if "still running" in
                                                       str(n.message)), None), 10, "the refusal")
            assert str(note.message).startswith("quick-running cannot be replayed: ")
            assert isinstance(app.screen, RunsScreen)
        assert lock.fd is not None
        with pytest.raises(Exception, match="in use by"):
            DirLock(copy).acquire()


async def test_a_bad_samples_line_is_named_in_the_log_and_the_rest_replayed(quick_run: tuple[Path, float],
                                                                          tmp_path: Path) -> None:
    out, _ = quick_run
    copy = tmp_path / "results" / "quick-bad"
    shutil.copytree(out, copy)
    first = sorted((copy / "raw").glob("0000-*.samples.jsonl"))[0]
    lines = first.read_text().splitlines()
    bad = json.loads(lines[0])
    bad["iops"] = "\x1b[31mlots"  # an escape sequence in the file: named, never sent to the terminal
    first.write_text("\n".join([json.dumps(bad), *lines[1:]]) + "\n")
    app = create_app(devices=DEVICES, results_dir=copy.parent)
    async with app.run_test(size=SIZE) as pilot:
        screen = await start_replay(pilot)
        await wait_for(pilot, lambda: any("left out" in str(n.message) for n in app._notifications), 10, "the notice")
        await wait_for(pilot, lambda: screen.state.finished is not None, 60, "the replay's end")
        await pilot.press("3")  # the log tab: a RichLog lays out its lines once shown
        await pilot.pause(0.2)
        log = "".join(strip.text for strip in screen.query_one("#log-full", RichLog).lines)
        squeezed = "".join(log.split())  # however the log wrapped the sentence
        assert "".join(f"{first.name}, line 1, key 'iops': has value".split()) in squeezed and "\x1b" not in log
        assert len(received(screen.query_one(ThroughputChart))) == len(file_seconds(out)) - 1


def test_replay_screen_mid_run_at_80x24(snap_compare, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """The replay of the fixed telemetry run (tests/data/report) 8 s in at 10×, its wall clock held still: the
    run screen's charts, phase line and log as the live run showed them at that second."""
    from app.engine.replay import load
    from tests.tui.helpers import fixed_results

    monkeypatch.chdir(tmp_path)  # results/ is relative: the same text on every machine
    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.delenv("PROFILER_TUI_RESULTS", raising=False)
    fixed_results(Path("results"))
    wall = [0.0]

    async def before(pilot: Any) -> None:
        replay = load(Path("results/cliff-20261123-212547"))
        screen = ReplayScreen(replay, now=lambda: wall[0])
        await pilot.app.push_screen(screen)
        await wait_for(pilot, lambda: screen.started_wall is not None, 5, "the replay's start")
        wall[0] = 0.8  # 8 s of the run's time at 10×
        due = sum(1 for s in replay.steps if s.at <= 8.0)
        await wait_for(pilot, lambda: screen.state.events_seen == due, 5, "the events due at 8 s")
        screen.tick()
        await pilot.pause(0.1)

    assert snap_compare(create_app(devices=[], results_dir="results", clock=lambda: 0.0), run_before=before,
                        terminal_size=SIZE)
