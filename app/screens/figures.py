"""The report's figures as pictures, from the results screen (``f``): the same view as the report's Figures tab."""

from __future__ import annotations

from pathlib import Path

from textual.app import ComposeResult
from textual.binding import Binding
from textual.screen import Screen
from textual.widgets import Footer, Header

from app.widgets import TooSmall
from app.widgets.figure import FigureView

TITLE = "Figures: {path}"


class FiguresScreen(Screen[None]):
    BINDINGS = [Binding("escape", "back", "Back")]

    def __init__(self, path: Path) -> None:
        super().__init__()
        self.path = Path(path)

    def compose(self) -> ComposeResult:
        yield Header(show_clock=False)
        yield TooSmall()
        yield FigureView(self.path, id="figures-view")
        yield Footer()

    def on_mount(self) -> None:
        self.sub_title = TITLE.format(path=self.path)
        self.query_one("#figures-view", FigureView).focus()

    def action_back(self) -> None:
        self.app.pop_screen()
