"""Huge pages for Intel MLC on AMD: reserved for each MLC batch when this process may write nr_hugepages,
checked (the kernel may grant fewer), recorded in the results lines and run.json, and given back after the
batch, after a failed point and on SIGINT/SIGTERM.  On Intel nothing is touched.  Without permission
``--engine auto`` keeps the built-in engine, as before.

Both vendors are faked with /proc/cpuinfo copies (the memory module's ``CPUINFO``); nr_hugepages is a
file of the test's own (``fake_proc`` in test_memory_runner.py), made read-only by a bind mount in a
private mount namespace where a test needs that.  test_real_kernel_grants_and_gets_back_huge_pages is the
only one to use the machine's real /proc/sys/vm/nr_hugepages, and it restores it in a finally."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from app.model.points import MemoryPoint
from app.runners import memory
from app.runners.memory import HugePageReservation, hugepages_needed
from tests.conftest import mem_point
from tests.integration.test_memory_runner import (  # noqa: F401 - fixtures
    ENGINE,
    ROOT,
    cli_argv,
    fake_meminfo,
    fake_mlc,
    fake_proc,
    records,
    run_cli,
    write_cpuinfo,
)

AMD, INTEL = "AuthenticAMD", "GenuineIntel"
PAGE = 2 << 20
REAL_NR = "/proc/sys/vm/nr_hugepages"
is_root = os.geteuid() == 0
needs_ns = pytest.mark.skipif(not is_root or shutil.which("unshare") is None,
                              reason="a read-only bind mount needs root and unshare")


def loaded(**kw: Any) -> MemoryPoint:
    return mem_point(**kw)


def idle(**kw: Any) -> MemoryPoint:
    return mem_point(mode="idle", traffic=None, delay=None, **kw)


def read_only(path: Path | str, argv: list[str]) -> list[str]:
    """argv run in a private mount namespace where PATH is bind-mounted read-only onto itself."""
    return ["unshare", "-m", "--propagation", "private", "sh", "-c",
            'p="$1"; shift; mount --bind -o ro "$p" "$p" && exec "$@"', "sh", str(path), *argv]


def meta(out: Path) -> dict[str, Any]:
    return json.loads((out / "run.json").read_text())


# --- the vendor and the permission ---------------------------------------------------------------


@pytest.mark.parametrize("vendor", [AMD, INTEL])
def test_vendor_is_read_from_cpuinfo(vendor: str, fake_proc: dict[str, Any]) -> None:
    write_cpuinfo(fake_proc["cpuinfo"], vendor)
    assert memory.cpu_vendor() == vendor
    assert memory.mlc_needs_hugepages(vendor) is (vendor == AMD)
    assert memory.cpu_vendor(str(fake_proc["dir"] / "missing")) is None


@pytest.mark.parametrize("vendor, nr, writable, usable", [
    (INTEL, 0, False, True),   # Intel: huge pages are not MLC's business
    (INTEL, 0, True, True),
    (AMD, 0, True, True),      # AMD, none reserved, but we may reserve them: MLC
    (AMD, 8, False, True),     # AMD, some reserved by the admin: MLC (as before)
    (AMD, 0, False, False),    # AMD, none, and no permission: the built-in engine (as before)
])
def test_mlc_usable_branches_on_vendor_and_permission(vendor: str, nr: int, writable: bool, usable: bool,
                                                      fake_proc: dict[str, Any],
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(memory.platform, "machine", lambda: "x86_64")
    write_cpuinfo(fake_proc["cpuinfo"], vendor)
    fake_proc["nr"].write_text(f"{nr}\n")
    monkeypatch.setattr(memory, "hugepages_writable", lambda path=None: writable)
    reason = memory.mlc_unusable_reason()
    if usable:
        assert reason is None
    else:
        assert reason is not None and reason.startswith(
            f"MLC needs huge pages on AMD and {fake_proc['nr']} is 0 (and this process may not raise it")


# --- what a batch needs --------------------------------------------------------------------------


def test_need_comes_from_buffer_threads_and_buffers_per_thread() -> None:
    # idle: one chase thread, one buffer; the plan's buffer in 2 MiB pages, plus at least 16 pages
    assert hugepages_needed([idle(buffer=8 << 20)], PAGE) == 4 + 16
    # no buffer in the plan: MLC's own idle default (2000 MiB) is assumed, plus 5 %
    assert hugepages_needed([idle()], PAGE) == 1000 + 50
    # loaded: threads = the cpus; MLC has a write buffer per thread even for -R (2 buffers), triad 3
    assert hugepages_needed([loaded(cpus="0-1", buffer=64 << 20)], PAGE) == 2 * 2 * 32 + 16
    assert hugepages_needed([loaded(cpus="0-1", buffer=64 << 20, traffic="W10")], PAGE) == 2 * 3 * 32 + 16
    assert hugepages_needed([loaded(cpus="0-3")], PAGE) == 4 * 2 * 128 + 52  # 256 MiB assumed per buffer
    assert hugepages_needed([loaded(cpus="0", buffer=4096)], PAGE) == 2 + 16  # a part page is a whole page


# --- reserve and restore, in process -------------------------------------------------------------


def test_amd_reserves_what_is_missing_and_restores(fake_proc: dict[str, Any]) -> None:
    write_cpuinfo(fake_proc["cpuinfo"], AMD)
    fake_proc["nr"].write_text("3\n")  # three reserved by someone else, and in use (none free)
    r = HugePageReservation.reserve([idle(buffer=8 << 20)])
    assert r is not None
    assert fake_proc["nr"].read_text() == "23\n"
    assert r.record == {"path": str(fake_proc["nr"]), "page_bytes": PAGE, "needed": 20, "previous": 3,
                        "free_before": 0, "requested": 23, "granted": 23}
    r.restore()
    assert fake_proc["nr"].read_text() == "3\n"
    assert r.record["restored"] is True and r.record["restored_value"] == 3
    r.restore()  # twice is harmless
    assert fake_proc["nr"].read_text() == "3\n"


def test_enough_free_pages_are_left_alone(fake_proc: dict[str, Any]) -> None:
    write_cpuinfo(fake_proc["cpuinfo"], AMD)
    fake_proc["nr"].write_text("64\n")
    fake_proc["meminfo"].write_text(fake_meminfo(free_pages=64))
    before = fake_proc["nr"].stat().st_mtime_ns
    r = HugePageReservation.reserve([idle(buffer=8 << 20)])
    assert r is not None and r.record["requested"] is None and r.record["granted"] == 64
    r.restore()
    assert fake_proc["nr"].stat().st_mtime_ns == before and fake_proc["nr"].read_text() == "64\n"


def test_intel_touches_nothing(fake_proc: dict[str, Any]) -> None:
    write_cpuinfo(fake_proc["cpuinfo"], INTEL)
    before = fake_proc["nr"].stat().st_mtime_ns
    assert HugePageReservation.reserve([idle(buffer=8 << 20)]) is None
    assert fake_proc["nr"].stat().st_mtime_ns == before and fake_proc["nr"].read_text() == "0\n"


def test_kernel_granting_fewer_is_recorded(fake_proc: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> None:
    write_cpuinfo(fake_proc["cpuinfo"], AMD)
    real_read = memory.read_nr_hugepages

    def kernel(path: str | None = None) -> int | None:  # a fragmented machine: at most 10 pages
        value = real_read(path)
        return None if value is None else min(value, 10)

    monkeypatch.setattr(memory, "read_nr_hugepages", kernel)
    r = HugePageReservation.reserve([idle(buffer=8 << 20)])
    assert r is not None
    assert (r.record["requested"], r.record["granted"]) == (20, 10)
    assert r.record["error"] == "the kernel granted 10 of the 20 huge pages asked for"
    assert "20 requested, 10 granted" in r.short
    r.restore()
    assert fake_proc["nr"].read_text() == "0\n" and r.record["restored"] is True


def test_a_value_changed_meanwhile_by_someone_else_is_left(fake_proc: dict[str, Any]) -> None:
    write_cpuinfo(fake_proc["cpuinfo"], AMD)
    r = HugePageReservation.reserve([idle(buffer=8 << 20)])
    assert r is not None
    fake_proc["nr"].write_text("500\n")
    r.restore()
    assert fake_proc["nr"].read_text() == "500\n"
    assert r.record["restored"] is False and "changed to 500 by another process" in r.record["note"]


def test_request_is_capped_below_memavailable(fake_proc: dict[str, Any]) -> None:
    write_cpuinfo(fake_proc["cpuinfo"], AMD)
    fake_proc["meminfo"].write_text("MemAvailable:  102400 kB\nHugePages_Free:  0\nHugepagesize:  2048 kB\n")
    r = HugePageReservation.reserve([idle()])  # 1050 pages wanted, 100 MiB available
    assert r is not None and r.record["requested"] == 37  # 75 % of 100 MiB in 2 MiB pages
    assert "at most 37 asked for" in r.record["note"]
    r.restore()
    assert fake_proc["nr"].read_text() == "0\n"


def test_unwritable_file_is_recorded_not_raised(fake_proc: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> None:
    write_cpuinfo(fake_proc["cpuinfo"], AMD)
    monkeypatch.setattr(memory, "hugepages_writable", lambda path=None: False)
    r = HugePageReservation.reserve([idle(buffer=8 << 20)])
    assert r is not None and r.record["requested"] is None and "not writable" in r.record["error"]
    assert fake_proc["nr"].read_text() == "0\n"


# --- the real subprocess path: the CLI and a fake mlc that reports nr_hugepages while it runs ------


def hp_env(fake_mlc: dict[str, Any], fake_proc: dict[str, Any], tmp_path: Path, **more: str) -> dict[str, str]:
    return dict(fake_mlc["env"], FAKE_MLC_HUGEPAGES=str(fake_proc["nr"]),
                FAKE_MLC_HUGEPAGES_LOG=str(tmp_path / "seen"), **more)


def seen(tmp_path: Path) -> list[int]:
    f = tmp_path / "seen"
    return [int(x) for x in f.read_text().split()] if f.exists() else []


def test_amd_run_reserves_records_and_restores(fake_mlc: dict[str, Any], fake_proc: dict[str, Any],
                                               tmp_path: Path) -> None:
    write_cpuinfo(fake_proc["cpuinfo"], AMD)
    out = tmp_path / "out"
    proc = run_cli("run", "mem-loaded", "--engine", "mlc", "--set", "delay=0,500", "--set", "buffer=4m",
                   "--set", "cpus=0-1", "--set", "duration=1", "--out", str(out),
                   env=hp_env(fake_mlc, fake_proc, tmp_path))
    assert proc.returncode == 0, proc.stderr
    assert "MLC needs huge pages on AMD" in proc.stderr and "restored afterwards" in proc.stderr
    need = 2 * 2 * 2 + 16  # 2 threads × 2 buffers × 4 MiB, + 16
    assert seen(tmp_path) == [need, need]  # both MLC processes of the batch ran with the pages reserved
    assert fake_proc["nr"].read_text() == "0\n"  # and they were given back
    (note,) = meta(out)["huge_pages"]
    assert {k: note[k] for k in ("previous", "requested", "granted", "restored", "restored_value")} == \
        {"previous": 0, "requested": need, "granted": need, "restored": True, "restored_value": 0}
    for rec in records(out):
        assert rec["huge_pages"]["requested"] == need and rec["huge_pages"]["granted"] == need


def test_amd_auto_picks_mlc_when_it_may_reserve(fake_mlc: dict[str, Any], fake_proc: dict[str, Any],
                                                tmp_path: Path) -> None:
    """The container test's case: an AMD machine with nr_hugepages 0, root, /proc/sys writable."""
    write_cpuinfo(fake_proc["cpuinfo"], AMD)
    out = tmp_path / "out"
    proc = run_cli("run", "mem-idle", "--engine", "auto", "--set", "buffer=8m", "--out", str(out),
                   env=hp_env(fake_mlc, fake_proc, tmp_path))
    assert proc.returncode == 0, proc.stderr
    (rec,) = records(out)
    assert rec["engine"] == "mlc" and rec["huge_pages"]["granted"] == 20
    assert seen(tmp_path) == [20] and fake_proc["nr"].read_text() == "0\n"


def test_intel_run_leaves_huge_pages_alone(fake_mlc: dict[str, Any], fake_proc: dict[str, Any],
                                           tmp_path: Path) -> None:
    write_cpuinfo(fake_proc["cpuinfo"], INTEL)
    before = fake_proc["nr"].stat().st_mtime_ns
    out = tmp_path / "out"
    proc = run_cli("run", "mem-idle", "--engine", "auto", "--set", "buffer=8m", "--out", str(out),
                   env=hp_env(fake_mlc, fake_proc, tmp_path))
    assert proc.returncode == 0, proc.stderr
    (rec,) = records(out)
    assert rec["engine"] == "mlc" and "huge_pages" not in rec and "huge_pages" not in meta(out)
    assert seen(tmp_path) == [0] and fake_proc["nr"].stat().st_mtime_ns == before
    assert "huge pages" not in proc.stderr


def test_failed_point_restores_and_says_so(fake_mlc: dict[str, Any], fake_proc: dict[str, Any],
                                           tmp_path: Path) -> None:
    write_cpuinfo(fake_proc["cpuinfo"], AMD)
    out = tmp_path / "out"
    proc = run_cli("run", "mem-idle", "--engine", "mlc", "--set", "buffer=8m", "--out", str(out),
                   env=hp_env(fake_mlc, fake_proc, tmp_path, FAKE_MLC_FAIL="all"))
    assert proc.returncode == 1, proc.stderr
    assert fake_proc["nr"].read_text() == "0\n"
    m = meta(out)
    assert m["status"] == "partial" and "Failed to allocate memory" in m["failures"][0]["error"]
    assert m["huge_pages"][0]["requested"] == 20 and m["huge_pages"][0]["restored"] is True


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_interrupt_restores(sig: signal.Signals, fake_mlc: dict[str, Any], fake_proc: dict[str, Any],
                            tmp_path: Path) -> None:
    write_cpuinfo(fake_proc["cpuinfo"], AMD)
    out = tmp_path / "out"
    env = dict(os.environ, **hp_env(fake_mlc, fake_proc, tmp_path, FAKE_MLC_ROW_SLEEP="0.5"))
    p = subprocess.Popen(cli_argv("run", "mem-loaded", "--engine", "mlc", "--set", "buffer=4m", "--set", "cpus=0",
                                  "--set", "duration=1", "--out", str(out)),
                         cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 60
        while not seen(tmp_path) and time.monotonic() < deadline:  # MLC runs, with the pages reserved
            time.sleep(0.05)
        assert seen(tmp_path) == [2 * 2 + 16]
        assert fake_proc["nr"].read_text() == "20\n"
        p.send_signal(sig)
        _, err = p.communicate(timeout=60)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    assert p.returncode == 130, err
    assert fake_proc["nr"].read_text() == "0\n"
    m = meta(out)
    assert m["status"] == "interrupted"
    assert m["huge_pages"][-1]["restored"] is True and m["huge_pages"][-1]["granted"] == 20


@needs_ns
@pytest.mark.skipif(ENGINE is None, reason="the built-in engine is not built (make setup)")
@pytest.mark.parametrize("vendor", [AMD, INTEL])
def test_without_permission_auto_falls_back_on_amd_only(vendor: str, fake_mlc: dict[str, Any],
                                                        fake_proc: dict[str, Any], tmp_path: Path) -> None:
    """nr_hugepages read-only (as /proc/sys in an unprivileged container): today's fallback on AMD."""
    write_cpuinfo(fake_proc["cpuinfo"], vendor)
    out = tmp_path / "out"
    env = dict(os.environ, **hp_env(fake_mlc, fake_proc, tmp_path))
    proc = subprocess.run(read_only(fake_proc["nr"], cli_argv("run", "mem-idle", "--engine", "auto", "--set",
                                                              "duration=1", "--out", str(out))),
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    (rec,) = records(out)
    assert fake_proc["nr"].read_text() == "0\n" and "huge_pages" not in meta(out)
    if vendor == AMD:
        assert rec["engine"] == "builtin"
        assert f"MLC needs huge pages on AMD and {fake_proc['nr']} is 0" in proc.stderr
        assert "using the built-in memory engine" in proc.stderr
    else:
        assert rec["engine"] == "mlc" and "huge pages" not in proc.stderr


@needs_ns
def test_engine_mlc_without_permission_runs_mlc_and_records_why(fake_mlc: dict[str, Any],
                                                                fake_proc: dict[str, Any], tmp_path: Path) -> None:
    write_cpuinfo(fake_proc["cpuinfo"], AMD)
    out = tmp_path / "out"
    env = dict(os.environ, **hp_env(fake_mlc, fake_proc, tmp_path))
    proc = subprocess.run(read_only(fake_proc["nr"], cli_argv("run", "mem-idle", "--engine", "mlc", "--set",
                                                              "buffer=8m", "--out", str(out))),
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "not writable here" in proc.stderr and "MLC may fail" in proc.stderr
    (rec,) = records(out)
    assert rec["engine"] == "mlc" and "not writable" in rec["huge_pages"]["error"]
    assert seen(tmp_path) == [0]


# --- the real kernel --------------------------------------------------------------------------------


@pytest.mark.skipif(not (is_root and os.access(REAL_NR, os.W_OK)), reason="needs root and a writable /proc/sys")
def test_real_kernel_grants_and_gets_back_huge_pages(fake_mlc: dict[str, Any], fake_proc: dict[str, Any],
                                                     tmp_path: Path) -> None:
    """The real /proc/sys/vm/nr_hugepages and /proc/meminfo, with the vendor faked as AMD (so this runs on
    Intel too): the kernel's answer is read back, and the value is given back after the run."""
    write_cpuinfo(fake_proc["cpuinfo"], AMD)
    original = Path(REAL_NR).read_text()
    out = tmp_path / "out"
    try:
        proc = run_cli("run", "mem-idle", "--engine", "mlc", "--set", "buffer=8m", "--out", str(out),
                       env=dict(fake_mlc["env"], FAKE_MLC_HUGEPAGES=REAL_NR,
                                FAKE_MLC_HUGEPAGES_LOG=str(tmp_path / "seen")),
                       proc={"CPUINFO": str(fake_proc["cpuinfo"])})
        after = Path(REAL_NR).read_text()
    finally:
        if Path(REAL_NR).read_text() != original:
            Path(REAL_NR).write_text(original)
    assert proc.returncode == 0, proc.stderr
    assert after == original
    (rec,) = records(out)
    hp = rec["huge_pages"]
    assert hp["path"] == REAL_NR and hp["previous"] == int(original)
    if hp["requested"] is not None:  # unless enough were free already
        assert seen(tmp_path) == [hp["granted"]] and hp["granted"] >= hp["previous"]
        assert meta(out)["huge_pages"][0]["restored"] is True


def test_cancel_while_reserving_gives_the_pages_back(fake_proc: dict[str, Any], monkeypatch: pytest.MonkeyPatch,
                                                     tmp_path: Path, fake_mlc: dict[str, Any]) -> None:
    """A cancel that lands while the kernel is still reserving (the reservation runs in a thread)."""
    import asyncio
    import threading

    from app.runners.base import Context
    from app.runners.memory import MemoryRunner

    write_cpuinfo(fake_proc["cpuinfo"], AMD)
    for k, v in fake_mlc["env"].items():
        monkeypatch.setenv(k, v)
    real = HugePageReservation.reserve.__func__  # type: ignore[attr-defined]
    started, reserved = threading.Event(), threading.Event()

    def slow(cls: type, points: list[dict[str, Any]]) -> Any:
        started.set()
        time.sleep(0.3)
        r = real(cls, points)
        reserved.set()
        return r

    monkeypatch.setattr(HugePageReservation, "reserve", classmethod(slow))
    runner = MemoryRunner("mlc")

    async def go() -> None:
        async def consume() -> None:
            async for _ in runner.run([(0, idle(buffer=8 << 20))], Context(None, tmp_path / "raw", "mlc")):
                pass
        task = asyncio.ensure_future(consume())
        await asyncio.to_thread(started.wait, 10)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        await asyncio.to_thread(reserved.wait, 10)
        await asyncio.sleep(0.1)  # the done-callback runs on the loop

    asyncio.run(go())
    assert reserved.is_set() and fake_proc["nr"].read_text() == "0\n"
    assert fake_mlc["argv"]() == []  # MLC never started
