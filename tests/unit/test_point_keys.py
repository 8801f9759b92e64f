"""Each key of a plan point is declared once, on its field (app.model.points, app.model.keys): the JSON Schema of a
results line's point, run.json's plan, the presets' key tables, results.csv's columns and the docs' key
tables are checked here against those declarations, so none of them can drift from the code."""

from __future__ import annotations

import re
from dataclasses import MISSING, fields, replace
from pathlib import Path

import pytest
from jsonschema import Draft202012Validator

from app.model.keys import Role
from app.model.points import (
    MemoryPoint,
    PointType,
    StoragePoint,
    csv_columns,
    implied,
    json_types,
    keys_of,
    omitted_when_unset,
    point_problem,
    records_of,
    value_fits,
)
from app.plan import presets
from app.runners.fio import job_file
from tests.helpers.schema_check import schema
from tests.helpers.typed import storage_point

ROOT = Path(__file__).resolve().parents[2]
JSON_NAMES = {str: "string", int: "integer", float: "number", bool: "boolean", type(None): "null"}
POINTS = {"storage": StoragePoint, "memory": MemoryPoint}


def point_schema(kind: str) -> dict:
    d = schema("results-line")["$defs"]
    return d["storage_point"] if kind == "storage" else d["memory"]["properties"]["point"]


def schema_types(prop: dict) -> set[str]:
    """The JSON types a property of the schema allows ($ref to $defs, enum and const resolved)."""
    if "$ref" in prop:
        prop = schema("results-line")["$defs"][prop["$ref"].rsplit("/", 1)[1]]
    if "type" in prop:
        return set(prop["type"]) if isinstance(prop["type"], list) else {prop["type"]}
    values = prop["enum"] if "enum" in prop else [prop["const"]]
    return {JSON_NAMES[type(v)] for v in values}


def field_types(cls: PointType, name: str) -> set[str]:
    """The JSON types a field's annotation allows; a number covers int and float; a field left out of
    the table when unset is never null there."""
    types = {JSON_NAMES[t] for t in json_types(cls)[name]}
    if {"integer", "number"} <= types:
        types.discard("integer")
    if name in omitted_when_unset(cls):
        types.discard("null")
    return types


@pytest.mark.parametrize("kind", POINTS)
def test_the_results_line_schema_declares_each_field_with_its_type(kind: str) -> None:
    cls, props = POINTS[kind], point_schema(kind)
    assert list(props["properties"]) == [f.name for f in fields(cls)]
    assert props["additionalProperties"] is False
    for name, prop in props["properties"].items():
        assert schema_types(prop) == field_types(cls, name), name
    always = [f.name for f in fields(cls) if f.default is MISSING]
    assert props.get("required", always) == always  # the memory point's schema requires none (imported lines)


@pytest.mark.parametrize("kind", POINTS)
def test_an_enumerated_value_of_the_schema_is_one_the_keys_parser_keeps(kind: str) -> None:
    keys = keys_of(POINTS[kind])
    for name, prop in point_schema(kind)["properties"].items():
        for value in prop.get("enum", []) if name in keys else []:
            assert keys[name].parse(value) == value, (name, value)
    assert point_schema("storage")["properties"]["rw"]["enum"] == list(presets.RW_MODES)
    assert point_schema("memory")["properties"]["engine"]["enum"] == list(presets.RECORDED_ENGINES)


def test_every_point_of_every_shipped_preset_is_what_the_schema_describes() -> None:
    d = schema("results-line")["$defs"]
    check = {"storage": Draft202012Validator({"$defs": d, "$ref": "#/$defs/storage_point"}),
             "memory": Draft202012Validator({"$defs": d, **d["memory"]["properties"]["point"]})}
    for preset in presets.load_all():
        extra = ["steady=iops:2%", "latency_bound=1ms"] if preset.kind == "storage" else ["tlb_locality=256k"]
        if any(getattr(p, "rate", None) for p in preset.expand()):
            extra = ["xmax=5000"]  # an open-loop preset: an offered load cannot be combined with those two
        for overrides in ([], extra):
            for point in presets.apply_overrides(presets.load(preset.source), overrides).expand()[:40]:
                table = point.to_dict()
                assert not list(check[preset.kind].iter_errors(table)), (preset.name, table)
                types = json_types(type(point))
                assert all(value_fits(types[k], v) for k, v in table.items()), table


def test_run_json_plan_holds_the_results_line_point_and_lists_no_keys_of_its_own() -> None:
    plan = schema("run")["properties"]["plan"]
    assert plan["items"] == {"type": "object"}, "run.json's plan points are checked by the fields (validate_plan)"
    assert "point" in plan["description"]


def test_the_key_tables_are_the_fields() -> None:
    for kind, cls in POINTS.items():
        assert list(presets.KEYS[kind]) == [f.name for f in fields(cls) if f.name not in records_of(cls)]
        assert presets.PLAN_EXTRAS[presets.Kind(kind)] == tuple(sorted(records_of(cls)))
    for name, (needs, value) in presets.DEPENDENT_KEYS.items():
        assert needs in presets.STORAGE_KEYS and presets.STORAGE_KEYS[name].parse(value) == value
    assert presets.DEPENDENT_KEYS["steady_ramp"] == ("steady", 2)
    # every storage key is a workload column, a detail of the workload or a run setting: the report's groups
    roles = {f.name: f.metadata.get("role") or keys_of(StoragePoint)[f.name].role for f in fields(StoragePoint)}
    assert set(roles.values()) <= {Role.WORKLOAD, Role.DETAIL, Role.SETTING}
    assert csv_columns(StoragePoint) == ("rw", "rwmixread", "bs", "iodepth", "numjobs", "ioengine", "direct",
                                         "runtime")


@pytest.mark.parametrize("doc, kinds", [("docs/presets.md", ("storage", "memory"))])
def test_the_docs_have_a_row_for_every_key(doc: str, kinds: tuple[str, ...]) -> None:
    text = (ROOT / doc).read_text()
    rows = set(re.findall(r"^\| `([a-z0-9_]+)` \|", text, re.M))
    for kind in kinds:
        assert set(presets.KEYS[kind]) <= rows, set(presets.KEYS[kind]) - rows


def test_the_results_format_doc_names_every_field_of_a_point() -> None:
    text = (ROOT / "docs/results-schema.md").read_text()
    storage = text.split("### Storage lines", 1)[1].split("`metrics`", 1)[0]
    memory = text.split("### Memory lines", 1)[1].split("`metrics`", 1)[0]
    for part, cls in ((storage, StoragePoint), (memory, MemoryPoint)):
        named = set(re.findall(r"`([a-z0-9_]+)`", part))
        assert {f.name for f in fields(cls)} <= named, {f.name for f in fields(cls)} - named


def test_a_key_that_needs_another_runs_with_its_declared_value() -> None:
    """A point built without a steady window or ramp runs as a preset would plan it: 5 s and 2 s."""
    planned = storage_point(presets.apply_overrides(presets.load("quick"), ["steady=iops:2%"]).expand()[0])
    bare = replace(planned, steady_window=None, steady_ramp=None)
    assert (implied(bare, "steady_window"), implied(bare, "steady_ramp")) == (5, 2)
    assert job_file(bare, "/nonexistent/target") == job_file(planned, "/nonexistent/target")
    assert implied(replace(bare, steady=None), "steady_ramp") is None


def test_a_results_line_point_is_type_checked_by_its_fields() -> None:
    table = presets.load("quick").expand()[0].to_dict()
    assert point_problem(presets.STORAGE, table) is None
    assert point_problem(presets.STORAGE, {**table, "iodepth": None, "extra": "kept"}) is None  # unknown: imported
    assert point_problem(presets.STORAGE, {**table, "direct": 1}) == "key 'point.direct' has the wrong type"
    assert point_problem(presets.STORAGE, {**table, "bs": True}) == "key 'point.bs' has the wrong type"
    assert point_problem(presets.MEMORY, {"mode": "idle", "buffer": "4k"}) == "key 'point.buffer' has the wrong type"
