"""What fio is doing, as Phase events: laying out the test file (with its progress), ramp, measuring, the
steady-state window — from the rules (which targets fio lays out), from fio's status dumps, and from real fio."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import Any

from app.cli.eventstream import event_object
from app.model.points import StoragePoint
from app.plan import presets
from app.runners.base import PHASES, Context, Phase, Result, Sample
from app.runners.fio import FioRunner, layout_bytes, written_bytes
from app.runners.fio_parse import PhaseTracker
from tests.conftest import fio_processes
from tests.helpers.schema_check import check, schema


def point(*overrides: str) -> StoragePoint:
    p = presets.apply_overrides(presets.load("custom"), ["runtime=1", "ramp_time=0", *overrides]).expand()[0]
    assert isinstance(p, StoragePoint)
    return p


# --- which targets fio lays out -------------------------------------------------------------------


def test_fio_lays_out_a_missing_or_short_regular_file_for_a_job_that_reads(tmp_path: Path) -> None:
    read = point("size=16m", "rw=randread")
    target = tmp_path / "t.img"
    assert layout_bytes(read, str(target), read_only=False) == 16 << 20, "no file yet: fio writes it whole"
    target.write_bytes(b"x" * 4096)
    assert layout_bytes(read, str(target), read_only=False) == 16 << 20, "too short: fio writes it again, whole"
    assert layout_bytes(point("size=16m", "rw=randrw"), str(target), read_only=False) == 16 << 20
    assert layout_bytes(point("size=16m", "rw=randwrite"), str(target), read_only=False) is None, (
        "a write-only job gets a new file that fio only allocates")
    assert layout_bytes(read, str(target), read_only=True) is None, "a read-only job never extends the target"
    os.truncate(target, 16 << 20)
    assert layout_bytes(read, str(target), read_only=False) is None, "big enough: used as it is"
    assert layout_bytes(read, str(tmp_path), read_only=False) is None, "not a regular file"
    assert target.stat().st_size == 16 << 20, "only looked at"


def test_a_process_write_count_is_readable() -> None:
    before = written_bytes(os.getpid())
    assert isinstance(before, int)
    os.write(os.open(os.devnull, os.O_WRONLY), b"x" * 10_000)
    after = written_bytes(os.getpid())
    assert after is not None and after >= before + 10_000
    assert written_bytes(2 ** 22 + 12345) is None, "no such process"


# --- the phases from fio's status dumps --------------------------------------------------------


def dump(runtime_ms: int, ios: int, steady: dict[str, Any] | None = None, at_ms: int | None = None) -> dict[str, Any]:
    job: dict[str, Any] = {"read": {"runtime": runtime_ms, "total_ios": ios}, "write": {"runtime": 0, "total_ios": 0}}
    if steady is not None:
        job["steadystate"] = steady
    return {"jobs": [job], **({"timestamp_ms": at_ms} if at_ms is not None else {})}


def test_ramp_until_fio_resets_its_counters_then_measuring() -> None:
    tracker = PhaseTracker(ramp_s=3)
    assert tracker.start() == ("ramp", 0.0, 3.0)
    assert tracker.update(dump(900, 9000, at_ms=10_000)) == ("ramp", 0.9, 3.0)
    assert tracker.update(dump(1900, 19000, at_ms=11_000)) == ("ramp", 1.9, 3.0)
    assert tracker.update(dump(2900, 29000, at_ms=12_000)) == ("ramp", 2.9, 3.0)
    assert tracker.update(dump(1100, 11000, at_ms=13_200)) == ("measuring", None, None), "counters reset: measured"
    assert tracker.update(dump(2100, 21000, at_ms=14_200)) == ("measuring", None, None)


def test_a_reset_between_two_dumps_whose_counters_grew_all_the_same_ends_the_ramp() -> None:
    """fio 3.33, ramp_time=1: the first dump 0.75 s into the ramp, the next 1 s after the reset (figures of a
    real run): runtime and I/Os both grew, yet the runtime fell a whole ramp behind the clock."""
    tracker = PhaseTracker(ramp_s=1)
    assert tracker.update(dump(749, 10755, at_ms=1_795_470_000_749)) == ("ramp", 0.749, 1.0)
    assert tracker.update(dump(999, 15121, at_ms=1_795_470_001_949)) == ("measuring", None, None)


def test_without_timestamps_the_runners_clock_serves_and_a_missed_reset_ends_the_ramp_late() -> None:
    tracker = PhaseTracker(ramp_s=1)
    assert tracker.update(dump(1000, 100), elapsed_s=1.2) == ("ramp", 1.0, 1.0)
    assert tracker.update(dump(2000, 200), elapsed_s=2.2) == ("ramp", 1.0, 1.0)
    assert tracker.update(dump(5000, 500), elapsed_s=5.2) == ("measuring", None, None), "past the ramp's grace"
    assert PhaseTracker().start() == ("measuring", None, None)


def test_the_steady_state_window_fills() -> None:
    tracker = PhaseTracker(ramp_s=0, steady_window_s=5)
    assert tracker.start() == ("steady", 0.0, 5.0)
    window = {"duration": 5, "attained": 0, "criterion": "3.0%", "data": {"iops": [0, 0, 0, 0, 0]}}
    assert tracker.update(dump(1000, 10, window)) == ("steady", 0.0, 5.0)
    window["data"] = {"iops": [100, 101, 99, 0, 0]}
    assert tracker.update(dump(4000, 40, window)) == ("steady", 3.0, 5.0)


def test_phase_events_in_the_stream_validate() -> None:
    phase = next(v for v in schema("event")["oneOf"] if v["properties"]["event"].get("const") == "phase")
    assert phase["properties"]["phase"]["enum"] == list(PHASES), "the schema names exactly the code's phases"
    for ev in (Phase(0, "layout", 0, 1 << 30), Phase(0, "layout", 432013312.0, float(1 << 30)),
               Phase(-1, "layout", None, 16 << 20), Phase(3, "ramp", 1.25, 2.0), Phase(3, "measuring"),
               Phase(3, "steady", 2.0, 5.0)):
        obj = event_object(ev)
        assert obj is not None and obj["event"] == "phase"
        check("event", obj, repr(ev))
    obj = event_object(Phase(0, "layout", 432013312.0, float(1 << 30)))
    assert obj is not None and obj["done"] == 432013312 and obj["total"] == 1 << 30
    assert isinstance(obj["done"], int), "bytes are whole numbers in the stream"


# --- with the real fio -------------------------------------------------------------------------


def run_point(p: StoragePoint, target: Path, raw: Path) -> list[Any]:
    async def collect() -> list[Any]:
        return [ev async for ev in FioRunner().run([(0, p)], Context(target=str(target), raw_dir=raw))]

    return asyncio.run(collect())


def test_the_runner_reports_the_layout_growing_to_the_size_then_measuring(tmp_path: Path) -> None:
    size = 512 << 20  # long enough to lay out (≈ 1-5 s) for the layout to be read a few times
    events = run_point(point(f"size={size}", "rw=randread"), tmp_path / "t.img", tmp_path / "raw")
    assert isinstance(events[-1], Result) and events[-1].error is None
    phases = [(e.phase, e.done, e.total) for e in events if isinstance(e, Phase)]
    layout = [done for name, done, total in phases if name == "layout"]
    assert phases[0] == ("layout", 0.0, float(size)), phases
    assert all(total == size for name, _, total in phases if name == "layout")
    assert None not in layout, layout
    at = [d for d in layout if d is not None]
    assert at == sorted(at) and all(0 <= d <= size for d in at), layout
    assert any(0 < d < size for d in layout if d is not None), f"a figure between nothing and all: {layout}"
    assert layout[-1] == size, f"fio's first status comes once the file is laid out: {layout}"
    names = [name for name, _, _ in phases]
    assert names == ["layout"] * len(layout) + ["measuring"], names
    first_sample = next(i for i, e in enumerate(events) if isinstance(e, Sample))
    assert all(not isinstance(e, Phase) or e.phase == "layout" for e in events[:first_sample - 1])
    assert isinstance(events[first_sample - 1], Phase) and events[first_sample - 1].phase == "measuring"
    samples = [e.data for e in events if isinstance(e, Sample)]
    # (the last sample may be a sliver of an interval before fio's exit)
    assert samples and all(s["iops"] > 0 for s in samples[:-1]), "fio's dumps while it lays out the file are no samples"
    assert (tmp_path / "t.img").stat().st_size == size


def test_a_ramp_is_reported_second_by_second_until_fio_measures(tmp_path: Path) -> None:
    target = tmp_path / "t.img"
    with open(target, "wb") as f:
        f.truncate(16 << 20)  # as big as the job: nothing to lay out
    events = run_point(point("size=16m", "ramp_time=2", "runtime=1"), target, tmp_path / "raw")
    assert isinstance(events[-1], Result) and events[-1].error is None
    phases = [(e.phase, e.done, e.total) for e in events if isinstance(e, Phase)]
    names = [name for name, _, _ in phases]
    assert names[0] == "ramp" and phases[0] == ("ramp", 0.0, 2.0) and "layout" not in names, phases
    assert names[-1] == "measuring" and names.count("measuring") == 1
    ramp = [done for name, done, _ in phases if name == "ramp"]
    assert None not in ramp, phases
    ramp_at = [d for d in ramp if d is not None]
    assert len(ramp_at) >= 2 and ramp_at == sorted(ramp_at) and all(d <= 2.0 for d in ramp_at), phases


def test_stopping_during_the_layout_leaves_no_task_and_no_fio(tmp_path: Path) -> None:
    p = point("size=1g", "rw=randread", "runtime=30")
    ctx = Context(target=str(tmp_path / "t.img"), raw_dir=tmp_path / "raw")

    async def stop_during_layout() -> tuple[list[Phase], set[asyncio.Task[Any]]]:
        seen: list[Phase] = []
        stream = FioRunner().run([(0, p)], ctx)
        async for ev in stream:
            if isinstance(ev, Phase):
                seen.append(ev)
            if len(seen) >= 2 or isinstance(ev, Sample):
                break
        await stream.aclose()
        await asyncio.sleep(0)
        return seen, asyncio.all_tasks() - {asyncio.current_task()}

    seen, left = asyncio.run(stop_during_layout())
    assert seen[0].phase == "layout" and seen[0].total == 1 << 30
    assert not left, f"tasks outlived the point: {left}"
    assert not fio_processes(tmp_path)
