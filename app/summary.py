"""One-line and tabular summaries of points and results, shared by the CLI and the TUI."""

from __future__ import annotations

from typing import Any, Mapping

from app.points import Kind, MemoryPoint, Point, StoragePoint
from app.records import Latency, ResultLine
from app.textable import format_table
from app.units import format_count, format_size, format_us


def point_label(kind: str, point: Point | Mapping[str, object]) -> str:
    """A point in a few words: a planned point, or a point's JSON table as a results line holds it
    (untrusted: a missing or ill-typed setting shows as ``?``/``None``)."""
    if isinstance(point, (StoragePoint, MemoryPoint)):
        point = point.to_dict()
    if kind == Kind.STORAGE:
        rw = point.get("rw", "?")
        if point.get("rwmixread") is not None and rw in ("rw", "randrw"):
            rw = f"{rw} {point['rwmixread']}%R"
        bs = point.get("bs")
        size = format_size(bs) if isinstance(bs, int) else "?"
        qd = point.get("iodepth") or 1
        label = f"{rw} {size} QD{'≤' if point.get('latency_bound') else ''}{qd} T{point.get('numjobs') or 1}"
        if point.get("round"):
            label += f" round {point['round']}"
        return f"{point['group']}: {label}" if point.get("group") else label
    if point.get("mode") == "idle":
        return "idle latency"
    if point.get("mode") not in (None, "loaded"):
        return _suite_label(point)
    buffer = point.get("buffer")
    buf = f" buf {format_size(buffer)}" if isinstance(buffer, int) and buffer else ""
    return f"{point.get('traffic')} stride {point.get('stride')}{buf} delay {point.get('delay')}"


def _suite_label(point: Mapping[str, object]) -> str:
    """A memory-suite point (peak, scaling, matrices, c2c, working set) in a few words."""
    mode, traffic = point.get("mode"), point.get("traffic")
    cells = f"CPU node {point.get('cpu_node')} → memory node {point.get('mem_node')}"
    if mode == "peak":
        label = f"peak bandwidth {traffic}"
    elif mode == "scaling":
        label = f"bandwidth {traffic} {point.get('threads')} thread(s)"
    elif mode == "latency_matrix":
        label = f"idle latency {cells}"
    elif mode == "bandwidth_matrix":
        label = f"bandwidth {traffic} {cells}"
    elif mode == "c2c":
        label = f"c2c {point.get('c2c')}"
        if point.get("reader_node") is not None:
            label += (f" writer node {point.get('cpu_node')} reader node {point.get('reader_node')} "
                      f"(line homed at the {point.get('home')})")
    else:
        buffer = point.get("buffer")
        label = f"working set {format_size(buffer) if isinstance(buffer, int) else '?'}"
    return label + (" 4k pages" if point.get("pages") == "4k" else "")


def metrics_line(kind: str, metrics: Mapping[str, Any]) -> str:
    if kind == Kind.STORAGE:
        lat = metrics.get("lat_ns") or {}
        return (f"{format_count(metrics.get('iops') or 0)} IOPS, {(metrics.get('bw_bytes') or 0) / 1e6:.1f} MB/s, "
                f"lat mean {(lat.get('mean') or 0) / 1e3:.1f} µs p99 {(lat.get('p99') or 0) / 1e3:.1f} µs")
    line = f"latency {metrics.get('latency_ns') or 0:.1f} ns"
    if metrics.get("bandwidth_mbps") is not None:
        line += f", bandwidth {metrics['bandwidth_mbps']:.1f} MB/s"
    return line


def live_line(kind: str, sample: dict[str, Any]) -> str:
    """A live sample (runners.base.Sample.data) in one line, as the CLI's progress bar and the TUI show it."""
    if kind != Kind.STORAGE:
        return metrics_line(kind, sample)
    mean = sample.get("lat_mean_ns")
    return (f"{float(sample.get('iops') or 0):.0f} IOPS {float(sample.get('bw_bytes') or 0) / 1e6:.1f} MB/s"
            + (f" lat {float(mean) / 1e3:.1f} µs" if mean else "") + steady_live(sample.get("steady")))


def steady_live(steady: object) -> str:
    """The steady-state window of a live sample: " · steady window 3/5 s" while it fills, then fio's verdict."""
    if not isinstance(steady, dict):
        return ""
    if steady.get("attained"):
        return " · steady"
    window, filled = steady.get("window_s"), steady.get("filled_s")
    if not isinstance(window, int) or not isinstance(filled, int):
        return ""
    if filled < window:
        return f" · steady window {filled}/{window} s"
    deviation = steady.get("deviation")
    return " · not steady yet" + (f" ({deviation:.1f}%)" if isinstance(deviation, (int, float)) else "")


def outcome_line(record: Mapping[str, Any]) -> str:
    """What a steady-state or latency-search point found, in words ("" for a plain point); a results line
    is untrusted: ill-typed fields are left out."""
    parts = []
    steady = record.get("steady")
    if isinstance(steady, dict):
        after = steady.get("after_s")
        if steady.get("attained") and isinstance(after, (int, float)):
            parts.append(f"steady after {after:.1f} s ({steady.get('criterion')})")
        else:
            dev = steady.get("deviation")
            parts.append(f"not steady at the cap ({steady.get('criterion')}"
                         + (f", {dev:.1f}% at the end)" if isinstance(dev, (int, float)) else ")"))
    op = record.get("operating_point")
    if isinstance(op, dict) and isinstance(op.get("depth"), int):
        bound = op.get("bound_us")
        text = f"deepest queue meeting p{op.get('percentile')} ≤ {format_us(bound)}: QD {op['depth']}"
        if not op.get("converged"):
            text += " (search not finished at the cap)"
        parts.append(text)
    return "; ".join(parts)



def results_table(lines: list[ResultLine]) -> str:
    storage = [r for r in lines if r.kind == Kind.STORAGE]
    memory = [r for r in lines if r.kind == Kind.MEMORY]
    parts = []
    if storage:
        fleet = any(r.host for r in storage)  # a fleet run: a line per point and host
        rows = []
        for r in storage:
            m = r.storage
            lat = m.lat_ns or Latency()
            rows.append([point_label(Kind.STORAGE, r.point)] + ([str(r.host)] if fleet else [])
                        + [format_count(m.iops or 0), f"{(m.bw_bytes or 0) / 1e6:.1f}",
                           f"{(lat.mean or 0) / 1e3:.1f}", f"{(lat.p99 or 0) / 1e3:.1f}",
                           f"{m.usr_cpu or 0:.1f}/{m.sys_cpu or 0:.1f}"])
        head = ["test"] + (["host"] if fleet else []) + ["IOPS", "MB/s", "lat avg µs", "p99 µs", "CPU usr/sys %"]
        parts.append(format_table(head, rows, right=tuple(range(len(head) - 5, len(head)))))
    if memory:
        cells: list[list[object]] = []
        for r in memory:
            p, mem = r.point, r.memory
            bw, lat_ns = mem.bandwidth_mbps, mem.latency_ns
            what = p.get("traffic") or "idle" if p.get("mode") in (None, "idle", "loaded") else _suite_label(p)
            cells.append([what, p.get("stride"), p.get("delay"),
                         "" if lat_ns is None else f"{lat_ns:.2f}",
                         "" if bw is None else f"{bw:.1f}"])
        parts.append(format_table(["traffic", "stride", "inject delay", "latency ns", "bandwidth MB/s"], cells,
                                  right=(1, 2, 3, 4)))
    return "\n\n".join(parts)
