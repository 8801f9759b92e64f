"""`profiler-tui import FILE... --out DIR`: existing fio and MLC outputs → a results directory.

fio: JSON or json+ documents as users save them — alone, after warning lines, mixed with
stderr, after ``--output-format=normal,json`` text, as a ``--status-interval`` stream (the
last dump of a run is its result), several jobs without ``group_reporting`` (jobs with the
same name and options are one point, their figures combined as fio's group reporting would),
mixed read/write, and client/server output (``client_stats``, one point per host).
Parameters come from the job's ``job options`` over the document's ``global options``, with
fio's defaults (rw=read, bs=4k, iodepth=1, numjobs=1, ioengine=psync, direct=0) where absent.

MLC: text of ``mlc`` / ``mlc.exe`` (CRLF too) or the built-in engine, read by
:mod:`app.runners.mlc_parse`; loaded-latency tables become one memory point per delay,
idle latency one idle point; parameters from the ``Command line parameters`` line.

The directory gets run.json (status ``imported``, plan = the imported points), results.jsonl
and a copy of every input file in raw/.
"""

from __future__ import annotations

import copy
import json
import os
import re
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

from app.errors import UsageError
from app.results import ResultsDir, now_iso
from app.runners import fio_parse
from app.units import parse_duration, parse_size

FIO_RW = {"read": "read", "write": "write", "trim": "trim", "randread": "randread", "randwrite": "randwrite",
          "randtrim": "randtrim", "rw": "rw", "readwrite": "rw", "randrw": "randrw", "trimwrite": "trimwrite"}
MLC_DEFAULT_STRIDE = 64


@dataclass
class Imported:
    kind: str  # storage | memory
    point: dict[str, Any]
    metrics: dict[str, Any]
    extra: dict[str, Any] = field(default_factory=dict)


# --- fio -----------------------------------------------------------------------------------------------


def _opt_bool(v: Any) -> bool:
    return str(v).strip().lower() not in ("0", "false", "no", "off")


def _size(v: Any) -> int | None:
    if v is None:
        return None
    s = str(v).strip().split(",")[0].split(":")[0].split("-")[0]
    try:
        return parse_size(s)
    except ValueError:
        return None


def _seconds(v: Any) -> float | int | None:
    if v is None:
        return None
    s = str(v).strip().lower()
    m = re.fullmatch(r"(\d+(?:\.\d+)?)(us|ms|s|m|h)?", s)
    if not m:
        try:
            x = parse_duration(s)
        except ValueError:
            return None
    else:
        x = float(m.group(1)) * {"us": 1e-6, "ms": 1e-3, "s": 1, "m": 60, "h": 3600, None: 1}[m.group(2)]
    return int(x) if float(x).is_integer() else x


def _int(v: Any, default: int) -> int:
    try:
        return int(str(v).strip())
    except (TypeError, ValueError):
        return default


def fio_point(doc: dict[str, Any], jobs: list[dict[str, Any]]) -> tuple[dict[str, Any], list[str]]:
    """The SPEC §7 point of a group of jobs, and notes on what had to be assumed."""
    job = jobs[0]
    opts: dict[str, Any] = {}
    opts.update(doc.get("global options") or {})
    opts.update(job.get("job options") or {})
    notes: list[str] = []
    rw_raw = str(opts.get("rw") or opts.get("readwrite") or "read").split(":")[0].strip().lower()
    rw = FIO_RW.get(rw_raw, rw_raw)
    bs = _size(opts.get("bs") or opts.get("blocksize"))
    if bs is None:
        for d in ("read", "write", "trim"):
            part = job.get(d) or {}
            if int(part.get("total_ios") or 0) > 0:
                bs = int(part["io_bytes"]) // int(part["total_ios"])
                notes.append(f"bs not in the job options: {bs} B from io_bytes / total_ios")
                break
    if bs is None:
        bs = 4096
        notes.append("bs not in the job options: fio's default 4k assumed")
    rwmixread = None
    if rw in ("rw", "randrw"):
        if opts.get("rwmixread") is not None:
            rwmixread = _int(opts["rwmixread"], 50)
        elif opts.get("rwmixwrite") is not None:
            rwmixread = 100 - _int(opts["rwmixwrite"], 50)
        else:
            rwmixread = 50
    numjobs = _int(opts.get("numjobs"), 1)
    if len(jobs) > 1:
        numjobs = len(jobs)  # one entry per job: no group_reporting
    direct = _opt_bool(opts["direct"]) if "direct" in opts else (not _opt_bool(opts["buffered"]) if "buffered" in opts
                                                                  else False)
    runtime = _seconds(opts.get("runtime"))
    if runtime is None:
        ms = max(int(job.get("job_runtime") or 0) for job in jobs)
        runtime = round(ms / 1000, 3) if ms else None
    point: dict[str, Any] = {
        "rw": rw,
        "bs": bs,
        "rwmixread": rwmixread,
        "iodepth": _int(opts.get("iodepth"), 1),
        "numjobs": numjobs,
        "ioengine": str(opts.get("ioengine") or "psync"),
        "direct": direct,
        "runtime": runtime,
        "ramp_time": _seconds(opts.get("ramp_time")) or 0,
        "size": _size(opts.get("size")),
        "time_based": "time_based" in opts and _opt_bool(opts.get("time_based") or "1"),
    }
    if "time_based" not in opts and point["size"]:
        # fio leaves value-less flags out of its JSON options; a job that moved more than its size
        # can only have been time based (otherwise it stops once the size is covered)
        moved = max(sum(int((j.get(d) or {}).get("io_bytes") or 0) for d in fio_parse.DIRECTIONS) for j in jobs)
        if moved > point["size"]:
            point["time_based"] = True
            notes.append("time_based inferred: the job moved more than its size")
    if job.get("hostname"):
        point["host"] = job["hostname"]
    return point, notes


def _with_lat_percentiles(jobs: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], bool]:
    """Jobs whose ``lat_ns`` lacks percentiles borrow them from ``clat_ns`` (fio prints total-latency
    percentiles only with ``lat_percentiles=1``); returns whether that happened."""
    used = False
    out = []
    for job in jobs:
        j = job
        for d in fio_parse.DIRECTIONS:
            part = job.get(d) or {}
            lat, clat = part.get("lat_ns") or {}, part.get("clat_ns") or {}
            if int(lat.get("N") or 0) and not lat.get("percentile") and clat.get("percentile"):
                if j is job:
                    j = copy.deepcopy(job)
                new = j[d]["lat_ns"]
                new["percentile"] = clat["percentile"]
                if "bins" in clat and "bins" not in new:
                    new["bins"] = clat["bins"]
                used = True
        out.append(j)
    return out, used


def _signature(doc: dict[str, Any]) -> str:
    jobs = fio_parse.job_list(doc)
    return json.dumps([doc.get("global options"), [(j.get("jobname"), j.get("hostname"), j.get("job options"))
                                                   for j in jobs]], sort_keys=True, default=str)


def _runtime(doc: dict[str, Any]) -> int:
    return max([int(j.get("job_runtime") or 0) for j in fio_parse.job_list(doc)] or [0])


def final_documents(docs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The result of each run: of consecutive status dumps of the same jobs, the last."""
    runs: list[dict[str, Any]] = []
    for doc in docs:
        if not fio_parse.job_list(doc):
            continue
        if runs and _signature(runs[-1]) == _signature(doc) and _runtime(doc) >= _runtime(runs[-1]):
            runs[-1] = doc
        else:
            runs.append(doc)
    return runs


def fio_points(doc: dict[str, Any]) -> list[Imported]:
    jobs = fio_parse.job_list(doc)
    groups: dict[str, list[dict[str, Any]]] = {}
    for j in jobs:
        key = json.dumps([j.get("hostname"), j.get("jobname"), j.get("groupid"), j.get("job options")],
                         sort_keys=True, default=str)
        groups.setdefault(key, []).append(j)
    out = []
    for group in groups.values():
        point, notes = fio_point(doc, group)
        fixed, from_clat = _with_lat_percentiles(group)
        m = fio_parse.metrics(doc, jobs=fixed)
        if from_clat:
            m["percentiles_source"] = "clat_ns"
        extra: dict[str, Any] = {"job": group[0].get("jobname"), "fio_version": doc.get("fio version")}
        opts = {**(doc.get("global options") or {}), **(group[0].get("job options") or {})}
        if opts.get("filename"):
            extra["target"] = opts["filename"]
        if notes:
            extra["notes"] = notes
        out.append(Imported("storage", point, m, extra))
    return out


# --- MLC -------------------------------------------------------------------------------------------------


def mlc_points(text: str | Iterable[str]) -> tuple[list[Imported], dict[str, Any]]:
    """Points of an MLC (or built-in engine) text, given whole or as pieces in order (a file's lines or
    blocks: the parser keeps bounded state, see app.runners.mlc_parse).  ``info["warnings"]`` lists what
    the parser found wrong with the text (a cut last row dropped, a table with fewer delays than its run
    measures, a size limit reached), one sentence each."""
    from app.runners.mlc_parse import parse

    parser = parse(text)
    sections = parser.sections
    out: list[Imported] = []
    info: dict[str, Any] = {"ignored_sections": [], "warnings": list(parser.warnings)}
    for s in sections:
        p = s.params
        engine = "builtin" if p.get("tool") == "memlat" else "mlc"
        info.setdefault("version", p.get("version"))
        info["engine"] = engine
        base = {"stride": int(p.get("stride") or MLC_DEFAULT_STRIDE), "buffer": p.get("buffer_bytes"),
                "duration": p.get("duration") or 2, "cpus": p.get("cpus"), "engine": engine}
        extra = {"engine_version": p.get("version"), "command_line": p.get("command_line")}
        extra = {k: v for k, v in extra.items() if v}
        if s.kind == "loaded" and s.rows:
            for r in s.rows:
                point = {"mode": "loaded", "traffic": p.get("traffic") or "R", "delay": r.delay, **base}
                metrics: dict[str, Any] = {"latency_ns": r.latency_ns, "bandwidth_mbps": r.bandwidth_mbps}
                out.append(Imported("memory", point, metrics, dict(extra)))
        elif s.kind == "idle" and "latency_ns" in s.values:
            point = {"mode": "idle", "traffic": None, "delay": None, **base}
            out.append(Imported("memory", point, {"latency_ns": float(s.values["latency_ns"])}, dict(extra)))
        else:
            info["ignored_sections"].append(s.kind)
    return out, info


# --- files -------------------------------------------------------------------------------------------------


def read_file(path: str) -> str:
    p = Path(path)
    if not p.exists():
        raise UsageError(f"{path}: no such file.")
    if p.is_dir():
        raise UsageError(f"{path}: is a directory; give the fio or MLC output files themselves.")
    try:
        data = p.read_bytes()
    except OSError as e:
        raise UsageError(f"{path}: cannot be read ({e.strerror}).") from None
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    if data[:2] in (b"\xff\xfe", b"\xfe\xff"):
        return data.decode("utf-16", "replace")  # PowerShell's `>` redirection
    return data.decode("utf-8", "replace")


def parse_file(path: str) -> tuple[str, list[Imported], dict[str, Any]]:
    """(kind of file, points, info) of one input; UsageError when it holds neither format."""
    text = read_file(path).replace("\r\n", "\n").replace("\r", "\n")
    docs, noise = fio_parse.split_documents(text)
    fio_docs = [d for d in docs if fio_parse.job_list(d) or "fio version" in d]
    if fio_docs:
        runs = final_documents(fio_docs)
        points = [pt for doc in runs for pt in fio_points(doc)]
        if not points:
            raise UsageError(f"{path}: the fio JSON in it has no jobs (key 'jobs' or 'client_stats' is empty).")
        versions = sorted({str(d.get("fio version")) for d in runs if d.get("fio version")})
        return "fio", points, {"documents": len(docs), "runs": len(runs), "fio_versions": versions,
                               "noise_lines": len(noise)}
    if "{" in text and '"jobs"' in text:
        raise UsageError(f"{path}: looks like fio JSON but no complete document could be read (truncated, or not "
                         "the JSON of --output-format=json/json+).")
    points, info = mlc_points(text)
    if points:
        return "mlc", points, info
    if "Memory Latency Checker" in text or "Inject" in text:
        raise UsageError(f"{path}: MLC output without a loaded-latency table or an idle latency (sections found: "
                         f"{', '.join(info['ignored_sections']) or 'none'}); import takes --loaded_latency and "
                         "--idle_latency outputs.")
    raise UsageError(f"{path}: neither fio JSON (--output-format=json or json+) nor Intel MLC text output was found "
                     "in it.")


def import_files(files: list[str], out: str | os.PathLike[str]) -> tuple[Path, list[dict[str, Any]]]:
    """Create the results directory ``out`` from the files; returns it and the source summaries."""
    if not files:
        raise UsageError("import: give at least one fio JSON or MLC text file.")
    parsed = [(f,) + parse_file(f) for f in files]  # every file is checked before anything is written
    results = ResultsDir(out)
    kinds = sorted({pt.kind for _, _, pts, _ in parsed for pt in pts})
    kind = kinds[0] if len(kinds) == 1 else "mixed"
    plan: list[dict[str, Any]] = []
    tools: dict[str, str] = {}
    sources: list[dict[str, Any]] = []
    records: list[dict[str, Any]] = []
    targets: set[str] = set()
    for n, (f, ftype, points, info) in enumerate(parsed):
        raw_name = f"import-{n:02d}-{re.sub(r'[^A-Za-z0-9_.+-]', '_', os.path.basename(f))}"
        src = {"file": os.path.basename(f), "path": os.path.abspath(f), "format": ftype, "raw": f"raw/{raw_name}",
               "points": len(points)}
        if ftype == "fio":
            src.update(documents=info["documents"], runs=info["runs"])
            if info["fio_versions"]:
                tools["fio"] = ", ".join(sorted(set(filter(None, [tools.get("fio")] + info["fio_versions"]))))
        else:
            if info.get("version"):
                key = "mlc" if info.get("engine") == "mlc" else "memlat"
                version = f"v{info['version']}" if key == "mlc" else str(info["version"])
                known = tools[key].split(", ") if tools.get(key) else []
                tools[key] = ", ".join(sorted(set(known + [version])))
            if info.get("ignored_sections"):
                src["ignored_sections"] = info["ignored_sections"]
        sources.append(src)
        for pt in points:
            rec = {"kind": pt.kind, "index": len(records), "point": pt.point, "metrics": pt.metrics}
            rec.update(pt.extra)
            rec["raw"] = {"source": src["raw"]}
            rec["imported_from"] = src["file"]
            if pt.kind == "storage" and pt.extra.get("target"):
                targets.add(str(pt.extra["target"]))
            records.append(rec)
            plan.append(pt.point)
    meta = {
        "tool": "profiler-tui",
        "preset": {"name": "import", "kind": kind,
                   "description": f"Imported from {len(files)} file(s): " + ", ".join(os.path.basename(f) for f in files)},
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
    results.create(meta)
    for (f, *_), src in zip(parsed, sources):
        shutil.copyfile(f, results.path / src["raw"])
    for rec in records:
        results.append(rec)
    return results.path, sources
