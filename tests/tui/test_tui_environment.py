"""The first screen says what the container lacks: device access, a results volume (app.host.container)."""

from __future__ import annotations

from pathlib import Path

from textual.widgets import Static

from app.tui import create_app
from tests.tui.helpers import DEVICES

DEVICE_HINT = ("This podman container cannot see the host's block devices (vda are in /sys/block but not in "
               "/dev): run it with --privileged -v /dev:/dev.")
LOST = ('Results in /results will be lost when the container exits: add -v "$PWD/results:/results" to the podman '
        'run command.')


def panel_text(app) -> str:
    return str(app.screen.query_one("#environment-warnings", Static).render())


async def test_warnings_computed_in_a_thread_are_shown(tmp_path: Path) -> None:
    calls = []

    def environment() -> list[str]:
        calls.append(1)
        return [DEVICE_HINT, LOST]

    app = create_app(devices=DEVICES, results_dir=tmp_path, environment=environment)
    async with app.run_test(size=(120, 30)) as pilot:
        for _ in range(50):
            await pilot.pause(0.05)
            if app.screen.query_one("#environment-warnings", Static).display:
                break
        text = panel_text(app)
        assert calls == [1]
        assert "--privileged -v /dev:/dev" in text and 'add -v "$PWD/results:/results"' in text


async def test_no_warning_no_panel(tmp_path: Path) -> None:
    app = create_app(devices=DEVICES, results_dir=tmp_path, environment=[])
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        assert not app.screen.query_one("#environment-warnings", Static).display


async def test_no_devices_line_fits_80_columns_and_agrees_with_the_container_warning(tmp_path: Path) -> None:
    """In a container without device access the kernel lists devices in /sys: the status line under the
    table must not say /sys lists none, and must not be cut at 80 columns."""
    app = create_app(devices=[], results_dir=tmp_path, environment=[DEVICE_HINT])
    async with app.run_test(size=(80, 24)) as pilot:
        for _ in range(50):
            await pilot.pause(0.05)
            if app.screen.query_one("#environment-warnings", Static).display:
                break
        status = app.screen.query_one("#devices-status", Static)
        text = str(status.render())
        assert "test file" in text and "/sys" not in text
        assert len(text) <= status.content_region.width, text
