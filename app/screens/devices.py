"""The first screen: block devices with their safety verdicts (docs/safety.md), plus the default test-file target."""

from __future__ import annotations

from typing import Callable

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import Screen
from textual.widgets import DataTable, Header, Input, Static
from textual.worker import Worker, WorkerState

from app.core.sanitize import clean_text
from app.screens import strings
from app.screens.confirm import ConfirmTarget
from app.screens.fleet import ConfirmFleet, FleetDraft, FleetHosts
from app.screens.messages import ShowPresets
from app.screens.state import TargetChoice, app_options, set_results_problem
from app.screens.words import tui_words
from app.widgets import KeysFooter, TooSmall
from app.widgets.rowtable import RowTable
from app.widgets.verdicts import add_device_columns, device_cells, verdict_text, walk

TEST_FILE_KEY = "__test_file__"


Devices = list[dict[str, object]]  # lsblk's devices with their verdicts (app.host.devices.list_devices)


def _reasons(plan: dict[str, object]) -> list[str]:
    reasons = plan.get("reasons")
    return [str(r) for r in reasons] if isinstance(reasons, list) else []


def _plan(d: dict[str, object], which: str, default: dict[str, object]) -> dict[str, object]:
    """A device's verdict on a write (or read-only) plan, ``default`` when it has none."""
    plan = d.get(which)
    return plan if isinstance(plan, dict) and plan else default


def load_devices(source: Callable[[], Devices] | Devices | None) -> Devices:
    """Runs in a thread: lsblk, /sys and short probes."""
    if callable(source):
        return source()
    from app.host.devices import list_devices

    return list_devices()


class DevicesScreen(Screen[None]):
    BINDINGS = [
        Binding("enter", "pick", "Pick", priority=True),
        Binding("p", "presets", "Presets (test file)"),
        Binding("p", "fleet_presets", "Presets"),  # instead of the one above once there are hosts
        Binding("r", "rescan", "Rescan"),
        Binding("f", "fleet", "Fleet hosts", show=False),  # the status line names it (the footer is full at 80)
        Binding("f,escape", "leave_fleet", "Devices"),  # the hosts shown: back to the devices
    ]

    def __init__(self) -> None:
        super().__init__()
        self.devices: dict[str, dict[str, object]] = {}
        self.no_devices = False  # lsblk listed none
        self.fleet_view = False  # the fleet hosts are shown instead of this machine's devices (f)

    def compose(self) -> ComposeResult:
        yield Header(show_clock=False)
        yield TooSmall()
        with Vertical(id="devices-body"):
            yield RowTable(id="devices", cursor_type="row", zebra_stripes=False)
            options = app_options(self.app)
            yield FleetHosts(options.agent_socket, options.probe_host, id="fleet")
            yield Static(strings.SCANNING, id="devices-status")
            yield Static("", id="results-problem")
            yield Static("", id="environment-warnings")
            yield Static("", id="device-reasons")
        yield KeysFooter()

    def on_mount(self) -> None:
        self.sub_title = strings.DEVICES_SUBTITLE
        table = self.query_one("#devices", DataTable)
        add_device_columns(table, "target", fs=True)
        self._fill([])
        table.focus()
        self.query_one("#environment-warnings", Static).display = False
        self.query_one("#results-problem", Static).display = False
        check = app_options(self.app).results_check
        if check is not None:
            where = app_options(self.app).results_dir
            self.run_worker(lambda: check(where), thread=True, group="results-check", exit_on_error=False)
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
        if event.worker.group == "results-check":
            if event.state == WorkerState.SUCCESS and event.worker.result:
                problem = strings.RESULTS_UNWRITABLE.format(problem=event.worker.result)
                set_results_problem(self.app, problem)
                panel = self.query_one("#results-problem", Static)
                panel.update(Text(clean_text(problem), style="bold red"))
                panel.display = True
            return
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

    def _fill(self, devs: list[dict[str, object]]) -> None:
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
            if not isinstance(key, str) or not key or key in self.devices:
                continue
            self.devices[key] = d
            table.add_row(*device_cells(depth, d, key, fs=True), key=key)
        self.no_devices = devs == [] and not self._scanning()
        self._show_status()
        if 0 < keep < table.row_count:
            table.move_cursor(row=keep)
        self._show_reasons()

    def _show_status(self) -> None:
        status = self.query_one("#devices-status", Static)
        hosts = len(self.query_one(FleetHosts).hosts)
        if self.fleet_view:
            status.update(strings.FLEET_HINT)
        elif hosts:
            status.update(Text(strings.FLEET_STATUS.format(n=hosts, s="" if hosts == 1 else "s"), style="bold"))
        else:
            status.update(strings.NO_DEVICES if self.no_devices else strings.DEVICES_HINT)

    def _scanning(self) -> bool:
        return any(w.group == "devices" and w.is_running for w in self.workers)

    def _current(self) -> tuple[str, dict[str, object]] | None:
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
        fleet = self.query_one(FleetHosts)
        if key == TEST_FILE_KEY and fleet.hosts:  # a fleet host has no test file of ours: the hosts' target
            text.append(strings.FLEET_TEST_FILE_REASON.format(
                n=len(fleet.hosts), path=fleet.common_target or strings.FLEET_NO_TARGET_YET))
        elif key == TEST_FILE_KEY:
            text.append(_reasons(d)[0])
        else:
            model = " ".join(str(x) for x in (d.get("vendor"), d.get("model"), d.get("transport")) if x)
            if model:
                text.append(model + "\n", style="bold")
            write = _plan(d, "write", {"verdict": d.get("verdict"), "reasons": d.get("reasons", [])})
            read = _plan(d, "read", write)
            text.append("write: ", style="bold")
            text.append(tui_words("; ".join(_reasons(write) or ["-"])) + "\n")
            text.append("read: ", style="bold")
            text.append(tui_words(f"{read.get('verdict')}" + (" — " + "; ".join(_reasons(read))
                                                              if read.get("reasons") else "")))
        panel.update(text)

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        if event.data_table.id == "devices":
            self._show_reasons()

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        if event.data_table.id != "devices":
            return
        event.stop()
        self.action_pick()

    # --- fleet hosts --------------------------------------------------------------------------

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "pick" and self.fleet_view:
            return False  # enter belongs to the hosts' fields and table
        if action == "leave_fleet":
            return self.fleet_view
        if action in ("rescan", "fleet"):
            return not self.fleet_view
        hosts = bool(self.query(FleetHosts) and self.query_one(FleetHosts).hosts)
        if action == "presets":
            return not hosts
        if action == "fleet_presets":
            return hosts
        return True

    def action_fleet(self) -> None:
        """Show the fleet hosts instead of this machine's devices, or back."""
        self.fleet_view = not self.fleet_view
        self._show_reasons()
        self.set_class(self.fleet_view, "-fleet")
        self.sub_title = strings.FLEET_SUBTITLE if self.fleet_view else strings.DEVICES_SUBTITLE
        panel = self.query_one(FleetHosts)
        if self.fleet_view:
            panel.query_one("#hosts" if panel.hosts else "#host-input").focus()
        else:
            self.query_one("#devices", DataTable).focus()
        self._show_status()
        self.refresh_bindings()

    def action_leave_fleet(self) -> None:
        if self.fleet_view:
            self.action_fleet()

    def on_fleet_hosts_changed(self, event: FleetHosts.Changed) -> None:
        self._show_status()
        self._show_reasons()
        self.refresh_bindings()

    def action_fleet_presets(self) -> None:
        self._run_on_fleet()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        if event.input.id == "fleet-target":  # the target on every host given: on to the presets
            event.stop()
            self.action_presets()

    def _run_on_fleet(self, path: str | None = None) -> None:
        """A fleet run: ``path`` (a device picked here), else the target field, on every host; confirmed first."""
        panel = self.query_one(FleetHosts)
        if path is not None:
            panel.set_common_target(path)
        draft = panel.draft()
        if isinstance(draft, str):
            if not self.fleet_view:
                self.action_fleet()
            panel.show_target_error(draft)
            return
        self._confirm_fleet(draft)

    def _confirm_fleet(self, draft: FleetDraft) -> None:
        def confirmed(choice: TargetChoice | None) -> None:
            if choice is not None:
                self.post_message(ShowPresets(choice))

        self.app.push_screen(ConfirmFleet(draft), confirmed)

    def action_pick(self) -> None:
        current = self._current()
        if current is None:
            return
        key, d = current
        if self.query_one(FleetHosts).hosts:  # with hosts, the target picked applies to every host
            self._run_on_fleet(None if key == TEST_FILE_KEY else str(d.get("path") or key))
            return
        if key == TEST_FILE_KEY:
            self.action_presets()
            return

        def confirmed(choice: TargetChoice | None) -> None:
            if choice is not None:
                self.post_message(ShowPresets(choice))

        self.app.push_screen(ConfirmTarget(d), confirmed)

    def action_presets(self) -> None:
        if self.query_one(FleetHosts).hosts:
            self._run_on_fleet()
            return
        self.post_message(ShowPresets(TargetChoice.test_file(app_options(self.app).results_dir)))
