"""root never starts a program another user can change (app.host.programs): fio, MLC, the memory engine and the small
tools are used only when the binary and every directory above it are changeable by root (or the tool's user) alone.
Fake binaries in a temporary tree; the other user is ``nobody``."""

from __future__ import annotations

import os
import pwd
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from app.core.errors import SafetyError
from app.host.external import run_bounded
from app.host.programs import untrusted, which_trusted
from app.runners import memory
from app.runners.fio import fio_binary

NOBODY = pwd.getpwnam("nobody").pw_uid
pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="needs root: the test gives files to nobody")


def program(where: Path, name: str = "tool", mode: int = 0o755) -> Path:
    where.mkdir(parents=True, exist_ok=True)
    p = where / name
    p.write_text("#!/bin/sh\necho ran\n")
    os.chmod(p, mode)
    return p


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    os.chmod(tmp_path, 0o755)
    for d in tmp_path.parents:  # pytest's base directory is root's and 0700: walkable, changeable by root only
        assert not os.stat(d).st_mode & stat.S_IWOTH or os.stat(d).st_mode & stat.S_ISVTX
    return tmp_path


def test_a_program_of_roots_in_roots_directories_is_used(tree: Path) -> None:
    p = program(tree / "bin")
    assert untrusted(str(p)) is None
    assert which_trusted(str(p)) == (str(p), None)


def test_another_users_binary_is_refused(tree: Path) -> None:
    p = program(tree / "bin")
    os.chown(p, NOBODY, -1)
    assert "owned by another user" in (untrusted(str(p)) or "")
    path, why = which_trusted(str(p))
    assert path is None and why is not None and "root would run what that user puts there" in why


@pytest.mark.parametrize("mode, word", [(0o775, "group"), (0o757, "other users")])
def test_a_binary_others_can_write_is_refused(tree: Path, mode: int, word: str) -> None:
    p = program(tree / "bin", mode=mode)
    assert word in (untrusted(str(p)) or "")


def test_a_directory_above_that_another_user_can_change_is_refused(tree: Path) -> None:
    p = program(tree / "theirs" / "bin")
    os.chown(tree / "theirs", NOBODY, -1)  # they can rename bin/ and put their own in its place
    assert str(tree / "theirs") in (untrusted(str(p)) or "")
    os.chown(tree / "theirs", 0, -1)
    os.chmod(tree / "theirs", 0o777)
    assert "writable by other users" in (untrusted(str(p)) or "")
    os.chmod(tree / "theirs", 0o1777)  # sticky, like /tmp: root's file in it cannot be replaced by others
    assert untrusted(str(p)) is None


def test_a_link_is_judged_by_where_it_leads(tree: Path) -> None:
    p = program(tree / "bin")
    os.chown(p, NOBODY, -1)
    link = tree / "link"
    link.symlink_to(p)
    assert "owned by another user" in (untrusted(str(link)) or "")


def test_fio_from_an_untrusted_place_is_a_safety_refusal(tree: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    p = program(tree / "bin", "fio")
    os.chown(p, NOBODY, -1)
    monkeypatch.setenv("FIO", str(p))
    with pytest.raises(SafetyError, match="fio at .*owned by another user"):
        fio_binary()


def test_mlc_and_the_engine_from_untrusted_places_are_not_used(tree: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    mlc = program(tree / "opt", "mlc")
    engine = program(tree / "eng", "memlat")
    for p in (mlc, engine):
        os.chown(p, NOBODY, -1)
    monkeypatch.setenv("MLC_PATH", str(mlc))
    monkeypatch.setenv("PROFILER_TUI_MEMLAT", str(engine))
    path, why = memory.find_mlc()
    assert path is None and why is not None and why.startswith(f"MLC at {mlc}")
    path, why = memory.find_engine()
    assert path is None and why is not None and why.startswith(f"the memory engine at {engine}")
    monkeypatch.delenv("MLC_PATH")
    monkeypatch.setattr(memory, "MLC_DEFAULT_PATH", str(mlc))
    monkeypatch.setenv("PATH", str(tree / "empty"))
    assert memory.find_mlc()[0] is None


def test_a_tool_on_path_that_another_user_can_change_is_not_started(tree: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    p = program(tree / "bin", "lsblk")
    monkeypatch.setenv("PATH", f"{tree / 'bin'}:{os.environ['PATH']}")
    assert run_bounded(["lsblk"], 5).stdout == b"ran\n"
    os.chown(p, NOBODY, -1)
    out = run_bounded(["lsblk"], 5)
    assert out.returncode is None and out.failure is not None and "owned by another user" in out.failure


def test_the_cli_names_the_untrusted_fio_in_one_sentence(tree: Path) -> None:
    p = program(tree / "bin", "fio")
    os.chown(p, NOBODY, -1)
    env = dict(os.environ, FIO=str(p))
    proc = subprocess.run([sys.executable, "-m", "app", "run", "custom", "--set", "runtime=1", "--out",
                           str(tree / "out")], capture_output=True, text=True, env=env, timeout=120,
                          cwd=Path(__file__).resolve().parents[2])
    assert proc.returncode == 3, proc.stderr
    assert [ln for ln in proc.stderr.splitlines() if ln.strip()] == [proc.stderr.strip()]
    assert f"fio at {p}" in proc.stderr and "Traceback" not in proc.stderr
    assert not (tree / "out").exists()


def test_an_ssh_config_another_user_can_change_is_refused(tree: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """ssh checks no owner or mode of a file given with -F, and its ProxyCommand runs as root."""
    from app.core.errors import UsageError
    from app.fleet.hosts import parse_host
    from app.fleet.links import ssh_base

    host = parse_host("ssh://127.0.0.1:2222")
    config = tree / "ssh_config"
    config.write_text("Host *\n  ProxyCommand touch /tmp/owned\n")
    monkeypatch.setenv("PROFILER_TUI_SSH_CONFIG", str(config))
    assert ssh_base(host)[1:3] == ["-F", str(config)]
    os.chown(config, NOBODY, -1)
    with pytest.raises(SafetyError, match="another user could make ssh run any command as root"):
        ssh_base(host)
    os.chown(config, 0, -1)
    os.chmod(config, 0o666)
    with pytest.raises(SafetyError, match="writable by other users"):
        ssh_base(host)
    monkeypatch.setenv("PROFILER_TUI_SSH_CONFIG", str(tree / "missing"))
    with pytest.raises(UsageError, match="no such regular file"):
        ssh_base(host)
