"""Widgets of the Textual TUI: live charts drawn with textual-plotext, inline error lines."""

from __future__ import annotations

from typing import Any

from textual import events
from textual._context import NoActiveAppError
from textual.app import ComposeResult
from textual.screen import Screen
from textual.widgets import Footer, Static
from textual.widgets._footer import FooterKey


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
    """Textual's Footer, made again only when the keys it shows change, and once for a burst of changes: Footer
    makes its keys anew (a widget each, styled) at every change of bindings — a screen's first focus, a resume and
    the focus it restores each asked again, three or four footers made for one key press, a tenth of a second each
    on a loaded machine — and each key styled itself three times (it starts compact, then takes the footer's
    setting)."""

    _shown: tuple[object, ...] | None = None
    _pending = False  # a recompose is asked for: the changes until it runs share it

    def shown_keys(self, screen: Screen[object]) -> tuple[object, ...]:
        return tuple((binding.key, binding.description, binding.action, enabled, tooltip,
                      self.app.get_key_display(binding))
                     for (_, binding, enabled, tooltip) in screen.active_bindings.values() if binding.show)

    def bindings_changed(self, screen: Screen[object]) -> None:
        self._bindings_ready = True
        if (not screen.app.app_focus or not self.is_attached or screen is not self.screen
                or screen is not self.app.screen or self._pending):  # a screen under another: when resumed
            return
        self._pending = True
        self.call_after_refresh(self._recompose_if_changed)

    async def _recompose_if_changed(self) -> None:
        self._pending = False
        if not self.is_attached or self.screen is not self.app.screen:
            return
        shown = self.shown_keys(self.screen)
        if shown == self._shown and self.children:
            return
        self._shown = shown
        await self.recompose()

    def compose(self) -> ComposeResult:
        for widget in super().compose():
            if isinstance(widget, FooterKey):
                # its final setting from the start (the footer's; the palette's key stays compact, unbound), so
                # that it is styled once, when mounted
                compact = True if widget.has_class("-command-palette") else self.compact
                widget.set_reactive(FooterKey.compact, compact)
                widget.set_class(compact, "-compact", update=False)
            yield widget


class StyledOnce:
    """A screen a key opens, styled once: with the app's width and height classes (-narrow, -wide, -tall …) from
    the start, and not styled again as it is first shown.  Textual styles a new screen as it is composed, again as
    it resumes (the first time too, when nothing changed since) and again when its first resize adds those classes:
    three stylings of every widget for one key press.  Put before Screen in the bases."""

    _resumed_once = False

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        screen: Any = self
        try:
            app = screen.app
            width, height = app.size
        except NoActiveAppError:  # made outside a running app: its first resize sets them
            return
        classes: dict[str, bool] = {}
        for size, breakpoints in ((width, app.HORIZONTAL_BREAKPOINTS or []),
                                  (height, app.VERTICAL_BREAKPOINTS or [])):
            chosen = screen._get_breakpoint_classes(size, breakpoints)
            classes.update({name: name in chosen for _, name in breakpoints})
        screen.update_classes(classes, update=False)

    def _on_screen_resume(self, event: events.ScreenResume) -> None:
        """Before Screen's own handler: the first resume follows the composing, nothing to style again."""
        if not self._resumed_once:
            self._resumed_once = True
            event.refresh_styles = False
