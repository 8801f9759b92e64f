"""Plain-text tables: for the terminal and the markdown of report.md and compare (the headless
core uses no UI library).

The markdown tables are this module's rather than pandas' ``DataFrame.to_markdown``: that needs
tabulate, pads headers and marks left-aligned columns (``:---``) differently (report.md's bytes
would change) and is about ten times slower (1,008 rows: ~100 ms against ~10 ms); docs/report.md.

A markdown table's cell is text unless it is :class:`app.core.sanitize.Markup` (the tool's own markup, or foreign text
already escaped): every other cell, header cells included, is escaped and cut to
:data:`app.core.sanitize.FOREIGN_LIMIT` characters, so no value — whatever field it comes from — adds a column, a
link or a heading.  Every cell is bounded, and so is the padding: a column is padded to its widest cell only when
that adds no more than the column's own text (or :data:`PAD_BUDGET`), so one long cell cannot make every row of
its table as long.
"""

from __future__ import annotations

import functools
import os
import re
import textwrap
from dataclasses import dataclass
from typing import Any, Collection, Iterable, Mapping, Sequence

from app.core import settings
from app.core.sanitize import FOREIGN_LIMIT, Markup, md_text

MARKUP_LIMIT = 4 * FOREIGN_LIMIT  # a cell of the tool's markup: its foreign parts are bounded, this bounds them all
PAD_BUDGET = 16 << 10  # characters of padding a column may always add (a 15-row table of 1,000-character cells)


def format_table(headers: Sequence[str], rows: Sequence[Sequence[Any]], right: Sequence[int] = (),
                 width: int | None = None, spill: Sequence[int] | None = None, bare: Collection[int] = ()) -> str:
    """A plain-text table (:func:`table_lines`), its lines joined."""
    return "\n".join(line.text for line in table_lines(headers, rows, right, width, spill, bare))


# --- a table that fits a width -----------------------------------------------------------------------------------

TEXT_MIN = 12  # a text column wraps (at words) down to this width at least, or to its longest word
NOTE = "  "  # the indent of a row's note line (its spilled cells) and of a card's figures


@dataclass(frozen=True)
class TableLine:
    """One line of a laid-out table: ``role`` "head" (a header line), "rule", "row" (a row's first line or
    a wrapped cell's next one) or "note" (a row's cells that moved under it)."""

    text: str
    role: str


def _wrap(text: str, width: int) -> list[str]:
    return list(_wrapped(text, max(1, width)))


@functools.lru_cache(maxsize=8192)
def _wrapped(text: str, width: int) -> tuple[str, ...]:
    """A fitting table tries many widths of the same cells (each page of columns, each narrower width): each
    cell's wrapping at a width is worked out once."""
    return tuple(textwrap.wrap(text, width, break_on_hyphens=False) or [""])


def _header_least(header: str) -> int:
    """The narrowest a column can be for its header to take at most two lines (never cutting a word)."""
    longest = max((len(w) for w in header.split()), default=0)
    for w in range(max(1, longest), len(header) + 1):
        if len(_wrap(header, w)) <= 2:
            return w
    return len(header)


def table_lines(headers: Sequence[str], rows: Sequence[Sequence[Any]], right: Sequence[int] | Collection[int] = (),
                width: int | None = None, spill: Sequence[int] | None = None, bare: Collection[int] = (),
                rule: str = "-") -> list[TableLine]:
    """A table laid out to fit ``width`` columns (None: no limit, every row on one line as it always was).

    Too wide, it first wraps headers (to two lines at most) and text (at words, down to TEXT_MIN or the longest
    word; a right-aligned column's figures are never wrapped nor cut), the first column last; then moves the
    ``spill`` columns, in that order, under their rows: one note line per row, ``Header: value`` (``bare``
    columns: the value alone) joined by `` · ``, wrapped; by default the text columns after the last
    right-aligned one, the last first.  When even that does not fit, each row becomes a card: its first cell on
    a line, then ``header value`` for each other cell."""
    align = set(right)
    n = len(headers)
    cells = [[str(h) for h in headers]] + [["" if c is None else str(c) for c in row[:n]] + [""] * (n - len(row))
                                           for row in rows]
    natural = [max(len(r[i]) for r in cells) for i in range(n)]
    if width is None or sum(natural) + 2 * (n - 1) <= width:
        return _lay(cells, natural, list(range(n)), align, [], bare, rule, None)
    if spill is None:
        last = max(align, default=-1)
        spill = [i for i in range(n - 1, max(last, 0), -1) if i not in align]
    pending = [i for i in spill if 0 < i < n]
    shown: list[int] = list(range(n))
    moved: list[int] = []
    while True:  # the first column wraps only when no other column is left to move
        widths = _shrink(cells, natural, shown, align, width, whole={0, *pending} if pending else set(pending))
        if widths is not None:
            return _lay(cells, widths, shown, align, moved, bare, rule, width)
        if not pending:
            return _cards(cells, bare, width)
        moved.append(pending.pop(0))
        shown.remove(moved[-1])


def _shrink(cells: list[list[str]], natural: list[int], shown: list[int], align: set[int],
            width: int, whole: Collection[int]) -> dict[int, int] | None:
    """The ``shown`` columns' widths within ``width``: a character at a time from the column with the most room
    above its least (the first column only when no other has room); None when they cannot fit.  The cells of a
    ``whole`` column are not wrapped (its header may be)."""
    least: dict[int, int] = {}
    for i in shown:
        values = [r[i] for r in cells[1:]]
        if i in align or i in whole:
            least[i] = max([len(v) for v in values] + [_header_least(cells[0][i])])
        else:
            longest = max((len(w) for v in values for w in v.split()), default=0)
            least[i] = max(_header_least(cells[0][i]), min(natural[i], max(longest, TEXT_MIN)))
    have = {i: natural[i] for i in shown}
    excess = sum(have.values()) + 2 * (len(shown) - 1) - width
    if sum(least.values()) + 2 * (len(shown) - 1) > width:
        return None
    def needed(i: int, w: int) -> int:
        """The width the column's lines take when wrapped to ``w``; a column of whole cells goes straight to its
        least (its header in two even lines, "B − A" over "(95 %)", never "B − A (95" over "%)")."""
        if i in align or i in whole:
            return least[i]
        return max([len(line) for t in [r[i] for r in cells] for line in _wrap(t, w)] + [least[i]])

    while excess > 0:
        roomy = [i for i in shown if i != 0 and have[i] > least[i]] or [0]
        i = max(roomy, key=lambda c: (have[c] - least[c], c))
        narrower = needed(i, have[i] - 1)
        excess -= have[i] - narrower
        have[i] = narrower
    return have


def _lay(cells: list[list[str]], widths: Sequence[int] | Mapping[int, int], shown: list[int], align: set[int],
         moved: list[int], bare: Collection[int], rule: str, width: int | None) -> list[TableLine]:
    def block(row: list[str], head: bool) -> list[str]:
        parts = {i: (_wrap(row[i], widths[i]) if len(row[i]) > widths[i] else [row[i]]) for i in shown}
        height = max(len(p) for p in parts.values())
        if head:  # a header's lines stand on the rule
            parts = {i: [""] * (height - len(p)) + p for i, p in parts.items()}
        out = []
        for k in range(height):
            out.append("  ".join((p[k] if k < len(p) else "").rjust(widths[i]) if i in align
                                 else (p[k] if k < len(p) else "").ljust(widths[i])
                                 for i, p in parts.items()).rstrip())
        return out

    lines = [TableLine(t, "head") for t in block(cells[0], True)]
    lines.append(TableLine("  ".join(rule * widths[i] for i in shown), "rule"))
    for row in cells[1:]:
        lines += [TableLine(t, "row") for t in block(row, False)]
        note = " · ".join(row[i] if i in bare else f"{cells[0][i]}: {row[i]}" for i in sorted(moved) if row[i])
        if note:
            lines += [TableLine(t, "note") for t in textwrap.wrap(
                note, max(8, (width or len(note) + 4)), initial_indent=NOTE, subsequent_indent=NOTE * 2,
                break_on_hyphens=False)]
    return lines


def card_lines(headers: Sequence[str], rows: Sequence[Sequence[str]], width: int) -> list[TableLine]:
    """Each row as a card (as :func:`table_lines` lays a table too wide for its width): its first cell on a line,
    then ``header value`` for each other cell, wrapped to ``width``."""
    return _cards([list(headers)] + [list(r) for r in rows], (), width)


def wrap_line(text: str, width: int) -> list[str]:
    """``text`` wrapped at words to ``width`` (a word wider than it on a line of its own)."""
    return _wrap(text, width)


def _cards(cells: list[list[str]], bare: Collection[int], width: int) -> list[TableLine]:
    """Each row as a card: its first cell, then the other cells as ``header value`` (an item is broken only when
    it is wider than ``width`` on its own)."""
    lines: list[TableLine] = []
    head = cells[0]
    for row in cells[1:]:
        lines += [TableLine(t, "row") for t in _wrap(row[0], width)]
        items = [row[i] if i in bare else f"{head[i]} {row[i]}" for i in range(1, len(head)) if row[i]]
        items = [t.replace(" ", "\x00") if len(t) + len(NOTE) < width else t for t in items]
        lines += [TableLine(t.replace("\x00", " "), "note") for t in textwrap.wrap(
            " · ".join(items), max(8, width), initial_indent=NOTE, subsequent_indent=NOTE, break_on_hyphens=False)]
    return lines


# a space before one of these (or before a figure) never ends a line: a number stays with its unit and its ±
UNITS = frozenset({"µs", "ns", "ms", "s", "%", "×", "IOPS", "MB/s", "MiB/s", "GB/s", "GiB/s", "KiB", "MiB", "GiB",
                   "±", "B", "I/Os"})
_FIGURE = re.compile(r"^[-+±~≤≥<>]?[0-9]")


def fit_line(text: str, width: int | None, indent: str = "    ") -> str:
    """A line of text within ``width`` columns (None: as it is): broken at spaces, never between a figure and the
    word before it nor its unit, nor after "lat", a ± or a flag's mark; the following lines indented by
    ``indent``."""
    if width is None or len(text) <= width:
        return text
    out = textwrap.wrap(glue(text), max(len(indent) + 8, width), subsequent_indent=indent, break_on_hyphens=False)
    return "\n".join(line.replace(GLUE, " ") for line in out)


GLUE = "\x00"  # a space no line may end at (:func:`glue`)


def glue(text: str) -> str:
    """``text`` with :data:`GLUE` for each space a line must not end at: between a figure and the word before it
    or its unit, after "lat", a ± or a flag's mark (put the spaces back after wrapping)."""
    glued: list[str] = []
    for w in text.split(" "):
        unit = w in UNITS or w.rstrip(")") in UNITS  # "IOPS" and "IOPS)" of "(20.0k ± 2.0k IOPS)"
        if glued and (unit or _FIGURE.match(w) or glued[-1].split(GLUE)[-1] in ("±", "!", "⚑", "lat") or not w):
            glued[-1] += GLUE + w
        else:
            glued.append(w)
    return " ".join(glued)


def stream_width(stream: object) -> int | None:
    """How wide the lines written to ``stream`` may be: on a terminal its width (COLUMNS, when set to a whole number
    above 20, before the terminal's own, as rich and the shell read it); None for a pipe or a file (no limit: one
    line per point, as scripts read them)."""
    try:
        fd = stream.fileno()  # type: ignore[attr-defined]
        if not os.isatty(fd):
            return None
        size = os.get_terminal_size(fd).columns
    except (AttributeError, ValueError, OSError):
        return None
    columns = settings.columns()
    return columns if columns is not None else max(21, size)


def md_cell(value: Any) -> str:
    """One cell of a markdown table: Markup as it is (bounded), a number as it prints, None as nothing, any other
    value as its text escaped (:func:`app.core.sanitize.md_text`)."""
    if isinstance(value, Markup):
        return value if len(value) <= MARKUP_LIMIT else value[: MARKUP_LIMIT - 1] + "…"
    if value is None:
        return ""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return str(value)
    return md_text(value, cell=True)


def _width(column: Sequence[str]) -> int:
    """How wide a column is padded: to its widest cell (at least 3) when the padding costs no more than the
    column's text or PAD_BUDGET, else not at all."""
    widest = max(3, max(len(c) for c in column))
    padding = sum(widest - len(c) for c in column)
    return widest if padding <= max(PAD_BUDGET, sum(len(c) for c in column)) else 3


def markdown_table(headers: Sequence[Any], rows: Sequence[Sequence[Any]], right: Iterable[int] | None = None) -> str:
    """A GitHub-flavoured markdown table, columns padded to their widest cell (at least 3, see :func:`_width`);
    ``right``: the right-aligned columns (default every column but the first).  Cells as :func:`md_cell` makes
    them; a row has as many cells as the header (missing ones empty, extra ones dropped)."""
    align = set(range(1, len(headers)) if right is None else right)
    n = len(headers)
    cells = [[md_cell(h) for h in headers]] + [[md_cell(c) for c in r[:n]] + [""] * (n - len(r)) for r in rows]
    widths = [_width([r[i] for r in cells]) for i in range(n)]

    def line(r: list[str]) -> str:
        return "| " + " | ".join(c.rjust(w) if i in align else c.ljust(w)
                                 for i, (c, w) in enumerate(zip(r, widths))) + " |"

    sep = "|" + "|".join(("-" * (w + 1) + ":") if i in align else ("-" * (w + 2)) for i, w in enumerate(widths)) + "|"
    return "\n".join([line(cells[0]), sep] + [line(r) for r in cells[1:]])


def markdown_figure(title: str, caption: str, file: str) -> list[str]:
    """A figure as the report shows it: its title and caption (text: escaped, as a cell is), then the image
    ``file`` (plots/NAME.svg, the tool's own name)."""
    alt = md_text(title, cell=True)
    return [f"**Figure: {alt}.** {md_text(caption, MARKUP_LIMIT, cell=True)}", "", f"![{alt}]({file})", ""]


@dataclass(frozen=True)
class ReadTable:
    """A markdown table read back: its header, the rows (every one as wide as the header) and the columns the
    separator line marks right-aligned (``---:``)."""

    header: list[str]
    rows: list[list[str]]
    right: frozenset[int]


_TOKEN = re.compile(r"\\.|\||[^|\\]+|\\")  # an escaped character, a column's '|', a run of other text
_ESCAPE = re.compile(r"\\([!-/:-@\[-`{-~])")  # Markdown's backslash escapes of ASCII punctuation


def markdown_cells(line: str) -> list[str]:
    """A table line's cells, as Markdown shows their text: split at each '|' that is not escaped, escapes undone."""
    tokens = _TOKEN.findall(line.strip())
    tokens = tokens[1:] if tokens[:1] == ["|"] else tokens  # the leading and the trailing '|'
    tokens = tokens[:-1] if tokens[-1:] == ["|"] else tokens
    cells, cell = [], ""
    for token in tokens:
        if token == "|":
            cells.append(cell)
            cell = ""
        else:
            cell += token
    return [_ESCAPE.sub(r"\1", c.strip()) for c in [*cells, cell]]


def _read_table(lines: list[str]) -> ReadTable | None:
    if len(lines) < 2:
        return None
    header, align, rows = markdown_cells(lines[0]), markdown_cells(lines[1]), [markdown_cells(x) for x in lines[2:]]
    if not header or len(align) != len(header) or any(len(r) != len(header) for r in rows):
        return None
    return ReadTable(header, rows, frozenset(i for i, a in enumerate(align) if a.endswith(":")))


def read_markdown(text: str) -> list[str | ReadTable]:
    """The lines of a markdown text (as report.md and compare write it), each run of table lines (``| … |``)
    read into a :class:`ReadTable`; a run that does not read as one table stays lines."""
    out: list[str | ReadTable] = []
    table: list[str] = []

    def flush() -> None:
        if table:
            read = _read_table(table)
            out.extend([read] if read is not None else table)
            table.clear()

    for line in text.splitlines():
        if line.lstrip().startswith("|"):
            table.append(line)
            continue
        flush()
        out.append(line)
    flush()
    return out

