"""The 95 % interval of each figure of a point as the report, results.csv and the TUI show it.

A results line written since the tool computes intervals carries them (``metrics.ci95``, app.stats.uncertainty); an
older line has none, so its interval is computed here from the per-second samples it kept (raw/…samples.jsonl)
by the same method, and older runs show ± too.  A line with neither (an imported fio JSON, a memory line of an
older run) shows no ±, and the report says why once (:func:`unshown_note`).

Shown as ``centre ± half-width`` (:func:`pm_count`, :func:`pm_fixed`, given the interval itself): the figure
printed with ± is always the centre of its interval, so every figure shown with an interval lies inside it.  A
line's own figure (fio's whole-run IOPS, the engine's whole-window latency) counts the warm-up seconds MSER-5
left out of the interval; it stays available, labelled "whole run" (:func:`whole_run_cells`).  The half-width
is given to two significant digits and the centre at that precision (never fewer digits than the figure has
without an interval).
"""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Callable, Sequence

from app.model.records import JSONObject, interval_problem, number
from app.report.compute.noise import samples_of
from app.report.data.model import MemoryRow, StorageRow
from app.stats.uncertainty import intervals_of, level_shift, storage_series
from app.stats.validity import shifts_found

Pair = tuple[float, float]
STORAGE_FIGURES = ("iops", "bw_bytes", "lat_mean_ns")
HEADLINE = "iops"  # a storage point's headline figure: the one the report's notes on missing intervals are about
MEMORY_FIGURES = ("latency_ns", "bandwidth_mbps")
NO_SAMPLES = "the line records no interval and kept no per-second samples"
NO_WINDOWS = "the line records no interval (the engine's windows were not kept)"


def storage_intervals(run_dir: Path | None, row: StorageRow) -> dict[str, Pair]:
    """The 95 % interval of each figure of ``row`` that has one: the line's own ``ci95``, or, for a line
    written before the tool recorded intervals (no ``ci_method``), computed from its kept samples.  An interval
    that is no interval of its figure (:func:`app.model.records.interval_problem`) is left out
    (:func:`unshown_note`)."""
    if row.computed_ci is None:
        row.computed_ci = _storage_intervals(run_dir, row)
    return row.computed_ci[0]


def _storage_intervals(run_dir: Path | None, row: StorageRow) -> tuple[dict[str, Pair], str, dict[str, str]]:
    m = row.metrics
    if m.ci95 is not None or m.ci_method is not None or run_dir is None:
        got = {k: m.interval_or_why(k) for k in STORAGE_FIGURES}
        refused = {k: why for k, why in got.items() if isinstance(why, str)}
        refused.update(_shifted(run_dir, row, [k for k, iv in got.items() if iv is not None]))
        refused.update(_stepped(row, [k for k, iv in got.items() if isinstance(iv, tuple) and k not in refused]))
        return ({k: iv for k, iv in got.items() if isinstance(iv, tuple) and k not in refused},
                refused.get(HEADLINE) or _recorded_reason(m.ci_method), refused)
    samples = samples_of(run_dir, row)
    if not samples:
        return {}, NO_SAMPLES, {}
    u = intervals_of(storage_series(samples))
    method = u.ci_method
    figures = {"iops": m.iops, "bw_bytes": m.bw_bytes, "lat_mean_ns": m.lat_ns.mean if m.lat_ns else None}
    refused = {k: f"from its samples: {why}" for k, iv in u.intervals.items()
               if (why := interval_problem(figures[k], iv.low, iv.high, k)) is not None}
    why = refused.get(HEADLINE) or u.reasons.get(HEADLINE) or str(method.get("reason") or NO_SAMPLES)
    return {k: (iv.low, iv.high) for k, iv in u.intervals.items() if k not in refused}, why, refused


def _shifted(run_dir: Path | None, row: StorageRow, figures: list[str]) -> dict[str, str]:
    """Of a line recorded before the tool tested for a level shift (its ``ci_method`` names no test), the
    figures with a recorded interval whose kept samples show one (app.stats.uncertainty.level_shift): figure → why that
    interval is not used.  A line written since was tested when it was written."""
    method = row.metrics.ci_method
    if not figures or run_dir is None or (method is not None and "level_shift" in method):
        return {}
    series = storage_series(samples_of(run_dir, row))
    return {k: f"from its samples: {shift.reason()}" for k in figures
            if (shift := level_shift(series.get(k) or [])) is not None}


def _stepped(row: StorageRow, figures: list[str]) -> dict[str, str]:
    """Of a point whose line records a level shift in one of its figures, the other figures' intervals: refused
    too (figure → why).  At a fixed queue depth IOPS, bandwidth and mean latency are one process seen three ways
    (Little's law ties IOPS to N / latency), so a step in one is a step in all, whether or not the test saw it
    in each: no figure of the point has a stationary mean to give an interval of."""
    found = shifts_found(row.metrics.ci_method)
    if not found:
        return {}
    names = ", ".join(FIGURE_NAMES.get(k, k) for k in found if isinstance(k, str))
    return {k: f"a level shift of the point's {names}" for k in figures}


def _recorded_reason(method: JSONObject | None) -> str:
    """Why a line records no interval: the reason its ``ci_method`` gives, else that it kept nothing."""
    reason = method.get("reason") if method is not None else None
    if not (isinstance(reason, str) and reason) and method is not None:
        series = method.get("series")
        iops = series.get("iops") if isinstance(series, dict) else None
        reason = iops.get("reason") if isinstance(iops, dict) else None
    return reason if isinstance(reason, str) and reason else NO_SAMPLES


def memory_intervals(row: MemoryRow) -> dict[str, Pair]:
    """The 95 % interval of each figure of a memory line that records one (memory lines keep no samples)."""
    return {k: iv for k in MEMORY_FIGURES if (iv := row.metrics.interval(k)) is not None}


def memory_headline(row: MemoryRow) -> str:
    """A memory point's headline figure: its latency, else its bandwidth."""
    return "latency_ns" if row.metrics.latency_ns is not None else "bandwidth_mbps"


def why_none(row: StorageRow | MemoryRow) -> str:
    """Why a line shows no interval of its headline figure, one clause."""
    if isinstance(row, StorageRow):
        return row.computed_ci[1] if row.computed_ci is not None else _recorded_reason(row.metrics.ci_method)
    got = row.metrics.interval_or_why(memory_headline(row))
    if isinstance(got, str):  # what the line records is no interval of the figure
        return got
    method = row.metrics.ci_method
    return _recorded_reason(method) if method is not None else NO_WINDOWS


FIGURE_NAMES = {"iops": "IOPS", "bw_bytes": "MB/s", "lat_mean_ns": "mean latency", "latency_ns": "latency",
                "bandwidth_mbps": "bandwidth"}
# how the report prints each figure: divisor from the line's unit, the unit's name, decimals
SHOWN_UNITS: dict[str, tuple[float, str, int]] = {
    "iops": (1.0, "IOPS", 0), "bw_bytes": (1e6, "MB/s", 1), "lat_mean_ns": (1e3, "µs", 2),
    "latency_ns": (1.0, "ns", 2), "bandwidth_mbps": (1.0, "MB/s", 1)}
NAMES_SHOWN = 8  # points named per reason before "and N more"


def _own_reason(r: StorageRow | MemoryRow, key: str) -> str | None:
    """Why the line's interval record gives ``key`` no interval, as its ``ci_method`` says for that figure."""
    method = r.metrics.ci_method
    series = method.get("series") if method is not None else None
    own = series.get(key) if isinstance(series, dict) else None
    reason = own.get("reason") if isinstance(own, dict) else None
    return reason if isinstance(reason, str) and reason else None


def _unshown(r: StorageRow | MemoryRow) -> dict[str, str]:
    """Figure → why it shows no ±, for each figure of ``r`` whose line has no interval of it (the reasons as
    the line records them, or as its samples give them)."""
    if isinstance(r, StorageRow):
        ivs, why, refused = r.computed_ci if r.computed_ci is not None else ({}, NO_SAMPLES, {})
        figures = [k for k in STORAGE_FIGURES if k not in ivs and not (k == "lat_mean_ns" and r.lat_mean is None)]
        return {k: refused.get(k) or _own_reason(r, k) or why for k in figures}
    out = {}
    for k in MEMORY_FIGURES:
        if {"latency_ns": r.latency, "bandwidth_mbps": r.bandwidth}[k] is None:
            continue
        got = r.metrics.interval_or_why(k)
        if isinstance(got, str):
            out[k] = got
        elif got is None:
            out[k] = _own_reason(r, k) or why_none(r)
    return out


def _kind(reason: str) -> str:
    """What a reason says, without its figures: the clause the report groups points by."""
    text = reason.removeprefix("from its samples: ")
    text = re.sub(r"^its interval \[[^\]]*\]", "its interval", text)
    if text.startswith("a level shift"):
        return "a level shift"
    if text.startswith("its interval is centred at"):
        return "its interval is centred far above the whole-run figure, which no warm-up cut allows"
    head = text.split(":", 1)[0] if ":" in text else text
    return head.strip()


def _detail(reason: str) -> str:
    """What a reason adds to its kind (its counts), '' when nothing worth repeating: an interval's bounds are in
    the line's units, not the table's, and a level shift's levels are stated from the line (:func:`_levels`)."""
    text = reason.removeprefix("from its samples: ")
    if text.startswith("a level shift from sample"):  # a line recorded before the test: its levels are only here
        return reason
    if text.startswith(("its interval", "a level shift")) or ":" not in text:
        return ""
    return text.split(":", 1)[1].strip()


KIND_WORDS = {"its interval reaches 0": "the interval reaches 0: its half-width is as large as its centre, so within "
                                        "this run the figure is too noisy to bound its mean"}


def _levels(r: StorageRow | MemoryRow) -> str | None:
    """Both levels of each figure of ``r`` that stepped, in the report's units, and when the step came."""
    method = r.metrics.ci_method
    found = shifts_found(method)
    if found is None:
        return None
    sample_s = method.get("sample_s") if method is not None else None
    if isinstance(r, StorageRow) and not isinstance(sample_s, (int, float)):
        sample_s = 1.0  # a storage line without it kept whole-second samples
    step = float(sample_s) if isinstance(sample_s, (int, float)) and 0 < sample_s <= 60 else None
    parts = []
    for k, s in found.items():
        if k not in SHOWN_UNITS or not isinstance(s, dict):
            continue
        before, after, at = number(s.get("before")), number(s.get("after")), number(s.get("at"))
        if before is None or after is None or at is None:
            continue
        div, unit, d = SHOWN_UNITS[k]
        change = f" ({after / before - 1:+.1%})" if before else ""
        when = (f"for the first {at * step:g} s of the measured samples" if step is not None
                else f"before window {int(at) + 1} of the kept ones")
        parts.append(f"{FIGURE_NAMES[k]} {before / div:,.{d}f} {unit} {when}, "
                     f"{after / div:,.{d}f} {unit} after{change}")
    return "; ".join(parts) or None


def unshown_note(rows: Sequence[StorageRow | MemoryRow], name: Callable[[StorageRow | MemoryRow], str]) -> list[str]:
    """Under a table: every figure shown without ±, named by its point (``name``) and grouped by why it has no
    interval; a level shift with both levels.  [] when every figure has its ±.  Call it after the rows'
    intervals were looked up (:func:`storage_intervals`)."""
    from app.core.sanitize import md_text

    groups: dict[str, list[tuple[str, list[str], str]]] = {}
    for r in rows:
        by_kind: dict[str, tuple[list[str], str]] = {}
        for k, why in _unshown(r).items():
            figs, detail = by_kind.setdefault(_kind(why), ([], _detail(why)))
            figs.append(FIGURE_NAMES[k])
        for kind, (figs, detail) in by_kind.items():
            if kind == "a level shift" or (isinstance(r, StorageRow) and r.computed_ci is not None
                                           and any("level shift" in w for w in r.computed_ci[2].values())):
                kind, detail = "a level shift", _levels(r) or detail
            groups.setdefault(kind, []).append((name(r), figs, detail))
    if not groups:
        return []
    if not any(memory_intervals(r) if isinstance(r, MemoryRow) else (r.computed_ci or ({},))[0] for r in rows):
        kinds = [md_text(KIND_WORDS.get(k, k), 600) + (f" ({md_text(e[0][2], 600)})" if e[0][2] else "")
                 for k, e in groups.items()]
        head = "No point has a" if len(rows) > 1 else "The point has no"
        return [f"{head} 95 % interval (shown without ±): " + "; ".join(kinds) + ".", ""]
    out = ["Shown without ± (no 95 % interval of the figure's mean, docs/uncertainty.md):", ""]
    for kind, entries in groups.items():
        named = []
        for who, figs, detail in entries[:NAMES_SHOWN]:
            text = f"{who} ({', '.join(dict.fromkeys(figs))})"
            if kind == "a level shift" and detail:
                text += f": {detail}"
            named.append(md_text(text, 600))
        more = f"; and {len(entries) - NAMES_SHOWN} more" if len(entries) > NAMES_SHOWN else ""
        example = ""
        if kind != "a level shift" and entries[0][2]:
            example = f" (the first: {md_text(entries[0][2], 600)})"
        what = ("a level shift: the samples stepped from one level to another, so neither the mean nor an interval "
                "of it describes the point (at a storage point, every figure goes without ±: they are one process)"
                if kind == "a level shift" else md_text(KIND_WORDS.get(kind, kind), 600))
        n = len(entries)
        out.append(f"- {what}{example} — {n} point{'s' if n != 1 else ''}: " + "; ".join(named) + more + ".")
    return out + [""]


WITHIN_RUN = "within this run"  # what a single run's interval covers, wherever it is shown


def interval_note() -> str:
    return ("± is the 95 % confidence interval, within this run, of the figure's mean over the point's per-second "
            "samples (batch means after the warm-up, docs/uncertainty.md), and the figure before it is that "
            "interval's centre: how precisely this run knows it, not how much another run may differ (only "
            "replicates measure that).")


def whole_run_note(what: str = "fio's figure over all of the point's measured seconds") -> str:
    """What the "whole run" figures beside the centred ones are."""
    return (f"Whole run: {what}, warm-up included; the figure with ± is the mean past the warm-up MSER-5 found, "
            "so the two differ where the first seconds were slower or faster than the rest.")


# --- formatting -----------------------------------------------------------------------------------------------


def _decimals(half: float, native: int) -> int:
    """Decimals that show ``half`` to two significant digits, at least ``native`` (what the value shows alone)."""
    if half <= 0 or not math.isfinite(half):
        return native
    return max(native, 1 - math.floor(math.log10(half)))


def centre(iv: Pair) -> float:
    """The centre of an interval: the figure shown with its ±."""
    return (iv[0] + iv[1]) / 2


def shown(value: float, iv: Pair | None, scale: float = 1.0) -> tuple[float, float | None]:
    """The figure shown and its half-width, in the unit ``1/scale`` of the figure: the interval's centre and
    half-width when there is one, else ``value`` alone.  Every figure printed with ± comes from here."""
    if iv is None:
        return value / scale, None
    return centre(iv) / scale, (iv[1] - iv[0]) / 2 / scale


def whole_run_differs(value: float | None, iv: Pair | None) -> bool:
    """Whether a line's own (whole-run) figure lies outside its interval: the warm-up left out of the interval
    moved it, and the whole-run figure is shown beside the centre, labelled.  (Inside it, the two say the same
    within the interval; results.csv keeps it either way.)"""
    return value is not None and iv is not None and not iv[0] <= value <= iv[1]


WHOLE_RUN = "Whole run"  # the column of the lines' own figures, where one differs from its centre shown


def whole_run_cells(figures: Sequence[Sequence[tuple[float | None, Pair | None, Callable[[float], str]]]]
                    ) -> list[str] | None:
    """Per row, its own figures (value, interval, how the table prints it) as one cell, " · " between them, when
    some row's own figure lies outside its interval (:func:`whole_run_differs`; None: no row's does, no column);
    a figure without a value "—"."""
    if not any(whole_run_differs(v, iv) for row in figures for v, iv, _ in row):
        return None
    return [" · ".join("—" if v is None else text(v) for v, _, text in row) for row in figures]


# the decimals Intel MLC prints each figure with, where fewer than the report's own: its idle latency
# ("( 80.9    ns)"); its loaded latencies have two, its bandwidths one, as the report prints them
MLC_DECIMALS = {("idle", "latency_ns"): 1}


def source_decimals(row: MemoryRow, key: str, native: int) -> int:
    """The decimals to print a memory figure without an interval with: ``native``, or fewer where its source
    printed fewer (an MLC idle latency, 80.9, is not printed 80.90: no digit the source did not give)."""
    if row.engine == "mlc":
        return min(native, MLC_DECIMALS.get((row.mode, key), native))
    return native


def pm_fixed(value: float, iv: Pair | None, native: int, cap: int = 3, scale: float = 1.0) -> str:
    """The centre of ``iv`` ± its half-width, in the unit ``1/scale``, with the decimals :func:`_decimals` picks
    (at most ``cap``); ``value`` alone (at ``native`` decimals) when there is no interval."""
    v, h = shown(value, iv, scale)
    if h is None:
        return f"{v:.{native}f}"
    d = min(_decimals(h, native), max(cap, native))
    return f"{v:.{d}f} ± {h:.{d}f}"


def _count_unit(x: float) -> tuple[float, str, int]:
    """How :func:`app.core.units.format_count` scales ``x``: divisor, suffix and its decimals (3 significant digits)."""
    a = abs(x)
    if a >= 1e6:
        return 1e6, "M", max(0, 2 - math.floor(math.log10(a / 1e6)))
    if a >= 1e4:
        return 1e3, "k", max(0, 2 - math.floor(math.log10(a / 1e3)))
    return 1.0, "", 0


def pm_count(value: float, iv: Pair | None, plain: Callable[[float], str] | None = None) -> str:
    """A count (IOPS) as ``format_count`` prints it: the centre of ``iv`` with ``± half-width`` in the same unit
    (``123.5k ± 1.2k``); ``value`` alone when there is no interval."""
    c, h = shown(value, iv)
    if h is None:
        from app.core.units import format_count

        return (plain or format_count)(c)
    div, suffix, native = _count_unit(c)
    d = min(_decimals(h / div, native), 2 if suffix else 1)
    return f"{c / div:.{d}f}{suffix} ± {h / div:.{d}f}{suffix}"


def half(iv: Pair | None, scale: float = 1.0) -> float | None:
    """The half-width of an interval in the unit ``1/scale`` of the figure (None for no interval)."""
    return None if iv is None else (iv[1] - iv[0]) / 2 / scale


def rel_pct(iv: Pair | None) -> float | None:
    """The half-width as a per cent of the interval's centre (None without interval or a centre of 0)."""
    if iv is None or not centre(iv):
        return None
    return 100 * (iv[1] - iv[0]) / 2 / abs(centre(iv))
