"""Plain-text tables: for the terminal and the markdown of report.md and compare (the headless
core uses no UI library).

The markdown tables are this module's rather than pandas' ``DataFrame.to_markdown``: that needs
tabulate, pads headers and marks left-aligned columns (``:---``) differently (report.md's bytes
would change) and is about ten times slower (1,008 rows: ~100 ms against ~10 ms); docs/report.md.
"""

from __future__ import annotations

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
        return "| " + " | ".join(c.rjust(w) if i in align else c.ljust(w) for i, (c, w) in enumerate(zip(r, widths))) + " |"

    sep = "|" + "|".join(("-" * (w + 1) + ":") if i in align else ("-" * (w + 2)) for i, w in enumerate(widths)) + "|"
    return "\n".join([line(cells[0]), sep] + [line(r) for r in cells[1:]])
