"""Plain-text tables: for the terminal and the markdown of report.md and compare (the headless
core uses no UI library).

The markdown tables are this module's rather than pandas' ``DataFrame.to_markdown``: that needs
tabulate, pads headers and marks left-aligned columns (``:---``) differently (report.md's bytes
would change) and is about ten times slower (1,008 rows: ~100 ms against ~10 ms); docs/report.md.

A markdown table's cell is text unless it is :class:`app.sanitize.Markup` (the tool's own markup, or foreign text
already escaped): every other cell, header cells included, is escaped and cut to
:data:`app.sanitize.FOREIGN_LIMIT` characters, so no value — whatever field it comes from — adds a column, a
link or a heading.  Every cell is bounded, and so is the padding: a column is padded to its widest cell only when
that adds no more than the column's own text (or :data:`PAD_BUDGET`), so one long cell cannot make every row of
its table as long.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Iterable, Sequence

from app.sanitize import FOREIGN_LIMIT, Markup, md_text

MARKUP_LIMIT = 4 * FOREIGN_LIMIT  # a cell of the tool's markup: its foreign parts are bounded, this bounds them all
PAD_BUDGET = 16 << 10  # characters of padding a column may always add (a 15-row table of 1,000-character cells)


def format_table(headers: Sequence[str], rows: Sequence[Sequence[Any]], right: Sequence[int] = ()) -> str:
    cells = [[str(h) for h in headers]] + [["" if c is None else str(c) for c in row] for row in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(headers))]

    def line(row: list[str]) -> str:
        return "  ".join(c.rjust(w) if i in right else c.ljust(w) for i, (c, w) in enumerate(zip(row, widths))).rstrip()

    out = [line(cells[0]), "  ".join("-" * w for w in widths)]
    out += [line(r) for r in cells[1:]]
    return "\n".join(out)


def md_cell(value: Any) -> str:
    """One cell of a markdown table: Markup as it is (bounded), a number as it prints, None as nothing, any other
    value as its text escaped (:func:`app.sanitize.md_text`)."""
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

