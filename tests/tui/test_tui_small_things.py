"""Small things users hit (issue 11, item 6): stopping while a run starts, saving over a preset, narrow
terminals, and the output encoding."""

from __future__ import annotations

import json
import os
import pwd
import threading
import time
from pathlib import Path

import pytest
from textual.widgets import RichLog

from app.engine import sweep
from app.plan import presets as core
from app.screens.confirm import YesNo
from app.screens.custom import CustomSweepScreen
from app.screens.presets import PresetsScreen
from app.screens.run import RunScreen
from app.tui import create_app
from app.widgets import ErrorLine
from tests.tui.helpers import DEVICES, FIXED_PRESETS, NO_META, wait_for

SIZE = (80, 24)
SMALL = ["runtime=1", "size=16m"]


@pytest.fixture(autouse=True)
def fixed_presets(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PROFILER_TUI_PRESETS", str(FIXED_PRESETS))


# --- stopping while the session is being created -------------------------------------------------


@pytest.mark.parametrize("blocked", ["before run.json", "after run.json"])
async def test_stop_while_the_session_starts_marks_the_run_interrupted(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, blocked: str) -> None:
    """new_session runs in a thread (it probes tools and the environment); the user stops the run
    meanwhile. When the thread returns, run.json must say interrupted, not planned."""
    release = threading.Event()
    entered = threading.Event()
    real = sweep.new_session

    def slow_new_session(*args, **kwargs):
        entered.set()
        if blocked == "before run.json":
            release.wait(30)
            return real(*args, **kwargs)
        session = real(*args, **kwargs)
        release.wait(30)
        return session

    monkeypatch.setattr(sweep, "new_session", slow_new_session)
    app = create_app(devices=DEVICES, results_dir=tmp_path / "results", overrides=SMALL)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("enter")  # test file → presets; the first preset is 'custom'
        await pilot.press("enter")
        run = app.screen
        assert isinstance(run, RunScreen)
        await wait_for(pilot, entered.is_set, 10, "new_session to be called")
        await pilot.press("c")
        assert isinstance(app.screen, YesNo)
        await pilot.press("y")
        await wait_for(pilot, lambda: not run.running, 10, "the worker to be cancelled")
        assert run.state.status == "interrupted"
        release.set()
        found = await wait_for(pilot, lambda: list((tmp_path / "results").glob("*/run.json")), 20, "run.json")
        meta = await wait_for(pilot, lambda: (m := json.loads(found[0].read_text()))["status"] != "planned" and m,
                              20, "run.json to leave 'planned'")
    assert meta["status"] == "interrupted" and meta["ended"]


# --- saving a custom preset over an existing name asks first -------------------------------------


async def type_into(pilot, selector: str, text: str) -> None:
    pilot.app.screen.query_one(selector).focus()
    await pilot.press("end", "ctrl+u", *text)


async def test_saving_under_a_shipped_or_existing_name_asks(tmp_path: Path) -> None:
    mine = core.user_dir() / "quick.toml"
    app = create_app(devices=DEVICES, results_dir=tmp_path / "results", overrides=SMALL)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("p", "c")
        form = app.screen
        assert isinstance(form, CustomSweepScreen)
        await type_into(pilot, "#name", "quick")
        await pilot.press("ctrl+s")
        assert isinstance(app.screen, YesNo), "a shipped name is shadowed only after asking"
        assert "shipped preset" in app.screen.question
        await pilot.press("n")
        assert app.screen is form and not mine.exists()
        assert "unchanged" in form.query_one("#err-name", ErrorLine).text

        await pilot.press("ctrl+s", "y")
        assert app.screen is form and mine.exists()
        first = mine.read_text()
        assert 'bs = 4096' in first or "4096" in first

        await type_into(pilot, "#storage-bs", "64k")
        await type_into(pilot, "#name", "quick")
        await pilot.press("ctrl+s")
        assert isinstance(app.screen, YesNo) and "Overwrite" in app.screen.question
        await pilot.press("escape")
        assert mine.read_text() == first, "no: the user's preset is unchanged"
        await pilot.press("ctrl+s", "y")
        assert "65536" in mine.read_text()

        await type_into(pilot, "#name", "brand-new")
        await pilot.press("ctrl+s")
        assert app.screen is form, "a new name saves without asking"
        assert (core.user_dir() / "brand-new.toml").exists()


@pytest.mark.skipif(os.geteuid() != 0, reason="chown to another user needs root")
async def test_ctrl_s_never_saves_through_another_users_link(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """With XDG_CONFIG_HOME in a directory nobody owns, nobody's presets/evil.toml as a link to a root-only file:
    ctrl+s wrote root's form into that file.  The presets list shows evil refused (red, with why) and does not read
    it; saving is refused with the sentence, and the root-only file keeps its bytes."""
    nobody = pwd.getpwnam("nobody")
    secret = tmp_path / "secret"
    secret.write_text("root only\n")
    secret.chmod(0o600)
    cfg = tmp_path / "cfg"
    user = cfg / "profiler-tui" / "presets"
    user.mkdir(parents=True)
    (user / "evil.toml").symlink_to(secret)
    for p in (cfg, cfg / "profiler-tui", user, user / "evil.toml"):
        os.lchown(p, nobody.pw_uid, nobody.pw_gid)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(cfg))
    app = create_app(devices=DEVICES, results_dir=tmp_path / "results", overrides=SMALL)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("p")
        listed = await wait_for(pilot, lambda: isinstance(app.screen, PresetsScreen)
                                and "evil" in app.screen.errors and app.screen, 5, "the presets list")
        assert "owned by another user (uid 65534)" in listed.errors["evil"]
        await pilot.press("c")
        form = app.screen
        assert isinstance(form, CustomSweepScreen)
        await type_into(pilot, "#name", "evil")
        await pilot.press("ctrl+s")
        if isinstance(app.screen, YesNo):  # the link's target exists: "overwrite?" is asked first
            await pilot.press("y")
        await wait_for(pilot, lambda: "Not saved" in form.query_one("#err-name", ErrorLine).text, 5, "the refusal")
        assert f"{user}: it is owned by another user (uid 65534)" in form.query_one("#err-name", ErrorLine).text
    assert secret.read_text() == "root only\n" and (user / "evil.toml").is_symlink()


# --- narrow terminals --------------------------------------------------------------------------------


async def test_presets_preview_stacks_under_the_list_when_narrow(tmp_path: Path) -> None:
    app = create_app(devices=DEVICES, results_dir=tmp_path / "results", overrides=SMALL)
    async with app.run_test(size=(40, 24)) as pilot:
        await pilot.press("p")
        await pilot.pause()
        preview = app.screen.query_one("#preview-scroll")
        table = app.screen.query_one("#presets")
        assert preview.region.width >= 36, preview.region  # was 1 column beside the list
        assert preview.region.y > table.region.y
        assert "1 point, estimated" in str(app.screen.query_one("#preview").render()).replace("\n", " ")
        await pilot.resize_terminal(100, 24)
        await pilot.pause()
        assert preview.region.x > table.region.x and preview.region.y == table.region.y, "side by side again"


def fake_events_run(events: list) -> RunScreen:
    from app.screens.state import RunRequest, TargetChoice
    from tests.tui.helpers import forever

    preset = core.apply_overrides(core.load("quick"), SMALL)

    async def source():
        for ev in events:
            yield ev
        await forever()

    return RunScreen(RunRequest(preset, TargetChoice.test_file(Path("results")), Path("results/q")), source=source)


async def test_eta_stays_visible_at_40_columns(tmp_path: Path) -> None:
    plan = core.apply_overrides(core.load("quick"), SMALL).expand()
    events = [sweep.RunStarted(8, 8, 12.0, NO_META, Path("results/q")), sweep.PointStarted(0, plan[0], 0, 8, 12.0)]
    app = create_app(devices=DEVICES, results_dir=tmp_path / "results", overrides=SMALL, clock=lambda: 0.0)
    async with app.run_test(size=(40, 24)) as pilot:
        run = fake_events_run(events)
        app.push_screen(run)
        await wait_for(pilot, lambda: run.state.events_seen == 2, 10, "the events")
        await pilot.pause()
        eta = run.query_one("#eta")
        assert eta.region.width >= 30 and "ETA" in str(eta.render()), (eta.region, str(eta.render()))


async def test_resume_hint_is_whole_on_the_live_tab_at_80_columns(tmp_path: Path) -> None:
    # stopped long before its end (a 5 s point once completed before the stop on a loaded machine)
    app = create_app(devices=DEVICES, results_dir=tmp_path / "results", overrides=["runtime=30", "size=16m"])
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("enter", "enter")  # test file → the first preset, 'custom'
        run = app.screen
        assert isinstance(run, RunScreen)
        await wait_for(pilot, lambda: run.state.status == "running", 30, "the run to start")
        await pilot.press("c", "y")
        await wait_for(pilot, lambda: run.state.status == "interrupted", 20, "the run to stop")
        await pilot.pause()
        log = run.query_one("#log-short", RichLog)
        rows = [strip.text.rstrip() for strip in log.lines]
        joined = "".join(rows).replace(" ", "")  # wrapped at spaces, long paths folded anywhere
        assert f"profiler-tuiresume{run.state.path}" in joined, rows
        assert all(strip.cell_length <= log.scrollable_content_region.width for strip in log.lines)


# --- output encoding ---------------------------------------------------------------------------------


def test_ascii_only_python_output_still_draws_boxes(tmp_path: Path) -> None:
    """LC_ALL=C PYTHONUTF8=0 makes Python's stderr ASCII with backslash escapes: the TUI writes UTF-8."""
    from tests.tui.pty_harness import PtyApp

    with PtyApp(tmp_path, env={"LC_ALL": "C", "LANG": "C", "PYTHONUTF8": "0", "PYTHONCOERCECLOCALE": "0"}) as app:
        app.wait_for("test file")
        time.sleep(0.5)
        screen = app.raw()
        app.send("q")
        assert app.wait(timeout=10) == 0
    assert "\\u2500" not in screen and "\\u" not in screen, screen[-1500:]
    assert "─" in screen  # the rule above the reasons panel
