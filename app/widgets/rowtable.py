"""A table whose rows are the things to pick: Home and End go to the first and last row.

Textual's DataTable maps Home and End to the start and end of a line (its columns); on a table of rows — runs,
devices, presets, results, hosts — a reader expects them to go to the first and last row, as a list does."""

from __future__ import annotations

from typing import ClassVar

from textual.binding import Binding, BindingType
from textual.widgets import DataTable


class RowTable(DataTable):
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("home", "scroll_top", "First row", show=False),
        Binding("end", "scroll_bottom", "Last row", show=False),
    ]
