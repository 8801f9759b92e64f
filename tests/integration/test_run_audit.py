"""A real run's audit: ``run`` on a RAM-backed loop device reads the host's settings before its first point into
run.json's ``audit`` (every item, in order), its points carry the audit's checks, and the report has the Host
settings section with a row per setting."""

from __future__ import annotations

from pathlib import Path

from app.host.audit import ITEMS, STATUSES
from app.host.topology import allowed_cpus, cpu_list_text
from app.stats.validity import AUDIT_FLAGS, RESULTS
from tests.helpers.loopdev import loop_device
from tests.helpers.schema_check import validate_dir
from tests.integration.test_procedure import cli, lines, meta


def test_a_run_records_every_audited_setting_and_the_report_shows_them(tmp_path: Path) -> None:
    out = tmp_path / "audited"
    with loop_device(tmp_path, size_mb=64, ram=True) as dev:
        proc = cli("run", "custom", "--target", dev.path, "--yes", "--out", str(out), "--set", "size=16m",
                   "--set", "rw=randread", "--set", "bs=4k", "--set", "iodepth=1", "--set", "runtime=1",
                   "--set", "ramp_time=0")
        name = Path(dev.path).name
    assert proc.returncode == 0, proc.stderr
    validate_dir(out)  # run.json's audit and the lines' checks validate against the JSON Schemas
    a = meta(out)["audit"]
    assert (a["target"], a["device"], a["cpus"]) == (dev.path, name, cpu_list_text(allowed_cpus()))
    assert isinstance(a["read_at"], str) and a["read_at"]
    assert [i["key"] for i in a["items"]] == list(ITEMS)
    for i in a["items"]:
        assert i["status"] in STATUSES and i["want"] and i["why"]
        assert (i["value"] is None) == (i["status"] == "unavailable"), i
    (record,) = lines(out)
    for name_ in AUDIT_FLAGS:
        assert record["checks"][name_]["result"] in RESULTS
    assert record["checks"]["write-throttled"] == {"result": "not-applicable", "why": "the point does not write"}
    assert record["checks"]["link-degraded"]["result"] == "not-applicable"  # a loop device has no PCIe link
    report = cli("report", str(out))
    assert report.returncode == 0, report.stderr
    md = (out / "report.md").read_text()
    host = md.split("## Host settings", 1)[1].split("\n## ", 1)[0]
    assert f"{len(ITEMS)} settings checked" in host
    for label in ITEMS.values():
        assert f"| {label}" in host.replace("\\", ""), label
