"""Target confirmation (SPEC §5) from the keyboard: no run starts here, and nothing touches a device
(the device list is a fixed fake; /dev/sdz etc. do not exist)."""

from __future__ import annotations

from pathlib import Path

import pytest

from app.screens.confirm import ConfirmTarget
from app.screens.presets import PresetsScreen
from app.screens.run import RunScreen
from app.tui import create_app
from tests.tui.helpers import DEVICES, FIXED_PRESETS


@pytest.fixture(autouse=True)
def fixed_presets(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PROFILER_TUI_PRESETS", str(FIXED_PRESETS))


async def open_confirm(pilot, downs: int) -> ConfirmTarget:
    await pilot.press(*(["down"] * downs), "enter")
    assert isinstance(pilot.app.screen, ConfirmTarget)
    return pilot.app.screen


async def test_destructive_needs_the_typed_name(tmp_path: Path) -> None:
    app = create_app(devices=DEVICES, results_dir=tmp_path)
    async with app.run_test(size=(80, 24)) as pilot:
        modal = await open_confirm(pilot, 1)  # /dev/sdz: gpt signature
        await pilot.press("s", "d", "x", "enter")
        assert app.screen is modal and "sdz" in modal.query_one("#confirm-error").text
        await pilot.press("backspace", "z", "enter")
        presets = app.screen
        assert isinstance(presets, PresetsScreen)
        t = presets.target
        assert (t.path, t.allow_writes, t.allow_destructive, t.yes) == ("/dev/sdz", True, True, True)


async def test_empty_name_confirms_read_only_and_write_presets_are_refused(tmp_path: Path) -> None:
    app = create_app(devices=DEVICES, results_dir=tmp_path)
    async with app.run_test(size=(80, 24)) as pilot:
        await open_confirm(pilot, 1)
        await pilot.press("enter")
        presets = app.screen
        assert isinstance(presets, PresetsScreen)
        assert (presets.target.allow_writes, presets.target.allow_destructive) == (False, False)
        while presets._current() != "quick":  # quick writes
            await pilot.press("down")
        await pilot.press("enter")
        assert app.screen is presets and not any(isinstance(s, RunScreen) for s in app.screen_stack)
        assert any("read-only" in str(n.message) for n in app._notifications)


async def test_refused_device_cannot_be_picked(tmp_path: Path) -> None:
    app = create_app(devices=DEVICES, results_dir=tmp_path)
    async with app.run_test(size=(80, 24)) as pilot:
        modal = await open_confirm(pilot, 4)  # /dev/sdy: refused for reads and writes
        assert modal.refused
        assert "member of dm-0" in str(modal.query_one("#confirm-refused").render())
        await pilot.press("enter")
        assert not isinstance(app.screen, (ConfirmTarget, PresetsScreen))


async def test_escape_cancels(tmp_path: Path) -> None:
    app = create_app(devices=DEVICES, results_dir=tmp_path)
    async with app.run_test(size=(80, 24)) as pilot:
        await open_confirm(pilot, 3)  # /dev/loop7: blank, ok with confirmation
        await pilot.press("escape")
        assert not isinstance(app.screen, (ConfirmTarget, PresetsScreen))
        await open_confirm(pilot, 0)
        await pilot.press("enter")  # the Confirm button has the focus
        t = app.screen.target
        assert (t.path, t.allow_writes, t.yes, t.allow_destructive) == ("/dev/loop7", True, True, False)
