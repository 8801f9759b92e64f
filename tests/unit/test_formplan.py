"""The custom form's plan (app.plan.formplan), for every shipped preset: the form shows the keys the preset's modes
read and no other, and left unchanged it runs the preset's own points; an edit keeps a preset's pairing (its
groups and labels) while it can, and says so in plain words when it cannot."""

from __future__ import annotations

import tomllib

import pytest

from app.model.points import MemoryPoint, StoragePoint
from app.plan import formplan
from app.plan import presets as core
from app.plan.formplan import FIELDS, check_field, form_plan, preset_of, shown_keys, start_values, table_of, to_toml
from app.plan.presets import MODE_ONLY_KEYS
from tests.helpers.typed import storage_points

SHIPPED = sorted(p.stem for p in core.shipped_dir().glob("*.toml"))


def first_values(preset: core.Preset) -> dict[str, list[object]]:
    """The fields' values as the form first shows them for ``preset``."""
    shown = start_values(preset)
    out = {}
    for f in FIELDS[preset.kind]:
        parsed = check_field(preset.kind, f.key, shown.get(f.key, f.default), f.optional)[0]
        assert parsed is not None, (preset.name, f.key, shown.get(f.key))
        out[f.key] = parsed
    return out


def form_of(preset: core.Preset, **edits: list[object]) -> tuple[list[str], formplan.FormPlan]:
    first = first_values(preset)
    values = {**first, **edits}
    keys = shown_keys(preset.kind, values[formplan.mode_key(preset.kind)])
    return keys, form_plan(table_of(preset), {k: v for k, v in values.items() if k in keys}, first)


def read_by(modes: set[str]) -> set[str]:
    """The memory keys a plan of these modes reads: every key but those only other modes read (the core's
    normalisation sets them to none: app.plan.presets.MODE_ONLY_KEYS)."""
    return {f.key for f in FIELDS[core.MEMORY]} - {k for k, m in MODE_ONLY_KEYS.items() if not modes & m}


@pytest.mark.parametrize("name", SHIPPED)
def test_a_shipped_presets_form_shows_what_its_modes_read_and_runs_that_preset(name: str) -> None:
    preset = core.load(name)
    points = preset.expand()
    keys, plan = form_of(preset)
    shown = set(keys)
    form_keys = {f.key for f in FIELDS[preset.kind]}
    if preset.kind == core.MEMORY:
        modes = {p.mode for p in points if isinstance(p, MemoryPoint)}
        assert shown <= read_by(modes), shown - read_by(modes)
        form_keys &= read_by(modes)
    else:
        mixed = any(isinstance(p, StoragePoint) and p.rw in ("rw", "randrw") for p in points)
        assert ("rwmixread" in shown) == mixed
    written = set(preset.settings) | {k for g in preset.groups for k in g.axes}
    assert written & form_keys <= shown, (written & form_keys) - shown
    again = preset_of(plan.table)
    assert [p.to_dict() for p in again.expand()] == [p.to_dict() for p in points]
    assert again.procedure == preset.procedure and plan.kept


def test_mem_working_set_shows_its_own_keys_not_the_loaded_latency_ones() -> None:
    preset = core.load("mem-working-set")
    keys, _ = form_of(preset)
    assert keys == ["mode", "stride", "buffer", "pages", "duration"]
    assert start_values(preset)["buffer"] == "working-set" and start_values(preset)["pages"] == "2m,4k"
    assert {"traffic", "delay"} <= set(form_of(preset, mode=["loaded"])[0])


def groups_of(plan: formplan.FormPlan) -> list[str | None]:
    return list(dict.fromkeys(p.group for p in preset_of(plan.table).expand()))


def test_quick_keeps_its_pairing_through_edits_that_allow_it() -> None:
    quick = core.load("quick")
    _, plan = form_of(quick, runtime=[1], size=[4 << 20])
    points = storage_points(preset_of(plan.table).expand())
    assert len(points) == 24 and len({(p.group, p.rw) for p in points}) == 8 and plan.kept
    assert groups_of(plan) == ["SEQ1M Q8T1", "SEQ1M Q1T1", "RND4K Q32T1", "RND4K Q1T1"]
    assert "Runs quick's 4 groups as it pairs them" in plan.note
    _, plan = form_of(quick, bs=[4096])  # a value removed: the tests that use it go, the others keep their label
    assert groups_of(plan) == ["RND4K Q32T1", "RND4K Q1T1"] and plan.kept
    assert "Runs 2 of quick's 4 groups" in plan.note and "drop SEQ1M Q8T1, SEQ1M Q1T1" in plan.note


def test_a_value_quick_does_not_have_says_the_pairing_cannot_be_kept_and_what_runs() -> None:
    _, plan = form_of(core.load("quick"), iodepth=[8, 1, 32, 16])
    assert not plan.kept and groups_of(plan) == [None]
    assert len(preset_of(plan.table).expand()) == 4 * 2 * 4 * 3
    assert plan.note.startswith("quick pairs rw modes, block sizes and queue depths in its groups (SEQ1M Q8T1, ")
    assert "queue depths 16 is in none of them, so the pairing cannot be kept: this runs every combination of the " \
           "fields instead, without quick's labels." in plan.note


def test_what_the_form_saves_is_what_it_runs() -> None:
    preset = core.load("peak-write")
    preset = core.apply_overrides(preset, ["runtime=1"])
    _, plan = form_of(preset, iodepth=[1, 4])
    text = to_toml(plan.table)
    saved = core.parse_preset(tomllib.loads(text), "saved")
    assert [p.to_dict() for p in saved.expand()] == [p.to_dict() for p in preset_of(plan.table).expand()]
    assert {p.ioengine for p in saved.expand() if isinstance(p, StoragePoint)} == {"libaio", "io_uring"}
    assert {(p.runtime, p.iodepth) for p in saved.expand() if isinstance(p, StoragePoint)} == {(1, 1), (1, 4)}
