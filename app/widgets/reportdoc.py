"""The report view's document: report.md drawn as lines by one widget, its contents a tree beside it.

Textual's Markdown widget makes a widget of every block, list item and table cell (hundreds for a report):
opening the view, showing the contents or resizing laid them all out again, seconds on a loaded two-core machine.
Here report.md is parsed once (:func:`parse_blocks`, in the loading thread, kept per report.md's identity) into
blocks — headings, paragraphs, list items, quotes, code and tables — and :class:`ReportDocument` lays them out as
lines for its width (tables by :mod:`app.widgets.fittable`: whole, wrapped, a page of columns, or cards) and draws
only the lines on screen.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

from markdown_it import MarkdownIt
from markdown_it.token import Token
from rich.console import Console
from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.geometry import Region, Size
from textual.reactive import reactive
from textual.scroll_view import ScrollView
from textual.strip import Strip
from textual.widgets import Tree

from app.store.results import file_stamp
from app.widgets.fittable import PagedTable

HEADING_STYLES = {1: "bold underline", 2: "bold underline", 3: "bold", 4: "bold italic"}
INLINE_STYLES = {"strong": "bold", "em": "italic", "s": "strike", "link": "underline"}
CODE_STYLE = "bold"
QUOTE_PREFIX = "▌ "
BULLET = "• "


@dataclass
class Block:
    """One block of the report: ``kind`` heading, paragraph, item (a list item's paragraph), quote, code, rule or
    table; ``indent`` the columns it stands in (lists nested), ``lead`` what stands before its first line (a bullet,
    a number, the quote's bar)."""

    kind: str
    text: Text
    level: int = 0  # a heading's level
    indent: int = 0
    lead: str = ""
    table: PagedTable | None = None


def _inline(token: Token) -> Text:
    """An inline token's children as styled text (bold, italic, code, links' text); breaks become spaces."""
    out = Text()
    styles: list[str] = []
    for child in token.children or []:
        kind = child.type
        if kind.endswith("_open") and kind[:-5] in INLINE_STYLES:
            styles.append(INLINE_STYLES[kind[:-5]])
        elif kind.endswith("_close") and kind[:-6] in INLINE_STYLES:
            if styles:
                styles.pop()
        elif kind == "code_inline":
            out.append(child.content, style=" ".join(styles + [CODE_STYLE]))
        elif kind in ("softbreak", "hardbreak"):
            out.append(" ")
        elif kind == "image":
            out.append(child.content or "image", style=" ".join(styles))
        elif kind in ("text", "html_inline"):
            out.append(child.content, style=" ".join(styles))
    return out


def _cells(tokens: list[Token], start: int) -> tuple[list[str], list[list[str]], frozenset[int], int]:
    """The table starting at ``tokens[start]`` (table_open): header, rows, right-aligned columns, and the index after
    its table_close."""
    header: list[str] = []
    rows: list[list[str]] = []
    right: set[int] = set()
    row: list[str] | None = None
    in_head = False
    i = start + 1
    while i < len(tokens) and tokens[i].type != "table_close":
        t = tokens[i]
        if t.type == "thead_open":
            in_head = True
        elif t.type == "thead_close":
            in_head = False
        elif t.type == "tr_open":
            row = []
        elif t.type == "tr_close" and row is not None:
            if in_head:
                header = row
            else:
                rows.append(row)
            row = None
        elif t.type in ("th_open", "td_open"):
            if t.type == "th_open" and "right" in str(t.attrGet("style") or ""):
                right.add(len(row or []))
        elif t.type == "inline" and row is not None:
            row.append(_inline(t).plain)
        i += 1
    rows = [(r + [""] * (len(header) - len(r)))[:len(header)] for r in rows]
    return header, rows, frozenset(right), i + 1


def parse_blocks(markdown: str) -> list[Block]:
    """report.md's blocks, in order (a thread may call this: nothing here touches the screen)."""
    tokens = MarkdownIt("commonmark").enable("table").parse(markdown)
    blocks: list[Block] = []
    lists: list[list[int]] = []  # per open list: [ordered (0/1), next number]
    quote = 0
    item_lead: str | None = None  # the lead of the list item whose first paragraph comes next
    i = 0
    while i < len(tokens):
        t = tokens[i]
        kind = t.type
        indent = 2 * max(0, len(lists) - 1) + (2 * quote)
        if kind == "heading_open":
            blocks.append(Block("heading", _inline(tokens[i + 1]), level=int(t.tag[1:])))
            i += 3
            continue
        if kind in ("bullet_list_open", "ordered_list_open"):
            lists.append([kind == "ordered_list_open", int(t.attrGet("start") or 1)])
        elif kind in ("bullet_list_close", "ordered_list_close"):
            if lists:
                lists.pop()
        elif kind == "list_item_open" and lists:
            ordered, number = lists[-1]
            item_lead = f"{number}. " if ordered else BULLET
            lists[-1][1] = number + 1
        elif kind == "blockquote_open":
            quote += 1
        elif kind == "blockquote_close":
            quote = max(0, quote - 1)
        elif kind == "inline":
            text = _inline(t)
            if lists:
                lead, item_lead = item_lead or "", None
                blocks.append(Block("item", text, indent=indent, lead=lead))
            elif quote:
                blocks.append(Block("quote", text, indent=2 * (quote - 1), lead=QUOTE_PREFIX))
            else:
                blocks.append(Block("paragraph", text))
        elif kind in ("fence", "code_block"):
            blocks.append(Block("code", Text(t.content.rstrip("\n"), style=CODE_STYLE), indent=indent + 2))
        elif kind == "hr":
            blocks.append(Block("rule", Text()))
        elif kind == "table_open":
            header, rows, right, i = _cells(tokens, i)
            if header:
                blocks.append(Block("table", Text(), table=PagedTable(header, rows, right)))
            continue
        i += 1
    return blocks


_CACHE: dict[tuple[str, int, int, int], list[Block]] = {}
_CACHE_LOCK = threading.Lock()


def blocks_of(path: Path, markdown: str) -> list[Block]:
    """:func:`parse_blocks` of ``markdown``, read from ``path`` (a report.md), kept while the file keeps its inode,
    size and modification time (a second opening of the view parses nothing).  Each caller gets the blocks' tables
    at their first page."""
    stamp = file_stamp(path)
    key = (str(path), *stamp) if stamp is not None else None
    with _CACHE_LOCK:
        cached = _CACHE.get(key) if key is not None else None
    if cached is None:
        cached = parse_blocks(markdown)
        if key is not None:
            with _CACHE_LOCK:
                if len(_CACHE) > 8:
                    _CACHE.clear()
                _CACHE[key] = cached
    return [Block(b.kind, b.text, b.level, b.indent, b.lead, b.table.fresh() if b.table else None) for b in cached]


class Laid:
    """The document at one width, laid out a block at a time: the lines so far, where each block laid starts, and
    each table's lines."""

    def __init__(self, width: int) -> None:
        self.width = width
        self.lines: list[Strip] = []
        self.starts: list[int] = []  # the first line of each block laid so far
        self.tables: list[tuple[PagedTable, int, int]] = []  # table, first line, line after its last
        self.previous = ""

    def done(self, blocks: Sequence[Block]) -> bool:
        return len(self.starts) >= len(blocks)

    def add(self, block: Block, console: Console) -> None:
        lines, width = self.lines, self.width
        # a blank line between blocks, none between the items of a list
        if lines and not (block.kind == "item" and self.previous == "item" and block.lead):
            lines.append(Strip.blank(width))
        self.starts.append(len(lines))
        self.previous = block.kind
        if block.kind == "table" and block.table is not None:
            first = len(lines)
            lines.extend(_strip(Text(text, style=style), width, console) for text, style in block.table.lines(width))
            self.tables.append((block.table, first, len(lines)))
        elif block.kind == "rule":
            lines.append(_strip(Text("─" * width, style="dim"), width, console))
        elif block.kind == "code":
            for raw in block.text.plain.split("\n"):
                lines.extend(_wrapped(Text(raw, style=CODE_STYLE), width, block.indent, "", console))
        elif block.kind == "heading":
            text = block.text.copy()
            text.stylize(HEADING_STYLES.get(block.level, "bold"))
            lines.extend(_wrapped(text, width, 0, "", console))
        else:
            text = block.text
            if block.kind == "quote":
                text = text.copy()
                text.stylize("italic")
            lines.extend(_wrapped(text, width, block.indent, block.lead, console, repeat_lead=block.kind == "quote"))

    def estimate(self, blocks: Sequence[Block]) -> int:
        """The lines the document will take: those laid, and a guess for the blocks still to lay."""
        rest = 0
        for block in blocks[len(self.starts):]:
            if block.table is not None:
                rest += len(block.table.rows) + 4
            else:
                rest += 1 + len(block.text.plain) // max(8, self.width - block.indent - len(block.lead)) + 1
        return len(self.lines) + rest


BATCH_S = 0.01  # the blocks beyond the screen are laid out this long at a time, keys answered in between
CONTENTS = 32  # the columns the contents take beside the report (Contents' CSS), at most 40 % of the width


class ReportDocument(ScrollView, can_focus=True):
    """The blocks drawn as lines for the widget's width; only the lines on screen are drawn.  A width is laid out
    as far as the screen shows at once, and the rest in short batches between keys (a long report, shown or
    resized, answers at once); each width laid out is kept, so showing and hiding the contents lays out nothing
    again."""

    BINDINGS = [
        Binding("space", "page_down", "Page Down", show=False),
        Binding("left", "columns(-1)", "Columns", show=False),
        Binding("right", "columns(1)", "Columns", show=False),
    ]

    DEFAULT_CSS = """
    ReportDocument { height: 1fr; width: 1fr; overflow-x: hidden; overflow-y: auto; padding: 0 1;
                     scrollbar-gutter: stable; }
    """

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.source = ""
        self.blocks: list[Block] = []
        self._laid: dict[int, Laid] = {}
        self._pending = False
        self.ahead = 0  # the columns the text gains (or loses) when the contents are hidden (shown): laid out ahead
        self._base = Style()

    def update(self, source: str, blocks: Sequence[Block]) -> None:
        """Show ``blocks`` (parsed from ``source``), from the top."""
        self.source = source
        self.blocks = list(blocks)
        self._laid.clear()
        self.scroll_to(0, 0, animate=False)
        self._relayout()

    @property
    def text_width(self) -> int:
        return max(8, self.scrollable_content_region.width or self.size.width or 80)

    def laid_out(self, lines: int = 0, block: int = -1) -> Laid:
        """The layout at the current width, laid at least as far as line ``lines`` and block ``block``."""
        width = self.text_width
        laid = self._laid.get(width)
        if laid is None:
            if len(self._laid) > 3:
                self._laid.clear()
            laid = self._laid[width] = Laid(width)
        if not laid.done(self.blocks) and (len(laid.lines) < lines or len(laid.starts) <= block):
            console = self.app.console
            while not laid.done(self.blocks) and (len(laid.lines) < lines or len(laid.starts) <= block):
                laid.add(self.blocks[len(laid.starts)], console)
        return laid

    def _relayout(self) -> None:
        """The screen's lines laid out now, the rest soon after (:meth:`_more`)."""
        height = self.scrollable_content_region.height or self.size.height or 24
        laid = self.laid_out(lines=int(self.scroll_offset.y) + 2 * height)
        self._sized(laid)
        self.refresh()
        if not laid.done(self.blocks) and not self._pending:
            self._pending = True
            self.set_timer(BATCH_S, self._more)

    def _sized(self, laid: Laid) -> None:
        height = len(laid.lines) if laid.done(self.blocks) else laid.estimate(self.blocks)
        size = Size(laid.width, height)
        if self.virtual_size != size:
            self.virtual_size = size

    def _more(self) -> None:
        """Lay out blocks for about BATCH_S, then let the keys in and go on."""
        import time

        self._pending = False
        if not self.is_attached:
            return
        laid = self.laid_out()
        console = self.app.console
        until = time.perf_counter() + BATCH_S
        while not laid.done(self.blocks) and time.perf_counter() < until:
            laid.add(self.blocks[len(laid.starts)], console)
        if not laid.done(self.blocks):
            self._pending = True
            self.set_timer(BATCH_S, self._more)
            return
        self._sized(laid)  # the scroll bar's length, exact (a guess until now: no redraw at each batch)
        self._ahead(console)

    def _ahead(self, console: Console) -> None:
        """The screen's first lines at the width the document gets when the contents are shown or hidden (``t``),
        laid out while no key waits, so that ``t`` finds them."""
        width = self.text_width + self.ahead if self.ahead else 0
        if width < 8 or width == self.text_width:
            return
        laid = self._laid.get(width)
        if laid is None:
            if len(self._laid) > 3:
                return
            laid = self._laid[width] = Laid(width)
        height = self.scrollable_content_region.height or 24
        if laid.done(self.blocks) or len(laid.lines) >= int(self.scroll_offset.y) + 2 * height:
            return
        laid.add(self.blocks[len(laid.starts)], console)
        self._pending = True
        self.set_timer(BATCH_S, self._more)

    def on_resize(self) -> None:
        self._relayout()

    def render_lines(self, crop: Region) -> list[Strip]:
        self._base = self.rich_style  # worked out once for the lines drawn, not once a line
        return super().render_lines(crop)

    def render_line(self, y: int) -> Strip:
        index = y + int(self.scroll_offset.y)
        laid = self.laid_out(lines=index + 1)
        width = self.scrollable_content_region.width
        base = self._base
        if 0 <= index < len(laid.lines):
            return laid.lines[index].apply_style(base).extend_cell_length(width, base).crop(0, width)
        return Strip.blank(width, base)

    def block_line(self, index: int) -> int:
        """The first line of block ``index`` (laid out as far as it, when it is not yet)."""
        laid = self.laid_out(block=index)
        self._sized(laid)
        return laid.starts[index] if 0 <= index < len(laid.starts) else 0

    def heading_line(self, title: str) -> int | None:
        """The line of the first heading whose text starts with ``title``."""
        for n, block in enumerate(self.blocks):
            if block.kind == "heading" and block.text.plain.startswith(title):
                return self.block_line(n)
        return None

    def scroll_to_heading(self, title: str) -> None:
        line = self.heading_line(title)
        if line is not None:
            self.scroll_to(y=line, animate=False)

    def action_scroll_end(self) -> None:
        laid = self.laid_out(block=len(self.blocks))
        self._sized(laid)
        super().action_scroll_end()

    def tables_in_view(self) -> list[PagedTable]:
        """The tables with a line on screen that show a page of their columns."""
        top = int(self.scroll_offset.y)
        bottom = top + self.scrollable_content_region.height
        laid = self.laid_out(lines=bottom)
        return [table for table, first, end in laid.tables
                if table.pages(laid.width) > 1 and first < bottom and end > top]

    def turn_tables(self, step: int) -> bool:
        """←/→: the other page of columns of each table in view; True when one turned (the document is laid out
        again from that table on)."""
        laid = self.laid_out()
        turned = [table for table in self.tables_in_view() if table.turn(step, laid.width)]
        if turned:
            self._laid.clear()
            self._relayout()
        return bool(turned)

    def action_columns(self, step: int) -> None:
        self.turn_tables(step)


def _strip(text: Text, width: int, console: Console) -> Strip:
    return Strip(list(text.render(console, end=""))).crop(0, width)


def _wrapped(text: Text, width: int, indent: int, lead: str, console: Console,
             repeat_lead: bool = False) -> list[Strip]:
    """``text`` wrapped at words to ``width`` after ``indent`` columns and the ``lead`` (a bullet: the lines after
    the first stand under the text, or start with the lead again when ``repeat_lead``)."""
    room = max(4, width - indent - len(lead))
    wrapped = text.wrap(console, room, overflow="fold") if text.plain else [Text()]
    out = []
    for n, line in enumerate(wrapped):
        line.rstrip_end(room)
        head = lead if n == 0 or repeat_lead else " " * len(lead)
        segments = [Segment(" " * indent + head, Style(dim=True) if repeat_lead else None)] if indent or head else []
        segments += [s for s in line.render(console, end="") if s.text]
        out.append(Strip(segments).crop(0, width))
    return out


class Contents(Vertical):
    """The report's headings as a tree; choosing one scrolls the document to it."""

    DEFAULT_CSS = """
    Contents { width: 32; max-width: 40%; height: 1fr; background: $panel; }
    Contents > Tree { padding: 0 1; height: 1fr; background: $panel; }
    """

    def compose(self) -> ComposeResult:
        tree: Tree[int] = Tree("Contents")
        tree.show_root = False
        yield tree

    def fill(self, blocks: Sequence[Block]) -> None:
        tree = self.query_one(Tree)
        tree.clear()
        parents: list[tuple[int, Any]] = [(0, tree.root)]
        for n, block in enumerate(blocks):
            if block.kind != "heading":
                continue
            while len(parents) > 1 and parents[-1][0] >= block.level:
                parents.pop()
            node = parents[-1][1].add(block.text.plain, data=n, expand=True)
            parents.append((block.level, node))
        nodes = list(tree.root.children)
        while nodes:
            node = nodes.pop()
            node.allow_expand = bool(node.children)
            nodes.extend(node.children)


class ReportViewer(Horizontal):
    """The document with its contents beside it (``show_table_of_contents``)."""

    DEFAULT_CSS = """
    ReportViewer { height: 1fr; }
    """

    show_table_of_contents = reactive(False)

    def __init__(self, *, show_table_of_contents: bool = False, id: str | None = None) -> None:
        super().__init__(id=id)
        self.set_reactive(ReportViewer.show_table_of_contents, show_table_of_contents)

    def compose(self) -> ComposeResult:
        contents = Contents()
        contents.display = self.show_table_of_contents
        yield contents
        yield ReportDocument()

    @property
    def document(self) -> ReportDocument:
        return self.query_one(ReportDocument)

    @property
    def table_of_contents(self) -> Contents:
        return self.query_one(Contents)

    def watch_show_table_of_contents(self, shown: bool) -> None:
        self.table_of_contents.display = shown
        self.call_after_refresh(self._ahead)

    def _ahead(self) -> None:
        """The document's width with the contents toggled (they take CONTENTS columns, at most 40 % of the width):
        its first screen is laid out in advance."""
        document = self.document
        contents = min(CONTENTS, int(self.size.width * 0.4))
        document.ahead = contents if self.show_table_of_contents else -contents

    def update(self, source: str, blocks: Sequence[Block]) -> None:
        self._ahead()
        self.document.update(source, blocks)
        self.table_of_contents.fill(blocks)

    def on_tree_node_selected(self, event: Tree.NodeSelected[int]) -> None:
        event.stop()
        document = self.document
        index = event.node.data
        if index is not None:
            document.scroll_to(y=document.block_line(index), animate=False)
