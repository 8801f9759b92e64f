"""The report view's tables, laid out to fit the width they are given: never a cut number, never a cut label.

Textual's own Markdown table shrinks every column to the width and ends what no longer fits with "…" — at 80
columns report.md's storage table read ``Rand… │ 4 │ 1… │ 78.8 │ 42…``.  Here a table is laid out by the same
rules as the CLI's tables (:func:`app.core.textable.table_lines`: headers wrap at words, text wraps at words, a
right-aligned figure is never wrapped nor cut), and when it is still too wide:

- **figures wrapped in their cells** at the spaces between their parts (``995.4 ± 5.4`` over ``(243.0k ± 1.3k
  IOPS)`` over ``⚑ not-on-device``: never inside a figure, nor between it and its unit or its ±), when the whole
  table then fits with no row over three lines (the Summary's CrystalDiskMark box at 80 columns);
- **columns a page at a time**: the columns that tell rows apart (the text columns, and a test's parameters
  such as ``IO Depth`` and ``Jobs`` wherever they stand) stay on the left of every page; the figures follow,
  as many whole columns as fit, fewer rather than a label over two lines; a line above the table says which
  page of columns is shown, and ``←``/``→`` show the others on the tables in view;
- **a card per row** when the table has at most three figures (reading them under their row beats paging
  between them) or when even one figure column does not fit beside the row's labels.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from app.core.textable import GLUE, TableLine, card_lines, glue, table_lines, wrap_line

# a figure column with one of these headers says which test a row is: it stays on every page, beside the labels
PARAMETERS = frozenset({"IO Depth", "Jobs", "QD", "Threads", "Block Size", "Stride (B)", "Buffer", "Inject",
                        "Delay", "Mode", "Engine", "Pages", "Traffic", "Node", "CPU node", "Memory node"})
BOX_LINES = 3  # a table whose figures wrap keeps its rows when each takes at most this many lines (on average)
CARDS_UP_TO = 3  # a table of at most this many figure columns becomes cards rather than pages
CAPTION = "Columns, page {page} of {pages} · ←/→ the others"
STYLES = {"head": "bold", "rule": "dim", "row": "", "note": ""}


@dataclass(frozen=True)
class Layout:
    lines: list[TableLine]
    caption: str  # what the page shows ('' when the table is whole)
    pages: int


def keys_of(header: Sequence[str], right: frozenset[int]) -> list[int]:
    """The columns that tell rows apart: the text (left-aligned) columns and the test's parameters, in order;
    the first column when there is no other."""
    keys = [i for i, h in enumerate(header) if i not in right or h.split(" (")[0].strip() in PARAMETERS]
    return keys or [0]


def _fits(lines: list[TableLine], rows: int | None = None) -> bool:
    """A table (not cards: those start with a row) with no cells moved under their rows (and, given ``rows``, no
    row over more than one line)."""
    return (bool(lines) and lines[0].role == "head" and all(line.role != "note" for line in lines)
            and (rows is None or sum(line.role == "row" for line in lines) == rows))


def pages_of(header: Sequence[str], rows: Sequence[Sequence[str]], right: frozenset[int],
             width: int) -> list[list[int]]:
    """The figure columns of each page, whole columns as many as fit beside the keys, each row on one line when
    one figure column beside the keys allows it (fewer columns a page rather than labels over two lines); []
    when not even one fits (then: cards)."""
    keys = keys_of(header, right)
    rest = [i for i in range(len(header)) if i not in keys]
    flat = all(_fits(_lay(header, rows, right, keys + [i], width), len(rows)) for i in rest)
    rows_on = len(rows) if flat else None
    pages: list[list[int]] = []
    page: list[int] = []
    for i in rest:
        if _fits(_lay(header, rows, right, keys + page + [i], width), rows_on):
            page.append(i)
            continue
        if not page:
            return []
        pages.append(page)
        page = [i]
        if not _fits(_lay(header, rows, right, keys + page, width), rows_on):
            return []
    if page:
        pages.append(page)
    return pages


def _lay(header: Sequence[str], rows: Sequence[Sequence[str]], right: frozenset[int], columns: list[int],
         width: int) -> list[TableLine]:
    return table_lines([header[i] for i in columns], [[r[i] for i in columns] for r in rows],
                       right=[k for k, i in enumerate(columns) if i in right], width=width, spill=[], rule="─")


def _box(header: Sequence[str], rows: Sequence[Sequence[str]], right: frozenset[int],
         width: int) -> list[TableLine] | None:
    """The table whole with its figures of several words (``995.4 ± 5.4 (243.0k ± 1.3k IOPS) ⚑ not-on-device``)
    wrapped at the spaces between them — never inside a figure, nor between it and its unit or its ±; None when
    that does not fit either, or a row would take more than BOX_LINES lines."""
    glued = [[glue(c) for c in r] for r in rows]
    loose = frozenset(i for i in right if not any(" " in r[i] for r in glued))  # these stay whole
    if loose == right:
        return None  # no figure column to wrap: the whole table was tried already
    lines = _lay(header, glued, loose, list(range(len(header))), width)
    if not _fits(lines) or sum(line.role == "row" for line in lines) > BOX_LINES * len(rows):
        return None
    return [TableLine(line.text.replace(GLUE, " "), line.role) for line in lines]


def layout(header: Sequence[str], rows: Sequence[Sequence[str]], right: frozenset[int], width: int,
           page: int) -> Layout:
    """The table at ``width``: whole when it fits (headers and text wrapped at words), else page ``page`` (kept
    within the pages there are) of its figure columns beside its keys, else cards."""
    everything = list(range(len(header)))
    whole = _lay(header, rows, right, everything, width)
    if _fits(whole):
        return Layout(whole, "", 1)
    keys = keys_of(header, right)
    figures = len(header) - len(keys)
    boxed = _box(header, rows, right, width)
    if boxed is not None:
        return Layout(boxed, "", 1)
    pages = pages_of(header, rows, right, width) if figures > CARDS_UP_TO else []
    if not pages:  # each row a card: its labels on a line, then each figure with its header
        order = keys + [i for i in everything if i not in keys]
        label = [" · ".join(r[i] for i in keys if r[i]) for r in rows]
        cards = card_lines([" · ".join(header[i] for i in keys)] + [header[i] for i in order[len(keys):]],
                           [[label[n]] + [r[i] for i in order[len(keys):]] for n, r in enumerate(rows)], width)
        return Layout(cards, "", 1)
    page = max(0, min(page, len(pages) - 1))
    shown = pages[page]
    caption = CAPTION.format(page=page + 1, pages=len(pages))
    lines = _lay(header, rows, right, keys + shown, width)
    return Layout(lines, caption, len(pages))


class PagedTable:
    """One of the report's tables: its lines for a width (a few layouts kept), a caption on top when it shows a
    page of its columns, and the page shown (turned by ←/→)."""

    def __init__(self, header: list[str], rows: list[list[str]], right: frozenset[int]) -> None:
        self.header, self.rows, self.right = header, rows, right
        self.page = 0
        self._cache: dict[tuple[int, int], Layout] = {}

    def fresh(self) -> PagedTable:
        """The same table at its first page, sharing the layouts worked out so far."""
        other = PagedTable(self.header, self.rows, self.right)
        other._cache = self._cache
        return other

    def laid_out(self, width: int) -> Layout:
        key = (width, self.page)
        if key not in self._cache:
            if len(self._cache) > 8:
                self._cache.clear()
            self._cache[key] = layout(self.header, self.rows, self.right, max(8, width), self.page)
        return self._cache[key]

    def pages(self, width: int) -> int:
        return self.laid_out(width).pages

    def lines(self, width: int) -> list[tuple[str, str]]:
        """Each line's text and style (the caption's lines first, when a page of the columns is shown)."""
        shown = self.laid_out(width)
        caption = [(line, "italic") for line in wrap_line(shown.caption, width)] if shown.caption else []
        return caption + [(line.text, STYLES.get(line.role, "")) for line in shown.lines]

    def turn(self, step: int, width: int) -> bool:
        """Show the next (``step`` 1) or previous (-1) page of columns; False when there is none that way."""
        page = max(0, min(self.page + step, self.pages(width) - 1))
        if page == self.page:
            return False
        self.page = page
        return True
