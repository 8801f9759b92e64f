"""The TUI never changes the test behind the user's back: the custom form keeps a preset's own pairing and
shows the keys its mode reads, and an import of a fio JSON and an MLC text together shows each kind's rows
with that kind's figures and counts.  Driven by Pilot; nothing here runs fio."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from textual.coordinate import Coordinate
from textual.widgets import DataTable, Input, Static

from app.model.points import MemoryPoint, StoragePoint
from app.plan import presets as core
from app.plan.formplan import FIELDS
from app.screens.custom import CustomSweepScreen
from app.screens.messages import StartRun
from app.screens.presets import PresetsScreen
from app.screens.results import ResultsScreen
from app.screens.state import TargetChoice, app_options
from app.tui import create_app
from tests.tui.helpers import DEVICES, open_import, wait_for

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
    return [[str(table.get_cell_at(Coordinate(r, c))) for c in range(len(table.columns))]
            for r in range(table.row_count)]


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
        assert first["traffic"] == "R" and first["delay (MLC units)"] == "0" and first["latency ns"] == "282.6", first
        assert not any("?" in row[1] for row in rows), rows
        assert "k shows the storage rows" in str(status.render())


async def presets_on(pilot, name: str) -> PresetsScreen:
    """The presets screen of the test file with the cursor on preset ``name``."""
    app = pilot.app
    app.push_screen(PresetsScreen(TargetChoice.test_file(app_options(app).results_dir)))
    screen = await wait_for(pilot, lambda: isinstance(app.screen, PresetsScreen) and app.screen.query("#preview")
                            and app.screen, 5, "presets")
    await pilot.pause()
    table = screen.query_one("#presets", DataTable)
    table.move_cursor(row=table.get_row_index(name))
    return screen


async def open_form(pilot, name: str) -> CustomSweepScreen:
    """``c`` on preset ``name`` in the presets list of the test file."""
    app = pilot.app
    await presets_on(pilot, name)
    await pilot.press("c")
    form = await wait_for(pilot, lambda: isinstance(app.screen, CustomSweepScreen) and app.screen, 5, "the form")
    await pilot.pause()
    return form


def shown_keys(form: CustomSweepScreen) -> list[str]:
    kind = form.kind
    return [f.key for f in FIELDS[kind] if form.query_one(f"#row-{kind}-{f.key}").display]


async def set_field(pilot, form: CustomSweepScreen, key: str, text: str) -> None:
    field = form.query_one(f"#{form.kind}-{key}", Input)
    field.focus()
    await pilot.press("end", "ctrl+u", *text)
    await pilot.pause()


async def test_the_form_on_quick_keeps_its_eight_labelled_tests_and_says_when_an_edit_cannot(tmp_path: Path) -> None:
    """Runtime and size edited: quick's 8 labelled tests (×3 replicates) run, labels kept, as the form says; a
    queue depth quick does not have: the form says in its own words that the pairing cannot be kept and what
    runs instead (every combination, without the labels)."""
    app = create_app(devices=DEVICES, results_dir=tmp_path / "results", clock=lambda: 0.0)
    async with app.run_test(size=(100, 40)) as pilot:
        form = await open_form(pilot, "quick")
        assert shown_keys(form) == ["rw", "bs", "iodepth", "numjobs", "runtime", "size"]  # no mix: quick has none
        await set_field(pilot, form, "runtime", "1")
        await set_field(pilot, form, "size", "4m")
        plan = str(form.query_one("#form-plan", Static).render())
        pairing = str(form.query_one("#form-pairing", Static).render()).replace("\n", " ")
        assert plan.startswith("8 tests × 3 replicates: 24 points"), plan
        assert "Runs quick's 4 groups as it pairs them (SEQ1M Q8T1, SEQ1M Q1T1, RND4K Q32T1, RND4K Q1T1)" in pairing
        started: list[StartRun] = []
        post = form.post_message

        def spy(message):  # ctrl+r's run, kept here instead of starting fio
            if isinstance(message, StartRun):
                started.append(message)
                return True
            return post(message)

        form.post_message = spy  # type: ignore[method-assign]
        await pilot.press("ctrl+r")
        (run,) = started
        points = run.preset.expand()
        tests = {(p.group, p.rw, p.bs, p.iodepth) for p in points if isinstance(p, StoragePoint)}
        assert len(points) == 24 and len(tests) == 8, tests
        assert {g for g, *_ in tests} == {"SEQ1M Q8T1", "SEQ1M Q1T1", "RND4K Q32T1", "RND4K Q1T1"}
        assert ("RND4K Q32T1", "randread", 4096, 32) in tests and ("SEQ1M Q8T1", "write", 1 << 20, 8) in tests
        assert {(p.runtime, p.size) for p in points if isinstance(p, StoragePoint)} == {(1, 4 << 20)}

        await set_field(pilot, form, "iodepth", "8,1")  # some of quick's own values: its tests that use them
        pairing = str(form.query_one("#form-pairing", Static).render()).replace("\n", " ")
        assert "Runs 3 of quick's 4 groups" in pairing and "drop RND4K Q32T1" in pairing, pairing

        await set_field(pilot, form, "iodepth", "8,1,32,16")  # 16: in none of quick's tests
        box = form.query_one("#form-pairing", Static)
        pairing = str(box.render()).replace("\n", " ")
        assert box.display and box.region.height > 0, "said in the form, not only in a notice"
        assert "queue depths 16 is in none of them, so the pairing cannot be kept" in pairing, pairing
        assert "every combination of the fields instead, without quick's labels" in pairing, pairing
        plan = str(form.query_one("#form-plan", Static).render())
        assert plan.startswith("32 tests × 3 replicates: 96 points"), plan
        started.clear()
        await pilot.press("ctrl+r")
        assert len(started[0].preset.expand()) == 96


async def test_the_form_on_mem_working_set_is_the_working_set_test(tmp_path: Path) -> None:
    """It showed the loaded-latency form (traffic R, delays 0…20000).  Every shipped preset's fields are checked
    without a screen in tests/unit/test_formplan.py."""
    app = create_app(devices=DEVICES, results_dir=tmp_path / "results", clock=lambda: 0.0)
    async with app.run_test(size=(100, 40)) as pilot:
        form = await open_form(pilot, "mem-working-set")
        assert form.kind == core.MEMORY
        assert shown_keys(form) == ["mode", "stride", "buffer", "pages", "duration"]
        values = {k: form.query_one(f"#memory-{k}", Input).value for k in shown_keys(form)}
        assert values == {"mode": "working_set", "stride": "64", "buffer": "working-set", "pages": "2m,4k",
                          "duration": "0.2"}, values
        await set_field(pilot, form, "duration", "0.1")
        points = form._preset().expand()
        assert {p.mode for p in points if isinstance(p, MemoryPoint)} == {"working_set"}
        assert {p.duration for p in points if isinstance(p, MemoryPoint)} == {0.1}
        assert not any(isinstance(p, MemoryPoint) and (p.traffic or p.delay is not None) for p in points)
        await set_field(pilot, form, "mode", "loaded")  # another mode: its own keys appear
        assert {"traffic", "delay"} <= set(shown_keys(form))
