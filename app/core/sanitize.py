"""Text the tool did not write itself, made safe to print and to put into Markdown.

A remote host's reasons, ssh's or a tool's stderr, fio's error messages, a drive's model string, a host's
name: any of them may carry terminal control sequences (CSI, OSC — a window title, a clipboard write with
OSC 52 —, DCS …) or Markdown that changes a report's table.  Every such text goes through
:func:`clean_text` before it reaches a terminal or a file, and through :func:`md_text`
before it goes into Markdown.  The TUI shows the strings the core hands it, already cleaned.

In Markdown the type says which is which: :class:`Markup` is Markdown the tool wrote (or foreign text that
:func:`md_text` made literal), any other ``str`` is text, and app.core.textable's tables escape every cell that is
not Markup — a new field put into a table is shown as written without anyone having to remember to escape it.

Headless: no UI library is imported here.
"""

from __future__ import annotations

import json
import re
import unicodedata

# Whole sequences first, so nothing of one ("[31m", "]0;title") is left behind: CSI (ESC [ or 0x9b) up to its
# final byte; OSC, DCS, SOS, PM, APC (ESC ] P X ^ _ or 0x9d 0x90 0x98 0x9e 0x9f) up to BEL or ST
# (ESC \ or 0x9c), or to the end of the text when unterminated; any other two-byte ESC sequence.
_SEQUENCE = re.compile(
    r"(?:\x1b\[|\x9b)[\x20-\x3f]*[\x40-\x7e]?"
    r"|(?:\x1b[\]PX^_]|[\x9d\x90\x98\x9e\x9f])[^\x07\x1b\x9c]*(?:\x07|\x1b\\|\x9c)?"
    r"|\x1b[\x20-\x7e]?"
)
_CONTROL_CATEGORIES = frozenset({"Cc", "Cf", "Cs", "Co", "Cn"})
_SPACE_LIKE = {"\n": " ", "\r": " ", "\t": " ", "\v": " ", "\f": " "}
# what Markdown (CommonMark with tables) reads as markup in a line: emphasis, code, links and images, autolinks and
# raw HTML, entities (&amp;), headings, table columns; and what GitHub and the TUI's Markdown viewer make links of: a
# bare http://, https:// or ftp:// URL (its ':'), a "//host/…" after a space, "www." and an e-mail address's "@"
# (tcp://host or ssh://user@host is no link: left as it is).  An '_' between two letters or digits (x86_64, O_DIRECT)
# is no emphasis in CommonMark: left as it is, readable
_MARKDOWN = re.compile(r"[\\`*\[\]{}<>#|!~&]|(?<![A-Za-z0-9])_|_(?![A-Za-z0-9])"
                       r"|(?:(?<=\bhttp)|(?<=\bhttps)|(?<=\bftp)):(?=//)|(?<![\w:/])/(?=/)|(?<=\bwww)\.|(?<=\w)@(?=[\w-]+(?:\.[\w-]+)+)",
                       re.IGNORECASE)
# and at the start of a line (foreign text in prose may start one): a list item's, a thematic break's or a setext
# heading's marker ("- ", "+ ", "1. ", "---", "===")
_LINE_START = re.compile(r"^[-+](?=\s|$)|^[-=](?=[-=\s]*$)|^(\d{1,9})([.)])(?=\s|$)")
_NOT_PRINTABLE_ASCII = re.compile(r"[^\x20-\x7e]+")  # what _keep may change: printable ASCII it keeps as it is


def _keep(ch: str, newlines: bool) -> str:
    if ch == "\n" and newlines:
        return ch
    if ch == "\t" and newlines:
        return ch
    if ch in _SPACE_LIKE:
        return " "
    if ch.isascii():
        return ch if " " <= ch <= "~" else ""
    category = unicodedata.category(ch)
    if category.startswith("Z"):
        return " "  # a no-break, ogham or line separator space: a plain space
    return "" if category in _CONTROL_CATEGORIES else ch


def clean_text(text: object, *, newlines: bool = False, limit: int | None = None) -> str:
    """``text`` without control characters or escape sequences: newlines and tabs kept when ``newlines``,
    otherwise turned into spaces; cut to ``limit`` characters (with "…") when given."""
    s = text if isinstance(text, str) else str(text)
    if s.isascii() and s.isprintable() and (limit is None or len(s) <= limit):
        return s  # the common case: nothing to do
    s = _SEQUENCE.sub("", s)
    # only the runs outside printable ASCII go through _keep: a whole report is mostly ASCII
    s = _NOT_PRINTABLE_ASCII.sub(lambda m: "".join(_keep(ch, newlines) for ch in m.group()), s)
    if limit is not None and len(s) > limit:
        s = s[: max(0, limit - 1)] + "…"
    return s


def clean_line(text: object, limit: int | None = 300) -> str:
    """One line of foreign text: cleaned, runs of white space made one space, cut to ``limit``."""
    line = " ".join(clean_text(text).split())
    return line if limit is None or len(line) <= limit else cut_at_word(line, max(1, limit))


FOREIGN_LIMIT = 1000  # characters of one foreign string in a report (a preset's description is at most ~640)


class Markup(str):
    """Markdown to be put into a report as it is: the tool's own markup, or foreign text :func:`md_text` escaped.
    Only this type passes a report's table unescaped (app.core.textable.markdown_table); an f-string or a join of
    Markup is a plain ``str`` again, so a cell composed of markup and foreign parts is marked by its maker."""

    __slots__ = ()


def _escape_start(m: re.Match[str]) -> str:
    return f"{m.group(1)}\\{m.group(2)}" if m.group(1) else f"\\{m.group()}"  # "1. " is "1\. "


def md_text(text: object, limit: int | None = FOREIGN_LIMIT, *, cell: bool = False) -> Markup:
    """Foreign text as Markdown shows it literally, in prose or (``cell``) a table cell: cleaned to one line, cut to
    ``limit`` characters, and everything Markdown would read as markup escaped (a '|' would open a new table
    column, a newline a heading, "[a](b)" a link, "&amp;" an entity; a bare URL stays text on GitHub too).  In a
    cell no line starts, so "- " and "1. " stay as they are."""
    text = _MARKDOWN.sub(r"\\\g<0>", clean_line(text, limit))
    return Markup(text if cell else _LINE_START.sub(_escape_start, text))


def clean_json(value: object, limit: int = 4096) -> object:
    """A parsed JSON value from elsewhere (a host's device listing) with every string, key included, cleaned to
    one line; the nesting must already be bounded (app.fleet.inspect.parse_answer)."""
    if isinstance(value, str):
        return clean_line(value, limit)
    if isinstance(value, list):
        return [clean_json(v, limit) for v in value]
    if isinstance(value, dict):
        return {clean_line(k, 200): clean_json(v, limit) for k, v in value.items()}
    return value


# --- control characters, and a value as an error message shows it ----------------------------------------

_ASCII_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
# what a preset, --set or a plan may not carry (and what an error message escapes): not the wider set above,
# which clean_text drops from foreign output
_REFUSED_CATEGORIES = frozenset({"Cc", "Cf", "Zl", "Zp", "Cs"})


def _is_control(ch: str) -> bool:
    return unicodedata.category(ch) in _REFUSED_CATEGORIES


def has_control(text: str) -> bool:
    """True when ``text`` holds a control character: C0/C1 controls (newline, tab, NUL, ESC, DEL …),
    format characters (e.g. bidi overrides, zero-width joiners) or line/paragraph separators."""
    if text.isascii():
        return _ASCII_CONTROL.search(text) is not None
    return any(_is_control(ch) for ch in text)


def escape_control(text: str) -> str:
    return "".join((f"\\x{ord(ch):02x}" if ord(ch) < 0x100 else f"\\u{ord(ch):04x}") if _is_control(ch) else ch
                   for ch in text)


def show_value(value: object, limit: int = 60) -> str:
    """A value as an error message shows it: strings quoted, control characters escaped, cut short."""
    if isinstance(value, str):
        text = f"'{escape_control(value) if has_control(value) else value}'"
    elif isinstance(value, float):
        text = repr(value)  # inf, -inf, nan as TOML spells them
    else:
        try:
            text = json.dumps(value, default=str)
        except (TypeError, ValueError, RecursionError):
            # str() of an int refuses more than 4300 digits
            text = f"(an integer of {value.bit_length()} bits)" if isinstance(value, int) else object.__repr__(value)
        if has_control(text):
            text = escape_control(text)
    return text if len(text) <= limit else text[: limit - 1] + "…"


_FIGURE = re.compile(r"[-+−±≈~<>≤≥]?\d[\d.,:/×]*")  # a number standing alone: its unit or noun comes after it


def cut_at_word(text: str, limit: int) -> str:
    """``text`` within ``limit`` characters, cut at a word boundary with "…" (never mid-word: "20 samp…" reads
    as a different word, nor between a figure and what it counts: "20…" of "20 samples" reads as twenty of
    anything); a first word longer than ``limit`` is cut where it must be."""
    if len(text) <= limit:
        return text
    head = text[: limit - 1]
    if not text[limit - 1].isspace() and " " in head:
        head = head[: head.rindex(" ")]
    words = head.rstrip().split(" ")
    while len(words) > 1 and _FIGURE.fullmatch(words[-1].rstrip(",;:(")):
        words.pop()  # a bare figure at the end: left out with the word it needed
    return " ".join(words).rstrip(" ,;:(") + "…"
