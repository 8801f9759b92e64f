"""`make run` sets up what running needs and nothing a test needs; `make test` (make setup) adds the rest.

The Makefile is read by make itself (`make -n` prints the commands without running them; `make run-pkgs` prints
the runtime Debian packages) in a copy of the files it reads, so nothing here installs anything.  The real proof on
a pristine Debian root is container/install-test.sh (part of `make test`)."""

from __future__ import annotations

import shutil
import subprocess
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
# what only the tests need: a browser, QEMU, the container tools, an SSH server (its package starts sshd)
TEST_ONLY = ("chromium", "qemu-system-x86", "podman", "runc", "debootstrap", "openssh-server", "busybox-static")
TEST_TOOLS = ("pytest", "mypy", "hypothesis", "ruff", "import-linter")

pytestmark = pytest.mark.skipif(shutil.which("make") is None, reason="needs make")


def _make(tmp_path: Path, *args: str) -> str:
    for name in ("Makefile", "pyproject.toml", "setup.py"):
        shutil.copy2(ROOT / name, tmp_path / name)
    shutil.copytree(ROOT / "native" / "memlat", tmp_path / "native" / "memlat",
                    ignore=shutil.ignore_patterns("build"), dirs_exist_ok=True)
    proc = subprocess.run(["make", "--no-print-directory", *args], cwd=tmp_path, capture_output=True, text=True,
                          timeout=60)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def test_make_run_installs_no_test_package_and_no_dev_extra(tmp_path: Path) -> None:
    run_pkgs = _make(tmp_path, "-s", "run-pkgs").split()
    assert {"fio", "python3-venv", "gcc", "make"} <= set(run_pkgs)
    assert not set(run_pkgs) & set(TEST_ONLY)
    plan = _make(tmp_path, "-n", "run")  # a fresh checkout: no .venv, no engine built
    for pkg in TEST_ONLY:
        assert pkg not in plan.split() and f" {pkg} " not in plan, f"make run would install {pkg}"
    pip = [line for line in plan.splitlines() if "pip install" in line]
    assert any(line.rstrip().endswith("pip install -q -e .") for line in pip), pip
    assert not any("[" in line for line in pip), f"make run installs an extra: {pip}"
    assert ".venv/bin/profiler-tui" in plan and "make -C native/memlat" in plan


def test_make_setup_adds_the_test_packages_and_the_dev_extra(tmp_path: Path) -> None:
    plan = _make(tmp_path, "-n", "setup")
    for pkg in TEST_ONLY:
        assert pkg in plan.replace(";", " ").split(), f"make setup does not install {pkg}"
    assert "pip install -q -e '.[dev,pandas]'" in plan


def test_the_runtime_dependencies_hold_no_test_tool_and_no_pandas() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    names = [d.split(">")[0].split("=")[0].split("<")[0].strip().lower() for d in project["dependencies"]]
    assert not set(names) & {*TEST_TOOLS, "pandas"}, names
    assert project["optional-dependencies"]["pandas"] == ["pandas>=2.2,<4"]
