"""Results of a run: a sortable table and the export of report.md, report.html, plots and results.csv."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Mapping

from rich.text import Text
from textual.actions import SkipAction
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen, Screen
from textual.widgets import Button, DataTable, Footer, Header, Input, Static
from textual.worker import Worker, WorkerState

from app.core.sanitize import clean_text
from app.core.units import format_count
from app.model.points import Kind
from app.model.records import ResultLine
from app.screens import strings
from app.screens.messages import ShowDevices, ShowFigures, ShowReport
from app.screens.prerender import wait_rendered
from app.stats.frame import MAX_TEXT_CELL
from app.stats.peak import CpuCost, cpu_cost
from app.stats.summary import (
    SUITE_MODES,
    ci_pct,
    delay_header,
    figure_keys,
    latency_text,
    natural_key,
    pm_pct,
    point_label,
)
from app.stats.validity import recorded_ratio
from app.store.results import ResultsDir, file_stamp
from app.widgets import KeysFooter, StyledOnce, TooSmall
from app.widgets.glyphs import mbps, mbps_unit
from app.widgets.rowtable import RowTable

if TYPE_CHECKING:
    from rich.console import JustifyMethod

    from app.report.data.model import RunData

Column = tuple[str, Callable[[dict[str, Any]], Any], Callable[[Any], str]]


def _storage_label(r: dict[str, Any]) -> str:
    point = {k: r[k] for k in ("rw", "rwmixread", "bs", "iodepth", "numjobs", "group") if r.get(k) is not None}
    return point_label(Kind.STORAGE, point)


STORAGE_COLUMNS: list[Column] = [
    ("#", lambda r: r["index"], lambda v: str(v + 1)),
    ("test", _storage_label, str),
    ("IOPS", lambda r: r["iops"] or 0.0, format_count),
    ("MB/s", lambda r: r["bw_MBps"] or 0.0, lambda v: f"{v:.1f}"),
    ("avg µs", lambda r: r["lat_mean_us"] or 0.0, lambda v: f"{v:.1f}"),
    ("p99 µs", lambda r: r["lat_p99_us"] or 0.0, lambda v: f"{v:.1f}"),
    ("CPU %", lambda r: (r["usr_cpu_pct"] or 0.0) + (r["sys_cpu_pct"] or 0.0), lambda v: f"{v:.1f}"),
]
# shown when a point of the run has a 95 % interval of its headline figure (results.csv's *_ci_low/high)
def _storage_ci(r: dict[str, Any]) -> float:
    """A storage row's interval of its IOPS in per cent; -1 for none (sorts first)."""
    pct = ci_pct(r["iops"], r.get("iops_ci_low"), r.get("iops_ci_high"))
    return -1.0 if pct is None else pct


def _memory_ci(r: dict[str, Any]) -> float:
    """A memory row's interval of its latency, or of its bandwidth when it has no latency, in per cent; -1 for
    none."""
    if r.get("latency_ns") is not None and r["latency_ns"] == r["latency_ns"]:  # not NaN
        pct = ci_pct(r["latency_ns"], r.get("latency_ns_ci_low"), r.get("latency_ns_ci_high"))
    else:
        pct = ci_pct(r.get("bandwidth_MBps"), r.get("bandwidth_mbps_ci_low"), r.get("bandwidth_mbps_ci_high"))
    return -1.0 if pct is None else pct


STORAGE_CI_COLUMN: Column = ("±", _storage_ci, lambda v: pm_pct(None if v < 0 else v))
MEMORY_CI_COLUMN: Column = ("±", _memory_ci, lambda v: pm_pct(None if v < 0 else v))


def with_ci_column(columns: list[Column], records: list[dict[str, Any]], memory: bool) -> list[Column]:
    """The columns with ± after the figure it belongs to (IOPS; latency or bandwidth) when a row has one."""
    column = MEMORY_CI_COLUMN if memory else STORAGE_CI_COLUMN
    if not any(column[1](r) >= 0 for r in records):
        return columns
    after = next(i for i, c in enumerate(columns) if c[0] in ("IOPS", "latency ns", "MB/s")) + 1
    return columns[:after] + [column] + columns[after:]


# the device/fio byte ratio of a point (its line's ``device`` part, app.host.devstat): shown when a point of the run
# has the part; the direction(s) the workload moves, "—" when the counters were unavailable or fio moved nothing
DEVICE_FLAGS = ("not-on-device", "amplified")
DEVICE_MARK = "!"  # after the ratio: the point carries one of DEVICE_FLAGS


def device_ratio(rw: str, device: object, flags: str) -> tuple[float, str]:
    """(sort key, cell) of a point's device/fio byte ratio: the read ratio of a read point, the write ratio of a
    write point, "read/write" of a mixed one; DEVICE_MARK after it when the point is flagged for it."""
    if not isinstance(device, dict) or "unavailable" in device:
        return -1.0, "—"
    mixed = rw in ("rw", "randrw", "readwrite")
    keys = ("read_ratio", "write_ratio") if mixed else (("write_ratio",) if "write" in rw else ("read_ratio",))
    ratios = [recorded_ratio(device, k) for k in keys]
    if all(r is None for r in ratios):
        return -1.0, "—"
    text = "/".join("—" if r is None else f"{r:.2f}" for r in ratios)
    marked = any(f in DEVICE_FLAGS for f in flags.split(";"))
    return min(r for r in ratios if r is not None), text + (DEVICE_MARK if marked else "")


DEVICE_COLUMN: Column = ("dev/fio", lambda r: r["dev_fio"], lambda v: v[1])


def storage_lines(path: Path, records: list[dict[str, Any]],
                  lines: list[ResultLine] | None = None) -> dict[int | None, ResultLine]:
    """The storage lines of the run by plan index (for the columns that need more than results.csv): of ``lines``
    (the run's plan lines, as read with the rows), else read now."""
    if not any(r.get("kind") == Kind.STORAGE for r in records):
        return {}
    read = ResultsDir(path).plan_lines() if lines is None else lines
    return {line.index: line for line in read if line.kind == Kind.STORAGE}


def with_device_column(lines: Mapping[int | None, ResultLine], columns: list[Column],
                       records: list[dict[str, Any]]) -> list[Column]:
    """The columns with dev/fio before CPU % when a storage line of the run has a ``device`` part (set on each
    row as ``dev_fio``); unchanged for a run written before the counters were read."""
    device = {i: line.parts.device for i, line in lines.items() if line.parts.device is not None}
    if not device:
        return columns
    for r in records:
        r["dev_fio"] = device_ratio(str(r.get("rw") or "read"), device.get(r["index"]), r.get("flags") or "")
    at = next((i for i, c in enumerate(columns) if c[0] == "CPU %"), len(columns))
    return columns[:at] + [DEVICE_COLUMN] + columns[at:]


# IOPS per CPU of a point (app.stats.peak.cpu_cost): per CPU-second of fio's own job threads (usr+sys); the host's busy
# CPUs, which count other processes too, are the report's, beside it (docs/report.md, "CPU cost")


def cpu_cell(cost: CpuCost) -> tuple[float, str]:
    """(sort key, cell) of a point's IOPS per CPU: k-formatted, "—" without the figure (sorts first)."""
    if cost.value is None:
        return -1.0, "—"
    return cost.value, format_count(cost.value)


CPU_COLUMN: Column = ("IOPS/CPU", lambda r: r["iops_cpu"], lambda v: v[1])


def with_cpu_column(lines: Mapping[int | None, ResultLine], columns: list[Column],
                    records: list[dict[str, Any]]) -> tuple[list[Column], str | None]:
    """The columns with IOPS/CPU after CPU % when a storage line has fio's own CPU figure (set on each row as
    ``iops_cpu``), and the status line's words for what it counts; unchanged (None) otherwise."""
    costs = {i: cpu_cost(line) for i, line in lines.items()}
    if not any(c.value is not None for c in costs.values()):
        return columns, None
    none = CpuCost(None)
    for r in records:
        r["iops_cpu"] = cpu_cell(costs.get(r["index"], none))
    at = next((i + 1 for i, c in enumerate(columns) if c[0] == "CPU %"), len(columns))
    return columns[:at] + [CPU_COLUMN] + columns[at:], strings.RESULTS_CPU_FIO


# shown when a point of the run has a validity flag (app.stats.validity)
FLAGS_COLUMN: Column = ("flags", lambda r: r.get("flags") or "", lambda v: v.replace(";", " "))
MEMORY_COLUMNS: list[Column] = [
    ("#", lambda r: r["index"], lambda v: str(v + 1)),
    ("traffic", lambda r: r["traffic"] or "idle", str),
    ("stride", lambda r: r["stride"] or 0, str),
    ("delay", lambda r: r["delay"] if r["delay"] is not None else -1, lambda v: "-" if v == -1 else str(v)),
    ("latency ns", lambda r: r["latency_ns"] or 0.0, lambda v: f"{v:.1f}"),
    ("MB/s", lambda r: r["bandwidth_MBps"] or -1.0, lambda v: "-" if v < 0 else f"{v:.1f}"),
]
# a memory run that measured the suite's modes: each figure's mode and what identifies it
# (app.stats.summary.figure_keys)
SUITE_COLUMNS: list[Column] = [
    ("#", lambda r: r["index"], lambda v: str(v + 1)),
    ("mode", lambda r: r["mode"] or "", str),
    ("figure", lambda r: r.get("figure") or "", str),
    ("latency ns", lambda r: r["latency_ns"] if r["latency_ns"] is not None else -1.0,
     lambda v: "-" if v < 0 else latency_text(v)),
    ("MB/s", lambda r: r["bandwidth_MBps"] or -1.0, lambda v: "-" if v < 0 else f"{v:.1f}"),
]
RIGHT = {"#", "IOPS", "±", "MB/s", "avg µs", "p99 µs", "dev/fio", "CPU %", "IOPS/CPU", "stride", "delay", "latency ns"}


# --- a fleet run: host × point (app.report.compute.fleet: the same points, totals and outliers as the report) -----


@dataclass
class FleetRow:
    """One host's figures of a point, or (``host`` None) the point's total over its hosts."""

    host: str | None
    iops: float | None = None
    mbps: float | None = None
    mean_us: float | None = None
    p99_us: float | None = None
    failed: bool = False  # run.json records this host's point as failed
    outliers: frozenset[str] = frozenset()  # the figures (iops, lat_mean, p99) that are the fleet's outliers


@dataclass
class FleetPoint:
    index: int
    label: str
    hosts: list[FleetRow] = field(default_factory=list)  # in the run's host order
    total: FleetRow = field(default_factory=lambda: FleetRow(None))


@dataclass
class FleetTable:
    hosts: list[str]  # the run's hosts, as given to --host
    points: list[FleetPoint]
    failed: int = 0
    outliers: int = 0
    merged_p99: bool = False  # a total has a p99: the hosts' merged histograms' (app.report.compute.fleet.fleet_tail)


def _fleet_label(point: Mapping[str, object]) -> str:
    """A short name of the point: its group and direction ("SEQ1M Q8T1 read"), or its settings."""
    if point.get("group"):
        return f"{point['group']} {point.get('rw', '?')}"
    return point_label(Kind.STORAGE, point)


def fleet_table(data: RunData) -> FleetTable:
    """Host × point of a fleet run (:class:`app.report.data.model.RunData`): each point's hosts in the fleet's order
    (a failed host-point as such), then the total (IOPS and MB/s summed; latencies are not summed)."""
    from app.report.compute.fleet import failed_host_points, fleet_points, fleet_tail

    names = data.fleet.names if data.fleet is not None else []
    failed = failed_host_points(data.meta)
    plan = data.meta.plan
    points: dict[int, FleetPoint] = {}
    outliers = 0
    for fp in fleet_points(data):
        point = FleetPoint(fp.index, _fleet_label(fp.point))
        for host in names:
            row = fp.rows.get(host)
            if row is None:
                if (fp.index, host) in failed:
                    point.hosts.append(FleetRow(host, failed=True))
                continue
            marked = frozenset(o.figure.key for o in fp.outliers if o.host == host)
            outliers += len(marked)
            point.hosts.append(FleetRow(host, row.iops, row.bw / 1e6, row.lat_mean / 1e3,
                                        None if row.p99 is None else row.p99 / 1e3, outliers=marked))
        p99 = fleet_tail(fp).values.get("p99")  # never a mean or median of the hosts' p99s
        point.total = FleetRow(None, fp.total_iops, fp.total_bw / 1e6, p99_us=None if p99 is None else p99 / 1e3)
        points[fp.index] = point
    for index, host in sorted(failed):  # a point no host measured
        planned = plan[index] if 0 <= index < len(plan) else None
        if index not in points and isinstance(planned, dict) and host in names:
            points[index] = FleetPoint(index, _fleet_label(planned))
        if index in points and not any(r.host == host for r in points[index].hosts) and host in names:
            points[index].hosts.append(FleetRow(host, failed=True))
            points[index].hosts.sort(key=lambda r: names.index(r.host or ""))
    merged = any(p.total.p99_us is not None for p in points.values())
    return FleetTable(names, [points[i] for i in sorted(points)], len(failed), outliers, merged)


def load_fleet(path: Path) -> FleetTable | None:
    """The fleet table of a fleet run's directory (run.json names its hosts); None for any other run, or when
    run.json cannot be read (the plain table shows what the results lines hold)."""
    from app.core.errors import ProfilerError
    from app.report.data.fleet_read import is_fleet
    from app.report.data.model import load

    try:
        if not is_fleet(ResultsDir(path).read_meta()):
            return None
        return fleet_table(load(path))
    except (ProfilerError, OSError, ValueError):
        return None


def host_names(hosts: list[str]) -> dict[str, str]:
    """How the table writes each host: without ``tcp://``/``ssh://`` when that leaves them distinct."""
    short = {h: h.split("://", 1)[-1] for h in hosts}
    return short if len(set(short.values())) == len(short) else {h: h for h in hosts}


FleetColumn = tuple[str, Callable[[FleetPoint], float | str]]
# what points (each with its hosts and total) sort by: the total's IOPS and MB/s, the slowest host's latency
FLEET_COLUMNS: list[FleetColumn] = [
    ("#", lambda p: p.index),
    ("test", lambda p: p.label),
    ("host", lambda p: p.index),
    ("IOPS", lambda p: p.total.iops or 0.0),
    ("MB/s", lambda p: p.total.mbps or 0.0),
    ("avg µs", lambda p: max((r.mean_us or 0.0 for r in p.hosts), default=0.0)),
    ("p99 µs", lambda p: max((r.p99_us or 0.0 for r in p.hosts), default=0.0)),
]


def shown(text: object, justify: JustifyMethod | None = None) -> Text:
    """A cell or line of text from a results directory (a group's label, a host's name, a flag, a path) as the
    screen draws it: one line without control characters or escape sequences, never read as markup."""
    return Text(clean_text(text, limit=MAX_TEXT_CELL), justify=justify)


def _cell(value: float | None, fmt: Callable[[float], str], style: str = "") -> Text:
    return Text("-" if value is None else fmt(value), justify="right", style=style)


OUTLIER_STYLE = "bold yellow"


def _one(v: float) -> str:
    return f"{v:.1f}"


def fleet_cells(p: FleetPoint, names: dict[str, str], scale: float = 1.0) -> list[list[str | Text]]:
    """The table rows of a point: one per host (the point's number and name on the first), then its total; a
    figure that is the fleet's outlier at this point in yellow.  Bandwidths (MB/s) are multiplied by ``scale``
    (MiB/s)."""
    def bw(value: float | None) -> float | None:
        return None if value is None else value * scale

    out: list[list[str | Text]] = []
    label = shown(p.label)
    for i, r in enumerate(p.hosts):
        head: list[str | Text] = [Text(str(p.index + 1), justify="right"), label] if i == 0 else ["", ""]
        host = shown(names.get(r.host or "", r.host or ""))
        if r.failed:
            out.append(head + [host, Text(strings.RESULTS_FLEET_FAILED, style="red", justify="right"),
                               "", "", ""])
            continue
        mark = {key: OUTLIER_STYLE if key in r.outliers else "" for key in ("iops", "lat_mean", "p99")}
        out.append(head + [host, _cell(r.iops, format_count, mark["iops"]), _cell(bw(r.mbps), _one, mark["iops"]),
                           _cell(r.mean_us, _one, mark["lat_mean"]), _cell(r.p99_us, _one, mark["p99"])])
    t = p.total
    head = [Text(str(p.index + 1), justify="right"), label] if not p.hosts else ["", ""]
    out.append(head + [Text(strings.RESULTS_FLEET_TOTAL, style="bold"), _cell(t.iops, format_count, "bold"),
                       _cell(bw(t.mbps), _one, "bold"), _cell(None, _one),
                       _cell(t.p99_us, _one, "" if t.p99_us is None else "bold")])
    return out


def read_rows(path: Path) -> tuple[list[dict[str, Any]], list[ResultLine]]:
    """The table's rows (:func:`app.stats.frame.results_rows`: the columns and values of results.csv, no pandas) and the
    results lines they come from (run.json's plan's, as :meth:`ResultsDir.plan_lines` gives them), the file read
    once for both; a directory whose run.json cannot be read still shows the points of its results.jsonl."""
    from app.core.errors import UsageError
    from app.report.data.model import load
    from app.stats.frame import records, records_rows, typed_rows

    try:
        data = load(path)
    except UsageError:
        lines = ResultsDir(path).lines()
        return records_rows(lines), lines
    return (typed_rows(records(data.storage, data.memory, data.path)),
            [row.line for row in (*data.storage, *data.memory)])


def load_rows(path: Path) -> list[dict[str, Any]]:
    """The table's rows of :func:`read_rows`."""
    return read_rows(path)[0]


def with_figures(path: Path, rows: list[dict[str, Any]], lines: list[ResultLine] | None = None) -> bool:
    """Memory rows of a run with the suite's modes get ``figure``, the keys that identify each figure (results.csv
    has no column for most of them: they are read from the results lines); False for any other run."""
    if not any(r.get("kind") == Kind.MEMORY and r.get("mode") in SUITE_MODES for r in rows):
        return False
    points = {line.index: line.point for line in (ResultsDir(path).plan_lines() if lines is None else lines)}
    for r in rows:
        point = points.get(r["index"])
        if r.get("kind") == Kind.MEMORY and point is not None:
            r["figure"] = figure_keys(point) if r.get("mode") in SUITE_MODES else point_label(Kind.MEMORY, point)
    return True


@dataclass
class KindView:
    """The rows of one kind of a run and the columns they are shown in (the columns a run's points have)."""

    records: list[dict[str, Any]]
    columns: list[Column]
    cpu_note: str | None = None  # what the IOPS/CPU column counts, when it is shown


@dataclass
class ReadResults:
    """What the results screen shows of a directory: a fleet's table, or each kind's rows and columns."""

    fleet: FleetTable | None
    kinds: dict[str, KindView]
    stamp: tuple[object, ...] = ()  # the identity of the files as they were before the read (_files_stamp)


def kind_view(path: Path, records: list[dict[str, Any]], lines: list[ResultLine] | None = None) -> KindView:
    """The columns of rows of one kind (the run's plan lines ``lines`` for the columns results.csv has not; read
    now when not given)."""
    kinds = {r.get("kind") for r in records}
    columns = MEMORY_COLUMNS if kinds == {Kind.MEMORY} else STORAGE_COLUMNS
    if kinds == {Kind.MEMORY} and with_figures(path, records, lines):
        columns = SUITE_COLUMNS
    columns = with_ci_column(columns, records, kinds == {Kind.MEMORY})
    cpu_note = None
    if kinds != {Kind.MEMORY}:
        by_index = storage_lines(path, records, lines)
        columns = with_device_column(by_index, columns, records)
        columns, cpu_note = with_cpu_column(by_index, columns, records)
    if any(r.get("flags") for r in records):
        columns = columns + [FLAGS_COLUMN]
    return KindView(records, columns, cpu_note)


# What read_results read of a directory, while the files it read are unchanged: a run's results, read once (in a
# thread when its run ends or its row is highlighted in the runs browser: read_ahead), open at once on the key.
_read: dict[Path, tuple[tuple[object, ...], ReadResults]] = {}
_read_lock = threading.Lock()
_reading: dict[Path, tuple[threading.Thread, threading.Event]] = {}  # being read ahead: its thread, set when done
READ_KEPT = 8  # directories kept


def _files_stamp(path: Path) -> tuple[object, ...]:
    """The identity (inode, size, modification time) of each file the results are read from; None for a missing
    one."""
    return tuple(file_stamp(path / name) for name in ("run.json", "results.jsonl"))


def read_results(path: Path) -> ReadResults:
    """The results screen's content of ``path``: as read before while its files are unchanged, else read now
    (any thread)."""
    key = path.absolute()
    with _read_lock:
        ahead = _reading.get(key)
    if ahead is not None and threading.current_thread() is not ahead[0]:
        ahead[1].wait(60)  # being read ahead: not read twice at once (each would hold the interpreter's lock)
    stamp = _files_stamp(key)
    with _read_lock:
        kept = _read.get(key)
    if kept is not None and kept[0] == stamp:
        return kept[1]
    fleet = load_fleet(path)
    kinds: dict[str, KindView] = {}
    if fleet is None:
        rows, lines = read_rows(path)
        for kind in (Kind.STORAGE, Kind.MEMORY):
            if any(r.get("kind") == kind for r in rows):
                kinds[kind] = kind_view(path, [r for r in rows if r.get("kind") == kind], lines)
    read = ReadResults(fleet, kinds, stamp)
    if stamp == _files_stamp(key):  # not written while read
        with _read_lock:
            _read.pop(key, None)
            _read[key] = (stamp, read)
            while len(_read) > READ_KEPT:
                _read.pop(next(iter(_read)))
    return read


def being_read(path: Path) -> bool:
    """Whether the results of ``path`` are being read ahead at this moment (:func:`read_results` would wait)."""
    with _read_lock:
        return path.absolute() in _reading


def read_ahead(path: Path) -> None:
    """Read the results of ``path`` in a daemon thread, for the key that will show them (once at a time)."""
    key = path.absolute()
    done = threading.Event()

    def run() -> None:
        from app.store.runs import view_problem

        try:
            if not view_problem(key):  # never a directory another user can change (as the screen would refuse)
                read_results(key)
        except Exception:  # read again, with its message, when shown
            pass
        finally:
            with _read_lock:
                _reading.pop(key, None)
            done.set()

    thread = threading.Thread(target=run, name="results", daemon=True)
    with _read_lock:
        if key in _reading:
            return
        _reading[key] = (thread, done)
    thread.start()


def export_report(results: Path, destination: str) -> Path:
    """Runs in a thread: the core's report renderer, into ``destination`` (a directory, a .md or a .html path);
    report.html, the one file to share, is always written beside report.md.  The Markdown report's path."""
    try:
        from app.report import render_report
    except ImportError:
        raise RuntimeError(strings.EXPORT_MISSING) from None
    wait_rendered(results)  # not while the rendering started when the run ended still writes plots/
    dest = Path(destination).expanduser() if destination.strip() else None
    if dest is not None and dest.suffix.lower() not in (".md", ".html"):
        dest = dest / "report.md"
    if dest is not None:
        dest.parent.mkdir(parents=True, exist_ok=True)
    return Path(render_report(results, out=dest, html=True))


def exported_text(report: Path) -> str:
    """The line that says where an export went: the Markdown report and its HTML page."""
    from app.report.html import html_path

    return strings.EXPORTED.format(path=report) + strings.EXPORTED_HTML.format(html=html_path(report).name)


def export_failure(error: BaseException | None, destination: str) -> str:
    """One sentence for a failed export: an OS error names the path that could not be written and why
    (not Python's "[Errno 2] …")."""
    if isinstance(error, RuntimeError):
        return str(error)
    if isinstance(error, OSError):
        path = error.filename or destination
        return strings.EXPORT_CANNOT_WRITE.format(path=path, reason=error.strerror or error)
    return strings.EXPORT_FAILED.format(error=error)


class ExportModal(ModalScreen[str | None]):
    BINDINGS = [Binding("escape", "cancel", "Cancel"), Binding("enter", "noop", "Export", show=True)]

    def __init__(self, default: str, prompt: str = strings.EXPORT_PROMPT) -> None:
        super().__init__()
        self.default = default
        self.prompt = prompt

    def compose(self) -> ComposeResult:
        with Vertical(classes="modal-box", id="export-box"):
            yield Static(self.prompt)
            yield Input(self.default, id="export-path")
            with Horizontal(classes="buttons"):
                yield Button("Export", id="export", variant="primary")
                yield Button(strings.CANCEL_BUTTON, id="cancel")
        yield Footer()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self.dismiss(event.value)

    def on_button_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        self.dismiss(self.query_one("#export-path", Input).value if event.button.id == "export" else None)

    def action_cancel(self) -> None:
        self.dismiss(None)

    def action_noop(self) -> None:
        """The Input submits on enter; the binding only puts ``enter Export`` in the footer."""
        self.dismiss(self.query_one("#export-path", Input).value)


class ResultsScreen(StyledOnce, Screen[None]):
    BINDINGS = [
        Binding("s", "sort", "Sort"),
        Binding("S", "reverse", "Reverse"),
        Binding("e", "export", "Export"),
        Binding("v", "report", "Report"),
        Binding("escape", "back", "Back"),
        Binding("d", "devices", "Devices"),
        Binding("f", "figures", "Figures", show=False),  # in the help: the footer is full at 80 columns
        Binding("k", "other_kind", "Other kind"),  # a run with storage and memory points (an import of both)
        # the other columns of a table wider than the screen (before the table's own ←/→, which would scroll it
        # by characters and cut the column at the edge)
        Binding("left", "columns(-1)", "Columns", show=False, priority=True),
        Binding("right", "columns(1)", "Columns", show=False, priority=True),
    ]

    def __init__(self, path: str | Path) -> None:
        super().__init__()
        self.path = Path(path)
        self.records: list[dict[str, Any]] = []  # the rows shown: of one kind
        self.by_kind: dict[str, list[dict[str, Any]]] = {}  # every row, by kind (two kinds: an import of both)
        self.kind_shown = ""
        self.columns: list[Column] = STORAGE_COLUMNS
        self.sort_column: int = 0
        self.reverse = False
        self.exported: Path | None = None
        self.export_dest = ""  # where the export in progress writes (named when it fails)
        self.fleet: FleetTable | None = None  # a fleet run: host × point with a total per point
        self.cpu_note: str | None = None  # what the IOPS/CPU column counts, when it is shown
        self.page = 0  # the page of columns shown when they do not all fit (column_pages)
        self.shown: list[int] = []  # the indexes of self.columns in the table, in order
        self.pages: list[list[int]] = []  # column_pages() as the table's columns were last added
        self.views: dict[str, KindView] = {}  # each kind's rows and columns, as read (read_results)
        self.reading = False  # shown while its results are still being read (ahead, in a thread)
        self.read_shown: ReadResults | None = None  # what the table shows (read_results' while its files are unchanged)

    def compose(self) -> ComposeResult:
        yield Header(show_clock=False)
        yield TooSmall()
        with Vertical(id="results-body"):
            yield RowTable(id="results", cursor_type="row")
            yield Static("", id="results-status")
        yield KeysFooter()

    def on_mount(self) -> None:
        self.sub_title = strings.RESULTS_TITLE.format(path=self.path)
        self.query_one("#results", DataTable).focus()
        if being_read(self.path):  # read ahead at this moment: shown at once, filled when the read ends
            self.read_later()
            return
        self.show_read(read_results(self.path))

    def read_later(self) -> None:
        """Say the results are being read, and show them when the read (in a thread) ends."""
        self.reading = True
        self.query_one("#results-status", Static).update(Text(strings.RESULTS_READING))
        self.run_worker(partial(read_results, self.path), thread=True, group="read", exit_on_error=False)

    def on_screen_resume(self) -> None:
        """Shown again (kept by the app shell between visits, or back from a screen over it): the rows of the
        results as they are now, read again when run.json or results.jsonl changed since they were shown."""
        if self.read_shown is None or self.reading:
            return
        if being_read(self.path) or _files_stamp(self.path.absolute()) != self.read_shown.stamp:
            self.read_later()  # read again, in a thread

    def show_read(self, read: ReadResults) -> None:
        """The table of what :func:`read_results` read."""
        self.reading = False
        self.read_shown = read
        self.fleet = read.fleet
        if self.fleet is not None:
            self.query_one("#results", DataTable).add_class("-fleet")
            self.add_columns()
            self.render_rows()
            return
        self.views = read.kinds
        self.by_kind = {kind: view.records for kind, view in read.kinds.items()}
        self.show_kind(next(iter(self.by_kind), ""))

    def show_kind(self, kind: str) -> None:
        """The rows of one kind with that kind's columns: a storage point's figures are not a memory point's, so
        a run holding both (an import of a fio JSON and an MLC text) shows one kind at a time (k: the other)."""
        self.kind_shown = kind
        view = self.views.get(kind) or kind_view(self.path, [])
        self.records = view.records
        self.sort_column = 0
        self.page = 0  # its columns from the first page
        self.columns, self.cpu_note = view.columns, view.cpu_note
        self.query_one("#results", DataTable).clear(columns=True)
        self.add_columns()
        self.render_rows()
        self.refresh_bindings()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if self.reading and action in ("sort", "reverse", "columns", "other_kind"):  # no table yet
            return False
        if action == "other_kind":
            return len(self.by_kind) > 1
        return True

    def action_other_kind(self) -> None:
        kinds = list(self.by_kind)
        if len(kinds) > 1:
            self.show_kind(kinds[(kinds.index(self.kind_shown) + 1) % len(kinds)])

    def column_label(self, name: str) -> str:
        """A column's header: MB/s says MiB/s while the app shows binary units."""
        if name == "delay":  # the engine's own unit: MLC's units or the built-in engine's spin steps
            return delay_header(name, {r.get("engine") for r in self.records})
        return mbps_unit(self) if name == "MB/s" else name

    def add_columns(self) -> None:
        table = self.query_one("#results", DataTable)
        if self.fleet is not None:
            for name in [c[0] for c in FLEET_COLUMNS]:
                table.add_column(self.column_label(name), key=name)
            return
        self.pages = pages = self.column_pages()
        self.page = max(0, min(self.page, len(pages) - 1))
        self.shown = pages[self.page]
        for i in self.shown:
            table.add_column(self.column_label(self.columns[i][0]), key=self.columns[i][0])

    def column_pages(self) -> list[list[int]]:
        """The columns of each page: all of them when they fit the table's width; else the point's number and
        test on every page and as many whole figure columns beside them as fit (never a column cut at the edge)."""
        everything = list(range(len(self.columns)))
        width = self.query_one("#results", DataTable).size.width - 2  # the vertical scrollbar
        if width <= 2 or len(self.columns) <= 3:
            return [everything]
        scale = mbps(self, 1.0)

        def wide(i: int) -> int:
            name, get, fmt = self.columns[i]
            cells = [fmt(get(r) * scale) if name == "MB/s" else fmt(get(r)) for r in self.records]
            return max([len(self.column_label(name))] + [len(str(c)) for c in cells]) + 2  # a space either side

        widths = [wide(i) for i in everything]
        if sum(widths) <= width:
            return [everything]
        keys, room = [0, 1], width - widths[0] - widths[1]
        pages: list[list[int]] = [[]]
        for i in everything[2:]:
            if pages[-1] and sum(widths[k] for k in pages[-1]) + widths[i] > room:
                pages.append([])
            pages[-1].append(i)
        return [keys + page for page in pages]

    def action_columns(self, step: int) -> None:
        """←/→: the previous or next page of columns (app.widgets.fittable's rule for the report's tables)."""
        pages = self.pages if self.fleet is None else []
        if len(pages) < 2:
            raise SkipAction()
        page = max(0, min(self.page + step, len(pages) - 1))
        if page != self.page:
            self.page = page
            self.rebuild()

    def rebuild(self) -> None:
        """The table's columns and rows again, the cursor where it was."""
        if self.reading:  # made when the read ends
            return
        table = self.query_one("#results", DataTable)
        row = table.cursor_row
        table.clear(columns=True)
        self.add_columns()
        self.render_rows()
        table.move_cursor(row=row)

    def on_resize(self) -> None:
        """Another width: other pages of columns (the first of them), unless the one shown is still one."""
        if self.fleet is None and self.records:
            self.call_after_refresh(self._repage)

    def _repage(self) -> None:
        pages = self.column_pages()
        if self.shown not in pages:
            self.page = 0
            self.rebuild()
        else:
            self.pages, self.page = pages, pages.index(self.shown)

    def units_changed(self) -> None:
        """The units toggle: bandwidths again in the app's unit, the cursor where it was."""
        self.rebuild()

    @property
    def column_count(self) -> int:
        return len(FLEET_COLUMNS) if self.fleet is not None else len(self.columns)

    def render_fleet(self, fleet: FleetTable) -> None:
        table = self.query_one("#results", DataTable)
        table.clear()
        name, key = FLEET_COLUMNS[self.sort_column]
        names = host_names(fleet.hosts)
        scale = mbps(self, 1.0)
        for p in sorted(fleet.points, key=lambda p: natural_key(key(p)), reverse=self.reverse):
            for cells in fleet_cells(p, names, scale):
                table.add_row(*cells)
        status = strings.RESULTS_FLEET.format(n=len(fleet.hosts)) + "  ·  " + strings.SORTED_BY.format(
            column=self.column_label(name), direction="descending" if self.reverse else "ascending")
        if fleet.failed:
            status += "  ·  " + strings.RESULTS_FLEET_FAILED_N.format(n=fleet.failed)
        if fleet.merged_p99:
            status += "  ·  " + strings.RESULTS_FLEET_P99
        if fleet.outliers:
            status += "  ·  " + strings.RESULTS_FLEET_OUTLIERS
        if not fleet.points:
            status = strings.RESULTS_EMPTY
        if self.exported is not None:
            status += "  ·  " + exported_text(self.exported)
        self.query_one("#results-status", Static).update(Text(clean_text(status)))

    def render_rows(self) -> None:
        if self.fleet is not None:
            self.render_fleet(self.fleet)
            return
        table = self.query_one("#results", DataTable)
        table.clear()
        _, key, _ = self.columns[self.sort_column]
        rows = sorted(self.records, key=lambda r: natural_key(key(r)), reverse=self.reverse)
        scale = mbps(self, 1.0)
        # a flagged point's number carries a "!" while its flags are on another page of columns
        hidden_flags = bool(self.shown) and FLAGS_COLUMN in self.columns and \
            self.columns.index(FLAGS_COLUMN) not in self.shown
        for r in rows:
            cells = []
            for name, get, fmt in [self.columns[i] for i in self.shown or range(len(self.columns))]:
                text = fmt(get(r) * scale) if name == "MB/s" else fmt(get(r))
                if name == "#" and hidden_flags and r.get("flags"):
                    text += "!"
                cells.append(shown(text, "right" if name in RIGHT else None))
            table.add_row(*cells)
        status = strings.SORTED_BY.format(column=self.column_label(self.columns[self.sort_column][0]),
                                      direction="descending" if self.reverse else "ascending")
        if any(c in (STORAGE_CI_COLUMN, MEMORY_CI_COLUMN) for c in self.columns):
            status += "  ·  " + strings.RESULTS_CI
        if self.cpu_note:
            status += "  ·  " + self.cpu_note
        if DEVICE_COLUMN in self.columns:  # the abbreviation said where it appears
            status += "  ·  " + strings.RESULTS_DEV_FIO
        if len(self.by_kind) > 1:
            other = next(k for k in self.by_kind if k != self.kind_shown)
            status = strings.RESULTS_KINDS.format(
                counts=strings.kind_counts({k: len(v) for k, v in self.by_kind.items()}), kind=self.kind_shown,
                other=other) + "  ·  " + status
        pages = len(self.pages)  # a sort changes no column's width: the pages the columns were added with
        if pages > 1:
            status = strings.RESULTS_COLUMNS.format(page=self.page + 1, pages=pages) + "  ·  " + status
        if hidden_flags and any(r.get("flags") for r in rows):
            status += "  ·  " + strings.RESULTS_FLAG_MARK
        if not self.records:
            status = strings.RESULTS_EMPTY
        if self.exported is not None:
            status += "  ·  " + exported_text(self.exported)
        self.query_one("#results-status", Static).update(Text(clean_text(status)))

    def action_sort(self) -> None:
        self.sort_column = (self.sort_column + 1) % self.column_count
        if self.fleet is not None and FLEET_COLUMNS[self.sort_column][0] == "host":  # points sort by their total
            self.sort_column = (self.sort_column + 1) % self.column_count
        self.render_rows()

    def action_reverse(self) -> None:
        self.reverse = not self.reverse
        self.render_rows()

    def on_data_table_header_selected(self, event: DataTable.HeaderSelected) -> None:
        index = event.column_index
        if self.fleet is None and self.shown:
            index = self.shown[index]  # the table shows a page of the columns
        if index == self.sort_column:
            self.reverse = not self.reverse
        else:
            self.sort_column, self.reverse = index, False
        self.render_rows()

    def action_export(self) -> None:
        def chosen(dest: str | None) -> None:
            if dest is None:
                return
            self.query_one("#results-status", Static).update(strings.EXPORTING)
            self.export_dest = dest
            self.run_worker(lambda: export_report(self.path, dest), thread=True, group="export",
                            exclusive=True, exit_on_error=False, name="export")

        self.app.push_screen(ExportModal(str(self.path)), chosen)

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        if event.worker.group == "read":
            if event.state == WorkerState.SUCCESS and isinstance(read := event.worker.result, ReadResults):
                self.show_read(read)
                self.refresh_bindings()
            elif event.state == WorkerState.ERROR:
                text = clean_text(str(event.worker.error))
                self.query_one("#results-status", Static).update(Text(text, style="red"))
                self.notify(text, severity="error", timeout=10)
            return
        if event.worker.group != "export":
            return
        if event.state == WorkerState.SUCCESS and isinstance(report := event.worker.result, Path):
            self.exported = report
            self.render_rows()
            self.notify(exported_text(report), timeout=8)
        elif event.state == WorkerState.ERROR:
            text = export_failure(event.worker.error, self.export_dest)
            self.query_one("#results-status", Static).update(Text(clean_text(text), style="red"))
            self.notify(text, severity="error", timeout=10)

    def action_back(self) -> None:
        self.app.pop_screen()

    def action_report(self) -> None:
        self.post_message(ShowReport(self.path))

    def action_devices(self) -> None:
        self.post_message(ShowDevices())

    def action_figures(self) -> None:
        """The report's figures as pictures (drawn from the results, whether or not report.md was written)."""
        self.post_message(ShowFigures(self.path))
