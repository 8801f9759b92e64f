"""The run screen's live latency heat map: the point being measured, one column a second (newest at the right,
older ones scrolling off to the left), latency rows on a log scale, the I/Os a cell completed as its colour —
two rows a terminal cell with half blocks (upper row the foreground of ``▀``, lower the background).  In ASCII
mode and with NO_COLOR one row a line, the density as a character (`` .:-=+*#%@``).

Each second's histogram comes with the live sample (app.runners.base.Sample.hist, fio's buckets per direction,
app.stats.latmap); it is kept as counts in fine rows (FINE_PER_DECADE), merged into as many rows a decade as fit.
"""

from __future__ import annotations

import math
from collections import Counter, deque
from typing import TYPE_CHECKING, Sequence

from rich.style import Style
from rich.text import Text
from textual.widget import Widget

from app.stats.latmap import row_of
from app.widgets.glyphs import by_marker

if TYPE_CHECKING:
    from textual.app import RenderResult

FINE_PER_DECADE = 12
PER_DECADE_CHOICES = (6, 4, 3, 2, 1)  # divisors of FINE_PER_DECADE, finest first
MAX_SECONDS = 600  # seconds kept (a screen is narrower)
LABEL_W = 7  # the latency labels' column
# white → yellow → red, as the report's heat map (YlOrRd)
PALETTE = ("#ffffcc", "#ffeda0", "#fed976", "#feb24c", "#fd8d3c", "#fc4e2a", "#e31a1c", "#b10026")
DENSITY = " .:-=+*#%@"  # ASCII: no I/O, then the levels


def latency_label(ns: float) -> str:
    for unit, scale in (("s", 1e9), ("ms", 1e6), ("µs", 1e3)):
        if ns >= scale:
            return f"{ns / scale:g}{unit}"
    return f"{ns:g}ns"


class LiveHeatMap(Widget):
    """The current point's heat map, a column a second."""

    DEFAULT_CSS = "LiveHeatMap { height: 1fr; width: 1fr; }"

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.seconds: deque[Counter[int]] = deque(maxlen=MAX_SECONDS)

    def clear(self) -> None:
        """A new point: its map starts empty."""
        self.seconds.clear()
        self.refresh()

    def add(self, hist: Sequence[tuple[int, int]]) -> None:
        """One second's histogram (fio's buckets: ns → count)."""
        rows: Counter[int] = Counter()
        for v, c in hist:
            rows[row_of(v, FINE_PER_DECADE)] += c
        self.seconds.append(rows)
        self.refresh()

    def render(self) -> RenderResult:
        return self.draw(self.size.width, self.size.height, by_marker(self))

    def draw(self, width: int, height: int, chars: bool) -> Text:
        """The map in ``width`` × ``height`` cells: ``chars``, density characters instead of colours."""
        if not self.seconds or not any(self.seconds):
            return Text("No latency histogram yet: the map fills in a column a second while a storage point runs.")
        lines_avail = max(1, height - 1)  # the last line: the scale
        cols = max(1, width - LABEL_W - 1)
        shown = list(self.seconds)[-cols:]
        fine = [r for s in shown for r in s]
        lo_f, hi_f = min(fine), max(fine)
        per_row_cells = 1 if chars else 2
        room = lines_avail * per_row_cells
        per = next((p for p in PER_DECADE_CHOICES
                    if hi_f // (FINE_PER_DECADE // p) - lo_f // (FINE_PER_DECADE // p) + 1 <= room), 1)
        step = FINE_PER_DECADE // per
        lo, hi = lo_f // step, hi_f // step
        nrows = hi - lo + 1
        grid = [[0] * nrows for _ in shown]
        for c, s in enumerate(shown):
            for r, n in s.items():
                grid[c][r // step - lo] += n
        top = max((n for col in grid for n in col), default=1)
        levels = len(DENSITY) - 1 if chars else len(PALETTE)

        def level(n: int) -> int:
            if n <= 0:
                return -1
            return min(levels - 1, int(math.log(n) / math.log(top) * levels)) if top > 1 else levels - 1

        text = Text(no_wrap=True, overflow="crop")
        nlines = math.ceil(nrows / per_row_cells)
        for line in range(nlines - 1, -1, -1):  # slowest at the top
            low_row = line * per_row_cells
            # a line whose rows start a decade is labelled with it (the decade's lower edge)
            starts = [r + lo for r in range(low_row, low_row + per_row_cells) if (r + lo) % per == 0]
            label = latency_label(10.0 ** (starts[0] // per)) if starts else ""
            text.append(f"{label:>{LABEL_W}}│")
            for col in grid:
                if chars:
                    text.append(DENSITY[level(col[low_row]) + 1])
                    continue
                lower = level(col[low_row])
                upper = level(col[low_row + 1]) if low_row + 1 < nrows else -1
                if upper < 0 and lower < 0:
                    text.append(" ")
                elif upper < 0:
                    text.append("▄", Style(color=PALETTE[lower]))
                elif lower < 0:
                    text.append("▀", Style(color=PALETTE[upper]))
                else:
                    text.append("▀", Style(color=PALETTE[upper], bgcolor=PALETTE[lower]))
            text.append("\n")
        text.append(f"{'':>{LABEL_W}}└ I/Os a second: 1 ")
        if chars:
            text.append(DENSITY[1:])
        else:
            for colour in PALETTE:
                text.append("█", Style(color=colour))
        text.append(f" {top:,}  ({len(shown)} s shown, newest right)")
        return text
