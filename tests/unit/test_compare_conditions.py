"""`compare` judges a difference only like for like: matched points measured under different conditions (runtime,
ramp, size, engine, direct, stop rule, fio or engine version, kernel, target kind) get "not judged: measured under
different conditions (…)" with each condition named, in the markdown, in ``--json`` and in the knee section; and a
verdict from within-run intervals alone says such an interval cannot see drift between runs. Hand-made results
directories carrying the review's case: a 3 s point without ramp against a 20 s precision-stopped one."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from app.cli.compare import compare_runs
from app.core.textable import markdown_cells
from tests.helpers.compare_util import make_run, metrics

KERNEL_A, KERNEL_B = "6.1.0-18-amd64", "6.18.44-fc-v445"


def _rows(md: str) -> list[dict[str, str]]:
    table = [markdown_cells(line) for line in md.splitlines()
             if line.startswith("|") and not re.match(r"^\|[-:| ]+\|$", line)]
    return [dict(zip(table[0], r)) for r in table[1:]]


def _with(path: Path, meta: dict[str, Any] | None = None, line: dict[str, Any] | None = None) -> Path:
    """A made run with run.json keys ``meta`` and every results line's keys ``line`` added."""
    if meta:
        doc = json.loads((path / "run.json").read_text())
        (path / "run.json").write_text(json.dumps({**doc, **meta}))
    if line:
        lines = [json.loads(x) for x in (path / "results.jsonl").read_text().splitlines()]
        (path / "results.jsonl").write_text("".join(json.dumps({**x, **line}) + "\n" for x in lines))
    return path


def _env(kernel: str) -> dict[str, Any]:
    return {"environment": {"system": {"os": "Debian", "kernel": kernel}},
            "target_info": {"type": "file", "path": "/srv/t", "filesystem": "ext4"}, "tools": {"fio": "fio-3.33"}}


def _review_pair(tmp_path: Path) -> tuple[Path, Path]:
    """A: 3 s, no ramp, fixed time, 62.9k IOPS [62.4k, 63.4k]; B: precision 2 % (cap 60 s, 2 s ramp) stopped after
    20 s, 58.4k IOPS [57.3k, 59.5k] — the intervals far apart, so the old code called it real."""
    a = make_run(tmp_path / "a", [{"point": {"runtime": 3, "ramp_time": 0},
                                   "metrics": metrics(62900, (62400, 63400))}])
    b = make_run(tmp_path / "b", [{"point": {"runtime": 60, "ramp_time": 2, "precision": "2%"},
                                   "metrics": metrics(58400, (57300, 59500))}])
    _with(a, _env(KERNEL_A), {"fio_version": "fio-3.33"})
    _with(b, _env(KERNEL_A), {"fio_version": "fio-3.33",
                              "precision": {"asked_pct": 2.0, "reached_pct": 1.9, "figure": "iops", "stop": "precise",
                                            "after_s": 20.0}})
    return a, b


def test_points_measured_differently_get_no_verdict_and_each_condition_is_named(tmp_path: Path) -> None:
    a, b = _review_pair(tmp_path)
    out: dict[str, Any] = {}
    md = compare_runs(str(a), str(b), out)
    iops = next(r for r in _rows(md) if r["Figure"] == "IOPS")
    assert iops["Noise"] == "not judged", iops
    assert iops["B − A (95 %)"].startswith("-4500 ±")  # shown as measured, without a verdict
    # the cell names two conditions and counts the rest (a 120-column terminal); the list under the table has all
    assert iops["How"] == "different runtime, ramp +1"
    assert not any(r["Noise"] in ("real", "within noise") for r in _rows(md))
    assert "**0 real**" in md and "not judged: measured under different conditions" in md
    for said in ("runtime A 3 s, B 60 s", "ramp A none, B 2 s", "stop rule A fixed time, B precision 2%"):
        assert said in md, said
    assert "fio version" not in md and "kernel" not in md  # what is alike is not named
    storage = out["storage"]
    assert storage["real"] == 0 and storage["within_noise"] == 0 and storage["not_judged_conditions"] == 3
    assert storage["not_judged"] == 3
    rec = next(r for r in storage["differences"] if r["figure"] == "IOPS")
    assert rec["verdict"] == "not judged" and rec["not_judged"].startswith("measured under different conditions (")
    assert {c["name"] for c in rec["conditions"]} == {"runtime", "ramp", "stop rule"}


def test_run_conditions_kernel_fio_target_kind_size_time_based_are_named(tmp_path: Path) -> None:
    a = make_run(tmp_path / "a", [{"metrics": metrics(1000, (990, 1010))}])
    # (an engine or direct that differs is part of the match instead: such points are listed as one run's only)
    b = make_run(tmp_path / "b", [{"point": {"size": 1 << 28, "time_based": False},
                                   "metrics": metrics(2000, (1990, 2010))}])
    _with(a, _env(KERNEL_A), {"fio_version": "fio-3.33"})
    _with(b, {**_env(KERNEL_B), "target_info": {"kind": "block", "type": "loop", "path": "/dev/loop3"}},
          {"fio_version": "fio-3.38"})
    md = compare_runs(str(a), str(b))
    assert {r["Noise"] for r in _rows(md) if r["Noise"]} == {"not judged"}
    for said in (f"kernel A {KERNEL_A}, B {KERNEL_B}", "fio version A fio-3.33, B fio-3.38",
                 "target kind A a file, B a block device (loop)", "size A 1 GiB, B 256 MiB",
                 "time-based A yes, B no"):
        assert said in md, said


def test_like_for_like_single_runs_are_judged_but_say_drift_is_unseen(tmp_path: Path) -> None:
    """Same conditions, each side measured once: judged from the two within-run intervals, and the summary says
    such an interval cannot see drift between runs; with replicates on both sides it does not."""
    a = make_run(tmp_path / "a", [{"metrics": metrics(1000, (990, 1010))}])
    b = make_run(tmp_path / "b", [{"metrics": metrics(1500, (1490, 1510))}])  # beyond 5 % drift between runs
    for run in (a, b):
        _with(run, _env(KERNEL_A), {"fio_version": "fio-3.33"})
    out: dict[str, Any] = {}
    md = compare_runs(str(a), str(b), out)
    assert next(r for r in _rows(md) if r["Figure"] == "IOPS")["Noise"] == "real"
    assert "different conditions" not in md
    assert "rests on within-run intervals alone" in md and "not drift between runs" in md
    assert out["storage"]["within_run_only"] == {"real": 1}


def test_a_knee_that_moved_between_differently_measured_curves_is_not_judged(tmp_path: Path) -> None:
    def curve(path: Path, iops: list[float], runtime: int) -> Path:
        return make_run(path, [{"point": {"iodepth": qd, "runtime": runtime},
                                "metrics": metrics(v, (v * .99, v * 1.01))} for qd, v in zip((1, 2, 4, 8, 16), iops)])
    a = curve(tmp_path / "a", [1000, 2000, 3900, 4000, 4050], 3)
    b = curve(tmp_path / "b", [1000, 1950, 2100, 4000, 4100], 30)
    md = compare_runs(str(a), str(b))
    knees = md.split("## Knees", 1)[1]
    assert "not judged: measured under different conditions (runtime A 3 s, B 30 s)" in knees
    assert "rates its knee" not in knees and "shape changed" not in knees


def test_memory_points_of_different_durations_are_not_judged(tmp_path: Path) -> None:
    point = {"mode": "idle", "stride": 64, "buffer": 1 << 28, "duration": 2}
    a = make_run(tmp_path / "a", [{"point": point, "metrics": {"latency_ns": 90.0, "ci95": {"latency_ns": [89, 91]}}}],
                 "memory")
    b = make_run(tmp_path / "b", [{"point": {**point, "duration": 10},
                                   "metrics": {"latency_ns": 80.0, "ci95": {"latency_ns": [79, 81]}}}], "memory")
    md = compare_runs(str(a), str(b))
    (row,) = [r for r in _rows(md) if r["Figure"] == "Latency ns"]
    assert row["Noise"] == "not judged" and "duration A 2 s, B 10 s" in md


def test_recorded_conditions_are_quoted_as_bounded_text(tmp_path: Path) -> None:
    """A kernel string, a point key and its value from untrusted files: no escape sequence, no markdown they could
    start, bounded."""
    a = make_run(tmp_path / "a", [{"metrics": metrics(1000, (990, 1010))}])
    b = make_run(tmp_path / "b", [{"metrics": metrics(2000, (1990, 2010))}])
    _with(a, _env(KERNEL_A))
    _with(b, _env("6.1\x1b[31m|red\n# head" + "x" * 500))
    lines = [json.loads(x) for x in (b / "results.jsonl").read_text().splitlines()]
    lines[0]["point"]["odd_\x1b]0;t\x07key"] = "v|\x1b[2J"
    (b / "results.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    _with(b, {"plan": [lines[0]["point"]]})
    out: dict[str, Any] = {}
    md = compare_runs(str(a), str(b), out)
    assert "\x1b" not in md and "\x07" not in md and "\n# head" not in md and "x" * 100 not in md
    assert "kernel A 6.1.0-18-amd64, B 6.1" in md.replace("\\", "")
    assert "\x1b" not in json.dumps(out, ensure_ascii=False)
