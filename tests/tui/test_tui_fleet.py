"""Fleet runs in the TUI: the hosts on the devices screen (f), testing a host's connection, a fleet run of
`quick` on two local agents driven to the fleet results table, per-host lines in the live charts, and
snapshots of the hosts and of the fleet table.

Agents are real ``profiler-tui agent`` processes on Unix sockets here (``unix://`` hosts), stopped by the fixture
whatever the test does; a local agent's devices are this machine's.

Update the snapshots after an intended change with ``pytest tests/tui/test_tui_fleet.py --snapshot-update``."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Iterator

import pytest
from textual.widgets import DataTable, Input, RichLog

from app.engine import sweep
from app.model import runmeta
from app.model.records import read_line
from app.plan import presets as core
from app.runners.base import Phase, Sample
from app.screens.devices import DevicesScreen
from app.screens.fleet import ConfirmFleet, FleetHosts, HostProbe
from app.screens.presets import PresetsScreen
from app.screens.results import ResultsScreen, fleet_cells, host_names, load_fleet
from app.screens.run import RunScreen
from app.screens.state import RunRequest, TargetChoice
from app.store.results import ResultsDir
from app.tui import create_app
from app.widgets import ErrorLine
from app.widgets.charts import HOST_COLORS, MAX_HOST_SERIES, CurveChart, LatencyChart, ThroughputChart
from app.widgets.rowtable import RowTable
from tests.helpers.fleet_agents import agents as fleet_agents
from tests.helpers.fleet_agents import answering
from tests.helpers.typed import storage_points
from tests.tui.helpers import DEVICES, FIXED_PRESETS, NO_META, choose_preset, forever, results_shown, wait_for

SIZE = (80, 24)
WIDE = (160, 48)
SMALL = ("runtime=1", "size=16m")
FLEET_SMALL = SMALL + ("bs=4k", "iodepth=1")  # quick's groups merge into 4 points: read, write, randread, randwrite
A, B = "tcp://127.0.0.1:18001", "tcp://127.0.0.1:18002"


# --- agents ---------------------------------------------------------------------------------------------


@pytest.fixture
def agents() -> Iterator[list[str]]:
    """Two `profiler-tui agent` processes, each on its own socket (their unix:// hosts); always stopped again
    (tests/helpers/fleet_agents.py)."""
    with fleet_agents(2) as running:
        yield [a.host for a in running]
        sockets = [a.socket for a in running]
    for sock in sockets:  # nothing of the agents is left listening
        assert not answering(sock), f"something still listens on {sock}"


@pytest.fixture(autouse=True)
def fixed_presets(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PROFILER_TUI_PRESETS", str(FIXED_PRESETS))


def fleet_panel(app: Any) -> FleetHosts:
    return app.screen.query_one(FleetHosts)


async def add_host(pilot: Any, text: str, typed: bool = False) -> str:
    """Put ``text`` into the add-host field (``typed``: key by key) and press enter; the error line's text (""
    when added)."""
    panel = fleet_panel(pilot.app)
    field = panel.query_one("#host-input", Input)
    field.focus()
    if typed:
        await pilot.press("end", "ctrl+u", *text, "enter")
    else:
        field.value = text
        await pilot.press("enter")
    await pilot.pause()
    return panel.query_one("#host-error", ErrorLine).text


async def set_target(pilot: Any, path: str) -> None:
    fleet_panel(pilot.app).query_one("#fleet-target").focus()
    await pilot.press("end", "ctrl+u", *path)


# --- the hosts field ------------------------------------------------------------------------------------


async def test_add_and_remove_hosts(tmp_path: Path) -> None:
    app = create_app(devices=DEVICES, results_dir=tmp_path / "results")
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("f")
        screen = app.screen
        assert isinstance(screen, DevicesScreen) and screen.fleet_view
        panel = fleet_panel(app)
        assert panel.query_one("#host-input").has_focus

        # bad values: one sentence each, nothing added
        error = await add_host(pilot, "tcp://127.0.0.1", typed=True)
        assert "needs the agent's port" in error and error.endswith(".") and "\n" not in error
        error = await add_host(pilot, "ftp://example")
        assert "expected ssh://" in error
        error = await add_host(pilot, "ssh://-oProxyCommand=x")
        assert "not a host name" in error
        error = await add_host(pilot, "tcp://127.0.0.1:1 relative/path")
        assert "absolute path" in error
        assert panel.hosts == [] and not panel.query_one("#hosts").display

        # good values: added, the field emptied, the error line cleared
        assert await add_host(pilot, A, typed=True) == ""
        assert panel.query_one("#host-input", Input).value == ""
        assert await add_host(pilot, f"{B} /srv/own-target") == ""
        assert panel.names == [A, B] and panel.own == {B: "/srv/own-target"}
        assert panel.query_one("#hosts", RowTable).row_count == 2

        # the same host twice is refused
        error = await add_host(pilot, A)
        assert "in the list already" in error and panel.names == [A, B]

        # the devices view says the run goes to the fleet; p offers the fleet's presets
        await pilot.press("escape")
        assert not screen.fleet_view
        assert "2 hosts" in str(screen.query_one("#devices-status").render())
        assert screen.check_action("fleet_presets", ()) and not screen.check_action("presets", ())

        # remove: the highlighted host
        await pilot.press("f")
        panel.query_one("#hosts").focus()
        await pilot.press("ctrl+home")
        assert panel.current() == A
        await pilot.press("x")
        assert panel.names == [B]
        await pilot.press("x")
        assert panel.names == [] and not panel.query_one("#hosts").display
        assert screen.check_action("presets", ()) and not screen.check_action("fleet_presets", ())


async def test_fleet_needs_a_target_before_the_presets(tmp_path: Path) -> None:
    app = create_app(devices=DEVICES, results_dir=tmp_path / "results")
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("f")
        await add_host(pilot, A)
        await pilot.press("escape", "p")  # the test file has no path on a fleet host: the target is asked for
        screen = app.screen
        assert isinstance(screen, DevicesScreen) and screen.fleet_view
        panel = fleet_panel(app)
        assert "Give the target path" in panel.query_one("#fleet-target-error", ErrorLine).text
        assert panel.query_one("#fleet-target").has_focus
        await pilot.press(*"not/absolute", "enter")
        assert "not an absolute path" in panel.query_one("#fleet-target-error", ErrorLine).text
        await set_target(pilot, "/srv/target")
        await pilot.press("enter")
        confirm = app.screen
        assert isinstance(confirm, ConfirmFleet)
        await pilot.press("escape")  # cancelled: back, nothing started
        assert isinstance(app.screen, DevicesScreen)

        # a block device picked on the devices view applies to every host, and its name allows writes
        await pilot.press("escape", "down", "enter")
        picked = app.screen
        assert isinstance(picked, ConfirmFleet) and picked.name_ == "sdz"
        await pilot.press(*"sdx", "enter")
        assert "That is not sdz" in picked.query_one("#confirm-error", ErrorLine).text
        await pilot.press("backspace", "z", "enter")
        presets = app.screen
        assert isinstance(presets, PresetsScreen)
        target = presets.target
        assert target.hosts == (A,) and target.path == "/dev/sdz" and target.yes and target.allow_destructive
        assert target.target_values() == ["/dev/sdz"]


async def test_memory_presets_do_not_run_on_a_fleet(tmp_path: Path) -> None:
    from app.screens.state import Options, run_request

    choice = TargetChoice(label="/srv/t", path="/srv/t", yes=True, hosts=(A,))
    found = run_request(Options(results_dir=tmp_path), core.load("mem-loaded"), choice)
    assert isinstance(found, str) and "memory preset" in found


# --- test connection ---------------------------------------------------------------------------------------


async def wait_probe(pilot: Any, panel: FleetHosts, name: str) -> HostProbe:
    await wait_for(pilot, lambda: name in panel.probes and name not in panel.testing, 60, f"the test of {name}")
    return panel.probes[name]


async def test_connection_to_a_local_agent_and_a_closed_socket(tmp_path: Path, agents: list[str]) -> None:
    up = agents[0]
    closed = f"unix://{tmp_path}/none.sock"
    app = create_app(devices=DEVICES, results_dir=tmp_path / "results")
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("f")
        panel = fleet_panel(app)
        await add_host(pilot, up)
        await add_host(pilot, closed)
        panel.query_one("#hosts").focus()
        from app.host.devices import list_devices

        before = {d.get("path") for d in list_devices()}
        await pilot.press("ctrl+home", "t")
        probe = await wait_probe(pilot, panel, up)
        assert probe.error is None and probe.agent is True and probe.state == "ok"
        assert probe.address == up.removeprefix("unix://")
        after = {d.get("path") for d in list_devices()}
        # a local agent's devices are this machine's, with their verdicts (other tests may attach loop
        # devices meanwhile: what was there all along is listed, nothing that never was)
        assert isinstance(probe.devices, list) and all(d.get("verdict") for d in probe.devices)
        assert before & after <= {d.get("path") for d in probe.devices} <= before | after
        line = str(panel.query_one("#host-test").render())
        assert "agent answers" in line and up in line
        table = panel.query_one("#hosts", RowTable)
        assert str(table.get_cell(up, "connection")) == "agent answers"
        devices = panel.query_one("#host-devices", DataTable)
        assert devices.row_count >= len(probe.devices)

        await pilot.press("down", "t")
        probe = await wait_probe(pilot, panel, closed)
        assert probe.error is None and probe.agent is False and probe.state == "agent-down"
        line = str(panel.query_one("#host-test").render())
        assert "nothing answers" in line and "profiler-tui agent" in line
        assert str(table.get_cell(closed, "connection")) == "agent not answering"

        # an ssh host that cannot be reached: the link's one sentence
        await add_host(pilot, "ssh://127.0.0.1:1")
        panel.query_one("#hosts").focus()
        await pilot.press("T")  # test all
        probe = await wait_probe(pilot, panel, "ssh://127.0.0.1:1")
        assert probe.state == "unreachable" and probe.error
        assert probe.error.startswith("host ssh://127.0.0.1:1:") and "\n" not in probe.error
        assert str(table.get_cell("ssh://127.0.0.1:1", "connection")) == "unreachable"
        assert panel.probes[up].agent is True  # tested again, still up
        await wait_for(pilot, lambda: not panel.testing, 60, "every test")


# --- a real fleet run ---------------------------------------------------------------------------------------


async def test_fleet_run_of_quick_on_two_agents_to_the_fleet_table(tmp_path: Path, agents: list[str]) -> None:
    one, two = agents
    common, own = tmp_path / "target-one", tmp_path / "target-two"
    # quick as a read and a write point: every per-host and total figure below is checked on each of them
    app = create_app(devices=DEVICES, results_dir=tmp_path / "results", overrides=(*FLEET_SMALL, "rw=read,write"))
    try:
        async with app.run_test(size=SIZE) as pilot:
            await pilot.press("f")
            assert await add_host(pilot, one) == ""
            assert await add_host(pilot, f"{two} {own}") == ""
            await set_target(pilot, str(common))
            await pilot.press("enter")
            assert isinstance(app.screen, ConfirmFleet)
            await pilot.press("enter")  # Confirm (the TUI's --yes)
            await choose_preset(pilot, "quick")
            run = app.screen
            assert isinstance(run, RunScreen) and run.fleet
            await wait_for(pilot, lambda: run.state.finished is not None or run.state.error, 180,
                           "the fleet run to finish")
            assert run.state.error is None, run.state.error
            assert run.state.finished is not None and run.state.finished.status == "complete"
            assert run.state.finished is not None
            assert run.state.finished.done == run.state.finished.total == 4  # 2 points × 2 hosts
            curve = run.query_one("#curve-chart", CurveChart)
            assert {key for key in curve.points} == {(i, h) for i in range(2) for h in (one, two)}
            chart = run.query_one(ThroughputChart)
            if chart.hosts:  # live figures come from the targets' block device; a container may have none
                assert set(chart.hosts) <= {one, two}
                assert one in str(run.query_one("#fleet-legend").render())

            path = run.state.path
            assert path is not None
            meta: dict[str, Any] = dict(ResultsDir(path).read_meta().doc)
            assert meta["fleet"]["hosts"][0]["host"] == one and meta["fleet"]["hosts"][0]["target"] == str(common)
            assert meta["fleet"]["hosts"][1]["target"] == str(own)

            await pilot.press("r")
            results = await results_shown(pilot)
            assert results.fleet is not None
            table = results.query_one("#results", RowTable)
            assert table.row_count == 2 * 3  # each point: its two hosts, then the total
            fleet = results.fleet
            assert fleet.hosts == [one, two]
            for point in fleet.points:
                assert [r.host for r in point.hosts] == [one, two]
                assert point.total.iops == pytest.approx(sum(r.iops or 0 for r in point.hosts))
                assert point.total.mbps == pytest.approx(sum(r.mbps or 0 for r in point.hosts))
            first, total = table.get_row_at(0), table.get_row_at(2)
            assert str(first[1]).endswith(" read") and str(first[2]) == one.split("://")[1]
            assert str(total[2]) == "total"
            assert "fleet run on 2 hosts" in str(results.query_one("#results-status").render())
            await pilot.press("s", "s")  # by the points' total IOPS ("host" is skipped)
            assert results.sort_column == 3
    finally:
        for target in (common, own):
            target.unlink(missing_ok=True)


async def test_resuming_a_fleet_run_confirms_its_hosts_again(tmp_path: Path, agents: list[str]) -> None:
    """An interrupted fleet run resumed from the runs browser: its hosts and targets (from run.json) are shown
    for confirmation, then the run finishes on every host."""
    from app.fleet.runner import open_fleet
    from app.screens.messages import ResumeRun

    one, two = agents
    targets = tmp_path / "t1", tmp_path / "t2"
    # a read and a write point: what resuming on every host needs, in half the time of quick's four
    preset = core.apply_overrides(core.load("quick"), [*FLEET_SMALL, "rw=read,write"])
    fleet = open_fleet([one, two], [f"{one}={targets[0]}", f"{two}={targets[1]}"])
    session = sweep.new_session(preset, out=tmp_path / "results" / "fleet-run", yes=True, fleet=fleet)
    session.mark_interrupted()  # planned, never started: resumable
    session.close()
    app = create_app(devices=DEVICES, results_dir=tmp_path / "results", overrides=FLEET_SMALL)
    try:
        async with app.run_test(size=SIZE) as pilot:
            app.post_message(ResumeRun(session.path))
            await wait_for(pilot, lambda: isinstance(app.screen, ConfirmFleet), 30, "the fleet confirmation")
            confirm = app.screen
            assert isinstance(confirm, ConfirmFleet)
            assert confirm.draft.targets() == [(one, str(targets[0])), (two, str(targets[1]))]
            await pilot.press("enter")
            run = app.screen
            assert isinstance(run, RunScreen) and run.request.resume and run.fleet
            await wait_for(pilot, lambda: run.state.finished is not None or run.state.error, 180, "the resumed run")
            assert run.state.error is None, run.state.error
            assert run.state.finished is not None
            assert run.state.finished.status == "complete" and run.state.finished.total == 4  # 2 points × 2 hosts
    finally:
        for target in targets:
            target.unlink(missing_ok=True)


# --- per-host series in the live charts ---------------------------------------------------------------------


def fleet_choice(hosts: tuple[str, ...] = (A, B)) -> TargetChoice:
    return TargetChoice(label="/data/fleet.testfile", path="/data/fleet.testfile", yes=True, hosts=hosts)


def fleet_events(plan: list[Any], hosts: tuple[str, ...], completed: int, run_dir: Path) -> list[Any]:
    """A fleet run as the session reports it: per-host samples (``host``), then the fleet total (``host`` None);
    a PointDone per host."""
    total = len(plan) * len(hosts)
    events: list[Any] = [sweep.RunStarted(total, total, 1.5 * len(plan), NO_META, run_dir)]
    for i, point in enumerate(plan[:completed + 1]):
        events.append(sweep.PointStarted(i, point, i * len(hosts), total, 1.5 * (len(plan) - i)))
        events.append(Phase(i, "measuring"))
        for k in range(1, 4):
            figures = []
            for j, host in enumerate(hosts):
                iops = 1000.0 * (i + 1) * (j + 1) * (1 + 0.1 * k)
                figures.append({"t": float(k), "host": host, "iops": iops, "bw_bytes": iops * 4096,
                                "lat_mean_ns": 100_000.0 * (j + 1) + 10_000 * k, "lat_p99_ns": None})
            events += [Sample(i, f) for f in figures]
            events.append(Sample(i, {"t": float(k), "host": None, "hosts": len(hosts),
                                     "iops": sum(f["iops"] for f in figures),
                                     "bw_bytes": sum(f["bw_bytes"] for f in figures),
                                     "lat_mean_ns": 150_000.0 + 10_000 * k, "lat_p99_ns": None}))
        if i < completed:
            for j, host in enumerate(hosts):
                m = {"iops": 1000.0 * (i + 1) * (j + 1), "bw_bytes": 4096_000.0 * (i + 1) * (j + 1),
                     "lat_ns": {"mean": 100_000.0 * (j + 1), "p99": 300_000.0 * (j + 1)}}
                events.append(sweep.PointDone(i, {"kind": "storage", "index": i, "point": point.to_dict(),
                                                  "metrics": m, "host": host}, i * len(hosts) + j + 1, total))
    return events


def fleet_run_screen(events: list[Any], hosts: tuple[str, ...] = (A, B)) -> RunScreen:
    preset = core.apply_overrides(core.load("quick"), list(FLEET_SMALL))

    async def source():
        for ev in events:
            yield ev
        await forever()

    return RunScreen(RunRequest(preset, fleet_choice(hosts), Path("results/fleet-snap")), source=source)


async def show(pilot: Any, screen: RunScreen, n_events: int) -> None:
    pilot.app.push_screen(screen)
    await wait_for(pilot, lambda: screen.state.events_seen == n_events, 10, "the fake events")
    screen.tick()
    await pilot.pause()


async def test_per_host_samples_make_per_host_series(tmp_path: Path) -> None:
    plan = core.apply_overrides(core.load("quick"), list(SMALL)).expand()
    events = fleet_events(plan, (A, B), completed=2, run_dir=tmp_path / "run")
    app = create_app(devices=DEVICES, results_dir=tmp_path / "results", clock=lambda: 0.0)
    async with app.run_test(size=SIZE) as pilot:
        screen = fleet_run_screen(events)
        await show(pilot, screen, len(events))
        chart = screen.query_one(ThroughputChart)
        latency = screen.query_one(LatencyChart)
        samples = [ev.data for ev in events if isinstance(ev, Sample)]
        totals = [d for d in samples if d["host"] is None]
        # the main line is the fleet total; each host has its own series (None: the gap between two points)
        assert [v for v in chart.a if v is not None] == [d["iops"] for d in totals]
        assert list(chart.hosts) == [A, B] and list(latency.hosts) == [A, B]
        for host in (A, B):
            mine = [d for d in samples if d["host"] == host]
            assert [v for v in chart.hosts[host].a if v is not None] == [d["iops"] for d in mine]
            assert [v for v in chart.hosts[host].b if v is not None] == [d["bw_bytes"] / 1e6 for d in mine]
            assert [v for v in latency.hosts[host].a if v is not None] == [d["lat_mean_ns"] / 1e3 for d in mine]
            assert len(chart.hosts[host].t) == len(chart.t)
        assert chart.drawn_hosts() == [(A, HOST_COLORS[0]), (B, HOST_COLORS[1])]
        legend = str(screen.query_one("#fleet-legend").render())
        assert A in legend and B in legend
        # the live line is the total's, with the host count
        assert "2 hosts" in screen.state.live
        # a PointDone per host: the curve keeps both, the log names the host
        curve = screen.query_one("#curve-chart", CurveChart)
        assert set(curve.points) == {(0, A), (0, B), (1, A), (1, B)}
        log = "\n".join(str(line.text) for line in screen.query_one("#log-short", RichLog).lines)
        assert f"@ {B}" in log and "[2/8]" in log


async def test_host_series_are_bounded(tmp_path: Path) -> None:
    app = create_app(devices=DEVICES, results_dir=tmp_path / "results", clock=lambda: 0.0)
    async with app.run_test(size=SIZE) as pilot:
        screen = fleet_run_screen([])
        pilot.app.push_screen(screen)
        await pilot.pause()
        chart = screen.query_one(ThroughputChart)
        for n in range(MAX_HOST_SERIES + 5):
            for t in range(700):
                chart.add_sample(float(t), {"host": f"tcp://10.0.0.1:{n + 1}", "iops": 1.0, "bw_bytes": 1.0})
        assert len(chart.hosts) == MAX_HOST_SERIES
        assert all(len(s.t) == len(s.a) == 600 for s in chart.hosts.values())
        assert len(chart.drawn_hosts()) == len(HOST_COLORS)
        chart.redraw()  # drawing many hosts does not fail
        screen.update_legend()
        assert f"+{MAX_HOST_SERIES - len(HOST_COLORS)} more" in str(screen.query_one("#fleet-legend").render())


def test_fleet_table_totals_failures_and_outliers(snap_world) -> None:
    """The screen's table is the report's (app.report.compute.fleet): totals summed, latencies not, a failed host-point
    shown as failed, a point no host measured still listed, the report's outliers marked."""
    C = "tcp://127.0.0.1:18003"
    write_fleet_results(hosts=(A, B, C), outlier=(2, C), failed=[(7, B), (6, A), (6, B), (6, C)])
    table = load_fleet(FLEET_DIR)
    assert table is not None and table.hosts == [A, B, C]
    assert [p.index for p in table.points] == list(range(8)) and table.failed == 4
    first = table.points[0]
    assert [r.host for r in first.hosts] == [A, B, C]
    assert first.total.iops == pytest.approx(sum(r.iops or 0 for r in first.hosts))
    assert first.total.mbps == pytest.approx(sum(r.mbps or 0 for r in first.hosts))
    assert first.total.mean_us is None and first.total.p99_us is None  # latencies are not summed
    assert first.hosts[0].mean_us == pytest.approx(50.0)  # µs
    assert [(r.host, r.failed) for r in table.points[7].hosts] == [(A, False), (B, True), (C, False)]
    assert all(r.failed for r in table.points[6].hosts) and table.points[6].total.iops is None
    outlier = table.points[2].hosts[2]
    assert outlier.host == C and "iops" in outlier.outliers and table.outliers >= 1
    assert not table.points[2].hosts[0].outliers
    assert load_fleet(Path("results/not-there")) is None


async def test_the_total_s_p99_is_the_hosts_merged_histograms(snap_world) -> None:
    """Host A: 980,000 I/Os at 100 µs and 20,000 at 2 ms (p99 2 ms); B: 1,000,000 at 300 µs (p99 300 µs).
    Merged, the 20,000 slow I/Os are 1 % of 2,000,000: the fleet's p99 is 300 µs, not their mean (1150 µs) nor
    median.  (So many I/Os because a p99 needs ten stall events beyond it, and one stall can hold every I/O the
    hosts keep in flight together.)"""
    write_fleet_results(failed=[], hists=[[[100_000, 980_000], [2_000_000, 20_000]], [[300_000, 1_000_000]]])
    table = load_fleet(FLEET_DIR)
    assert table is not None and table.merged_p99
    assert all(p.total.p99_us == pytest.approx(300.0) for p in table.points)
    app = snap_app()
    async with app.run_test(size=SIZE) as pilot:
        app.push_screen(ResultsScreen(FLEET_DIR))
        await pilot.pause()
        status = str(app.screen.query_one("#results-status").render())
        assert "total p99: of the hosts' merged histograms" in status
        cells = [c.plain for c in fleet_cells(table.points[0], host_names(table.hosts))[-1] if hasattr(c, "plain")]
        assert cells[-1] == "300.0"


def test_a_plain_run_has_no_fleet_table(snap_world) -> None:
    plan = core.apply_overrides(core.load("quick"), list(SMALL)).expand()
    rd = ResultsDir(Path("results/plain"))
    rd.create(runmeta.new({"kind": "storage", "plan": [p.to_dict() for p in plan], "status": "complete"},
                          rd.run_json))
    rd.append(read_line({"kind": "storage", "index": 0, "point": plan[0].to_dict(), "metrics": {"iops": 1.0}}))
    assert load_fleet(Path("results/plain")) is None


# --- snapshots ------------------------------------------------------------------------------------------------


@pytest.fixture
def snap_world(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.chdir(tmp_path)  # results/ is relative: the same text on every machine
    monkeypatch.delenv("NO_COLOR", raising=False)


def fake_probe(name: str, port: int) -> HostProbe:
    """A fixed connection test: A answers and lists the helpers' devices, B's agent is not running."""
    address = name.split("://", 1)[1]
    if name == A:
        return HostProbe(name, address=address, agent=True, devices=DEVICES)
    return HostProbe(name, address=address, agent=False, devices=[])


def snap_app() -> Any:
    return create_app(devices=DEVICES, results_dir="results", overrides=SMALL, clock=lambda: 0.0,
                      probe_host=fake_probe)


async def hosts_before(pilot: Any) -> None:
    await pilot.press("f")
    await add_host(pilot, A)
    await add_host(pilot, f"{B} /srv/profiler.testfile")
    await set_target(pilot, "/data/profiler.testfile")
    panel = fleet_panel(pilot.app)
    panel.query_one("#hosts").focus()
    await pilot.press("T")
    await wait_for(pilot, lambda: len(panel.probes) == 2 and not panel.testing, 10, "the fake tests")
    await pilot.press("ctrl+home")
    # The first host's test is shown by the handler of the table's RowHighlighted message, which a loaded
    # machine may run after the key's pause (CI once pictured the first row with the second host's test).
    await wait_for(pilot, lambda: panel.current() == A
                   and str(panel.query_one("#host-test").render()).startswith(f"{A}: "), 10, "the first host's test")
    await pilot.pause()


def test_snapshot_hosts_field(snap_compare, snap_world) -> None:
    assert snap_compare(snap_app(), run_before=hosts_before, terminal_size=SIZE)


def test_snapshot_hosts_field_wide(snap_compare, snap_world) -> None:
    assert snap_compare(snap_app(), run_before=hosts_before, terminal_size=WIDE)


def test_snapshot_hosts_field_bad_host(snap_compare, snap_world) -> None:
    async def before(pilot: Any) -> None:
        await pilot.press("f")
        await add_host(pilot, "tcp://127.0.0.1")

    assert snap_compare(snap_app(), run_before=before, terminal_size=SIZE)


FLEET_DIR = Path("results/quick-fleet-snap")


def write_fleet_results(hosts: tuple[str, ...] = (A, B), outlier: tuple[int, str] | None = None,
                        failed: list[tuple[int, str]] | None = None,
                        hists: list[list[list[int]]] | None = None) -> None:
    """A fleet run's directory as the session writes it (run.json's ``fleet`` and ``failures``, a results line
    per point and host); the ``failed`` host-points have no line, the ``outlier`` measured 5× the IOPS; host j's
    lines carry ``hists[j]`` as their latency histogram."""
    plan = storage_points(core.apply_overrides(core.load("quick"), list(SMALL)).expand())
    failed = [(7, B)] if failed is None else failed
    rd = ResultsDir(FLEET_DIR)
    targets = [{"host": h, "target": f"/data/{i}/profiler.testfile"} for i, h in enumerate(hosts)]
    failures = [{"index": i, "host": h, "point": plan[i].to_dict(), "error": f"host {h}: no result from fio"}
                for i, h in failed]
    rd.create(runmeta.new({"kind": "storage", "plan": [p.to_dict() for p in plan], "status": "partial",
                           "fleet": {"hosts": targets, "agent_socket": "/run/profiler-tui/agent.sock"},
                           "failures": failures}, rd.run_json))
    for i, point in enumerate(plan):
        for j, h in enumerate(targets):
            if (i, h["host"]) in failed:
                continue
            iops = 1000.0 * (i + 1) ** 1.5 * (1 + 0.25 * j) * (5 if (i, h["host"]) == outlier else 1)
            mean = 50_000.0 * (i + 1) / (1 + 0.25 * j)
            rd.append(read_line({"kind": "storage", "index": i, "point": point.to_dict(), "host": h["host"],
                                 "target": h["target"],
                                 "metrics": {"iops": iops, "bw_bytes": iops * point.bs,
                                             "lat_ns": {"mean": mean, "p99": mean * 3},
                                             **({"lat_hist": hists[j]} if hists else {})}}))


async def fleet_results_before(pilot: Any) -> None:
    write_fleet_results()
    pilot.app.push_screen(ResultsScreen(FLEET_DIR))
    await pilot.pause()


def test_snapshot_fleet_results(snap_compare, snap_world) -> None:
    assert snap_compare(snap_app(), run_before=fleet_results_before, terminal_size=SIZE)


def test_snapshot_fleet_results_wide(snap_compare, snap_world) -> None:
    """Three hosts: the third's IOPS at the third point is the report's outlier (yellow)."""
    async def before(pilot: Any) -> None:
        write_fleet_results(hosts=(A, B, "ssh://bench@10.0.0.3"), outlier=(2, "ssh://bench@10.0.0.3"))
        pilot.app.push_screen(ResultsScreen(FLEET_DIR))
        await pilot.pause()

    assert snap_compare(snap_app(), run_before=before, terminal_size=WIDE)


def test_snapshot_fleet_run_live(snap_compare, snap_world) -> None:
    plan = core.apply_overrides(core.load("quick"), list(SMALL)).expand()
    events = fleet_events(plan, (A, B), completed=3, run_dir=Path("results/fleet-snap"))

    async def before(pilot: Any) -> None:
        await show(pilot, fleet_run_screen(events), len(events))

    assert snap_compare(snap_app(), run_before=before, terminal_size=SIZE)
