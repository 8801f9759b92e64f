"""The report's account of how a run was done beyond its points: steady-state points, preconditioning,
rounds (SNIA PTS steady-state verification and IOPS table), the latency-bound search's operating point,
and the points the procedure skipped.

Everything is read from the results directory (run.json, results.jsonl, raw/), which is untrusted: a
field of the wrong type is left out, never trusted.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Mapping, Sequence

from app.core.sanitize import md_text
from app.core.textable import markdown_table
from app.core.units import format_count, format_duration, format_size, format_us
from app.model.records import JSONObject, number
from app.model.runmeta import RunMeta
from app.plan.procedure import SNIA_EXCURSION, SNIA_RANGE, SNIA_WINDOW, SteadyCheck, first_steady_window
from app.report.data.model import RunData, StorageRow
from app.stats.summary import point_label
from app.store.results import json_objects, raw_lines

MAX_SAMPLES_BYTES = 16 << 20  # a samples file read for a figure: at most 16 MiB …
MAX_SAMPLES = 100_000  # … and this many lines


# --- which rows go where ----------------------------------------------------------------------------


@dataclass
class StorageViews:
    main: list[StorageRow]  # the rows of the tables and figures (for a run in rounds: each point's last round)
    searches: list[StorageRow]  # latency-bound searches (their iodepth is a ceiling, not a load)
    rounds: list[StorageRow]  # every row of a run in rounds
    opened: list[StorageRow] = field(default_factory=list)  # open-loop points (rate set): their own section


def _identity(row: StorageRow) -> str:
    return json.dumps({k: v for k, v in row.point.items() if k not in ("round", "group")}, sort_keys=True, default=str)


def storage_views(rows: Sequence[StorageRow]) -> StorageViews:
    searches = [r for r in rows if r.point.get("latency_bound")]
    opened = [r for r in rows if r.point.get("rate") is not None]  # iodepth is a cap there, the load is λ
    rest = [r for r in rows if not r.point.get("latency_bound") and r.point.get("rate") is None]
    rounds = [r for r in rest if isinstance(r.point.get("round"), int)]
    if not rounds:
        return StorageViews(rest, searches, [], opened)
    last: dict[str, StorageRow] = {}
    for r in rest:
        key = _identity(r)
        if key not in last or (last[key].round or 0) <= (r.round or 0):
            last[key] = r
    main = sorted(last.values(), key=lambda r: r.index)
    return StorageViews(main, searches, rounds, opened)


# --- steady-state points -----------------------------------------------------------------------------


def steady_of(row: StorageRow) -> JSONObject | None:
    s = row.line.parts.steady
    return s if isinstance(s, dict) else None


def not_steady(row: StorageRow) -> bool:
    s = steady_of(row)
    return s is not None and s.get("attained") is not True


def steady_section(rows: Sequence[StorageRow]) -> list[str]:
    steady = [(r, s) for r in rows if (s := steady_of(r)) is not None]
    if not steady:
        return []
    ok = sum(1 for _, s in steady if s.get("attained") is True)
    out = ["### Steady state", ""]
    others = ("" if ok == len(steady) else
              f"; the other {len(steady) - ok} ran to their runtime cap and are marked *not steady* in the table above")
    out.append(f"{ok} of {len(steady)} points reached steady state by fio's own test (`steadystate`: the criterion "
               f"held over the last window of one-second samples, after its ramp), and fio ended them then{others}. "
               "Deviation is fio's measured "
               "criterion at the end (for `iops:`/`bw:`, the largest distance from the window's mean, in percent of "
               "it; for `_slope`, the slope of the window's best-fit line in percent of its mean).")
    out.append("")
    rows_out = []
    for r, s in steady:
        after = number(s.get("after_s"))
        dev = number(s.get("deviation"))
        rows_out.append([point_label("storage", r.point), str(s.get("criterion", "?")),
                         "yes" if s.get("attained") is True else "no",
                         "—" if after is None else f"{after:.1f}", "—" if dev is None else f"{dev:.2f}%",
                         format_count(r.iops)])
    out.append(markdown_table(["Point", "Criterion", "Steady", "After (s)", "Deviation at the end", "IOPS"], rows_out,
                              right=(3, 4, 5)))
    out.append("")
    return out


def read_samples(run_dir: Path, raw: object) -> list[JSONObject]:
    """The live samples a point kept in raw/ (``raw``: its line's or run.json's precondition's ``raw`` object,
    whose ``samples`` path is used), [] when absent or not usable: the path must stay inside the results
    directory and name a regular file; at most MAX_SAMPLES_BYTES are read."""
    return [sample for sample in json_objects(raw_lines(run_dir, raw, "samples", MAX_SAMPLES_BYTES)[:MAX_SAMPLES])
            if number(sample.get("t")) is not None and number(sample.get("iops")) is not None]


# --- preconditioning and skipped points ------------------------------------------------------------


def precondition_rows(meta: RunMeta) -> list[list[str]]:
    """The run table's row saying what preconditioning did (none when the run had none)."""
    pre = meta.precondition
    if pre is None:
        return []
    seconds = number(pre.get("seconds"))
    written = number(pre.get("io_bytes"))
    bw = number(pre.get("bw_bytes"))
    text = f"{pre.get('mode', '?')}: {pre.get('description', '')}"
    if pre.get("status") != "done":
        text += f" — failed ({pre.get('error', 'no reason recorded')})"
    else:
        text += f"; took {format_duration(seconds) if seconds is not None else '?'}"
        if written is not None:
            text += f", {written / 1e9:.2f} GB written"
        if bw is not None:
            text += f" at {bw / 1e6:.0f} MB/s"
        steady = pre.get("steady")
        if isinstance(steady, Mapping):
            text += "; steady" if steady.get("attained") is True else "; not steady at its cap"
    return [["Preconditioning", " ".join(text.split())]]


def skipped_entries(meta: RunMeta) -> list[tuple[str, str]]:
    """(the point's label, why) of each skipped point run.json names."""
    return [(point_label("storage", dict(s.point)), " ".join((s.reason or "skipped").split()))
            for s in meta.skipped if s.point is not None]


def skipped_section(meta: RunMeta) -> list[str]:
    entries = skipped_entries(meta)
    if not entries:
        return []
    out = ["### Skipped points", ""]
    out.append(f"{len(entries)} planned point{'s were' if len(entries) != 1 else ' was'} not measured "
               "because the run's "
               "procedure made them pointless or the target could not measure them (not failures): an adaptive "
               "queue-depth or numjobs axis stops once IOPS "
               "grew less than 3% while mean latency grew at least 1.5x on two consecutive steps; a run in rounds "
               "stops once its tracked point is steady; a polled point (hipri) needs a device with poll queues.")
    out.append("")
    out.append(markdown_table(["Point", "Reason"], [[a, b] for a, b in entries], right=()))
    out.append("")
    return out


# --- the latency-bound search -----------------------------------------------------------------------------


def operating_point(row: StorageRow) -> JSONObject | None:
    op = row.line.parts.operating_point
    return op if isinstance(op, dict) and isinstance(op.get("depth"), int) else None


def operating_point_section(searches: Sequence[StorageRow], curves_here: set[str]) -> list[str]:
    """One sentence per latency-bound search; ``curves_here``: workloads (mix, block size) with a QD curve."""
    found = [(r, op) for r in searches if (op := operating_point(r)) is not None]
    if not found:
        return []
    out = ["### Operating point", ""]
    for r, op in found:
        bound = format_us(op.get("bound_us"))
        pct = op.get("percentile")
        p99 = number(op.get("lat_p99_ns"))
        mean = number(op.get("lat_mean_ns"))
        text = (f"Under a p{md_text(pct, 20)} latency bound of {bound}, fio's `latency_target` search settled on "
                f"**QD {op['depth']}** for {md_text(r.mix)} {format_size(r.bs)}"
                + (f" with {r.numjobs} jobs" if r.numjobs > 1 else "")
                + f" (searched up to QD {r.iodepth}): {format_count(r.iops)} IOPS, {r.bw / 1e6:.1f} MB/s, mean "
                  f"{'n/a' if mean is None else f'{mean / 1e3:.1f}'} µs, p99 "
                  f"{'n/a' if p99 is None else f'{p99 / 1e3:.1f}'} µs at that depth.")
        if not op.get("converged"):
            text += (" The search had not settled when the runtime cap ended it, so these figures mix depths; "
                     "raise runtime or latency_window.")
        if f"{r.mix} {r.bs}" in curves_here:
            text += " The diamond on the latency–throughput figure marks it against the QD sweep of the same workload."
        out += [text, ""]
    return out


# --- rounds (SNIA PTS) ------------------------------------------------------------------------------------


def _track(meta: RunMeta) -> Mapping[str, object]:
    return (meta.procedure.track if meta.procedure is not None else None) or {}


def tracked_series(rounds: Sequence[StorageRow], track: Mapping[str, object]) -> list[tuple[int, float]]:
    """(round, IOPS) of each round's tracked point (the first in plan order matching ``track``)."""
    by_round: dict[int, StorageRow] = {}
    for r in sorted(rounds, key=lambda r: r.index):
        rnd = r.point.get("round")
        if isinstance(rnd, int) and rnd not in by_round and all(r.point.get(k) == v for k, v in track.items()):
            by_round[rnd] = r
    return [(rnd, by_round[rnd].iops) for rnd in sorted(by_round)]


def window_rounds(rounds: Sequence[StorageRow], meta: RunMeta) -> tuple[SteadyCheck | None, list[int]]:
    """The steady-state check and the rounds the IOPS table averages: the first steady window, else the
    last SNIA_WINDOW rounds measured."""
    series = tracked_series(rounds, _track(meta))
    check = first_steady_window(series)
    if check is not None:
        return check, list(check.rounds)
    measured = sorted({r.round or 0 for r in rounds})
    return None, measured[-SNIA_WINDOW:]


def _mix_label(row: StorageRow) -> str:
    return f"{row.read_pct}/{100 - row.read_pct}"


def rounds_section(data: RunData, rounds: Sequence[StorageRow]) -> list[str]:
    if not rounds:
        return []
    meta = data.meta
    check, window = window_rounds(rounds, meta)
    track = _track(meta)
    tracked = md_text(" ".join(f"{k}={format_size(v) if k == 'bs' and isinstance(v, int) else v}"
                               for k, v in track.items()))
    out = ["### Steady-state verification (SNIA PTS)", ""]
    series = tracked_series(rounds, track)
    last_round = max(r.round or 0 for r in rounds)
    out.append(f"The plan ran in rounds ({last_round} measured); after each round the IOPS of the tracked point "
               f"({tracked or 'the first point of a round'}) was tested by SNIA's rule over a window of {SNIA_WINDOW} "
               f"rounds: max − min within {SNIA_RANGE:.0%} of the window's mean, and the excursion of the "
               f"least-squares line over the window within {SNIA_EXCURSION:.0%} of the mean.")
    out.append("")
    if check is None:
        out += [f"Fewer than {SNIA_WINDOW} consecutive rounds were measured: steady state cannot be judged.", ""]
    else:
        verdict = "**steady**" if check.steady else "**not steady**"
        out.append(f"Window: rounds {check.rounds[0]}–{check.rounds[-1]}, {verdict}.")
        out.append("")
        rows = [[str(r), format_count(v), "yes" if r in check.rounds else ""] for r, v in series]
        out.append(markdown_table(["Round", "Tracked IOPS", "In window"], rows, right=(0, 1)))
        out.append("")
        out.append(markdown_table(["Check", "Measured", "Limit", "Met"], [
            ["Mean IOPS of the window", format_count(check.mean), "—", "—"],
            ["Range (max − min)", format_count(check.range), f"{format_count(SNIA_RANGE * check.mean)} "
                                                             f"({SNIA_RANGE:.0%} of mean)",
             "yes" if check.range_ok else "no"],
            ["Slope of the best-fit line (IOPS per round)", f"{check.slope:.1f}", "—", "—"],
            ["Excursion of the line over the window", format_count(check.excursion),
             f"{format_count(SNIA_EXCURSION * check.mean)} ({SNIA_EXCURSION:.0%} of mean)",
             "yes" if check.slope_ok else "no"],
        ], right=(1, 2)))
        out.append("")
    out += iops_table(rounds, window)
    return out


def iops_table(rounds: Sequence[StorageRow], window: Sequence[int]) -> list[str]:
    """SNIA's IOPS table: block sizes down, read/write mixes across, each cell the mean over the window."""
    here = [r for r in rounds if r.point.get("round") in set(window)]
    if not here:
        return []
    mixes = sorted({_mix_label(r) for r in here}, key=lambda m: -int(m.split("/")[0]))
    sizes = sorted({r.bs for r in here}, reverse=True)
    cells: dict[tuple[int, str], list[float]] = {}
    for r in here:
        cells.setdefault((r.bs, _mix_label(r)), []).append(r.iops)
    rows = []
    for bs in sizes:
        row = [format_size(bs) if bs % 1024 == 0 else f"{bs} B"]
        for m in mixes:
            values = cells.get((bs, m))
            row.append(format_count(sum(values) / len(values)) if values else "—")
        rows.append(row)
    span = f"rounds {window[0]}–{window[-1]}" if len(window) > 1 else f"round {window[0]}"
    out = [f"IOPS by block size and read/write mix (% read / % write), the mean over {span}:", ""]
    out.append(markdown_table(["Block size"] + mixes, rows, right=range(1, len(mixes) + 1)))
    out.append("")
    return out
