"""Property tests of the preset loader, --set and validate_plan (Hypothesis, seeded).

Whatever the input — random tables with inf/nan/huge numbers, nested lists, dates, strings with
control characters; random TOML text and bytes read from a file; random --set strings; random
mutations of a valid plan — the result is the tool's own error (a ProfilerError) or a valid
preset/plan, never another exception.  And what is accepted is canonical: every plan the loader
expands passes validate_plan unchanged, and every plan validate_plan accepts holds only values its
keys' parsers reproduce exactly, with no control character anywhere."""

from __future__ import annotations

import copy
import datetime as dt
import json
import math
import tempfile
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from app.core.errors import ProfilerError
from app.engine.sweep import plan_for_target
from app.plan import presets

SETTINGS = settings(derandomize=True, deadline=None, database=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                           HealthCheck.filter_too_much])

ALL_KEYS = sorted(set(presets.STORAGE_KEYS) | set(presets.MEMORY_KEYS))
CONTROL = "\n\r\t\x00\x1b\x7f\x85\u2028\u202e\ufeff"
TOKENS = ["4k", "128k", "1m", "1.5g", "64", "4096", "0", "1", "-1", "100", "65536", "1e30", "9" * 30, "1.5", "1500ms",
          "2m", "1.0005", "7d", "randread", "RandWrite", "rw", "randrw", "trim", "libaio", "io_uring", "true", "no",
          "on", "W6", "w12", "R", "-W5", "13", "idle", "loaded", "0-3", "0,2,4", "3-1", "0,0", "none", "default", "",
          " ", "inf", "nan", "-inf", "١", "4\u212a"]

control_char = st.sampled_from(CONTROL)
token_with_control = st.builds(lambda t, c, where: t[:where] + c + t[where:], st.sampled_from(TOKENS), control_char,
                               st.integers(0, 8))
strings = st.one_of(st.sampled_from(TOKENS), token_with_control, st.text(max_size=8))
numbers = st.one_of(st.integers(-2**70, 2**70), st.sampled_from([10**4000, 2**63 - 1, 2**63, -1, 0, 1, 1 << 50]),
                    st.floats(allow_nan=True, allow_infinity=True), st.sampled_from([1.5, 0.001, 1e35, 604800.5, -0.0]))
scalars = st.one_of(st.none(), st.booleans(), numbers, strings, st.dates(), st.times())
values = st.recursive(scalars, lambda inner: st.one_of(st.lists(inner, max_size=3),
                                                       st.dictionaries(strings, inner, max_size=2)), max_leaves=5)
keys = st.one_of(st.sampled_from(ALL_KEYS + ["label", "blocksize", "group", "engine", ""]), strings)

# values a user would write for each key (most valid, some not canonical, a few out of range)
GOOD: dict[str, list[Any]] = {
    "rw": ["read", "randwrite", "randrw", " RW ", "trim"], "bs": ["4k", 4096, "1m", 512, "64m", "1.5k"],
    "rwmixread": [0, 70, "none", 100], "iodepth": [1, "32", 65536, 4], "numjobs": [1, 4, "2"],
    "ioengine": ["libaio", "PSYNC", "io_uring"], "direct": [True, "no", 0], "time_based": [True, False, "on"],
    "invalidate": [False, "yes", "none", 2],
    "registerfiles": [True, "no", "none"], "fixedbufs": [True, False], "sqthread_poll": ["on", "none"],
    "hipri": [True, "off"],
    "layers": [True, "off"],
    "rate": [1000, "20k", "50%", "110%"], "xmax": [5000, "8000"],
    "runtime": [1, "1.5", "1500ms", 2.25, "2m", "1s"], "ramp_time": [0, "0.5", "250ms"], "size": ["1m", "1g", 1 << 20],
    "mode": ["loaded", "idle", "loaded", "peak", "scaling", "latency_matrix", "bandwidth_matrix", "c2c",
             "working_set"], "traffic": ["R", "W6", 7, "-W5", "w12"],
    "delay": [0, 200, "2000", 10_000_000],
    "stride": [64, "128", 4096], "buffer": ["4k", "1m", "none", 1024], "duration": [1, "1.5", 3600],
    "cpus": ["0-1", "0,2", [0, 1], "none", "node"], "tlb_locality": ["256k", "none", 0, "1g"],
    "mem_node": [0, "1", "none", 1023], "cpu_node": [0, "1", "none", 1023],
    "steady": ["iops:2%", "iops_slope:0.3%", "BW:5%", "none", "iops:0%", "lat:2%"],
    "steady_window": [5, "10", "1500ms"],
    "steady_ramp": [2, 0, "1s"], "latency_bound": ["1ms", "500us", 800, "0.25s", "1.5us"],
    "latency_percentile": [99, "99.9", 100, 0], "latency_window": [1, "500ms", "2"],
    "threads": [1, "2", 1024, "none"], "pages": ["2m", "4K", "none"], "c2c": ["hit", "HITM", "none"],
    "reader_node": [0, "1", "none"], "home": ["writer", "reader", "none"],
    "precision": ["2%", "0.5 %", 5, "none", "0%", "51%"],
}


def value_for(key: str) -> st.SearchStrategy[Any]:
    return st.one_of(st.sampled_from(GOOD[key]), st.sampled_from(GOOD[key]), st.sampled_from(GOOD[key]), scalars)


def near_valid(kind: str) -> st.SearchStrategy[dict[str, Any]]:
    ks = presets.KEYS[kind]
    settings_ = st.fixed_dictionaries({}, optional={k: value_for(k) for k in ks})
    axes = st.fixed_dictionaries({}, optional={k: st.one_of(value_for(k), st.lists(value_for(k), max_size=3))
                                               for k in ks})
    group = st.one_of(axes, st.builds(lambda a, label: {**a, "label": label}, axes,
                                      st.one_of(st.sampled_from(["SEQ1M Q8T1", "x"]), strings)))
    return st.fixed_dictionaries(
        {"name": st.one_of(st.just("p"), st.just("p"), strings), "kind": st.just(kind)},
        optional={"settings": settings_, "description": st.one_of(st.just("d"), strings),
                  "matrix": axes, "group": st.lists(group, min_size=1, max_size=3)},
    )


random_dicts = st.fixed_dictionaries(
    {"name": st.one_of(st.just("p"), values), "kind": st.one_of(st.sampled_from(presets.KINDS), values)},
    optional={"settings": st.one_of(st.dictionaries(keys, scalars, max_size=4), values),
              "matrix": st.one_of(st.dictionaries(keys, values, max_size=4), values),
              "group": st.one_of(st.lists(st.dictionaries(keys, values, max_size=3), max_size=2), values),
              "description": values, "colour": values},
)
preset_dicts = st.one_of(near_valid("storage"), near_valid("memory"), near_valid("storage"), near_valid("memory"),
                         random_dicts)


def strings_in(obj: Any) -> list[str]:
    if isinstance(obj, str):
        return [obj]
    if isinstance(obj, dict):
        return [s for k, v in obj.items() for s in strings_in(k) + strings_in(v)]
    if isinstance(obj, list):
        return [s for v in obj for s in strings_in(v)]
    return []


def assert_canonical(kind: str, plan: list[dict[str, Any]]) -> None:
    """Every value is exactly what its key's parser makes of it; no control character anywhere."""
    for point in plan:
        for key, spec in presets.KEYS[kind].items():
            if key not in point:  # a key a point's table holds only when set (app.model.points._OPTIONAL)
                assert key in presets.LATER_KEYS[presets.Kind(kind)], key
                continue
            v = point[key]
            if v is None and point.get("mode") not in presets.MODE_ONLY_KEYS.get(key, (point.get("mode"),)):
                continue  # a key the point's mode does not read
            parsed = spec.parse(v)
            assert parsed == v and type(parsed) is type(v), (key, v)
            if isinstance(v, float):
                assert math.isfinite(v)
        assert not any(presets.has_control(s) for s in strings_in(point)), point


def check_preset_outcome(preset: presets.Preset) -> None:
    """A loaded preset expands (or is refused for its size) into a plan validate_plan accepts as is."""
    try:
        expanded = preset.expand()
    except ProfilerError:
        event("refused: plan too large")
        return
    event("accepted")
    assert expanded, "a preset always has at least one point"
    # as run.json holds them: cpus = "node" resolved for the run's target, as every run does
    plan = [p.to_dict() for p in plan_for_target(expanded, "/dev/null")]
    assert plan
    stored = json.loads(json.dumps(plan))  # what run.json holds
    assert [p.to_dict() for p in presets.validate_plan(preset.kind, stored, "run.json")] == plan
    assert_canonical(preset.kind, plan)
    info = presets.summary(preset)
    assert info["points"] == len(expanded) and math.isfinite(info["estimated_seconds"])
    presets.describe_axes(preset)


@settings(SETTINGS, max_examples=600)
@given(preset_dicts)
def test_parse_preset_of_any_table_is_a_preset_or_a_usage_error(data: dict[str, Any]) -> None:
    try:
        preset = presets.parse_preset(data, "random.toml")
    except ProfilerError as e:
        event("refused")
        assert str(e).startswith("random.toml") and not presets.has_control(str(e)), str(e)
        return
    # a control character anywhere (a key, a value, a list item, name, description, label) is refused,
    # even where the canonical value would not carry it ("W6\n" is not read as W6)
    assert not any(presets.has_control(x) for x in strings_in(data)), data
    check_preset_outcome(preset)


# --- the same through real files --------------------------------------------------------------------


def toml_value(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float):
        return repr(v) if math.isfinite(v) else ("nan" if math.isnan(v) else ("inf" if v > 0 else "-inf"))
    if isinstance(v, int):
        return str(v) if abs(v) < 2**63 else "0x" + "f" * 17  # TOML ints are 64-bit: make it a syntax error
    if isinstance(v, (dt.date, dt.time)):
        return v.isoformat()
    if isinstance(v, list):
        return "[" + ", ".join(toml_value(x) for x in v) + "]"
    if isinstance(v, dict):
        return "{" + ", ".join(f"{json.dumps(str(k))} = {toml_value(x)}" for k, x in v.items()) + "}"
    if v is None:
        return '""'
    return json.dumps(str(v))  # JSON string escapes are valid TOML basic-string escapes (surrogates aside)


def toml_text(data: dict[str, Any]) -> str:
    lines = [f"{json.dumps(str(k))} = {toml_value(v)}" for k, v in data.items() if not isinstance(v, dict)]
    for k, v in data.items():
        if isinstance(v, dict):
            lines.append(f"[{json.dumps(str(k))}]")
            lines += [f"{json.dumps(str(kk))} = {toml_value(vv)}" for kk, vv in v.items()]
    return "\n".join(lines) + "\n"


TMP = Path(tempfile.mkdtemp(prefix="presets-props-"))
noise = st.one_of(st.text(max_size=30), st.sampled_from(["[", "]]", "{", "a.b.c = ", "\x00", "\"\"\"", "#", "\\",
                                                         "[[group]]\n", "[matrix]\n", "= =", "a." * 40 + "b = 1\n"]))


@settings(SETTINGS, max_examples=300)
@given(preset_dicts, st.lists(st.tuples(st.integers(0, 400), noise), max_size=2), st.binary(max_size=8),
       st.booleans())
def test_load_file_of_any_text_or_bytes_is_a_preset_or_a_usage_error(data: dict[str, Any], edits: list[tuple[int, str]],
                                                                     raw: bytes, as_bytes: bool) -> None:
    text = toml_text(data)
    for pos, chunk in edits:
        text = text[:pos] + chunk + text[pos:]
    f = TMP / "random.toml"
    if as_bytes:
        f.write_bytes(text.encode("utf-8", "replace") + raw)
    else:
        f.write_text(text, encoding="utf-8", errors="replace")
    try:
        preset = presets.load_file(f)
    except ProfilerError as e:
        event("refused")
        assert str(e).startswith(str(f)) and not presets.has_control(str(e)), str(e)
        return
    check_preset_outcome(preset)


# --- --set ----------------------------------------------------------------------------------------

def set_items(kind: str) -> st.SearchStrategy[str]:
    def item(key: str) -> st.SearchStrategy[str]:
        good = [str(v) for v in GOOD[key] if not isinstance(v, list)]
        return st.lists(st.one_of(st.sampled_from(good), st.sampled_from(good), strings), min_size=1, max_size=3).map(
            lambda vs: f"{key}={','.join(vs)}")

    return st.one_of(st.sampled_from(sorted(presets.KEYS[kind])).flatmap(item),
                     st.sampled_from(sorted(presets.KEYS[kind])).flatmap(item),
                     st.builds(lambda k, vs: f"{k}={','.join(vs)}", keys, st.lists(strings, max_size=3)),
                     st.text(max_size=16))


@settings(SETTINGS, max_examples=800)
@given(st.sampled_from(["custom", "quick", "mem-loaded", "mem-idle"]), st.data())
def test_set_of_any_strings_is_an_override_or_a_usage_error(name: str, data: st.DataObject) -> None:
    preset = presets.load(name)
    items = data.draw(st.lists(set_items(preset.kind), max_size=3))
    try:
        overrides = presets.parse_overrides(preset.kind, items)
    except ProfilerError as e:
        event("refused")
        assert str(e).startswith("--set ") and not presets.has_control(str(e)), str(e)
        return
    assert all(isinstance(v, list) and v for v in overrides.values())
    assert not any(presets.has_control(item.partition("=")[2]) for item in items), items
    presets.apply_overrides(preset, items)
    check_preset_outcome(preset)


# --- validate_plan over mutations of valid plans -----------------------------------------------------

_BAD = object()


def _try(parse: Any, v: Any) -> Any:
    try:
        return parse(v)
    except ValueError:
        return _BAD


BASE_PLANS = {name: json.loads(json.dumps([p.to_dict() for p in presets.load(name).expand()]))
              for name in ("quick", "seed-mix", "mem-seed-w", "mem-idle", "custom")}
KIND_OF = {name: presets.load(name).kind for name in BASE_PLANS}

CANONICAL = {k: [v for v in (_try(presets.KEYS[kind][k].parse, x) for x in xs) if v is not _BAD]
             for kind in presets.KINDS for k, xs in GOOD.items() if k in presets.KEYS[kind]}
canonical_sets = st.sampled_from(sorted(CANONICAL)).flatmap(
    lambda k: st.tuples(st.just("set"), st.integers(0, 200), st.just(k), st.sampled_from(CANONICAL[k] + [None])))

mutation = st.one_of(
    canonical_sets, canonical_sets,
    st.tuples(st.just("set"), st.integers(0, 200), keys, values),
    st.tuples(st.just("set"), st.integers(0, 200), st.sampled_from(ALL_KEYS),
              st.one_of(st.sampled_from(TOKENS), scalars)),
    st.tuples(st.just("del"), st.integers(0, 200), keys, st.none()),
    st.tuples(st.just("entry"), st.integers(0, 200), st.none(), values),
    st.tuples(st.just("dup"), st.integers(0, 200), st.none(), st.none()),
    st.tuples(st.just("truncate"), st.integers(0, 200), st.none(), st.none()),
)


def mutate(plan: list[Any], op: tuple[str, int, Any, Any]) -> None:
    what, i, key, value = op
    i %= len(plan)
    if what == "set" and isinstance(plan[i], dict):
        plan[i][key] = value
    elif what == "del" and isinstance(plan[i], dict):
        plan[i].pop(key, None)
    elif what == "entry":
        plan[i] = value
    elif what == "dup":
        plan.append(copy.deepcopy(plan[i]))
    elif what == "truncate":
        del plan[i:]


@settings(SETTINGS, max_examples=800)
@given(st.sampled_from(sorted(BASE_PLANS)), st.lists(mutation, max_size=3),
       st.one_of(st.none(), st.sampled_from(presets.KINDS), values))
def test_validate_plan_of_any_mutation_is_a_canonical_plan_or_a_usage_error(name: str, ops: list[Any],
                                                                            kind_override: Any) -> None:
    plan = copy.deepcopy(BASE_PLANS[name])
    for op in ops:
        if plan:
            mutate(plan, op)
    kind = KIND_OF[name] if kind_override is None else kind_override
    try:
        points = presets.validate_plan(kind, plan, "run.json")
    except ProfilerError as e:
        event("refused")
        msg = str(e)
        assert msg.startswith("run.json: ") and "\n" not in msg and not presets.has_control(msg), msg
        return
    event("accepted" + (" after mutation" if ops else ""))
    accepted = [p.to_dict() for p in points]
    # a key added after a run was recorded may be absent from its plan: it is read back with its default
    later = presets.LATER_KEYS[presets.Kind(kind)]
    recorded = [{**p, **{k: presets.KEYS[kind][k].default for k in later if k in a and k not in p}}
                for p, a in zip(plan, accepted)]
    assert isinstance(accepted, list) and accepted and accepted == recorded
    assert not any(presets.has_control(x) for x in strings_in(plan)), plan
    assert_canonical(kind, accepted)
    assert len({presets.point_key(p) for p in points}) == len(accepted)
    if not ops and kind_override in (None, KIND_OF[name]):
        assert accepted == BASE_PLANS[name]
