"""Snapshots of every screen at 80x24: fixed devices, fixed presets, fake run events, fixed clock.

Update after an intended change with ``pytest tests/tui/test_tui_snapshots.py --snapshot-update``
and review the SVGs (``__snapshots__``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Sequence

import pytest

from app.engine import sweep
from app.model import runmeta
from app.model.points import Point, RunStatus
from app.model.records import read_line
from app.plan import presets as core
from app.runners.base import Phase, Sample
from app.screens.results import ResultsScreen
from app.screens.run import RunScreen
from app.screens.state import RunRequest, TargetChoice
from app.store.results import ResultsDir
from app.tui import create_app
from tests.helpers.typed import memory_point
from tests.tui.helpers import DEVICES, FIXED_PRESETS, NO_META, forever, host_audit, results_shown, wait_for

SIZE = (80, 24)
SMALL = ("runtime=1", "size=16m")
RUN_DIR = Path("results/quick-snap")


@pytest.fixture(autouse=True)
def fixed_world(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("PROFILER_TUI_PRESETS", str(FIXED_PRESETS))
    monkeypatch.chdir(tmp_path)  # results/ is relative: the same text on every machine
    monkeypatch.delenv("NO_COLOR", raising=False)


def app_():
    return create_app(devices=DEVICES, results_dir="results", overrides=SMALL, clock=lambda: 0.0)


def storage_metrics(i: int) -> dict[str, Any]:
    iops = 1000.0 * (i + 1) ** 1.5
    mean = 50_000.0 * (i + 1)
    return {"iops": iops, "read_iops": iops, "write_iops": 0.0, "bw_bytes": iops * 4096, "read_bw_bytes": iops * 4096,
            "write_bw_bytes": 0.0, "lat_ns": {"min": 1000, "max": 900_000, "mean": mean, "stddev": 10.0,
                                              "p50": mean, "p90": mean * 1.5, "p99": mean * 3, "p99_9": mean * 4,
                                              "p99_99": mean * 5}, "usr_cpu": 2.5, "sys_cpu": 10.0 + i}


def storage_events(plan: Sequence[Point], completed: int, seconds: int = 3) -> list[Any]:
    total = len(plan)
    events: list[Any] = [sweep.RunStarted(total, total, 1.5 * total, NO_META, RUN_DIR)]
    t = 0
    for i, point in enumerate(plan[:completed + 1]):
        events.append(sweep.PointStarted(i, point, i, total, 1.5 * (total - i)))
        events.append(Phase(i, "measuring"))
        m = storage_metrics(i)
        for k in range(1, seconds + 1):
            t += 1
            f = 1 + 0.1 * ((k + i) % 3)
            events.append(Sample(i, {"t": float(k), "iops": m["iops"] * f, "read_iops": m["iops"], "write_iops": 0.0,
                                     "bw_bytes": m["bw_bytes"] * f, "lat_mean_ns": m["lat_ns"]["mean"] / f,
                                     "lat_p99_ns": m["lat_ns"]["p99"] / f,
                                     "lat_p99_9_ns": m["lat_ns"]["p99_9"] * f}))
        if i < completed:
            events.append(sweep.PointDone(i, {"kind": "storage", "index": i, "point": point.to_dict(), "metrics": m},
                                          i + 1, total))
    return events


def memory_events(plan: Sequence[Point], completed: int) -> list[Any]:
    total = len(plan)
    events: list[Any] = [sweep.RunStarted(total, total, 2.0 * total, NO_META, Path("results/mem-snap")),
                         sweep.PointStarted(0, plan[0], 0, total, 2.0 * total)]
    for i, point in enumerate(memory_point(p) for p in plan[:completed]):
        assert point.delay is not None  # a loaded point
        lat = 80.0 + 400.0 / (1 + point.delay / 100)
        bw = 60000.0 / (1 + point.delay / 300)
        data = {"delay": point.delay, "latency_ns": lat, "bandwidth_mbps": bw}
        events.append(Sample(i, data))
        events.append(sweep.PointDone(i, {"kind": "memory", "index": i, "point": point.to_dict(),
                                          "metrics": {"latency_ns": lat, "bandwidth_mbps": bw}}, i + 1, total))
    return events


def fake_run(preset_name: str, events: list[Any]):
    preset = core.apply_overrides(core.load(preset_name),
                                  [o for o in SMALL if o.split("=")[0] in core.KEYS[core.load(preset_name).kind]])
    target = TargetChoice.test_file(Path("results")) if preset.kind == "storage" else None

    async def source():
        for ev in events:
            yield ev
        await forever()

    return RunScreen(RunRequest(preset, target, RUN_DIR), source=source)


async def show_run(pilot, screen: RunScreen, n_events: int) -> None:
    pilot.app.push_screen(screen)
    await wait_for(pilot, lambda: screen.state.events_seen == n_events, 10, "the fake events")
    screen.tick()
    await pilot.pause()


def device_part(read: float | None, write: float | None) -> dict[str, Any]:
    """A line's ``device`` part with these device/fio byte ratios (None: fio moved nothing that way)."""
    return {"name": "loop3", "source": "target", "read_bytes": 0, "write_bytes": 0, "window_s": 1.0,
            "read_ratio": read, "write_ratio": write, "lat_mean_ns": None}


# quick's points: read, write, read, write, randread, randwrite, randread, randwrite
DEVICES_OF_POINTS = {0: device_part(1.0, None), 1: device_part(0.0, 1.01), 2: device_part(0.04, None),
                     3: device_part(None, 1.6), 4: {"unavailable": "the target is a file on tmpfs"},
                     5: device_part(0.0, 0.99), 6: device_part(0.995, None)}  # 7: a line without the part


# the points' CPU figures: fio's iops_per_cpu (None: none) and a host_cpu part (None: none); point 5's busy time
# too short for a bare figure, point 7's part unavailable and point 6 without either figure
CPU_OF_POINTS: dict[int, tuple[float | None, dict[str, Any] | None]] = {
    i: (float(90_000 + 40_000 * i), {"cpus": "0-1", "window_s": 10.0, "busy_s": 8.0 + i, "steal_s": 0.0,
                                     "busy_cpus": 0.8 + i / 10, "iops_per_busy_cpu": 60_000.0 + 25_000 * i})
    for i in range(5)} | {5: (212_400.0, {"cpus": "0", "window_s": 0.6, "busy_s": 0.3, "steal_s": 0.0,
                                          "busy_cpus": 0.5, "iops_per_busy_cpu": 150_000.0}),
                          6: (None, None), 7: (1_250_000.0, {"unavailable": "no /proc/stat"})}


def write_results(flags: dict[int, list[str]] | None = None, ci: bool = False,
                  devices: dict[int, dict[str, Any]] | None = None,
                  cpu: dict[int, tuple[float | None, dict[str, Any] | None]] | None = None) -> None:
    """``ci``: the points record a 95 % interval of IOPS of ±(1 + i) %, but the last none; ``devices``: the
    points' ``device`` parts; ``cpu``: their fio iops_per_cpu and host_cpu part."""
    plan = core.apply_overrides(core.load("quick"), list(SMALL)).expand()
    rd = ResultsDir(RUN_DIR)
    rd.create(runmeta.new({"kind": "storage", "plan": plan, "status": "complete"}, rd.run_json))
    for i, point in enumerate(plan):
        record: dict[str, Any] = {"kind": "storage", "index": i, "point": point.to_dict(),
                                  "metrics": storage_metrics(i)}
        if ci and i < len(plan) - 1:
            iops = record["metrics"]["iops"]
            record["metrics"]["ci95"] = {"iops": [iops * (0.99 - 0.01 * i), iops * (1.01 + 0.01 * i)]}
            record["metrics"]["ci_method"] = {"method": "batch-means"}
        if flags is not None:
            record["flags"] = [{"flag": name, "reason": "a reason"} for name in flags.get(i, [])]
        if devices is not None and i in devices:
            record["device"] = devices[i]
        if cpu is not None and i in cpu:
            fio, host = cpu[i]
            if fio is not None:
                record["metrics"]["iops_per_cpu"] = fio
            if host is not None:
                record["host_cpu"] = host
        rd.append(read_line(record))


def test_devices(snap_compare) -> None:
    assert snap_compare(app_(), terminal_size=SIZE)


def test_devices_highlight_mounted_partition(snap_compare) -> None:
    assert snap_compare(app_(), press=["down", "down"], terminal_size=SIZE)


def test_confirm_destructive_asks_for_the_name(snap_compare) -> None:
    assert snap_compare(app_(), press=["down", "enter", "s", "d", "x"], terminal_size=SIZE)


def test_confirm_refused_shows_reasons(snap_compare) -> None:
    assert snap_compare(app_(), press=["down", "down", "down", "down", "enter"], terminal_size=SIZE)


def test_confirm_shows_the_host_settings_warnings(snap_compare) -> None:
    async def before(pilot) -> None:
        await pilot.press("down", "enter")
        await pilot.app.workers.wait_for_complete()
        await pilot.pause()

    app = create_app(devices=DEVICES, results_dir="results", overrides=SMALL, clock=lambda: 0.0, audit=host_audit)
    assert snap_compare(app, run_before=before, terminal_size=SIZE)


def test_presets_preview(snap_compare) -> None:
    assert snap_compare(app_(), press=["enter", "down", "down", "down", "down"], terminal_size=SIZE)


def test_custom_form_inline_error(snap_compare) -> None:
    async def before(pilot) -> None:
        await pilot.press("p", "c")
        pilot.app.screen.query_one("#storage-bs").focus()
        await pilot.press("end", "ctrl+u", "4", "x", "ctrl+r")
        await pilot.pause(0.6)  # past the cursor's blink (as on a loaded machine): the cursor is still drawn

    assert snap_compare(app_(), run_before=before, terminal_size=SIZE)


def test_run_storage_live(snap_compare) -> None:
    plan = core.apply_overrides(core.load("quick"), list(SMALL)).expand()
    events = storage_events(plan, completed=5)

    async def before(pilot) -> None:
        await show_run(pilot, fake_run("quick", events), len(events))

    assert snap_compare(app_(), run_before=before, terminal_size=SIZE)


def test_run_storage_curve_tab(snap_compare) -> None:
    plan = core.apply_overrides(core.load("quick"), list(SMALL)).expand()
    events = storage_events(plan, completed=5)

    async def before(pilot) -> None:
        await show_run(pilot, fake_run("quick", events), len(events))
        await pilot.press("2")

    assert snap_compare(app_(), run_before=before, terminal_size=SIZE)


def test_run_memory_curve(snap_compare) -> None:
    plan = core.load("mem-loaded").expand()
    events = memory_events(plan, completed=12)

    async def before(pilot) -> None:
        await show_run(pilot, fake_run("mem-loaded", events), len(events))

    assert snap_compare(app_(), run_before=before, terminal_size=SIZE)


def test_run_cancel_confirmation(snap_compare) -> None:
    plan = core.apply_overrides(core.load("quick"), list(SMALL)).expand()
    events = storage_events(plan, completed=2)

    async def before(pilot) -> None:
        await show_run(pilot, fake_run("quick", events), len(events))
        await pilot.press("c")

    assert snap_compare(app_(), run_before=before, terminal_size=SIZE)


def test_results_sorted(snap_compare) -> None:
    async def before(pilot) -> None:
        write_results()
        pilot.app.push_screen(ResultsScreen(RUN_DIR))
        await results_shown(pilot)  # a read of RUN_DIR ahead (an earlier test's) may still run: its rows
        await pilot.pause()
        await pilot.press("s", "s", "S")

    assert snap_compare(app_(), run_before=before, terminal_size=SIZE)


def test_results_with_validity_flags(snap_compare) -> None:
    """A run whose points carry validity flags: the table gets a flags column."""
    async def before(pilot) -> None:
        write_results({0: ["cpu-bound", "buffered"], 2: ["not-steady"]})
        pilot.app.push_screen(ResultsScreen(RUN_DIR))
        await results_shown(pilot)  # a read of RUN_DIR ahead (an earlier test's) may still run: its rows
        await pilot.pause()

    assert snap_compare(app_(), run_before=before, terminal_size=(120, 24))


def test_results_with_device_ratios(snap_compare) -> None:
    """A dev/fio column before CPU %: the device's bytes over fio's in the point's direction, ! where the point is
    flagged not-on-device or amplified, — where the counters were unavailable or the line has none; at 80
    columns with the flags column too."""
    async def before(pilot) -> None:
        write_results({2: ["not-on-device"], 3: ["amplified"]}, devices=DEVICES_OF_POINTS)
        pilot.app.push_screen(ResultsScreen(RUN_DIR))
        await results_shown(pilot)  # a read of RUN_DIR ahead (an earlier test's) may still run: its rows
        await pilot.pause()

    assert snap_compare(app_(), run_before=before, terminal_size=SIZE)


@pytest.mark.parametrize("size", [SIZE, (132, 24)])
def test_results_with_iops_per_cpu(snap_compare, size: tuple[int, int]) -> None:
    """An IOPS/CPU column after CPU %: fio's own figure (per CPU-second of its job threads) whether or not the line
    has a host_cpu part, — without it; the status line says what the column counts."""
    async def before(pilot) -> None:
        write_results(cpu=CPU_OF_POINTS)
        pilot.app.push_screen(ResultsScreen(RUN_DIR))
        await results_shown(pilot)  # a read of RUN_DIR ahead (an earlier test's) may still run: its rows
        await pilot.pause()

    assert snap_compare(app_(), run_before=before, terminal_size=size)


def test_run_storage_live_p99_9(snap_compare) -> None:
    """``t`` on the run screen: the latency chart draws each second's p99 (green) and p99.9 (red), its title (the
    legend) whole at 80 columns."""
    plan = core.apply_overrides(core.load("quick"), list(SMALL)).expand()
    events = storage_events(plan, completed=5)

    async def before(pilot) -> None:
        await show_run(pilot, fake_run("quick", events), len(events))
        await pilot.press("t")
        await pilot.pause()

    assert snap_compare(app_(), run_before=before, terminal_size=SIZE)


def test_results_with_intervals(snap_compare) -> None:
    """A ± column after IOPS (the half-width of each point's 95 % interval in per cent); empty for the point
    without one."""
    async def before(pilot) -> None:
        write_results(ci=True)
        pilot.app.push_screen(ResultsScreen(RUN_DIR))
        await results_shown(pilot)  # a read of RUN_DIR ahead (an earlier test's) may still run: its rows
        await pilot.pause()

    assert snap_compare(app_(), run_before=before, terminal_size=SIZE)


def test_run_storage_live_interval(snap_compare) -> None:
    """24 seconds into a point: its running interval of IOPS beside the live figures."""
    plan = core.apply_overrides(core.load("quick"), list(SMALL)).expand()
    events = storage_events(plan, completed=1, seconds=24)

    async def before(pilot) -> None:
        await show_run(pilot, fake_run("quick", events), len(events))

    assert snap_compare(app_(), run_before=before, terminal_size=SIZE)


def test_export_modal(snap_compare) -> None:
    async def before(pilot) -> None:
        write_results()
        pilot.app.push_screen(ResultsScreen(RUN_DIR))
        await results_shown(pilot)  # a read of RUN_DIR ahead (an earlier test's) may still run: its rows
        await pilot.pause()
        await pilot.press("e")

    assert snap_compare(app_(), run_before=before, terminal_size=SIZE)


def test_help(snap_compare) -> None:
    assert snap_compare(app_(), press=["?"], terminal_size=SIZE)


NARROW = (40, 24)


def test_presets_preview_stacked_at_40_columns(snap_compare) -> None:
    assert snap_compare(app_(), press=["enter", "down", "down", "down", "down"], terminal_size=NARROW)


def test_run_storage_live_at_40_columns_keeps_the_eta(snap_compare) -> None:
    plan = core.apply_overrides(core.load("quick"), list(SMALL)).expand()
    events = storage_events(plan, completed=5)

    async def before(pilot) -> None:
        await show_run(pilot, fake_run("quick", events), len(events))

    assert snap_compare(app_(), run_before=before, terminal_size=NARROW)


# the target confirmation on small terminals: it fits (field and buttons in view) down to the smallest
# supported size (app.widgets.MIN_WIDTH x MIN_HEIGHT); below it, it refuses to confirm anything
CONFIRM_KEYS = ["down", "enter", "s", "d", "x"]


def test_confirm_destructive_at_60x15(snap_compare) -> None:
    assert snap_compare(app_(), press=CONFIRM_KEYS, terminal_size=(60, 15))


def test_confirm_destructive_at_the_smallest_supported_size(snap_compare) -> None:
    from app.widgets import MIN_HEIGHT, MIN_WIDTH

    assert snap_compare(app_(), press=CONFIRM_KEYS, terminal_size=(MIN_WIDTH, MIN_HEIGHT))


def test_confirm_destructive_below_the_smallest_size_refuses(snap_compare) -> None:
    from app.widgets import MIN_HEIGHT, MIN_WIDTH

    assert snap_compare(app_(), press=CONFIRM_KEYS, terminal_size=(MIN_WIDTH - 1, MIN_HEIGHT - 1))


def steady_events(plan: list[Any], completed: int, skip_from: int | None) -> list[Any]:
    """A steady-state run of qd-scaling: each point's samples fill fio's window (5 s) and the finished points
    record fio's verdict; from ``skip_from`` on, the adaptive rule skips the rest of the axis."""
    total = len(plan)
    events: list[Any] = [sweep.RunStarted(total, total, 10.0 * total, NO_META, RUN_DIR)]
    for i, point in enumerate(plan[:completed + 1]):
        if skip_from is not None and i >= skip_from:
            break
        events.append(sweep.PointStarted(i, point, i, total, 10.0 * (total - i)))
        m = storage_metrics(i)
        filled = 5 if i < completed else 3
        for k in range(1, 3 + filled):
            window = {"window_s": 5, "filled_s": max(0, min(5, k - 2)), "attained": i < completed and k == 2 + filled,
                      "deviation": 1.5}
            events.append(Phase(i, "steady", float(window["filled_s"]), 5.0))
            events.append(Sample(i, {"t": float(k), "iops": m["iops"], "read_iops": m["iops"], "write_iops": 0.0,
                                     "bw_bytes": m["bw_bytes"], "lat_mean_ns": m["lat_ns"]["mean"],
                                     "lat_p99_ns": m["lat_ns"]["p99"], "steady": window}))
        if i < completed:
            attained = i != 1
            steady = {"attained": attained, "after_s": 7.0 + i if attained else None, "criterion": "iops:2%",
                      "deviation": 1.5 if attained else 4.2, "slope": 10.0, "window_s": 5}
            events.append(sweep.PointDone(i, {"kind": "storage", "index": i, "point": point.to_dict(), "metrics": m,
                                              "steady": steady}, i + 1, total))
    if skip_from is not None:
        for j in range(skip_from, total):
            events.append(sweep.PointSkipped(j, plan[j], f"saturated at QD {plan[skip_from - 3].iodepth}"))
        events.append(sweep.RunFinished(RunStatus.COMPLETE, skip_from, skip_from, 0, RUN_DIR))
    return events


def steady_run(events: list[Any]) -> RunScreen:
    screen = fake_run("qd-scaling", events)
    core.apply_overrides(screen.request.preset, ["steady=iops:2%", "adaptive=yes"])
    return screen


def test_run_steady_state_window_filling(snap_compare) -> None:
    plan = core.apply_overrides(core.load("qd-scaling"), ["steady=iops:2%", "runtime=30"]).expand()
    events = steady_events(plan, completed=3, skip_from=None)

    async def before(pilot) -> None:
        await show_run(pilot, steady_run(events), len(events))

    assert snap_compare(app_(), run_before=before, terminal_size=SIZE)


def test_run_adaptive_skipped_points(snap_compare) -> None:
    plan = core.apply_overrides(core.load("qd-scaling"), ["steady=iops:2%", "runtime=30"]).expand()
    events = steady_events(plan, completed=6, skip_from=6)

    async def before(pilot) -> None:
        await show_run(pilot, steady_run(events), len(events))

    assert snap_compare(app_(), run_before=before, terminal_size=SIZE)


def test_run_storage_laying_out_the_test_file(snap_compare) -> None:
    """fio lays out a 1 GiB test file before its first I/O: no sample yet, the screen says what fio does and
    how far it got (and the empty charts have no ticks to label)."""
    plan = core.apply_overrides(core.load("quick"), list(SMALL)).expand()
    events: list[Any] = [sweep.RunStarted(len(plan), len(plan), 1.5 * len(plan), NO_META, RUN_DIR),
                         sweep.PointStarted(0, plan[0], 0, len(plan), 1.5 * len(plan)),
                         Phase(0, "layout", 0.0, float(1 << 30)),
                         Phase(0, "layout", float(412 << 20), float(1 << 30))]

    async def before(pilot) -> None:
        await show_run(pilot, fake_run("quick", events), len(events))

    assert snap_compare(app_(), run_before=before, terminal_size=SIZE)


def test_run_storage_ramp(snap_compare) -> None:
    """Samples of the ramp are drawn, and the screen says they are not measured."""
    plan = core.apply_overrides(core.load("quick"), list(SMALL)).expand()
    m = storage_metrics(0)
    events: list[Any] = [sweep.RunStarted(len(plan), len(plan), 1.5 * len(plan), NO_META, RUN_DIR),
                         sweep.PointStarted(0, plan[0], 0, len(plan), 1.5 * len(plan)), Phase(0, "ramp", 0.0, 5.0)]
    for k in (1, 2):
        events.append(Phase(0, "ramp", k - 0.1, 5.0))
        events.append(Sample(0, {"t": float(k), "iops": m["iops"] * k / 2, "read_iops": m["iops"], "write_iops": 0.0,
                                 "bw_bytes": m["bw_bytes"] * k / 2, "lat_mean_ns": m["lat_ns"]["mean"] * 4 / k,
                                 "lat_p99_ns": m["lat_ns"]["p99"] * 4 / k}))

    async def before(pilot) -> None:
        await show_run(pilot, fake_run("quick", events), len(events))

    assert snap_compare(app_(), run_before=before, terminal_size=SIZE)
