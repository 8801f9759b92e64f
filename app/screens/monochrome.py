"""NO_COLOR that stays readable: Textual draws every colour as its grey (``Monochrome``), which makes a red word on
a dark panel grey 59 on grey 39 ("refused" could not be read).  :class:`ReadableMonochrome` does the same, then
moves any text grey too close to its background's away from it until the two are 4.5:1 apart (WCAG's contrast for
text), so what a colour said is still there in words that can be read."""

from __future__ import annotations

from functools import lru_cache

from rich.color import Color as RichColor
from rich.segment import Segment
from rich.style import Style
from textual.color import Color
from textual.filter import Monochrome, monochrome_style

MIN_CONTRAST = 4.5  # WCAG 2's minimum for normal text


def _linear(c: int) -> float:
    v = c / 255
    return v / 12.92 if v <= 0.04045 else ((v + 0.055) / 1.055) ** 2.4


def luminance(grey: int) -> float:
    """The relative luminance of a grey 0..255 (sRGB)."""
    return _linear(grey)


def contrast(a: int, b: int) -> float:
    """WCAG's contrast ratio of two greys (1 to 21)."""
    hi, lo = sorted((luminance(a), luminance(b)), reverse=True)
    return (hi + 0.05) / (lo + 0.05)


@lru_cache(4096)
def readable_grey(fg: int, bg: int) -> int:
    """``fg``, or the grey nearest to it that is :data:`MIN_CONTRAST` from ``bg`` (lighter on a dark background,
    darker on a light one; the extreme when even that is not enough)."""
    if contrast(fg, bg) >= MIN_CONTRAST:
        return fg
    step = 1 if luminance(bg) < 0.18 else -1  # 0.18: the background is darker than mid-grey
    g = fg
    while 0 <= g + step <= 255:
        g += step
        if contrast(g, bg) >= MIN_CONTRAST:
            return g
    return g


def _grey(color: RichColor | None) -> int | None:
    if color is None or color.is_default:
        return None
    r, g, b = color.get_truecolor()
    return round(r * 0.2126 + g * 0.7152 + b * 0.0722)


@lru_cache(1024)
def readable_style(style: Style, background: Color) -> Style:
    mono = monochrome_style(style)
    fg = _grey(mono.color)
    bg = _grey(mono.bgcolor)
    if bg is None:
        bg = _grey(background.monochrome.rich_color)
    if fg is None or bg is None:
        return mono
    better = readable_grey(fg, bg)
    if better == fg:
        return mono
    return mono + Style(color=RichColor.from_rgb(better, better, better))


class ReadableMonochrome(Monochrome):
    """Textual's ``Monochrome`` with every text grey at least :data:`MIN_CONTRAST` from its background's grey."""

    def apply(self, segments: list[Segment], background: Color) -> list[Segment]:
        return [Segment(text, readable_style(style, background) if style is not None else None, None)
                for text, style, _ in segments]


READABLE = ReadableMonochrome()
