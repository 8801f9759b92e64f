"""Screens that behave: a finished action leaves no stale screen behind, the report view's Curves tab draws every run
that has a curve, its focus stays where the keys go, and the TUI's own words (docs/tui.md)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from app.screens.devices import DevicesScreen
from app.screens.presets import PresetsScreen
from app.screens.run import RunScreen
from app.screens.runs import RunsScreen
from app.tui import create_app
from tests.tui.helpers import DEVICES, FIXED_PRESETS, choose_preset, fio_for, open_runs, wait_for

SIZE = (80, 24)


@pytest.fixture(autouse=True)
def fixed_presets(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PROFILER_TUI_PRESETS", str(FIXED_PRESETS))


# --- the back stack --------------------------------------------------------------------------------------------


async def test_a_resumed_run_leaves_no_stale_run_screen_behind(tmp_path: Path) -> None:
    """Stop a run (c, y), h, ctrl+g (it completes), h, escape: the screen under the runs browser is not the old run
    screen still saying "interrupted … profiler-tui resume …", and escape from there reaches the devices."""
    # a point long enough that the stop always lands in it (a 3 s point once completed first on a loaded machine)
    app = create_app(devices=DEVICES, results_dir=tmp_path / "results", overrides=["runtime=8", "size=4m"])
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("enter")  # the test file
        await choose_preset(pilot, "custom")  # one point
        old = await wait_for(pilot, lambda: isinstance(app.screen, RunScreen) and app.screen, 10, "the run screen")
        await wait_for(pilot, lambda: old.state.current and fio_for(tmp_path), 30, "the point to start")
        await pilot.press("c", "y")
        await wait_for(pilot, lambda: not old.running, 15, "the run to stop")
        assert old.state.status == "interrupted"
        runs = await open_runs(pilot)
        assert runs.shown[0].path == old.state.path and runs.shown[0].status == "interrupted"
        await pilot.press("ctrl+g")
        new = await wait_for(pilot, lambda: isinstance(app.screen, RunScreen) and app.screen is not old and app.screen,
                             15, "the resumed run screen")
        await wait_for(pilot, lambda: new.state.finished is not None, 60, "the resumed run to finish")
        assert new.state.status == "complete"
        assert old not in app.screen_stack, "the stopped run's screen is left under the resumed one"
        await open_runs(pilot)
        await pilot.press("escape")
        await pilot.pause()
        assert not isinstance(app.screen, RunScreen), "escape from the runs browser shows a stale run screen"
        assert isinstance(app.screen, PresetsScreen)  # where the run was started from
        await pilot.press("escape")
        await pilot.pause()
        assert isinstance(app.screen, DevicesScreen)
        assert not [s for s in app.screen_stack if isinstance(s, (RunScreen, RunsScreen))]


# --- the report view: the Curves tab and the focus --------------------------------------------------------------


def working_set_run(root: Path) -> Path:
    """A mem-working-set run: idle latency at 4 KiB … 64 MiB, 2 MiB and 4 KiB pages."""
    from tests.helpers.suite_runs import KIB, MIB, octave_sizes, working_set_lines, write_run

    sizes = octave_sizes(4 * KIB, 64 * MIB, per_octave=1)
    lines = working_set_lines(0, sizes, "2m") + working_set_lines(len(sizes), sizes, "4k", scale=1.1)
    return write_run(root / "mem-working-set-20261129-100000", lines)


async def open_report(pilot, path: Path):
    from app.screens.messages import ShowReport
    from app.screens.report import ReportScreen

    pilot.app.post_message(ShowReport(path))
    return await wait_for(pilot, lambda: isinstance(pilot.app.screen, ReportScreen) and pilot.app.screen.loaded
                          and pilot.app.screen, 60, "the report")


async def test_the_curves_tab_draws_a_working_set_run(tmp_path: Path) -> None:
    """A mem-working-set run has a curve (latency against buffer size; report.md has its figure): the Curves tab
    draws it, one line per page size, instead of saying there is no curve."""
    from textual.widgets import Static

    from app.screens import strings
    from app.widgets.series import SeriesPlot

    run = working_set_run(tmp_path / "results")
    app = create_app(devices=[], results_dir=tmp_path / "results", clock=lambda: 0.0)
    async with app.run_test(size=(120, 40)) as pilot:
        view = await open_report(pilot, run)
        assert "working-set-" in view.loaded.markdown or "working_set" in view.loaded.markdown
        await pilot.press("2")
        await pilot.pause()
        texts = [str(s.render()) for s in view.query("#report-plots Static").results(Static)]
        assert not any(strings.REPORT_NO_CURVES in t for t in texts), texts
        plots = list(view.query(SeriesPlot))
        assert len(plots) == 1 and len(plots[0].series) == 2, plots
        assert all(len(s.xs) == 15 for s in plots[0].series)
        plots[0].plot_data()
        drawn = plots[0].plt.build()
        assert "KiB" in drawn and "MiB" in drawn and "ns" in drawn, drawn  # every tick label with its unit


async def test_the_contents_take_the_keys_and_give_them_back(tmp_path: Path) -> None:
    """At 80 columns, t shows the contents with their row cursor under the keys (no Tab Tab first); t again hides
    them and PageDown scrolls the report."""
    from textual.widgets import Tree

    from app.widgets.reportdoc import ReportViewer

    run = working_set_run(tmp_path / "results")
    app = create_app(devices=[], results_dir=tmp_path / "results", clock=lambda: 0.0)
    async with app.run_test(size=SIZE) as pilot:
        view = await open_report(pilot, run)
        await pilot.pause()
        viewer = view.query_one("#report-md", ReportViewer)
        assert not viewer.show_table_of_contents
        await pilot.press("t")
        await pilot.pause()
        tree = viewer.table_of_contents.query_one(Tree)
        assert viewer.show_table_of_contents and app.focused is tree, app.focused
        assert isinstance(tree, Tree)  # (the `is` above leaves mypy with the type of app.focused)
        assert tree.cursor_line >= 0 and tree.cursor_node is not None
        await pilot.press("down")
        assert tree.cursor_line == 1
        await pilot.press("t")
        await pilot.pause()
        assert not viewer.show_table_of_contents
        assert app.focused is not None and app.focused.display and app.focused is not tree, app.focused
        before = viewer.document.scroll_y
        await pilot.press("pagedown")
        await pilot.pause()
        assert viewer.document.scroll_y > before, "PageDown after closing the contents scrolls the report"


# --- one unit everywhere on screen ------------------------------------------------------------------------------


def log_text(run: RunScreen, which: str = "#log-short") -> str:
    """What a run log shows (a RichLog renders its lines once it is shown: the Log tab for #log-full)."""
    from textual.widgets import RichLog

    return "\n".join(strip.text for strip in run.query_one(which, RichLog).lines)


async def test_u_switches_the_run_logs_too(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """After u (MiB/s) the charts switch and so do the log lines already written, and those written after: a
    point's bandwidth never reads MB/s beside a chart in MiB/s."""
    from app.core.units import MIB_PER_MB
    from app.plan import presets as core
    from tests.tui.test_tui_snapshots import SMALL, fake_run, show_run, storage_events, storage_metrics

    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("NO_COLOR", raising=False)
    plan = core.apply_overrides(core.load("quick"), list(SMALL)).expand()
    events = storage_events(plan, completed=2)
    bw = storage_metrics(0)["bw_bytes"] / 1e6
    app = create_app(devices=DEVICES, results_dir="results", overrides=SMALL, clock=lambda: 0.0)
    async with app.run_test(size=(120, 30)) as pilot:
        run = fake_run("quick", events)
        await show_run(pilot, run, len(events))
        assert f"{bw:.1f} MB/s" in log_text(run)
        await pilot.press("u")
        await pilot.pause()
        text = log_text(run)
        assert f"{bw * MIB_PER_MB:.1f} MiB/s" in text and " MB/s" not in text, text
        await pilot.press("3")  # the Log tab: every line
        await pilot.pause()
        text = log_text(run, "#log-full")
        assert f"{bw * MIB_PER_MB:.1f} MiB/s" in text and " MB/s" not in text, text
        await pilot.press("u")
        await pilot.pause()
        assert f"{bw:.1f} MB/s" in log_text(run) and "MiB/s" not in log_text(run)


async def test_a_memory_run_says_its_bandwidth_in_the_charts_unit_and_its_delay_with_its_unit(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A memory chart in MiB/s (the units remembered as binary) beside a log in MB/s was two units on one screen;
    and "delay 2000" had no unit (the engine's own: MLC's units or the built-in engine's spin steps)."""
    import re

    from app.plan import presets as core
    from app.widgets.charts import CurveChart
    from tests.tui.test_tui_snapshots import fake_run, memory_events, show_run

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PROFILER_TUI_PRESETS", str(FIXED_PRESETS))
    plan = core.load("mem-loaded").expand()[:4]
    events = memory_events(plan, completed=3)
    app = create_app(devices=DEVICES, results_dir="results", clock=lambda: 0.0, engine="builtin")
    app.binary_units = True
    async with app.run_test(size=(120, 30)) as pilot:
        run = fake_run("mem-loaded", events)
        run.request.engine = "builtin"  # as the app's option gives it to a run it starts
        await show_run(pilot, run, len(events))
        chart = run.query_one("#curve-live", CurveChart)
        chart.dirty = True
        chart.redraw()
        drawn = re.sub(r"\x1b\[[0-9;]*m", "", chart.plt.build())
        assert "iB/s" in drawn, drawn
        text = log_text(run)
        assert "MiB/s" in text and " MB/s" not in text, text
        delays = re.findall(r"delay \d+[^\n:]*", text)
        assert delays and all("spin steps" in d for d in delays), delays


# --- NO_COLOR ---------------------------------------------------------------------------------------------------


def unreadable_words(svg: str, least: float = 4.5) -> list[tuple[str, str, str, float]]:
    """Every word of a screenshot drawn less than ``least``:1 from its background (WCAG's contrast): (text, its
    colour, the background's, the ratio)."""
    import html
    import re

    from app.screens.monochrome import contrast

    fills = dict(re.findall(r"\.(terminal-[\w-]+) \{[^}]*?fill: #([0-9a-fA-F]{6})", svg))
    rects = [(float(x), float(y), float(w), fill) for fill, x, y, w in re.findall(
        r'<rect fill="#([0-9a-fA-F]{6})" x="([\d.]+)" y="([\d.]+)" width="([\d.]+)"', svg)]
    bad = []
    for cls, x, y, body in re.findall(r'<text class="([\w-]+)" x="([\d.]+)" y="([\d.]+)"[^>]*>([^<]*)</text>', svg):
        text = html.unescape(body).replace("\xa0", " ")
        if not re.search(r"[A-Za-z0-9]", text) or cls not in fills:
            continue
        tx, ty = float(x), float(y)
        under = [f for rx, ry, rw, f in rects if rx <= tx < rx + rw and -20 < ry - ty < -17]
        if not under:
            continue
        fg, bg = int(fills[cls][:2], 16), int(under[-1][:2], 16)  # greys: one channel says it
        ratio = contrast(fg, bg)
        if ratio < least:
            bad.append((text.strip(), fills[cls], under[-1], round(ratio, 2)))
    return bad


async def test_no_color_keeps_every_word_readable(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """With NO_COLOR Textual draws each colour as its grey: "refused" (red) was grey 59 on grey 39. Every word of the
    devices screen and of a refused device's confirmation is 4.5:1 from its background."""
    monkeypatch.setenv("NO_COLOR", "1")  # before the app is made: Textual reads it then
    app = create_app(devices=DEVICES, results_dir=tmp_path / "results")
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        svg = app.export_screenshot()
        assert "refused" in svg
        assert not unreadable_words(svg), unreadable_words(svg)
        await pilot.press("down", "down", "down", "down", "enter")  # sdy: refused for every plan
        await pilot.pause()
        svg = app.export_screenshot()
        assert "refused for every plan" in svg.replace("&#160;", " ")
        assert not unreadable_words(svg), unreadable_words(svg)


# --- a results directory no run can write -------------------------------------------------------------------


async def test_a_read_only_results_volume_is_said_first_and_no_run_starts(tmp_path: Path) -> None:
    """The CLI refuses a read-only results directory at once; the TUI started, and failed only after a run was
    started ("… Completed points are kept." with 0 points). The devices screen says it in one sentence, and enter on
    a preset starts nothing."""
    from textual.widgets import Static

    from tests.helpers.readers_util import read_only_mount

    results = tmp_path / "ro" / "results"
    app = create_app(devices=DEVICES, results_dir=results, overrides=["runtime=1", "size=4m"])

    def said() -> str:
        return " ".join(str(s.render()) for s in app.screen.query("Static").results(Static)
                        if s.display and "read-only" in str(s.render()))

    with read_only_mount(tmp_path / "ro"):
        async with app.run_test(size=SIZE) as pilot:
            shown = await wait_for(pilot, said, 10, "the devices screen to say the results cannot be written")
            assert f"{results} is on a read-only filesystem" in shown and "--" not in shown, shown
            await pilot.press("enter")  # the test file
            await choose_preset(pilot, "quick")
            await pilot.pause()
            assert not isinstance(app.screen, RunScreen)
            assert any("read-only filesystem" in str(n.message) for n in app._notifications)
    assert not results.exists()


# --- the TUI's own words ----------------------------------------------------------------------------------------


def screen_lines(app) -> list[str]:
    """The screen as text, one string per row, each character in its column (from the SVG screenshot: what a person
    sees; a run of blanks is drawn as a background alone, so every piece of text is placed by its x)."""
    import html
    import re

    svg = app.export_screenshot()
    width = app.size.width
    rows: dict[int, list[str]] = {}
    for x, n, body in re.findall(r'<text class="[\w-]+" x="([\d.]+)" y="[\d.]+" textLength="[\d.]+" '
                                 r'clip-path="url\(#[\w-]+-line-(\d+)\)">([^<]*)</text>', svg):
        row = rows.setdefault(int(n), [" "] * width)
        column = round(float(x) / 12.2)
        for i, c in enumerate(html.unescape(body).replace("\xa0", " ").replace("\n", "")):
            if column + i < width:
                row[column + i] = c
    return ["".join(rows.get(i, [])).rstrip() for i in range(max(rows, default=-1) + 1)]


def words_of(lines: list[str]) -> str:
    """The rows' words in one line, without box and scrollbar characters."""
    return " ".join(" ".join(re.sub(r"[█▊▎▁▔│▌▐▄▀]", " ", line).split()) for line in lines)


CLI_FLAG = r"(?<![\w-])--[a-z][a-z-]+"


def test_the_tuis_sentences_name_no_cli_flag() -> None:
    """Every sentence of app.screens.strings speaks the TUI's words; the one that names --set translates a preset
    description's own --set into the TUI's fields."""
    import re

    from app.screens import strings

    flagged = {name: value for name, value in vars(strings).items()
               if isinstance(value, str) and name.isupper() and re.search(CLI_FLAG, value)}
    assert set(flagged) <= {"PREVIEW_SET_IN_TUI"}, flagged


async def test_device_reasons_and_the_confirmation_speak_the_tuis_words(tmp_path: Path) -> None:
    """The core's reasons say "(--yes)" and "needs --allow-destructive" for the CLI; the devices screen and the
    confirmation say what to do in the TUI instead."""
    import re

    app = create_app(devices=DEVICES, results_dir=tmp_path / "results")
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        for downs in range(5):  # each row's reasons
            text = "\n".join(screen_lines(app))
            assert not re.search(CLI_FLAG, text), (downs, text)
            await pilot.press("down")
        await pilot.press("home", "down", "enter")  # /dev/sdz: write plans need the name typed
        await pilot.pause()
        text = "\n".join(screen_lines(app))
        assert "Write plans:" in text and not re.search(CLI_FLAG, text), text


async def test_the_confirmation_at_80x24_keeps_its_bullets_indented_and_its_tuning_line_whole(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A reason that wraps goes on under its bullet's text, not under the bullet; the ctrl+t line is shown whole
    ("… for this" was the last of it) and without the CLI's flag."""
    from tests.tui.helpers import tunable_audit

    audit = tunable_audit(tmp_path, monkeypatch)
    app = create_app(devices=DEVICES, results_dir=tmp_path / "results", audit=audit)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("down", "enter")  # /dev/sdz
        await app.workers.wait_for_complete()
        await pilot.pause()
        lines = screen_lines(app)
        text = "\n".join(lines)
        assert "ctrl+t: tuning off" in text, text
        tune = next(i for i, line in enumerate(lines) if "ctrl+t: tuning off" in line)
        assert "for this run, put back when it ends" in words_of(lines[tune:tune + 2]), text
        assert "--tune" not in text
        bullets = [i for i, line in enumerate(lines) if "• " in line]
        assert bullets, text
        wrapped = 0
        for i in bullets:  # a bullet's next row is another bullet, a heading, or its text's continuation under it
            column = lines[i].index("• ") + 2
            after = lines[i + 1].ljust(column + 1)
            if "•" in after or "plans:" in after or "settings checked" in after or not after[column:].strip(" █▁"):
                continue
            pair = f"\n{lines[i]}\n{after}"
            assert not after[column - 4:column].strip(), "a wrapped reason starts left of its text:" + pair
            assert after[column] != " ", "a wrapped reason starts right of its text:" + pair
            wrapped += 1
        assert wrapped, text  # at 80 columns /dev/sdz's first reason wraps


async def test_the_results_say_what_dev_fio_is_where_it_appears(tmp_path: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """`dev/fio` heads a column of the results when the run read the device's counters: the status line under the
    table says what it is (the presets' `io W` has its line under the list)."""
    from textual.widgets import Static

    from app.screens.results import ResultsScreen
    from tests.tui.test_tui_snapshots import DEVICES_OF_POINTS, RUN_DIR, write_results

    monkeypatch.chdir(tmp_path)
    write_results(devices=DEVICES_OF_POINTS)
    app = create_app(devices=DEVICES, results_dir="results", clock=lambda: 0.0)
    async with app.run_test(size=SIZE) as pilot:
        app.push_screen(ResultsScreen(RUN_DIR))
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, ResultsScreen)
        assert "dev/fio" in [c[0] for c in screen.columns]
        status = str(app.screen.query_one("#results-status", Static).render())
        assert "dev/fio: bytes the device moved over fio's" in status, status
        shown = "".join(screen_lines(app))  # on screen at 80×24, whole (the line wraps)
        assert "dev/fio: bytes" in shown and "amplified)" in shown, screen_lines(app)
