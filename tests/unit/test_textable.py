"""Markdown tables written by app.core.textable and read back by it (the compare view and the CLI's rich
compare draw what compare writes)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from app.core.sanitize import clean_line
from app.core.textable import ReadTable, markdown_table, read_markdown

# any text, Markdown's characters (a '|' too) and control characters included: the table escapes and cleans it
CELL = st.text(st.one_of(st.characters(blacklist_categories=["Cs"]), st.sampled_from("|\\`*_[]<>#!&:/-")),
               max_size=8).map(str.strip)


@settings(max_examples=300, deadline=None)
@given(st.integers(1, 5).flatmap(lambda n: st.tuples(st.lists(CELL.filter(bool), min_size=n, max_size=n),
                                                     st.lists(st.lists(CELL, min_size=n, max_size=n), max_size=5))))
def test_a_written_table_reads_back_between_text(table: tuple[list[str], list[list[str]]]) -> None:
    header, rows = table
    text = "# Title\n\nsome words\n" + markdown_table(header, rows) + "\n\nafter"
    parts = read_markdown(text)
    assert parts[:3] == ["# Title", "", "some words"] and parts[-2:] == ["", "after"]
    (read,) = [p for p in parts if isinstance(p, ReadTable)]
    shown = [[clean_line(c, None) for c in row] for row in rows]  # as written, without control characters
    assert read.header == [clean_line(c, None) for c in header] and read.rows == shown
    assert read.right == frozenset(range(1, len(header)))


@settings(max_examples=300, deadline=None)
@given(st.text(st.sampled_from("|-: ab\n"), max_size=60))
def test_any_text_reads_without_error_and_keeps_what_is_no_table(text: str) -> None:
    parts = read_markdown(text)
    lines = [p for p in parts if isinstance(p, str)]
    tables = [p for p in parts if isinstance(p, ReadTable)]
    assert all(len(r) == len(t.header) for t in tables for r in t.rows)
    assert len(lines) + sum(len(t.rows) + 2 for t in tables) == len(text.splitlines())
