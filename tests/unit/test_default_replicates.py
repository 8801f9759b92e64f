"""The presets a user runs first measure replicates by default, in a shuffled order within each replicate:
the same wall time (near enough) as interleaved replicates, so the ± a point prints includes drift between
runs, and drift cannot pose as a trend along the plan's axes.  The order is reproducible from a seed recorded
in run.json, and a resumed run measures exactly what is missing, in that order."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from app.model.points import Kind, StoragePoint
from app.plan import presets
from app.plan.describe import repeat_lines
from app.plan.procedure import Procedure, run_order, with_order_seed

FIRST_RUN = ("quick", "nvme", "seed-matrix", "seed-mix", "seed-p4600", "seed-qd", "seed-usb")
# the measured seconds per point before replicates were the default
OLD_RUNTIME = {"quick": 5, "nvme": 5, "seed-matrix": 60, "seed-mix": 30, "seed-p4600": 30, "seed-qd": 30,
               "seed-usb": 30}


@pytest.mark.parametrize("name", FIRST_RUN)
def test_first_run_presets_measure_three_interleaved_shuffled_replicates_in_about_the_same_time(name: str) -> None:
    preset = presets.load(name)
    plan = preset.expand()
    assert preset.procedure.replicates == 3 and preset.procedure.shuffled
    points = [p for p in plan if isinstance(p, StoragePoint)]
    assert sorted({p.replicate or 0 for p in points}) == [1, 2, 3]
    per_replicate = len(points) // 3
    assert [p.replicate for p in points] == [k for k in (1, 2, 3) for _ in range(per_replicate)]  # interleaved
    runtime = {p.runtime for p in points}
    assert len(runtime) == 1
    total = 3 * runtime.pop()
    assert OLD_RUNTIME[name] * 0.9 <= total <= OLD_RUNTIME[name] * 1.25, (name, total)


def test_repeat_1_takes_a_first_run_preset_back_to_one_measurement_in_plan_order() -> None:
    preset = presets.apply_overrides(presets.load("quick"), ["repeat=1"])
    plan = preset.expand()
    assert all(p.replicate is None for p in plan) and not preset.procedure.shuffled
    assert run_order(plan, with_order_seed(preset.procedure)) == list(range(len(plan)))


def test_the_order_is_shuffled_within_each_replicate_and_reproducible_from_its_seed() -> None:
    preset = presets.apply_overrides(presets.load("quick"), ["order_seed=7"])
    plan = preset.expand()
    proc = preset.procedure
    assert proc.order_seed == 7 and with_order_seed(proc) == proc  # a seed given is kept
    order = run_order(plan, proc)
    assert sorted(order) == list(range(len(plan)))
    n = len(plan) // 3
    blocks = [order[k * n:(k + 1) * n] for k in range(3)]
    for k, block in enumerate(blocks):  # each replicate's points, and only them, shuffled
        assert sorted(block) == list(range(k * n, (k + 1) * n))
    assert any(block != sorted(block) for block in blocks)
    assert len({tuple(b - k * n for b in block) for k, block in enumerate(blocks)}) > 1  # a new order per replicate
    assert run_order(plan, proc) == order  # the same seed, the same order
    assert run_order(plan, replace(proc, order_seed=8)) != order
    assert run_order(plan, replace(proc, order="plan")) == list(range(len(plan)))


def test_a_new_run_draws_a_seed_records_it_and_tells_it() -> None:
    proc = presets.load("quick").procedure
    assert proc.order_seed is None
    assert "seed drawn when the run starts" in " ".join(repeat_lines(proc, Kind.STORAGE))
    seeded = with_order_seed(proc)
    assert seeded.order_seed is not None and 0 <= seeded.order_seed < 2 ** 32
    entry = presets.procedure_entry("storage", seeded)
    assert entry["repeat"] == 3 and entry["order_seed"] == seeded.order_seed and "order" not in entry
    assert presets.validate_procedure(Kind.STORAGE, entry, "run.json") == seeded  # resume reads the same order
    assert f"seed {seeded.order_seed}" in " ".join(repeat_lines(seeded, Kind.STORAGE))
    assert Procedure().to_dict() == replace(Procedure(), order="auto", order_seed=None).to_dict()


@pytest.mark.parametrize(("setting", "message"), [
    ("order=random", "key 'order' has invalid value"),
    ("order_seed=-1", "key 'order_seed' has invalid value"),
    ("order_seed=4294967296", "key 'order_seed' has invalid value"),
])
def test_bad_order_settings_name_the_key(setting: str, message: str) -> None:
    with pytest.raises(presets.UsageError, match=message):
        presets.apply_overrides(presets.load("quick"), [setting]).expand()


def test_a_memory_plan_keeps_its_order(tmp_path: Path) -> None:
    with pytest.raises(presets.UsageError, match="unknown key 'order'"):
        presets.apply_overrides(presets.load("mem-idle"), ["order=shuffled"])
