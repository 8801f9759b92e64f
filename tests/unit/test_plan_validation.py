"""validate_plan: a plan read back from an untrusted run.json goes through the preset parsers.

Every reproduction of issue "resume trusts run.json" (option and command injection through a
newline in a plan value, a null entry) ends in a UsageError naming the file, the point and the key."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from app.core.errors import UsageError
from app.engine.sweep import plan_for_target
from app.plan import presets

SRC = "results/x/run.json"


def plan_of(name: str, *sets: str) -> tuple[str, list[dict[str, Any]]]:
    preset = presets.apply_overrides(presets.load(name), list(sets))
    plan = plan_for_target(preset.expand(), "/dev/null")  # cpus = "node" as a run resolves it for its target
    return preset.kind, json.loads(json.dumps([p.to_dict() for p in plan]))  # exactly what run.json holds


def validated(kind: str, plan: Any) -> list[dict[str, Any]]:
    """The points validate_plan makes of ``plan``, as run.json would hold them again."""
    return [p.to_dict() for p in presets.validate_plan(kind, plan, SRC)]


def refused(kind: Any, plan: Any) -> str:
    with pytest.raises(UsageError) as e:
        presets.validate_plan(kind, plan, SRC)
    msg = str(e.value)
    assert msg.startswith(SRC + ": ") and "\n" not in msg and not presets.has_control(msg), msg
    return msg


@pytest.mark.parametrize("name", sorted(presets.available()))
def test_every_shipped_plan_passes_unchanged(name: str) -> None:
    kind, plan = plan_of(name)
    assert validated(kind, plan) == plan
    # and with the values --set and fractional seconds give
    extra = ["runtime=1.5", "ramp_time=250ms", "bs=4k,1m", "rw=randrw"] if kind == "storage" else \
        ["duration=1.5", "cpus=0-1", "buffer=4k"]
    kind, plan = plan_of(name, *extra)
    assert validated(kind, plan) == plan


def test_memory_records_may_name_their_engine() -> None:
    kind, plan = plan_of("mem-seed-w")
    recorded = [{**p, "engine": "builtin"} for p in plan]
    assert validated(kind, recorded) == recorded
    recorded[3]["engine"] = "mlc; rm -rf /"
    assert refused(kind, recorded) == (f"{SRC}: plan[3] key 'engine' has invalid value 'mlc; rm -rf /': must be one "
                                       "of mlc, builtin.")
    _, storage = plan_of("custom")
    assert "unknown key 'engine' for a storage plan" in refused("storage", [{**storage[0], "engine": "mlc"}])


@pytest.mark.parametrize("key, value, reason", [
    ("ioengine", "libaio\nfilename=/dev/loop0", "contains a control character"),
    ("rw", "randread\nexec_prerun=touch PWNED", "contains a control character"),
    ("rw", "randread\n", "contains a control character"),
    ("rw", "randread;x", "must be one of read, write"),
    ("rw", "RANDREAD", "not the form the tool stores (that is 'randread')"),
    ("bs", "4k", "not the form the tool stores (that is 4096)"),
    ("bs", 4096.0, "not the form the tool stores (that is 4096)"),
    ("bs", 1e35, "must be at most 64 MiB"),
    ("bs", -1, "a size must be positive"),
    ("size", [1], "expected a size"),
    ("direct", 1, "not the form the tool stores (that is true)"),
    ("direct", "true", "not the form the tool stores (that is true)"),
    ("iodepth", None, "expected a whole number"),
    ("iodepth", True, "expected a whole number"),
    ("numjobs", 1025, "must be at most 1024"),
    ("runtime", float("nan"), "finite"),
    ("runtime", float("inf"), "finite"),
    ("runtime", 1e30, "must be at most 604800 s"),
    ("runtime", 10.0, "not the form the tool stores (that is 10)"),
    ("runtime", 1.0005, "whole number of milliseconds"),
    ("ramp_time", "1s", "not the form the tool stores (that is 1)"),
    ("rwmixread", 30, "this point needs null (as planned for its other keys)"),
    ("time_based", {"a": 1}, "expected true or false"),
])
def test_a_tampered_storage_value_is_refused_naming_point_and_key(key: str, value: Any, reason: str) -> None:
    kind, plan = plan_of("quick")
    plan[5][key] = value
    msg = refused(kind, plan)
    assert msg.startswith(f"{SRC}: plan[5] key '{key}' has invalid value "), msg
    assert reason in msg, msg


def test_the_two_injections_of_the_issue() -> None:
    kind, plan = plan_of("custom")
    plan[0]["ioengine"] = "libaio\nfilename=/dev/loop0"
    assert refused(kind, plan) == (f"{SRC}: plan[0] key 'ioengine' has invalid value 'libaio\\x0afilename=/dev/loop0':"
                                   " contains a control character (newline, tab, NUL, escape …).")
    kind, plan = plan_of("custom")
    plan[0]["rw"] = "randread\nexec_prerun=touch PWNED"
    assert "plan[0] key 'rw' has invalid value 'randread\\x0aexec_prerun=touch PWNED'" in refused(kind, plan)


@pytest.mark.parametrize("key, value, reason", [
    ("traffic", "W6\n", "contains a control character"),
    ("traffic", "w6", "not the form the tool stores (that is 'W6')"),
    ("delay", -1, "must be at least 0"),
    ("delay", None, "expected a whole number"),
    ("stride", 96, "power of two"),
    ("buffer", 5000, "whole number of 1 KiB"),
    ("cpus", "0-3\x1b[2J", "contains a control character"),
    ("cpus", "0-3, 5", "not the form the tool stores (that is '0-3,5')"),
    ("cpus", "٤", "expected a CPU list"),
    ("duration", 3601, "must be at most 3600 s"),
    ("mode", "idle", "this point needs null"),
])
def test_a_tampered_memory_value_is_refused(key: str, value: Any, reason: str) -> None:
    kind, plan = plan_of("mem-seed-w")
    plan[7][key] = value
    msg = refused(kind, plan)
    assert msg.startswith(f"{SRC}: plan[7] key '") and reason in msg, msg


def test_idle_points_carry_no_delay_or_traffic() -> None:
    kind, plan = plan_of("mem-idle")
    assert plan[0]["delay"] is None and plan[0]["traffic"] is None
    assert validated(kind, plan) == plan
    plan[0]["delay"] = 200
    assert "plan[0] key 'delay' has invalid value 200: this point needs null" in refused(kind, plan)


@pytest.mark.parametrize("mutate, expected", [
    (lambda p: p.__setitem__(3, None), "plan[3] is null, not a table of settings."),
    (lambda p: p.__setitem__(3, "rw=randread"), "plan[3] is 'rw=randread', not a table of settings."),
    (lambda p: p.__setitem__(3, [1, 2]), "plan[3] is [1, 2], not a table of settings."),
    (lambda p: p[3].pop("bs"), "plan[3] lacks key 'bs'."),
    (lambda p: [p[3].pop(k) for k in ("bs", "size")], "plan[3] lacks keys 'bs', 'size'."),
    (lambda p: p[3].__setitem__("exec_prerun", "touch PWNED"),
     "plan[3] has unknown key 'exec_prerun' for a storage plan"),
    (lambda p: p[3].__setitem__("filename\n", "x"), "plan[3] has unknown key 'filename\\x0a'"),
    (lambda p: p[3].__setitem__("group", "RND\n4K"), "plan[3] key 'group' has invalid value 'RND\\x0a4K'"),
    (lambda p: p[3].__setitem__("group", ""), "plan[3] key 'group' has invalid value ''"),
    (lambda p: p[3].__setitem__("group", 7), "plan[3] key 'group' has invalid value 7"),
    (lambda p: p[3].__setitem__("group", "x" * 101), "must be a label of 1 to 100 characters"),
    (lambda p: p.append(copy.deepcopy(p[2])), "plan[24] repeats plan[2] (the same settings twice)."),
])
def test_structural_tampering_is_refused(mutate: Any, expected: str) -> None:
    kind, plan = plan_of("quick")
    mutate(plan)
    msg = refused(kind, plan)
    assert expected in msg, msg


@pytest.mark.parametrize("kind, plan, expected", [
    ("disk", [{}], "key 'kind' has invalid value 'disk': must be storage or memory."),
    (None, [{}], "key 'kind' has invalid value null"),
    (["storage"], [{}], "key 'kind' has invalid value [\"storage\"]"),
    ("storage", [], "key 'plan' has invalid value []: must be a non-empty list of points."),
    ("storage", None, "key 'plan' has invalid value null"),
    ("storage", {"0": {}}, "must be a non-empty list of points"),
    ("storage", [{}] * 100_001, "key 'plan' has 100,001 points, more than the limit of 100,000."),
])
def test_kind_and_plan_shape(kind: Any, plan: Any, expected: str) -> None:
    assert refused(kind, plan) == f"{SRC}: {expected}" or expected in refused(kind, plan)


def test_the_returned_plan_is_rebuilt_not_the_input_object() -> None:
    kind, plan = plan_of("quick")
    out = presets.validate_plan(kind, plan, SRC)
    assert [p.to_dict() for p in out] == plan and all(a is not b for a, b in zip(out, plan))


def test_a_plan_recorded_before_tlb_locality_existed_still_validates() -> None:
    """tlb_locality was added later: a run.json plan without it had the default (the whole buffer)."""
    kind, plan = plan_of("mem-loaded", "delay=0,200")
    for p in plan:
        del p["tlb_locality"]
    assert [p["tlb_locality"] for p in validated(kind, plan)] == [None, None]
    kind, plan = plan_of("mem-loaded", "delay=0,200", "tlb_locality=256k")
    assert validated(kind, plan) == plan and plan[0]["tlb_locality"] == 262144
    plan[1]["tlb_locality"] = "256k"
    assert "plan[1] key 'tlb_locality' has invalid value '256k': not the form the tool stores (that is 262144)" \
        in refused(kind, plan)
    plan[1]["tlb_locality"] = 3000
    assert "plan[1] key 'tlb_locality' has invalid value 3000: must be at least 4 KiB" in refused(kind, plan)
    kind, plan = plan_of("quick")
    del plan[0]["bs"]
    assert "plan[0] lacks key 'bs'." in refused(kind, plan)  # only the later memory key may be absent
