"""Results of a run: a sortable table and the export of report.md, plots and results.csv."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen, Screen
from textual.widgets import Button, DataTable, Footer, Header, Input, Static
from textual.worker import Worker, WorkerState

from app.points import Kind
from app.results import ResultsDir
from app.screens import strings
from app.screens.messages import ShowDevices, ShowReport
from app.widgets import TooSmall
from app.summary import point_label
from app.units import format_count

Column = tuple[str, Callable[[dict[str, Any]], Any], Callable[[Any], str]]


def _storage_label(r: dict[str, Any]) -> str:
    point = {k: r[k] for k in ("rw", "rwmixread", "bs", "iodepth", "numjobs", "group") if r.get(k) is not None}
    return point_label(Kind.STORAGE, point)


STORAGE_COLUMNS: list[Column] = [
    ("#", lambda r: r["index"], lambda v: str(v + 1)),
    ("test", _storage_label, str),
    ("IOPS", lambda r: r["iops"] or 0.0, format_count),
    ("MB/s", lambda r: r["bw_MBps"] or 0.0, lambda v: f"{v:.1f}"),
    ("avg µs", lambda r: r["lat_mean_us"] or 0.0, lambda v: f"{v:.1f}"),
    ("p99 µs", lambda r: r["lat_p99_us"] or 0.0, lambda v: f"{v:.1f}"),
    ("CPU %", lambda r: (r["usr_cpu_pct"] or 0.0) + (r["sys_cpu_pct"] or 0.0), lambda v: f"{v:.1f}"),
]
# shown when a point of the run has a validity flag (app.validity)
FLAGS_COLUMN: Column = ("flags", lambda r: r.get("flags") or "", lambda v: v.replace(";", " "))
MEMORY_COLUMNS: list[Column] = [
    ("#", lambda r: r["index"], lambda v: str(v + 1)),
    ("traffic", lambda r: r["traffic"] or "idle", str),
    ("stride", lambda r: r["stride"] or 0, str),
    ("delay", lambda r: r["delay"] if r["delay"] is not None else -1, lambda v: "-" if v == -1 else str(v)),
    ("latency ns", lambda r: r["latency_ns"] or 0.0, lambda v: f"{v:.1f}"),
    ("MB/s", lambda r: r["bandwidth_MBps"] or -1.0, lambda v: "-" if v < 0 else f"{v:.1f}"),
]
RIGHT = {"#", "IOPS", "MB/s", "avg µs", "p99 µs", "CPU %", "stride", "delay", "latency ns"}


def load_rows(path: Path) -> list[dict[str, Any]]:
    """The table's rows: :func:`app.frame.load_results` (the columns of results.csv); a directory
    whose run.json cannot be read still shows the points of its results.jsonl."""
    from app.errors import UsageError
    from app.frame import load_results, records_frame, rows

    try:
        frame = load_results(path)
    except UsageError:
        frame = records_frame(ResultsDir(path).records())
    return rows(frame)


def export_report(results: Path, destination: str) -> Path:
    """Runs in a thread: the core's report renderer, into ``destination`` (a directory or a .md path)."""
    try:
        from app.report import render_report
    except ImportError:
        raise RuntimeError(strings.EXPORT_MISSING) from None
    dest = Path(destination).expanduser() if destination.strip() else None
    if dest is not None and dest.suffix.lower() != ".md":
        dest = dest / "report.md"
    if dest is not None:
        dest.parent.mkdir(parents=True, exist_ok=True)
    return Path(render_report(results, out=dest))


class ExportModal(ModalScreen[str | None]):
    BINDINGS = [Binding("escape", "cancel", "Cancel"), Binding("enter", "noop", "Export", show=True)]

    def __init__(self, default: str, prompt: str = strings.EXPORT_PROMPT) -> None:
        super().__init__()
        self.default = default
        self.prompt = prompt

    def compose(self) -> ComposeResult:
        with Vertical(classes="modal-box", id="export-box"):
            yield Static(self.prompt)
            yield Input(self.default, id="export-path")
            with Horizontal(classes="buttons"):
                yield Button("Export", id="export", variant="primary")
                yield Button(strings.CANCEL_BUTTON, id="cancel")
        yield Footer()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self.dismiss(event.value)

    def on_button_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        self.dismiss(self.query_one("#export-path", Input).value if event.button.id == "export" else None)

    def action_cancel(self) -> None:
        self.dismiss(None)

    def action_noop(self) -> None:
        """The Input submits on enter; the binding only puts ``enter Export`` in the footer."""
        self.dismiss(self.query_one("#export-path", Input).value)


class ResultsScreen(Screen[None]):
    BINDINGS = [
        Binding("s", "sort", "Sort"),
        Binding("S", "reverse", "Reverse"),
        Binding("e", "export", "Export"),
        Binding("v", "report", "Report"),
        Binding("escape", "back", "Back"),
        Binding("d", "devices", "Devices"),
    ]

    def __init__(self, path: str | Path) -> None:
        super().__init__()
        self.path = Path(path)
        self.records: list[dict[str, Any]] = []
        self.columns: list[Column] = STORAGE_COLUMNS
        self.sort_column: int = 0
        self.reverse = False
        self.exported: Path | None = None

    def compose(self) -> ComposeResult:
        yield Header(show_clock=False)
        yield TooSmall()
        with Vertical(id="results-body"):
            yield DataTable(id="results", cursor_type="row")
            yield Static("", id="results-status")
        yield Footer()

    def on_mount(self) -> None:
        self.sub_title = strings.RESULTS_TITLE.format(path=self.path)
        self.records = load_rows(self.path)
        kinds = {r.get("kind") for r in self.records}
        self.columns = MEMORY_COLUMNS if kinds == {Kind.MEMORY} else STORAGE_COLUMNS
        if any(r.get("flags") for r in self.records):
            self.columns = self.columns + [FLAGS_COLUMN]
        table = self.query_one("#results", DataTable)
        for name, _, _ in self.columns:
            table.add_column(name, key=name)
        self.render_rows()
        table.focus()

    def render_rows(self) -> None:
        table = self.query_one("#results", DataTable)
        table.clear()
        _, key, _ = self.columns[self.sort_column]
        rows = sorted(self.records, key=key, reverse=self.reverse)
        for r in rows:
            cells = []
            for name, get, fmt in self.columns:
                text = fmt(get(r))
                cells.append(Text(text, justify="right") if name in RIGHT else text)
            table.add_row(*cells)
        status = strings.SORTED_BY.format(column=self.columns[self.sort_column][0],
                                      direction="descending" if self.reverse else "ascending")
        if not self.records:
            status = strings.RESULTS_EMPTY
        if self.exported is not None:
            status += "  ·  " + strings.EXPORTED.format(path=self.exported)
        self.query_one("#results-status", Static).update(status)

    def action_sort(self) -> None:
        self.sort_column = (self.sort_column + 1) % len(self.columns)
        self.render_rows()

    def action_reverse(self) -> None:
        self.reverse = not self.reverse
        self.render_rows()

    def on_data_table_header_selected(self, event: DataTable.HeaderSelected) -> None:
        index = event.column_index
        if index == self.sort_column:
            self.reverse = not self.reverse
        else:
            self.sort_column, self.reverse = index, False
        self.render_rows()

    def action_export(self) -> None:
        def chosen(dest: str | None) -> None:
            if dest is None:
                return
            self.query_one("#results-status", Static).update(strings.EXPORTING)
            self.run_worker(lambda: export_report(self.path, dest), thread=True, group="export",
                            exclusive=True, exit_on_error=False, name="export")

        self.app.push_screen(ExportModal(str(self.path)), chosen)

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        if event.worker.group != "export":
            return
        if event.state == WorkerState.SUCCESS:
            self.exported = event.worker.result
            self.render_rows()
            self.notify(strings.EXPORTED.format(path=self.exported), timeout=8)
        elif event.state == WorkerState.ERROR:
            error = event.worker.error
            text = str(error) if isinstance(error, RuntimeError) else strings.EXPORT_FAILED.format(error=error)
            self.query_one("#results-status", Static).update(Text(text, style="red"))
            self.notify(text, severity="error", timeout=10)

    def action_back(self) -> None:
        self.app.pop_screen()

    def action_report(self) -> None:
        self.post_message(ShowReport(self.path))

    def action_devices(self) -> None:
        self.post_message(ShowDevices())
