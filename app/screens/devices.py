"""The first screen: block devices with their safety verdicts (docs/safety.md), plus the default test-file target."""

from __future__ import annotations

from typing import Any

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import Screen
from textual.widgets import DataTable, Footer, Header, Static
from textual.worker import Worker, WorkerState

from app.devices import human_size
from app.screens import strings
from app.widgets import TooSmall
from app.screens.confirm import ConfirmTarget
from app.screens.messages import ShowPresets
from app.screens.state import TargetChoice, app_options

TEST_FILE_KEY = "__test_file__"
VERDICT_STYLE = {"ok": "green", "needs --allow-destructive": "yellow", "refused": "red"}


def walk(devs: list[dict[str, Any]], depth: int = 0):
    for d in devs:
        yield depth, d
        yield from walk(d.get("children") or [], depth + 1)


def verdict_text(verdict: str, block: bool = True) -> Text:
    shown = {"needs --allow-destructive": "type name"}.get(verdict, verdict)
    if verdict == "ok" and block:
        shown = "ok, confirm"
    return Text(shown, style=VERDICT_STYLE.get(verdict, ""))


def load_devices(source: Any) -> list[dict[str, Any]]:
    """Runs in a thread: lsblk, /sys and short probes."""
    if callable(source):
        return source()
    from app.devices import list_devices

    return list_devices()


class DevicesScreen(Screen[None]):
    BINDINGS = [
        Binding("enter", "pick", "Pick", priority=True),
        Binding("p", "presets", "Presets (test file)"),
        Binding("r", "rescan", "Rescan"),
    ]

    def __init__(self) -> None:
        super().__init__()
        self.devices: dict[str, dict[str, Any]] = {}

    def compose(self) -> ComposeResult:
        yield Header(show_clock=False)
        yield TooSmall()
        with Vertical(id="devices-body"):
            yield DataTable(id="devices", cursor_type="row", zebra_stripes=False)
            yield Static(strings.SCANNING, id="devices-status")
            yield Static("", id="environment-warnings")
            yield Static("", id="device-reasons")
        yield Footer()

    def on_mount(self) -> None:
        self.sub_title = strings.DEVICES_SUBTITLE
        table = self.query_one("#devices", DataTable)
        table.add_column("target", key="target", width=22)
        table.add_column("size", key="size", width=7)
        table.add_column("type", key="type", width=5)
        table.add_column("fs/pt", key="fs", width=8)
        table.add_column("mounted", key="mounted", width=11)
        table.add_column("write plan", key="verdict", width=11)
        self._fill([])
        table.focus()
        self.query_one("#environment-warnings", Static).display = False
        env = app_options(self.app).environment
        if isinstance(env, list):
            self._show_environment(env)
        elif env is not None:
            self.run_worker(env, thread=True, group="environment", exit_on_error=False, name="environment")
        source = app_options(self.app).devices
        if isinstance(source, list):
            self._fill(source)
        else:
            self.action_rescan()

    def action_rescan(self) -> None:
        source = app_options(self.app).devices
        if isinstance(source, list):
            self._fill(source)
            return
        self.query_one("#devices-status", Static).update(strings.SCANNING)
        self.run_worker(lambda: load_devices(source), thread=True, exclusive=True, group="devices",
                        exit_on_error=False, name="devices")

    def _show_environment(self, warnings: list[str]) -> None:
        panel = self.query_one("#environment-warnings", Static)
        panel.update(Text("\n".join(f"! {w}" for w in warnings), style="bold yellow"))
        panel.display = bool(warnings)

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        if event.worker.group == "environment":
            if event.state == WorkerState.SUCCESS:
                self._show_environment(list(event.worker.result or []))
            return
        if event.worker.group != "devices":
            return
        if event.state == WorkerState.SUCCESS:
            self._fill(event.worker.result or [])
        elif event.state == WorkerState.ERROR:
            self.query_one("#devices-status", Static).update(strings.DEVICES_FAILED.format(error=event.worker.error))

    def _fill(self, devs: list[dict[str, Any]]) -> None:
        table = self.query_one("#devices", DataTable)
        keep = table.cursor_row
        table.clear()
        self.devices = {}
        results_dir = app_options(self.app).results_dir
        table.add_row(Text(strings.TEST_FILE_LABEL, style="bold"), "-", "file", "-", "-", verdict_text("ok", False),
                      key=TEST_FILE_KEY)
        self.devices[TEST_FILE_KEY] = {
            "path": None, "type": "file", "verdict": "ok",
            "reasons": [strings.TEST_FILE_REASON.format(path=results_dir)],
        }
        for depth, d in walk(devs):
            key = d.get("path") or d.get("name")
            if not key or key in self.devices:
                continue
            self.devices[key] = d
            fs = d.get("fstype") or (f"{d['pttype']}" if d.get("pttype") else "-")
            mounted = ",".join(d.get("mountpoints") or []) or "-"
            table.add_row(" " * depth + key, human_size(d.get("size")), d.get("type") or "-", fs, mounted,
                          verdict_text(d.get("verdict", "refused")), key=key)
        status = self.query_one("#devices-status", Static)
        status.update(strings.NO_DEVICES if devs == [] and not self._scanning() else strings.DEVICES_HINT)
        if 0 < keep < table.row_count:
            table.move_cursor(row=keep)
        self._show_reasons()

    def _scanning(self) -> bool:
        return any(w.group == "devices" and w.is_running for w in self.workers)

    def _current(self) -> tuple[str, dict[str, Any]] | None:
        table = self.query_one("#devices", DataTable)
        if not table.row_count:
            return None
        key = table.coordinate_to_cell_key(table.cursor_coordinate).row_key.value
        return (key, self.devices[key]) if key in self.devices else None

    def _show_reasons(self) -> None:
        current = self._current()
        panel = self.query_one("#device-reasons", Static)
        if current is None:
            panel.update("")
            return
        key, d = current
        text = Text()
        if key == TEST_FILE_KEY:
            text.append(d["reasons"][0])
        else:
            model = " ".join(x for x in (d.get("vendor"), d.get("model"), d.get("transport")) if x)
            if model:
                text.append(model + "\n", style="bold")
            write = d.get("write") or {"verdict": d.get("verdict"), "reasons": d.get("reasons", [])}
            read = d.get("read") or write
            text.append("write: ", style="bold")
            text.append("; ".join(write.get("reasons") or ["-"]) + "\n")
            text.append("read: ", style="bold")
            text.append(f"{read.get('verdict')}" + (" — " + "; ".join(read["reasons"]) if read.get("reasons") else ""))
        panel.update(text)

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        self._show_reasons()

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        event.stop()
        self.action_pick()

    def action_pick(self) -> None:
        current = self._current()
        if current is None:
            return
        key, d = current
        if key == TEST_FILE_KEY:
            self.action_presets()
            return

        def confirmed(choice: TargetChoice | None) -> None:
            if choice is not None:
                self.post_message(ShowPresets(choice))

        self.app.push_screen(ConfirmTarget(d), confirmed)

    def action_presets(self) -> None:
        self.post_message(ShowPresets(TargetChoice.test_file(app_options(self.app).results_dir)))
