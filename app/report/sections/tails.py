"""The report's "Latency distribution" section (docs/report.md, docs/tails.md): the exceedance figure
(:mod:`app.report.figures.tail_plots`), the tail table — p99 to p99.999, each printed only where the point's I/O count
supports it (:func:`app.model.tails.supported`) — and the device check: the device's bytes against fio's and fio's
mean latency split into device time and software time, from the ``device`` part the runner records.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable, Mapping, Sequence

from app.core.sanitize import clean_line, md_text
from app.core.textable import markdown_figure, markdown_table
from app.core.units import us
from app.model.tails import SUPPORT_BEYOND, TAIL_PERCENTILES, count, min_ios, percentile, supported
from app.report.data.model import StorageRow
from app.report.sections.layers import layers_section
from app.stats.validity import recorded_ns, recorded_ratio

if TYPE_CHECKING:
    from app.report.figures.plots import Figure

FIGURE_PREFIX = "plots/exceedance"  # the files this section's figures are drawn into
MAX_NOTES = 12  # device notes listed one by one; more are counted
UNSUPPORTED = "—"

Label = Callable[[StorageRow], str]


def owns(f: Figure) -> bool:
    """Whether a figure is this section's (the storage figures' list leaves it out)."""
    return f.file.startswith(FIGURE_PREFIX)


def ios_of(p: StorageRow) -> int | None:
    """The point's completed I/Os: fio's total, else its histogram's count (None when neither is recorded)."""
    total = p.metrics.total_ios
    if total is not None and total >= 0:
        return int(total)
    hist = p.metrics.hist()
    return count(hist) if hist else None


def tail_value(p: StorageRow, key: str, pct: float) -> float | None:
    """A tail percentile (ns): fio's summary's, else from the point's histogram (an import without it)."""
    lat = p.metrics.lat_ns
    v = lat.get(key) if lat is not None else None
    if v is not None:
        return v
    hist = p.metrics.hist()
    return float(got) if hist and (got := percentile(hist, pct)) is not None else None


def tail_cells(p: StorageRow) -> list[str]:
    """The point's p99 … p99.999 in µs: "—" where its I/Os do not support the percentile (recorded or not),
    "n/a" where a supported one is not recorded."""
    ios = ios_of(p)
    out = []
    for key, pct, _label in TAIL_PERCENTILES:
        v = tail_value(p, key, pct)
        out.append(UNSUPPORTED if not supported(pct, ios, p.inflight) else "n/a" if v is None else us(v))
    return out


def needs_text(inflight: int = 1) -> str:
    """The I/Os each tail percentile needs at ``inflight`` I/Os in flight: "p99 1,000, p99.9 10,000, …" (the
    fleet's table says it too)."""
    return ", ".join(f"{label} {min_ios(pct, inflight):,}" for _k, pct, label in TAIL_PERCENTILES)


RULE = (f"A percentile p needs at least {SUPPORT_BEYOND} distinct stall events beyond it. The histogram keeps no "
        "completion times, and one stall can hold every I/O in flight (N = QD × jobs), which then complete together, "
        f"so the point needs {SUPPORT_BEYOND} · N / (1 − p) I/Os (every tail I/O counted as part of a stall that "
        "held the whole queue: conservative, it may withhold a percentile, never shows one set by fewer stalls)")


def tail_table(points: Sequence[StorageRow], label: Label, host: bool = False) -> list[str]:
    """The tail table (one row per point, or per point and host) and its footnote."""
    rows = []
    short = absent = 0
    for p in points:
        ios = ios_of(p)
        cells = tail_cells(p)
        short += UNSUPPORTED in cells
        absent += "n/a" in cells
        rows.append([label(p), *([p.host or "?"] if host else []),
                     "not recorded" if ios is None else f"{ios:,}", *cells])
    head = ["Workload", *(["Host"] if host else []), "I/Os", *(f"{lab} (µs)" for _k, _p, lab in TAIL_PERCENTILES)]
    out = [markdown_table(head, rows, right=range(2 if host else 1, len(head))), ""]
    notes = []
    if short:
        depths = sorted({p.inflight for p in points})
        at = "; ".join(f"at N = {n}: {needs_text(n)}" for n in depths[:4]) + (" …" if len(depths) > 4 else "")
        notes.append(f"{UNSUPPORTED}: the point completed too few I/Os to support that percentile ({short} "
                     f"point{'s' if short != 1 else ''}; each point's count is in the I/Os column). {RULE}: {at}.")
    if absent:
        notes.append("n/a: the line records no such percentile and no histogram to compute it from (fio ran "
                     "without it, or an import lacks it).")
    return out + ([" ".join(notes), ""] if notes else [])


# --- the device check -------------------------------------------------------------------------------------------


def _device(p: StorageRow) -> Mapping[str, object] | None:
    d = p.line.parts.device
    return d if isinstance(d, Mapping) else None


def _ratio(d: Mapping[str, object], key: str) -> str:
    r = recorded_ratio(d, key)
    return "—" if r is None else f"{r:.2f}"


def device_row(p: StorageRow, label: Label) -> list[str] | None:
    """One row of the device check (None for a point without counters)."""
    d = _device(p)
    if d is None or "unavailable" in d:
        return None
    name = clean_line(d.get("name") or "?", 40) or "?"
    where = " (under the filesystem)" if d.get("source") == "filesystem" else ""
    dev = recorded_ns(d)
    fio = p.metrics.lat_ns.get("mean") if p.metrics.lat_ns is not None else None
    outside = us(fio - dev) if dev is not None and fio is not None else "n/a"
    return [label(p), name + where, _ratio(d, "read_ratio"), _ratio(d, "write_ratio"), us(dev), us(fio),
            outside]


def device_notes(points: Sequence[StorageRow], label: Label) -> list[str]:
    """The reasons the counters were not read (each once, with its count) and each point's note."""
    why: dict[str, int] = {}
    notes = []
    for p in points:
        d = _device(p)
        if d is None:
            continue
        if "unavailable" in d:
            reason = md_text(d.get("unavailable"), 300)
            why[reason] = why.get(reason, 0) + 1
        elif d.get("note"):
            notes.append(f"- {md_text(label(p))}: {md_text(d.get('note'), 300)}")
    out = [f"- Counters not read on {n} point{'s' if n != 1 else ''}: {r}" for r, n in why.items()]
    if len(notes) > MAX_NOTES:
        notes = notes[:MAX_NOTES] + [f"- … and {len(notes) - MAX_NOTES} more notes."]
    return out + notes


def device_section(points: Sequence[StorageRow], label: Label) -> list[str]:
    """The device check's table and notes (nothing when no point carries a ``device`` part)."""
    if not any(_device(p) is not None for p in points):
        return []
    out = ["### Device check", "",
           "The target's block-device counters (/sys/block/…/stat) read over the window fio measured (from its "
           "first status after any ramp to its exit): the bytes the device moved against the bytes fio reports "
           "(1.00: every byte reached the device; below 0.90 the point is "
           "flagged not-on-device, above 1.10 amplified), and the device's mean time per request, Δ(read + write "
           "ticks) / Δ(requests), as the kernel counts it from the block layer's queue to completion (the I/O "
           "scheduler's queueing is in it), beside fio's mean total latency. Outside the device = fio's mean − the "
           "device's mean: the time the counters do not see — waiting for a request slot (a tag) when more I/Os are "
           "in flight than the block layer's queue admits, submission and completion, the filesystem. The counters "
           "cannot tell waiting from software, so it is not called software time: at a queue deeper than the "
           "device's it is mostly waiting. Means only: a "
           "mean difference says nothing of the tails. It can come out negative: the kernel counts requests after "
           "merging adjacent I/Os (one merged request takes longer than one of fio's). The counters cover the "
           "whole device, so other I/O on it during the point counts too; —: fio moved no bytes in that direction.",
           ""]
    rows = [r for p in points if (r := device_row(p, label)) is not None]
    if rows:
        out += [markdown_table(["Workload", "Device", "Read bytes device/fio", "Write bytes device/fio",
                                "Device mean (µs)", "fio mean (µs)", "Outside the device (µs)"], rows,
                                right=range(2, 7)), ""]
    notes = device_notes(points, label)
    return out + (notes + [""] if notes else [])


# --- the section ------------------------------------------------------------------------------------------------


def _figure_lines(figures: Sequence[Figure], points: Sequence[StorageRow]) -> list[str]:
    mine = [f for f in figures if owns(f)]
    out = []
    for f in mine:
        out += markdown_figure(f.title, f.caption, f.file)
    missing = sum(1 for p in points if p.metrics.hist() is None)
    if missing == len(points):
        out.append("No point of this run records fio's latency histogram, so there is no exceedance figure: it "
                   f"needs {JSON_PLUS}.")
    elif missing:
        out.append(f"{missing} point{' of this run records' if missing == 1 else 's of this run record'} no latency "
                   f"histogram and {'is' if missing == 1 else 'are'} not drawn: the figure needs {JSON_PLUS}.")
    return out + ([""] if missing else [])
    return out


JSON_PLUS = ("fio's json+ histogram (`--output-format=json+`), which newer runs keep as `lat_hist`; older runs and "
             "imports of plain json give the table only")
INTRO = ("fio's total latencies (submission to completion, `lat`), merged over the point's jobs and directions: "
         "the exceedance figure shows, for every latency x, the fraction of I/Os slower than x; the table its p99 "
         "to p99.999, each only where the point completed enough I/Os to support it.")


def _replicated(label: Label) -> Label:
    """``label`` naming the replicate of a repeated point (each replicate is its own row and histogram)."""
    return lambda p: label(p) + ("" if p.replicate is None else f", replicate {p.replicate}")


def section(points: Sequence[StorageRow], figures: Sequence[Figure], label: Label, table: bool = True,
            heading: str = "### Latency distribution") -> list[str]:
    """The section of a single-target run; with ``table`` False (a report of more than MAX_BODY_POINTS points)
    the tables are left to the appendix (:func:`appendix`)."""
    if not points:
        return []
    label = _replicated(label)
    out = [heading, "", INTRO, ""]
    out += _figure_lines(figures, points)
    if table:
        out += tail_table(points, label) + device_section(points, label) + layers_section(points, label)
    else:
        out += [f"The tail table and the device check of all {len(points)} points are in the appendix (Latency "
                "distribution, every point).", ""]
    return out


def appendix(points: Sequence[StorageRow], label: Label) -> list[str]:
    label = _replicated(label)
    return (["### Latency distribution, every point", ""] + tail_table(points, label) + device_section(points, label)
            + layers_section(points, label))


def fleet_section(points: Sequence[StorageRow], figures: Sequence[Figure], label: Label) -> list[str]:
    """A fleet run's section: a row per point and host; the figure's panels are the points, its lines the
    hosts."""
    if not points:
        return []
    out = ["## Latency distribution", "", INTRO + " A fleet run's rows are each host's own figures.", ""]
    out += _figure_lines(figures, points)
    return out + tail_table(points, label, host=True) + device_section(points, _host_label(label))


def _host_label(label: Label) -> Label:
    return lambda p: f"{label(p)} on {p.host or '?'}"
