"""User presets under the rules of config.toml and --out: root never runs a preset another user can change, and
never saves one through another user's link or into another user's directory.  The adversary is ``nobody``
(tests/integration/test_other_users.py: a fresh root-owned directory under /tmp, files and links made or owned
by nobody); runs that get as far as fio would be 1 s on a 4 MiB file."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from app.core.errors import UsageError
from app.plan import presets
from tests.conftest import run_cli
from tests.integration.test_other_users import NOBODY, as_nobody, one_sentence
from tests.integration.test_other_users import shared as shared_dir  # noqa: F401  (a fixture: a fresh directory under /tmp)

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="needs root: the tests chown to nobody")

# nobody's edit of a shipped preset's name: qd-scaling turned into a random write
WRITER = ('name = "qd-scaling"\nkind = "storage"\ndescription = "x"\n[settings]\nrw = "randwrite"\nbs = "4k"\n'
          'runtime = 1\nsize = "4m"\niodepth = 1\n')


def _nobodys(path: Path) -> Path:
    os.lchown(path, NOBODY.pw_uid, NOBODY.pw_gid)
    return path


def _make_config(shared_dir: Path) -> tuple[Path, Path]:
    cfg = shared_dir / "cfg"
    user = cfg / "profiler-tui" / "presets"
    user.mkdir(parents=True)
    return cfg, user


def test_root_does_not_run_a_preset_from_a_config_directory_nobody_owns(shared_dir: Path) -> None:
    """XDG_CONFIG_HOME in a directory nobody owns: nobody's qd-scaling.toml (a random write) is refused by name,
    exit 2, before any file is written; the shipped qd-scaling is not run in its place, and the list says why."""
    cfg, user = _make_config(shared_dir)
    for d in (cfg, cfg / "profiler-tui", user):
        _nobodys(d)
    (user / "qd-scaling.toml").write_text(WRITER)
    _nobodys(user / "qd-scaling.toml")
    env = {"XDG_CONFIG_HOME": str(cfg)}
    target = shared_dir / "t.bin"
    proc = run_cli("run", "qd-scaling", "--target", str(target), "--yes", "--out", str(shared_dir / "out"), env=env)
    one_sentence(proc, str(user), "owned by another user (uid 65534)", "root would run the plan another user wrote")
    assert not target.exists() and not (shared_dir / "out").exists()
    listed = run_cli("presets", env=env)
    assert listed.returncode == 0, listed.stderr
    assert "qd-scaling" not in listed.stdout and "quick" in listed.stdout
    assert listed.stderr.startswith(f"Note: {user}: it is owned by another user (uid 65534)")


@pytest.mark.parametrize("case", ["nobody's file", "group-writable", "world-writable", "symlink"])
def test_a_user_preset_another_user_can_change_is_refused_by_name(shared_dir: Path, case: str) -> None:
    """In root's own presets directory: a file nobody owns, one others can write, or a link (even to a file of
    root's) is not read — run by name exits 2 with one sentence, the list skips it with a note and keeps the
    rest."""
    cfg, user = _make_config(shared_dir)
    real = user / "qd-scaling.toml"
    (user / "mine.toml").write_text(WRITER.replace('"qd-scaling"', '"mine"'))
    if case == "symlink":
        (shared_dir / "elsewhere.toml").write_text(WRITER)
        real.symlink_to(shared_dir / "elsewhere.toml")
        why = "is a symbolic link, which is not followed here"
    else:
        real.write_text(WRITER)
        if case == "nobody's file":
            _nobodys(real)
            why = "is owned by another user (uid 65534)"
        else:
            real.chmod(0o664 if case == "group-writable" else 0o646)
            why = "is writable by its group" if case == "group-writable" else "is writable by other users"
    env = {"XDG_CONFIG_HOME": str(cfg)}
    out = ["--out", str(shared_dir / "out")]
    one_sentence(run_cli("run", "qd-scaling", "--target", str(shared_dir / "t.bin"), *out, env=env), f"{real}: {why}")
    assert not (shared_dir / "t.bin").exists()
    listed = run_cli("presets", env=env)
    assert listed.returncode == 0 and "mine" in listed.stdout and "qd-scaling" not in listed.stdout, listed
    assert listed.stderr == f"Note: {real}: {why}, so {presets.PRESET_RISK}.\n"
    show = run_cli("presets", "show", "mine", env=env)
    assert show.returncode == 0 and "randwrite" in show.stdout, show.stderr


def test_a_preset_path_nobody_can_change_is_refused(shared_dir: Path) -> None:
    """``run PATH``: root runs what the file says, so a file given by path is read under the same rule (once,
    from the descriptor it checked) — nobody's file, or root's own that nobody may write, or nobody's link to a
    file of root's, exit 2."""
    mine = shared_dir / "p.toml"
    mine.write_text(WRITER)
    _nobodys(mine)
    args = ["--target", str(shared_dir / "t.bin"), "--out", str(shared_dir / "out")]
    one_sentence(run_cli("run", str(mine), *args), f"{mine}: is owned by another user (uid 65534)")
    os.chown(mine, 0, 0)
    mine.chmod(0o666)
    one_sentence(run_cli("run", str(mine), *args), f"{mine}: is writable by other users")
    mine.chmod(0o644)
    theirs = shared_dir / "theirs"
    theirs.mkdir()
    link = _nobodys(theirs) / "link.toml"
    assert as_nobody("ln", "-s", str(mine), str(link)).returncode == 0
    one_sentence(run_cli("run", str(link), *args), "is a symbolic link of another user (uid 65534)")
    assert not (shared_dir / "t.bin").exists() and not (shared_dir / "out").exists()
    assert run_cli("presets", "show", str(mine)).returncode == 0, "root's own file, 0644: read"


def test_saving_never_writes_through_nobodys_link_or_into_nobodys_directory(
        shared_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The TUI's ctrl+s saves with save_user_preset: in a config directory nobody owns, nobody's presets/x.toml
    as a link to a root-only file made root overwrite that file.  Now the directory is refused (exit-2 sentence)
    and the file keeps its bytes; in root's own directory a link left there is replaced, never written through."""
    secret = shared_dir / "secret"
    secret.write_text("root only\n")
    secret.chmod(0o600)
    cfg, user = _make_config(shared_dir)
    for d in (cfg, cfg / "profiler-tui", user):
        _nobodys(d)
    assert as_nobody("ln", "-s", str(secret), str(user / "x.toml")).returncode == 0
    monkeypatch.setenv("XDG_CONFIG_HOME", str(cfg))
    text = WRITER.replace('"qd-scaling"', '"x"')
    with pytest.raises(UsageError) as e:
        presets.save_user_preset(text, "x")
    assert str(e.value) == f"{user}: it is owned by another user (uid 65534), so {presets.PRESET_RISK}."
    assert secret.read_text() == "root only\n" and stat.S_IMODE(secret.stat().st_mode) == 0o600
    for d in (cfg, cfg / "profiler-tui", user):
        os.chown(d, 0, 0)
    os.lchown(user / "x.toml", 0, 0)  # root's own link now: still replaced, not followed
    assert presets.save_user_preset(text, "x") == user / "x.toml"
    assert not (user / "x.toml").is_symlink() and (user / "x.toml").read_text() == text
    assert secret.read_text() == "root only\n"
    assert stat.S_IMODE((user / "x.toml").stat().st_mode) == 0o644
