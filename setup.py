"""Builds the built-in memory engine into the wheel; everything else is declared in pyproject.toml.

The engine (native/memlat, C) is compiled from source when the wheel is built — by `pipx install .`,
`pip install .`, `pip wheel .` or `python -m build` — and lands inside the package as app/bin/memlat,
where app.runners.memory.find_engine() looks for it. Building on the machine that installs needs only
make and a C compiler, which run on every Linux architecture; a prebuilt binary would need one build per
architecture and libc. The wheel is therefore tagged for this platform (py3-none-<platform>), not pure.

PROFILER_TUI_NO_ENGINE=1 installs without the engine (MLC, or a memlat on PATH, then measures memory).
An editable install (`make setup`) builds nothing here: the checkout uses native/memlat/build/memlat.
"""
import os
import shutil
import subprocess
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

try:  # setuptools ≥ 70.1 has its own; older ones use the wheel package's
    from setuptools.command.bdist_wheel import bdist_wheel
except ImportError:
    from wheel.bdist_wheel import bdist_wheel

ENGINE_SOURCE = Path(__file__).resolve().parent / "native" / "memlat"
NEEDS = ("building the built-in memory engine (native/memlat) needs make and a C compiler: install them "
         "(Debian/Ubuntu: apt-get install gcc make libc6-dev), or set PROFILER_TUI_NO_ENGINE=1 to install "
         "without it")


class BuildPyWithEngine(build_py):
    def run(self) -> None:
        super().run()
        if getattr(self, "editable_mode", False) or os.environ.get("PROFILER_TUI_NO_ENGINE") == "1":
            return
        if not (ENGINE_SOURCE / "Makefile").is_file():
            # the container's image build copies app/ alone and installs memlat on PATH itself
            self.warn(f"{ENGINE_SOURCE} is missing: the package is built without the built-in memory engine")
            return
        if shutil.which(os.environ.get("CC", "gcc")) is None or shutil.which("make") is None:
            raise SystemExit(f"profiler-tui: {NEEDS}")
        work = Path(self.get_finalized_command("build").build_temp).resolve() / "memlat"
        # B= puts the objects in the build's own folder, so the source tree (or sdist) stays untouched
        cmd = ["make", "-C", str(ENGINE_SOURCE), f"B={work}", str(work / "memlat")]
        if subprocess.run(cmd).returncode != 0:
            raise SystemExit(f"profiler-tui: `{' '.join(cmd)}` failed; {NEEDS}")
        target = Path(self.build_lib) / "app" / "bin" / "memlat"
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(work / "memlat", target)
        target.chmod(0o755)


class PlatformWheel(bdist_wheel):
    """A wheel holding a compiled program runs on this platform only, on any Python 3."""

    def finalize_options(self) -> None:
        super().finalize_options()
        self.root_is_pure = False

    def get_tag(self) -> tuple[str, str, str]:
        return "py3", "none", super().get_tag()[2]


setup(cmdclass={"build_py": BuildPyWithEngine, "bdist_wheel": PlatformWheel})
