"""`make test` runs pytest twice (Makefile, test-tiers): the parallel tier (not ``serial``, in pytest-xdist workers)
and then the serial tier.  Together they must run every test of the suite exactly once."""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys

from tests.conftest import ROOT, SERIAL, TESTS, VM

SUMMARY = re.compile(r"^(\d+)/(\d+) tests collected \((\d+) deselected\)")


def tiers() -> dict[str, str]:
    """The Makefile's TEST_PATHS, PARALLEL_TIER and SERIAL_TIER, as make expands them."""
    out = subprocess.run(["make", "-s", "--no-print-directory", "-C", str(ROOT), "print-test-tiers"],
                         capture_output=True, text=True, timeout=60, check=True).stdout
    return dict(line.split("=", 1) for line in out.splitlines() if "=" in line)


def collect(*argv: str) -> subprocess.Popen[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "PROFILER_TUI_TEST"))}
    return subprocess.Popen([sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider", *argv],
                            cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def ids_and_total(proc: subprocess.Popen[str]) -> tuple[list[str], int]:
    out, err = proc.communicate(timeout=240)
    assert proc.returncode == 0, err[-2000:] + out[-2000:]
    lines = out.splitlines()
    summary = [m for m in map(SUMMARY.match, lines) if m]
    assert len(summary) == 1, out[-2000:]
    ids = [line for line in lines if "::" in line]
    assert len(ids) == int(summary[0][1]) and int(summary[0][1]) + int(summary[0][3]) == int(summary[0][2])
    return ids, int(summary[0][2])


def test_the_parallel_and_the_serial_tier_run_every_test_exactly_once() -> None:
    t = tiers()
    paths = shlex.split(t["TEST_PATHS"])
    assert paths == ["tests"], "every test, under tests/"
    procs = [collect(*shlex.split(t[name]), *paths) for name in ("PARALLEL_TIER", "SERIAL_TIER")]
    (parallel, total_p), (serial, total_s) = (ids_and_total(p) for p in procs)
    assert total_p == total_s, "both tiers collect the same suite"
    assert len(set(parallel)) == len(parallel) and len(set(serial)) == len(serial)
    assert not set(parallel) & set(serial), "no test in both tiers"
    assert len(parallel) + len(serial) == total_p, "no test in neither tier"
    assert serial and all(not i.startswith("tests/vm/") for i in parallel), "every QEMU guest test is serial"
    files = {i.split("::", 1)[0] for i in serial}
    assert {f"tests/{name}" for name in SERIAL} <= files, "every file SERIAL names exists and holds tests"


def test_serial_names_files_that_exist() -> None:
    """A renamed file drops out of SERIAL silently otherwise (its tests would run side by side)."""
    assert VM.is_dir()
    missing = sorted(name for name in SERIAL if not (TESTS / name).is_file())
    assert missing == []


def test_the_rerun_of_one_snapshot_test_passes_when_it_passes(tmp_path) -> None:
    """`make test` reruns the tests that failed (RETRY_OPTS, from pytest's cache): a snapshot test rerun alone leaves
    its file's other snapshots unused, which must not fail the rerun (CI saw a rerun pass its one test and exit 1)."""
    cache = tmp_path / "cache"
    (cache / "v" / "cache").mkdir(parents=True)
    node = "tests/tui/test_tui_snapshots.py::test_devices"
    (cache / "v" / "cache" / "lastfailed").write_text(json.dumps({node: True}))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "PROFILER_TUI_TEST"))}
    proc = subprocess.run([sys.executable, "-m", "pytest", *shlex.split(tiers()["RETRY_OPTS"]), "-o",
                           f"cache_dir={cache}", "tests"], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=240)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    assert "1 passed" in proc.stdout and "unused" in proc.stdout, proc.stdout[-2000:]
