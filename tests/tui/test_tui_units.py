"""The units toggle (u): bandwidths in MB/s or MiB/s on the results table and the run screen at once, switched on
the screen shown, remembered in the settings file across a restart; a settings file that cannot be used gives one
sentence and the defaults.  Also ASCII mode's colour system and filters (the tmux walk is test_tui_ascii.py)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from textual.filter import Monochrome, NoColor
from textual.widgets import DataTable, Input, Static

from app.core.units import MIB_PER_MB
from app.host.config import Config, load_config
from app.plan import presets as core
from app.screens.ascii import AsciiFilter
from app.screens.results import ResultsScreen, load_fleet
from app.tui import create_app
from app.widgets.charts import BandwidthChart, ThroughputChart
from tests.tui.helpers import DEVICES, wait_for
from tests.tui.test_tui_snapshots import (
    RUN_DIR,
    SMALL,
    fake_run,
    fixed_world,  # noqa: F401  the snapshots' autouse fixture: fixed presets, the test's folder, colours on
    show_run,
    storage_events,
    storage_metrics,
    write_results,
)

SIZE = (100, 24)


def settings_file(tmp_path: Path) -> Path:
    return tmp_path / "cfg" / "profiler-tui" / "config.toml"


def app_(settings: Path | None, **options: object):
    return create_app(devices=DEVICES, results_dir="results", overrides=SMALL, clock=lambda: 0.0, settings=settings,
                      **options)


def table_text(screen: ResultsScreen) -> tuple[list[str], list[list[str]]]:
    table = screen.query_one("#results", DataTable)
    headers = [str(c.label) for c in table.ordered_columns]
    rows = [[str(cell) for cell in table.get_row_at(i)] for i in range(table.row_count)]
    return headers, rows


def first_bandwidth() -> float:
    """The results table's first row's MB/s (rows sorted by #: point 0)."""
    return storage_metrics(0)["bw_bytes"] / 1e6


async def test_u_switches_the_results_table_and_is_remembered(tmp_path: Path) -> None:
    path = settings_file(tmp_path)
    async with app_(path).run_test(size=SIZE) as pilot:
        write_results()
        pilot.app.push_screen(ResultsScreen(RUN_DIR))
        await pilot.pause()
        headers, rows = table_text(pilot.app.screen)
        col = headers.index("MB/s")
        assert "MiB/s" not in headers and rows[0][col] == f"{first_bandwidth():.1f}"
        await pilot.press("u")
        headers, rows = table_text(pilot.app.screen)
        assert "MB/s" not in headers
        assert headers[col] == "MiB/s" and rows[0][col] == f"{first_bandwidth() * MIB_PER_MB:.1f}"
        await wait_for(pilot, lambda: load_config(path)[0].binary, 5, "the settings file to say binary")
    # a new app reads it: the table starts in MiB/s
    async with app_(path).run_test(size=SIZE) as pilot:
        assert pilot.app.binary_units
        pilot.app.push_screen(ResultsScreen(RUN_DIR))
        await pilot.pause()
        headers, rows = table_text(pilot.app.screen)
        assert "MiB/s" in headers and "MB/s" not in headers
        await pilot.press("u")
        assert "MB/s" in table_text(pilot.app.screen)[0]
        await wait_for(pilot, lambda: load_config(path) == (Config(units="decimal"), None), 5, "decimal again")


async def test_u_switches_the_run_screen_live(tmp_path: Path) -> None:
    plan = core.apply_overrides(core.load("quick"), list(SMALL)).expand()
    events = storage_events(plan, completed=2)
    last_bw = next(ev.data["bw_bytes"] for ev in reversed(events) if hasattr(ev, "data")) / 1e6
    async with app_(settings_file(tmp_path)).run_test(size=(120, 30)) as pilot:
        run = fake_run("quick", events)
        await show_run(pilot, run, len(events))
        point = str(run.query_one("#run-point", Static).content)
        assert f"{last_bw:.1f} MB/s" in point, point
        chart = run.query_one(BandwidthChart)
        assert chart.title == "MB/s"
        await pilot.press("u")
        await pilot.pause()
        point = str(run.query_one("#run-point", Static).content)
        assert f"{last_bw * MIB_PER_MB:.1f} MiB/s" in point and " MB/s" not in point, point
        assert chart.title == "MiB/s"
        drawn = chart.plt.build()  # the chart as plotext draws it: the y ticks in MiB/s
        assert "MiB/s" in drawn and "MB/s" not in drawn.replace("MiB/s", ""), drawn
        await pilot.press("u")
        await pilot.pause()
        assert f"{last_bw:.1f} MB/s" in str(run.query_one("#run-point", Static).content)
        assert chart.title == "MB/s" and "MiB/s" not in chart.plt.build()


async def test_u_is_typed_in_the_runs_filter(tmp_path: Path) -> None:
    from tests.tui.helpers import open_runs

    async with app_(settings_file(tmp_path)).run_test(size=SIZE) as pilot:
        runs = await open_runs(pilot)
        await pilot.press("/", "u")
        assert not pilot.app.binary_units
        assert runs.query_one("#runs-filter", Input).value == "u"


@pytest.mark.parametrize(("content", "said"), [
    ('units = "bin', "is not valid TOML"),
    ("units = true", "units = true is neither"),
    ('units = ["[bold]binary"]', 'units = ["[bold]binary"] is neither'),  # shown as written, not as markup
])
async def test_a_bad_settings_file_is_one_notice_and_the_defaults(tmp_path: Path, content: str, said: str) -> None:
    path = settings_file(tmp_path)
    path.parent.mkdir(parents=True)
    path.write_text(content)
    async with app_(path).run_test(size=SIZE) as pilot:
        await pilot.pause()
        assert not pilot.app.binary_units
        notes = [str(n.message) for n in pilot.app._notifications]
        assert any(n.startswith(f"{path}: ") and said in n and n.endswith("using the defaults.") for n in notes), notes


async def test_an_unwritable_settings_file_is_said(tmp_path: Path) -> None:
    path = settings_file(tmp_path)
    path.parent.mkdir(parents=True)
    path.parent.chmod(0o777)  # a directory others can write: refused, and said
    async with app_(path).run_test(size=SIZE) as pilot:
        await pilot.press("u")
        assert pilot.app.binary_units  # switched all the same, for this session
        await wait_for(pilot, lambda: any("could not be remembered" in str(n.message)
                                          for n in pilot.app._notifications), 5, "the notice")
    assert not path.exists()


def test_ascii_mode_draws_in_16_colours_with_its_filter_last(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLORTERM", "truecolor")  # what would give truecolour
    app = app_(None, ascii=True)
    assert app.console.color_system == "standard"
    assert isinstance(app.get_line_filters()[-1], AsciiFilter)
    plain = app_(None)
    assert plain.console.color_system != "standard" and not any(
        isinstance(f, AsciiFilter) for f in plain.get_line_filters())
    monkeypatch.setenv("NO_COLOR", "1")
    filters = app_(None, ascii=True).get_line_filters()
    assert isinstance(filters[-1], AsciiFilter) and any(isinstance(f, (Monochrome, NoColor)) for f in filters)


async def test_u_switches_a_fleet_table_too(tmp_path: Path) -> None:
    from tests.tui.test_tui_fleet import FLEET_DIR, write_fleet_results

    write_fleet_results(failed=[])
    table = load_fleet(FLEET_DIR)
    assert table is not None
    total = table.points[0].total
    assert total is not None and total.mbps is not None
    total_mb = total.mbps
    async with app_(settings_file(tmp_path)).run_test(size=SIZE) as pilot:
        pilot.app.push_screen(ResultsScreen(FLEET_DIR))
        await pilot.pause()
        headers, rows = table_text(pilot.app.screen)
        col = headers.index("MB/s")
        totals = [row[col] for row in rows if "total" in row[2]]
        assert totals[0] == f"{total_mb:.1f}"
        await pilot.press("u")
        headers, rows = table_text(pilot.app.screen)
        assert headers[col] == "MiB/s"
        assert [row[col] for row in rows if "total" in row[2]][0] == f"{total_mb * MIB_PER_MB:.1f}"


async def test_ascii_fleet_hosts_get_their_own_markers(tmp_path: Path) -> None:
    """In ASCII mode each host's line is drawn with its own character and the legend names it (16 colours may not
    tell the hosts apart); the live figure names the fleet's hosts as before."""
    from tests.tui.test_tui_fleet import A, B, fleet_events, fleet_run_screen, show

    plan = core.apply_overrides(core.load("quick"), list(SMALL)).expand()
    events = fleet_events(plan, (A, B), completed=2, run_dir=tmp_path / "run")
    async with app_(None, ascii=True).run_test(size=(120, 30)) as pilot:
        screen = fleet_run_screen(events)
        await show(pilot, screen, len(events))
        screen.tick()
        legend = str(screen.query_one("#fleet-legend").render())
        assert f" o {A}" in legend and f" x {B}" in legend, legend
        drawn = re.sub(r"\x1b\[[0-9;]*m", "", screen.query_one(ThroughputChart).plt.build())
        plot = "\n".join(drawn.splitlines()[1:])  # under the title ("total IOPS"); tick labels hold no o, x or *
        assert "o" in plot and "x" in plot and "*" in plot, drawn  # A, B and the fleet total
        assert not any(0x2800 <= ord(c) <= 0x28FF for c in drawn)  # no braille
