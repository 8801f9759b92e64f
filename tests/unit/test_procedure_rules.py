"""The procedure's rules and keys without fio: the adaptive saturation rule, SNIA's steady-state rule over
rounds, the new storage keys and procedure settings (parsers, hostile values, run.json), the fio job lines
they become and what fio's JSON says back."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from app.core.errors import UsageError
from app.model.points import StoragePoint
from app.plan import presets
from app.plan.procedure import (
    Measured,
    Procedure,
    first_steady_window,
    round_skips,
    saturation_skips,
    skips,
    snia_check,
)
from app.runners.base import Context
from app.runners.fio import job_file, precondition_job
from app.runners.fio_parse import operating_point, steady_progress, steady_result
from app.stats.summary import live_line, outcome_line
from tests.conftest import run_cli
from tests.helpers.typed import storage_point, storage_points

SETTINGS = settings(derandomize=True, deadline=None, database=None, max_examples=400,
                    suppress_health_check=[HealthCheck.too_slow])


def qd_plan(depths: list[int] = [1, 2, 4, 8, 16, 32], **changes: Any) -> list[StoragePoint]:
    base = storage_point(presets.load("qd-scaling").expand()[0])
    return [replace(base, iodepth=d, **changes) for d in depths]


def curve(iops: list[float], lat: list[float]) -> dict[int, Measured]:
    return {i: Measured(a, b) for i, (a, b) in enumerate(zip(iops, lat))}


# --- adaptive ---------------------------------------------------------------------------------------------


def test_two_flat_steps_skip_the_rest_of_the_axis_naming_the_depth_where_it_saturated() -> None:
    plan = qd_plan()
    measured = curve([10, 20, 40, 40.5, 40.8], [100, 100, 100, 200, 400])
    assert saturation_skips(plan, measured) == {5: "saturated at QD 4"}


def test_one_flat_step_or_latency_not_growing_skips_nothing() -> None:
    plan = qd_plan()
    assert saturation_skips(plan, curve([10, 20, 40, 40.5, 60], [100, 100, 100, 200, 400])) == {}
    assert saturation_skips(plan, curve([10, 20, 40, 40.5, 40.8], [100, 100, 100, 140, 190])) == {}  # 1.4x
    assert saturation_skips(plan, curve([10, 20, 40, 41.3, 42.6], [100, 100, 100, 200, 400])) == {}  # +3.2 %


def test_falling_iops_counts_as_not_growing() -> None:
    plan = qd_plan()
    assert saturation_skips(plan, curve([10, 30, 25, 20], [100, 100, 200, 400])) == {4: "saturated at QD 2",
                                                                                    5: "saturated at QD 2"}


def test_a_gap_in_the_measured_axis_stops_the_walk() -> None:
    plan = qd_plan()
    measured = curve([10, 20, 40, 40.5, 40.8], [100, 100, 100, 200, 400])
    del measured[2]
    assert saturation_skips(plan, measured) == {}


def test_families_are_separate_and_numjobs_axes_count_too() -> None:
    base = qd_plan([1])[0]
    plan = [replace(base, bs=bs, numjobs=j) for bs in (4096, 131072) for j in (1, 2, 4, 8)]
    measured = {0: Measured(10, 100), 1: Measured(10.1, 200), 2: Measured(10.2, 400),
                4: Measured(10, 100), 5: Measured(20, 100), 6: Measured(40, 100)}
    assert saturation_skips(plan, measured) == {3: "saturated at numjobs 1"}


def test_latency_searches_are_not_an_axis() -> None:
    plan = qd_plan(latency_bound=1000, latency_percentile=99, latency_window=1)
    assert saturation_skips(plan, curve([10, 10, 10, 10], [100, 200, 400, 800])) == {}


def test_skips_only_apply_the_rules_the_procedure_turns_on() -> None:
    plan = qd_plan()
    measured = curve([10, 20, 40, 40.5, 40.8], [100, 100, 100, 200, 400])
    assert skips(plan, Procedure(), measured) == {}
    assert skips(plan, Procedure(adaptive=True), measured) == {5: "saturated at QD 4"}


# --- SNIA steady state over rounds ------------------------------------------------------------------------


def test_snia_rule_range_and_excursion() -> None:
    flat = snia_check([1, 2, 3, 4, 5], [100, 104, 98, 102, 100])
    assert flat.steady and flat.range == 6 and abs(flat.mean - 100.8) < 1e-9
    rising = snia_check([1, 2, 3, 4, 5], [100, 103, 106, 109, 112])  # range 12 % ok, excursion 12 % > 10 %
    assert rising.range_ok and not rising.slope_ok and not rising.steady
    assert abs(rising.slope - 3) < 1e-9 and abs(rising.excursion - 12) < 1e-9
    jumpy = snia_check([1, 2, 3, 4, 5], [100, 130, 100, 130, 100])
    assert not jumpy.range_ok


def test_the_first_steady_window_wins_and_missing_rounds_break_windows() -> None:
    series = [(1, 50.0), (2, 80.0), (3, 100.0), (4, 101.0), (5, 99.0), (6, 100.0), (7, 100.0), (8, 100.0)]
    check = first_steady_window(series)
    assert check is not None and check.rounds == (3, 4, 5, 6, 7) and check.steady
    assert first_steady_window(series[:4]) is None
    gap = [(1, 100.0), (2, 100.0), (4, 100.0), (5, 100.0), (6, 100.0)]
    assert first_steady_window(gap) is None


def test_round_skips_wait_for_the_round_to_finish() -> None:
    base = qd_plan([4])[0]
    plan = [replace(base, bs=bs, round=r) for r in range(1, 8) for bs in (4096, 65536)]
    proc = Procedure(rounds=7, track={"bs": 4096})
    measured = {i: Measured(100.0, 10.0) for i in range(9)}  # rounds 1-4 and round 5's tracked point
    assert round_skips(plan, proc, measured) == {}, "round 5 is not finished yet"
    measured[9] = Measured(100.0, 10.0)
    out = round_skips(plan, proc, measured)
    assert sorted(out) == list(range(10, 14)) and out[10].startswith("steady by round 5")


def test_rounds_expand_round_major_and_identity_includes_the_round() -> None:
    preset = presets.apply_overrides(presets.load("qd-scaling"), ["rounds=3", "iodepth=1,2"])
    plan = storage_points(preset.expand())
    assert [(p.round, p.iodepth) for p in plan] == [(1, 1), (1, 2), (2, 1), (2, 2), (3, 1), (3, 2)]
    assert len({presets.point_key(p) for p in plan}) == 6
    stored = json.loads(json.dumps([p.to_dict() for p in plan]))
    assert presets.validate_plan("storage", stored, "run.json") == plan


# --- keys and settings ----------------------------------------------------------------------------------


@pytest.mark.parametrize("item, message", [
    ("steady=lat:2%", "key 'steady' has invalid value 'lat:2%'"),
    ("steady=iops:0%", "above 0"),
    ("steady=iops:2", "a percentage"),
    ("latency_bound=abc", "expected a latency such as 1ms"),
    ("latency_bound=0.5us", "whole number of microseconds"),
    ("latency_bound=2m", "expected a latency"),
    ("latency_percentile=0", "above 0"),
    ("steady_window=0", "at least 1"),
    ("precondition=purge", "must be one of none, sequential, workload"),
    ("rounds=0", "at least 1"),
    ("rounds=101", "at most 100"),
    ("track=bs", "KEY=VALUE"),
    ("track=blocksize=4k", "not a storage key"),
    ("track=bs=5q", "bs="),
    ("adaptive=maybe", "true or false"),
])
def test_bad_values_are_one_sentence_naming_key_and_value(item: str, message: str) -> None:
    with pytest.raises(UsageError) as e:
        presets.apply_overrides(presets.load("custom"), [item])
    assert message in str(e.value) and "\n" not in str(e.value)


def test_dependent_keys_follow_their_key() -> None:
    plain = storage_point(presets.apply_overrides(presets.load("custom"), ["steady_window=9"]).expand()[0])
    assert plain.steady is None and plain.steady_window is None and "steady_window" not in plain.to_dict()
    steady = storage_point(presets.apply_overrides(presets.load("custom"), ["steady=IOPS:2.50%"]).expand()[0])
    assert (steady.steady, steady.steady_window, steady.steady_ramp) == ("iops:2.5%", 5, 2)
    bound = storage_point(presets.apply_overrides(presets.load("custom"), ["latency_bound=0.5ms"]).expand()[0])
    assert (bound.latency_bound, bound.latency_percentile, bound.latency_window) == (500, 99, 1)


def test_procedure_settings_in_a_preset_file_and_memory_presets_refuse_them(tmp_path: Path) -> None:
    good = tmp_path / "p.toml"
    good.write_text('name = "p"\nkind = "storage"\n[settings]\nprecondition = "sequential"\nadaptive = true\n'
                    'rounds = 3\ntrack = "bs=4k"\n')
    p = presets.load_file(good)
    assert p.procedure == Procedure(precondition="sequential", adaptive=True, rounds=3, track={"bs": 4096})
    assert p.writes() and presets.summary(p)["writes"]
    mem = tmp_path / "m.toml"
    mem.write_text('name = "m"\nkind = "memory"\n[settings]\nadaptive = true\n')
    with pytest.raises(UsageError, match="unknown key 'adaptive' for a memory preset"):
        presets.load_file(mem)


@pytest.mark.parametrize("value, message", [
    ({"rounds": "many"}, "key 'rounds' has invalid value 'many'"),
    ({"precondition": "erase"}, "key 'precondition'"),
    ({"surprise": 1}, "unknown key 'surprise'"),
    ({"track": {"bs": "4k\n"}}, "control character"),
    ([1, 2], "must be a table"),
])
def test_a_hostile_procedure_in_run_json_is_refused(value: Any, message: str) -> None:
    with pytest.raises(UsageError) as e:
        presets.validate_procedure(presets.STORAGE, value, "run.json")
    assert message in str(e.value) and str(e.value).startswith("run.json")


def test_a_null_for_a_key_left_out_when_unset_is_not_a_stored_form() -> None:
    stored = [p.to_dict() for p in presets.load("custom").expand()]
    stored[0]["steady"] = None
    with pytest.raises(UsageError, match="key 'steady' has invalid value null"):
        presets.validate_plan("storage", stored, "run.json")


@settings(SETTINGS)
@given(st.one_of(st.text(max_size=20), st.integers(), st.floats(), st.booleans(), st.none(),
                 st.lists(st.integers(), max_size=2)))
def test_new_key_parsers_return_their_canonical_form_or_refuse(value: Any) -> None:
    for key in ("steady", "latency_bound", "latency_percentile", "steady_window", "latency_window"):
        try:
            parsed = presets.STORAGE_KEYS[key].parse(value)
        except ValueError as e:
            assert str(e) and "\n" not in str(e)
            continue
        assert presets.STORAGE_KEYS[key].parse(parsed) == parsed  # canonical: parses to itself
    for key in ("track", "rounds", "precondition", "adaptive", "precondition_cap"):
        try:
            parsed = presets.PROCEDURE_KEYS[key].parse(value)
        except ValueError:
            continue
        assert presets.PROCEDURE_KEYS[key].parse(parsed) == parsed


# --- fio job lines and fio's answers ---------------------------------------------------------------------


def test_job_file_carries_fios_own_options(tmp_path: Path) -> None:
    point = storage_point(presets.apply_overrides(presets.load("custom"), [
        "steady=iops:2%", "steady_window=1.5", "latency_bound=750us", "latency_window=0.5"]).expand()[0])
    text = job_file(point, str(tmp_path / "f"), plan_writes=False)
    for line in ("steadystate=iops:2%", "steadystate_duration=1500ms", "steadystate_ramp_time=2",
                 "latency_target=750us", "latency_window=500ms", "latency_percentile=99"):
        assert line in text.splitlines(), line


def test_precondition_jobs(tmp_path: Path) -> None:
    plan = presets.apply_overrides(presets.load("seed-p4600"), ["size=64m"]).expand()
    ctx = Context(target=str(tmp_path / "f"), raw_dir=tmp_path)
    seq = precondition_job(Procedure(precondition="sequential"), plan, ctx)
    text = job_file(seq.point, str(tmp_path / "f"), True, seq.more)
    assert "rw=write" in text and "bs=131072" in text and "loops=2" in text and "time_based=0" in text
    assert seq.description == "128 KiB sequential writes over 64M, 2 passes (128M)"
    wl = precondition_job(Procedure(precondition="workload", precondition_cap=60), plan, ctx)
    assert wl.point.rw == "randrw" and wl.point.rwmixread == 0 and wl.point.steady == "iops:10%"
    assert wl.point.runtime == 60 and wl.estimate_s == 60
    reads = presets.load("qd-scaling").expand()
    with pytest.raises(UsageError, match="needs a write point"):
        precondition_job(Procedure(precondition="workload"), reads, ctx)


def fio_doc(**job: Any) -> dict[str, Any]:
    return {"jobs": [job]}


def test_fio_steadystate_and_latency_target_json_read_defensively() -> None:
    doc = fio_doc(job_runtime=7300, steadystate={"ss": "iops:2.000000%", "duration": 5, "attained": 1,
                                                 "criterion": "1.234567%", "max_deviation": 10.0, "slope": 3.5,
                                                 "data": {"iops": [10, 11, 0, 0, 0], "bw": [1, 2, 0, 0, 0]}})
    assert steady_result(doc, "iops:2%", 5) == {"attained": True, "after_s": 7.3, "criterion": "iops:2%",
                                                "deviation": 1.234567, "slope": 3.5, "window_s": 5}
    assert steady_progress(doc) == {"window_s": 5, "filled_s": 2, "attained": True, "deviation": 1.234567}
    hostile = fio_doc(job_runtime="x", steadystate={"attained": "yes", "criterion": "nan%", "data": [1]})
    assert steady_result(hostile, "iops:2%", 5)["deviation"] is None
    progress = steady_progress(hostile)
    assert progress is not None and progress["filled_s"] == 0
    assert steady_progress({"jobs": "nope"}) is None
    m = {"iops": 1000.0, "lat_ns": {"mean": 5e5, "p99": 9e5}}
    op = operating_point(fio_doc(job_runtime=12000, latency_depth=19), m, 1000, 99, 45)
    assert op["depth"] == 19 and op["converged"] and op["lat_p99_ns"] == 9e5
    capped = operating_point(fio_doc(job_runtime=45000, latency_depth=True), m, 1000, 99, 45)
    assert capped["depth"] is None and not capped["converged"]


def test_live_line_and_outcome_in_words() -> None:
    sample = {"iops": 1000, "bw_bytes": 4e6, "steady": {"window_s": 5, "filled_s": 3, "attained": False}}
    assert live_line("storage", sample).endswith("· steady window 3/5 s")
    sample["steady"] = {"window_s": 5, "filled_s": 5, "attained": False, "deviation": 4.25}
    assert live_line("storage", sample).endswith("· not steady yet (4.2%)")
    assert outcome_line({"steady": {"attained": True, "after_s": 7.04, "criterion": "iops:2%"}}) == \
        "steady after 7.0 s (iops:2%)"
    assert outcome_line({"steady": {"attained": False, "criterion": "iops:2%", "deviation": 3.0}}) == \
        "not steady at the cap (iops:2%, 3.0% at the end)"
    assert outcome_line({"operating_point": {"depth": 8, "bound_us": 1000, "percentile": 99, "converged": True}}) \
        == "deepest queue meeting p99 ≤ 1 ms: QD 8"
    assert outcome_line({"steady": "garbage", "operating_point": {"depth": "8"}}) == ""


def test_plan_preview_and_presets_show_state_the_procedure_and_a_bounded_estimate() -> None:
    from app.plan.describe import describe_plan
    from app.screens.presets import preview_text

    preset = presets.load("snia-iops")
    d = describe_plan(preset)
    assert d.procedure[0].startswith("precondition: sequential — 128 KiB sequential writes over 1G, 2 passes")
    assert d.procedure[1].startswith("rounds: up to 25, stopping once bs=4K rwmixread=0 is steady by SNIA's rule")
    assert d.totals.startswith("1400 points, estimated at most ") and d.writes
    text = preview_text(preset, None, "auto", []).plain
    assert "precondition: sequential" in text and "rounds: up to 25" in text and "writes to the target" in text
    adaptive = presets.apply_overrides(presets.load("qd-scaling"), ["adaptive=on", "precondition=sequential"])
    d = describe_plan(adaptive)
    assert d.writes and any(line.startswith("adaptive: ") for line in d.procedure)
    knee = describe_plan(presets.load("qd-knee"))
    assert "latency_bound=1ms" in knee.settings_text and not knee.writes


# --- track: the point that decides steady state in rounds --------------------------------------------------

TRACKED = 'name = "tracked"\nkind = "storage"\n[settings]\nrw = "randrw"\nrounds = 2\ntrack = "{track}"\n' \
          '[matrix]\nbs = ["64k", "4k"]\nrwmixread = [100, 0]\n'


@pytest.mark.parametrize("args, where, value", [
    (["FILE:bs=8k rwmixread=0"], "FILE", "'bs=8K rwmixread=0'"),
    (["FILE:bs=4k rwmixread=0", "--set", "track=bs=8k"], "--set track=bs=8k", "'bs=8K'"),
    (["FILE:bs=4k rwmixread=0", "--set", "bs=8k,16k"], "FILE", "'bs=4K rwmixread=0'"),
    (["custom", "--set", "rounds=3", "--set", "track=rwmixread=30"], "--set track=rwmixread=30", "'rwmixread=30'"),
])
def test_a_track_that_matches_no_point_is_refused_naming_where_it_was_given(tmp_path: Path, args: list[str],
                                                                             where: str, value: str) -> None:
    preset = tmp_path / "tracked.toml"
    if args[0].startswith("FILE:"):
        preset.write_text(TRACKED.format(track=args[0][5:]))
        args = [str(preset), *args[1:]]
    out = tmp_path / "out"
    proc = run_cli("run", *args, "--target", str(tmp_path / "t.img"), "--out", str(out))
    assert proc.returncode == 2, proc.stderr
    where = where.replace("FILE", str(preset))
    assert proc.stderr.startswith(f"profiler-tui: {where}: key 'track' has value {value}, which matches no point of "
                                  "the plan (the plan's "), proc.stderr
    assert proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr
    assert not out.exists() and not (tmp_path / "t.img").exists(), "refused before anything was created"


def test_a_track_that_matches_is_accepted_and_a_recorded_one_that_does_not_is_refused(tmp_path: Path) -> None:
    preset = tmp_path / "tracked.toml"
    preset.write_text(TRACKED.format(track="bs=4k rwmixread=0"))
    shown = run_cli("presets", "show", str(preset))
    assert shown.returncode == 0 and "rounds: up to 2" in shown.stdout, shown.stderr
    plan = [p.to_dict() for p in presets.load_file(preset).expand()]
    run_json = tmp_path / "run" / "run.json"
    run_json.parent.mkdir()
    run_json.write_text(json.dumps({"kind": "storage", "plan": plan,
                                    "procedure": {"rounds": 2, "track": {"bs": 8192}}}))
    from app.engine.sweep import recorded_plan
    from app.store.results import ResultsDir

    with pytest.raises(UsageError) as e:
        recorded_plan(ResultsDir(run_json.parent))
    assert str(e.value).startswith(f"{run_json}: procedure: key 'track' has value 'bs=8K', which matches no point")
