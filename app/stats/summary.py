"""One-line and tabular summaries of points and results, shared by the CLI and the TUI."""

from __future__ import annotations

import math
import re
from typing import Any, Iterable, Mapping, Sequence

from app.core.textable import fit_line, format_table
from app.core.units import format_count, format_size, format_size_human, format_us, rate_text
from app.model.points import Kind, MemoryPoint, Point, StoragePoint
from app.model.records import Latency, ResultLine
from app.stats.uncertainty import MIN_BATCHES, intervals_of, storage_series

# the memory suite's modes beside the idle and loaded latency: one figure per results line
SUITE_MODES = ("peak", "scaling", "latency_matrix", "bandwidth_matrix", "c2c", "working_set")
# MLC's short names of its peak-injection traffic mixes ("3:1 Reads-Writes" and so on); another code reads as itself
TRAFFIC_LABELS = {"R": "ALL Reads", "W3": "3:1", "W2": "2:1", "W5": "1:1", "W10": "Triad"}


def natural_key(value: object) -> tuple[object, ...]:
    """How a table sorts a cell: text by its words and numbers (QD1, QD8, QD32 — never QD1, QD32, QD8), a number by
    its value (before any text)."""
    if value is None:
        return (-1,)
    if not isinstance(value, str):
        return (0, value)
    parts = re.split(r"(\d+(?:\.\d+)?)", value.casefold())
    return (1, tuple((0, float(x), "") if i % 2 else (1, 0.0, x) for i, x in enumerate(parts) if x))


# a memory engine's injection-delay unit (docs/presets.md: the same number is not the same time in both)
DELAY_UNITS = {"mlc": "MLC units", "builtin": "spin steps"}


def delay_unit(engine: object) -> str:
    """The injection delay's unit of ``engine`` in words: MLC's own units, the built-in engine's spin steps."""
    return DELAY_UNITS.get(str(engine), "engine units")


def delay_header(name: str, engines: Iterable[object]) -> str:
    """A column or axis of injection delays named with their unit: the engines' one, or "engine units" when the
    engines differ or are not known (their numbers are not comparable then)."""
    units = {delay_unit(e) for e in engines if e is not None}
    return f"{name} ({units.pop() if len(units) == 1 else 'engine units'})"


def point_label(kind: str, point: Point | Mapping[str, object], delay_unit: str | None = None) -> str:
    """A point in a few words: a planned point, or a point's JSON table as a results line holds it
    (untrusted: a missing or ill-typed setting shows as ``?``/``None``); a loaded-latency point's injection delay
    followed by ``delay_unit`` when given (the engine's own: MLC's units or the built-in engine's spin steps)."""
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
        rate = point.get("rate")
        if isinstance(rate, str):
            label += f" λ {rate if rate.endswith('%') else rate + '/s'}"
        if point.get("round"):
            label += f" round {point['round']}"
        return f"{point['group']}: {label}" if point.get("group") else label
    if point.get("mode") == "idle":
        return "idle latency"
    if point.get("mode") in SUITE_MODES:
        return figure_label(point)
    buffer = point.get("buffer")
    buf = f" buf {format_size(buffer)}" if isinstance(buffer, int) and buffer else ""
    delay = point.get("delay")
    unit = f" {delay_unit}" if delay_unit and delay is not None else ""
    return f"{point.get('traffic')} stride {point.get('stride')}{buf} delay {delay}{unit}"


def metrics_line(kind: str, metrics: Mapping[str, Any], binary: bool = False) -> str:
    """A point's figures in one line; ``binary``: bandwidths in MiB/s (the TUI's units toggle), else MB/s."""
    if kind == Kind.STORAGE:
        lat = metrics.get("lat_ns") or {}
        bw = rate_text((metrics.get("bw_bytes") or 0) / 1e6, binary)
        return (f"{format_count(metrics.get('iops') or 0)} IOPS, {bw}, "
                f"lat mean {(lat.get('mean') or 0) / 1e3:.1f} µs p99 {(lat.get('p99') or 0) / 1e3:.1f} µs")
    if metrics.get("latency_ns") is None and metrics.get("bandwidth_mbps") is not None:  # a bandwidth figure
        return f"bandwidth {rate_text(metrics['bandwidth_mbps'], binary)}"
    line = f"latency {metrics.get('latency_ns') or 0:.1f} ns"
    if metrics.get("bandwidth_mbps") is not None:
        line += f", bandwidth {rate_text(metrics['bandwidth_mbps'], binary)}"
    return line


def traffic_label(traffic: object) -> str:
    """A traffic code as MLC's peak-bandwidth table names it: "ALL Reads", "3:1", … ("W7" stays "W7")."""
    return TRAFFIC_LABELS.get(str(traffic), str(traffic))


def _node(value: object) -> str:
    return str(value) if isinstance(value, int) and not isinstance(value, bool) else "?"


def figure_buffer(figure: Mapping[str, object]) -> int | None:
    """The buffer of a working-set figure: a point's ``buffer``, a live sample's ``buffer_bytes``."""
    value = figure.get("buffer_bytes", figure.get("buffer"))
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None


def figure_pages(figure: Mapping[str, object]) -> str:
    """The page size of a figure's buffers: "2m" (huge pages where the kernel allows: the engines' default) or
    "4k"."""
    return "4k" if figure.get("pages") == "4k" else "2m"


def figure_keys(figure: Mapping[str, object]) -> str:
    """What identifies a memory figure among its mode's, in words: "cpu 0 → mem 1", "ALL Reads", "64 KiB (2m
    pages)", "hitm writer 0 → reader 1, line homed at the writer".  ``figure`` is a point's JSON table or a live
    sample's data (app.runners.base.Sample); untrusted: a missing or ill-typed key shows as ``?``."""
    mode = figure.get("mode")
    traffic = figure.get("traffic")
    if mode == "peak":
        return traffic_label(traffic)
    if mode == "scaling":
        return f"{traffic} {_node(figure.get('threads'))} threads"
    if mode in ("latency_matrix", "bandwidth_matrix"):
        cells = f"cpu {_node(figure.get('cpu_node'))} → mem {_node(figure.get('mem_node'))}"
        return f"{traffic} {cells}" if mode == "bandwidth_matrix" else cells
    if mode == "c2c":
        kind = str(figure.get("c2c") or "hitm").upper()
        if figure.get("reader_node") is None:
            cpus = figure.get("cpus")
            return f"{kind} local" + (f" (CPUs {cpus})" if isinstance(cpus, str) else "")
        return (f"{kind} writer {_node(figure.get('cpu_node'))} → reader {_node(figure.get('reader_node'))}, "
                f"line homed at the {figure.get('home') or 'writer'}")
    if mode == "working_set":
        buffer = figure_buffer(figure)
        return f"{'?' if buffer is None else format_size_human(buffer)} ({figure_pages(figure)} pages)"
    return point_label(Kind.MEMORY, figure)


def figure_label(figure: Mapping[str, object]) -> str:
    """A memory-suite figure's mode and keys: "latency_matrix cpu 0 → mem 1", "peak ALL Reads"."""
    return f"{figure.get('mode')} {figure_keys(figure)}"


def latency_text(ns: float) -> str:
    """A latency in ns with the digits it needs: "144.3", and below 10 ns two decimals ("1.25": an L1 hit
    against a 1.1 ns one)."""
    return f"{ns:.2f}" if abs(ns) < 10 else f"{ns:.1f}"


def figure_value(metrics: Mapping[str, Any]) -> str:
    """A figure's value with its unit: "144.3 ns", "1.25 ns", "211194.2 MB/s" ("?" when it has none)."""
    lat, bw = metrics.get("latency_ns"), metrics.get("bandwidth_mbps")
    if isinstance(lat, (int, float)) and not isinstance(lat, bool):
        return f"{latency_text(lat)} ns"
    if isinstance(bw, (int, float)) and not isinstance(bw, bool):
        return f"{bw:.1f} MB/s"
    return "?"


def figure_line(point: Mapping[str, object], metrics: Mapping[str, Any]) -> str:
    """One results line of the memory suite: "latency_matrix cpu 0 → mem 1: 144.3 ns"."""
    return f"{figure_label(point)}: {figure_value(metrics)}"


def live_line(kind: str, sample: dict[str, Any], interval: str = "", binary: bool = False) -> str:
    """A live sample (runners.base.Sample.data) in one line, as the CLI's progress bar and the TUI show it;
    ``interval``: the running interval of the point's IOPS (:func:`live_interval`), after the IOPS; ``binary``:
    the bandwidth in MiB/s."""
    if kind != Kind.STORAGE:
        return metrics_line(kind, sample, binary)
    mean = sample.get("lat_mean_ns")
    return (f"{float(sample.get('iops') or 0):.0f} IOPS{' ' + interval if interval else ''} "
            f"{rate_text(float(sample.get('bw_bytes') or 0) / 1e6, binary)}"
            + (f" lat {float(mean) / 1e3:.1f} µs" if mean else "") + steady_live(sample.get("steady")))


def live_interval(samples: Sequence[Mapping[str, object]]) -> str:
    """The running 95 % interval of a point's mean IOPS from the whole seconds seen so far (the method a results
    line's ``ci95`` uses, app.stats.uncertainty): "± 1.8 % (95 % within this run, 24 s)", "± — (needs 10 s)" before
    there are
    enough seconds, "± — (needs more than 14 s)" while the warm-up or correlated seconds leave too few."""
    iops = storage_series(samples).get("iops", [])
    if len(iops) < MIN_BATCHES:
        return f"± — (needs {MIN_BATCHES} s)"
    iv = intervals_of({"iops": iops}).intervals.get("iops")
    if iv is None or not iv.mean:
        return f"± — (needs more than {len(iops)} s)"
    return f"± {pct_text(100 * (iv.high - iv.low) / 2 / abs(iv.mean))} (95 % within this run, {len(iops)} s)"


def pct_text(pct: float) -> str:
    """A relative half-width: "1.8 %", "0.35 %", "12 %"."""
    return f"{pct:.2g} %" if pct < 1 else f"{pct:.1f} %" if pct < 10 else f"{pct:.0f} %"


def ci_pct(value: object, low: object, high: object) -> float | None:
    """A figure's 95 % interval as its half-width in per cent of the figure; None when it has none (a
    results.csv row's value and ``*_ci_low``/``*_ci_high`` cells: untrusted, NaN where empty)."""
    nums = [float(v) for v in (value, low, high)
            if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)]
    if len(nums) < 3 or not nums[0]:
        return None
    return 100 * (nums[2] - nums[1]) / 2 / abs(nums[0])


def pm_pct(pct: float | None) -> str:
    """:func:`ci_pct` for a column: "±1.8%", "" for none."""
    return "" if pct is None else "±" + pct_text(pct).replace(" ", "")


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


def precision_words(p: Mapping[str, Any]) -> str:
    """A point with a precision: "±1.7 % of mean IOPS after 14.9 s, ±2 % asked", or what it reached and why not."""
    reached, after = p.get("reached_pct"), p.get("after_s")
    got = f"±{reached:.2g} % of mean IOPS" if isinstance(reached, (int, float)) else "no interval of mean IOPS"
    secs = f" after {after:.1f} s" if isinstance(after, (int, float)) else ""
    why = {"runtime": " at the cap", "steady": " when fio's steady state ended the point"}.get(str(p.get("stop")), "")
    return f"{got}{why}{secs}, ±{p['target_pct']:g} % asked"


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
    precision = record.get("precision")
    if isinstance(precision, dict) and isinstance(precision.get("target_pct"), (int, float)):
        parts.append(precision_words(precision))
    op = record.get("operating_point")
    if isinstance(op, dict) and isinstance(op.get("depth"), int):
        bound = op.get("bound_us")
        text = f"deepest queue meeting p{op.get('percentile')} ≤ {format_us(bound)}: QD {op['depth']}"
        if not op.get("converged"):
            text += " (search not finished at the cap)"
        parts.append(text)
    return "; ".join(parts)



FLAG_MARK = "!"  # before the names of a line's flags, wherever the CLI shows its figures


def flag_names(line: ResultLine) -> list[str]:
    """The names of a results line's flags, as the report reads them (app.stats.validity.flags_of): a storage point's
    validity flags, a memory figure's ``contended`` (a thread short of its CPU, app.report.compute.contention)."""
    if line.kind == Kind.STORAGE:
        from app.stats.validity import flags_of, names

        return names(flags_of(line))
    from app.report.compute.contention import contended
    from app.report.data.model import MemoryRow

    return ["contended"] if contended(MemoryRow(line.index or 0, line)) else []


def flag_text(names: Sequence[str]) -> str:
    """"! not-on-device, imprecise", or "" for none."""
    return f"{FLAG_MARK} {', '.join(names)}" if names else ""


def flag_legend(names: Sequence[str], width: int | None = None) -> list[str]:
    """What each flag in ``names`` means, a line each (within ``width``): under a table that marks them."""
    from app.report.compute.contention import CONTENDED_SHARE
    from app.stats.validity import LEGEND

    legend = {**LEGEND, "contended": f"a thread of the figure got less than {CONTENDED_SHARE:.0%} of a CPU: another "
                                     "tenant disturbed it, and its bandwidth lost at least the share it did not run"}
    seen = list(dict.fromkeys(names))
    return [fit_line(f"{FLAG_MARK} {name}: {legend.get(name, name)}", width) for name in seen]


def results_table(lines: list[ResultLine], width: int | None = None) -> str:
    """The table the CLI prints at the end of a run: a row per point with its figures and flags (a flagged row:
    FLAG_MARK and the flags' names, beside the figures or under them when the table would be wider than
    ``width``), and what each flag means under it."""
    storage = [r for r in lines if r.kind == Kind.STORAGE]
    memory = [r for r in lines if r.kind == Kind.MEMORY]
    parts = []
    flagged: list[str] = []
    if storage:
        fleet = any(r.host for r in storage)  # a fleet run: a line per point and host
        rows = []
        marks = [flag_names(r) for r in storage]
        for r, names in zip(storage, marks):
            m = r.storage
            lat = m.lat_ns or Latency()
            rows.append([point_label(Kind.STORAGE, r.point)] + ([str(r.host)] if fleet else [])
                        + [format_count(m.iops or 0), f"{(m.bw_bytes or 0) / 1e6:.1f}",
                           f"{(lat.mean or 0) / 1e3:.1f}", f"{(lat.p99 or 0) / 1e3:.1f}",
                           f"{m.usr_cpu or 0:.1f}/{m.sys_cpu or 0:.1f}"] + ([flag_text(names)] if any(marks) else []))
            flagged += names
        head = ["test"] + (["host"] if fleet else []) + ["IOPS", "MB/s", "lat avg µs", "p99 µs", "CPU usr/sys %"]
        numbers = tuple(range(len(head) - 5, len(head)))
        if any(marks):
            head.append("flags")
        parts.append(format_table(head, rows, right=numbers, width=width, spill=[len(head) - 1] if any(marks) else [],
                                  bare=(len(head) - 1,)))
    if any(r.point.get("mode") in SUITE_MODES for r in memory):
        parts.append(suite_table(memory, width))
        flagged += [n for r in memory for n in flag_names(r)]
    elif memory:
        from app.report.compute.contention import contended_text
        from app.report.data.model import MemoryRow

        cells: list[list[object]] = []
        busy = [contended_text(MemoryRow(r.index or 0, r)) for r in memory]  # a thread short of its CPU
        for r, why in zip(memory, busy):
            p, mem = r.point, r.memory
            bw, lat_ns = mem.bandwidth_mbps, mem.latency_ns
            what = p.get("traffic") or "idle"  # only idle and loaded lines here: the suite has its own table
            row: list[object] = [what, p.get("stride"), p.get("delay"), "" if lat_ns is None else f"{lat_ns:.2f}",
                                 "" if bw is None else f"{bw:.1f}"]
            cells.append(row + ([f"{FLAG_MARK} {why}" if why else "clean"] if any(busy) else []))
            flagged += ["contended"] if why else []
        parts.append(format_table(["traffic", "stride", "inject delay", "latency ns", "bandwidth MB/s"]
                                  + (["CPU"] if any(busy) else []), cells, right=(1, 2, 3, 4), width=width))
    legend = flag_legend(flagged, width)
    return "\n\n".join(parts) + ("\n" + "\n".join(legend) if legend else "")


def suite_table(memory: list[ResultLine], width: int | None = None) -> str:
    """The memory lines of a run that measured the suite's modes: each figure's mode, keys and value (and its
    flag: a contended figure)."""
    rows: list[list[object]] = []
    marks = [flag_names(r) for r in memory]
    for r, names in zip(memory, marks):
        m = r.memory
        keys = figure_keys(r.point) if r.point.get("mode") in SUITE_MODES else point_label(Kind.MEMORY, r.point)
        row: list[object] = [r.point.get("mode") or "", keys, "" if m.latency_ns is None else f"{m.latency_ns:.2f}",
                             "" if m.bandwidth_mbps is None else f"{m.bandwidth_mbps:.1f}"]
        rows.append(row + ([flag_text(names)] if any(marks) else []))
    head = ["mode", "figure", "latency ns", "bandwidth MB/s"] + (["flags"] if any(marks) else [])
    return format_table(head, rows, right=(2, 3), width=width, spill=[4] if any(marks) else [], bare=(4,))
