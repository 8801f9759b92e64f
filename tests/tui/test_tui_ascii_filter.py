"""ASCII mode's look-alikes (app.screens.ascii): every character becomes ASCII of the same cell width, and which
terminals get the mode."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from rich.cells import cell_len
from rich.segment import Segment
from rich.style import Style
from textual.color import Color

from app.screens.ascii import AsciiFilter, ascii_terminal, lookalike, to_ascii


@pytest.mark.parametrize(("text", "shown"), [
    ("╭──┬──╮", "+--+--+"), ("│ ┃ ║", "| | |"), ("━━╸", "---"), ("█▀▄", "###"), ("▏▎▊", "|||"), ("░▒▓", ".:#"),
    ("⠀⠁⣿", " .*"), ("← → ↑ ↓", "< > ^ v"), ("500 µs", "500 us"), ("±1.8 %", "~1.8 %"), ("…", "."),
    ("Ünïcode", "Unicode"), ("—", "-"), ("⏎", "<"), ("×", "x"),
])
def test_lookalikes(text: str, shown: str) -> None:
    assert to_ascii(text) == shown


def test_wide_characters_keep_their_two_cells() -> None:
    assert to_ascii("漢字") == "????"
    assert to_ascii("a🙂b") == "a??b"
    assert to_ascii("🔎 Search") == ">  Search"


def test_zero_width_characters_take_no_cell() -> None:
    assert to_ascii("e\u0301") == "e"  # e + combining acute


@settings(max_examples=500, deadline=None)
@given(st.text(max_size=60))
def test_any_text_is_ascii_of_the_same_width(text: str) -> None:
    shown = to_ascii(text)
    assert shown.isascii()
    assert cell_len(shown) == sum(cell_len(c) for c in text)


@settings(max_examples=200, deadline=None)
@given(st.characters(min_codepoint=0x80, max_codepoint=0x2FFFF))
def test_every_character_has_a_lookalike_of_its_width(char: str) -> None:
    assert lookalike(char).isascii() and len(lookalike(char)) == max(0, cell_len(char))


def test_the_filter_keeps_styles_and_control_segments() -> None:
    style = Style(color="red")
    control = Segment("", None, [(1,)])  # type: ignore[list-item]
    out = AsciiFilter().apply([Segment("│ok│", style), control, Segment("plain")], Color(0, 0, 0))
    assert out == [Segment("|ok|", style), control, Segment("plain")]


@pytest.mark.parametrize(("env", "wanted"), [
    ({"TERM": "linux"}, True), ({"TERM": "vt100"}, True), ({"TERM": "vt220"}, True), ({"TERM": "dumb"}, True),
    ({"TERM": "vt100-am"}, True), ({"TERM": "linux-16color"}, True), ({"TERM": "screen.linux"}, True),
    ({"TERM": "xterm-256color"}, False), ({"TERM": "tmux-256color"}, False), ({}, False),
    ({"TERM": "xterm-256color", "PROFILER_TUI_ASCII": "1"}, True),
    ({"TERM": "xterm", "PROFILER_TUI_ASCII": "yes"}, True),
    ({"TERM": "linux", "PROFILER_TUI_ASCII": "0"}, False),
    ({"TERM": "linux", "PROFILER_TUI_ASCII": "maybe"}, True),
])
def test_which_terminals_get_ascii(env: dict[str, str], wanted: bool) -> None:
    assert ascii_terminal(env) is wanted
