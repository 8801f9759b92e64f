"""Widgets of the Textual TUI: live charts drawn with textual-plotext, inline error lines."""

from __future__ import annotations

from textual.widgets import Static


class ErrorLine(Static):
    """A one-line inline error that takes no room while empty."""

    def __init__(self, text: str = "", *, id: str | None = None) -> None:
        super().__init__(text, id=id, classes="error -empty" if not text else "error")
        self.text = str(text)

    def show(self, text: str) -> None:
        self.text = str(text)
        self.update(text)
        self.set_class(not text, "-empty")


# The smallest terminal every screen is laid out for (docs/tui.md). Below it a banner says so and the
# target confirmation refuses to authorise anything, since its field or buttons might not be seen.
MIN_WIDTH, MIN_HEIGHT = 40, 14
TOO_SMALL = (f"This terminal is smaller than {MIN_WIDTH}×{MIN_HEIGHT}, the smallest profiler-tui supports: "
             "enlarge it.")


def too_small(width: int, height: int) -> bool:
    return width < MIN_WIDTH or height < MIN_HEIGHT


class TooSmall(Static):
    """A banner docked at the top of a screen, shown only below MIN_WIDTH×MIN_HEIGHT (the screen's
    -too-narrow / -too-short breakpoint classes, set by the app)."""

    DEFAULT_CSS = """
    TooSmall { dock: top; height: auto; display: none; background: $error; color: $text; padding: 0 1;
               text-style: bold; }
    Screen.-too-narrow TooSmall, Screen.-too-short TooSmall { display: block; }
    """

    def __init__(self) -> None:
        super().__init__(TOO_SMALL, classes="too-small")
