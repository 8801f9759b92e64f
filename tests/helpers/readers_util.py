"""Helpers of the tests of everything that reads files (import, report, compare, results reader):
the real CLI entry point in-process, a read-only filesystem, a real fio json+ output."""

from __future__ import annotations

import contextlib
import io
import os
import subprocess
from pathlib import Path
from typing import Iterator

import pytest

from app.cli.commands import main


def cli(*args: str) -> tuple[int, str, str]:
    """``profiler-tui ARGS`` through ``app.cli.commands.main`` in this process: (exit code, stdout, stderr).

    Any exception other than SystemExit (a traceback for a user) propagates and fails the test."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            main(list(args))
        except SystemExit as e:
            code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
        else:
            code = 0
    return code, out.getvalue(), err.getvalue()


def assert_one_sentence(code: int, err: str, *fragments: str) -> None:
    """Exit 2, one line on stderr starting ``profiler-tui:``, naming every fragment, no traceback."""
    assert code == 2, err
    assert "Traceback" not in err
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("profiler-tui:"), err
    for f in fragments:
        assert f in lines[0], (f, lines[0])


@contextlib.contextmanager
def read_only_mount(path: Path, files: dict[str, bytes] | None = None) -> Iterator[Path]:
    """A small tmpfs at ``path`` holding ``files``, remounted read-only (root ignores mode bits, not
    a read-only mount); always unmounted, also when the test fails."""
    if os.geteuid() != 0:
        pytest.skip("needs root to mount a read-only tmpfs")
    path.mkdir(parents=True, exist_ok=True)
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", str(path)],
                      capture_output=True).returncode != 0:
        pytest.skip("cannot mount a tmpfs here")
    try:
        for name, data in (files or {}).items():
            (path / name).parent.mkdir(parents=True, exist_ok=True)
            (path / name).write_bytes(data)
        subprocess.run(["mount", "-o", "remount,ro", str(path)], check=True, capture_output=True)
        with pytest.raises(OSError):
            (path / "probe").write_text("x")  # the mount really is read-only
        yield path
    finally:
        subprocess.run(["umount", "-l", str(path)], capture_output=True)


def fio_json_plus(tmp: Path, name: str = "plus", *extra: str) -> Path:
    """A real fio json+ output (mixed random read/write, total-latency percentiles) saved to a file."""
    out = tmp / f"{name}.json"
    subprocess.run(["fio", f"--name={name}", f"--filename={tmp / 'fio-target.bin'}", "--size=8m", "--runtime=1",
                    "--time_based", "--rw=randrw", "--rwmixread=70", "--bs=4k", "--iodepth=4", "--ioengine=libaio",
                    "--direct=1", "--lat_percentiles=1", "--output-format=json+", f"--output={out}", *extra],
                   check=True, capture_output=True, timeout=60)
    return out
