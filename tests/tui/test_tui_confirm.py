"""Target confirmation (docs/safety.md) from the keyboard: no run starts here, and nothing touches a device
(the device list is a fixed fake; /dev/sdz etc. do not exist)."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from app.host.audit import WARNINGS, Audit
from app.screens.confirm import ConfirmTarget
from app.screens.presets import PresetsScreen
from app.screens.run import RunScreen
from app.tui import create_app
from app.widgets import ErrorLine
from tests.tui.helpers import DEVICES, FIXED_PRESETS, choose_preset, host_audit, tunable_audit


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
        assert app.screen is modal and "sdz" in modal.query_one("#confirm-error", ErrorLine).text
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
        await choose_preset(pilot, "quick")  # quick writes
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
        assert isinstance(app.screen, PresetsScreen)
        t = app.screen.target
        assert (t.path, t.allow_writes, t.yes, t.allow_destructive) == ("/dev/loop7", True, True, False)


# --- small terminals: the field and the buttons are always visible, or nothing can be confirmed -------


def fully_visible(app, widget) -> bool:
    """On screen, not cut by the modal box, and shown."""
    screen = app.screen.region
    box = app.screen.query_one("#confirm-box").region
    r = widget.region
    return (widget.display and r.height >= 1 and r.width >= 3 and screen.contains_region(r)
            and box.contains_region(r))


async def test_name_field_and_buttons_visible_at_every_supported_size(tmp_path: Path) -> None:
    from app.widgets import MIN_HEIGHT, MIN_WIDTH

    app = create_app(devices=DEVICES, results_dir=tmp_path)
    async with app.run_test(size=(80, 24)) as pilot:
        modal = await open_confirm(pilot, 1)  # /dev/sdz: type the name
        checked = 0
        for width in (MIN_WIDTH, 50, 60, 80, 120):
            for height in (MIN_HEIGHT, 15, 17, 20, 23, 24, 30):
                await pilot.resize_terminal(width, height)
                await pilot.pause()
                await pilot.pause()
                for selector in ("#confirm-name", "#confirm", "#cancel", "#confirm-explain"):
                    widget = modal.query_one(selector)
                    assert fully_visible(app, widget), (width, height, selector, widget.region)
                assert not modal.query_one("#confirm-too-small").display
                checked += 1
        assert checked == 35
        # and at the smallest size the typed name still authorises writes
        await pilot.resize_terminal(MIN_WIDTH, MIN_HEIGHT)
        await pilot.pause()
        await pilot.press("s", "d", "x", "enter")
        await pilot.pause()
        assert app.screen is modal and fully_visible(app, modal.query_one("#confirm-error")), "mismatch shown"
        assert fully_visible(app, modal.query_one("#confirm-name"))
        await pilot.press("backspace", "z", "enter")
        assert isinstance(app.screen, PresetsScreen) and app.screen.target.allow_destructive


async def test_below_the_smallest_size_enter_authorises_nothing(tmp_path: Path) -> None:
    from app.widgets import MIN_HEIGHT, MIN_WIDTH

    app = create_app(devices=DEVICES, results_dir=tmp_path)
    async with app.run_test(size=(MIN_WIDTH - 1, MIN_HEIGHT)) as pilot:
        modal = await open_confirm(pilot, 1)
        assert modal.query_one("#confirm-too-small").display
        assert "Enlarge the terminal to at least 40×14" in str(modal.query_one("#confirm-too-small").render())
        assert not modal.query_one("#confirm-name").display and not modal.query_one("#confirm").display
        await pilot.press("s", "d", "z", "enter")  # typed blind: nothing happens
        assert app.screen is modal
        await pilot.press("enter")
        assert app.screen is modal
        assert not any(k == "enter" and b.enabled for k, b in app.active_bindings.items() if b.node is modal)

        await pilot.resize_terminal(MIN_WIDTH, MIN_HEIGHT - 1)  # too short is as bad as too narrow
        await pilot.pause()
        await pilot.press("enter")
        assert app.screen is modal

        await pilot.resize_terminal(MIN_WIDTH, MIN_HEIGHT)  # enlarged: the field is back
        await pilot.pause()
        assert modal.query_one("#confirm-name").display and not modal.query_one("#confirm-too-small").display
        modal.query_one("#confirm-name").focus()
        await pilot.press("ctrl+u", "s", "d", "z", "enter")
        assert isinstance(app.screen, PresetsScreen) and app.screen.target.allow_destructive


async def test_other_screens_say_when_the_terminal_is_too_small(tmp_path: Path) -> None:
    from app.widgets import TOO_SMALL, TooSmall

    app = create_app(devices=DEVICES, results_dir=tmp_path)
    async with app.run_test(size=(80, 24)) as pilot:
        for press in ((), ("enter",), ("c",)):  # devices, presets, custom form
            await pilot.press(*press)
            await pilot.pause()
            banner = app.screen.query_one(TooSmall)
            assert not banner.display
            await pilot.resize_terminal(30, 20)
            await pilot.pause()
            assert banner.display and banner.region.y == 0 and TOO_SMALL[:30] in str(banner.render())
            await pilot.resize_terminal(80, 24)
            await pilot.pause()


# --- the host's settings before confirming ---------------------------------------------------------------


async def test_the_confirmation_lists_the_audit_warnings_read_off_the_ui_thread(tmp_path: Path) -> None:
    asked: list[tuple[str, str]] = []

    def audit(target: str) -> Audit:
        asked.append((target, threading.current_thread().name))
        return host_audit(target)

    app = create_app(devices=DEVICES, results_dir=tmp_path, audit=audit)
    async with app.run_test(size=(80, 24)) as pilot:
        modal = await open_confirm(pilot, 1)
        await app.workers.wait_for_complete()
        await pilot.pause()
        shown = str(modal.query_one("#confirm-audit").render())
        assert asked == [("/dev/sdz", asked[0][1])] and asked[0][1] != threading.main_thread().name
        lines = shown.splitlines()
        assert lines == ["16 settings checked, 2 warnings; `profiler-tui audit /dev/sdz` lists them",
                         f"! I/O scheduler: mq-deadline — {WARNINGS['scheduler']}",
                         f"! PCIe link (current vs maximum): 8.0 GT/s x2 — {WARNINGS['link-degraded']}"]
        await pilot.press("backspace", "enter")  # the field is empty: read-only plans; the audit blocks nothing
        assert isinstance(app.screen, PresetsScreen)


async def test_an_audit_that_fails_says_so_and_a_refused_device_reads_none(tmp_path: Path) -> None:
    def broken(target: str) -> Audit:
        raise OSError(5, "Input/output error")

    app = create_app(devices=DEVICES, results_dir=tmp_path, audit=broken)
    async with app.run_test(size=(80, 24)) as pilot:
        modal = await open_confirm(pilot, 1)
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert str(modal.query_one("#confirm-audit").render()) == (
            "The host's settings could not be read ([Errno 5] Input/output error); `profiler-tui audit /dev/sdz` "
            "lists them")
        await pilot.press("escape")
        refused = await open_confirm(pilot, 4)
        assert refused.refused and not refused.query("#confirm-audit")


async def test_ctrl_t_toggles_tuning_what_the_audit_names_and_the_choice_carries_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    audit = tunable_audit(tmp_path, monkeypatch)
    wbt = tmp_path / "sys" / "block" / "sdz" / "queue" / "wbt_lat_usec"
    app = create_app(devices=DEVICES, results_dir=tmp_path, audit=audit)
    async with app.run_test(size=(100, 40)) as pilot:
        modal = await open_confirm(pilot, 1)
        await app.workers.wait_for_complete()
        await pilot.pause()
        shown = str(modal.query_one("#confirm-tune").render())
        assert shown.startswith("ctrl+t: tuning off — set 1 setting to a benchmark's values")
        await pilot.press("ctrl+t")  # the name field has the focus: ctrl+t, not t, reaches the screen
        await pilot.pause()
        assert "ctrl+t: tuning ON" in str(modal.query_one("#confirm-tune").render())
        chosen: list[object] = []
        monkeypatch.setattr(modal, "dismiss", chosen.append)
        await pilot.press("backspace", "enter")
        assert len(chosen) == 1 and getattr(chosen[0], "tune") is True
    assert wbt.read_text() == "2000\n"  # confirming changes nothing: the run tunes, and only with the choice


async def test_no_tuning_is_offered_when_the_audit_names_nothing_to_change(tmp_path: Path) -> None:
    app = create_app(devices=DEVICES, results_dir=tmp_path, audit=host_audit)
    async with app.run_test(size=(100, 40)) as pilot:
        modal = await open_confirm(pilot, 1)
        await app.workers.wait_for_complete()
        await pilot.pause()
        await pilot.press("ctrl+t")
        assert "ctrl+t" not in str(modal.query_one("#confirm-audit").render()) and modal.tune is False
        assert not modal.query_one("#confirm-tune").display
