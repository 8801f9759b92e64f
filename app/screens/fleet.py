"""Fleet hosts on the devices screen (``f``): add, remove and test the hosts of a fleet run, and the target
used on every host.  With hosts, a run is a fleet run (``profiler-tui run PRESET --host … --target …``): every
point runs on all hosts at once (:func:`app.fleet.runner.open_fleet`, :func:`app.engine.sweep.new_session`).

Testing a host opens its link (ssh:// connects), lists its devices with their verdicts and checks that something
answers at its agent's address, then closes the link; all of it in a thread (ssh and lsblk are subprocesses).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.message import Message
from textual.widgets import Button, DataTable, Footer, Input, Label, Static
from textual.worker import Worker, WorkerState

from app.core.errors import ProfilerError, UsageError
from app.fleet.hosts import DEFAULT_AGENT_SOCKET, MAX_HOSTS, Host, check_remote_path, parse_host
from app.screens import strings
from app.screens.confirm import ConfirmModal
from app.screens.state import HostProbe, Probe, TargetChoice
from app.widgets import ErrorLine, too_small
from app.widgets.rowtable import RowTable
from app.widgets.verdicts import add_device_columns, device_cells, walk

HOST_COLUMNS = ("host", "target", "connection")


def probe_host(text: str, agent_socket: str) -> HostProbe:
    """In a thread: open the host's link, list its devices, ask whether its agent answers, close the link."""
    from app.fleet.links import Link, agent_reachable

    try:
        host = parse_host(text, "host")
    except UsageError as e:
        return HostProbe(text, error=str(e))
    link = Link(host, agent_socket)
    probe = HostProbe(text)
    try:
        link.open()
        addr, port = link.fio_address
        probe.address = (f"{host.address}:{agent_socket} (through SSH)" if host.scheme == "ssh"
                         else addr if port is None else f"{addr}:{port}")
        probe.agent = agent_reachable(link)
        if host.scheme == "tcp" and not host.is_loopback:
            probe.devices_note = strings.FLEET_TEST_NO_DEVICES
        else:
            try:
                probe.devices = link.devices()
            except (ProfilerError, OSError) as e:
                probe.devices_note = strings.FLEET_TEST_DEVICES_FAILED.format(error=e)
    except (ProfilerError, OSError) as e:
        probe.error = str(e) or type(e).__name__
    finally:
        link.close()
    return probe


def parse_entry(text: str) -> tuple[Host, str | None]:
    """What the add-host field holds: ``HOST`` or ``HOST PATH`` (the host's own target); UsageError otherwise."""
    words = text.strip().split(None, 1)
    if not words:
        raise UsageError(strings.FLEET_HOST_PLACEHOLDER)
    host = parse_host(words[0], "host")
    path = words[1].strip() if len(words) > 1 else None
    if path is not None:
        check_remote_path(path, "target")
    return host, path


def target_name(paths: list[str]) -> str:
    """What to type to allow destructive write plans on every host: the device's name when the hosts' device
    targets are one path, else ``destroy``."""
    distinct = sorted({p for p in paths if p.startswith("/dev/")} or set(paths))
    return distinct[0].rsplit("/", 1)[-1] if len(distinct) == 1 else "destroy"


@dataclass
class FleetDraft:
    """The hosts and targets of a fleet run before the confirmation."""

    hosts: list[str]
    path: str | None  # the target on every host
    own: dict[str, str] = field(default_factory=dict)  # a host's own target
    agent_socket: str = DEFAULT_AGENT_SOCKET

    def targets(self) -> list[tuple[str, str]]:
        return [(h, self.own.get(h) or self.path or "") for h in self.hosts]

    def choice(self, yes: bool, allow_destructive: bool) -> TargetChoice:
        return TargetChoice(label=self.path or "", path=self.path, allow_writes=True, yes=yes,
                            allow_destructive=allow_destructive, hosts=tuple(self.hosts),
                            host_targets=tuple((h, p) for h, p in self.own.items() if h in self.hosts),
                            agent_socket=self.agent_socket)


class FleetHosts(Vertical):
    """The hosts list with its add field, the target on every host, and the highlighted host's test result."""

    BINDINGS = [
        Binding("t", "test", "Test"),
        Binding("T", "test_all", "Test all", show=False),  # the status line names it
        Binding("x,delete", "remove", "Remove"),
    ]

    class Changed(Message):
        """The hosts changed (the screen's status line says how many)."""

    def __init__(self, agent_socket: str, probe: Probe | None = None, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.agent_socket = agent_socket
        self.probe: Probe = probe or probe_host
        self.hosts: list[Host] = []
        self.own: dict[str, str] = {}
        self.probes: dict[str, HostProbe] = {}
        self.testing: set[str] = set()

    def compose(self) -> ComposeResult:
        with Horizontal(classes="form-row"):
            yield Label(strings.FLEET_HOST_LABEL, classes="form-label")
            yield Input(placeholder=strings.FLEET_HOST_PLACEHOLDER, id="host-input", compact=True,
                        select_on_focus=False)
        yield ErrorLine(id="host-error")
        yield RowTable(id="hosts", cursor_type="row", zebra_stripes=False)
        with Horizontal(classes="form-row"):
            yield Label(strings.FLEET_TARGET_LABEL, classes="form-label")
            yield Input(placeholder=strings.FLEET_TARGET_PLACEHOLDER, id="fleet-target", compact=True,
                        select_on_focus=False)
        yield ErrorLine(id="fleet-target-error")
        yield Static(strings.FLEET_NO_HOSTS, id="host-test")
        yield RowTable(id="host-devices", cursor_type="row", zebra_stripes=False)

    def on_mount(self) -> None:
        add_device_columns(self.query_one("#host-devices", DataTable), "device", fs=False)
        self._fill()

    # --- the hosts ---------------------------------------------------------------------------------

    @property
    def names(self) -> list[str]:
        return [h.name for h in self.hosts]

    def add_host(self, text: str) -> str | None:
        """Add ``HOST [PATH]``; the one sentence saying why not, or None."""
        try:
            host, path = parse_entry(text)
        except UsageError as e:
            return str(e)
        for other in self.hosts:
            if (other.scheme, other.address, other.port) == (host.scheme, host.address, host.port):
                return strings.FLEET_HOST_TWICE.format(host=host.name, other=other.name)
        if len(self.hosts) >= MAX_HOSTS:
            return strings.FLEET_HOST_TOO_MANY.format(n=MAX_HOSTS)
        self.hosts.append(host)
        if path is not None:
            self.own[host.name] = path
        self._fill(select=host.name)
        self.post_message(self.Changed())
        return None

    def remove_host(self, name: str) -> None:
        self.hosts = [h for h in self.hosts if h.name != name]
        self.own.pop(name, None)
        self.probes.pop(name, None)
        self.testing.discard(name)
        self._fill()
        self.post_message(self.Changed())

    def current(self) -> str | None:
        """The highlighted host's name."""
        table = self.query_one("#hosts", DataTable)
        if not table.row_count or not self.hosts:
            return None
        key = table.coordinate_to_cell_key(table.cursor_coordinate).row_key.value
        return key if key in self.names else None

    def _connection(self, name: str) -> Text:
        if name in self.testing:
            return Text(strings.FLEET_TESTING, style="italic")
        probe = self.probes.get(name)
        if probe is None:
            return Text(strings.FLEET_TEST_NONE, style="dim")
        if probe.state == "ok":
            return Text(strings.FLEET_AGENT_OK, style="green")
        if probe.state == "agent-down":
            return Text(strings.FLEET_AGENT_NONE, style="yellow")
        return Text(strings.FLEET_UNREACHABLE, style="red")

    def _fill(self, select: str | None = None) -> None:
        table = self.query_one("#hosts", DataTable)
        keep = table.cursor_row
        rows = []
        for h in self.hosts:
            own = self.own.get(h.name)
            common = self.common_target
            target = (strings.FLEET_TARGET_OWN.format(path=own) if own else common or strings.FLEET_TARGET_COMMON)
            rows.append((Text(h.name), Text(target), self._connection(h.name)))
        # Columns sized from today's rows, every time: an auto-sized column only grows, and when the table drew
        # before it measured new rows, the header kept the old widths (a snapshot failed on that, now and then).
        table.clear(columns=True)
        for n, label in enumerate(HOST_COLUMNS):
            table.add_column(label, key=label, width=max([len(label), *(row[n].cell_len for row in rows)]))
        for row in rows:
            table.add_row(*row, key=row[0].plain)
        table.display = bool(self.hosts)
        if select is not None and select in self.names:
            table.move_cursor(row=self.names.index(select))
        elif 0 < keep < table.row_count:
            table.move_cursor(row=keep)
        elif table.row_count:
            table.move_cursor(row=min(keep, table.row_count - 1) if keep > 0 else 0)
        self._show_test()

    def _show_test(self) -> None:
        """The highlighted host's test: its agent and devices, or the error; a hint before any test."""
        line = self.query_one("#host-test", Static)
        devices = self.query_one("#host-devices", DataTable)
        devices.clear()
        name = self.current()
        probe = self.probes.get(name) if name is not None else None
        if name is None:
            line.update(strings.FLEET_NO_HOSTS)
        elif name in self.testing:
            line.update(Text(f"{name}: {strings.FLEET_TESTING}", style="italic"))
        elif probe is None:
            line.update(strings.FLEET_TEST_HINT)
        elif probe.error is not None:
            line.update(Text(probe.error, style="red"))
        else:
            text = Text()
            if probe.agent:
                n = sum(1 for _ in walk(probe.devices or []))
                text.append(strings.FLEET_TEST_RESULT.format(host=name, agent=strings.FLEET_AGENT_OK,
                                                             address=probe.address, n=n, s="" if n == 1 else "s"),
                            style="green")
            else:
                text.append(strings.FLEET_TEST_AGENT_DOWN.format(host=name, address=probe.address), style="yellow")
            if probe.devices_note:
                text.append("\n" + probe.devices_note, style="dim")
            line.update(text)
            self._fill_devices(probe.devices or [])
        devices.display = bool(devices.row_count)

    def _fill_devices(self, devs: list[dict[str, object]]) -> None:
        table = self.query_one("#host-devices", DataTable)
        seen: set[str] = set()
        for depth, d in walk(devs):
            key = str(d.get("path") or d.get("name") or "")
            if not key or key in seen:
                continue
            seen.add(key)
            table.add_row(*device_cells(depth, d, key, fs=False), key=key)

    @on(DataTable.RowHighlighted, "#hosts")
    def host_highlighted(self, event: DataTable.RowHighlighted) -> None:
        self._show_test()

    @on(DataTable.RowSelected, "#hosts")
    def host_selected(self, event: DataTable.RowSelected) -> None:
        event.stop()
        self.action_test()

    @on(Input.Submitted, "#host-input")
    def host_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        field_ = self.query_one("#host-input", Input)
        if not field_.value.strip():
            return
        error = self.add_host(field_.value)
        self.query_one("#host-error", ErrorLine).show(error or "")
        if error is None:
            field_.value = ""

    @on(Input.Changed, "#host-input")
    def host_changed(self, event: Input.Changed) -> None:
        if self.query_one("#host-error", ErrorLine).text and not event.value:
            self.query_one("#host-error", ErrorLine).show("")

    @on(Input.Changed, "#fleet-target")
    def target_changed(self, event: Input.Changed) -> None:
        self.query_one("#fleet-target-error", ErrorLine).show("")
        table = self.query_one("#hosts", DataTable)
        for h in self.hosts:
            if h.name not in self.own:
                table.update_cell(h.name, "target", event.value.strip() or strings.FLEET_TARGET_COMMON,
                                  update_width=True)

    # --- the target on every host -------------------------------------------------------------------

    @property
    def common_target(self) -> str:
        return self.query_one("#fleet-target", Input).value.strip()

    def set_common_target(self, path: str) -> None:
        self.query_one("#fleet-target", Input).value = path

    def draft(self) -> FleetDraft | str:
        """The fleet as the run gets it, or the one sentence saying what is missing."""
        path = self.common_target or None
        if path is not None:
            try:
                check_remote_path(path, "target")
            except UsageError:
                return strings.FLEET_TARGET_BAD.format(path=path)
        if any(path is None and h.name not in self.own for h in self.hosts):
            return strings.FLEET_NEEDS_TARGET
        return FleetDraft(self.names, path, dict(self.own), self.agent_socket)

    def show_target_error(self, text: str) -> None:
        self.query_one("#fleet-target-error", ErrorLine).show(text)
        self.query_one("#fleet-target", Input).focus()

    # --- testing ---------------------------------------------------------------------------------------

    def test_host(self, name: str) -> None:
        if name in self.testing:
            return
        self.testing.add(name)
        probe, port = self.probe, self.agent_socket
        self.run_worker(lambda: probe(name, port), thread=True, group="probe", name=name, exit_on_error=False)
        self._fill(select=self.current())

    def action_test(self) -> None:
        name = self.current()
        if name is not None:
            self.test_host(name)

    def action_test_all(self) -> None:
        for name in self.names:
            self.test_host(name)

    def action_remove(self) -> None:
        name = self.current()
        if name is not None:
            self.remove_host(name)

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        if event.worker.group != "probe":
            return
        event.stop()
        name = event.worker.name
        if event.state == WorkerState.SUCCESS:
            result = event.worker.result
            self.testing.discard(name)
            if name in self.names and isinstance(result, HostProbe):
                self.probes[name] = result
        elif event.state in (WorkerState.ERROR, WorkerState.CANCELLED):
            self.testing.discard(name)
            if name in self.names:
                error = event.worker.error
                self.probes[name] = HostProbe(name, error=str(error) or type(error).__name__)
        else:
            return
        self._fill(select=self.current())


class ConfirmFleet(ConfirmModal):
    """The hosts and their targets, what each host checks, and the confirmation (--yes; the device's name
    typed for destructive write plans)."""

    def __init__(self, draft: FleetDraft) -> None:
        super().__init__()
        self.draft = draft
        paths = [p for _, p in draft.targets()]
        self.name_ = target_name(paths)
        self.devices = any(p.startswith("/dev/") for p in paths)

    def compose(self) -> ComposeResult:
        with Vertical(id="confirm-box", classes="modal-box"):
            yield Label(strings.FLEET_CONFIRM_TITLE.format(n=len(self.draft.hosts)), classes="modal-title")
            # the hosts and what confirming means scroll; the name field and the buttons always stay in view
            text = Text()
            for i, (host, path) in enumerate(self.draft.targets()):
                text.append(("\n" if i else "") + host, style="bold")
                text.append(f"  {path}")
            with VerticalScroll(id="confirm-info"):
                yield Static(text, id="confirm-verdicts")
                yield Static(strings.FLEET_CONFIRM_EXPLAIN, id="confirm-explain")
                if self.devices:
                    yield Static(strings.FLEET_CONFIRM_TYPE.format(name=self.name_), id="confirm-type")
            if self.devices:
                yield Input(placeholder=self.name_, id="confirm-name", compact=True)
                yield ErrorLine(id="confirm-error")
            with Horizontal(classes="buttons"):
                yield Button(strings.CONFIRM_BUTTON, id="confirm", variant="primary", compact=True)
                yield Button(strings.CANCEL_BUTTON, id="cancel", compact=True)
        yield Footer()

    def on_mount(self) -> None:
        if self.devices:
            self.query_one("#confirm-name", Input).focus()
        else:
            self.query_one("#confirm", Button).focus()


    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "confirm" and too_small(self.app.size.width, self.app.size.height):
            return False  # what enter would authorise might not be in view
        return True

    def action_confirm(self) -> None:
        if too_small(self.app.size.width, self.app.size.height):
            self.app.bell()
            return
        destructive = False
        if self.devices:
            typed = self.query_one("#confirm-name", Input).value.strip()
            if typed:
                if typed != self.name_:
                    self.query_one("#confirm-error", ErrorLine).show(
                        strings.FLEET_CONFIRM_MISMATCH.format(name=self.name_))
                    return
                destructive = True
        self.dismiss(self.draft.choice(yes=True, allow_destructive=destructive))
