"""Shared test helpers.  Tests run the real tools: fio on files and loop devices they create."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Callable

import pytest
from hypothesis import HealthCheck, settings

from app.model.points import MemoryPoint

ROOT = Path(__file__).resolve().parent.parent
DATA = Path(__file__).resolve().parent / "data"
INTEGRATION = Path(__file__).resolve().parent / "integration"
VM = Path(__file__).resolve().parent / "vm"
# every run starts with the host audit, which watches /proc/vmstat for swap activity for 0.5 s: the suite's few
# hundred runs watch it for 0.05 s (still two real readings; tests/unit/test_audit.py covers the watch itself)
os.environ.setdefault("PROFILER_TUI_SWAP_WATCH_S", "0.05")
pytest_plugins = ["tests.helpers.vm_fixtures"]  # the QEMU guests of tests/vm (tests/helpers/vm_fixtures.py)
# Hypothesis's too_slow health check times the generation of inputs, which a loaded machine (CI, pytest-xdist
# workers beside each other) slows without any fault of the test: it fails a test for the machine's load, so it is
# off for the suite.  Every property still runs its examples; filter_too_much and the others stay on.
settings.register_profile("suite", suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("suite")
# `make check` (the inner loop) sets PROFILER_TUI_TEST_EXAMPLES=20: a Hypothesis test that asks for more examples
# runs that many (the first ones of its derandomized sequence); `make test` runs every test's own count
EXAMPLES_CAP = int(os.environ.get("PROFILER_TUI_TEST_EXAMPLES", "0") or 0)


def pytest_configure(config: pytest.Config) -> None:
    """In a pytest-xdist worker, the report draws its figures in this process rather than in a fork()ed pool:
    the worker's message thread is a raw thread the report's check for other threads cannot see, and a child forked
    while it holds a lock hangs (a report test waited 300 s for its pool).  The figures are the same either way."""
    if os.environ.get("PYTEST_XDIST_WORKER"):
        from app.report.figures import plots

        plots.PARALLEL = False


@pytest.fixture(autouse=True)
def _steady_input_cursor(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """In a snapshot test an input's cursor stays drawn while it has focus.  Textual blinks it off 0.5 s after the
    last key, and a snapshot is taken when the app is idle, which on a loaded machine can be later than that: the
    same screen would then fail its snapshot for the machine's load (CI saw the custom form's cursor missing)."""
    if "snap_compare" in request.fixturenames:
        from textual.widgets import Input

        monkeypatch.setattr(Input, "_toggle_cursor", lambda self: None)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark every test under tests/integration ``integration`` (the real tools, loop devices, root), so
    ``-m "not integration"`` picks the others without a list of files to keep up to date."""
    _heavy_first(items)
    for item in items:
        _cap_examples(item)
        if item.path.is_relative_to(INTEGRATION):
            item.add_marker(pytest.mark.integration)
        elif item.path.is_relative_to(VM):
            item.add_marker(pytest.mark.vm)
        if is_serial(item.path):
            item.add_marker(pytest.mark.serial)


# `make test` runs the suite in two tiers (docs/testing.md, "Two tiers"): the tests marked ``serial`` alone, one at a
# time, and every other test in pytest-xdist workers side by side.  Serial: every test in a QEMU guest (tests/vm:
# CPU-bound under TCG, and its guest boots on a timer), and these files, whose assertions are about time or noise
# (a latency, an interval, a replay's speed, a grace period, a key's delay, a CPU's busy share, fio's own clock),
# that read machine-wide state another test's load would move (the device counters of the disk under /tmp, every
# running fio, system hugepages, the page cache, podman's store), or that listen on fixed ports.  Heavy alone is no
# reason outside tests/vm: a wheel built and installed or chromium opening a report asserts nothing about time, so it
# runs beside the others.  When in doubt a file goes here: a flaky test costs more than the minutes the serial tier
# takes.  Where only some tests of a file qualify, each carries ``@pytest.mark.serial`` and the file is not listed.
SERIAL = frozenset({
    "integration/test_compare_noise.py", "integration/test_device_counters.py", "integration/test_eventstream.py",
    "integration/test_fio_intervals.py", "integration/test_fleet.py", "integration/test_fleet_agent.py",
    "integration/test_fleet_containers.py", "integration/test_hugepages.py",
    "integration/test_lifecycle.py", "integration/test_memory_runner.py",
    "integration/test_memory_suite.py", "integration/test_mlc_convention.py", "integration/test_peak_run.py",
    "integration/test_phase.py", "integration/test_precision.py", "integration/test_procedure.py",
    "integration/test_tail_unstable.py",
    "integration/test_timeseries.py", "integration/test_validity.py",
    "integration/test_open_loop.py", "integration/test_heatmap.py", "integration/test_blocktrace_loop.py",
    "tui/test_tui_ascii.py", "tui/test_tui_compare_noise.py", "tui/test_tui_fleet.py", "tui/test_tui_key_burst.py",
    "tui/test_tui_memory.py", "tui/test_tui_memory_contended.py", "tui/test_tui_memory_suite.py",
    "tui/test_tui_replay.py", "tui/test_tui_startup.py",
})
TESTS = Path(__file__).resolve().parent


def is_serial(path: Path) -> bool:
    """Whether the tests of the file at PATH run in the serial tier: tests/vm, or a file SERIAL names."""
    return path.is_relative_to(VM) or (path.is_relative_to(TESTS) and path.relative_to(TESTS).as_posix() in SERIAL)


# the unit files that take the most time in `make check` (seconds each: reports rendered, a CLI started per case,
# many Hypothesis examples), slowest first: pytest-xdist's workers start them first, so that neither worker is left
# with one of them when the other is done
HEAVY = ["test_report_foreign_text.py", "test_report_html.py", "test_compare.py", "test_uncertainty.py",
         "test_raster.py", "test_procedure_rules.py", "test_queueing.py", "test_suite_report.py", "test_frame_csv.py"]


def _heavy_first(items: list[pytest.Item]) -> None:
    """The HEAVY files of tests/unit first, in that order, each file's tests kept together and in their order."""
    rank = {name: i for i, name in enumerate(HEAVY)}
    items.sort(key=lambda item: rank.get(item.path.name, len(HEAVY)) if item.path.parent.name == "unit"
               else len(HEAVY))


def _cap_examples(item: pytest.Item) -> None:
    """At most EXAMPLES_CAP examples for a Hypothesis test (nothing when the cap is 0): Hypothesis reads a test's
    settings when it is called, so this replaces them with a copy that differs in max_examples only."""
    test = getattr(getattr(item, "obj", None), "__func__", getattr(item, "obj", None))
    current = getattr(test, "_hypothesis_internal_use_settings", None)
    if EXAMPLES_CAP <= 0 or not hasattr(test, "hypothesis") or current is None or current.max_examples <= EXAMPLES_CAP:
        return
    test._hypothesis_internal_use_settings = settings(current, max_examples=EXAMPLES_CAP)  # type: ignore[union-attr]


def run_cli(*args: str, timeout: float = 300, env: dict[str, str] | None = None,
            check: bool = False) -> subprocess.CompletedProcess[str]:
    """``python -m app ARGS`` in a subprocess, as a user would run it."""
    full_env = dict(os.environ)
    full_env.pop("SUDO_UID", None)  # `sudo make test`: the tests' other users stay other users
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


def interrupt_run(args: list[str], out: Path, after_lines: int, settle_s: float = 0.0,
                  preexec_fn: Callable[[], None] | None = None,
                  check: Callable[[], None] | None = None, stdout: list[str] | None = None) -> tuple[int, str]:
    """Start ``python -m app ARGS``, wait until OUT/results.jsonl has ``after_lines`` lines (and ``settle_s``
    more seconds; then ``check()``), send SIGINT; its exit code and stderr (its stdout appended to ``stdout``
    when given).  The process never outlives this."""
    proc = subprocess.Popen([sys.executable, "-m", "app", *args], cwd=ROOT, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, preexec_fn=preexec_fn)
    results = out / "results.jsonl"
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if results.exists() and len(results.read_text().splitlines()) >= after_lines:
                break
            time.sleep(0.05)
        time.sleep(settle_s)
        if check is not None:
            check()
        proc.send_signal(signal.SIGINT)
        out_text, stderr = proc.communicate(timeout=30)
        if stdout is not None:
            stdout.append(out_text)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    return proc.returncode, stderr


def fio_processes(mentioning: str | Path) -> list[str]:
    """Command lines of running fio processes that mention a path (a test's own tmp dir), for leak checks.

    Scoped to a path so that fio started by something else on the machine does not count.
    """
    out = subprocess.run(["pgrep", "-a", "-x", "fio"], capture_output=True, text=True).stdout
    return [ln for ln in out.splitlines() if str(mentioning) in f"{ln} {_cwd(ln.partition(' ')[0])}"]


def _cwd(pid: str) -> str:
    """A process's working directory (fio runs in the results' raw/ and names its job file relative to it)."""
    try:
        return os.readlink(f"/proc/{pid}/cwd")
    except OSError:
        return ""


def mem_point(**changes: object) -> MemoryPoint:
    """A memory plan point: loaded, all reads, delay 0, stride 64, 1 s, no buffer or CPUs given; with
    ``changes`` (an idle point: ``mode="idle", traffic=None, delay=None``)."""
    fields: dict[str, object] = {"mode": "loaded", "traffic": "R", "delay": 0, "stride": 64, "buffer": None,
                                 "duration": 1, "cpus": None, "tlb_locality": None}
    fields.update(changes)
    return MemoryPoint(**fields)  # type: ignore[arg-type]
