"""The fio runner: one plan point → one job file → one fio process, streamed live.

The job file written to ``raw/`` is exactly what runs (``fio JOBFILE`` reproduces the job);
output options stay on the command line: ``--output-format=json+ --status-interval=…`` (:func:`status_interval_ms`:
sub-second dumps give the point's interval its samples; the samples file and the live charts keep one a second).
fio starts in raw/ as
the sweep holds it open (``ctx.raw_dir``, /proc/PID/fd/N: the directory that was checked, which only root can
write) and reads the job file there by name, so nothing renamed or swapped in for raw/ later changes what it runs.
"""

from __future__ import annotations

import json
import os
import re
import signal
import stat
import time
from array import array
from contextlib import aclosing
from dataclasses import dataclass, replace
from pathlib import Path
from typing import IO, Any, AsyncGenerator, Hashable, Iterator, Mapping, Sequence, cast

from app.core import settings
from app.core.errors import SafetyError, ToolMissing, UsageError
from app.core.sanitize import clean_line
from app.core.units import format_duration, format_size
from app.host.blocktrace import BlockTracer, start_tracing, tracing_part
from app.host.cpustat import CpuWindow
from app.host.devstat import CounterWindow, DeviceWindow, open_counters
from app.host.external import run_tool
from app.host.programs import which_trusted
from app.host.topology import check_cpus
from app.model.keys import MAX_SECONDS, NODE
from app.model.points import WRITE_MODES, Kind, Point, StoragePoint, implied, json_types, keys_of
from app.model.records import MAX_NUMBER, JSONObject, Parts, StorageMetrics, number
from app.model.tails import tail_stability
from app.plan.openloop import open_loop_part, rate_options
from app.plan.procedure import (
    ASSUMED_PRECONDITION_BYTES_PER_S,
    SEQUENTIAL_PRECONDITION_BS,
    SEQUENTIAL_PRECONDITION_PASSES,
    SEQUENTIAL_PRECONDITION_QD,
    Procedure,
    first_write_point,
    offered_load,
    region_size,
)
from app.runners.base import Child, Context, Event, Phase, Result, Runner, Sample
from app.runners.fio_parse import (
    PERCENTILE_LIST,
    DocumentSplitter,
    PhaseTracker,
    SampleTracker,
    fio_done,
    io_started,
    job_list,
    job_runtime_ms,
    metrics,
    operating_point,
    steady_progress,
    steady_result,
    unserved,
)
from app.stats.finesamples import fine_intervals
from app.stats.latmap import HIST_KEY, HIST_SUFFIX, hist_line
from app.stats.precision import PrecisionWatch, precision_part, target_percent
from app.stats.timeseries import MAX_SERIES, write_cliff
from app.stats.uncertainty import STORAGE_SERIES, Uncertainty, intervals_of, none_because, storage_series
from app.store.results import json_objects, open_file, write_new

STATUS_INTERVAL_S = 1  # the samples file's and the live charts' samples: one a second
# fio's status dumps come at a sub-second interval for the point's 95 % interval: about FINE_SAMPLES over its
# runtime, between FINE_MIN_MS and once a second (a precision point at most PRECISION_FINE_MS: its runtime is a
# cap).  A 2 s point then has 20 samples for its batch means, where whole seconds gave 2 (no interval).
FINE_SAMPLES = 40
FINE_MIN_MS = 100
PRECISION_FINE_MS = 250
LAYOUT_POLL_S = 0.5  # how often fio's progress laying out the test file is read, until its first status dump
READ_MODES = frozenset({"read", "randread", "rw", "randrw"})  # fio's td_read(): jobs that read the file


def fio_binary() -> str:
    """fio's resolved path (``$FIO`` or fio on PATH); SafetyError (exit 3) when another user could change it."""
    path, why = which_trusted(settings.fio())
    if why:
        raise SafetyError(f"{why}.")
    if not path:
        named = settings.FIO.value()  # as MLC_PATH and PROFILER_TUI_MEMLAT: the value that was not usable, named
        why = f" ({settings.FIO.name}={clean_line(named, 200)} is not an executable file)" if named else ""
        raise ToolMissing(f"fio is not installed{why}; install it (Debian: apt-get install fio) or run `make setup`.")
    return path


def fio_version() -> str:
    cp = run_tool([fio_binary(), "--version"], 10, 64 << 10)
    return clean_line(cp.stdout, 200) if cp is not None else "unknown"


def job_name(point: StoragePoint) -> str:
    rw = point.rw
    if rw in ("rw", "randrw") and point.rwmixread is not None:
        rw = f"{rw}{point.rwmixread}"
    name = f"{rw}-{format_size(point.bs).lower()}-qd{point.iodepth}-j{point.numjobs}"
    return name if point.round is None else f"{name}-r{point.round}"


@dataclass(frozen=True)
class TargetShape:
    """What the job file needs of a target: whether it exists, is a block device, and its size in bytes (None
    when it does not exist, is neither a regular file nor a block device, or cannot be read)."""

    exists: bool
    block: bool
    size: int | None


def target_shape(path: str) -> TargetShape:
    """The shape of a target on this machine (``os.stat``; a block device's size by seeking to its end)."""
    try:
        st = os.stat(path)
    except OSError:
        return TargetShape(False, False, None)
    if stat.S_ISBLK(st.st_mode):
        try:
            fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
            try:
                return TargetShape(True, True, os.lseek(fd, 0, os.SEEK_END))
            finally:
                os.close(fd)
        except OSError:
            return TargetShape(True, True, None)
    if stat.S_ISREG(st.st_mode):
        return TargetShape(True, False, st.st_size)
    return TargetShape(True, False, None)


def _existing_size(path: str) -> int | None:
    """The size of an existing regular file or block device, None when the path does not exist yet."""
    return target_shape(path).size


def layout_bytes(point: StoragePoint, target: str, read_only: bool) -> int | None:
    """The bytes fio writes laying out the test file before the job's first I/O, or None when it lays out
    nothing.  fio fills the whole file (``size``) when the target is a regular file (or none yet) smaller
    than the job's size and the job reads; a write-only job gets a new file that is only allocated, a block
    device or a read-only job (size clamped to the file) is never laid out.  Looks at the target with
    ``os.stat`` only."""
    if read_only or point.rw not in READ_MODES:
        return None
    try:
        st = os.stat(target)
    except FileNotFoundError:
        return point.size
    except OSError:
        return None
    if not stat.S_ISREG(st.st_mode) or st.st_size >= point.size:
        return None
    return point.size


def written_bytes(pid: int) -> int | None:
    """What a process has written so far: ``wchar`` of /proc/PID/io (bytes passed to write calls, all its
    threads), None when it cannot be read.  fio lays a file out with ftruncate and fallocate first (the
    file has its full size and blocks at once) and then writes it in order, so its own write count is the
    layout's progress; the file's size or blocks are not."""
    try:
        with open(f"/proc/{pid}/io", "rb") as f:
            text = f.read(4096)
    except OSError:
        return None
    for line in text.splitlines():
        key, _, value = line.partition(b":")
        if key == b"wchar":
            try:
                return int(value)
            except ValueError:
                return None
    return None


def phase_tracker(point: StoragePoint) -> PhaseTracker:
    window = float(_number(point, "steady_window")) if point.steady is not None else None
    return PhaseTracker(float(point.ramp_time), window)


def point_writes(point: StoragePoint) -> bool:
    return point.rw in WRITE_MODES


JobOptions = list[tuple[str, object]]  # a job file section's options, in order: (option, value written as str())


# fio reads a job file line by line: a newline in a value starts a new option, ';' and '#' start
# comments, and '$' starts fio's own substitutions (${VAR}, $ncpus, $mb_memory).  Values are
# validated long before they get here; this refusal holds even if that validation is bypassed.
_UNSAFE = re.compile(r"[\x00-\x1f\x7f;#$]")


def _ini(key: str, value: object) -> str:
    text = str(value)
    bad = _UNSAFE.search(text)
    if bad or not text.strip():
        what = repr(bad.group()) if bad else "an empty value"
        raise UsageError(f"fio job option '{key}' has the value {text!r}, which contains {what}; a job file "
                         "value may not contain control characters, ';', '#' or '$'.")
    return f"{key}={text}"


def _filename(target: str) -> str:
    """fio splits ``filename`` at ':' (several files); a ':' that is part of the name is escaped as '\\:'.
    fio unescapes nothing else, so a backslash of the name would be ambiguous before a ':': refused."""
    if "\\" in target:
        raise UsageError(f"target {target!r}: a path with a backslash cannot be passed to fio unambiguously; "
                         "rename it.")
    return target.replace(":", "\\:")


def check_target_name(target: str) -> None:
    """UsageError when ``target`` cannot be written into a job file as one file name (checked at planning)."""
    _ini("filename", _filename(target))


def _seconds(value: float | int) -> str:
    """fio's time options take whole seconds, or a unit: 1.5 s is written 1500ms, not truncated to 1."""
    if float(value).is_integer():
        return str(int(value))
    return f"{round(float(value) * 1000)}ms"


def read_only_job(target: str, plan_writes: bool) -> bool:
    """A read-only plan on a target that exists runs with fio's ``--readonly``: fio itself then refuses
    any write, trim or extension of the target, whatever the job says."""
    return not plan_writes and _existing_size(target) is not None


# key → types a plan point must hold before anything is written into a job file (a point is typed, but
# nothing stops a caller from building one with other values); fio reads a flag's true as 1
_TYPES: dict[str, tuple[type, ...]] = {name: types + ((int,) if bool in types else ())
                                       for name, types in json_types(StoragePoint).items()
                                       if name in keys_of(StoragePoint)}


def _check_types(point: StoragePoint) -> None:
    for key, types in _TYPES.items():
        value = getattr(point, key)
        if not isinstance(value, types) or (isinstance(value, bool) and bool not in types):
            raise UsageError(f"fio job option '{key}' has the value {value!r}, which is not a "
                             f"{'word' if str in types else 'number'} fio can take.")
        if isinstance(value, str):
            _ini(key, value)


def job_file(point: StoragePoint, target: str, plan_writes: bool = True,
             more: JobOptions | None = None, shape: TargetShape | None = None) -> str:
    """The fio job file of a point (an INI text fio reads as is).

    On a target that exists (a block device, or a regular file the user named), a plan that only
    reads never changes it: the region is clamped to what the target holds (whole blocks) and fio runs
    with ``--readonly`` (:func:`read_only_job`; the file's first line says so).  ``shape``: what a fleet
    host said of its target (else the target is looked at here).
    """
    _check_types(point)
    size = point.size
    shape = shape or target_shape(target)  # given: what a fleet host said of its target
    existing = shape.size
    read_only = existing is not None and not plan_writes
    if existing is not None and (read_only or shape.block):
        size = min(size, existing)
        if read_only:
            size -= size % point.bs
    glob: JobOptions = [
        ("filename", _filename(target)),
        ("ioengine", point.ioengine),
        ("direct", int(bool(point.direct))),
        ("size", size),
        ("time_based", int(bool(point.time_based))),
        ("runtime", _seconds(point.runtime)),
        ("ramp_time", _seconds(point.ramp_time)),
        ("group_reporting", 1),
        ("lat_percentiles", 1),
        ("percentile_list", PERCENTILE_LIST),
        ("randrepeat", 0),
        # jobs as threads of the one fio process, which the kernel kills with profiler-tui
        # (PR_SET_PDEATHSIG); forked job processes would outlive it (each calls setsid)
        ("thread", 1),
    ]
    job: JobOptions = [
        ("rw", point.rw),
        ("bs", point.bs),
        ("iodepth", point.iodepth),
        ("numjobs", point.numjobs),
    ]
    if point.rwmixread is not None and point.rw in ("rw", "randrw"):
        job.append(("rwmixread", point.rwmixread))
    job += (_steady_options(point) + _latency_options(point) + _declared_options(point) + _cpu_options(point)
            + (more or []))
    flags = " ".join(fio_options(read_only))
    lines = [f"; written by profiler-tui; run with: fio {flags} THIS_FILE", "[global]"]
    lines += [_ini(k, v) for k, v in glob]
    lines += ["", f"[{_ini('name', job_name(point)).partition('=')[2]}]"] + [_ini(k, v) for k, v in job]
    return "\n".join(lines) + "\n"


def _steady_options(point: StoragePoint) -> JobOptions:
    """fio's steady-state detection: the job ends once the criterion holds over the window (runtime caps it)."""
    if point.steady is None:
        return []
    return [("steadystate", point.steady), ("steadystate_duration", _seconds(_number(point, "steady_window"))),
            ("steadystate_ramp_time", _seconds(_number(point, "steady_ramp")))]


def _latency_options(point: StoragePoint) -> JobOptions:
    """fio's latency_target search: the deepest queue (up to iodepth) whose latency percentile meets the bound;
    fio then measures one more window at that depth and ends the job (runtime caps the search)."""
    if point.latency_bound is None:
        return []
    window_ms = round(_number(point, "latency_window") * 1000)
    return [("latency_target", f"{point.latency_bound}us"), ("latency_window", f"{window_ms}ms"),
            ("latency_percentile", _number(point, "latency_percentile"))]


def _cpu_options(point: StoragePoint) -> JobOptions:
    """The point's CPUs, one job per CPU in list order (fio's ``split`` policy; job N runs on CPU N mod count)."""
    if point.cpus is None:
        return []
    if point.cpus == NODE:
        raise UsageError("key 'cpus' has value node, which is replaced by the CPUs of the target device's NUMA node "
                         "when the plan is made for a target; this point was not (give a CPU list).")
    return [("cpus_allowed", point.cpus), ("cpus_allowed_policy", "split")]


def _number(point: StoragePoint, name: str) -> float | int:
    """A numeric key as the point runs (its declared value when it needs another key that is set)."""
    value = implied(point, name)
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        raise UsageError(f"fio job option '{name}' has the value {value!r}, which is not a number fio can take.")
    return value


def _declared_options(point: StoragePoint) -> JobOptions:
    """The keys whose declaration names their fio option (``key(..., fio="option")``), each ``option=value``
    when set; a flag is written 0 or 1."""
    return [(k.fio, int(value) if isinstance(value, bool) else value)
            for name, k in keys_of(StoragePoint).items()
            if k.fio is not None and (value := getattr(point, name)) is not None]


def fio_options(read_only: bool) -> list[str]:
    """fio's command-line options a job file is run with (``--readonly`` exists only on the command line)."""
    return (["--readonly"] if read_only else []) + ["--output-format=json+"]


def status_interval_ms(point: StoragePoint | None) -> int:
    """fio's status interval for ``point``, ms: its runtime over FINE_SAMPLES, in steps of 50 ms, at least
    FINE_MIN_MS and at most a second (PRECISION_FINE_MS with ``precision``); a second for no point (preconditioning)."""
    whole = STATUS_INTERVAL_S * 1000
    if point is None:
        return whole
    ms = max(FINE_MIN_MS, min(whole, round(float(point.runtime) * 1000 / FINE_SAMPLES / 50) * 50))
    return min(ms, PRECISION_FINE_MS) if point.precision is not None else ms


def fio_command(job_path: str, read_only: bool = False, interval_ms: int = STATUS_INTERVAL_S * 1000) -> list[str]:
    return [fio_binary(), *fio_options(read_only), f"--status-interval={interval_ms}ms", "--eta=never", job_path]


class FioRunner(Runner):
    kind = Kind.STORAGE

    def batch_key(self, point: Point) -> Hashable:
        return object()  # every point runs on its own

    def tool_versions(self) -> dict[str, str]:
        return {"fio": fio_version()}

    def check_plan(self, plan: Sequence[Point]) -> None:
        """CPUs this process may run on (fio would fail the point), and no precision with a latency bound: a
        latency-bound search changes its queue depth as it goes, its IOPS have no one mean to be precise about, and
        stopping it early would cut the search short."""
        check_cpus(plan)
        if any(isinstance(p, StoragePoint) and p.precision is not None and p.latency_bound is not None for p in plan):
            raise UsageError("key 'precision' cannot be used with latency_bound: fio's latency_target search varies "
                             "the queue depth, so its IOPS have no one mean to stop at.")

    async def run(self, items: list[tuple[int, Point]], ctx: Context) -> AsyncGenerator[Event, None]:
        for index, point in items:
            if not isinstance(point, StoragePoint):
                raise TypeError(f"the fio runner measures storage points, not {point!r}")
            # closed here, not by the garbage collector later: fio is stopped before our own close returns
            async with aclosing(self.run_point(index, point, ctx)) as events:
                async for event in events:
                    yield event

    async def run_point(self, index: int, point: StoragePoint,
                        ctx: Context) -> AsyncGenerator[Sample | Phase | Result, None]:
        assert ctx.target is not None
        load = ctx.offered.get(index) if point.rate is not None else None
        if point.rate is not None and load is None:
            load = offered_load([point], 0, {})  # an absolute rate, or a share of the point's own xmax
        if isinstance(load, str):
            yield Result(index, None, {}, Parts(job=job_name(point)), error=load)
            return
        more = rate_options(point, load.iops) if load is not None else None
        text = job_file(point, ctx.target, ctx.plan_writes, more)
        read_only = read_only_job(ctx.target, ctx.plan_writes)
        ctx.raw_dir.mkdir(parents=True, exist_ok=True)
        stem = f"{index:04d}-{job_name(point)}"
        job_path = ctx.raw_dir / f"{stem}.fio"
        write_new(job_path, text.encode())  # removed again if the disk is full
        run = _FioRun(index, job_path, ctx.raw_dir / f"{stem}{SAMPLES_SUFFIX}", phase_tracker(point),
                      layout_bytes(point, ctx.target, read_only), precision_watch(point),
                      DeviceWindow(open_counters(ctx.target), ramp=point.ramp_time > 0),
                      CpuWindow(point.cpus, ramp=point.ramp_time > 0), status_interval_ms(point))
        tracer = await start_tracing(ctx.target) if point.layers else None  # app.host.blocktrace: the layers part
        try:
            argv = fio_command(job_path.name, read_only, status_interval_ms(point))
            async with aclosing(run.stream(argv, cwd=ctx.raw_dir)) as stream:
                async for sample in stream:
                    yield sample
        except BaseException:
            # the run ended mid-point (the disk filled under run.json, ^C): a samples file with nothing in it
            # yet says nothing, and no results directory keeps one
            kept_samples(run.samples_path)
            raise
        finally:
            if isinstance(tracer, BlockTracer):
                await tracer.stop()
        raw: dict[str, str | bytes] = {".fio": text}
        layers = tracing_part(tracer, run.device.begin[0] if run.device and run.device.begin else None)
        if isinstance(tracer, BlockTracer) and tracer.parser.intervals:
            raw[".layers.jsonl"] = tracer.intervals_jsonl()
        if run.stderr.strip() or run.noise:
            raw[".stderr.txt"] = "\n".join(run.noise + [run.stderr])
        wall_s, job = round(run.wall, 3), job_name(point)
        files = kept_samples(run.samples_path)
        if run.last is None:
            msg = _fio_message(run.stderr, run.noise) or f"fio exited with status {run.returncode} and no result"
            yield Result(index, None, raw, Parts(wall_s=wall_s, job=job), error=msg, files=files)
            return
        raw[".json"] = json.dumps(run.last, indent=1)
        m = metrics(run.last)
        steady = (steady_result(run.last, point.steady, _number(point, "steady_window"))
                  if point.steady is not None else None)
        op = (operating_point(run.last, m, point.latency_bound, _number(point, "latency_percentile"), point.runtime)
              if point.latency_bound is not None else None)
        cliff = write_cliff(run.samples) if point.rw == "write" else None
        precision = (precision_part(run.watch, _measured_s(run.last), bool(steady and steady.get("attained")))
                     if run.watch is not None else None)
        tail = point_tail(run.samples, run.samples_path)
        loop = (open_loop_part(point, load.to_dict(), run.samples, job_list(run.last), m.get("iops"),
                               _measured_s(run.last)) if load is not None else None)
        parts = Parts(wall_s=wall_s, job=job, fio_version=_version(run.last), steady=steady, precision=precision,
                      operating_point=op, write_cliff=dict(cliff) if cliff is not None else None,
                      device=run.device_part, tail=cast(JSONObject, tail),
                      keys=("wall_s", "job", "fio_version") + (("steady",) if steady is not None else ())
                      + (("precision",) if precision is not None else ())
                      + (("operating_point",) if op is not None else ())
                      + (("write_cliff",) if cliff is not None else ())
                      + (("device",) if run.device_part is not None else ()) + ("tail",)
                      + (("host_cpu",) if run.cpu_part is not None else ())
                      + (("open_loop",) if loop is not None else ())
                      + (("layers",) if layers is not None else ()),
                      host_cpu=run.cpu_part, open_loop=cast(JSONObject, loop), layers=layers)
        error = None
        if m.get("errors") or run.failed:
            error = _fio_message(run.stderr, run.noise) or f"fio job error {m.get('errors')}"
        else:
            error = unserved(m)  # a point the target never served is no measurement of it
        u = point_uncertainty(run.samples, run.samples_path, run.fine.series)
        yield Result(index, with_interval(StorageMetrics.of(m), u, run.fine.sample_s), raw, parts, error=error,
                     files=files)


def with_interval(m: StorageMetrics, u: Uncertainty, sample_s: float | None = None) -> StorageMetrics:
    """``m`` with the point's interval record (``ci95`` when a figure has one, ``ci_method`` always; with
    ``sample_s``, the seconds each sample of the interval spans)."""
    method = u.ci_method
    if sample_s is not None and u.intervals:
        method = {**method, "sample_s": sample_s}
    return m.with_ci(cast(JSONObject, u.ci95), cast(JSONObject, method))


def point_uncertainty(samples: Sequence[Mapping[str, object]], path: Path,
                      fine: Mapping[str, Sequence[float]] | None = None) -> Uncertainty:
    """The 95 % intervals of a point's mean IOPS, bandwidth and mean latency from its sub-second samples
    (``fine``, :class:`FineSamples`) when it has them, else its per-second samples (its live ``samples``; from its
    samples file at ``path`` when the point outran the MAX_SERIES kept in memory, so the interval is always of the
    whole point).  fio's headline figures stay its own whole-run means."""
    if fine:
        return fine_intervals(fine)
    series = storage_series(samples) if len(samples) < MAX_SERIES else _file_series(path)
    if not series:
        return none_because("fio gave no whole-second samples for this point")
    return intervals_of(series)


def _file_series(path: Path, chunk: int = 10_000) -> dict[str, list[float]]:
    """:func:`storage_series` of a samples file, read a chunk of lines at a time (a week of seconds in dicts
    would not fit in memory; three lists of floats do)."""
    out: dict[str, list[float]] = {}
    batch: list[Mapping[str, object]] = []

    def flush() -> None:
        for k, values in storage_series(batch).items():
            out.setdefault(k, []).extend(values)
        batch.clear()

    for sample in _file_samples(path):
        batch.append(sample)
        if len(batch) >= chunk:
            flush()
    flush()
    return out


def _file_samples(path: Path) -> Iterator[dict[str, Any]]:
    """The samples of a samples file one at a time (lines that are not a JSON object skipped; an unreadable
    file gives none)."""
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            yield from json_objects(f)
    except OSError:
        return


def point_tail(samples: Sequence[Mapping[str, object]], path: Path) -> dict[str, object]:
    """The ``tail`` part of a point: :func:`app.model.tails.tail_stability` over all its seconds (from the samples
    file when the point outran the MAX_SERIES kept in memory, as :func:`point_uncertainty`)."""
    return tail_stability(samples if len(samples) < MAX_SERIES else _file_samples(path))


class FineSamples:
    """A point's measured means at every status dump (:func:`status_interval_ms`): the series its 95 % interval
    and a ``precision`` stop are computed from, kept in ``raw/NNNN-JOB.fine.jsonl`` (one line a dump: ``t``,
    ``interval_s``, ``iops``, ``bw_bytes``, ``lat_mean_ns``, ``ramp``), from which
    :func:`app.stats.finesamples.series_of` gives the same series again.  Samples of fio's ``ramp_time`` are left out,
    and so is one spanning less than half the interval (fio's final dump, a few ms after the one before)."""

    def __init__(self, interval_ms: int, path: Path | None = None) -> None:
        self.interval_ms = interval_ms
        self.path = path
        self.values: dict[str, array[float]] = {}
        self.measured_s = 0.0  # seconds the samples span
        self._file: IO[str] | None = None
        self._opened = False

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None

    @property
    def sample_s(self) -> float:
        return self.interval_ms / 1000

    @property
    def series(self) -> dict[str, list[float]]:
        return {k: list(v) for k, v in self.values.items() if v}

    def take(self, sample: Mapping[str, object] | None, ramp: bool) -> None:
        if sample is None:
            return
        if self.path is not None:
            if not self._opened:
                self._file, self._opened = open_samples(self.path), True
            append_sample(self._file, {k: sample.get(k) for k in ("t", "interval_s", *STORAGE_SERIES)}
                          | ({"ramp": True} if ramp else {}))
        span = number(sample.get("interval_s"))
        if ramp or span is None or span < self.sample_s / 2:
            return
        self.measured_s += span
        for k in STORAGE_SERIES:
            v = number(sample.get(k))
            if v is not None and 0 <= v <= MAX_NUMBER:
                self.values.setdefault(k, array("d")).append(v)


SAMPLES_SUFFIX = ".samples.jsonl"
FINE_SUFFIX = ".fine.jsonl"
WORKLOAD_PRECONDITION_STEADY = "iops:10%"  # a workload preconditioning pass without its own steady criterion


@dataclass
class PreconditionJob:
    """The preconditioning pass before a run's first point: one fio job, its samples streamed like a point's."""

    point: StoragePoint
    more: JobOptions  # job options beyond the point's (loops)
    description: str
    estimate_s: float

    async def run(self, ctx: Context) -> AsyncGenerator[Sample | Phase | Result, None]:
        assert ctx.target is not None
        text = job_file(self.point, ctx.target, True, self.more)
        ctx.raw_dir.mkdir(parents=True, exist_ok=True)
        job_path = ctx.raw_dir / "precondition.fio"
        write_new(job_path, text.encode())
        run = _FioRun(-1, job_path, ctx.raw_dir / f"precondition{SAMPLES_SUFFIX}", phase_tracker(self.point),
                      layout_bytes(self.point, ctx.target, False))
        async with aclosing(run.stream(fio_command(job_path.name), cwd=ctx.raw_dir)) as stream:
            async for sample in stream:
                yield sample
        raw: dict[str, str | bytes] = {".fio": text}
        if run.stderr.strip() or run.noise:
            raw[".stderr.txt"] = "\n".join(run.noise + [run.stderr])
        wall_s = round(run.wall, 3)
        if run.last is None:
            msg = _fio_message(run.stderr, run.noise) or f"fio exited with status {run.returncode} and no result"
            yield Result(-1, None, raw, Parts(wall_s=wall_s), error=msg)
            return
        raw[".json"] = json.dumps(run.last, indent=1)
        m = metrics(run.last)
        steady = (steady_result(run.last, self.point.steady, _number(self.point, "steady_window"))
                  if self.point.steady is not None else None)
        cliff = write_cliff(run.samples)
        error = None
        if m.get("errors") or run.returncode:
            error = _fio_message(run.stderr, run.noise) or f"fio job error {m.get('errors')}"
        else:
            error = unserved(m)
        files = kept_samples(run.samples_path)
        parts = Parts(wall_s=wall_s, steady=steady, write_cliff=dict(cliff) if cliff is not None else None)
        yield Result(-1, StorageMetrics.of(m), raw, parts, error=error, files=files)


def precision_watch(point: StoragePoint) -> PrecisionWatch | None:
    """The live precision check of a point with ``precision`` (app.stats.precision), None without."""
    if point.precision is None:
        return None
    return PrecisionWatch(target_percent(point.precision), steady=point.steady is not None)


def _measured_s(doc: dict[str, Any]) -> float | None:
    """The seconds fio measured the job for (its ``job_runtime``, after ramp_time), None when it gave none."""
    jobs = job_list(doc)
    ms = jobs[0].get("job_runtime") if jobs else None
    return round(ms / 1000, 3) if isinstance(ms, (int, float)) and not isinstance(ms, bool) else None


def _version(doc: dict[str, object]) -> str | None:
    """fio's version as its JSON names it (a results line keeps the key, null when fio gave none)."""
    v = doc.get("fio version")
    return v if isinstance(v, str) else None


def precondition_job(procedure: Procedure, plan: Sequence[Point], ctx: Context) -> PreconditionJob:
    """``sequential``: 128 KiB sequential writes over the plan's region, twice (SNIA PTS's workload-independent
    preconditioning); ``workload``: the plan's first write point until fio sees steady state (its own
    criterion, else WORKLOAD_PRECONDITION_STEADY), at most ``precondition_cap`` seconds."""
    storage = [p for p in plan if isinstance(p, StoragePoint)]
    if procedure.precondition == "sequential":
        size = region_size(storage)
        if ctx.target is not None:
            shape = target_shape(ctx.target)
            if shape.block and shape.size is not None:
                size = min(size, shape.size)
        point = StoragePoint(rw="write", bs=SEQUENTIAL_PRECONDITION_BS, rwmixread=None,
                             iodepth=SEQUENTIAL_PRECONDITION_QD, numjobs=1, ioengine=storage[0].ioengine, direct=True,
                             runtime=MAX_SECONDS, ramp_time=0, size=size, time_based=False)
        total = size * SEQUENTIAL_PRECONDITION_PASSES
        return PreconditionJob(point, [("loops", SEQUENTIAL_PRECONDITION_PASSES)],
                               f"128 KiB sequential writes over {format_size(size)}, "
                               f"{SEQUENTIAL_PRECONDITION_PASSES} passes ({format_size(total)})",
                               total / ASSUMED_PRECONDITION_BYTES_PER_S)
    first = first_write_point(storage)
    if first is None:
        raise UsageError("precondition = workload needs a write point in the plan (none of its points writes); "
                         "use precondition = sequential.")
    criterion = first.steady or WORKLOAD_PRECONDITION_STEADY
    steady = replace(first, steady=criterion)
    point = replace(steady, steady_window=_number(steady, "steady_window"), steady_ramp=_number(steady, "steady_ramp"),
                    runtime=procedure.precondition_cap, time_based=True, ramp_time=0, latency_bound=None,
                    latency_percentile=None, latency_window=None, round=None)
    return PreconditionJob(point, [], f"{job_name(point)} until steady ({criterion}), at most "
                                      f"{format_duration(float(procedure.precondition_cap))}",
                           float(procedure.precondition_cap))


class _FioRun:
    """One fio process: its live samples (also appended, one JSON line each, to the point's samples file
    as they come, so an interrupted point keeps what it measured), its phases (:class:`Phase`), its last
    document, its stderr."""

    def __init__(self, index: int, job_path: Path, samples_path: Path, phases: PhaseTracker | None = None,
                 layout: int | None = None, watch: PrecisionWatch | None = None,
                 device: DeviceWindow | None = None, cpu: CpuWindow | None = None,
                 interval_ms: int | None = None) -> None:
        self.index = index
        self.job_path = job_path
        self.samples_path = samples_path
        self.phases = phases or PhaseTracker()
        self.layout = layout  # bytes fio lays out before its first I/O (layout_bytes), None for none
        self.last: dict[str, Any] | None = None
        self.noise: list[str] = []
        self.stderr = ""
        self.returncode: int | None = None
        self.wall = 0.0
        self.samples: list[dict[str, Any]] = []  # kept for the write-cliff check (at most MAX_SERIES)
        self.watch = watch  # a point with ``precision``: told to stop (SIGINT to fio) once it is reached
        self.device = device  # the target device's counters over fio's measured window (app.host.devstat)
        self.device_part: JSONObject | None = None  # the results line's ``device`` part, once fio exited
        self.cpu = cpu  # the CPUs' busy time over the same window (app.host.cpustat)
        self.cpu_part: JSONObject | None = None  # the results line's ``host_cpu`` part, once fio exited
        # every dump's means: the samples of the point's interval (``interval_ms``; None: a dump a second and no
        # file of them, as for the preconditioning pass, which has no interval)
        fine_path = samples_path.with_name(samples_path.name.removesuffix(SAMPLES_SUFFIX) + FINE_SUFFIX)
        self.hist_path = samples_path.with_name(samples_path.name.removesuffix(SAMPLES_SUFFIX) + HIST_SUFFIX)
        self.fine = FineSamples(interval_ms or STATUS_INTERVAL_S * 1000, fine_path if interval_ms else None)

    async def stream(self, argv: list[str], cwd: Path | None = None) -> AsyncGenerator[Sample | Phase, None]:
        """Run fio (``argv``; in ``cwd``, the raw/ it reads its job file from by name) and stream what it measures."""
        started = time.monotonic()
        child = await Child.start(*argv, cwd=cwd)
        splitter = DocumentSplitter()
        tracker = SampleTracker()  # the samples file's: one a second
        fine = SampleTracker(percentiles=False)  # every dump's: the interval's samples
        whole_ms = STATUS_INTERVAL_S * 1000 - self.fine.interval_ms // 2  # a dump this far on from the last one kept
        held: dict[str, Any] | None = None  # the last dump not yet taken into a per-second sample
        since_ms = 0  # the dumps' clock where the per-second sample being gathered starts
        held_ramp = False  # the held dump came in fio's ramp_time
        series: IO[str] | None = None  # opened with the first sample: no empty file for a point that never ran
        hists: IO[str] | None = None  # the per-second histograms' file, opened with the first
        shown: tuple[str, float | None, float | None] | None = None
        started_io = False  # fio's dumps before its first I/O (while it lays out the file) are no samples
        # until fio starts its I/O: the layout's progress, read at least every LAYOUT_POLL_S (a bounded read of
        # /proc, never of the target); no polling once I/O started, the layout is complete or unreadable
        polling = self.layout is not None
        opened = False  # the windows have their start
        windows: list[CounterWindow[Any]] = [w for w in (self.device, self.cpu) if w is not None]

        def phase(now: tuple[str, float | None, float | None]) -> Phase | None:
            nonlocal shown
            if now == shown:
                return None
            shown = now
            return Phase(self.index, *now)

        def keep(sample: dict[str, Any], steady: object = None, ramp: bool | None = None) -> Sample:
            """A per-second sample written to the samples file (and kept for the point's checks) as it comes,
            its histograms to the histograms file; ``ramp``: taken in fio's ramp_time (default: fio is in it now)."""
            nonlocal series, hists
            hist = sample.pop(HIST_KEY, None)
            if self.phases.in_ramp if ramp is None else ramp:  # fio's ramp_time: counted by fio's dumps, left out
                sample["ramp"] = True
            if steady is not None:
                sample["steady"] = steady
            if series is None:
                series = open_samples(self.samples_path)
            append_sample(series, sample)
            if hist:
                if hists is None:
                    hists = open_samples(self.hist_path)
                append_sample(hists, hist_line(sample, hist))
            if len(self.samples) < MAX_SERIES:
                self.samples.append(sample)
            return Sample(self.index, sample, hist)

        def layout_progress() -> Phase | None:
            nonlocal polling
            assert self.layout is not None
            written = written_bytes(child.proc.pid)
            done = None if written is None else float(min(written, self.layout))
            polling = done is not None and done < self.layout
            return phase(("layout", done, float(self.layout)))

        first = phase(("layout", 0.0, float(self.layout)) if self.layout is not None else self.phases.start())
        chunks = child.chunks_ticking(LAYOUT_POLL_S, lambda: polling)
        try:
            if first is not None:
                yield first
            async for chunk in chunks:
                if chunk is None:
                    ev = layout_progress()
                    if ev is not None:
                        yield ev
                    continue
                # the counters as fio's output arrives, nearest the dump it ends (a pread of sysfs, /proc/stat)
                readings, read_at = [w.reading() for w in windows], time.monotonic()
                for doc in splitter.feed(chunk.decode("utf-8", "replace")):
                    self.last = doc
                    if not started_io:
                        if not io_started(doc):
                            ev = layout_progress() if polling else None
                            if ev is not None:
                                yield ev
                            continue
                        started_io, polling = True, False
                        if self.layout is not None and shown is not None and shown[0] == "layout":
                            ev = phase(("layout", float(self.layout), float(self.layout)))  # I/O runs: laid out
                            if ev is not None:
                                yield ev
                    ev = phase(self.phases.update(doc, time.monotonic() - started))
                    if ev is not None:
                        yield ev
                    now_s = time.monotonic() - started
                    fine_sample = fine.update(doc, now_s)
                    if windows and (opened is False or fine.reset):
                        # the window opens at fio's first dump with I/O, and again where its counters restart
                        for window, now in zip(windows, readings):
                            window.start(now, read_at, fio_done(doc), fine.reset)
                        opened = True
                    self.fine.take(fine_sample, self.phases.in_ramp or fine.reset)
                    iops = self.fine.values.get("iops")
                    if self.watch is not None and iops and self.watch.feed(
                            iops, self.fine.measured_s, not self.phases.in_ramp, steady_progress(doc)):
                        _end_job(child)
                    stamp = doc.get("timestamp_ms")
                    stamp = stamp if isinstance(stamp, int) and not isinstance(stamp, bool) else 0
                    since_ms = tracker.last_ms or since_ms or stamp - job_runtime_ms(doc)
                    if stamp and stamp - since_ms < whole_ms and not fine.reset:
                        held, held_ramp = doc, self.phases.in_ramp  # the next per-second sample takes it in
                        continue
                    if held is not None and fine.reset:  # the ramp's last part-second, before fio's counters restart
                        sample = tracker.update(held, now_s)
                        if sample is not None:
                            yield keep(sample, steady_progress(held), held_ramp)
                    held = None
                    sample = tracker.update(doc, now_s)
                    if sample is None:
                        continue
                    yield keep(sample, steady_progress(doc))
            for doc in splitter.close():
                self.last = doc
            if held is not None:  # fio's last dumps, less than a second on from the last sample: as before, a short one
                sample = tracker.update(held, time.monotonic() - started)
                # unless it holds no I/O (fio's final document a few ms after its last dump): no sample, as before
                if sample is not None and sample.get("iops"):
                    yield keep(sample, steady_progress(held), held_ramp)
            self.stderr = await child.finish()
            if self.last is not None:  # fio's final figures: its measured window's end
                ended, done = time.monotonic(), fio_done(self.last)
                self.device_part = self.device.finish(ended, done) if self.device is not None else None
                self.cpu_part = self.cpu.finish(ended, done) if self.cpu is not None else None
        finally:
            self.fine.close()
            for window in windows:
                window.close()
            await chunks.aclose()  # its pending read of fio's output is cancelled: nothing outlives the point
            await child.close()
            if series is not None:
                series.close()
            if hists is not None:
                hists.close()
        self.noise = splitter.noise
        self.returncode = child.proc.returncode
        self.wall = time.monotonic() - started

    @property
    def failed(self) -> bool:
        """fio exited with a status that says it failed: not the one it exits with when it was told to end
        its job at the precision asked (FIO_SIGINT_STATUS)."""
        stopped = self.watch is not None and self.watch.stopped
        return bool(self.returncode) and not (stopped and self.returncode == FIO_SIGINT_STATUS)


# fio ends its jobs on SIGINT as at the end of their runtime (final JSON with every figure) and then exits 128
FIO_SIGINT_STATUS = 128


def _end_job(child: Child) -> None:
    """End fio's job now, keeping its figures: SIGINT to fio alone (its jobs are threads of the one process).
    The tool's own ^C is another path: the sweep cancels the point and nothing of it is recorded."""
    try:
        os.kill(child.proc.pid, signal.SIGINT)
    except ProcessLookupError:
        pass


def open_samples(path: Path) -> IO[str] | None:
    """The point's samples file, created or truncated (a rerun replaces an interrupted attempt's); None when
    it cannot be written (the live view still gets every sample; the results line is what counts)."""
    try:
        fd = open_file(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
    except OSError:
        return None
    return os.fdopen(fd, "w", encoding="utf-8", buffering=1)


def kept_samples(path: Path) -> dict[str, Path]:
    """The point's samples files (per second, its sub-second ones and its per-second histograms) for its record,
    {} when there are none; an empty one (every write failed: the disk filled while fio ran) is removed, so no
    results directory keeps a file that says nothing."""
    kept: dict[str, Path] = {}
    stem = path.name.removesuffix(SAMPLES_SUFFIX)
    for suffix, one in ((SAMPLES_SUFFIX, path), (FINE_SUFFIX, path.with_name(stem + FINE_SUFFIX)),
                        (HIST_SUFFIX, path.with_name(stem + HIST_SUFFIX))):
        try:
            if os.stat(one).st_size > 0:
                kept[suffix] = one
            else:
                os.unlink(one)
        except OSError:
            pass
    return kept


def append_sample(series: IO[str] | None, sample: dict[str, Any]) -> None:
    if series is None:
        return
    try:
        series.write(json.dumps(sample, separators=(",", ":")) + "\n")
    except (OSError, ValueError):
        pass


def _fio_message(stderr: str, noise: list[str]) -> str:
    lines = [clean_line(ln) for ln in (stderr.splitlines() + noise) if clean_line(ln)]  # shown and reported
    errs = [ln for ln in lines if "err" in ln.lower() or ln.startswith("fio:")]
    return "; ".join((errs or lines)[:3])
