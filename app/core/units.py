"""Parsing and formatting of sizes, durations and lists used by presets and reports, and a setting as a person
reads it (setting_text)."""

from __future__ import annotations

import math
import re
from fractions import Fraction
from typing import Any

# ASCII only: "\d" would also match other scripts' digits, which int()/float() silently accept
_SIZE_RE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kmgtp]?)(i?b?)\s*$", re.IGNORECASE | re.ASCII)
_MULT = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40, "p": 1 << 50}
# longer numbers are refused before conversion (Python refuses int() of > 4300 digits; no size needs 30)
_MAX_DIGITS = 30


def parse_size(value: object) -> int:
    """Bytes from ``4096``, ``"4k"``, ``"4K"``, ``"4KiB"``, ``"1m"``, ``"1.5g"``.

    Suffixes are binary (fio's convention for block sizes).  Raises ValueError.
    """
    if isinstance(value, bool):
        raise ValueError("expected a size such as 4k or 1m")
    if isinstance(value, int):
        if value <= 0:
            raise ValueError("a size must be positive")
        return value
    if isinstance(value, float) and value.is_integer() and value > 0:
        return int(value)
    if not isinstance(value, str):
        raise ValueError("expected a size such as 4k or 1m")
    m = _SIZE_RE.match(value)
    if not m:
        raise ValueError("expected a size such as 4k, 128k or 1m")
    if len(m.group(1)) > _MAX_DIGITS:
        raise ValueError("is too large")
    # exact arithmetic: "1.1k" is 1126.4 bytes (refused), "1.5g" exactly 1610612736
    result = Fraction(m.group(1)) * _MULT[m.group(2).lower()]
    if result <= 0 or result.denominator != 1:
        raise ValueError("a size must be a positive whole number of bytes")
    return int(result)


def format_size(nbytes: int) -> str:
    """``4096`` → ``"4K"``, ``1048576`` → ``"1M"``, ``1536`` → ``"1536"`` (fio-compatible)."""
    for unit, mult in (("G", 1 << 30), ("M", 1 << 20), ("K", 1 << 10)):
        if nbytes >= mult and nbytes % mult == 0:
            return f"{nbytes // mult}{unit}"
    return str(nbytes)


def format_size_human(nbytes: float) -> str:
    """``4096`` → ``"4 KiB"`` for tables."""
    for unit, mult in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if nbytes >= mult and nbytes % mult == 0:
            return f"{int(nbytes // mult)} {unit}"
    return f"{int(nbytes)} B"


def format_bandwidth(bytes_per_s: float) -> str:
    """``4.8e8`` → ``"480 MB/s"``, ``2.5e9`` → ``"2.50 GB/s"`` (decimal units, as drives and links are sold)."""
    if bytes_per_s >= 1e9:
        return f"{bytes_per_s / 1e9:.2f} GB/s"
    if bytes_per_s >= 1e6:
        return f"{bytes_per_s / 1e6:.0f} MB/s"
    return f"{bytes_per_s / 1e3:.0f} kB/s"


def us(ns: float | None, digits: int = 2) -> str:
    """Nanoseconds as microseconds with ``digits`` decimals (the report's latency unit); "n/a" for None."""
    if ns is None:
        return "n/a"
    return f"{ns / 1e3:.{digits}f}"


def size_text(n: Any) -> str:
    """A byte count in binary units for a reader (``25274793984`` → ``"23.5 GiB"``), "unknown" for no number or
    one beyond any real size."""
    try:
        n = float(n) if isinstance(n, (int, float)) and not isinstance(n, bool) else math.nan
    except OverflowError:  # a JSON integer beyond a float
        n = math.nan
    if not math.isfinite(n) or not 0 < n < 1 << 70:  # past 1 ZiB no memory or device exists: junk
        return "unknown"
    for unit, mult in (("TiB", 1 << 40), ("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= mult:
            v = n / mult
            return f"{v:.0f} {unit}" if float(v).is_integer() else f"{v:.1f} {unit}"
    return f"{int(n)} B"


def parse_duration(value: object) -> float:
    """Seconds from ``10``, ``"10"``, ``"10s"``, ``"500ms"``, ``"2m"``.  Raises ValueError."""
    if isinstance(value, bool):
        raise ValueError("expected a duration in seconds")
    if isinstance(value, int):
        if abs(value) > 1 << 53:  # float() of a huge int overflows or rounds
            raise ValueError("is too large")
        seconds = float(value)
    elif isinstance(value, float):
        seconds = value
    elif isinstance(value, str):
        m = re.match(r"^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h)?\s*$", value, re.IGNORECASE | re.ASCII)
        if not m:
            raise ValueError("expected a duration such as 10, 10s or 500ms")
        if len(m.group(1)) > _MAX_DIGITS:
            raise ValueError("is too large")
        unit = (m.group(2) or "s").lower()
        # divide for ms: 1234 / 1000 is the float nearest 1.234, 1234 * 0.001 is not
        seconds = float(m.group(1)) / 1000 if unit == "ms" else float(m.group(1)) * {"s": 1, "m": 60, "h": 3600}[unit]
    else:
        raise ValueError("expected a duration in seconds")
    if not math.isfinite(seconds):
        raise ValueError("a duration must be a finite number of seconds")
    if seconds < 0:
        raise ValueError("a duration cannot be negative")
    return seconds


def format_duration(seconds: float) -> str:
    seconds = max(0, int(round(seconds)))
    h, rest = divmod(seconds, 3600)
    m, s = divmod(rest, 60)
    if h:
        return f"{h}h{m:02d}m{s:02d}s"
    if m:
        return f"{m}m{s:02d}s"
    return f"{s}s"


def format_duration_short(seconds: float) -> str:
    """A duration in at most six characters, for a column: ``45s``, ``12m30s``, ``2h01m``, ``23h32m``,
    ``3d4h`` (rounded to its last unit)."""
    s = max(0, int(round(seconds)))
    if s < 3600:
        return format_duration(s)
    minutes = int(round(s / 60))
    if minutes < 24 * 60:
        h, m = divmod(minutes, 60)
        return f"{h}h{m:02d}m"
    d, h = divmod(int(round(s / 3600)), 24)
    return f"{d}d{h}h"


def format_count(x: float, *, fractions: bool = False) -> str:
    """Counts the way fio prints IOPS: ``133k``, ``22.2k``, ``5513``.  With ``fractions`` (chart tick
    labels) a small value that is not whole keeps three significant digits: ``0.35``, ``2.5``."""
    a = abs(x)
    if a >= 1e6:
        return f"{x / 1e6:.3g}M"
    if a >= 1e4:
        return f"{x / 1e3:.3g}k"
    if fractions and a < 100 and x != int(x):
        return f"{x:.3g}"
    return f"{x:.0f}"


def count_text(n: int, word: str) -> str:
    """"1 warning", "3 warnings": a count and its noun (plural with an s)."""
    return f"{n} {word}{'s' if n != 1 else ''}"


def format_short(x: float, fixed: bool = False) -> str:
    """A number for a figure, in a few characters.

    Axis ticks (default): the shortest form with a k/M suffix, ``2000`` → ``"2k"``, ``1.5e6`` →
    ``"1.5M"``, ``0.5`` → ``"0.5"``, and nothing for zero or less (no tick label on a log axis).
    ``fixed``: a measured value printed in a heatmap cell at a fixed precision by magnitude,
    ``1234`` → ``"1.2k"``, ``456.7`` → ``"457"``, ``56.78`` → ``"56.8"``, ``3.14159`` → ``"3.14"``.
    """
    if fixed:
        if x >= 1000:
            return f"{x / 1000:.1f}k"
        if x >= 100:
            return f"{x:.0f}"
        return f"{x:.1f}" if x >= 10 else f"{x:.2f}"
    if x <= 0:
        return ""
    if x >= 1e6:
        return f"{x / 1e6:g}M"
    if x >= 1e3:
        return f"{x / 1e3:g}k"
    return f"{x:g}"


def format_us(us: object) -> str:
    """Microseconds as a latency bound reads: 500 µs, 1 ms, 2.5 s ("?" when not a number)."""
    if not isinstance(us, (int, float)) or isinstance(us, bool):
        return "?"
    if us >= 1_000_000:
        return f"{us / 1e6:g} s"
    if us >= 1000:
        return f"{us / 1000:g} ms"
    return f"{us:g} µs"


SIZE_KEYS = ("bs", "size", "buffer")  # shown as 4K, 1G …


def setting_text(key: str, value: Any) -> str:
    """A setting as a person reads it: sizes with a unit, booleans 1/0, no value "-"."""
    if value is None:
        return "-"
    if key in SIZE_KEYS and isinstance(value, int) and not isinstance(value, bool):
        return format_size(value)
    if isinstance(value, bool):
        return "1" if value else "0"
    if key == "latency_bound":
        return format_us(value).replace(" ", "")
    return str(value)


# --- the TUI's units toggle: bandwidths in decimal (MB/s, 10^6 B/s) or binary (MiB/s, 2^20 B/s) units -------------
# Figures are kept in MB/s (fio's bw_bytes / 1e6, MLC's MB/s); only their display changes.
MIB_PER_MB = 1e6 / (1 << 20)


def rate_unit(binary: bool) -> str:
    return "MiB/s" if binary else "MB/s"


def rate_value(mb_per_s: float, binary: bool) -> float:
    """A bandwidth in MB/s in the unit of :func:`rate_unit`."""
    return mb_per_s * MIB_PER_MB if binary else mb_per_s


def rate_text(mb_per_s: float, binary: bool = False, digits: int = 1) -> str:
    """``480.0`` MB/s → ``"480.0 MB/s"``, or ``"457.8 MiB/s"`` in binary units."""
    return f"{rate_value(mb_per_s, binary):.{digits}f} {rate_unit(binary)}"
