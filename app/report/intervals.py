"""The 95 % interval of each figure of a point as the report, results.csv and the TUI show it.

A results line written since the tool computes intervals carries them (``metrics.ci95``, app.uncertainty); an
older line has none, so its interval is computed here from the per-second samples it kept (raw/…samples.jsonl)
by the same method, and older runs show ± too.  A line with neither (an imported fio JSON, a memory line of an
older run) shows no ±, and the report says why once (:func:`missing_note`).

Shown as ``value ± half-width`` (:func:`pm_count`, :func:`pm_fixed`): the half-width to two significant digits
and the value at that precision (never fewer digits than it has without an interval).
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
               if (why := interval_problem(figures[k], iv.low, iv.high)) is not None}
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
    head = "No point has" if n == len(rows) else f"{n} point{'s have' if n != 1 else ' has'}"
    return [f"{head} a 95 % interval (no ±): " + "; ".join(reasons[:3]) + (" …" if len(reasons) > 3 else "") + ".",
            ""]


def interval_note() -> str:
    return ("± is the 95 % confidence interval of the figure's mean over the point's per-second samples (batch "
            "means after the warm-up, docs/uncertainty.md): how precisely this run knows it, not how much another "
            "run may differ.")


# --- formatting -----------------------------------------------------------------------------------------------


def _decimals(half: float, native: int) -> int:
    """Decimals that show ``half`` to two significant digits, at least ``native`` (what the value shows alone)."""
    if half <= 0 or not math.isfinite(half):
        return native
    return max(native, 1 - math.floor(math.log10(half)))


def pm_fixed(value: float, half: float | None, native: int, cap: int = 3) -> str:
    """``value ± half`` with the decimals :func:`_decimals` picks (at most ``cap``); ``value`` alone (at
    ``native`` decimals) when ``half`` is None."""
    if half is None:
        return f"{value:.{native}f}"
    d = min(_decimals(half, native), max(cap, native))
    return f"{value:.{d}f} ± {half:.{d}f}"


def _count_unit(x: float) -> tuple[float, str, int]:
    """How :func:`app.units.format_count` scales ``x``: divisor, suffix and its decimals (3 significant digits)."""
    a = abs(x)
    if a >= 1e6:
        return 1e6, "M", max(0, 2 - math.floor(math.log10(a / 1e6)))
    if a >= 1e4:
        return 1e3, "k", max(0, 2 - math.floor(math.log10(a / 1e3)))
    return 1.0, "", 0


def pm_count(value: float, half: float | None, plain: Callable[[float], str] | None = None) -> str:
    """A count (IOPS) as ``format_count`` prints it, with ``± half`` in the same unit: ``123.5k ± 1.2k``."""
    if half is None:
        from app.units import format_count

        return (plain or format_count)(value)
    div, suffix, native = _count_unit(value)
    d = min(_decimals(half / div, native), 2 if suffix else 1)
    return f"{value / div:.{d}f}{suffix} ± {half / div:.{d}f}{suffix}"


def half(iv: Pair | None, scale: float = 1.0) -> float | None:
    """The half-width of an interval in the unit ``1/scale`` of the figure (None for no interval)."""
    return None if iv is None else (iv[1] - iv[0]) / 2 / scale


def rel_pct(iv: Pair | None, value: float) -> float | None:
    """The half-width as a per cent of ``value`` (None without interval or value)."""
    h = half(iv)
    return None if h is None or not value else 100 * h / abs(value)
