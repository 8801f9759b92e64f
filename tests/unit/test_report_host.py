"""The report's Host settings section: the audit's warnings first with the points they bend, then every setting
read; one sentence for a run without an audit; foreign text escaped and bounded.  The audits are built by hand
and run.json's reader (app.host.audit.from_json) is replaced by a fake that hands them back."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from app.host.audit import ITEMS, Audit, Item
from app.model import runmeta
from app.report.data.model import MemoryRow, RunData, StorageRow
from app.report.sections import host
from app.stats.validity import FLEET_NOT_AUDITED, NOT_AUDITED

READ = {"rw": "randread", "bs": 4096, "iodepth": 1, "numjobs": 1, "ioengine": "libaio", "direct": True}


def item(key: str, status: str = "ok", value: str | None = "v", warning: str | None = None,
         note: str | None = None, want: str = "w", why: str = "it matters") -> Item:
    return Item(key, value, want, why, status, warning, note)


def every_item(**changed: Item) -> tuple[Item, ...]:
    return tuple(changed.get(k, item(k)) for k in ITEMS)


def data(audit_json: object, storage: list[StorageRow] = (), memory: list[MemoryRow] = (),  # type: ignore[assignment]
         **doc: Any) -> RunData:
    meta = runmeta.from_json({"schema_version": 1, "tool": "profiler-tui", "kind": "storage", "plan": [],
                              "status": "complete", "audit": audit_json, **doc}, "run.json")
    return RunData(Path("/nonexistent"), meta, list(storage), list(memory))


def row(i: int, point: dict[str, Any], flags: list[str]) -> StorageRow:
    return StorageRow.of(i, point, {"iops": 1.0}, {"flags": [{"flag": f, "reason": "r"} for f in flags]})


@pytest.fixture
def recorded(monkeypatch: pytest.MonkeyPatch) -> list[Audit]:
    """run.json's ``audit`` as the reader gives it back: the hand-made Audit put in this list."""
    held: list[Audit] = []
    monkeypatch.setattr("app.report.sections.host.audit.from_json",
                        lambda obj: held[0] if held and isinstance(obj, dict) and obj.get("items") else None)
    return held


def test_every_setting_is_a_row_and_warnings_come_first_with_the_points_they_bend(recorded: list[Audit]) -> None:
    link = item("pcie_link", "warn", "8.0 GT/s x2", "link-degraded", "maximum 16.0 GT/s x4", want="the maximum")
    gov = item("governor", "warn", "powersave", "governor", want="performance")
    sched = item("scheduler", "warn", "mq-deadline", "scheduler", want="none")
    apst = item("apst", "unavailable", None, note="not an NVMe drive")
    recorded.append(Audit("/dev/nvme0n1", "nvme0n1", (0, 1, 2, 3), every_item(
        pcie_link=link, governor=gov, scheduler=sched, apst=apst)))
    points = [row(0, READ, ["link-degraded", "power-saving"]), row(1, {**READ, "iodepth": 32}, ["link-degraded"])]
    memory = [MemoryRow.of(2, {"mode": "idle"}, {}), MemoryRow.of(3, {"mode": "peak"}, {})]
    md = "\n".join(host.section(data({"items": [1], "read_at": "2026-11-25T08:00:00Z"}, points, memory)))
    assert md.startswith("## Host settings\n\nRead before the run's first point at 2026-11-25T08:00:00Z")
    assert ("for target /dev/nvme0n1 (device nvme0n1) and CPUs 0-3: 16 settings checked (1 not available here), "
            "3 warnings.") in md
    warnings, table = md.split("| Setting")
    assert warnings.index("**scheduler**") < warnings.index("**link-degraded**") < warnings.index("**governor**")
    assert ("- **link-degraded** — PCIe link (current vs maximum): 8.0 GT/s x2 (maximum 16.0 GT/s x4), a benchmark "
            "wants the maximum: the PCIe link trained below the device's maximum speed or width: bandwidth is capped. "
            "Affects: `link-degraded` on 2 of 2 storage points (every storage point).") in warnings
    assert ("Affects: `power-saving` on 1 of 2 storage points (storage points with at most 4 I/Os in flight); the 1 "
            "memory latency point") in warnings
    assert "Affects: every figure of the run (no point flag: it is a run-level warning)." in warnings
    rows = [r for r in table.splitlines()[2:] if r.startswith("|")]
    assert len(rows) == len(ITEMS)
    assert any("NVMe autonomous power state transitions (APST) | not available here (not an NVMe drive) | not "
               "available here" in r for r in rows)
    assert any(r.startswith("| PCIe link (current vs maximum)") and "warning (link-degraded)" in r for r in rows)


def test_a_clean_audit_has_no_warnings_list(recorded: list[Audit]) -> None:
    recorded.append(Audit(None, None, (0,), every_item()))
    md = "\n".join(host.section(data({"items": [1]}, memory=[MemoryRow.of(0, {"mode": "idle"}, {})])))
    assert "for the system (no target) and CPUs 0: 16 settings checked (0 not available here), 0 warnings." in md
    assert "Warnings:" not in md


def test_hostile_recorded_text_is_escaped_and_bounded(recorded: list[Audit]) -> None:
    evil = "| x | <script>\x1b[2J" + "A" * 5000 + "\n# heading"
    recorded.append(Audit(evil, evil, (0,), (item("scheduler", "warn", evil, "scheduler", evil, evil, evil),),
                          container=evil))
    md = "\n".join(host.section(data({"items": [1], "read_at": evil})))
    lines = md.splitlines()
    assert "\x1b" not in md and "\n# heading" not in md and "<script>" not in md.replace("\\<script\\>", "")
    assert all(len(line) < 2500 for line in lines)
    table = [line for line in lines if line.startswith("| scheduler") or line.startswith("| I/O scheduler")]
    assert table and table[0].count(" | ") == 4  # the value's '|' escaped: still five cells


@pytest.mark.parametrize(("audit_json", "doc", "sentence"), [
    (None, {}, f"No host settings: {NOT_AUDITED}."),
    (None, {"fleet": {"hosts": []}}, f"No host settings: {FLEET_NOT_AUDITED}"),
    (None, {"status": "imported"}, "No host settings: an imported run records none."),
    ({"junk": True}, {}, "run.json's `audit` is not an audit the tool can read: no host settings are shown."),
])
def test_a_run_without_an_audit_gets_one_sentence(recorded: list[Audit], audit_json: object, doc: dict[str, Any],
                                                  sentence: str) -> None:
    lines = host.section(data(audit_json, **doc))
    assert lines[:2] == ["## Host settings", ""] and lines[2].startswith(sentence) and lines[3:] == [""]
