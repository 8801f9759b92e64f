"""app/model/runmeta.py: run.json's one reader never fails but with its own one-sentence error, and its one writer
gives back the bytes the tool wrote, unknown keys included."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from app.model import runmeta
from app.model.points import RunStatus, StoragePoint
from app.model.runmeta import RunMetaError

DATA = Path(__file__).resolve().parents[1] / "data"
# every key the reader looks at, at any depth: arbitrary objects are made of these keys (and others)
KEYS = ["schema_version", "tool", "status", "kind", "preset", "name", "description", "source", "overrides", "plan",
        "points_total", "points_done", "estimated_seconds", "target", "target_created_by_tool", "target_info",
        "engine", "procedure", "precondition", "rounds", "track", "timeseries", "telemetry_interval", "environment",
        "cpu", "caches", "memory", "system", "tools", "started", "ended", "resumed_at", "imported_at", "error",
        "failures", "index", "host", "point", "skipped", "reason", "warnings", "sources", "file", "telemetry",
        "fleet", "hosts"]
SCALARS = (st.none() | st.booleans() | st.integers(min_value=-(2 ** 70), max_value=2 ** 70)
           | st.floats(allow_nan=True, allow_infinity=True) | st.text(max_size=8))
KEY = st.sampled_from(KEYS) | st.text(max_size=6)
JSON = st.recursive(SCALARS, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(KEY, inner, max_size=4),
                    max_leaves=20)
_EXTRA = ("huge_pages", "confirmed")  # keys the reader does not type: any value is kept as it is
TODAY = {"indent": 2, "default": runmeta.json_default}  # how run.json was written before it had a type


def _today(doc: dict[str, Any]) -> str:
    return json.dumps(doc, **TODAY) + "\n"  # type: ignore[arg-type]


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(KEY, JSON, max_size=8))
def test_the_reader_raises_only_its_own_error_on_any_json_object(obj: dict[str, Any]) -> None:
    for read in (lambda: runmeta.from_json(obj, "r/run.json"), lambda: runmeta.parse(_today(obj), "r/run.json")):
        try:
            meta = read()
        except RunMetaError as e:
            text = str(e)
            assert text.startswith("r/run.json: key '") and text.endswith(".") and "\n" not in text, text
        else:
            assert runmeta.dumps(meta) == _today(obj)


@pytest.mark.parametrize("value", ["[1, 2]", "nope", "9" * 5000, '{"a": ' * 100_000, b"\xff\xfe{"])
def test_what_is_no_json_object_is_one_sentence_naming_the_file(value: str | bytes) -> None:
    with pytest.raises(RunMetaError, match=r"^x/run\.json: (expected a JSON object|cannot be read \(.*\))\.$"):
        runmeta.parse(value, "x/run.json")


def _tool_written() -> st.SearchStrategy[dict[str, Any]]:
    """run.json as a run writes it (app.engine.sweep's new run, then what the run adds), with keys a newer version
    might add (anywhere among the others)."""
    text = st.text(max_size=20)
    point = st.builds(StoragePoint, rw=st.sampled_from(["read", "randwrite"]), bs=st.integers(512, 1 << 20),
                      iodepth=st.integers(1, 64))
    known = st.fixed_dictionaries({
        "schema_version": st.just(1), "tool": st.just("profiler-tui"),
        "preset": st.fixed_dictionaries({"name": text, "kind": st.just("storage"), "description": text,
                                         "source": text, "overrides": st.lists(text, max_size=3)}),
        "kind": st.just("storage"), "plan": st.lists(point, max_size=4), "points_total": st.integers(0, 1008),
        "points_done": st.integers(0, 1008), "estimated_seconds": st.floats(0, 1e6) | st.integers(0, 10 ** 6),
        "target": text | st.none(), "target_created_by_tool": st.booleans(),
        "target_info": st.none() | st.dictionaries(text, JSON, max_size=3),
        "confirmed": st.fixed_dictionaries({"yes": st.booleans(), "allow_destructive": st.booleans()}),
        "engine": st.sampled_from(["auto", "mlc", "builtin"]),
        "environment": st.fixed_dictionaries({"cpu": st.fixed_dictionaries({"caches": st.lists(
            st.dictionaries(text, SCALARS, max_size=2), max_size=2)}), "memory": st.dictionaries(text, SCALARS),
            "system": st.dictionaries(text, SCALARS),
            "numa": st.fixed_dictionaries({"nodes": st.lists(st.fixed_dictionaries({
                "node": st.integers(0, 1023), "cpus": st.none() | text,
                "memory_bytes": st.none() | st.integers(0, 1 << 50)}), max_size=3)})}),
        "tools": st.dictionaries(text, text, max_size=2), "started": text, "ended": st.none() | text,
        "status": st.sampled_from(list(RunStatus)),
        "failures": st.lists(st.fixed_dictionaries({"index": st.integers(0, 9), "point": st.dictionaries(text, SCALARS),
                                                   "error": text, "at": text}), max_size=2),
    })
    extra = st.dictionaries(st.text(min_size=1, max_size=12).filter(lambda k: k not in KEYS), JSON, max_size=3)

    def mixed(parts: tuple[dict[str, Any], dict[str, Any], int]) -> dict[str, Any]:
        known_part, extra_part, at = parts
        items = list(known_part.items())
        return dict(items[:at] + list(extra_part.items()) + items[at:])

    return st.tuples(known, extra, st.integers(0, 30)).map(mixed)


@settings(max_examples=150, deadline=None)
@given(_tool_written())
def test_the_writer_gives_back_the_bytes_the_tool_wrote(doc: dict[str, Any]) -> None:
    written = _today(doc)
    meta = runmeta.parse(written.encode(), "run.json")
    assert runmeta.dumps(meta) == written
    assert runmeta.dumps(runmeta.new(doc, "run.json")) == written  # a new run.json: the bytes of its dict
    assert meta.status == doc["status"] and meta.points_done == doc["points_done"]
    assert [f.index for f in meta.failures] == [f["index"] for f in doc["failures"]]


@settings(max_examples=50, deadline=None)
@given(_tool_written(), st.sampled_from(_EXTRA) | st.text(min_size=1, max_size=12).filter(lambda k: k not in KEYS),
       JSON)
def test_a_change_keeps_unknown_keys_and_the_order(doc: dict[str, Any], key: str, value: object) -> None:
    """update_meta as dict.update did: a key that exists keeps its place, a new one goes last."""
    meta = runmeta.parse(_today(doc), "run.json")
    changed = runmeta.dumps(meta.with_changes(ended="2026-11-24T17:00:00+00:00", **{key: value}))
    assert changed == _today({**doc, "ended": "2026-11-24T17:00:00+00:00", key: value})


@pytest.mark.parametrize("run_json", sorted(DATA.rglob("run.json")), ids=lambda p: p.parent.name)
def test_the_stored_runs_are_written_back_byte_for_byte(run_json: Path) -> None:
    data = run_json.read_bytes()
    meta = runmeta.parse(data, run_json)
    assert runmeta.dumps(meta).encode() == data
    assert meta.preset_name and meta.plan and meta.status


def test_a_typed_attribute_is_the_value_and_null_reads_as_absent() -> None:
    meta = runmeta.from_json({"status": "partial", "preset": {"name": "quick", "overrides": ["bs=4k"]},
                              "failures": [{"index": 2, "host": "h", "error": "x"}], "target": None,
                              "skipped": [{"index": 1, "reason": None}], "procedure": {"track": {"bs": 4096}},
                              "newer": {"a": 1}}, "run.json")
    assert (meta.status, meta.preset_name, meta.preset.overrides if meta.preset else None) == \
        ("partial", "quick", ("bs=4k",))
    assert (meta.failures[0].index, meta.failures[0].host, meta.target) == (2, "h", None)
    assert meta.skipped[0].reason is None and meta.procedure is not None and meta.procedure.track == {"bs": 4096}
    assert meta.doc["newer"] == {"a": 1}
    with pytest.raises(RunMetaError, match=r"^run\.json: key 'failures\[0\]\.index' has invalid value -1: must be "
                                           r"a whole number\.$"):
        runmeta.from_json({"failures": [{"index": -1}]}, "run.json")
