"""The memory runner: MLC command lines through a fake `mlc` on the real subprocess path, the engine choice,
validation, and the built-in engine on this machine (short runs).

Every test here sees fake /proc files for the CPU vendor, nr_hugepages and meminfo (the ``fake_proc``
fixture; GenuineIntel and 0 huge pages unless a test says otherwise), in process and in the CLI
subprocesses (``run_cli`` below points the memory module at them): no test changes the machine's real
huge-page reservation except test_hugepages.py's, which restore it."""

from __future__ import annotations

import asyncio
import json
import os
import re
import shlex
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from app.core.errors import ToolMissing, UsageError
from app.host import envinfo
from app.model.points import Point
from app.plan.presets import MLC_DELAYS
from app.runners import memory
from app.runners.base import Context, Result, Sample
from app.runners.memory import MemoryRunner, check_memory
from app.runners.mlc_parse import idle_latency, loaded_rows, parse_text
from app.stats.uncertainty import intervals_of
from tests.conftest import ROOT, mem_point
from tests.helpers.schema_check import validate_dir
from tests.helpers.typed import as_dict

MLC_DATA = Path(__file__).resolve().parents[1] / "data" / "mlc"
LOADED_SAMPLE = MLC_DATA / "v3.10-loaded-latency.txt"
IDLE_SAMPLE = MLC_DATA / "v3.7-idle-latency.txt"
ENGINE = memory.find_engine()[0]
MLC_NO_CI = {"method": "none", "reason": "Intel MLC prints one figure per row"}  # MLC prints no sub-windows
needs_engine = pytest.mark.skipif(ENGINE is None, reason="the built-in engine is not built (make setup)")

# A stand-in for Intel MLC: records its argv, then replays a real MLC output the way MLC prints it
# (the banner, its own command line, the table row by row), honouring -d (one row) and -W (no
# "Read-only" line).  FAKE_MLC_FAIL makes it fail like a broken MLC; FAKE_MLC_ROW_SLEEP paces rows.
FAKE_MLC = r'''#!{python}
import json, os, re, sys, time
args = sys.argv[1:]
with open(os.environ["FAKE_MLC_LOG"], "a") as log:
    log.write(json.dumps(args) + "\n")
with open(os.environ.get("FAKE_MLC_PIDS", os.devnull), "a") as pids:
    pids.write(f"{{os.getpid()}}\n")
if os.environ.get("FAKE_MLC_HUGEPAGES"):  # what nr_hugepages held while MLC ran
    with open(os.environ["FAKE_MLC_HUGEPAGES"]) as f, open(os.environ["FAKE_MLC_HUGEPAGES_LOG"], "a") as log:
        log.write(f.read().strip() + "\n")
fail = os.environ.get("FAKE_MLC_FAIL")
if fail and (fail == "all" or "-d" + fail in args):
    sys.stderr.write("Failed to allocate memory for the buffers\n")
    sys.exit(1)
idle = "--idle_latency" in args
sample = os.environ["FAKE_MLC_IDLE" if idle else "FAKE_MLC_LOADED"]
delay = next((int(a[2:]) for a in args if a.startswith("-d")), None)
writes = any(a.startswith("-W") for a in args)
pause = float(os.environ.get("FAKE_MLC_ROW_SLEEP", "0"))
in_table = False
for line in open(sample).read().splitlines(keepends=True):
    if line.startswith("Command line parameters:"):
        line = "Command line parameters: " + " ".join(args) + " \n"
    if writes and line.startswith("Using Read-only traffic type"):
        continue
    if line.startswith("====="):
        in_table = True
    m = re.match(r"\s*(\d+)\s", line)
    if in_table and m:
        if delay is not None and int(m.group(1)) != delay:
            continue
        time.sleep(pause)
    sys.stdout.write(line)
    sys.stdout.flush()
'''


# The CLI in a subprocess with the memory module's /proc paths pointed at the test's files.
BOOT = ("import json, sys\n"
        "import app.runners.memory as m\n"
        "for k, v in json.loads(sys.argv[1]).items(): setattr(m, k, v)\n"
        "from app.cli.commands import main\n"
        "main(sys.argv[2:])\n")
PROC: dict[str, str] = {}  # set by fake_proc for the running test


def cli_argv(*args: str, proc: dict[str, str] | None = None) -> list[str]:
    return [sys.executable, "-c", BOOT, json.dumps(PROC if proc is None else proc), *args]


def run_cli(*args: str, timeout: float = 300, env: dict[str, str] | None = None,
            proc: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    full = dict(os.environ, **(env or {}))
    return subprocess.run(cli_argv(*args, proc=proc), capture_output=True, text=True, timeout=timeout, cwd=ROOT,
                          env=full)


def write_cpuinfo(path: Path, vendor: str) -> None:
    path.write_text("".join(f"processor\t: {i}\nvendor_id\t: {vendor}\ncpu family\t: 25\n\n" for i in range(2)))


def fake_meminfo(free_pages: int = 0) -> str:
    """This machine's /proc/meminfo with its huge-page figures replaced (none reserved, none free)."""
    text = Path("/proc/meminfo").read_text()
    text = re.sub(r"^HugePages_(Total|Free):.*$", lambda m: f"HugePages_{m.group(1)}:   {free_pages}", text, flags=re.M)
    if "Hugepagesize:" not in text:
        text += "Hugepagesize:       2048 kB\n"
    return text


@pytest.fixture(autouse=True)
def fake_proc(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    d = tmp_path / "proc"
    d.mkdir()
    write_cpuinfo(d / "cpuinfo", "GenuineIntel")
    (d / "nr_hugepages").write_text("0\n")
    (d / "meminfo").write_text(fake_meminfo())
    paths = {"CPUINFO": str(d / "cpuinfo"), "NR_HUGEPAGES": str(d / "nr_hugepages"), "MEMINFO": str(d / "meminfo")}
    for k, v in paths.items():
        monkeypatch.setattr(memory, k, v)
    monkeypatch.setattr(sys.modules[__name__], "PROC", paths)
    return {"dir": d, "paths": paths, "cpuinfo": d / "cpuinfo", "nr": d / "nr_hugepages", "meminfo": d / "meminfo"}


@pytest.fixture
def fake_mlc(tmp_path: Path) -> dict[str, Any]:
    bindir = tmp_path / "bin"
    bindir.mkdir()
    exe = bindir / "mlc"
    exe.write_text(FAKE_MLC.format(python=sys.executable))
    exe.chmod(0o755)
    log = tmp_path / "argv.jsonl"
    env = {"PATH": f"{bindir}{os.pathsep}{os.environ.get('PATH', '')}", "FAKE_MLC_LOG": str(log),
           "FAKE_MLC_LOADED": str(LOADED_SAMPLE), "FAKE_MLC_IDLE": str(IDLE_SAMPLE),
           "FAKE_MLC_PIDS": str(tmp_path / "pids")}

    def argv() -> list[list[str]]:
        return [json.loads(ln) for ln in log.read_text().splitlines()] if log.exists() else []

    return {"bin": bindir, "exe": exe, "env": env, "argv": argv, "log": log, "pids": tmp_path / "pids"}


def records(out: Path) -> list[dict[str, Any]]:
    return [json.loads(ln) for ln in (out / "results.jsonl").read_text().splitlines()]


def sample_rows() -> dict[int, tuple[float | None, float]]:
    return {r.delay: (r.latency_ns, r.bandwidth_mbps) for r in loaded_rows(parse_text(LOADED_SAMPLE.read_text()))}


def mlc_flag(traffic: str) -> str:
    return "-R" if traffic == "R" else f"-W{traffic[1:]}"


# --- the command line built for each point of each memory preset -------------------------------

PRESET_CASES = {
    "mem-idle": [["--idle_latency", "-l64"]],
    "mem-loaded": [["--loaded_latency", "-R", "-l64", "-t1"]],
    "mem-seed-w": [["--loaded_latency", f"-W{w}", f"-l{stride}", "-t1"] for stride in (64, 256) for w in (6, 7, 8, 9)],
    "mem-seed-mix": [["--loaded_latency", mlc_flag(t), "-l64", f"-b{kib}", "-t1"]
                     for kib in (4, 64) for t in ("R", "W3", "W5", "W6")],
}


@pytest.mark.parametrize("preset", list(PRESET_CASES))
def test_fake_mlc_replays_each_memory_preset(preset: str, fake_mlc: dict[str, Any], tmp_path: Path) -> None:
    out = tmp_path / "out"
    proc = run_cli("run", preset, "--engine", "mlc", "--set", "duration=1", "--out", str(out), env=fake_mlc["env"])
    assert proc.returncode == 0, proc.stdout + proc.stderr
    calls = fake_mlc["argv"]()
    assert calls == PRESET_CASES[preset]  # one MLC process per curve: its 19 default delays, no -d
    recs = records(out)
    plan = json.loads((out / "run.json").read_text())["plan"]
    assert len(recs) == len(plan)
    rows = sample_rows()
    for rec in recs:
        assert rec["kind"] == "memory"
        p, m = rec["point"], rec["metrics"]
        assert p["engine"] == "mlc" and rec["engine"] == "mlc"
        assert {"traffic", "delay", "stride", "engine", "mode"} <= set(p)
        assert (out / rec["raw"]["txt"]).exists()
        if preset == "mem-idle":
            assert p["mode"] == "idle" and p["delay"] is None and p["traffic"] is None
            assert m == {"latency_ns": 80.9, "ci_method": MLC_NO_CI}  # the v3.7 sample's "( 80.9    ns)"
            assert rec["engine_version"] == "3.7"
            continue
        assert p["mode"] == "loaded" and p["stride"] in (64, 256) and rec["engine_version"] == "3.10"
        assert m == {"latency_ns": rows[p["delay"]][0], "bandwidth_mbps": rows[p["delay"]][1], "ci_method": MLC_NO_CI}
        cmd = shlex.split(rec["command"])
        assert os.path.basename(cmd[0]) == "mlc" and mlc_flag(p["traffic"]) in cmd and f"-l{p['stride']}" in cmd
        # the raw file of a point parses on its own and ends with that point's row
        raw_rows = loaded_rows(parse_text((out / rec["raw"]["txt"]).read_text()))
        assert raw_rows[-1].delay == p["delay"]
    if preset != "mem-idle":
        curves = {(r["point"]["traffic"], r["point"]["stride"], r["point"]["buffer"]) for r in recs}
        for curve in curves:
            assert sorted(r["point"]["delay"] for r in recs
                          if (r["point"]["traffic"], r["point"]["stride"], r["point"]["buffer"]) == curve) \
                == sorted(MLC_DELAYS)


def test_mlc_single_delays_cpus_buffer_and_rounded_duration(fake_mlc: dict[str, Any], tmp_path: Path) -> None:
    out = tmp_path / "out"
    proc = run_cli("run", "mem-loaded", "--engine", "mlc", "--set", "delay=0,500", "--set", "cpus=0-1",
                   "--set", "buffer=1m", "--set", "traffic=W7", "--set", "stride=128", "--set", "duration=1.5",
                   "--out", str(out), env=fake_mlc["env"])
    assert proc.returncode == 0, proc.stderr
    assert fake_mlc["argv"]() == [
        ["--loaded_latency", f"-d{d}", "-W7", "-l128", "-b1024", "-t2", "-c0", "-k1"] for d in (0, 500)]
    recs = records(out)
    assert [(r["point"]["delay"], r["point"]["traffic"], r["point"]["stride"]) for r in recs] == \
        [(0, "W7", 128), (500, "W7", 128)]
    assert [r["metrics"]["bandwidth_mbps"] for r in recs] == [sample_rows()[0][1], sample_rows()[500][1]]


def test_mlc_path_variable_and_idle_cpu(fake_mlc: dict[str, Any], tmp_path: Path) -> None:
    env = dict(fake_mlc["env"], PATH=os.environ.get("PATH", ""), MLC_PATH=str(fake_mlc["exe"]))
    out = tmp_path / "out"
    proc = run_cli("run", "mem-idle", "--engine", "mlc", "--set", "cpus=1", "--set", "buffer=512m",
                   "--out", str(out), env=env)
    assert proc.returncode == 0, proc.stderr
    assert fake_mlc["argv"]() == [["--idle_latency", "-l64", "-b524288", "-c1"]]
    tools = json.loads((out / "run.json").read_text())["tools"]
    assert tools["memory_engine"] == "mlc" and tools["memory_engine_path"] == str(fake_mlc["exe"])
    # MLC_PATH may also name the directory holding mlc
    env["MLC_PATH"] = str(fake_mlc["bin"])
    proc = run_cli("run", "mem-idle", "--engine", "mlc", "--out", str(tmp_path / "out2"), env=env)
    assert proc.returncode == 0, proc.stderr


def test_failed_mlc_point_carries_its_stderr_and_resume_runs_only_it(fake_mlc: dict[str, Any],
                                                                      tmp_path: Path) -> None:
    out = tmp_path / "out"
    env = dict(fake_mlc["env"], FAKE_MLC_FAIL="500")
    proc = run_cli("run", "mem-loaded", "--engine", "mlc", "--set", "delay=0,500,1300", "--set", "duration=1",
                   "--out", str(out), env=env)
    assert proc.returncode == 1
    assert "Failed to allocate memory for the buffers" in proc.stdout
    meta = json.loads((out / "run.json").read_text())
    assert meta["status"] == "partial"
    assert [f["point"]["delay"] for f in meta["failures"]] == [500]
    assert ("mlc exited with status 1 and printed no row for delay 500: Failed to allocate"
            in meta["failures"][0]["error"])
    assert [r["point"]["delay"] for r in records(out)] == [0, 1300]
    fake_mlc["log"].unlink()
    proc = run_cli("resume", str(out), env=fake_mlc["env"])
    assert proc.returncode == 0, proc.stderr
    assert fake_mlc["argv"]() == [["--loaded_latency", "-d500", "-R", "-l64", "-t1"]]
    assert sorted(r["point"]["delay"] for r in records(out)) == [0, 500, 1300]


def test_rows_stream_live_and_cancel_stops_mlc(fake_mlc: dict[str, Any], tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    for k, v in fake_mlc["env"].items():
        monkeypatch.setenv(k, v)
    monkeypatch.setenv("FAKE_MLC_ROW_SLEEP", "0.15")
    monkeypatch.delenv("MLC_PATH", raising=False)
    runner = MemoryRunner("mlc")
    items: list[tuple[int, Point]] = [(i, mem_point(delay=d)) for i, d in enumerate(MLC_DELAYS)]
    ctx = Context(target=None, raw_dir=tmp_path / "raw", engine="mlc")

    async def collect(limit: int | None) -> list[tuple[float, Any]]:
        events: list[tuple[float, Any]] = []
        t0 = time.monotonic()
        async for ev in runner.run(items, ctx):
            events.append((time.monotonic() - t0, ev))
            if limit is not None and sum(isinstance(e, Result) for _, e in events) >= limit:
                break
        return events

    events = asyncio.run(collect(None))
    results = [(t, e) for t, e in events if isinstance(e, Result)]
    assert [e.index for _, e in results] == list(range(19))
    assert all(e.error is None for _, e in results)
    # the first delay is reported long before the sweep ends (19 rows × 0.15 s)
    assert results[0][0] < results[-1][0] - 1.5
    assert isinstance(events[0][1], Sample) and isinstance(events[1][1], Result)  # each row: live figure, then point
    assert events[0][1].data == {"delay": 0, "latency_ns": 282.55, "bandwidth_mbps": 135345.6, "engine": "mlc"}

    # leaving the stream early (the consumer is cancelled) stops the process
    fake_mlc["pids"].unlink()

    async def cancel_midway() -> None:
        gen = runner.run(items, ctx)
        async for ev in gen:
            if isinstance(ev, Result):
                break
        await gen.aclose()  # runs the runner's finally

    asyncio.run(cancel_midway())
    pid = int(fake_mlc["pids"].read_text().split()[0])
    time.sleep(0.1)
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)


# --- finding the engine ------------------------------------------------------------------------


def _empty_path(tmp_path: Path) -> str:
    empty = tmp_path / "empty-bin"
    empty.mkdir(exist_ok=True)
    return str(empty)


@pytest.mark.skipif(os.path.exists(memory.MLC_DEFAULT_PATH), reason="/opt/mlc/mlc exists on this machine")
def test_engine_mlc_without_mlc_exits_4_with_how_to_provide_it(tmp_path: Path) -> None:
    env = {"PATH": _empty_path(tmp_path), "MLC_PATH": ""}
    out = tmp_path / "out"
    proc = run_cli("run", "mem-idle", "--engine", "mlc", "--out", str(out), env=env)
    assert proc.returncode == 4
    err = proc.stderr.strip()
    assert "Intel MLC was not found" in err and "PATH" in err and "MLC_PATH" in err and "/opt/mlc/mlc" in err
    assert "--engine builtin" in err and "Traceback" not in err
    assert not out.exists()
    # an MLC_PATH that is not an executable is named
    proc = run_cli("run", "mem-idle", "--engine", "mlc", "--out", str(out), env=dict(env, MLC_PATH=str(tmp_path)))
    assert proc.returncode == 4 and f"MLC_PATH={tmp_path} is not an executable file" in proc.stderr


@pytest.mark.skipif(os.path.exists(memory.MLC_DEFAULT_PATH), reason="/opt/mlc/mlc exists on this machine")
def test_neither_engine_is_tool_missing_with_a_hint(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", _empty_path(tmp_path))
    monkeypatch.delenv("MLC_PATH", raising=False)
    monkeypatch.delenv("PROFILER_TUI_MEMLAT", raising=False)
    monkeypatch.setattr(memory, "REPO_ENGINE", tmp_path / "no-such-memlat")
    with pytest.raises(ToolMissing, match="Neither Intel MLC nor the built-in memory engine.*make setup"):
        MemoryRunner("auto")
    with pytest.raises(ToolMissing, match="built-in memory engine was not found.*make setup"):
        MemoryRunner("builtin")
    monkeypatch.setenv("PROFILER_TUI_MEMLAT", str(tmp_path / "missing"))
    with pytest.raises(ToolMissing, match="PROFILER_TUI_MEMLAT=.*missing is not an executable file"):
        MemoryRunner("builtin")
    with pytest.raises(UsageError):
        MemoryRunner("fast")


@needs_engine
@pytest.mark.skipif(os.path.exists(memory.MLC_DEFAULT_PATH), reason="/opt/mlc/mlc exists on this machine")
def test_auto_falls_back_to_the_builtin_engine_and_says_so(tmp_path: Path) -> None:
    out = tmp_path / "out"
    proc = run_cli("run", "mem-idle", "--set", "duration=1", "--out", str(out),
                   env={"PATH": _empty_path(tmp_path), "MLC_PATH": ""})
    assert proc.returncode == 0, proc.stderr
    assert "Intel MLC not found: using the built-in memory engine" in proc.stderr
    (rec,) = records(out)
    assert rec["point"]["engine"] == "builtin" and rec["engine"] == "builtin"
    assert rec["point"]["mode"] == "idle" and {"latency_ns", "ci_method"} <= set(rec["metrics"]) <= \
        {"latency_ns", "ci95", "ci_method"}
    tools = json.loads((out / "run.json").read_text())["tools"]
    assert tools["memory_engine"] == "builtin" and tools["memlat"].startswith("profiler-tui memlat")
    assert "falls back" in tools["memory_engine_note"]


def test_auto_prefers_mlc_when_usable_and_explains_when_not(fake_mlc: dict[str, Any],
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", fake_mlc["env"]["PATH"])
    monkeypatch.delenv("MLC_PATH", raising=False)
    monkeypatch.setattr(memory, "mlc_unusable_reason", lambda: None)
    runner = MemoryRunner("auto")
    assert (runner.engine, runner.binary, runner.notice) == ("mlc", str(fake_mlc["exe"]), None)
    assert runner.tool_versions()["memory_engine"] == "mlc"
    if ENGINE is None:
        return
    reason = "MLC needs huge pages on AMD and /proc/sys/vm/nr_hugepages is 0"
    monkeypatch.setattr(memory, "mlc_unusable_reason", lambda: reason)
    runner = MemoryRunner("auto")
    assert runner.engine == "builtin" and reason in (runner.notice or "")
    assert MemoryRunner("mlc").engine == "mlc"  # forcing MLC is the user's call


# --- validation ----------------------------------------------------------------------------------


@pytest.mark.parametrize("setting, message", [
    ("delay=-1", "key 'delay' has invalid value '-1': must be at least 0"),
    ("stride=96", "key 'stride' has invalid value '96': must be a power of two"),
    ("buffer=100t", "key 'buffer' has invalid value '100t': must be at most 4 GiB"),
])
def test_bad_memory_settings_are_usage_errors(setting: str, message: str, tmp_path: Path) -> None:
    out = tmp_path / "out"
    proc = run_cli("run", "mem-loaded", "--set", setting, "--out", str(out))
    assert proc.returncode == 2, proc.stderr
    assert message in proc.stderr and "Traceback" not in proc.stderr
    assert not out.exists()  # refused before anything was created


def test_buffer_check_counts_threads_and_buffers() -> None:
    point = mem_point(traffic="W5", buffer=1 << 30, cpus="0-3")
    check_memory([point], available=9 << 30)  # 4 threads × 2 buffers × 1 GiB = 8 GiB fits
    with pytest.raises(UsageError, match=r"4 thread\(s\) × 2 buffer\(s\) of 1 GiB need 8.0 GiB, more than the 7.0 GiB"):
        check_memory([point], available=7 << 30)
    check_memory([replace(point, traffic="R")], available=5 << 30)  # reads only: one buffer per thread
    check_memory([replace(point, mode="idle", traffic=None)], available=2 << 30)  # one chase thread
    check_memory([replace(point, buffer=None)], available=1)  # the engine's default fits by construction


# --- the built-in engine, for real --------------------------------------------------------------


@pytest.fixture(scope="module")
def builtin_runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    if ENGINE is None:
        pytest.skip("the built-in engine is not built (make setup)")
    return _builtin_curve(tmp_path_factory.mktemp("builtin"))


def _builtin_curve(base: Path) -> dict[str, Any]:
    """mem-loaded at delays 0, 200 and 20000 and mem-idle, one after the other, with the built-in engine."""
    loaded, idle = base / "loaded", base / "idle"
    t0 = time.monotonic()
    p1 = run_cli("run", "mem-loaded", "--engine", "builtin", "--out", str(loaded), "--set", "duration=1",
                 "--set", "delay=0,200,20000")
    p2 = run_cli("run", "mem-idle", "--engine", "builtin", "--out", str(idle), "--set", "duration=1")
    return {"loaded": loaded, "idle": idle, "procs": (p1, p2), "seconds": time.monotonic() - t0}


@needs_engine
def test_builtin_mem_loaded_writes_spec_memory_lines(builtin_runs: dict[str, Any]) -> None:
    p1, p2 = builtin_runs["procs"]
    assert p1.returncode == 0, p1.stderr
    assert p2.returncode == 0, p2.stderr
    recs = records(builtin_runs["loaded"])
    assert [r["point"]["delay"] for r in recs] == [0, 200, 20000]
    for r in recs:
        assert r["kind"] == "memory"
        assert r["point"]["traffic"] == "R" and r["point"]["stride"] == 64 and r["point"]["engine"] == "builtin"
        assert r["point"]["mode"] == "loaded"
        m = r["metrics"]
        assert set(m) >= {"latency_ns", "bandwidth_mbps"}
        assert 20 < m["latency_ns"] < 2000  # DRAM, not cache and not a stall
        assert 0 < m["bandwidth_mbps"] < 1_000_000
        assert "--loaded_latency -D 0,200,20000 -R -l 64 -t 1" in r["command"]
        # both figures of every row get the interval of their 20 sub-windows (or say why not)
        assert set(m["ci_method"].get("series", {"latency_ns": 0, "bandwidth_mbps": 0})) == \
            {"latency_ns", "bandwidth_mbps"}, m
        raw = (builtin_runs["loaded"] / r["raw"]["txt"]).read_text()
        assert loaded_rows(parse_text(raw))[-1].delay == r["point"]["delay"]
    (idle,) = records(builtin_runs["idle"])
    assert idle["point"]["mode"] == "idle" and 20 < idle["metrics"]["latency_ns"] < 2000


@needs_engine
def test_builtin_idle_line_carries_the_interval_of_its_windows(tmp_path: Path) -> None:
    """A short idle point of the real engine: 20 sub-windows of 0.5 s give the 95 % interval of the mean latency.
    The windows' mean lies close to the line's own figure (the same work: the figure is CPU time over hops, the
    hop-weighted mean of the windows), and the interval holds that figure.  A 95 % interval of the mean after the
    warm-up misses a drifting figure now and then, and 20 windows often leave too few uncorrelated ones on a busy
    VM (measured: 1 run in 2 or 3 gets an interval since the floor takes the correlation's small-sample error): up
    to ten runs, one must hold its figure."""
    held = []
    for attempt in range(10):
        out = tmp_path / f"out{attempt}"
        proc = run_cli("run", "mem-idle", "--engine", "builtin", "--set", "duration=0.5", "--set", "buffer=64m",
                       "--out", str(out))
        assert proc.returncode == 0, proc.stderr
        (r,) = records(out)
        validate_dir(out)
        m, method = r["metrics"], r["metrics"]["ci_method"]
        windows = as_dict(parse_text((out / r["raw"]["txt"]).read_text())[-1].values["windows"])["latency_ns"]
        assert 15 <= len(windows) <= 20 and all(v > 0 for v in windows)
        mean = sum(windows) / len(windows)
        assert abs(mean / m["latency_ns"] - 1) < 0.1, (mean, m["latency_ns"], windows)
        if method["method"] == "none":  # the ways 20 windows can fall short, said in the line (on a busy machine
            # another tenant can step the latency mid-point: a level shift, with both levels, is no interval either)
            assert re.match(r"too few samples|batch means stay correlated|a level shift from sample",
                            method["reason"]), method
            continue
        assert method["method"] == "batch-means" and method["level"] == 0.95 and method["samples"] == len(windows)
        assert set(method["series"]) == {"latency_ns"}  # idle: no bandwidth
        low, high = m["ci95"]["latency_ns"]
        # the line's interval is the one its own windows give (its width is whatever their spread and correlation
        # make it: ±37 % was seen in CI with other tests loading both vCPUs)
        again = intervals_of({"latency_ns": list(windows)})
        assert again.ci95 is not None and 0 < high - low
        assert [low, high] == pytest.approx(list(again.ci95["latency_ns"]), rel=1e-9), (low, high, again.ci95)
        held.append((low, m["latency_ns"], high))
        # the line's figure is printed to 0.1 ns, the windows' interval is not: within half its last digit holds it
        if low - 0.05 <= m["latency_ns"] <= high + 0.05:
            return
    pytest.fail(f"no run's interval held its figure: {held}")


@needs_engine
def test_builtin_lines_record_the_measured_delay_unit_and_load_threads(builtin_runs: dict[str, Any]) -> None:
    """Every loaded line carries the engine's spin step in ns (calibrated at its start), its load thread count
    and the load threads' part of the bandwidth (the rest is the latency thread's 64 B per step); the step
    agrees, loosely, with what the load thread itself shows: one line access per (delay + its own work), so
    64 B / a load thread's bandwidth grows by about one step per delay unit."""
    recs = records(builtin_runs["loaded"])
    units = {r["delay_unit_ns"] for r in recs}
    assert len(units) == 1, units  # one process, one calibration
    (unit,) = units
    assert isinstance(unit, float) and 0.01 < unit < 100  # finite, positive, a plausible spin step
    threads = recs[0]["load_threads"]
    assert all(r["load_threads"] == threads >= 1 for r in recs)
    for r in recs:
        m = r["metrics"]
        assert 0 < m["load_bandwidth_mbps"] < m["bandwidth_mbps"], m  # the latency thread's share is the rest
    per_access = {r["point"]["delay"]: 64 / (r["metrics"]["load_bandwidth_mbps"] / threads) * 1e3
                  for r in recs}  # ns per line access of one load thread
    slope = (per_access[20000] - per_access[200]) / (20000 - 200)
    busy = [w for r in recs for w in r.get("warnings", []) if "busy machine" in w.lower()]
    if not busy:  # a preempted load thread stretches its wall-clock access time (seen: 1.10 against 0.271 ns)
        assert 0.3 * unit < slope < 3 * unit, (slope, unit)


@needs_engine
def test_builtin_curve_is_physical(builtin_runs: dict[str, Any]) -> None:
    """Bandwidth falls as the injection delay grows; with the load nearly idle the latency is the idle one."""
    recs = records(builtin_runs["loaded"])
    bw = [r["metrics"]["bandwidth_mbps"] for r in recs]
    assert bw[0] > bw[1] > bw[2], bw
    idle_ns = records(builtin_runs["idle"])[0]["metrics"]["latency_ns"]
    raw = (builtin_runs["idle"] / records(builtin_runs["idle"])[0]["raw"]["txt"]).read_text()
    assert idle_latency(parse_text(raw)) == idle_ns
    far = recs[-1]["metrics"]["latency_ns"]
    # two separate processes on a 2-vCPU KVM guest: their chases once differed by 22 % here (148 against
    # 190 ns), so a miss is measured again, twice at most, against the same bound
    seen = [(far, idle_ns)]
    for attempt in range(2):
        if abs(far - idle_ns) <= 0.15 * idle_ns:
            break
        again = _builtin_curve(builtin_runs["loaded"].parent / f"again{attempt}")
        far = records(again["loaded"])[-1]["metrics"]["latency_ns"]
        idle_ns = records(again["idle"])[0]["metrics"]["latency_ns"]
        seen.append((far, idle_ns))
    assert abs(far - idle_ns) <= 0.15 * idle_ns, seen


@needs_engine
def test_engine_rejection_fails_the_point_with_its_message(tmp_path: Path) -> None:
    # the engine refuses buffers under its minimum; the point fails with the engine's own sentence
    out = tmp_path / "out"
    proc = run_cli("run", "mem-loaded", "--engine", "builtin", "--set", "delay=0", "--set", "buffer=1k",
                   "--set", "duration=1", "--out", str(out))
    assert proc.returncode == 1
    meta = json.loads((out / "run.json").read_text())
    err = meta["failures"][0]["error"]
    assert err.startswith("memlat exited with status 2 and printed no row for delay 0: memlat: error:")
    assert "-b" in err


@needs_engine
def test_traffic_the_engine_does_not_know_fails_clearly(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PROFILER_TUI_MEMLAT", str(ENGINE))
    runner = MemoryRunner("builtin")
    point = mem_point(traffic="W13")

    async def go() -> list[Any]:
        return [ev async for ev in runner.run([(0, point)], Context(None, tmp_path, "builtin"))]

    (res,) = asyncio.run(go())
    assert isinstance(res, Result) and res.metrics is None
    assert "invalid traffic type -W '13'" in (res.error or "") and "valid codes are" in (res.error or "")


@needs_engine
def test_builtin_runs_seed_004s_4k_buffers(tmp_path: Path) -> None:
    """mem-seed-mix reproduces seed 004 (MLC -b4k and -b64k) with the built-in engine as well."""
    out = tmp_path / "mix"
    proc = run_cli("run", "mem-seed-mix", "--engine", "builtin", "--out", str(out), "--set", "traffic=R,W6",
                   "--set", "delay=0", "--set", "duration=1", timeout=120)
    assert proc.returncode == 0, proc.stderr
    lines = [json.loads(ln) for ln in (out / "results.jsonl").read_text().splitlines()]
    assert sorted((r["point"]["buffer"], r["point"]["traffic"]) for r in lines) == [
        (4096, "R"), (4096, "W6"), (65536, "R"), (65536, "W6")]
    for r in lines:
        assert r["point"]["engine"] == "builtin" and r["metrics"]["bandwidth_mbps"] > 0
        if r["point"]["buffer"] == 4096:  # a 4 KiB chase stays in the L1 cache: nanoseconds, not DRAM's ~100
            assert r["metrics"]["latency_ns"] < 20


# --- bounded memory on runaway output -----------------------------------------------------------

FLOOD_MLC = r'''#!{python}
import sys
w = sys.stdout.write
w("Intel(R) Memory Latency Checker - v3.11b\nCommand line parameters: " + " ".join(sys.argv[1:]) + "\n\n")
w("Measuring Loaded Latencies for the system\nUsing Read-only traffic type\n")
w("Inject\tLatency\tBandwidth\nDelay\t(ns)\tMB/sec\n==========================\n 00000\t282.55\t  135345.6\n")
junk = "Using all the threads from each core if Hyper-threading is enabled " + "x" * 333 + "\n"
for _ in range({lines}):  # MB of lines that are no rows
    w(junk)
w("y" * (10 << 20))  # and one 10 MiB line
w("\n 20000\t105.48\t    1148.7\n")
'''


def test_runaway_output_keeps_memory_and_raw_text_bounded(tmp_path: Path) -> None:
    """50 MB of output: the CLI stays small, each point's raw text is capped and still parses on its own."""
    bindir = tmp_path / "bin"
    bindir.mkdir()
    exe = bindir / "mlc"
    exe.write_text(FLOOD_MLC.format(python=sys.executable, lines=100_000))
    exe.chmod(0o755)
    out = tmp_path / "out"
    measure = ("import resource, subprocess, sys\n"
               "rc = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL).returncode\n"
               "print(rc, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)\n")
    proc = subprocess.run([sys.executable, "-c", measure,
                           *cli_argv("run", "mem-loaded", "--engine", "mlc", "--set", "delay=0,20000",
                                     "--set", "duration=1", "--out", str(out))],
                          capture_output=True, text=True, cwd=ROOT, timeout=300,
                          env=dict(os.environ, PATH=f"{bindir}{os.pathsep}{os.environ['PATH']}"))
    rc, max_rss_kib = map(int, proc.stdout.split())
    assert rc == 0, proc.stderr
    assert max_rss_kib < 120 * 1024, f"the CLI grew to {max_rss_kib // 1024} MiB"  # 30 MiB measured; 199 before
    recs = records(out)
    assert [r["point"]["delay"] for r in recs] == [0, 20000]
    assert recs[1]["metrics"] == {"latency_ns": 105.48, "bandwidth_mbps": 1148.7, "ci_method": MLC_NO_CI}
    raw = (out / recs[1]["raw"]["txt"]).read_text()
    assert len(raw) < memory.RAW_HEAD_CHARS + memory.RAW_TAIL_CHARS + 1000
    assert re.search(r"^\[profiler-tui: \d+ lines \(\d+ characters\) left out here", raw, re.M)
    assert [r.delay for r in loaded_rows(parse_text(raw))] == [0, 20000]


# --- the chase: tlb_locality and the chase record -------------------------------------------------

@needs_engine
def test_builtin_lines_record_the_whole_buffer_chase(builtin_runs: dict[str, Any]) -> None:
    for r in records(builtin_runs["loaded"]) + records(builtin_runs["idle"]):
        chase = r["chase"]
        assert chase["by"] == "builtin" and chase["mode"] == "whole_buffer" and chase["group_bytes"] is None
        assert chase["stride"] == 64 and chase["buffer_bytes"] == r["buffer_bytes"]
        assert chase["huge_pages"] is r["huge_pages"] and isinstance(chase["huge_pages"], bool)
        pages = "2 MiB pages" if chase["huge_pages"] else "4 KiB pages"
        assert chase["text"].startswith("random chase over ") and chase["text"].endswith(f", {pages}, stride 64 B")
        assert "--tlb_locality" not in r["command"]


@needs_engine
def test_tlb_locality_reaches_the_engine_and_its_chase_is_recorded(tmp_path: Path) -> None:
    out = tmp_path / "out"
    proc = run_cli("run", "mem-idle", "--engine", "builtin", "--set", "tlb_locality=256k", "--set", "stride=256",
                   "--set", "buffer=64m", "--set", "duration=1", "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    (r,) = records(out)
    assert r["point"]["tlb_locality"] == 262144
    assert r["command"].endswith("--tlb_locality 256")
    raw = (out / r["raw"]["txt"]).read_text()
    assert "random chase within 256 KiB groups" in raw
    chase = r["chase"]
    assert (chase["mode"], chase["group_bytes"], chase["stride"], chase["buffer_bytes"]) == \
        ("groups", 262144, 256, 64 << 20)
    assert chase["text"].startswith("random chase within 256 KiB groups, ") and chase["text"].endswith("stride 256 B")
    assert 20 < r["metrics"]["latency_ns"] < 2000


def test_tlb_locality_is_refused_for_mlc_in_one_sentence(fake_mlc: dict[str, Any], tmp_path: Path) -> None:
    out = tmp_path / "out"
    proc = run_cli("run", "mem-loaded", "--engine", "mlc", "--set", "tlb_locality=256k", "--set", "delay=0",
                   "--set", "duration=1", "--out", str(out), env=fake_mlc["env"])
    assert proc.returncode == 2, (proc.stdout, proc.stderr)
    assert "Traceback" not in proc.stderr
    assert ("tlb_locality=256 KiB: Intel MLC has no option to chase within groups (it chooses its own chase); "
            "use --engine builtin, or tlb_locality=none.") in proc.stderr
    assert not (out / "results.jsonl").exists() or not (out / "results.jsonl").read_text().strip()


# --- NUMA: mem_node binds the buffers and the engine verifies every page -----------------------------

@needs_engine
def test_mem_node_0_places_every_page_there_and_the_line_records_it(tmp_path: Path) -> None:
    """Node 0 exists on every NUMA kernel: the engine binds the buffers (mbind) and reads each page's node back
    (move_pages); the line's numa part is what it verified, and the chase sentence says so."""
    if envinfo.node_ids() is None:
        pytest.skip("this kernel reports no NUMA nodes")
    out = tmp_path / "out"
    proc = run_cli("run", "mem-idle", "--engine", "builtin", "--set", "mem_node=0", "--set", "buffer=64m",
                   "--set", "duration=1", "--set", "cpus=0", "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    (r,) = records(out)
    assert r["point"]["mem_node"] == 0 and r["command"].endswith("-k 0 --mem_node 0")
    numa = r["numa"]
    assert numa == {"node": 0, "pages": {"0": (64 << 20) // numa["page_bytes"]}, "page_bytes": numa["page_bytes"],
                    "verified_with": "move_pages"}
    assert r["chase"]["text"].endswith(", memory on NUMA node 0 (every page verified)")
    assert "Using memory on NUMA node 0: pages N0=" in (out / r["raw"]["txt"]).read_text()
    validate_dir(out)


@needs_engine
def test_a_node_this_machine_lacks_is_refused_before_the_run(tmp_path: Path) -> None:
    nodes = envinfo.node_ids()
    out = tmp_path / "out"
    proc = run_cli("run", "mem-idle", "--engine", "builtin", "--set", "mem_node=1000", "--set", "duration=1",
                   "--out", str(out))
    assert proc.returncode == 2, (proc.stdout, proc.stderr)
    assert "Traceback" not in proc.stderr
    lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
    if nodes is None:
        assert lines[-1].startswith("profiler-tui: mem_node=1000: this machine reports no NUMA nodes")
    else:
        assert lines[-1] == (f"profiler-tui: mem_node=1000: this machine has no NUMA node 1000 (its nodes: "
                             f"{', '.join(map(str, nodes))}).")
    assert not (out / "results.jsonl").exists() or not (out / "results.jsonl").read_text().strip()


@needs_engine
def test_cpu_node_runs_the_threads_on_that_nodes_cpus(tmp_path: Path) -> None:
    numa = envinfo.numa_info()
    if not numa["nodes"] or not numa["nodes"][0]["cpus"]:
        pytest.skip("this kernel reports no NUMA node 0 with CPUs")
    out = tmp_path / "out"
    proc = run_cli("run", "mem-idle", "--engine", "builtin", "--set", "cpu_node=0", "--set", "buffer=16m",
                   "--set", "duration=1", "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    (r,) = records(out)
    assert r["point"]["cpu_node"] == 0 and "cpus" in r["point"] and r["point"]["cpus"] is None  # as planned
    assert r["command"].endswith(f"-k {numa['nodes'][0]['cpus']}")
    proc = run_cli("run", "mem-idle", "--engine", "builtin", "--set", "cpu_node=0", "--set", "cpus=0",
                   "--out", str(tmp_path / "both"))
    assert proc.returncode == 2 and "cpu_node=0 and cpus=0 both choose the CPUs; set one of them." in proc.stderr


def test_mem_node_is_refused_for_mlc_in_one_sentence(fake_mlc: dict[str, Any], tmp_path: Path) -> None:
    proc = run_cli("run", "mem-idle", "--engine", "mlc", "--set", "mem_node=0", "--out", str(tmp_path / "out"),
                   env=fake_mlc["env"])
    assert proc.returncode == 2, (proc.stdout, proc.stderr)
    assert ("mem_node=0: Intel MLC has no option to place its buffers on a node and verify them; use --engine "
            "builtin, or mem_node=none.") in proc.stderr


def test_mlc_lines_say_the_chase_is_mlcs(fake_mlc: dict[str, Any], tmp_path: Path) -> None:
    out = tmp_path / "out"
    proc = run_cli("run", "mem-loaded", "--engine", "mlc", "--set", "delay=0", "--set", "duration=1",
                   "--out", str(out), env=fake_mlc["env"])
    assert proc.returncode == 0, proc.stderr
    (r,) = records(out)
    assert r["chase"]["by"] == "mlc" and r["chase"]["text"].startswith("chase as chosen by Intel MLC, stride 64 B")


def test_each_loaded_line_carries_its_own_warnings_not_every_rows(fake_mlc: dict[str, Any], tmp_path: Path) -> None:
    """The engine prints "*** Busy machine at delay N …" just before row N: that row's results line carries it, and
    no other row's (the lines used to carry every warning printed so far, so the last row had all of them); a
    warning before the table is about every row."""
    text = LOADED_SAMPLE.read_text()
    text = text.replace("Measuring Loaded", "*** Unable to enable huge pages\nMeasuring Loaded")
    busy = {700: 23, 200: 60}
    for delay, share in busy.items():
        text = text.replace(f" {delay:05d}\t", f"*** Busy machine at delay {delay}: a thread got {share}% of a CPU in "
                                               f"its window\n {delay:05d}\t")
    sample = tmp_path / "busy.txt"
    sample.write_text(text)
    out = tmp_path / "out"
    proc = run_cli("run", "mem-loaded", "--engine", "mlc", "--set", "duration=1", "--out", str(out),
                   env=dict(fake_mlc["env"], FAKE_MLC_LOADED=str(sample)))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    got = {r["point"]["delay"]: r.get("warnings", []) for r in records(out)}
    for delay, warnings in got.items():
        own = ([f"Busy machine at delay {delay}: a thread got {busy[delay]}% of a CPU in its window"]
               if delay in busy else [])
        assert warnings == ["Unable to enable huge pages", *own], (delay, warnings)


@needs_engine
def test_builtin_default_chase_buffer_is_at_least_four_last_level_caches(builtin_runs: dict[str, Any]) -> None:
    """No step of a default "memory latency" chase lands in the last-level cache more than a quarter of the time:
    the buffer is at least 4x the LLC and 256 MiB (MLC's own guidance: at least 100 MiB per thread), at most 4 GiB."""
    from app.host.topology import read

    llc = read().llc_bytes or 0
    for rec in records(builtin_runs["idle"]) + records(builtin_runs["loaded"]):
        buf = rec["chase"]["buffer_bytes"]
        want = min(max(4 * llc, 256 << 20), 4 << 30)
        assert buf >= want or any("Default buffer reduced" in w for w in rec.get("warnings", [])), (buf, llc)
