"""The report's queueing view in markdown: each queue-depth curve against the asymptotic bounds of a closed
system (the numbers from :mod:`app.report.compute.queueing`), its table and its figure.  Whether throughput still grew
past N* is the curve's one judgement (:mod:`app.report.compute.verdict`, every replicate), the same the summary of
trends words."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any, Sequence

from app.core.sanitize import clean_line, md_text
from app.core.textable import markdown_figure, markdown_table
from app.core.units import us
from app.report.compute import analysis, queueing, verdict
from app.report.data.model import StorageRow

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
         "growing. The gap between the measured X and its bound (X / bound) is internal parallelism the load did "
         "not turn into throughput: below N*, X · S is the number of I/Os the device effectively served at once, "
         "against N. R's bound max(S, N/X_max) is N divided by X's, so with R = N/X (Little's law) it tells "
         "nothing X / bound does not; it is drawn in the figure, not tabled.")

UTIL_NOTE = ("Disk util is fio's `disk_util`: the share of the run the device had at least one I/O in flight. A "
             "device that serves many I/Os in parallel reads near 100 % long before it reaches X_max, so it is not "
             "X / X_max. slat and clat are fio's submission and completion latency (means); R is their sum.")
SPLIT_NOTE = ("In the device is the mean time per request of the device's block counters (/sys/block/…/stat, as "
              "in the device check): from the request's allocation in the block layer to its completion — the I/O "
              "scheduler's queue, the driver and the device (for a virtual disk, the hypervisor and the host). "
              "Outside it is R minus that: time the counters do not see — waiting for a request slot (a tag) when "
              "more I/Os are in flight than the block layer's queue admits, submission and completion in the "
              "kernel and fio. The counters do not tell those apart, so it is not called software time; n/a: no "
              "counters, or their time per request is above R (merged requests).")


def section(curves: Sequence[analysis.Curve], figures: Sequence[Any] = (), run_dir: Path | None = None,
            rows: Sequence[StorageRow] = ()) -> list[str]:
    """The queueing view; ``rows``: every storage point of the run, so each load is judged with its replicates."""
    out = ["### Queueing view (closed system)", ""]
    qcs = queueing.queue_curves(curves)
    if not qcs:
        out += ["No workload was measured at more than one queue depth, so the data cannot show how latency and "
                "throughput trade against load; a queue-depth sweep (`qd-scaling`) does.", ""]
        return out
    out += [INTRO, ""]
    for f in figures:
        if getattr(f, "section", None) == SECTION:
            out += markdown_figure(f.title, f.caption, f.file)
    if len(qcs) > MAX_DETAILED:
        out += _summary(qcs, run_dir, rows)
    for q in qcs[:MAX_DETAILED]:
        out += curve_text(q, run_dir, rows)
    if any(p.device is not None for q in qcs for p in q.points):
        out += [SPLIT_NOTE, ""]
    if any(p.disks is not None or p.slat is not None or p.clat is not None for q in qcs for p in q.points):
        out += [UTIL_NOTE, ""]
    else:
        out += ["Disk util, slat and clat: not recorded (n/a) — results lines written before they were kept.", ""]
    return out


def _farthest(q: queueing.QueueCurve) -> queueing.QueuePoint | None:
    """The load farthest below its throughput bound, when 5 % or more below it; the lightest load defines S:
    its own ratio is 1 up to Little's L/N, no distance to report."""
    worst = min(q.points[1:], key=lambda p: p.x_ratio)
    return worst if worst.x_ratio < 1 - GAP else None


def _summary(qcs: Sequence[queueing.QueueCurve], run_dir: Path | None, all_rows: Sequence[StorageRow]) -> list[str]:
    """One row per curve: its S, X_max, N* and distance from the bounds (the per-load tables of the first
    MAX_DETAILED follow)."""
    rows = []
    for q in qcs:
        first, last, worst = q.points[0], q.points[-1], _farthest(q)
        grew = growth(q, run_dir, all_rows)
        rows.append([md_text(q.curve.label), f"{_load(q, first.row)}–{_load(q, last.row)}",
                     ("" if q.s_exact else "≈ ") + us(q.s), f"{_iops(q.x_max)} ({_load(q, q.top)})",
                     f"{q.n_star:.2f}", "—" if grew is None else f"{_signed(grew[2])} ({_load(q, grew[0].row)}→"
                     f"{_load(q, grew[1].row)}, {grew[2].verdict})",
                     "—" if worst is None else f"{_load(q, worst.row)}: {_ratio(worst.x_ratio)}",
                     f"{last.r / q.s:.2f}"])
    return [f"{len(qcs)} curves: one row each (S ≈: no QD1 point, R at the lightest load stands in; growth past N*: "
            "IOPS from the first load above N* to the curve's peak, with the curve's verdict (real, within noise or "
            "not judged); farthest: the load farthest below its throughput bound, X / bound). The first "
            f"{MAX_DETAILED}, drawn in the figure, have their per-load "
            "table below; every point's figures are in the storage results table and results.csv.", "",
            markdown_table(["Curve", "Loads", "S (µs)", "X_max (IOPS)", "N*", "Growth past N*", "Farthest",
                            "R at heaviest / S"], rows), ""]


def _load(q: queueing.QueueCurve, p: Any) -> str:
    return q.curve.load_label(p)


def _iops(x: float) -> str:
    return f"{x:,.0f}"


def _ratio(x: float) -> str:
    return NA if not math.isfinite(x) else f"{x:.2f}"


def _disks(disks: tuple[queueing.Disk, ...] | None) -> str:
    if disks is None:
        return NA
    if len(disks) == 1:
        return f"{disks[0].util:.1f}"
    shown = ", ".join(f"{clean_line(d.name, 40)} {d.util:.1f}" for d in disks[:2])  # a cell: the table escapes it
    return shown + (", …" if len(disks) > 2 else "")


def judged(q: queueing.QueueCurve, run_dir: Path | None, rows: Sequence[StorageRow]) -> verdict.Curve:
    """The curve's one judgement of IOPS along its loads, each load with its replicates among ``rows``."""
    return verdict.curve(run_dir, [verdict.replicates_of(p.row, rows) for p in q.points], "iops")


def growth(q: queueing.QueueCurve, run_dir: Path | None,
           rows: Sequence[StorageRow]) -> tuple[queueing.QueuePoint, queueing.QueuePoint, verdict.Verdict] | None:
    """(first load at or above N*, the curve's peak, the verdict on the IOPS between them) when the peak lies
    beyond that load — what shows N* is not where throughput stops growing; None otherwise."""
    c = judged(q, run_dir, rows)
    top = c.top
    past = [i for i, p in enumerate(q.points) if p.n >= q.n_star]
    if not past or past[0] >= top or q.points[past[0]].x <= 0:
        return None
    return q.points[past[0]], q.points[top], c.between(past[0], top)


def _signed(v: verdict.Verdict) -> str:
    return "n/a" if v.effect is None else f"{v.effect * 100:+.1f} %"


def _growth_text(v: verdict.Verdict) -> str:
    """The verdict on a growth, as the end of a sentence (its reason may quote a results line: escaped)."""
    why = md_text(v.reason)  # whole: a cut lands mid-word
    if v.real:
        return f": a real growth ({why})"
    if v.within:
        return f", within noise ({why}): not a measured growth"
    return f", not judged: {why}"


def curve_text(q: queueing.QueueCurve, run_dir: Path | None = None, rows: Sequence[StorageRow] = ()) -> list[str]:
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
    grew = growth(q, run_dir, rows)
    if grew is not None:
        a, b, v = grew
        shown = (f"{_iops(v.a)} → {_iops(v.b)} IOPS" if v.a is not None and v.b is not None
                 else f"{_iops(a.x)} → {_iops(b.x)} IOPS")
        text.append(f"From {_load(q, a.row)}, the first load at or above N*, to {_load(q, b.row)}, where the curve "
                    f"peaks, IOPS changed {_signed(v)} ({shown}){_growth_text(v)}.")
    worst = _farthest(q)
    if worst is not None:
        text.append(f"Farthest from the bounds: {_load(q, worst.row)}, X at {worst.x_ratio * 100:.0f} % of its bound"
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
        said = (f"At {hi}, R = {us(last.r)} µs is {last.r / q.s:.2f}× {ref}: {extra / last.r * 100:.0f} % of it "
                f"({us(extra)} µs) is time more than {ref}")
        if last.outside is not None and last.device is not None:
            said += (f". The device counters put {us(last.device)} µs of R ({last.device / last.r * 100:.0f} %) "
                     "from the block layer's queue to completion (scheduler, driver, device); the other "
                     f"{us(last.outside)} µs ({last.outside / last.r * 100:.0f} %) are outside what they see: "
                     "waiting for a request slot while more I/Os are in flight than the block layer's queue admits, "
                     "submission and completion — the counters cannot tell these apart. By Little's law, of the "
                     f"{last.n} I/Os in flight on average {last.n * last.device / last.r:.0f} were inside the "
                     f"counters and {last.n * last.outside / last.r:.0f} outside them")
        else:
            said += (". Where it went — waiting in a queue before the device, or the device serving many I/Os at "
                     "once, each slower than alone — is not split: "
                     + ("the device counters' time per request is above R (merged requests)" if last.device
                        is not None else "the device counters were not recorded for this load"))
        if slat is not None:
            said += f"; {ref} itself includes {us(slat)} µs of submission (slat)"
        text.append(said + ".")
    return [" ".join(text), "", _table(q), ""]


def _table(q: queueing.QueueCurve) -> str:
    split = any(p.device is not None for p in q.points)
    rows = []
    for p in q.points:
        xb = f"{_iops(p.x_bound)} = " + ("N/S" if p.x_bound_is_n_over_s else "X_max")
        row = [_load(q, p.row), p.n, _iops(p.x), xb, _ratio(p.x_ratio), us(p.r)]
        if split:
            row += [us(p.device) if p.outside is not None else NA, us(p.outside)]
        rows.append(row + [_disks(p.disks), us(p.slat), us(p.clat)])
    head = ["Load", "N", "X (IOPS)", "X bound", "X / bound", "R (µs)"]
    if split:
        head += ["In the device (µs)", "Outside it (µs)"]
    return markdown_table(head + ["Disk util %", "slat (µs)", "clat (µs)"], rows)
