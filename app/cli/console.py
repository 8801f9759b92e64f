"""The CLI on a terminal, drawn with rich: the live progress of ``run``/``resume`` and the tables of
``devices``, ``presets`` and ``compare``.

UI side, like app.tui: the headless core never imports this module at module level.  ``app.cli.commands`` imports
it inside a function, and only when the stream it writes to is a terminal (``app.cli.commands.on_terminal``), so
``--help``, piped output and CI logs load no rich and print the core's plain text byte for byte.

Everything shown here comes from the core: the progress lines are ``app.cli.progress.ProgressPrinter``'s (this
module only draws them above a live bar), the live figures are a run's samples, and ``compare``'s tables are
the markdown ``app.cli.compare`` writes, drawn as tables.  Text from results, presets and devices is never read
as rich markup.  NO_COLOR is honoured (rich's Console reads it); every line fits the terminal's width
(compare's tables are laid out by the core's width-aware table, app.core.textable.table_lines).
"""

from __future__ import annotations

import re
import signal
import time
from typing import TYPE_CHECKING, Iterable, Mapping, Sequence, TextIO

from rich import box
from rich.console import Console, ConsoleOptions, Group, RenderableType, RenderResult
from rich.live import Live
from rich.measure import Measurement
from rich.padding import Padding
from rich.table import Table
from rich.text import Text

from app.cli.progress import ProgressPrinter
from app.core.sanitize import clean_text
from app.core.textable import ReadTable, read_markdown, table_lines
from app.core.units import format_count, format_duration
from app.model.points import Kind
from app.stats.summary import metrics_line, steady_live

if TYPE_CHECKING:
    from app.host.audit import Audit

REFRESH_PER_SECOND = 4  # the live display's redraws; the elapsed time and ETA move with it


def terminal_console(stream: TextIO) -> Console:
    """A Console on ``stream`` that prints text as it is: no markup, emoji codes or number highlighting."""
    return Console(file=stream, markup=False, emoji=False, highlight=False)


# --- run / resume: the live progress ------------------------------------------------------------------------


class _Bar:
    """A progress bar as wide as its column: ``━━━━━━━━╸───────`` (``###---`` on an ASCII-only terminal).
    Both parts are drawn with their own characters, so the bar reads the same in monochrome (NO_COLOR)."""

    def __init__(self, fraction: float, style: str) -> None:
        self.fraction = min(1.0, max(0.0, fraction))
        self.style = style

    def __rich_measure__(self, console: Console, options: ConsoleOptions) -> Measurement:
        return Measurement(4, options.max_width)

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        width = max(1, options.max_width)
        full, back = ("#", "-") if options.ascii_only else ("━", "─")
        halves = int(self.fraction * width * 2)
        filled, half = divmod(halves, 2)
        text = Text(full * filled, style=self.style)
        if half and not options.ascii_only:
            text.append("╸", style=self.style)
            filled += 1
        text.append(back * (width - filled), style="bright_black")
        yield text


def _figures(kind: Kind, sample: dict[str, object]) -> Text:
    """A live sample as the bar's last line: IOPS, MB/s, mean and p99 latency (a memory sample: its latency
    and bandwidth)."""
    if kind != Kind.STORAGE:
        return Text(metrics_line(kind, sample))

    def number(key: str) -> float | None:
        value = sample.get(key)
        if isinstance(value, bool) or not isinstance(value, (int, float)) or value != value:
            return None
        return float(value)

    text = Text()
    parts: list[tuple[str, str]] = [(format_count(number("iops") or 0), " IOPS"),
                                    (f"{(number('bw_bytes') or 0) / 1e6:.1f}", " MB/s")]
    mean, p99 = number("lat_mean_ns"), number("lat_p99_ns")
    if mean:
        parts.append((f"mean {mean / 1e3:.1f}", " µs"))
    if p99:
        parts.append((f"p99 {p99 / 1e3:.1f}", " µs"))
    for i, (value, unit) in enumerate(parts):
        if i:
            text.append(" · ", style="dim")
        text.append(value, style="bold")
        text.append(unit)
    steady = steady_live(sample.get("steady"))
    if steady:
        text.append(steady, style="dim")
    return text


class _Frame:
    """What the live display shows, drawn from the printer's state at each refresh::

        ━━━━━━━━━━━━━━━━━━━━━━━╸──────────────────  3/8 points  41%  elapsed 23s  ETA 31s
        ▸ randread 4K QD32 T1  2s of ~6s
          45.1k IOPS · 184.7 MB/s · mean 708.2 µs · p99 1210.5 µs

    and once the run has ended (or stopped) only its first line, which stays on the terminal."""

    def __init__(self, printer: RichProgress) -> None:
        self.printer = printer

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        p = self.printer
        fraction = 1.0 if p.finished and p.done >= p.total else p.fraction()
        elapsed = format_duration(time.monotonic() - p.run_started)
        if p.final:  # how the run ended: nothing to add when it completed
            when = f"elapsed {elapsed}" + ("" if p.status == "complete" else f"  {p.status}")
        else:
            when = f"elapsed {elapsed}  ETA {format_duration(p.eta_s())}"
        style = "magenta" if not p.final else ("green" if p.status == "complete" else "yellow")
        row = Table.grid(padding=(0, 1), expand=True)
        row.add_column(ratio=1, min_width=4)
        row.add_column(no_wrap=True, justify="right")
        row.add_column(no_wrap=True, justify="right")
        row.add_column(no_wrap=True)
        row.add_row(_Bar(fraction, style), f"{p.done}/{p.total} points", f"{fraction * 100:.0f}%", when)
        yield row
        if p.final or not p.label:
            return
        # the last lines leave two columns free: a ^C echoed after them does not wrap the terminal's line
        width = max(1, options.max_width - 3)
        head = Text("▸ ", style="bold")
        head.append(p.label, style="bold")
        if p.point_estimate:
            head.append(f"  {format_duration(p.elapsed_s())} of ~{format_duration(p.point_estimate)}", style="dim")
        head.truncate(width, overflow="ellipsis")
        yield head
        figures = (Text("waiting for the first second's figures …", style="dim") if p.sample is None
                   else _figures(p.kind, p.sample))
        line = Text("  ") + figures
        line.truncate(width, overflow="ellipsis")
        yield line


class RichProgress(ProgressPrinter):
    """``ProgressPrinter`` on a terminal: the same lines (every completed point, failure, skip) printed above
    a live display of the run (``_Frame``), redrawn REFRESH_PER_SECOND times a second.  ``close()`` (and the
    run's end) leaves the display's first line on the terminal and the cursor below it, with ^C held back
    until it is done, so an interrupted run leaves no half-drawn bar."""

    def __init__(self, kind: Kind, stream: TextIO) -> None:
        super().__init__(kind, stream)
        self.console = terminal_console(stream)
        self.run_started = time.monotonic()
        self.final = False  # the display has stopped (or never will start)
        self.status = "stopped"  # RunFinished's status once it came
        self._display: Live | None = None

    def _show(self) -> None:
        if self._display is None and not self.final:
            self._display = Live(_Frame(self), console=self.console, refresh_per_second=REFRESH_PER_SECOND,
                                 transient=False, redirect_stdout=False, redirect_stderr=False)
            self._display.start(refresh=True)

    def _print(self, line: str) -> None:
        self._show()
        # above the live display; the terminal wraps it
        self.console.print(Text(clean_text(line, newlines=True)), soft_wrap=True)

    def _point_started(self, line: str) -> None:
        pass  # the live display names the point

    def width(self) -> int | None:
        return self.console.width

    def _bar(self) -> None:
        self._show()

    def handle(self, event: object) -> None:
        from app.engine import sweep

        if isinstance(event, sweep.RunStarted):
            self.run_started = time.monotonic()
        super().handle(event)
        if isinstance(event, sweep.RunFinished):
            self.status = str(event.status)
            self._stop()

    def _stop(self) -> None:
        if self._display is None or self.final:
            self.final = True
            return
        self.final = True
        try:
            held = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
        except (OSError, ValueError):
            held = None
        try:
            self._display.stop()  # draws the last frame (one line) and moves below it
        finally:
            if held is not None:  # a ^C that came meanwhile is delivered now
                signal.pthread_sigmask(signal.SIG_SETMASK, held)

    def close(self) -> None:
        self._stop()
        super().close()


# --- tables ---------------------------------------------------------------------------------------------------


def _table(headers: Sequence[str], right: Iterable[int] = (), no_wrap: Iterable[int] = ()) -> Table:
    right, no_wrap = set(right), set(no_wrap)
    table = Table(box=box.SIMPLE_HEAD, pad_edge=False, collapse_padding=True, header_style="bold", show_edge=False)
    for i, h in enumerate(headers):
        table.add_column(Text(h), justify="right" if i in right else "left", no_wrap=i in no_wrap)
    return table


def print_presets(summaries: Sequence[Mapping[str, object]], stream: TextIO) -> None:
    """``profiler-tui presets`` on a terminal: the presets as a table (their descriptions wrap)."""
    table = _table(["preset", "kind", "points", "est.", "writes", "description"], right=(2, 3), no_wrap=(0, 2, 3))
    for s in summaries:
        table.add_row(Text(str(s["name"]), style="bold"), Text(str(s["kind"])), Text(str(s["points"])),
                      Text(str(s["estimated"])), Text("yes", style="yellow") if s["writes"] else Text("no"),
                      Text(str(s["description"])))
    terminal_console(stream).print(table)


VERDICT_STYLE = {"ok": "green", "refused": "red"}


def _verdict(text: str, verdict: str) -> Text:
    return Text(text, style=VERDICT_STYLE.get(verdict, "yellow"))


def print_devices(devs: list[dict[str, object]], stream: TextIO) -> None:
    """``profiler-tui devices`` on a terminal: the rows of ``app.host.devices.render_devices_table`` as a table,
    each verdict coloured, and the reasons under it, device by device."""
    from app.host.devices import DEVICE_COLUMNS, device_rows

    console = terminal_console(stream)
    table = _table(list(DEVICE_COLUMNS), right=(1,), no_wrap=(0, 1))
    reasons: list[tuple[str, list[str]]] = []
    for r in device_rows(devs):
        table.add_row(Text("  " * r.depth + r.name, style="bold" if r.depth == 0 else ""), r.size, Text(r.type),
                      Text(r.transport), r.rota, Text(r.fs), Text(r.mounted), _verdict(r.write, r.write_verdict),
                      _verdict(r.read, r.read_verdict))
        if r.reasons:
            reasons.append((r.name, r.reasons))
    if not table.rows:
        console.print("(no block devices found)")
        return
    console.print(table)
    for name, why in reasons:
        console.print(Text(name, style="bold"))
        for line in why:
            console.print(Padding(Text(line), (0, 0, 0, 4), expand=False))


def print_audit(found: Audit, stream: TextIO) -> None:
    """``profiler-tui audit`` on a terminal: every item with its value, what a benchmark wants and why; a warning
    in yellow, an item not available here dimmed."""
    from app.host.audit import TABLE_HEADERS, WARNINGS, heading, shown_value

    console = terminal_console(stream)
    for line in heading(found):
        console.print(Text(line))
    table = _table(list(TABLE_HEADERS))
    for i in found.items:
        style = {"warn": "yellow", "unavailable": "dim", "ok": "green"}.get(i.status, "")
        table.add_row(Text(i.label, style="bold"), Text(shown_value(i), style=style), Text(i.want), Text(i.why))
    console.print(table)
    for i in found.warnings:
        console.print(Text(f"warning {i.warning}: {WARNINGS.get(i.warning or '', '')}", style="yellow"))


# --- compare: its markdown drawn as tables --------------------------------------------------------------------


BOLD = re.compile(r"\*\*(.+?)\*\*")


def _prose(line: str) -> Text:
    """A markdown line of compare's text: ``**bold**`` is drawn bold, everything else as it is."""
    text = Text()
    at = 0
    for m in BOLD.finditer(line):
        text.append(line[at:m.start()])
        text.append(m.group(1), style="bold")
        at = m.end()
    text.append(line[at:])
    return text


def _markdown_table(console: Console, read: ReadTable) -> list[RenderableType]:
    """A markdown table (as app.core.textable.markdown_table writes it) laid out by the core's table for the terminal's
    width (app.core.textable.table_lines: headers and text wrap, the verdict and method columns move under their rows,
    figures are never cut), its headers bold."""
    style = {"head": "bold", "rule": "", "row": "", "note": "dim"}
    return [Text(line.text, style=style[line.role])
            for line in table_lines(read.header, read.rows, read.right, width=console.width, rule="─")]


def print_markdown(text: str, stream: TextIO) -> None:
    """``compare`` on a terminal: its markdown with the headings bold and the tables drawn as tables
    (the file ``--out`` writes keeps the markdown)."""
    console = terminal_console(stream)
    parts: list[RenderableType] = []
    for line in read_markdown(text):
        if isinstance(line, ReadTable):
            parts.extend(_markdown_table(console, line))
        elif line.startswith("# "):
            parts.append(Text(line[2:], style="bold underline"))
        elif line.startswith("## "):
            parts.append(Text(line[3:], style="bold"))
        else:
            parts.append(_prose(line))
    console.print(Group(*parts))
