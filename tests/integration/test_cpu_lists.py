"""``cpus`` names CPUs this process may run on, and a CPU list with commas is written in quotes on the command line:
a CPU the machine lacks is refused before any directory is made (as a NUMA node it lacks is), and ``--set cpus=1,0``
(an axis of single CPUs, or one list?) is refused with both spellings.  Real fio, 1 s points."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from app.host.topology import allowed_cpus, cpu_list_text
from app.runners.memory import find_engine
from tests.conftest import run_cli

RUN = ["--set", "runtime=1", "--set", "size=4m"]
MISSING = max(allowed_cpus()) + 1 if max(allowed_cpus()) + 1 < 1024 else None


def one_line(proc: subprocess.CompletedProcess[str], *fragments: str) -> None:
    assert proc.returncode == 2, proc.stderr
    lines = [ln for ln in proc.stderr.splitlines() if ln.strip() and not ln.startswith("Intel MLC not found")]
    assert len(lines) == 1 and lines[0].startswith("profiler-tui:") and "Traceback" not in proc.stderr, proc.stderr
    for f in fragments:
        assert f in lines[0], (f, lines[0])


@pytest.mark.skipif(MISSING is None, reason="every CPU number is allowed here")
@pytest.mark.parametrize("preset", ["custom", "mem-idle"])
def test_a_cpu_this_process_may_not_use_is_refused_before_any_directory(tmp_path: Path, preset: str) -> None:
    if preset == "mem-idle" and find_engine()[0] is None:
        pytest.skip("the built-in memory engine is not built")
    out = tmp_path / "r"
    extra = RUN + ["--target", str(tmp_path / "t.bin")] if preset == "custom" else ["--set", "duration=1"]
    proc = run_cli("run", preset, "--set", f"cpus={MISSING}", *extra, "--out", str(out))
    one_line(proc, f"key 'cpus' has value {MISSING}", f"CPU {MISSING}", cpu_list_text(allowed_cpus()))
    assert not out.exists() and not (tmp_path / "t.bin").exists()


def test_an_unquoted_list_of_single_cpus_is_refused_with_both_spellings(tmp_path: Path) -> None:
    out = tmp_path / "r"
    proc = run_cli("run", "custom", "--set", "cpus=1,0", *RUN, "--target", str(tmp_path / "t.bin"), "--out", str(out))
    one_line(proc, "--set cpus=1,0", "axis of 2 points", """--set 'cpus="1,0"'""", """--set 'cpus="1","0"'""")
    assert not out.exists()


@pytest.mark.skipif(len(allowed_cpus()) < 2, reason="needs two CPUs")
def test_a_quoted_list_is_one_point_and_quoted_cpus_an_axis(tmp_path: Path) -> None:
    a, b = allowed_cpus()[:2]
    one = tmp_path / "one"
    run_cli("run", "custom", "--set", f'cpus="{b},{a}"', "--set", "numjobs=2", *RUN, "--target",
            str(tmp_path / "t.bin"), "--out", str(one), check=True)
    plan = json.loads((one / "run.json").read_text())["plan"]
    assert [p["cpus"] for p in plan] == [f"{b},{a}"]
    job = next((one / "raw").glob("*.fio")).read_text()
    assert f"cpus_allowed={b},{a}\n" in job
    axis = tmp_path / "axis"
    run_cli("run", "custom", "--set", f"cpus='{b}','{a}'", *RUN, "--target", str(tmp_path / "t.bin"),
            "--out", str(axis), check=True)
    assert [p["cpus"] for p in json.loads((axis / "run.json").read_text())["plan"]] == [str(b), str(a)]
    assert len((axis / "results.jsonl").read_text().splitlines()) == 2
    assert os.path.exists(tmp_path / "t.bin")
