"""ASCII mode (``profiler-tui --ascii``, ``PROFILER_TUI_ASCII=1``, or a console ``TERM``): nothing but ASCII on
the screen, at most 16 colours.

Charts choose ASCII markers themselves (app.widgets.glyphs) and keep readable; what every other widget draws
(borders, scrollbars, tabs, the footer, Markdown, data from the machine such as device models and paths) goes
through :class:`AsciiFilter`, the app's last line filter: each character outside ASCII becomes an ASCII look-alike
of the same cell width (a box-drawing line ``-``/``|``/``+``, a block ``#``, an arrow ``<``/``>``/``^``/``v``,
``µ`` ``u``), so the layout Textual computed stays exactly as it is.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Mapping
from functools import lru_cache

from rich.cells import cell_len
from rich.console import Console, ConsoleOptions, RenderResult
from rich.segment import Segment
from rich.text import Text
from textual.color import Color
from textual.filter import LineFilter
from textual.renderables.bar import Bar as BarRenderable
from textual.widgets import ProgressBar

from app.core import settings
from app.core.errors import UsageError

# terminals that cannot draw box drawing, braille or blocks (or draw them from a 256-glyph console font that may
# lack them): the Linux and BSD consoles, DEC VTs and what serial consoles of BMCs announce, and "dumb".  A TERM
# is matched by its name before the first "-" ("vt100-am", "linux-16color"), and screen/tmux inside one of them
# ("screen.linux", "tmux.linux") by what follows the dot.
ASCII_TERMS = frozenset({"linux", "vt52", "vt100", "vt102", "vt220", "vt320", "vt420", "vt520", "dumb", "ansi",
                         "cons25", "wsvt25", "pcvt25", "sun"})
ASCII_ENV = settings.ASCII.name


def ascii_terminal(environ: Mapping[str, str]) -> bool:
    """Whether the TUI should draw in ASCII: PROFILER_TUI_ASCII=1 (or yes/true/on) says so, =0 (no/false/off)
    says not, else TERM decides (ASCII_TERMS; another value is refused when the command line starts:
    app.core.settings.check)."""
    try:
        wanted = settings.ascii_mode(environ)
    except UsageError:
        wanted = None
    if wanted is not None:
        return wanted
    term = settings.term(environ).strip().lower()
    if "." in term:  # screen.linux, tmux.linux: the terminal screen or tmux runs in
        term = term.rsplit(".", 1)[1]
    return term.split("-", 1)[0] in ASCII_TERMS


# --- the look-alikes ------------------------------------------------------------------------------------------

_LOOKALIKE: dict[str, str] = {
    # arrows and triangles (key hints, sort marks, tree and collapsible markers)
    "←": "<", "→": ">", "↑": "^", "↓": "v", "↔": "-", "↕": "|", "⇐": "<", "⇒": ">", "⇑": "^", "⇓": "v",
    "▲": "^", "▼": "v", "◀": "<", "▶": ">", "△": "^", "▽": "v", "◁": "<", "▷": ">", "▸": ">", "▹": ">",
    "◂": "<", "◃": "<", "▴": "^", "▾": "v", "►": ">", "◄": "<", "⏎": "<", "↵": "<", "⇥": ">", "⇤": "<",
    # marks and bullets
    "•": "*", "●": "*", "○": "o", "◉": "*", "◎": "o", "⭘": "o", "■": "#", "□": "o", "▪": "*", "▫": ".",
    "◆": "*", "◇": "o", "★": "*", "☆": "*", "✓": "v", "✔": "v", "✗": "x", "✘": "x", "✕": "x", "✖": "x",
    "·": ".", "…": ".", "⋯": ".", "‣": ">", "⁃": "-",
    # punctuation and maths
    "—": "-", "–": "-", "‒": "-", "−": "-", "‐": "-", "‑": "-", "‘": "'", "’": "'", "‚": ",", "“": '"', "”": '"',
    "„": '"', "«": "<", "»": ">", "‹": "<", "›": ">", "±": "~", "×": "x", "÷": "/", "≈": "~", "≤": "<", "≥": ">",
    "≠": "#", "°": "o", "µ": "u", "μ": "u", "¹": "1", "²": "2", "³": "3", "½": "/", "¼": "/", "¾": "/", "€": "E",
    "£": "L", "§": "S", "¶": "P", "©": "c", "®": "r", "™": "T", "\u00a0": " ", "\u2009": " ", "\u202f": " ",
    # shades
    "░": ".", "▒": ":", "▓": "#",
    # wide symbols Textual draws (the command palette's search icon): the look-alike, then a space
    "🔎": ">", "🔍": ">",
}
# block elements: left/right partial blocks are vertical edges (Textual's "tall" and "outer" borders), lower and
# upper eighths horizontal ones, fuller blocks and quadrants solid
_LOOKALIKE.update(dict.fromkeys("▏▎▍▌▋▊▉▐▕", "|"))
_LOOKALIKE.update(dict.fromkeys("▁▂▃", "_"))
_LOOKALIKE.update(dict.fromkeys("▔", "-"))
_LOOKALIKE.update(dict.fromkeys("▀▄▅▆▇█▖▗▘▙▚▛▜▝▞▟", "#"))

_HORIZONTAL = set("─━┄┅┈┉╌╍═╴╶╸╺╼╾")
_VERTICAL = set("│┃┆┇┊┋╎╏║╵╷╹╻╽╿")


def _box(char: str) -> str:
    """A box-drawing character (U+2500–U+257F): a line, a corner/tee/cross, or a diagonal."""
    if char in _HORIZONTAL:
        return "-"
    if char in _VERTICAL:
        return "|"
    return {"╱": "/", "╲": "\\", "╳": "X"}.get(char, "+")


def _braille(char: str) -> str:
    """A braille cell (U+2800–U+28FF) by how many of its eight dots are set: blank, dot, colon or star."""
    dots = bin(ord(char) - 0x2800).count("1")
    return " " if dots == 0 else "." if dots <= 2 else ":" if dots <= 4 else "*"


@lru_cache(maxsize=4096)
def lookalike(char: str) -> str:
    """``char`` as ASCII of the same cell width ("" for a zero-width character, "??" for a wide one without a
    look-alike)."""
    if char.isascii():
        return char
    width = cell_len(char)
    code = ord(char)
    if 0x2500 <= code <= 0x257F:
        found = _box(char)
    elif 0x2800 <= code <= 0x28FF:
        found = _braille(char)
    elif char in _LOOKALIKE:
        found = _LOOKALIKE[char]
    else:  # a letter with an accent (é, ñ, Å): its base letter
        base = "".join(c for c in unicodedata.normalize("NFKD", char) if c.isascii() and c.isprintable())
        found = base[:1] or "?"
    if width <= 0:
        return ""
    if found == "?":  # no look-alike: a "?" in each cell
        return "?" * width
    return found.ljust(width)[:width]


def to_ascii(text: str) -> str:
    """``text`` with every character outside ASCII replaced by its look-alike, cell for cell."""
    return text if text.isascii() else "".join(map(lookalike, text))


class AsciiFilter(LineFilter):
    """The last line filter of an app in ASCII mode: every segment's text through :func:`to_ascii` (control
    segments, the cursor moves and such, pass as they are)."""

    def apply(self, segments: list[Segment], background: Color) -> list[Segment]:
        return [segment if segment.control or segment.text.isascii()
                else Segment(to_ascii(segment.text), segment.style, segment.control)
                for segment in segments]


class AsciiBar(BarRenderable):
    """A progress bar in ASCII: the done part ``#``, the rest ``-`` (both would be ``-`` through the filter, told
    apart by their colour alone, which a monochrome console does not show)."""

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        highlight = console.get_style(self.highlight_style)
        for text in super().__rich_console__(console, options):
            if not isinstance(text, Text):
                yield text
                continue
            chars = ["-" if c != " " else " " for c in text.plain]
            for span in text.spans:
                if console.get_style(span.style) == highlight:
                    chars[span.start:span.end] = ["#" if c != " " else " " for c in chars[span.start:span.end]]
            yield Text("".join(chars), spans=text.spans, end="", style=text.style)


class AsciiProgressBar(ProgressBar):
    BAR_RENDERABLE = AsciiBar
