"""Free space is checked before fio starts: on a small tmpfs the run is refused with the sizes."""

from __future__ import annotations

import contextlib
import dataclasses
import os
import subprocess
from pathlib import Path

import pytest

from app.host import space
from app.model.points import StoragePoint
from app.plan import presets
from tests.conftest import fio_processes, run_cli


@contextlib.contextmanager
def small_tmpfs(path: Path, size: str):
    """A tmpfs of ``size`` at ``path``, 0755 (a tmpfs root is 1777 otherwise: no file target of root's there)."""
    if os.geteuid() != 0:
        pytest.skip("needs root to mount a tmpfs")
    path.mkdir(parents=True, exist_ok=True)
    subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size},mode=755", "tmpfs", str(path)], check=True)
    try:
        yield path
    finally:
        subprocess.run(["umount", "-l", str(path)], check=False)


def test_run_refused_before_fio_when_the_test_file_does_not_fit(tmp_path):
    with small_tmpfs(tmp_path / "small", "8m") as vol:
        out = vol / "run"
        proc = run_cli("run", "custom", "--set", "runtime=1", "--set", "size=64m", "--out", str(out))
        assert proc.returncode == 2, proc.stderr
        assert "Traceback" not in proc.stderr
        assert "Not enough free space" in proc.stderr and "64.0 MiB" in proc.stderr and str(out) in proc.stderr
        assert not out.exists()  # nothing left behind: the check comes before the directory is made
        assert fio_processes(vol) == []
        # a size that fits runs
        ok = run_cli("run", "custom", "--set", "runtime=1", "--set", "size=2m", "--out", str(out))
        assert ok.returncode == 0, ok.stderr


def test_named_file_target_on_a_small_volume(tmp_path):
    with small_tmpfs(tmp_path / "small", "8m") as vol:
        proc = run_cli("run", "custom", "--set", "rw=randwrite", "--set", "runtime=1", "--set", "size=32m",
                       "--set", "direct=0", "--target", str(vol / "t.bin"), "--out", str(tmp_path / "out"))
        assert proc.returncode == 2 and f"the test file {vol / 't.bin'}" in proc.stderr, proc.stderr
        assert not (vol / "t.bin").exists()


def sized(*sizes: int) -> list[StoragePoint]:
    """Storage points of the given sizes (the other settings: the custom preset's)."""
    point = presets.load("custom").expand()[0]
    assert isinstance(point, StoragePoint)
    return [dataclasses.replace(point, size=n) for n in sizes]


def test_results_room_counts_points(tmp_path):
    plan = sized(*[1 << 20] * 10)
    free, _ = space.free_bytes(tmp_path)
    space.check_free_space(tmp_path / "out", None, plan, 10, False)
    with pytest.raises(Exception, match="Not enough free space"):
        space.check_free_space(tmp_path / "out", None, plan, free // space.RESULTS_PER_POINT + 1, False)


def test_existing_file_read_only_needs_no_room(tmp_path):
    f = tmp_path / "data.bin"
    f.write_bytes(b"x" * 4096)
    assert space.target_growth(str(f), sized(1 << 40), writes=False) == 0
    assert space.target_growth(str(f), sized(1 << 40), writes=True) > (1 << 39)
    assert space.target_growth(str(tmp_path / "new.bin"), sized(5, 7), writes=False) == 7
