"""run.json's ``audit``: read once before a run's first point for the CPUs the run will use (the plan's pinned
CPUs, else every CPU the process may run on), kept by a resumed run, and not read by a fleet run.  The audit
itself is a fake here (app.host.audit's readers have their own tests); the session's step is the real one."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any

import pytest

from app.engine import sweep
from app.host import audit as audit_mod
from app.host import topology
from app.host.audit import Audit, Item
from app.model import runmeta
from app.model.points import Kind, MemoryPoint, StoragePoint
from app.stats.validity import FLEET_NOT_AUDITED, NOT_AUDITED

STORAGE = StoragePoint(rw="randread", bs=4096, rwmixread=None, iodepth=1, numjobs=1, ioengine="libaio", direct=True,
                       runtime=1, ramp_time=0, size=1 << 20, time_based=True)
TOPOLOGY = topology.Topology((topology.Node(0, (0, 1), None), topology.Node(1, (2, 3), None)), (0, 1, 2, 3))


@pytest.fixture(autouse=True)
def machine(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(topology, "read", lambda *a, **k: TOPOLOGY)
    monkeypatch.setattr(topology, "allowed_cpus", lambda: (0, 1, 2, 3))


def mem(**keys: Any) -> MemoryPoint:
    fields: dict[str, Any] = {"mode": "idle", "traffic": None, "delay": None, "stride": 64, "buffer": None,
                              "duration": 1, "cpus": None, "tlb_locality": None}
    return MemoryPoint(**{**fields, **keys})


def test_the_run_cpus_are_the_plans_pinned_cpus_else_every_allowed_cpu() -> None:
    assert sweep.run_cpus([mem(cpus="1"), mem(cpus="3")]) == (1, 3)
    assert sweep.run_cpus([mem(cpu_node=1), mem(cpus="0")]) == (0, 2, 3)
    assert sweep.run_cpus([mem(mode="c2c", cpu_node=0, reader_node=1)]) == (0, 1, 2, 3)
    assert sweep.run_cpus([mem(cpus="1"), mem()]) == (0, 1, 2, 3)  # one point may run anywhere
    assert sweep.run_cpus([mem(cpu_node=7)]) == (0, 1, 2, 3)  # a node this machine lacks pins nothing
    assert sweep.run_cpus([STORAGE]) == (0, 1, 2, 3)


def test_a_storage_points_cpus_key_pins_it() -> None:
    @dataclass(frozen=True)
    class Pinned:  # a storage point with fio's cpus_allowed, as planning resolves it
        cpus: str

    assert sweep.run_cpus([Pinned("2-3")]) == (2, 3)  # type: ignore[list-item]
    assert sweep.run_cpus([Pinned("node")]) == (0, 1, 2, 3)  # type: ignore[list-item]  # never left unresolved


@dataclass
class FakeResults:
    """What the session's audit step uses of the results directory: run.json, updated."""

    meta: runmeta.RunMeta
    writes: list[dict[str, Any]] = field(default_factory=list)

    def update_meta(self, **changes: Any) -> runmeta.RunMeta:
        self.writes.append(changes)
        self.meta = self.meta.with_changes(**changes)
        return self.meta


READ = Audit("/dev/loop9", "loop9", (0, 1), (Item("scheduler", "none", "none", "why", "ok"),))


def session(targets: sweep.Targets, kind: Kind, plan: list[Any], recorded: object = None
            ) -> tuple[sweep.Session, FakeResults]:
    meta = runmeta.from_json({"schema_version": 1, "kind": kind.value, "plan": [], "status": "running",
                              "audit": recorded}, "run.json")
    results = FakeResults(meta)
    s = sweep.Session(results=results, kind=kind, plan=plan, targets=targets, runner=None)  # type: ignore[arg-type]
    s.facts = targets.unread_facts()
    return s, results


def audit_of(s: sweep.Session, meta: Any) -> Any:
    """What a run does before its first point: the reading in its thread, the recording after it."""
    return s._audit(meta, s._host_settings(meta, threading.Event()))


@pytest.fixture
def fake_audit(monkeypatch: pytest.MonkeyPatch) -> list[tuple[Any, Any]]:
    calls: list[tuple[Any, Any]] = []

    def audit(target: str | None, cpus: Any = None, **_: Any) -> Audit:
        calls.append((target, cpus))
        return READ

    monkeypatch.setattr(audit_mod, "audit", audit)
    monkeypatch.setattr(audit_mod, "to_json", lambda a: {"target": a.target, "items": ["as written"]})
    monkeypatch.setattr(audit_mod, "from_json", lambda obj: READ if isinstance(obj, dict) and obj.get("items")
                        else None)
    return calls


def test_a_new_run_reads_the_audit_once_for_its_target_and_cpus(fake_audit: list[tuple[Any, Any]]) -> None:
    s, results = session(sweep.LocalTarget("/dev/loop9"), Kind.STORAGE, [STORAGE])
    meta = audit_of(s, results.meta)
    assert fake_audit == [("/dev/loop9", (0, 1, 2, 3))]
    assert results.writes == [{"audit": {"target": "/dev/loop9", "items": ["as written"]}}]
    assert meta.audit == {"target": "/dev/loop9", "items": ["as written"]} and s.facts.audit is READ
    mem_session, mem_results = session(sweep.LocalTarget(None), Kind.MEMORY, [mem(cpus="2")])
    audit_of(mem_session, mem_results.meta)
    assert fake_audit[1] == (None, (2,))  # a memory run: the system and the CPUs its points use


def test_a_resumed_run_keeps_its_first_audit_and_a_run_without_one_reads_it(
        fake_audit: list[tuple[Any, Any]]) -> None:
    s, results = session(sweep.LocalTarget("/dev/loop9"), Kind.STORAGE, [STORAGE], {"items": ["first"]})
    audit_of(s, results.meta)
    assert fake_audit == [] and results.writes == [] and s.facts.audit is READ
    # run.json's audit unreadable (edited): read again rather than flag points from nothing
    s, results = session(sweep.LocalTarget("/dev/loop9"), Kind.STORAGE, [STORAGE], {"junk": 1})
    audit_of(s, results.meta)
    assert len(fake_audit) == 1 and results.writes and s.facts.audit is READ


def test_a_fleet_run_reads_no_audit_and_its_checks_say_why(fake_audit: list[tuple[Any, Any]]) -> None:
    class Fleet(sweep.FleetTargets):
        def __init__(self) -> None:  # no hosts to reach
            pass

    s, results = session(Fleet(), Kind.STORAGE, [STORAGE])
    audit_of(s, results.meta)
    assert fake_audit == [] and results.writes == [] and s.facts.audit is None
    assert s.facts.no_audit == FLEET_NOT_AUDITED and sweep.TargetFacts().no_audit == NOT_AUDITED
