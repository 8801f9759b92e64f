"""The report says what its checks checked and under which conditions the points were measured: each validity
check is flagged, passed or not applicable (with why), the Test conditions section states engine, direct,
runtime, ramp, target state, working set, suspected write-back caching and the machine, and warns of short
points and ramp_time = 0; a direction without I/O shows n/a.  Synthetic results directories (no fio): fast."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Any

import pytest

from app.model import runmeta
from app.model.records import JSONObject, JSONValue, Parts, StorageMetrics, read_line
from app.report import render_report
from app.report.data.model import RunData, StorageRow, load
from app.report.render import _flags_legend, storage_table
from app.report.sections import conditions
from app.stats.validity import (
    ADDED_LATER,
    NO_STEADY,
    SEARCHED,
    TargetFacts,
    checks_of,
    point_checks,
    recorded_facts,
)
from tests.helpers.typed import as_dict

VDA_FILE = {"type": "file", "path": "/srv/t/testfile", "mount_point": "/", "source": "/dev/vda", "filesystem": "ext4",
            "free_bytes": 80 << 30}
VM = {"memory": {"total_bytes": 16 << 30, "available_bytes": 12 << 30},
      "system": {"os": "Debian", "kernel": "6.1", "virtualization": "virtual machine"}}
NO_TELEMETRY = {"available": False, "reason": "the target is on vda, which is not an NVMe or SCSI/SATA drive"}


def _point(rw: str, bs: int = 4096, qd: int = 16, *, runtime: Any = 10, ramp: Any = 2, mix: int | None = None,
           **more: Any) -> dict[str, Any]:
    return {"rw": rw, "bs": bs, "rwmixread": mix, "iodepth": qd, "numjobs": 1, "ioengine": "libaio", "direct": True,
            "runtime": runtime, "ramp_time": ramp, "size": 1 << 30, "time_based": True, **more}


def _side(iops: float, lat_ns: float) -> dict[str, float]:
    keys = ("min", "max", "mean", "stddev", "p50", "p90", "p99", "p99_9", "p99_99")
    return {k: (lat_ns if iops else 0.0) for k in keys}


def _metrics(point: dict[str, Any], bw: float) -> dict[str, Any]:
    """Figures consistent with Little's law at the point's depth (no depth-not-reached), CPU well below 90 %."""
    iops = bw / point["bs"]
    lat = point["iodepth"] / iops * 1e9
    reads = {"read": 100, "randread": 100}.get(point["rw"], point["rwmixread"] if point["rwmixread"] is not None else 0)
    r, w = iops * reads / 100, iops * (100 - reads) / 100
    return {"iops": iops, "read_iops": r, "write_iops": w, "bw_bytes": bw, "read_bw_bytes": bw * reads / 100,
            "write_bw_bytes": bw * (100 - reads) / 100, "lat_ns": _side(iops, lat), "read_lat_ns": _side(r, lat),
            "write_lat_ns": _side(w, lat), "usr_cpu": 3.0, "sys_cpu": 5.0, "total_ios": int(iops * 10),
            "io_bytes": int(bw * 10), "jobs": 1}


def _make(path: Path, points: list[tuple[dict[str, Any], float]], *, meta: dict[str, Any] | None = None,
          samples: dict[int, list[float]] | None = None, **line: Any) -> Path:
    """A results directory: ``points`` as (point, bandwidth), ``samples`` index → per-second bandwidths,
    ``line``: keys added to every results line (e.g. flags=[])."""
    (path / "raw").mkdir(parents=True)
    lines = []
    for i, (point, bw) in enumerate(points):
        rec = {"schema_version": 1, "kind": "storage", "index": i, "point": point, "metrics": _metrics(point, bw),
               "target": "/srv/t/testfile", **line}
        if samples and i in samples:
            rel = f"raw/{i:04d}.samples.jsonl"
            (path / rel).write_text("".join(json.dumps({"t": t + 1.0, "interval_s": 1.0, "iops": v / point["bs"],
                                                        "bw_bytes": v}) + "\n" for t, v in enumerate(samples[i])))
            rec["raw"] = {"samples": rel}
        lines.append(json.dumps(rec))
    run = {"tool": "profiler-tui", "kind": "storage", "plan": [p for p, _ in points], "points_total": len(points),
           "points_done": len(points), "target": "/srv/t/testfile", "target_created_by_tool": True,
           "target_info": VDA_FILE, "environment": VM, "tools": {"fio": "fio-3.33"}, "status": "complete",
           "telemetry": NO_TELEMETRY, **(meta or {})}
    (path / "run.json").write_text(json.dumps(run))
    (path / "results.jsonl").write_text("\n".join(lines) + "\n")
    return path


def _table(lines: list[str]) -> dict[str, list[str]]:
    rows = [[c.strip() for c in x.strip("|").split("|")] for x in lines if x.startswith("|")]
    return {r[0]: r[1:] for r in rows[2:]}


# --- checks -----------------------------------------------------------------------------------------------


def test_checks_that_could_not_run_say_not_applicable_on_a_virtual_disk(tmp_path: Path) -> None:
    """A virtual disk: no link, no drive telemetry, no steady criterion.  The lines carry flags (checked, none
    raised) but no ``checks`` (written before they existed): the report derives them from run.json and says
    not applicable, with why, for those three — never 'no point flagged'."""
    d = _make(tmp_path / "run", [(_point("randread"), 200e6), (_point("randwrite"), 150e6)], flags=[])
    render_report(d)
    md = (d / "report.md").read_text()
    assert "no point flagged" not in md
    block = md[md.index("Validity checks"):]
    table = _table(block.split("\n\n")[1].splitlines())
    assert table["above-link"] == ["not applicable", "no link speed known for a virtual disk"]
    assert table["throttled"][0] == "not applicable" and table["throttled"][1].startswith("no drive telemetry: the "
                                                                                          "target is on vda")
    assert table["not-steady"] == ["not applicable", NO_STEADY]
    assert table["cpu-bound"][0] == table["depth-not-reached"][0] == table["buffered"][0] == "passed"
    assert table["cpu-bound"][1].startswith("checked: ")


def test_recorded_checks_are_read_and_a_flag_always_wins(tmp_path: Path) -> None:
    facts = TargetFacts(link={"kind": "pcie", "text": "PCIe 8.0 GT/s x4", "bytes_per_s": 3.9e9}, telemetry=True)
    search = _point("randread", latency_bound=1000)
    checks = point_checks(search, StorageMetrics.of(_metrics(search, 1e8)), Parts(operating_point={"depth": 4}), None,
                          facts, [])
    assert checks["depth-not-reached"] == {"result": "not-applicable", "why": SEARCHED}
    assert checks["above-link"] == checks["throttled"] == {"result": "passed"}
    flagged: list[JSONValue] = [{"flag": "above-link", "reason": "5 GB/s is above the link"}]
    record: JSONObject = {"point": _point("read"), "metrics": {}, "flags": flagged,
              "checks": {"above-link": {"result": "passed"}, "cpu-bound": {"result": "bogus"},
                         "throttled": {"result": "not-applicable", "why": "no\x1b[31m drive   health log"},
                         "buffered": "passed", "not-steady": {"result": "passed"}}}
    got = checks_of(read_line({"kind": "storage", **record}, check=False),
                    recorded_facts(runmeta.from_json({"telemetry": {"available": True}}, "run.json")))
    assert got is not None
    assert got["above-link"] == {"result": "flagged"}
    assert got["cpu-bound"] == {"result": "not-applicable", "why": "fio reported no CPU use"}  # derived: no figures
    assert got["throttled"]["result"] == "not-applicable" and "drive health log" in got["throttled"]["why"]
    assert got["buffered"] == {"result": "passed"}
    # before the checks existed
    assert checks_of(read_line({"kind": "storage", "point": {}, "metrics": {}}, check=False), TargetFacts()) is None
    rows = [StorageRow.of(0, as_dict(record["point"]), {}, record)]
    text = "\n".join(_flags_legend(rows, None))
    assert "flagged (1 point)" in text and "\x1b" not in text


def test_the_over_temperature_check_is_never_passed_for_lines_recorded_before_it() -> None:
    on = recorded_facts(runmeta.from_json({"telemetry": {"available": True}}, "run.json"))
    telemetry = {"readings": 2, "temperature_c": {"min": 50, "max": 50}}
    base = {"kind": "storage", "point": _point("randread"), "metrics": {}, "telemetry": telemetry}
    before = {**base, "flags": [], "checks": {"throttled": {"result": "passed"}}}
    got = checks_of(read_line(before, check=False), on)
    assert got is not None and got["throttled"] == {"result": "passed"}
    assert got["over-temperature"] == {"result": "not-applicable", "why": ADDED_LATER["over-temperature"]}
    since = {**before, "checks": {"over-temperature": {"result": "passed"}}}
    assert checks_of(read_line(since, check=False), on)["over-temperature"] == {"result": "passed"}  # type: ignore
    hot = {**before, "flags": [{"flag": "over-temperature", "reason": "the temperature bit was set"}]}
    assert checks_of(read_line(hot, check=False), on)["over-temperature"] == {"result": "flagged"}  # type: ignore
    off = checks_of(read_line(before, check=False), TargetFacts())
    assert off is not None and off["over-temperature"]["result"] == "not-applicable"
    assert off["over-temperature"]["why"].startswith("no drive telemetry")  # nor a critical warning to check
    # a line the tool writes now: the check ran
    checks = point_checks(as_dict(base["point"]), StorageMetrics(), Parts(), telemetry, TargetFacts(telemetry=True), [])
    assert checks["over-temperature"] == checks["throttled"] == {"result": "passed"}


def test_lines_before_the_checks_get_no_table_and_mixed_lines_say_so(tmp_path: Path) -> None:
    old = StorageRow.of(0, _point("read"), {}, {})
    new = StorageRow.of(1, _point("read"), {}, {"flags": []})
    assert _flags_legend([old], None) == []
    text = "\n".join(_flags_legend([old, new], None))
    assert "over the 1 point it was run on" in text and "1 point was recorded before the tool checked" in text


# --- test conditions ----------------------------------------------------------------------------------------


def _conditions(d: Path) -> tuple[dict[str, list[str]], str]:
    text = "\n".join(conditions.section(load(d)))
    return _table(text.splitlines()), text


def test_writes_beating_reads_beyond_noise_on_a_file_suspect_write_back(tmp_path: Path) -> None:
    points = [(_point("randread"), 100e6), (_point("randwrite"), 300e6), (_point("read", 131072), 500e6),
              (_point("write", 131072), 505e6)]
    samples = {0: [99e6, 100e6, 101e6, 100e6] * 3, 1: [299e6, 300e6, 301e6, 300e6] * 3,
               2: [400e6, 600e6, 450e6, 550e6] * 3, 3: [420e6, 590e6, 460e6, 550e6] * 3}
    table, text = _conditions(_make(tmp_path / "run", points, samples=samples))
    assert table["Host write-back caching"] == ["suspected: writes beat reads beyond noise in 1 of the 2 read/write "
                                                "pairs"]
    assert "Host write-back caching suspected" in text and "random 4K QD16: write 300.0 vs read 100.0 MB/s (+200 %)" \
        in text
    assert "sequential 128K" not in text  # +1 % inside the spread of its seconds
    assert table["Engine (ioengine)"] == ["libaio"]
    assert table["Runtime per point"] == ["10 s"] and table["Ramp time (ramp_time)"] == ["2 s"]
    assert table["File or device state"][0].startswith("a new file the tool created")
    assert table["Preconditioned"] == ["no (precondition = none)"] and table["TRIM before the run"] == ["not recorded"]
    assert table["Host RAM"][0].startswith("16 GiB; the working set is 6.25% of it")
    assert "virtual machine" in table["Machine"][0] and "This machine is a virtual machine" in text
    assert "ramp_time = 0" not in text and "2 s or less" not in text


def test_write_back_without_samples_or_on_a_device_is_not_judged(tmp_path: Path) -> None:
    points = [(_point("randread"), 100e6), (_point("randwrite"), 300e6)]
    table, _ = _conditions(_make(tmp_path / "file", points))
    assert table["Host write-back caching"][0].startswith("not judged: writes beat reads in 1 of the 1 read/write "
                                                          "pair (random 4K QD16: write 300.0 vs read 100.0 MB/s")
    assert "but too few samples: the line records no interval and kept no per-second samples" in \
        table["Host write-back caching"][0]
    within = [(_point("read", 131072), 500e6), (_point("write", 131072), 505e6)]
    table, text = _conditions(_make(tmp_path / "within", within, samples={0: [490e6, 510e6, 495e6, 505e6] * 3,
                                                                          1: [495e6, 515e6, 500e6, 510e6] * 3}))
    # one run per side: +1 % is inside its intervals, but "not suspected" needs the power to see 10 % beyond the
    # drift between runs that one run cannot measure
    assert table["Host write-back caching"][0].startswith("not judged: writes beat reads in 1 of the 1 read/write "
                                                          "pair"), table["Host write-back caching"]
    assert "drift between runs" in table["Host write-back caching"][0]
    assert "suspected:" not in text.replace("not suspected:", "")
    device = {"type": "disk", "path": "/dev/sdz", "size_bytes": 4 << 40}
    table, _ = _conditions(_make(tmp_path / "dev", points, meta={"target_info": device, "precondition": {
        "mode": "sequential", "status": "done", "steady": {"attained": True}}, "environment": {
        "memory": VM["memory"], "system": {"os": "Debian", "kernel": "6.1"}}}))
    assert table["Host write-back caching"][0].startswith("not judged: it is looked for on file targets and virtual "
                                                          "disks")
    assert table["Device size"] == ["4 TiB; the working set is 0.02% of it"]
    assert table["Preconditioned"] == ["yes: sequential (done, steady; see Run)"]
    assert table["File or device state"][0].startswith("a block device")


def test_short_points_without_ramp_are_warned_of(tmp_path: Path) -> None:
    points = [(_point("randread", runtime=2, ramp=0), 100e6), (_point("randread", qd=32, runtime=1, ramp=0), 100e6),
              (_point("randread", qd=64, runtime=30, ramp=5), 100e6)]
    table, text = _conditions(_make(tmp_path / "run", points, meta={"procedure": {"precondition": "sequential"}}))
    assert table["Preconditioned"] == ["sequential was asked; run.json records no pass"]
    assert table["Runtime per point"] == ["1 s, 2 s, 30 s"] and table["Ramp time (ramp_time)"] == ["0 s, 5 s"]
    assert "> 2 of 3 points ran for 2 s or less (runtime 1 s, 2 s)" in text
    assert "> 2 of 3 points had ramp_time = 0" in text


HOSTILE: list[dict[str, Any]] = [
    {"environment": {"memory": {"total_bytes": "lots", "available_bytes": math.inf},
                     "system": {"virtualization": "\x1b[31mvm|x", "container": "yes"}}},
    {"environment": {"memory": {"total_bytes": 10 ** 400, "available_bytes": -1}, "system": {"virtualization": ["vm"]}},
     "target_info": {"type": "file", "device": {"size_bytes": 1e308}, "free_bytes": "x", "source": 7}},
    {"target_info": {"type": ["x"]}, "precondition": {"mode": ["x"], "steady": "no"},
     "procedure": {"precondition": "\x1b[2Jx"}, "telemetry": {"available": "yes", "reason": 5}},
    {"target_info": {"type": "loop", "backing_file": "\x07/img\n|", "size_bytes": True}, "precondition": {}},
]


@pytest.mark.parametrize("meta", HOSTILE)
def test_hostile_run_json_never_crashes_the_section(tmp_path: Path, meta: dict[str, Any]) -> None:
    points = [_point("randread", runtime="2", ramp=None), _point("randwrite", runtime=10 ** 30, ramp=-1),
              {**_point("randrw", mix=0), "ioengine": "\x1b]0;x\x07", "size": "big", "direct": "yes"}]
    base = json.loads(json.dumps({"tool": "profiler-tui", "status": "complete", "target_created_by_tool": True}))
    data = RunData(tmp_path, runmeta.from_json({**base, **meta}, tmp_path / "run.json"),
                   [StorageRow.of(i, p, _metrics({**p, "bs": 4096, "rwmixread": 0 if i == 2 else None,
                                               "iodepth": 16, "rw": p["rw"]}, 1e8), {"flags": [], "checks": "x"})
                    for i, p in enumerate(points)], [])
    text = "\n".join(conditions.section(data) + _flags_legend(data.storage, data.meta))
    assert "## Test conditions" in text and "| above-link" in text
    assert not re.search(r"[\x00-\x08\x0b-\x1f\x7f]", text)


@pytest.mark.parametrize("meta, key", [({"environment": "junk"}, "environment"),
                                       ({"target_info": ["x"]}, "target_info"),
                                       ({"procedure": "none"}, "procedure"), ({"precondition": "done"}, "precondition"),
                                       ({"environment": {"system": ["vm"]}}, "environment.system"),
                                       ({"target_created_by_tool": "yes"}, "target_created_by_tool"),
                                       ({"telemetry": 5}, "telemetry")])
def test_ill_typed_run_json_parts_the_section_reads_are_refused_naming_the_key(meta: dict[str, Any], key: str) -> None:
    with pytest.raises(runmeta.RunMetaError, match=f"^run.json: key '{re.escape(key)}' has invalid value"):
        runmeta.from_json({"tool": "profiler-tui", **meta}, "run.json")


# --- a direction without I/O --------------------------------------------------------------------------------


def test_a_direction_without_io_shows_n_a_in_the_mixed_table(tmp_path: Path) -> None:
    d = _make(tmp_path / "run", [(_point("randrw", mix=0), 100e6), (_point("randrw", mix=70), 100e6)])
    text = "\n".join(storage_table(load(d).storage, meta=None))
    table = _table(text[text.index("Read and write sides of the mixed workloads:"):].splitlines()[2:])
    write_only = table["randrw 0/100 4K QD16"]
    assert write_only[4] == write_only[6] == "n/a"  # read avg, read p99
    assert write_only[5] != "n/a" and float(write_only[5]) > 0
    assert "n/a" not in table["randrw 70/30 4K QD16"]


def test_a_hostile_run_json_renders_a_report_without_junk(tmp_path: Path) -> None:
    """Through the reader: run.json values of the right JSON type but absurd — sizes past any device, control
    characters, a list where a word is expected — give "not recorded"/"unknown" or escaped text, never a crash."""
    env = {"memory": {"total_bytes": 10 ** 400, "available_bytes": -1},
           "system": {"virtualization": "\x1b[31mvm|x", "container": True}}
    info = {**VDA_FILE, "free_bytes": 1e308, "device": {"size_bytes": 1e300}}
    meta = {"environment": env, "target_info": info, "precondition": {"mode": ["x"], "status": 5},
            "procedure": {"precondition": "sequential\x1b[2J"}}
    d = _make(tmp_path / "run", [(_point("randread"), 1e8), (_point("randwrite"), 2e8)], meta=meta, flags=[])
    render_report(d)
    md = (d / "report.md").read_text()
    table = _table(md[md.index("## Test conditions"):md.index("## Storage results")].splitlines())
    assert table["Host RAM"] == ["not recorded"] and table["Device size"] == ["not recorded"]
    assert table["Preconditioned"] == ["yes: mode not recorded (failed; see Run)"]
    assert "| a vm\\|x, inside a container" in md  # the '|' escaped: the cell stays one cell
    assert not re.search(r"\d{25}", md) and "\x1b" not in md


def test_steady_points_are_counted_and_their_check_applies(tmp_path: Path) -> None:
    points = [(_point("randread", steady="iops:2%"), 1e8), (_point("randread", qd=32), 1e8)]
    d = _make(tmp_path / "run", points, flags=[])
    recs = [json.loads(x) for x in (d / "results.jsonl").read_text().splitlines()]
    recs[0]["steady"] = {"attained": True, "criterion": "iops:2%", "after_s": 4.0}
    (d / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in recs))
    table, _ = _conditions(d)
    assert table["Steady state"] == ["1 of 2 points ran to fio's steady-state criterion; 1 reached it (see Steady "
                                     "state)"]
    checks = _table("\n".join(_flags_legend(load(d).storage, None)).splitlines())
    assert checks["not-steady"] == ["passed (1), not applicable (1)", "checked: fio's steady-state criterion held "
                                    f"before the runtime cap; not applicable to 1: {NO_STEADY}"]
