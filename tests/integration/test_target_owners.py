"""Another user of the machine (``nobody``) never chooses what root's fio opens: a symbolic link of theirs on the way to
``--target``, a directory they own or can write that the target is (or would be created) in, and a file of theirs are
refused (exit 3) before anything is made; a directory like /tmp (sticky, everyone writes) gets a directory of the
tool's own for its test file; the tool removes only the test file it made.  Real fio, 1 s points on 4 MiB."""

from __future__ import annotations

import hashlib
import json
import os
import pwd
import shutil
import subprocess
import tempfile
import uuid
from pathlib import Path
from typing import Iterator, cast

import pytest

from app.core.errors import EXIT_SAFETY
from app.screens.state import resume_target
from tests.conftest import run_cli
from tests.helpers.loopdev import loop_factory, needs_loop  # noqa: F401 - loop_factory: a fixture

NOBODY = pwd.getpwnam("nobody")
pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="needs root: the tool runs as root and the tests chown "
                                                          "to nobody")
RUN = ["--set", "runtime=1", "--set", "size=4m"]
WRITE = ["--set", "rw=randwrite"]
SECRET = b"root-only bytes\n" * 64


@pytest.fixture
def shared() -> Iterator[Path]:
    """A fresh directory under /tmp that nobody can reach (0755, root's), with a root-only 0600 file in it."""
    d = Path(tempfile.mkdtemp(prefix="ptui-targets-", dir="/tmp"))
    os.chmod(d, 0o755)
    (d / "secret").write_bytes(SECRET)
    os.chmod(d / "secret", 0o600)
    try:
        yield d
    finally:
        shutil.rmtree(d, ignore_errors=True)


def as_nobody(*argv: str) -> None:
    proc = subprocess.run(["runuser", "-u", "nobody", "--", *argv], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr


def nobody_dir(path: Path) -> Path:
    path.mkdir()
    os.chown(path, NOBODY.pw_uid, NOBODY.pw_gid)
    return path


def refused(proc: subprocess.CompletedProcess[str], *fragments: str) -> str:
    """Exit 3 and one line on stderr naming every fragment, no traceback; the line."""
    assert proc.returncode == EXIT_SAFETY, (proc.returncode, proc.stderr)
    lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("profiler-tui:"), proc.stderr
    for f in fragments:
        assert f in lines[0], (f, lines[0])
    return lines[0]


def untouched(shared: Path) -> None:
    assert (shared / "secret").read_bytes() == SECRET


def test_nobody_s_link_as_the_scratch_name_in_nobody_s_directory_is_refused(shared: Path) -> None:
    """--target DIR owned by nobody, DIR/profiler-tui.testfile nobody's link to a root-only file: refused before
    anything is made; the file keeps its bytes and the link (not the tool's) is still there."""
    d = nobody_dir(shared / "d")
    link = d / "profiler-tui.testfile"
    as_nobody("ln", "-s", str(shared / "secret"), str(link))
    proc = run_cli("run", "custom", "--target", str(d), "--out", str(shared / "r"), *RUN, *WRITE)
    refused(proc, str(link), "symbolic link of another user (uid 65534)")
    untouched(shared)
    assert link.is_symlink() and os.readlink(link) == str(shared / "secret")
    link.unlink()  # the directory alone: the test file would be created in it
    refused(run_cli("run", "custom", "--target", str(d), "--out", str(shared / "r"), *RUN, *WRITE),
            str(d), "owned by another user (uid 65534)")
    assert list(d.iterdir()) == []
    assert not (shared / "r").exists()


@pytest.mark.parametrize("where", ["tmp", "own"])
def test_nobody_s_link_as_the_target_file_is_refused(shared: Path, where: str) -> None:
    """--target FILE, FILE nobody's link (in sticky /tmp, or in nobody's own directory) to a root-only file."""
    link = (Path("/tmp") / f"ptui-link-{uuid.uuid4().hex[:8]}") if where == "tmp" else nobody_dir(shared / "d") / "x"
    try:
        as_nobody("ln", "-s", str(shared / "secret"), str(link))
        for plan in (WRITE, ["--set", "rw=randread"]):
            proc = run_cli("run", "custom", "--target", str(link), "--out", str(shared / "r"), *RUN, *plan)
            refused(proc, str(link), "symbolic link of another user (uid 65534)")
        untouched(shared)
        assert link.is_symlink() and not (shared / "r").exists()
    finally:
        link.unlink(missing_ok=True)


def test_nobody_s_link_on_the_way_is_refused(shared: Path) -> None:
    """A link of nobody's as a directory on the way (/tmp/L -> root's directory): it would choose the file."""
    roots = shared / "roots"
    roots.mkdir()
    link = Path("/tmp") / f"ptui-dirlink-{uuid.uuid4().hex[:8]}"
    try:
        as_nobody("ln", "-s", str(roots), str(link))
        proc = run_cli("run", "custom", "--target", str(link / "t.bin"), "--out", str(shared / "r"), *RUN, *WRITE)
        refused(proc, str(link), "symbolic link of another user")
        assert list(roots.iterdir()) == []
    finally:
        link.unlink(missing_ok=True)


@pytest.mark.parametrize("mode", ["nobody's", "0777", "0775"])
def test_a_root_file_in_a_directory_others_can_write_is_refused(shared: Path, mode: str) -> None:
    """root's file in a directory nobody owns or can write: nobody could swap it for a link before fio opens it."""
    d = shared / "d"
    d.mkdir()
    (d / "t.bin").write_bytes(b"\0" * (4 << 20))
    if mode == "nobody's":
        os.chown(d, NOBODY.pw_uid, NOBODY.pw_gid)
    else:
        os.chmod(d, int(mode, 8))
    why = {"nobody's": "owned by another user", "0777": "writable by other users", "0775": "writable by its group"}
    proc = run_cli("run", "custom", "--target", str(d / "t.bin"), "--out", str(shared / "r"), *RUN, *WRITE)
    refused(proc, str(d), why[mode])
    assert not (shared / "r").exists()


def test_nobody_s_own_file_is_neither_written_nor_read(shared: Path) -> None:
    target = shared / "theirs.bin"
    target.write_bytes(b"x" * (4 << 20))
    os.chown(target, NOBODY.pw_uid, NOBODY.pw_gid)
    for plan in (WRITE, ["--set", "rw=randread"]):
        proc = run_cli("run", "custom", "--target", str(target), "--out", str(shared / "r"), *RUN, *plan)
        refused(proc, str(target), "owned by another user (uid 65534)")
    assert target.read_bytes() == b"x" * (4 << 20)


def test_a_file_directly_in_tmp_is_refused_and_tmp_itself_gets_the_tool_s_own_directory(shared: Path) -> None:
    """/tmp is sticky and everyone writes there: fio removes and creates again by name a file it lays out, so a file
    directly in /tmp is refused (nobody could put a link at its name first); --target /tmp puts the test file in a
    directory the tool makes in /tmp, and removes both when the run completes.  nobody's link at
    /tmp/profiler-tui.testfile is never followed, nor removed."""
    target = Path("/tmp") / f"ptui-target-{uuid.uuid4().hex[:8]}.bin"
    try:
        proc = run_cli("run", "custom", "--target", str(target), "--out", str(shared / "r"), *RUN)
        refused(proc, str(target), "/tmp is writable by other users (a sticky directory like /tmp)", "or /tmp itself")
        assert not target.exists() and not (shared / "r").exists()
    finally:
        target.unlink(missing_ok=True)
    planted = Path("/tmp/profiler-tui.testfile")
    if planted.exists() or planted.is_symlink():
        pytest.skip(f"{planted} exists already on this machine")
    try:
        as_nobody("ln", "-s", str(shared / "secret"), str(planted))
        run_cli("run", "custom", "--target", "/tmp", "--out", str(shared / "r"), *RUN, check=True)
        meta = json.loads((shared / "r" / "run.json").read_text())
        made = Path(meta["target"])
        assert made.name == "profiler-tui.testfile" and made.parent.parent == Path("/tmp")
        assert made.parent.name.startswith("profiler-tui-") and meta["target_created_by_tool"] is True
        assert meta["status"] == "complete" and not made.exists() and not made.parent.exists()
        untouched(shared)
        assert planted.is_symlink()
    finally:
        planted.unlink(missing_ok=True)


def test_a_file_directly_in_dev_shm_is_refused_and_dev_shm_itself_gets_the_tool_s_own_directory(shared: Path) -> None:
    """/dev/shm is sticky like /tmp, and its refusal recommends naming /dev/shm itself: that then works (it was
    refused once as "a missing path under /dev"), in a directory of the tool's own, removed after the run."""
    target = Path("/dev/shm") / f"ptui-target-{uuid.uuid4().hex[:8]}.bin"
    proc = run_cli("run", "custom", "--target", str(target), "--out", str(shared / "r"), *RUN)
    refused(proc, str(target), "/dev/shm is writable by other users", "or /dev/shm itself")
    assert not target.exists()
    run_cli("run", "custom", "--target", "/dev/shm", "--out", str(shared / "r"), *RUN, check=True)
    meta = json.loads((shared / "r" / "run.json").read_text())
    made = Path(meta["target"])
    assert made.parent.parent == Path("/dev/shm") and made.parent.name.startswith("profiler-tui-")
    assert meta["status"] == "complete" and not made.parent.exists()


def test_under_sudo_the_invoking_user_s_directory_holds_a_target(shared: Path) -> None:
    """SUDO_UID names the user who ran sudo, who can already run anything as root: that user's directory is trusted
    as --out trusts it; another user's is not."""
    d = nobody_dir(shared / "d")
    run_cli("run", "custom", "--target", str(d), "--out", str(shared / "r"), *RUN, env={"SUDO_UID": str(NOBODY.pw_uid)},
            check=True)
    assert not (d / "profiler-tui.testfile").exists()  # made and removed by the run
    refused(run_cli("run", "custom", "--target", str(d), "--out", str(shared / "s"), *RUN, env={"SUDO_UID": "1"}),
            "owned by another user (uid 65534)")


def test_a_scratch_file_that_was_there_before_the_run_is_used_but_not_removed(shared: Path) -> None:
    d = shared / "d"
    d.mkdir()
    left = d / "profiler-tui.testfile"
    left.write_bytes(b"\0" * (4 << 20))
    run_cli("run", "custom", "--target", str(d), "--out", str(shared / "r"), *RUN, check=True)
    assert json.loads((shared / "r" / "run.json").read_text())["target_created_by_tool"] is False
    assert left.is_file()


def test_resume_refuses_a_target_nobody_turned_into_a_link(shared: Path) -> None:
    """run.json's target is checked again: the directory it is in became nobody's and the file nobody's link."""
    d = shared / "d"
    d.mkdir()
    target = d / "t.bin"
    out = shared / "r"
    run_cli("run", "custom", "--set", "bs=4k,8k", "--target", str(target), "--out", str(out), *RUN, *WRITE, check=True)
    lines = (out / "results.jsonl").read_text().splitlines()
    (out / "results.jsonl").write_text(lines[0] + "\n")
    meta = json.loads((out / "run.json").read_text())
    meta["status"] = "interrupted"
    (out / "run.json").write_text(json.dumps(meta))
    os.chown(d, NOBODY.pw_uid, NOBODY.pw_gid)
    target.unlink()
    as_nobody("ln", "-s", str(shared / "secret"), str(target))
    refused(run_cli("resume", str(out)), str(target), "symbolic link of another user")
    untouched(shared)
    assert target.is_symlink()
    assert (out / "results.jsonl").read_text().count("\n") == 1


def digest(path: str) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        h.update(f.read(8 << 20))
    return h.hexdigest()


@needs_loop
def test_nobody_s_link_to_a_block_device_is_refused(loop_factory, shared: Path) -> None:
    """/tmp/x -> /dev/loopN placed by nobody: root's fio would write the device; the device itself is fine."""
    dev = loop_factory(size_mb=16)
    before = digest(dev.path)
    link = Path("/tmp") / f"ptui-dev-{uuid.uuid4().hex[:8]}"
    try:
        as_nobody("ln", "-s", dev.path, str(link))
        proc = run_cli("run", "custom", "--target", str(link), "--out", str(shared / "r"), "--yes", *RUN, *WRITE)
        refused(proc, str(link), "symbolic link of another user (uid 65534)")
        assert digest(dev.path) == before and not (shared / "r").exists()
        # a run whose run.json names the link: resume refuses it, and the TUI's resume confirmation shows why
        out = shared / "r"
        run_cli("run", "custom", "--target", str(shared / "t.bin"), "--out", str(out), *RUN, *WRITE, check=True)
        meta = json.loads((out / "run.json").read_text())
        meta.update(target=str(link), status="interrupted")
        (out / "run.json").write_text(json.dumps(meta))
        (out / "results.jsonl").write_text("")
        refused(run_cli("resume", str(out), "--yes"), str(link), "symbolic link of another user (uid 65534)")
        found = resume_target(out)
        assert not isinstance(found, str) and found.device is not None, found
        for plan in ("write", "read"):
            verdict = cast(dict[str, object], found.device[plan])
            assert verdict["verdict"] == "refused", verdict
            assert "symbolic link of another user (uid 65534)" in " ".join(cast(list[str], verdict["reasons"]))
        assert digest(dev.path) == before
    finally:
        link.unlink(missing_ok=True)
