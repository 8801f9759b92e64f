"""The report's "Where the time goes" subsection (docs/report.md): fio's latency split by layer from the ``layers``
part of the points that asked for it (``layers = true``; app/blocktrace.py).

Per figure (mean, p50, p99): fio's total latency, the requests' wait in the I/O scheduler, their time in the driver
and device, and what is left — fio's and the kernel's submission and completion path.  Where the trace is
unavailable the subsection says why in one sentence and gives the device counters' mean instead (the ``device``
part: Δticks / Δrequests).  Every figure of the part is untrusted: read through :func:`app.records.number`, bounded.
"""

from __future__ import annotations

from typing import Callable, Mapping, Sequence

from app.records import number
from app.report.model import StorageRow
from app.sanitize import md_text
from app.textable import markdown_table
from app.units import us
from app.validity import recorded_ns

Label = Callable[[StorageRow], str]
MAX_NS = 1e15  # 11 days: a figure above is no latency
FIGURES = (("mean", "mean_ns", "mean"), ("p50", "p50_ns", "p50"), ("p99", "p99_ns", "p99"))

INTRO = ("The block requests of the target's disk traced with bpftrace during each point that asked for it "
         "(`layers = true`): fio's total latency split into the time a request waited in the I/O scheduler "
         "(block_rq_insert → block_rq_issue; 0 for a request issued directly, as under scheduler `none`), the time "
         "the driver and the device held it (block_rq_issue → block_rq_complete), and the rest — fio's and the "
         "kernel's submission and completion: the system call, the filesystem or page cache, waiting for a request "
         "slot. Means add up; a percentile's rest is fio's percentile minus the two layers' percentiles, an "
         "estimate (the slowest I/Os of one layer need not be those of another). The layers' percentiles are the "
         "middle of a bucket at most 12.5 % wide. The disk's requests of other processes count too.")


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


def _rows(p: StorageRow, part: Mapping[str, object], label: Label) -> list[list[str]]:
    rows = []
    for i, (name, key, fio_key) in enumerate(FIGURES):
        fio, queue, device = _fio(p, fio_key), _ns(part, "queue", key), _ns(part, "device_time", key)
        rest = fio - queue - device if fio is not None and queue is not None and device is not None else None
        rows.append([md_text(label(p)) if i == 0 else "", name, us(fio), us(rest), us(queue), us(device),
                     _cpu_text(part) if i == 0 else ""])
    return rows


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
        out += [markdown_table(["Workload", "Figure", "fio total (µs)", "Submission and completion (µs)",
                                "Scheduler queue (µs)", "Device (µs)", "Tracer CPU"], rows, right=range(2, 6)), ""]
    for p, d in parts:
        if "unavailable" not in d:
            continue
        why = md_text(d.get("unavailable"), 300)
        dev, fio = recorded_ns(p.line.parts.device), _fio(p, "mean")
        if dev is not None:
            fallback = (f"the device counters' mean instead: {us(dev)} µs per request (Δticks / Δrequests, the "
                        f"scheduler's queue in it) of fio's {us(fio)} µs; no percentiles")
        else:
            fallback = "no device counters either, so no split"
        out.append(f"- {md_text(label(p))}: not traced: {why}; {fallback}.")
    return out + ([""] if any("unavailable" in d for _, d in parts) else [])
