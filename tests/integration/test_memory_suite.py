"""The memory suite end to end: the built-in engine on this machine (working set, peak, scaling, c2c on two
CPUs, 1x1 matrices: short windows) through `profiler-tui run … --yes`, every line checked against the schema;
and Intel MLC's command lines for the same presets through a fake `mlc` that prints MLC's own sections, on a
faked two-node sysfs."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import os
import re
import shlex
import sys
from pathlib import Path
from typing import Any

import pytest

from app.model.points import Point
from app.model.records import MemoryMetrics
from app.plan import presets
from app.runners.base import Context, Result, Sample
from app.runners.memory import MemoryRunner
from tests.helpers.schema_check import validate_dir
from tests.helpers.typed import memory_point
from tests.integration.test_memory_runner import fake_proc, needs_engine, records
from tests.integration.test_memory_runner import run_cli as run_memory_cli

__all__ = ["fake_proc"]  # autouse: the CLI sees fake /proc huge-page files (no real reservation on AMD)

MLC_DEFAULT_RUN = Path(__file__).resolve().parents[1] / "data" / "mlc" / "v3.10-default-run-2socket-skylake.txt"


SUITE = """name = "suite-smoke"
kind = "memory"
[settings]
duration = 0.1
buffer = "8m"
[[group]]
mode = "working_set"
pages = ["2m", "4k"]
buffer = ["4k", "64k", "8m"]
duration = 0.05
[[group]]
mode = "peak"
traffic = ["R", "W3", "W2", "W5", "W10"]
[[group]]
mode = "scaling"
threads = "each"
[[group]]
mode = "c2c"
c2c = ["hit", "hitm"]
cpus = "0,1"
[[group]]
mode = ["latency_matrix", "bandwidth_matrix"]
cpu_node = "each"
mem_node = "each"
"""


@needs_engine
@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2 or not {0, 1} <= os.sched_getaffinity(0),
                    reason="c2c needs CPUs 0 and 1")
def test_builtin_engine_measures_every_suite_mode(tmp_path: Path) -> None:
    preset = tmp_path / "suite.toml"
    preset.write_text(SUITE)
    out = tmp_path / "out"
    proc = run_memory_cli("run", str(preset), "--engine", "builtin", "--yes", "--out", str(out), timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "one NUMA node" in proc.stderr or len(os.listdir("/sys/devices/system/node")) > 3
    validate_dir(out)
    recs = records(out)
    by_mode: dict[str, list[dict[str, Any]]] = {}
    for rec in recs:
        by_mode.setdefault(rec["point"]["mode"], []).append(rec)
        assert rec["engine"] == "builtin" and (out / rec["raw"]["txt"]).exists()
    # one engine process per batch: 2 working-set curves (page sizes), peak, scaling, c2c, 2 matrices
    assert len({r["command"] for r in recs}) == 7
    ws = by_mode["working_set"]
    assert [(r["point"]["buffer"], r["point"].get("pages")) for r in ws] == [
        (b, p) for p in (None, "4k") for b in (4096, 65536, 8 << 20)]
    assert all(r["caches"] and r["chase"]["buffer_bytes"] == r["point"]["buffer"] for r in ws)
    lat = {(r["point"]["buffer"], r["point"].get("pages")): r["metrics"]["latency_ns"] for r in ws}
    assert lat[(4096, None)] < lat[(8 << 20, None)]  # L1 is faster than a buffer 8x L2 (loose: no timing bound)
    assert [r["point"]["traffic"] for r in by_mode["peak"]] == ["R", "W3", "W2", "W5", "W10"]
    assert all(r["metrics"]["bandwidth_mbps"] > 0 and "read_mbps" in r["metrics"] for r in by_mode["peak"])
    assert [r["point"]["threads"] for r in by_mode["scaling"]] == list(range(1, len(os.sched_getaffinity(0)) + 1))
    assert [r["load_threads"] for r in by_mode["scaling"]] == [r["point"]["threads"] for r in by_mode["scaling"]]
    assert all(r["load_threads"] == len(os.sched_getaffinity(0)) for r in by_mode["peak"])
    # a chase only where the figure is the latency thread's chase
    assert all(("chase" in r) == (mode in ("working_set", "latency_matrix"))
               for mode, rs in by_mode.items() for r in rs)
    c2c = by_mode["c2c"]
    assert sorted(r["point"]["c2c"] for r in c2c) == ["hit", "hitm"] and all(r["c2c_cpus"] == [0, 1] for r in c2c)
    for mode in ("latency_matrix", "bandwidth_matrix"):
        for r in by_mode[mode]:
            numa = r["numa"]
            assert numa["node"] == r["point"]["mem_node"] and numa["verified_with"] == "numa_maps"
            assert sum(numa["pages"].values()) == numa["pages"][str(numa["node"])] > 0


# --- Intel MLC's command lines (a fake mlc printing MLC's sections) ---------------------------------

FAKE_MLC = r'''#!{python}
import json, os, sys
args = sys.argv[1:]
with open(os.environ["FAKE_MLC_LOG"], "a") as log:
    log.write(json.dumps(args) + "\n")
blocks = open(os.environ["FAKE_MLC_RUN"]).read().split("\n\n")
print(blocks[0].splitlines()[0])  # the banner
print("Command line parameters: " + " ".join(args))
if "--idle_latency" in args:
    kib = next(int(a[2:]) for a in args if a.startswith("-b"))
    print(f"Each iteration took 200.0 base frequency clocks (\t{{80 + kib / 1000:.1f}}\tns)")
    sys.exit(0)
titles = {{"--latency_matrix": "Measuring idle", "--peak_injection_bandwidth": "Measuring Peak",
          "--bandwidth_matrix": "Measuring Memory Bandwidths", "--loaded_latency": "Measuring Loaded",
          "--c2c_latency": "Measuring cache-to-cache"}}
title = next(t for flag, t in titles.items() if flag in args)
block = next(b for b in blocks if title in b)
print(block[block.index(title):])
'''


def fake_sysfs(root: Path) -> Path:
    """Two NUMA nodes: CPU 0 and its memory on node 0, CPU 1 and its memory on node 1."""
    for n in (0, 1):
        d = root / "devices" / "system" / "node" / f"node{n}"
        d.mkdir(parents=True)
        (d / "cpulist").write_text(f"{n}\n")
        (d / "meminfo").write_text(f"Node {n} MemTotal:       393216 kB\n")
    return root


def fake_mlc_suite(tmp_path: Path) -> tuple[dict[str, str], Path]:
    """The environment that puts the fake `mlc` first on PATH, and the file it logs its argv to."""
    bindir = tmp_path / "bin"
    bindir.mkdir()
    (bindir / "mlc").write_text(FAKE_MLC.format(python=sys.executable))
    (bindir / "mlc").chmod(0o755)
    log = tmp_path / "argv.jsonl"
    return {"PATH": f"{bindir}{os.pathsep}{os.environ['PATH']}", "FAKE_MLC_LOG": str(log),
            "FAKE_MLC_RUN": str(MLC_DEFAULT_RUN)}, log


def argvs(log: Path) -> list[list[str]]:
    return [json.loads(ln) for ln in log.read_text().splitlines()]


@pytest.mark.skipif(not {0, 1} <= os.sched_getaffinity(0), reason="the faked nodes hold CPUs 0 and 1")
def test_mlc_runs_its_own_modes_for_the_suite_presets(tmp_path: Path) -> None:
    env, log = fake_mlc_suite(tmp_path)
    env["PROFILER_TUI_SYSFS"] = str(fake_sysfs(tmp_path / "sys"))
    out = tmp_path / "out"
    proc = run_memory_cli("run", "mem-mlc-default", "--engine", "mlc", "--set", "duration=1", "--out", str(out),
                          env=env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert argvs(log) == [
        ["--latency_matrix", "-l64"], ["--peak_injection_bandwidth", "-t1"], ["--bandwidth_matrix", "-t1"],
        ["--loaded_latency", "-R", "-l64", "-t1"], ["--c2c_latency"]]
    validate_dir(out)
    recs = records(out)
    figures = {(r["point"]["mode"], r["point"].get("traffic"), r["point"].get("cpu_node"), r["point"].get("mem_node"),
                r["point"].get("reader_node"), r["point"].get("home"), r["point"].get("c2c"), r["point"]["delay"]):
               r["metrics"].get("latency_ns", r["metrics"].get("bandwidth_mbps")) for r in recs}
    assert len(recs) == 4 + 5 + 4 + 19 + 2 + 4 == len(figures)
    text = MLC_DEFAULT_RUN.read_text()
    for value in figures.values():  # every figure is a number of MLC's text, unchanged
        assert re.search(rf"(?<![\d.]){re.escape(f'{value:.1f}')}", text) or f"{value:.2f}" in text, value
    assert figures[("latency_matrix", None, 1, 0, None, None, None, None)] == 143.2
    assert figures[("bandwidth_matrix", "R", 0, 1, None, None, None, None)] == 34290.6
    assert figures[("peak", "W10", None, None, None, None, None, None)] == 172770.4
    assert figures[("c2c", None, None, None, None, None, "hit", None)] == 50.5
    assert figures[("c2c", None, 1, None, 0, "reader", "hitm", None)] == 123.2
    commands = {shlex.split(r["command"])[1] for r in recs}
    assert commands == {"--latency_matrix", "--peak_injection_bandwidth", "--bandwidth_matrix", "--loaded_latency",
                        "--c2c_latency"}


@pytest.mark.skipif(not {0, 1} <= os.sched_getaffinity(0), reason="needs CPUs 0 and 1")
def test_mlc_scaling_and_working_set_command_lines(tmp_path: Path) -> None:
    env, log = fake_mlc_suite(tmp_path)
    out = tmp_path / "out"
    proc = run_memory_cli("run", "mem-bandwidth", "--engine", "mlc", "--set", "cpus=0-1", "--out", str(out),
                          env=env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert argvs(log) == [["--peak_injection_bandwidth", "-t2", "-k0-1"], ["--peak_injection_bandwidth", "-t2", "-k0"],
                     ["--peak_injection_bandwidth", "-t2", "-k0-1"]]
    scaling = [r for r in records(out) if r["point"]["mode"] == "scaling"]
    assert [r["metrics"]["bandwidth_mbps"] for r in scaling] == [211194.2, 211194.2]  # the ALL Reads row
    log.unlink()
    proc = run_memory_cli("run", "mem-working-set", "--engine", "mlc", "--set", "buffer=4k,1m", "--set", "pages=2m",
                          "--out", str(tmp_path / "ws"), env=env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert argvs(log) == [["--idle_latency", "-l64", "-b4"],
                                                                       ["--idle_latency", "-l64", "-b1024"]]
    assert [r["metrics"]["latency_ns"] for r in records(tmp_path / "ws")] == [80.0, 81.0]
    refused = run_memory_cli("run", "mem-working-set", "--engine", "mlc", "--out", str(tmp_path / "no"), env=env)
    assert refused.returncode == 2 and "pages=4k: Intel MLC has no option" in refused.stderr


@needs_engine
def test_resume_checks_a_suite_plan_again(tmp_path: Path) -> None:
    out = tmp_path / "out"
    proc = run_memory_cli("run", "mem-matrix", "--engine", "builtin", "--set", "duration=0.05", "--set", "buffer=1m",
                          "--yes", "--out", str(out), timeout=60)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    (out / "results.jsonl").write_text("")  # nothing measured yet: resume runs the whole plan
    meta = json.loads((out / "run.json").read_text())
    for change, needle in ((lambda p: p.update(cpu_node=7), "cpu_node=7: this machine has no NUMA node 7"),
                           (lambda p: p.update(cpu_node="each"), "plan[0] key 'cpu_node' has invalid value 'each'"),
                           (lambda p: p.pop("mem_node"), "mode=latency_matrix needs cpu_node and mem_node")):
        edited = json.loads(json.dumps(meta))
        change(edited["plan"][0])
        (out / "run.json").write_text(json.dumps(edited))
        refused = run_memory_cli("resume", str(out), "--yes", timeout=60)
        assert refused.returncode == 2 and needle in refused.stderr, refused.stderr
        assert "Traceback" not in refused.stderr


@needs_engine
def test_each_figure_streams_as_a_sample_then_its_result_and_a_missing_one_fails(tmp_path: Path) -> None:
    """A working-set batch in one process: each size's Sample (mode, buffer, pages, latency) comes before its
    Result; a point whose figure the engine never prints (a c2c pair on one CPU: the engine refuses) fails with
    the engine's own error."""
    preset = presets.apply_overrides(presets.load("mem-working-set"), ["buffer=4k,16k", "pages=4k",
                                                                        "duration=0.05"])
    items: list[tuple[int, Point]] = list(enumerate(preset.expand()))
    runner = MemoryRunner("builtin")

    async def go(items: list[tuple[int, Point]]) -> list[Any]:
        return [ev async for ev in runner.run(items, Context(None, tmp_path, "builtin"))]

    events = asyncio.run(go(items))
    assert [type(e).__name__ for e in events] == ["Sample", "Result", "Sample", "Result"]
    assert [e.data for e in events if isinstance(e, Sample)] == [
        {"mode": "working_set", "engine": "builtin", "latency_ns": m.latency_ns, "buffer_bytes": b, "pages": "4k"}
        for m, b in zip([e.metrics for e in events if isinstance(e, Result) and isinstance(e.metrics, MemoryMetrics)],
                        (4096, 16384))]
    c2c = dataclasses.replace(memory_point(items[0][1]), mode="c2c", buffer=None, pages=None, cpus="0", c2c="hit")
    (failed,) = asyncio.run(go([(0, c2c)]))
    assert isinstance(failed, Result) and failed.metrics is None
    assert "printed no c2c figure for hit" in (failed.error or "") and "memlat: error" in (failed.error or "")
