"""app.host.tune on a fake sysfs root: which files --tune changes (governor and idle states of two CPUs, a queue's
scheduler), the order record → change, the restore rule (another process's value wins), a kernel that refuses a
value, and the hostile cases: a symlink in place of a file or of a directory, a path outside the root, a restore
directory or record another user owns or can write, a record planted by ``nobody``, a live run's record."""

from __future__ import annotations

import json
import os
import pwd
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Iterator

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from app.core.errors import SafetyError, UsageError
from app.host import tune
from app.host.audit import Audit, Item
from app.host.link import SYSFS_ENV

GOV = "devices/system/cpu/cpu{n}/cpufreq/scaling_governor"
IDLE = "devices/system/cpu/cpu{n}/cpuidle/state{s}/disable"
SCHED = "devices/virtual/block/vdb/queue/scheduler"
root_only = pytest.mark.skipif(os.geteuid() != 0, reason="needs root: chown to nobody, runuser")


@pytest.fixture
def sysfs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fake /sys: two CPUs (schedutil, deep idle states enabled) and a queue with mq-deadline; the restore
    records in a directory of the test's."""
    root = tmp_path / "sys"
    for n in (0, 1):
        put(root / GOV.format(n=n), "schedutil")
        for s in (2, 3):
            put(root / IDLE.format(n=n, s=s), "0")
    put(root / SCHED, "none [mq-deadline] kyber")
    monkeypatch.setenv(SYSFS_ENV, str(root))
    monkeypatch.setenv(tune.TUNE_DIR_ENV, str(tmp_path / "run" / "tune"))
    return root


def put(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text + "\n")


def host_audit(root: Path, *extra: Item) -> Audit:
    cpus = (0, 1)
    return Audit("/dev/vdb", "vdb", cpus, (
        Item("scheduler", "mq-deadline", "none", "why", "ok", tune=((str(root / SCHED), "none"),)),  # ok: untouched
        Item("governor", "schedutil", "performance", "why", "warn", "governor",
             tune=tuple((str(root / GOV.format(n=n)), "performance") for n in cpus)),
        Item("cstates", "C2, C3", "disabled", "why", "info",
             tune=tuple((str(root / IDLE.format(n=n, s=s)), "1") for n in cpus for s in (2, 3))),
        *extra))


def value(root: Path, rel: str) -> str:
    return tune.read_setting(str(root / rel))


def test_a_run_changes_the_warned_items_records_first_and_restores(sysfs: Path, tmp_path: Path) -> None:
    seen: list[dict] = []

    def record(obj: dict) -> None:
        if not seen:  # the first record is written before any file is
            assert value(sysfs, GOV.format(n=0)) == "schedutil" and not tune.tune_dir().exists()
        seen.append(json.loads(json.dumps(obj)))

    assert tune.describe(host_audit(sysfs))[0] == (f"tune: governor: {sysfs / GOV.format(n=0)}: schedutil → "
                                                    "performance")
    t = tune.Tuning(tmp_path / "out", tune.plan_changes(host_audit(sysfs))[0], record)
    t.apply()
    assert [c["key"] for c in seen[0]["changes"]] == ["governor"] * 2 + ["cstates"] * 4
    assert value(sysfs, GOV.format(n=1)) == "performance" and value(sysfs, IDLE.format(n=1, s=3)) == "1"
    assert value(sysfs, SCHED) == "mq-deadline", "an ok item is not tuned"
    records = list(tune.tune_dir().iterdir())
    assert [r.name for r in records] == [tune.run_id(tmp_path / "out") + ".json"]
    assert records[0].stat().st_mode & 0o777 == 0o600 and tune.tune_dir().stat().st_mode & 0o777 == 0o700
    assert json.loads(records[0].read_text())["pid"] == os.getpid()
    assert all(c["applied"] for c in seen[-1]["changes"])
    put(sysfs / GOV.format(n=1), "powersave")  # another process: its value wins
    t.restore()
    assert value(sysfs, GOV.format(n=0)) == "schedutil" and value(sysfs, IDLE.format(n=0, s=2)) == "0"
    assert value(sysfs, GOV.format(n=1)) == "powersave"
    last = {c["path"]: c for c in seen[-1]["changes"]}
    assert last[str(sysfs / GOV.format(n=1))]["restored"] is False
    assert "changed to powersave by another process" in last[str(sysfs / GOV.format(n=1))]["restore_error"]
    assert sum(c["restored"] is True for c in last.values()) == 5 and "restored_at" in seen[-1]
    assert list(tune.tune_dir().iterdir()) == []


def test_a_value_the_kernel_refuses_is_recorded_and_the_rest_goes_on(sysfs: Path, tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    refused = str(sysfs / GOV.format(n=0))
    real = tune.write_setting

    def kernel(path: str, v: str) -> None:
        if path == refused:
            raise OSError(22, "Invalid argument")
        real(path, v)

    monkeypatch.setattr(tune, "write_setting", kernel)
    t = tune.Tuning(tmp_path / "out", tune.plan_changes(host_audit(sysfs))[0], lambda _: None)
    t.apply()
    first = t.changes[0]
    assert (first.applied, first.error) == (False, "writing performance failed: Invalid argument")
    assert all(c.applied for c in t.changes[1:])
    t.restore()
    assert first.restored is None and all(c.restored for c in t.changes[1:])


def test_a_file_changed_since_the_plan_is_left_alone(sysfs: Path, tmp_path: Path) -> None:
    changes = tune.plan_changes(host_audit(sysfs))[0]
    put(sysfs / GOV.format(n=0), "ondemand")  # between the plan (recorded) and the write
    t = tune.Tuning(tmp_path / "out", changes, lambda _: None)
    t.apply()
    assert (changes[0].applied, changes[0].error) == (False, "changed to ondemand by another process since it was "
                                                             "read: left as it is")
    assert value(sysfs, GOV.format(n=0)) == "ondemand" and changes[1].applied
    t.restore()
    assert value(sysfs, GOV.format(n=0)) == "ondemand" and changes[0].restored is None


def test_paths_from_data_stay_in_the_root_and_are_never_followed(sysfs: Path, tmp_path: Path) -> None:
    victim = tmp_path / "victim"
    victim.write_text("keep\n")
    link = sysfs / GOV.format(n=0)
    link.unlink()
    link.symlink_to(victim)  # a symlink in place of the file
    (sysfs / "devices" / "evil").symlink_to(tmp_path, target_is_directory=True)  # a directory leading out
    extra = Item("wbt", "2000", "0", "why", "warn", "wbt-on", tune=(
        (str(victim), "0"), (str(sysfs / ".." / "victim"), "0"), (str(sysfs / "devices" / "evil" / "victim"), "0"),
        ("relative/path", "0")))
    changes, skipped = tune.plan_changes(host_audit(sysfs, extra))
    assert str(link) not in {c.path for c in changes}
    assert [s.split(": ", 1)[1] for s in skipped] == [
        "cannot be read (Too many levels of symbolic links): not changed", f"outside {sysfs}: not changed",
        "not an absolute, normalized path: not changed",
        f"outside {sysfs} once its directories are resolved ({victim}): not changed",
        "not an absolute, normalized path: not changed"]
    with pytest.raises(OSError):  # a symlink swapped in after the plan
        tune.write_setting(str(link), "performance")
    assert victim.read_text() == "keep\n"


def leftover(sysfs: Path, tmp_path: Path, **record: object) -> Path:
    """A restore record as a killed run leaves it (its governor change applied)."""
    put(sysfs / GOV.format(n=0), "performance")
    d = tune.tune_dir()
    d.parent.mkdir(mode=0o700, exist_ok=True)
    d.mkdir(mode=0o700, exist_ok=True)
    path = d / (tune.run_id(tmp_path / "dead") + ".json")
    body = {"pid": 2 ** 22 + 7, "pid_start": 1, "run_dir": str(tmp_path / "dead"), "created": "x",
            "changes": [{"key": "governor", "path": str(sysfs / GOV.format(n=0)), "previous": "schedutil",
                         "value": "performance"}], **record}
    path.write_text(json.dumps(body))
    path.chmod(0o600)
    return path


def test_a_dead_runs_record_is_restored_and_a_live_runs_left(sysfs: Path, tmp_path: Path) -> None:
    path = leftover(sysfs, tmp_path, pid=os.getpid(), pid_start=tune.process_start(os.getpid()))
    assert tune.restore_leftovers() == ([], []) and path.exists(), "a live run's record"
    path.unlink()
    path = leftover(sysfs, tmp_path)
    found, refused = tune.restore_leftovers()
    assert refused == [] and not path.exists()
    assert value(sysfs, GOV.format(n=0)) == "schedutil"
    assert found[0].line == (f"profiler-tui: a killed --tune run ({tmp_path / 'dead'}) left settings changed: "
                             f"1 restored ({sysfs / GOV.format(n=0)} → schedutil).")
    merged = tune.merge_restored({"requested": True, "changes": [{"path": str(sysfs / GOV.format(n=0)),
                                                                  "restored": None}]}, found[0].changes)
    assert merged is not None and merged["changes"] == [{"path": str(sysfs / GOV.format(n=0)), "restored": True}]


@root_only
@pytest.mark.parametrize("what", ["dir owned by nobody", "dir mode 0777", "record owned by nobody"])
def test_a_record_or_directory_another_user_could_write_is_refused(sysfs: Path, tmp_path: Path, what: str) -> None:
    path = leftover(sysfs, tmp_path)
    target = path if what.startswith("record") else path.parent
    if "nobody" in what:
        os.chown(target, pwd.getpwnam("nobody").pw_uid, -1)
    else:
        target.chmod(0o777)
    found, refused = tune.restore_leftovers()
    assert found == [] and len(refused) == 1 and path.exists()
    assert value(sysfs, GOV.format(n=0)) == "performance", "nothing acted on"
    if not what.startswith("record"):
        with pytest.raises(SafetyError, match="restore records are kept only in a directory of root's"):
            tune.Tuning(tmp_path / "out", tune.plan_changes(host_audit(sysfs))[0], lambda _: None).apply()
        assert value(sysfs, IDLE.format(n=0, s=2)) == "0", "nothing changed"


@pytest.fixture
def shared(monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """The restore records under a fresh directory in /tmp that nobody can reach (0755, root's)."""
    d = Path(tempfile.mkdtemp(prefix="ptui-tune-", dir="/tmp"))
    d.chmod(0o755)
    monkeypatch.setenv(tune.TUNE_DIR_ENV, str(d / "run" / "tune"))
    try:
        yield d
    finally:
        shutil.rmtree(d, ignore_errors=True)


@root_only
def test_nobody_cannot_plant_a_record(sysfs: Path, tmp_path: Path, shared: Path) -> None:
    d = tune.tune_dir()
    tune.Tuning(tmp_path / "out", [], lambda _: None).apply()  # nothing to change: no directory needed
    assert not d.exists()
    assert tune.open_record_dir(create=True) is not None
    body = json.dumps({"pid": 1 << 22, "pid_start": 1, "run_dir": "/x", "changes": [
        {"key": "governor", "path": str(sysfs / GOV.format(n=1)), "previous": "powersave", "value": "schedutil"}]})
    plant = f"echo '{body}' > {d}/{'0' * 20}.json"
    cp = subprocess.run(["runuser", "-u", "nobody", "--", "sh", "-c", plant], capture_output=True, text=True)
    assert cp.returncode != 0 and "Permission denied" in cp.stderr
    # where nobody could make the directory first (a world-writable parent), it is refused, never read
    d.rmdir()
    d.parent.chmod(0o1777)
    cp = subprocess.run(["runuser", "-u", "nobody", "--", "sh", "-c", f"mkdir -m 700 {d} && {plant}"],
                        capture_output=True, text=True)
    assert cp.returncode == 0, cp.stderr
    found, refused = tune.restore_leftovers()
    assert found == [] and "writable by other users" in refused[0]
    assert value(sysfs, GOV.format(n=1)) == "schedutil"


def test_tune_needs_root(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    from app.cli.commands import main

    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    with pytest.raises(UsageError, match="needs root"):
        tune.start(Audit(None, None, ()), tmp_path, lambda _: None)
    with pytest.raises(SystemExit) as ended:
        main(["run", "custom", "--tune", "--target", str(tmp_path / "t.bin"), "--out", str(tmp_path / "n")])
    assert ended.value.code == 2
    assert capsys.readouterr().err == f"profiler-tui: {tune.NEEDS_ROOT}\n"
    assert not (tmp_path / "n").exists()


@settings(max_examples=200, deadline=None, derandomize=True)
@given(st.text(max_size=200))
def test_a_setting_is_one_bounded_line(raw: str) -> None:
    text = tune.setting_text(raw)
    assert "\n" not in text and len(text) <= tune.MAX_VALUE_BYTES


def test_the_chosen_word_of_a_list() -> None:
    assert tune.setting_text("none [mq-deadline] kyber bfq \n") == "mq-deadline"
    assert tune.setting_text("performance\n") == "performance"


@pytest.mark.parametrize("obj", [None, [], {"key": "k"}, {"key": "k", "path": "/p", "previous": 1, "value": "v"},
                                 {"key": "k", "path": "/p\n", "previous": "a", "value": "v"}])
def test_a_hostile_record_entry_is_dropped(obj: object) -> None:
    assert tune.Change.from_json(obj) is None


# --- one --tune run at a time ---------------------------------------------------------------------------------


def test_a_second_tune_run_is_refused_naming_the_first_and_an_untuned_run_is_told(sysfs: Path, tmp_path: Path) -> None:
    """Two --tune runs on one machine would each read the other's values as the host's and put back under each
    other: the second is refused (SafetyError, exit 3) with the first's process and results directory; a run
    without --tune learns that its audit reads another run's values."""
    assert tune.tuned_elsewhere(None) is None, "no directory yet: nothing is tuning"
    first = tune.lock_settings(None, tmp_path / "first")
    try:
        with pytest.raises(SafetyError) as refused:
            tune.lock_settings(None, tmp_path / "second")
        assert str(refused.value).startswith(
            f"--tune refused: the CPU settings (frequency governor, idle states) are being tuned by another run "
            f"(process {os.getpid()}, results in {tmp_path / 'first'}); ")
        said = tune.tuned_elsewhere(None)
        assert said is not None and said.startswith(
            f"another run (process {os.getpid()}, results in {tmp_path / 'first'}) was tuning the CPU settings")
        lock = tune.tune_dir() / tune.CPU_LOCK[0]
        assert lock.stat().st_mode & 0o777 == 0o600 and lock.parent.stat().st_mode & 0o777 == 0o700
    finally:
        first.release()
    assert tune.tuned_elsewhere(None) is None
    tune.lock_settings(None, tmp_path / "second").release()


def test_a_lock_file_that_is_a_link_is_refused(sysfs: Path, tmp_path: Path) -> None:
    victim = tmp_path / "victim"
    victim.write_text("keep me")
    d = tune.tune_dir()
    d.parent.mkdir(mode=0o700)
    d.mkdir(mode=0o700)
    (d / tune.CPU_LOCK[0]).symlink_to(victim)
    with pytest.raises(SafetyError, match="cannot lock the CPU settings"):
        tune.lock_settings(None, tmp_path / "run")
    assert victim.read_text() == "keep me"
    assert tune.tuned_elsewhere(None) is None


def test_a_record_its_run_holds_is_left_whatever_its_pid_says(sysfs: Path, tmp_path: Path) -> None:
    """A run's restore record is locked while the run lives: a record whose PID means nothing here (another PID
    namespace, a container sharing /run) is not taken for a dead run's while it is held."""
    import fcntl

    path = leftover(sysfs, tmp_path)  # a PID that no process has
    fd = os.open(path, os.O_RDONLY)
    fcntl.flock(fd, fcntl.LOCK_EX)
    try:
        assert tune.restore_leftovers() == ([], []) and path.exists()
        assert value(sysfs, GOV.format(n=0)) == "performance"
    finally:
        os.close(fd)
    found, _ = tune.restore_leftovers()
    assert len(found) == 1 and not path.exists() and value(sysfs, GOV.format(n=0)) == "schedutil"


def test_a_runs_record_is_locked_until_it_restores(sysfs: Path, tmp_path: Path) -> None:
    import fcntl

    t = tune.Tuning(tmp_path / "out", tune.plan_changes(host_audit(sysfs))[0], lambda _: None)
    t.apply()
    record = tune.tune_dir() / (tune.run_id(tmp_path / "out") + ".json")
    fd = os.open(record, os.O_RDONLY)
    try:
        with pytest.raises(BlockingIOError):
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    finally:
        os.close(fd)
    t.restore()
    assert not record.exists() and value(sysfs, GOV.format(n=0)) == "schedutil"


@root_only
def test_nobody_cannot_hold_or_plant_a_tune_lock(sysfs: Path, tmp_path: Path, shared: Path) -> None:
    """The locks lie in the records' directory (root's, 0700): another user can neither hold one (and so refuse
    root's run as if a --tune run went on) nor put one there; where it could make the directory first, the
    directory itself is refused."""
    tune.lock_settings(None, tmp_path / "run").release()
    lock = tune.tune_dir() / tune.CPU_LOCK[0]
    hold = f"exec 9<{lock} && flock -n 9 && echo held"
    cp = subprocess.run(["runuser", "-u", "nobody", "--", "sh", "-c", hold], capture_output=True, text=True)
    assert cp.returncode != 0 and "Permission denied" in cp.stderr
    shutil.rmtree(tune.tune_dir())
    tune.tune_dir().parent.chmod(0o1777)
    make = f"mkdir -m 700 {tune.tune_dir()} && : > {lock}"
    cp = subprocess.run(["runuser", "-u", "nobody", "--", "sh", "-c", make], capture_output=True, text=True)
    assert cp.returncode == 0, cp.stderr
    with pytest.raises(SafetyError, match="writable by other users"):
        tune.lock_settings(None, tmp_path / "run")
    assert tune.tuned_elsewhere(None) is None
