"""The package as a user installs it: `python -m build` makes the sdist and, from it, the wheel; the wheel goes
into a fresh venv, and the installed `profiler-tui` lists its presets, runs a storage preset and runs the
built-in memory engine that setup.py compiled into the wheel — from a folder where the checkout is not importable.

The venv borrows the third-party dependencies (click, textual, pandas…) from the running interpreter's
site-packages through a .pth line, so nothing is downloaded; a .pth inside that folder is not read (Python reads
.pth files in site directories only), so the checkout's editable install does not leak in, and the test checks
that `app` and the engine are the venv's own."""
import json
import shutil
import subprocess
import sys
import sysconfig
import venv
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
# what the sdist is made from: a copy, so the build's egg-info and build/ folders never touch the checkout
SOURCES = ("app", "presets", "native/memlat", "pyproject.toml", "setup.py", "MANIFEST.in", "README.md")
SKIP = shutil.ignore_patterns("__pycache__", "build", "*.egg-info")

pytestmark = pytest.mark.skipif(shutil.which("make") is None or shutil.which("gcc") is None,
                                reason="building the wheel compiles the memory engine: needs make and gcc")


def _copy_sources(dest: Path) -> None:
    for name in SOURCES:
        src = ROOT / name
        if src.is_dir():
            shutil.copytree(src, dest / name, ignore=SKIP)
        else:
            shutil.copy2(src, dest / name)


def _run(args: list[str], cwd: Path, timeout: int = 120) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(args, cwd=cwd, capture_output=True, text=True, timeout=timeout)
    assert proc.returncode == 0, f"{args} exited {proc.returncode}:\n{proc.stdout}\n{proc.stderr}"
    return proc


def _results(out: Path) -> list[dict[str, object]]:
    return [json.loads(x) for x in (out / "results.jsonl").read_text().splitlines() if x.strip()]


def test_wheel_installs_a_working_tool(tmp_path: Path) -> None:
    src, dist, env, work = tmp_path / "src", tmp_path / "dist", tmp_path / "venv", tmp_path / "work"
    _copy_sources(src)
    work.mkdir()
    _run([sys.executable, "-m", "build", "--outdir", str(dist), str(src)], work, timeout=240)
    sdist = next(dist.glob("*.tar.gz"))
    listing = _run(["tar", "tzf", str(sdist)], work).stdout
    assert "native/memlat/src/main.c" in listing and "presets/quick.toml" in listing
    wheel = next(dist.glob("*.whl"))
    assert "-none-" in wheel.name and not wheel.name.endswith("-any.whl")  # it holds a compiled program

    venv.create(env, with_pip=False)
    site = Path(sysconfig.get_path("purelib", vars={"base": str(env), "platbase": str(env)}))
    (site / "deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    _run([sys.executable, "-m", "pip", "--python", str(env / "bin" / "python"), "install", "-q", "--no-deps",
          "--no-index", str(wheel)], work)
    tool = str(env / "bin" / "profiler-tui")

    where = _run([str(env / "bin" / "python"), "-c", "import app; print(app.__file__)"], work).stdout.strip()
    assert where.startswith(str(env)), where
    version = _run([tool, "--version"], work).stdout
    assert f"built-in engine (memlat) at {site / 'app' / 'bin' / 'memlat'}" in version or "Intel MLC at" in version

    presets = _run([tool, "presets"], work).stdout
    assert "quick" in presets and "mem-idle" in presets

    out = tmp_path / "quick"
    _run([tool, "run", "quick", "--set", "runtime=1", "--set", "repeat=1", "--set", "size=16m", "--yes", "--target",
          str(tmp_path / "target.img"), "--out", str(out)], work)
    assert len(_results(out)) == 8

    out = tmp_path / "mem"
    _run([tool, "run", "mem-idle", "--engine", "builtin", "--set", "duration=1", "--out", str(out)], work)
    lines = _results(out)
    assert len(lines) == 1 and lines[0]["engine"] == "builtin", lines
