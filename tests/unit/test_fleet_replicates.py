"""A fleet run of a preset with replicates (quick, nvme and the seed presets measure every point 3 times by
default): the run takes them (each replicate is one more plan point, run on every host at once, in the shuffled
order a repeated run keeps), and its report names each row's replicate, so three rows of one point never read as
duplicates.  Replicates that stop on their own spread (repeat = "auto") are still refused: that rule reads one
target's figures."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from app.core.errors import UsageError
from app.engine.sweep import _check_fleet_plan
from app.model.points import Kind
from app.plan import presets
from app.plan.procedure import run_order
from app.report import render_report
from tests.helpers.tail_runs import storage_line, write_run

HOSTS = ("tcp://10.0.0.1:8765", "tcp://10.0.0.2:8765")


def test_a_fleet_run_takes_a_preset_s_default_replicates() -> None:
    for name in ("quick", "nvme"):
        preset = presets.load(name)
        assert preset.procedure.replicates == 3
        plan = preset.expand()
        _check_fleet_plan(Kind(preset.kind), preset.procedure, plan, preset.source)  # no refusal
        assert {p.replicate for p in plan} == {1, 2, 3}


def test_a_fleet_run_still_refuses_the_procedures_that_read_one_target() -> None:
    for override, key in (("repeat=auto", "repeat"), ("precondition=sequential", "precondition"),
                          ("rounds=3", "rounds")):
        preset = presets.apply_overrides(presets.load("quick"), [override])
        with pytest.raises(UsageError, match=key):
            _check_fleet_plan(Kind(preset.kind), preset.procedure, preset.expand(), preset.source)


def test_a_fleet_run_shuffles_within_each_replicate_from_its_recorded_seed() -> None:
    from app.plan.procedure import with_order_seed

    preset = presets.load("quick")
    procedure = with_order_seed(preset.procedure)
    order = run_order(preset.expand(), procedure)
    assert procedure.order_seed is not None and order != sorted(order)


def test_the_fleet_report_names_each_row_s_replicate(tmp_path: Path) -> None:
    lines = []
    index = 0
    for rep in (1, 2, 3):
        for qd in (1, 16):
            for i, host in enumerate(HOSTS):
                lines.append(storage_line(index, int(100_000 * qd ** 0.5 * (1 + 0.03 * rep + 0.01 * i)), 20_000.0,
                                          host=host, iodepth=qd, replicate=rep))
            index += 1
    d = write_run(tmp_path / "fleet", lines, hosts=HOSTS)
    md = render_report(d).read_text()
    table = md.split("## Fleet comparison", 1)[1].split("\n#", 1)[0]
    points = [c.split("|")[1].strip() for c in table.splitlines() if re.match(r"^\| randread", c)]
    assert len(points) == 6 and len(set(points)) == 6, points
    assert sum("QD16" in p and "replicate 2" in p for p in points) == 1
    tails = md.split("### Fleet tail percentiles", 1)[1].split("\n#", 1)[0]
    rows = [c.split("|")[1].strip() for c in tails.splitlines() if re.match(r"^\| randread", c)]
    assert len(rows) == 6 and len(set(rows)) == 6, rows
