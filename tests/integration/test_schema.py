"""The results format as a stable export: the JSON Schemas in app/schemas/ agree with the code that writes the
files, every line real runs write validates (storage with preconditioning, steady state and flags through
--json-stream; memory; import; an interrupted run), and the schemas do refuse what is wrong."""

from __future__ import annotations

import copy
import json
import subprocess
import sys
from dataclasses import fields
from pathlib import Path

import pytest

from app.host.telemetry import THROTTLE_COUNTERS
from app.model.points import MemoryPoint, RunStatus, StoragePoint
from app.plan.presets import PROCEDURE_KEYS
from app.stats.validity import FLAGS
from tests.conftest import DATA, interrupt_run
from tests.helpers.schema_check import check, schema, validate_dir, validate_events, validator
from tests.integration.test_procedure import ROOT, cli, lines, meta

NAMES = ["results-line", "run", "samples", "telemetry", "event"]


@pytest.mark.parametrize("name", NAMES)
def test_each_schema_is_a_valid_draft_2020_12_schema(name: str) -> None:
    validator(name)  # check_schema raises on an invalid schema


def test_the_schemas_name_exactly_what_the_code_has() -> None:
    d = schema("results-line")["$defs"]
    assert list(d["storage_point"]["properties"]) == [f.name for f in fields(StoragePoint)]
    assert list(d["memory"]["properties"]["point"]["properties"]) == [f.name for f in fields(MemoryPoint)]
    assert d["flag"]["properties"]["flag"]["enum"] == list(FLAGS)
    assert d["telemetry"]["properties"]["rose"]["propertyNames"]["enum"] == list(THROTTLE_COUNTERS)
    run = schema("run")["properties"]
    assert set(run["procedure"]["properties"]) == set(PROCEDURE_KEYS)
    assert set(run["status"]["enum"]) == {s.value for s in RunStatus} | {"imported"}
    doc = (ROOT / "docs" / "results-schema.md").read_text()
    for name in NAMES:
        assert f"app/schemas/{name}.schema.json" in doc


def test_a_storage_run_with_preconditioning_steady_state_and_flags_validates_file_by_file_and_event_by_event(
        tmp_path: Path) -> None:
    out = tmp_path / "storage"
    proc = subprocess.run([sys.executable, "-m", "app", "run", "custom", "--target", str(tmp_path / "t.img"), "--yes",
                           "--out", str(out), "--json-stream", "--set", "rw=randread,write", "--set", "bs=64k",
                           "--set", "size=16m", "--set", "runtime=2", "--set", "ramp_time=0",
                           "--set", "steady=iops:50%", "--set", "steady_window=1", "--set", "precondition=sequential",
                           "--set", "direct=0,1"],
                          cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    counts = validate_dir(out)
    assert counts["results-line"] == 4 and counts["samples"] >= 4
    events = validate_events(proc.stdout)
    kinds = {e["event"] for e in events}
    assert {"run_started", "precondition_started", "precondition_done", "point_started", "sample", "point_done",
            "run_finished"} <= kinds
    assert any(r["flags"] for r in lines(out)), "direct=0 is flagged buffered at least"
    assert meta(out)["precondition"]["status"] == "done"


def test_memory_and_imported_runs_validate(tmp_path: Path) -> None:
    out = tmp_path / "memory"
    proc = cli("run", "mem-loaded", "--out", str(out), "--set", "duration=1", "--set", "delay=0,500")
    assert proc.returncode == 0, proc.stderr
    assert validate_dir(out)["results-line"] == 2
    idle = tmp_path / "idle"
    assert cli("run", "mem-idle", "--out", str(idle), "--set", "duration=1").returncode == 0
    validate_dir(idle)
    imported = tmp_path / "imported"
    mlc = sorted((DATA / "mlc").glob("*.txt"))  # every section of each: matrices, peak, c2c too
    proc = cli("import", *map(str, mlc), "--out", str(imported))
    assert proc.returncode == 0, proc.stderr
    assert validate_dir(imported)["results-line"] == 38 + 19 * 3 + 1 + 5
    fio = tmp_path / "fio-imported"
    src = tmp_path / "src"
    proc = cli("run", "custom", "--target", str(tmp_path / "t.img"), "--yes", "--out", str(src), "--set", "size=8m",
               "--set", "runtime=1", "--set", "ramp_time=0", "--set", "rw=randrw", "--set", "rwmixread=70")
    assert proc.returncode == 0, proc.stderr
    jsons = sorted((src / "raw").glob("*.json"))
    proc = cli("import", *map(str, jsons), "--out", str(fio))
    assert proc.returncode == 0, proc.stderr
    assert validate_dir(fio)["results-line"] == 1


def test_an_interrupted_run_and_its_stream_validate(tmp_path: Path) -> None:
    out = tmp_path / "cut"
    stdout: list[str] = []
    code, err = interrupt_run(["run", "custom", "--target", str(tmp_path / "t.img"), "--yes", "--out", str(out),
                               "--json-stream", "--set", "size=8m", "--set", "runtime=1,30", "--set", "ramp_time=0"],
                              out, after_lines=1, settle_s=1.5, stdout=stdout)
    assert code == 130, err
    assert meta(out)["status"] == "interrupted"
    validate_dir(out)
    events = validate_events(stdout[0])
    assert events[-1]["event"] == "run_ended" and events[-1]["status"] == "interrupted"


def test_the_schemas_refuse_what_is_wrong(tmp_path: Path) -> None:
    """A validation that cannot fail proves nothing: each of these breaks one documented rule."""
    line = json.loads((DATA / "report" / "golden-run" / "results.jsonl").read_text().splitlines()[0])
    line["schema_version"] = 1
    check("results-line", line, "golden line")
    broken = []
    for change in (lambda r: r["metrics"].pop("iops"), lambda r: r["point"].update(bs="4k"),
                   lambda r: r.update(flags=[{"flag": "slow", "reason": "x"}]), lambda r: r.update(kind="disk"),
                   lambda r: r["metrics"]["lat_ns"].update(p99=-1), lambda r: r.pop("schema_version"),
                   lambda r: r.update(telemetry={"readings": 2, "rose": {"thm_temp1_trans_count": 0}}),
                   lambda r: r["point"].update(colour="red")):
        bad = copy.deepcopy(line)
        change(bad)
        with pytest.raises(AssertionError):
            check("results-line", bad, "broken line")
        broken.append(bad)
    assert len(broken) == 8
    with pytest.raises(AssertionError, match="keys the schema does not describe"):
        check("results-line", {**line, "surprise": 1}, "line")
    with pytest.raises(AssertionError):
        check("samples", {"t": 1, "interval_s": 0, "iops": 1, "bw_bytes": 1}, "sample")
    with pytest.raises(AssertionError):
        check("telemetry", {"schema_version": 1, "at": "x", "t": 1, "phase": "during", "index": None}, "reading")
    with pytest.raises(AssertionError):
        check("event", {"schema_version": 1, "at": "x", "event": "point_done", "index": 0}, "event")
