"""Terminal capability detection (app.widgets.termcaps): the answer parser, the bounded query over a real pty
with a terminal that answers as kitty, as a Sixel terminal, as a plain one, or not at all, and the choices."""

from __future__ import annotations

import os
import select
import threading
import time
from typing import Iterator

import pytest
from hypothesis import given
from hypothesis import strategies as st

from app.widgets import termcaps
from app.widgets.termcaps import DA1_QUERY, KITTY_QUERY, detect, parse_answer, passthrough, query

KITTY_OK = b"\x1b_Gi=31;OK\x1b\\"
DA1_SIXEL = b"\x1b[?62;4;22c"
DA1_PLAIN = b"\x1b[?1;2c"


def test_parse_answer() -> None:
    assert parse_answer(KITTY_OK + DA1_PLAIN) == (True, False, True)
    assert parse_answer(DA1_SIXEL) == (False, True, True)
    assert parse_answer(DA1_PLAIN) == (False, False, True)
    assert parse_answer(b"") == (False, False, False)
    assert parse_answer(b"\x1b_Gi=31;ENOENT:no\x1b\\" + DA1_PLAIN) == (False, False, True)
    assert parse_answer(b"\x1b_Gi=7;OK\x1b\\" + DA1_PLAIN)[0] is False  # another image's answer
    assert parse_answer(b"\x1b[?64;14c")[1] is False  # 14 is not 4


@given(st.binary(max_size=600))
def test_parse_answer_takes_any_bytes(data: bytes) -> None:
    kitty, sixel, da1 = parse_answer(data)
    assert isinstance(kitty, bool) and isinstance(sixel, bool)
    assert not sixel or da1


@given(st.binary(max_size=200), st.binary(max_size=200), st.sampled_from([DA1_SIXEL, DA1_PLAIN]))
def test_parse_answer_finds_the_answers_among_noise(before: bytes, between: bytes, da1: bytes) -> None:
    # noise without ESC cannot open or close a sequence of its own
    before, between = before.replace(b"\x1b", b""), between.replace(b"\x1b", b"")
    kitty, sixel, seen = parse_answer(before + KITTY_OK + between + da1)
    assert kitty and seen and sixel == (da1 == DA1_SIXEL)


def test_passthrough_doubles_every_escape() -> None:
    assert passthrough(b"\x1b_Ga=q\x1b\\") == b"\x1bPtmux;\x1b\x1b_Ga=q\x1b\x1b\\\x1b\\"


class FakeTerminal:
    """The master side of a pty: waits for the DA1 request, then sends ``answer`` (nothing when None)."""

    def __init__(self, answer: bytes | None) -> None:
        self.master, self.slave = os.openpty()
        self.answer = answer
        self.received = b""
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        deadline = time.monotonic() + 3
        while DA1_QUERY not in self.received and time.monotonic() < deadline:
            if select.select([self.master], [], [], 0.05)[0]:
                self.received += os.read(self.master, 4096)
        if self.answer is not None:
            os.write(self.master, self.answer)

    def close(self) -> None:
        self.thread.join(timeout=5)
        os.close(self.master)
        os.close(self.slave)


@pytest.fixture()
def terminal() -> Iterator[type[FakeTerminal]]:
    made: list[FakeTerminal] = []

    def make(answer: bytes | None) -> FakeTerminal:
        t = FakeTerminal(answer)
        made.append(t)
        return t
    yield make  # type: ignore[misc]
    for t in made:
        t.close()


@pytest.mark.parametrize(("answer", "renderer"), [
    (KITTY_OK + DA1_PLAIN, "kitty"),
    (DA1_SIXEL, "sixel"),
    (DA1_PLAIN, "halfblock"),
    (b"\x1b_Gi=31;EINVAL:bad\x1b\\" + DA1_PLAIN, "halfblock"),
    (None, "halfblock"),  # never answers: a serial console
])
def test_detect_over_a_pty(terminal, answer: bytes | None, renderer: str) -> None:
    t = terminal(answer)
    start = time.monotonic()
    caps = detect({"TERM": "xterm-256color"}, t.slave, t.slave)
    assert time.monotonic() - start < 0.5
    assert caps.renderer == renderer, caps
    assert KITTY_QUERY + DA1_QUERY in t.received  # the Kitty query first: its answer comes before DA1's


def test_query_restores_the_terminal_mode(terminal) -> None:
    import termios

    t = terminal(DA1_PLAIN)
    before = termios.tcgetattr(t.slave)
    assert query(t.slave, t.slave).endswith(DA1_PLAIN)
    assert termios.tcgetattr(t.slave) == before


def test_query_stops_at_the_limit(terminal) -> None:
    t = terminal(b"x" * 10_000)
    assert len(query(t.slave, t.slave, limit=100)) <= 100


def test_no_query_without_a_terminal(tmp_path) -> None:
    with open(tmp_path / "out", "wb") as out, open(os.devnull, "rb") as inp:
        caps = detect({"TERM": "xterm"}, inp.fileno(), out.fileno())
    assert caps.renderer == "halfblock"
    assert (tmp_path / "out").read_bytes() == b""  # nothing written to what is not a terminal


def test_the_variable_decides_without_asking(terminal) -> None:
    t = terminal(DA1_SIXEL)
    for name in termcaps.RENDERERS:
        assert detect({termcaps.ENV: name.upper(), "TERM": "xterm"}, t.slave, t.slave).renderer == name
    caps = detect({termcaps.ENV: "\x1b[2Jsvg", "TERM": "xterm"}, t.slave, t.slave)  # asks the terminal then
    assert caps.renderer == "sixel"
    assert caps.warning == (f"{termcaps.ENV}='\\x1b[2Jsvg' is not one of kitty, sixel, halfblock, none: the terminal "
                            "decides.")  # the escape shown as text, never sent


def test_tmux_without_passthrough_never_tries_kitty(terminal, monkeypatch) -> None:
    monkeypatch.setattr(termcaps, "tmux_passthrough", lambda timeout=0.3: False)
    t = terminal(KITTY_OK + DA1_PLAIN)
    caps = detect({"TERM": "screen", "TMUX": "/tmp/x,1,0"}, t.slave, t.slave)
    assert caps.renderer == "halfblock" and "tmux without passthrough" in caps.why


def test_tmux_with_passthrough_wraps_the_kitty_query(terminal, monkeypatch) -> None:
    monkeypatch.setattr(termcaps, "tmux_passthrough", lambda timeout=0.3: True)
    t = terminal(KITTY_OK + DA1_PLAIN)
    caps = detect({"TERM": "screen", "TMUX": "/tmp/x,1,0"}, t.slave, t.slave)
    assert caps.renderer == "kitty" and caps.tmux
    assert passthrough(KITTY_QUERY) + DA1_QUERY in t.received
