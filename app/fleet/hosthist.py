"""Each fleet host's per-second latency histograms, from the status dumps its agent sends through fio's client.

An agent runs fio's server with ``--status-interval`` of a second (app.fleet.agent), so fio's server sends each of
its jobs' cumulative figures once a second besides the point's final ones, and fio's client lists every one of
them in its JSON document's ``client_stats``, in the order they came: a host's entries are its cumulative json+
dumps, the last the point's result.  The difference of two consecutive entries of a host is the histogram of the
I/Os it completed in between — exactly as the local runner differences fio's status dumps: the same code
(app.runners.fio_parse.SampleTracker, app.latmap) makes a host's histograms file ``raw/NNNN-JOB@HOST.hist.jsonl``.

The entries are untrusted: the host's fio server sends them, and a host is another machine.  fio's client writes
the document itself, so a host decides only the values in it, not its shape; each of them is checked before it is
used.  A host's histograms are kept only when every one of its entries is sound — each direction's ``lat_ns.bins``
an object of at most app.tails.MAX_BINS buckets named by whole numbers of nanoseconds, each count and each
figure the difference reads a whole number from 0 to 2^63 (no NaN, no fraction, no string) — and when it sent
no more entries than one a second of the point's time plus :data:`SPARE_DUMPS`.  Otherwise none are kept, and
:func:`host_hist_lines` says why in one sentence.  A host whose agent sends no status dumps (one entry: an agent of
an older profiler-tui) has no per-second histograms.
"""

from __future__ import annotations

import math
from typing import Any, Mapping, Sequence

from app.latmap import DIRECTIONS, HIST_KEY, hist_line
from app.runners.fio_parse import SampleTracker
from app.sanitize import show_value
from app.tails import MAX_BINS, MAX_COUNT

ALL_CLIENTS = "All clients"
SPARE_DUMPS = 10  # entries a host may send beyond one a second of the point's time (its start, its end)
NUMBERS = ("total_ios", "io_bytes", "runtime")  # a direction's figures the difference reads besides the bins
LAT_NUMBERS = ("N",)


def host_entries(doc: Mapping[str, Any], address: tuple[str, int | None]) -> list[dict[str, Any]]:
    """Every ``client_stats`` entry of the host fio reached at ``address`` (hostname, port; a socket's path and
    None), in the order fio's client listed them: its status dumps, then its result."""
    stats = doc.get("client_stats")
    if not isinstance(stats, list):
        return []
    return [e for e in stats if isinstance(e, dict) and e.get("jobname") != ALL_CLIENTS
            and e.get("hostname") == address[0] and (address[1] is None or e.get("port") == address[1])]


def final_entries(doc: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The document's entries without the hosts' status dumps: each host's last (its result), and fio's
    "All clients" sum only when no host sent a dump before its result (fio's client sums the first entry of each
    host, which is then a dump of the first second, not the point)."""
    stats = doc.get("client_stats")
    if not isinstance(stats, list):
        return []
    last: dict[tuple[object, object], int] = {}
    seen: dict[tuple[object, object], int] = {}
    for i, e in enumerate(stats):
        if isinstance(e, dict) and e.get("jobname") != ALL_CLIENTS:
            key = (e.get("hostname"), e.get("port"))
            last[key] = i
            seen[key] = seen.get(key, 0) + 1
    dumps = any(n > 1 for n in seen.values())
    keep = set(last.values())
    return [e for i, e in enumerate(stats) if i in keep or (
        not dumps and isinstance(e, dict) and e.get("jobname") == ALL_CLIENTS)]


def _whole(v: object) -> bool:
    return type(v) is int and 0 <= v <= MAX_COUNT


def _not_whole(obj: Mapping[str, Any], keys: Sequence[str], where: str) -> str:
    bad = next((k for k in keys if k in obj and not _whole(obj[k])), None)
    return "" if bad is None else f"'{where}.{bad}' is {show_value(obj[bad])}, not a whole number from 0 to 2^63"


def _finite(v: object) -> bool:
    return not isinstance(v, bool) and isinstance(v, (int, float)) and math.isfinite(v) and 0 <= v <= MAX_COUNT


def entry_problem(entry: Mapping[str, Any]) -> str:
    """Why one entry's figures cannot be differenced ('' when they can)."""
    for d in DIRECTIONS:
        part = entry.get(d)
        lat = part.get("lat_ns") if isinstance(part, dict) else None
        bins = lat.get("bins") if isinstance(lat, dict) else None
        if part is not None and not isinstance(part, dict):
            return f"'{d}' is not an object"
        if lat is not None and not isinstance(lat, dict):
            return f"'{d}.lat_ns' is not an object"
        if bins is not None and not isinstance(bins, dict):
            return f"'{d}.lat_ns.bins' is not an object"
        why = _not_whole(part or {}, NUMBERS, d) or _not_whole(lat or {}, LAT_NUMBERS, f"{d}.lat_ns")
        if why:
            return why
        if isinstance(lat, dict) and "mean" in lat and not _finite(lat["mean"]):
            return f"'{d}.lat_ns.mean' is {show_value(lat['mean'])}, not a finite number from 0 to 2^63"
        if bins and len(bins) > MAX_BINS:
            return f"'{d}.lat_ns.bins' has {len(bins)} buckets, more than {MAX_BINS}"
        for k in bins or {}:
            if not (isinstance(k, str) and k.isascii() and k.isdigit() and len(k) <= 19 and int(k) <= MAX_COUNT):
                return f"'{d}.lat_ns.bins' has a bucket named {show_value(k)}, not a whole number of nanoseconds"
        why = _not_whole(bins or {}, list(bins or {}), f"{d}.lat_ns.bins")
        if why:
            return why
    return ""


def host_hist_lines(entries: Sequence[Mapping[str, Any]], max_dumps: int) -> tuple[list[dict[str, object]], str]:
    """A host's histograms-file lines (app.latmap.hist_line: ``t``, ``interval_s``, ``ramp`` and a record per
    direction) from its entries, and '' — or no lines and one sentence saying why none are kept.  ``t`` is the
    seconds of the host's fio dumps added up (its job's runtime); the seconds before fio's counters restarted
    (the end of ramp_time) are ``ramp``.  ``max_dumps``: the most entries the point's time allows."""
    if len(entries) > max_dumps + SPARE_DUMPS:
        return [], (f"it sent {len(entries)} status dumps, more than one a second of the point's time "
                    f"({max_dumps}) and {SPARE_DUMPS} more")
    if len(entries) < 2:
        return [], "its agent sent no status dumps (an agent of a profiler-tui without them)"
    for i, e in enumerate(entries):
        why = entry_problem(e)
        if why:
            return [], f"its status dump {i + 1}: {why}"
    tracker = SampleTracker()
    lines: list[dict[str, object]] = []
    t = 0.0
    for e in entries:
        try:
            sample = tracker.update({"client_stats": [dict(e)]}, 0.0)
        except (TypeError, ValueError, OverflowError) as err:  # a figure the checks above do not name
            return [], f"its status dumps could not be differenced ({str(err)[:120]})"
        if tracker.reset:  # fio's counters restarted: what came before was its ramp_time
            for line in lines:
                line["ramp"] = True
        if sample is None:
            continue
        t += float(sample["interval_s"])  # type: ignore[arg-type]
        sample["t"] = round(t, 3)
        hist = sample.pop(HIST_KEY, None)
        if isinstance(hist, dict) and hist:
            lines.append(hist_line(sample, hist))
    return lines, ""
