"""The report's "Host settings" section: the host settings that bend a result, as the audit read them before the
run's first point (run.json ``audit``, app.host.audit) — its warnings first, each with the points it bends, then a
table of every setting read: its value (or "not available here" and why), what a benchmark usually wants, and
why it matters.

run.json is untrusted: the audit is read back by :func:`app.host.audit.from_json` (bounded text, unknown keys and
statuses dropped) and every text goes into the report through :func:`app.core.sanitize.md_text`.  A run without an
audit (a fleet run, an import, or a run recorded before the tool audited the host) gets one sentence saying so.
"""

from __future__ import annotations

from typing import Sequence

from app.core.sanitize import Markup, md_text
from app.core.textable import markdown_table
from app.core.units import count_text
from app.host import audit
from app.host.audit import Audit, Item
from app.host.topology import cpu_list_text
from app.report.data.model import MemoryRow, RunData, StorageRow
from app.stats.validity import AUDIT_FLAGS, FLEET_NOT_AUDITED, LOW_LOAD, NOT_AUDITED

# the memory modes whose figure is a latency: a CPU saving power between accesses bends them (memory points
# carry no flags, so the section names them)
LATENCY_MODES = frozenset({"idle", "loaded", "working_set", "latency_matrix", "c2c"})
CPU_POWER_WARNINGS = ("governor", "cstates")  # of power-saving's warnings, those of the CPUs (APST is the drive's)
STATUS_WORDS = {"ok": "ok", "warn": "warning", "info": "reported", "unavailable": "not available here"}
# the point flag each audit warning raises (app.stats.validity), and which points it concerns
FLAG_OF = {w: name for name, warnings in AUDIT_FLAGS.items() for w in warnings}
SCOPE = {"link-degraded": "every storage point",
         "numa-remote": "storage points whose CPUs are all off the device's node",
         "power-saving": f"storage points with at most {LOW_LOAD} I/Os in flight",
         "write-throttled": "storage points that write with direct=0"}


def _value(i: Item) -> str:
    return md_text(i.value, 80) if i.value else "not available here"


def _row(i: Item) -> list[str]:
    """A setting's row: its parts escaped one by one (Markup, as the table puts it)."""
    status = STATUS_WORDS.get(i.status) or md_text(i.status, 20)
    note = md_text(i.note, 200) if i.note else ""
    if i.status == "warn" and i.warning:
        status += f" ({md_text(i.warning, 40)})"
    return [md_text(i.label, 80), Markup(_value(i) + (f" ({note})" if note and i.status != "ok" else "")),
            Markup(status), md_text(i.want, 160), md_text(i.why, 300)]


def _storage_affected(name: str, points: Sequence[StorageRow]) -> str:
    flagged = sum(1 for p in points if any(f["flag"] == name for f in p.flags))
    return (f"`{name}` on {flagged} of {count_text(len(points), 'storage point')} ({SCOPE[name]})" if points
            else f"`{name}` would mark {SCOPE[name]}; the run has none")


def _memory_affected(warning: str | None, memory: Sequence[MemoryRow]) -> str | None:
    latency = sum(1 for p in memory if p.mode in LATENCY_MODES)
    if warning not in CPU_POWER_WARNINGS or not latency:
        return None
    return (f"the {count_text(latency, 'memory latency point')} (idle, loaded, working-set, matrix and c2c latencies; "
            "memory results carry no flags)")


def affected(i: Item, data: RunData) -> str:
    """The points a warning bends, as the report names them."""
    name = FLAG_OF.get(i.warning or "")
    parts = [_storage_affected(name, data.storage)] if name is not None and (data.storage or not data.memory) else []
    mem = _memory_affected(i.warning, data.memory)
    parts += [mem] if mem else []
    return "; ".join(parts) or "every figure of the run (no point flag: it is a run-level warning)"


def _warning_line(i: Item, data: RunData) -> str:
    note = f" ({md_text(i.note, 200)})" if i.note else ""
    what = audit.WARNINGS.get(i.warning or "", "")
    why = md_text(what or i.why, 300)
    return (f"- **{md_text(i.warning or i.key, 40)}** — {md_text(i.label, 80)}: {_value(i)}{note}, a benchmark wants "
            f"{md_text(i.want, 160)}: {why}. Affects: {affected(i, data)}.")


def _no_audit(data: RunData) -> str:
    meta = data.meta
    if meta.audit is not None:
        return "run.json's `audit` is not an audit the tool can read: no host settings are shown."
    if meta.is_fleet:
        return f"No host settings: {FLEET_NOT_AUDITED} (`profiler-tui audit` on each host lists them)."
    if data.imported:
        return "No host settings: an imported run records none."
    return f"No host settings: {NOT_AUDITED}."


def _intro(a: Audit, data: RunData) -> str:
    read_at = data.meta.audit.get("read_at") if data.meta.audit is not None else None
    where = (f"target {md_text(a.target, 200)}" + (f" (device {md_text(a.device, 40)})" if a.device else "")
             if a.target else "the system (no target)")
    when = f" at {md_text(read_at, 40)}" if isinstance(read_at, str) and read_at.strip() else ""
    cpus = cpu_list_text(a.cpus) or "not recorded"
    unread = sum(1 for i in a.items if i.status == "unavailable")
    return (f"Read before the run's first point{when} (`profiler-tui audit`, run.json `audit`) for {where} and "
            f"CPUs {cpus}: {count_text(len(a.items), 'setting')} checked ({unread} not available here), "
            f"{count_text(len(a.warnings), 'warning')}. "
            "A setting that bends a result is a warning, and a flag on the points it bends.")


def section(data: RunData) -> list[str]:
    """``## Host settings``: the audit's warnings with the points they bend, then every setting read."""
    out = ["## Host settings", ""]
    a = audit.from_json(data.meta.audit) if data.meta.audit is not None else None
    if a is None:
        return out + [_no_audit(data), ""]
    out += [_intro(a, data), ""]
    if a.container:
        out += [f"> In a container: {md_text(a.container, 300)}", ""]
    if a.warnings:
        out += ["Warnings:", ""] + [_warning_line(i, data) for i in a.warnings] + [""]
    if a.items:
        out.append(markdown_table(["Setting", "Value", "Status", "A benchmark wants", "Why"],
                                  [_row(i) for i in a.items], right=()))
        out.append("")
    return out
