"""The report's figures as pictures: one at a time, ←/→ to page, ``o`` to write it as PNG beside its SVG.

The pictures are the report's own matplotlib figures (:mod:`app.report.raster`) saved as PNG at the size of the
box in cells × the terminal's cell in pixels, drawn by textual-image with the renderer
:mod:`app.widgets.termcaps` chose: the Kitty graphics protocol, Sixel, or half-block characters.
"""

from __future__ import annotations

import io
import sys
import threading
from pathlib import Path
from typing import Any

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Center, Vertical
from textual.widget import Widget
from textual.widgets import Static
from textual.worker import Worker, WorkerState

from app.core.errors import ProfilerError
from app.core.sanitize import clean_text
from app.report.raster import ReportFigures, draw_report_figures
from app.widgets import termcaps

_IMPORT = threading.Lock()

DRAWING = "Drawing the figure…"
LOADING = "Drawing the report's figures…"
NO_FIGURES = "This report has no figures."
FAILED = "The figures could not be drawn: {error}"
HEAD = "figure {n} of {total} · {title}"
KEYS = "←/→ figures · o save PNG"
NO_PICTURES = "Pictures are off ({why}); the figure is {path}."
WRITTEN = "Written: {path}"


def textual_image(caps: termcaps.Caps) -> Any:
    """textual_image.widget, imported so that it asks the terminal nothing itself: its own import-time queries
    (Sixel and Kitty, written to stdout and read from stdin, 0.1 s each) would race Textual for the terminal's
    answers, so stdout looks like no terminal while it loads, and its cell size is ours."""
    with _IMPORT:
        if "textual_image.widget" in sys.modules:
            return sys.modules["textual_image.widget"]
        from textual_image import _terminal

        _terminal.get_cell_size._result = _terminal.CellSize(*caps.cell)  # type: ignore[attr-defined]
        real = sys.__stdout__
        setattr(sys, "__stdout__", io.StringIO())  # isatty() False: no query at import
        try:
            import textual_image.widget as widget
        finally:
            setattr(sys, "__stdout__", real)
        return widget


def _tmux_tgp() -> type[Widget]:
    """The Kitty protocol's image widget with every graphics command wrapped in tmux's passthrough (the picture's
    cells are Unicode placeholders that tmux shows as text; only the commands must reach the outer terminal)."""
    from textual_image.renderable import tgp
    from textual_image.widget._base import Image as BaseImage

    def send(payload: str | None = None, **keys: int | str | None) -> None:
        fields = ",".join(f"{k}={v}" for k, v in keys.items() if v is not None)
        command = f"\x1b_G{fields}{';' + payload if payload else ''}\x1b\\".encode()
        out = sys.__stdout__
        if out is not None:
            out.buffer.write(termcaps.passthrough(command))
            out.flush()

    class TmuxTGP(tgp.Image):
        def cleanup(self) -> None:
            if self.terminal_image_id:
                send(a="d", I=self.terminal_image_id)
                self.terminal_image_id = None

        def _send_image_to_terminal(self, width: int, height: int) -> None:
            self.terminal_image_id = next(tgp.Image._image_id_counter)
            data = self._image_data.scaled(width, height).to_base64()
            while data:
                chunk, data = data[:4096], data[4096:]
                send(i=self.terminal_image_id, m=1 if data else 0, f=100, payload=chunk, q=2)

        def _create_virtual_placement(self, width: int, height: int) -> None:
            send(a="p", i=self.terminal_image_id, c=width, r=height, U=1, q=2)

    class TmuxTGPImage(BaseImage, Renderable=TmuxTGP):
        pass

    return TmuxTGPImage


def image_class(caps: termcaps.Caps) -> Any:
    """textual-image's widget for the renderer; None for ``none``."""
    if caps.renderer == "none":
        return None
    widget = textual_image(caps)
    if caps.renderer == "kitty":
        return _tmux_tgp() if caps.tmux else widget.TGPImage
    if caps.renderer == "sixel":
        return widget.SixelImage
    return widget.HalfcellImage


def picture(png: bytes, caps: termcaps.Caps) -> Any:
    """The PIL image textual-image draws.  For half-blocks each line is first thickened to about half a cell:
    one character shows the average of a cell's pixels, in which a one-pixel curve would fade to a pale tint."""
    from PIL import Image, ImageFilter

    image = Image.open(io.BytesIO(png)).convert("RGB")
    if caps.renderer == "halfblock":
        size = max(3, caps.cell[0] // 2) | 1  # MinFilter takes an odd size
        image = image.filter(ImageFilter.MinFilter(size))
    return image


class FigureView(Vertical, can_focus=True):
    """The figures of the report of ``directory``, drawn in a thread when the view is mounted."""

    DEFAULT_CSS = """
    FigureView { height: 1fr; }
    FigureView #figure-head { height: 1; text-style: bold; }
    FigureView #figure-box { height: 1fr; align: center middle; }
    FigureView #figure-box > .figure-image { width: auto; height: auto; }
    FigureView #figure-caption { height: auto; max-height: 3; color: $text-muted; }
    FigureView #figure-status { height: auto; max-height: 2; }
    """
    BINDINGS = [
        Binding("left", "step(-1)", "Prev figure"),
        Binding("right", "step(1)", "Next figure"),
        Binding("o", "save", "Save PNG"),
    ]

    def __init__(self, directory: Path, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.directory = Path(directory)
        self.caps = termcaps.current()
        self.figures: ReportFigures | None = None
        self.index = 0
        self.shown: tuple[int, int, int] | None = None  # (figure, width px, height px) on screen

    def compose(self) -> ComposeResult:
        yield Static(LOADING, id="figure-head")
        # never empty: an empty container draws its own name ("Center#figure-box") until the picture comes
        with Center(id="figure-box"):
            yield Static(DRAWING, classes="figure-wait")
        yield Static("", id="figure-caption")
        yield Static(Text(self.keys, overflow="fold"), id="figure-status")

    def on_mount(self) -> None:
        if getattr(self.app, "ascii", False):  # a console that takes only ASCII draws no picture of any kind
            self.caps = termcaps.Caps("none", self.caps.cell, False, "ASCII mode")
        directory = self.directory
        self.run_worker(lambda: draw_report_figures(directory), thread=True, group="figures-draw", exclusive=True,
                        exit_on_error=False)

    def on_unmount(self) -> None:
        if self.figures is not None:
            self.figures.close()

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        group = event.worker.group
        if not group.startswith("figures-"):
            return
        event.stop()
        if event.state == WorkerState.ERROR:
            self._failed(group, event.worker.error)
        elif event.state == WorkerState.SUCCESS:
            result = event.worker.result
            if group == "figures-draw" and isinstance(result, ReportFigures):
                self.figures = result
                self.show_figure()
            elif group == "figures-png" and isinstance(result, tuple):
                self._picture(*result)
            elif group == "figures-save" and isinstance(result, Path):
                self._status(WRITTEN.format(path=result))
                self.notify(WRITTEN.format(path=result), timeout=8)

    def _failed(self, group: str, error: BaseException | None) -> None:
        text = str(error) if isinstance(error, (ProfilerError, OSError)) else f"{type(error).__name__}: {error}"
        if group == "figures-save":
            self._status(text, error=True)
            self.notify(text, severity="error", timeout=10)
        else:
            head = Text(clean_text(FAILED.format(error=text)), style="red")
            self.query_one("#figure-head", Static).update(head)

    def _status(self, text: str, error: bool = False) -> None:
        # folded, not wrapped at spaces: a long path stays on the line it starts on
        self.query_one("#figure-status", Static).update(Text(clean_text(text), style="red" if error else "",
                                                             overflow="fold"))

    def action_step(self, step: int) -> None:
        if self.figures is None or not len(self.figures):
            return
        self.index = (self.index + step) % len(self.figures)
        self.show_figure()

    def action_save(self) -> None:
        figures, index = self.figures, self.index
        if figures is None or not len(figures):
            return
        self.run_worker(lambda: figures.write_png(index), thread=True, group="figures-save", exclusive=True,
                        exit_on_error=False)

    def on_resize(self) -> None:
        self.call_after_refresh(self.show_figure)

    def show_figure(self) -> None:
        """The figure at ``index``: its title and caption now, its picture once drawn at the box's size."""
        figures = self.figures
        if figures is None:
            return
        head = self.query_one("#figure-head", Static)
        if not len(figures):
            head.update(NO_FIGURES)
            return
        shown = figures.shown[self.index]
        # a figure's title and caption name a preset group's label, a host: text from the results, cleaned
        head.update(Text(HEAD.format(n=self.index + 1, total=len(figures), title=clean_text(shown.title)),
                         no_wrap=True, overflow="ellipsis"))
        self.query_one("#figure-caption", Static).update(Text(clean_text(shown.caption, newlines=True)))
        if self.caps.renderer == "none":
            self._picture(self.index, 0, 0, b"")
            return
        box = self.query_one("#figure-box")
        cols, rows = box.content_size.width, box.content_size.height
        if cols < 1 or rows < 1:
            return
        index = self.index
        width, height = cols * self.caps.cell[0], rows * self.caps.cell[1]
        if self.shown == (index, width, height):
            return
        self.run_worker(lambda: (index, width, height, figures.png(index, width, height)), thread=True,
                        group="figures-png", exclusive=True, exit_on_error=False)

    def _picture(self, index: int, width: int, height: int, png: bytes) -> None:
        if index != self.index:  # paged on meanwhile: that figure's picture comes next
            return
        box = self.query_one("#figure-box")
        box.remove_children()
        self.shown = (index, width, height)
        cls = image_class(self.caps)
        if cls is None or self.figures is None:
            path = self.directory / self.figures.shown[index].file if self.figures else self.directory
            box.mount(Static(Text(clean_text(NO_PICTURES.format(why=self.caps.why or "none", path=path)))))
            self._status(self.keys)
            return
        box.mount(cls(picture(png, self.caps), classes="figure-image"))
        self._status(self.keys)

    @property
    def keys(self) -> str:
        """The status line's key hint, after the sentence about a PROFILER_TUI_IMAGES value that names nothing."""
        return f"{self.caps.warning} {KEYS}" if self.caps.warning else KEYS
