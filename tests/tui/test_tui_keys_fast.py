"""Keys answer with their screen, not with the slow part behind it: the report view while its report renders, the
runs browser from the list read last time, a run's results read ahead, the custom form without the other kind's
fields.  Behaviour only (what shows before the slow part ends, what runs where): the key latencies themselves are
`make bench-tui`'s.  Driven by Pilot; nothing here runs fio."""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import Any

import pytest
from textual.widgets import DataTable, Input, Select, Static, TabbedContent

import app.report
from app.plan import formplan
from app.plan import presets as core
from app.plan.formplan import FIELDS
from app.screens import prerender
from app.screens import results as results_screen
from app.screens import runs as runs_screen
from app.screens.custom import CustomSweepScreen
from app.screens.messages import ShowReport, ShowResults
from app.screens.report import ReportScreen
from app.screens.results import ResultsScreen
from app.screens.runs import RunsScreen
from app.tui import create_app
from app.widgets import ErrorLine
from app.widgets.reportdoc import ReportViewer
from tests.helpers.interval_runs import storage_point, write_storage_run
from tests.tui.helpers import DEVICES, open_runs, results_shown, wait_for
from tests.tui.test_tui_form_import import open_form, presets_on, set_field

SIZE = (100, 30)


def a_run(root: Path, name: str = "qd-20261129-100000") -> Path:
    return write_storage_run(root / name, [(storage_point(iodepth=q), 1000.0 * q, None) for q in (1, 8)])


def held_rendering(monkeypatch: pytest.MonkeyPatch) -> None:
    """The report's child renders once the test lets it: the file "go" beside the run's directory."""
    monkeypatch.setattr(prerender, "RENDER", "import sys, time; from pathlib import Path\n"
                        "while not (Path(sys.argv[2]).parent / 'go').exists(): time.sleep(0.05)\n" + prerender.RENDER)


async def report_view(pilot: Any, run: Path) -> ReportScreen:
    """The report view of ``run``, shown (ShowReport, as the keys ask for it)."""
    tui = pilot.app
    tui.post_message(ShowReport(run))
    view: ReportScreen = await wait_for(pilot, lambda: isinstance(tui.screen, ReportScreen) and tui.screen, 10,
                                        "the view")
    return view


async def test_the_report_view_answers_while_its_report_renders(tmp_path: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """The view is on screen at once, says for how long the report has been rendering, and answers keys (tabs,
    escape) before the rendering ends; the rendering of a run without a report is a child process's, never this
    process's (it held the interpreter's lock for seconds: no key answered meanwhile)."""
    run = a_run(tmp_path)
    held_rendering(monkeypatch)
    here: list[Path] = []
    real = app.report.render_report

    def rendering(d: Path, *a: Any, **k: Any) -> Any:
        here.append(Path(d))
        return real(d, *a, **k)

    monkeypatch.setattr(app.report, "render_report", rendering)
    tui = create_app(devices=DEVICES, results_dir=tmp_path, clock=lambda: 0.0, settings=tmp_path / "c.toml")
    async with tui.run_test(size=SIZE) as pilot:
        view = await report_view(pilot, run)
        status = view.query_one("#report-status", Static)
        await wait_for(pilot, lambda: " s (escape goes back" in str(status.render()), 10, "the seconds rendering")
        assert view.loaded is None and not (run / "report.md").exists()
        await pilot.press("2")
        tabs = view.query_one("#report-tabs", TabbedContent)
        await wait_for(pilot, lambda: tabs.active == "report-curves", 5, "tab 2")
        await pilot.press("escape")
        await wait_for(pilot, lambda: not isinstance(tui.screen, ReportScreen), 5, "escape while it renders")
        assert not (run / "report.md").exists(), "the rendering was not waited for"
        view = await report_view(pilot, run)
        (tmp_path / "go").touch()
        await wait_for(pilot, lambda: view.loaded is not None, 120, "the report, once rendered")
        assert "report.md" in str(view.query_one("#report-status", Static).render())
        assert view.loaded is not None and ("QD8" in view.loaded.markdown or "8" in view.loaded.markdown)
    assert here == [], "the report was rendered in the app's own process"


async def test_a_report_rendered_before_the_run_changed_shows_while_it_renders_again(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A report.md older than the run's results (the run resumed or imported into since) is shown, saying so, while
    the new one renders; the new one then replaces it."""
    import os

    run = a_run(tmp_path)
    (run / "report.md").write_text("# Old report\n\nWritten before the run changed.\n")
    old = (run / "results.jsonl").stat().st_mtime - 60
    os.utime(run / "report.md", (old, old))
    held_rendering(monkeypatch)
    tui = create_app(devices=DEVICES, results_dir=tmp_path, clock=lambda: 0.0, settings=tmp_path / "c.toml")
    async with tui.run_test(size=SIZE) as pilot:
        view = await report_view(pilot, run)
        status = view.query_one("#report-status", Static)
        await wait_for(pilot, lambda: "as rendered before the run changed" in str(status.render()), 10, "the old one")
        assert "Old report" in view.query_one("#report-md", ReportViewer).document.source and view.loaded is None
        (tmp_path / "go").touch()
        await wait_for(pilot, lambda: view.loaded is not None, 120, "the report, once rendered again")
        assert view.loaded is not None and "Old report" not in view.loaded.markdown
        assert "Old report" not in view.query_one("#report-md", ReportViewer).document.source
        assert "before the run changed" not in str(status.render())


async def test_the_runs_browser_shows_the_runs_listed_last_time_at_once(tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """Opened again, the browser shows the runs it listed before while its thread lists the directories again
    (held here until the test lets it go); the new listing then replaces them."""
    a_run(tmp_path)
    tui = create_app(devices=DEVICES, results_dir=tmp_path, clock=lambda: 0.0, settings=tmp_path / "c.toml")
    async with tui.run_test(size=SIZE) as pilot:
        browser = await open_runs(pilot)
        assert browser.selected() is not None
        await pilot.press("escape")
        await wait_for(pilot, lambda: not isinstance(tui.screen, RunsScreen), 5, "back")
        go = threading.Event()
        real = runs_screen.list_runs

        def held(roots):
            go.wait(30)
            return real(roots)

        monkeypatch.setattr(runs_screen, "list_runs", held)
        a_run(tmp_path, "qd-20261129-110000")
        await pilot.press("h")
        browser = await wait_for(pilot, lambda: isinstance(tui.screen, RunsScreen) and tui.screen, 5, "the browser")
        await pilot.pause()
        table = browser.query_one("#runs", DataTable)
        assert table.row_count == 1 and browser.selected() is not None, "the runs listed last time, at once"
        go.set()
        await wait_for(pilot, lambda: table.row_count == 2, 10, "the new listing")


async def test_a_runs_results_are_read_ahead_off_the_event_loop(tmp_path: Path,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """Highlighted in the runs browser, a run's results are read in a thread; `enter` shows them without reading
    its files again on the event loop."""
    run = a_run(tmp_path)
    reads: list[str] = []
    real = results_screen.read_rows

    def counting(path):
        reads.append(threading.current_thread().name)
        return real(path)

    monkeypatch.setattr(results_screen, "read_rows", counting)
    tui = create_app(devices=DEVICES, results_dir=tmp_path, clock=lambda: 0.0, settings=tmp_path / "c.toml")
    async with tui.run_test(size=SIZE) as pilot:
        await open_runs(pilot)
        await wait_for(pilot, lambda: reads and not results_screen._reading, 10, "the read ahead")
        await pilot.press("enter")
        view = await wait_for(pilot, lambda: isinstance(tui.screen, ResultsScreen) and tui.screen, 10, "results")
        assert view.path == run and view.query_one("#results", DataTable).row_count == 2
    assert reads == ["results"], reads  # once, by the thread reading ahead


async def test_results_being_read_ahead_show_at_once_and_fill_in_when_read(tmp_path: Path,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """Opened while its run's results are being read ahead (`r` as the run ends, `enter` in the runs browser), the
    results screen is on screen at once saying so, answers keys, and shows the rows when the read ends; the event
    loop never waits for the read (it did: the screen came only with its rows)."""
    run = a_run(tmp_path)
    go = threading.Event()
    release = threading.Timer(20, go.set)  # never hang: the old code blocked the event loop until the read ended
    real = results_screen.read_rows

    def held(path: Path) -> Any:
        go.wait(30)
        return real(path)

    monkeypatch.setattr(results_screen, "read_rows", held)
    tui = create_app(devices=DEVICES, results_dir=tmp_path / "none", clock=lambda: 0.0, settings=tmp_path / "c.toml")
    async with tui.run_test(size=SIZE) as pilot:
        release.start()
        try:
            results_screen.read_ahead(run)
            tui.push_screen(ResultsScreen(run))
            view = await wait_for(pilot, lambda: isinstance(tui.screen, ResultsScreen) and tui.screen, 10, "results")
            assert isinstance(view, ResultsScreen)
            shown: ResultsScreen = view  # (``tui.screen is view`` below would widen view's type again)
            await wait_for(pilot, lambda: view.query("#results-status"), 10, "the status line")
            status = view.query_one("#results-status", Static)
            await wait_for(pilot, lambda: "Reading the results" in str(status.render()), 10, "the reading line")
            assert not go.is_set(), "shown only once the read ended"
            table = view.query_one("#results", DataTable)
            assert table.row_count == 0 and view.reading
            await pilot.press("s", "S", "right")  # keys on a table not there yet: nothing happens
            assert tui.screen is view and "Reading the results" in str(status.render())
            go.set()
            await wait_for(pilot, lambda: table.row_count == 2 and not shown.reading, 10, "the rows")
            assert "Reading" not in str(status.render()) and "sorted by" in str(status.render())
            await pilot.press("s")
            assert table.row_count == 2
        finally:
            go.set()
            release.cancel()


async def test_a_kept_results_screen_shows_the_rows_added_since_its_last_visit(tmp_path: Path) -> None:
    """A run's results opened again are the screen kept from the last visit (not composed again), as it was left
    while its files are unchanged, and with the rows of its files as they are now once they changed (a point
    added); another run's results are a screen of their own."""
    run = a_run(tmp_path)
    other = a_run(tmp_path, "other-20261129-100000")
    tui = create_app(devices=DEVICES, results_dir=tmp_path / "none", clock=lambda: 0.0, settings=tmp_path / "c.toml")
    async with tui.run_test(size=SIZE) as pilot:
        home = tui.screen

        async def opened(path: Path) -> Any:
            tui.post_message(ShowResults(path))
            view = await results_shown(pilot, 10)
            await pilot.pause()
            return view

        async def back() -> None:
            await pilot.press("escape")
            await wait_for(pilot, lambda: tui.screen is home, 5, "back")

        view = await opened(run)
        table = view.query_one("#results", DataTable)
        assert table.row_count == 2
        await pilot.press("s", "s")  # sorted by another column: kept while the files are unchanged
        sorted_by = str(view.query_one("#results-status", Static).render())
        await back()
        assert await opened(run) is view, "the screen kept from the last visit"
        assert table.row_count == 2 and str(view.query_one("#results-status", Static).render()) == sorted_by
        await back()
        more = write_storage_run(tmp_path / "more" / run.name, [(storage_point(iodepth=q), 1000.0 * q, None)
                                                                for q in (1, 8, 32)])
        for name in ("run.json", "results.jsonl"):  # the run with a point more (resumed, imported into)
            os.replace(more / name, run / name)
        assert await opened(run) is view
        await wait_for(pilot, lambda: table.row_count == 3, 10, "the point added since")
        assert sorted(r["iodepth"] for r in view.records) == [1, 8, 32]
        await back()
        elsewhere = await opened(other)
        assert elsewhere is not view and elsewhere.path == other and elsewhere.query_one("#results").row_count == 2


async def test_a_finished_runs_results_screen_is_made_ahead_for_r(tmp_path: Path) -> None:
    """As a run ends (its results read ahead), its results screen is composed off screen and filled; `r` then shows
    that screen, with its rows, instead of composing one on the key."""
    from app.screens.messages import ShowResultsAhead

    run = a_run(tmp_path)
    tui = create_app(devices=DEVICES, results_dir=tmp_path / "none", clock=lambda: 0.0, settings=tmp_path / "c.toml")
    async with tui.run_test(size=SIZE) as pilot:
        home = tui.screen
        results_screen.read_ahead(run)
        tui.post_message(ShowResultsAhead(run))
        made = await wait_for(pilot, lambda: tui.kept_results and tui.kept_results.is_mounted
                              and not tui.kept_results.reading and tui.kept_results, 10, "the screen made ahead")
        assert tui.screen is home and made.query_one("#results", DataTable).row_count == 2
        tui.post_message(ShowResults(run))
        await wait_for(pilot, lambda: tui.screen is made, 5, "the screen made ahead, shown")
        await pilot.pause()
        assert made.query_one("#results", DataTable).row_count == 2 and made.path == run


async def test_the_custom_form_makes_the_other_kinds_fields_when_switched_to(tmp_path: Path) -> None:
    """The form composes the fields of the kind it shows; the other kind's are made when the kind is switched (half
    the widgets on the key that opens it), and work as the others do."""
    tui = create_app(devices=DEVICES, results_dir=tmp_path / "results", clock=lambda: 0.0)
    async with tui.run_test(size=(100, 40)) as pilot:
        form = await open_form(pilot, "quick")
        assert form.kind == core.STORAGE
        assert not form.query_one("#fields-memory").children
        assert not form.query(f"#memory-{FIELDS[core.MEMORY][0].key}")
        form.query_one("#kind", Select).value = core.MEMORY
        await wait_for(pilot, lambda: form.query("#engine"), 5, "the memory fields")
        await pilot.pause()
        assert form.kind == core.MEMORY
        shown = [f.key for f in FIELDS[core.MEMORY] if form.query_one(f"#row-memory-{f.key}").display]
        assert shown and all(form.query_one(f"#memory-{k}", Input) for k in shown)
        assert str(form.query_one("#form-plan", Static).render()), "the memory plan is described"
        form.query_one("#kind", Select).value = core.STORAGE
        await pilot.pause()
        assert form.kind == core.STORAGE and isinstance(tui.screen, CustomSweepScreen)


def made_ahead(tui: Any, name: str) -> Any:
    """The custom form the app keeps, once made (composed off screen) for preset ``name``."""
    kept = getattr(tui, "kept_form", None)
    form = kept[1] if kept else None
    return form is not None and form.start_from == name and form.is_mounted and form.query(".fields Input") and form


def mine(runtime: int) -> str:
    """A user preset "mine": quick's tests with its own runtime."""
    text = (Path(__file__).parent / "data" / "presets" / "quick.toml").read_text()
    return text.replace('name = "quick"', 'name = "mine"').replace("runtime = 5", f"runtime = {runtime}")


async def test_the_custom_form_is_made_ahead_while_the_cursor_rests_on_a_preset(tmp_path: Path) -> None:
    """The cursor resting on a preset, its custom form is composed off screen; `c` shows that form (built before
    the key) with the preset's values."""
    tui = create_app(devices=DEVICES, results_dir=tmp_path / "results", clock=lambda: 0.0)
    async with tui.run_test(size=(100, 40)) as pilot:
        presets = await presets_on(pilot, "quick")
        form = await wait_for(pilot, lambda: made_ahead(tui, "quick"), 10, "the form made ahead")
        assert tui.screen is presets
        await pilot.press("c")
        await wait_for(pilot, lambda: isinstance(tui.screen, CustomSweepScreen), 5, "the form")
        assert tui.screen is form
        await pilot.pause()
        quick = formplan.start_values(presets.presets["quick"])
        assert isinstance(form, CustomSweepScreen)
        assert form.kind == core.STORAGE and form.query_one("#storage-runtime", Input).value == quick["runtime"]
        assert form.focused is form.query_one("#storage-rw", Input)


async def test_a_kept_custom_form_shows_its_presets_values_again_and_never_a_stale_preset(tmp_path: Path) -> None:
    """`c` again on the same preset shows the form kept from the last visit, as a new one would show it (the
    preset's values, no name, no error: the edits of the last visit gone); once the preset's file changed, the
    form shows the new values; another preset's form shows that preset's kind."""
    core.save_user_preset(mine(2), "mine")
    tui = create_app(devices=DEVICES, results_dir=tmp_path / "results", clock=lambda: 0.0)
    async with tui.run_test(size=(100, 40)) as pilot:
        presets = await presets_on(pilot, "mine")
        await pilot.press("c")
        form = await wait_for(pilot, lambda: isinstance(tui.screen, CustomSweepScreen) and tui.screen, 5, "the form")
        await pilot.pause()
        runtime = form.query_one("#storage-runtime", Input)
        assert runtime.value == "2"
        await set_field(pilot, form, "runtime", "x")
        form.query_one("#name", Input).value = "edited"
        await pilot.pause()
        assert str(form.query_one("#err-storage-runtime", ErrorLine).text)
        await pilot.press("escape")
        await wait_for(pilot, lambda: tui.screen is presets, 5, "the presets")
        await pilot.press("c")
        await wait_for(pilot, lambda: isinstance(tui.screen, CustomSweepScreen), 5, "the form again")
        await pilot.pause()
        assert tui.screen is form, "the form kept from the last visit"
        assert runtime.value == "2" and form.query_one("#name", Input).value == ""
        assert not form.query_one("#err-storage-runtime", ErrorLine).text
        assert form.focused is form.query_one("#storage-rw", Input)

        await pilot.press("escape")
        await wait_for(pilot, lambda: tui.screen is presets, 5, "the presets")
        core.save_user_preset(mine(7), "mine")  # the preset's file changed between visits
        presets.on_screen_resume()
        table = presets.query_one("#presets", DataTable)
        table.move_cursor(row=table.get_row_index("mine"))
        await pilot.pause()
        await pilot.press("c")
        again = await wait_for(pilot, lambda: isinstance(tui.screen, CustomSweepScreen) and tui.screen, 5, "the form")
        await pilot.pause()
        assert again.query_one("#storage-runtime", Input).value == "7"

        await pilot.press("escape")
        await wait_for(pilot, lambda: tui.screen is presets, 5, "the presets")
        table.move_cursor(row=table.get_row_index("mem-loaded"))
        await pilot.pause()
        await pilot.press("c")
        memory = await wait_for(pilot, lambda: isinstance(tui.screen, CustomSweepScreen) and tui.screen, 5, "form")
        await pilot.pause()
        assert memory.kind == core.MEMORY and memory.start_from == "mem-loaded"
        assert memory.query_one("#fields-memory").display and not memory.query_one("#fields-storage").display


def footer_keys(screen: Any) -> list[str]:
    """The key hints a screen's footer shows."""
    from textual.widgets._footer import FooterKey

    return [key.key for key in screen.query(FooterKey)]


async def test_a_footer_is_made_once_for_a_key_and_kept_under_another_screen(tmp_path: Path,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """A screen a key opens makes its footer's keys once, each styled once (Footer made them anew at every change
    of bindings: the screen's first focus, the app's keys changing, the screen under it as the new one came;
    each key styled itself again as it took the footer's compact setting); a screen under another makes nothing,
    and shows its own keys again when it is back on top."""
    from textual.widgets._footer import FooterKey

    a_run(tmp_path)
    made: list[str] = []
    real_init = FooterKey.__init__

    def counting(self, key, *args, **kwargs):
        made.append(key)
        real_init(self, key, *args, **kwargs)

    monkeypatch.setattr(FooterKey, "__init__", counting)
    tui = create_app(devices=DEVICES, results_dir=tmp_path, clock=lambda: 0.0, settings=tmp_path / "c.toml")
    async with tui.run_test(size=SIZE) as pilot:
        devices = tui.screen
        await pilot.pause(0.3)
        before = footer_keys(devices)
        assert before
        made.clear()
        restyled: list[str] = []
        real_update = FooterKey.update_node_styles

        def restyling(self: FooterKey, *a: Any, **k: Any) -> Any:
            restyled.append(self.key)
            return real_update(self, *a, **k)

        monkeypatch.setattr(FooterKey, "update_node_styles", restyling)
        browser = await open_runs(pilot)
        await pilot.pause(0.3)
        assert sorted(made) == sorted(footer_keys(browser)), "the browser's keys, made once (none under it)"
        assert restyled == [], "a key styled again after it was made"
        made.clear()
        await pilot.press("enter")
        results = await wait_for(pilot, lambda: isinstance(tui.screen, ResultsScreen) and tui.screen, 10, "results")
        await pilot.pause(0.3)
        assert sorted(made) == sorted(footer_keys(results)), "the results' keys, made once (none under it)"
        made.clear()
        await pilot.press("escape")
        await wait_for(pilot, lambda: tui.screen is browser, 5, "back to the browser")
        await pilot.press("escape")
        await wait_for(pilot, lambda: tui.screen is devices, 5, "back to the devices")
        await pilot.pause(0.3)
        assert made == [], "a footer made again though its keys were the same"
        assert footer_keys(devices) == before


async def test_the_custom_forms_first_field_has_the_focus_from_the_start(tmp_path: Path,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """The form's first field takes the focus as the form is composed, and nothing before it: the scrolling box
    around the fields took it first (the app's first focusable widget), then handed it to the field, each time
    styling every field again."""
    focused: list[str] = []
    real = CustomSweepScreen.on_descendant_focus

    def focusing(self: CustomSweepScreen, event: Any) -> Any:
        focused.append(str(event.widget.id))
        return real(self, event)

    monkeypatch.setattr(CustomSweepScreen, "on_descendant_focus", focusing)
    tui = create_app(devices=DEVICES, results_dir=tmp_path / "results", clock=lambda: 0.0)
    async with tui.run_test(size=(100, 40)) as pilot:
        form = await open_form(pilot, "quick")
        first = f"{form.kind}-{FIELDS[form.kind][0].key}"
        assert focused == [first], focused
        assert form.focused is form.query_one(f"#{first}", Input)
        assert form.query_one(f"#row-{first}").has_class("-focused")


async def test_a_screen_a_key_opens_is_styled_once_with_the_apps_size_classes(tmp_path: Path,
                                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """The runs browser and a run's results come with the width and height classes of the terminal and are not
    styled again as they are first shown (Textual styled every widget of a new screen again as it resumed and again
    as its first resize added those classes); a resize still changes the classes, and the screen shown again after
    another is styled again."""
    from textual.css.stylesheet import Stylesheet

    a_run(tmp_path)
    roots: list[str] = []
    real = Stylesheet.update_nodes

    def counting(self, nodes, *args, **kwargs):
        nodes = list(nodes)
        roots.append(type(nodes[0]).__name__ if nodes else "")
        return real(self, nodes, *args, **kwargs)

    monkeypatch.setattr(Stylesheet, "update_nodes", counting)
    tui = create_app(devices=DEVICES, results_dir=tmp_path, clock=lambda: 0.0, settings=tmp_path / "c.toml")
    async with tui.run_test(size=(80, 24)) as pilot:
        await pilot.pause(0.3)
        roots.clear()
        browser = await open_runs(pilot)
        await pilot.pause(0.3)
        await pilot.press("enter")
        results = await wait_for(pilot, lambda: isinstance(tui.screen, ResultsScreen) and tui.screen, 10, "results")
        await pilot.pause(0.3)
        assert "RunsScreen" not in roots and "ResultsScreen" not in roots, roots
        assert {"-wide", "-tall"} <= results.classes and not {"-narrow", "-short", "-too-narrow"} & results.classes
        await pilot.resize_terminal(50, 16)
        await pilot.pause(0.3)
        assert {"-narrow", "-short"} <= results.classes and not {"-wide", "-tall"} & results.classes
        await pilot.press("escape")
        await wait_for(pilot, lambda: tui.screen is browser, 5, "back to the browser")
        await pilot.pause(0.3)
        assert {"-narrow", "-short"} <= browser.classes and "RunsScreen" in roots
