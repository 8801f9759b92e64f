"""The 95 % interval of each figure of a point as the report, results.csv and the TUI show it.

A results line written since the tool computes intervals carries them (``metrics.ci95``, app.uncertainty); an
older line has none, so its interval is computed here from the per-second samples it kept (raw/…samples.jsonl)
by the same method, and older runs show ± too.  A line with neither (an imported fio JSON, a memory line of an
older run) shows no ±, and the report says why once (:func:`missing_note`).

Shown as ``centre ± half-width`` (:func:`pm_count`, :func:`pm_fixed`, given the interval itself): the figure
printed with ± is always the centre of its interval, so every figure shown with an interval lies inside it.  A
line's own figure (fio's whole-run IOPS, the engine's whole-window latency) counts the warm-up seconds MSER-5
left out of the interval; it stays available, labelled "whole run" (:func:`whole_run_cells`).  The half-width
is given to two significant digits and the centre at that precision (never fewer digits than the figure has
without an interval).
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Callable, Sequence

from app.records import JSONObject, interval_problem
from app.report.model import MemoryRow, StorageRow
from app.report.noise import samples_of
from app.uncertainty import intervals_of, level_shift, storage_series

Pair = tuple[float, float]
STORAGE_FIGURES = ("iops", "bw_bytes", "lat_mean_ns")
HEADLINE = "iops"  # a storage point's headline figure: the one the report's notes on missing intervals are about
MEMORY_FIGURES = ("latency_ns", "bandwidth_mbps")
NO_SAMPLES = "the line records no interval and kept no per-second samples"
NO_WINDOWS = "the line records no interval (the engine's windows were not kept)"


def storage_intervals(run_dir: Path | None, row: StorageRow) -> dict[str, Pair]:
    """The 95 % interval of each figure of ``row`` that has one: the line's own ``ci95``, or, for a line
    written before the tool recorded intervals (no ``ci_method``), computed from its kept samples.  An interval
    that is no interval of its figure (:func:`app.records.interval_problem`) is left out (:func:`refused_note`)."""
    if row.computed_ci is None:
        row.computed_ci = _storage_intervals(run_dir, row)
    return row.computed_ci[0]


def _storage_intervals(run_dir: Path | None, row: StorageRow) -> tuple[dict[str, Pair], str, dict[str, str]]:
    m = row.metrics
    if m.ci95 is not None or m.ci_method is not None or run_dir is None:
        got = {k: m.interval_or_why(k) for k in STORAGE_FIGURES}
        refused = {k: why for k, why in got.items() if isinstance(why, str)}
        refused.update(_shifted(run_dir, row, [k for k, iv in got.items() if iv is not None]))
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
    figures with a recorded interval whose kept samples show one (app.uncertainty.level_shift): figure → why that
    interval is not used.  A line written since was tested when it was written."""
    method = row.metrics.ci_method
    if not figures or run_dir is None or (method is not None and "level_shift" in method):
        return {}
    series = storage_series(samples_of(run_dir, row))
    return {k: f"from its samples: {shift.reason()}" for k in figures
            if (shift := level_shift(series.get(k) or [])) is not None}


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


def refused_note(rows: Sequence[StorageRow | MemoryRow]) -> list[str]:
    """One sentence (with a blank line) naming the intervals a line records (or its samples give) that are no
    interval of their figure, so that figure shows no ±; [] when there are none.  Call it after the rows'
    intervals were looked up (:func:`storage_intervals`)."""
    found: list[str] = []
    for r in rows:
        if isinstance(r, StorageRow):
            refused = r.computed_ci[2] if r.computed_ci is not None else {}
        else:
            refused = {k: why for k in MEMORY_FIGURES if isinstance(why := r.metrics.interval_or_why(k), str)}
        found += [f"point {r.index} {FIGURE_NAMES[k]}: {why}" for k, why in refused.items()]
    if not found:
        return []
    from app.sanitize import md_text

    shown = [md_text(x, 200) for x in found[:3]]
    return ["Not used, as no interval of its figure (docs/uncertainty.md): " + "; ".join(shown)
            + (f" and {len(found) - 3} more" if len(found) > 3 else "") + ".", ""]


def missing_note(rows: Sequence[StorageRow | MemoryRow], shown: Sequence[bool]) -> list[str]:
    """One sentence (with a blank line) for the points that show no ±, with the reasons, once per report; []
    when every point shows one.  ``shown``: whether each row has an interval of its headline figure."""
    missing = [r for r, s in zip(rows, shown) if not s]
    if not missing:
        return []
    from app.sanitize import md_text

    reasons = list(dict.fromkeys(md_text(why_none(r), 200) for r in missing))
    n = len(missing)
    head = "No point has a" if n == len(rows) else f"{n} point{'s have' if n != 1 else ' has'} no"
    return [f"{head} 95 % interval (shown without ±): " + "; ".join(reasons[:3])
            + (" …" if len(reasons) > 3 else "") + ".", ""]


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
    """How :func:`app.units.format_count` scales ``x``: divisor, suffix and its decimals (3 significant digits)."""
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
        from app.units import format_count

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
