"""Shared test helpers.  Tests run the real tools: fio on files and loop devices they create."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from app.points import MemoryPoint

ROOT = Path(__file__).resolve().parent.parent
DATA = Path(__file__).resolve().parent / "data"


def run_cli(*args: str, timeout: float = 300, env: dict[str, str] | None = None,
            check: bool = False) -> subprocess.CompletedProcess[str]:
    """``python -m app ARGS`` in a subprocess, as a user would run it."""
    full_env = dict(os.environ)
    full_env.setdefault("XDG_CONFIG_HOME", str(Path(os.environ.get("TMPDIR", "/tmp")) / "profiler-tui-test-config"))
    if env:
        full_env.update(env)
    proc = subprocess.run([sys.executable, "-m", "app", *args], capture_output=True, text=True, timeout=timeout,
                          cwd=ROOT, env=full_env)
    if check and proc.returncode != 0:
        raise AssertionError(f"profiler-tui {' '.join(args)} exited {proc.returncode}\n{proc.stdout}\n{proc.stderr}")
    return proc


@pytest.fixture(autouse=True)
def _isolated_user_config(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """Never read or write the developer's own ~/.config/profiler-tui."""
    cfg = tmp_path_factory.mktemp("xdg-config")
    monkeypatch.setenv("XDG_CONFIG_HOME", str(cfg))


def fio_processes(mentioning: str | Path) -> list[str]:
    """Command lines of running fio processes that mention a path (a test's own tmp dir), for leak checks.

    Scoped to a path so that fio started by something else on the machine does not count.
    """
    out = subprocess.run(["pgrep", "-a", "-x", "fio"], capture_output=True, text=True).stdout
    return [ln for ln in out.splitlines() if str(mentioning) in ln]


def mem_point(**changes: object) -> MemoryPoint:
    """A memory plan point: loaded, all reads, delay 0, stride 64, 1 s, no buffer or CPUs given; with
    ``changes`` (an idle point: ``mode="idle", traffic=None, delay=None``)."""
    fields: dict[str, object] = {"mode": "loaded", "traffic": "R", "delay": 0, "stride": 64, "buffer": None,
                                 "duration": 1, "cpus": None, "tlb_locality": None}
    fields.update(changes)
    return MemoryPoint(**fields)  # type: ignore[arg-type]
