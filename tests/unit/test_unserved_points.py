"""A point the target never served is a failed point (app.runners.fio_parse.unserved): fio counted I/Os that moved no
bytes, or none at all.  The canned document is fio 3.33's own, of a loop device detached between fio's look at its
size and its open (it read as empty 582,324 times in a second, error 0, exit 0).  The session test runs the real
fio runner against a stand-in fio ($FIO) that prints that document."""

from __future__ import annotations

import asyncio
import copy
import json
import stat
from pathlib import Path

import pytest

from app.engine.sweep import PointDone, PointFailed, RunFinished, load_session, new_session
from app.model.points import RunStatus
from app.plan import presets
from app.runners.fio_parse import metrics, unserved

DOC = json.loads((Path(__file__).resolve().parents[1] / "data" / "fio" / "detached-loop-zero-bytes.json").read_text())


def test_i_os_that_moved_no_bytes_are_no_measurement() -> None:
    m = metrics(DOC)
    assert m["total_ios"] == 582_324 and m["io_bytes"] == 0 and m["iops"] == 0 and m["lat_ns"]["mean"] > 0
    assert not m.get("errors")
    why = unserved(m)
    assert why is not None and "582,324 I/Os that moved no bytes" in why


def test_no_i_o_at_all_is_no_measurement_and_moved_bytes_are() -> None:
    none = copy.deepcopy(DOC)
    none["jobs"][0]["read"].update(total_ios=0, io_bytes=0)
    assert unserved(metrics(none)) == "fio completed no I/O: the point measured nothing"
    served = copy.deepcopy(DOC)
    served["jobs"][0]["read"].update(io_bytes=582_324 * 4096, bw_bytes=2_385_199_104, iops=582_324.0)
    assert unserved(metrics(served)) is None


@pytest.fixture
def zero_bytes_fio(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """$FIO: answers --version, and prints the canned document for any job."""
    doc = tmp_path / "doc.json"
    doc.write_text(json.dumps(DOC))
    fake = tmp_path / "fio"
    fake.write_text(f'#!/bin/sh\ncase "$1" in --version) echo fio-3.33; exit 0;; esac\ncat {doc}\n')
    fake.chmod(fake.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("FIO", str(fake))
    monkeypatch.setenv("PROFILER_TUI_SWAP_WATCH_S", "0.01")


def test_a_point_that_moved_no_bytes_fails_and_resume_measures_it_again(tmp_path: Path, zero_bytes_fio: None) -> None:
    preset = presets.apply_overrides(presets.load("custom"), ["runtime=1", "size=4m"])
    out = tmp_path / "r"
    session = new_session(preset, target=str(tmp_path / "t.bin"), out=out)

    async def drive() -> list[object]:
        return [ev async for ev in session.events()]

    events = asyncio.run(drive())
    failed = [e for e in events if isinstance(e, PointFailed)]
    assert len(failed) == 1 and "moved no bytes" in failed[0].error
    assert not [e for e in events if isinstance(e, PointDone)]
    finished = events[-1]
    assert isinstance(finished, RunFinished) and finished.status == RunStatus.PARTIAL and finished.failed == 1
    meta = json.loads((out / "run.json").read_text())
    assert meta["status"] == "partial" and "moved no bytes" in meta["failures"][0]["error"]
    assert (out / "results.jsonl").read_text() == ""
    again = load_session(out)
    try:
        assert [i for i, _ in again.pending()] == [0]
    finally:
        again.close()


def test_i_os_that_moved_no_bytes_have_no_iops_per_cpu_and_are_not_imported(tmp_path: Path) -> None:
    """The canned document's 582,324 empty reads in 0.99 CPU-s gave "587k IOPS per CPU" beside 0 IOPS, and an
    import took them as a point: neither is a figure of a target."""
    from app.core.errors import UsageError
    from app.engine.importer import import_files

    assert "iops_per_cpu" not in metrics(DOC)
    src = tmp_path / "fio.json"
    src.write_text(json.dumps(DOC))
    with pytest.raises(UsageError, match=r"fio\.json: .*582,324 I/Os that moved no bytes.*job '"):
        import_files([str(src)], tmp_path / "out")
    assert not (tmp_path / "out").exists()
