"""The TUI's settings file, ``$XDG_CONFIG_HOME/profiler-tui/config.toml`` (``~/.config/…`` without it).

It holds what the TUI remembers between sessions (today the units of bandwidths, written by its ``u`` key).
The file is input like any other: read at most MAX_BYTES of a regular file without following a symbolic
link, refused when another user owns it or can write it (or the directory it is in), and anything wrong
with it is one sentence naming the file, key and value; the TUI then uses the defaults and says so.  It is
written atomically (temp file, fsync, rename) with mode 0644.
"""

from __future__ import annotations

import errno
import os
import stat
import tomllib
from dataclasses import dataclass
from pathlib import Path

from app.core import settings
from app.core.sanitize import clean_text, show_value
from app.store.results import NotRegularFile, foreign, read_regular, trusted_uids, write_atomic

CONFIG_NAME = "config.toml"
MAX_BYTES = 64 * 1024  # a settings file of a few lines; anything larger is not one
UNITS = ("decimal", "binary")  # MB/s (10^6 B/s) or MiB/s (2^20 B/s)


@dataclass(frozen=True)
class Config:
    units: str = "decimal"

    @property
    def binary(self) -> bool:
        return self.units == "binary"


def config_dir() -> Path:
    """Where the settings live: the directory of the user presets' parent (app.plan.presets.user_dir)."""
    return settings.config_home() / "profiler-tui"


def config_path() -> Path:
    return config_dir() / CONFIG_NAME


def load_config(path: Path | None = None) -> tuple[Config, str | None]:
    """The settings and, when the file cannot be used, one sentence saying why (the defaults are returned
    then).  A missing file is no problem: the defaults, silently."""
    path = config_path() if path is None else path
    shown = clean_text(path)  # $XDG_CONFIG_HOME is named in the sentence: no control character from it
    try:
        data = _read(path)
    except FileNotFoundError:
        return Config(), None
    except _Refused as e:
        return Config(), f"{shown}: {e}; using the defaults."
    except OSError as e:
        return Config(), f"{shown}: cannot be read ({clean_text(e.strerror or e)}); using the defaults."
    try:
        return parse_config(data, Path(shown)), None
    except ValueError as e:
        return Config(), f"{e}; using the defaults."


class _Refused(Exception):
    """A settings file this tool does not read (the message says why)."""


def _read(path: Path) -> bytes:
    """At most MAX_BYTES + 1 bytes of ``path``, checked on the descriptor that reads it: a regular file (a last
    symbolic link not followed, a FIFO not waited on) that only root or this user can change."""
    why = foreign(os.stat(path.parent))  # FileNotFoundError: no settings yet
    if why:
        raise _Refused(f"its directory {why}")

    def ours(st: os.stat_result) -> None:
        if st.st_uid not in trusted_uids():
            raise _Refused(f"is owned by another user (uid {st.st_uid})")
        if st.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
            raise _Refused("is writable by other users" if st.st_mode & stat.S_IWOTH else "is writable by its group")

    try:
        data = read_regular(path, MAX_BYTES, check=ours)
    except NotRegularFile:
        raise _Refused("is not a regular file") from None
    except OSError as e:
        if e.errno == errno.ELOOP:
            raise _Refused("is a symbolic link, which is not followed") from None
        raise
    if len(data) > MAX_BYTES:
        raise _Refused(f"is larger than {MAX_BYTES // 1024} KiB, too large for a settings file")
    return data


def parse_config(data: bytes, path: Path) -> Config:
    """The settings in ``data`` (the content of ``path``); ValueError with one sentence naming the file, key and
    value.  Keys it does not know are ignored (a newer version's settings)."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise ValueError(f"{path}: is not UTF-8 text") from None
    try:
        table = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise ValueError(f"{path}: is not valid TOML ({show_value(str(e), 80)[1:-1]})") from None
    units = table.get("units", Config.units)
    if not isinstance(units, str) or units not in UNITS:
        raise ValueError(f"{path}: units = {show_value(units)} is neither \"decimal\" nor \"binary\"")
    return Config(units=units)


def config_text(config: Config) -> str:
    return ("# profiler-tui settings (the TUI's `u` key writes this file)\n"
            "# units: \"decimal\" (MB/s, 10^6 bytes) or \"binary\" (MiB/s, 2^20 bytes)\n"
            f"units = \"{config.units}\"\n")


def save_config(config: Config, path: Path | None = None) -> None:
    """Write the settings (atomically, mode 0644), creating the directory (0755) when needed.  OSError with a
    message naming the file when it cannot, among them a directory another user can change."""
    path = config_path() if path is None else path
    os.makedirs(path.parent, mode=0o755, exist_ok=True)
    fd = os.open(path.parent, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        why = foreign(os.fstat(fd))
        if why:
            raise OSError(errno.EPERM, f"its directory {why}", str(path))
        write_atomic(Path(path.name), config_text(config), dir_fd=fd)
    finally:
        os.close(fd)
