"""The report's figures as pictures (app.widgets.figure): the figure view at 80x24 with the half-block renderer,
paging with ←/→, ``o`` writing plots/NAME.png beside the SVG (and one sentence when it cannot), and the report
view's Figures tab.  The renderer is forced (PROFILER_TUI_IMAGES=halfblock): no terminal is asked."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from textual.worker import WorkerFailed

from app.screens.figures import FiguresScreen
from app.screens.report import ReportScreen
from app.tui import create_app
from tests.tui.helpers import DEVICES, FIXED_PRESETS

SIZE = (80, 24)
GOLDEN = Path(__file__).resolve().parents[1] / "data" / "report" / "golden-run"


@pytest.fixture(autouse=True)
def fixed_world(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("PROFILER_TUI_PRESETS", str(FIXED_PRESETS))
    monkeypatch.setenv("PROFILER_TUI_IMAGES", "halfblock")
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("NO_COLOR", raising=False)


@pytest.fixture()
def run(tmp_path: Path) -> Path:
    path = tmp_path / "results" / "golden"
    shutil.copytree(GOLDEN, path)
    return Path("results/golden")  # relative: the same text on every machine


def app_():
    return create_app(devices=DEVICES, results_dir="results", clock=lambda: 0.0)


async def settled(pilot) -> None:
    """Every worker (the figures' drawing, then the picture) done and the screen redrawn.  A worker that ended in
    an error the screen shows (a refused save) raises from the wait while Textual still lists it, and not once it
    has dropped it: which one depends on the machine's load, so it is let pass (each test checks the words shown)."""
    for _ in range(4):
        try:
            await pilot.app.workers.wait_for_complete()
        except WorkerFailed:
            pass
        await pilot.pause()


def figures_view(run: Path):
    async def before(pilot) -> None:
        await pilot.app.push_screen(FiguresScreen(run))
        await settled(pilot)
    return before


def test_figure_view_halfblock(snap_compare, run: Path) -> None:
    assert snap_compare(app_(), run_before=figures_view(run), terminal_size=SIZE)


def test_figure_view_third_figure(snap_compare, run: Path) -> None:
    async def before(pilot) -> None:
        await figures_view(run)(pilot)
        await pilot.press("right", "right")
        await settled(pilot)
    assert snap_compare(app_(), run_before=before, terminal_size=SIZE)


async def test_paging_wraps_and_names_the_figure(run: Path) -> None:
    app = app_()
    async with app.run_test(size=SIZE) as pilot:
        await figures_view(run)(pilot)
        head = str(app.screen.query_one("#figure-head").render())
        assert head.startswith("figure 1 of 10 · Throughput and latency vs block size")
        await pilot.press("left")
        await settled(pilot)
        assert str(app.screen.query_one("#figure-head").render()).startswith("figure 10 of 10 · ")
        # the picture is half-blocks of the figure (its white background and coloured curves), not a placeholder
        image = app.screen.query_one(".figure-image")
        text = "".join(seg.text for strip in image.render_lines(image.region.reset_offset) for seg in strip)
        assert "▀" in text or "▄" in text


async def test_o_writes_the_png_beside_the_svg(run: Path) -> None:
    app = app_()
    async with app.run_test(size=SIZE) as pilot:
        await figures_view(run)(pilot)
        await pilot.press("right", "o")
        await settled(pilot)
        png = run / "plots" / "storage-vs-queue-depth.png"
        assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        assert f"Written: {png}" in str(app.screen.query_one("#figure-status").render())


async def test_o_in_a_directory_it_cannot_write_is_one_sentence(run: Path, tmp_path: Path) -> None:
    if os.geteuid() == 0:
        pytest.skip("root writes a read-only directory")
    app = app_()
    async with app.run_test(size=SIZE) as pilot:
        await figures_view(run)(pilot)
        (run / "plots").mkdir(exist_ok=True)
        os.chmod(run / "plots", 0o555)
        try:
            await pilot.press("o")
            await settled(pilot)
        finally:
            os.chmod(run / "plots", 0o755)
        status = str(app.screen.query_one("#figure-status").render())
        assert status.startswith(f"{run / 'plots' / 'storage-vs-block-size.png'}: cannot write the picture there")
        assert "Traceback" not in status and "\n" not in status.strip()


async def test_o_refuses_a_plots_link_another_user_placed(run: Path, tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    shutil.rmtree(run / "plots", ignore_errors=True)
    (run / "plots").symlink_to(elsewhere)
    app = app_()
    async with app.run_test(size=SIZE) as pilot:
        await figures_view(run)(pilot)
        await pilot.press("o")
        await settled(pilot)
        status = str(app.screen.query_one("#figure-status").render())
        assert status.startswith(f"{run / 'plots' / 'storage-vs-block-size.png'} not written: ")
        assert "Traceback" not in status
    assert list(elsewhere.iterdir()) == []


async def test_report_view_figures_tab(run: Path) -> None:
    app = app_()
    async with app.run_test(size=SIZE) as pilot:
        await app.push_screen(ReportScreen(run))
        await settled(pilot)
        assert not app.screen.query("#report-figure-view")  # nothing drawn for a reader who does not look
        await pilot.press("3")
        await settled(pilot)
        assert str(app.screen.query_one("#figure-head").render()).startswith("figure 1 of 10 · ")
        markdown = app.screen.loaded.markdown
        assert "> **Figure 1: Throughput and latency vs block size** — press 3 (Figures) to see it" in markdown


async def test_f_on_the_results_screen_opens_the_figures(run: Path) -> None:
    from app.screens.results import ResultsScreen

    app = app_()
    async with app.run_test(size=SIZE) as pilot:
        await app.push_screen(ResultsScreen(run))
        await pilot.pause()
        await pilot.press("f")
        await settled(pilot)
        assert isinstance(app.screen, FiguresScreen)
        assert str(app.screen.query_one("#figure-head").render()).startswith("figure 1 of 10 · ")
        await pilot.press("escape")
        assert isinstance(app.screen, ResultsScreen)


async def test_pictures_off_and_a_bad_variable_in_one_sentence(run: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PROFILER_TUI_IMAGES", "none")
    app = app_()
    async with app.run_test(size=SIZE) as pilot:
        await figures_view(run)(pilot)
        box = str(app.screen.query_one("#figure-box Static").render())
        svg = run / "plots" / "storage-vs-block-size.svg"
        assert box == f"Pictures are off (PROFILER_TUI_IMAGES=none); the figure is {svg}."
    monkeypatch.setenv("PROFILER_TUI_IMAGES", "svg")
    app = app_()
    async with app.run_test(size=SIZE) as pilot:
        await figures_view(run)(pilot)
        status = str(app.screen.query_one("#figure-status").render())
        assert status.startswith("PROFILER_TUI_IMAGES='svg' is not one of kitty, sixel, halfblock, none: the terminal "
                                 "decides.")
        assert app.screen.query(".figure-image")  # half-blocks meanwhile: Pilot has no terminal to ask


async def test_the_figure_box_never_draws_its_own_name_while_waiting(run: Path) -> None:
    """An empty container draws its name: "Center#figure-box" showed while the figures were drawn."""
    app = app_()
    async with app.run_test(size=SIZE) as pilot:
        await app.push_screen(FiguresScreen(run))
        await pilot.pause()
        box = app.screen.query_one("#figure-box")
        assert box.children and "figure-box" not in app.export_screenshot()
        await settled(pilot)
        assert box.children and "figure-box" not in app.export_screenshot()
