"""The report view's tables fit the width at 80×24 and 120×40: whole when they fit, else a page of their columns
beside the columns that tell rows apart (←/→ the others), else a card per row — never a number or a row's label
cut with "…" (Textual's Markdown table cut them: ``Rand… │ 4 │ 1… │ 78.8 │ 42…``).  The results table keeps
whole columns too.

Snapshots: the storage table, the memory tables, the Summary's CrystalDiskMark box and the results of a run with a
flagged point, in colour, with NO_COLOR and in ASCII mode.  Update with ``--snapshot-update`` and review the
SVGs (render them: ``rsvg-convert``)."""

from __future__ import annotations

import html
import json
import re
from pathlib import Path
from typing import Any

import pytest

from app.screens.report import ReportScreen
from app.screens.results import ResultsScreen
from app.tui import create_app
from tests.helpers import suite_runs
from tests.helpers.interval_runs import storage_point, write_storage_run
from tests.tui.helpers import fixed_results, wait_for

GOLDEN = Path("results/golden-20261122-021000")
QUICK = Path("results/quick-20261129-120000")
SUITE = Path("results/mem-suite-20261129-121000")  # MLC's default run: matrices, peak bandwidths, c2c
SIZES = [(80, 24), (120, 40)]
IDS = ["80x24", "120x40"]
# a label or a figure ended with "…": a cell cut to its column (a "…" after a space starts a sentence)
CUT = re.compile(r"[0-9A-Za-z%)\]µ]…")


def quick_run(path: Path) -> None:
    """quick's eight labelled points (CrystalDiskMark's tests), their 95 % intervals kept, one read flagged
    not-on-device (a sparse file's reads: 243k IOPS that never reached the device)."""
    tests = [("SEQ1M Q8T1", 1 << 20, 8, 2000.0), ("SEQ1M Q1T1", 1 << 20, 1, 1500.0),
             ("RND4K Q32T1", 4096, 32, 243000.0), ("RND4K Q1T1", 4096, 1, 20000.0)]
    points = []
    for label, bs, qd, iops in tests:
        for rw in (("read", "write") if bs > 4096 else ("randread", "randwrite")):
            points.append(({**storage_point(rw=rw, bs=bs, iodepth=qd), "group": label}, iops, 0.02))
    write_storage_run(path, points, ci95=True)
    lines = path / "results.jsonl"
    recs = [json.loads(x) for x in lines.read_text().splitlines()]
    recs[4]["flags"] = [{"flag": "not-on-device", "reason": "the device read 0.00× of fio's bytes"}]
    lines.write_text("".join(json.dumps(r) + "\n" for r in recs))
    meta = json.loads((path / "run.json").read_text())
    meta.update(started="2026-11-29T12:00:00+00:00", preset={"name": "quick", "kind": "storage"})
    (path / "run.json").write_text(json.dumps(meta))


@pytest.fixture(scope="module")
def rendered(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The runs with their reports rendered once (drawing the figures is most of a report view's first opening);
    each test copies them, times kept, so that the view finds report.md current."""
    from app.report import render_report

    root = tmp_path_factory.mktemp("runs") / "results"
    fixed_results(root)
    quick_run(root / QUICK.name)
    suite_runs.write_run(root / SUITE.name, suite_runs.mlc_default_lines())
    for run in (GOLDEN, QUICK, SUITE):
        render_report(root / run.name)
    return root


@pytest.fixture(autouse=True)
def fixed_runs(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, rendered: Path) -> None:
    import shutil

    monkeypatch.chdir(tmp_path)  # results/ is relative: the same text on every machine
    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.delenv("PROFILER_TUI_RESULTS", raising=False)
    monkeypatch.delenv("PROFILER_TUI_ASCII", raising=False)
    shutil.copytree(rendered, "results")  # copy2: report.md stays newer than run.json


def app_(ascii: bool = False) -> Any:
    return create_app(devices=[], results_dir="results", clock=lambda: 0.0, ascii=ascii)


async def open_report(pilot: Any, run: Path, heading: str | None = None) -> Any:
    """The report view of ``run``, scrolled so that ``heading`` (a section's title) is on top."""
    pilot.app.push_screen(ReportScreen(run))
    screen = await wait_for(pilot, lambda: getattr(pilot.app.screen, "loaded", None) and pilot.app.screen, 60,
                            "the report")
    await pilot.pause(0.2)
    if heading is not None:
        document = screen.query_one("#report-md").document
        assert document.heading_line(heading) is not None, f"no heading {heading!r}"
        document.scroll_to_heading(heading)
    await pilot.pause(0.3)
    return screen


def screen_lines(svg: str) -> list[str]:
    """The text of a screenshot (Textual's SVG), one string per screen line."""
    lines: dict[float, list[tuple[float, str]]] = {}
    for x, y, text in re.findall(r'<text[^>]*\bx="([0-9.]+)" y="([0-9.]+)"[^>]*>([^<]*)</text>', svg):
        lines.setdefault(float(y), []).append((float(x), html.unescape(text).replace("\xa0", " ")))
    return ["".join(t for _, t in sorted(parts)) for _, parts in sorted(lines.items())]


@pytest.mark.parametrize("width", [80, 120])
def test_no_table_cell_of_the_report_is_cut(width: int) -> None:
    """Every line of the golden run's report (storage, mixed sides, latency distribution, memory, Little's law,
    knees, operating point, queueing) and of a memory suite's (matrices, peak bandwidths, c2c) as the view draws
    it at 80 and 120 columns: no figure or label ends in "…"; and the storage table's rows are told apart — each
    test type, block size and bandwidth shows whole."""
    import asyncio

    async def walk(run: Path) -> list[str]:
        app = app_()
        async with app.run_test(size=(width, 24)) as pilot:
            screen = await open_report(pilot, run)
            viewer = screen.query_one("#report-md").document
            seen: list[str] = []
            y = 0
            while True:
                viewer.scroll_to(y=y, animate=False)
                await pilot.pause(0.05)
                seen += screen_lines(app.export_screenshot())
                if y >= viewer.max_scroll_y:
                    return seen
                y = min(viewer.max_scroll_y, y + viewer.scrollable_content_region.height)

    for run in (GOLDEN, SUITE):
        lines = asyncio.run(walk(run))
        cut = [line.strip() for line in lines if CUT.search(line)]
        assert not cut, f"cells of {run.name} cut at {width} columns: {cut[:5]}"
        if run == GOLDEN:
            text = "\n".join(lines)
            for label in ("Random 70% read 30% write", "Random read", "64 KiB", "1647.1 (1570.8)"):
                assert label in text, f"{label!r} not whole at {width} columns"


def test_arrows_show_the_other_columns_of_the_table_in_view() -> None:
    """At 80 columns the storage table shows a page of its figures beside its labels; → shows the next page (the
    latencies), ← the first again; the labels stay on every page."""
    import asyncio

    from app.widgets.fittable import PagedTable

    app = app_()

    async def walk() -> None:
        async with app.run_test(size=(80, 24)) as pilot:
            screen = await open_report(pilot, GOLDEN, "Storage results")
            (table,) = screen.query_one("#report-md").document.tables_in_view()
            assert isinstance(table, PagedTable)
            first = "\n".join(screen_lines(app.export_screenshot()))
            assert "Columns, page 1 of" in first and "Bandwidth" in first and "Test Type" in first
            await pilot.press("right")
            await pilot.pause(0.1)
            second = "\n".join(screen_lines(app.export_screenshot()))
            assert table.page == 1 and "Columns, page 2 of" in second and "Bandwidth" not in second
            assert "Test Type" in second and "IO Depth" in second and "Random read" in second
            await pilot.press("left")
            await pilot.pause(0.1)
            assert table.page == 0

    asyncio.run(walk())


# --- snapshots --------------------------------------------------------------------------------------------------


# (name, run, heading scrolled to the top, keys pressed, NO_COLOR, ASCII mode)
VIEWS = [
    ("storage_table", GOLDEN, "Storage results", (), False, False),
    ("storage_table_next_columns", GOLDEN, "Storage results", ("right",), False, False),
    ("memory_tables", GOLDEN, "Memory results", (), False, False),
    ("memory_suite_tables", SUITE, "Peak injection", (), False, False),
    ("summary_box_with_a_flagged_point", QUICK, None, (), False, False),
    ("storage_table_no_color", GOLDEN, "Storage results", (), True, False),
    ("storage_table_ascii", GOLDEN, "Storage results", (), False, True),
    ("summary_box_ascii", QUICK, None, (), False, True),
]


@pytest.mark.parametrize("size", SIZES, ids=IDS)
@pytest.mark.parametrize(("run", "heading", "keys", "no_color", "ascii"), [v[1:] for v in VIEWS],
                         ids=[v[0] for v in VIEWS])
def test_report_view(snap_compare, monkeypatch: pytest.MonkeyPatch, size: tuple[int, int], run: Path,
                     heading: str | None, keys: tuple[str, ...], no_color: bool, ascii: bool) -> None:
    if no_color:
        monkeypatch.setenv("NO_COLOR", "1")

    async def before(pilot: Any) -> None:
        await open_report(pilot, run, heading)
        if keys:
            await pilot.press(*keys)
            await pilot.pause(0.1)

    assert snap_compare(app_(ascii=ascii), run_before=before, terminal_size=size)


@pytest.mark.parametrize("size", SIZES, ids=IDS)
@pytest.mark.parametrize("no_color", [False, True], ids=["colour", "no_color"])
def test_results_with_a_flagged_point(snap_compare, monkeypatch: pytest.MonkeyPatch, size: tuple[int, int],
                                      no_color: bool) -> None:
    if no_color:
        monkeypatch.setenv("NO_COLOR", "1")

    async def before(pilot: Any) -> None:
        pilot.app.push_screen(ResultsScreen(QUICK))
        await pilot.pause(0.3)

    assert snap_compare(app_(), run_before=before, terminal_size=size)


@pytest.mark.parametrize("width", [80, 120])
def test_the_results_table_shows_whole_columns_and_the_others_a_key_away(width: int) -> None:
    """The results table of quick with a flagged point: the columns shown fit the width (Textual's table drew
    the ones beyond it cut at the edge: CPU % as "12"); every column is on a page, # and test on each, and the
    flagged point's # says so while its flags are on another page."""
    import asyncio

    app = app_()

    async def walk() -> None:
        async with app.run_test(size=(width, 24)) as pilot:
            pilot.app.push_screen(ResultsScreen(QUICK))
            await pilot.pause(0.5)
            table = pilot.app.screen.query_one("#results")
            seen: set[str] = set()
            for _ in range(4):
                labels = [str(c.label) for c in table.columns.values()]
                used = sum(c.get_render_width(table) for c in table.columns.values())
                assert used <= table.scrollable_content_region.width, f"{labels} cut at {width} columns"
                assert labels[:2] == ["#", "test"]
                seen |= set(labels)
                numbers = [str(table.get_row_at(n)[0]) for n in range(table.row_count)]
                assert ("5!" in numbers) == ("flags" not in labels)
                await pilot.press("right")
                await pilot.pause(0.1)
            assert {"IOPS", "MB/s", "p99 µs", "CPU %", "flags"} <= seen

    asyncio.run(walk())


# --- the layout alone -------------------------------------------------------------------------------------------


def test_every_figure_of_the_golden_report_shows_whole_at_every_width() -> None:
    """Each table of the golden report (tests/data/report/golden/report.md) at every width from 40 to 200
    columns: no line wider than the width, and each figure (a right-aligned cell) of each row whole on some page
    (or its card; a figure of several parts may be wrapped between them)."""
    from app.core.textable import ReadTable, read_markdown
    from app.widgets.fittable import layout

    golden = Path(__file__).resolve().parents[1] / "data" / "report" / "golden" / "report.md"
    found = [t for t in read_markdown(golden.read_text()) if isinstance(t, ReadTable)]
    assert len(found) > 20
    for table in found:
        for width in range(40, 201, 9):
            first = layout(table.header, table.rows, table.right, width, 0)
            pages = [layout(table.header, table.rows, table.right, width, p) for p in range(first.pages)]
            lines = [line.text for page in pages for line in page.lines]
            assert all(len(line) <= width for line in lines), (table.header, width)
            words = {w for line in lines for w in line.split()}
            for row in table.rows:
                for i in table.right:
                    assert set(row[i].split()) <= words, (row[i], table.header, width)
