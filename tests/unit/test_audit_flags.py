"""The audit's point flags (link-degraded, numa-remote, power-saving, write-throttled): raised from the run's
audit (run.json ``audit``), scoped to the points they bend, not applicable without an audit or where nothing
was judged, and the sentence an older line gets.  Audits are built by hand: the checks read only their types."""

from __future__ import annotations

from typing import Any

import pytest

from app.host.audit import Audit, Item
from app.model import runmeta
from app.model.records import Parts, StorageMetrics, read_line
from app.stats.validity import (
    ADDED_LATER,
    CHECKED,
    FLAGS,
    FLEET_NOT_AUDITED,
    LEGEND,
    NOT_AUDITED,
    TargetFacts,
    checks_of,
    names,
    point_checks,
    point_flags,
    recorded_facts,
)

AUDIT_FLAGS = ("link-degraded", "numa-remote", "power-saving", "write-throttled")
READ = {"rw": "randread", "bs": 4096, "iodepth": 1, "numjobs": 1, "ioengine": "libaio", "direct": True}
DEEP = {**READ, "iodepth": 32, "numjobs": 2}
BUFFERED_WRITE = {**READ, "rw": "randwrite", "direct": False, "iodepth": 16}
M = StorageMetrics.of({"iops": 1000.0, "bw_bytes": 4096e3, "usr_cpu": 1.0, "sys_cpu": 1.0, "lat_ns": {"mean": 1e6}})


def item(key: str, status: str = "ok", value: str | None = "v", warning: str | None = None,
         note: str | None = None) -> Item:
    return Item(key, value, "w", "why", status, warning, note)


CLEAN = (item("pcie_link", value="16.0 GT/s x4"), item("numa_node", value="0"), item("governor", value="performance"),
         item("cstates", value="C1 only"), item("apst", "unavailable", None, note="not an NVMe drive"),
         item("wbt", value="0"))
WARNED = (item("pcie_link", "warn", "8.0 GT/s x2", "link-degraded", "the device can do 16.0 GT/s x4"),
          item("numa_node", "warn", "1", "numa-remote"), item("governor", "warn", "powersave", "governor"),
          item("cstates", "ok", "C1 only"), item("apst", "warn", "on", "apst-on"),
          item("wbt", "warn", "2000 us", "wbt-on"))


def facts(items: tuple[Item, ...] = WARNED) -> TargetFacts:
    return TargetFacts(audit=Audit("/dev/nvme0n1", "nvme0n1", (0, 1), items))


def raised(point: dict[str, Any], f: TargetFacts) -> dict[str, str]:
    return {x["flag"]: x["reason"] for x in point_flags(point, M, Parts(), f) if x["flag"] in AUDIT_FLAGS}


def results(point: dict[str, Any], f: TargetFacts) -> dict[str, dict[str, str]]:
    flags = point_flags(point, M, Parts(), f)
    return {k: v for k, v in point_checks(point, M, Parts(), None, f, flags).items() if k in AUDIT_FLAGS}


def test_each_audit_flag_is_a_check_with_a_legend_and_what_passing_means() -> None:
    for name in AUDIT_FLAGS:
        assert name in FLAGS and LEGEND[name] and CHECKED[name] and ADDED_LATER[name] == NOT_AUDITED


def test_a_warned_audit_flags_the_points_each_warning_bends() -> None:
    low = raised(READ, facts())
    assert list(low) == ["link-degraded", "numa-remote", "power-saving"]  # a read is not write-throttled
    assert low["link-degraded"] == ("PCIe link (current vs maximum): 8.0 GT/s x2 (a benchmark wants w), "
                                    "the device can do 16.0 GT/s x4")
    assert "CPU frequency governor: powersave" in low["power-saving"]
    assert "APST" in low["power-saving"] and "C-states" not in low["power-saving"]  # only the warned ones
    assert low["power-saving"].endswith("; 1 I/O in flight")
    deep = raised(DEEP, facts())  # 64 in flight: the CPU and the drive stay busy
    assert list(deep) == ["link-degraded", "numa-remote"]
    assert list(raised(BUFFERED_WRITE, facts())) == ["link-degraded", "numa-remote", "write-throttled"]
    # at most 4 in flight, synchronous engines 1 per job
    assert "power-saving" in raised({**READ, "iodepth": 2, "numjobs": 2}, facts())
    assert "power-saving" in raised({**READ, "ioengine": "psync", "iodepth": 64, "numjobs": 4}, facts())
    assert "power-saving" not in raised({**READ, "iodepth": 5}, facts())


def test_a_clean_audit_raises_nothing_and_its_checks_pass() -> None:
    assert raised(READ, facts(CLEAN)) == {}
    r = results(BUFFERED_WRITE | {"iodepth": 1}, facts(CLEAN))
    assert {k: v["result"] for k, v in r.items()} == dict.fromkeys(AUDIT_FLAGS, "passed")


def test_flagged_checks_are_flagged_and_scoped_out_points_are_not_applicable_with_why() -> None:
    r = results(READ, facts())
    assert r["link-degraded"] == {"result": "flagged"} and r["power-saving"] == {"result": "flagged"}
    assert r["write-throttled"] == {"result": "not-applicable", "why": "the point does not write"}
    deep = results(DEEP, facts())["power-saving"]
    assert deep["result"] == "not-applicable" and deep["why"].startswith("more than 4 I/Os in flight")
    direct = results({**BUFFERED_WRITE, "direct": True}, facts())["write-throttled"]
    assert direct == {"result": "not-applicable",
                      "why": "direct=1: write-back throttling does not delay O_DIRECT writes"}
    # rw at rwmixread=100 opens the target for writing but writes nothing
    mixed = results({**BUFFERED_WRITE, "rw": "randrw", "rwmixread": 100}, facts())["write-throttled"]
    assert mixed["result"] == "not-applicable"


def test_a_setting_that_could_not_be_read_is_not_a_pass() -> None:
    f = facts((item("pcie_link", "unavailable", None, note="a loop device has no PCIe link"),
               item("numa_node", "info", "none", note="one NUMA node"),
               item("governor", "unavailable", None, note="no cpufreq in this VM"),
               item("cstates", "unavailable", None), item("apst", "unavailable", None)))
    r = results(READ, f)
    assert r["link-degraded"] == {"result": "not-applicable",
                                  "why": "PCIe link (current vs maximum): a loop device has no PCIe link"}
    assert r["numa-remote"] == {"result": "not-applicable", "why": "device's NUMA node: one NUMA node"}
    assert r["power-saving"]["result"] == "not-applicable" and "no cpufreq in this VM" in r["power-saving"]["why"]
    assert r["write-throttled"]["why"] == "the point does not write"
    missing = results(BUFFERED_WRITE, facts(()))["write-throttled"]
    assert missing == {"result": "not-applicable", "why": "the audit did not read write-back throttling latency"}
    # one of power-saving's settings judged, none saving power: passed
    partial = facts((item("governor", "unavailable", None), item("cstates", value="C1 only")))
    assert results(READ, partial)["power-saving"] == {"result": "passed"}


def test_without_an_audit_every_audit_check_says_why() -> None:
    r = results(READ, TargetFacts())
    assert r == dict.fromkeys(AUDIT_FLAGS, {"result": "not-applicable", "why": NOT_AUDITED})
    fleet = results(READ, TargetFacts(no_audit=FLEET_NOT_AUDITED))
    assert {v["why"] for v in fleet.values()} == {FLEET_NOT_AUDITED}


def test_hostile_audit_text_reaches_a_reason_as_one_bounded_line() -> None:
    f = facts((item("pcie_link", "warn", "x\n" * 500, "link-degraded", "\x1b[31m" + "n" * 900),))
    (reason,) = raised(READ, f).values()
    assert "\n" not in reason and len(reason) < 400


def _run_json(audit: object, fleet: bool = False) -> runmeta.RunMeta:
    doc: dict[str, object] = {"schema_version": 1, "tool": "profiler-tui", "kind": "storage", "plan": [],
                              "status": "complete", "audit": audit}
    if fleet:
        doc["fleet"] = {"hosts": []}
    return runmeta.from_json(doc, "run.json")


def test_recorded_facts_read_the_audit_of_run_json(monkeypatch: pytest.MonkeyPatch) -> None:
    recorded = Audit("/dev/sdb", "sdb", (0,), WARNED)
    seen: list[object] = []

    def fake_from_json(obj: object) -> Audit | None:  # the reader's contract: None when it is not an audit
        seen.append(obj)
        return recorded if isinstance(obj, dict) and obj.get("items") else None

    monkeypatch.setattr("app.stats.validity.from_json", fake_from_json)
    assert recorded_facts(_run_json({"items": [1]})).audit is recorded and seen == [{"items": [1]}]
    assert recorded_facts(_run_json({"junk": 1})).audit is None
    assert recorded_facts(_run_json(None)).no_audit == NOT_AUDITED
    assert recorded_facts(_run_json(None, fleet=True)).no_audit == FLEET_NOT_AUDITED


def test_an_audit_read_while_another_run_tuned_judges_no_point() -> None:
    """A run without --tune whose audit was read while another run tuned (run.json ``audit.tuned_by``): the values
    are that run's, so no audit check passes or flags on them; the sentence is why."""
    said = "another run (process 7, results in /r/a) was tuning the CPU settings with --tune when …"
    clean = {"target": "/dev/sdb", "device": "sdb", "cpus": "0", "read_at": "t", "items": [
        {"key": "wbt", "value": "0 (off)", "want": "0", "why": "w", "status": "ok"}]}
    f = recorded_facts(_run_json({**clean, "tuned_by": "\x1b[2J" + said}))
    assert f.audit is None and f.no_audit == said
    assert results(BUFFERED_WRITE, f) == dict.fromkeys(AUDIT_FLAGS, {"result": "not-applicable", "why": said})
    assert recorded_facts(_run_json(clean)).audit is not None
    assert recorded_facts(_run_json({**clean, "tuned_by": 7})).audit is not None, "not a sentence: not one"


def test_a_line_recorded_before_the_audit_checks_says_so() -> None:
    line = read_line({"kind": "storage", "point": READ, "metrics": {"iops": 1000.0, "lat_ns": {"mean": 1e6}},
                      "flags": [], "checks": {"cpu-bound": {"result": "passed"}}}, check=False)
    old_run = checks_of(line, TargetFacts())  # run.json without an audit
    assert old_run is not None and {old_run[n]["why"] for n in AUDIT_FLAGS} == {NOT_AUDITED}
    # a run recorded before the audit, resumed by a version that audits: its old lines still cannot pass
    resumed = checks_of(line, facts(CLEAN))
    assert resumed is not None
    assert resumed["link-degraded"] == {"result": "not-applicable", "why": NOT_AUDITED}
    assert resumed["write-throttled"] == {"result": "not-applicable", "why": "the point does not write"}
    assert names(point_flags(READ, M, Parts(), facts(CLEAN))) == []


def test_a_pinned_point_is_judged_by_its_own_cpus_against_the_devices_node() -> None:
    """The audit warns when all the run's CPUs are off the device's node; a plan whose points pin different CPUs
    (storage ``cpus``) has each point judged by its own, from the node the audit read."""
    on_two = facts((item("numa_node", "ok", "node 1 (CPUs 2-3)"),))  # the run's CPUs 0-3: partly on node 1
    assert "numa-remote" not in raised({**READ, "cpus": "2-3"}, on_two)
    assert "numa-remote" not in raised({**READ, "cpus": "1-2"}, on_two)  # one job on the node
    assert raised({**READ, "cpus": "0-1"}, on_two)["numa-remote"] == (
        "the point's CPUs 0-1 are all off the device's NUMA node 1 (CPUs 2-3)")
    assert "numa-remote" not in raised(READ, on_two)  # not pinned: the run's CPUs, not all off the node
    assert results({**READ, "cpus": "2"}, on_two)["numa-remote"] == {"result": "passed"}
    # a node value the checks cannot parse: the audit's own warning decides
    remote = facts((item("numa_node", "warn", "node one", "numa-remote"),))
    assert "numa-remote" in raised({**READ, "cpus": "2-3"}, remote)
    single = facts((item("numa_node", "info", "node 0 (CPUs 0-3)", note="one NUMA node"),))
    assert "numa-remote" not in raised({**READ, "cpus": "0"}, single)
