"""What the app's display settings mean for a widget: ASCII mode (app.screens.ascii) and the units toggle.

Widgets read them from their app at drawing time (``getattr``: a widget tested in a bare App gets the defaults),
so a toggle redraws in place and one process can hold apps of either kind (the tests do)."""

from __future__ import annotations

from textual.dom import DOMNode

from app.core.units import MIB_PER_MB, rate_unit

# a chart's lines in ASCII mode: a marker each, named in the title instead of the colour (16 colours, or none
# with NO_COLOR, do not tell three lines apart)
ASCII_LINE_MARKERS = ("*", "+", "o")
ASCII_HOST_MARKERS = "ox#@%=~"  # a fleet host's line each (charts.HOST_COLORS: as many), apart from the total's


def ascii_mode(node: DOMNode) -> bool:
    return bool(getattr(node.app, "ascii", False))


def by_marker(node: DOMNode) -> bool:
    """Whether lines are told apart by their markers: in ASCII mode, and with NO_COLOR (Textual's monochrome filter
    draws every colour grey, so "mean blue, p99 green" would name two identical lines)."""
    return ascii_mode(node) or bool(getattr(node.app, "no_color", False))


def binary_units(node: DOMNode) -> bool:
    return bool(getattr(node.app, "binary_units", False))


def line_marker(node: DOMNode, index: int = 0) -> str:
    """plotext's marker of a chart's line ``index``: braille (fine lines) or, in ASCII mode, its character."""
    return ASCII_LINE_MARKERS[index % len(ASCII_LINE_MARKERS)] if by_marker(node) else "braille"


def point_marker(node: DOMNode, index: int = 0) -> str:
    """plotext's marker of a measured point drawn over a line: a dot, or the line's character in ASCII mode."""
    return ASCII_LINE_MARKERS[index % len(ASCII_LINE_MARKERS)] if by_marker(node) else "dot"


def line_name(node: DOMNode, index: int, colour: str) -> str:
    """How a title names line ``index``: its colour, or its marker in ASCII mode and with NO_COLOR."""
    return ASCII_LINE_MARKERS[index % len(ASCII_LINE_MARKERS)] if by_marker(node) else colour


def mbps_unit(node: DOMNode) -> str:
    """MB/s or MiB/s, as the app shows bandwidths now."""
    return rate_unit(binary_units(node))


def mbps(node: DOMNode, value: float) -> float:
    """A bandwidth in MB/s in the unit of :func:`mbps_unit`."""
    return value * MIB_PER_MB if binary_units(node) else value
