"""The report's "Where the time goes" subsection (docs/report.md): fio's latency split by layer from the ``layers``
part of the points that asked for it (``layers = true``; app/host/blocktrace.py).

Per figure (mean, p50, p99): fio's total latency, each request's queue (its accounting start to its issue: plug,
I/O scheduler, dispatch), its time in the driver and device, its completion (the bios' callbacks before its
accounting ends), and what is left above the block layer; and per point the three block-layer means added up beside
the device counters' mean, which times the same span.  Where the trace is unavailable the subsection says why in
one sentence and gives the device counters' mean instead (the ``device`` part: Δticks / Δrequests).  Every figure
of the part is untrusted: read through :func:`app.model.records.number`, bounded.
"""

from __future__ import annotations

from typing import Callable, Mapping, Sequence

from app.core.sanitize import md_text
from app.core.textable import markdown_table
from app.core.units import us
from app.model.records import number
from app.report.data.model import StorageRow
from app.stats.validity import recorded_ns

Label = Callable[[StorageRow], str]
MAX_NS = 1e15  # 11 days: a figure above is no latency
FIGURES = (("mean", "mean_ns", "mean"), ("p50", "p50_ns", "p50"), ("p99", "p99_ns", "p99"))

INTRO = ("The block requests of the target's disk traced with bpftrace during each point that asked for it "
         "(`layers = true`), each timed from one kernel tracepoint to the next: the queue, from the start of the "
         "request's I/O accounting to its issue to the driver (block_io_start → block_rq_issue: the submitter's "
         "plug, the I/O scheduler's queue, the dispatch code; under scheduler `none` not 0 but a few tenths of a "
         "µs, that code and the probes' own cost); the device, the driver and the device holding it "
         "(block_rq_issue → block_rq_complete); the completion, its bios ended and their owners called back — for "
         "fio's direct I/O its iocb completed and fio woken — before the kernel ends its accounting "
         "(block_rq_complete → block_io_done). The three time the span the device counters time (Δticks / "
         "Δrequests: from the request's start stamp, taken within the queue part, to the end of its accounting), "
         "so their sum is given beside the counters' mean; the device part alone is below it by the completion. "
         "Above the block layer is the rest: the system call, the filesystem or page cache, allocating the "
         "request, fio reaping the completion. Means add up; a percentile's rest is fio's percentile minus the "
         "layers' percentiles, an estimate (the slowest I/Os of one layer need not be those of another). The "
         "layers' percentiles are the middle of a bucket at most 12.5 % wide. The disk's requests of other "
         "processes count too. On kernels before 6.5 (no block_io_start/block_io_done) the queue is the I/O "
         "scheduler's alone (block_rq_insert → block_rq_issue; 0 for a request issued directly) and there is no "
         "completion part.")


def _ns(part: Mapping[str, object], layer: str, key: str) -> float | None:
    sub = part.get(layer)
    if not isinstance(sub, Mapping):
        return None
    v = number(sub.get(key))
    return v if v is not None and 0 <= v <= MAX_NS else None


def _fio(p: StorageRow, key: str) -> float | None:
    lat = p.metrics.lat_ns
    v = number(lat.get(key)) if lat is not None else None
    return v if v is not None and 0 <= v <= MAX_NS else None


def _cpu_text(part: Mapping[str, object]) -> str:
    share, start = number(part.get("tracer_cpu_share")), number(part.get("tracer_start_cpu_s"))
    out = f"{share * 100:.2f} % of a CPU" if share is not None and 0 <= share <= 1000 else "n/a"
    if start is not None and 0 <= start <= 1e6:
        out += f" (+{start:.2f} CPU-s to start)"
    return out


def _accounting(part: Mapping[str, object]) -> bool:
    """Whether the part is the three-part trace (block_io_start → block_io_done) rather than the older kernels'."""
    return part.get("queue_from") == "block_io_start"


def _rows(p: StorageRow, part: Mapping[str, object], label: Label) -> list[list[str]]:
    rows = []
    for i, (name, key, fio_key) in enumerate(FIGURES):
        fio, queue, device = _fio(p, fio_key), _ns(part, "queue", key), _ns(part, "device_time", key)
        done = _ns(part, "completion", key) if _accounting(part) else 0.0
        known = fio is not None and queue is not None and device is not None and done is not None
        rest = fio - queue - device - done if known else None  # type: ignore[operator]
        rows.append([md_text(label(p)) if i == 0 else "", name, us(fio), us(rest), us(queue), us(device),
                     us(done) if _accounting(part) else "n/a", _cpu_text(part) if i == 0 else ""])
    return rows


def _against_counters(p: StorageRow, part: Mapping[str, object], label: Label) -> str | None:
    """The three block-layer means added up, beside the device counters' mean over the same window."""
    parts = [_ns(part, layer, "mean_ns") for layer in ("queue", "device_time", "completion")]
    dev = recorded_ns(p.line.parts.device)
    if not _accounting(part) or None in parts or dev is None or dev <= 0:
        return None
    total = sum(x for x in parts if x is not None)
    return (f"- {md_text(label(p))}: queue + device + completion {us(total)} µs per request; the device counters' "
            f"mean {us(dev)} µs ({(total - dev) / dev * 100:+.1f} %), of which the device part alone "
            f"{us(parts[1])} µs")


def _parts(points: Sequence[StorageRow]) -> list[tuple[StorageRow, Mapping[str, object]]]:
    return [(p, d) for p in points if isinstance(d := p.line.parts.layers, Mapping)]


def layers_section(points: Sequence[StorageRow], label: Label) -> list[str]:
    """The subsection (nothing when no point asked for the trace)."""
    parts = _parts(points)
    if not parts:
        return []
    out = ["### Where the time goes, by layer", "", INTRO, ""]
    rows = [r for p, d in parts if "unavailable" not in d for r in _rows(p, d, label)]
    if rows:
        out += [markdown_table(["Workload", "Figure", "fio total (µs)", "Above the block layer (µs)", "Queue (µs)",
                                "Device (µs)", "Completion (µs)", "Tracer CPU"], rows, right=range(2, 7)), ""]
    sums = [line for p, d in parts if "unavailable" not in d and (line := _against_counters(p, d, label))]
    if sums:
        out += sums + [""]
    for p, d in parts:
        if "unavailable" not in d:
            continue
        why = md_text(d.get("unavailable"), 300)
        dev, fio = recorded_ns(p.line.parts.device), _fio(p, "mean")
        if dev is not None:
            fallback = (f"the device counters' mean instead: {us(dev)} µs per request (Δticks / Δrequests, the "
                        f"scheduler's queue in it) of fio's {us(fio)} µs; no percentiles")
        elif "device counters" in why:  # the reason already says the counters are missing (a tmpfs file)
            fallback = "so no split"
        else:
            fallback = "no device counters either, so no split"
        out.append(f"- {md_text(label(p))}: not traced: {why}; {fallback}.")
    return out + ([""] if any("unavailable" in d for _, d in parts) else [])
