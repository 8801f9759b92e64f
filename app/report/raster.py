"""The report's figures as PNG pictures of a given pixel size, for a terminal that draws images.

:func:`draw_report_figures` draws a results directory's figures with the report's own code
(:func:`app.report.write.draw_figures`, the same matplotlib calls that write ``plots/*.svg``) but keeps each
finished matplotlib figure in memory instead of writing it.  :meth:`ReportFigures.png` then saves one of them as
PNG at the dots per inch that make it fit a box of pixels (the figure's proportions and inch-based margins kept:
a box of another shape leaves a margin, it does not squeeze the axes), cached per (figure, size).  Drawing again
at another size is one Agg pass over a figure already laid out: tens of milliseconds, no re-reading of the run.

Nothing is written to the results directory except by :meth:`ReportFigures.write_png` (``plots/NAME.png`` beside
the SVG), through the same checked-directory writers as the report.
"""

from __future__ import annotations

import io
import os
import re
import threading
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Sequence

from app.core.errors import UsageError
from app.store.results import NotRegularFile, make_dir, open_trusted_dir, read_regular, write_new

if TYPE_CHECKING:
    from matplotlib.figure import Figure as MplFigure

DEFAULT_CELL = (10, 20)  # pixels of a terminal cell (width, height) when the terminal does not say (a VT340's)
MAX_SIDE = 4096  # pixels: a picture at most this wide and high, whatever size a terminal claims
MIN_DPI = 10.0  # below this matplotlib's text and markers collapse; a smaller box gets a picture this small
SAVE_DPI = 150.0  # the resolution of a PNG written beside its SVG (a report figure of 10 inches: 1,500 pixels)
CACHE = 48  # pictures kept per directory (a few sizes of every figure of a report)
FIGURE_LINE = re.compile(r"^!\[[^\]]*\]\(([^)]+)\)\s*$", re.MULTILINE)

PNG_RISK = "another user could redirect what this tool writes there"


@dataclass(frozen=True)
class Shown:
    """A figure as the report names it."""

    file: str  # relative to the report: plots/NAME.svg
    title: str
    caption: str

    @property
    def png_name(self) -> str:
        return os.path.splitext(os.path.basename(self.file))[0] + ".png"


class ReportFigures:
    """The figures of one report, drawn once, saved as PNG of any size on demand (from any thread)."""

    def __init__(self, directory: Path, figures: Sequence[tuple[Shown, MplFigure]]) -> None:
        self.directory = Path(directory)
        self.shown = [s for s, _ in figures]
        self._figures = [f for _, f in figures]
        self._lock = threading.Lock()  # one matplotlib figure is drawn by one thread at a time
        self._cache: OrderedDict[tuple[int, int, int], bytes] = OrderedDict()

    def __len__(self) -> int:
        return len(self.shown)

    def png(self, index: int, width: int, height: int) -> bytes:
        """Figure ``index`` as PNG fitting ``width`` × ``height`` pixels (see :func:`_fit`)."""
        key = (index, max(1, width), max(1, height))
        with self._lock:
            cached = self._cache.get(key)
            if cached is not None:
                self._cache.move_to_end(key)
                return cached
            dpi = _fit(self._figures[index], *key[1:])
            data = _png(self._figures[index], dpi)
            self._cache[key] = data
            while len(self._cache) > CACHE:
                self._cache.popitem(last=False)
            return data

    def png_path(self, index: int) -> Path:
        return self.directory / "plots" / self.shown[index].png_name

    def write_png(self, index: int) -> Path:
        """Figure ``index`` as ``plots/NAME.png`` beside its SVG, at :data:`SAVE_DPI`; the path written.

        The directory is opened and checked as the report's is (app.report.write): no symbolic link followed, no
        directory another user can change; a failure is one sentence (UsageError) naming the path."""
        with self._lock:
            data = _png(self._figures[index], SAVE_DPI)
        path = self.png_path(index)
        try:
            base_fd = open_trusted_dir(self.directory, sticky_ok=True, risk=PNG_RISK)
            try:
                try:
                    make_dir("plots", base_fd)
                except FileExistsError:
                    pass
                plots_fd = open_trusted_dir(self.directory / "plots", "plots", base_fd, risk=PNG_RISK)
                try:
                    write_new(path.name, data, dir_fd=plots_fd)
                finally:
                    os.close(plots_fd)
            finally:
                os.close(base_fd)
        except UsageError as e:
            raise UsageError(f"{path} not written: {e}") from None
        except OSError as e:
            raise UsageError(f"{path}: cannot write the picture there ({e.strerror or e}).") from None
        return path

    def close(self) -> None:
        with self._lock:
            self._figures.clear()
            self.shown.clear()
            self._cache.clear()


def _fit(fig: MplFigure, width: int, height: int) -> float:
    """The resolution (dots per inch) at which ``fig`` is as large as fits ``width`` × ``height`` pixels (at least
    :data:`MIN_DPI`, and at most :data:`MAX_SIDE` pixels a side)."""
    w_in, h_in = fig.get_size_inches()
    width, height = min(max(1, width), MAX_SIDE), min(max(1, height), MAX_SIDE)
    dpi = max(MIN_DPI, min(width / w_in, height / h_in))
    dpi = min(dpi, MAX_SIDE / w_in, MAX_SIDE / h_in)
    return float(dpi)


def _png(fig: MplFigure, dpi: float) -> bytes:
    buf = io.BytesIO()
    # no "Software" text: the same figure gives the same bytes whatever matplotlib's version
    fig.savefig(buf, format="png", dpi=dpi, metadata={"Software": None})
    return buf.getvalue()


def report_order(markdown: str) -> list[str]:
    """The figure files (plots/NAME.svg) in the order report.md shows them."""
    return [m.group(1) for m in FIGURE_LINE.finditer(markdown)]


REPORT_MD_LIMIT = 16 << 20  # bytes of report.md read for the figures' order


def _report_md_order(directory: Path) -> list[str]:
    """The figures' order in ``directory``'s report.md; none when it is missing, too large or unreadable (then
    the figures come in the order the report draws them, which differs only in where its sections put them)."""
    try:
        text = read_regular(directory / "report.md", REPORT_MD_LIMIT)
    except (OSError, NotRegularFile):
        return []
    return report_order(text[:REPORT_MD_LIMIT].decode("utf-8", "replace"))


def draw_report_figures(directory: str | Path, order: Sequence[str] = ()) -> ReportFigures:
    """Every figure of ``directory``'s report, drawn in this thread, in ``order`` (the files report.md names,
    :func:`report_order`, read from the directory's report.md when not given; the rest after them in the order
    they were drawn).  UsageError/ProfilerError as
    :func:`app.report.data.model.load` raises them for a directory that cannot be read."""
    from app.report.data.model import load
    from app.report.figures import plots
    from app.report.write import draw_figures

    directory = Path(directory)
    data = load(directory)
    if not order:
        order = _report_md_order(directory)
    drawn: dict[str, MplFigure] = {}

    def take(fig: MplFigure, name: str) -> None:
        drawn[name] = fig

    plots.TAKEN.sink = take
    try:
        listed = draw_figures(data, directory / "plots")
    finally:
        plots.TAKEN.sink = None
    figures = []
    for f in listed:
        fig = drawn.get(os.path.basename(str(getattr(f, "file", ""))))
        if fig is not None:
            figures.append((Shown(str(f.file), str(f.title), str(f.caption)), fig))
    rank = {name: i for i, name in enumerate(order)}
    figures.sort(key=lambda pair: rank.get(pair[0].file, len(rank)))  # stable: the undrawn-in-report keep theirs
    return ReportFigures(directory, figures)
