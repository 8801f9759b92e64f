"""Drive telemetry: finding the drive through sysfs, reading nvme-cli's and smartctl's JSON (real layouts,
replayed), and a real fio run on a loop device that a fake sysfs presents as an NVMe namespace, read by a
fake ``nvme`` on PATH whose thermal counter rises while one chosen point runs.  This machine has no NVMe
or SATA drive: the tools' output is replayed, everything else is real."""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from app.host import telemetry
from app.host.telemetry import (
    Drive,
    find_drive,
    load_readings,
    parse_nvme_cli,
    parse_output,
    parse_smartctl,
    point_summary,
    read_drive,
    summarise,
)
from tests.helpers.loopdev import loop_device
from tests.helpers.schema_check import validate_dir
from tests.integration.test_procedure import cli, lines, meta
from tests.integration.test_validity import ATA, PCI, fake_sysfs

DATA = Path(__file__).resolve().parents[1] / "data" / "telemetry"
TELEMETRY_RUN = Path(__file__).resolve().parents[1] / "data" / "report" / "telemetry-run"
ROOT = Path(__file__).resolve().parents[2]
NVME_DIR = f"{PCI}/nvme/nvme0/nvme0n1"
SD_DIR = f"{ATA}/host2/target2:0:0/2:0:0:0/block/sda"


def nvme_doc() -> dict[str, Any]:
    return json.loads((DATA / "nvme-smart-log.json").read_text())


# --- parsing ---------------------------------------------------------------------------------------------


def test_nvme_cli_json_gives_celsius_and_every_counter() -> None:
    r = parse_nvme_cli(nvme_doc())
    assert r["temperature_c"] == pytest.approx(311 - 273.15)
    assert r["critical_warning"] == 0
    assert r["counters"]["data_units_written"] == 61021877 and r["counters"]["num_err_log_entries"] == 2
    assert {k: r["counters"][k] for k in telemetry.THROTTLE_COUNTERS} == dict.fromkeys(telemetry.THROTTLE_COUNTERS, 0)


@pytest.mark.parametrize("value, celsius", [(311, 37.85), ("311 K", 37.85), ("38 C", 38.0), ("38 °C", 38.0),
                                            (38, 38.0), (-1, None), (99999, None), ("hot", None), (True, None),
                                            (float("nan"), None)])
def test_nvme_temperature_forms(value: Any, celsius: float | None) -> None:
    doc = {**nvme_doc(), "temperature": value}
    assert parse_nvme_cli(doc)["temperature_c"] == (pytest.approx(celsius) if celsius is not None else None)


def test_later_nvme_cli_forms_big_counters_as_strings_and_warning_as_an_object() -> None:
    doc = {**nvme_doc(), "data_units_written": "340282366920938463463374607431768211455",
           "critical_warning": {"value": 2, "temperature": 1}, "media_errors": "12,345", "power_cycles": -1}
    r = parse_nvme_cli(doc)
    assert r["counters"]["data_units_written"] == (1 << 128) - 1
    assert r["counters"]["media_errors"] == 12345 and r["critical_warning"] == 2


def test_smartctl_ata_gives_temperature_and_error_attributes() -> None:
    r = parse_smartctl(json.loads((DATA / "smartctl-ata.json").read_text()))
    assert r["temperature_c"] == 34.0
    assert r["counters"] == {"reallocated_sectors": 0, "pending_sectors": 0, "crc_errors": 3}


def test_smartctl_nvme_log() -> None:
    doc = {"temperature": {"current": 41}, "nvme_smart_health_information_log": {
        "critical_warning": 0, "temperature": 41, "data_units_written": 100, "warning_temp_time": 5,
        "critical_comp_time": 0, "media_errors": 0}}
    r = parse_smartctl(doc)
    assert r["temperature_c"] == 41.0 and r["counters"]["warning_temp_time"] == 5


def test_smartctls_own_error_output_is_a_failed_reading_naming_its_message() -> None:
    drive = Drive("/dev/sda", "scsi", ("/usr/sbin/smartctl", "-j", "-A", "/dev/sda"))
    r = parse_output(drive, (DATA / "smartctl-loop-error.json").read_text())
    assert r == {"error": "smartctl gave no temperature or counter (/dev/loop0: Unable to detect device type)"}


@settings(max_examples=400, deadline=None)
@given(st.recursive(st.none() | st.booleans() | st.integers(-2**130, 2**130) | st.floats() | st.text(max_size=8),
                    lambda kids: st.lists(kids, max_size=4)
                    | st.dictionaries(st.sampled_from(sorted(telemetry.COUNTERS) + [
                        "temperature", "critical_warning", "nvme_smart_health_information_log",
                        "ata_smart_attributes", "table", "id", "raw", "value", "current", "smartctl", "messages",
                        "string"]), kids, max_size=6), max_leaves=30),
       st.sampled_from(["nvme", "smartctl"]))
def test_hostile_tool_output_never_raises(doc: Any, tool: str) -> None:
    argv = (("/x/nvme", "smart-log", "/dev/nvme0", "-o", "json") if tool == "nvme"
            else ("/x/smartctl", "-j", "-A", "/dev/sda"))
    for text in (json.dumps(doc, allow_nan=True), json.dumps(doc)[:-1] if doc is not None else "", "\x00" * 3):
        r = parse_output(Drive("/dev/x", "nvme", argv), text)
        if "error" not in r:
            assert all(isinstance(v, int) and 0 <= v <= 1 << 128 for v in r["counters"].values())
            t = r["temperature_c"]
            assert t is None or -60 <= t <= 200


def test_smartctl_messages_that_are_not_a_list_are_no_message() -> None:
    # found by the property above: "messages" a number raised TypeError instead of giving the error reading
    argv = ("/x/smartctl", "-j", "-A", "/dev/sda")
    for messages in (1.0, "text", {"string": "x"}, None):
        r = parse_output(Drive("/dev/x", "smartctl", argv), json.dumps({"smartctl": {"messages": messages}}))
        assert r == {"error": "smartctl gave no temperature or counter"}
    said = {"smartctl": {"messages": [{"string": "Read Device Identity failed"}]}}
    assert "(Read Device Identity failed)" in parse_output(Drive("/dev/x", "smartctl", argv), json.dumps(said))["error"]


def test_throttle_counters_that_rose_make_the_reason() -> None:
    base = {"counters": {"thm_temp1_trans_count": 1, "warning_temp_time": 7, "data_units_written": 5},
            "temperature_c": 40.0}
    later = {"counters": {"thm_temp1_trans_count": 3, "warning_temp_time": 8, "data_units_written": 9},
             "temperature_c": 71.5}
    seen, flags = point_summary([base, later])  # type: ignore[list-item]
    assert seen == {"readings": 2, "temperature_c": {"min": 40.0, "max": 71.5},
                    "rose": {"thm_temp1_trans_count": 2, "warning_temp_time": 1}}
    assert flags == {"throttled": "while the point ran, the drive's thermal-management T1 transitions +2, time above "
                                  "the warning composite temperature +1 min"}
    assert point_summary([base, base])[1] == {}  # type: ignore[list-item]


# nvme-cli 2.3's smart-log of QEMU 7.2's NVMe controller in the test guest, its temperature threshold (feature
# 0x04) set to 300 K, below the controller's 323 K: the critical warning's temperature bit is set
QEMU_SMART_LOG = """{
  "critical_warning":2,
  "temperature":323,
  "avail_spare":0,
  "spare_thresh":0,
  "percent_used":0,
  "endurance_grp_critical_warning_summary":0,
  "data_units_read":"1",
  "data_units_written":"0",
  "host_read_commands":"4",
  "host_write_commands":"0",
  "controller_busy_time":"0",
  "power_cycles":"0",
  "power_on_hours":"0",
  "unsafe_shutdowns":"0",
  "media_errors":"0",
  "num_err_log_entries":"0",
  "warning_temp_time":0,
  "critical_comp_time":0,
  "thm_temp1_trans_count":0,
  "thm_temp2_trans_count":0,
  "thm_temp1_total_time":0,
  "thm_temp2_total_time":0
}"""
NVME = Drive("/dev/nvme0", "nvme", ("/usr/sbin/nvme", "smart-log", "/dev/nvme0", "-o", "json"))


def test_qemus_smart_log_keeps_the_critical_warning_temperature_bit() -> None:
    r = parse_output(NVME, QEMU_SMART_LOG)
    assert r["critical_warning"] == 2 and r["temperature_c"] == pytest.approx(49.85)
    assert r["counters"]["thm_temp1_trans_count"] == 0 and r["counters"]["data_units_read"] == 1
    smartctl = {"temperature": {"current": 50}, "nvme_smart_health_information_log": {"critical_warning": 2,
                                                                                       "temperature": 50}}
    assert parse_smartctl(smartctl)["critical_warning"] == 2
    assert parse_smartctl(json.loads((DATA / "smartctl-ata.json").read_text()))["critical_warning"] is None


@pytest.mark.parametrize("value, kept", [(0, 0), (2, 2), (255, 255), ("2", 2), (2.0, 2), (256, None), (300, None),
                                         (-1, None), (-2, None), (True, None), (False, None), (2.5, None),
                                         (float("nan"), None), (float("inf"), None), ("0x02", None), ("hot", None),
                                         ("", None), (None, None), ([2], None), ({"value": 300}, None),
                                         ({"value": 8, "read_only": 1}, 8)])
def test_a_critical_warning_is_a_byte_or_none(value: Any, kept: int | None) -> None:
    doc = json.loads(QEMU_SMART_LOG)
    assert parse_nvme_cli({**doc, "critical_warning": value})["critical_warning"] == kept
    log = {"critical_warning": value, "temperature": 50}
    assert parse_smartctl({"nvme_smart_health_information_log": log})["critical_warning"] == (
        kept if not isinstance(value, dict) else None)  # smartctl prints the byte, never an object


@settings(max_examples=300, deadline=None)
@given(st.none() | st.booleans() | st.integers(-2**70, 2**70) | st.floats() | st.text(max_size=6)
       | st.lists(st.integers(), max_size=2) | st.dictionaries(st.sampled_from(["value", "temperature"]),
                                                                st.integers(-5, 500) | st.text(max_size=3), max_size=2))
def test_any_critical_warning_value_reads_as_a_byte_or_none(value: Any) -> None:
    for r in (parse_nvme_cli({"critical_warning": value, "temperature": 323}),
              parse_smartctl({"nvme_smart_health_information_log": {"critical_warning": value, "temperature": 50}}),
              telemetry._clean_reading({"t": 1.0, "critical_warning": value})):
        w = r["critical_warning"] if r is not None else None
        assert w is None or (type(w) is int and 0 <= w <= 255)


def reading(warning: object, temp: float = 49.85) -> Any:
    return {"temperature_c": temp, "critical_warning": warning,
            "counters": dict.fromkeys(telemetry.THROTTLE_COUNTERS, 0)}


def test_the_temperature_bit_past_the_opening_reading_flags_the_point_over_temperature() -> None:
    seen, flags = point_summary([reading(0), reading(2), reading(2, 51.0)])
    assert seen == {"readings": 3, "temperature_c": {"min": 49.85, "max": 51.0}, "warnings": ["temperature"]}
    assert flags == {"over-temperature": "while the point ran, the drive set its critical warning's temperature bit "
                                         "(0x02): its temperature was past a threshold (at up to 51 °C)"}
    # the opening reading was taken before the point's I/O: its bit is the previous point's, no flag here
    assert point_summary([reading(2), reading(0)]) == ({"readings": 2, "temperature_c": {"min": 49.85, "max": 49.85}},
                                                        {})
    # only in the closing reading still counts: the drive said so while (or as) the point ended
    assert "over-temperature" in point_summary([reading(0), reading(0), reading(2)])[1]


def test_other_critical_warning_bits_are_named_but_flag_nothing() -> None:
    seen, flags = point_summary([reading(0), reading(0x01 | 0x08 | 0x40), reading(None), reading("x")])
    assert seen["warnings"] == ["spare", "read-only", "bit 6"] and flags == {}
    seen, flags = point_summary([reading(0), reading(0x12)])
    assert seen["warnings"] == ["temperature", "volatile-backup"] and set(flags) == {"over-temperature"}
    assert telemetry.warning_names(0xFF) == ["spare", "temperature", "reliability", "read-only", "volatile-backup",
                                             "pmr-read-only", "bit 6", "bit 7"]


def test_the_report_names_the_points_whose_drive_set_critical_warning_bits(tmp_path: Path) -> None:
    """The recorded telemetry run, its drive's critical warning edited in: the temperature bit during point 1
    (flagged over-temperature), the spare and read-only bits named by point 0's line, with foreign text."""
    run = tmp_path / "run"
    shutil.copytree(TELEMETRY_RUN, run)
    path = run / "raw" / "telemetry.jsonl"
    found = [json.loads(x) for x in path.read_text().splitlines()]
    for r in found:
        r["critical_warning"] = 0x02 if (r["phase"], r["index"]) == ("end", 1) else 0
    path.write_text("".join(json.dumps(r) + "\n" for r in found))
    recs = lines(run)
    recs[0]["telemetry"]["warnings"] = ["spare", "read-only", "<b>x</b>", 7, "spare"]
    recs[1]["flags"].append({"flag": "over-temperature", "reason": "the temperature bit"})
    (run / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in recs))
    assert cli("report", str(run)).returncode == 0
    md = (run / "report.md").read_text()
    section = md.split("## Drive telemetry", 1)[1].split("\n## ", 1)[0]
    assert "| Critical warning " in section and "temperature (0x02) set in 1 of " in section
    assert ("The drive reported its temperature past a threshold (critical warning, temperature bit 0x02) while 1 "
            "point(s) ran, flagged **over-temperature**: randread 4K QD4. It may have throttled them.") in section
    assert ("The drive's critical warning named spare, read-only while 1 point(s) ran: write 128K QD8. The drive "
            "reports itself failing; its figures may not hold.") in section
    assert "<b>" not in md
    row = next(ln for ln in md.splitlines() if ln.startswith("| over-temperature "))
    assert "flagged (1 point)" in row


# --- finding the drive -------------------------------------------------------------------------------------


def fake_tool(bin_dir: Path, name: str, body: str) -> Path:
    bin_dir.mkdir(parents=True, exist_ok=True)
    path = bin_dir / name
    path.write_text(f"#!{sys.executable}\n" + textwrap.dedent(body))
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path


@pytest.mark.parametrize("device_dir, bus, device", [
    (NVME_DIR, "nvme", "/dev/nvme0"),
    (f"{NVME_DIR}/nvme0n1p2", "nvme", "/dev/nvme0"),
    (f"{PCI}/nvme-subsystem/nvme-subsys0/nvme0c0n1", "nvme", "/dev/nvme0"),
    (SD_DIR, "scsi", "/dev/sda"),
    (f"{SD_DIR}/sda1", "scsi", "/dev/sda"),
])
def test_the_drive_is_found_through_sysfs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, device_dir: str, bus: str,
                                           device: str) -> None:
    target = tmp_path / "file"
    target.write_bytes(b"x")
    root = fake_sysfs(tmp_path / "sys", str(target), device_dir, {})
    bin_dir = tmp_path / "bin"
    fake_tool(bin_dir, "nvme", "print('{}')\n")
    fake_tool(bin_dir, "smartctl", "print('{}')\n")
    monkeypatch.setenv("PATH", f"{bin_dir}:/usr/bin:/bin")
    drive, why = find_drive(str(target), root)
    assert drive is not None and why == ""
    assert (drive.bus, drive.device) == (bus, device)
    assert drive.argv[1:] == (("smart-log", device, "-o", "json") if bus == "nvme" else ("-j", "-A", device))


def test_no_tool_or_no_drive_says_why(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    target = tmp_path / "file"
    target.write_bytes(b"x")
    empty = tmp_path / "empty-bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    drive, why = find_drive(str(target), fake_sysfs(tmp_path / "sys", str(target), NVME_DIR, {}))
    assert drive is None and why == ("/dev/nvme0 has a health log, but nvme-cli (or smartmontools) is not installed "
                                     "to read it")
    drive, why = find_drive(str(target), fake_sysfs(tmp_path / "sys2", str(target), "virtual/block/loop3", {}))
    assert drive is None and why.startswith("the target is on loop3, which is not an NVMe or SCSI/SATA drive")
    drive, why = find_drive(str(target), tmp_path / "no-sysfs")
    assert drive is None and "sysfs says nothing" in why


@pytest.mark.serial  # a 0.5 s timeout that a 2 MB print must beat
def test_a_tool_that_fails_hangs_or_floods_is_a_failed_reading(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    bad = fake_tool(tmp_path, "nvme",
                    "import sys; print('smart log: Invalid argument', file=sys.stderr); sys.exit(1)\n")
    r = read_drive(Drive("/dev/nvme0", "nvme", (str(bad), "smart-log", "/dev/nvme0", "-o", "json")))
    assert r == {"error": "nvme smart-log /dev/nvme0 -o json exited with status 1: smart log: Invalid argument"}
    slow = fake_tool(tmp_path / "slow", "nvme", "import time; time.sleep(30)\n")
    monkeypatch.setattr(telemetry, "TOOL_TIMEOUT_S", 0.5)
    r = read_drive(Drive("/dev/nvme0", "nvme", (str(slow), "smart-log", "/dev/nvme0", "-o", "json")))
    assert r == {"error": "nvme smart-log /dev/nvme0 -o json gave no answer within 0.5 s", "hung": True}
    flood = fake_tool(tmp_path / "flood", "nvme", "print('{\"temperature\": 300, \"x\": \"' + 'a' * 2000000 + '\"}')\n")
    r = read_drive(Drive("/dev/nvme0", "nvme", (str(flood), "smart-log", "/dev/nvme0", "-o", "json")))
    assert r["error"].startswith("nvme printed more than")


# --- the telemetry file, read back --------------------------------------------------------------------------


def test_a_hostile_telemetry_file_keeps_only_well_formed_readings(tmp_path: Path) -> None:
    good = {"t": 100.0, "phase": "start", "index": 0, "temperature_c": 40.0, "counters": {"thm_temp1_trans_count": 1}}
    later = {**good, "t": 160.0, "temperature_c": 55.0, "counters": {"thm_temp1_trans_count": 4}}
    path = tmp_path / "telemetry.jsonl"
    path.write_text("\n".join([json.dumps(good), "not json", json.dumps([1]), "{" * 100000,
                               json.dumps({**good, "error": "x\ny"}), json.dumps(later),
                               json.dumps({**good, "index": True, "counters": {"thm_temp1_trans_count": -4}})]) + "\n")
    path.write_text(path.read_text() + "".join(json.dumps({**good, "critical_warning": w}) + "\n"
                                                for w in (2, "2", -2, 300, True, 2.5, "0x02")))
    readings, bad = load_readings(path)
    assert bad == 3 and len(readings) == 11
    assert [r["critical_warning"] for r in readings[-7:]] == [2, 2, None, None, None, None, None]
    assert readings[0]["critical_warning"] is None and "critical_warning" not in readings[1]  # no key; an error
    readings = readings[:4]
    s = summarise(readings)
    assert (s.readings, s.failed, s.first_error) == (3, 1, "x y")
    assert s.temperature == (40.0, 55.0, 40.0, 40.0) and s.span_s == 60.0
    assert s.deltas == {}  # the last good reading has no counter that parses
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    assert load_readings(fifo) == ([], 0)


# --- a real run, the drive replayed ---------------------------------------------------------------------------

FAKE_NVME = """
import json, os, subprocess, sys
state_dir = os.environ["FAKE_NVME_STATE"]
with open(os.path.join(state_dir, "calls.log"), "a") as log:
    log.write(" ".join(sys.argv[1:]) + "\\n")
path = os.path.join(state_dir, "state.json")
state = json.load(open(path)) if os.path.exists(path) else {"calls": 0, "t1": 0, "t1_time": 0}
state["calls"] += 1
running = subprocess.run(["pgrep", "-a", "-x", "fio"], capture_output=True, text=True).stdout
if any(os.environ["FAKE_NVME_HOT_JOB"] in line for line in running.splitlines()):
    state["t1"] += 1
    state["t1_time"] += 2
json.dump(state, open(path, "w"))
doc = json.load(open(os.environ["FAKE_NVME_DOC"]))
if any(os.environ["FAKE_NVME_WARM_JOB"] in line for line in running.splitlines()):
    doc["critical_warning"] = 2  # the temperature bit, as a drive without throttle counters sets it
doc.update(temperature=311 + state["calls"], thm_temp1_trans_count=state["t1"], thm_temp1_total_time=state["t1_time"],
           data_units_written=doc["data_units_written"] + 10 * state["calls"])
print(json.dumps(doc, indent="\\t"))
"""


@pytest.mark.serial  # pgrep -x fio: every fio of the machine
def test_a_point_during_which_the_drives_thermal_counter_rose_is_flagged_throttled(tmp_path: Path) -> None:
    out = tmp_path / "out"
    state = tmp_path / "state"
    state.mkdir()
    fake_tool(tmp_path / "bin", "nvme", FAKE_NVME)
    with loop_device(tmp_path, size_mb=32, ram=True) as dev:
        root = fake_sysfs(tmp_path / "sys", dev.path, NVME_DIR, {})
        env = {"PROFILER_TUI_SYSFS": str(root), "PATH": f"{tmp_path / 'bin'}:{os.environ['PATH']}",
               "FAKE_NVME_STATE": str(state), "FAKE_NVME_DOC": str(DATA / "nvme-smart-log.json"),
               "FAKE_NVME_HOT_JOB": " 0001-randread-8k",  # fio names its job file in raw/, its cwd
               "FAKE_NVME_WARM_JOB": " 0002-randread-16k"}
        proc = subprocess.run([sys.executable, "-m", "app", "run", "custom", "--target", dev.path, "--yes",
                               "--out", str(out), "--set", "bs=4k,8k,16k", "--set", "runtime=2", "--set", "ramp_time=0",
                               "--set", "size=16m", "--set", "telemetry_interval=1"],
                              capture_output=True, text=True, timeout=300, cwd=ROOT, env={**os.environ, **env})
    assert proc.returncode == 0, proc.stderr
    validate_dir(out)  # every line written validates against the JSON Schemas
    recs = lines(out)
    assert [r["index"] for r in recs] == [0, 1, 2]
    throttled = [[f for f in r["flags"] if f["flag"] == "throttled"] for r in recs]
    assert throttled[0] == [] and throttled[2] == [], throttled
    (flag,) = throttled[1]
    assert flag["reason"].startswith("while the point ran, the drive's thermal-management T1 transitions +")
    assert recs[1]["telemetry"]["rose"]["thm_temp1_trans_count"] >= 1
    assert [r["checks"]["throttled"] for r in recs] == [{"result": "passed"}, {"result": "flagged"},
                                                          {"result": "passed"}]
    # point 2's drive set the critical warning's temperature bit: over-temperature, not throttled
    assert [[f["flag"] for f in r["flags"] if f["flag"] == "over-temperature"] for r in recs] == [[], [],
                                                                                                  ["over-temperature"]]
    assert [r["telemetry"].get("warnings") for r in recs] == [None, None, ["temperature"]]
    assert all(r["telemetry"]["readings"] >= 2 and 30 < r["telemetry"]["temperature_c"]["min"] < 80 for r in recs)
    m = meta(out)
    assert m["telemetry"] == {"available": True, "device": "/dev/nvme0", "bus": "nvme", "tool": "nvme",
                              "command": "nvme smart-log /dev/nvme0 -o json", "interval_s": 1,
                              "file": "raw/telemetry.jsonl"}
    # the host audit asks the controller once before the first point (APST, power state); every reading is smart-log
    audit_calls = {"id-ctrl /dev/nvme0", "get-feature /dev/nvme0 -f 12", "get-feature /dev/nvme0 -f 2"}
    calls = [c for c in (state / "calls.log").read_text().splitlines() if c not in audit_calls]
    assert set(calls) == {"smart-log /dev/nvme0 -o json"}
    readings = [json.loads(x) for x in (out / "raw" / "telemetry.jsonl").read_text().splitlines()]
    assert len(readings) == len(calls)
    phases = [r["phase"] for r in readings]
    assert phases[0] == "before" and phases[-1] == "after" and phases.count("start") == phases.count("end") == 3
    assert "during" in phases
    assert [r["index"] for r in readings if r["phase"] in ("start", "end")] == [0, 0, 1, 1, 2, 2]
    report = cli("report", str(out))
    assert report.returncode == 0, report.stderr
    md = (out / "report.md").read_text()
    assert "## Drive telemetry" in md and "`nvme smart-log /dev/nvme0 -o json`" in md
    row = next(ln for ln in md.splitlines() if ln.startswith("| Thermal-management T1 transitions "))
    assert row.split("|")[2].strip().startswith("+") and row.split("|")[2].strip() != "+0", row
    assert "| Data written " in md and "data units of 512,000 B)" in md
    assert "A throttle counter rose while 1 point(s) ran, flagged **throttled**: randread 8K QD1." in md
    assert ("while 1 point(s) ran, flagged **over-temperature**: randread 16K QD1. It may have throttled them."
            in md)
    assert "| Critical warning " in md and "temperature (0x02) set in " in md
    assert "plots/timeseries.svg" in md and (out / "plots" / "timeseries.svg").is_file()


def test_a_target_without_a_drive_says_so_in_run_json_and_the_report(tmp_path: Path) -> None:
    out = tmp_path / "out"
    with loop_device(tmp_path, size_mb=16, ram=True) as dev:
        proc = cli("run", "custom", "--target", dev.path, "--yes", "--out", str(out), "--set", "runtime=1",
                   "--set", "ramp_time=0", "--set", "size=8m")
        name = os.path.basename(dev.path)
    assert proc.returncode == 0, proc.stderr
    validate_dir(out)  # every line written validates against the JSON Schemas
    assert meta(out)["telemetry"] == {"available": False, "reason": (
        f"the target is on {name}, which is not an NVMe or SCSI/SATA drive (a loop, virtual, device-mapper or RAID "
        "device): no drive health log")}
    assert "telemetry" not in lines(out)[0] and not (out / "raw" / "telemetry.jsonl").exists()
    assert cli("report", str(out)).returncode == 0
    md = (out / "report.md").read_text()
    assert f"## Drive telemetry\n\nNone recorded: the target is on {name}, which is not an NVMe" in md
    # the throttled check could not run: the line says so, and the report's checks table with why
    assert lines(out)[0]["checks"]["throttled"] == {"result": "not-applicable", "why": "no drive telemetry: "
                                                    + meta(out)["telemetry"]["reason"]}
    row = next(ln for ln in md.splitlines() if ln.startswith("| throttled "))
    assert "| not applicable " in row and f"no drive telemetry: the target is on {name}" in row
    assert "no point flagged" not in md
