"""Compare two runs, or a run with a reference sheet: the tables ``profiler-tui compare`` writes (app.cli.compare,
the same markdown), shown as tables with the better side of each real difference highlighted (within noise or
without an interval: plain), and exported as that markdown."""

from __future__ import annotations

import re
from pathlib import Path

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import Screen
from textual.widgets import DataTable, Header, Markdown, Static
from textual.worker import Worker, WorkerState

from app.core.sanitize import clean_text
from app.core.textable import read_markdown
from app.screens import strings
from app.screens.results import ExportModal
from app.widgets import KeysFooter, TooSmall

BETTER = "bold green"
NUMBERS = {"A", "B", "B/A", "B − A (95 %)", "Reference", "This run", "Ratio"}  # right-aligned columns
RATIO = re.compile(r"^([0-9]+(?:\.[0-9]+)?)×$")


def _ratio(cell: str) -> float | None:
    m = RATIO.match(cell.strip())
    return float(m.group(1)) if m else None


def _lower_is_better(metric: str) -> bool:
    m = metric.lower()
    return "µs" in m or "latency" in m or " ns" in m or m.endswith("ns")


def better_cells(header: list[str], row: list[str]) -> set[int]:
    """Indexes of the cells holding the better figure of a row, when its difference is real.

    Run vs run (one row per point and figure): ``A`` or ``B`` by the row's ``Figure`` and ``B/A``, only when
    its ``Noise`` says real — a difference within noise or without an interval is no better side. Reference:
    ``This run`` or ``Reference`` by ``Ratio`` and the row's ``Metric``, only when its ``Verdict`` is above or
    below (a figure as specified, or without an interval, is no better side)."""
    cell = dict(zip(header, row))
    if {"Figure", "A", "B", "B/A", "Noise"} <= cell.keys():
        r = _ratio(cell["B/A"])
        if cell["Noise"] != "real" or r is None or r == 1.0:
            return set()
        b_better = (r < 1.0) if _lower_is_better(cell["Figure"]) else (r > 1.0)
        return {header.index("B" if b_better else "A")}
    if {"Ratio", "Metric", "This run", "Reference", "Verdict"} <= cell.keys():
        r = _ratio(cell["Ratio"])
        if cell["Verdict"] not in ("above", "below") or r is None or r == 1.0:
            return set()
        run_better = (r < 1.0) if _lower_is_better(cell["Metric"]) else (r > 1.0)
        return {header.index("This run" if run_better else "Reference")}
    return set()


def grouped(header: list[str], rows: list[list[str]]) -> list[tuple[list[str], set[int]]]:
    """Each row with its better cells; a run-vs-run table's point named on its first figure's row only (the
    markdown repeats it on each), so each point reads as one group."""
    out: list[tuple[list[str], set[int]]] = []
    previous = None
    for row in rows:
        good = better_cells(header, row)
        if "Figure" in header[1:2] and row and row[0] == previous:
            row = [""] + row[1:]
        else:
            previous = row[0] if row else None
        out.append((row, good))
    return out


def compute(a: Path, b: Path | None, reference: str | None) -> str:
    """In a thread: the comparison's markdown (app.cli.compare, exactly what the CLI writes)."""
    from app.cli.compare import compare_reference, compare_runs, load_reference

    if b is not None:
        return compare_runs(str(a), str(b))
    assert reference is not None
    return compare_reference(str(a), load_reference(reference))


class CompareScreen(Screen[None]):
    BINDINGS = [Binding("e", "export", "Export"), Binding("escape", "back", "Back"),
                Binding("left", "columns(-1)", "Columns", show=False, priority=True),
                Binding("right", "columns(1)", "Columns", show=False, priority=True)]

    def __init__(self, a: Path, b: Path | None, reference: str | None = None) -> None:
        super().__init__()
        self.a, self.b, self.reference = a, b, reference
        self.markdown: str | None = None

    def compose(self) -> ComposeResult:
        yield Header(show_clock=False)
        yield TooSmall()
        with VerticalScroll(id="compare-body"):
            yield Static(strings.COMPARE_WORKING, id="compare-status")
        yield KeysFooter()

    def on_mount(self) -> None:
        self.sub_title = strings.COMPARE_TITLE.format(a=self.a.name, b=self.b.name if self.b else self.reference)
        a, b, ref = self.a, self.b, self.reference
        self.run_worker(lambda: compute(a, b, ref), thread=True, group="compare", exclusive=True,
                        exit_on_error=False)
        self.query_one("#compare-body").focus()

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        if event.worker.group == "compare":
            event.stop()
            if event.state == WorkerState.SUCCESS:
                self.markdown = str(event.worker.result)
                self.show(self.markdown)
            elif event.state == WorkerState.ERROR:
                text = clean_text(strings.COMPARE_FAILED.format(error=event.worker.error))
                self.query_one("#compare-status", Static).update(Text(text, style="red"))
        elif event.worker.group == "compare-export":
            event.stop()
            if event.state == WorkerState.SUCCESS:
                self.notify(strings.COMPARE_EXPORTED.format(path=event.worker.result), timeout=8)
            elif event.state == WorkerState.ERROR:
                # the core's sentence names the path after the CLI's flag, which the TUI has not
                self.notify(str(event.worker.error).removeprefix("--out "), severity="error", timeout=10)

    def show(self, markdown: str) -> None:
        """The comparison's tables and text; what it quotes of the runs (names, labels, paths) without control
        characters or escape sequences (the export writes the core's markdown as it is)."""
        markdown = clean_text(markdown, newlines=True)
        body = self.query_one("#compare-body", VerticalScroll)
        self.query_one("#compare-status", Static).update(Text(strings.COMPARE_LEGEND, style="green"))
        text: list[str] = []
        for n, part in enumerate(read_markdown(markdown)):
            if isinstance(part, str):
                text.append(part)
                continue
            self._text(body, text)
            table: DataTable[Text] = DataTable(classes="compare-table", cursor_type="none", zebra_stripes=True,
                                               id=f"compare-table-{n}")
            # the page scrolls, not each table: ↑/↓/PgDn move through everything without tab first
            table.can_focus = False
            body.mount(table)
            header = part.header
            for name in header:
                table.add_column(name)
            right = [name in NUMBERS for name in header]
            for row, good in grouped(header, part.rows):
                table.add_row(*[Text(c, style=BETTER if i in good else "",
                                     justify="right" if i < len(right) and right[i] else "left")
                                for i, c in enumerate(row)])
        self._text(body, text)

    @staticmethod
    def _text(body: VerticalScroll, lines: list[str]) -> None:
        """The lines gathered since the last table, as one markdown block (none when they are all blank)."""
        if any(line.strip() for line in lines):
            body.mount(Markdown("\n".join(lines).strip("\n"), classes="compare-text"))
        lines.clear()

    def column_edges(self) -> list[int]:
        """Where each column of the widest table in view (else of the page) starts, in the page's columns (the page
        scrolls sideways as one); [] when every table fits."""
        body = self.query_one("#compare-body", VerticalScroll)
        room = body.scrollable_content_region.width
        view = body.region
        wide = [t for t in self.query(".compare-table").results(DataTable) if t.virtual_size.width > room]
        wide = [t for t in wide if t.region.overlaps(view)] or wide  # none on screen: the page's widest
        if not wide:
            return []
        table = max(wide, key=lambda t: t.virtual_size.width)
        edges, x = [], 0
        for column in table.ordered_columns:
            edges.append(x)
            x += column.get_render_width(table)
        return edges

    def action_columns(self, step: int) -> None:
        """←/→: the page scrolled sideways by a whole column of the widest table in view (never a column cut by
        a character), the next (``step`` 1) or previous (-1)."""
        body = self.query_one("#compare-body", VerticalScroll)
        edges = [e for e in self.column_edges() if e <= body.max_scroll_x] or [0]
        if body.max_scroll_x not in edges and body.max_scroll_x > 0:
            edges.append(body.max_scroll_x)  # the last columns whole, when no column starts there
        x = round(body.scroll_x)
        later = [e for e in edges if e > x] if step > 0 else [e for e in edges if e < x]
        if later:
            body.scroll_to(x=min(later) if step > 0 else max(later), animate=False)

    def action_export(self) -> None:
        if self.markdown is None:
            return
        text = self.markdown
        default = str(self.a / ("compare-" + (self.b.name if self.b else str(self.reference)) + ".md"))

        def chosen(dest: str | None) -> None:
            if dest:
                self.run_worker(lambda: _write(dest, text), thread=True, group="compare-export", exit_on_error=False)

        self.app.push_screen(ExportModal(default, strings.COMPARE_EXPORT_PROMPT), chosen)

    def action_back(self) -> None:
        self.app.pop_screen()


def _write(dest: str, text: str) -> str:
    from app.cli.compare import write_text

    path = str(Path(dest).expanduser())
    write_text(path, text)
    return path
