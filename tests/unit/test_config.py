"""The TUI's settings file (app.host.config): hostile content gives one sentence and the defaults, never a traceback;
it is written atomically with mode 0644."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from app.core.units import rate_text, rate_value
from app.host.config import MAX_BYTES, Config, config_path, config_text, load_config, parse_config, save_config

NOBODY = 65534


@pytest.fixture
def cfg(tmp_path: Path) -> Path:
    directory = tmp_path / "profiler-tui"
    directory.mkdir(mode=0o755)
    directory.chmod(0o755)
    return directory / "config.toml"


def write(path: Path, text: str | bytes, mode: int = 0o644) -> None:
    path.write_bytes(text.encode() if isinstance(text, str) else text)
    path.chmod(mode)


def test_the_file_is_under_xdg_config_home(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "x"))
    assert config_path() == tmp_path / "x" / "profiler-tui" / "config.toml"
    monkeypatch.delenv("XDG_CONFIG_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert config_path() == tmp_path / "home" / ".config" / "profiler-tui" / "config.toml"


def test_missing_file_is_the_defaults_silently(cfg: Path) -> None:
    assert load_config(cfg) == (Config(), None)
    assert load_config(cfg.parent / "nowhere" / "config.toml") == (Config(), None)


def test_round_trip_and_fixed_mode(cfg: Path) -> None:
    old = os.umask(0o077)
    try:
        save_config(Config(units="binary"), cfg)
    finally:
        os.umask(old)
    assert stat.S_IMODE(cfg.stat().st_mode) == 0o644
    assert load_config(cfg) == (Config(units="binary"), None)
    save_config(Config(units="decimal"), cfg)
    assert load_config(cfg) == (Config(units="decimal"), None)
    assert sorted(p.name for p in cfg.parent.iterdir()) == ["config.toml"]  # no temp file left


def test_save_creates_the_directory(tmp_path: Path) -> None:
    path = tmp_path / "new" / "profiler-tui" / "config.toml"
    save_config(Config(units="binary"), path)
    assert load_config(path)[0].binary


@pytest.mark.parametrize(("content", "said"), [
    ('units = "binary', "is not valid TOML"),
    ("units = 2", "units = 2 is neither"),
    ('units = "MiB"', "units = 'MiB' is neither"),
    ("units = [\"binary\"]", "is neither"),
    (b"units = \"\xff\"", "is not UTF-8 text"),
    ('units = "bin\\u001b[2Jary"', "units = 'bin\\x1b[2Jary'"),  # an escape sequence is shown escaped, never sent
])
def test_bad_content_is_one_sentence_and_the_defaults(cfg: Path, content: str | bytes, said: str) -> None:
    write(cfg, content)
    config, problem = load_config(cfg)
    assert config == Config()
    assert problem is not None and problem.startswith(f"{cfg}: ") and said in problem, problem
    assert problem.endswith("using the defaults.") and "\n" not in problem and "\x1b" not in problem


def test_unknown_keys_are_ignored(cfg: Path) -> None:
    write(cfg, 'units = "binary"\ntheme = "dark"\n')
    assert load_config(cfg) == (Config(units="binary"), None)


def test_a_symlink_is_not_followed(cfg: Path, tmp_path: Path) -> None:
    target = tmp_path / "elsewhere.toml"
    write(target, 'units = "binary"\n')
    cfg.symlink_to(target)
    config, problem = load_config(cfg)
    assert config == Config() and problem is not None and "symbolic link" in problem


def test_a_huge_file_is_refused(cfg: Path) -> None:
    write(cfg, "# " + "x" * MAX_BYTES + '\nunits = "binary"\n')
    config, problem = load_config(cfg)
    assert config == Config() and problem is not None and "too large" in problem


@pytest.mark.skipif(os.geteuid() != 0, reason="chown to another user needs root")
def test_another_users_file_is_refused(cfg: Path) -> None:
    write(cfg, 'units = "binary"\n')
    os.chown(cfg, NOBODY, NOBODY)
    config, problem = load_config(cfg)
    assert config == Config() and problem is not None and f"owned by another user (uid {NOBODY})" in problem


@pytest.mark.skipif(os.geteuid() != 0, reason="chown to another user needs root")
def test_a_directory_of_another_user_is_refused(cfg: Path) -> None:
    write(cfg, 'units = "binary"\n')
    os.chown(cfg.parent, NOBODY, NOBODY)
    config, problem = load_config(cfg)
    assert config == Config() and problem is not None and "its directory is owned by another user" in problem
    with pytest.raises(OSError, match="another user"):
        save_config(Config(units="binary"), cfg)


@pytest.mark.parametrize("mode", [0o664, 0o646])
def test_a_file_others_can_write_is_refused(cfg: Path, mode: int) -> None:
    write(cfg, 'units = "binary"\n', mode)
    config, problem = load_config(cfg)
    assert config == Config() and problem is not None and "writable by" in problem


def test_not_a_regular_file(cfg: Path) -> None:
    os.mkfifo(cfg)  # a FIFO would block a plain open()
    config, problem = load_config(cfg)
    assert config == Config() and problem is not None and "not a regular file" in problem


def test_rates_in_both_units() -> None:
    assert rate_text(480.0) == "480.0 MB/s"
    assert rate_text(480.0, binary=True) == "457.8 MiB/s"
    assert rate_value(1.048576, binary=True) == pytest.approx(1.0)


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=300))
def test_any_bytes_give_a_config_or_one_sentence(data: bytes) -> None:
    try:
        config = parse_config(data, Path("/c/config.toml"))
    except ValueError as e:
        assert str(e).startswith("/c/config.toml: ") and "\n" not in str(e)
    else:
        assert config.units in ("decimal", "binary")


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=80))
def test_any_units_value_is_checked(value: str) -> None:
    text = 'units = "' + value.replace("\\", "\\\\").replace('"', '\\"') + '"\n'
    try:
        config = parse_config(text.encode("utf-8", "surrogatepass"), Path("c.toml"))
    except ValueError as e:
        assert "\n" not in str(e) and "\x1b" not in str(e)
    else:
        assert config.units == value


@given(st.sampled_from(["decimal", "binary"]))
def test_what_is_written_reads_back(units: str) -> None:
    assert parse_config(config_text(Config(units=units)).encode(), Path("c.toml")) == Config(units=units)


def test_a_control_character_in_the_path_is_not_sent(tmp_path: Path) -> None:
    directory = tmp_path / "x\x1b[2Jy"
    directory.mkdir()
    path = directory / "config.toml"
    write(path, "units = 1")
    config, problem = load_config(path)
    assert config == Config() and problem is not None and "\x1b" not in problem and "units = 1" in problem
