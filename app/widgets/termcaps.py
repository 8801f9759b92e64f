"""Which pictures the terminal can draw: the Kitty graphics protocol, Sixel, or neither (half-block characters).

Asked once, before Textual takes the terminal, with one bounded exchange: Kitty's graphics query (``a=q``: a
terminal that speaks the protocol answers ``OK`` for image 31) followed by the primary device attributes request
(``ESC [ c``), which every terminal and tmux answer, listing 4 when they draw Sixel.  Reading stops at the DA1
answer, after :data:`TIMEOUT` seconds, or after :data:`LIMIT` bytes, whichever comes first, so a terminal that
never answers (a serial console, a pipe) costs at most that.  Nothing is asked when stdin or stdout is not a
terminal, nor when ``PROFILER_TUI_IMAGES`` names the renderer.

Inside tmux the Kitty query (and later the images) go through tmux's passthrough (``ESC Ptmux; … ESC \\``, every
ESC doubled) only when ``tmux show -gv allow-passthrough`` says on; without it the Kitty protocol is not tried.
The Sixel answer inside tmux is tmux's own (tmux answers DA1 itself and draws Sixel only when built with it).

Nothing here imports Textual: :func:`detect` runs before the app is made.
"""

from __future__ import annotations

import os
import re
import select
import subprocess
import termios
import time
from dataclasses import dataclass
from typing import Mapping

from app.core import settings
from app.report.raster import DEFAULT_CELL  # pixels of a cell when the terminal does not say

ENV = settings.IMAGES.name
RENDERERS = ("kitty", "sixel", "halfblock", "none")
TIMEOUT = 0.3  # seconds the whole exchange may take
LIMIT = 4096  # bytes read at most
TMUX_TIMEOUT = 0.3  # seconds for `tmux show`
KITTY_ID = 31
KITTY_QUERY = b"\x1b_Gi=%d,s=1,v=1,a=q,t=d,f=24;AAAA\x1b\\" % KITTY_ID
DA1_QUERY = b"\x1b[c"
DA1_ANSWER = re.compile(rb"\x1b\[\?([0-9;]*)c")
KITTY_ANSWER = re.compile(rb"\x1b_G([^\x1b]{0,200})\x1b\\")
NO_QUERY_TERMS = ("dumb", "")  # TERM values of terminals that answer no query


@dataclass(frozen=True)
class Caps:
    renderer: str  # one of RENDERERS
    cell: tuple[int, int] = DEFAULT_CELL  # pixels of one cell (width, height)
    tmux: bool = False  # inside tmux, pictures of the Kitty protocol go through its passthrough
    why: str = ""  # how the renderer was chosen, in a few words (shown in the figure view)
    warning: str = ""  # a PROFILER_TUI_IMAGES value that names no renderer, in one sentence (shown there too)


def parse_answer(data: bytes) -> tuple[bool, bool, bool]:
    """(Kitty graphics OK, Sixel listed in DA1, a DA1 answer seen) in what the terminal sent back."""
    kitty = False
    for m in KITTY_ANSWER.finditer(data):
        fields, _, status = m.group(1).partition(b";")
        if f"i={KITTY_ID}".encode() in fields.split(b",") and status == b"OK":
            kitty = True
    da1 = DA1_ANSWER.search(data)
    sixel = da1 is not None and b"4" in da1.group(1).split(b";")
    return kitty, sixel, da1 is not None


def passthrough(sequence: bytes) -> bytes:
    """``sequence`` wrapped for tmux to hand to the terminal outside it."""
    return b"\x1bPtmux;" + sequence.replace(b"\x1b", b"\x1b\x1b") + b"\x1b\\"


def query(fd_in: int, fd_out: int, *, tmux: bool = False, timeout: float = TIMEOUT, limit: int = LIMIT) -> bytes:
    """Send the Kitty query and DA1 to the terminal on ``fd_out``; what came back on ``fd_in`` until the DA1
    answer, ``timeout`` seconds or ``limit`` bytes.  The terminal's modes are restored whatever happens."""
    saved = termios.tcgetattr(fd_in)
    mode = list(saved)
    mode[3] &= ~(termios.ICANON | termios.ECHO)  # answers arrive at once and are not echoed on the screen
    mode[6] = list(saved[6])
    mode[6][termios.VMIN], mode[6][termios.VTIME] = 0, 0
    got = b""
    try:
        termios.tcsetattr(fd_in, termios.TCSANOW, mode)
        kitty = passthrough(KITTY_QUERY) if tmux else KITTY_QUERY
        os.write(fd_out, kitty + DA1_QUERY)
        deadline = time.monotonic() + timeout
        while len(got) < limit and not DA1_ANSWER.search(got):
            left = deadline - time.monotonic()
            if left <= 0:
                break
            ready, _, _ = select.select([fd_in], [], [], left)
            if not ready:
                break
            chunk = os.read(fd_in, limit - len(got))
            if not chunk:
                break
            got += chunk
    finally:
        termios.tcsetattr(fd_in, termios.TCSANOW, saved)
    return got


def tmux_passthrough(timeout: float = TMUX_TIMEOUT) -> bool:
    """tmux's allow-passthrough is on (``on`` or ``all``); False when tmux cannot say in ``timeout`` seconds."""
    try:
        done = subprocess.run(["tmux", "show", "-gv", "allow-passthrough"], capture_output=True, timeout=timeout,
                              stdin=subprocess.DEVNULL, check=False)
    except (OSError, subprocess.SubprocessError):
        return False
    return done.returncode == 0 and done.stdout.strip() in (b"on", b"all")


def cell_size(fd: int) -> tuple[int, int]:
    """Pixels of one cell from the terminal's window size (TIOCGWINSZ), :data:`DEFAULT_CELL` when it gives none."""
    import fcntl
    import struct

    try:
        rows, cols, xpix, ypix = struct.unpack("HHHH", fcntl.ioctl(fd, termios.TIOCGWINSZ, b"\0" * 8))
    except OSError:
        return DEFAULT_CELL
    if rows and cols and xpix >= cols and ypix >= rows:
        return xpix // cols, ypix // rows
    return DEFAULT_CELL


def forced(env: Mapping[str, str]) -> tuple[str | None, str]:
    """The renderer ``PROFILER_TUI_IMAGES`` names (None when unset), and a sentence when its value is not one."""
    value = env.get(ENV, "").strip().lower()
    if not value:
        return None, ""
    if value in RENDERERS:
        return value, ""
    return None, f"{ENV}={env.get(ENV, '')[:40]!r} is not one of {', '.join(RENDERERS)}: the terminal decides."


def detect(env: Mapping[str, str] | None = None, fd_in: int = 0, fd_out: int = 1) -> Caps:
    """The renderer for this terminal (see the module's text)."""
    env = settings.environ() if env is None else env
    choice, bad = forced(env)
    tty = os.isatty(fd_in) and os.isatty(fd_out)
    cell = cell_size(fd_out) if tty else DEFAULT_CELL
    tmux = bool(env.get("TMUX"))
    if choice is not None:
        return Caps(choice, cell, tmux and choice == "kitty", f"{ENV}={choice}")
    if not tty:
        return Caps("halfblock", cell, False, "not a terminal: half-blocks", bad)
    if env.get("TERM", "") in NO_QUERY_TERMS:
        return Caps("halfblock", cell, False, f"TERM={env.get('TERM', '')!r}: half-blocks", bad)
    through = tmux and tmux_passthrough()
    try:
        answer = query(fd_in, fd_out, tmux=through)
    except OSError:
        answer = b""
    kitty, sixel, da1 = parse_answer(answer)
    if sixel:
        return Caps("sixel", cell, False, "the terminal lists Sixel", bad)
    if kitty and (through or not tmux):
        return Caps("kitty", cell, through, "the terminal answers the Kitty graphics query", bad)
    where = "tmux without passthrough" if tmux and not through else "the terminal"
    said = "answers neither Kitty nor Sixel" if da1 else "did not answer in time"
    return Caps("halfblock", cell, False, f"{where} {said}: half-blocks", bad)


CAPS: Caps | None = None  # set once by :func:`prepare` before the app starts; None in tests that run no terminal


def prepare(env: Mapping[str, str] | None = None) -> Caps:
    """Detect once (before Textual starts) and remember the answer for the figure view."""
    global CAPS
    if CAPS is None:
        CAPS = detect(env)
    return CAPS


def current(env: Mapping[str, str] | None = None) -> Caps:
    """The renderer to use: what :func:`prepare` found, else ``PROFILER_TUI_IMAGES`` or half-blocks (no query:
    Textual may own the terminal by now)."""
    if CAPS is not None:
        return CAPS
    choice, bad = forced(settings.environ() if env is None else env)
    return Caps(choice or "halfblock", DEFAULT_CELL, False, "" if choice is None else f"{ENV}={choice}", bad)
