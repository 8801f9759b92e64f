"""Who may steer what root's fio opens (app.host.safety.trust_reasons), and the test file the tool removes
(app.engine.sweep.LocalTarget): directories and modes made here, no other user needed
(tests/integration/test_target_owners.py
has the other user, nobody, and fio)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from app.core.errors import SafetyError
from app.engine.sweep import DEFAULT_TARGET_NAME, LocalTarget, resolve_target
from app.host import safety
from app.model import runmeta


def test_a_target_in_a_directory_of_this_user_s_is_trusted(tmp_path: Path) -> None:
    assert safety.trust_reasons(str(tmp_path / "new.bin")) == []
    assert safety.trust_reasons(str(tmp_path / "a" / "b" / "new.bin")) == []  # the tool makes a and b
    (tmp_path / "old.bin").write_bytes(b"x")
    assert safety.trust_reasons(str(tmp_path / "old.bin")) == []
    (tmp_path / "link").symlink_to(tmp_path / "old.bin")  # this user's link: followed
    assert safety.trust_reasons(str(tmp_path / "link")) == []


@pytest.mark.parametrize("mode, why", [(0o777, "writable by other users"), (0o775, "writable by its group")])
def test_a_directory_others_can_write_is_refused(tmp_path: Path, mode: int, why: str) -> None:
    d = tmp_path / "d"
    d.mkdir()
    d.chmod(mode)
    for target in (d / "new.bin", d / "sub" / "new.bin"):  # its own directory, or one above a directory to be made
        reasons = safety.trust_reasons(str(target))
        assert len(reasons) == 1 and f"{d} is {why}" in reasons[0], reasons
        verdict = safety.classify(str(target), True)
        assert verdict.verdict == safety.REFUSED and verdict.reasons == reasons
        with pytest.raises(SafetyError) as err:
            safety.check_target(str(target), False, yes=True, allow_destructive=True)
        assert str(target) in str(err.value) and err.value.exit_code == 3


def test_a_sticky_shared_directory_holds_no_file_of_root_s_but_may_be_above_one(tmp_path: Path) -> None:
    d = tmp_path / "sticky"
    d.mkdir()
    d.chmod(0o1777)
    assert safety.shared_sticky(str(d)) and not safety.shared_sticky(str(tmp_path))
    reasons = safety.trust_reasons(str(d / "t.bin"))
    assert len(reasons) == 1 and "sticky directory like /tmp" in reasons[0] and f"or {d} itself" in reasons[0]
    assert safety.trust_reasons(str(d / "own" / "t.bin")) == []  # a directory the tool makes in it
    (d / "own").mkdir()
    assert safety.trust_reasons(str(d / "own" / "t.bin")) == []


def test_a_file_others_can_write_is_refused(tmp_path: Path) -> None:
    f = tmp_path / "t.bin"
    f.write_bytes(b"x")
    f.chmod(0o666)
    reasons = safety.trust_reasons(str(f))
    assert len(reasons) == 1 and f"{f} is writable by other users" in reasons[0]


def test_a_block_device_node_is_not_judged_by_its_owner_or_mode() -> None:
    assert safety.place_reasons("/dev/loop0") == []


def test_a_directory_target_in_a_sticky_shared_directory_gets_a_directory_of_the_tool_s(tmp_path: Path) -> None:
    d = tmp_path / "sticky"
    d.mkdir()
    d.chmod(0o1777)
    local = resolve_target(str(d), tmp_path / "out")
    assert local.path is not None and local.ours and local.own_dir
    made = Path(local.path)
    assert made.name == DEFAULT_TARGET_NAME and made.parent.parent == d and made.parent.name.startswith("profiler-tui-")
    plain = resolve_target(str(tmp_path), tmp_path / "out")
    assert plain.path == str(tmp_path / DEFAULT_TARGET_NAME) and plain.ours and not plain.own_dir
    (tmp_path / DEFAULT_TARGET_NAME).write_bytes(b"")  # there before the run: used, never the tool's
    assert not resolve_target(str(tmp_path), tmp_path / "out").ours
    assert not resolve_target(str(tmp_path / "t.bin"), tmp_path / "out").ours


def test_the_tool_removes_only_the_file_its_fio_left(tmp_path: Path) -> None:
    path = tmp_path / DEFAULT_TARGET_NAME
    local = LocalTarget(str(path), ours=True)
    assert local.seen() is None and not local.remove_scratch()  # nothing there yet
    path.write_bytes(b"laid out")
    entry = local.seen()
    st = path.stat()
    assert entry == {"dir": False, "dev": st.st_dev, "ino": st.st_ino} and local.seen() is None  # unchanged: None
    other = tmp_path / "other"
    other.write_bytes(b"someone else's")
    os.replace(other, path)  # another file at the name since the tool looked: kept
    assert not local.remove_scratch() and path.exists()
    local.seen()
    assert local.remove_scratch() and not path.exists()
    assert not LocalTarget(str(path), ours=False, made=local.made).remove_scratch()


def test_a_link_at_the_scratch_name_is_never_followed_nor_removed(tmp_path: Path) -> None:
    victim = tmp_path / "victim"
    victim.write_bytes(b"keep")
    path = tmp_path / DEFAULT_TARGET_NAME
    path.symlink_to(victim)
    st = victim.stat()
    local = LocalTarget(str(path), ours=True, made=(st.st_dev, st.st_ino))  # even if it named the file pointed to
    assert local.seen() is None and not local.remove_scratch()
    assert path.is_symlink() and victim.read_bytes() == b"keep"


def test_the_tool_s_own_directory_goes_with_its_file_and_resume_reads_what_run_json_recorded(tmp_path: Path) -> None:
    own = tmp_path / "profiler-tui-0123abcd"
    own.mkdir()
    path = own / DEFAULT_TARGET_NAME
    path.write_bytes(b"x")
    local = LocalTarget(str(path), ours=True, own_dir=True)
    entry = local.seen()
    assert entry is not None
    meta = runmeta.parse(runmeta.dumps(runmeta.new({"target": str(path), "target_created_by_tool": True,
                                                     "target_info": {"type": "file", "scratch": entry}},
                                                    tmp_path / "run.json")), tmp_path / "run.json")
    again = LocalTarget.recorded(str(path), meta)
    assert (again.ours, again.own_dir, again.made) == (True, True, local.made)
    assert again.remove_scratch() and not own.exists()
    not_ours = runmeta.parse(runmeta.dumps(runmeta.new({"target": str(path), "target_created_by_tool": False},
                                                       tmp_path / "run.json")), tmp_path / "run.json")
    assert not LocalTarget.recorded(str(path), not_ours).ours


def test_a_read_only_plan_reads_a_file_of_this_user_s_in_a_sticky_shared_directory(tmp_path: Path) -> None:
    """fio reads it with --readonly and never lays it out, and in a sticky directory no one else can replace it; a
    plan that writes, or a file that is not there yet, is still refused."""
    d = tmp_path / "sticky"
    d.mkdir()
    d.chmod(0o1777)
    f = d / "data.bin"
    f.write_bytes(b"x" * 8192)
    assert safety.trust_reasons(str(f), writes=False) == []
    assert "sticky directory like /tmp" in safety.trust_reasons(str(f), writes=True)[0]
    assert "sticky directory like /tmp" in safety.trust_reasons(str(d / "absent.bin"), writes=False)[0]
    f.chmod(0o666)
    assert safety.trust_reasons(str(f), writes=False)  # a file others can write is theirs to change
    if os.geteuid() == 0:
        f.chmod(0o644)
        os.chown(f, 65534, -1)
        assert safety.trust_reasons(str(f), writes=False)  # another user's file
