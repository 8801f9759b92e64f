"""Drive telemetry: the drive's own health log, read before, during and after a storage run.

Which drive: the block device a target is (or, for a file, the one its filesystem lives on), found through
sysfs (``/sys/dev/block/MAJ:MIN`` resolved; ``PROFILER_TUI_SYSFS`` names another root, as for the link):

- an NVMe namespace or partition (``…/nvme/nvmeN/nvmeNnM[/…]``): ``nvme smart-log /dev/nvmeN -o json``
  (nvme-cli), or ``smartctl -j -A`` when nvme-cli is missing;
- a SCSI disk (``…/block/sdX``, SATA, SAS, USB): ``smartctl -j -A /dev/sdX`` (smartmontools);
- anything else (loop, virtio, device-mapper, md, tmpfs) has no drive health log: the run records why.

When: once before the run, at every point's start and end (one reading serves the end of a point and the
start of the next), every ``telemetry_interval`` seconds (default 10) while a point runs, and once after
a run that ends normally.  Each reading is appended to ``raw/telemetry.jsonl`` as it is taken, so a run that
is killed keeps every reading; run.json's ``telemetry`` names the drive and the tool, or why there is none.

A point during which a throttle counter rose (thermal-management transitions or time, warning or critical
composite-temperature time) is flagged ``throttled`` (app.stats.validity); its results line gets ``telemetry``:
the temperature range and the counters that rose.

Each reading also keeps the drive's critical-warning bit field (NVMe's ``critical_warning``, 0 to 255; an ATA
drive has none). Some drives keep no throttle counters at all (QEMU's NVMe controller, for one) but still
raise the field's temperature bit (0x02) while the composite temperature is past a threshold the drive or the
host set. So: a point with the temperature bit set in any reading of its window but the one that opened it
(taken as the point starts, right after the previous point's end reading: what it shows was there before the
point's I/O, and belongs to the point before) is flagged ``over-temperature`` — the drive reported its
temperature past a threshold while the point ran, and may have throttled. It is not called ``throttled``: no
throttle counter moved, and a drive may run hot without slowing down. The other bits (spare below its
threshold, reliability degraded, media read-only, volatile-memory backup failed, persistent memory region
read-only) are no flag of their own: they say the drive is failing, not that a point's figures are in doubt.
Every bit set in the point's window (past its opening reading) is named in the results line's
``telemetry.warnings``, and the report names those points.

Tool output is untrusted: a missing tool, a timeout, a non-zero exit, output that is not a JSON object or a
value that is not a sane number is "no reading" (or that field left out), never an error of the run.
"""

from __future__ import annotations

import asyncio
import json
import math
import os
import re
import shutil
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Iterable, Mapping, TypedDict

from app.core.sanitize import clean_line
from app.host.external import describe_failure, run_bounded
from app.host.link import MAX_DEPTH, device_number, sysfs_root
from app.model.keys import TELEMETRY_INTERVAL_S
from app.store.results import SCHEMA_VERSION, now_iso, open_file, read_beneath, read_regular

TOOL_TIMEOUT_S = 3.0  # a health log takes well under a second; a tool that hangs this long is not asked again
MAX_OUTPUT_CHARS = 1 << 20  # a health log is a few KiB; more is not a health log (the tool is stopped there)
MAX_COUNTER = 1 << 128  # NVMe counters are 128-bit
FILE_NAME = "telemetry.jsonl"
MAX_READINGS_READ = 100_000  # lines of a telemetry file the report looks at
MAX_READINGS_BYTES = 64 << 20  # and bytes (a reading is about 450)
MAX_LINE_CHARS = 64 << 10
DATA_UNIT_BYTES = 512_000  # an NVMe data unit: 1,000 blocks of 512 bytes
MAX_WARNING = 0xFF  # NVMe's critical warning is one byte

# the critical-warning bits (NVMe base specification, SMART / health log byte 0): name, what a reader is told
WARNING_BITS: dict[int, tuple[str, str]] = {
    0x01: ("spare", "available spare below its threshold"),
    0x02: ("temperature", "temperature past a threshold"),
    0x04: ("reliability", "NVM subsystem reliability degraded"),
    0x08: ("read-only", "media placed in read-only mode"),
    0x10: ("volatile-backup", "volatile memory backup failed"),
    0x20: ("pmr-read-only", "persistent memory region read-only"),
}
TEMPERATURE_BIT = 0x02

# counters that rise when the drive throttles or runs hot: (name, what a reader is told, unit)
THROTTLE_COUNTERS: dict[str, tuple[str, str]] = {
    "thm_temp1_trans_count": ("thermal-management T1 transitions", ""),
    "thm_temp2_trans_count": ("thermal-management T2 transitions", ""),
    "thm_temp1_total_time": ("time in thermal-management T1", "s"),
    "thm_temp2_total_time": ("time in thermal-management T2", "s"),
    "warning_temp_time": ("time above the warning composite temperature", "min"),
    "critical_comp_time": ("time above the critical composite temperature", "min"),
}
# other counters kept and summarised (deltas over the run)
WEAR_COUNTERS: dict[str, tuple[str, str]] = {
    "data_units_written": ("data written", "units"),
    "data_units_read": ("data read", "units"),
    "media_errors": ("media and data integrity errors", ""),
    "num_err_log_entries": ("error log entries", ""),
    "reallocated_sectors": ("reallocated sectors", ""),
    "pending_sectors": ("pending sectors", ""),
    "crc_errors": ("interface CRC errors", ""),
}
COUNTERS = {**THROTTLE_COUNTERS, **WEAR_COUNTERS}

# smartctl's NVMe log names the same fields a little differently
_SMARTCTL_NVME = {"warning_temp_time": "warning_temp_time", "critical_comp_time": "critical_comp_time",
                  "data_units_written": "data_units_written", "data_units_read": "data_units_read",
                  "media_errors": "media_errors", "num_err_log_entries": "num_err_log_entries"}
# ATA attributes (by id) whose raw value is a counter kept above
_ATA_ATTRIBUTES = {5: "reallocated_sectors", 197: "pending_sectors", 199: "crc_errors"}


class Reading(TypedDict, total=False):
    """One line of raw/telemetry.jsonl (docs/results-schema.md, "telemetry.jsonl")."""

    schema_version: int
    at: str  # ISO-8601 UTC
    t: float  # the same instant in Unix seconds
    phase: str  # before | start | during | end | after
    index: int | None  # the plan point running (or about to), None outside points
    temperature_c: float | None
    critical_warning: int | None
    counters: dict[str, int]
    error: str  # the reading failed: why (no other figure then)
    hung: bool  # read_drive's mark of a tool that timed out (never written)


@dataclass(frozen=True)
class Drive:
    """The drive whose health log is read: its device node, bus and the command that reads it."""

    device: str  # /dev/nvme0, /dev/sda
    bus: str  # "nvme" or "scsi"
    argv: tuple[str, ...]  # the reading command, tool path first

    @property
    def tool(self) -> str:
        return os.path.basename(self.argv[0])

    @property
    def command(self) -> str:
        return " ".join((self.tool, *self.argv[1:]))


def _drive_name(resolved: Path) -> tuple[str, str] | None:
    """("nvme", "nvme0") or ("scsi", "sda") from a block device's resolved sysfs path, else None."""
    parts = resolved.parts[-MAX_DEPTH:]
    for i, part in enumerate(parts):
        if re.fullmatch(r"nvme[0-9]+", part) and any(re.fullmatch(rf"{part}(?:c[0-9]+)?n[0-9]+", p)
                                                      for p in parts[i + 1:]):
            return "nvme", part
        if re.fullmatch(r"nvme[0-9]+c[0-9]+n[0-9]+", part):  # native multipath: nvme0c0n1 → nvme0
            return "nvme", part.split("c")[0]
    for i, part in enumerate(parts[:-1]):
        if part == "block" and re.fullmatch(r"sd[a-z]+", parts[i + 1]):
            return "scsi", parts[i + 1]
    return None


def find_drive(target: str, sysfs: Path | None = None) -> tuple[Drive | None, str]:
    """The drive holding ``target`` and how to read it, or None and one sentence saying why there is none."""
    number = device_number(target)
    if number is None or number[0] == 0:
        return None, f"{target} is on no block device (a memory or network filesystem): no drive health log"
    root = sysfs or sysfs_root()
    try:
        resolved = (root / "dev" / "block" / f"{number[0]}:{number[1]}").resolve(strict=True)
    except (OSError, RuntimeError):
        return None, f"sysfs says nothing of block device {number[0]}:{number[1]}: no drive health log"
    found = _drive_name(resolved)
    if found is None:
        name = resolved.name if resolved.name else f"{number[0]}:{number[1]}"
        return None, (f"the target is on {name}, which is not an NVMe or SCSI/SATA drive (a loop, virtual, "
                      "device-mapper or RAID device): no drive health log")
    bus, name = found
    device = f"/dev/{name}"
    nvme, smartctl = shutil.which("nvme"), shutil.which("smartctl")
    if bus == "nvme" and nvme:
        return Drive(device, bus, (nvme, "smart-log", device, "-o", "json")), ""
    if smartctl:
        return Drive(device, bus, (smartctl, "-j", "-A", device)), ""
    wanted = "nvme-cli (or smartmontools)" if bus == "nvme" else "smartmontools"
    return None, f"{device} has a health log, but {wanted} is not installed to read it"


# --- parsing (untrusted tool output) ---------------------------------------------------------------------


def _count(v: object) -> int | None:
    """A counter: a whole number from 0 to 2^128 (nvme-cli may print a big one as a float or a string)."""
    if isinstance(v, bool):
        return None
    if isinstance(v, str):
        text = v.strip().replace(",", "")
        if not re.fullmatch(r"[0-9]{1,40}", text):
            return None
        v = int(text)
    if isinstance(v, float):
        if not math.isfinite(v) or v < 0 or v != int(v):
            return None
        v = int(v)
    if isinstance(v, int) and 0 <= v <= MAX_COUNTER:
        return v
    return None


def _warning(v: object) -> int | None:
    """The critical-warning bit field: a whole number from 0 to 255 (as :func:`_count` reads one)."""
    c = _count(v)
    return c if c is not None and c <= MAX_WARNING else None


def warning_names(bits: int) -> list[str]:
    """The names of the bits set in a critical-warning field, lowest first (``bit 6`` for a reserved one)."""
    return [WARNING_BITS[1 << i][0] if 1 << i in WARNING_BITS else f"bit {i}" for i in range(8) if bits >> i & 1]


def _celsius(v: object, kelvin_default: bool) -> float | None:
    """A temperature: nvme-cli prints the NVMe log's Kelvin (a number; some versions "37 C" or "310 K");
    smartctl prints Celsius.  Kept when it lands between -60 and 200 °C."""
    unit = None
    if isinstance(v, str):
        m = re.fullmatch(r"\s*(-?[0-9]{1,4}(?:\.[0-9]+)?)\s*(°\s*C|C|K|Kelvin|Celsius)?\s*", v)
        if not m:
            return None
        unit = (m.group(2) or "").replace("°", "").strip()[:1] or None
        v = float(m.group(1))
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
        return None
    if kelvin_default and unit is None and v <= 0:
        return None  # the NVMe log's Kelvin is unsigned; 0 means "not reported"
    kelvin = unit == "K" or (unit is None and kelvin_default and v > 200)
    c = float(v) - 273.15 if kelvin else float(v)
    return round(c, 2) if -60 <= c <= 200 else None


def parse_nvme_cli(doc: Mapping[str, object]) -> Reading:
    """A reading from ``nvme smart-log -o json`` (nvme-cli's key names)."""
    counters = {k: c for k in COUNTERS if (c := _count(doc.get(k))) is not None}
    warning = doc.get("critical_warning")
    if isinstance(warning, Mapping):  # later versions: {"value": N, <one key per bit>}
        warning = warning.get("value")
    temp = doc.get("temperature", doc.get("Temperature"))  # some versions capitalise it
    return {"temperature_c": _celsius(temp, kelvin_default=True), "critical_warning": _warning(warning),
            "counters": counters}


def parse_smartctl(doc: Mapping[str, object]) -> Reading:
    """A reading from ``smartctl -j -A``: the NVMe log (``nvme_smart_health_information_log``), or an ATA/SCSI
    drive's current temperature and its error-count attributes."""
    temp = doc.get("temperature")
    celsius = _celsius(temp.get("current"), kelvin_default=False) if isinstance(temp, Mapping) else None
    counters: dict[str, int] = {}
    warning = None
    log = doc.get("nvme_smart_health_information_log")
    if isinstance(log, Mapping):
        counters = {ours: c for theirs, ours in _SMARTCTL_NVME.items() if (c := _count(log.get(theirs))) is not None}
        for i in (1, 2):
            for theirs, ours in ((f"thermal_temp{i}_transition_count", f"thm_temp{i}_trans_count"),
                                 (f"thermal_temp{i}_total_time", f"thm_temp{i}_total_time")):
                if (c := _count(log.get(theirs))) is not None:
                    counters[ours] = c
        warning = _warning(log.get("critical_warning"))
        if celsius is None:
            celsius = _celsius(log.get("temperature"), kelvin_default=False)
    attrs = doc.get("ata_smart_attributes")
    table = attrs.get("table") if isinstance(attrs, Mapping) else None
    for row in table[:256] if isinstance(table, list) else []:
        if not isinstance(row, Mapping) or row.get("id") not in _ATA_ATTRIBUTES:
            continue
        raw = row.get("raw")
        c = _count(raw.get("value")) if isinstance(raw, Mapping) else None
        if c is not None:
            counters[_ATA_ATTRIBUTES[row["id"]]] = c
    return {"temperature_c": celsius, "critical_warning": warning, "counters": counters}


def parse_output(drive: Drive, stdout: str) -> Reading:
    """The reading a tool's output gives, or ``{"error": …}``."""
    if len(stdout) > MAX_OUTPUT_CHARS:
        return {"error": f"{drive.tool} printed more than {MAX_OUTPUT_CHARS} characters"}
    try:
        doc = json.loads(stdout)
    except (ValueError, RecursionError):
        return {"error": f"{drive.tool} printed no JSON"}
    if not isinstance(doc, dict):
        return {"error": f"{drive.tool} printed JSON that is not an object"}
    reading = parse_nvme_cli(doc) if drive.tool == "nvme" or "smart-log" in drive.argv else parse_smartctl(doc)
    if reading.get("temperature_c") is None and not reading.get("counters"):
        messages = doc["smartctl"].get("messages") if isinstance(doc.get("smartctl"), dict) else None
        said = next((str(m.get("string"))[:200] for m in (messages if isinstance(messages, list) else [])
                     if isinstance(m, dict) and m.get("string")), None)
        return {"error": f"{drive.tool} gave no temperature or counter" + (f" ({clean_line(said)})" if said else "")}
    return reading


def read_drive(drive: Drive, cancel: threading.Event | None = None) -> Reading:
    """One reading (blocking, at most TOOL_TIMEOUT_S; ``cancel`` stops it at once).  A reading that timed out
    has ``hung``: the recorder asks that tool no more."""
    outcome = run_bounded(list(drive.argv), TOOL_TIMEOUT_S, MAX_OUTPUT_CHARS, cancel)
    if outcome.failure == "too large":
        return {"error": f"{drive.tool} printed more than {MAX_OUTPUT_CHARS} characters (stopped)"}
    if not outcome.ok or outcome.returncode is None:
        reading: Reading = {"error": describe_failure(outcome, drive.command, TOOL_TIMEOUT_S, MAX_OUTPUT_CHARS)}
        if outcome.failure == "timeout":
            reading["hung"] = True
        return reading
    stdout = outcome.stdout.decode("utf-8", "replace")
    reading = parse_output(drive, stdout)
    # smartctl's exit code is a bit mask of drive conditions, set also with a good reading: only nvme's counts
    if outcome.returncode != 0 and (drive.tool == "nvme" or "error" in reading):
        said = clean_line(outcome.stderr.decode("utf-8", "replace") or stdout, 200)
        return {"error": f"{drive.command} exited with status {outcome.returncode}" + (f": {said}" if said else "")}
    return reading


# --- the session's readings ---------------------------------------------------------------------------------


def rose(before: Mapping[str, int], after: Mapping[str, int]) -> dict[str, int]:
    """Throttle counters that grew from ``before`` to ``after`` (name → increase)."""
    return {k: after[k] - before[k] for k in THROTTLE_COUNTERS
            if isinstance(before.get(k), int) and isinstance(after.get(k), int) and after[k] > before[k]}


def throttle_reason(grew: Mapping[str, int]) -> str:
    parts = []
    for name, delta in grew.items():
        what, unit = THROTTLE_COUNTERS[name]
        parts.append(f"{what} +{delta}{' ' + unit if unit else ''}")
    return "while the point ran, the drive's " + ", ".join(parts)


@dataclass
class Recorder:
    """The readings of one session: taken off the event loop, appended to ``raw/telemetry.jsonl`` as they
    come, and what each point saw (the readings from its start to its end)."""

    drive: Drive
    path: Path
    interval_s: float = TELEMETRY_INTERVAL_S
    readings: list[Reading] = field(default_factory=list)
    _file: IO[str] | None = None
    _lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    _point_start: int = 0  # position in readings of the running point's start reading
    _index: int | None = None  # the point running (None: the preconditioning pass)
    _active: bool = False  # a point or the preconditioning pass is running: poll() takes readings
    _hung: Reading | None = None  # the reading that timed out: the tool hangs, it is asked no more

    async def take(self, phase: str, index: int | None) -> Reading:
        async with self._lock:
            if self._hung is not None:  # a tool that hung once is not asked again this run (said once, below)
                return self._hung
            cancel = threading.Event()
            try:
                reading = await asyncio.to_thread(read_drive, self.drive, cancel)
            except asyncio.CancelledError:
                cancel.set()  # the reader kills the tool within one slice: the run's end never waits for it
                raise
            hung = bool(reading.pop("hung", False))
            if hung:
                reading["error"] += "; it is not asked again during this run"
            line: Reading = {"schema_version": SCHEMA_VERSION, "at": now_iso(), "t": round(time.time(), 3),
                             "phase": phase, "index": index, **reading}
            self.readings.append(line)
            self._write(line)
            if hung:
                self._hung = line
            return line

    def _write(self, line: Reading) -> None:
        try:
            if self._file is None:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                fd = open_file(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND)
                self._file = os.fdopen(fd, "a", encoding="utf-8", buffering=1)
            self._file.write(json.dumps(line, separators=(",", ":")) + "\n")
        except (OSError, ValueError):
            pass  # the results line is what counts; a full disk is the sweep's to report

    async def start_point(self, index: int | None) -> None:
        """A point (None: the preconditioning pass) is about to start: the reading that opens its window."""
        await self.take("start", index)
        self._point_start = max(0, len(self.readings) - 1)
        self._index, self._active = index, True

    async def end_point(self, index: int | None) -> tuple[dict[str, object], dict[str, str]]:
        """A point ended: the reading that closes its window; (its results line's ``telemetry``, the drive's
        flags of the point: flag name → reason)."""
        self._active = False
        await self.take("end", index)
        window = [r for r in self.readings[self._point_start:] if "error" not in r]
        return point_summary(window)

    async def poll(self) -> None:
        """Every interval while the session lasts: a reading of the point running (cancelled by the sweep)."""
        while True:
            await asyncio.sleep(self.interval_s)
            if self._active:
                await self.take("during", self._index)

    def close(self) -> None:
        if self._file is not None:
            try:
                self._file.close()
            except OSError:
                pass
            self._file = None


def warned(readings: Iterable[Reading]) -> int:
    """The critical-warning bits set in any of ``readings``."""
    bits = 0
    for r in readings:
        bits |= _warning(r.get("critical_warning")) or 0
    return bits


def over_temperature_reason(hottest: float | None) -> str:
    at = f" (at up to {hottest:.0f} °C)" if hottest is not None else ""
    return (f"while the point ran, the drive set its critical warning's temperature bit (0x02): its temperature "
            f"was past a threshold{at}")


def point_summary(window: list[Reading]) -> tuple[dict[str, object], dict[str, str]]:
    """A point's ``telemetry`` (temperature range, throttle counters that rose, critical-warning bits set) and
    the flags the drive gives it (``throttled``, ``over-temperature``: flag name → reason)."""
    out: dict[str, object] = {"readings": len(window)}
    temps = [t for r in window if isinstance(t := r.get("temperature_c"), (int, float))]
    if temps:
        out["temperature_c"] = {"min": min(temps), "max": max(temps)}
    if len(window) < 2:
        return out, {}
    flags: dict[str, str] = {}
    grew = rose(window[0].get("counters") or {}, window[-1].get("counters") or {})
    if grew:
        out["rose"] = grew
        flags["throttled"] = throttle_reason(grew)
    bits = warned(window[1:])  # what the opening reading shows was there before this point's I/O
    if bits:
        out["warnings"] = warning_names(bits)
    if bits & TEMPERATURE_BIT:
        flags["over-temperature"] = over_temperature_reason(max(temps) if temps else None)
    return out, flags


def run_entry(drive: Drive | None, why_not: str, interval_s: float) -> dict[str, object]:
    """run.json's ``telemetry``."""
    if drive is None:
        return {"available": False, "reason": why_not}
    return {"available": True, "device": drive.device, "bus": drive.bus, "tool": drive.tool, "command": drive.command,
            "interval_s": interval_s, "file": f"raw/{FILE_NAME}"}


# --- reading it back (the report) -------------------------------------------------------------------------


def _clean_reading(obj: object) -> Reading | None:
    """A telemetry line as the report may use it (hostile file: only well-typed fields survive)."""
    if not isinstance(obj, dict):
        return None
    out: Reading = {}
    t = obj.get("t")
    if isinstance(t, (int, float)) and not isinstance(t, bool) and math.isfinite(t) and 0 <= t < 1e11:
        out["t"] = float(t)
    if isinstance(obj.get("phase"), str):
        out["phase"] = obj["phase"][:16]
    idx = obj.get("index")
    out["index"] = idx if isinstance(idx, int) and not isinstance(idx, bool) and 0 <= idx < 1 << 31 else None
    if isinstance(obj.get("error"), str):
        out["error"] = " ".join(obj["error"].split())[:300]
        return out
    out["temperature_c"] = _celsius(obj.get("temperature_c"), kelvin_default=False)
    out["critical_warning"] = _warning(obj.get("critical_warning"))
    raw = obj.get("counters")
    out["counters"] = {k: c for k in COUNTERS if isinstance(raw, dict) and (c := _count(raw.get(k))) is not None}
    return out


def load_readings(path: Path, beneath: Path | None = None) -> tuple[list[Reading], int]:
    """The usable readings of a telemetry file, and how many lines were not (bounded: MAX_READINGS_BYTES,
    MAX_READINGS_READ lines).  ``beneath``: ``path`` is relative to that directory (a results directory), and no
    link below it is followed."""
    try:
        data = (read_beneath(beneath, str(path), MAX_READINGS_BYTES) if beneath is not None
                else read_regular(path, MAX_READINGS_BYTES))[:MAX_READINGS_BYTES]
    except OSError:
        return [], 0
    good: list[Reading] = []
    bad = 0
    for line in data.decode("utf-8", "replace").splitlines()[:MAX_READINGS_READ]:
        if len(line) > MAX_LINE_CHARS:
            bad += 1
            continue
        try:
            r = _clean_reading(json.loads(line))
        except (ValueError, RecursionError):
            r = None
        if r is None:
            bad += 1
        else:
            good.append(r)
    return good, bad


@dataclass(frozen=True)
class Summary:
    readings: int
    failed: int
    span_s: float | None
    temperature: tuple[float, float, float, float] | None  # min, max, first, last
    deltas: dict[str, int]  # counter → last - first (every counter both ends have)
    first_error: str | None
    warnings: int = 0  # the critical-warning bits set in any reading
    warned: int = 0  # the readings with a critical-warning bit set


def summarise(readings: Iterable[Reading]) -> Summary:
    rs = list(readings)
    good = [r for r in rs if "error" not in r]
    errors = [r["error"] for r in rs if "error" in r]
    temps = [t for r in good if isinstance(t := r.get("temperature_c"), float)]
    times = [t for r in rs if isinstance(t := r.get("t"), float)]
    deltas: dict[str, int] = {}
    if len(good) >= 2:
        first, last = good[0].get("counters") or {}, good[-1].get("counters") or {}
        deltas = {k: last[k] - first[k] for k in COUNTERS if k in first and k in last}
    return Summary(len(good), len(errors), (max(times) - min(times)) if len(times) >= 2 else None,
                   (min(temps), max(temps), temps[0], temps[-1]) if temps else None, deltas,
                   errors[0] if errors else None, warned(good), sum(1 for r in good if warned([r])))
