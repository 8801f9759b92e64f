"""The runs browser, the import field, the presets list and the compare view, driven by Pilot on fixed data
(tests/data; no fio runs): letters filter and never fire a command, a path with spaces completes to one
path, estimates fit their column, the custom form starts from the highlighted preset, a shadowing user
preset is marked, an export that cannot write says where, the compare tables fit and scroll."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from textual.coordinate import Coordinate
from textual.widgets import DataTable, Input, Label, Static

from app.core.units import format_duration_short
from app.plan import presets as core
from app.screens.custom import CustomSweepScreen
from app.screens.importer import ImportScreen
from app.screens.messages import ShowResults
from app.screens.presets import PresetsScreen
from app.screens.results import ResultsScreen
from app.screens.state import TargetChoice
from app.tui import create_app
from tests.tui.helpers import fixed_results, open_compare, open_import, open_runs, results_shown, wait_for

DATA = Path(__file__).resolve().parents[1] / "data"
SIZE = (80, 24)


@pytest.fixture
def results(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    monkeypatch.delenv("PROFILER_TUI_RESULTS", raising=False)
    monkeypatch.delenv("PROFILER_TUI_PRESETS", raising=False)  # the shipped presets
    root = tmp_path / "results"
    fixed_results(root)
    return root


@pytest.mark.parametrize("typed", ["qd", "custom", "mem", "import", "h", "q"])
async def test_typing_in_the_runs_browser_filters_and_fires_no_command(results: Path, typed: str) -> None:
    app = create_app(devices=[], results_dir=results, clock=lambda: 0.0)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_runs(pilot)
        await pilot.press(*typed)
        await pilot.pause(0.2)
        assert app.is_running and app.screen is screen, f"typing {typed!r} left the runs browser"
        assert screen.marks == [], f"typing {typed!r} marked a run"
        assert screen.query_one("#runs-filter", Input).value == typed
        assert all(r.matches(typed) for r in screen.shown)
        assert len(screen.shown) < len(screen.runs) or typed in ("qd",), "the list is filtered"


async def test_the_runs_commands_are_ctrl_keys_from_the_table_and_the_filter(results: Path) -> None:
    app = create_app(devices=[], results_dir=results, clock=lambda: 0.0)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_runs(pilot)
        keys = {b.binding.key for b in screen.active_bindings.values() if b.binding.show and b.enabled}
        assert {"ctrl+r", "ctrl+g", "ctrl+t", "ctrl+s", "ctrl+o"} <= keys
        shown = {k for k, b in screen.active_bindings.items()
                 if b.binding.show and app.check_action(b.binding.action, ())}
        assert not {"q", "h"} & shown, "q and h are typed here, not shown as commands"
        await pilot.press(*"golden")  # the focus is in the filter now
        assert screen.focused is screen.query_one("#runs-filter", Input)
        await pilot.press("ctrl+t")
        assert [p.name for p in screen.marks] == ["golden-20261122-021000"]
        await pilot.press("escape")  # clears the filter, back on the table
        await wait_for(pilot, lambda: len(screen.shown) == 3, 5, "the whole list")
        await pilot.press("ctrl+o")
        await wait_for(pilot, lambda: isinstance(app.screen, ImportScreen), 5, "the import form")


async def test_the_target_column_shows_the_file_name_or_device_within_80_columns(results: Path) -> None:
    app = create_app(devices=[], results_dir=results, clock=lambda: 0.0)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_runs(pilot)
        table = screen.query_one("#runs", DataTable)
        targets = {str(table.get_cell_at(Coordinate(i, 5))) for i in range(table.row_count)}
        assert targets == {"profiler-tui.testfile", "/dev/nvme0n1"}, targets
        widths = [c.get_render_width(table) for c in table.ordered_columns]
        assert sum(widths[:6]) <= table.size.width, "the target column is whole at 80 columns"


async def test_a_path_with_spaces_completes_to_one_path_and_imports(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.delenv("PROFILER_TUI_RESULTS", raising=False)
    src = tmp_path / "out dir"
    src.mkdir()
    shutil.copy(DATA / "mlc" / "v3.10-loaded-latency.txt", src / "my mlc out.txt")
    root = tmp_path / "results"
    app = create_app(devices=[], results_dir=root, clock=lambda: 0.0)
    async with app.run_test(size=SIZE) as pilot:
        form, field = await open_import(pilot)
        field.value = f"{tmp_path}/out"
        await wait_for(pilot, lambda: field._suggestion, 5, "the completion of the directory")
        await pilot.press("right")
        await pilot.press(*"my")
        await wait_for(pilot, lambda: field._suggestion, 5, "the completion of the file")
        await pilot.press("right")
        assert field.value == f"{tmp_path}/out\\ dir/my\\ mlc\\ out.txt"
        await pilot.press("enter")
        shown = form.query_one("#import-preview", Static)
        await wait_for(pilot, lambda: "would be imported" in str(shown.render()), 10, "the preview")
        text = str(shown.render())
        assert f"{src / 'my mlc out.txt'}: MLC text" in text and "from 1 file(s)" in text, text
        await pilot.press("ctrl+s")
        done = await results_shown(pilot, 20)
        assert done.records


def test_short_durations_fit_a_column() -> None:
    cases = {45: "45s", 750: "12m30s", 7260: "2h01m", 84_700: "23h32m", 3 * 86400 + 4 * 3600 + 100: "3d4h"}
    assert {s: format_duration_short(s) for s in cases} == cases


async def test_the_presets_list_at_80_columns(tmp_path: Path, monkeypatch) -> None:
    """Estimates whole ("2h01m", not "2h01m00"), io W explained, a user preset that replaces a shipped one
    marked, the preview says "1 point" and speaks of fields rather than --set, and c starts the custom form
    from the highlighted preset."""
    monkeypatch.delenv("PROFILER_TUI_PRESETS", raising=False)
    user = core.user_dir()
    user.mkdir(parents=True)
    (user / "quick.toml").write_text((core.shipped_dir() / "custom.toml").read_text().replace(
        'name = "custom"', 'name = "quick"'))
    app = create_app(devices=[], results_dir=tmp_path / "results", clock=lambda: 0.0)
    async with app.run_test(size=SIZE) as pilot:
        app.push_screen(PresetsScreen(TargetChoice.test_file(tmp_path / "results")))
        screen = await wait_for(pilot, lambda: isinstance(app.screen, PresetsScreen) and app.screen.query("#preview")
                                and app.screen, 5, "presets")
        await pilot.pause()
        table = screen.query_one("#presets", DataTable)
        width = table.columns["est"].width
        for i in range(table.row_count):
            est = str(table.get_cell_at((i, 3)))
            assert len(est) <= width, f"{est!r} is cut at {width} columns"
        estimates = {str(table.get_cell_at((i, 0))): str(table.get_cell_at((i, 3))) for i in range(table.row_count)}
        assert "h" in estimates["seed-matrix"] and "m" in estimates["seed-matrix"], estimates
        assert "quick*" in estimates and "custom" in estimates, "the shadowing user preset is marked, no other"
        legend = str(screen.query_one("#presets-legend", Static).render())
        assert "io W" in legend and "writes" in legend and "*" in legend
        table.move_cursor(row=table.get_row_index("quick"))
        await pilot.pause()
        preview = str(screen.query_one("#preview", Static).render()).replace("\n", " ")
        assert "replaces the shipped quick" in preview
        assert "1 point, estimated" in preview and "1 points" not in preview
        assert "edit fields instead of --set" in preview.replace("  ", " ")
        table.move_cursor(row=table.get_row_index("qd-scaling"))
        await pilot.press("c")
        form = await wait_for(pilot, lambda: isinstance(app.screen, CustomSweepScreen) and app.screen, 5, "the form")
        assert form.query_one("#storage-iodepth", Input).value == "1,2,4,8,16,32,64,128,256"
        assert "qd-scaling" in form.sub_title


async def test_the_focused_form_field_shows_in_reverse_video(tmp_path: Path) -> None:
    app = create_app(devices=[], results_dir=tmp_path / "results", clock=lambda: 0.0)
    async with app.run_test(size=SIZE) as pilot:
        app.push_screen(CustomSweepScreen(TargetChoice.test_file(tmp_path / "results")))
        form = await wait_for(pilot, lambda: isinstance(app.screen, CustomSweepScreen) and app.screen, 5, "form")
        await pilot.pause()
        labels = [lbl for lbl in form.query(".form-label").results(Label) if lbl.region.height]
        focused = [lbl for lbl in labels if lbl.rich_style.reverse]
        assert len(focused) == 1 and str(focused[0].render()) == "rw modes"
        await pilot.press("tab")
        await pilot.pause()
        focused = [lbl for lbl in labels if lbl.rich_style.reverse]
        assert len(focused) == 1 and str(focused[0].render()) == "block sizes"


async def test_an_export_that_cannot_write_names_the_path_in_one_sentence(results: Path) -> None:
    app = create_app(devices=[], results_dir=results, clock=lambda: 0.0)
    async with app.run_test(size=SIZE) as pilot:
        app.post_message(ShowResults(results / "golden-20261122-021000"))
        view = await wait_for(pilot, lambda: isinstance(app.screen, ResultsScreen) and app.screen, 10, "results")
        await pilot.press("e")
        field = await wait_for(pilot, lambda: app.screen.query("#export-path") and app.screen.query_one(
            "#export-path", Input), 5, "the export field")
        field.value = "/proc/no-such-dir/report.md"
        await pilot.press("enter")
        status = view.query_one("#results-status", Static)
        await wait_for(pilot, lambda: "Export failed" in str(status.render()), 10, "the failure")
        text = str(status.render()).replace("\n", " ")
        assert "/proc/no-such-dir" in text and "Errno" not in text, text


async def test_the_compare_tables_fit_120_columns_and_scroll_without_tab(results: Path) -> None:
    app = create_app(devices=[], results_dir=results, clock=lambda: 0.0)
    async with app.run_test(size=(120, 24)) as pilot:
        view = await open_compare(pilot, results / "golden-20261122-021000", results / "cliff-20261123-212547")
        body = view.query_one("#compare-body")
        for table in view.query(".compare-table").results(DataTable):
            assert table.virtual_size.width <= body.scrollable_content_region.width, "no table is cut"
            ratios = [str(table.get_cell_at((r, 4))) for r in range(table.row_count)]
            assert ratios and all(x.endswith("×") for x in ratios if x), ratios
        assert view.focused is body
        await pilot.press("end")
        await pilot.pause(0.2)
        assert body.scroll_y > 0, "the page scrolls from the keyboard without tab"


async def test_end_and_home_go_to_the_last_and_first_run(results: Path) -> None:
    """Textual's table took End for the end of a line (its columns); in a list of runs it is the last row."""
    app = create_app(devices=[], results_dir=results, clock=lambda: 0.0)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_runs(pilot)
        table = screen.query_one("#runs", DataTable)
        assert table.row_count > 2 and table.cursor_row == 0
        await pilot.press("end")
        await pilot.pause()
        assert table.cursor_row == table.row_count - 1
        await pilot.press("home")
        await pilot.pause()
        assert table.cursor_row == 0
