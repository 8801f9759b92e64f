"""Widgets of the Textual TUI: live charts drawn with textual-plotext, inline error lines."""

from __future__ import annotations

from textual.widgets import Static


class ErrorLine(Static):
    """A one-line inline error that takes no room while empty."""

    def __init__(self, text: str = "", *, id: str | None = None) -> None:  # noqa: A002
        super().__init__(text, id=id, classes="error -empty" if not text else "error")
        self.text = str(text)

    def show(self, text: str) -> None:
        self.text = str(text)
        self.update(text)
        self.set_class(not text, "-empty")
