"""app.core.settings: every environment variable the tool reads is declared there once and read nowhere else; the
results root is worked out there alone; a bad value is one sentence naming the variable and the value, exit 2;
docs/environment.md's table is the module's."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

import pytest

from app.core import settings
from app.core.errors import EXIT_USAGE, UsageError

ROOT = Path(__file__).resolve().parents[2]
APP = ROOT / "app"
SETTINGS = APP / "core" / "settings.py"
DOC = ROOT / "docs" / "environment.md"
NAME = re.compile(r"PROFILER_TUI_[A-Z0-9_]+")
# a read of the environment: os.environ, getenv, click's envvar= (but of a name settings declares), or a variable's
# name as a whole string literal (the way a module passes it to a reader of its own)
READS = re.compile(r"\bos\.environ\b|\bgetenv\b|\bfrom os import\b[^\n]*\benviron\b|\benvvar\s*=\s*(?!settings\.)|"
                   r"[\"']PROFILER_TUI_[A-Z0-9_]+[\"']")


def stray_reads(root: Path) -> list[str]:
    """``file:line: text`` of every read of the environment under ``root`` outside app/core/settings.py."""
    found = []
    for path in sorted(root.rglob("*.py")):
        if path.name == "settings.py" and path.parent in (root, root / "core"):  # the real tree, a made-up one
            continue
        for n, line in enumerate(path.read_text().splitlines(), 1):
            if READS.search(line):
                found.append(f"{path.relative_to(root.parent)}:{n}: {line.strip()}")
    return found


def named_variables(root: Path) -> set[str]:
    """Every PROFILER_TUI_* name written anywhere under ``root`` (code, docstrings, messages, schemas)."""
    return {m for p in root.rglob("*") if p.is_file() and p.suffix in (".py", ".json", ".tcss", ".toml")
            for m in NAME.findall(p.read_text(errors="replace"))}


def test_every_variable_named_in_app_is_declared_once() -> None:
    declared = [v.name for v in settings.VARIABLES]
    assert len(declared) == len(set(declared)), "a variable declared twice"
    own = {v.name for v in settings.VARIABLES if v.own}
    assert own == {n for n in declared if n.startswith("PROFILER_TUI_")}
    missing = named_variables(APP) - own
    assert not missing, f"named in app/ but not declared in app/core/settings.py: {sorted(missing)}"
    for v in settings.VARIABLES:
        assert v.kind and v.default and v.meaning and "\n" not in v.meaning and "|" not in v.meaning, v


def test_no_module_but_settings_reads_the_environment() -> None:
    assert stray_reads(APP) == []


def test_the_scan_finds_a_stray_read(tmp_path: Path) -> None:
    """The scan fails on a new module reading a variable itself (each way a read is written)."""
    app = tmp_path / "app"
    app.mkdir()
    (app / "settings.py").write_text('import os\nX = os.environ.get("PROFILER_TUI_RESULTS")\n')
    (app / "fine.py").write_text('"""Says PROFILER_TUI_RESULTS in its text."""\nfrom app import settings\n'
                                 "ROOT = settings.results_root()\n"
                                 '@click.option("--s", envvar=settings.AGENT_SOCKET.name)\n')
    assert stray_reads(app) == []
    (app / "stray.py").write_text('import os\nX = os.environ.get("PROFILER_TUI_NEW")\nY = os.getenv("HOME")\n'
                                  'NAME = "PROFILER_TUI_OTHER"\n@click.option("--x", envvar="PROFILER_TUI_X")\n')
    assert [s.split(": ")[0] for s in stray_reads(app)] == [f"app/stray.py:{n}" for n in (2, 3, 4, 5)]
    assert named_variables(app) - {v.name for v in settings.VARIABLES} == {"PROFILER_TUI_NEW", "PROFILER_TUI_OTHER",
                                                                                "PROFILER_TUI_X"}


def test_settings_imports_the_standard_library_and_app_errors_only() -> None:
    """The lowest layer: nothing of the app above it, no UI library."""
    tree = ast.parse(SETTINGS.read_text())
    names = {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    names |= {n.module or "" for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
    outside = {n for n in names if n.split(".")[0] not in sys.stdlib_module_names and n != "app.core.errors"}
    assert outside == set()


# --- the results root -----------------------------------------------------------------------------------------


def test_the_results_root_in_its_cases(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("PROFILER_TUI_RESULTS", raising=False)
    assert settings.results_root() == Path("results") and settings.results_root_set() is None
    monkeypatch.setenv("PROFILER_TUI_RESULTS", "")
    assert settings.results_root() == Path("results") and settings.results_root_set() is None
    monkeypatch.setenv("PROFILER_TUI_RESULTS", str(tmp_path))
    assert settings.results_root() == tmp_path and settings.results_root_set() == str(tmp_path)
    assert settings.results_root(tmp_path / "chosen") == tmp_path / "chosen"  # the TUI's Options.results_dir


def test_every_place_asks_the_one_results_root(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """The CLI's default --out, the runs browser's roots and the TUI's options follow the variable, read when
    asked (a test's monkeypatch counts)."""
    from app.engine.sweep import default_out_dir
    from app.store.runs import results_roots

    monkeypatch.setenv("PROFILER_TUI_RESULTS", str(tmp_path / "r"))
    assert default_out_dir("quick").parent == tmp_path / "r"
    assert results_roots()[0] == tmp_path / "r"
    assert results_roots(tmp_path / "o")[0] == tmp_path / "o"
    monkeypatch.delenv("PROFILER_TUI_RESULTS")
    assert results_roots()[0] == Path("results")


# --- bad values -------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("name", "value"), [
    ("PROFILER_TUI_SWAP_WATCH_S", "fast"), ("PROFILER_TUI_SWAP_WATCH_S", "11"), ("PROFILER_TUI_SWAP_WATCH_S", "nan"),
    ("PROFILER_TUI_NO_SPACE_CHECK", "2"), ("PROFILER_TUI_ASCII", "maybe"), ("COLUMNS", "\u00b2"),
])
def test_a_bad_value_is_one_sentence(monkeypatch: pytest.MonkeyPatch, name: str, value: str) -> None:
    for v in ("PROFILER_TUI_SWAP_WATCH_S", "PROFILER_TUI_NO_SPACE_CHECK", "PROFILER_TUI_ASCII", "COLUMNS"):
        monkeypatch.delenv(v, raising=False)
    settings.check()
    monkeypatch.setenv(name, value)
    with pytest.raises(UsageError) as e:
        settings.check()
    text = str(e.value)
    assert e.value.exit_code == EXIT_USAGE and text.startswith(f"{name}={value!r}: expected ") and text.count(".") <= 2
    assert "\n" not in text


def test_values_read_as_before(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PROFILER_TUI_SWAP_WATCH_S", "0.05")
    monkeypatch.setenv("PROFILER_TUI_NO_SPACE_CHECK", "1")
    monkeypatch.setenv("PROFILER_TUI_ASCII", "off")
    settings.check()
    assert settings.swap_watch_s() == 0.05 and settings.no_space_check() and settings.ascii_mode() is False
    monkeypatch.setenv("PROFILER_TUI_NO_SPACE_CHECK", "0")
    assert not settings.no_space_check()
    monkeypatch.setenv("COLUMNS", "²")  # a digit to str.isdigit, not to int(): ignored, as another bad width
    assert settings.columns() is None
    monkeypatch.setenv("COLUMNS", "132")
    assert settings.columns() == 132
    monkeypatch.setenv("SUDO_UID", "x")
    assert settings.sudo_uid() is None
    monkeypatch.setenv("PROFILER_TUI_FLEET_STALL_S", "0")
    with pytest.raises(UsageError, match=r"^PROFILER_TUI_FLEET_STALL_S='0': expected seconds, a whole number"):
        settings.fleet_stall_s(120)


def test_the_command_line_refuses_a_bad_value_with_one_sentence(tmp_path: Path) -> None:
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "PROFILER_TUI_NO_SPACE_CHECK": "sure"}
    proc = subprocess.run([sys.executable, "-m", "app", "presets"], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=60)
    assert proc.returncode == EXIT_USAGE, proc.stderr
    assert proc.stderr == ("profiler-tui: PROFILER_TUI_NO_SPACE_CHECK='sure': expected 1 (or yes, true, on) or 0 "
                           "(or no, false, off).\n")


# --- the docs ----------------------------------------------------------------------------------------------------


def test_the_docs_table_is_the_modules() -> None:
    """docs/environment.md holds app/core/settings.py's table as it prints it (``python -m app.core.settings``)."""
    text = DOC.read_text()
    table = settings.markdown_table()
    assert table in text, ("docs/environment.md's table differs from app/core/settings.py: paste "
                           "`python -m app.core.settings`")
    rows = [line for line in text.splitlines() if line.startswith("| `")]
    assert len(rows) == len(settings.VARIABLES)


def test_a_fio_that_is_not_there_is_named(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """As MLC_PATH and PROFILER_TUI_MEMLAT: the value that was not usable is in the sentence (exit 4)."""
    from app.core.errors import ToolMissing
    from app.runners.fio import fio_binary

    monkeypatch.setenv("FIO", str(tmp_path / "nofio"))
    with pytest.raises(ToolMissing, match=rf"^fio is not installed \(FIO={tmp_path}/nofio is not an executable file\)"):
        fio_binary()
