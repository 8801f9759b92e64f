"""Widgets of the Textual TUI: live charts drawn with textual-plotext, inline error lines."""

from __future__ import annotations

from textual.screen import Screen
from textual.widgets import Footer, Static


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


class KeysFooter(Footer):
    """Textual's Footer, made again only when the keys it shows change: Footer makes its keys anew (a widget
    each, styled) at every change of focus, though the keys shown are most often the same — a tenth of a second
    per key press on a loaded machine."""

    _shown: tuple[object, ...] | None = None

    def bindings_changed(self, screen: Screen[object]) -> None:
        shown = tuple((binding.key, binding.description, binding.action, enabled, tooltip,
                       self.app.get_key_display(binding))
                      for (_, binding, enabled, tooltip) in screen.active_bindings.values() if binding.show)
        if shown == self._shown and self._bindings_ready and self.children:
            return
        self._shown = shown
        super().bindings_changed(screen)
