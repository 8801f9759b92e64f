"""Plain-text tables: for the terminal and the markdown of report.md and compare (the headless
core uses no UI library).

The markdown tables are this module's rather than pandas' ``DataFrame.to_markdown``: that needs
tabulate, pads headers and marks left-aligned columns (``:---``) differently (report.md's bytes
would change) and is about ten times slower (1,008 rows: ~100 ms against ~10 ms); docs/report.md.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable, Sequence


def format_table(headers: Sequence[str], rows: Sequence[Sequence[Any]], right: Sequence[int] = ()) -> str:
    cells = [[str(h) for h in headers]] + [["" if c is None else str(c) for c in row] for row in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(headers))]

    def line(row: list[str]) -> str:
        return "  ".join(c.rjust(w) if i in right else c.ljust(w) for i, (c, w) in enumerate(zip(row, widths))).rstrip()

    out = [line(cells[0]), "  ".join("-" * w for w in widths)]
    out += [line(r) for r in cells[1:]]
    return "\n".join(out)


def markdown_table(headers: Sequence[str], rows: Sequence[Sequence[Any]], right: Iterable[int] | None = None) -> str:
    """A GitHub-flavoured markdown table, columns padded to their widest cell (at least 3);
    ``right``: the right-aligned columns (default every column but the first)."""
    align = set(range(1, len(headers)) if right is None else right)
    cells = [[str(h) for h in headers]] + [["" if c is None else str(c) for c in r] for r in rows]
    widths = [max(3, max(len(r[i]) for r in cells)) for i in range(len(headers))]

    def line(r: list[str]) -> str:
        return "| " + " | ".join(c.rjust(w) if i in align else c.ljust(w)
                                 for i, (c, w) in enumerate(zip(r, widths))) + " |"

    sep = "|" + "|".join(("-" * (w + 1) + ":") if i in align else ("-" * (w + 2)) for i, w in enumerate(widths)) + "|"
    return "\n".join([line(cells[0]), sep] + [line(r) for r in cells[1:]])


@dataclass(frozen=True)
class ReadTable:
    """A markdown table read back: its header, the rows (every one as wide as the header) and the columns the
    separator line marks right-aligned (``---:``)."""

    header: list[str]
    rows: list[list[str]]
    right: frozenset[int]


def _cells(line: str) -> list[str]:
    inner = line.strip()
    inner = inner[1:] if inner.startswith("|") else inner
    inner = inner[:-1] if inner.endswith("|") else inner
    return [c.strip() for c in inner.split("|")]


def _read_table(lines: list[str]) -> ReadTable | None:
    if len(lines) < 2:
        return None
    header, align, rows = _cells(lines[0]), _cells(lines[1]), [_cells(line) for line in lines[2:]]
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
