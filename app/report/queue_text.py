"""The report's queueing view in markdown: each queue-depth curve against the asymptotic bounds of a closed
system (the numbers from :mod:`app.report.queueing`), its table and its figure."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any, Sequence

from app.report import analysis as an
from app.report import queueing as qm
from app.report.noise import point_spread
from app.sanitize import clean_line, md_text
from app.textable import markdown_figure, markdown_table
from app.units import us

NA = "n/a"
MAX_DETAILED = 6  # curves with their own paragraph and per-load table (those the figure draws); more: a summary
GAP = 0.05  # a distance from a bound below this (5 %) is not named: Little's L/N alone moves a ratio ~1 %
SECTION = "queueing"  # the section of the queueing figure: drawn beside this text, not among the storage figures

INTRO = ("fio at a fixed queue depth is a closed loop: it keeps N = QD × jobs I/Os outstanding and submits the "
         "next the moment one completes, so the load is set by N, not by an arrival rate. Open-queue formulas "
         "assume arrivals that do not depend on the queue and do not describe it. A closed system obeys two "
         "asymptotic bounds whatever its distributions (operational analysis): throughput X(N) ≤ min(N/S, X_max) "
         "and mean latency R(N) ≥ max(S, N/X_max), with S the time of one I/O alone (mean latency at QD1) and "
         "X_max the capacity, here the highest IOPS measured on the curve — a lower bound of the true capacity. "
         "The bounds cross at N* = S · X_max: below it the best a device can do is serve each of the N I/Os as "
         "fast as one alone, above it run at X_max. N* is that crossing, not the depth where throughput stops "
         "growing. The gap between the measured X and its bound (X / bound) and between R and its bound "
         "(R / bound) is internal parallelism the load did not turn into throughput: below N*, X · S is the "
         "number of I/Os the device effectively served at once, against N.")

UTIL_NOTE = ("Disk util is fio's `disk_util`: the share of the run the device had at least one I/O in flight. A "
             "device that serves many I/Os in parallel reads near 100 % long before it reaches X_max, so it is not "
             "X / X_max. slat and clat are fio's submission and completion latency (means); R is their sum.")


def section(curves: Sequence[an.Curve], figures: Sequence[Any] = (), run_dir: Path | None = None) -> list[str]:
    out = ["### Queueing view (closed system)", ""]
    qcs = qm.queue_curves(curves)
    if not qcs:
        out += ["No workload was measured at more than one queue depth, so the data cannot show how latency and "
                "throughput trade against load; a queue-depth sweep (`qd-scaling`) does.", ""]
        return out
    out += [INTRO, ""]
    for f in figures:
        if getattr(f, "section", None) == SECTION:
            out += markdown_figure(f.title, f.caption, f.file)
    if len(qcs) > MAX_DETAILED:
        out += _summary(qcs, run_dir)
    for q in qcs[:MAX_DETAILED]:
        out += curve_text(q, run_dir)
    if any(p.disks is not None or p.slat is not None or p.clat is not None for q in qcs for p in q.points):
        out += [UTIL_NOTE, ""]
    else:
        out += ["Disk util, slat and clat: not recorded (n/a) — results lines written before they were kept.", ""]
    return out


def _farthest(q: qm.QueueCurve) -> qm.QueuePoint | None:
    """The load farthest below its throughput bound, when 5 % or more below it; the lightest load defines S:
    its own ratio is 1 up to Little's L/N, no distance to report."""
    worst = min(q.points[1:], key=lambda p: p.x_ratio)
    return worst if worst.x_ratio < 1 - GAP else None


def _summary(qcs: Sequence[qm.QueueCurve], run_dir: Path | None) -> list[str]:
    """One row per curve: its S, X_max, N* and distance from the bounds (the per-load tables of the first
    MAX_DETAILED follow)."""
    rows = []
    for q in qcs:
        first, last, worst = q.points[0], q.points[-1], _farthest(q)
        grew = q.growth_past_n_star()
        rows.append([md_text(q.curve.label), f"{_load(q, first.row)}–{_load(q, last.row)}",
                     ("" if q.s_exact else "≈ ") + us(q.s), f"{_iops(q.x_max)} ({_load(q, q.top)})",
                     f"{q.n_star:.2f}", "—" if grew is None else f"{grew[2] * 100:+.1f} % ({_load(q, grew[0].row)}→"
                     f"{_load(q, grew[1].row)}{_growth_support(run_dir, grew[0], grew[1], short=True)})",
                     "—" if worst is None else f"{_load(q, worst.row)}: {_ratio(worst.x_ratio)}, "
                     f"{_ratio(worst.r_ratio)}",
                     f"{last.r / q.s:.2f}"])
    return [f"{len(qcs)} curves: one row each (S ≈: no QD1 point, R at the lightest load stands in; growth past N*: "
            "IOPS from the first load above N* to X_max's load, against their per-second spread; farthest: the load "
            "farthest below its throughput "
            f"bound, X / bound and R / bound). The first {MAX_DETAILED}, drawn in the figure, have their per-load "
            "table below; every point's figures are in the storage results table and results.csv.", "",
            markdown_table(["Curve", "Loads", "S (µs)", "X_max (IOPS)", "N*", "Growth past N*", "Farthest",
                            "R at heaviest / S"], rows), ""]


def _load(q: qm.QueueCurve, p: Any) -> str:
    return q.curve.load_label(p)


def _iops(x: float) -> str:
    return f"{x:,.0f}"


def _ratio(x: float) -> str:
    return NA if not math.isfinite(x) else f"{x:.2f}"


def _disks(disks: tuple[qm.Disk, ...] | None) -> str:
    if disks is None:
        return NA
    if len(disks) == 1:
        return f"{disks[0].util:.1f}"
    shown = ", ".join(f"{clean_line(d.name, 40)} {d.util:.1f}" for d in disks[:2])  # a cell: the table escapes it
    return shown + (", …" if len(disks) > 2 else "")


def _spreads(run_dir: Path | None, a: qm.QueuePoint, b: qm.QueuePoint) -> tuple[Any, Any] | None:
    """The per-second IOPS spread of both loads, None unless both kept enough whole seconds."""
    sa, sb = ((point_spread(run_dir, p.row, "iops") if run_dir is not None else None) for p in (a, b))
    return None if sa is None or sb is None else (sa, sb)


def _growth_support(run_dir: Path | None, a: qm.QueuePoint, b: qm.QueuePoint, short: bool = False) -> str:
    """Whether the IOPS growth from ``a`` to ``b`` stands out of the two points' per-second spread."""
    both = _spreads(run_dir, a, b)
    if both is None:
        return ", spread unknown" if short else " (no per-second samples of both loads: their spread is unknown)"
    sa, sb = both
    within = b.x - a.x <= sa.half_width + sb.half_width
    if short:
        return ", within noise" if within else ""
    hw = f"(±{_iops(sa.half_width)} and ±{_iops(sb.half_width)} IOPS)"
    if within:
        return f", within the two loads' per-second 95 % intervals {hw}: not a measured growth"
    return f", beyond the two loads' per-second 95 % intervals {hw}"


def curve_text(q: qm.QueueCurve, run_dir: Path | None = None) -> list[str]:
    c, first = q.curve, q.points[0]
    lo, hi = _load(q, first.row), _load(q, q.points[-1].row)
    ref = "the QD1 latency" if q.s_exact else f"the {lo} latency"
    if q.s_exact:
        s_text = f"S = {us(q.s)} µs, the mean latency at QD1 (one I/O alone)"
    else:
        s_text = (f"S ≈ {us(q.s)} µs, the mean latency at the lightest load, {lo} (no QD1 point: with {q.n0} I/Os "
                  "in flight it is at least the true S, so the N/S bound is an approximation, tighter than the true "
                  "one)")
    text = [f"**{md_text(c.label)}** ({lo}–{hi}, {len(q.points)} loads): {s_text}.",
            f"X_max = {_iops(q.x_max)} IOPS, the most measured ({_load(q, q.top)}), is a lower bound of the capacity"
            + ("; it was measured at the heaviest load, so a deeper queue may give more." if q.top_is_heaviest
               else "."),
            f"The bounds cross at N* = S · X_max = {q.n_star:.2f} I/Os in flight."]
    grew = q.growth_past_n_star()
    if grew is not None:
        a, b, g = grew
        text.append(f"Throughput did not stop growing there: from {_load(q, a.row)} ({_iops(a.x)} IOPS) to "
                    f"{_load(q, b.row)} ({_iops(b.x)} IOPS) it rose {g * 100:.1f} %{_growth_support(run_dir, a, b)}.")
    worst = _farthest(q)
    if worst is not None:
        text.append(f"Farthest from the bounds: {_load(q, worst.row)}, X at {worst.x_ratio * 100:.0f} % of its bound "
                    f"and R {worst.r_ratio:.2f}× its bound"
                    + (f" (effectively {worst.x * q.s * 1e-9:.1f} of {worst.n} I/Os served at once)"
                       if worst.x_bound_is_n_over_s else "") + ".")
    over = [p for p in q.points if p.x_ratio > 1 + GAP]
    if over:
        text.append(f"X exceeds its bound at {', '.join(_load(q, p.row) for p in over[:4])}: the lightest load's "
                    "latency overstates the time of one I/O (a device idle between I/Os, in a power state or "
                    "completing on a timer, answers more slowly than a busy one), so N/S is no true bound here.")
    last = q.points[-1]
    if last.r > q.s:
        extra = last.r - q.s
        slat = first.slat
        text.append(f"At {hi}, R = {us(last.r)} µs is {last.r / q.s:.2f}× {ref}: {extra / last.r * 100:.0f} % of it "
                    f"({us(extra)} µs) is time more than {ref}. That is not time spent waiting in one queue: the "
                    "device serves many I/Os at once, each possibly slower than alone"
                    + (f", and {ref} itself includes {us(slat)} µs of submission (slat)" if slat is not None else "")
                    + ".")
    return [" ".join(text), "", _table(q), ""]


def _table(q: qm.QueueCurve) -> str:
    rows = []
    for p in q.points:
        xb = f"{_iops(p.x_bound)} = " + ("N/S" if p.x_bound_is_n_over_s else "X_max")
        rb = f"{us(p.r_bound)} = " + ("S" if p.r_bound_is_s else "N/X_max")
        rows.append([_load(q, p.row), p.n, _iops(p.x), xb, _ratio(p.x_ratio), us(p.r), rb, _ratio(p.r_ratio),
                     _disks(p.disks), us(p.slat), us(p.clat)])
    return markdown_table(["Load", "N", "X (IOPS)", "X bound", "X / bound", "R (µs)", "R bound (µs)", "R / bound",
                           "Disk util %", "slat (µs)", "clat (µs)"], rows)
