"""Each fleet host's per-second latency histograms, from the status dumps its agent sends through fio's client.

An agent runs fio's server with ``--status-interval`` of a second (app.fleet.agent), so fio's server sends each of
its jobs' cumulative figures once a second besides the point's final ones, and fio's client lists every one of
them in its JSON document's ``client_stats``, in the order they came: a host's entries are its cumulative json+
dumps, the last the point's result.  The difference of two consecutive entries of a host is the histogram of the
I/Os it completed in between — exactly as the local runner differences fio's status dumps: the same code
(app.runners.fio_parse.SampleTracker, app.stats.latmap) makes a host's histograms file ``raw/NNNN-JOB@HOST.hist.jsonl``.

The entries are untrusted: the host's fio server sends them, and a host is another machine.  fio's client writes
the document itself, so a host decides only the values in it, not its shape; each of them is checked before it is
used.  A host's histograms are kept only when every one of its entries is sound — each direction's ``lat_ns.bins``
an object of at most app.model.tails.MAX_BINS buckets named by whole numbers of nanoseconds, each count and each
figure the difference reads a whole number from 0 to 2^63 (no NaN, no fraction, no string) — and when it sent
no more entries than one a second of the point's time plus :data:`SPARE_DUMPS`.  Otherwise none are kept, and
:func:`host_hist_lines` says why in one sentence.  A host whose agent sends no status dumps (one entry: an agent of
an older profiler-tui) has no per-second histograms.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any, Mapping, Sequence

from app.core.sanitize import show_value
from app.model.tails import MAX_BINS, MAX_COUNT, merge
from app.runners.fio_parse import SampleTracker
from app.stats.latmap import DIRECTIONS, HIST_KEY, decode, encode, hist_line

ALL_CLIENTS = "All clients"
SPARE_DUMPS = 10  # entries a host may send beyond one a second of the point's time (its start, its end)
SHORT_S = 0.5  # an interval shorter than this (fio's result just after its last dump) joins the one before it
MAX_STREAM_HOSTS = 1024  # hosts one client document may name (a fleet has at most app.fleet.hosts.MAX_HOSTS)
NUMBERS = ("total_ios", "io_bytes", "runtime")  # a direction's figures the difference reads besides the bins
LAT_NUMBERS = ("N",)


def is_at(hostname: object, port: object, address: tuple[str, int | None]) -> bool:
    """Whether fio's client names the host it reached at ``address`` (hostname, port; a socket's path and None: fio
    names a socket client by its path) ``hostname``, ``port``."""
    return hostname == address[0] and (address[1] is None or port == address[1])


def host_entries(doc: Mapping[str, Any], address: tuple[str, int | None]) -> list[dict[str, Any]]:
    """Every ``client_stats`` entry of the host fio reached at ``address`` (:func:`is_at`), in the order fio's
    client listed them: its status dumps, then its result."""
    stats = doc.get("client_stats")
    if not isinstance(stats, list):
        return []
    return [e for e in stats if isinstance(e, dict) and e.get("jobname") != ALL_CLIENTS
            and is_at(e.get("hostname"), e.get("port"), address)]


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
        if bins and all(type(k) is str and k.isdigit() and k.isascii() and len(k) < 19 for k in bins) and \
                all(type(v) is int and 0 <= v <= MAX_COUNT for v in bins.values()):
            continue  # what fio writes, checked quickly (18 digits stay below 2^63)
        for k in bins or {}:
            if not (isinstance(k, str) and k.isascii() and k.isdigit() and len(k) <= 19 and int(k) <= MAX_COUNT):
                return f"'{d}.lat_ns.bins' has a bucket named {show_value(k)}, not a whole number of nanoseconds"
        why = _not_whole(bins or {}, list(bins or {}), f"{d}.lat_ns.bins")
        if why:
            return why
    return ""


class HostSeconds:
    """One host's seconds, differenced as its entries arrive (a long point's dumps are never all held at once):
    at most ``limit`` entries are taken, past them the host keeps none."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.dumps = 0
        self.why = ""
        self.lines: list[str] = []  # the histograms file's lines, as JSON text (a long point has thousands)
        self._tracker = SampleTracker()
        self._t = 0.0
        self._ramp_t: float | None = None  # the runtime of the last dump in fio's ramp_time, while in it

    def add(self, e: Mapping[str, Any]) -> None:
        self.dumps += 1
        if self.why or self.dumps > self.limit:
            self.lines = []
            return
        why = entry_problem(e)
        if why:
            self.why, self.lines = f"its status dump {self.dumps}: {why}", []
            return
        if _in_ramp(e):  # fio counts the ramp's I/Os but records no latency: no second of the heat map
            self._ramp_t = max((float(e[d].get("runtime", 0)) / 1000 for d in DIRECTIONS if isinstance(e.get(d), dict)),
                               default=0.0)
            return
        if self._ramp_t is not None:  # the ramp ended: fio's counters and runtime started again from zero
            self._tracker, self._t, self._ramp_t = SampleTracker(), self._ramp_t, None
        try:
            sample = self._tracker.update({"client_stats": [dict(e)]}, 0.0)
        except (TypeError, ValueError, OverflowError) as err:  # a figure the checks above do not name
            self.why, self.lines = f"its status dumps could not be differenced ({str(err)[:120]})", []
            return
        if self._tracker.reset:  # fio's counters restarted: what came before was its ramp_time
            self.lines = [_text({**json.loads(line), "ramp": True}) for line in self.lines]
        if sample is None:
            return
        self._t += float(sample["interval_s"])  # type: ignore[arg-type]
        sample["t"] = round(self._t, 3)
        hist = sample.pop(HIST_KEY, None)
        if not (isinstance(hist, dict) and hist):
            return
        dt = float(sample["interval_s"])  # type: ignore[arg-type]
        if dt < SHORT_S and self.lines and self._fold_into_last(sample, hist, dt):
            return
        self.lines.append(_text(hist_line(sample, hist)))

    def _fold_into_last(self, sample: dict[str, object], hist: Mapping[str, list[int]], dt: float) -> bool:
        """A moment after the last second (fio's result, a few ms after its last dump) added to that second: alone,
        it would be a column of its own that takes the other hosts' last seconds from theirs
        (app.stats.latmap.merge_hosts
        joins seconds ending within half a second)."""
        last = json.loads(self.lines[-1])
        if last.get("ramp") or not isinstance(last.get("interval_s"), (int, float)):
            return False
        both: dict[str, list[int]] = {}
        for d in DIRECTIONS:
            parts = [h for h in (decode(last.get(d)) if d in last else [], decode(hist.get(d)) if d in hist else [])
                     if h]
            if parts:
                both[d] = encode(dict(merge(parts)))
        self.lines[-1] = _text(hist_line({"t": sample["t"], "interval_s": round(last["interval_s"] + dt, 3)}, both))
        return True

    def result(self, max_dumps: int) -> tuple[list[str], str]:
        """The lines, and '' — or none and one sentence saying why (``max_dumps``: the entries the point's time
        allows, besides :data:`SPARE_DUMPS`)."""
        if self.dumps > min(self.limit, max_dumps + SPARE_DUMPS):
            return [], (f"it sent {self.dumps} status dumps, more than one a second of the point's time "
                        f"({max_dumps}) and {SPARE_DUMPS} more")
        if self.dumps < 2:
            return [], "its agent sent no status dumps (an agent of a profiler-tui without them)"
        return ([], self.why) if self.why else (self.lines, "")


def host_hist_lines(entries: Sequence[Mapping[str, Any]], max_dumps: int) -> tuple[list[dict[str, object]], str]:
    """A host's histograms-file lines (app.stats.latmap.hist_line: ``t``, ``interval_s``, ``ramp`` and a record per
    direction) from its entries, and '' — or no lines and one sentence saying why none are kept.  ``t`` is the
    seconds of the host's fio dumps added up (its job's runtime); the seconds before fio's counters restarted
    (the end of ramp_time) are ``ramp``.  ``max_dumps``: the most entries the point's time allows."""
    seconds = HostSeconds(max_dumps + SPARE_DUMPS + 1)
    for e in entries[:max_dumps + SPARE_DUMPS + 1]:
        seconds.add(e)
    seconds.dumps = max(seconds.dumps, len(entries))
    lines, why = seconds.result(max_dumps)
    return [json.loads(line) for line in lines], why


def _in_ramp(e: Mapping[str, Any]) -> bool:
    """A dump in fio's ramp_time: I/Os done, none with a latency recorded (checked by :func:`entry_problem`)."""
    parts = [p for d in DIRECTIONS if isinstance(p := e.get(d), dict)]
    return sum(p.get("total_ios", 0) for p in parts) > 0 and all(
        not isinstance(p.get("lat_ns"), dict) or p["lat_ns"].get("N", 0) == 0 for p in parts)


def _text(line: Mapping[str, object]) -> str:
    return json.dumps(line, separators=(",", ":"))


# fio's client prints its document indented: client_stats' entries open and close at four spaces
STATS_OPEN = b'  "client_stats" : ['
ENTRY_OPEN, ENTRY_CLOSE = b"    {", (b"    }", b"    },")
ENTRY_END = re.compile(rb"^    \},?[ \t\r]*\n", re.MULTILINE)
STATS_CLOSE = (b"  ]", b"  ],")
MAX_ENTRY_BYTES = 16 << 20  # one entry of fio's client (a json+ job is ~40 KB)


class ClientStream:
    """fio's client output read as it comes, its hosts' status dumps taken out on the way: each host's entries go
    to its :class:`HostSeconds` and only its last is kept, so the document held (:meth:`text`) is what it was
    without dumps — fio's client holds a long point's dumps of every host (~40 KB each) until the point ends.
    Output not laid out as fio's client lays it out is kept whole, up to ``cap`` bytes, as before."""

    def __init__(self, cap: int, limit: int) -> None:
        self.cap, self.limit = cap, limit
        self.seconds: dict[tuple[object, object], HostSeconds] = {}
        self._head = bytearray()  # before the entries (fio's noise lines, the document's start), and after them
        self._tail = bytearray()
        self._last: dict[tuple[object, object], bytes] = {}  # each host's last entry
        self._sums: list[bytes] = []  # fio's "All clients" entries
        self._entry: bytearray | None = None
        self._pending = bytearray()
        self._state = "head"  # then "stats" (between entries), "tail"
        self.size = 0

    def feed(self, chunk: bytes) -> None:
        pending = self._pending
        pending += chunk
        while True:
            if self._entry is not None:  # inside an entry (~1,500 lines): its end found at C speed
                m = ENTRY_END.search(pending)
                cut = m.end() if m is not None else pending.rfind(b"\n") + 1
                self._add(pending[:cut])
                del pending[:cut]
                if m is None:
                    break
                self._take(bytes(self._entry).rstrip().rstrip(b","))
                self._entry = None
                continue
            nl = pending.find(b"\n")
            if nl < 0:
                break
            line = bytes(pending[:nl + 1])
            del pending[:nl + 1]
            self._line(line)
        if len(pending) > MAX_ENTRY_BYTES:  # no line of fio's is this long: taken as one, unended
            self._line(bytes(pending))
            pending.clear()

    def _add(self, part: bytes | bytearray) -> None:
        assert self._entry is not None
        if len(self._entry) + len(part) <= MAX_ENTRY_BYTES:
            self._entry += part

    def _keep(self, buf: bytearray, line: bytes) -> None:
        if self.size + len(line) <= self.cap:
            buf += line
            self.size += len(line)

    def _line(self, line: bytes) -> None:
        bare = line.rstrip()
        if self._state == "head":
            self._keep(self._head, line)
            if bare == STATS_OPEN:
                self._state = "stats"
        elif self._state == "tail":
            self._keep(self._tail, line)
        elif self._entry is not None:
            self._add(line)
            if bare in ENTRY_CLOSE:
                self._take(bytes(self._entry).rstrip().rstrip(b","))
                self._entry = None
        elif bare == ENTRY_OPEN:
            self._entry = bytearray(line)
        elif bare in STATS_CLOSE:
            self._state = "tail"
            self._keep(self._tail, line)
        else:  # not fio's layout: kept as it is
            self._keep(self._head, line)

    def _take(self, text: bytes) -> None:
        try:
            entry = json.loads(text)
        except ValueError:
            return
        if not isinstance(entry, dict):
            return
        if entry.get("jobname") == ALL_CLIENTS:
            self._sums.append(text)
            return
        key = (entry.get("hostname"), entry.get("port"))
        if key not in self.seconds:
            if len(self.seconds) >= MAX_STREAM_HOSTS:
                return
            self.seconds[key] = HostSeconds(self.limit)
        self.seconds[key].add(entry)
        old = self._last.get(key)
        self.size += len(text) - (len(old) if old is not None else 0)
        self._last[key] = text

    def host(self, address: tuple[str, int | None]) -> HostSeconds | None:
        """The seconds of the host fio reached at ``address`` (as :func:`host_entries` finds its entries)."""
        return next((seconds for (name, port), seconds in self.seconds.items() if is_at(name, port, address)), None)

    def text(self) -> str:
        """The document as fio's client printed it, each host's status dumps left out (and fio's "All clients"
        sum with them, when a host sent any: it sums the hosts' first entries)."""
        if self._state == "head" and not self._last:
            return (bytes(self._head) + bytes(self._pending)).decode("utf-8", "replace")
        dumps = any(s.dumps > 1 for s in self.seconds.values())
        entries = list(self._last.values()) + ([] if dumps else self._sums)
        body = b",\n".join(entries) + (b"\n" if entries else b"")
        return (bytes(self._head) + body + bytes(self._tail) + bytes(self._pending)).decode("utf-8", "replace")
