"""A short run on the real NVMe namespace and on the SATA disk: results lines, the above-link check against
the link the kernel trained, and the drive telemetry read with the real nvme-cli and smartctl.

The runs happen in the guest; the report is made on the host from the same results folder (the exchange
folder both see): matplotlib's first figure costs about a minute under TCG, and the report reads only files."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import run_cli
from tests.helpers.vm_guest import Guest


def lines(out: Path) -> list[dict]:
    return [json.loads(x) for x in (out / "results.jsonl").read_text().splitlines()]


def section(report: str, title: str) -> str:
    start = report.index(f"## {title}")
    end = report.find("\n## ", start + 3)
    return report[start:end if end > 0 else None]


def test_quick_on_the_nvme_namespace_checks_the_real_link_and_reads_the_drive(lab: Guest) -> None:
    done = lab.tool("run", "quick", "--set", "runtime=1", "--set", "repeat=1", "--set", "size=64m", "--yes",
                    "--target", "/dev/nvme0n1", "--out", "/run/xchg/quick", timeout=400)
    assert done.rc == 0, done.err
    out = lab.xchg / "quick"
    meta = json.loads((out / "run.json").read_text())
    link = meta["target_info"]["link"]
    assert link == {"kind": "pcie", "text": "PCIe 2.5 GT/s x1", "bytes_per_s": 250e6, "speed": "2.5 GT/s", "width": 1}
    assert meta["target_info"]["model"] == "QEMU NVMe Ctrl" and meta["target_info"]["nvme"]
    assert meta["telemetry"]["available"] is True and meta["telemetry"]["device"] == "/dev/nvme0"
    assert meta["telemetry"]["tool"] == "nvme"
    records = lines(out)
    assert len(records) == 8 and {r["point"]["rw"] for r in records} == {"read", "write", "randread", "randwrite"}
    for r in records:
        # the emulated drive is served from the host's memory, so large blocks go past the 250 MB/s link: the
        # check compares each figure with the link sysfs reported, and flags exactly those above it
        above = r["metrics"]["bw_bytes"] > link["bytes_per_s"]
        assert r["checks"]["above-link"] == {"result": "flagged" if above else "passed"}, r
        assert ("above-link" in [f["flag"] for f in r["flags"]]) is above
        assert r["telemetry"]["readings"] >= 2 and r["telemetry"]["temperature_c"]["max"] == pytest.approx(49.85)
    readings = [json.loads(x) for x in (out / "raw" / "telemetry.jsonl").read_text().splitlines()]
    first, last = readings[0], readings[-1]
    assert first["phase"] == "before" and last["phase"] == "after"
    assert last["counters"]["data_units_written"] > first["counters"]["data_units_written"]
    assert last["counters"]["data_units_read"] > first["counters"]["data_units_read"]

    run_cli("report", str(out), check=True)
    drive = section((out / "report.md").read_text(), "Drive telemetry")
    assert "`nvme smart-log /dev/nvme0 -o json`" in drive and "| Temperature" in drive and "50–50 °C" in drive
    assert "| Data written" in drive and "| Data read" in drive and "| Drive" in drive and "/dev/nvme0" in drive


def test_a_read_on_the_sata_disk_reads_its_smart_attributes(lab: Guest) -> None:
    done = lab.tool("run", "custom", "--set", "rw=read", "--set", "bs=1m", "--set", "runtime=1", "--set", "size=32m",
                    "--yes", "--target", "/dev/sda", "--out", "/run/xchg/sata", timeout=200)
    assert done.rc == 0, done.err
    out = lab.xchg / "sata"
    meta = json.loads((out / "run.json").read_text())
    assert meta["target_info"]["link"]["kind"] == "sata" and meta["target_info"]["transport"] == "sata"
    assert meta["telemetry"]["tool"] == "smartctl" and meta["telemetry"]["device"] == "/dev/sda"
    (record,) = lines(out)
    assert record["telemetry"]["temperature_c"]["max"] > 0  # QEMU's disk reports its temperature attribute
    run_cli("report", str(out), check=True)
    drive = section((out / "report.md").read_text(), "Drive telemetry")
    assert "`smartctl -j -A /dev/sda`" in drive and "| Temperature" in drive and "°C" in drive
