"""The compare view colours only real differences: a figure whose 95 % interval of B − A excludes 0 gets its
better side in green; a difference within noise, or one without an interval, stays plain (Pilot, hand-made
results directories whose verdicts are known)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from textual.widgets import DataTable, Markdown

from app.screens.compare import BETTER, CompareScreen
from app.tui import create_app
from tests.helpers.compare_util import make_run, metrics, replicates
from tests.tui.helpers import wait_for

MEMORY = {"mode": "idle", "stride": 64, "buffer": 1 << 28}


def _memory(latency: float, half: float | None) -> dict[str, object]:
    m: dict[str, object] = {"latency_ns": latency}
    if half is not None:
        m["ci95"] = {"latency_ns": [latency - half, latency + half]}
    return m


async def _opened(app: Any, pilot: Any, a: Path, b: Path) -> tuple[CompareScreen, DataTable[Any], list[str]]:
    """The compare view of ``a`` and ``b`` once shown, its first table and that table's header."""
    app.push_screen(CompareScreen(a, b))
    view = await wait_for(pilot, lambda: isinstance(app.screen, CompareScreen) and app.screen.markdown
                          and app.screen, 20, "the comparison")
    await pilot.pause(0.2)
    table = next(iter(view.query(".compare-table").results(DataTable)))
    return view, table, [str(c.label) for c in table.columns.values()]


async def test_only_real_differences_are_coloured(tmp_path: Path) -> None:
    # QD16: three replicates a side, B twice as fast (real); QD8: five tight replicates a side (within noise);
    # QD1: one run a side 1 % apart (too few samples: drift between runs could hide 10 %); QD4: no interval at
    # all (B three times as fast, yet not judged); memory: a real latency difference
    a = make_run(tmp_path / "a", replicates([100, 102, 98]) + replicates([100, 101, 99, 100.5, 99.5], iodepth=8) + [
        {"point": {"iodepth": 1}, "metrics": metrics(1000, (990, 1010))},
        {"point": {"iodepth": 4}, "metrics": metrics(1000)}])
    b = make_run(tmp_path / "b", replicates([200, 205, 195]) + replicates([100.5, 99.5, 100, 101, 99], iodepth=8) + [
        {"point": {"iodepth": 1}, "metrics": metrics(1010, (1000, 1020))},
        {"point": {"iodepth": 4}, "metrics": metrics(3000)}])
    ma = make_run(tmp_path / "ma", [{"point": MEMORY, "metrics": _memory(90.0, 1.0)}], "memory")
    mb = make_run(tmp_path / "mb", [{"point": MEMORY, "metrics": _memory(60.0, 1.0)}], "memory")
    app = create_app(devices=[], results_dir=tmp_path, clock=lambda: 0.0)
    async with app.run_test(size=(120, 40)) as pilot:
        for left, right in ((a, b), (ma, mb)):
            view, table, header = await _opened(app, pilot, left, right)
            seen: dict[str, set[str]] = {}
            workload = ""
            for r in range(table.row_count):
                cells = table.get_row_at(r)
                row = dict(zip(header, (str(c) for c in cells)))
                workload = row[header[0]] or workload  # the point is named on its first row only
                green = [h for h, c in zip(header, cells) if c.style == BETTER]
                seen.setdefault(row["Noise"], set()).update(green or ["plain"])
                # B is the faster side throughout: more IOPS and MB/s, less latency
                assert green == (["B"] if row["Noise"] == "real" else []), (workload, row)
            expected = {"real", "within noise", "too few samples", "no interval"} if left == a else {"real"}
            assert expected <= seen.keys(), seen
            await pilot.press("escape")
            await wait_for(pilot, lambda: not isinstance(app.screen, CompareScreen), 5, "back")


async def test_points_measured_differently_are_not_judged_and_stay_plain(tmp_path: Path) -> None:
    """A 3 s point without ramp against a 60 s one with a 2 s ramp, B twice as fast beyond both intervals: no
    verdict, no green, and the page names the conditions that differ."""
    a = make_run(tmp_path / "a", [{"point": {"runtime": 3}, "metrics": metrics(1000, (990, 1010))}])
    b = make_run(tmp_path / "b", [{"point": {"runtime": 60, "ramp_time": 2}, "metrics": metrics(2000, (1990, 2010))}])
    app = create_app(devices=[], results_dir=tmp_path, clock=lambda: 0.0)
    async with app.run_test(size=(120, 40)) as pilot:
        view, table, header = await _opened(app, pilot, a, b)
        noise = header.index("Noise")
        for r in range(table.row_count):
            cells = table.get_row_at(r)
            assert str(cells[noise]) in ("not judged", ""), [str(c) for c in cells]
            assert not [c for c in cells if c.style == BETTER]
        assert "runtime A 3 s, B 60 s" in (view.markdown or "")
        texts = " ".join(str(m.source) for m in view.query(".compare-text").results(Markdown))
        assert "not judged: measured under different conditions" in texts and "ramp A none, B 2 s" in texts
