"""The runs browser and what it leads to, driven by Pilot with runs made by real fio in tmp_path: opening a
run, filtering by typing, resuming a run the test interrupted (its loop-device target confirmed again),
comparing two runs and a run with a reference sheet, the report inside the TUI, and importing fio JSON."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from textual.widgets import DataTable, Input

from app.cli.compare import compare_runs
from app.screens.compare import CompareScreen, _ratio, better_cells
from app.screens.confirm import ConfirmTarget
from app.screens.report import ReportScreen
from app.screens.run import RunScreen
from app.screens.runs import RunsScreen
from app.store.runs import list_runs
from app.tui import create_app
from app.widgets.reportdoc import ReportViewer
from app.widgets.series import SeriesPlot
from tests.helpers.loopdev import loop_device
from tests.tui.helpers import open_import, open_runs, results_shown, wait_for

ROOT = Path(__file__).resolve().parents[2]
SIZE = (80, 24)


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "app", *args], capture_output=True, text=True, timeout=300, cwd=ROOT)


def quick_run(root: Path, name: str, *sets: str, target: Path | str | None = None) -> Path:
    out = root / name
    args = ["run", "custom", "--yes", "--out", str(out), "--target", str(target or root / "t.img"),
            "--set", "runtime=1", "--set", "ramp_time=0", "--set", "size=16m"]
    proc = cli(*args, *[a for s in sets for a in ("--set", s)])
    assert proc.returncode == 0, proc.stderr
    return out


def interrupted_run(out: Path, target: str, *sets: str) -> None:
    """``run custom`` of three 1 s points stopped with SIGINT once the first is in results.jsonl (polled every
    50 ms: the second point is still starting or running then)."""
    proc = subprocess.Popen([sys.executable, "-m", "app", "run", "custom", "--yes", "--out", str(out),
                             "--target", target, "--set", "runtime=1", "--set", "ramp_time=0", "--set", "size=16m",
                             "--set", "bs=4k,8k,16k", *[a for s in sets for a in ("--set", s)]],
                            cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            f = out / "results.jsonl"
            if f.exists() and f.read_text().count("\n") >= 1:
                break
            time.sleep(0.05)
        proc.send_signal(signal.SIGINT)
        proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 130
    assert json.loads((out / "run.json").read_text())["status"] == "interrupted"


def table_rows(screen: RunsScreen) -> list[list[str]]:
    table = screen.query_one("#runs", DataTable)
    return [[str(c) for c in table.get_row_at(i)] for i in range(table.row_count)]


async def test_the_browser_lists_open_and_filters_real_runs(tmp_path: Path) -> None:
    root = tmp_path / "results"
    a = quick_run(root, "custom-20261101-100000")
    b = quick_run(root, "custom-20261102-100000", "rw=randwrite")
    interrupted_run(root / "custom-20261103-100000", str(root / "t.img"))
    (root / "not-a-run").mkdir()
    (root / "broken").mkdir()
    (root / "broken" / "run.json").write_text("{ not json")
    app = create_app(devices=[], results_dir=root, clock=lambda: 0.0)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_runs(pilot)
        rows = table_rows(screen)
        assert len(rows) == 4, rows
        by_status = {r[4]: r for r in rows}
        assert set(by_status) == {"complete", "interrupted", "unreadable"}, rows
        assert by_status["interrupted"][3] == "1/3"
        assert [r[4] for r in rows[:3]] == ["interrupted", "complete", "complete"], "newest first"
        # typing a letter that is no key starts the filter
        await pilot.press("1", "1", "0", "2")  # a word of b's directory name
        assert screen.query_one("#runs-filter", Input).value == "1102"
        await wait_for(pilot, lambda: len(screen.shown) == 1, 5, "the filtered list")
        assert screen.shown[0].path == b
        await pilot.press("escape")  # clears the filter, back on the table
        await wait_for(pilot, lambda: len(screen.shown) == 4, 5, "the whole list again")
        screen.query_one("#runs", DataTable).move_cursor(row=[r.path for r in screen.shown].index(a))
        await pilot.press("enter")
        results = await results_shown(pilot, 10)
        assert results.path == a and len(results.records) == 1
        await pilot.press("escape")
        await wait_for(pilot, lambda: app.screen is screen, 5, "back on the runs")


async def test_resume_an_interrupted_run_on_a_loop_device_from_the_browser(tmp_path: Path) -> None:
    root = tmp_path / "results"
    out = root / "custom-20261103-100000"
    with loop_device(tmp_path, size_mb=32, ram=True) as dev:
        interrupted_run(out, dev.path, "rw=randwrite")
        kept = (out / "results.jsonl").read_text().splitlines()
        app = create_app(devices=[], results_dir=root, clock=lambda: 0.0)
        async with app.run_test(size=SIZE) as pilot:
            screen = await open_runs(pilot)
            assert screen.shown[0].status == "interrupted"
            await pilot.press("ctrl+g")
            confirm = await wait_for(pilot, lambda: isinstance(app.screen, ConfirmTarget) and app.screen, 15,
                                     "the target confirmation")
            assert confirm.path == os.path.realpath(dev.path) and confirm.write_verdict == "ok"
            await pilot.press("enter")
            run = await wait_for(pilot, lambda: isinstance(app.screen, RunScreen) and app.screen, 10, "the run screen")
            assert run.request.resume and run.request.out == out
            await wait_for(pilot, lambda: run.state.finished is not None, 60, "the resumed run to finish")
            assert run.state.status == "complete" and run.state.done == 3
        lines = (out / "results.jsonl").read_text().splitlines()
    assert lines[:len(kept)] == kept and len(lines) == 3
    assert json.loads((out / "run.json").read_text())["status"] == "complete"


async def test_compare_two_runs_and_a_run_with_a_reference_sheet_then_export(tmp_path: Path) -> None:
    root = tmp_path / "results"
    a = quick_run(root, "custom-20261101-100000")
    b = quick_run(root, "custom-20261102-100000", "iodepth=1,8")  # QD1 matches A's point; QD8 is only in B
    quick_run(root, "custom-20261102-100001", "bs=8k")
    app = create_app(devices=[], results_dir=root, clock=lambda: 0.0)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_runs(pilot)
        table = screen.query_one("#runs", DataTable)
        table.move_cursor(row=[r.path for r in screen.shown].index(a))
        await pilot.press("ctrl+t")
        table.move_cursor(row=[r.path for r in screen.shown].index(b))
        await pilot.press("ctrl+t", "ctrl+s")
        view = await wait_for(pilot, lambda: isinstance(app.screen, CompareScreen) and app.screen.markdown
                              and app.screen, 30, "the comparison")
        assert view.markdown == compare_runs(str(a), str(b)), "the same markdown as profiler-tui compare"
        tables = list(view.query(".compare-table").results(DataTable))
        assert tables, "the ratio table is shown as a table"
        header = [str(c.label) for c in tables[0].columns.values()]
        row = [str(c) for c in tables[0].get_row_at(0)]
        styles = [c.style for c in tables[0].get_row_at(0)]
        good = better_cells(header, row)
        assert all(styles[i] == "bold green" for i in good)
        assert not any(styles[i] == "bold green" for i in range(len(row)) if i not in good)
        # only a real difference has a better side: two 1-second runs keep too few seconds for an interval
        # (not judged), and their figures may agree to the printed precision
        moved = [c for h, c in zip(header, row) if h == "B/A" and (r := _ratio(c)) is not None and r != 1.0]
        assert bool(good) == (bool(moved) and dict(zip(header, row))["Noise"] == "real"), (header, row)
        await pilot.press("e")
        field = await wait_for(pilot, lambda: app.screen.query("#export-path") and app.screen.query_one(
            "#export-path", Input), 5, "the export field")
        field.value = str(tmp_path / "cmp.md")
        await pilot.press("enter")
        await wait_for(pilot, lambda: (tmp_path / "cmp.md").exists(), 10, "the exported markdown")
        assert (tmp_path / "cmp.md").read_text() == view.markdown
        await pilot.press("escape")
        await wait_for(pilot, lambda: app.screen is screen, 5, "back on the runs")
        # one run against a reference sheet
        await pilot.press("ctrl+t")  # the cursor is on B: unmarked; A alone is compared with a sheet
        assert screen.marks == [a]
        await pilot.press("ctrl+s")
        await wait_for(pilot, lambda: app.screen.query("#reference-list"), 5, "the reference sheets")
        await pilot.press("enter")
        ref = await wait_for(pilot, lambda: isinstance(app.screen, CompareScreen) and app.screen.markdown
                             and app.screen, 30, "the reference comparison")
        assert ref.reference and "Reference:" in ref.markdown


async def test_the_report_inside_the_tui_lists_figures_and_draws_the_curves(tmp_path: Path) -> None:
    root = tmp_path / "results"
    run = quick_run(root, "qd-20261101-100000", "rw=randread", "iodepth=1,4,16")
    app = create_app(devices=[], results_dir=root, clock=lambda: 0.0)
    async with app.run_test(size=(120, 30)) as pilot:
        await open_runs(pilot)
        await pilot.press("ctrl+r")
        view = await wait_for(pilot, lambda: isinstance(app.screen, ReportScreen) and app.screen.loaded
                              and app.screen, 60, "the report")
        assert (run / "report.md").exists(), "rendered when missing"
        md = view.loaded.markdown
        assert "# Performance report" in md and "](plots/" not in md
        assert f"`{run}/plots/latency-throughput.svg`" in md
        viewer = view.query_one("#report-md", ReportViewer)
        assert viewer.document.source == md
        assert viewer.show_table_of_contents is True, "shown from 120 columns on"
        await pilot.press("t")
        assert viewer.show_table_of_contents is False
        await pilot.press("2")
        plots = list(view.query(SeriesPlot))
        assert len(plots) == 2 and len(plots[0].series) == 1 and len(plots[0].series[0].xs) == 3


async def test_import_fio_json_with_a_preview_then_open_it(tmp_path: Path) -> None:
    src = quick_run(tmp_path, "src", "rw=randrw", "rwmixread=70")
    (fio_json,) = sorted((src / "raw").glob("*.json"))
    root = tmp_path / "results"
    app = create_app(devices=[], results_dir=root, clock=lambda: 0.0)
    async with app.run_test(size=SIZE) as pilot:
        form, field = await open_import(pilot)
        field.value = f"{fio_json} {tmp_path / 'missing.json'}"
        await pilot.press("enter")
        shown = form.query_one("#import-preview")
        await wait_for(pilot, lambda: "would be imported" in str(shown.render()), 10, "the preview")
        text = str(shown.render())
        assert f"{fio_json}: fio JSON, 1 point(s) (fio-3" in text and "missing.json" in text
        field.value = str(fio_json)
        await pilot.press("ctrl+s")
        results = await results_shown(pilot, 20, "the imported run's results")
        assert results.path.parent == root and results.path.name.startswith("import-")
        assert len(results.records) == 1
    assert [r.status for r in list_runs([root])] == ["imported"]


async def test_path_completion_in_the_import_field(tmp_path: Path) -> None:
    (tmp_path / "fio-output.json").write_text("{}")
    (tmp_path / "fio-dir").mkdir()
    from app.screens.importer import PathSuggester

    s = PathSuggester()
    assert await s.get_suggestion(f"{tmp_path}/fio-o") == f"{tmp_path}/fio-output.json"
    assert await s.get_suggestion(f"a.json {tmp_path}/fio-d") == f"a.json {tmp_path}/fio-dir/"
    assert await s.get_suggestion(f"{tmp_path}/nothing") is None
    assert await s.get_suggestion("") is None
