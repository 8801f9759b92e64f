"""Parsing and formatting of sizes, durations and lists used by presets and reports."""

from __future__ import annotations

import re

_SIZE_RE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kmgtp]?)(i?b?)\s*$", re.IGNORECASE)
_MULT = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40, "p": 1 << 50}


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
    number, unit = float(m.group(1)), m.group(2).lower()
    result = number * _MULT[unit]
    if result <= 0 or not float(result).is_integer():
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


def parse_duration(value: object) -> float:
    """Seconds from ``10``, ``"10"``, ``"10s"``, ``"500ms"``, ``"2m"``.  Raises ValueError."""
    if isinstance(value, bool):
        raise ValueError("expected a duration in seconds")
    if isinstance(value, (int, float)):
        seconds = float(value)
    elif isinstance(value, str):
        m = re.match(r"^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h)?\s*$", value, re.IGNORECASE)
        if not m:
            raise ValueError("expected a duration such as 10, 10s or 500ms")
        seconds = float(m.group(1)) * {"ms": 0.001, "s": 1, "m": 60, "h": 3600, None: 1}[
            m.group(2).lower() if m.group(2) else None
        ]
    else:
        raise ValueError("expected a duration in seconds")
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


def format_count(x: float) -> str:
    """IOPS the way fio prints them: ``133k``, ``22.2k``, ``5513``."""
    if x >= 1e6:
        return f"{x / 1e6:.3g}M"
    if x >= 1e4:
        return f"{x / 1e3:.3g}k"
    return f"{x:.0f}"
