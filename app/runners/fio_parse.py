"""fio JSON output: splitting a stream of documents, and the metrics of a point (docs/architecture.md, "Metrics").

fio prints one JSON document per ``--status-interval`` tick (each cumulative since the job
started) and the final result last.  Warnings or client-side lines (``<host> ...``) may come
before or between the documents; they are kept aside, never fatal.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field
from typing import Any, Mapping, TypedDict

from app.core.sanitize import show_value
from app.host.devstat import FioDone
from app.model.records import MAX_NUMBER, MIN_CPU_SECONDS
from app.model.tails import Hist, hist_of_bins, hist_record, merge
from app.stats.latmap import HIST_KEY, interval_record

PERCENTILES = {"p50": 50.0, "p90": 90.0, "p99": 99.0, "p99_9": 99.9, "p99_99": 99.99, "p99_999": 99.999}
# percentiles a summary always has (0 when fio reported none, as before p99_999 existed); p99_999 only when known
ZERO_FILLED = ("p50", "p90", "p99", "p99_9", "p99_99")
PERCENTILE_LIST = "50:90:99:99.9:99.99:99.999"
DIRECTIONS = ("read", "write", "trim")

# Bounds of the splitter, whatever the input: a document (or a one-line document) longer than
# MAX_DOCUMENT_CHARS is dropped and counted in ``oversized`` (fio's largest, json+ with histograms
# for a hundred jobs, is a few MiB); at most MAX_NOISE_LINES lines outside documents are kept (cut
# at MAX_NOISE_CHARS), the rest only counted.
MAX_DOCUMENT_CHARS = 32 << 20
MAX_NOISE_LINES = 1000
MAX_NOISE_CHARS = 1000
MAX_NOISE_LINE_CHARS = 1 << 20  # a line outside a document (one not starting with "{") is dropped past this
# fio's counters are 64-bit: a number beyond this (or negative, NaN, infinite) is not one fio wrote


class DocumentSplitter:
    """Feed text as it arrives; get back complete top-level JSON documents.

    fio's JSON printer opens a document with ``{`` at the start of a line and closes it with
    ``}`` alone on a line; everything nested is indented.  Lines outside a document are noise.
    Memory is bounded (``MAX_DOCUMENT_CHARS``, ``MAX_NOISE_LINES``) whatever is fed.
    """

    def __init__(self) -> None:
        self._partial = ""
        self._skipping = False  # dropping the rest of an over-long line
        self._doc: list[str] | None = None
        self._doc_chars = 0
        self._doc_start = 0
        self._in_oversized = False  # inside a document already dropped for its size
        self.line_no = 0  # complete lines seen
        self.noise: list[str] = []
        self.noise_count = 0
        self.oversized: list[int] = []  # first line of every document dropped for its size

    def feed(self, text: str) -> list[dict[str, object]]:
        return [doc for _, doc in self.feed_numbered(text)]

    def close(self) -> list[dict[str, object]]:
        return [doc for _, doc in self.close_numbered()]

    def feed_numbered(self, text: str) -> list[tuple[int, dict[str, object]]]:
        """Like :meth:`feed`, each document with the number of its first line (from 1)."""
        out: list[tuple[int, dict[str, object]]] = []
        if self._skipping:
            nl = text.find("\n")
            if nl < 0:
                return out
            text = text[nl + 1:]
            self._skipping = False
            self.line_no += 1
        self._partial += text
        *lines, self._partial = self._partial.split("\n")
        for line in lines:
            self.line_no += 1
            doc = self._line(line.rstrip("\r"))
            if doc is not None:
                out.append((self._doc_start, doc))
        limit = MAX_DOCUMENT_CHARS if self._doc is not None or self._partial[:1] == "{" else MAX_NOISE_LINE_CHARS
        if len(self._partial) > limit:
            self._partial = ""
            self._skipping = True
            if self._doc is not None or self._in_oversized:
                self._drop_oversized()
            elif not self._in_oversized:
                self._add_noise("")
        return out

    def close_numbered(self) -> list[tuple[int, dict[str, object]]]:
        out: list[tuple[int, dict[str, object]]] = []
        if self._partial and not self._skipping:
            line, self._partial = self._partial, ""
            self.line_no += 1
            doc = self._line(line.rstrip("\r"))
            if doc is not None:
                out.append((self._doc_start, doc))
        self._partial, self._skipping, self._in_oversized = "", False, False
        if self._doc:
            for line in self._doc:
                self._add_noise(line)
            self._doc = None
        return out

    def _add_noise(self, line: str) -> None:
        self.noise_count += 1
        if len(self.noise) < MAX_NOISE_LINES:
            self.noise.append(line[:MAX_NOISE_CHARS])

    def _drop_oversized(self) -> None:
        if self._doc is not None:
            self.oversized.append(self._doc_start)
            self._doc = None
        self._in_oversized = True

    def _line(self, line: str) -> dict[str, object] | None:
        if self._in_oversized:
            if line[:1] == "}" and line.rstrip() == "}":
                self._in_oversized = False
            return None
        if self._doc is None:
            if line.startswith("{"):
                self._doc = [line]
                self._doc_chars = len(line)
                self._doc_start = self.line_no
                if line.rstrip().endswith("}"):  # a document on one line
                    return self._finish()
            elif line.strip():
                self._add_noise(line)
            return None
        self._doc.append(line)
        self._doc_chars += len(line) + 1
        if line[:1] == "}" and line.rstrip() == "}":
            return self._finish()
        if self._doc_chars > MAX_DOCUMENT_CHARS:
            self._drop_oversized()
        return None

    def _finish(self) -> dict[str, object] | None:
        lines, self._doc = self._doc or [], None
        text = "\n".join(lines)
        try:
            doc = json.loads(text)
        except (ValueError, RecursionError):  # also ints over Python's digit limit, deep nesting
            for line in lines:
                self._add_noise(line)
            return None
        return doc if isinstance(doc, dict) else None


def split_documents(text: str) -> tuple[list[dict[str, object]], list[str]]:
    s = DocumentSplitter()
    docs = s.feed(text) + s.close()
    return docs, s.noise


# --- validation: the types and ranges of what this module and the importer read ---------------


class FormatError(ValueError):
    """A fio JSON document holds something fio would not write; the message is one sentence
    without the file's name, e.g. "key 'jobs[0].read.iops' has invalid value 'abc': must be a
    number from 0 to 2^64"."""


def bad_value(key: str, value: object, why: str) -> FormatError:
    return FormatError(f"key '{key}' has invalid value {show_value(value)}: {why}")


# show_value: one way to show a value in an error message, for every reader (app.core.sanitize)


def is_number(v: object) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) and 0 <= v <= MAX_NUMBER


def _number(d: dict[str, object], key: str, where: str) -> None:
    if key in d and not is_number(d[key]):
        raise bad_value(f"{where}.{key}" if where else key, d[key], "must be a number from 0 to 2^64")


def _obj(d: dict[str, object], key: str, where: str) -> dict[str, object] | None:
    if key not in d:
        return None
    v = d[key]
    if not isinstance(v, dict):
        raise bad_value(f"{where}.{key}" if where else key, v, "must be a JSON object")
    return v


def _string(d: dict[str, object], key: str, where: str) -> None:
    if key in d and not isinstance(d[key], str):
        raise bad_value(f"{where}.{key}" if where else key, d[key], "must be a string")


_PCT_KEY = re.compile(r"\d{1,3}(\.\d{1,12})?")
_BIN_KEY = re.compile(r"\d{1,20}")


def _check_latency(lat: dict[str, object], where: str) -> None:
    for key in ("N", "min", "max", "mean", "stddev"):
        _number(lat, key, where)
    table = _obj(lat, "percentile", where)
    for k, v in (table or {}).items():
        if not _PCT_KEY.fullmatch(k) or float(k) > 100:
            raise bad_value(f"{where}.percentile", k, "a percentile's name must be a number from 0 to 100")
        if not is_number(v):
            raise bad_value(f"{where}.percentile.{k}", v, "must be a number from 0 to 2^64")
    bins = _obj(lat, "bins", where)
    if bins and all(k.isascii() and k.isdigit() and len(k) <= 19 for k in bins) and \
            all(type(v) is int and 0 <= v <= MAX_NUMBER for v in bins.values()):
        return  # what fio writes, checked quickly: json+ has ~1,800 bins per direction
    for k, v in (bins or {}).items():
        if not _BIN_KEY.fullmatch(k) or int(k) > MAX_NUMBER:
            raise bad_value(f"{where}.bins", k, "a histogram bin's name must be a whole number of nanoseconds")
        if not is_number(v):
            raise bad_value(f"{where}.bins.{k}", v, "must be a number from 0 to 2^64")


def _check_options(opts: object, where: str) -> None:
    if not isinstance(opts, dict):
        raise bad_value(where, opts, "must be a JSON object")
    for k, v in opts.items():
        if isinstance(v, str) or (isinstance(v, (int, float)) and (isinstance(v, bool) or math.isfinite(v))):
            continue
        raise bad_value(f"{where}.{k}", v, "an fio option's value must be a string")


def _check_job(job: object, where: str, deep: bool) -> None:
    if not isinstance(job, dict):
        raise bad_value(where, job, "must be a JSON object (one fio job)")
    for key in ("jobname", "hostname"):
        _string(job, key, where)
    for key in ("groupid", "job_runtime", "usr_cpu", "sys_cpu", "error"):
        _number(job, key, where)
    if "job options" in job:
        _check_options(job["job options"], f"{where}.job options")
    for d in DIRECTIONS:
        part = _obj(job, d, where)
        if part is None:
            continue
        for key in ("iops", "bw_bytes", "total_ios", "io_bytes", "runtime"):
            _number(part, key, f"{where}.{d}")
        if not deep:
            continue
        for key in ("lat_ns", "clat_ns", "slat_ns"):
            lat = _obj(part, key, f"{where}.{d}")
            if lat is not None:
                _check_latency(lat, f"{where}.{d}.{key}")


# fio's per-device statistics (disk_util): how many devices a document may list, and a device's name
MAX_DISKS = 64
MAX_DISK_NAME = 64
# a device's counters beside its name and util (a client/server document adds the host's name, not read)
DISK_COUNTERS = ("read_ios", "write_ios", "read_merges", "write_merges", "read_ticks", "write_ticks", "in_queue")


def is_disk_name(v: object) -> bool:
    """A device name as fio prints it (the kernel's: nvme0n1, dm-0): a short printable string, so a name
    never carries a terminal escape or a line break into the report."""
    return isinstance(v, str) and 0 < len(v) <= MAX_DISK_NAME and v.isprintable()


def _check_disk_util(disks: object) -> None:
    if not isinstance(disks, list) or len(disks) > MAX_DISKS:
        raise bad_value("disk_util", disks, f"must be a list of at most {MAX_DISKS} devices")
    for i, disk in enumerate(disks):
        where = f"disk_util[{i}]"
        if not isinstance(disk, dict):
            raise bad_value(where, disk, "must be a JSON object (one device)")
        if "name" in disk and not is_disk_name(disk["name"]):
            raise bad_value(f"{where}.name", disk["name"],
                            f"a device name must be 1 to {MAX_DISK_NAME} printable characters")
        for key in DISK_COUNTERS:
            _number(disk, key, where)
        if "util" in disk and not (is_number(disk["util"]) and disk["util"] <= 100):  # fio caps util at 100 %
            raise bad_value(f"{where}.util", disk["util"], "must be a number from 0 to 100")


def is_fio_document(doc: dict[str, object]) -> bool:
    """A document fio wrote (or one claiming to be): it has jobs, client stats or a version."""
    return "jobs" in doc or "client_stats" in doc or "fio version" in doc


def check_document(doc: dict[str, object], deep: bool = True) -> None:
    """Raise :class:`FormatError` unless every value this module and the importer read has the type
    and range fio writes; after it, :func:`metrics` and :func:`job_list` cannot fail on ``doc``.

    ``deep=False`` leaves out the latency objects (percentiles, histograms): enough to compare and
    order the status dumps of a stream, of which only the last of each run is used (checked deep)."""
    _string(doc, "fio version", "")
    _number(doc, "timestamp_ms", "")
    if "global options" in doc:
        _check_options(doc["global options"], "global options")
    if "disk_util" in doc:
        _check_disk_util(doc["disk_util"])
    for key in ("jobs", "client_stats"):
        if key not in doc:
            continue
        jobs = doc[key]
        if not isinstance(jobs, list):
            raise bad_value(key, jobs, "must be a list of fio jobs")
        for i, job in enumerate(jobs):
            _check_job(job, f"{key}[{i}]", deep)


# --- latency statistics ----------------------------------------------------------------------


def _percentile_from_bins(bins: dict[int, int], pct: float) -> int:
    total = sum(bins.values())
    if total == 0:
        return 0
    # fio: the first bucket whose cumulative count reaches pct% of the samples
    threshold = total * pct / 100.0
    running = 0
    for value in sorted(bins):
        running += bins[value]
        if running >= threshold:
            return value
    return max(bins)


# --- reading a checked document: its values have the types check_document checked ---------------------


def dict_of(v: object) -> dict[str, object]:
    return v if isinstance(v, dict) else {}


def list_of(v: object) -> list[object]:
    return v if isinstance(v, list) else []


def float_of(v: object) -> float:
    """A number of the document as a float (fails as ``float()`` does on anything else)."""
    if isinstance(v, (int, float, str)):
        return float(v)
    raise TypeError(f"not a number: {show_value(v)}")


def int_of(v: object) -> int:
    """A number of the document as an int (fails as ``int()`` does on anything else)."""
    if isinstance(v, (int, float, str)):
        return int(v)
    raise TypeError(f"not a number: {show_value(v)}")


def figure_of(v: object) -> float:
    """A number of the document as it is (an int stays an int: the results line writes it so)."""
    if isinstance(v, (int, float)):
        return v
    raise TypeError(f"not a number: {show_value(v)}")


Latency = dict[str, float]  # min, max, mean, stddev, N, p50 … p99_99 (ints where fio wrote ints), percentiles_approx


def _bins(stat: dict[str, object]) -> dict[int, int] | None:
    raw = stat.get("bins")
    if not isinstance(raw, dict):
        return None
    return {int(k): int(v) for k, v in raw.items()}


def _percentiles(stat: dict[str, object]) -> dict[str, float]:
    table = dict_of(stat.get("percentile"))
    out: dict[str, float] = {}
    for name, pct in PERCENTILES.items():
        for key, value in table.items():
            if abs(float(key) - pct) < 1e-6:
                out[name] = figure_of(value)
                break
    return out


def combine_latency(stats: list[dict[str, object]]) -> Latency:
    """Combine fio latency objects (``lat_ns`` of several directions or jobs), weighted by count.

    min/max/mean/stddev are exact.  Percentiles are exact when every part carries json+ ``bins``
    (the histograms are merged, as fio's group reporting does); otherwise they are the
    count-weighted mean of the parts' percentiles, flagged ``percentiles_approx``.
    """
    parts = [s for s in stats if s and int_of(s.get("N", 0) or 0) > 0]
    result: Latency = {"min": 0, "max": 0, "mean": 0.0, "stddev": 0.0, "N": 0}
    result.update({k: 0 for k in ZERO_FILLED})
    if not parts:
        return result
    n_total = sum(int_of(s["N"]) for s in parts)
    mean = sum(float_of(s.get("mean", 0.0)) * int_of(s["N"]) for s in parts) / n_total
    second = sum(int_of(s["N"]) * (float_of(s.get("stddev", 0.0)) ** 2 + float_of(s.get("mean", 0.0)) ** 2)
                 for s in parts) / n_total
    result.update(
        min=min(int_of(s.get("min", 0)) for s in parts),
        max=max(int_of(s.get("max", 0)) for s in parts),
        mean=mean,
        stddev=math.sqrt(max(0.0, second - mean * mean)) if len(parts) > 1 else float_of(parts[0].get("stddev", 0.0)),
        N=n_total,
    )
    if len(parts) == 1:
        result.update(_percentiles(parts[0]))
        one = _bins(parts[0])
        if "p99_999" not in result and one:  # a json+ document written without 99.999 in its percentile list
            result["p99_999"] = _percentile_from_bins(one, PERCENTILES["p99_999"])
        return result
    all_bins = [_bins(s) for s in parts]
    if all(b is not None for b in all_bins):
        merged: dict[int, int] = {}
        for b in all_bins:
            for value, count in b.items():  # type: ignore[union-attr]
                merged[value] = merged.get(value, 0) + count
        for name, pct in PERCENTILES.items():
            result[name] = _percentile_from_bins(merged, pct)
    else:
        for name in PERCENTILES:
            weighted = [(_percentiles(s).get(name), int_of(s["N"])) for s in parts]
            known = [(v, n) for v, n in weighted if v is not None]
            if known:
                result[name] = sum(v * n for v, n in known) / sum(n for _, n in known)
        result["percentiles_approx"] = True
    return result


# --- metrics of a result document ----------------------------------------------------------


class _Direction(TypedDict):
    """One direction (read, write, trim) summed over the jobs."""

    iops: float
    bw_bytes: float
    total_ios: int
    io_bytes: int
    lat_ns: Latency


def _sum_direction(jobs: list[dict[str, object]], direction: str) -> _Direction:
    parts = [dict_of(j.get(direction)) for j in jobs]
    iops = sum(float_of(p.get("iops", 0.0)) for p in parts)
    bw = sum(float_of(p.get("bw_bytes", 0.0)) for p in parts)
    ios = sum(int_of(p.get("total_ios", 0)) for p in parts)
    io_bytes = sum(int_of(p.get("io_bytes", 0)) for p in parts)
    lat = combine_latency([dict_of(p.get("lat_ns")) for p in parts])
    return {"iops": iops, "bw_bytes": bw, "total_ios": ios, "io_bytes": io_bytes, "lat_ns": lat}


def _public_lat(lat: Latency) -> Latency:
    out = {k: lat[k] for k in ("min", "max", "mean", "stddev")}
    out.update({k: lat[k] for k in PERCENTILES if k in lat})
    if lat.get("percentiles_approx"):
        out["percentiles_approx"] = True
    return out


def disk_util(doc: dict[str, object]) -> list[dict[str, object]]:
    """fio's own utilisation of each device under the job (``disk_util``: the share of the run the device
    had at least one I/O in flight, per cent), as ``[{"name", "util"}]``.  A run's document is fio's own but
    not checked by :func:`check_document`, so an entry whose name or figure fio would not write is left out."""
    raw = doc.get("disk_util")
    out: list[dict[str, object]] = []
    for d in raw[:MAX_DISKS] if isinstance(raw, list) else []:
        if isinstance(d, dict) and is_disk_name(d.get("name")) and is_number(d.get("util")) and d["util"] <= 100:
            out.append({"name": d["name"], "util": float(d["util"])})
    return out


def _split_latency(jobs: list[dict[str, object]]) -> dict[str, dict[str, float]]:
    """Submission (``slat_ns``) and completion (``clat_ns``) latency over directions and jobs, weighted by
    I/O count like ``lat_ns``: the mean of each, and clat's p99 when fio reported clat percentiles.  A part
    fio did not time (slat of a synchronous engine: N = 0) is left out."""
    out: dict[str, dict[str, float]] = {}
    for key in ("slat_ns", "clat_ns"):
        parts = [dict_of(j.get(d)).get(key) for j in jobs for d in DIRECTIONS]
        lat = combine_latency([p for p in parts if isinstance(p, dict)])
        if not lat["N"]:
            continue
        out[key] = {"mean": float(lat["mean"])}
        if key == "clat_ns" and lat["p99"]:
            out[key]["p99"] = float(lat["p99"])
    return out


def job_list(doc: dict[str, object]) -> list[dict[str, object]]:
    """The jobs of a result, from ``jobs[]`` or fio client/server ``client_stats[]`` (each a JSON object, as
    :func:`check_document` checked)."""
    jobs = doc.get("jobs")
    if jobs:
        return [dict_of(j) for j in list_of(jobs)]
    stats = [dict_of(j) for j in list_of(doc.get("client_stats"))]
    per_client = [j for j in stats if j.get("jobname") != "All clients"]
    return per_client or stats


def metrics(doc: dict[str, object], jobs: list[dict[str, object]] | None = None) -> dict[str, Any]:
    """The metrics of one fio result document, all of its jobs together (docs/architecture.md, "Metrics")."""
    jobs = job_list(doc) if jobs is None else jobs
    dirs = {d: _sum_direction(jobs, d) for d in DIRECTIONS}
    total_lat = combine_latency([dict_of(dict_of(j.get(d, {})).get("lat_ns")) for j in jobs for d in DIRECTIONS])
    weights = [float_of(j.get("job_runtime") or 0) for j in jobs]
    if sum(weights) <= 0:
        weights = [1.0] * len(jobs)

    def cpu(key: str) -> float:
        if not jobs:
            return 0.0
        return sum(float_of(j.get(key, 0.0)) * w for j, w in zip(jobs, weights)) / sum(weights)

    m: dict[str, Any] = {
        "iops": sum(d["iops"] for d in dirs.values()),
        "read_iops": dirs["read"]["iops"],
        "write_iops": dirs["write"]["iops"],
        "bw_bytes": sum(d["bw_bytes"] for d in dirs.values()),
        "read_bw_bytes": dirs["read"]["bw_bytes"],
        "write_bw_bytes": dirs["write"]["bw_bytes"],
        "lat_ns": _public_lat(total_lat),
        "usr_cpu": cpu("usr_cpu"),
        "sys_cpu": cpu("sys_cpu"),
        "read_lat_ns": _public_lat(dirs["read"]["lat_ns"]),
        "write_lat_ns": _public_lat(dirs["write"]["lat_ns"]),
        "total_ios": sum(d["total_ios"] for d in dirs.values()),
        "io_bytes": sum(d["io_bytes"] for d in dirs.values()),
        "jobs": len(jobs),
    }
    m.update(_split_latency(jobs))
    disks = disk_util(doc)
    if disks:
        m["disk_util"] = disks
    if dirs["trim"]["total_ios"]:
        m["trim_iops"] = dirs["trim"]["iops"]
        m["trim_bw_bytes"] = dirs["trim"]["bw_bytes"]
    errors = [(j.get("jobname"), j.get("error")) for j in jobs if j.get("error")]
    if errors:
        m["errors"] = [{"job": name, "error": code} for name, code in errors]
    hist = latency_hist(jobs)
    if hist:
        m["lat_hist"] = hist_record(hist)
    # I/Os that moved no bytes are no I/O of the target: no figure per CPU of them (its IOPS is 0)
    per_cpu = iops_per_cpu(jobs, m["total_ios"]) if unserved(m) is None else None
    if per_cpu is not None:
        m["iops_per_cpu"] = per_cpu
    return m


def unserved(m: Mapping[str, Any]) -> str | None:
    """Why the figures of a point that fio ended without an error still say nothing of the target (None when
    its I/O moved bytes): I/Os that moved no bytes — fio counts a read that returns 0 bytes as an I/O done, and a
    block device that went away between fio's look at its size and its open (a loop device detached) reads as
    empty, hundreds of thousands of times a second — or no I/O at all."""
    ios, moved = m.get("total_ios") or 0, m.get("io_bytes") or 0
    if moved > 0:
        return None
    if ios > 0:
        return (f"fio counted {ios:,} I/Os that moved no bytes: the target served none of them (a device that went "
                "away as the point started reads as empty)")
    return "fio completed no I/O: the point measured nothing"


def cpu_seconds(jobs: list[dict[str, object]]) -> float:
    """The CPU time fio's job threads used, in seconds: each entry's usr+sys (per cent of one CPU, the mean over
    the threads it reports for) times its ``job_runtime`` (the threads' measured runtimes added up, ms)."""
    return sum((float_of(j.get("usr_cpu") or 0.0) + float_of(j.get("sys_cpu") or 0.0)) / 100.0
               * float_of(j.get("job_runtime") or 0) / 1000.0 for j in jobs)


def iops_per_cpu(jobs: list[dict[str, object]], total_ios: int) -> float | None:
    """I/Os per CPU-second of fio's own threads (IOPS ÷ CPUs busy); None without the CPU figures.  The threads'
    usr+sys leaves out what the kernel does elsewhere (interrupts, io_uring's SQ-poll thread)."""
    secs = cpu_seconds(jobs)
    if secs < MIN_CPU_SECONDS or total_ios <= 0:
        return None
    return round(total_ios / secs, 1)


def latency_hist(jobs: list[dict[str, object]]) -> Hist | None:
    """The jobs' total-latency json+ histograms (``lat_ns.bins``, with fio's lat_percentiles=1) merged over jobs
    and directions; None when a part that completed I/O has none (plain JSON, or clat bins only)."""
    parts = [lat for j in jobs for d in DIRECTIONS
             if int_of((lat := dict_of(dict_of(j.get(d)).get("lat_ns"))).get("N", 0) or 0) > 0]
    bins = [_bins(lat) for lat in parts]
    if not parts or any(b is None for b in bins):
        return None
    return merge(hist_of_bins(b) for b in bins if b is not None)


# --- live samples: the difference of two cumulative dumps -----------------------------------


@dataclass
class _Totals:
    """The cumulative counters of one status dump, over all jobs."""

    ios: dict[str, int] = field(default_factory=lambda: {d: 0 for d in DIRECTIONS})
    bytes: dict[str, int] = field(default_factory=lambda: {d: 0 for d in DIRECTIONS})
    runtime_ms: int = 0
    bins: dict[int, int] = field(default_factory=dict)  # json+ latency histogram: value (ns) → count
    dir_bins: dict[str, dict[int, int]] = field(default_factory=dict)  # the same per direction
    lat_n: int = 0
    lat_sum: float = 0.0  # the sum of all latencies, ns
    timestamp_ms: int = 0


def _totals(doc: dict[str, object], bins: bool = True) -> _Totals:
    """The counters of one dump over all jobs; ``bins``: the latency histogram too (the dearest part)."""
    jobs = job_list(doc)
    t = _Totals()
    for d in DIRECTIONS:
        parts = [dict_of(j.get(d)) for j in jobs]
        t.ios[d] = sum(int_of(p.get("total_ios", 0)) for p in parts)
        t.bytes[d] = sum(int_of(p.get("io_bytes", 0)) for p in parts)
        t.runtime_ms = max([t.runtime_ms] + [int_of(p.get("runtime", 0)) for p in parts])
        for p in parts:
            lat = dict_of(p.get("lat_ns"))
            n = int_of(lat.get("N", 0) or 0)
            t.lat_n += n
            t.lat_sum += float_of(lat.get("mean", 0.0)) * n
            own = t.dir_bins.setdefault(d, {})
            for value, count in ((_bins(lat) or {}) if bins else {}).items():
                t.bins[value] = t.bins.get(value, 0) + count
                own[value] = own.get(value, 0) + count
    t.timestamp_ms = int_of(doc.get("timestamp_ms") or 0)
    return t


def direction_bytes(doc: dict[str, object]) -> dict[str, int]:
    """fio's cumulative bytes per direction in one document, over all jobs (no histograms read)."""
    jobs = job_list(doc)
    return {d: sum(int_of(dict_of(j.get(d)).get("io_bytes", 0)) for j in jobs) for d in DIRECTIONS}


def fio_done(doc: dict[str, object]) -> FioDone:
    """fio's cumulative bytes per direction and I/Os in one document, over all jobs: where a counter window
    (app.host.devstat) stands against fio's own figures."""
    jobs = job_list(doc)
    parts = [dict_of(j.get(d)) for j in jobs for d in DIRECTIONS]
    done = direction_bytes(doc)
    return FioDone(done["read"], done["write"], sum(int_of(p.get("total_ios", 0)) for p in parts))


RESET_JUMP_MS = 500  # fio's runtime fell this far behind its status clock between two dumps: counters reset


def _runtime_reset(prev: _Totals, cur: _Totals) -> bool:
    """fio's job runtime fell behind the dumps' own clock: its counters started again (the ramp ended)."""
    if not (prev.timestamp_ms and cur.timestamp_ms and prev.runtime_ms and cur.runtime_ms):
        return False
    return (cur.timestamp_ms - cur.runtime_ms) - (prev.timestamp_ms - prev.runtime_ms) > RESET_JUMP_MS


class SampleTracker:
    """Turns fio's cumulative status dumps into per-interval samples.  ``percentiles``: each sample's p50/p99/
    p99.9 from the histograms too (the live chart's); without, only the means (the sub-second samples of the
    interval, app.runners.fio)."""

    def __init__(self, percentiles: bool = True) -> None:
        self._prev: _Totals | None = None
        self.reset = False  # the last dump showed fio's counters restarted (the ramp ended)
        self.percentiles = percentiles

    @property
    def last_ms(self) -> int:
        """The dumps' clock (``timestamp_ms``) at the last dump taken, 0 before one (or without the clock)."""
        return self._prev.timestamp_ms if self._prev is not None else 0

    def update(self, doc: dict[str, object], elapsed_s: float) -> dict[str, object] | None:
        cur = _totals(doc, self.percentiles)
        prev = self._prev
        self._prev = cur
        if prev is not None and cur.timestamp_ms and prev.timestamp_ms:
            dt = (cur.timestamp_ms - prev.timestamp_ms) / 1000.0
        elif prev is not None:
            dt = (cur.runtime_ms - prev.runtime_ms) / 1000.0
        else:
            dt = cur.runtime_ms / 1000.0
        # ramp_time ended between the two dumps: fio zeroed its counters and the job's runtime.  The counters
        # dropping shows it when the ramp ended early in the interval; when they grew again past the last dump,
        # the runtime falling behind the dumps' clock (by more than RESET_JUMP_MS) still does
        reset = prev is not None and (sum(cur.ios.values()) < sum(prev.ios.values()) or _runtime_reset(prev, cur))
        self.reset = reset
        if prev is None or reset:
            prev = _Totals()
            dt = cur.runtime_ms / 1000.0 if reset or dt <= 0 else dt
        if dt <= 0:
            return None
        d_ios = {d: cur.ios[d] - prev.ios[d] for d in DIRECTIONS}
        d_bytes = {d: cur.bytes[d] - prev.bytes[d] for d in DIRECTIONS}
        d_n = cur.lat_n - prev.lat_n
        d_bins = {v: c - prev.bins.get(v, 0) for v, c in cur.bins.items() if c - prev.bins.get(v, 0) > 0}
        sample: dict[str, object] = {
            "t": round(elapsed_s, 3),
            "interval_s": round(dt, 3),
            "iops": sum(d_ios.values()) / dt,
            "read_iops": d_ios["read"] / dt,
            "write_iops": d_ios["write"] / dt,
            "bw_bytes": sum(d_bytes.values()) / dt,
            "lat_mean_ns": (cur.lat_sum - prev.lat_sum) / d_n if d_n > 0 else None,
        }
        if self.percentiles:
            sample["lat_p99_ns"] = _percentile_from_bins(d_bins, 99.0) if d_bins else None
            sample["lat_p50_ns"] = _percentile_from_bins(d_bins, 50.0) if d_bins else None
            sample["lat_p99_9_ns"] = _percentile_from_bins(d_bins, 99.9) if d_bins else None
            hist = interval_record(cur.dir_bins, prev.dir_bins)
            if hist:
                sample[HIST_KEY] = hist
        return sample


# --- what fio is doing: ramp, measuring, the steady-state window ---------------------------------

RAMP_GRACE_S = 2.0  # past ramp_time by this much with no reset of the counters seen: measuring all the same


def _progress_counters(doc: dict[str, object]) -> tuple[int, int]:
    """(runtime ms, I/Os) of a status dump over all jobs and directions: cheap (no histograms)."""
    runtime, ios = 0, 0
    for job in job_list(doc):
        for d in DIRECTIONS:
            part = job.get(d)
            if isinstance(part, dict):
                r, n = _num(part.get("runtime")), _num(part.get("total_ios"))
                runtime = max(runtime, int(r or 0))
                ios += int(n or 0)
    return runtime, ios


def job_runtime_ms(doc: dict[str, object]) -> int:
    """fio's runtime of the job so far in one dump, ms (the longest of its jobs and directions)."""
    return _progress_counters(doc)[0]


def io_started(doc: dict[str, object]) -> bool:
    """fio has started the job's I/O.  Its status dumps come from its start on, also while it lays out the
    test file first (seconds for a large file): those show no I/O and no runtime, and are no measurement."""
    return _progress_counters(doc) != (0, 0)


class PhaseTracker:
    """What fio is doing, from its status dumps (one a second): running its ``ramp_time``, then measuring —
    or, for a point with a steady criterion, filling the steady-state window.  ``update`` gives (phase, done,
    total) per dump; ``start`` the phase before the first dump.

    fio counts the ramp's I/O and resets its counters (and runtime) when the ramp ends.  The reset is seen
    as the job's runtime falling behind the time since its I/O started (from the dumps' ``timestamp_ms``)
    by more than half the ramp; a drop of the counters alone misses it when the first dump came early in
    the ramp and the next one late after it."""

    def __init__(self, ramp_s: float = 0.0, steady_window_s: float | None = None) -> None:
        self.ramp_s = float(ramp_s)
        self.steady_window_s = steady_window_s
        self.in_ramp = self.ramp_s > 0
        self._prev: tuple[int, int] | None = None
        self._io_start_ms: float | None = None  # when the job's I/O started, on the dumps' clock

    def start(self) -> tuple[str, float | None, float | None]:
        if self.in_ramp:
            return "ramp", 0.0, self.ramp_s
        if self.steady_window_s is not None:
            return "steady", 0.0, float(self.steady_window_s)
        return "measuring", None, None

    def update(self, doc: dict[str, object], elapsed_s: float = 0.0) -> tuple[str, float | None, float | None]:
        """``elapsed_s``: seconds since fio started, the clock used when a dump has no ``timestamp_ms``."""
        runtime_ms, ios = _progress_counters(doc)
        prev, self._prev = self._prev, (runtime_ms, ios)
        if self.in_ramp:
            now_ms = _num(doc.get("timestamp_ms")) or elapsed_s * 1000
            if self._io_start_ms is None:
                self._io_start_ms = now_ms - runtime_ms
            since_ms = now_ms - self._io_start_ms
            dropped = prev is not None and (runtime_ms < prev[0] or ios < prev[1])
            behind = since_ms - runtime_ms > self.ramp_s * 500
            if dropped or behind or since_ms / 1000 > self.ramp_s + RAMP_GRACE_S:
                self.in_ramp = False
            else:
                return "ramp", round(min(self.ramp_s, since_ms / 1000), 3), self.ramp_s
        if self.steady_window_s is not None:
            steady = steady_progress(doc)
            if steady is not None:
                return "steady", float(steady["filled_s"]), float(steady["window_s"])
            return "steady", 0.0, float(self.steady_window_s)
        return "measuring", None, None


# --- steady state and the latency-target search, from a job's JSON ------------------------------


def _first_job(doc: dict[str, object]) -> dict[str, object]:
    jobs = doc.get("jobs")
    return jobs[0] if isinstance(jobs, list) and jobs and isinstance(jobs[0], dict) else {}


def _percent(text: object) -> float | None:
    """fio writes the measured criterion as "26.480814%"."""
    if isinstance(text, (int, float)) and not isinstance(text, bool):
        return float(text) if math.isfinite(text) else None
    if isinstance(text, str):
        try:
            value = float(text.strip().rstrip("%"))
        except ValueError:
            return None
        return value if math.isfinite(value) else None
    return None


def _num(v: object) -> float | None:
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) else None


class SteadyProgress(TypedDict):
    window_s: int
    filled_s: int
    attained: bool
    deviation: float | None


def steady_progress(doc: dict[str, object]) -> SteadyProgress | None:
    """The steady-state window as fio reports it so far (in status dumps too): seconds collected of the
    window, whether the criterion held, and its current value; None without steady-state detection."""
    ss = _first_job(doc).get("steadystate")
    if not isinstance(ss, dict):
        return None
    data = dict_of(ss.get("data"))
    series = list_of(data.get("iops"))
    window = _num(ss.get("duration"))
    return {
        "window_s": int(window) if window is not None else len(series),
        "filled_s": sum(1 for v in series if _num(v)),  # fio fills the window once a second after its ramp
        "attained": bool(ss.get("attained")),
        "deviation": _percent(ss.get("criterion")),
    }


def steady_result(doc: dict[str, object], criterion: str, window_s: float | int) -> dict[str, object]:
    """What a results line records of a steady-state point: attained, after how many measured seconds
    (fio ends the job then), the criterion asked for, its value and fio's slope."""
    job = _first_job(doc)
    ss = dict_of(job.get("steadystate"))
    attained = bool(ss.get("attained"))
    runtime_ms = _num(job.get("job_runtime"))
    return {
        "attained": attained,
        "after_s": round(runtime_ms / 1000, 3) if attained and runtime_ms is not None else None,
        "criterion": criterion,
        "deviation": _percent(ss.get("criterion")),
        "slope": _num(ss.get("slope")),
        "window_s": window_s,
    }


def operating_point(doc: dict[str, object], m: Mapping[str, object], bound_us: int, percentile: float | int,
                    cap_s: float | int) -> dict[str, object]:
    """The latency-target search's answer: the depth fio settled on and what was measured there.  fio
    resets its statistics for a final window at the depth it found, so the job's figures are that depth's;
    ``converged`` is False when the runtime cap ended the search first (the figures then mix depths)."""
    job = _first_job(doc)
    depth = job.get("latency_depth")
    runtime_ms = _num(job.get("job_runtime"))
    lat = dict_of(m.get("lat_ns"))
    return {
        "depth": depth if isinstance(depth, int) and not isinstance(depth, bool) else None,
        "bound_us": bound_us,
        "percentile": percentile,
        "converged": runtime_ms is not None and runtime_ms < float(cap_s) * 1000 - 250,
        "iops": m.get("iops"),
        "lat_mean_ns": lat.get("mean"),
        "lat_p99_ns": lat.get("p99"),
    }
