"""The Textual application behind ``app.tui`` (imported lazily: see :func:`app.tui.run_tui`)."""

from __future__ import annotations

import asyncio
import os
import signal
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from textual.app import App, SystemCommand
from textual.binding import Binding
from textual.screen import Screen

from app.screens import messages as msg
from app.widgets import MIN_HEIGHT, MIN_WIDTH


@dataclass
class Options:
    """What the app is started with; tests replace the parts that touch the machine."""

    devices: list[dict[str, Any]] | Callable[[], list[dict[str, Any]]] | None = None  # None: app.devices
    results_dir: Path = field(default_factory=lambda: Path(os.environ.get("PROFILER_TUI_RESULTS") or "results"))
    overrides: tuple[str, ...] = ()  # --set equivalents applied to every run (keys the preset knows)
    engine: str = "auto"  # memory engine for presets
    clock: Callable[[], float] = time.monotonic
    chart_interval: float = 0.5  # chart redraw period (s): 2 Hz
    handle_signals: bool = False  # SIGTERM/SIGHUP/SIGINT (docker stop, SSH hang-up, kill -INT) stop a run cleanly, then exit 130
    # warnings about the container the app runs in (app.container.environment_warnings), computed in a
    # thread by the devices screen; None: not checked (tests)
    environment: Callable[[], list[str]] | list[str] | None = None


class ProfilerApp(App[int]):
    TITLE = msg.TITLE
    CSS_PATH = str(Path(__file__).resolve().parent.parent / "tui.tcss")
    ENABLE_COMMAND_PALETTE = True
    # classes of every screen by size: -narrow below 64 columns (stacked layouts), -short below 20 rows
    # (compact controls); -too-narrow / -too-short below the smallest supported size (app.widgets)
    HORIZONTAL_BREAKPOINTS = [(0, "-too-narrow"), (MIN_WIDTH, "-narrow"), (64, "-wide")]
    VERTICAL_BREAKPOINTS = [(0, "-too-short"), (MIN_HEIGHT, "-short"), (20, "-tall")]
    BINDINGS = [
        Binding("question_mark", "help", "Help", key_display="?"),
        Binding("q", "request_quit", "Quit"),
        # ctrl+c does what it does in a shell: quits, asking first while a run is in progress (a second
        # ctrl+c answers yes). Priority: also from a text field, where Textual would copy instead.
        Binding("ctrl+c", "interrupt", "Quit", show=False, priority=True),
        Binding("ctrl+q", "quit_now", "Quit", show=False, priority=True),
    ]

    def __init__(self, options: Options) -> None:
        super().__init__()
        self.options = options
        self.exit_code = 0  # 130 once a run was stopped by quitting, a signal or a lost terminal
        self.sessions: list[Any] = []  # every session a run screen created (app.sweep.Session)
        self.lost_terminal = False

    def get_driver_class(self) -> Any:
        if os.name == "posix" and not os.environ.get("TEXTUAL_DRIVER"):
            from app.screens.terminal import SafeLinuxDriver

            return SafeLinuxDriver
        return super().get_driver_class()

    def on_mount(self) -> None:
        from app.screens.devices import DevicesScreen

        if self.options.handle_signals:
            loop = asyncio.get_running_loop()
            for sig in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
                try:
                    loop.add_signal_handler(sig, self._on_signal)
                except (NotImplementedError, RuntimeError, ValueError):
                    pass
        self.push_screen(DevicesScreen())

    def _on_signal(self) -> None:
        self._end_interrupted()

    def terminal_lost(self) -> None:
        """Called by the driver (on the event loop) when the terminal hung up: nobody can answer now."""
        self.lost_terminal = True
        self._end_interrupted()

    def _end_interrupted(self) -> None:
        """Stop any run and exit with 130; within a deadline, whatever happens (see app.screens.terminal)."""
        self.exit_code = 130
        if self.options.handle_signals:
            from app.screens.terminal import start_deadline

            start_deadline(self.mark_sessions_interrupted)
        self.run_worker(self.stop_runs_and_exit(), group="quit", exclusive=True)

    def mark_sessions_interrupted(self) -> None:
        """run.json of every run that did not end says ``interrupted`` (any thread; the last resort)."""
        from app.results import now_iso

        for session in list(self.sessions):
            try:
                if session.results.read_meta().get("status") in ("planned", "running"):
                    session.results.update_meta(status="interrupted", ended=now_iso())
            except Exception:  # noqa: BLE001 - a broken results directory must not stop the exit
                pass

    # --- commands -----------------------------------------------------------------------------

    def get_system_commands(self, screen: Screen) -> Any:
        yield from super().get_system_commands(screen)
        yield SystemCommand("Help", "Show the keys of every screen", self.action_help)
        yield SystemCommand("Devices", "Back to the device list", self.action_devices)
        yield SystemCommand("Presets on the test file", "Pick a preset for the default test file",
                            self.action_presets)

    def action_help(self) -> None:
        from app.screens.help import HelpScreen

        if not isinstance(self.screen, HelpScreen):
            self.push_screen(HelpScreen())

    def action_devices(self) -> None:
        from app.screens.devices import DevicesScreen

        if self.active_run() is not None:
            self.notify(msg.RUN_CONFIRM_CANCEL, severity="warning")
            return
        while len(self.screen_stack) > 2 and not isinstance(self.screen, DevicesScreen):
            self.pop_screen()

    def action_presets(self) -> None:
        from app.screens.presets import PresetsScreen, TargetChoice

        if self.active_run() is None:
            self.push_screen(PresetsScreen(TargetChoice.test_file(self.options.results_dir)))

    # --- quitting: a run is stopped (and fio with it) before the app exits -------------------

    def active_run(self) -> Any:
        from app.screens.run import RunScreen

        for screen in self.screen_stack:
            if isinstance(screen, RunScreen) and screen.running:
                return screen
        return None

    def action_interrupt(self) -> None:
        """ctrl+c: quit when idle; during a run ask first, and a second ctrl+c answers yes."""
        from app.screens.confirm import YesNo

        if isinstance(self.screen, YesNo) and self.screen.question == msg.RUN_CONFIRM_QUIT:
            self.screen.dismiss(True)
            return
        self.action_request_quit()

    def action_request_quit(self) -> None:
        from app.screens.confirm import YesNo

        if isinstance(self.screen, YesNo) and self.screen.question == msg.RUN_CONFIRM_QUIT:
            return  # already asking
        if self.active_run() is None:
            self.exit(self.exit_code)
            return

        def answered(yes: bool | None) -> None:
            if yes:
                self.run_worker(self.stop_runs_and_exit(), group="quit")

        self.push_screen(YesNo(msg.RUN_CONFIRM_QUIT), answered)

    async def action_quit_now(self) -> None:
        await self.stop_runs_and_exit()

    async def stop_runs_and_exit(self) -> None:
        run = self.active_run()
        if run is not None:
            self.exit_code = 130  # the run was interrupted, as with Ctrl-C in the CLI
            await run.stop()
        self.exit(self.exit_code)
