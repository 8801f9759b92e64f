"""Every environment variable profiler-tui reads, declared once, and the results root.

The lowest layer: it imports the standard library and :mod:`app.core.errors` only, so any module may use it.  No
other module of ``app/`` reads ``os.environ`` (tests/unit/test_settings.py scans for it): each asks the typed
accessor here, which reads the variable when it is called — never at import time, so a test's ``monkeypatch``
and a variable set by the caller both count.  :data:`VARIABLES` is the table docs/environment.md shows.

Two kinds of variable:

* the tool's own, ``PROFILER_TUI_*``: where results go, other roots for the kernel's trees and programs (the
  tests' fake ones), switches and fleet settings;
* variables of the system and of other programs, read here because the tool's behaviour depends on them:
  ``TERM``, ``COLUMNS``, ``TMUX``, ``NO_COLOR`` and ``TEXTUAL_DRIVER`` (how it draws), ``SUDO_UID`` (whose
  directories root may use), ``XDG_CONFIG_HOME`` and ``HOME`` (where settings and user presets live), ``FIO``,
  ``MLC_PATH`` and ``DOCKER_HOST`` (which program or engine it uses), ``container`` (whether it runs in one).
  ``HOME`` is also read by ``os.path.expanduser`` where a path the user typed starts with ``~`` (a target, an
  import or export path): the user's own word, expanded where it is read.
  Variables the tool only passes on (``PATH`` to the programs it starts, the locale) are not read here.

A value the tool cannot use is one sentence naming the variable and the value, exit 2 (:class:`UsageError`):
:func:`check` makes the checks of the variables whose bad value was once ignored without a word, when the
command line starts; the others are checked where they are used (a fleet host's socket, ssh's configuration).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from app.core.errors import UsageError

# the directory a run without --out writes under, relative to the working directory
DEFAULT_RESULTS = "results"
DEFAULT_TUNE_DIR = "/run/profiler-tui/tune"
_YES = frozenset({"1", "yes", "true", "on"})
_NO = frozenset({"0", "no", "false", "off"})
MAX_SHOWN = 40  # characters of a bad value quoted back


@dataclass(frozen=True)
class Variable:
    """One environment variable: its name, the kind of value, what applies when it is unset, what it means."""

    name: str
    kind: str
    default: str
    meaning: str
    own: bool = True  # a PROFILER_TUI_* variable (False: the system's or another program's)

    def value(self, env: Mapping[str, str] | None = None) -> str | None:
        """The value as set, None when unset or blank (``env``: a mapping to read instead of the environment)."""
        text = (os.environ if env is None else env).get(self.name)
        return text if text is not None and text.strip() else None

    def bad(self, value: str, expected: str) -> UsageError:
        """The one sentence (exit 2) for a value this variable cannot take."""
        return UsageError(f"{self.name}={value[:MAX_SHOWN]!r}: expected {expected}.")


# --- the tool's own -------------------------------------------------------------------------------------------

RESULTS = Variable("PROFILER_TUI_RESULTS", "directory", DEFAULT_RESULTS,
                   "the results root: where a run without --out writes, what the TUI's runs browser lists "
                   "(with a container's /results)")
HOST_RESULTS = Variable("PROFILER_TUI_HOST_RESULTS", "directory", "unset",
                        "in a container, the host's folder mounted on the results root: results paths are also "
                        "shown as the host sees them")
PRESETS = Variable("PROFILER_TUI_PRESETS", "directory", "the repository's presets/, else the installed copy",
                   "the shipped presets")
MEMLAT = Variable("PROFILER_TUI_MEMLAT", "file", "native/memlat's build, else memlat on PATH",
                  "the built-in memory engine's binary")
SYSFS = Variable("PROFILER_TUI_SYSFS", "directory", "/sys", "the sysfs root read (the tests' fake trees)")
PROCFS = Variable("PROFILER_TUI_PROCFS", "directory", "/proc", "the procfs root read (the tests' fake trees)")
TUNE_DIR = Variable("PROFILER_TUI_TUNE_DIR", "directory", DEFAULT_TUNE_DIR, "where --tune keeps its restore records")
SWAP_WATCH_S = Variable("PROFILER_TUI_SWAP_WATCH_S", "seconds, 0.01 to 10", "0.5",
                        "how long the host audit watches /proc/vmstat for swapping (the tests shorten it)")
NO_SPACE_CHECK = Variable("PROFILER_TUI_NO_SPACE_CHECK", "switch", "0",
                          "1 skips the free-space check before a run (a filesystem whose free space statvfs "
                          "misreports)")
ASCII = Variable("PROFILER_TUI_ASCII", "switch", "TERM decides",
                 "1 draws the TUI in ASCII only, 0 never (as --ascii)")
IMAGES = Variable("PROFILER_TUI_IMAGES", "kitty, sixel, halfblock or none", "the terminal decides",
                  "how the TUI draws figures as pictures (another value: a warning, the terminal decides)")
AGENT_SOCKET = Variable("PROFILER_TUI_AGENT_SOCKET", "absolute path", "/run/profiler-tui/agent.sock",
                        "the fleet agents' socket on ssh:// hosts (as --agent-socket)")
FLEET_STALL_S = Variable("PROFILER_TUI_FLEET_STALL_S", "whole seconds, 1 to 86400", "120",
                         "the grace after which a fleet point with no answer and no I/O is stopped")
SSH_CONFIG = Variable("PROFILER_TUI_SSH_CONFIG", "file", "unset",
                      "an ssh_config passed to every ssh (-F); refused when another user can change it")
REMOTE_COMMAND = Variable("PROFILER_TUI_REMOTE_COMMAND", "command", "profiler-tui",
                          "how profiler-tui is run on fleet hosts")
DOCKER_URL = Variable("PROFILER_TUI_DOCKER_URL", "unix://, tcp:// or ssh:// URL", "the host's own engine",
                      "the Docker Engine API that starts every host's agent (--start-agent)")
DOCKER_SOCKET = Variable("PROFILER_TUI_DOCKER_SOCKET", "absolute path", "/var/run/docker.sock",
                         "the engine's socket on ssh:// hosts (--start-agent)")

# --- the system's and other programs' ---------------------------------------------------------------------

TERM = Variable("TERM", "terminal name", "unset", "dumb: the CLI prints plain text; a console: the TUI in ASCII; "
                "whether the terminal is asked about pictures", own=False)
COLUMNS = Variable("COLUMNS", "whole number, 21 to 9999", "the terminal's width",
                   "the width the CLI's tables fit (another value is ignored, as by other programs)", own=False)
TMUX = Variable("TMUX", "set by tmux", "unset", "inside tmux: pictures go through its passthrough", own=False)
NO_COLOR = Variable("NO_COLOR", "any", "unset", "monochrome TUI (Textual's rule); ASCII mode keeps 16 colours",
                    own=False)
TEXTUAL_DRIVER = Variable("TEXTUAL_DRIVER", "Textual driver", "unset",
                          "set: Textual's driver instead of the tool's terminal driver", own=False)
SUDO_UID = Variable("SUDO_UID", "user id, set by sudo", "unset",
                    "under sudo, the invoking user's directories are trusted too", own=False)
XDG_CONFIG_HOME = Variable("XDG_CONFIG_HOME", "directory", "$HOME/.config",
                           "its profiler-tui/ holds the settings and the user presets", own=False)
HOME = Variable("HOME", "directory", "the user's home",
                "where $XDG_CONFIG_HOME defaults to; what ~ means in a path typed to the tool", own=False)
FIO = Variable("FIO", "file", "fio on PATH", "the fio binary", own=False)
MLC_PATH = Variable("MLC_PATH", "file or directory", "mlc on PATH, else /opt/mlc/mlc",
                    "Intel MLC's binary (or its directory)", own=False)
DOCKER_HOST = Variable("DOCKER_HOST", "URL", "unix:///var/run/docker.sock",
                       "the engine that starts an agent for a unix:// host (--start-agent)", own=False)
CONTAINER = Variable("container", "engine name, set by the engine", "unset",
                     "the container engine the tool runs in (else its marker files and cgroups say)", own=False)

VARIABLES: tuple[Variable, ...] = (
    RESULTS, HOST_RESULTS, PRESETS, MEMLAT, SYSFS, PROCFS, TUNE_DIR, SWAP_WATCH_S, NO_SPACE_CHECK, ASCII, IMAGES,
    AGENT_SOCKET, FLEET_STALL_S, SSH_CONFIG, REMOTE_COMMAND, DOCKER_URL, DOCKER_SOCKET,
    TERM, COLUMNS, TMUX, NO_COLOR, TEXTUAL_DRIVER, SUDO_UID, XDG_CONFIG_HOME, HOME, FIO, MLC_PATH, DOCKER_HOST,
    CONTAINER,
)


def environ() -> Mapping[str, str]:
    """The whole environment, for what reads several variables from one mapping (the TUI's terminal checks, which
    tests give a mapping of their own) or hands it to a library (rich's console)."""
    return os.environ


# --- the results root -----------------------------------------------------------------------------------------


def results_root(configured: str | os.PathLike[str] | None = None) -> Path:
    """The results root: ``configured`` when given (the TUI's ``Options.results_dir``), else
    ``$PROFILER_TUI_RESULTS``, else ``results`` in the working directory.  A run without ``--out`` writes a new
    directory under it; the runs browser lists it (and a container's /results: app.store.runs.results_roots)."""
    if configured:
        return Path(configured)
    return Path(RESULTS.value() or DEFAULT_RESULTS)


def results_root_set() -> str | None:
    """``$PROFILER_TUI_RESULTS`` as set (None: unset), for what tells the configured root from the default."""
    return RESULTS.value()


# --- typed accessors ------------------------------------------------------------------------------------------


def host_results() -> str | None:
    return HOST_RESULTS.value()


def presets_dir() -> Path | None:
    value = PRESETS.value()
    return Path(value) if value else None


def memlat() -> str | None:
    return os.environ.get(MEMLAT.name) or None


def sysfs_root() -> Path:
    return Path(SYSFS.value() or "/sys")


def procfs_root() -> Path:
    return Path(PROCFS.value() or "/proc")


def tune_dir() -> Path:
    return Path(TUNE_DIR.value() or DEFAULT_TUNE_DIR)


def swap_watch_s() -> float | None:
    """Seconds the audit's swap watch lasts, None when unset; another value than 0.01 to 10 is a UsageError."""
    text = SWAP_WATCH_S.value()
    if text is None:
        return None
    try:
        seconds = float(text[:16]) if len(text) <= 16 else float("nan")
    except ValueError:
        seconds = float("nan")
    if not 0.01 <= seconds <= 10:
        raise SWAP_WATCH_S.bad(text, "a number of seconds from 0.01 to 10")
    return seconds


def switch(variable: Variable, env: Mapping[str, str] | None = None) -> bool | None:
    """A switch: True for 1/yes/true/on, False for 0/no/false/off, None when unset; else a UsageError."""
    text = variable.value(env)
    if text is None:
        return None
    word = text.strip().lower()
    if word in _YES or word in _NO:
        return word in _YES
    raise variable.bad(text, "1 (or yes, true, on) or 0 (or no, false, off)")


def no_space_check() -> bool:
    return bool(switch(NO_SPACE_CHECK))


def ascii_mode(env: Mapping[str, str] | None = None) -> bool | None:
    """``PROFILER_TUI_ASCII``: True or False when set, None when TERM decides; a bad value is a UsageError."""
    return switch(ASCII, env)


def images(env: Mapping[str, str] | None = None) -> str | None:
    """``PROFILER_TUI_IMAGES`` as set (app.widgets.termcaps judges it: a bad value is a warning there)."""
    return IMAGES.value(env)


def agent_socket() -> str | None:
    """``PROFILER_TUI_AGENT_SOCKET``, stripped (app.fleet.hosts checks it)."""
    value = AGENT_SOCKET.value()
    return value.strip() if value else None


def whole_number(variable: Variable, default: int, high: int, expected: str) -> int:
    """``variable`` as a whole number from 1 to ``high``, ``default`` when unset; else a UsageError naming
    ``expected``."""
    value = variable.value()
    if value is None:
        return default
    text = value.strip()
    if not text.isascii() or not text.isdigit() or len(text) > len(str(high)) or not 1 <= int(text) <= high:
        raise UsageError(f"{variable.name}={text[:MAX_SHOWN]!r}: expected {expected}, a whole number from 1 to "
                         f"{high}.")
    return int(text)


def fleet_stall_s(default: int) -> int:
    return whole_number(FLEET_STALL_S, default, 86400, "seconds")


def ssh_config() -> str | None:
    return os.environ.get(SSH_CONFIG.name) or None


def remote_command() -> str:
    return os.environ.get(REMOTE_COMMAND.name) or "profiler-tui"


def docker_url() -> str | None:
    value = DOCKER_URL.value()
    return value.strip() if value else None


def docker_socket() -> str | None:
    value = DOCKER_SOCKET.value()
    return value.strip() if value else None


def term(env: Mapping[str, str] | None = None) -> str:
    return (os.environ if env is None else env).get(TERM.name, "")


def columns() -> int | None:
    """``COLUMNS`` when it is a width from 21 to 9999, else None (another value is ignored, as other programs do)."""
    text = os.environ.get(COLUMNS.name, "")
    return int(text) if text.isascii() and text.isdigit() and 20 < int(text) < 10_000 else None


def textual_driver() -> str | None:
    return TEXTUAL_DRIVER.value()


def sudo_uid() -> int | None:
    """The invoking user's id under sudo (None when unset or not a user id)."""
    text = os.environ.get(SUDO_UID.name, "")
    return int(text) if text.isascii() and text.isdigit() and len(text) <= 10 else None


def config_home() -> Path:
    """``$XDG_CONFIG_HOME``, else ``~/.config``: its profiler-tui/ holds the settings and the user presets."""
    return Path(os.environ.get(XDG_CONFIG_HOME.name) or os.path.join(os.path.expanduser("~"), ".config"))


def fio() -> str:
    return os.environ.get(FIO.name) or "fio"


def mlc_path() -> str | None:
    return os.environ.get(MLC_PATH.name) or None


def docker_host() -> str | None:
    value = DOCKER_HOST.value()
    return value.strip() if value else None


def container() -> str | None:
    return os.environ.get(CONTAINER.name) or None


# --- checks when the command line starts, and the docs' table ---------------------------------------------------


def check() -> None:
    """A UsageError (exit 2) for a variable whose bad value the code that reads it would pass over without a
    word (the audit's swap watch, the free-space switch, ASCII mode) or end in a traceback (a COLUMNS of other
    digits than 0-9, which rich reads with int()): said once, before anything runs."""
    swap_watch_s()
    switch(NO_SPACE_CHECK)
    switch(ASCII)
    width = COLUMNS.value()
    if width is not None and width.isdigit() and not width.isascii():  # "²": rich's int() of it is a traceback
        raise COLUMNS.bad(width, "a width in the digits 0 to 9")


def markdown_table() -> str:
    """docs/environment.md's table of :data:`VARIABLES` (tests/unit/test_settings.py keeps the two equal)."""
    rows = ["| variable | value | when unset | what it does |", "|---|---|---|---|"]
    rows += [f"| `{v.name}` | {v.kind} | {v.default} | {v.meaning} |" for v in VARIABLES]
    return "\n".join(rows)


if __name__ == "__main__":
    print(markdown_table())
