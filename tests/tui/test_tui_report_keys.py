"""The report view answers its keys at once: report.md is drawn by one widget as lines (Textual's Markdown made a
widget of every block and table cell, hundreds, laid out again on opening, on ``t`` and on each resize: seconds on
a loaded machine), laid out as far as the screen shows and the rest between keys; a view opened before is shown
again as it was left while its report.md has not changed.  Opened, left and opened again, on one run and another,
it shows each run's report every time (a first try of showing the report in parts hung on the second opening)."""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path
from typing import Any

import pytest
from textual.widgets import Tree

from app.screens.messages import ShowReport
from app.screens.report import ReportScreen
from app.tui import create_app
from app.widgets.reportdoc import ReportViewer
from tests.tui.helpers import fixed_results, wait_for
from tests.tui.test_tui_report_tables import screen_lines

GOLDEN = Path("results/golden-20261122-021000")
CLIFF = Path("results/cliff-20261123-212547")


@pytest.fixture(scope="module")
def rendered(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from app.report import render_report

    root = tmp_path_factory.mktemp("runs") / "results"
    fixed_results(root)
    for run in (GOLDEN, CLIFF):
        render_report(root / run.name)
    return root


@pytest.fixture(autouse=True)
def runs(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, rendered: Path) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("PROFILER_TUI_RESULTS", raising=False)
    shutil.copytree(rendered, "results")  # copy2: report.md stays newer than run.json


async def open_view(pilot: Any, run: Path) -> tuple[ReportScreen, float]:
    """The report view of ``run`` as the results and the runs browser open it (ShowReport), and the seconds until
    its report is shown."""
    before = pilot.app.screen
    t0 = time.perf_counter()
    pilot.app.post_message(ShowReport(run))
    screen = await wait_for(pilot, lambda: pilot.app.screen is not before and isinstance(pilot.app.screen, ReportScreen)
                            and pilot.app.screen.loaded and pilot.app.screen, 60, f"the report of {run}")
    elapsed = time.perf_counter() - t0
    assert screen.path == run
    await pilot.pause(0.1)
    return screen, elapsed


def shown(pilot: Any) -> str:
    return "\n".join(screen_lines(pilot.app.export_screenshot()))


async def back(pilot: Any, screen: ReportScreen) -> None:
    await pilot.press("escape")
    await wait_for(pilot, lambda: pilot.app.screen is not screen, 10, "the screen under the report view")


def test_the_report_view_opens_again_and_on_another_run_and_answers_its_keys() -> None:
    import asyncio

    async def walk() -> None:
        app = create_app(devices=[], results_dir="results", clock=lambda: 0.0)
        async with app.run_test(size=(80, 24)) as pilot:
            first, _ = await open_view(pilot, GOLDEN)
            # one widget draws the document, whatever its length (Textual's Markdown: one per block and cell)
            assert len(first.query("#report-md *")) < 10, len(first.query("#report-md *"))
            assert "Performance report" in shown(pilot)
            await pilot.press("pagedown")
            await pilot.pause(0.1)
            scrolled = first.query_one("#report-md", ReportViewer).document.scroll_y
            assert scrolled > 0
            await back(pilot, first)

            again, seconds = await open_view(pilot, GOLDEN)
            assert again is first, "the view of an unchanged report.md is shown again as it was left"
            assert again.query_one("#report-md", ReportViewer).document.scroll_y == scrolled
            assert seconds < 2.0, seconds  # a tenth of that here, unloaded
            await pilot.press("home")
            await pilot.pause(0.1)
            assert "Performance report" in shown(pilot)
            for _ in range(2):  # the contents, shown and hidden again, answer each time
                await pilot.press("t")
                await pilot.pause(0.1)
            # enter on a section of the contents brings its heading to the top of the report
            await pilot.press("t")
            await pilot.pause(0.1)
            tree = again.query_one("#report-md", ReportViewer).table_of_contents.query_one(Tree)
            await pilot.press("down", "down", "down")
            node = tree.cursor_node
            assert node is not None and node.data is not None
            await pilot.press("enter")
            await pilot.pause(0.2)
            document = again.query_one("#report-md", ReportViewer).document
            assert document.scroll_y == min(document.block_line(node.data), document.max_scroll_y) > 0
            assert document.blocks[node.data].text.plain == str(node.label)
            await pilot.press("t")
            await back(pilot, again)

            other, _ = await open_view(pilot, CLIFF)
            assert other is not first and "Performance report" in shown(pilot)
            source = first.query_one("#report-md", ReportViewer).document.source
            assert other.query_one("#report-md", ReportViewer).document.source != source
            await back(pilot, other)

            # report.md rendered again: a new view shows the new text
            md = GOLDEN / "report.md"
            md.write_text(md.read_text().replace("# Performance report", "# Performance report, rendered again", 1))
            later = time.time() + 5
            os.utime(md, (later, later))
            renewed, _ = await open_view(pilot, GOLDEN)
            assert renewed is not first and "rendered again" in shown(pilot)
            await back(pilot, renewed)
            final, _ = await open_view(pilot, GOLDEN)
            assert final is renewed
            await back(pilot, final)

    asyncio.run(walk())


def test_a_long_report_is_shown_before_it_is_laid_out_whole_and_keys_answer_meanwhile(tmp_path: Path) -> None:
    """A report ten times the golden run's: the first screen is drawn and ``t``, ``End`` and ``←/→`` answer,
    each within a bound far under what laying the whole out took with Textual's Markdown (the bounds are loose:
    a loaded machine)."""
    import asyncio

    md = GOLDEN / "report.md"
    text = md.read_text()
    head, _, rest = text.partition("\n## ")
    md.write_text(head + "".join(f"\n## {'Part ' + str(n) + ': ' if n else ''}{rest}" for n in range(10)))
    later = time.time() + 5
    os.utime(md, (later, later))

    async def walk() -> None:
        app = create_app(devices=[], results_dir="results", clock=lambda: 0.0)
        async with app.run_test(size=(80, 24)) as pilot:
            screen, seconds = await open_view(pilot, GOLDEN)
            assert seconds < 10.0, seconds
            document = screen.query_one("#report-md", ReportViewer).document
            for key in ("t", "t", "end", "home"):
                t0 = time.perf_counter()
                await pilot.press(key)
                assert time.perf_counter() - t0 < 3.0, key
            await pilot.pause(0.1)
            assert "Performance report" in shown(pilot)
            await wait_for(pilot, lambda: document.laid_out().done(document.blocks), 60, "the whole laid out")
            await pilot.press("end")
            await pilot.pause(0.1)
            assert document.scroll_y == document.max_scroll_y > 0

    asyncio.run(walk())
