"""The sweep engine: plans a run, executes its points in order, records every result.

The CLI and the TUI drive the same :class:`Session`::

    session = new_session(preset, target=..., out=..., yes=True)
    async for event in session.events():
        ...   # RunStarted, PointStarted, Sample, PointDone, PointFailed, RunFinished

Cancelling the task that iterates ``events()`` stops the child process (the runner's
``finally``), marks the run ``interrupted`` and keeps every completed point.
"""

from __future__ import annotations

import asyncio
import os
import time
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, AsyncIterator

from app import envinfo, safety
from app.errors import UsageError
from app.presets import STORAGE, Preset, estimate_point_seconds, plan_writes, point_key
from app.results import ResultsDir, now_iso
from app.runners import get_runner
from app.runners.base import Context, Result, Sample
from app.space import check_free_space

DEFAULT_TARGET_NAME = "profiler-tui.testfile"


# --- events ---------------------------------------------------------------------------------


@dataclass
class RunStarted:
    total: int
    pending: int
    estimate_s: float
    meta: dict[str, Any]
    path: Path


@dataclass
class PointStarted:
    index: int
    point: dict[str, Any]
    done: int  # points completed before this one (including earlier sessions)
    total: int
    remaining_s: float  # estimated time left including this point


@dataclass
class PointDone:
    index: int
    record: dict[str, Any]
    done: int
    total: int


@dataclass
class PointFailed:
    index: int
    point: dict[str, Any]
    error: str


@dataclass
class RunFinished:
    status: str  # complete | partial (some points failed) | interrupted | failed
    done: int
    total: int
    failed: int
    path: Path


Event = RunStarted | PointStarted | Sample | PointDone | PointFailed | RunFinished


# --- planning -------------------------------------------------------------------------------


def default_out_dir(preset_name: str) -> Path:
    base = os.environ.get("PROFILER_TUI_RESULTS") or "results"
    stamp = datetime.now().strftime("%Y%m%d-%H%M%S")
    return Path(base) / f"{preset_name}-{stamp}"


def resolve_target(target: str | None, out: Path) -> tuple[str, bool]:
    """The storage target path and whether the tool chooses (and may delete) the file."""
    if target is None:
        return str((out / DEFAULT_TARGET_NAME).resolve()), True
    path = os.path.realpath(target)
    if os.path.isdir(path):
        return os.path.join(path, DEFAULT_TARGET_NAME), True
    return path, False


@dataclass
class Session:
    results: ResultsDir
    kind: str
    plan: list[dict[str, Any]]
    target: str | None
    yes: bool = False
    allow_destructive: bool = False
    engine: str = "auto"
    target_is_ours: bool = False
    runner: Any = None
    _meta: dict[str, Any] = field(default_factory=dict)

    @property
    def path(self) -> Path:
        return self.results.path

    @property
    def writes(self) -> bool:
        return plan_writes(self.kind, self.plan)

    def completed_keys(self) -> set[str]:
        return {point_key(r["point"]) for r in self.results.records()}

    def pending(self) -> list[tuple[int, dict[str, Any]]]:
        done = self.completed_keys()
        return [(i, p) for i, p in enumerate(self.plan) if point_key(p) not in done]

    def check_target(self) -> None:
        if self.kind == STORAGE and self.target is not None:
            safety.check_target(self.target, self.writes, yes=self.yes, allow_destructive=self.allow_destructive)

    def _batches(self, pending: list[tuple[int, dict[str, Any]]]) -> list[list[tuple[int, dict[str, Any]]]]:
        batches: list[list[tuple[int, dict[str, Any]]]] = []
        last_key: Any = None
        for item in pending:
            key = self.runner.batch_key(item[1])
            if batches and key == last_key:
                batches[-1].append(item)
            else:
                batches.append([item])
            last_key = key
        return batches

    async def events(self) -> AsyncIterator[Event]:
        pending = self.pending()
        total = len(self.plan)
        done = total - len(pending)
        failed = 0
        remaining = sum(estimate_point_seconds(self.kind, p) for _, p in pending)
        self.results.repair_tail()
        meta = self.results.update_meta(status="running", resumed_at=now_iso() if done else None)
        yield RunStarted(total, len(pending), remaining, meta, self.path)
        ctx = Context(target=self.target, raw_dir=self.results.raw_dir, engine=self.engine)
        status = "failed"
        try:
            for batch in self._batches(pending):
                # the device's state may have changed since planning; the check may probe the device
                # (blkid), so it runs off the event loop and a TUI stays responsive
                await asyncio.to_thread(self.check_target)
                started_at = {i: now_iso() for i, _ in batch[:1]}
                t0 = time.monotonic()
                points = dict(batch)
                yield PointStarted(batch[0][0], batch[0][1], done, total, remaining)
                async for ev in self.runner.run(batch, ctx):
                    if isinstance(ev, Sample):
                        yield ev
                        continue
                    if not isinstance(ev, Result):
                        continue
                    point = points[ev.index]
                    remaining -= estimate_point_seconds(self.kind, point)
                    if ev.error:
                        failed += 1
                        self._write_raw(ev, point)
                        self._record_failure(ev.index, point, ev.error)
                        yield PointFailed(ev.index, point, ev.error)
                    else:
                        record = self._record(ev, point, started_at.get(ev.index), t0)
                        self.results.append(record)
                        done += 1
                        yield PointDone(ev.index, record, done, total)
                    nxt = next((i for i in points if i > ev.index), None)
                    if nxt is not None:
                        started_at[nxt] = now_iso()
                        t0 = time.monotonic()
                        yield PointStarted(nxt, points[nxt], done, total, remaining)
            status = "complete" if failed == 0 else "partial"
        except (asyncio.CancelledError, KeyboardInterrupt):
            status = "interrupted"
            raise
        finally:
            self.results.update_meta(status=status, ended=now_iso(), points_done=len(self.completed_keys()))
            if status == "complete" and self.target_is_ours and self.target and os.path.isfile(self.target):
                os.unlink(self.target)  # our scratch file, not a result
        yield RunFinished(status, done, total, failed, self.path)

    def _write_raw(self, ev: Result, point: dict[str, Any]) -> dict[str, str]:
        stem = str(ev.extra.get("job") or point.get("group") or "point")
        return {suffix.lstrip("."): self.results.write_raw(ev.index, stem, suffix, content)
                for suffix, content in ev.raw.items()}

    def _record(self, ev: Result, point: dict[str, Any], started: str | None, t0: float) -> dict[str, Any]:
        raw = self._write_raw(ev, point)
        record: dict[str, Any] = {"kind": self.kind, "index": ev.index, "point": point, "metrics": ev.metrics}
        record.update(ev.extra)
        record.update(raw=raw, started=started, ended=now_iso())
        if self.kind == STORAGE:
            record["target"] = self.target
        return record

    def _record_failure(self, index: int, point: dict[str, Any], error: str) -> None:
        meta = self.results.read_meta()
        failures = [f for f in meta.get("failures", []) if f.get("index") != index]
        failures.append({"index": index, "point": point, "error": error, "at": now_iso()})
        meta["failures"] = failures
        self.results.write_meta(meta)


def new_session(
    preset: Preset,
    *,
    target: str | None = None,
    out: str | os.PathLike[str] | None = None,
    yes: bool = False,
    allow_destructive: bool = False,
    engine: str = "auto",
    overrides: list[str] | tuple[str, ...] = (),
) -> Session:
    """Validate, check safety, create the results directory and run.json. Starts nothing."""
    plan = preset.expand()
    if not plan:
        raise UsageError(f"{preset.source}: the plan has no points.")
    out_dir = Path(out) if out else default_out_dir(preset.name)
    runner = get_runner(preset.kind, engine)
    if hasattr(runner, "check_plan"):
        runner.check_plan(plan)  # e.g. memory buffers larger than MemAvailable: UsageError before any file
    target_path: str | None = None
    ours = False
    if preset.kind == STORAGE:
        target_path, ours = resolve_target(target, out_dir)
        safety.check_target(target_path, plan_writes(preset.kind, plan), yes=yes, allow_destructive=allow_destructive)
    elif target is not None:
        raise UsageError(f"--target {target}: memory presets take no target.")
    check_free_space(out_dir, target_path, plan, len(plan), plan_writes(preset.kind, plan))
    results = ResultsDir(out_dir)
    tools = runner.tool_versions()
    meta = {
        "tool": "profiler-tui",
        "preset": {"name": preset.name, "kind": preset.kind, "description": preset.description,
                   "source": preset.source, "overrides": list(overrides)},
        "kind": preset.kind,
        "plan": plan,
        "points_total": len(plan),
        "points_done": 0,
        "estimated_seconds": sum(estimate_point_seconds(preset.kind, p) for p in plan),
        "target": target_path,
        "target_created_by_tool": ours,
        "target_info": None,
        "confirmed": {"yes": yes, "allow_destructive": allow_destructive},
        "engine": engine,
        "environment": envinfo.collect(),
        "tools": tools,
        "started": now_iso(),
        "ended": None,
        "status": "planned",
    }
    results.create(meta)
    if target_path is not None:
        Path(target_path).parent.mkdir(parents=True, exist_ok=True)
        meta["target_info"] = envinfo.target_info(target_path)
        results.write_meta(meta)
    return Session(results, preset.kind, plan, target_path, yes, allow_destructive, engine, ours, runner, meta)


def load_session(path: str | os.PathLike[str], *, engine: str | None = None) -> Session:
    """Re-open a results directory to finish it (``resume``)."""
    results = ResultsDir(path)
    meta = results.read_meta()
    kind = meta.get("kind")
    plan = meta.get("plan")
    if kind not in ("storage", "memory") or not isinstance(plan, list):
        raise UsageError(f"{results.run_json}: has no plan to resume (keys 'kind' and 'plan').")
    confirmed = meta.get("confirmed") or {}
    chosen_engine = engine or meta.get("engine") or "auto"
    runner = get_runner(kind, chosen_engine)
    return Session(results, kind, plan, meta.get("target"), bool(confirmed.get("yes")),
                   bool(confirmed.get("allow_destructive")), chosen_engine,
                   bool(meta.get("target_created_by_tool")), runner, meta)
