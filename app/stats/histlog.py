"""fio's completion-latency histogram log (``write_hist_log=NAME``, ``log_hist_msec=N``: NAME_clat_hist.J.log) read
as per-interval histograms (app.stats.latmap), for ``import``.

Each line is ``msec, direction, bs, c₀, c₁, …``: the time (ms since the job started), the direction (0 read,
1 write, 2 trim), the block size and the I/Os that completed in the interval in each of fio's latency buckets
(1,856 of them, or fewer summed in runs of 2^``log_hist_coarseness``).  Bucket ``i`` holds latencies around
fio's ``plat_idx_to_val(i)`` ns (:func:`bucket_value`), the same values as the json+ ``bins``.  An interval has
a line per direction that completed I/O in it; a direction seen again starts the next interval.

The file is untrusted: every field must be a whole number (0 to 2^63), the direction 0–2, the buckets as many
as fio writes (1,856 divided by a power of two) and the times not going back; any fault is a FormatError naming
the line.
"""

from __future__ import annotations

import re
from typing import Iterable

from app.core.sanitize import show_value
from app.model.tails import MAX_COUNT
from app.stats.latmap import DIRECTIONS, encode

PLAT_BITS = 6
PLAT_VAL = 1 << PLAT_BITS
PLAT_NR = 29 * PLAT_VAL  # fio's FIO_IO_U_PLAT_NR: 1,856 buckets
MAX_LINES = 1_000_000  # lines of one log (a day of read and write intervals a second is 172,800)
LINE = re.compile(r"^\s*\d+\s*,\s*\d+\s*,\s*\d+\s*,\s*\S+\s*,")


class FormatError(ValueError):
    pass


def bucket_value(idx: int) -> int:
    """fio's plat_idx_to_val: the latency (ns) bucket ``idx`` stands for."""
    if idx < (PLAT_VAL << 1):
        return idx
    error_bits = (idx >> PLAT_BITS) - 1
    base = 1 << (error_bits + PLAT_BITS)
    k = idx % PLAT_VAL
    return int(base + (k + 0.5) * (1 << error_bits))


def looks_like(first_line: str) -> bool:
    """Whether a file's first line is a histogram log's."""
    return bool(LINE.match(first_line)) and first_line.count(",") >= 8


def read_log(lines: Iterable[str]) -> tuple[list[dict[str, object]], dict[str, int]]:
    """The log's intervals as histograms-file lines (app.stats.latmap: ``t``, ``interval_s`` and a record per
    direction), and the block size each direction logged."""
    out: list[dict[str, object]] = []
    current: dict[str, dict[int, int]] = {}
    end_ms = last_ms = start_ms = 0
    sizes: dict[str, int] = {}

    def close() -> None:
        nonlocal start_ms
        if current:
            line: dict[str, object] = {"t": end_ms / 1000, "interval_s": max(end_ms - start_ms, 1) / 1000}
            line.update({d: encode(b) for d, b in current.items() if b})
            if len(line) > 2:
                out.append(line)
            current.clear()
            start_ms = end_ms

    for n, text in enumerate(lines, 1):
        if n > MAX_LINES:
            raise FormatError(f"more than {MAX_LINES:,} lines, more than a histogram log of a day")
        if not text.strip():
            continue
        fields = text.split(",")
        nums = []
        for k, f in enumerate(fields, 1):
            try:
                x = int(f)
            except ValueError:
                raise FormatError(f"line {n}, field {k}: {show_value(f.strip())} is not a whole number") from None
            if x < 0 or x > MAX_COUNT:
                raise FormatError(f"line {n}, field {k}: {show_value(x)} is outside 0 to 2^63")
            nums.append(x)
        msec, ddir, bs, counts = nums[0], nums[1], nums[2], nums[3:]
        if ddir > 2:
            raise FormatError(f"line {n}: direction {ddir} is not 0 (read), 1 (write) or 2 (trim)")
        if not counts or PLAT_NR % len(counts) or (PLAT_NR // len(counts)) & (PLAT_NR // len(counts) - 1):
            raise FormatError(f"line {n}: {len(counts)} buckets, not fio's {PLAT_NR} or that divided by a power of two")
        if msec < last_ms:
            raise FormatError(f"line {n}: time {msec} ms goes back from {last_ms} ms")
        last_ms = msec
        d = DIRECTIONS[ddir]
        if d in current:
            close()
        stride = PLAT_NR // len(counts)
        bins = current.setdefault(d, {})
        for j, c in enumerate(counts):
            if c:
                v = bucket_value(j * stride + stride // 2)
                bins[v] = bins.get(v, 0) + c
        sizes.setdefault(d, bs)
        end_ms = msec
    close()
    return out, sizes
