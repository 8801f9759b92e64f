"""app.runs: the summaries of a results root, for the runs browser — hostile run.json files never raise,
a run is 'running' only while a process holds its lock, and every directory is listed once."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from app.lock import DirLock
from app.runs import RunSummary, list_runs, results_roots, summarise

PLAN = [{"rw": "randread", "bs": 4096, "iodepth": 1 << k} for k in range(8)]


def line(index: int, point: dict[str, Any] | None = None) -> str:
    return json.dumps({"kind": "storage", "index": index, "point": point or PLAN[index], "metrics": {}}) + "\n"


def make(root: Path, name: str, meta: Any, lines: int = 0) -> Path:
    d = root / name
    d.mkdir(parents=True)
    (d / "run.json").write_text(meta if isinstance(meta, str) else json.dumps(meta))
    if lines:
        (d / "results.jsonl").write_text("".join(line(i) for i in range(lines)) + '{"torn')
    return d


def meta(**changes: Any) -> dict[str, Any]:
    base = {"preset": {"name": "quick", "kind": "storage"}, "kind": "storage", "target": "/srv/t.img",
            "plan": PLAN, "points_total": 8, "points_done": 8, "status": "complete",
            "started": "2026-11-20T10:00:00+00:00"}
    return {**base, **changes}


def test_a_line_whose_index_and_point_disagree_with_the_plan_is_not_counted(tmp_path: Path) -> None:
    """Index 0 with plan[1]'s point measures neither: the runs browser counts what resume and the report count
    (garbage lines and a torn last line are none either)."""
    d = make(tmp_path, "r", meta(status="interrupted", points_done=None))
    (d / "results.jsonl").write_text(line(0, PLAN[1]) + "{}\n" + line(2) + line(9, PLAN[1]))
    assert summarise(d).done == 1


def test_summaries_newest_first_with_counts_and_statuses(tmp_path: Path) -> None:
    make(tmp_path, "a", meta())
    make(tmp_path, "b", meta(status="running", points_done=0, started="2026-11-21T10:00:00+00:00"), lines=3)
    held = make(tmp_path, "c", meta(status="running", points_done=0, started="2026-11-22T10:00:00+00:00"), lines=1)
    make(tmp_path, "d", meta(kind="memory", target=None, status="partial", points_done=None,
                             started="2026-11-19T10:00:00+00:00"), lines=5)
    (tmp_path / "no-run-here").mkdir()
    lock = DirLock(held).acquire()
    try:
        runs = list_runs([tmp_path])
    finally:
        lock.release()
    assert [r.path.name for r in runs] == ["c", "b", "a", "d"]
    by = {r.path.name: r for r in runs}
    assert by["c"].status == "running" and by["c"].done == 1 and not by["c"].resumable
    assert by["b"].status == "interrupted" and by["b"].done == 3 and by["b"].resumable, "no holder: interrupted"
    assert by["a"] == RunSummary(tmp_path / "a", "quick", "storage", "/srv/t.img", "2026-11-20T10:00:00+00:00", 8, 8,
                                 "complete")
    assert by["d"].target == "memory" and by["d"].done == 5 and by["d"].resumable
    assert by["a"].matches("QUICK srv") and not by["a"].matches("quick nope")


def test_hostile_run_json_is_listed_as_unreadable_never_raised(tmp_path: Path) -> None:
    make(tmp_path, "notjson", "{ nope")
    make(tmp_path, "list", "[1, 2]")
    make(tmp_path, "deep", "[" * 100000)
    (tmp_path / "fifo").mkdir()
    os.mkfifo(tmp_path / "fifo" / "run.json")
    (tmp_path / "link").mkdir()
    os.symlink("/etc/hostname", tmp_path / "link" / "run.json")
    make(tmp_path, "types", {"preset": "x", "kind": 7, "target": ["a"], "plan": "p", "points_total": -1,
                             "points_done": True, "status": {"a": 1}, "started": 12})
    runs = {r.path.name: r for r in list_runs([tmp_path])}
    assert {n: r.status for n, r in runs.items()} == dict.fromkeys(
        ["notjson", "list", "deep", "fifo", "link", "types"], "unreadable")
    assert runs["fifo"].problem == "run.json is not a regular file"
    assert runs["list"].problem == f"{tmp_path / 'list' / 'run.json'}: expected a JSON object."
    # run.json is read as report and resume read it: the first ill-typed key is named, with its value
    assert runs["types"].problem == (f"{tmp_path / 'types' / 'run.json'}: key 'preset' has invalid value 'x': "
                                     "must be an object.")
    assert runs["types"].preset == "types" and runs["types"].planned == 0


def test_a_directory_reached_from_two_roots_is_listed_once(tmp_path: Path) -> None:
    make(tmp_path / "r", "a", meta())
    os.symlink(tmp_path / "r", tmp_path / "alias")
    assert len(list_runs([tmp_path / "r", tmp_path / "alias", tmp_path / "missing"])) == 1


def test_roots_are_the_configured_one_and_the_containers(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("PROFILER_TUI_RESULTS", str(tmp_path / "env"))
    assert results_roots()[0] == tmp_path / "env"
    assert results_roots(tmp_path / "given")[0] == tmp_path / "given"


JSONISH = st.recursive(st.none() | st.booleans() | st.integers(-2**70, 2**70) | st.floats() | st.text(max_size=12),
                       lambda kids: st.lists(kids, max_size=4) | st.dictionaries(st.text(max_size=8), kids, max_size=4),
                       max_leaves=20)


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(st.sampled_from(["preset", "kind", "target", "plan", "points_total", "points_done", "status",
                                        "started", "imported_at"]), JSONISH, max_size=9))
def test_any_run_json_gives_a_summary(tmp_path_factory, doc: dict[str, Any]) -> None:
    d = tmp_path_factory.mktemp("h")
    (d / "run.json").write_text(json.dumps(doc, allow_nan=True))
    r = summarise(d)
    assert isinstance(r.preset, str) and isinstance(r.status, str) and r.done >= 0 and r.planned >= 0
    assert len(r.target) <= 400 and len(r.status) <= 16


def test_a_fleet_run_is_listed_with_its_hosts_and_host_points(tmp_path: Path) -> None:
    hosts = [{"host": f"tcp://127.0.0.1:{p}", "target": "/dev/loop1"} for p in (1, 2, 3)]
    d = make(tmp_path, "f", meta(target=None, fleet={"hosts": hosts}, points_done=24))
    s = summarise(d)
    assert s.target == "fleet of 3 hosts" and (s.done, s.planned) == (24, 24)
    assert summarise(make(tmp_path, "g", meta(target=None, fleet={"hosts": "x"}))).planned == 8
