"""The runs browser: every results directory under the results roots, newest first, filterable by typing.

From here a run opens (its results table), shows its report, resumes (the target confirmed again, as for a
new run), is marked for a comparison with another run or a reference sheet, and files are imported.  The
directories are read in a thread (app.store.runs): the screen stays responsive with hundreds of runs.
"""

from __future__ import annotations

from pathlib import Path

from rich.text import Text
from textual import events, on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen, Screen
from textual.widgets import DataTable, Footer, Header, Input, OptionList, Static
from textual.widgets.option_list import Option
from textual.worker import Worker, WorkerState

from app.core.errors import UsageError
from app.core.sanitize import clean_line, clean_text
from app.screens import strings
from app.screens.messages import ReadAhead, ResumeRun, ShowCompare, ShowImport, ShowReplay, ShowReport, ShowResults
from app.screens.state import app_options
from app.store.runs import RunSummary, list_runs, results_roots
from app.widgets import KeysFooter, StyledOnce, TooSmall
from app.widgets.rowtable import RowTable

STATUS_STYLE = {"complete": "green", "imported": "green", "partial": "yellow", "interrupted": "yellow",
                "running": "bold cyan", "failed": "red", "planned": "yellow", "unreadable": "red", "foreign": "red"}


def _started(text: str) -> str:
    """"2026-11-22T02:10:07+00:00" → "2026-11-22 02:10" (what fits a column)."""
    return text[:16].replace("T", " ") if text else "—"


def _target(text: str, width: int = 24) -> str:
    """The end of a target that tells it apart: a device's path (/dev/sdb), a file's name (its directory is
    in the filter's words); a name longer than the column keeps its end."""
    if "/" in text and not text.startswith("/dev/"):
        text = text.rstrip("/").rpartition("/")[2] or text
    return text if len(text) <= width else "…" + text[-(width - 1):]


# the runs last listed under each set of results roots: a browser opened again shows them at once, while its thread
# lists the directories again (a key answers with the screen, not with the listing)
_listed: dict[tuple[Path, ...], list[RunSummary]] = {}


class ReferencePicker(ModalScreen[str | None]):
    """A reference sheet to compare one run with (presets/references/*.toml)."""

    BINDINGS = [Binding("escape", "cancel", "Cancel")]

    def __init__(self, run_name: str, names: list[str]) -> None:
        super().__init__()
        self.run_name = run_name
        self.names = names

    def compose(self) -> ComposeResult:
        with Vertical(classes="modal-box", id="reference-box"):
            yield Static(Text(strings.REFERENCE_TITLE.format(name=self.run_name)), classes="modal-title")
            yield OptionList(*[Option(n, id=n) for n in self.names], id="reference-list")
        yield Footer()

    def on_mount(self) -> None:
        self.query_one(OptionList).focus()

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        self.dismiss(event.option.id)

    def action_cancel(self) -> None:
        self.dismiss(None)


class RunsScreen(StyledOnce, Screen[None]):
    # Every letter filters (q, h and d too: a preset or target is typed, not a command), so the commands are
    # ctrl keys that work from the table and from the filter alike: none is a key the filter field uses
    # (ctrl+a/e/d/k/u/w/x/c/v), a terminal takes (ctrl+h/i/j/m are backspace, tab and enter) or tmux
    # takes (ctrl+b).
    TYPING_FILTERS = True
    BINDINGS = [
        Binding("enter", "open", "Open", show=True),
        Binding("ctrl+r", "report", "Report"),
        Binding("ctrl+g", "resume", "Resume"),
        Binding("ctrl+t", "mark", "Mark"),
        Binding("ctrl+s", "compare", "Compare"),
        Binding("ctrl+o", "import_files", "Import"),
        Binding("ctrl+y", "replay", "Replay"),
        Binding("slash", "filter", "Filter", key_display="/", show=False),
        Binding("ctrl+l", "reload", "Reload", show=False),
        Binding("escape", "back", "Back"),
    ]
    AUTO_FOCUS = "#runs"  # the table from the start (on_mount focuses it too), not the filter above it first

    def __init__(self) -> None:
        super().__init__()
        self.runs: list[RunSummary] = []
        self.shown: list[RunSummary] = []
        self.marks: list[Path] = []
        self.loaded = False

    @property
    def roots(self) -> list[Path]:
        return results_roots(app_options(self.app).results_dir)

    def compose(self) -> ComposeResult:
        yield Header(show_clock=False)
        yield TooSmall()
        with Vertical(id="runs-body"):
            yield Input(placeholder=strings.RUNS_FILTER_PLACEHOLDER, id="runs-filter", compact=True,
                        select_on_focus=False)
            yield RowTable(id="runs", cursor_type="row", zebra_stripes=True)
            yield Static(strings.RUNS_LOADING, id="runs-status")
        yield KeysFooter(compact=True)  # the ctrl keys all fit at 80 columns

    def on_mount(self) -> None:
        self.sub_title = strings.RUNS_TITLE.format(roots=", ".join(map(str, self.roots)))
        table = self.query_one("#runs", DataTable)
        # what tells runs apart first: kind, the least telling (the preset says it), last, where it scrolls
        # out at 80 columns rather than the target
        for name in (" ", "started", "preset", "points", "status", "target", "kind"):
            table.add_column(name, key=name)
        table.focus()
        known = _listed.get(tuple(self.roots))
        if known is not None:  # the list read last time, at once; read again in the thread, it replaces it
            self.runs = list(known)
            self.render_rows()
        self.load()

    def load(self) -> None:
        roots = self.roots
        self.run_worker(lambda: list_runs(roots), thread=True, group="runs", exclusive=True, exit_on_error=False,
                        name="runs")

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        if event.worker.group == "runs":
            event.stop()
            if event.state == WorkerState.SUCCESS:
                self.runs = list(event.worker.result or [])
                _listed[tuple(self.roots)] = list(self.runs)
                self.loaded = True
                self.marks = [m for m in self.marks if any(r.path == m for r in self.runs)]
                self.render_rows()
            elif event.state == WorkerState.ERROR:
                self.query_one("#runs-status", Static).update(Text(clean_text(event.worker.error), style="red"))
        elif event.worker.group == "replay":
            event.stop()
            self.replay_loaded(event)

    # --- the table -------------------------------------------------------------------------------------

    def render_rows(self) -> None:
        table = self.query_one("#runs", DataTable)
        words = self.query_one("#runs-filter", Input).value.strip()
        keep = table.cursor_row
        table.clear()
        self.shown = [r for r in self.runs if r.matches(words)]
        for r in self.shown:
            mark = "AB"[self.marks.index(r.path)] if r.path in self.marks else ""
            # Text, never markup: the summary's strings (app.store.runs, already cleaned) are whatever run.json said
            table.add_row(Text(mark, style="bold magenta", justify="left"), Text(_started(r.started)),
                          Text(r.preset[:24]), Text(f"{r.done}/{r.planned}", justify="right"),
                          Text(r.status, style=STATUS_STYLE.get(r.status, ""), justify="left"),
                          Text(_target(r.target)), Text(r.kind), key=str(r.path))
        if self.shown:
            table.move_cursor(row=min(max(keep, 0), len(self.shown) - 1))
        self.update_status(words)

    def update_status(self, words: str = "") -> None:
        roots = ", ".join(map(str, self.roots))
        if not self.runs:
            text = strings.RUNS_NONE.format(roots=roots) if self.loaded else strings.RUNS_LOADING
        else:
            text = strings.RUNS_SHOWN.format(shown=len(self.shown), total=len(self.runs),
                                             filtered=strings.RUNS_FILTERED.format(words=words) if words else "")
        if self.marks:
            text += "  ·  " + strings.RUNS_MARKED.format(marks=", ".join(
                f"{'AB'[i]}={clean_line(p.name, 60)}" for i, p in enumerate(self.marks)))
        self.query_one("#runs-status", Static).update(Text(text))

    def selected(self) -> RunSummary | None:
        table = self.query_one("#runs", DataTable)
        if not self.shown or table.cursor_row < 0 or table.cursor_row >= len(self.shown):
            return None
        return self.shown[table.cursor_row]

    # --- filtering -----------------------------------------------------------------------------------

    @on(Input.Changed, "#runs-filter")
    def filter_changed(self, event: Input.Changed) -> None:
        self.render_rows()

    @on(Input.Submitted, "#runs-filter")
    def filter_done(self, event: Input.Submitted) -> None:
        self.query_one("#runs", DataTable).focus()

    def on_key(self, event: events.Key) -> None:
        """On the table, any printable character but `?` (help) and `/` (the filter's own key) starts the filter
        with it; on the filter, ↓ and escape go back to the table (escape clears the filter first)."""
        field = self.query_one("#runs-filter", Input)
        if self.focused is field:
            if event.key == "down":
                event.stop()
                self.query_one("#runs", DataTable).focus()
            elif event.key == "escape":
                event.stop()
                field.value = ""
                self.query_one("#runs", DataTable).focus()
            return
        if event.is_printable and event.character and event.character.strip() and event.character not in "?/":
            event.stop()
            field.focus()
            field.insert_text_at_cursor(event.character)

    def action_filter(self) -> None:
        self.query_one("#runs-filter", Input).focus()

    def action_reload(self) -> None:
        self.load()

    # --- intents -------------------------------------------------------------------------------------

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        """The highlighted run's results read ahead, in a thread: `enter` then shows them at once."""
        run = self.selected()
        if run is not None and run.usable:
            self.post_message(ReadAhead(run.path))

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        event.stop()
        self.action_open()

    def _usable(self) -> RunSummary | None:
        """The highlighted run, unless its run.json cannot be read or another user can change it (app.store.runs): then
        the notice says why, and nothing of it is opened."""
        run = self.selected()
        if run is not None and not run.usable:
            self.notify(strings.RUNS_UNREADABLE.format(name=run.name, problem=run.problem), severity="error",
                        timeout=10)
            return None
        return run

    def action_open(self) -> None:
        run = self._usable()
        if run is not None:
            self.post_message(ShowResults(run.path))

    def action_report(self) -> None:
        run = self._usable()
        if run is not None:
            self.post_message(ShowReport(run.path))

    def action_resume(self) -> None:
        run = self._usable()
        if run is None:
            return
        if not run.resumable:
            self.notify(strings.RUNS_NOT_RESUMABLE.format(name=run.name, status=run.status), severity="warning")
            return
        self.post_message(ResumeRun(run.path))

    def action_mark(self) -> None:
        run = self._usable()
        if run is None:
            return
        if run.path in self.marks:
            self.marks.remove(run.path)
        elif len(self.marks) >= 2:
            self.notify(strings.RUNS_MARK_FULL, severity="warning")
            return
        else:
            self.marks.append(run.path)
        self.render_rows()

    def action_compare(self) -> None:
        if len(self.marks) == 2:
            self.post_message(ShowCompare(self.marks[0], self.marks[1]))
            return
        current = self.selected()
        run_path = self.marks[0] if self.marks else (current.path if current else None)
        if run_path is None:
            self.notify(strings.RUNS_COMPARE_HINT)
            return
        from app.cli.compare import available_references

        names = sorted(available_references())
        if not names:
            self.notify(strings.REFERENCE_NONE, severity="warning")
            return

        def picked(name: str | None) -> None:
            if name:
                self.post_message(ShowCompare(run_path, None, reference=name))

        self.app.push_screen(ReferencePicker(clean_line(run_path.name, 60), names), picked)

    def action_replay(self) -> None:
        """The run's live view again from its kept samples (app.engine.replay), read off the event loop."""
        run = self._usable()
        if run is None:
            return
        from app.engine.replay import load

        self.notify(strings.REPLAY_LOADING.format(name=run.name), timeout=2)
        self.run_worker(lambda: load(run.path), thread=True, group="replay", exclusive=True, exit_on_error=False,
                        name=run.name)

    def replay_loaded(self, event: Worker.StateChanged) -> None:
        if event.state == WorkerState.SUCCESS and event.worker.result is not None:
            self.post_message(ShowReplay(event.worker.result))
        elif event.state == WorkerState.ERROR:
            error = event.worker.error
            # a refusal is one sentence of the core's; anything else (a bug) is named, never a traceback
            text = str(error) if isinstance(error, UsageError) else f"{type(error).__name__}: {error}"
            self.notify(strings.REPLAY_REFUSED.format(name=event.worker.name, error=text), severity="error",
                        timeout=10)

    def action_import_files(self) -> None:
        self.post_message(ShowImport())

    def action_back(self) -> None:
        self.app.pop_screen()

    def on_screen_resume(self, event: object) -> None:
        """Back from a run, a resume or an import: statuses and counts may have changed."""
        if self.loaded:
            self.load()
