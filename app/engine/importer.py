"""`profiler-tui import FILE... --out DIR`: existing fio and MLC outputs → a results directory.

fio: JSON or json+ documents as users save them — alone, after warning lines, mixed with
stderr, after ``--output-format=normal,json`` text, as a ``--status-interval`` stream (the
last dump of a run is its result), several jobs without ``group_reporting`` (jobs with the
same name and options are one point, their figures combined as fio's group reporting would),
mixed read/write, and client/server output (``client_stats``, one point per host).
Parameters come from the job's ``job options`` over the document's ``global options``, with
fio's defaults (rw=read, bs=4k, iodepth=1, numjobs=1, ioengine=psync, direct=0) where absent.

MLC: text of ``mlc`` / ``mlc.exe`` (CRLF too) or the built-in engine, read by
:mod:`app.runners.mlc_parse`: every figure of every section becomes one results line — loaded-latency
tables one point per delay, idle latency one idle point, the idle latency matrix ``latency_matrix`` points
(cpu_node, mem_node), peak injection bandwidth ``peak`` points (traffic), the bandwidth matrix
``bandwidth_matrix`` points, cache-to-cache ``c2c`` points (hit/hitm; the remote matrices with cpu_node =
the writer's node, reader_node, home), the built-in engine's scaling (threads) and working-set (buffer)
tables; each value is the number printed.  Parameters from the ``Command line parameters`` line; what the
engine printed about a figure (placement, caches, CPUs) in its line's parts.  A section that gives nothing
(an unknown title, an empty table) or fewer figures than its numbers (a cut matrix, an unknown label) is
named in the file's warnings.

The directory gets run.json (status ``imported``, plan = the imported points, the warnings of
every source), results.jsonl and a copy of every input file in raw/.

Inputs are untrusted: only regular files are read (a FIFO, device, socket or directory is refused
before it is opened), as a stream, at most ``MAX_IMPORT_BYTES`` each; at most ``MAX_IMPORT_POINTS``
points per import; every value of a fio document is checked (:func:`app.runners.fio_parse.check_document`)
before it is used, and any fault is one sentence naming the file, the key and the value (exit 2).
"""

from __future__ import annotations

import codecs
import errno
import io
import json
import math
import os
import re
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Iterable, Iterator, TypedDict

from app.core.errors import UsageError
from app.core.units import parse_duration, parse_size
from app.model import runmeta
from app.model.points import Kind, MemoryPoint, keys_of
from app.model.records import MemoryMetrics, write_json
from app.runners import fio_parse
from app.runners.fio_parse import dict_of, int_of, list_of
from app.stats import histlog
from app.stats.latmap import HIST_KEY, HIST_SUFFIX, hist_line, sample_hist
from app.stats.uncertainty import none_because
from app.store.results import RAW, RESULTS_JSONL, SCHEMA_VERSION, ResultsDir, check_links, now_iso, open_file

if TYPE_CHECKING:
    from app.runners.mlc_parse import Figure, Section

FIO_RW = {"read": "read", "write": "write", "trim": "trim", "randread": "randread", "randwrite": "randwrite",
          "randtrim": "randtrim", "rw": "rw", "readwrite": "rw", "randrw": "randrw", "trimwrite": "trimwrite"}
MLC_DEFAULT_STRIDE = 64
MAX_IMPORT_BYTES = 256 << 20  # per input file
MAX_IMPORT_POINTS = 20_000  # per import, all files together
IMPORT_RISK = "root would read whichever file that user points it at; import the file itself"
CHUNK_BYTES = 1 << 20
MAX_FILE_WARNINGS = 100  # per MLC file, kept in run.json
MAX_SECONDS = 1e9  # a runtime or ramp_time beyond ~31 years is not one fio ran
MAX_IMPORT_INTERVALS = 100_000  # per-interval histograms kept of one run of a --status-interval stream
_BAD_TEXT = re.compile(r"[\x00-\x1f\x7f]")


class FileInfo(TypedDict, total=False):
    """What reading one file found besides its points (fio: documents, runs, versions; MLC: engine, version,
    the sections read and those ignored), and its warnings."""

    documents: int
    runs: int
    fio_versions: list[str]
    noise_lines: int
    sections: list[str]
    ignored_sections: list[str]
    warnings: list[str]
    version: object  # as the MLC file printed it
    engine: str


class Source(TypedDict, total=False):
    """An imported file as run.json lists it under ``sources``."""

    file: str
    path: str
    format: str
    raw: str
    points: int
    documents: int
    runs: int
    sections: list[str]
    ignored_sections: list[str]
    warnings: list[str]


@dataclass
class Imported:
    kind: Kind
    # as results.jsonl records it: not a StoragePoint, fio's options need not fit one (host, trimwrite, no size)
    point: dict[str, object]
    metrics: dict[str, object]
    extra: dict[str, object] = field(default_factory=dict)
    # a --status-interval stream's per-interval histograms (raw/NNNN-JOB.hist.jsonl's lines, app.stats.latmap)
    hist_lines: list[dict[str, object]] = field(default_factory=list)


# --- no interval: an imported file keeps one figure per point, not the samples an interval needs -------------

FIO_NO_SAMPLES = "imported fio JSON has no per-second samples"


def no_interval(reason: str) -> dict[str, object]:
    """The ``ci_method`` of an imported point's metrics (no ``ci95``): why it has no interval."""
    return {"ci_method": none_because(reason).ci_method}


def text_interval(engine: str, mode: str, windows: dict[str, tuple[float, ...]],
                  metrics: dict[str, object]) -> dict[str, object]:
    """``ci95``/``ci_method`` of an imported memory figure, as the memory runner gives them: from the built-in
    engine's sub-windows printed before it, else why there is none (Intel MLC prints one figure per row)."""
    from app.runners.memory import window_uncertainty

    figures = MemoryMetrics(latency_ns=_float(metrics.get("latency_ns")),
                            bandwidth_mbps=_float(metrics.get("bandwidth_mbps")))
    done = window_uncertainty(engine, mode, windows, figures).json()
    return {k: done[k] for k in ("ci95", "ci_method") if k in done}


def _float(v: object) -> float | None:
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else None


# --- fio -----------------------------------------------------------------------------------------------


def _opt_bool(v: object) -> bool:
    return str(v).strip().lower() not in ("0", "false", "no", "off")


def _size(v: object) -> int | None:
    if v is None:
        return None
    s = str(v).strip().split(",")[0].split(":")[0].split("-")[0]
    try:
        n = parse_size(s)
    except (ValueError, OverflowError):
        return None
    return n if n <= fio_parse.MAX_NUMBER else None


def _seconds(v: object) -> float | int | None:
    if v is None:
        return None
    s = str(v).strip().lower()
    m = re.fullmatch(r"(\d{1,15}(?:\.\d{1,15})?)(us|ms|s|m|h)?", s)
    if not m:
        try:
            x = parse_duration(s)
        except (ValueError, OverflowError):
            return None
    else:
        x = float(m.group(1)) * {"us": 1e-6, "ms": 1e-3, "s": 1, "m": 60, "h": 3600, None: 1}[m.group(2)]
    if not math.isfinite(x) or not 0 <= x <= MAX_SECONDS:
        return None
    return int(x) if float(x).is_integer() else x


def _option(doc: dict[str, object], job: dict[str, object], where: str, *names: str) -> tuple[object, str]:
    """The first of ``names`` in the job's options, else in the global ones: (value, key path)."""
    for opts, prefix in ((dict_of(job.get("job options")), f"{where}.job options"),
                         (dict_of(doc.get("global options")), "global options")):
        for name in names:
            if name in opts:
                return opts[name], f"{prefix}.{name}"
    return None, ""


def _opt_int(value: object, key: str, lo: int, hi: int) -> int:
    s = str(value).strip()
    if not re.fullmatch(r"\d{1,12}", s) or not lo <= int(s) <= hi:
        raise fio_parse.bad_value(key, value, f"must be a whole number from {lo} to {hi}")
    return int(s)


def fio_point(doc: dict[str, object], jobs: list[dict[str, object]],
              where: str = "jobs[0]") -> tuple[dict[str, object], list[str]]:
    """The plan point (as results.jsonl records it) of a group of jobs, and notes on what had to be
    assumed.

    ``doc`` has passed :func:`fio_parse.check_document`; an option fio would not have written
    raises :class:`fio_parse.FormatError` naming it (``where`` is the first job's key path)."""
    job = jobs[0]
    notes: list[str] = []
    raw_rw, rw_key = _option(doc, job, where, "rw", "readwrite")
    rw_raw = str(raw_rw or "read").split(":")[0].strip().lower()
    if rw_raw not in FIO_RW:
        raise fio_parse.bad_value(rw_key, raw_rw, "not one of fio's rw modes (" + ", ".join(FIO_RW) + ")")
    rw = FIO_RW[rw_raw]
    bs = _size(_option(doc, job, where, "bs", "blocksize")[0])
    if bs is None:
        for d in ("read", "write", "trim"):
            part = dict_of(job.get(d))
            ios, moved = int_of(part.get("total_ios") or 0), int_of(part.get("io_bytes") or 0)
            if ios > 0 and moved // ios > 0:
                bs = moved // ios
                notes.append(f"bs not in the job options: {bs} B from io_bytes / total_ios")
                break
    if bs is None:
        bs = 4096
        notes.append("bs not in the job options: fio's default 4k assumed")
    rwmixread = None
    if rw in ("rw", "randrw"):
        mix, mix_key = _option(doc, job, where, "rwmixread")
        wmix, wmix_key = _option(doc, job, where, "rwmixwrite")
        if mix is not None:
            rwmixread = _opt_int(mix, mix_key, 0, 100)
        elif wmix is not None:
            rwmixread = 100 - _opt_int(wmix, wmix_key, 0, 100)
        else:
            rwmixread = 50
    value, key = _option(doc, job, where, "numjobs")
    numjobs = 1 if value is None else _opt_int(value, key, 1, 1 << 31)
    if len(jobs) > 1:
        numjobs = len(jobs)  # one entry per job: no group_reporting
    value, key = _option(doc, job, where, "iodepth")
    iodepth = 1 if value is None else _opt_int(value, key, 1, 1 << 31)
    value, key = _option(doc, job, where, "ioengine")
    ioengine = str(value or "psync")
    if len(ioengine) > 256 or _BAD_TEXT.search(ioengine):
        raise fio_parse.bad_value(key, value, "not an fio ioengine name")
    direct_v, _ = _option(doc, job, where, "direct")
    buffered_v, _ = _option(doc, job, where, "buffered")
    direct = _opt_bool(direct_v) if direct_v is not None else (not _opt_bool(buffered_v) if buffered_v is not None
                                                               else False)
    runtime = _seconds(_option(doc, job, where, "runtime")[0])
    if runtime is None:
        ms = max(int_of(j.get("job_runtime") or 0) for j in jobs)
        runtime = round(ms / 1000, 3) if ms else None
    time_based_v, time_based_key = _option(doc, job, where, "time_based")
    point: dict[str, object] = {
        "rw": rw,
        "bs": bs,
        "rwmixread": rwmixread,
        "iodepth": iodepth,
        "numjobs": numjobs,
        "ioengine": ioengine,
        "direct": direct,
        "runtime": runtime,
        "ramp_time": _seconds(_option(doc, job, where, "ramp_time")[0]) or 0,
        "size": (size := _size(_option(doc, job, where, "size")[0])),
        "time_based": bool(time_based_key) and _opt_bool(time_based_v or "1"),
    }
    if not time_based_key and size:
        # fio leaves value-less flags out of its JSON options; a job that moved more than its size
        # can only have been time based (otherwise it stops once the size is covered)
        moved = max(sum(int_of(dict_of(j.get(d)).get("io_bytes") or 0) for d in fio_parse.DIRECTIONS) for j in jobs)
        if moved > size:
            point["time_based"] = True
            notes.append("time_based inferred: the job moved more than its size")
    host = job.get("hostname")
    if isinstance(host, str) and host:  # check_document: a string
        if len(host) > 256 or _BAD_TEXT.search(host):
            raise fio_parse.bad_value(f"{where}.hostname", host, "not a host name")
        point["host"] = host
    return point, notes


def _with_lat_percentiles(jobs: list[dict[str, object]]) -> tuple[list[dict[str, object]], bool]:
    """Jobs whose ``lat_ns`` lacks percentiles borrow them from ``clat_ns`` (fio prints total-latency
    percentiles only with ``lat_percentiles=1``); returns whether that happened.  The jobs given are
    not changed: a job that borrows is a shallow copy down to its ``lat_ns``."""
    used = False
    out = []
    for job in jobs:
        j = job
        for d in fio_parse.DIRECTIONS:
            part = dict_of(job.get(d))
            lat, clat = dict_of(part.get("lat_ns")), dict_of(part.get("clat_ns"))
            if int_of(lat.get("N") or 0) and not lat.get("percentile") and clat.get("percentile"):
                if j is job:
                    j = dict(job)
                new = dict(lat)
                new["percentile"] = clat["percentile"]
                if "bins" in clat and "bins" not in new:
                    new["bins"] = clat["bins"]
                j[d] = {**part, "lat_ns": new}
                used = True
        out.append(j)
    return out, used


def _signature(doc: dict[str, object]) -> str:
    jobs = fio_parse.job_list(doc)
    return json.dumps([doc.get("global options"), [(j.get("jobname"), j.get("hostname"), j.get("job options"))
                                                   for j in jobs]], sort_keys=True, default=str)


def _runtime(doc: dict[str, object]) -> int:
    return max([int_of(j.get("job_runtime") or 0) for j in fio_parse.job_list(doc)] or [0])


def final_documents(docs: list[dict[str, object]]) -> list[dict[str, object]]:
    """The result of each run: of consecutive status dumps of the same jobs, the last."""
    runs: list[dict[str, object]] = []
    for doc in docs:
        if not fio_parse.job_list(doc):
            continue
        if runs and _signature(runs[-1]) == _signature(doc) and _runtime(doc) >= _runtime(runs[-1]):
            runs[-1] = doc
        else:
            runs.append(doc)
    return runs


def fio_points(doc: dict[str, object]) -> list[Imported]:
    """The points of one checked fio result document (:func:`fio_parse.check_document`); raises
    :class:`fio_parse.FormatError` for an option fio would not write or a point without any I/O."""
    jobs = fio_parse.job_list(doc)
    list_key = "jobs" if doc.get("jobs") else "client_stats"
    where = {id(j): f"{list_key}[{i}]" for i, j in enumerate(list_of(doc.get(list_key)))}
    groups: dict[str, list[dict[str, object]]] = {}
    for j in jobs:
        key = json.dumps([j.get("hostname"), j.get("jobname"), j.get("groupid"), j.get("job options")],
                         sort_keys=True, default=str)
        groups.setdefault(key, []).append(j)
    out = []
    for group in groups.values():
        first = where.get(id(group[0]), f"{list_key}[0]")
        point, notes = fio_point(doc, group, first)
        fixed, from_clat = _with_lat_percentiles(group)
        m = fio_parse.metrics(doc, jobs=fixed)
        if not m["total_ios"] and not m["io_bytes"]:
            name = group[0].get("jobname")
            raise fio_parse.FormatError("no job did any I/O" + (f" ({first}, job '{name}': total_ios and io_bytes "
                                                                 "are 0 in read, write and trim)" if name else
                                                                 f" ({first}: total_ios and io_bytes are 0 in read, "
                                                                 "write and trim)"))
        unserved = fio_parse.unserved(m)
        if unserved is not None:  # a device that went away reads as empty: figures of no target (a run fails them)
            name = group[0].get("jobname")
            raise fio_parse.FormatError(unserved + (f" ({first}, job '{name}')" if name else f" ({first})"))
        if from_clat:
            m["percentiles_source"] = "clat_ns"
        if len(groups) > 1:  # fio's device figures cover the whole document: not one of its several points
            m.pop("disk_util", None)
        m.update(no_interval(FIO_NO_SAMPLES))
        extra: dict[str, object] = {"job": group[0].get("jobname"), "fio_version": doc.get("fio version")}
        opts = {**dict_of(doc.get("global options")), **dict_of(group[0].get("job options"))}
        if opts.get("filename"):
            extra["target"] = str(opts["filename"])
        if notes:
            extra["notes"] = notes
        out.append(Imported(Kind.STORAGE, point, m, extra))
    return out


# --- MLC -------------------------------------------------------------------------------------------------


# the results-line mode of each kind of figure the parser streams, and its metric
FIGURE_MODES = {"idle_matrix": "latency_matrix", "bandwidth_matrix": "bandwidth_matrix", "peak_bandwidth": "peak",
                "c2c": "c2c", "scaling": "scaling", "working_set": "working_set"}
_LATENCY_KINDS = ("idle_matrix", "c2c", "working_set")
_MEMORY_KEYS = keys_of(MemoryPoint)


def mlc_points(text: str | Iterable[str], limit: int = MAX_IMPORT_POINTS) -> tuple[list[Imported], FileInfo]:
    """Points of an MLC (or built-in engine) text, given whole or as pieces in order (a file's lines or
    blocks: the parser keeps bounded state, see app.runners.mlc_parse): one per figure.  ``info["warnings"]``
    lists what the parser found wrong with the text (a cut last row dropped, a table with fewer delays than its
    run measures, a size limit reached) and every section that gave fewer figures than it printed, by name,
    one sentence each.  ``info["sections"]``: the names of the sections that gave points, in order.  Stops
    after ``limit`` + 1 points (the caller refuses more than its limit)."""
    from app.runners.mlc_parse import parse

    parser = parse(text)
    figures: dict[int, list[Figure]] = {}
    for f in parser.figures:
        figures.setdefault(id(f.section), []).append(f)
    out: list[Imported] = []
    read: list[str] = []
    ignored: list[str] = []
    info: FileInfo = {"sections": read, "ignored_sections": ignored, "warnings": list(parser.warnings)}
    for s in parser.sections:
        engine = "builtin" if s.params.get("tool") == "memlat" else "mlc"
        info.setdefault("version", s.params.get("version"))
        info["engine"] = engine
        if s.kind in ("loaded", "idle"):
            new = _table_points(s, engine)
        else:
            new, notes = _figure_points(s, figures.get(id(s), []), engine)
            info["warnings"] += notes
        name = _section_name(s)
        (read if new else ignored).append(name)
        if not new and s.kind == "loaded":
            info["warnings"].append(_unread(s, name))
        out += new
        if len(out) > limit:
            break
    warnings = info["warnings"]
    if len(warnings) > MAX_FILE_WARNINGS:  # a text of a thousand broken sections: the first ones say enough
        info["warnings"] = warnings[:MAX_FILE_WARNINGS] + [f"… and {len(warnings) - MAX_FILE_WARNINGS} more warnings."]
    return out, info


def _section_name(s: Section) -> str:
    from app.runners.mlc_parse import SECTION_NAMES

    if s.kind in ("other", "bandwidth"):  # named by its own title
        return repr(s.title.strip()[:80])
    return SECTION_NAMES.get(s.kind, s.kind)


def _unread(s: Section, name: str) -> str:
    if s.kind in ("other", "bandwidth"):
        return f"section {name}: not a section import knows; nothing imported from it."
    return f"the {name} section has no figures (an empty table, or the text ends before its first row)."


def _base(p: dict[str, object], engine: str) -> tuple[dict[str, object], dict[str, object]]:
    """The keys every memory point of a section shares (``p``: its parameters), and its line's parts."""
    buffer = p.get("buffer_bytes")
    base = {"stride": int_of(p.get("stride") or MLC_DEFAULT_STRIDE), "buffer": _plan_value("buffer", buffer),
            "duration": p.get("duration") or 2, "cpus": p.get("cpus"), "engine": engine}
    extra = {"engine_version": p.get("version"), "command_line": p.get("command_line"),
             "delay_unit_ns": p.get("delay_unit_ns"), "load_threads": p.get("load_threads")}
    if buffer is not None and base["buffer"] is None:  # e.g. "Using buffer size of 0KB": not a buffer a plan holds
        extra["notes"] = [f"the text's buffer size ({buffer} bytes) is not one a plan can hold: recorded as unknown"]
    return base, {k: v for k, v in extra.items() if v}


def _plan_value(name: str, value: object) -> object:
    """``value`` when it is a memory key's value as a plan holds it, else None (not recorded)."""
    try:
        return value if _MEMORY_KEYS[name].parse(value) == value else None
    except ValueError:
        return None


def _table_points(s: Section, engine: str) -> list[Imported]:
    """A loaded-latency table (one point per delay) or an idle latency (one point)."""
    from app.runners.mlc_parse import idle_windows, section_figure, section_load

    p = s.params
    base, extra = _base(p, engine)
    if engine == "mlc" and s.kind == "loaded":  # MLC's bandwidth counts its latency thread's reads
        extra["bandwidth_includes_latency_thread"] = True
    out = []
    if s.kind == "loaded":
        for r in s.rows:
            point = {"mode": "loaded", "traffic": p.get("traffic") or "R", "delay": r.delay, **base}
            metrics: dict[str, object] = {"latency_ns": r.latency_ns, "bandwidth_mbps": r.bandwidth_mbps}
            load = section_load(s, r.delay)
            if load is not None:
                metrics["load_bandwidth_mbps"] = load
            metrics.update(text_interval(engine, "loaded", r.windows, metrics))
            parts = dict(extra)
            if r.warnings:  # the engine's '*' lines about this row alone ("Busy machine at delay N": contended)
                parts["warnings"] = list(r.warnings)
            out.append(Imported(Kind.MEMORY, point, metrics, parts))
    elif "latency_ns" in s.values:
        point = {"mode": "idle", "traffic": None, "delay": None, **base}
        metrics = {"latency_ns": section_figure(s, "latency_ns")}
        metrics.update(text_interval(engine, "idle", idle_windows([s]), metrics))
        out.append(Imported(Kind.MEMORY, point, metrics, dict(extra)))
    return out


def _figure_points(s: Section, figures: list[Figure], engine: str) -> tuple[list[Imported], list[str]]:
    """The points of a matrix, peak, c2c, scaling or working-set section (one per figure), and warnings naming
    the section for what it printed that gave no point."""
    p = s.params
    base, extra = _base(p, engine)
    for k in ("huge_pages", "caches", "c2c_cpus"):
        if p.get(k) is not None and (k != "caches" or s.kind == "working_set"):
            extra[k] = p[k]
    placement = s.values.get("placement")
    attached = {w for f in figures for w in f.warnings}  # '*' lines about one figure (at most 100 per section)
    out, bad = [], []
    for f in figures:
        point: dict[str, object] = {"mode": FIGURE_MODES[f.kind], "traffic": None, "delay": None, **base}
        try:
            point.update(_figure_keys(f, p))
        except ValueError as e:
            bad.append(f"{_figure_label(f)}: {e}")
            continue
        metrics: dict[str, object] = {"latency_ns" if f.kind in _LATENCY_KINDS else "bandwidth_mbps": f.value,
                                      **f.extra}
        metrics.update(text_interval(engine, FIGURE_MODES[f.kind], f.windows, metrics))
        parts = dict(extra)
        warnings = _figure_warnings(f, attached)
        if warnings:
            parts["warnings"] = warnings
        if f.kind in ("idle_matrix", "bandwidth_matrix", "c2c") and isinstance(placement, dict):
            cell = placement.get(",".join(str(k) for k in (f.key if f.kind != "c2c" else f.key[1:])))
            if cell is not None:
                parts["numa"] = cell
        if f.kind == "c2c" and f.key[1] is not None:
            parts.pop("c2c_cpus", None)  # the local pair's CPUs: not those of a remote figure
        out.append(Imported(Kind.MEMORY, point, metrics, parts))
    return out, _missing_figures(s, len(figures), bad)


def _figure_warnings(f: Figure, attached: set[str]) -> list[str]:
    """The section's '*' lines that concern this figure: those printed before it since the figure before, and
    those about the whole section (the header's, the ones after its last figure), not another figure's
    (``attached``: every line printed before one of the section's figures)."""
    return [str(w) for w in _list(f.section.params.get("warnings")) if w not in attached or w in f.warnings]


def _figure_keys(f: Figure, p: dict[str, object]) -> dict[str, object]:
    """The point keys that identify a figure, each checked as a plan's value would be (ValueError: out of range)."""
    traffic = p.get("traffic") or "R"
    if f.kind in ("idle_matrix", "bandwidth_matrix"):
        keys: dict[str, object] = {"cpu_node": f.key[0], "mem_node": f.key[1]}
        if f.kind == "bandwidth_matrix":
            keys["traffic"] = traffic
    elif f.kind == "peak_bandwidth":
        keys = {"traffic": f.key[0]}
    elif f.kind == "scaling":
        keys = {"traffic": traffic, "threads": f.key[0]}
    elif f.kind == "working_set":
        keys = {"buffer": f.key[0]}
        if p.get("huge_pages") is False:
            keys["pages"] = "4k"
    else:  # c2c: local, or remote with the writer's node, the reader's and the line's home
        keys = {"c2c": f.key[0]}
        if f.key[1] is not None:
            keys.update(cpu_node=f.key[1], reader_node=f.key[2], home=f.key[3])
    for name, value in keys.items():
        try:
            keys[name] = _MEMORY_KEYS[name].parse(value)
        except ValueError as e:
            raise ValueError(f"{name} {value}: {e}") from None
    return keys


def _figure_label(f: Figure) -> str:
    return " ".join(str(k) for k in f.key if k is not None) or f.kind


def _printed_numbers(s: Section) -> int:
    """How many figures a section printed, as the parser kept them (matrix cells, named values, table rows)."""
    cells = [s.matrix] + [m for m in _list(s.values.get("matrices")) if isinstance(m, dict)]
    n = sum(v is not None for m in cells for row in m.values() if isinstance(row, dict) for v in row.values())
    n += sum(isinstance(v, float) for v in s.values.values())
    return n + len(_list(s.values.get("table")))


def _list(v: object) -> list[object]:
    return v if isinstance(v, list) else []


def _missing_figures(s: Section, got: int, bad: list[str]) -> list[str]:
    """Warnings naming the section: no figures at all, fewer than it printed (and why, where it can tell), figures
    out of range."""
    name = _section_name(s)
    if not got and not bad:
        return [_unread(s, name)]
    printed = _printed_numbers(s)
    why = _unread_reasons(s)
    notes = []
    reasons = "; ".join(why[:4])
    if got + len(bad) < printed:
        notes.append(f"the {name} section printed {printed} figure(s), only {got + len(bad)} could be read ("
                     + (reasons or "a line cut short?") + "): the others are not imported.")
    elif why:
        notes.append(f"the {name} section looks incomplete ({reasons}); its {got} figure(s) are imported.")
    if bad:
        notes.append(f"the {name} section has {len(bad)} figure(s) out of range, not imported: "
                     + "; ".join(bad[:3]) + ("; …" if len(bad) > 3 else "") + ".")
    return notes


def _unread_reasons(s: Section) -> list[str]:
    """What in a section's text gave no figure: a matrix row short of cells, a label no figure has, a remote
    c2c matrix without the title naming where its line is homed."""
    from app.runners.mlc_parse import peak_traffic

    why = []
    for m in [s.matrix] + [m for m in _list(s.values.get("matrices")) if isinstance(m, dict)]:
        cols = max((len(row) for row in m.values() if isinstance(row, dict)), default=0)
        why += [f"row {r} has {len(row)} of {cols} cells, cut?" for r, row in m.items()
                if isinstance(row, dict) and len(row) < cols]
    labels = [k for k, v in s.values.items() if isinstance(v, float)]
    if s.kind == "peak_bandwidth":
        why += [f"{k!r} is not a traffic mix import knows" for k in labels if peak_traffic(k) is None]
    if s.kind == "c2c":
        why += [f"{k!r} is not a local HIT or HITM latency" for k in labels
                if "remote" in k.lower() or not re.search(r"\bhitm?\b", k, re.IGNORECASE)]
        if None in _list(s.values.get("homes")):
            why.append("a remote matrix without the title that says where its line is homed")
    return why


# --- files -------------------------------------------------------------------------------------------------

_KINDS = ((stat.S_ISFIFO, "a FIFO (named pipe)"), (stat.S_ISCHR, "a character device"),
          (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"))


def _not_regular(path: str, mode: int) -> UsageError:
    if stat.S_ISDIR(mode):
        return UsageError(f"{path}: is a directory; give the fio or MLC output files themselves.")
    what = next((name for test, name in _KINDS if test(mode)), "not a regular file")
    return UsageError(f"{path}: is {what}, not a regular file; import reads saved fio JSON or MLC text files only.")


def _mib(n: int) -> str:
    return f"{n / (1 << 20):.0f} MiB" if n >= 1 << 20 else f"{n} bytes"


def check_input(path: str) -> int:
    """Refuse, before anything is opened, what import must not read; returns the file's size.  A symbolic link
    on the way that another user made is refused: it would choose which of root's files import reads (and copies
    into raw/, which every user may read)."""
    check_links(Path(path), IMPORT_RISK)
    try:
        st = os.stat(path)
    except FileNotFoundError:
        raise UsageError(f"{path}: no such file.") from None
    except OSError as e:
        raise UsageError(f"{path}: cannot be read ({e.strerror}).") from None
    if not stat.S_ISREG(st.st_mode):
        raise _not_regular(path, st.st_mode)
    if st.st_size > MAX_IMPORT_BYTES:
        raise UsageError(f"{path}: is {_mib(st.st_size)}, more than the {_mib(MAX_IMPORT_BYTES)} import reads from "
                         "one file; cut it to the part with the results.")
    return st.st_size


def _unlinked(path: str) -> str:
    """``path`` with the links check_input accepted resolved, but a last name that is no link now kept as it is:
    opened with O_NOFOLLOW, a file another user swapped for a link since the check is refused."""
    if os.path.islink(path):
        return os.path.realpath(path)
    return os.path.join(os.path.realpath(os.path.dirname(os.path.abspath(path))), os.path.basename(path))


def open_regular(path: str) -> io.BufferedReader:
    """The file opened for reading in binary, refused unless it is a regular file: opened without
    blocking (a FIFO swapped in after :func:`check_input` cannot hang us) and checked again."""
    try:
        fd = os.open(_unlinked(path), os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | os.O_NOCTTY | os.O_NOFOLLOW)
    except FileNotFoundError:
        raise UsageError(f"{path}: no such file.") from None
    except OSError as e:
        if e.errno == errno.ELOOP:
            raise UsageError(f"{path}: became a symbolic link after it was checked; refusing to read it.") from None
        raise UsageError(f"{path}: cannot be read ({e.strerror}).") from None
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode):
        os.close(fd)
        raise _not_regular(path, st.st_mode)
    return os.fdopen(fd, "rb")


def text_chunks(path: str, limit: int = MAX_IMPORT_BYTES) -> Iterator[str]:
    """The file's text in pieces of about CHUNK_BYTES: UTF-8 (a BOM dropped) or, after a UTF-16 BOM
    (PowerShell's ``>``), UTF-16; undecodable bytes replaced; CRLF and CR turned into LF.  More than
    ``limit`` bytes (a file that grew since it was checked) is an error."""
    with open_regular(path) as f:
        total = 0
        decoder: codecs.IncrementalDecoder | None = None
        carry = ""
        while True:
            try:
                data = f.read(CHUNK_BYTES)
            except OSError as e:
                raise UsageError(f"{path}: cannot be read ({e.strerror}).") from None
            total += len(data)
            if total > limit:
                raise UsageError(f"{path}: is more than the {_mib(limit)} import reads from one file.")
            if decoder is None:
                if data.startswith(b"\xef\xbb\xbf"):
                    data = data[3:]
                if data[:2] in (b"\xff\xfe", b"\xfe\xff"):
                    decoder = codecs.getincrementaldecoder("utf-16")("replace")
                else:
                    decoder = codecs.getincrementaldecoder("utf-8")("replace")
            text = carry + decoder.decode(data, final=not data)
            carry = ""
            if text.endswith("\r") and data:
                carry, text = "\r", text[:-1]
            text = text.replace("\r\n", "\n").replace("\r", "\n")
            if text:
                yield text
            if not data:
                return


def read_file(path: str) -> str:
    """A whole input file as text (see :func:`text_chunks`), after :func:`check_input`."""
    check_input(path)
    return "".join(text_chunks(path))


def _copy(path: str, results: ResultsDir, name: str) -> None:
    """Copy an input file into raw/NAME (opened in the held raw/, a last symbolic link not followed), within the
    same bounds as reading it."""
    assert results.raw_fd is not None  # results.create opened it
    with open_regular(path) as src, os.fdopen(open_file(name, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, results.raw_fd),
                                              "wb") as out:
        total = 0
        while True:
            try:
                data = src.read(CHUNK_BYTES)
            except OSError as e:
                raise UsageError(f"{path}: cannot be read ({e.strerror}).") from None
            if not data:
                return
            total += len(data)
            if total > MAX_IMPORT_BYTES:
                raise UsageError(f"{path}: is more than the {_mib(MAX_IMPORT_BYTES)} import reads from one file.")
            out.write(data)


def _fio_file(path: str, budget: int) -> tuple[list[Imported], FileInfo] | None:
    """The fio points of a file, read as a stream (None when it holds no fio document).

    Of consecutive status dumps of the same jobs only the last is kept (the result of that run);
    no more than one document is held in memory at a time."""
    splitter = fio_parse.DocumentSplitter()
    points: list[Imported] = []
    current: tuple[int, dict[str, object]] | None = None
    tracker = fio_parse.SampleTracker()  # the current run's dumps differenced: each interval's histograms
    intervals: list[dict[str, object]] = []
    counts = {"documents": 0, "fio": 0, "runs": 0}
    versions: set[str] = set()
    has_brace = has_jobs = False

    def flush() -> None:
        nonlocal current
        if current is None:
            return
        line, doc = current
        current = None
        try:
            fio_parse.check_document(doc)  # in full: the latencies too
            new = fio_points(doc)
        except fio_parse.FormatError as e:
            raise UsageError(f"{path}: fio JSON document at line {line}: {e}.") from None
        counts["runs"] += 1
        if len(new) == 1 and len(intervals) > 1:  # a stream of one point's dumps: its heat map
            new[0].hist_lines = intervals[:]
        points.extend(new)
        if len(points) > budget:
            raise UsageError(f"{path}: more than {MAX_IMPORT_POINTS:,} points in this import; import the files in "
                             "smaller groups.")

    def take(line: int, doc: dict[str, object]) -> None:
        nonlocal current, tracker
        counts["documents"] += 1
        if not fio_parse.is_fio_document(doc):
            return
        try:
            fio_parse.check_document(doc, deep=False)  # what ordering the stream needs; the rest in flush()
        except fio_parse.FormatError as e:
            raise UsageError(f"{path}: fio JSON document at line {line}: {e}.") from None
        counts["fio"] += 1
        if doc.get("fio version"):
            versions.add(str(doc["fio version"]))
        if not fio_parse.job_list(doc):
            return
        if current is not None and _signature(current[1]) == _signature(doc) and _runtime(doc) >= _runtime(current[1]):
            current = (line, doc)
        else:
            flush()
            current = (line, doc)
            tracker = fio_parse.SampleTracker()  # a new run: its counters from zero
            intervals.clear()
        interval(doc)

    def interval(doc: dict[str, object]) -> None:
        try:
            fio_parse.check_document(doc)  # the bins are read: checked in full first
        except fio_parse.FormatError:
            return  # flush() names the fault when this is the run's result; a bad dump before it adds no interval
        sample = tracker.update(doc, fio_parse.job_runtime_ms(doc) / 1000.0)
        hist = sample.pop(HIST_KEY, None) if sample is not None else None
        if sample is not None and isinstance(hist, dict) and hist and len(intervals) < MAX_IMPORT_INTERVALS:
            intervals.append(hist_line(sample, hist))

    tail = ""
    for chunk in text_chunks(path):
        has_brace = has_brace or "{" in chunk
        if not has_jobs:
            has_jobs = '"jobs"' in tail + chunk
            tail = chunk[-8:]
        for line, doc in splitter.feed_numbered(chunk):
            take(line, doc)
    for line, doc in splitter.close_numbered():
        take(line, doc)
    flush()
    if counts["fio"]:
        if not points:
            raise UsageError(f"{path}: the fio JSON in it has no jobs (key 'jobs' or 'client_stats' is empty).")
        return points, {"documents": counts["documents"], "runs": counts["runs"], "fio_versions": sorted(versions),
                        "noise_lines": splitter.noise_count}
    if splitter.oversized:
        raise UsageError(f"{path}: the JSON document at line {splitter.oversized[0]} is larger than "
                         f"{_mib(fio_parse.MAX_DOCUMENT_CHARS)}, more than fio writes for one result.")
    if has_brace and has_jobs:
        raise UsageError(f"{path}: looks like fio JSON but no complete document could be read (truncated, or not "
                         "the JSON of --output-format=json/json+).")
    return None


def _lines(path: str) -> Iterator[str]:
    carry = ""
    for chunk in text_chunks(path):
        parts = (carry + chunk).split("\n")
        carry = parts.pop()
        yield from parts
    if carry:
        yield carry


def _hist_log_file(path: str) -> tuple[list[Imported], FileInfo] | None:
    """The one point of fio's histogram log (``write_hist_log``; app.stats.histlog), its heat map from each interval's
    histograms; None when the file is not one.  Its figures come from the histograms alone, through the same
    reader as fio's JSON: I/Os and their completion latencies (``clat``: the log has no submission time), IOPS and
    bandwidth over the logged time at the logged block size; the access pattern, depth and the other options are
    not in the log."""
    first = next((ln for ln in _lines(path) if ln.strip()), "")
    if not histlog.looks_like(first):
        return None
    try:
        intervals, sizes = histlog.read_log(_lines(path))
    except histlog.FormatError as e:
        raise UsageError(f"{path}: fio histogram log: {e}.") from None
    if not intervals:
        raise UsageError(f"{path}: fio histogram log without any I/O in it.")
    runtime_ms = max(1, round(float(str(intervals[-1]["t"])) * 1000))
    job: dict[str, object] = {"jobname": os.path.basename(path)[:200], "job_runtime": runtime_ms}
    for d in fio_parse.DIRECTIONS:
        bins: dict[int, int] = {}
        for line in intervals:
            for v, c in sample_hist(line, d) or []:
                bins[v] = bins.get(v, 0) + c
        n = sum(bins.values())
        if not n:
            continue
        mean = sum(v * c for v, c in bins.items()) / n
        lat = {"N": n, "min": min(bins), "max": max(bins), "mean": mean,
               "stddev": math.sqrt(sum(c * (v - mean) ** 2 for v, c in bins.items()) / n),
               "bins": {str(v): c for v, c in sorted(bins.items())}}
        job[d] = {"total_ios": n, "io_bytes": n * sizes[d], "runtime": runtime_ms, "iops": n * 1000 / runtime_ms,
                  "bw_bytes": n * sizes[d] * 1000 / runtime_ms, "clat_ns": lat, "lat_ns": lat}
    done = [d for d in fio_parse.DIRECTIONS if d in job]
    rw = "rw" if {"read", "write"} <= set(done) else done[0]
    job["job options"] = {"rw": rw, "bs": str(sizes[done[0]])}
    doc: dict[str, object] = {"jobs": [job]}
    try:
        fio_parse.check_document(doc)
        (point,) = fio_points(doc)
    except (fio_parse.FormatError, ValueError) as e:
        raise UsageError(f"{path}: fio histogram log: {e}.") from None
    point.extra["notes"] = [*list_of(point.extra.get("notes")),
                            "a histogram log: completion latencies (clat) only; the access pattern (sequential or "
                            "random), iodepth and the other options are not in it"]
    point.metrics["percentiles_source"] = "clat_ns"  # every latency figure is the log's completion latency
    point.hist_lines = intervals
    return [point], {"documents": 0, "runs": 1, "fio_versions": [], "noise_lines": 0}


def parse_file(path: str, budget: int = MAX_IMPORT_POINTS) -> tuple[str, list[Imported], FileInfo]:
    """(kind of file, points, info) of one input; UsageError when it holds neither format.

    ``budget``: how many more points the import may take."""
    check_input(path)
    fio = _fio_file(path, budget)
    if fio is not None:
        return ("fio",) + fio
    hist_log = _hist_log_file(path)
    if hist_log is not None:
        return ("fio-hist-log",) + hist_log
    points, info = mlc_points(text_chunks(path), budget)
    if len(points) > budget:
        raise UsageError(f"{path}: more than {MAX_IMPORT_POINTS:,} points in this import; import the files in "
                         "smaller groups.")
    if points:
        return "mlc", points, info
    if info.get("ignored_sections") or _mentions_mlc(path):
        raise UsageError(f"{path}: MLC output without a figure import can read (sections found: "
                         f"{', '.join(map(str, info.get('ignored_sections') or [])) or 'none'}); import takes the "
                         "tables of plain mlc and of its single modes.")
    raise UsageError(f"{path}: neither fio JSON (--output-format=json or json+) nor Intel MLC text output was found "
                     "in it.")


def _mentions_mlc(path: str) -> bool:
    tail = ""
    for chunk in text_chunks(path):
        window = tail + chunk
        if "Memory Latency Checker" in window or "Inject" in window:
            return True
        tail = chunk[-32:]
    return False


def import_files(files: list[str], out: str | os.PathLike[str]) -> tuple[Path, list[Source]]:
    """Create the results directory ``out`` from the files; returns it and the source summaries."""
    if not files:
        raise UsageError("import: give at least one fio JSON or MLC text file.")
    if os.path.lexists(out) and not os.path.isdir(out):
        raise UsageError(f"--out {out}: exists and is not a directory; give a new directory for the results.")
    parsed = []
    budget = MAX_IMPORT_POINTS
    for f in files:  # every file is checked before anything is written
        ftype, points, info = parse_file(f, budget)
        budget -= len(points)
        parsed.append((f, ftype, points, info))
    results = ResultsDir(out)
    kinds = sorted({pt.kind for _, _, pts, _ in parsed for pt in pts})
    kind = kinds[0] if len(kinds) == 1 else "mixed"
    plan: list[dict[str, object]] = []
    tools: dict[str, str] = {}
    sources: list[Source] = []
    records: list[dict[str, object]] = []
    targets: set[str] = set()
    hist_files: list[tuple[str, list[dict[str, object]]]] = []
    for n, (f, ftype, points, info) in enumerate(parsed):
        raw_name = f"import-{n:02d}-{re.sub(r'[^A-Za-z0-9_.+-]', '_', os.path.basename(f))}"
        src: Source = {"file": os.path.basename(f), "path": os.path.abspath(f), "format": ftype,
                       "raw": f"raw/{raw_name}", "points": len(points)}
        if ftype in ("fio", "fio-hist-log"):
            src["documents"], src["runs"] = info["documents"], info["runs"]
            if info["fio_versions"]:
                tools["fio"] = ", ".join(sorted(set(filter(None, [tools.get("fio"), *info["fio_versions"]]))))
        else:
            if info.get("version"):
                key = "mlc" if info.get("engine") == "mlc" else "memlat"
                version = f"v{info['version']}" if key == "mlc" else str(info["version"])
                known = tools[key].split(", ") if tools.get(key) else []
                tools[key] = ", ".join(sorted(set(known + [version])))
            src["sections"] = list(info.get("sections") or [])
            if info.get("ignored_sections"):
                src["ignored_sections"] = info["ignored_sections"]
        warnings = [str(w) for w in info.get("warnings") or []]
        if warnings:  # e.g. a truncated MLC table: kept in run.json, shown by the report
            src["warnings"] = warnings
        sources.append(src)
        for pt in points:
            rec = {"schema_version": SCHEMA_VERSION, "kind": pt.kind, "index": len(records), "point": pt.point,
                   "metrics": pt.metrics}
            rec.update(pt.extra)
            raw = {"source": src["raw"]}
            if pt.hist_lines:
                raw["hist"] = f"{RAW}/import-{len(records):04d}{HIST_SUFFIX}"
                hist_files.append((raw["hist"], pt.hist_lines))
            rec["raw"] = raw
            rec["imported_from"] = src["file"]
            if pt.kind == Kind.STORAGE and pt.extra.get("target"):
                targets.add(str(pt.extra["target"]))
            records.append(rec)
            plan.append(pt.point)
    meta = {
        "schema_version": SCHEMA_VERSION,
        "tool": "profiler-tui",
        "preset": {"name": "import", "kind": kind,
                   "description": f"Imported from {len(files)} file(s): "
                                  + ", ".join(os.path.basename(f) for f in files)},
        "kind": kind,
        "plan": plan,
        "points_total": len(plan),
        "points_done": len(records),
        "target": targets.pop() if len(targets) == 1 else None,
        "target_info": None,
        "environment": {},
        "tools": tools,
        "sources": sources,
        "imported_at": now_iso(),
        "started": None,
        "ended": None,
        "status": "imported",
    }
    try:
        results.create(runmeta.new(meta, results.run_json))
        for (source_file, *_), src in zip(parsed, sources):
            _copy(source_file, results, str(src["raw"]).removeprefix(f"{RAW}/"))
        for rel, hist_lines in hist_files:  # each second's histograms of a stream: the point's heat map
            results.write_raw_file(rel.removeprefix(f"{RAW}/"),
                                   "".join(json.dumps(h, separators=(",", ":")) + "\n" for h in hist_lines))
        with os.fdopen(open_file(RESULTS_JSONL, os.O_WRONLY | os.O_APPEND, results.fd), "a",
                       encoding="utf-8") as out_file:  # all at once: one fsync, not one per point
            for rec in records:
                out_file.write(write_json(rec))
            out_file.flush()
            os.fsync(out_file.fileno())
    except OSError as e:
        where = e.filename or results.path
        raise UsageError(f"{where}: cannot write the imported results there ({e.strerror or e}); choose another "
                         "--out directory.") from None
    finally:
        results.close()
    return results.path, sources
