"""Repeats with real fio: ``repeat = 3`` and ``repeat = "auto"`` interrupted by SIGINT and resumed end with exactly
the planned replicates, interleaved; ``auto`` stops a point on a steady target once its replicates agree."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any, Callable

import pytest

from app.model.points import Kind, point_from_dict
from app.plan.procedure import Procedure, run_order
from app.stats.uncertainty import replicate_spread
from tests.conftest import ROOT, fio_processes, interrupt_run, run_cli
from tests.helpers.loopdev import loop_device, needs_loop
from tests.helpers.schema_check import validate_dir
from tests.helpers.throttle import throttled


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
    recorded = meta(out)["procedure"]
    seed = recorded.pop("order_seed")  # drawn when the run was created: the shuffle within each replicate
    assert isinstance(seed, int) and 0 <= seed < 2 ** 32
    assert recorded == {"precondition": "none", "adaptive": False, "rounds": 1, "track": {},
                        "precondition_cap": 1800, "repeat": 3}
    plan = [point_from_dict(Kind.STORAGE, p) for p in meta(out)["plan"]]
    order = run_order(plan, Procedure(repeat=3, order_seed=seed))
    assert [r["index"] for r in kept] == order[:len(kept)] and len(kept) < 6
    assert {r["point"]["replicate"] for r in kept[:2]} == {1}
    resumed = run_cli("resume", str(out), check=True)
    assert f"{6 - len(kept)} of 6 points to run" in resumed.stdout
    final = lines(out)
    assert final[:len(kept)] == kept
    assert [r["index"] for r in final] == order  # the resumed run measured exactly what was missing, in its order
    assert sorted(replicates(final), key=lambda bs_k: (bs_k[1], bs_k[0])) == \
        [(4096, 1), (65536, 1), (4096, 2), (65536, 2), (4096, 3), (65536, 3)]
    assert [r["point"]["replicate"] for r in final] == [1, 1, 2, 2, 3, 3]  # interleaved
    assert meta(out)["status"] == "complete" and "skipped" not in meta(out)
    validate_dir(out)
    assert "Nothing to resume" in run_cli("resume", str(out), check=True).stdout


@pytest.mark.serial  # three replicates agreeing within 3 %: a loaded machine's noise can part them
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
        assert sorted(((r["point"]["iodepth"], r["point"]["replicate"]) for r in final), key=lambda d_k: d_k[::-1]) \
            == [(1, 1), (4, 1), (1, 2), (4, 2), (1, 3), (4, 3)], by_depth
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


def test_quick_at_its_defaults_measures_shuffled_replicates_and_states_their_interval(tmp_path: Path) -> None:
    """``quick`` without ``repeat``: 3 interleaved replicates of each point, shuffled within each replicate by a
    seed run.json records, and the report gives each point the replicates' interval (drift between runs in it).
    Two of quick's points, 1 s each on a 4 MiB file: only the time is cut, the procedure is quick's own."""
    out = tmp_path / "quick"
    run_cli("run", "quick", "--target", str(tmp_path / "q.bin"), "--out", str(out), "--yes", "--set", "runtime=1",
            "--set", "size=4m", "--set", "bs=4k", "--set", "iodepth=1", "--set", "rw=randread,randwrite",
            check=True, timeout=120)
    recorded = meta(out)["procedure"]
    assert recorded["repeat"] == 3 and isinstance(recorded["order_seed"], int)
    plan = [point_from_dict(Kind.STORAGE, p) for p in meta(out)["plan"]]
    assert [r["index"] for r in lines(out)] == run_order(plan, Procedure(repeat=3, order_seed=recorded["order_seed"]))
    report = run_cli("report", str(out), check=True)
    assert report.returncode == 0
    text = (out / "report.md").read_text()
    section = text.split("### Replicates: mean over the runs", 1)[1].split("\n#", 1)[0]
    rows = [ln.split("|") for ln in section.splitlines() if ln.startswith("| ") and "QD1" in ln]
    assert len(rows) == 2 and all(r[2].strip() == "3" and " ± " in r[3] for r in rows), section  # mean ± 95 %
