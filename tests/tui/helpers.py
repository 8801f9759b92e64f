"""Fixed inputs for the TUI tests: a device list, fake run events, polling helpers."""

from __future__ import annotations

import asyncio
import os
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

from rich.text import Text
from textual.widget import Widget

from app.host.audit import ITEMS, Audit, Item

if TYPE_CHECKING:
    from app.screens.runs import RunsScreen
from app.model.runmeta import RunMeta

TUI_DATA = Path(__file__).resolve().parent / "data"
# RunStarted.meta for a run whose screens read nothing of its run.json: the empty document
NO_META = RunMeta(doc={}, source="run.json")
FIXED_PRESETS = TUI_DATA / "presets"

# What app.host.devices.list_devices() returns, frozen: a disk with a partition table and a mounted
# partition, a blank loop device, and an LVM member.
DEVICES: list[dict[str, Any]] = [
    {
        "name": "sdz", "path": "/dev/sdz", "type": "disk", "size": 500107862016, "vendor": "ATA",
        "model": "Samsung SSD 860", "transport": "sata", "rotational": False, "mountpoints": [],
        "fstype": None, "pttype": "gpt",
        "verdict": "needs --allow-destructive",
        "reasons": ["/dev/sdz carries a filesystem or partition-table signature (gpt) that a write plan destroys"],
        "write": {"verdict": "needs --allow-destructive", "reasons": [
            "/dev/sdz carries a filesystem or partition-table signature (gpt) that a write plan destroys"]},
        "read": {"verdict": "ok", "reasons": ["a read-only plan never writes /dev/sdz; it needs confirmation (--yes)"],
                 "needs_yes": True},
        "children": [{
            "name": "sdz1", "path": "/dev/sdz1", "type": "part", "size": 536870912, "mountpoints": ["/boot/efi"],
            "fstype": "vfat", "pttype": None, "verdict": "refused",
            "reasons": ["/dev/sdz1 is mounted on /boot/efi"],
            "write": {"verdict": "refused", "reasons": ["/dev/sdz1 is mounted on /boot/efi"]},
            "read": {"verdict": "ok", "reasons": ["/dev/sdz1 is mounted on /boot/efi; reads run regardless"],
                     "needs_yes": True},
            "children": [],
        }],
    },
    {
        "name": "loop7", "path": "/dev/loop7", "type": "loop", "size": 67108864, "mountpoints": [],
        "fstype": None, "pttype": None, "verdict": "ok",
        "reasons": ["/dev/loop7 is not mounted, not swap, not held and carries no filesystem or partition-table "
                    "signature; a write plan needs confirmation (--yes)"],
        "write": {"verdict": "ok", "reasons": ["/dev/loop7 is not mounted, not swap, not held and carries no "
                                               "signature; a write plan needs confirmation (--yes)"]},
        "read": {"verdict": "ok", "reasons": ["a read-only plan never writes /dev/loop7"], "needs_yes": True},
        "children": [],
    },
    {
        "name": "sdy", "path": "/dev/sdy", "type": "disk", "size": 2000398934016, "model": "WDC WD20EZRZ",
        "transport": "sata", "rotational": True, "mountpoints": [], "fstype": "LVM2_member", "pttype": None,
        "verdict": "refused", "reasons": ["/dev/sdy is a member of dm-0 (LVM/RAID/dm holder)"],
        "write": {"verdict": "refused", "reasons": ["/dev/sdy is a member of dm-0 (LVM/RAID/dm holder)"]},
        "read": {"verdict": "refused", "reasons": ["/dev/sdy cannot be opened: Permission denied"]},
        "children": [],
    },
]


def _where_things_are() -> str:
    """What a timed-out wait leaves for the reader: every asyncio task's stack and this process's children."""
    import asyncio
    import io
    import subprocess

    out = io.StringIO()
    try:
        tasks = asyncio.all_tasks()
    except RuntimeError:  # no running loop
        tasks = set()
    for task in tasks:
        out.write(f"--- task {task.get_name()}\n")
        aw: Any = task.get_coro()
        for _ in range(40):  # down the chain of awaits: coroutines and async generators
            frame = getattr(aw, "cr_frame", None) or getattr(aw, "ag_frame", None) or getattr(aw, "gi_frame", None)
            if frame is not None:
                out.write(f"    {frame.f_code.co_filename}:{frame.f_lineno} {frame.f_code.co_name}\n")
            nxt = getattr(aw, "cr_await", None) or getattr(aw, "ag_await", None) or getattr(aw, "gi_yieldfrom", None)
            if nxt is None:
                out.write(f"    awaiting {aw!r}\n"[:300])
                break
            aw = nxt
    tree = subprocess.run(["ps", "-eo", "pid,ppid,etimes,stat,wchan:24,args", "--forest"], capture_output=True,
                          text=True).stdout
    mine = [ln for ln in tree.splitlines() if any(w in ln for w in ("fio", "ssh", "profiler", "pytest", "PID"))]
    return out.getvalue() + "\n".join(mine)


def _checked(condition: Callable[[], Any], deadline: float, timeout: float, what: str) -> Any:
    """``condition()``; an AssertionError naming ``what`` once it is still false after the deadline (the
    tasks' stacks and the process tree go to stderr, which pytest shows with the failure)."""
    value = condition()
    if not value and time.monotonic() > deadline:
        import sys

        print(_where_things_are(), file=sys.stderr)
        raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what or condition}")
    return value


async def choose_preset(pilot: Any, name: str) -> Any:
    """On the presets screen: the cursor down to preset ``name`` (failing if the list has none), then enter.
    Returns the presets screen."""
    from app.screens.presets import PresetsScreen

    presets = pilot.app.screen
    assert isinstance(presets, PresetsScreen)
    seen: set[str | None] = set()
    while (current := presets._current()) != name:
        assert current not in seen, f"no preset {name!r} in the list"
        seen.add(current)
        await pilot.press("down")
    await pilot.press("enter")
    return presets


async def wait_for(pilot: Any, condition: Callable[[], Any], timeout: float, what: str = "") -> Any:
    """Poll ``condition`` while the app keeps running; fail with ``what`` after ``timeout`` s."""
    deadline = time.monotonic() + timeout
    while not (value := _checked(condition, deadline, timeout, what)):
        await pilot.pause(0.05)
    return value


async def results_shown(pilot: Any, timeout: float = 20, what: str = "the results") -> Any:
    """The results screen once its rows are read (opened while its run's results are still being read ahead, it
    shows at once and fills in when the read ends)."""
    from app.screens.results import ResultsScreen

    app = pilot.app
    return await wait_for(pilot, lambda: isinstance(app.screen, ResultsScreen) and not app.screen.reading
                          and app.screen, timeout, what)


def wait_until(condition: Callable[[], Any], timeout: float, what: str = "") -> Any:
    """``wait_for`` for a process outside this one (a TUI in a pty): poll with sleeps."""
    deadline = time.monotonic() + timeout
    while not (value := _checked(condition, deadline, timeout, what)):
        time.sleep(0.05)
    return value


def our_processes(names: tuple[str, ...] = ("fio", "memlat", "mlc")) -> list[str]:
    """Processes named ``names`` that this test process started (children, grandchildren)."""
    me = os.getpid()
    parents: dict[int, int] = {}
    comms: dict[int, str] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                stat = f.read()
        except OSError:
            continue
        comm = stat[stat.index("(") + 1:stat.rindex(")")]
        fields = stat[stat.rindex(")") + 2:].split()
        parents[int(entry)] = int(fields[1])
        comms[int(entry)] = comm
    found = []
    for pid, comm in comms.items():
        if comm not in names or fields_is_zombie(pid):
            continue
        p, depth = pid, 0
        while p > 1 and depth < 20:
            p = parents.get(p, 0)
            depth += 1
            if p == me:
                found.append(f"{pid} {comm}")
                break
    return found


def fields_is_zombie(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            stat = f.read()
        return stat[stat.rindex(")") + 2] == "Z"
    except OSError:
        return True


def fio_for(path: Path) -> list[str]:
    """fio command lines (pgrep -a -x fio) that point into ``path`` (or run in it: fio reads its job file in raw/)
    — other tests' fio are not ours."""
    from tests.conftest import fio_processes

    return fio_processes(path)


async def forever() -> None:
    await asyncio.Event().wait()


def fixed_results(root: Path) -> None:
    """Three results directories under ``root`` from tests/data/report: the golden run (57 points), the
    telemetry run (a device target) and a cut copy of the golden run whose run.json says running with no
    process holding it (listed as interrupted)."""
    import json
    import shutil

    data = Path(__file__).resolve().parents[1] / "data" / "report"
    shutil.copytree(data / "golden-run", root / "golden-20261122-021000")
    shutil.copytree(data / "telemetry-run", root / "cliff-20261123-212547")
    cut = root / "qd-scaling-20261123-230000"
    cut.mkdir()
    meta = json.loads((data / "golden-run" / "run.json").read_text())
    meta.update(status="running", started="2026-11-23T23:00:00+00:00", points_done=0,
                preset={"name": "qd-scaling", "kind": "storage"})
    (cut / "run.json").write_text(json.dumps(meta))  # no process holds it: shown as interrupted
    lines = (data / "golden-run" / "results.jsonl").read_text().splitlines()[:5]
    (cut / "results.jsonl").write_text("\n".join(lines) + "\n")


async def open_runs(pilot: Any) -> RunsScreen:
    """The runs browser (h), once its directories are read."""
    from app.screens.runs import RunsScreen

    await pilot.press("h")
    screen = await wait_for(pilot, lambda: isinstance(pilot.app.screen, RunsScreen) and pilot.app.screen.loaded
                            and pilot.app.screen, 10, "the runs browser")
    assert isinstance(screen, RunsScreen)
    return screen


async def open_import(pilot: Any) -> tuple[Any, Any]:
    """The import form from the runs browser (ctrl+o): the screen and its paths field."""
    from app.screens.importer import ImportScreen

    await open_runs(pilot)
    await pilot.press("ctrl+o")
    form = await wait_for(pilot, lambda: isinstance(pilot.app.screen, ImportScreen) and pilot.app.screen, 5,
                          "the import form")
    return form, form.query_one("#import-paths")


def host_audit(target: str) -> Audit:
    """An audit as app.host.audit.audit gives one: two warnings among 16 settings, one with hostile text."""
    warned = {"scheduler": Item("scheduler", "mq-deadline", "none", "why", "warn", "scheduler"),
              "pcie_link": Item("pcie_link", "8.0 GT/s x2\x1b[2J", "16.0 GT/s x4", "why", "warn", "link-degraded")}
    return Audit(target, "sdz", (0, 1), tuple(warned.get(k, Item(k, "v", "w", "why", "ok")) for k in ITEMS))


def tunable_audit(tmp_path: Path, monkeypatch: Any) -> Callable[[str], Audit]:
    """An audit (as :func:`host_audit`) that names one setting --tune would change: /dev/sdz's write-back throttling,
    in a sysfs under ``tmp_path`` (PROFILER_TUI_SYSFS)."""
    from dataclasses import replace

    sysfs = tmp_path / "sys"
    (sysfs / "block" / "sdz" / "queue").mkdir(parents=True)
    wbt = sysfs / "block" / "sdz" / "queue" / "wbt_lat_usec"
    wbt.write_text("2000\n")
    monkeypatch.setenv("PROFILER_TUI_SYSFS", str(sysfs))

    def audit(target: str) -> Audit:
        found = host_audit(target)
        tuned = Item("wbt", "2000", "0 (off)", "why", "warn", "wbt-on", tune=((str(wbt), "0"),))
        return replace(found, items=tuple(tuned if i.key == "wbt" else i for i in found.items))

    return audit


async def open_compare(pilot: Any, a: Path, b: Path) -> Any:
    """The compare view of runs ``a`` and ``b``, once its tables are shown."""
    from app.screens.compare import CompareScreen

    app = pilot.app
    app.push_screen(CompareScreen(a, b))
    view = await wait_for(pilot, lambda: isinstance(app.screen, CompareScreen) and app.screen.markdown
                          and app.screen, 20, "the comparison")
    await pilot.pause(0.3)
    return view


def chart_text(widget: Widget) -> str:
    """The text a widget that draws a Text (a chart, a plot) shows now."""
    rendered = widget.render()
    assert isinstance(rendered, Text), rendered
    return rendered.plain
