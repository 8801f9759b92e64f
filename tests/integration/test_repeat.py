"""Repeats with real fio: ``repeat = 3`` and ``repeat = "auto"`` interrupted by SIGINT and resumed end with exactly
the planned replicates, interleaved; ``auto`` stops a point on a steady target once its replicates agree."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any, Callable

from app.uncertainty import replicate_spread
from conftest import ROOT, fio_processes, interrupt_run, run_cli
from loopdev import loop_device, needs_loop
from schema_check import validate_dir
from throttle import throttled


def lines(out: Path) -> list[dict[str, Any]]:
    return [json.loads(ln) for ln in (out / "results.jsonl").read_text().splitlines()]


def meta(out: Path) -> dict[str, Any]:
    return json.loads((out / "run.json").read_text())


def resume(out: Path, enter: Callable[[], None]) -> subprocess.CompletedProcess[str]:
    """``resume --yes`` in the throttled cgroup (``enter``)."""
    proc = subprocess.run([sys.executable, "-m", "app", "resume", str(out), "--yes"], capture_output=True, text=True,
                          timeout=120, cwd=ROOT, preexec_fn=enter, env=dict(os.environ))
    assert proc.returncode == 0, proc.stderr
    return proc


def replicates(found: list[dict[str, Any]]) -> list[tuple[int, int]]:
    return [(r["point"]["bs"], r["point"]["replicate"]) for r in found]


def test_repeat_3_interrupted_and_resumed_ends_with_each_replicate_once_interleaved(tmp_path: Path) -> None:
    out = tmp_path / "rep"
    args = ["run", "custom", "--target", str(tmp_path / "r.bin"), "--out", str(out), "--set", "bs=4k,64k",
            "--set", "runtime=1", "--set", "size=16m", "--set", "repeat=3"]
    returncode, stderr = interrupt_run(args, out, after_lines=2, settle_s=0.5)  # inside replicate 2
    assert returncode == 130, stderr
    assert fio_processes(out) == []
    kept = lines(out)
    assert replicates(kept)[:2] == [(4096, 1), (65536, 1)] and len(kept) < 6
    assert meta(out)["procedure"] == {"precondition": "none", "adaptive": False, "rounds": 1, "track": {},
                                      "precondition_cap": 1800, "repeat": 3}
    resumed = run_cli("resume", str(out), check=True)
    assert f"{6 - len(kept)} of 6 points to run" in resumed.stdout
    final = lines(out)
    assert final[:len(kept)] == kept
    assert replicates(final) == [(4096, 1), (65536, 1), (4096, 2), (65536, 2), (4096, 3), (65536, 3)]
    assert meta(out)["status"] == "complete" and "skipped" not in meta(out)
    validate_dir(out)
    assert "Nothing to resume" in run_cli("resume", str(out), check=True).stdout


@needs_loop
def test_repeat_auto_stops_on_a_steady_target_and_a_resumed_run_decides_the_same(tmp_path: Path) -> None:
    """A RAM-backed loop device throttled by the kernel to 2000 IOPS: a point at QD1 and QD4 measures the throttle,
    the same figure every second, so three replicates agree within 3 % and replicates 4 and 5 are skipped."""
    out = tmp_path / "auto"
    with loop_device(tmp_path, size_mb=64, ram=True) as dev, throttled(dev.path, 2000, 2000) as enter:
        args = ["run", "custom", "--target", dev.path, "--yes", "--out", str(out), "--set", "size=64m",
                "--set", "iodepth=1,4", "--set", "runtime=1", "--set", "repeat=auto", "--set", "repeat_max=5"]
        returncode, stderr = interrupt_run(args, out, after_lines=3, preexec_fn=enter)  # before any rule decided
        assert returncode == 130, stderr
        kept = lines(out)
        assert 3 <= len(kept) < 6 and "skipped" not in meta(out)
        resumed = resume(out, enter)
        final = lines(out)
        assert final[:len(kept)] == kept
        by_depth = {qd: [r["metrics"]["iops"] for r in final if r["point"]["iodepth"] == qd] for qd in (1, 4)}
        skipped = meta(out)["skipped"]
        # each point stopped after 3 replicates whose IOPS CV is under 3 %: replicates 4 and 5 skipped, named so
        assert [(r["point"]["iodepth"], r["point"]["replicate"]) for r in final] == \
            [(1, 1), (4, 1), (1, 2), (4, 2), (1, 3), (4, 3)], by_depth
        assert sorted((s["point"]["iodepth"], s["point"]["replicate"]) for s in skipped) == \
            [(1, 4), (1, 5), (4, 4), (4, 5)]
        for s in skipped:
            cv = replicate_spread(by_depth[s["point"]["iodepth"]]).cv
            assert cv is not None
            assert s["reason"] == f"IOPS CV {cv * 100:.1f} % < 3 % over 3 replicates (by replicate 3)"
        assert "skipped: IOPS CV" in resumed.stdout and meta(out)["status"] == "complete"
        again = resume(out, enter)
    assert "Nothing to resume" in again.stdout and "(4 skipped)" in again.stdout
    validate_dir(out)
