"""app.store.runs: the summaries of a results root, for the runs browser — hostile run.json files never raise,
a run is 'running' only while a process holds its lock, and every directory is listed once."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from app.store.lock import DirLock
from app.store.runs import RunSummary, list_runs, results_roots, summarise

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


# --- another user's runs, and text from a results directory -------------------------------------------------

needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="needs root: chowns to nobody")
ESCAPES = "\x1b]0;PWNED\x07\x1b[2J\x9b31m\x1bPdcs\x1b\\"


def nobody() -> tuple[int, int]:
    import pwd

    user = pwd.getpwnam("nobody")
    return user.pw_uid, user.pw_gid


@needs_root
def test_another_users_run_is_listed_as_foreign_by_its_name_and_none_of_its_files_is_read(tmp_path: Path) -> None:
    """In a shared sticky root, nobody's directory (or nobody's run.json in root's directory, or a directory others
    can write) is listed by its cleaned name with the sentence why; its run.json's preset name never appears."""
    os.chmod(tmp_path, 0o1777)
    theirs = make(tmp_path, f"theirs{ESCAPES}", meta(preset={"name": f"evil{ESCAPES}", "kind": "storage"}))
    os.chown(theirs, *nobody())
    file_only = make(tmp_path, "file-only", meta(preset={"name": "evil", "kind": "storage"}))
    os.chown(file_only / "run.json", *nobody())
    shared = make(tmp_path, "group-writable", meta(preset={"name": "evil", "kind": "storage"}))
    os.chmod(shared, 0o775)
    make(tmp_path, "mine", meta())
    runs = {r.name: r for r in list_runs([tmp_path])}
    assert set(runs) == {"theirs", "file-only", "group-writable", "mine"}  # names cleaned of every sequence
    assert runs["theirs"].status == "foreign" and runs["theirs"].preset == "theirs"
    assert runs["theirs"].problem == (
        "it is owned by another user (uid 65534), so another user could change what it shows; the TUI opens only "
        "runs that only you or root can change.")
    assert runs["file-only"].problem.startswith("its run.json is owned by another user (uid 65534), so ")
    assert runs["group-writable"].problem.startswith("it is writable by its group, so ")
    assert all(not r.usable and "evil" not in r.preset for n, r in runs.items() if n != "mine")
    assert runs["mine"].usable and runs["mine"].preset == "quick"


@needs_root
def test_every_run_of_a_root_another_user_can_change_is_foreign(tmp_path: Path) -> None:
    root = tmp_path / "root"
    make(root, "mine", meta())
    os.chown(root, *nobody())
    (run,) = list_runs([root])
    assert run.status == "foreign" and not run.usable
    assert run.problem.startswith(f"{root}: it is owned by another user (uid 65534), so another user could change")


def test_text_of_a_run_json_is_cleaned_of_every_sequence(tmp_path: Path) -> None:
    make(tmp_path, "r", meta(preset={"name": f"q{ESCAPES}uick", "kind": "storage"}, target=f"/srv/{ESCAPES}t",
                             kind=f"stor{ESCAPES}age", started=f"2026{ESCAPES}", status=f"comp{ESCAPES}lete"))
    make(tmp_path, f"bad{ESCAPES}", "{ nope")
    for r in list_runs([tmp_path]):
        for text in (r.preset, r.kind, r.target, r.started, r.status, r.problem, r.name):
            assert text.isprintable() and "PWNED" not in text and "dcs" not in text, (r, text)


@needs_root
def test_view_problem_names_another_users_directory_and_passes_ones_own(tmp_path: Path) -> None:
    from app.store.runs import view_problem

    mine = make(tmp_path, "mine", meta())
    theirs = make(tmp_path, "theirs", meta())
    os.chown(theirs, *nobody())
    assert view_problem(mine) is None and view_problem(tmp_path / "gone") is None
    assert view_problem(theirs) == (f"{theirs}: it is owned by another user (uid 65534), so another user could "
                                    "change what it shows; the TUI opens only runs that only you or root can change.")


@needs_root
@pytest.mark.parametrize("what", ["fifo", "zero", "shadow", "nobody's file", "nobody's directory", "large"])
def test_read_report_reads_only_a_bounded_regular_file_of_ones_own(tmp_path: Path, what: str) -> None:
    """The report view's reader: never through a link, never a FIFO (it would wait) or a device, never another
    user's file or directory, never more than its bound — one sentence each, at once."""
    from app.core.errors import UsageError
    from app.store.runs import read_report

    run = make(tmp_path, "run", meta())
    report = run / "report.md"
    expected = {"fifo": "is not a regular file", "zero": "is a symbolic link", "shadow": "is a symbolic link",
                "nobody's file": "is owned by another user (uid 65534)",
                "nobody's directory": "it is owned by another user (uid 65534)", "large": "is larger than 1 MiB"}[what]
    if what == "fifo":
        os.mkfifo(report)
    elif what in ("zero", "shadow"):
        os.symlink("/dev/zero" if what == "zero" else "/etc/shadow", report)
    else:
        report.write_text("# r\n" * (1 << 19) if what == "large" else "# r\n")
        if what != "large":
            os.chown(report if what == "nobody's file" else run, *nobody())
    with pytest.raises(UsageError) as e:
        read_report(run, limit=1 << 20)
    assert expected in str(e.value) and str(e.value).count(".") >= 1 and "\n" not in str(e.value)


def test_read_report_cleans_escape_sequences_and_keeps_lines(tmp_path: Path) -> None:
    from app.store.runs import read_report

    run = make(tmp_path, "run", meta())
    (run / "report.md").write_text(f"# Report\n\n\x1b]52;c;UFdORUQ=\x07text{ESCAPES}\n| a | b |\n")
    assert read_report(run) == "# Report\n\ntext\n| a | b |\n"


def test_a_lock_file_that_is_a_fifo_is_not_waited_on(tmp_path: Path) -> None:
    """A run.json that says running makes the browser test its lock: a FIFO in its place is no lock (an open
    for reading would wait for a writer forever)."""
    d = make(tmp_path, "r", meta(status="running", points_done=0))
    os.mkfifo(d / ".lock")
    assert summarise(d).status == "interrupted"
