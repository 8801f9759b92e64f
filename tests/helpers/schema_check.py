"""Validate what the tool wrote against its JSON Schemas (app/schemas/, docs/results-schema.md).

    validate_dir(out)            # run.json, results.jsonl, raw/*.samples.jsonl, raw/telemetry.jsonl
    validate_events(text)        # run --json-stream output, records and samples included

Every top-level key of a results line must also be described by the schema (the schema allows more keys
for later versions; the tool itself writes none it does not document).
"""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path
from typing import Any

from jsonschema import Draft202012Validator

SCHEMAS = Path(__file__).resolve().parents[2] / "app" / "schemas"


@lru_cache(maxsize=None)
def validator(name: str) -> Draft202012Validator:
    schema = json.loads((SCHEMAS / f"{name}.schema.json").read_text())
    Draft202012Validator.check_schema(schema)
    return Draft202012Validator(schema)


def schema(name: str) -> dict[str, Any]:
    return validator(name).schema


def check(name: str, obj: Any, where: str) -> None:
    errors = sorted(validator(name).iter_errors(obj), key=lambda e: list(e.absolute_path))
    if errors:
        e = errors[0]
        raise AssertionError(f"{where}: {name} schema: {'/'.join(map(str, e.absolute_path))}: {e.message}")
    if name == "results-line":
        known = set(schema(name)["$defs"][obj["kind"]]["properties"])
        extra = set(obj) - known
        assert not extra, f"{where}: keys the schema does not describe: {sorted(extra)}"


def _lines(path: Path) -> list[Any]:
    return [json.loads(ln) for ln in path.read_text().splitlines() if ln.strip()]


def validate_dir(out: Path) -> dict[str, int]:
    """Validate every file of a results directory the tool writes as JSON; how many objects of each kind."""
    counts = {"run": 1, "results-line": 0, "samples": 0, "telemetry": 0}
    check("run", json.loads((out / "run.json").read_text()), str(out / "run.json"))
    if (out / "results.jsonl").exists():
        for n, rec in enumerate(_lines(out / "results.jsonl")):
            check("results-line", rec, f"{out}/results.jsonl line {n + 1}")
            counts["results-line"] += 1
    for path in sorted((out / "raw").glob("*.samples.jsonl")) if (out / "raw").is_dir() else []:
        for n, s in enumerate(_lines(path)):
            check("samples", s, f"{path} line {n + 1}")
            counts["samples"] += 1
    tele = out / "raw" / "telemetry.jsonl"
    if tele.exists():
        for n, r in enumerate(_lines(tele)):
            check("telemetry", r, f"{tele} line {n + 1}")
            counts["telemetry"] += 1
    return counts


def validate_events(text: str) -> list[dict[str, Any]]:
    events = [json.loads(ln) for ln in text.splitlines()]
    for n, e in enumerate(events):
        check("event", e, f"event {n + 1}")
        if e["event"] == "point_done":
            check("results-line", e["record"], f"event {n + 1} record")
        if e["event"] in ("sample", "precondition_progress"):
            check("samples", e["sample"], f"event {n + 1} sample")
    return events
