"""Another user of the machine (``nobody``) gets nothing from the results directory: an ``--out`` that user owns or
can write is refused, the tool's own directory under /tmp is made fresh, modes are fixed whatever the umask, a raw/
swapped for a symbolic link during a run is never followed (fio reads its job from the directory that was checked),
resume and report check a directory before they trust it, a preset's name never leaves the results base, and a
refused preconditioning plan leaves no directory behind.  Real fio, small runtimes; the adversary runs as nobody
through runuser."""

from __future__ import annotations

import json
import os
import pwd
import shutil
import stat
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path
from typing import Iterator

import pytest

from app.core.errors import UsageError
from app.store.results import make_dirs, new_run_dir
from tests.conftest import fio_processes, run_cli
from tests.integration.test_adversarial import interrupted_run

NOBODY = pwd.getpwnam("nobody")
pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="needs root: the tool runs as root and the tests chown "
                                                          "to nobody")
RUN = ["--set", "runtime=1", "--set", "size=4m"]


def one_sentence(proc: subprocess.CompletedProcess[str], *fragments: str) -> str:
    """Exit 2 and one line on stderr naming every fragment, no traceback; the line."""
    assert proc.returncode == 2, proc.stderr
    lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("profiler-tui:"), proc.stderr
    for f in fragments:
        assert f in lines[0], (f, lines[0])
    return lines[0]


@pytest.fixture
def shared() -> Iterator[Path]:
    """A fresh directory under /tmp that nobody can reach (0755, root's): where the adversary looks."""
    d = Path(tempfile.mkdtemp(prefix="ptui-users-", dir="/tmp"))
    os.chmod(d, 0o755)
    try:
        yield d
    finally:
        shutil.rmtree(d, ignore_errors=True)


def as_nobody(*argv: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["runuser", "-u", "nobody", "--", *argv], capture_output=True, text=True, timeout=timeout)


def run_umask0(*args: str) -> subprocess.CompletedProcess[str]:
    """``profiler-tui ARGS`` started with umask 000 (what it creates would be 0777/0666 if it kept it)."""
    return subprocess.run([sys.executable, "-m", "app", *args], capture_output=True, text=True, timeout=300,
                          preexec_fn=lambda: os.umask(0), cwd=Path(__file__).parents[2])


def tree_entries(top: Path) -> list[Path]:
    return [Path(root) / n for root, dirs, files in os.walk(top) for n in dirs + files]


# --- an --out another user owns or can write ------------------------------------------------------------


def test_out_owned_by_nobody_is_refused_and_nothing_is_written(shared: Path) -> None:
    out = shared / "o"
    out.mkdir()
    os.chown(out, NOBODY.pw_uid, NOBODY.pw_gid)
    proc = run_cli("run", "custom", "--target", str(shared / "t.bin"), "--out", str(out), *RUN)
    one_sentence(proc, str(out), "owned by another user (uid 65534)")
    assert list(out.iterdir()) == [] and not (shared / "t.bin").exists()


def test_under_sudo_the_invoking_user_s_directory_is_trusted_and_no_one_else_s(shared: Path) -> None:
    """sudo sets SUDO_UID to the user who ran it, who can already run anything as root: ``sudo profiler-tui run``
    from that user's home writes there.  Another user's directory stays refused, and so does a group-writable one
    of the invoking user's."""
    out = shared / "o"
    out.mkdir()
    os.chown(out, NOBODY.pw_uid, NOBODY.pw_gid)
    proc = run_cli("run", "custom", "--target", str(shared / "t.bin"), "--out", str(out / "r"), *RUN,
                   env={"SUDO_UID": str(NOBODY.pw_uid)})
    assert proc.returncode == 0, proc.stderr
    assert (out / "r" / "results.jsonl").read_text().count("\n") == 1
    one_sentence(run_cli("run", "custom", "--target", str(shared / "t.bin"), "--out", str(out / "s"), *RUN,
                         env={"SUDO_UID": "1"}), "owned by another user (uid 65534)")
    os.chmod(out, 0o775)
    one_sentence(run_cli("run", "custom", "--target", str(shared / "t.bin"), "--out", str(out / "t"), *RUN,
                         env={"SUDO_UID": str(NOBODY.pw_uid)}), "writable by its group")


@pytest.mark.parametrize("below", [False, True])
def test_a_symlink_nobody_made_in_tmp_does_not_choose_where_root_writes(shared: Path, below: bool) -> None:
    """/tmp/o as nobody's link to a directory of root's (/etc, say): the results would go there."""
    roots = shared / "roots"
    roots.mkdir()
    link = Path("/tmp") / f"ptui-link-{uuid.uuid4().hex[:8]}"
    try:
        assert as_nobody("ln", "-s", str(roots), str(link)).returncode == 0
        out = link / "new" if below else link
        proc = run_cli("run", "custom", "--target", str(shared / "t.bin"), "--out", str(out), *RUN)
        one_sentence(proc, str(out), "is a symbolic link of another user (uid 65534)")
        assert list(roots.iterdir()) == []
        one_sentence(run_cli("resume", str(link)), "symbolic link of another user")
    finally:
        link.unlink(missing_ok=True)


@pytest.mark.parametrize("under", [False, True])
def test_world_writable_directory_without_sticky_bit_is_refused(shared: Path, under: bool) -> None:
    """0777 without the sticky bit: as --out itself, and as the parent the tool would create --out in."""
    open_dir = shared / "open"
    open_dir.mkdir()
    os.chmod(open_dir, 0o777)
    out = open_dir / "new" if under else open_dir
    proc = run_cli("run", "custom", "--target", str(shared / "t.bin"), "--out", str(out), *RUN)
    one_sentence(proc, str(out), "writable by other users")
    assert list(open_dir.iterdir()) == []


def test_results_base_owned_by_nobody_is_refused(shared: Path) -> None:
    base = shared / "base"
    base.mkdir()
    os.chown(base, NOBODY.pw_uid, NOBODY.pw_gid)
    proc = run_cli("run", "custom", "--target", str(shared / "t.bin"), *RUN, env={"PROFILER_TUI_RESULTS": str(base)})
    one_sentence(proc, str(base), "owned by another user")
    assert list(base.iterdir()) == []


def test_under_tmp_the_tool_makes_its_own_fresh_directory(shared: Path) -> None:
    """/tmp is world-writable but sticky: a new --out in it works; one that nobody made first (same name) is not
    reused; $PROFILER_TUI_RESULTS=/tmp itself gets a fresh directory of the tool's."""
    out = Path("/tmp") / f"ptui-fresh-{uuid.uuid4().hex[:8]}"
    taken = Path("/tmp") / f"ptui-taken-{uuid.uuid4().hex[:8]}"
    made: list[Path] = [out, taken]
    try:
        run_cli("run", "custom", "--target", str(shared / "t.bin"), "--out", str(out), *RUN, check=True)
        st = out.stat()
        assert st.st_uid == 0 and stat.S_IMODE(st.st_mode) == 0o755
        assert json.loads((out / "run.json").read_text())["status"] == "complete"

        assert as_nobody("mkdir", str(taken)).returncode == 0  # the adversary was first
        proc = run_cli("run", "custom", "--target", str(shared / "t.bin"), "--out", str(taken), *RUN)
        one_sentence(proc, str(taken), "owned by another user")
        assert list(taken.iterdir()) == []

        before = set(Path("/tmp").iterdir())
        proc = run_cli("run", "custom", "--target", str(shared / "t.bin"), *RUN, env={"PROFILER_TUI_RESULTS": "/tmp"},
                       check=True)
        new = [p for p in set(Path("/tmp").iterdir()) - before if p.name.startswith("custom-")]
        made += new
        assert len(new) == 1 and new[0].stat().st_uid == 0, proc.stdout
        assert (new[0] / "run.json").is_file()
    finally:
        for p in made:
            shutil.rmtree(p, ignore_errors=True)


# --- modes whatever the umask ---------------------------------------------------------------------------------


def test_under_umask_000_every_directory_is_0755_and_every_file_at_most_0644(shared: Path) -> None:
    """A preconditioned run (the test file fio creates included) and its report, both started with umask 000."""
    out = shared / "u" / "run"
    proc = run_umask0("run", "custom", "--out", str(out), "--target", str(shared / "u" / "target.bin"), *RUN,
                      "--set", "rw=randread,randwrite", "--set", "iodepth=1,2", "--set", "precondition=sequential")
    assert proc.returncode == 0, proc.stderr
    proc = run_umask0("report", str(out))
    assert proc.returncode == 0, proc.stderr
    entries = tree_entries(shared / "u")
    names = {p.name for p in entries}
    assert {"run", "raw", "run.json", "results.jsonl", "report.md", "plots", ".lock", "target.bin"} <= names
    assert any(n.endswith(".fio") for n in names) and any(n.endswith(".svg") for n in names)
    for p in entries + [shared / "u"]:
        mode = stat.S_IMODE(p.lstat().st_mode)
        if p.is_dir():
            assert mode == 0o755, (p, oct(mode))
        else:
            assert mode & ~0o644 == 0, (p, oct(mode))


def test_directories_the_tool_makes_are_0755_under_a_strict_umask_too(tmp_path: Path) -> None:
    old = os.umask(0o077)
    try:
        made = make_dirs(tmp_path / "a" / "b")
    finally:
        os.umask(old)
    assert made == [tmp_path / "a", tmp_path / "a" / "b"]
    assert all(stat.S_IMODE(d.stat().st_mode) == 0o755 for d in made)


# --- an adversary during the run --------------------------------------------------------------------------------

ADVERSARY = r"""
import json, os, sys, time
run_dir, evil, marker, seconds = sys.argv[1], sys.argv[2], sys.argv[3], float(sys.argv[4])
seen = {"fio_seen": 0, "tries": 0, "injected": 0, "swapped": 0}
line = "\nexec_prerun=touch %s\n" % marker
deadline = time.monotonic() + seconds
raw = os.path.join(run_dir, "raw")
while time.monotonic() < deadline and not os.path.exists(os.path.join(run_dir, "report.done")):
    try:
        names = [n for n in os.listdir(raw) if n.endswith(".fio")]
    except OSError:
        names = []
    seen["fio_seen"] = max(seen["fio_seen"], len(names))
    for n in names:
        seen["tries"] += 1
        try:
            with open(os.path.join(raw, n), "a") as f:
                f.write(line)
            seen["injected"] += 1
        except OSError:
            pass
    try:
        os.rename(raw, raw + ".old")
        os.symlink(evil, raw)
        seen["swapped"] += 1
    except OSError:
        pass
    time.sleep(0.01)
print(json.dumps(seen))
"""

POINTS = ["--set", "iodepth=1,2,4,8"]


def _evil_dir(shared: Path, marker: Path) -> Path:
    """nobody's directory of job files named as the run's, each with the injected command."""
    evil = shared / "evil"
    evil.mkdir()
    for i, qd in enumerate((1, 2, 4, 8)):
        (evil / f"{i:04d}-randread-4k-qd{qd}-j1.fio").write_text(
            f"[global]\nfilename={shared / 'evil.bin'}\nsize=1m\n[x]\nrw=read\nexec_prerun=touch {marker}\n")
    for p in [evil, *evil.iterdir()]:
        os.chown(p, NOBODY.pw_uid, NOBODY.pw_gid)
    return evil


def _nothing_of_roots(evil: Path) -> None:
    """The adversary's directory holds only its own files, as it wrote them."""
    for p in evil.iterdir():
        assert p.stat().st_uid == NOBODY.pw_uid, f"{p} was written by root"
    assert len(list(evil.iterdir())) == 4


def test_nobody_cannot_swap_raw_or_inject_into_job_files_during_a_run(shared: Path) -> None:
    """The run directory is new under sticky /tmp, the tool started with umask 000: nobody sees the job files
    during the run, but can neither append exec_prerun to them nor swap raw/ for its own directory; fio never runs
    the injected command."""
    marker = Path("/tmp") / f"ptui-pwned-{uuid.uuid4().hex[:8]}"
    evil = _evil_dir(shared, marker)
    script = shared / "adversary.py"
    script.write_text(ADVERSARY)
    out = Path("/tmp") / f"ptui-run-{uuid.uuid4().hex[:8]}"
    try:
        adversary = subprocess.Popen(["runuser", "-u", "nobody", "--", "/usr/bin/python3", str(script), str(out),
                                      str(evil), str(marker), "120"], stdout=subprocess.PIPE, text=True)
        try:
            proc = run_umask0("run", "custom", "--target", str(shared / "t.bin"), "--out", str(out), *RUN, *POINTS)
        finally:
            out.mkdir(exist_ok=True)
            (out / "report.done").touch()
            seen = json.loads(adversary.communicate(timeout=60)[0])
        assert proc.returncode == 0, proc.stderr
        assert seen["fio_seen"] >= 1 and seen["tries"] >= 1, seen  # it did reach the job files
        assert seen["injected"] == 0 and seen["swapped"] == 0, seen
        assert not marker.exists()
        _nothing_of_roots(evil)
        for job in (out / "raw").glob("*.fio"):
            assert "exec_prerun" not in job.read_text()
        assert len(list((out / "raw").glob("*.fio"))) == 4
    finally:
        shutil.rmtree(out, ignore_errors=True)
        marker.unlink(missing_ok=True)


def test_raw_swapped_for_a_symlink_mid_run_is_never_followed(shared: Path) -> None:
    """Whoever swaps raw/ for a link to a directory of injected job files during a run (here root itself, which
    the checks cannot stop): the tool keeps writing into the raw/ it opened, and fio keeps reading its job files
    there — the injected command never runs, nothing is written where the link points."""
    marker = Path("/tmp") / f"ptui-pwned-{uuid.uuid4().hex[:8]}"
    evil = _evil_dir(shared, marker)
    out = shared / "r"
    swapped = threading.Event()
    cwds: list[str] = []

    def swap() -> None:
        raw = out / "raw"
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and not list(raw.glob("0000-*.fio")):
            time.sleep(0.01)
        os.rename(raw, out / "raw.old")
        os.symlink(evil, raw)
        swapped.set()
        while time.monotonic() < deadline and not (out / "raw.old" / "0003-randread-4k-qd8-j1.fio").exists():
            time.sleep(0.01)
        while time.monotonic() < deadline and not cwds:  # the last point's fio, found by its working directory
            cwds.extend(fio_processes(out / "raw.old"))
            time.sleep(0.01)

    t = threading.Thread(target=swap, daemon=True)
    t.start()
    proc = run_cli("run", "custom", "--target", str(shared / "t.bin"), "--out", str(out), *RUN, *POINTS)
    t.join(60)
    try:
        assert swapped.is_set()
        assert proc.returncode == 0, proc.stderr
        assert not marker.exists()
        _nothing_of_roots(evil)
        held = out / "raw.old"
        assert sorted(p.name for p in held.glob("*.fio")) == sorted(p.name for p in evil.iterdir())
        assert all("exec_prerun" not in p.read_text() for p in held.glob("*.fio"))
        records = [json.loads(ln) for ln in (out / "results.jsonl").read_text().splitlines()]
        assert len(records) == 4 and all(r["raw"]["fio"].startswith("raw/") for r in records)
        assert cwds, "fio ran in the held raw/ (its working directory is the renamed one)"
    finally:
        marker.unlink(missing_ok=True)


# --- resume and report check a directory before they trust it -----------------------------------------------


@pytest.fixture
def half_run(shared: Path) -> Path:
    """A real two-point run with its last point taken back: resume has one point to run."""
    return interrupted_run(shared, shared / "h.bin", "size=4m")


def test_resume_refuses_a_raw_swapped_for_a_symlink_or_owned_by_nobody(half_run: Path, shared: Path) -> None:
    raw, kept = half_run / "raw", half_run / "raw.kept"
    other = shared / "other"
    other.mkdir()
    os.rename(raw, kept)
    os.symlink(other, raw)
    one_sentence(run_cli("resume", str(half_run)), f"{raw}: is not a directory (a symbolic link")
    assert list(other.iterdir()) == []
    raw.unlink()
    os.rename(kept, raw)

    os.chown(raw, NOBODY.pw_uid, NOBODY.pw_gid)
    one_sentence(run_cli("resume", str(half_run)), str(raw), "owned by another user (uid 65534)")
    os.chown(raw, 0, 0)
    os.chown(half_run, NOBODY.pw_uid, NOBODY.pw_gid)
    one_sentence(run_cli("resume", str(half_run)), str(half_run), "owned by another user")
    os.chown(half_run, 0, 0)
    os.chmod(half_run, 0o777)
    one_sentence(run_cli("resume", str(half_run)), "writable by other users")
    os.chmod(half_run, 0o755)
    assert len((half_run / "results.jsonl").read_text().splitlines()) == 1  # nothing ran

    resumed = run_cli("resume", str(half_run), check=True)  # the same directory, restored: resumed
    assert "1 of 2 points to run" in resumed.stdout
    assert len((half_run / "results.jsonl").read_text().splitlines()) == 2


def test_report_does_not_write_into_a_directory_nobody_can_write(half_run: Path, shared: Path) -> None:
    victim, victim_dir = shared / "victim.txt", shared / "victim-dir"
    victim.write_text("root's file\n")
    victim_dir.mkdir()
    os.chmod(half_run, 0o777)
    assert as_nobody("ln", "-s", str(victim), str(half_run / "report.md")).returncode == 0
    assert as_nobody("ln", "-s", str(victim_dir), str(half_run / "plots")).returncode == 0
    one_sentence(run_cli("report", str(half_run)), str(half_run), "writable by other users", "--out FILE")
    assert victim.read_text() == "root's file\n" and list(victim_dir.iterdir()) == []

    # elsewhere, in a directory of root's: the same run's report is written
    report = shared / "rep" / "report.md"
    run_cli("report", str(half_run), "--out", str(report), check=True)
    assert report.is_file() and (shared / "rep" / "plots").is_dir() and (shared / "rep" / "results.csv").is_file()


def test_report_in_a_sticky_directory_never_follows_a_link_nobody_left_there(half_run: Path, shared: Path) -> None:
    """A sticky world-writable directory (like /tmp) may take a report, but a report.md or plots/ that nobody put
    there first is not written through."""
    victim, victim_dir = shared / "victim.txt", shared / "victim-dir"
    victim.write_text("root's file\n")
    victim_dir.mkdir()
    sticky = shared / "sticky"
    sticky.mkdir()
    os.chmod(sticky, 0o1777)
    assert as_nobody("ln", "-s", str(victim), str(sticky / "report.md")).returncode == 0
    one_sentence(run_cli("report", str(half_run), "--out", str(sticky / "report.md")), "report.md",
                 "cannot write the report")
    assert victim.read_text() == "root's file\n"
    (sticky / "report.md").unlink()
    shutil.rmtree(sticky / "plots")
    assert as_nobody("ln", "-s", str(victim_dir), str(sticky / "plots")).returncode == 0
    one_sentence(run_cli("report", str(half_run), "--out", str(sticky / "report.md")), "plots")
    assert list(victim_dir.iterdir()) == [] and not (sticky / "report.md").exists()
    (sticky / "plots").unlink()
    run_cli("report", str(half_run), "--out", str(sticky / "report.md"), check=True)
    assert (sticky / "report.md").stat().st_uid == 0


# --- a preset's name, a preconditioning plan that cannot run ------------------------------------------------


@pytest.mark.parametrize("name", ["/abs/name", "../../x", "..", "a/b"])
def test_a_preset_name_is_a_plain_name_never_a_path(shared: Path, name: str) -> None:
    preset = shared / "p.toml"
    preset.write_text(f'name = "{name}"\nkind = "storage"\n[settings]\nrw = "randread"\nbs = "4k"\nruntime = 1\n'
                      'size = "4m"\n')
    base = shared / "base" / "results"
    base.mkdir(parents=True)
    before = set(Path("/abs").iterdir()) if Path("/abs").is_dir() else set()
    proc = run_cli("run", str(preset), "--target", str(shared / "t.bin"), env={"PROFILER_TUI_RESULTS": str(base)})
    one_sentence(proc, str(preset), "key 'name'", f"'{name}'")
    assert tree_entries(shared / "base") == [base]
    assert (set(Path("/abs").iterdir()) if Path("/abs").is_dir() else set()) == before
    with pytest.raises(UsageError, match="plain name"):
        new_run_dir(base, name)


def test_workload_preconditioning_of_a_read_only_plan_is_refused_before_any_directory(shared: Path) -> None:
    out = shared / "pc"
    proc = run_cli("run", "custom", "--target", str(shared / "t.bin"), "--out", str(out), *RUN,
                   "--set", "precondition=workload")
    one_sentence(proc, "precondition", "workload", "none of its points writes")
    assert not out.exists() and not (shared / "t.bin").exists()


def test_import_into_a_directory_nobody_owns_is_refused_and_its_own_is_0755(shared: Path) -> None:
    sample = str(Path(__file__).parents[1] / "data" / "mlc" / "v3.10-loaded-latency.txt")
    theirs = shared / "theirs"
    theirs.mkdir()
    os.chown(theirs, NOBODY.pw_uid, NOBODY.pw_gid)
    one_sentence(run_cli("import", sample, "--out", str(theirs)), str(theirs), "owned by another user")
    assert list(theirs.iterdir()) == []
    proc = run_umask0("import", sample, "--out", str(shared / "mine"))
    assert proc.returncode == 0, proc.stderr
    for p in tree_entries(shared / "mine"):
        assert stat.S_IMODE(p.stat().st_mode) == (0o755 if p.is_dir() else 0o644), p
