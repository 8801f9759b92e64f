"""The answer first: the few figures a reader came for, on top of the report, each with how sure it is.

A run of labelled read/write pairs (``quick``, ``nvme``: CrystalDiskMark's tests) gets their box: one row per
test, read and write side by side, MB/s with the ± of the mean over the replicates (between runs) or, measured
once, of the interval within the run.  A sweep gets its answers in a sentence each: the peak, the knee of each
curve, the operating point under the p99 bound, the device check; a memory run its idle latency and peak
bandwidth (contended rows left out).  Then every flag raised, in words, with the points it is on: a flagged
figure is marked where it stands (⚑ and the flag's name), never printed bare.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Sequence

from app.core.sanitize import md_text
from app.core.textable import fit_line, markdown_table, table_lines
from app.core.units import format_count, format_size
from app.model.points import Kind
from app.report.compute import analysis, contention, intervals, support
from app.report.data.model import MemoryRow, RunData, StorageRow
from app.stats.summary import point_label
from app.stats.validity import FLAGS, LEGEND, names

MB = 1e6
MARK = "⚑"  # beside a figure whose point carries a flag; the flag's name follows it
NAMED = 3  # points named per flag before "and N more"
SEE_BELOW = "the sections below give each in full"
DIRECTIONS = {"read": "read", "write": "write", "randread": "read", "randwrite": "write"}


def _load(p: StorageRow) -> str:
    rate = p.point.get("rate")  # an open-loop point: its load is the offered rate, iodepth a cap
    offered = f" λ {rate}" if isinstance(rate, str) else ""
    return f"QD{p.iodepth}" + (f"×{p.numjobs}" if p.numjobs > 1 else "") + offered


def _name(p: StorageRow) -> str:
    """The point in the report's words, as Markdown text: its pattern comes from the results line (foreign)."""
    return md_text(f"{p.mix} {format_size(p.bs)} {_load(p)}")


def _flag_names(rows: Sequence[StorageRow]) -> list[str]:
    """The flags any of ``rows`` carries, each once (a newer version's too: their names are foreign text)."""
    return list(dict.fromkeys(n for r in rows for n in names(r.flags) + names(r.other_flags)))


def _flag_mark(rows: Sequence[StorageRow]) -> str:
    """`` ⚑ name, name`` for the flags any of ``rows`` carries ('' for none), as Markdown text."""
    found = _flag_names(rows)
    return f" {MARK} {md_text(', '.join(found))}" if found else ""


def _mean(rows: Sequence[StorageRow], run_dir: Path) -> tuple[StorageRow, str]:
    """One row for a point's replicates and what its ± is: over n runs, or within the one run."""
    row = analysis.mean_row(rows) if len(rows) > 1 else rows[0]
    intervals.storage_intervals(run_dir, row)
    return row, (f"{len(rows)} runs" if len(rows) > 1 else intervals.WITHIN_RUN)


def _mbps(row: StorageRow, run_dir: Path) -> str:
    iv = intervals.storage_intervals(run_dir, row).get("bw_bytes")
    return intervals.pm_fixed(row.bw, iv, 1, scale=MB)


def _iops(row: StorageRow, run_dir: Path) -> str:
    return intervals.pm_count(row.iops, intervals.storage_intervals(run_dir, row).get("iops"))


def box(points: Sequence[StorageRow], run_dir: Path) -> list[str] | None:
    """CrystalDiskMark's box: each labelled test a row, its read and write MB/s side by side (random tests with
    their IOPS); None unless every point is a labelled read or write of a test that has both."""
    tests: dict[str, dict[str, list[StorageRow]]] = {}
    for p in points:
        side = DIRECTIONS.get(p.rw)
        if not p.group or side is None:
            return None
        tests.setdefault(p.group, {}).setdefault(side, []).append(p)
    if not tests or any(set(t) != {"read", "write"} for t in tests.values()):
        return None

    def order(item: tuple[str, dict[str, list[StorageRow]]]) -> tuple[bool, int, int]:
        p = item[1]["read"][0]
        return (p.rw.startswith("rand"), -p.bs, -p.inflight)

    rows, bases = [], set()
    for label, sides in sorted(tests.items(), key=order):
        cells = []
        for side in ("read", "write"):
            reps = analysis.replicate_sets(sides[side])[0]
            row, basis = _mean(reps, run_dir)
            bases.add(basis)
            text = _mbps(row, run_dir)
            if row.rw.startswith("rand"):
                text += f" ({_iops(row, run_dir)} IOPS)"
            flagged = _flag_names(sides[side])
            cells.append(text + (f" {MARK} {', '.join(flagged)}" if flagged else ""))  # the table escapes cells
        rows.append([md_text(label, cell=True), *cells])
    out = [markdown_table(["Test", "Read MB/s", "Write MB/s"], rows, right=(1, 2)), ""]
    over = sorted(bases)
    what = " or ".join("the mean over " + b if b.endswith("runs") else "the figure's mean " + b for b in over)
    out += [f"MB/s = 10^6 B/s; ± is the 95 % interval of {what} (docs/uncertainty.md).", ""]
    return out


def _basis(basis: str) -> str:
    return f"± over {basis}" if basis.endswith("runs") else f"± {basis}"


def _peak(points: Sequence[StorageRow], run_dir: Path) -> list[str]:
    """The most IOPS, and the most MB/s where another point has it (several workloads)."""
    means = [(_mean(s, run_dir), s) for s in analysis.replicate_sets(points)]
    out: list[str] = []
    shown: list[StorageRow] = []
    for what, key in (("Most IOPS", lambda m: m[0][0].iops), ("Most MB/s", lambda m: m[0][0].bw)):
        (row, basis), reps = max(means, key=key)
        if shown and row.point == shown[0].point:
            break
        shown.append(row)
        heaviest = max(p.inflight for p in points if p.mix == row.mix and p.bs == row.bs)
        more = (" — at the heaviest load measured, so a deeper queue may give more"
                if row.inflight == heaviest and len({p.inflight for p in points}) > 1 else "")
        sure = _basis(basis) if intervals.storage_intervals(run_dir, row) else "no 95 % interval: see the results table"
        out.append(f"- **{what}**: {_iops(row, run_dir)} IOPS, {_mbps(row, run_dir)} MB/s at {_name(row)} "
                   f"({sure}){_flag_mark(reps)}{more}.")
    return out


def _knees(curves: Sequence[analysis.Curve], run_dir: Path) -> list[str]:
    out = []
    found = [c for c in curves if c.knee_point is not None and len(c.points) >= 3]
    for c in found[:NAMED]:
        k = c.knee_point
        assert k is not None
        s = support.knee_support(run_dir, c)
        out.append(f"- **Knee** of {md_text(c.label)}: {_load(k)} ({format_count(k.iops)} IOPS, "
                   f"{k.lat_mean / 1e3:.2f} µs mean latency), {s.verdict} — see Analysis.")
    if len(found) > NAMED:
        out.append(f"- … and {len(found) - NAMED} more curves with a knee (Analysis, Saturation knee).")
    return out


def _operating(points: Sequence[StorageRow], bound_ns: float, run_dir: Path) -> list[str]:
    chosen = [b for b in analysis.best_under_bound(points, bound_ns) if b.best is not None and b.best_load is not None]
    bound = f"p99 ≤ {bound_ns / 1e3:g} µs"
    if not chosen:
        return [f"- **Operating point** ({bound}): none — no load met the bound"
                + (" in every replicate" if any(p.replicate for p in points) else "") + "."]
    b = max(chosen, key=lambda c: c.best.iops if c.best is not None else 0.0)
    assert b.best is not None and b.best_load is not None
    noise = support.bound_noise(run_dir, b.best, bound_ns, b.best_load.rows)
    note = ", within noise of the bound" if noise.within_noise else ""
    return [f"- **Operating point** ({bound}): {_name(b.best)}, {format_count(b.best.iops)} IOPS at p99 "
            f"{b.best_load.worst / 1e3:.2f} µs{note}" + (f"{_flag_mark(b.best_load.rows)}" if b.best_load else "")
            + "."]


def _passed(p: StorageRow, check: str) -> bool:
    entry = (p.line.checks or {}).get(check)
    return isinstance(entry, dict) and entry.get("result") == "passed"


def _device(points: Sequence[StorageRow]) -> list[str]:
    bad = [p for p in points if {"not-on-device", "amplified"} & set(names(p.flags))]
    checked = [p for p in points if _passed(p, "not-on-device")]
    if bad:
        return [f"- **Device check**: {len(bad)} of {len(points)} points moved a different number of bytes at the "
                "device than fio reports (flags below): their figures are not the device's."]
    if checked and len(checked) == len(points):
        return ["- **Device check**: on every point the device's counters moved the bytes fio reports."]
    return []


def _memory(points: Sequence[MemoryRow]) -> list[str]:
    """Idle latency and peak bandwidth, per source file when the rows were imported from several (each may be
    another machine: no answer mixes two)."""
    sources = list(dict.fromkeys(p.source for p in points))
    if len(sources) > 1:
        return [x for src in sources
                for x in _memory_of([p for p in points if p.source == src], f", from {md_text(src or '?', 120)}")]
    return _memory_of(points, "")


def _memory_of(points: Sequence[MemoryRow], source: str) -> list[str]:
    out = []
    clean = [p for p in points if not contention.contended(p)]
    for p in [p for p in clean if p.mode == "idle"][:4]:
        if p.latency is None:
            continue
        iv = intervals.memory_intervals(p).get("latency_ns")
        where = ", ".join(x for x in (f"stride {p.stride} B" if p.stride else "",
                                       f"buffer {format_size(p.buffer)}" if p.buffer else "") if x)
        value = intervals.pm_fixed(p.latency, iv,
                                   2 if iv is not None else intervals.source_decimals(p, "latency_ns", 2))
        out.append(f"- **Idle latency**: {value} ns" + (f" ({where}{source})" if where or source else "") + ".")
    loaded = [p for p in points if p.bandwidth is not None]
    best = max((p for p in loaded if not contention.contended(p)), key=lambda p: p.bandwidth or 0.0, default=None)
    busy = len(loaded) - len([p for p in loaded if not contention.contended(p)])
    left = f" ({busy} contended row{'s' if busy != 1 else ''} left out)" if busy else ""
    if best is not None and best.bandwidth is not None:
        iv = intervals.memory_intervals(best).get("bandwidth_mbps")
        label = md_text(point_label(Kind.MEMORY, best.point))
        out.append(f"- **Peak bandwidth**: {intervals.pm_fixed(best.bandwidth, iv, 1)} MB/s ({label}{source}){left}.")
    elif busy:
        out.append(f"- **Peak bandwidth**: not stated{source} — every one of the {busy} rows was contended (a "
                   "thread got less than 90 % of a CPU).")
    return out


def _flags(data: RunData, also: Sequence[StorageRow] = ()) -> list[str]:
    out = []
    for name in FLAGS:
        hit = [p for p in [*data.storage, *also] if name in names(p.flags)]
        if hit:
            shown = "; ".join(_name(p) + (f" replicate {p.replicate}" if p.replicate is not None else "")
                              for p in hit[:NAMED])
            more = f" and {len(hit) - NAMED} more" if len(hit) > NAMED else ""
            out.append(f"- {MARK} `{name}` on {len(hit)} point{'s' if len(hit) != 1 else ''} ({shown}{more}): "
                       f"{LEGEND[name]}.")
    if data.left_out:
        n = data.left_out
        out.append(f"- {MARK} {n} line{'s' if n != 1 else ''} of results.jsonl {'were' if n != 1 else 'was'} left out "
                   "(unreadable, or measuring no point of the plan): no answer above includes "
                   f"{'them' if n != 1 else 'it'}; the Run section's warnings say why.")
    busy = [p for p in data.memory if contention.contended(p)]
    if busy:
        out.append(f"- {MARK} `contended` on {len(busy)} memory row{'s' if len(busy) != 1 else ''}: "
                   f"{contention.rule_text()}")
    return out


def section(data: RunData, curves: Sequence[analysis.Curve], bound_ns: float,
            also: Sequence[StorageRow] = ()) -> list[str]:
    """## Summary: the answers, then the flags in words (of ``also`` too: points with a section of their own, such as
    the open-loop ones); [] for a run with nothing measured."""
    run_dir = data.path
    body: list[str] = []
    if data.storage:
        got = box(data.storage, run_dir)
        if got is not None:
            body += got
        else:
            body += [*_peak(data.storage, run_dir), *_knees(curves, run_dir),
                     *_operating(data.storage, bound_ns, run_dir), *_device(data.storage), ""]
    if data.memory:
        mem = _memory(data.memory)
        if mem and any(p.engine == "mlc" for p in data.memory):
            mem.append(f"- Contention of Intel MLC's rows {contention.UNCHECKED}.")
        body += [*mem, ""] if mem else []
    if not body:
        return []
    flags = _flags(data, also)
    tail = ([f"**Flags** ({SEE_BELOW}):", "", *flags, ""] if flags
            else ["No point carries a flag.", ""])
    return ["## Summary", "", *body, *tail]


_ESCAPED = re.compile(r"\\([\\`*_{}\[\]()#+\-.!|<>~:@/])")


def _unmark(text: str) -> str:
    """A Markdown line of the section as terminal text: no bold, no backslash escapes (the text was cleaned of
    control characters when it was escaped, so unescaping gives no escape sequence back)."""
    text = text.replace("**", "").replace(SEE_BELOW, "the report gives each in full")
    return _ESCAPED.sub(r"\1", re.sub(r"(?<!\\)`", "", text)).replace("&amp;", "&")


def plain_lines(data: RunData, curves: Sequence[analysis.Curve], bound_ns: float, width: int | None,
                also: Sequence[StorageRow] = ()) -> list[str]:
    """The summary as the CLI prints it after a run: the same answers and flags, the box as a text table fitted
    to ``width`` (None: as wide as it takes), every line within ``width``."""
    out: list[str] = []
    table: list[list[str]] = []
    for line in "\n".join(section(data, curves, bound_ns, also)[2:]).splitlines():
        if line.startswith("|"):
            cells = [_unmark(c.strip()) for c in re.split(r"(?<!\\)\|", line.strip())[1:-1]]
            if not all(set(c) <= set("-: ") for c in cells):
                table.append(cells)
            continue
        if table:
            out += [t.text for t in table_lines(table[0], table[1:], right=range(1, len(table[0])), width=width)]
            table = []
        out.append(fit_line(_unmark(line), width))
    return ["Summary", *out]
