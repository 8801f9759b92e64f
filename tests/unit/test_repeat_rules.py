"""Repeats without fio: the interleaved plan of ``repeat = N``, the pure skip rule of ``repeat = "auto"`` (and that
a resumed run decides as an uninterrupted one), the settings' parsers against hostile values, run.json, memory
plans and how the plan is told (presets show, the TUI preview's lines)."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace
from typing import Mapping, Sequence

import pytest

from app.core.errors import UsageError
from app.engine.sweep import Session
from app.model.points import MemoryPoint, Point, StoragePoint
from app.model.records import read_line
from app.plan import presets
from app.plan.describe import describe_plan
from app.plan.procedure import Measured, Procedure, measured_from_line, replicate_skips, skips
from app.runners.memory import MemoryRunner
from tests.conftest import run_cli

PRESET = 'name = "two"\nkind = "storage"\n[settings]\nrw = "randread"\nruntime = 1\n[matrix]\nbs = ["4k", "64k"]\n'


def two_points(tmp_path: Path, *sets: str) -> presets.Preset:
    path = tmp_path / "two.toml"
    path.write_text(PRESET)
    return presets.apply_overrides(presets.load_file(path), list(sets))


def test_repeat_interleaves_the_plan_and_one_replicate_keeps_its_bytes(tmp_path: Path) -> None:
    plan = two_points(tmp_path, "repeat=3").expand()
    assert [(p.bs, p.replicate) for p in plan if isinstance(p, StoragePoint)] == \
        [(4096, 1), (65536, 1), (4096, 2), (65536, 2), (4096, 3), (65536, 3)]
    plain, once = two_points(tmp_path).expand(), two_points(tmp_path, "repeat=1")
    assert [p.to_dict() for p in once.expand()] == [p.to_dict() for p in plain]
    assert all("replicate" not in p.to_dict() for p in plain)
    assert once.procedure.is_default and once.procedure.to_dict() == Procedure().to_dict()
    auto = two_points(tmp_path, "repeat=auto", "repeat_max=4", "repeat_cv=2%")
    assert len(auto.expand()) == 8 == auto.plan_size()
    assert auto.procedure.to_dict() == {**Procedure().to_dict(), "repeat": "auto", "repeat_cv": 2.0, "repeat_max": 4}
    # run.json's procedure reads back as it was, and a replicate is part of a point's identity there
    assert presets.validate_procedure(presets.STORAGE, auto.procedure.to_dict(), "run.json") == auto.procedure
    stored = [p.to_dict() for p in plan]
    assert presets.validate_plan("storage", stored, "run.json") == plan
    with pytest.raises(UsageError, match=r"plan\[2\] repeats plan\[0\]"):
        presets.validate_plan("storage", [stored[0], stored[1], stored[0]], "run.json")


@pytest.mark.parametrize("value", [0, 51, "1", True, None])
def test_a_hostile_replicate_in_run_json_is_refused(tmp_path: Path, value: object) -> None:
    stored: list[dict[str, object]] = [{**p.to_dict()} for p in two_points(tmp_path, "repeat=2").expand()]
    stored[1]["replicate"] = value
    with pytest.raises(UsageError, match=r"run.json: plan\[1\] key 'replicate' has invalid value"):
        presets.validate_plan("storage", stored, "run.json")


def test_repeat_describes_itself(tmp_path: Path) -> None:
    assert "repeat: ×3 replicates, interleaved (every point once, then again)" in \
        describe_plan(two_points(tmp_path, "repeat=3")).procedure
    auto = describe_plan(two_points(tmp_path, "repeat=auto"))
    assert "repeat: auto: 3–10 replicates until IOPS CV < 3 %, interleaved" in auto.procedure
    assert auto.totals == "20 points, estimated at most 30s"  # the cap: the rule may end points earlier
    assert not [line for line in describe_plan(two_points(tmp_path)).procedure if "repeat" in line]


# --- the skip rule of repeat = "auto" ------------------------------------------------------------------------


def auto_plan(points: int = 2, replicates: int = 5) -> list[Point]:
    base = presets.load("custom").expand()[0]
    assert isinstance(base, StoragePoint)
    return [replace(base, bs=4096 << p, replicate=k) for k in range(1, replicates + 1) for p in range(points)]


AUTO = Procedure(repeat="auto", repeat_max=5)


def by_point(plan: Sequence[Point], iops: Mapping[int, Sequence[float]]) -> dict[int, Measured]:
    """Plan index → figures, from each point's (by position in the plan's first replicate) IOPS per replicate."""
    width = len(plan) // max(p.replicate or 1 for p in plan)
    return {k * width + point: Measured(v, None) for point, values in iops.items() for k, v in enumerate(values)}


def test_auto_stops_a_point_once_three_replicates_agree_within_repeat_cv() -> None:
    plan = auto_plan()
    # point 0 steady (CV 1 %), point 1 noisy (CV 20 %): only point 0's replicates 4 and 5 are skipped
    measured = by_point(plan, {0: [100, 101, 99], 1: [100, 120, 80]})
    found = replicate_skips(plan, AUTO, measured)
    assert set(found) == {6, 8}
    assert found[6] == "IOPS CV 1.0 % < 3 % over 3 replicates (by replicate 3)"
    assert skips(plan, AUTO, measured) == found
    # the threshold is the user's: at 0.5 % point 0 goes on
    assert replicate_skips(plan, replace(AUTO, repeat_cv=0.5), measured) == {}


def test_auto_needs_three_replicates_and_only_applies_to_auto() -> None:
    plan = auto_plan()
    two_equal = by_point(plan, {0: [100, 100], 1: [50, 50]})
    assert replicate_skips(plan, AUTO, two_equal) == {}
    steady = by_point(plan, {0: [100, 100, 100]})
    assert replicate_skips(plan, replace(AUTO, repeat=5), steady) == {}
    assert replicate_skips(plan, Procedure(), steady) == {}


def test_a_failed_replicate_does_not_count_and_the_rule_reads_replicates_in_order() -> None:
    plan = auto_plan(points=1)
    measured = {0: Measured(100, None), 2: Measured(100.5, None), 3: Measured(99.5, None)}  # replicate 2 failed
    assert replicate_skips(plan, AUTO, measured) == {4: "IOPS CV 0.5 % < 3 % over 3 replicates (by replicate 4)"}


def simulate(plan: Sequence[Point], procedure: Procedure, iops: Mapping[int, float],
             stop_after: int | None = None, start: tuple[dict[int, Measured], dict[int, str]] | None = None,
             ) -> tuple[dict[int, Measured], dict[int, str]]:
    """A sweep reduced to its decisions: each point in plan order, unless skipped; after each, the new skips
    recorded (as run.json keeps them).  ``stop_after`` points measured: interrupted."""
    measured, skipped = ({}, {}) if start is None else (dict(start[0]), dict(start[1]))
    ran = 0
    for i in range(len(plan)):
        if i in measured or i in skipped:
            continue
        if stop_after is not None and ran == stop_after:
            break
        measured[i] = Measured(iops[i], None)
        ran += 1
        found = skips(plan, procedure, measured, set(skipped))
        skipped.update({k: r for k, r in found.items() if k not in skipped and k not in measured})
    return measured, skipped


def test_the_rule_is_pure_so_a_resumed_run_decides_as_an_uninterrupted_one() -> None:
    plan = auto_plan(points=3)
    # point 0 steady from replicate 3, point 1 steady from replicate 4, point 2 never
    series = {0: [100, 101, 99, 100, 100], 1: [100, 106, 100, 101, 100], 2: [100, 130, 70, 130, 70]}
    iops = {r * 3 + p: v for p, values in series.items() for r, v in enumerate(values)}
    whole = simulate(plan, AUTO, iops)
    assert sorted(whole[1]) == [9, 12, 13] and len(whole[0]) == 15 - 3
    for cut in range(len(whole[0])):
        resumed = simulate(plan, AUTO, iops, start=simulate(plan, AUTO, iops, stop_after=cut))
        assert resumed == whole, cut
    # asked again with the same figures, in another order, the rule says the same
    assert replicate_skips(plan, AUTO, dict(reversed(list(whole[0].items())))) == \
        {i: r for i, r in whole[1].items()}


def test_memory_points_repeat_on_their_latency_or_bandwidth() -> None:
    idle = presets.load("mem-idle").expand()[0]
    assert isinstance(idle, MemoryPoint)
    plan: list[Point] = [replace(idle, replicate=k) for k in (1, 2, 3, 4)]
    line = read_line({"kind": "memory", "point": plan[0].to_dict(), "metrics": {"latency_ns": 90.0}})
    assert measured_from_line(line) == Measured(None, None, 90.0)
    bandwidth = read_line({"kind": "memory", "point": plan[0].to_dict(), "metrics": {"bandwidth_mbps": 9e3}})
    assert (found := measured_from_line(bandwidth)) is not None and found.repeat_figure == ("bandwidth", 9e3)
    measured = {i: Measured(None, None, v) for i, v in enumerate([90.0, 90.5, 89.5])}
    assert replicate_skips(plan, AUTO, measured) == {3: "latency CV 0.6 % < 3 % over 3 replicates (by replicate 3)"}


def test_replicates_of_a_memory_suite_never_share_one_engine_process() -> None:
    peak = [p for p in presets.apply_overrides(presets.load("mem-bandwidth"), ["repeat=2"]).expand()
            if isinstance(p, MemoryPoint) and p.mode == "peak"]
    runner = MemoryRunner.__new__(MemoryRunner)  # batch_key reads only the point
    batches = Session._batches(SimpleNamespace(runner=runner), list(enumerate(peak)))  # type: ignore[arg-type]
    assert [{p.replicate for _, p in b} for b in batches] == [{1}, {2}]


def test_memory_presets_take_the_repeat_keys_and_run_json_keeps_them() -> None:
    mem = presets.apply_overrides(presets.load("mem-idle"), ["repeat=auto", "repeat_max=3"])
    assert [p.replicate for p in mem.expand()] == [1, 2, 3]
    entry = presets.procedure_entry(presets.MEMORY, mem.procedure)
    assert entry == {"repeat": "auto", "repeat_max": 3}
    assert presets.validate_procedure(presets.MEMORY, entry, "run.json") == mem.procedure
    with pytest.raises(UsageError, match="unknown key 'rounds'; known keys for a memory run: repeat, repeat_cv"):
        presets.validate_procedure(presets.MEMORY, {"rounds": 2}, "run.json")


# --- bad values: one sentence, exit 2 ------------------------------------------------------------------------


@pytest.mark.parametrize("setting, message", [
    ("repeat = 0", "key 'repeat' has invalid value 0: expected \"auto\" or a whole number from 1 to 50."),
    ('repeat = "x"', "key 'repeat' has invalid value 'x': expected \"auto\" or a whole number from 1 to 50."),
    ("repeat = 51", "key 'repeat' has invalid value 51: expected \"auto\" or a whole number from 1 to 50."),
    ('repeat_cv = "-1%"', "key 'repeat_cv' has invalid value '-1%': expected a percentage above 0 and at most 50"),
    ("repeat_max = 2", "key 'repeat_max' has invalid value 2: must be at least 3."),
    ('repeat = "3\\n"', "key 'repeat' has invalid value '3\\x0a': contains a control character"),
    ("repeat = 3\nrounds = 2", "repeat = 3 cannot be combined with rounds = 2 (a round already measures the whole "
                               "plan again); use one of them."),
])
def test_bad_repeat_settings_are_one_sentence(tmp_path: Path, setting: str, message: str) -> None:
    path = tmp_path / "bad.toml"
    path.write_text(PRESET.replace("runtime = 1\n", f"runtime = 1\n{setting}\n"))
    with pytest.raises(UsageError) as e:
        presets.load_file(path).expand()
    assert str(e.value).startswith(f"{path}: ") and message in str(e.value) and "\n" not in str(e.value)


def test_bad_repeat_on_the_command_line_exits_2_with_one_line(tmp_path: Path) -> None:
    path = tmp_path / "two.toml"
    path.write_text(PRESET)
    proc = run_cli("presets", "show", str(path), "--set", "repeat=3\n", "--set", "rounds=2")
    assert proc.returncode == 2 and proc.stdout == "" and proc.stderr.count("\n") == 1
    assert "--set repeat=3\\x0a: key 'repeat' has invalid value '3\\x0a': contains a control character" in proc.stderr
    proc = run_cli("presets", "show", str(path), "--set", "repeat=3", "--set", "rounds=2")
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1 and "cannot be combined" in proc.stderr
    shown = run_cli("presets", "show", str(path), "--set", "repeat=auto", "--set", "repeat_max=3", "--json")
    assert [p["replicate"] for p in json.loads(shown.stdout)["plan"]] == [1, 1, 2, 2, 3, 3]
