"""The figure view in a real pseudo-terminal: the app asks the terminal once before Textual starts, and the bytes
it then writes carry Kitty graphics commands when the terminal answered the Kitty query, a Sixel image when its
DA1 answer lists 4, and neither when it answered plainly or not at all (half-blocks)."""

from __future__ import annotations

import shutil
import time
from pathlib import Path

import pytest

from tests.tui.pty_harness import PtyApp

GOLDEN = Path(__file__).resolve().parents[1] / "data" / "report" / "golden-run"
KITTY_QUERY = "\x1b_Gi=31,s=1,v=1,a=q,t=d,f=24;AAAA\x1b\\"
DA1 = "\x1b[c"
KITTY_IMAGE = "\x1b_Gi="  # a transmission (f=100: PNG) and a placement (a=p), after the query
SIXEL_IMAGE = '\x1bP0;0;0q"1;1;'

# the app's own entry (app.tui.run_tui) shows the devices first; this opens the figure view directly, the same
# way: the detection, then Textual
CODE = """
import os
from pathlib import Path
from textual.app import App
from app.widgets.termcaps import prepare
caps = prepare()
from app.screens.figures import FiguresScreen

class Figures(App):
    def on_mount(self):
        self.push_screen(FiguresScreen(Path(os.environ["FIGURES_DIR"])))

Figures().run()
"""


@pytest.fixture()
def run(tmp_path: Path) -> Path:
    path = tmp_path / "golden"
    shutil.copytree(GOLDEN, path)
    return path


def figure_output(tmp_path: Path, run: Path, answer: str | None, picture: str,
                  env: dict[str, str] | None = None) -> str:
    """What the app wrote to the terminal until the first figure's ``picture`` bytes came (the picture follows
    the title: it is drawn in a worker)."""
    with PtyApp(tmp_path, code=CODE, env={"FIGURES_DIR": str(run), **(env or {})}) as app:
        if answer is not None:
            deadline = time.monotonic() + 20
            while DA1 not in app.raw() and time.monotonic() < deadline:
                time.sleep(0.02)
            app.send(answer, pause=0)
        app.wait_for("figure 1 of 10", timeout=60)
        deadline = time.monotonic() + 30
        while picture not in app.raw().split("figure 1 of 10", 1)[-1]:
            assert time.monotonic() < deadline, f"no {picture!r} after the title:\n" + app.text()[-2000:]
            time.sleep(0.05)
        time.sleep(0.2)  # the rest of that frame
        return app.raw()


@pytest.mark.parametrize(("answer", "kitty", "sixel"), [
    ("\x1b_Gi=31;OK\x1b\\\x1b[?62;22c", True, False),
    ("\x1b[?62;4;22c", False, True),
    ("\x1b[?62;22c", False, False),
    (None, False, False),  # no answer: the query gives up after 0.3 s
])
def test_the_answer_decides_the_escape_sequences(tmp_path: Path, run: Path, answer: str | None, kitty: bool,
                                                 sixel: bool) -> None:
    picture = "f=100" if kitty else SIXEL_IMAGE if sixel else "▀"
    out = figure_output(tmp_path, run, answer, picture, env={"PROFILER_TUI_IMAGES": ""})
    assert out.count(KITTY_QUERY) == 1 and out.count(DA1) == 1  # asked once, before anything else was drawn
    assert out.index(DA1) < out.index("\x1b[?1049h")  # before Textual took the screen
    after = out.replace(KITTY_QUERY, "")
    assert (KITTY_IMAGE in after and "f=100" in after) is kitty
    assert (SIXEL_IMAGE in after) is sixel
    if not kitty and not sixel:
        assert "▀" in out or "▄" in out  # half-blocks


def test_forced_renderer_asks_nothing(tmp_path: Path, run: Path) -> None:
    out = figure_output(tmp_path, run, None, SIXEL_IMAGE, env={"PROFILER_TUI_IMAGES": "sixel"})
    assert DA1 not in out and KITTY_QUERY not in out
    assert SIXEL_IMAGE in out


def test_kitty_inside_tmux_goes_through_its_passthrough(tmp_path: Path, run: Path) -> None:
    out = figure_output(tmp_path, run, None, "a=p,", env={"PROFILER_TUI_IMAGES": "kitty", "TMUX": "/tmp/none,1,0"})
    wrapped = "\x1bPtmux;\x1b\x1b_G"
    assert out.count(wrapped + "i=") >= 1 and out.count(wrapped + "a=p,") == 1  # the picture and its placement
    assert "\x1b_G" not in out.replace("\x1b\x1b_G", "")  # no command sent bare
