"""The replay screen: the run screen fed a finished run's events again (app.engine.replay), at a speed the user picks.

It is the run screen itself — the same charts, phase line, progress and log, filled by the same event
handlers — whose event source is :func:`app.engine.replay.play` instead of a session: no session is made, so no fio
starts, nothing is written and the results directory's lock is never taken.  Its clock is the replay's
position on the run's timeline, so the progress line counts down run time as the run did."""

from __future__ import annotations

import time
from typing import Any, AsyncIterator, Callable, ClassVar

from textual.binding import Binding
from textual.worker import Worker, WorkerState

from app.core.sanitize import clean_line
from app.core.units import format_duration
from app.engine import replay as core
from app.engine import sweep
from app.model.points import Kind
from app.plan.presets import Preset
from app.screens import strings
from app.screens.run import RunScreen
from app.screens.state import RunRequest, TargetChoice


def replay_request(replay: core.Replay) -> RunRequest:
    """What the run screen needs to lay itself out: the run's preset name and target, as run.json says."""
    meta = replay.meta
    name = clean_line(meta.preset_name or replay.path.name, 80)
    preset = Preset(name=name, kind=Kind.STORAGE, description="", source=str(replay.path / "run.json"))
    target = clean_line(meta.target, 200) if meta.target else None
    choice = TargetChoice(label=target or strings.TEST_FILE_LABEL, path=target, test_file_dir=replay.path)
    return RunRequest(preset=preset, target=choice, out=replay.path)


class ReplayScreen(RunScreen):
    BINDINGS = [
        Binding("plus,equals_sign", "faster", "Faster", key_display="+"),
        Binding("minus", "slower", "Slower", key_display="-"),
        Binding("space", "pause", "Pause"),
    ]

    def __init__(self, replay: core.Replay, speed: float = core.DEFAULT_SPEED,
                 now: Callable[[], float] = time.monotonic) -> None:
        self.replay = replay
        self.replay_clock = core.ReplayClock(speed, now)
        self.wall = now
        self.started_wall: float | None = None  # when the first event was shown, and the last (wall clock)
        self.ended_wall: float | None = None
        super().__init__(replay_request(replay), source=self.replay_events)

    async def replay_events(self) -> AsyncIterator[object]:
        self.replay_clock = core.ReplayClock(self.replay_clock.speed, self.wall)  # its time starts now
        self.started_wall = self.wall()
        async for event in core.play(self.replay.steps, self.replay_clock):
            yield event
        self.ended_wall = self.wall()

    # --- what differs from a run ------------------------------------------------------------------

    @property
    def running(self) -> bool:
        """A replay is no run: the app's quit and its devices key treat it as an idle screen, and nothing asks
        before leaving it."""
        return False

    @property
    def playing(self) -> bool:
        return self.worker is not None and self.worker.state in (WorkerState.PENDING, WorkerState.RUNNING)

    @property
    def clock(self) -> Callable[[], float]:
        return self.replay_clock.position

    def on_mount(self) -> None:
        super().on_mount()
        self.show_speed()
        for line in self.replay.problems:
            self.log_line(line, short=False)
        if self.replay.problems:
            n = len(self.replay.problems)
            self.notify(strings.REPLAY_PROBLEMS.format(n=n), severity="warning", timeout=8)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action in ("cancel", "results"):  # nothing to stop, and the runs browser opens the results
            return False
        if action in ("faster", "slower", "pause"):
            return self.playing
        return super().check_action(action, parameters)

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        if event.worker is not self.worker:
            return
        if event.state == WorkerState.CANCELLED:  # left with escape: the screen is going away
            event.stop()
            return
        super().on_worker_state_changed(event)
        if event.state == WorkerState.SUCCESS and self.started_wall is not None and self.ended_wall is not None:
            self.log_line(strings.REPLAY_DONE.format(run=format_duration(self.replay.duration_s),
                                                     wall=format_duration(self.ended_wall - self.started_wall)))
        self.show_speed()

    def _on_replay_started(self, ev: sweep.RunStarted) -> None:
        """The run's RunStarted: its totals, and what is replayed (not "points to run")."""
        st = self.state
        st.total, st.done, st.remaining_s = ev.total, ev.total - ev.pending, ev.estimate_s
        st.path = ev.path
        st.status = "running"
        st.point_started = self.clock()
        speed = self.replay_clock.speed
        self.log_line(strings.REPLAY_STARTED.format(
            path=ev.path, points=ev.total, samples=self.replay.samples, run=format_duration(self.replay.duration_s),
            wall=format_duration(self.replay.duration_s / speed), speed=speed, gap=core.GAP_S))

    def _on_replay_finished(self, ev: sweep.RunFinished) -> None:
        """The run's ending, as the run screen shows it, but no "press r": the results open from the runs browser."""
        self.log_line(strings.REPLAY_FINISHED.format(**self.finish(ev)))

    HANDLERS: ClassVar[dict[type, Callable[[RunScreen, Any], None]]] = {
        **RunScreen.HANDLERS,
        sweep.RunStarted: _on_replay_started,  # type: ignore[dict-item]
        sweep.RunFinished: _on_replay_finished,  # type: ignore[dict-item]
    }

    # --- speed and pause ----------------------------------------------------------------------------

    def show_speed(self) -> None:
        clock = self.replay_clock
        shown = strings.REPLAY_PAUSED if clock.paused else strings.REPLAY_SPEED.format(speed=clock.speed)
        if not self.playing and self.worker is not None:
            shown = self.state.status
        self.sub_title = strings.REPLAY_TITLE.format(speed=shown, preset=self.request.preset.name,
                                                     target=self.request.target.display if self.request.target else "")
        self.refresh_bindings()

    def action_faster(self) -> None:
        self.replay_clock.step_speed(up=True)
        self.show_speed()

    def action_slower(self) -> None:
        self.replay_clock.step_speed(up=False)
        self.show_speed()

    def action_pause(self) -> None:
        self.replay_clock.toggle_pause()
        self.show_speed()

    def action_back(self) -> None:
        if self.playing and self.worker is not None:
            self.worker.cancel()
        self.app.pop_screen()
