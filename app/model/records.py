"""The results line (one JSON object per line of results.jsonl, docs/results-schema.md) as a type.

:func:`read_line` is the one reader of a line from untrusted JSON and :func:`line_json` / :func:`write_line` the
one writer: every module that reads results.jsonl gets :class:`ResultLine` values, and only the sweep's session
(and the importer) build one.  A line keeps the order of its keys and every key this version does not know
(``more``), so a line written by an older or newer version is written back byte for byte, and a line the tool
writes satisfies ``write_line(read_line(line)) == line``.

What the reader refuses (:class:`LineError`, one sentence naming the file, line, key and value): anything but
an object with ``kind`` storage or memory, ``point`` and ``metrics`` objects, an ``index`` that is a whole
number ≥ 0, a ``host`` that is a fleet host's name, a storage point's workload keys and the metrics the report
reads of the wrong type (numbers finite, 0 … 2^64; null where a value may be unknown).  A key it does not
check but types (a runner's part, an unchecked metric) is kept as it was read when its value has another
type, and reads as absent: that is the one conversion every reader shares.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Callable, Mapping, Sequence, TypeAlias, TypeVar

from app.core.errors import UsageError
from app.core.sanitize import show_value
from app.model.points import Kind
from app.model.tails import Hist, hist_of_record

# a value of parsed JSON (what json.loads gives)
JSONValue: TypeAlias = "None | bool | int | float | str | list[JSONValue] | dict[str, JSONValue]"
JSONObject: TypeAlias = "dict[str, JSONValue]"

MIN_CPU_SECONDS = 0.01  # less CPU time than this (a few ms) gives an IOPS per CPU of rounding, not of work
MAX_NUMBER = float(1 << 64)
# the version of the results format (docs/results-schema.md): written into run.json and every results line;
# raised when a key changes meaning or type, not when one is added
SCHEMA_VERSION = 1


class LineError(UsageError):
    """A results line that cannot be used: one sentence naming the file, line, key and value (exit code 2)."""


# --- the values the reader accepts --------------------------------------------------------------------


# what a measured figure must be, as the refusals say it
NUM_RULE = "a finite number from 0 to 2^64"


def is_num(v: object) -> bool:
    """A measured figure: a finite number 0 … 2^64 (not a bool)."""
    return number(v) is not None and 0 <= v <= MAX_NUMBER  # type: ignore[operator]  # number() checked the type


def is_whole(v: object, lo: int = 0, hi: float = MAX_NUMBER) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and lo <= v <= hi


def number(v: object) -> float | None:
    """The one conversion of an untrusted JSON value to a figure: a finite number (not a bool) as a float, else
    None (a string, a bool, infinity, an integer beyond a float).  The readers of results lines, samples and
    run.json figures all use it."""
    if type(v) is float:  # the common case first: a results file holds hundreds of thousands
        return v if math.isfinite(v) else None
    if not isinstance(v, (int, float)) or isinstance(v, bool):
        return None
    try:
        f = float(v)
    except OverflowError:  # JSON integers have no size limit
        return None
    return f if math.isfinite(f) else None


class _Misfit:
    """What a converter returns for a value of another type (the value is kept as read, and reads as absent)."""


_MISFIT = _Misfit()
T = TypeVar("T")


def _num(v: object) -> float | _Misfit:
    # a figure as read: an int stays an int, so the writer gives back the bytes it read
    return v if number(v) is not None else _MISFIT  # type: ignore[return-value]  # number() narrows it


def _whole(v: object) -> int | _Misfit:
    return v if is_whole(v) else _MISFIT  # type: ignore[return-value]  # is_whole narrows to int


def _str(v: object) -> str | _Misfit:
    return v if isinstance(v, str) else _MISFIT


def _bool(v: object) -> bool | _Misfit:
    return v if isinstance(v, bool) else _MISFIT


def _obj(v: object) -> JSONObject | _Misfit:
    return v if isinstance(v, dict) else _MISFIT


def _list(v: object) -> list[JSONValue] | _Misfit:
    return v if isinstance(v, list) else _MISFIT


def _any(v: object) -> JSONValue:
    return v  # type: ignore[return-value]  # a value json.loads gave


def _ci95(v: object) -> JSONObject | _Misfit:
    """An interval record: figure → [low, high] (else kept as read, unused).  Each pair is checked against its
    figure when it is asked for (:func:`checked_interval`): a pair that is no interval of its figure is kept as
    read and reads as no interval, with the reason."""
    return v if isinstance(v, dict) else _MISFIT


def _g(x: float) -> str:
    """A bound or figure in a sentence: whole above 10^5 (``30,424,777``), else six significant digits."""
    return f"{x:,.0f}" if 1e5 <= abs(x) < 1e15 else f"{x:,.6g}"


RATE_FIGURES = ("iops", "bw_bytes", "bandwidth_mbps")  # figures that are a count over the point's time
MAX_CENTRE_RATIO = 2.5  # a rate's interval centre at most this many times the line's whole-run figure


def interval_problem(figure: float | None, low: float, high: float, key: str = "") -> str | None:
    """Why ``[low, high]`` is no 95 % interval of the non-negative ``figure`` (None: it is one), one clause.

    It is none when it is degenerate (not finite, its lower bound above the upper, or zero width: a one-value
    interval claims a mean known exactly), when the line has no figure for it, or when it bounds nothing below:
    a half-width as large as its centre or larger reaches 0 (the tool's writer clips an interval reaching below
    0 at 0, so its ``[0, high]`` is refused too).  The figure shown with ± is the interval's centre, so an
    interval need not contain the line's own whole-run figure: the interval is of the mean past the warm-up,
    the figure counts the warm-up too.  But for a rate (``key`` in :data:`RATE_FIGURES`: IOPS, bandwidth) the
    whole-run figure is the mean over all the seconds, and the warm-up cut leaves at least 45 % of them (MSER-5
    cuts at most half, the batches at most a tenth of the rest), so the centre, the mean of those left, is at
    most 1/0.45 ≈ 2.2 times the whole-run figure: an interval centred above :data:`MAX_CENTRE_RATIO` times it is
    no interval of this line's figure (a widened one that would put a sheet's figure inside it).  The report,
    results.csv, the TUI and ``compare`` show the figure without ± for an interval refused here and judge
    nothing by it.  The same rule applies to an interval computed from a line's kept per-second samples."""
    if not (math.isfinite(low) and math.isfinite(high)):
        return "its interval is not finite"
    shown = f"[{_g(low)}, {_g(high)}]"
    if low > high:
        return f"its interval {shown} has its lower bound above the upper"
    if low == high:
        return f"its interval {shown} has zero width"
    if figure is None or not math.isfinite(figure):
        return f"its interval {shown} has no figure"
    centre = (low + high) / 2
    if low <= 0:
        return f"its interval {shown} reaches 0: its half-width is as large as its centre {_g(centre)}"
    if key in RATE_FIGURES and centre > MAX_CENTRE_RATIO * figure:
        return (f"its interval {shown} is centred at {_g(centre)}, more than {MAX_CENTRE_RATIO:g}× the whole-run "
                f"figure {_g(figure)}, which no warm-up cut allows")
    return None


def checked_interval(ci95: JSONObject | None, key: str, figure: float | None) -> tuple[float, float] | str | None:
    """``key``'s [low, high] of an interval record as floats when it is an interval of ``figure``; the reason
    (one clause) when the record holds something else for ``key`` (:func:`interval_problem`); None when it
    holds nothing for it."""
    pair = ci95.get(key) if ci95 is not None else None
    if pair is None:
        return None
    if not (isinstance(pair, list) and len(pair) == 2
            and all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in pair)):
        return "its interval is not two numbers"
    low, high = (number(x) for x in pair)
    if low is None or high is None:
        return "its interval is not finite"
    if not (0 <= low <= MAX_NUMBER and 0 <= high <= MAX_NUMBER):
        return "its interval is not within 0 … 2^64"
    why = interval_problem(figure, low, high, key)
    return why if why is not None else (low, high)


def _keys_with(keys: tuple[str, ...], *add: tuple[str, ...] | str) -> tuple[str, ...]:
    """``keys`` less any interval keys, then the ``add``ed ones: a record's interval keys go last, once."""
    new = tuple(k for a in add for k in ((a,) if isinstance(a, str) else a))
    return tuple(k for k in keys if k not in ("ci95", "ci_method")) + new


def _strings(v: object) -> dict[str, str] | _Misfit:
    if isinstance(v, dict) and all(isinstance(x, str) for x in v.values()):
        return v
    return _MISFIT


class _Taker:
    """Takes the keys of one JSON object into typed fields: a value of another type stays in ``more``."""

    def __init__(self, obj: Mapping[str, object], known: set[str]) -> None:
        self.obj = obj
        self.more: JSONObject = {k: _any(v) for k, v in obj.items() if k not in known}

    def take(self, key: str, conv: Callable[[object], T | _Misfit]) -> T | None:
        if key not in self.obj or self.obj[key] is None:
            return None
        got = conv(self.obj[key])
        if isinstance(got, _Misfit):
            self.more[key] = _any(self.obj[key])
            return None
        return got


def _names(cls: type) -> set[str]:
    return {f.name for f in fields(cls)} - {"keys", "more"}


def _emit(obj: object, keys: tuple[str, ...], more: Mapping[str, JSONValue],
          parts: object = None) -> JSONObject:
    """The JSON object of ``obj``: its keys in their order, each from ``more`` when kept there as read."""
    out: JSONObject = {}
    for k in keys:
        if k in more:
            out[k] = more[k]
        elif parts is not None and k in PART_KEYS:  # a runner's part of a line
            out[k] = _json(getattr(parts, k))
        else:
            out[k] = _json(getattr(obj, k))
    return out


def _json(v: object) -> JSONValue:
    if isinstance(v, (Latency, StorageMetrics, MemoryMetrics)):
        return v.json()
    if isinstance(v, Kind):
        return str(v.value)
    return v  # type: ignore[return-value]  # a field's JSON value


def _present(obj: object, names: list[str]) -> tuple[str, ...]:
    """The keys of an object built in code: its fields that are set, in their declared order."""
    return tuple(n for n in names if getattr(obj, n) is not None)


# --- the types ------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Latency:
    """fio's latency summary of a point, nanoseconds (``lat_ns``, ``read_lat_ns``, …)."""

    min: float | None = None
    mean: float | None = None
    max: float | None = None
    stddev: float | None = None
    p50: float | None = None
    p90: float | None = None
    p99: float | None = None
    p99_9: float | None = None
    p99_99: float | None = None
    p99_999: float | None = None
    percentiles_approx: bool | None = None  # several jobs without json+ histograms: the weighted mean of theirs
    keys: tuple[str, ...] = ()
    more: JSONObject = field(default_factory=dict)

    def json(self) -> JSONObject:
        return _emit(self, self.keys, self.more)

    def get(self, key: str) -> float | None:
        """A figure by its key (``p99``, ``mean``, …); None when absent or of another type."""
        v = getattr(self, key, None) if key in _LATENCY_KEYS else None
        return v if isinstance(v, (int, float)) and not isinstance(v, bool) else None

    @classmethod
    def of(cls, d: Mapping[str, object]) -> "Latency":
        """From a summary the parser made (keys in its order)."""
        return _latency(d, None)  # type: ignore[return-value]  # never a misfit without a check


_LATENCY_KEYS = _names(Latency) - {"percentiles_approx"}


def _latency(v: object, check: Callable[[str, object], None] | None) -> Latency | _Misfit:
    """A latency summary; ``check`` refuses a value that is no number, bool or null (the checked summaries)."""
    if not isinstance(v, dict):
        return _MISFIT
    nums: dict[str, float] = {}
    more: JSONObject = {}
    for k, x in v.items():  # one pass: a results file holds a few of these per line
        if x is None or (isinstance(x, bool) and k == "percentiles_approx"):
            continue  # the key order keeps a null; percentiles_approx is read below
        if isinstance(x, bool) or not is_num(x):
            if not isinstance(x, bool):
                if check is None:
                    return _MISFIT
                check(k, x)
            more[k] = _any(x)  # a bool where a figure belongs, or (unchecked) a misfit: kept as read
        elif k in _LATENCY_KEYS:
            nums[k] = x  # is_num checked it: a figure, as read
        else:
            more[k] = _any(x)
    approx = v.get("percentiles_approx")
    g = nums.get
    return Latency(g("min"), g("mean"), g("max"), g("stddev"), g("p50"), g("p90"), g("p99"), g("p99_9"), g("p99_99"),
                   g("p99_999"), approx if isinstance(approx, bool) else None, tuple(v), more)


@dataclass(frozen=True)
class StorageMetrics:
    """What fio measured for a storage point (docs/architecture.md, "Metrics"): bytes, bytes/s, ns, CPU %."""

    iops: float | None = None
    read_iops: float | None = None
    write_iops: float | None = None
    bw_bytes: float | None = None
    read_bw_bytes: float | None = None
    write_bw_bytes: float | None = None
    lat_ns: Latency | None = None
    usr_cpu: float | None = None
    sys_cpu: float | None = None
    read_lat_ns: Latency | None = None
    write_lat_ns: Latency | None = None
    total_ios: float | None = None
    io_bytes: float | None = None
    jobs: int | None = None
    slat_ns: Latency | None = None
    clat_ns: Latency | None = None
    disk_util: list[JSONValue] | None = None
    trim_iops: float | None = None
    trim_bw_bytes: float | None = None
    errors: list[JSONValue] | None = None
    percentiles_source: str | None = None  # "clat_ns": fio gave no total-latency percentiles
    ci95: JSONObject | None = None  # figure → [low, high]: the 95 % interval of its mean (app.stats.uncertainty)
    ci_method: JSONObject | None = None  # how ci95 was computed, or why a figure has none
    # fio's json+ latency histogram, merged: [[ns, count], …] (app.model.tails); checked when read by hist(), not
    # before:
    # a results file may hold many lines and few readers need it
    lat_hist: list[JSONValue] | None = None
    iops_per_cpu: float | None = None  # I/Os per CPU-second of fio's job threads (app.runners.fio_parse)
    keys: tuple[str, ...] = ()
    more: JSONObject = field(default_factory=dict)

    def json(self) -> JSONObject:
        return _emit(self, self.keys, self.more)

    def hist(self) -> Hist | None:
        """The point's latency histogram (app.model.tails.Hist), None when the line has none or a malformed one."""
        return hist_of_record(self.lat_hist) if self.lat_hist is not None else None

    def interval(self, key: str) -> tuple[float, float] | None:
        """The 95 % interval of a figure's mean (``iops``, ``bw_bytes``, ``lat_mean_ns``), None when absent or no
        interval of the figure (:meth:`interval_or_why`)."""
        got = self.interval_or_why(key)
        return got if isinstance(got, tuple) else None

    def interval_or_why(self, key: str) -> tuple[float, float] | str | None:
        """The 95 % interval of a figure's mean; why the line's ``ci95`` holds no interval of the figure
        (:func:`checked_interval`); None when it records none."""
        figure = self.lat_ns.mean if key == "lat_mean_ns" and self.lat_ns is not None else self.figure(key)
        return checked_interval(self.ci95, key, figure)

    def with_ci(self, ci95: JSONObject, ci_method: JSONObject) -> "StorageMetrics":
        """These metrics with an interval record (app.stats.uncertainty.Uncertainty.json), its keys last."""
        return replace(self, ci95=ci95 or None, ci_method=ci_method,
                       keys=_keys_with(self.keys, ("ci95",) if ci95 else (), "ci_method"))

    def latency(self, key: str) -> Latency | None:
        """``lat_ns``, ``read_lat_ns``, ``write_lat_ns``, ``slat_ns`` or ``clat_ns``."""
        v = getattr(self, key, None) if key.endswith("lat_ns") else None
        return v if isinstance(v, Latency) else None

    def figure(self, key: str) -> float | None:
        """A number by its key (``read_iops``, ``write_bw_bytes``, …); None when absent."""
        v = getattr(self, key, None) if key in _STORAGE_FIGURES else None
        return v if isinstance(v, (int, float)) else None

    @classmethod
    def of(cls, m: Mapping[str, object]) -> "StorageMetrics":
        """The metrics fio's parser gave (keys in its order)."""
        return _storage_metrics(m, None)


_STORAGE_NAMES = _names(StorageMetrics)
_STORAGE_NUMBERS = ("iops", "read_iops", "write_iops", "bw_bytes", "read_bw_bytes", "write_bw_bytes", "usr_cpu",
                    "sys_cpu")
_STORAGE_FIGURES = set(_STORAGE_NUMBERS) | {"total_ios", "io_bytes", "trim_iops", "trim_bw_bytes", "iops_per_cpu"}
_LATENCIES = ("lat_ns", "read_lat_ns", "write_lat_ns")


def _storage_metrics(m: Mapping[str, object], refuse: Callable[[str, object, str], None] | None) -> StorageMetrics:
    if refuse is not None:
        for key in _STORAGE_NUMBERS:
            if m.get(key) is not None and not is_num(m[key]):
                refuse(f"metrics.{key}", m[key], NUM_RULE)
        for key in _LATENCIES:
            if m.get(key) is not None and not isinstance(m[key], dict):
                refuse(f"metrics.{key}", m[key], "an object")
    t = _Taker(m, _STORAGE_NAMES)

    def lat(key: str) -> Latency | None:
        if refuse is None or key not in _LATENCIES:
            return t.take(key, lambda v: _latency(v, None))
        return t.take(key, lambda v: _latency(v, lambda k, x: refuse(f"metrics.{key}.{k}", x, NUM_RULE)))

    n = {k: t.take(k, _num) for k in (*_STORAGE_NUMBERS, "total_ios", "io_bytes", "trim_iops", "trim_bw_bytes")}
    return StorageMetrics(
        n["iops"], n["read_iops"], n["write_iops"], n["bw_bytes"], n["read_bw_bytes"], n["write_bw_bytes"],
        lat("lat_ns"), n["usr_cpu"], n["sys_cpu"], lat("read_lat_ns"), lat("write_lat_ns"), n["total_ios"],
        n["io_bytes"], t.take("jobs", _whole), lat("slat_ns"), lat("clat_ns"), t.take("disk_util", _list),
        n["trim_iops"], n["trim_bw_bytes"], t.take("errors", _list), t.take("percentiles_source", _str),
        t.take("ci95", _ci95), t.take("ci_method", _obj), t.take("lat_hist", _list), t.take("iops_per_cpu", _num),
        tuple(m), t.more)


@dataclass(frozen=True)
class MemoryMetrics:
    """What a memory engine measured for a point: latency in ns, bandwidth in MB/s."""

    latency_ns: float | None = None
    bandwidth_mbps: float | None = None
    load_bandwidth_mbps: float | None = None  # the load threads' own bandwidth, where the engine reports it
    ci95: JSONObject | None = None  # figure → [low, high]: the 95 % interval of its mean (app.stats.uncertainty)
    ci_method: JSONObject | None = None  # how ci95 was computed, or why a figure has none
    keys: tuple[str, ...] = ()
    more: JSONObject = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not self.keys and not self.more:  # built in code: its keys are the fields that are set
            object.__setattr__(self, "keys", _present(self, ["latency_ns", "bandwidth_mbps", "load_bandwidth_mbps",
                                                             "ci95", "ci_method"]))

    def json(self) -> JSONObject:
        return _emit(self, self.keys, self.more)

    def interval(self, key: str) -> tuple[float, float] | None:
        """The 95 % interval of a figure's mean (``latency_ns``, ``bandwidth_mbps``), None when absent or no
        interval of the figure (:meth:`interval_or_why`)."""
        got = self.interval_or_why(key)
        return got if isinstance(got, tuple) else None

    def interval_or_why(self, key: str) -> tuple[float, float] | str | None:
        """As :meth:`StorageMetrics.interval_or_why`."""
        figure = {"latency_ns": self.latency_ns, "bandwidth_mbps": self.bandwidth_mbps}.get(key)
        return checked_interval(self.ci95, key, figure)

    def with_ci(self, ci95: JSONObject, ci_method: JSONObject) -> "MemoryMetrics":
        """These metrics with an interval record (app.stats.uncertainty.Uncertainty.json), its keys last."""
        return replace(self, ci95=ci95 or None, ci_method=ci_method,
                       keys=_keys_with(self.keys, ("ci95",) if ci95 else (), "ci_method"))


_MEMORY_NAMES = _names(MemoryMetrics)


def _memory_metrics(m: Mapping[str, object], refuse: Callable[[str, object, str], None]) -> MemoryMetrics:
    for key in ("latency_ns", "bandwidth_mbps"):
        if m.get(key) is not None and not is_num(m[key]):
            refuse(f"metrics.{key}", m[key], NUM_RULE)
    t = _Taker(m, _MEMORY_NAMES)
    return MemoryMetrics(t.take("latency_ns", _num), t.take("bandwidth_mbps", _num),
                         t.take("load_bandwidth_mbps", _num), t.take("ci95", _ci95), t.take("ci_method", _obj),
                         tuple(m), t.more)


@dataclass(frozen=True)
class Parts:
    """What a runner adds to its point's line beside the metrics; the session adds the rest (point, target,
    raw files, times, telemetry, validity flags), so a runner cannot change those."""

    host: str | None = None  # the fleet host that measured the point
    engine: str | None = None  # a memory point's engine (the session names it in the line's point too)
    command: str | None = None
    wall_s: float | None = None
    job: str | None = None
    fio_version: str | None = None
    engine_version: str | None = None
    command_line: str | None = None  # an imported MLC file's command line
    steady: Mapping[str, object] | None = None  # fio's steady-state outcome (JSON: fio_parse.steady_result)
    precision: Mapping[str, object] | None = None  # a point stopped at a precision (JSON: precision.precision_part)
    operating_point: Mapping[str, object] | None = None  # the latency-bound search's outcome (JSON)
    write_cliff: JSONObject | None = None
    buffer_bytes: JSONValue = None  # what the memory engine printed about its run
    write_buffer_bytes: JSONValue = None
    huge_pages: JSONValue = None
    delay_unit_ns: float | None = None
    load_threads: float | None = None
    warnings: JSONValue = None
    chase: JSONValue = None
    bandwidth_includes_latency_thread: bool | None = None
    notes: JSONValue = None  # an import's notes on the point
    numa: JSONValue = None  # the memory engine's verified placement: node, pages per node, page_bytes
    caches: JSONValue = None  # a working-set curve's cache levels: [{name, level, type, size_bytes, shared_cpus}]
    c2c_cpus: JSONValue = None  # a c2c figure's writer and reader CPUs: [writer, reader]
    device: JSONObject | None = None  # the target device's own counters around the point (app.host.devstat)
    tail: JSONObject | None = None  # the per-second p99 over the point: its median, worst second (app.model.tails)
    host_cpu: JSONObject | None = None  # the CPUs' busy time over the measured window, from /proc/stat
                                        # (app.host.cpustat)
    open_loop: JSONObject | None = None  # open loop: offered and achieved rate, whether it stayed open
                                         # (app.plan.openloop)
    layers: JSONObject | None = None  # the block requests' time in the scheduler and the device (app.host.blocktrace)
    keys: tuple[str, ...] = ()  # the order the runner gives them in; () = the fields that are set, as declared

    def __post_init__(self) -> None:
        if not self.keys:
            object.__setattr__(self, "keys", _present(self, _PART_ORDER))

    def json(self) -> JSONObject:
        return _emit(self, self.keys, {})


_PART_ORDER = [f.name for f in fields(Parts) if f.name != "keys"]
PART_KEYS = frozenset(_PART_ORDER)


def _parts(t: _Taker, keys: tuple[str, ...]) -> Parts:
    return Parts(
        t.take("host", _str), t.take("engine", _str), t.take("command", _str), t.take("wall_s", _num),
        t.take("job", _str), t.take("fio_version", _str), t.take("engine_version", _str),
        t.take("command_line", _str), t.take("steady", _obj), t.take("precision", _obj),
        t.take("operating_point", _obj),
        t.take("write_cliff", _obj), t.take("buffer_bytes", _any), t.take("write_buffer_bytes", _any),
        t.take("huge_pages", _any), t.take("delay_unit_ns", _num), t.take("load_threads", _num),
        t.take("warnings", _any), t.take("chase", _any), t.take("bandwidth_includes_latency_thread", _bool),
        t.take("notes", _any), t.take("numa", _any), t.take("caches", _any), t.take("c2c_cpus", _any),
        t.take("device", _obj), t.take("tail", _obj), t.take("host_cpu", _obj), t.take("open_loop", _obj),
        t.take("layers", _obj),
        keys=tuple(k for k in keys if k in PART_KEYS))


@dataclass(frozen=True)
class ResultLine:
    """One line of results.jsonl: one measured point (and, in a fleet run, one host)."""

    kind: Kind
    point: JSONObject  # the point's JSON table (app.model.points: ``Point.to_dict()``)
    metrics: StorageMetrics | MemoryMetrics
    index: int | None = None  # the point's plan index
    schema_version: int | None = None
    parts: Parts = field(default_factory=Parts)
    raw: dict[str, str] | None = None  # kind of file → its path under the results directory
    started: str | None = None
    ended: str | None = None
    target: str | None = None  # the storage target measured (a fleet host's own)
    telemetry: JSONObject | None = None  # what the drive reported while the point ran
    flags: list[JSONValue] | None = None  # the validity flags (app.stats.validity); absent on lines before they existed
    checks: JSONObject | None = None
    imported_from: str | None = None
    keys: tuple[str, ...] = ()  # the line's keys in order, parts included; () = the order the session writes
    more: JSONObject = field(default_factory=dict)  # keys this version does not know, and misfit values, as read

    @property
    def host(self) -> str | None:
        return self.parts.host

    @property
    def storage(self) -> StorageMetrics:
        """The metrics of a storage line (an empty set for a memory line)."""
        return self.metrics if isinstance(self.metrics, StorageMetrics) else StorageMetrics()

    @property
    def memory(self) -> MemoryMetrics:
        return self.metrics if isinstance(self.metrics, MemoryMetrics) else MemoryMetrics()

    def json(self) -> JSONObject:
        """The line as the JSON object the writer writes."""
        return _emit(self, self.keys or self._order(), self.more, self.parts)

    def _order(self) -> tuple[str, ...]:
        """The order of a line the session builds: what defines the point, the runner's parts (a fleet host's
        target right after its host), the files and times, then the target, telemetry and validity."""
        head = ("schema_version", "kind", "index", "point", "metrics")
        parts: list[str] = []
        for k in self.parts.keys:
            parts.append(k)
            if k == "host" and self.target is not None:
                parts.append("target")
        always = ("raw", "started", "ended", "target") if self.kind == Kind.STORAGE else ("raw", "started", "ended")
        tail = [k for k in ("raw", "started", "ended", "target", "telemetry", "flags", "checks", "imported_from")
                if k not in parts and (getattr(self, k) is not None or k in always)]
        return tuple(k for k in head if k != "schema_version" or self.schema_version is not None) + tuple(parts) + \
            tuple(tail)


def line_json(line: ResultLine) -> JSONObject:
    """The JSON object of a line (what :func:`write_line` writes, and what ``--json-stream`` shows)."""
    return line.json()


def write_line(line: ResultLine) -> str:
    """The line as results.jsonl holds it: compact JSON and a newline, keys in the line's order."""
    return write_json(line_json(line))


def write_json(obj: Mapping[str, object]) -> str:
    """A results line's bytes from its JSON object (the importer writes what it read this way)."""
    return json.dumps(obj, separators=(",", ":"), default=str) + "\n"


# --- which plan point a line measures ---------------------------------------------------------------------


def table_key(table: Mapping[str, object]) -> str:
    """A stable identity of a point's JSON table as run.json's plan and results.jsonl record it (untrusted, not
    re-typed): ``app.plan.presets.point_key`` of a typed point is this of its table."""
    # "engine" is added to memory records by the runner (README.md, "Results"), never part of the plan
    return json.dumps({k: v for k, v in table.items() if k not in ("group", "engine")}, sort_keys=True)


def base_key(table: Mapping[str, object]) -> str:
    """:func:`table_key` less the replicate: the replicates of one repeated point share it."""
    return table_key({k: v for k, v in table.items() if k != "replicate"})


def plan_keys(plan: Sequence[object]) -> tuple[str, ...]:
    """:func:`table_key` of each point of a plan (run.json's ``plan`` tables, by index; "" for one that is no
    table, which no line matches)."""
    return tuple(table_key(t) if isinstance(t, Mapping) else "" for t in plan)


def plan_mismatch(line: "ResultLine", keys: Sequence[str]) -> str | None:
    """Why ``line`` is a measurement of no point of the plan whose :func:`plan_keys` are ``keys``; None when it
    measures ``plan[line.index]``.

    The one identity of a measurement, for resume, the report, compare, the runs browser and the TUI: a line
    measures plan point ``i`` when its ``index`` is ``i`` and its ``point`` is that plan point's (by
    :func:`table_key`).  A line whose index and point disagree with the plan measures neither the point at its
    index nor the point it names: it is left out (and named), and resume measures both again."""
    if line.index is None:
        return "has no index"
    if line.index >= len(keys):
        return f"names plan index {line.index}, past the plan's {len(keys)} points"
    if table_key(line.point) != keys[line.index]:
        return f"its point is not plan[{line.index}]'s"
    return None


# --- the reader -----------------------------------------------------------------------------------------

_STORAGE_POINT: dict[str, Callable[[object], bool]] = {
    "rw": lambda v: isinstance(v, str), "bs": lambda v: is_whole(v, 1),
    "iodepth": lambda v: v is None or is_whole(v, 1), "numjobs": lambda v: v is None or is_whole(v, 1),
    "rwmixread": lambda v: v is None or is_whole(v, 0, 100), "ioengine": lambda v: v is None or isinstance(v, str),
    "direct": lambda v: v is None or isinstance(v, (bool, int)), "group": lambda v: v is None or isinstance(v, str)}
_MEMORY_POINT: dict[str, Callable[[object], bool]] = {
    "mode": lambda v: v is None or isinstance(v, str), "traffic": lambda v: v is None or isinstance(v, str),
    "stride": lambda v: v is None or is_whole(v, 1), "delay": lambda v: v is None or is_whole(v),
    "buffer": lambda v: v is None or is_whole(v), "engine": lambda v: v is None or isinstance(v, str),
    "source": lambda v: v is None or isinstance(v, str)}
_LINE_KEYS = _names(ResultLine) - {"parts"}
_ALL_LINE_KEYS = _LINE_KEYS | PART_KEYS


def read_line(obj: object, path: str | Path = "results.jsonl", lineno: int = 0, *, check: bool = True) -> ResultLine:
    """The results line ``obj`` (parsed JSON, or its text), checked: :class:`LineError` (exit code 2, one
    sentence naming ``path``, ``lineno``, the key and its value) for a line that cannot be used.  ``check=False``
    (a line put together in code from parts it trusts, e.g. a test's rows) refuses only a wrong ``kind`` or a
    ``point`` or ``metrics`` that is no object; ill-typed values read as absent."""
    where = f"{path}, line {lineno}" if lineno else str(path)

    def refuse(key: str, value: object, must: str) -> None:
        if check:
            raise LineError(f"{where}: key '{key}' has invalid value {show_value(value)}: must be {must}.")

    if isinstance(obj, (str, bytes)):
        try:
            obj = json.loads(obj)
        except (ValueError, RecursionError):
            raise LineError(f"{where}: is not JSON.") from None
    if not isinstance(obj, dict):
        raise LineError(f"{where}: is not a JSON object but {show_value(obj)}.")
    kind, point, metrics = obj.get("kind"), obj.get("point"), obj.get("metrics")
    if kind not in tuple(Kind):
        raise LineError(f"{where}: key 'kind' has invalid value {show_value(kind)}: must be storage or memory.")
    for key, value in (("point", point), ("metrics", metrics)):
        if not isinstance(value, dict):
            raise LineError(f"{where}: key '{key}' has invalid value {show_value(value)}: must be an object.")
    assert isinstance(point, dict) and isinstance(metrics, dict)
    if "index" in obj and not is_whole(obj["index"]):
        refuse("index", obj["index"], "a whole number ≥ 0")
    if "host" in obj and not (isinstance(obj["host"], str) and 0 < len(obj["host"]) <= 255):
        refuse("host", obj["host"], "a fleet host's name")
    typed: StorageMetrics | MemoryMetrics
    if kind == Kind.STORAGE:
        for key in ("rw", "bs"):
            if key not in point and check:
                raise LineError(f"{where}: key 'point.{key}' is missing.")
        _check_point(point, _STORAGE_POINT, refuse)
        typed = _storage_metrics(metrics, refuse)
    else:
        _check_point(point, _MEMORY_POINT, refuse)
        typed = _memory_metrics(metrics, refuse)
    t = _Taker(obj, _ALL_LINE_KEYS)
    return ResultLine(
        Kind(str(kind)), point, typed, index=t.take("index", _whole), schema_version=t.take("schema_version", _whole),
        parts=_parts(t, tuple(obj)), raw=t.take("raw", _strings), started=t.take("started", _str),
        ended=t.take("ended", _str), target=t.take("target", _str), telemetry=t.take("telemetry", _obj),
        flags=t.take("flags", _list), checks=t.take("checks", _obj), imported_from=t.take("imported_from", _str),
        keys=tuple(obj), more=t.more)  # a key written as null reads as absent; its place in keys writes it back


def _check_point(point: Mapping[str, object], checks: Mapping[str, Callable[[object], bool]],
                 refuse: Callable[[str, object, str], None]) -> None:
    for key, ok in checks.items():
        if key in point and not ok(point[key]):
            refuse(f"point.{key}", point[key], "of its type (docs/results-schema.md)")
