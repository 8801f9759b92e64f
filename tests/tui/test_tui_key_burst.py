"""Keys that arrive in one burst (a paste, a laggy ssh link): each lands where the keys before it put the
focus.  Pilot's press waits for the app to go idle after each key, which hides the race; a burst is sent
here as the driver sends what one read of the terminal gave it: every key queued before the first is seen."""

from __future__ import annotations

from pathlib import Path

import pytest
from textual import events

from app.screens.custom import CustomSweepScreen
from app.tui import create_app
from tests.tui.helpers import DEVICES, FIXED_PRESETS, wait_for


@pytest.fixture(autouse=True)
def fixed_presets(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PROFILER_TUI_PRESETS", str(FIXED_PRESETS))


def burst(app, text: str) -> None:
    """``text`` queued at once, as keys ("\\t" is tab)."""
    for ch in text:
        key = {"\t": "tab", ",": "comma"}.get(ch, ch)
        event = events.Key(key, ch)
        event.set_sender(app)
        app._driver.send_message(event)


async def test_a_burst_of_keys_after_tab_lands_in_the_newly_focused_field(tmp_path: Path) -> None:
    app = create_app(devices=DEVICES, results_dir=tmp_path / "results", overrides=["runtime=1"])
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("p", "c")
        form = await wait_for(pilot, lambda: isinstance(app.screen, CustomSweepScreen) and app.screen, 10, "the form")
        await wait_for(pilot, lambda: getattr(app.focused, "id", None) == "storage-rw", 5, "the first field")
        await pilot.press("end")
        burst(app, "\t,64k\t,32\t")
        await wait_for(pilot, lambda: getattr(app.focused, "id", None) == "storage-numjobs", 5, "three tabs")
        await pilot.pause(0.1)
        # a field takes the focus with its text selected: what is typed replaces it
        assert form.query_one("#storage-rw").value == "randread"
        assert form.query_one("#storage-bs").value == ",64k"
        assert form.query_one("#storage-iodepth").value == ",32"
