"""A point whose target went away while fio ran is a failed point that resume measures again: a loop device detached
mid-point (fio keeps the device until it closes it, then the kernel clears it: size 0), a file replaced mid-point.
In-process, the real fio runner; the target is changed at the point's first live sample, so it always happens while
fio runs."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
from pathlib import Path
from typing import Callable

from app.engine.sweep import PointDone, PointFailed, RunFinished, Sample, Session, load_session, new_session
from app.model.points import RunStatus
from app.plan import presets
from tests.helpers.loopdev import needs_loop

PRESET = ["runtime=2", "size=4m"]


def drive(session: Session, at_first_sample: Callable[[], None] | None = None) -> list[object]:
    """Every event of the session; ``at_first_sample`` called once, when fio's first live figures arrive."""
    pending = [at_first_sample] if at_first_sample is not None else []

    async def run() -> list[object]:
        events: list[object] = []
        async for ev in session.events():
            events.append(ev)
            if pending and isinstance(ev, Sample):
                pending.pop()()
        return events

    return asyncio.run(run())


def one_failure(events: list[object], out: Path, why: str) -> None:
    failed = [e for e in events if isinstance(e, PointFailed)]
    assert len(failed) == 1 and why in failed[0].error, [getattr(e, "error", e) for e in failed]
    assert not [e for e in events if isinstance(e, PointDone)]
    finished = events[-1]
    assert isinstance(finished, RunFinished) and finished.status == RunStatus.PARTIAL
    meta = json.loads((out / "run.json").read_text())
    assert meta["status"] == "partial" and why in meta["failures"][0]["error"]
    assert (out / "results.jsonl").read_text() == ""


def loops_of(image: Path) -> list[str]:
    """The loop devices attached to ``image`` (only those are ever detached here)."""
    cp = subprocess.run(["losetup", "-j", str(image)], capture_output=True, text=True, check=False)
    return [line.split(":", 1)[0] for line in cp.stdout.splitlines() if line.startswith("/dev/loop")]


@needs_loop
def test_a_loop_device_detached_during_a_point_fails_the_point(tmp_path: Path) -> None:
    image = tmp_path / "disk.img"
    with open(image, "wb") as f:
        f.truncate(32 << 20)
    dev = subprocess.run(["losetup", "-f", "--show", str(image)], capture_output=True, text=True,
                         check=True).stdout.strip()
    try:
        out = tmp_path / "r"
        session = new_session(presets.apply_overrides(presets.load("custom"), PRESET), target=dev, out=out, yes=True)

        def detach() -> None:  # fio holds it: the kernel clears it when fio closes it
            subprocess.run(["losetup", "-d", dev], check=True)

        one_failure(drive(session, detach), out, f"{dev} changed size during the point (33,554,432 to 0 bytes")
    finally:
        for d in loops_of(image):
            subprocess.run(["losetup", "-d", d], check=False)


def test_a_file_replaced_during_a_point_fails_it_and_resume_measures_it_again(tmp_path: Path) -> None:
    target = tmp_path / "t.bin"
    target.write_bytes(os.urandom(4 << 20))
    out = tmp_path / "r"
    session = new_session(presets.apply_overrides(presets.load("custom"), PRESET), target=str(target), out=out)

    def replace() -> None:
        other = tmp_path / "other.bin"
        other.write_bytes(os.urandom(4 << 20))
        os.replace(other, target)

    one_failure(drive(session, replace), out, f"{target} was removed or replaced during the point")
    again = load_session(out)
    events = drive(again)
    assert len([e for e in events if isinstance(e, PointDone)]) == 1
    assert json.loads((out / "run.json").read_text())["status"] == "complete"
