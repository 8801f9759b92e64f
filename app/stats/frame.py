"""A results directory's table: one row per point, the columns of results.csv, as CSV text or a pandas DataFrame.

The report and ``compare`` read a results directory through :func:`app.report.data.model.load`; this module
turns what that gives into rows: :func:`records` (one dict per point, the one definition of a results.csv
row), written by :func:`csv_text` for the report's results.csv (the csv module, no pandas), or typed as a
frame by ``load_results(DIR)`` for pandas users (pandas is the optional extra ``profiler-tui[pandas]``), or as
the same values in plain dicts by :func:`results_rows` for the TUI's results table, which needs no pandas.
Rows: the storage points by plan index, then the memory points by plan index, as
:func:`app.report.data.model.load` reads them (run.json checked, results.jsonl read and
validated by :class:`app.store.results.ResultsDir`, lines outside the plan left out).  Values are
those results.csv holds: throughputs in MB/s (10^6 B/s), latencies in µs for storage and ns for
memory, rounded to 6 decimals; a value the point does not have is missing (<NA> / NaN).

dtypes: ``kind`` and the text columns ``string``; whole-number columns ``Int64`` (nullable);
measured values ``float64``; ``direct`` and ``runtime`` hold what the point gave (``object``).
A whole-number column whose values do not fit 64 bits stays ``object`` (a results line may
hold numbers up to 2^64).

pandas is imported only by the frame functions, which neither the report nor the TUI calls: it costs ~0.3 s of a
report's start-up, and nothing the tool runs needs it, so an install without the extra lacks it (the frame
functions then raise one sentence naming the extra).  results.csv holds the bytes ``to_csv`` writes of that
frame (a float by its shortest repr; a missing value an empty cell; ``\\n`` line ends):
tests/unit/test_frame_csv.py holds the two writers, and the frame's rows and :func:`typed_rows`, equal.
"""

from __future__ import annotations

import csv
import io
import math
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Iterable, Mapping, Sequence

from app.model.points import Kind, MemoryPoint, StoragePoint, csv_columns
from app.model.records import Latency, ResultLine
from app.stats.peak import fio_cpus

if TYPE_CHECKING:
    import pandas as pd

    from app.report.data.model import MemoryRow, RunData, StorageRow

MB = 1e6

CI_FIGURES = ("iops", "bw_bytes", "lat_mean_ns", "latency_ns", "bandwidth_mbps")
CI_COLUMNS = tuple(f"{f}_ci_{end}" for f in CI_FIGURES for end in ("low", "high"))
TAIL_COLUMNS = ("lat_p99_999_us", "device_read_ratio", "device_write_ratio", "device_lat_mean_us")
CPU_COLUMNS = ("iops_per_cpu", "busy_cpus", "iops_per_busy_cpu", "fio_cpus", "steal_cpus")
# a figure's column → (its interval's key, the factor from the interval's unit to the column's)
CENTRED = {"iops": ("iops", 1.0), "bw_MBps": ("bw_bytes", 1e-6), "lat_mean_us": ("lat_mean_ns", 1e-3),
           "latency_ns": ("latency_ns", 1.0), "bandwidth_MBps": ("bandwidth_mbps", 1.0)}
WHOLE_RUN_COLUMNS = tuple(f"{c}_whole_run" for c in CENTRED)
SUITE_KEYS = ("cpu_node", "mem_node", "threads", "pages", "c2c", "reader_node", "home")
CSV_COLUMNS = [
    "kind", "index", "group", *csv_columns(StoragePoint),
    "iops", "read_iops", "write_iops", "bw_MBps", "read_bw_MBps", "write_bw_MBps",
    "lat_min_us", "lat_mean_us", "lat_max_us", "lat_stddev_us", "lat_p50_us", "lat_p90_us", "lat_p99_us",
    "lat_p99_9_us", "lat_p99_99_us", "usr_cpu_pct", "sys_cpu_pct", "littles_L", "littles_N", "littles_ratio",
    *csv_columns(MemoryPoint), "latency_ns", "bandwidth_MBps", "flags",
    # the memory suite's keys, after the columns older results.csv files have (scripts that read those by
    # position keep working): which matrix cell, how many load threads, which c2c figure, which page size
    *SUITE_KEYS,
    # the 95 % interval of each figure's mean (app.report.compute.intervals), in the units the names say: storage IOPS,
    # bytes/s and ns; memory ns and MB/s; empty where a point has none
    *CI_COLUMNS,
    # the deepest tail percentile and the device's own counters (docs/tails.md), after the older columns
    *TAIL_COLUMNS,
    # I/Os per CPU-second of fio's job threads, then the CPUs busy over the point by /proc/stat and fio's I/Os per
    # busy CPU-second (the line's host_cpu part; docs/results-schema.md), empty for lines that predate them; then
    # (after those, for scripts that read by position) the CPUs fio's own job threads kept busy, and the host's
    # steal in CPUs (host_cpu's steal_s over its window_s)
    *CPU_COLUMNS,
    # a figure with an interval is the interval's centre (the mean past the warm-up, what the report shows with
    # ±); these are the line's own figures over the whole run (fio's, the engine's whole window), warm-up
    # included, in the units of the columns they stand for; empty where the point has no interval of it
    *WHOLE_RUN_COLUMNS,
]
LAT_KEYS = ("min", "mean", "max", "stddev", "p50", "p90", "p99")
TEXT_COLUMNS = ("kind", "group", "rw", "ioengine", "mode", "traffic", "engine", "flags", "pages", "c2c", "home")
INT_COLUMNS = ("index", "rwmixread", "bs", "iodepth", "numjobs", "littles_N", "stride", "delay", "buffer", "cpu_node",
               "mem_node", "threads", "reader_node")
OBJECT_COLUMNS = ("direct", "runtime")
FLOAT_COLUMNS = tuple(c for c in CSV_COLUMNS if c not in TEXT_COLUMNS + INT_COLUMNS + OBJECT_COLUMNS)


def _r6(x: float | None) -> float | None:
    return None if x is None else round(float(x), 6)


def _ci_cells(intervals: Mapping[str, tuple[float, float]]) -> dict[str, object]:
    """The ``*_ci_low``/``*_ci_high`` cells of a point's intervals (figure → (low, high))."""
    return {f"{k}_ci_{end}": _r6(iv[i]) for k, iv in intervals.items() for i, end in enumerate(("low", "high"))}


def _centred(row: dict[str, object], intervals: Mapping[str, tuple[float, float]]) -> dict[str, object]:
    """``row`` with each figure that has an interval set to the interval's centre (the figure the report shows
    with ±, inside its interval by construction) and the line's own figure moved to ``*_whole_run``."""
    for col, (key, factor) in CENTRED.items():
        iv = intervals.get(key)
        if iv is not None and row.get(col) is not None:
            row[f"{col}_whole_run"] = row[col]
            row[col] = _r6((iv[0] + iv[1]) / 2 * factor)
    return row


def storage_record(p: StorageRow, run_dir: Path | None = None) -> dict[str, object]:
    """The results.csv values of one storage point (None: the cell is empty); ``run_dir``: where its samples are,
    for the interval of a line that records none."""
    from app.report.compute.analysis import littles_law
    from app.report.compute.intervals import storage_intervals

    m = p.metrics
    lat = m.lat_ns or Latency()
    ll = littles_law(p)
    row: dict[str, object] = {
        "kind": Kind.STORAGE.value, "index": p.index, "group": p.group or "", "rw": p.rw,
        "rwmixread": p.point.get("rwmixread") if p.mixed else None, "bs": p.bs, "iodepth": p.iodepth,
        "numjobs": p.numjobs, "ioengine": p.ioengine, "direct": p.point.get("direct", ""),
        "runtime": p.point.get("runtime", ""), "iops": _r6(p.iops),
        "read_iops": _r6(m.read_iops), "write_iops": _r6(m.write_iops),
        "bw_MBps": _r6(p.bw / MB), "read_bw_MBps": _r6(float(m.read_bw_bytes or 0) / MB),
        "write_bw_MBps": _r6(float(m.write_bw_bytes or 0) / MB),
        "usr_cpu_pct": _r6(p.usr), "sys_cpu_pct": _r6(p.sys), "iops_per_cpu": _r6(m.iops_per_cpu),
        "fio_cpus": _r6(own) if (own := fio_cpus(p.line)) is not None and 0 <= own <= MAX_BUSY_CPUS else None,
        "littles_L": _r6(ll.l) if ll else None, "littles_N": p.inflight,
        "littles_ratio": _r6(ll.ratio) if ll else None,
        # the validity flags, ';'-separated; empty when none was raised or the line predates the checks
        "flags": ";".join(f["flag"] for f in [*p.flags, *p.other_flags]) or None,
    }
    for key in LAT_KEYS:
        v = lat.get(key)
        row[f"lat_{key}_us"] = None if v is None else _r6(float(v) / 1e3)
    row.update(_tail_cells(p))
    row.update(_host_cpu_cells(p))
    intervals = storage_intervals(run_dir, p)
    row.update(_ci_cells(intervals))
    return _centred(row, intervals)


MAX_BUSY_CPUS = 1 << 16  # beyond any machine: an old or foreign line's figure is not shown
MAX_IOPS_PER_BUSY_CPU = 1e12


def _host_cpu_cells(p: StorageRow) -> dict[str, object]:
    """The CPUs busy over the point (/proc/stat) and fio's I/Os per busy CPU-second, empty without the line's
    ``host_cpu`` part or where its figures are not a machine's."""
    from app.model.records import number

    h = p.line.parts.host_cpu
    if not isinstance(h, Mapping) or "unavailable" in h:
        return {}
    busy, per = number(h.get("busy_cpus")), number(h.get("iops_per_busy_cpu"))
    steal, window = number(h.get("steal_s")), number(h.get("window_s"))
    steal_cpus = steal / window if steal is not None and window is not None and window > 0 else None
    return {"busy_cpus": _r6(busy) if busy is not None and 0 <= busy <= MAX_BUSY_CPUS else None,
            "iops_per_busy_cpu": _r6(per) if per is not None and 0 <= per <= MAX_IOPS_PER_BUSY_CPU else None,
            "steal_cpus": _r6(steal_cpus) if steal_cpus is not None and 0 <= steal_cpus <= MAX_BUSY_CPUS else None}


def _tail_cells(p: StorageRow) -> dict[str, object]:
    """p99.9 … p99.999 in µs, each empty where the point's I/O count does not support it (app.model.tails.supported),
    and the device check's ratios and mean latency (µs), empty without the device's counters."""
    from app.model.records import number
    from app.model.tails import TAIL_PERCENTILES, supported
    from app.report.sections.tails import ios_of, tail_value

    ios = ios_of(p)
    row: dict[str, object] = {}
    for key, pct, _label in TAIL_PERCENTILES[1:]:  # p99 stays as fio gave it, as it always was
        v = tail_value(p, key, pct)
        row[f"lat_{key}_us"] = _r6(v / 1e3) if v is not None and supported(pct, ios, p.inflight) else None
    d = p.line.parts.device
    if isinstance(d, Mapping) and "unavailable" not in d:
        lat = number(d.get("lat_mean_ns"))
        row.update(device_read_ratio=_r6(number(d.get("read_ratio"))),
                   device_write_ratio=_r6(number(d.get("write_ratio"))),
                   device_lat_mean_us=None if lat is None else _r6(lat / 1e3))
    return row


def memory_record(p: MemoryRow) -> dict[str, object]:
    """The results.csv values of one memory point (stride and buffer 0 are written empty, as unset)."""
    from app.report.compute.contention import contended
    from app.report.compute.intervals import memory_intervals

    intervals = memory_intervals(p)
    return _centred({"kind": Kind.MEMORY.value, "index": p.index, "mode": p.mode, "traffic": p.traffic or "",
                     "stride": p.stride or None, "delay": p.delay, "buffer": p.buffer or None, "engine": p.engine,
                     "latency_ns": _r6(p.latency), "bandwidth_MBps": _r6(p.bandwidth),
                     "flags": "contended" if contended(p) else None,  # a thread got < 90 % of a CPU
                     **{k: _suite_value(p.point.get(k)) for k in SUITE_KEYS}, **_ci_cells(intervals)}, intervals)


def _suite_value(v: object) -> object:
    """A suite key's value from an untrusted line: a whole number or a short word, else an empty cell."""
    if isinstance(v, int) and not isinstance(v, bool) and 0 <= v < 1 << 20:
        return v
    return v if isinstance(v, str) and v.isalnum() and len(v) <= 8 else None


def records(storage: Sequence[StorageRow], memory: Sequence[MemoryRow],
            run_dir: Path | None = None) -> list[dict[str, object]]:
    """The results.csv rows of these points: the storage rows first (``run_dir``: see :func:`storage_record`),
    their text cells cleaned (:func:`cleaned`)."""
    return [cleaned(storage_record(p, run_dir)) for p in storage] + [cleaned(memory_record(p)) for p in memory]


MAX_TEXT_CELL = 200  # characters of a text cell


def cleaned(row: dict[str, object]) -> dict[str, object]:
    """A row whose text cells (a group's label, rw, flags …: whatever a results line from anywhere holds) have no
    control character or escape sequence (a line break is a space) and at most :data:`MAX_TEXT_CELL` characters
    (:func:`app.core.sanitize.clean_text`): what results.csv, the frame and the TUI's results table hold."""
    from app.core.sanitize import clean_text

    for col in TEXT_COLUMNS:
        v = row.get(col)
        if isinstance(v, str):
            row[col] = clean_text(v, limit=MAX_TEXT_CELL)
    return row


def _cell(v: object) -> object:
    """A value as the csv module writes it: a missing one (None, NaN) as an empty cell; a float by its repr,
    which is what pandas writes of a float64 column."""
    return "" if v is None or (isinstance(v, float) and math.isnan(v)) else v


def csv_text(columns: Sequence[str], rows: Iterable[Mapping[str, object]]) -> str:
    """CSV of these rows in these columns (a key a row lacks is an empty cell), ``\\n`` line ends, quoted only
    where a cell holds a comma, a quote or a line break: the bytes pandas' ``to_csv`` writes of their frame."""
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")  # pandas' dialect: ',', '"' doubled, minimal quoting
    writer.writerow(columns)
    writer.writerows([_cell(r.get(c)) for c in columns] for r in rows)
    return buf.getvalue()


def frame_of(storage: Sequence[StorageRow], memory: Sequence[MemoryRow],
             run_dir: Path | None = None) -> pd.DataFrame:
    """The DataFrame of these points (storage rows first), typed as the module docstring says."""
    return typed_frame(records(storage, memory, run_dir))


PANDAS_MISSING = ("pandas is not installed: app.stats.frame's DataFrame functions need it, and it is the optional "
                  "extra profiler-tui[pandas] (pip install 'profiler-tui[pandas]').")


def _pandas() -> ModuleType:
    """The pandas module, or ModuleNotFoundError with one sentence naming the extra."""
    try:
        import pandas
    except ImportError:
        raise ModuleNotFoundError(PANDAS_MISSING, name="pandas") from None
    return pandas


def typed_frame(rows: list[dict[str, object]]) -> pd.DataFrame:
    """The frame of results.csv rows, each column typed as the module docstring says."""
    df: pd.DataFrame = _pandas().DataFrame(rows, columns=CSV_COLUMNS, dtype=object)  # no inference: typed below
    types: dict[str, str] = {c: "string" for c in TEXT_COLUMNS}
    types.update({c: "float64" for c in FLOAT_COLUMNS})
    types.update({c: "object" for c in OBJECT_COLUMNS})
    for col, dtype in types.items():
        df[col] = df[col].astype(dtype)  # type: ignore[call-overload]  # dtype names as strings
    for col in INT_COLUMNS:
        try:
            df[col] = df[col].astype("Int64")
        except (OverflowError, TypeError, ValueError):  # beyond 64 bits: keep the Python ints
            df[col] = df[col].astype("object")
    return df


def frame_of_data(data: RunData) -> pd.DataFrame:
    return frame_of(data.storage, data.memory, data.path)


def load_results(directory: str | Path) -> pd.DataFrame:
    """One row per point of a results directory, the columns (and values) of results.csv.

    Errors are those of :func:`app.report.data.model.load`: a missing or ill-typed run.json is a
    UsageError naming the key; unusable results.jsonl lines are left out (and counted there).
    """
    from app.report.data.model import load

    return frame_of_data(load(directory))


def records_frame(lines: list[ResultLine]) -> pd.DataFrame:
    """The frame of results lines already read (no run.json, so no plan to check indexes against):
    the TUI's results table of a directory whose run.json cannot be read."""
    from app.report.data.model import split_records

    storage, memory, _outside = split_records(lines)
    return frame_of(storage, memory)


def results_rows(directory: str | Path) -> list[dict[str, object]]:
    """What ``rows(load_results(directory))`` gives, without pandas: the TUI's results table."""
    from app.report.data.model import load

    data = load(directory)
    return typed_rows(records(data.storage, data.memory, data.path))


def records_rows(lines: list[ResultLine]) -> list[dict[str, object]]:
    """What ``rows(records_frame(lines))`` gives, without pandas."""
    from app.report.data.model import split_records

    storage, memory, _outside = split_records(lines)
    return typed_rows(records(storage, memory))


def typed_rows(rows: list[dict[str, object]]) -> list[dict[str, object]]:
    """``rows(typed_frame(rows))`` in plain Python: every column of results.csv, each value typed as its
    column's dtype makes it (text a str, a whole number an int, a measured value a float), a missing one
    (None, NaN) None; a whole-number column with a value beyond 64 bits keeps its values as they are."""
    wide = {c for c in INT_COLUMNS
            if any(isinstance(v := r.get(c), int) and not -(1 << 63) <= v < 1 << 63 for r in rows)}

    def typed(col: str, v: object) -> object:
        if v is None or (isinstance(v, float) and math.isnan(v)):
            return None
        if col in TEXT_COLUMNS:
            return str(v)
        if col in FLOAT_KINDS:
            return float(v)  # type: ignore[arg-type]  # the records hold numbers in these columns
        if col in INT_KINDS and col not in wide:
            return int(v)  # type: ignore[call-overload]
        return v

    return [{c: typed(c, r.get(c)) for c in CSV_COLUMNS} for r in rows]


FLOAT_KINDS = frozenset(FLOAT_COLUMNS)
INT_KINDS = frozenset(INT_COLUMNS)


def rows(df: pd.DataFrame) -> list[dict[str, object]]:
    """The frame's rows as dicts of Python values, a missing value (<NA>, NaN) as None."""
    na = _pandas().NA

    def plain(v: object) -> object:
        return None if v is na or (isinstance(v, float) and math.isnan(v)) else v

    return [{str(k): plain(v) for k, v in r.items()} for r in df.astype(object).to_dict("records")]


def to_csv(df: pd.DataFrame) -> str:
    """results.csv: the frame as CSV, a missing value as an empty cell, ``\\n`` line ends."""
    buf = io.StringIO()
    df.to_csv(buf, index=False, lineterminator="\n", na_rep="")
    return buf.getvalue()
