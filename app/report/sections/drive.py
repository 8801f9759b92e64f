"""The report's "Drive telemetry" section: what the drive's health log said over the run (app.host.telemetry).

From run.json's ``telemetry`` (which drive, which tool, or why there is none) and the readings in
``raw/telemetry.jsonl`` (read back bounded and validated: the file is untrusted).  A run without a
``telemetry`` entry (memory, imported, or written before the tool read drives) gets no section.  The points
the drive flagged are named: ``throttled`` (a throttle counter rose), ``over-temperature`` (the critical
warning's temperature bit was set), and those whose results line names other critical-warning bits.
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable, Sequence

from app.core.sanitize import clean_line, md_text
from app.core.textable import markdown_table
from app.core.units import format_duration
from app.host.telemetry import (
    COUNTERS,
    DATA_UNIT_BYTES,
    TEMPERATURE_BIT,
    THROTTLE_COUNTERS,
    WARNING_BITS,
    Summary,
    load_readings,
    summarise,
    warning_names,
)
from app.report.data.model import RunData, StorageRow


def _delta_text(name: str, delta: int) -> str:
    what, unit = COUNTERS[name]
    if unit == "units":
        n = delta * DATA_UNIT_BYTES
        amount = f"{n / 1e9:,.2f} GB" if abs(n) >= 1e9 else f"{n / 1e6:,.1f} MB"
        return f"+{amount} ({delta:,} data units of 512,000 B)"
    sign = "+" if delta >= 0 else "−"
    return f"{sign}{abs(delta):,}" + (f" {unit}" if unit else "")


def _flagged(points: Sequence[StorageRow], name: str) -> list[StorageRow]:
    return [p for p in points if any(f["flag"] == name for f in p.flags)]


def _named(points: Sequence[StorageRow], describe: Callable[[StorageRow], str]) -> str:
    return ", ".join(md_text(describe(p)) for p in points[:10]) + (" …" if len(points) > 10 else "")


_OTHER_BITS = {name for bit, (name, _) in WARNING_BITS.items() if bit != TEMPERATURE_BIT}


def _other_warnings(point: StorageRow) -> list[str]:
    """The critical-warning bits but the temperature one that a point's results line names (foreign text:
    only the known names are kept)."""
    seen = (point.line.telemetry or {}).get("warnings")
    return [w for w in seen[:8] if w in _OTHER_BITS] if isinstance(seen, list) else []


def _warning_row(s: Summary) -> list[str]:
    bits = ", ".join(f"{warning_names(1 << i)[0]} (0x{1 << i:02x})" for i in range(8) if s.warnings >> i & 1)
    return ["Critical warning", f"{bits} set in {s.warned} of {s.readings} reading(s)"]


def _warning_notes(data: RunData, s: Summary, describe: Callable[[StorageRow], str]) -> list[str]:
    notes = []
    hot = _flagged(data.storage, "over-temperature")
    if hot:
        notes.append(f"The drive reported its temperature past a threshold (critical warning, temperature bit 0x02) "
                     f"while {len(hot)} point(s) ran, flagged **over-temperature**: {_named(hot, describe)}. "
                     "It may have throttled them.")
    elif s.warnings & TEMPERATURE_BIT:
        notes.append("The drive's critical warning had its temperature bit (0x02) set during the run, but not while "
                     "a point was being measured.")
    failing = [p for p in data.storage if _other_warnings(p)]
    if failing:
        bits = ", ".join(dict.fromkeys(w for p in failing for w in _other_warnings(p)))
        notes.append(f"The drive's critical warning named {md_text(bits)} while {len(failing)} point(s) ran: "
                     f"{_named(failing, describe)}. The drive reports itself failing; its figures may not hold.")
    return notes


def section(data: RunData, describe: Callable[[StorageRow], str]) -> list[str]:
    """``describe(point)``: how the report names a point (its workload)."""
    entry = data.meta.telemetry
    if entry is None:
        return []
    out = ["## Drive telemetry", ""]
    if entry.get("available") is not True:
        reason = md_text(entry.get("reason") or "no drive health log was found", 300)
        return out + [f"None recorded: {reason}.", ""]
    readings, bad = load_readings(Path("raw") / "telemetry.jsonl", beneath=data.path)
    s = summarise(readings)
    device = md_text(entry.get("device") or "?", 100)
    command = clean_line(entry.get("command") or entry.get("tool") or "?", 200).replace("`", "'")  # in a code span
    interval = entry.get("interval_s")
    every = f" and every {interval:g} s while a point ran" if isinstance(interval, (int, float)) else ""
    span = f" over {format_duration(s.span_s)}" if s.span_s else ""
    out.append(f"The drive's health log (`{command}`), read {s.readings} time(s){span}: before the run, at every "
               f"point's start and end{every}, and after the run.")
    out.append("")
    if s.readings == 0:
        why = f" ({md_text(s.first_error)})" if s.first_error else ""
        return out + [f"No reading succeeded{why}.", ""]
    rows = [["Drive", device]]
    if s.temperature is not None:
        lo, hi, first, last = s.temperature
        rows.append(["Temperature", f"{lo:.0f}–{hi:.0f} °C (first {first:.0f} °C, last {last:.0f} °C)"])
    else:
        rows.append(["Temperature", "not reported"])
    for name in COUNTERS:
        if name in s.deltas:
            what = COUNTERS[name][0]
            rows.append([what[0].upper() + what[1:], _delta_text(name, s.deltas[name])])
    if s.warnings:
        rows.append(_warning_row(s))
    out.append(markdown_table(["Over the run", "Change from first to last reading"], rows, right=()))
    out.append("")
    notes = []
    if s.failed:
        notes.append(f"{s.failed} reading(s) failed (first: {md_text(s.first_error)}).")
    if bad:
        notes.append(f"{bad} line(s) of raw/telemetry.jsonl could not be read and were left out.")
    throttled = _flagged(data.storage, "throttled")
    rose = [n for n in THROTTLE_COUNTERS if s.deltas.get(n, 0) > 0]
    if throttled:
        notes.append(f"A throttle counter rose while {len(throttled)} point(s) ran, flagged **throttled**: "
                     f"{_named(throttled, describe)}. "
                     "Their figures may be the drive's thermally limited speed, not its sustained one.")
    elif rose:
        notes.append("A throttle counter rose during the run, but not while a point was being measured.")
    elif any(n in s.deltas for n in THROTTLE_COUNTERS):
        notes.append("No throttle counter rose" + ("." if s.warnings & TEMPERATURE_BIT else
                                                    ": no point ran while the drive managed its temperature."))
    notes += _warning_notes(data, s, describe)
    for n in notes:
        out.append(n)
        out.append("")
    return out
