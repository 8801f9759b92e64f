"""Files imported together keep their source: every MLC file of tests/data/mlc/ imported into one directory
gives one table, curve and baseline per file (files may come from different machines), never one curve of
three machines' rows, nor one file's idle latency used as another's baseline."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from app.engine.importer import import_files
from app.report import render_report
from app.report.compute.analysis import memory_curves, storage_curves
from app.report.compute.memory import idle_baseline
from app.report.data.model import load
from tests.conftest import DATA

MLC = sorted((DATA / "mlc").glob("*.txt"))
LOADED = ("v3.10-default-run-2socket-skylake.txt", "v3.10-loaded-latency.txt", "v3.5-loaded-latency-MB.txt",
          "v3.7-loaded-latency-spaces.txt")


@pytest.fixture(scope="module")
def imported(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out, _ = import_files([str(f) for f in MLC], tmp_path_factory.mktemp("mlc") / "all")
    render_report(out)
    return Path(out)


def _sections(md: str) -> dict[str, str]:
    parts = re.split(r"^(#{3,4} .*)$", md, flags=re.M)
    return {parts[i]: parts[i + 1] for i in range(1, len(parts) - 1, 2)}


def test_one_loaded_latency_table_per_file(imported: Path) -> None:
    md = (imported / "report.md").read_text()
    loaded = {h: body for h, body in _sections(md).items() if h.startswith("### R (all reads)")}
    assert len(loaded) == 4, list(loaded)
    for name in LOADED:
        (body,) = [b for h, b in loaded.items() if h.endswith(f", from {name}")]
        delays = re.findall(r"^\| (\d{5}) ", body, flags=re.M)
        assert len(delays) == len(set(delays)) == 19, (name, delays)  # one file's rows, each delay once


def test_curves_and_baselines_are_per_file(imported: Path) -> None:
    data = load(imported)
    curves = memory_curves(data.memory)
    assert sorted(c.source for c in curves) == sorted(LOADED)
    idle = [p for p in data.memory if p.mode == "idle"]
    assert [p.source for p in idle] == ["v3.7-idle-latency.txt"]
    for c in curves:  # no loaded file has an idle latency of its own: none is another file's
        assert c.idle is None and idle_baseline(c.points, idle) is None
        assert c.label.endswith(f" from {c.source}")
    md = (imported / "report.md").read_text()
    assert md.count("idle baseline 80.90 ns") == 0
    assert md.count("no idle baseline in the same file") == 4
    table = md.split("### Memory: loaded-latency knees")[1]
    for name in LOADED:
        assert len(re.findall(rf"^\| R stride 64 B.* from {re.escape(name)} ", table, flags=re.M)) == 1


def test_peak_and_suite_sections_name_their_file(imported: Path) -> None:
    md = (imported / "report.md").read_text()
    sections = _sections(md)
    peaks = {h: b for h, b in sections.items() if h.startswith("#### Intel MLC") and "ALL Reads" in b}
    assert sorted(h.rsplit(", from ", 1)[1] for h in peaks) == ["v3.10-default-run-2socket-skylake.txt",
                                                                   "v3.7-peak-injection-bandwidth.txt"]
    for body in peaks.values():
        assert body.count("| ALL Reads ") == 1
    assert "#### From v3.10-default-run-2socket-skylake.txt" in sections  # c2c
    assert any(h.endswith("traffic R (all reads), from v3.10-default-run-2socket-skylake.txt") for h in sections)
    idle_table = md.split("Idle latency (one pointer-chasing thread, no load):")[1].split("Chase:")[0]
    assert "Imported from" in idle_table and "v3.7-idle-latency.txt" in idle_table
    csv = (imported / "results.csv").read_text().splitlines()
    assert csv[0].startswith("kind,index,imported_from,")
    assert {line.split(",")[2] for line in csv[1:]} == {f.name for f in MLC}
    assert len(list((imported / "plots").glob("memory-suite-peak-*.svg"))) == 2


def test_one_file_names_no_source(tmp_path: Path) -> None:
    out, _ = import_files([str(DATA / "mlc" / "v3.10-loaded-latency.txt")], tmp_path / "one")
    md = render_report(out).read_text()
    assert "### R (all reads), stride 64 B, buffer 100M — mlc\n" in md and ", from v3" not in md


def _fio_doc(iodepth: int, iops: float) -> str:
    """A minimal fio JSON document of one 4K random-read job (what `fio --output-format=json` keeps of it)."""
    lat = iodepth / iops * 1e9
    job = {"jobname": "a", "groupid": 0, "error": 0, "usr_cpu": 1.0, "sys_cpu": 5.0, "job_runtime": 1000,
           "job options": {"rw": "randread", "bs": "4k", "ioengine": "libaio", "iodepth": str(iodepth),
                           "runtime": "1", "time_based": "1"},
           "read": {"io_bytes": int(iops) * 4096, "bw_bytes": iops * 4096, "iops": iops, "runtime": 1000,
                    "total_ios": int(iops), "lat_ns": {"min": lat / 2, "max": lat * 5, "mean": lat, "stddev": lat / 3,
                                                       "N": int(iops), "percentile": {"99.000000": lat * 3}}},
           "write": {"io_bytes": 0, "bw_bytes": 0, "iops": 0, "runtime": 0, "total_ios": 0}}
    return json.dumps({"fio version": "fio-3.36", "global options": {}, "jobs": [job]}) + "\n"


def test_fio_files_of_the_same_workload_stay_apart(tmp_path: Path) -> None:
    """Two machines' QD1 and QD4 runs of one workload: two curves, not one of the first file's points."""
    (tmp_path / "host-a.json").write_text(_fio_doc(1, 11_000.0) + _fio_doc(4, 30_000.0))
    (tmp_path / "host-b.json").write_text(_fio_doc(1, 5_600.0) + _fio_doc(4, 9_000.0))
    out, _ = import_files([str(tmp_path / "host-a.json"), str(tmp_path / "host-b.json")], tmp_path / "two")
    data = load(out)
    curves = storage_curves(data.storage)
    assert sorted((c.label, [round(p.iops) for p in c.points]) for c in curves) == [
        ("randread 4K (imported_from=host-a.json)", [11_000, 30_000]),
        ("randread 4K (imported_from=host-b.json)", [5_600, 9_000])]
    md = render_report(out).read_text()
    assert md.count("| Random read, from host-a.json ") == 2 and md.count("| Random read, from host-b.json ") == 2
    little = md.split("### Little's law per point")[1].split("###")[0]
    assert little.count("| randread 4K QD1 from host-a.json ") == 1 and little.count("QD4 from host-b.json ") == 1


def test_memory_to_storage_ratio_names_both_files(tmp_path: Path) -> None:
    (tmp_path / "disk.json").write_text(_fio_doc(1, 11_000.0))
    out, _ = import_files([str(tmp_path / "disk.json"), str(DATA / "mlc" / "v3.7-idle-latency.txt")], tmp_path / "mix")
    md = render_report(out).read_text()
    assert ("The storage figure is from disk.json and the memory figure from v3.7-idle-latency.txt: files imported "
            "together may come from different machines") in md
