"""The life of a run, with the real fio: one process per results directory (lock), no child outliving
the tool (SIGKILL), refusals of --out, ^C during start-up, and a results directory that fills up."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Iterator

import pytest

from app.core.errors import UsageError
from app.engine.sweep import RunFailed, RunFinished, new_session
from app.plan import presets
from app.store.lock import effective_status, holder
from app.store.results import RESERVE
from tests.conftest import ROOT, fio_processes, run_cli

ENGINE = ROOT / "native" / "memlat" / "build" / "memlat"


def spawn(*args: str, block_sigint: bool = False) -> subprocess.Popen[str]:
    """``python -m app ARGS`` in the background, as a user would start it."""
    env = dict(os.environ)
    preexec = (lambda: signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})) if block_sigint else None
    return subprocess.Popen([sys.executable, "-m", "app", *args], cwd=ROOT, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, preexec_fn=preexec)


def indices(out: Path) -> list[int]:
    return [json.loads(line)["index"] for line in (out / "results.jsonl").read_text().splitlines()]


def wait_until(condition, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}")
        time.sleep(0.05)


def _stat(pid: int) -> tuple[int, str] | None:
    """(parent pid, state) of a live process, None when it is gone (a zombie counts as gone)."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = text[text.rindex(")") + 2:].split()
    return (int(fields[1]), fields[0]) if fields[0] not in ("Z", "X") else None


def descendants(root: int) -> dict[int, str]:
    """pid → command line of every live process whose parent chain leads to ``root``."""
    parent: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit() and (st := _stat(int(entry))) is not None:
            parent[int(entry)] = st[0]
    found: dict[int, str] = {}
    for pid in parent:
        p = pid
        while p in parent and p not in (0, 1):
            p = parent[p]
            if p == root:
                try:
                    found[pid] = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
                except OSError:
                    pass
                break
    return found


def alive(pids: dict[int, str]) -> dict[int, str]:
    """Those of ``pids`` still running the same command (a reused PID does not count)."""
    out = {}
    for pid, cmd in pids.items():
        try:
            now = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            continue
        if now == cmd and _stat(pid) is not None:
            out[pid] = cmd
    return out


@contextlib.contextmanager
def tmpfs(path: Path, size: str) -> Iterator[Path]:
    path.mkdir(parents=True, exist_ok=True)
    proc = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(path)],
                          capture_output=True, text=True)
    if proc.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {proc.stderr.strip()}")
    try:
        yield path
    finally:
        subprocess.run(["pkill", "-KILL", "-f", str(path)], capture_output=True)
        subprocess.run(["umount", "-l", str(path)], capture_output=True)


def no_leftovers(out: Path) -> None:
    """No temp file, no reserve, no half-written raw file in a results directory."""
    names = {p.name for p in out.rglob("*")}
    assert ".run.json.tmp" not in names and RESERVE not in names, names
    for p in (out / "raw").iterdir():
        assert p.stat().st_size > 0, f"{p} is empty (half written)"
    for line in (out / "results.jsonl").read_text().splitlines():
        rec = json.loads(line)  # every line complete
        for rel in rec["raw"].values():
            assert (out / rel).is_file(), rel


# --- item 3: one process per results directory ----------------------------------------------------


def test_resume_while_the_run_is_going_is_refused_with_the_holders_pid(tmp_path: Path) -> None:
    out = tmp_path / "busy"
    run = spawn("run", "custom", "--target", str(tmp_path / "b.bin"), "--out", str(out),
                "--set", "iodepth=1,2,4", "--set", "runtime=2", "--set", "size=16m")
    try:
        wait_until(lambda: fio_processes(out), 60, "the run's first fio")
        second = run_cli("resume", str(out), timeout=60)
        also = run_cli("run", "custom", "--out", str(out), "--set", "runtime=1", timeout=60)
        assert holder(out) == run.pid
        _, err = run.communicate(timeout=120)
    finally:
        if run.poll() is None:
            run.kill()
    assert second.returncode == 2, second.stderr
    assert f"{out} is in use by process {run.pid}" in second.stderr and "Traceback" not in second.stderr
    assert also.returncode == 2 and f"in use by process {run.pid}" in also.stderr
    assert run.returncode == 0, err
    assert indices(out) == [0, 1, 2]
    assert holder(out) is None


def test_two_resumes_at_once_measure_each_point_once(tmp_path: Path) -> None:
    out = tmp_path / "twice"
    first = spawn("run", "custom", "--target", str(tmp_path / "t.bin"), "--out", str(out),
                  "--set", "iodepth=1,2,4,8", "--set", "runtime=1", "--set", "size=16m")
    try:
        wait_until(lambda: (out / "results.jsonl").exists() and (out / "results.jsonl").read_text(), 60,
                   "the first point")
        first.send_signal(signal.SIGINT)
        first.communicate(timeout=30)
    finally:
        if first.poll() is None:
            first.kill()
    assert first.returncode == 130
    kept = indices(out)
    a, b = spawn("resume", str(out)), spawn("resume", str(out))
    (_, err_a), (_, err_b) = a.communicate(timeout=120), b.communicate(timeout=120)
    codes = sorted([a.returncode, b.returncode])
    assert codes == [0, 2], (err_a, err_b)
    loser, winner = (a, b) if a.returncode == 2 else (b, a)
    assert f"{out} is in use by process {winner.pid}" in (err_a + err_b)
    final = indices(out)
    assert final[: len(kept)] == kept
    assert sorted(final) == [0, 1, 2, 3], f"every index once: {final}"
    assert json.loads((out / "run.json").read_text())["status"] == "complete"


def test_a_sigkilled_holder_frees_the_lock_and_resume_finishes(tmp_path: Path) -> None:
    out = tmp_path / "killed"
    run = spawn("run", "custom", "--target", str(tmp_path / "k.bin"), "--out", str(out),
                "--set", "iodepth=1,2", "--set", "runtime=1", "--set", "size=16m")
    try:
        wait_until(lambda: fio_processes(out), 60, "fio")
        run.kill()
        run.wait(timeout=10)
    finally:
        if run.poll() is None:
            run.kill()
    meta = json.loads((out / "run.json").read_text())
    assert meta["status"] == "running", "SIGKILL leaves run.json as it was"
    wait_until(lambda: holder(out) is None, 5, "the kernel to drop the dead holder's lock")
    assert effective_status(out, meta["status"]) == "interrupted"
    resumed = run_cli("resume", str(out), timeout=120)
    assert resumed.returncode == 0, resumed.stderr
    assert sorted(indices(out)) == [0, 1]
    assert json.loads((out / "run.json").read_text())["status"] == "complete"


def test_a_session_holds_the_lock_until_its_run_ends(tmp_path: Path) -> None:
    """What the TUI does: new_session takes the lock, events() releases it when the run ends."""
    preset = presets.apply_overrides(presets.load("custom"), ["runtime=1", "size=16m"])
    session = new_session(preset, target=str(tmp_path / "s.bin"), out=tmp_path / "s")
    assert holder(tmp_path / "s") == os.getpid()
    with pytest.raises(UsageError, match=f"in use by process {os.getpid()}"):
        new_session(preset, target=str(tmp_path / "s.bin"), out=tmp_path / "s")

    async def drive() -> str:
        last = None
        async for ev in session.events():
            last = ev
        assert isinstance(last, RunFinished), last
        return last.status

    assert asyncio.run(drive()) == "complete"
    assert holder(tmp_path / "s") is None


# --- item 4: nothing outlives the tool -----------------------------------------------------------


def test_sigkill_leaves_no_fio_of_any_kind(tmp_path: Path) -> None:
    """numjobs=4: fio's job processes used to outlive a SIGKILLed profiler-tui and keep writing."""
    out, target = tmp_path / "orphans", tmp_path / "k.bin"
    run = spawn("run", "custom", "--target", str(target), "--out", str(out), "--set", "rw=randwrite",
                "--set", "numjobs=4", "--set", "runtime=30", "--set", "size=16m")
    try:
        wait_until(lambda: fio_processes(out) and target.exists() and target.stat().st_size > 0, 60, "fio's I/O")
        time.sleep(1.5)  # every job is doing I/O
        family = descendants(run.pid)
        assert any("fio" in cmd for cmd in family.values()), family
        run.kill()
        run.wait(timeout=10)
    finally:
        if run.poll() is None:
            run.kill()
    try:
        deadline = time.monotonic() + 3
        while (alive(family) or fio_processes(out)) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert alive(family) == {}, f"outlived profiler-tui: {alive(family)}"
        assert fio_processes(out) == []
        st = target.stat()
        time.sleep(1.0)
        st2 = target.stat()
        assert (st.st_size, st.st_mtime_ns) == (st2.st_size, st2.st_mtime_ns), "the target is still being written"
    finally:
        subprocess.run(["pkill", "-KILL", "-f", str(out)], capture_output=True)


@pytest.mark.skipif(not ENGINE.exists(), reason="the built-in engine is not built (make setup)")
def test_sigkill_leaves_no_memory_engine(tmp_path: Path) -> None:
    out = tmp_path / "mem"
    run = spawn("run", "mem-loaded", "--engine", "builtin", "--out", str(out), "--set", "duration=10",
                "--set", "delay=0,200")
    try:
        wait_until(lambda: any("memlat" in c for c in descendants(run.pid).values()), 60, "the memory engine")
        family = descendants(run.pid)
        run.kill()
        run.wait(timeout=10)
    finally:
        if run.poll() is None:
            run.kill()
    deadline = time.monotonic() + 3
    while alive(family) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert alive(family) == {}


# --- item 5: --out refusals -----------------------------------------------------------------------


def _out_cases(tmp_path: Path) -> list[tuple[str, Path, str]]:
    afile = tmp_path / "a-file"
    afile.write_text("keep")
    return [
        ("an existing file", afile, "is not a directory"),
        ("under a file", afile / "sub", f"{afile} is not a directory"),
        ("a name too long", tmp_path / ("n" * 300), "File name too long"),
        ("a dangling symlink", tmp_path / "dangling", "dangling symbolic link"),
    ]


def test_out_that_cannot_be_a_directory_is_one_sentence_and_exit_2(tmp_path: Path) -> None:
    (tmp_path / "dangling").symlink_to(tmp_path / "nowhere")
    for what, out, words in _out_cases(tmp_path):
        before = sorted(p.name for p in tmp_path.iterdir())
        proc = run_cli("run", "custom", "--out", str(out), "--set", "runtime=1", "--set", "size=1m", timeout=60)
        assert proc.returncode == 2, (what, proc.stderr)
        lines = proc.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("profiler-tui: ") and words in lines[0], (what, lines)
        assert sorted(p.name for p in tmp_path.iterdir()) == before, f"{what}: something was created"
    assert (tmp_path / "a-file").read_text() == "keep"


def test_out_on_a_read_only_filesystem_is_refused_and_leaves_nothing(tmp_path: Path) -> None:
    ro = tmp_path / "ro"
    ro.mkdir()
    proc = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m,ro", "tmpfs", str(ro)], capture_output=True,
                          text=True)
    if proc.returncode:
        pytest.skip(f"cannot mount a tmpfs here: {proc.stderr.strip()}")
    try:
        res = run_cli("run", "custom", "--out", str(ro / "a" / "b"), "--set", "runtime=1", timeout=60)
        assert res.returncode == 2 and "read-only" in res.stderr and "Traceback" not in res.stderr, res.stderr
        assert list(ro.iterdir()) == []
    finally:
        subprocess.run(["umount", "-l", str(ro)], capture_output=True)


def test_a_refused_run_leaves_no_empty_results_directory(tmp_path: Path) -> None:
    """A run refused after its results directory was made (here: the target's directory cannot be
    created on a read-only filesystem) removes that directory again; one that holds a run is untouched."""
    ro = tmp_path / "ro"
    ro.mkdir()
    proc = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m,ro", "tmpfs", str(ro)], capture_output=True,
                          text=True)
    if proc.returncode:
        pytest.skip(f"cannot mount a tmpfs here: {proc.stderr.strip()}")
    try:
        refused = run_cli("run", "custom", "--target", str(ro / "sub" / "t.bin"), "--out", str(tmp_path / "new" / "o"),
                          "--set", "runtime=1", timeout=60)
    finally:
        subprocess.run(["umount", "-l", str(ro)], capture_output=True)
    assert refused.returncode == 2 and "read-only" in refused.stderr and "Traceback" not in refused.stderr
    assert not (tmp_path / "new").exists()

    busy = tmp_path / "taken"
    run_cli("run", "custom", "--target", str(tmp_path / "t.bin"), "--out", str(busy), "--set", "runtime=1",
            "--set", "size=16m", check=True)
    before = sorted(str(p) for p in busy.rglob("*"))
    again = run_cli("run", "custom", "--target", str(tmp_path / "t.bin"), "--out", str(busy), "--set", "runtime=1")
    assert again.returncode == 2 and "already holds a run" in again.stderr
    assert sorted(str(p) for p in busy.rglob("*")) == before


# --- item 5: ^C during start-up -------------------------------------------------------------------


def test_ctrl_c_at_any_moment_of_start_up_is_one_line_and_130(tmp_path: Path) -> None:
    """SIGINT at delays from 0 to past the start of fio.  The child starts with SIGINT blocked (as under
    ``env --block-signal=INT``): a ^C that lands while the Python interpreter itself starts, before any
    line of profiler-tui runs, is then delivered when profiler-tui's own handler is in place, so every
    delay tests profiler-tui's handling, not CPython's start-up.  From 150 ms on (over 5x the
    interpreter's own start-up) every other delay is also tried on a child started as a shell would."""
    args = ["run", "custom", "--target", str(tmp_path / "t.bin"), "--set", "runtime=5", "--set", "size=4m"]
    probe = tmp_path / "probe"
    t0 = time.monotonic()
    p = spawn(*args, "--out", str(probe))
    try:
        wait_until(lambda: fio_processes(probe), 60, "fio")
        to_fio = time.monotonic() - t0
    finally:
        p.send_signal(signal.SIGINT)
        p.communicate(timeout=30)
    delays = sorted({0.0, 0.05, 0.15, 0.3} | {round(to_fio * i / 10, 3) for i in range(13)})
    print(f"\nstart-up to fio running: {to_fio:.2f} s; SIGINT at {delays}")
    tries = [(d, True) for d in delays] + [(d, False) for d in delays[::2] if d >= 0.15]
    outcomes = []
    for i, (delay, block) in enumerate(tries):
        out = tmp_path / f"o{i}"
        proc = spawn(*args, "--out", str(out), block_sigint=block)
        time.sleep(delay)
        proc.send_signal(signal.SIGINT)
        try:
            _, err = proc.communicate(timeout=60)
        finally:
            if proc.poll() is None:
                proc.kill()
        status = json.loads((out / "run.json").read_text())["status"] if (out / "run.json").exists() else None
        outcomes.append((delay, block, proc.returncode, status))
        assert "Traceback" not in err, (delay, block, err)
        assert proc.returncode == 130, (delay, block, proc.returncode, err)
        assert len(err.strip().splitlines()) == 1, (delay, block, err)
        if out.exists():
            assert status == "interrupted", (delay, block, status, sorted(p.name for p in out.iterdir()))
            assert not (out / ".run.json.tmp").exists()
        assert fio_processes(out) == []
    print("delay s, SIGINT blocked at spawn, exit, run.json:", outcomes)
    assert any(s is None for *_, s in outcomes) and any(s == "interrupted" for *_, s in outcomes), \
        "the delays cover both before and after run.json"


# --- item 5: the results directory fills up (ENOSPC) -----------------------------------------------


# the free-space check refuses these runs up front (tests/integration/test_free_space.py); here the disk fills
# during the run, as when another writer takes the space
NO_SPACE_CHECK = {"PROFILER_TUI_NO_SPACE_CHECK": "1"}


def test_raw_outputs_filling_the_disk_end_the_run_as_failed(tmp_path: Path) -> None:
    with tmpfs(tmp_path / "small", "160k") as mnt:
        out = mnt / "o"
        proc = run_cli("run", "custom", "--target", str(tmp_path / "t.bin"), "--out", str(out),
                       "--set", "iodepth=1,2,4,8,16,32,64,128", "--set", "runtime=1", "--set", "size=16m",
                       timeout=240, env=NO_SPACE_CHECK)
        assert proc.returncode == 1, proc.stderr
        lines = proc.stderr.strip().splitlines()
        assert len(lines) == 1 and "Traceback" not in proc.stderr, proc.stderr
        assert "No space left on device" in lines[0] and str(out) in lines[0], lines
        meta = json.loads((out / "run.json").read_text())
        assert meta["status"] == "failed" and "No space left on device" in meta["error"]
        kept = indices(out)
        assert 1 <= len(kept) < 8 and kept == list(range(len(kept))) and meta["points_done"] == len(kept)
        no_leftovers(out)
        assert holder(out) is None


def test_fio_layout_filling_the_disk_ends_the_run_and_removes_the_test_file(tmp_path: Path) -> None:
    with tmpfs(tmp_path / "small", "4m") as mnt:
        out = mnt / "o"
        proc = run_cli("run", "custom", "--out", str(out), "--set", "iodepth=1,2", "--set", "runtime=1",
                       "--set", "size=8m", timeout=120, env=NO_SPACE_CHECK)
        assert proc.returncode == 1, proc.stderr
        err = [ln for ln in proc.stderr.strip().splitlines() if ln.startswith("profiler-tui:")]
        assert len(err) == 1 and "no space left on device for the test file" in err[0], proc.stderr
        assert "Traceback" not in proc.stderr
        meta = json.loads((out / "run.json").read_text())
        assert meta["status"] == "failed" and "test file" in meta["error"]
        assert not Path(meta["target"]).exists(), "the tool's own test file is removed"
        assert (out / "results.jsonl").read_text() == ""
        no_leftovers(out)


def test_a_disk_too_full_even_for_run_json_says_so(tmp_path: Path) -> None:
    with tmpfs(tmp_path / "small", "256k") as mnt:
        preset = presets.apply_overrides(presets.load("custom"), ["runtime=1", "size=16m"])
        os.environ["PROFILER_TUI_NO_SPACE_CHECK"] = "1"
        try:
            session = new_session(preset, target=str(tmp_path / "t.bin"), out=mnt / "o")
        finally:
            del os.environ["PROFILER_TUI_NO_SPACE_CHECK"]
        fd = os.open(mnt / "filler", os.O_WRONLY | os.O_CREAT)
        try:  # take every block that is left
            while os.write(fd, b"\0" * 4096):
                pass
        except OSError:
            pass
        finally:
            os.close(fd)

        async def drive() -> None:
            async for _ in session.events():
                pass

        with pytest.raises(RunFailed) as failed:
            asyncio.run(drive())
        msg = str(failed.value)
        assert "No space left on device" in msg and "run.json could not record it" in msg, msg
        names = {p.name for p in (mnt / "o").iterdir()}
        assert ".run.json.tmp" not in names and RESERVE not in names, names
        assert holder(mnt / "o") is None
        assert json.loads((mnt / "o" / "run.json").read_text())["status"] == "planned"  # untouched, whole
        assert effective_status(mnt / "o", "planned") == "interrupted"
