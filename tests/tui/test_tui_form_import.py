"""The TUI never changes the test behind the user's back: the custom form keeps a preset's own pairing and
shows the keys its mode reads, and an import of a fio JSON and an MLC text together shows each kind's rows
with that kind's figures and counts.  Driven by Pilot; nothing here runs fio."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from textual.widgets import DataTable, Static

from app.screens.results import ResultsScreen
from app.tui import create_app
from tests.tui.helpers import open_import, wait_for

DATA = Path(__file__).resolve().parents[1] / "data"
SIZE = (80, 24)


def fio_json(tmp_path: Path) -> Path:
    """tests/data's fio JSON (fio 3.33, randread 4k QD1 on a loop device that was detached: fio counted no
    bytes) with the figures a healthy run of it would have, so that every figure of its row is not zero."""
    doc = json.loads((DATA / "fio" / "detached-loop-zero-bytes.json").read_text())
    read = doc["jobs"][0]["read"]
    read.update(iops=585974.0, bw_bytes=2400149504, bw=2343896, io_bytes=2400149504, io_kbytes=2343896)
    out = tmp_path / "fio-randread.json"
    out.write_text(json.dumps(doc))
    return out


def cells(table: DataTable) -> list[list[str]]:
    return [[str(table.get_cell_at((r, c))) for c in range(len(table.columns))] for r in range(table.row_count)]


async def test_an_import_of_fio_and_mlc_shows_each_kind_with_its_figures(tmp_path: Path) -> None:
    fio = fio_json(tmp_path)
    mlc = tmp_path / "mlc-loaded.txt"
    shutil.copy(DATA / "mlc" / "v3.10-loaded-latency.txt", mlc)
    app = create_app(devices=[], results_dir=tmp_path / "results", clock=lambda: 0.0)
    async with app.run_test(size=SIZE) as pilot:
        form, field = await open_import(pilot)
        field.value = f"{fio} {mlc}"
        await pilot.press("enter")
        shown = form.query_one("#import-preview", Static)
        await wait_for(pilot, lambda: "would be imported" in str(shown.render()), 10, "the preview")
        preview = str(shown.render()).replace("\n", " ")
        assert "1 storage point (fio) and 19 memory points (MLC) from 2 file(s) would be imported" in preview, preview
        notices: list[str] = []
        app.notify = lambda message, **kw: notices.append(str(message))  # type: ignore[method-assign]
        await pilot.press("ctrl+s")
        view = await wait_for(pilot, lambda: isinstance(app.screen, ResultsScreen) and app.screen, 20, "the results")
        await pilot.pause()
        assert any("Imported 1 storage point (fio) and 19 memory points (MLC) into" in n for n in notices), notices
        table = view.query_one("#results", DataTable)
        status = view.query_one("#results-status", Static)
        rows = cells(table)
        assert len(rows) == 1, rows  # the storage row alone, with the storage columns and its real figures
        assert rows[0][1] == "randread 4K QD1 T1" and rows[0][2] == "586k" and rows[0][4] == "1.2", rows
        text = str(status.render())
        assert "1 storage point (fio) and 19 memory points (MLC)" in text and "k shows the memory rows" in text, text
        await pilot.press("k")
        await pilot.pause()
        rows = cells(table)
        labels = [str(c.label) for c in table.ordered_columns]
        assert len(rows) == 19 and "latency ns" in labels and "IOPS" not in labels, labels
        first = dict(zip(labels, rows[0]))
        assert first["traffic"] == "R" and first["delay"] == "0" and first["latency ns"] == "282.6", first
        assert not any("?" in row[1] for row in rows), rows
        assert "k shows the storage rows" in str(status.render())
