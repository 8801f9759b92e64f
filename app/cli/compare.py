"""`profiler-tui compare`: ratio tables of two runs, of two hosts of one fleet run, or of a run against a spec
sheet.

Two runs are matched point by point on the workload: storage on (rw, rwmixread, bs,
iodepth, numjobs) plus ioengine/direct when a side has several; memory on (mode, traffic,
stride, delay, buffer).  Ratios are B / A (the second run over the first).  Two hosts of a
fleet run (``compare DIR --host A --host B``) are compared the same way, each host's lines
one side.

A spec sheet (``presets/references/NAME.toml``, or any TOML path) lists figures a vendor or a
report quotes; each is matched to the run's points of the same access pattern and block size
(and queue depth / jobs when the sheet states them) and the best of those points is compared.
Schema (validated; errors name file, key and value, exit 2)::

    name = "Intel SSD D7-P5600"          # required
    kind = "storage"                     # required; only "storage" sheets exist so far
    source = "where the figures come from"   # required: datasheet, report, page
    description = "..."                  # optional
    url = "https://..."                  # optional

    [[figure]]                           # one or more
    label = "Random 4K write"            # required
    rw = "randwrite"                     # required: read write randread randwrite rw randrw
    bs = "4k"                            # required: size
    metric = "iops"                      # required: iops | bw_mbps (10^6 B/s) | lat_mean_us | lat_p99_us
    value = 260000                       # required, > 0
    rwmixread = 70                       # optional (rw/randrw only)
    iodepth = 32                         # optional: the sheet's test condition
    numjobs = 4                          # optional
    note = "..."                         # optional
"""

from __future__ import annotations

import json
import math
import os
import statistics
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Callable, Sequence, TypeVar

from app.cli import compare_conditions as cc
from app.core.errors import UsageError
from app.core.sanitize import clean_text, cut_at_word, md_text
from app.core.textable import markdown_table
from app.core.units import format_count, format_size, parse_size
from app.model.points import Kind
from app.model.records import interval_problem
from app.plan.presets import RW_MODES, base_key, read_toml, shipped_dir
from app.report.compute import analysis, noise, support, verdict
from app.report.data.model import MemoryRow, RunData, StorageRow, load
from app.report.render import workload
from app.report.sections import procedure
from app.stats.uncertainty import (
    Difference,
    half_width,
    interval_difference,
    intervals_of,
    replicate_spread,
    storage_series,
    welch_difference,
)
from app.stats.validity import FLAGS, LEGEND, names
from app.store.results import open_trusted_dir, write_new

METRICS = {
    "iops": ("IOPS", True),
    "bw_mbps": ("MB/s", True),
    "lat_mean_us": ("mean latency (µs)", False),
    "lat_p99_us": ("p99 latency (µs)", False),
}
TOP_KEYS = ("name", "kind", "source", "description", "url", "model", "capacity", "figure")
FIGURE_KEYS = ("label", "rw", "bs", "metric", "value", "rwmixread", "iodepth", "numjobs", "note")


# --- reference sheets ---------------------------------------------------------------------------------


@dataclass
class RefFigure:
    label: str
    rw: str
    bs: int
    metric: str
    value: float
    rwmixread: int | None = None
    iodepth: int | None = None
    numjobs: int | None = None
    note: str | None = None


@dataclass
class Reference:
    name: str
    source: str
    path: str
    figures: list[RefFigure]
    description: str = ""
    url: str = ""


def references_dir() -> Path:
    return shipped_dir() / "references"


def available_references() -> dict[str, Path]:
    d = references_dir()
    return {p.stem: p for p in sorted(d.glob("*.toml"))} if d.is_dir() else {}


def _bad(path: str, key: str, value: object, why: str) -> UsageError:
    shown = f"'{value}'" if isinstance(value, str) else json.dumps(value, default=str)
    return UsageError(f"{path}: key '{key}' has invalid value {shown}: {why}.")


def parse_reference(data: dict[str, Any], path: str) -> Reference:
    for key in data:
        if key not in TOP_KEYS:
            raise UsageError(f"{path}: unknown key '{key}'; expected one of {', '.join(TOP_KEYS)}.")
    for key in ("name", "source"):
        v = data.get(key)
        if not isinstance(v, str) or not v.strip():
            raise UsageError(f"{path}: key '{key}' is missing or empty (a reference sheet must say what it is "
                             "and where its figures come from).")
    kind = data.get("kind", Kind.STORAGE)
    if kind != Kind.STORAGE:
        raise _bad(path, "kind", kind, "only storage reference sheets are supported")
    raw_figs = data.get("figure")
    if not isinstance(raw_figs, list) or not raw_figs or not all(isinstance(f, dict) for f in raw_figs):
        raise UsageError(f"{path}: needs at least one [[figure]] table.")
    figures = []
    for i, f in enumerate(raw_figs, 1):
        where = f"{path} [[figure]] {i}"
        for key in f:
            if key not in FIGURE_KEYS:
                raise UsageError(f"{where}: unknown key '{key}'; expected one of {', '.join(FIGURE_KEYS)}.")
        for key in ("label", "rw", "bs", "metric", "value"):
            if key not in f:
                raise UsageError(f"{where}: key '{key}' is missing.")
        if not isinstance(f["label"], str) or not f["label"].strip():
            raise _bad(where, "label", f["label"], "must be a non-empty string")
        rw = f["rw"]
        if rw not in RW_MODES:
            raise _bad(where, "rw", rw, "must be one of " + ", ".join(RW_MODES))
        try:
            bs = parse_size(f["bs"])
        except ValueError as e:
            raise _bad(where, "bs", f["bs"], str(e)) from None
        metric = f["metric"]
        if metric not in METRICS:
            raise _bad(where, "metric", metric, "must be one of " + ", ".join(METRICS))
        value = f["value"]
        if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
            raise _bad(where, "value", value, "must be a positive number")
        opt: dict[str, int | None] = {}
        for key, lo, hi in (("rwmixread", 0, 100), ("iodepth", 1, 65536), ("numjobs", 1, 1024)):
            v = f.get(key)
            if v is not None and (isinstance(v, bool) or not isinstance(v, int) or not lo <= v <= hi):
                raise _bad(where, key, v, f"must be a whole number from {lo} to {hi}")
            opt[key] = v
        if opt["rwmixread"] is not None and rw not in ("rw", "randrw"):
            raise _bad(where, "rwmixread", opt["rwmixread"], "only applies to rw and randrw")
        note = f.get("note")
        if note is not None and not isinstance(note, str):
            raise _bad(where, "note", note, "must be a string")
        figures.append(RefFigure(f["label"], rw, bs, metric, float(value), opt["rwmixread"], opt["iodepth"],
                                 opt["numjobs"], note))
    return Reference(data["name"], data["source"], path, figures, str(data.get("description", "")),
                     str(data.get("url", "")))


def load_reference(name_or_path: str) -> Reference:
    if name_or_path.endswith(".toml") or os.sep in name_or_path:
        path = Path(name_or_path)
    else:
        table = available_references()
        if name_or_path not in table:
            raise UsageError(f"--reference {name_or_path}: no such reference sheet; available: "
                             f"{', '.join(table) or 'none'} (or give a path to a .toml file).")
        path = table[name_or_path]
    return parse_reference(read_toml(path, "reference sheet"), str(path))


# what another user's write access to the directory of ``compare --out`` would allow
COMPARE_RISK = ("another user could redirect what root writes there; give --out a file in a directory only root can "
                "write")


def write_text(out: str, text: str) -> None:
    """``compare --out FILE``: one sentence (UsageError) when FILE is a directory or cannot be written.  FILE is
    written as the report is: in a directory opened once and checked (no other user can change it, or it is sticky
    like /tmp), a last symbolic link never followed and a file that is not the tool's own (another user's, a hard
    link) never written through."""
    if out.endswith(("/", os.sep)) or os.path.isdir(out):
        raise UsageError(f"--out {out}: is a directory; give a file name for the tables, e.g. "
                         f"{os.path.join(out, 'compare.md')}.")
    if os.path.islink(out) or (os.path.lexists(out) and not os.path.isfile(out)):
        raise UsageError(f"--out {out}: exists and is not a regular file (a symbolic link is not followed); give a "
                         "new file name.")
    path = Path(os.path.abspath(out))
    fd = open_trusted_dir(path.parent, sticky_ok=True, risk=COMPARE_RISK)
    try:
        write_new(path.name, text.encode("utf-8"), dir_fd=fd)
    except OSError as e:
        raise UsageError(f"--out {out}: cannot be written ({e.strerror or e}).") from None
    finally:
        os.close(fd)


# --- values -----------------------------------------------------------------------------------------------


def _fmt(metric: str, v: float | None) -> str:
    if v is None:
        return "n/a"
    if metric == "iops":
        return format_count(v)
    if metric == "bw_mbps":
        return f"{v:.1f}"
    return f"{v:.2f}"


def _ratio(a: float | None, b: float | None) -> str:
    if not a or b is None:
        return "n/a"
    return f"{b / a:.2f}×"


R = TypeVar("R", StorageRow, MemoryRow)


# --- noise: each difference with its 95 % interval ------------------------------------------------------------


@dataclass(frozen=True)
class Figure:
    """A figure of a compared point: its name in the tables, how a row gives it (in the results' units), its key
    in a line's ``ci95`` (None: it has no per-second interval, as a percentile of the whole run), the factor
    to the unit shown, its formatting (a METRICS key) and whether more of it is better."""

    name: str
    get: Callable[[Any], float | None]
    ci_key: str | None
    scale: float
    fmt: str
    higher_better: bool


STORAGE_FIGURES = (
    Figure("IOPS", lambda r: r.iops, "iops", 1.0, "iops", True),
    Figure("MB/s", lambda r: r.bw, "bw_bytes", 1e-6, "bw_mbps", True),
    Figure("Mean µs", lambda r: r.lat_mean or None, "lat_mean_ns", 1e-3, "lat_mean_us", False),
    Figure("p99 µs", lambda r: r.p99, None, 1e-3, "lat_p99_us", False),
)
MEMORY_FIGURES = (
    Figure("Latency ns", lambda r: r.latency or None, "latency_ns", 1.0, "lat_ns", False),
    Figure("MB/s", lambda r: r.bandwidth, "bandwidth_mbps", 1.0, "bw_mbps", True),
)
REAL, WITHIN, NO_INTERVAL, UNLIKE = "real", "within noise", "no interval", "not judged"
NOISE_NOTE = ("Each difference B − A has its 95 % interval (Welch's on the replicates when both runs repeated the "
              "point, else the two points' within-run intervals in quadrature). The verdict is the report's one "
              "rule (docs/report.md, \"One rule for every verdict\"): **real** when the difference is beyond its "
              "noise at a 5 % false-alarm rate, a point measured once being allowed 5 % of drift between runs that "
              "its own interval cannot see; **within noise** only when the test had 80 % power to see a 10 % "
              "difference; else **too few samples** (not judged), or no interval. A point shows its interval's "
              "centre (fio's whole-run figure: `--json`), a repeated point its replicates' mean.")
LOW_POWER = "too few samples"  # not judged: the test could not see a 10 % difference 80 % of the time
NO_SAMPLES = "no ci95 and no per-second samples"
MAX_REASON = 200  # characters of a line's own reason shown


@dataclass
class Measured:
    """One run's measurement of one point: the rows of its replicates (one row for a point measured once),
    from the results directory ``run_dir`` (where its per-second samples are)."""

    run_dir: Path
    rows: list[Any]

    @property
    def first(self) -> Any:
        return self.rows[0]

    @property
    def flags(self) -> list[str]:
        """The validity flags any replicate carries (storage rows carry them), in their fixed order."""
        flagged = [names(r.flags) for r in self.rows if isinstance(r, StorageRow)]
        return [n for n in FLAGS if any(n in f for f in flagged)]


@dataclass(frozen=True)
class Estimate:
    """A figure of one side: its value per replicate, their mean, the 95 % interval of that mean (None, with
    ``why``, when there is none)."""

    values: tuple[float, ...]
    mean: float
    ci: tuple[float, float] | None
    why: str = ""
    whole_run: float | None = None  # one line's own figure (fio's whole run) when ``mean`` is its interval's centre
    within_pct: float | None = None  # replicates: the median half-width of their own intervals, % of their centres


def measured(run_dir: Path, rows: Sequence[R], key: Callable[[R], tuple[object, ...]]
             ) -> dict[tuple[object, ...], Measured]:
    """A run's rows by workload ``key``, the replicates of a repeated point (one ``base_key``) together; of two
    points with one workload key (rounds of a run in rounds) the later wins."""
    by_base: dict[str, list[R]] = {}
    for r in rows:
        by_base.setdefault(base_key(r.point), []).append(r)
    return {key(g[0]): Measured(run_dir, g) for g in by_base.values()}


def _recorded_reason(ci_method: object, key: str) -> str | None:
    """Why a line's ``ci_method`` says the figure ``key`` has no interval (None: the line records no
    ``ci_method``, it predates intervals)."""
    if not isinstance(ci_method, dict):
        return None
    series = ci_method.get("series")
    one = series.get(key) if isinstance(series, dict) else None
    why = one.get("reason") if isinstance(one, dict) else None
    why = why if isinstance(why, str) and why.strip() else ci_method.get("reason")
    if not isinstance(why, str) or not why.strip():
        return "the line records no interval of it"
    return _one_line(why)


def _one_line(why: str) -> str:
    """A reason from a results line (untrusted) as one line of text, bounded (the output is cleaned of control
    characters)."""
    why = " ".join(why.split())
    return cut_at_word(why, MAX_REASON)


def line_interval(run_dir: Path, row: Any, key: str | None) -> tuple[float, float] | str:
    """The 95 % interval of one line's figure ``key``: its ``ci95``, else (a storage line written before
    intervals were recorded) computed from its kept per-second samples; else why there is none."""
    if key is None:
        return "a percentile of the whole run has no per-second interval"
    got = row.metrics.interval_or_why(key)
    if isinstance(got, tuple):
        return got
    if isinstance(got, str):  # what the line records is no interval of the figure (app.model.records.interval_problem)
        return _one_line(got)
    why = _recorded_reason(row.metrics.ci_method, key)
    if why is not None:
        return why
    if not isinstance(row, StorageRow):
        return "no ci95 in the line (measured before intervals were recorded)"
    series = storage_series(noise.samples_of(run_dir, row)).get(key)
    if not series:
        return NO_SAMPLES
    u = intervals_of({key: series})
    iv = u.intervals.get(key)
    if iv is None:
        return u.reasons.get(key, NO_SAMPLES)
    figure = row.lat_mean if key == "lat_mean_ns" else row.metrics.figure(key)
    problem = interval_problem(figure, iv.low, iv.high, key)
    return (iv.low, iv.high) if problem is None else f"from its samples: {problem}"


def estimate(m: Measured, fig: Figure) -> Estimate | None:
    """One side's figure: the mean over its replicates with their Student-t interval, or the one line's
    value with its batch-means interval; None when no row has the figure."""
    valued = [(v, r) for r in m.rows if (v := fig.get(r)) is not None]
    if not valued:
        return None
    values = tuple(float(v) for v, _ in valued)
    if len(values) > 1:
        spread = replicate_spread(values)
        own = [100 * half_width(iv) / c for _, r in valued
               if isinstance(iv := line_interval(m.run_dir, r, fig.ci_key), tuple) and (c := (iv[0] + iv[1]) / 2)]
        return Estimate(values, spread.mean, spread.ci, within_pct=statistics.median(own) if own else None)
    got = line_interval(m.run_dir, valued[0][1], fig.ci_key)
    if isinstance(got, tuple):  # the figure shown and compared is the centre of its interval
        centre = (got[0] + got[1]) / 2
        return Estimate((centre,), centre, got, "", values[0])
    return Estimate(values, values[0], None, got)


def difference(a: Estimate, b: Estimate) -> Difference | None:
    """b − a with its 95 % interval: Welch's on the replicates when both sides have two or more, else from the
    two sides' intervals in quadrature; None when a side has no interval."""
    if len(a.values) > 1 and len(b.values) > 1:
        return _ratio_difference(a, b)
    if a.ci is not None and b.ci is not None:
        return interval_difference(a.mean, a.ci, b.mean, b.ci)
    return None


def _ratio_difference(a: Estimate, b: Estimate) -> Difference | None:
    """Welch's on the replicates' logs, as the verdict rule judges them: the 95 % interval of the ratio B/A, at A's
    level, so it excludes 0 exactly when the difference is real; the raw-scale Welch where there is no ratio (a
    side's replicates identical, or one of 0)."""
    v = verdict.compare_estimates(verdict.replicate_estimate(a.values), verdict.replicate_estimate(b.values))
    if v.effect is None or v.low is None or v.high is None:
        return welch_difference(a.values, b.values)
    return Difference(a.mean * v.effect, a.mean * v.low, a.mean * v.high, "welch")


def _short(why: str, width: int = 48) -> str:
    """A reason as a table cell: its first clause, without the table's column bar (the whole reason is listed
    under the table)."""
    if why == NO_SAMPLES:
        return "no samples"
    head = why.split(":")[0].split(";")[0].replace("|", "/").strip()
    return cut_at_word(head, width)


@dataclass
class Tally:
    """The verdicts of one table: how many differences are real, within noise, not judged (and why)."""

    real: int = 0
    within: int = 0
    unjudged: int = 0
    reasons: dict[str, int] = field(default_factory=dict)
    records: list[dict[str, object]] = field(default_factory=list)  # each row, for ``compare --json``
    unlike: int = 0  # differences not judged: the two points were measured under different conditions
    unlike_points: dict[str, int] = field(default_factory=dict)  # each condition that differed → points
    within_run: dict[str, int] = field(default_factory=dict)  # verdict → judged from within-run intervals alone

    def add(self, verdict: str, whys: Sequence[str] = (), method: str = "") -> None:
        if method and method != "welch" and verdict in (REAL, WITHIN):
            self.within_run[verdict] = self.within_run.get(verdict, 0) + 1
        if verdict == REAL:
            self.real += 1
        elif verdict == WITHIN:
            self.within += 1
        elif verdict == UNLIKE:
            self.unlike += 1
        else:
            self.unjudged += 1
            for why in whys:
                self.reasons[why] = self.reasons.get(why, 0) + 1

    @property
    def total(self) -> int:
        return self.real + self.within + self.unjudged + self.unlike

    def json(self) -> dict[str, object]:
        return {"real": self.real, "within_noise": self.within, "not_judged": self.unjudged,
                "reasons": dict(self.reasons), "differences": self.records, **unlike_json(self)}

    def sentences(self, what: str) -> list[str]:
        """The summary under a table: the counts, then each distinct reason a difference was not judged."""
        if not self.total:
            return []
        out = [f"Differences B − A of the {what}, each with its 95 % interval: **{self.real} real** (the interval "
               f"is beyond its noise), {self.within} within noise (a 10 % difference would have shown), "
               f"{self.unjudged} not judged (no interval, or too few samples to see 10 %; never counted as real), "
               + (f"{self.unlike} not judged for different conditions, " if self.unlike else "")
               + f"of {self.total}.", ""]
        if self.reasons:
            out += ["Not judged because:", ""]
            out += [f"- {md_text(why)} ({n}×)" for why, n in sorted(self.reasons.items(), key=lambda t: -t[1])]
            out.append("")
        return out + unlike_sentences(self)


def _signed(fig: Figure, v: float) -> str:
    text = _fmt(fig.fmt, abs(v))
    return ("-" if v < 0 and text.strip("0.") else "+") + text


def _method(d: Difference, a: Estimate, b: Estimate) -> str:
    if d.method == "welch":
        own = [f"{side} ±{e.within_pct:.2g} %" for side, e in (("A", a), ("B", b)) if e.within_pct is not None]
        return (f"Welch, {len(a.values)} + {len(b.values)} runs"
                + (f" (within one run: {', '.join(own)})" if own else ""))
    reps = [f"{side} {len(e.values)} runs" for side, e in (("A", a), ("B", b)) if len(e.values) > 1]
    return "within-run intervals" + (f" ({', '.join(reps)})" if reps else "")


def _why_cell(a: Estimate, b: Estimate) -> str:
    """Which side has no interval, and why in a few words: ``A: too few samples``, ``A, B: no samples``."""
    missing = [(side, _short(e.why, 28)) for side, e in (("A", a), ("B", b)) if e.ci is None]
    if len({why for _, why in missing}) == 1:
        return ", ".join(side for side, _ in missing) + ": " + missing[0][1]
    return "; ".join(f"{side}: {why}" for side, why in missing)


def judge_cells(fig: Figure, a: Estimate | None, b: Estimate | None, tally: Tally | None,
                diffs: Sequence[cc.Unlike] = ()) -> list[str]:
    """The ``B − A (95 %)``, ``Noise`` and ``How`` cells of one figure of a matched pair, counted in ``tally``
    (None: the figure is shown but not counted, as p99 without replicates); ``diffs``: the conditions the two
    points were measured under that differ (then no verdict: :func:`unlike_cells`)."""
    if a is None or b is None:
        return ["", "", "measured by one run only"]
    d = difference(a, b)
    if diffs:
        return unlike_cells(fig, d, diffs, tally)
    if d is None:
        whys = [f"{side}: {e.why}" for side, e in (("A", a), ("B", b)) if e.ci is None and e.why]
        if tally is not None:
            tally.add(NO_INTERVAL, whys)
        return ["", NO_INTERVAL, _why_cell(a, b)]
    v = verdict.compare_estimates(_side(a), _side(b))
    said = REAL if v.real else WITHIN if v.within else LOW_POWER
    if tally is not None:
        tally.add(said, [_power_reason(v)] if said == LOW_POWER else (), method=d.method)
    # the difference shown with ± is its interval's centre (as every figure with an interval, docs/uncertainty.md)
    centre, half = (d.low + d.high) / 2 * fig.scale, half_width((d.low, d.high)) * fig.scale
    return [f"{_signed(fig, centre)} ± {_fmt(fig.fmt, half)}", said, _method(d, a, b)]


def _side(e: Estimate) -> verdict.Side:
    """One side of a difference as the report's verdict rule reads it: its replicates, or its one interval."""
    if len(e.values) > 1:
        return verdict.replicate_estimate(e.values)
    if e.ci is None:
        return verdict.NoEstimate(e.why or "no interval", e.mean)
    return verdict.interval_estimate(e.ci[0], e.ci[1])


def _power_reason(v: verdict.Verdict) -> str:
    """The one reason a low-power difference is counted under."""
    if v.how == "within-run":
        return ("too few samples: a point measured once on each side, each allowed 5 % of drift between runs that "
                "its own interval cannot see, cannot show a 10 % difference 80 % of the time (repeat both runs)")
    return ("too few samples: the replicates' spread is too wide, or known too roughly, to show a 10 % difference "
            "80 % of the time (more replicates would)")


def pair_rows(label: str, ga: Measured, gb: Measured, figures: Sequence[Figure], tally: Tally,
              conditions: cc.Conditions | None = None) -> list[list[str]]:
    """One table row per figure of a matched point: A, B, B/A, B − A ± its interval, the verdict, the method.
    A figure without a per-second interval (p99) is judged on replicates only, and counted only then.
    ``conditions``: the two runs, whose points measured under different conditions get no verdict."""
    diffs = conditions.of_pair(ga.first, gb.first) if conditions is not None else []
    if diffs:
        count_unlike(tally, diffs)
    rows = []
    for fig in figures:
        a, b = estimate(ga, fig), estimate(gb, fig)
        if a is None and b is None:
            continue
        va = None if a is None else a.mean * fig.scale
        vb = None if b is None else b.mean * fig.scale
        counted = fig.ci_key is not None or (a is not None and b is not None and min(len(a.values), len(b.values)) > 1)
        cells = judge_cells(fig, a, b, tally if counted else None, diffs)
        if not counted and cells[1] in (NO_INTERVAL, UNLIKE):
            cells = ["", "", "no interval for a percentile"]
        rows.append([label, fig.name, _fmt(fig.fmt, va), _fmt(fig.fmt, vb), _ratio(va, vb)] + cells)
        tally.records.append(_record(label, fig, a, b, cells, counted) | unlike_record(diffs))
    return rows


def _record(label: str, fig: Figure, a: Estimate | None, b: Estimate | None, cells: list[str],
            counted: bool) -> dict[str, object]:
    """One row of a table as ``compare --json`` gives it, in the unit the table shows."""
    d = difference(a, b) if a is not None and b is not None else None
    rec: dict[str, object] = {"point": label, "figure": fig.name,
                              "a": None if a is None else a.mean * fig.scale,
                              "b": None if b is None else b.mean * fig.scale,
                              "replicates": [0 if a is None else len(a.values), 0 if b is None else len(b.values)],
                              "verdict": cells[1] or None, "counted": counted, "how": cells[2]}
    for side, e in (("a", a), ("b", b)):
        if e is not None and e.whole_run is not None:
            rec[f"{side}_whole_run"] = e.whole_run * fig.scale
    if d is not None and cells[1] in (REAL, WITHIN):
        rec.update(diff=d.diff * fig.scale, low=d.low * fig.scale, high=d.high * fig.scale, method=d.method,
                   within_noise=d.within_noise)
    return rec


# --- like for like: a verdict only between points measured under the same conditions -----------------------

UNLIKE_NOTE = ("a verdict needs like-for-like measurements, and a difference between points measured differently "
               "may be the measurement's, not the device's")
MAX_UNLIKE = 8  # conditions (with both values) named under a table
DRIFT_NOTE = ("an interval from one run's own samples sees the noise within that run only, not drift between runs "
              "(the device's state, the host, a virtual machine's neighbours), so these verdicts say how B's run "
              "differed from A's run, not that the difference holds when the runs are made again; repeat both runs "
              "(`repeat=3`) for a verdict that includes the variation between runs")


def count_unlike(tally: Tally, diffs: Sequence[cc.Unlike]) -> None:
    """One matched point measured under different conditions: each condition counted once."""
    for d in diffs:
        tally.unlike_points[d.text()] = tally.unlike_points.get(d.text(), 0) + 1


def unlike_cells(fig: Figure, d: Difference | None, diffs: Sequence[cc.Unlike], tally: Tally | None) -> list[str]:
    """The cells of a figure whose two points were measured under different conditions: the difference as
    measured (with its interval when there is one), no verdict, and which conditions differ."""
    if tally is not None:
        tally.add(UNLIKE)
    shown = "" if d is None else \
        f"{_signed(fig, d.diff * fig.scale)} ± {_fmt(fig.fmt, half_width((d.low, d.high)) * fig.scale)}"
    return [shown, UNLIKE, "different " + cc.short(diffs)]


def unlike_record(diffs: Sequence[cc.Unlike]) -> dict[str, object]:
    """What ``compare --json`` adds to a row whose points were measured under different conditions."""
    if not diffs:
        return {}
    return {"not_judged": cc.reason(diffs), "conditions": [{"name": d.name, "a": d.a, "b": d.b} for d in diffs]}


def unlike_json(tally: Tally) -> dict[str, object]:
    """The counts ``compare --json`` gives for a table: differences not judged for unlike conditions (and each
    condition with the points it differed at), and the verdicts from within-run intervals alone."""
    # "not_judged" (set first by Tally.json to the differences without an interval) counts both kinds
    return {"not_judged": tally.unjudged + tally.unlike, "not_judged_conditions": tally.unlike,
            "conditions": dict(tally.unlike_points), "within_run_only": dict(tally.within_run)}


def unlike_sentences(tally: Tally) -> list[str]:
    """Under a table: the differences not judged because their points were measured differently, each condition
    with both values; and the verdicts that rest on within-run intervals alone."""
    out = []
    if tally.unlike:
        shown = list(tally.unlike_points.items())
        conds = "; ".join(f"{md_text(text)}, at {n} point{'s' if n != 1 else ''}" for text, n in shown[:MAX_UNLIKE])
        conds += f"; and {len(shown) - MAX_UNLIKE} more" if len(shown) > MAX_UNLIKE else ""
        out += [f"**{tally.unlike} not judged: measured under different conditions** ({conds}): {UNLIKE_NOTE}. "
                "Their differences are shown as measured, with no verdict.", ""]
    if tally.within_run:
        n = sum(tally.within_run.values())
        real = tally.within_run.get(REAL, 0)
        out += [f"{n} verdict{'s' if n != 1 else ''} ({real} real) rest{'s' if n == 1 else ''} on within-run "
                f"intervals alone (a side measured once): {DRIFT_NOTE}.", ""]
    return out


# --- run vs reference --------------------------------------------------------------------------------------


def _not_fleet(data: RunData, directory: str) -> RunData:
    """A fleet run holds one line per point and host: matching its points to another run's would pick one
    host's line at random, so it is refused (its hosts are compared with ``--host``)."""
    if data.fleet is not None:
        raise UsageError(f"compare: {directory} is a fleet run of {len(data.fleet.hosts)} hosts; compare two of its "
                         "hosts with `compare DIR --host A --host B` (a fleet run is not compared with another run "
                         "or a reference sheet).")
    return data


def _same_pattern(p: StorageRow, rw: str, rwmixread: int | None) -> bool:
    """Whether point ``p`` ran the sheet's access pattern: the same ``rw`` (and mix, when the sheet gives one),
    or a mixed job whose mix leaves one direction only — randrw at 100/0 issues only random reads, so it is a
    random-read point, and 0/100 a random-write one (likewise rw/readwrite for sequential)."""
    if rwmixread is not None:
        return p.rw == rw and p.mixed and p.read_pct == rwmixread
    if p.rw == rw:
        return True
    if not p.mixed or p.random != rw.startswith("rand"):
        return False
    return (p.read_pct == 100 and rw in ("read", "randread")) or (p.read_pct == 0 and rw in ("write", "randwrite"))


FIGURE_OF = {f.fmt: f for f in STORAGE_FIGURES}
AS_SPECIFIED = "as specified"


def _sheet_verdict(sheet: float, e: Estimate, fig: Figure) -> str:
    """The run's figure against the sheet's: as specified when its 95 % interval contains the sheet's figure,
    else above or below it; no interval when it has none."""
    if e.ci is None:
        return f"{NO_INTERVAL}: {_short(e.why)}" if e.why else NO_INTERVAL
    low, high = e.ci[0] * fig.scale, e.ci[1] * fig.scale
    if low <= sheet <= high:
        return AS_SPECIFIED
    return "above" if low > sheet else "below"


def _with_interval(fig: Figure, e: Estimate) -> str:
    """The figure alone, or the centre of its interval ± the half-width."""
    if e.ci is None:
        return _fmt(fig.fmt, e.mean * fig.scale)
    return f"{_fmt(fig.fmt, (e.ci[0] + e.ci[1]) / 2 * fig.scale)} ± {_fmt(fig.fmt, half_width(e.ci) * fig.scale)}"


def _reference_row(f: RefFigure, groups: Sequence[Measured], counts: dict[str, int], reasons: Tally) -> list[str]:
    """One sheet figure against the best matching point of the run (its replicates' mean when repeated)."""
    cands = [g for g in groups if g.first.bs == f.bs and _same_pattern(g.first, f.rw, f.rwmixread)]
    exact = [g for g in cands if (f.iodepth is None or g.first.iodepth == f.iodepth)
             and (f.numjobs is None or g.first.numjobs == f.numjobs)]
    fig = FIGURE_OF[f.metric]
    cond = ([f"QD{f.iodepth}"] if f.iodepth else []) + ([f"T{f.numjobs}"] if f.numjobs else [])
    label = f.label + (f" ({' '.join(cond)})" if cond else "")
    valued = [(e, g) for g in exact or cands if (e := estimate(g, fig)) is not None]
    if not valued:
        return [label, METRICS[f.metric][0], _fmt(f.metric, f.value), "not measured", "", "", "", f.note or ""]
    e, g = (max if fig.higher_better else min)(valued, key=lambda t: t[0].mean)
    p = g.first
    how = workload(p) + ("" if exact or (f.iodepth is None and f.numjobs is None) else " (sheet's QD not run)")
    if p.rw != f.rw:
        how += f" (all {'reads' if p.read_pct == 100 else 'writes'}: counted as {f.rw})"
    if len(e.values) > 1:
        how += f", mean of {len(e.values)} runs"
    if len(valued) > 1:
        how += f", best of {len(valued)}"
    verdict = _sheet_verdict(f.value, e, fig)
    key = verdict if verdict in (AS_SPECIFIED, "above", "below") else NO_INTERVAL
    counts[key] = counts.get(key, 0) + 1
    if key == NO_INTERVAL:
        reasons.add(NO_INTERVAL, [e.why or "no interval"])
    reasons.records.append({"figure": label, "metric": f.metric, "reference": f.value, "run": e.mean * fig.scale,
                            "low": None if e.ci is None else e.ci[0] * fig.scale,
                            "high": None if e.ci is None else e.ci[1] * fig.scale,
                            "replicates": len(e.values), "verdict": key, "point": how})
    return [label, METRICS[f.metric][0], _fmt(f.metric, f.value), _with_interval(fig, e),
            _ratio(f.value, e.mean * fig.scale), verdict, how, f.note or ""]


def compare_reference(run_dir: str, ref: Reference, out: dict[str, object] | None = None) -> str:
    data = _not_fleet(load(run_dir), run_dir)
    lines = [f"# {md_text(Path(run_dir).name)} vs {md_text(ref.name)}", ""]
    lines += _warnings(data, "the run")
    url = f" ({md_text(ref.url)})" if ref.url else ""
    lines.append(f"Reference: {md_text(ref.name)} — {md_text(ref.source)}{url}.")
    if ref.description:
        lines += ["", md_text(ref.description)]
    lines += ["", "Each reference figure is compared with the best matching point of the run (same access pattern "
                  "and block size, and the sheet's queue depth and jobs when it states them). Ratio = run / "
                  "reference; for latencies below 1× is better. The run's figure is shown ± its 95 % interval; "
                  "it is **as specified** when that interval contains the sheet's figure, else above or below it.",
              ""]
    groups = list(measured(data.path, data.storage, lambda p: (base_key(p.point),)).values())
    counts: dict[str, int] = {}
    reasons = Tally()
    rows = [_reference_row(f, groups, counts, reasons) for f in ref.figures]
    if out is not None:
        out["reference"] = {"figures": reasons.records, "counts": counts, "reasons": dict(reasons.reasons)}
    lines.append(markdown_table(["Figure", "Metric", "Reference", "This run", "Ratio", "Verdict", "Run point",
                                 "Note"], rows, right=(2, 3, 4)))
    lines.append("")
    if counts:
        lines += [f"Of {sum(counts.values())} figures measured: **{counts.get(AS_SPECIFIED, 0)} as specified**, "
                  f"{counts.get('above', 0)} above, {counts.get('below', 0)} below the sheet, "
                  f"{counts.get(NO_INTERVAL, 0)} without an interval (not judged).", ""]
        if reasons.reasons:
            lines += ["No interval because:", ""]
            lines += [f"- {md_text(why)} ({n}×)" for why, n in reasons.reasons.items()] + [""]
    return clean_text("\n".join(lines), newlines=True)


# --- run vs run ------------------------------------------------------------------------------------------------


def _skey(p: StorageRow, extra: bool) -> tuple[object, ...]:
    base = (p.rw, p.point.get("rwmixread") if p.mixed else None, p.bs, p.iodepth, p.numjobs)
    return base + ((p.ioengine, p.point.get("direct")) if extra else ())


def _mkey(p: MemoryRow) -> tuple[object, ...]:
    return (p.mode, p.traffic, p.stride, p.delay, p.buffer)


def _warnings(data: RunData, name: str) -> list[str]:
    """The directory's warnings (unreadable results lines, truncated tables, …), as the report gives them."""
    ws = data.warnings()
    if not ws:
        return []
    return [f"Warnings of {name}:", ""] + ["- " + md_text(w) for w in ws] + [""]



def _only(side: str, names: list[str]) -> list[str]:
    if not names:
        return []
    return [f"Only in {side} ({len(names)}): " + ", ".join(md_text(n) for n in names[:12])
            + (" …" if len(names) > 12 else ""), ""]


TABLE_HEAD = ["Figure", "A", "B", "B/A", "B − A (95 %)", "Noise", "How"]


def _storage_section(a: RunData, b: RunData, out: dict[str, object] | None = None,
                     conditions: cc.Conditions | None = None) -> list[str]:
    engines = {(p.ioengine, p.point.get("direct")) for p in a.storage + b.storage}
    extra = len(engines) > 1
    sa = measured(a.path, a.storage, lambda p: _skey(p, extra))
    sb = measured(b.path, b.storage, lambda p: _skey(p, extra))
    common = [k for k in sa if k in sb]
    lines = ["## Storage", ""]
    if common:
        rows, tally = [], Tally()
        flagged = any(sa[k].flags or sb[k].flags for k in common)
        for k in common:
            label = workload(sa[k].first) + (f" {sa[k].first.ioengine}" if extra else "")
            more = [", ".join(sa[k].flags) or "—", ", ".join(sb[k].flags) or "—"] if flagged else []
            rows += [r + more for r in pair_rows(label, sa[k], sb[k], STORAGE_FIGURES, tally, conditions)]
        lines.append(markdown_table(["Workload"] + TABLE_HEAD + (["Flags A", "Flags B"] if flagged else []), rows,
                                    right=(2, 3, 4, 5)))
        lines.append("")
        if out is not None:
            out["storage"] = tally.json()
        lines += tally.sentences("IOPS, MB/s and mean latency (p99 only between replicates: a percentile of the "
                                 "whole run has no per-second interval)")
        if flagged:
            shown = [n for n in FLAGS if any(n in sa[k].flags + sb[k].flags for k in common)]
            lines += ["Flagged points' ratios compare figures at least one run doubts: "
                      + "; ".join(f"**{n}**: {LEGEND[n]}" for n in shown) + ".", ""]
        iops = [(estimate(sa[k], STORAGE_FIGURES[0]), estimate(sb[k], STORAGE_FIGURES[0])) for k in common]
        ratios = [eb.mean / ea.mean for ea, eb in iops if ea is not None and eb is not None and ea.mean > 0]
        ratios = [r for r in ratios if 0 < r < math.inf]  # a zero has no logarithm
        if ratios:
            lines.append(f"Geometric mean of the IOPS ratios over {len(ratios)} matched points: "
                         f"{statistics.geometric_mean(ratios):.2f}×.")
            lines.append("")
    else:
        lines += ["No storage point of one run matches a point of the other.", ""]
    lines += _only("A", [workload(sa[k].first) for k in sa if k not in sb])
    lines += _only("B", [workload(sb[k].first) for k in sb if k not in sa])
    return lines


def _knee_verdict(name: str, sup: support.KneeSupport) -> str:
    return f"{name} rates its knee {sup.verdict}" + (f" ({sup.verdict_text()})" if sup.verdict == "fragile" else "")


def _moved_points(a: RunData, b: RunData, ca: analysis.Curve, cb: analysis.Curve, loads: Sequence[int]) -> list[str]:
    """The loads (by N) whose IOPS differ between the runs by more than both points' per-second 95 % intervals:
    "QD32 ×1.27"; [] when none does or the samples to judge it are missing."""
    pa = {p.inflight: p for p in ca.points}
    pb = {p.inflight: p for p in cb.points}
    out = []
    for n in loads:
        if n not in pa or n not in pb or pa[n].iops <= 0:
            continue
        sa, sb = noise.point_spread(a.path, pa[n], "iops"), noise.point_spread(b.path, pb[n], "iops")
        if sa is None or sb is None:
            continue
        if abs(pb[n].iops - pa[n].iops) > sa.half_width + sb.half_width:
            out.append(f"{ca.load_label(pa[n])} ×{pb[n].iops / pa[n].iops:.2f}")
    return out


def _knee_sentence(label: str, ka: support.KneeSupport, kb: support.KneeSupport,
                   moved: Sequence[str] = ()) -> str:
    """One curve's knee in both runs, and whether the runs' own checks put a difference within noise.
    ``moved``: the loads around the two knees that measured differently in the two runs (:func:`_moved_points`)."""
    na, nb = ka.name(ka.knee), kb.name(kb.knee)
    va, vb = ka.verdict, kb.verdict
    if na == nb:
        return f"{label}: the knee is {na} in both runs (A {va}, B {vb})." if ka.knee is not None else \
            f"{label}: no knee in either run."
    head = f"{label}: the knee moved from {na} (A) to {nb} (B)"
    if va == vb == "stable":
        if moved:
            # each run's checks see only its own seconds; the runs disagree beyond them
            return (f"{head}, though each run rates its own knee stable: the loads around the knees measured "
                    f"differently in the two runs ({', '.join(moved)} IOPS B/A), beyond both points' per-second "
                    "95 % intervals. That is run-to-run variation (the device's state, the host, a virtual "
                    "machine's neighbours) which one run's checks cannot see: neither knee is reproducible; "
                    "repeat the run to learn which holds.")
        return f"{head}, and both runs rate their knee stable with the loads around it measured alike: the " \
               "curve's shape changed between the runs."
    if va == vb == "fragile":
        return f"{head}, and both runs rate their knee fragile: the difference is within noise."
    for name, sup, other in (("A", ka, nb), ("B", kb, na)):
        if sup.verdict == "fragile" and other in sup.alternatives():
            return f"{head}; {_knee_verdict(name, sup)}, which names {other} too: the difference is within noise."
    return f"{head}; A rates its knee {va}, B {vb}: the runs' checks cannot tell whether the difference is noise."


def _knee_unlike(conditions: cc.Conditions, ca: analysis.Curve, cb: analysis.Curve) -> list[cc.Unlike]:
    """The conditions that differ at any load both runs measured of one curve (each condition once)."""
    pb = {p.inflight: p for p in cb.points}
    out: dict[str, cc.Unlike] = {}
    for p in ca.points:
        if p.inflight in pb:
            for d in conditions.of_pair(p, pb[p.inflight]):
                out.setdefault(d.text(), d)
    return list(out.values())


def _knee_section(a: RunData, b: RunData) -> list[str]:
    """For each curve (workload over its loads) both runs measured at three loads or more: the knees; no verdict
    on a knee that moved when the curves' points were measured under different conditions."""
    ca = {c.key: c for c in analysis.storage_curves(procedure.storage_views(a.storage).main) if len(c.points) >= 3}
    cb = {c.key: c for c in analysis.storage_curves(procedure.storage_views(b.storage).main) if len(c.points) >= 3}
    common = [k for k in ca if k in cb]
    if not common:
        return []
    lines = ["## Knees", "",
             "Each curve's saturation knee in each run, with the run's own checks of it (margin over the runner-up, "
             "the curve without its last load, a bootstrap of its per-second samples; the report's knee section "
             "explains them). A knee that differs between runs is within noise when the runs' checks call it "
             "fragile; when both call it stable, the loads at the two knees are compared between the runs.", ""]
    for k in common:
        ka, kb = support.knee_support(a.path, ca[k]), support.knee_support(b.path, cb[k])
        diffs = _knee_unlike(cc.Conditions(a, b), ca[k], cb[k])
        if diffs and ka.name(ka.knee) != kb.name(kb.knee):
            lines.append(f"- {md_text(ca[k].label)}: the knee is {ka.name(ka.knee)} in A and {kb.name(kb.knee)} "
                         f"in B; not judged: {md_text(cc.reason(diffs))}.")
            continue
        # each knee indexes its own run's curve: the two runs may have measured different loads
        knees = sorted({curve.points[i].inflight for curve, i in ((ca[k], ka.knee), (cb[k], kb.knee)) if i is not None})
        moved = _moved_points(a, b, ca[k], cb[k], knees) if len(knees) > 1 else []
        lines.append(f"- {_knee_sentence(md_text(ca[k].label), ka, kb, moved)}")
    return lines + [""]


def _memory_label(p: MemoryRow) -> str:
    what = "idle" if p.mode == "idle" else f"{p.traffic} stride {p.stride} delay {p.delay}"
    return what + (f" buffer {format_size(p.buffer)}" if p.buffer else "")


def _memory_section(a: RunData, b: RunData, out: dict[str, object] | None = None,
                    conditions: cc.Conditions | None = None) -> list[str]:
    ma, mb = measured(a.path, a.memory, _mkey), measured(b.path, b.memory, _mkey)
    common = [k for k in ma if k in mb]
    lines = ["## Memory", ""]
    if not common:
        return lines + ["No memory point of one run matches a point of the other.", ""]
    rows, tally = [], Tally()
    for k in common:
        rows += pair_rows(_memory_label(ma[k].first), ma[k], mb[k], MEMORY_FIGURES, tally, conditions)
    lines.append(markdown_table(["Point"] + TABLE_HEAD, rows, right=(2, 3, 4, 5)))
    lines.append("")
    if out is not None:
        out["memory"] = tally.json()
    return lines + tally.sentences("latency and bandwidth")


def compare_runs(dir_a: str, dir_b: str, out: dict[str, object] | None = None) -> str:
    """The markdown of two runs compared; ``out`` (``compare --json``), when given, gets each table's
    differences and counts (``storage``, ``memory``)."""
    a, b = _not_fleet(load(dir_a), dir_a), _not_fleet(load(dir_b), dir_b)
    name_a, name_b = Path(dir_a).name or dir_a, Path(dir_b).name or dir_b
    if name_a == name_b:
        name_a, name_b = str(dir_a), str(dir_b)
    lines = [f"# {md_text(name_a)} (A) vs {md_text(name_b)} (B)", "",
             "Points are matched on the workload (pattern, mix, block size, queue depth, jobs); ratio = B / A. "
             "For throughput above 1× means B is faster; for latency below 1× means B is faster. " + NOISE_NOTE, ""]
    lines += _warnings(a, "A") + _warnings(b, "B")
    if a.storage or b.storage:
        lines += _storage_section(a, b, out, cc.Conditions(a, b))
        lines += _knee_section(a, b)
    if a.memory or b.memory:
        lines += _memory_section(a, b, out, cc.Conditions(a, b))
    return clean_text("\n".join(lines).rstrip() + "\n", newlines=True)


# --- host vs host of one fleet run ------------------------------------------------------------------------------


def _host_side(data: RunData, host: str, directory: str) -> RunData:
    """The run as one host of its fleet measured it (UsageError when the host is not one of the fleet's)."""
    assert data.fleet is not None
    if host not in data.fleet.names:
        raise UsageError(f"--host {host}: is not a host of the fleet run {directory}; its hosts are "
                         f"{', '.join(data.fleet.names)}.")
    return replace(data, storage=[p for p in data.storage if p.host == host])


def compare_hosts(directory: str, hosts: Sequence[str], out: dict[str, object] | None = None) -> str:
    """Two hosts of one fleet run, side A the first ``--host``, side B the second: the tables two runs get."""
    if len(hosts) != 2 or hosts[0] == hosts[1]:
        raise UsageError(f"compare --host: give exactly two different hosts of the fleet run (got {len(hosts)}"
                         f"{': the same host twice' if len(hosts) == 2 else ''}).")
    data = load(directory)
    if data.fleet is None:
        raise UsageError(f"compare --host: {directory} is not a fleet run (its run.json has no 'fleet'); --host "
                         "compares two hosts of one run made with `run --host … --host …`.")
    a, b = (_host_side(data, h, directory) for h in hosts)
    run = md_text(Path(directory).name or directory)
    lines = [f"# {md_text(hosts[0])} (A) vs {md_text(hosts[1])} (B), fleet run {run}", "",
             "Both hosts ran each point at the same time; points are matched on the workload (pattern, mix, block "
             "size, queue depth, jobs); ratio = B / A. For throughput above 1× means B is faster; for latency "
             "below 1× means B is faster. " + NOISE_NOTE, ""]
    lines += _warnings(data, "the run")
    lines += _storage_section(a, b, out)
    return clean_text("\n".join(lines).rstrip() + "\n", newlines=True)
