"""The compare view colours only real differences: a figure whose 95 % interval of B − A excludes 0 gets its
better side in green; a difference within noise, or one without an interval, stays plain (Pilot, hand-made
results directories whose verdicts are known)."""

from __future__ import annotations

from pathlib import Path

from textual.widgets import DataTable

from app.screens.compare import BETTER, CompareScreen
from app.tui import create_app
from compare_util import make_run, metrics, replicates
from tests.tui.helpers import wait_for

MEMORY = {"mode": "idle", "stride": 64, "buffer": 1 << 28}


def _memory(latency: float, half: float | None) -> dict[str, object]:
    m: dict[str, object] = {"latency_ns": latency}
    if half is not None:
        m["ci95"] = {"latency_ns": [latency - half, latency + half]}
    return m


async def test_only_real_differences_are_coloured(tmp_path: Path) -> None:
    # QD16: three replicates a side, B twice as fast (real); QD1: intervals that overlap (within noise);
    # QD4: no interval at all (B three times as fast, yet not judged); memory: a real latency difference
    a = make_run(tmp_path / "a", replicates([100, 102, 98]) + [
        {"point": {"iodepth": 1}, "metrics": metrics(1000, (990, 1010))},
        {"point": {"iodepth": 4}, "metrics": metrics(1000)}])
    b = make_run(tmp_path / "b", replicates([200, 205, 195]) + [
        {"point": {"iodepth": 1}, "metrics": metrics(1010, (1000, 1020))},
        {"point": {"iodepth": 4}, "metrics": metrics(3000)}])
    ma = make_run(tmp_path / "ma", [{"point": MEMORY, "metrics": _memory(90.0, 1.0)}], "memory")
    mb = make_run(tmp_path / "mb", [{"point": MEMORY, "metrics": _memory(80.0, 1.0)}], "memory")
    app = create_app(devices=[], results_dir=tmp_path, clock=lambda: 0.0)
    async with app.run_test(size=(120, 40)) as pilot:
        for left, right in ((a, b), (ma, mb)):
            app.push_screen(CompareScreen(left, right))
            view = await wait_for(pilot, lambda: isinstance(app.screen, CompareScreen) and app.screen.markdown
                                  and app.screen, 20, "the comparison")
            await pilot.pause(0.2)
            table = next(iter(view.query(".compare-table").results(DataTable)))
            header = [str(c.label) for c in table.columns.values()]
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
            expected = {"real", "within noise", "no interval"} if left == a else {"real"}
            assert expected <= seen.keys(), seen
            await pilot.press("escape")
            await wait_for(pilot, lambda: not isinstance(app.screen, CompareScreen), 5, "back")
