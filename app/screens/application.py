"""The Textual application behind ``app.tui`` (imported lazily: see :func:`app.tui.run_tui`)."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import TYPE_CHECKING, Iterable, Sequence

from textual import on
from textual.app import App, SystemCommand
from textual.binding import Binding
from textual.screen import Screen

from app.core import settings
from app.core.errors import ENDING_SIGNALS
from app.core.sanitize import clean_text
from app.screens import strings
from app.screens.messages import (
    PrepareCustomSweep,
    ReadAhead,
    ResumeRun,
    ShowCompare,
    ShowCustomSweep,
    ShowDevices,
    ShowFigures,
    ShowImport,
    ShowPresets,
    ShowReplay,
    ShowReport,
    ShowResults,
    ShowResultsAhead,
    ShowRuns,
    StartRun,
)
from app.screens.state import Options, ResumeTarget, RunRequest, TargetChoice, resume_target, run_request
from app.screens.words import tui_words
from app.widgets import MIN_HEIGHT, MIN_WIDTH

if TYPE_CHECKING:
    from textual.binding import Binding as BindingType
    from textual.content import Content
    from textual.driver import Driver
    from textual.filter import LineFilter
    from textual.notifications import SeverityLevel

    from app.engine.sweep import Session
    from app.screens.custom import CustomSweepScreen
    from app.screens.results import ResultsScreen
    from app.screens.run import RunScreen

# The screens are imported where they are first shown (start-up time: the first screen is drawn before
# the others are loaded); screens ask for each other with the messages of app.screens.messages.


def _same(a: object, b: Path) -> bool:
    """Whether ``a`` is the directory ``b`` (a path, compared resolved; anything else is not)."""
    if not isinstance(a, Path):
        return False
    try:
        return a == b or a.resolve() == b.resolve()
    except OSError:
        return False


class ProfilerApp(App[int]):
    TITLE = strings.TITLE
    CSS_PATH = str(Path(__file__).resolve().parent.parent / "tui.tcss")
    ENABLE_COMMAND_PALETTE = True
    # classes of every screen by size: -narrow below 64 columns (stacked layouts), -short below 20 rows
    # (compact controls); -too-narrow / -too-short below the smallest supported size (app.widgets)
    HORIZONTAL_BREAKPOINTS = [(0, "-too-narrow"), (MIN_WIDTH, "-narrow"), (64, "-wide")]
    VERTICAL_BREAKPOINTS = [(0, "-too-short"), (MIN_HEIGHT, "-short"), (20, "-tall")]
    BINDINGS = [
        Binding("question_mark", "help", "Help", key_display="?"),
        Binding("h", "runs", "Runs"),
        Binding("q", "request_quit", "Quit"),
        # ctrl+c does what it does in a shell: quits, asking first while a run is in progress (a second
        # ctrl+c answers yes). Priority: also from a text field, where Textual would copy instead.
        Binding("ctrl+c", "interrupt", "Quit", show=False, priority=True),
        Binding("ctrl+q", "quit_now", "Quit", show=False, priority=True),
        # bandwidths in MB/s or MiB/s on every screen at once, remembered in the settings file (app.host.config)
        Binding("u", "units", "Units", show=False),
    ]

    def __init__(self, options: Options) -> None:
        super().__init__()
        self.options = options
        self.exit_code = 0  # 130 once a run was stopped by quitting, a signal or a lost terminal
        self.sessions: list[Session] = []  # every session a run screen created
        self.lost_terminal = False
        self.ascii = options.ascii
        self.ascii_filter: LineFilter | None = None
        if options.ascii:
            self.use_ascii()
        self.binary_units = False  # bandwidths in MiB/s (the u key), else MB/s
        # the custom form kept between visits (and made ahead): its target, preset and engine, and the form
        self.kept_form: tuple[object, CustomSweepScreen] | None = None
        self.kept_results: ResultsScreen | None = None  # the results screen last opened, kept for the next visit
        self.results_problem: str | None = None  # why no run can write its results (the devices screen checks)
        self.settings_problem: str | None = None
        if options.settings is not None:
            from app.host.config import load_config

            config, self.settings_problem = load_config(options.settings)
            self.binary_units = config.binary

    # --- ASCII mode and the units toggle ----------------------------------------------------------------------

    def use_ascii(self) -> None:
        """16 colours (Rich's "standard" system: Textual's console is built with the environment's, so it is built
        again) and the ASCII filter last, after Textual's own (NO_COLOR's monochrome one among them)."""
        from rich.console import Console

        from app.screens.ascii import AsciiFilter

        old = self.console
        self.console = Console(color_system="standard", file=old.file, markup=True, highlight=False, emoji=False,
                               legacy_windows=False, force_terminal=True, safe_box=True, soft_wrap=False,
                               _environ={k: v for k, v in settings.environ().items() if k != settings.NO_COLOR.name})
        self.ascii_filter = AsciiFilter()

    def get_line_filters(self) -> Sequence[LineFilter]:
        """Textual's, NO_COLOR's monochrome one made readable (app.screens.monochrome), and ASCII mode's last."""
        from textual.filter import Monochrome

        from app.screens.monochrome import READABLE

        filters = [READABLE if type(f) is Monochrome else f for f in super().get_line_filters()]
        return [*filters, self.ascii_filter] if self.ascii_filter is not None else filters

    def get_key_display(self, binding: BindingType) -> str:
        """Key hints in words where Textual would draw a symbol (⏎, ↑) in ASCII mode."""
        shown = super().get_key_display(binding)
        if not self.ascii or shown.isascii():
            return shown
        from app.screens.ascii import to_ascii

        names = {"⏎": "enter", "↑": "up", "↓": "down", "←": "left", "→": "right", "⇥": "tab"}
        return "".join(names.get(c, to_ascii(c)) for c in shown)

    def action_units(self) -> None:
        self.binary_units = not self.binary_units
        for screen in self.screen_stack:
            changed = getattr(screen, "units_changed", None)
            if changed is not None:
                changed()
        self.notify(strings.UNITS_BINARY if self.binary_units else strings.UNITS_DECIMAL, timeout=3)
        if self.options.settings is not None:
            self.run_worker(self._save_units(self.options.settings, self.binary_units), group="settings")

    async def _save_units(self, path: Path, binary: bool) -> None:
        from app.host.config import Config, save_config

        try:
            await asyncio.to_thread(save_config, Config(units="binary" if binary else "decimal"), path)
        except OSError as e:
            self.notify(strings.UNITS_NOT_SAVED.format(path=clean_text(path), reason=clean_text(e.strerror or e)),
                        severity="warning", timeout=8, markup=False)

    # --- what reaches the terminal: every notice and title cleaned (they quote paths and names from anywhere) ---

    def notify(self, message: str, *, title: str = "", severity: SeverityLevel = "information",
               timeout: float | None = None, markup: bool = True) -> None:
        """Every notice of every screen (Widget.notify comes here): the text without control characters or escape
        sequences (a results directory's name, a preset's, an error quoting a file — any may carry them), a CLI flag
        the core names said in the TUI's words (app.screens.words), and never read as markup, whose ``[link=…]``
        would write a hyperlink sequence of its own."""
        super().notify(clean_text(tui_words(message), newlines=True, limit=2000), title=clean_text(title, limit=200),
                       severity=severity, timeout=timeout, markup=False)

    def format_title(self, title: str, sub_title: str) -> Content:
        """The header's title and sub-title (a screen's sub-title names the run's directory, preset and target),
        cleaned to one line each."""
        return super().format_title(clean_text(title, limit=200), clean_text(sub_title, limit=400))

    def get_driver_class(self) -> type[Driver]:
        if os.name == "posix" and not settings.textual_driver():
            from app.screens.terminal import SafeLinuxDriver

            return SafeLinuxDriver
        return super().get_driver_class()

    def on_mount(self) -> None:
        from app.screens.devices import DevicesScreen

        if self.options.handle_signals:
            loop = asyncio.get_running_loop()
            for sig in ENDING_SIGNALS:  # SIGTERM, SIGHUP, SIGINT, SIGQUIT, SIGUSR1, …
                try:
                    loop.add_signal_handler(sig, self._on_signal)
                except (NotImplementedError, RuntimeError, ValueError):
                    pass
        self.push_screen(DevicesScreen())
        from app.screens.prerender import import_ahead

        self.call_after_refresh(import_ahead)  # the other screens' modules, once the first screen is drawn
        if self.settings_problem:
            self.notify(self.settings_problem, severity="warning", timeout=10, markup=False)  # it quotes the file

    def on_unmount(self) -> None:
        from app.screens.prerender import stop_renders

        stop_renders()  # no report rendering outlives the app (it is rendered again when next viewed)

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
        """Every run that did not end: the settings --tune changed go back and run.json says ``interrupted`` (any
        thread; the last resort, app.engine.sweep.Session.abandon)."""
        for session in list(self.sessions):
            try:
                session.abandon()
            except Exception:  # any error: a broken results directory must not stop the exit
                pass

    # --- commands -----------------------------------------------------------------------------

    def get_system_commands(self, screen: Screen[object]) -> Iterable[SystemCommand]:
        yield from super().get_system_commands(screen)
        yield SystemCommand("Help", "Show the keys of every screen", self.action_help)
        yield SystemCommand("Devices", "Back to the device list", self.action_devices)
        yield SystemCommand("Presets on the test file", "Pick a preset for the default test file",
                            self.action_presets)
        yield SystemCommand("Runs", "Every results directory: open, report, resume, compare, import", self.action_runs)
        yield SystemCommand("Import", "Import fio JSON or MLC text outputs into a results directory",
                            self.action_import)
        yield SystemCommand("Units", "Bandwidths in MB/s (decimal) or MiB/s (binary) (u)", self.action_units)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """On a screen where letters filter (the runs browser), `h` and `q` are typed, not commands: hidden
        from the footer too (escape goes back, ctrl+c quits)."""
        if action in ("runs", "request_quit", "units") and getattr(self.screen, "TYPING_FILTERS", False):
            return False
        return True

    def action_help(self) -> None:
        from app.screens.help import HelpScreen

        if not isinstance(self.screen, HelpScreen):
            self.push_screen(HelpScreen())

    def action_devices(self) -> None:
        from app.screens.devices import DevicesScreen

        if self.active_run() is not None:
            self.notify(strings.RUN_CONFIRM_CANCEL, severity="warning")
            return
        while len(self.screen_stack) > 2 and not isinstance(self.screen, DevicesScreen):
            self.pop_screen()

    def action_presets(self) -> None:
        if self.active_run() is None:
            self.push_presets(TargetChoice.test_file(self.options.results_dir))

    def action_runs(self) -> None:
        from textual.screen import ModalScreen

        from app.screens.runs import RunsScreen

        if isinstance(self.screen, (RunsScreen, ModalScreen)):  # a question or a form in a modal comes first
            return
        for screen in self.screen_stack:  # one runs browser: back to it rather than a second one
            if isinstance(screen, RunsScreen):
                while self.screen is not screen and len(self.screen_stack) > 1:
                    self.pop_screen()
                return
        self.push_screen(RunsScreen())

    def action_import(self) -> None:
        from app.screens.importer import ImportScreen

        if not isinstance(self.screen, ImportScreen):
            self.push_screen(ImportScreen())

    # --- what screens ask for -------------------------------------------------------------------

    @on(ShowRuns)
    def show_runs(self, message: ShowRuns) -> None:
        self.action_runs()

    @on(ShowImport)
    def show_import(self, message: ShowImport) -> None:
        self.action_import()

    def refused(self, *paths: Path | None) -> bool:
        """Whether a run to be shown is one another user can change (app.store.runs.view_problem: its directory, one
        above it, or a symbolic link on the way is another user's, or writable by others): then the notice says
        so in one sentence and no screen reads it."""
        from app.store.runs import view_problem

        for path in paths:
            problem = view_problem(path) if path is not None else None
            if problem:
                self.notify(problem, severity="error", timeout=10)
                return True
        return False

    @on(ShowReport)
    def show_report(self, message: ShowReport) -> None:
        from app.screens.report import report_screen

        if not self.refused(message.path):
            self.push_screen(report_screen(self, message.path))

    @on(ShowFigures)
    def show_figures(self, message: ShowFigures) -> None:
        from app.screens.figures import FiguresScreen

        if not self.refused(message.path):
            self.push_screen(FiguresScreen(message.path))

    @on(ShowCompare)
    def show_compare(self, message: ShowCompare) -> None:
        from app.screens.compare import CompareScreen

        if not self.refused(message.a, message.b):
            self.push_screen(CompareScreen(message.a, message.b, message.reference))

    @on(ResumeRun)
    def resume_run(self, message: ResumeRun) -> None:
        """Read the run again (off the event loop), confirm its target as for a new run, then the run screen."""
        self.notify(strings.RUNS_RESUME_CHECKING.format(name=message.path.name), timeout=3)
        self.run_worker(self._resume(message.path), group="resume", exclusive=True, exit_on_error=False)

    async def _resume(self, path: Path) -> None:
        found = await asyncio.to_thread(resume_target, path)
        if isinstance(found, str):
            self.notify(strings.RUNS_RESUME_REFUSED.format(name=path.name, error=found), severity="error", timeout=10)
            return
        if found.fleet is not None:  # every host's target confirmed again, as for a new fleet run
            from app.screens.fleet import ConfirmFleet, FleetDraft

            def fleet_confirmed(choice: TargetChoice | None) -> None:
                if choice is not None:
                    self._push_resume(found, choice)

            draft = FleetDraft([h for h, _ in found.fleet], None, dict(found.fleet), found.agent_socket)
            self.push_screen(ConfirmFleet(draft), fleet_confirmed)
            return
        if found.device is None:  # a file target (or memory): checked by the session itself, as for a new run
            target = TargetChoice(label=found.target, path=found.target) if found.target else None
            self._push_resume(found, target)
            return
        from app.screens.confirm import ConfirmTarget

        def confirmed(choice: TargetChoice | None) -> None:
            if choice is None:
                return
            if found.writes and not choice.allow_writes:
                self.notify(strings.RUNS_RESUME_WRITES.format(name=path.name, target=found.target),
                            severity="error", timeout=10)
                return
            self._push_resume(found, choice)

        self.push_screen(ConfirmTarget(found.device), confirmed)

    def _push_resume(self, found: ResumeTarget, target: TargetChoice | None) -> None:
        from app.screens.run import RunScreen

        if self.results_problem:
            self.notify(self.results_problem, severity="error", timeout=8)
            return
        request = RunRequest(preset=found.preset, target=target, out=found.path, resume=True)
        self.drop_stale_screens(found.path)
        self.push_screen(RunScreen(request))

    def drop_stale_screens(self, path: Path) -> None:
        """The run in ``path`` goes on in a new run screen: every screen under the shown one that shows that run as
        it was (its stopped run screen saying "interrupted … resume", its results or report) leaves the back stack, so
        escape never goes back to a state that is over."""
        from app.screens.run import RunScreen

        def shows(screen: Screen[object]) -> bool:
            if isinstance(screen, RunScreen):
                shown = screen.state.path or screen.request.out
                return not screen.running and _same(shown, path)
            return _same(getattr(screen, "path", None), path)

        stack = self._screen_stack
        for screen in [s for s in stack[1:-1] if shows(s)]:
            stack.remove(screen)
            screen._pop_result_callback()
            self.call_later(screen.remove)

    @on(ShowPresets)
    def show_presets(self, message: ShowPresets) -> None:
        self.push_presets(message.target)

    def push_presets(self, target: TargetChoice) -> None:
        from app.screens.presets import PresetsScreen

        self.push_screen(PresetsScreen(target))

    @on(ShowCustomSweep)
    def show_custom_sweep(self, message: ShowCustomSweep) -> None:
        if isinstance(message, PrepareCustomSweep):
            self.custom_form(message, compose=True)
            return
        form, made = self.custom_form(message)
        if not made:
            form.restart()  # as a new form shows it: the preset's values, no edits of the last visit
        self.push_screen(form)

    def custom_form(self, message: ShowCustomSweep, compose: bool = False) -> tuple[CustomSweepScreen, bool]:
        """The custom form of the message's target and preset: the one kept from the last visit (or made ahead)
        while they and the engine chosen are unchanged, else a new one, kept (one form: ~60 widgets built and
        styled, half a second on a busy machine, which a key showing a kept form does not wait for), and with
        ``compose`` composed now off screen (made ahead; else as it is pushed); whether it was never shown."""
        from app.screens.custom import CustomSweepScreen

        key = (message.target, message.start, self.options.engine)
        kept = self.kept_form
        if kept is not None and kept[0] == key and kept[1] not in self.screen_stack:
            return kept[1], not kept[1].shown
        if kept is not None and kept[1] not in self.screen_stack:
            self.uninstall_screen(kept[1])
            kept[1].remove()
        form = CustomSweepScreen(message.target, start=message.start, ahead=compose)
        self.kept_form = (key, form)
        self.install_screen(form, f"custom-form-{id(form)}")  # kept when popped
        if compose:
            self._register(self, form)  # composed now, as push_screen would, and shown by the key
        return form, True

    @on(StartRun)
    def start_run(self, message: StartRun) -> None:
        """Push the run screen, or say why the preset may not run on the target."""
        from app.screens.run import RunScreen

        request = run_request(self.options, message.preset, message.target, message.engine)
        if isinstance(request, str) or self.results_problem:
            self.notify(self.results_problem or str(request), severity="error", timeout=8)
            return
        self.push_screen(RunScreen(request))

    @on(ShowDevices)
    def show_devices(self, message: ShowDevices) -> None:
        self.action_devices()

    @on(ReadAhead)
    def read_ahead(self, message: ReadAhead) -> None:
        from app.screens.results import read_ahead

        read_ahead(message.path)

    @on(ShowResults)
    def show_results(self, message: ShowResults) -> None:
        from app.screens.results import ResultsScreen
        from app.store.runs import view_problem

        ahead = isinstance(message, ShowResultsAhead)  # made now off screen, shown by the key
        if (view_problem(message.path) is not None) if ahead else self.refused(message.path):
            return  # a run another user can change: no screen reads it (the key says why)
        path = Path(message.path).absolute()
        kept = self.kept_results
        if kept is not None and kept not in self.screen_stack:
            if kept.path.absolute() == path:
                if not ahead:
                    self.push_screen(kept)  # as it was left, its rows read again if its files changed (on resume)
                return
            self.uninstall_screen(kept)
            kept.remove()
            self.kept_results = None
        if ahead and self.kept_results is not None:  # the kept one is on the stack: made by the key
            return
        screen = ResultsScreen(message.path)
        if self.kept_results is None:
            self.install_screen(screen, f"results-{id(screen)}")  # kept when popped, for the next visit
            self.kept_results = screen
        if ahead:
            self._register(self, screen)  # composed now, as push_screen would
        else:
            self.push_screen(screen)

    @on(ShowReplay)
    def show_replay(self, message: ShowReplay) -> None:
        from app.screens.replay import ReplayScreen

        self.push_screen(ReplayScreen(message.replay))

    # --- quitting: a run is stopped (and fio with it) before the app exits -------------------

    def active_run(self) -> RunScreen | None:
        from app.screens.run import RunScreen

        for screen in self.screen_stack:
            if isinstance(screen, RunScreen) and screen.running:
                return screen
        return None

    def action_interrupt(self) -> None:
        """ctrl+c: quit when idle; during a run ask first, and a second ctrl+c answers yes."""
        from app.screens.confirm import YesNo

        if isinstance(self.screen, YesNo) and self.screen.question == strings.RUN_CONFIRM_QUIT:
            self.screen.dismiss(True)
            return
        self.action_request_quit()

    def action_request_quit(self) -> None:
        from app.screens.confirm import YesNo

        if isinstance(self.screen, YesNo) and self.screen.question == strings.RUN_CONFIRM_QUIT:
            return  # already asking
        if self.active_run() is None:
            self.exit(self.exit_code)
            return

        def answered(yes: bool | None) -> None:
            if yes:
                self.run_worker(self.stop_runs_and_exit(), group="quit")

        self.push_screen(YesNo(strings.RUN_CONFIRM_QUIT), answered)

    async def action_quit_now(self) -> None:
        await self.stop_runs_and_exit()

    async def stop_runs_and_exit(self) -> None:
        run = self.active_run()
        if run is not None:
            self.exit_code = 130  # the run was interrupted, as with Ctrl-C in the CLI
            await run.stop()
        self.exit(self.exit_code)
