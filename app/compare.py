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
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Callable, Sequence, TypeVar

from app.errors import UsageError
from app.points import Kind
from app.presets import RW_MODES, read_toml, shipped_dir
from app.report import analysis as an
from app.report import noise, support
from app.report import procedure as rp
from app.report.model import MemoryRow, RunData, StorageRow, load
from app.report.render import workload
from app.sanitize import clean_text
from app.textable import markdown_table
from app.units import format_count, format_size, parse_size
from app.validity import FLAGS, LEGEND, names

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


def write_text(out: str, text: str) -> None:
    """``compare --out FILE``: one sentence (UsageError) when FILE is a directory or cannot be written."""
    if out.endswith(("/", os.sep)) or os.path.isdir(out):
        raise UsageError(f"--out {out}: is a directory; give a file name for the tables, e.g. "
                         f"{os.path.join(out, 'compare.md')}.")
    if os.path.lexists(out) and not os.path.isfile(out):
        raise UsageError(f"--out {out}: exists and is not a regular file; give a new file name.")
    try:
        Path(out).write_text(text, encoding="utf-8")
    except OSError as e:
        raise UsageError(f"--out {out}: cannot be written ({e.strerror or e}).") from None


# --- values -----------------------------------------------------------------------------------------------


def metric_value(p: StorageRow, metric: str) -> float | None:
    if metric == "iops":
        return p.iops
    if metric == "bw_mbps":
        return p.bw / 1e6
    if metric == "lat_mean_us":
        return p.lat_mean / 1e3 if p.lat_mean else None
    if metric == "lat_p99_us":
        return None if p.p99 is None else p.p99 / 1e3
    raise KeyError(metric)


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


def compare_reference(run_dir: str, ref: Reference) -> str:
    data = _not_fleet(load(run_dir), run_dir)
    lines = [f"# {Path(run_dir).name} vs {ref.name}", ""]
    lines += _warnings(data, "the run")
    lines.append(f"Reference: {ref.name} — {ref.source}" + (f" ({ref.url})" if ref.url else "") + ".")
    if ref.description:
        lines += ["", ref.description]
    lines += ["", "Each reference figure is compared with the best matching point of the run (same access pattern "
                  "and block size, and the sheet's queue depth and jobs when it states them). Ratio = run / "
                  "reference; for latencies below 1× is better.", ""]
    rows = []
    for f in ref.figures:
        cands = [p for p in data.storage if p.bs == f.bs and _same_pattern(p, f.rw, f.rwmixread)]
        exact = [p for p in cands if (f.iodepth is None or p.iodepth == f.iodepth)
                 and (f.numjobs is None or p.numjobs == f.numjobs)]
        higher_better = METRICS[f.metric][1]
        pool = exact or cands
        cond = []
        if f.iodepth:
            cond.append(f"QD{f.iodepth}")
        if f.numjobs:
            cond.append(f"T{f.numjobs}")
        label = f.label + (f" ({' '.join(cond)})" if cond else "")
        valued = [(v, p) for p in pool if (v := metric_value(p, f.metric)) is not None]
        if not valued:
            rows.append([label, METRICS[f.metric][0], _fmt(f.metric, f.value), "not measured", "", "", f.note or ""])
            continue
        v, p = (max if higher_better else min)(valued, key=lambda t: t[0])
        how = workload(p) + ("" if exact or (f.iodepth is None and f.numjobs is None) else " (sheet's QD not run)")
        if p.rw != f.rw:
            how += f" (all {'reads' if p.read_pct == 100 else 'writes'}: counted as {f.rw})"
        if len(valued) > 1:
            how += f", best of {len(valued)}"
        rows.append([label, METRICS[f.metric][0], _fmt(f.metric, f.value), _fmt(f.metric, v),
                     _ratio(f.value, v), how, f.note or ""])
    lines.append(markdown_table(["Figure", "Metric", "Reference", "This run", "Ratio", "Run point", "Note"], rows,
                          right=(2, 3, 4)))
    lines.append("")
    return "\n".join(lines)


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
    return [f"Warnings of {name}:", ""] + ["- " + " ".join(w.split()) for w in ws] + [""]


R = TypeVar("R", StorageRow, MemoryRow)


def _match(left: Sequence[R], right: Sequence[R], key: Callable[[R], tuple[object, ...]]
           ) -> tuple[dict[tuple[object, ...], R], dict[tuple[object, ...], R], list[tuple[object, ...]]]:
    """Both runs' rows by workload key (a later row of the same key wins) and the keys both have, in A's order."""
    ka = {key(p): p for p in left}
    kb = {key(p): p for p in right}
    return ka, kb, [k for k in ka if k in kb]


def _only(side: str, names: list[str]) -> list[str]:
    if not names:
        return []
    return [f"Only in {side} ({len(names)}): " + ", ".join(names[:12]) + (" …" if len(names) > 12 else ""), ""]


def _storage_section(a: RunData, b: RunData) -> list[str]:
    engines = {(p.ioengine, p.point.get("direct")) for p in a.storage + b.storage}
    extra = len(engines) > 1
    sa, sb, common = _match(a.storage, b.storage, lambda p: _skey(p, extra))
    lines = ["## Storage", ""]
    if common:
        rows = []
        flagged = any(sa[k].flags or sb[k].flags for k in common)
        for k in common:
            pa, pb = sa[k], sb[k]
            p99a, p99b = metric_value(pa, "lat_p99_us"), metric_value(pb, "lat_p99_us")
            rows.append([workload(pa) + (f" {pa.ioengine}" if extra else ""),
                         format_count(pa.iops), format_count(pb.iops), _ratio(pa.iops, pb.iops),
                         f"{pa.bw / 1e6:.1f}", f"{pb.bw / 1e6:.1f}", _ratio(pa.bw, pb.bw),
                         f"{pa.lat_mean / 1e3:.2f}", f"{pb.lat_mean / 1e3:.2f}", _ratio(pa.lat_mean, pb.lat_mean),
                         _fmt("lat_p99_us", p99a), _fmt("lat_p99_us", p99b), _ratio(p99a, p99b)]
                        + ([", ".join(names(pa.flags)) or "—", ", ".join(names(pb.flags)) or "—"] if flagged else []))
        lines.append(markdown_table(["Workload", "IOPS A", "IOPS B", "B/A", "MB/s A", "MB/s B", "B/A", "Mean µs A",
                                     "Mean µs B", "B/A", "p99 µs A", "p99 µs B", "B/A"]
                                    + (["Flags A", "Flags B"] if flagged else []), rows))
        lines.append("")
        if flagged:
            shown = [n for n in FLAGS if any(n in names(sa[k].flags) + names(sb[k].flags) for k in common)]
            lines += ["Flagged points' ratios compare figures at least one run doubts: "
                      + "; ".join(f"**{n}**: {LEGEND[n]}" for n in shown) + ".", ""]
        ratios = [sb[k].iops / sa[k].iops for k in common if sa[k].iops > 0]
        ratios = [r for r in ratios if 0 < r < math.inf]  # a zero has no logarithm
        if ratios:
            lines.append(f"Geometric mean of the IOPS ratios over {len(ratios)} matched points: "
                         f"{statistics.geometric_mean(ratios):.2f}×.")
            lines.append("")
    else:
        lines += ["No storage point of one run matches a point of the other.", ""]
    lines += _only("A", [workload(sa[k]) for k in sa if k not in sb])
    lines += _only("B", [workload(sb[k]) for k in sb if k not in sa])
    return lines


def _knee_verdict(name: str, sup: support.KneeSupport) -> str:
    return f"{name} rates its knee {sup.verdict}" + (f" ({sup.verdict_text()})" if sup.verdict == "fragile" else "")


def _moved_points(a: RunData, b: RunData, ca: an.Curve, cb: an.Curve, loads: Sequence[int]) -> list[str]:
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


def _knee_section(a: RunData, b: RunData) -> list[str]:
    """For each curve (workload over its loads) both runs measured at three loads or more: the knees."""
    ca = {c.key: c for c in an.storage_curves(rp.storage_views(a.storage).main) if len(c.points) >= 3}
    cb = {c.key: c for c in an.storage_curves(rp.storage_views(b.storage).main) if len(c.points) >= 3}
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
        # each knee indexes its own run's curve: the two runs may have measured different loads
        knees = sorted({curve.points[i].inflight for curve, i in ((ca[k], ka.knee), (cb[k], kb.knee)) if i is not None})
        moved = _moved_points(a, b, ca[k], cb[k], knees) if len(knees) > 1 else []
        lines.append(f"- {_knee_sentence(ca[k].label, ka, kb, moved)}")
    return lines + [""]


def _memory_section(a: RunData, b: RunData) -> list[str]:
    ma, mb, common = _match(a.memory, b.memory, _mkey)
    lines = ["## Memory", ""]
    if not common:
        return lines + ["No memory point of one run matches a point of the other.", ""]
    rows = []
    for k in common:
        pa, pb = ma[k], mb[k]
        what = "idle" if pa.mode == "idle" else f"{pa.traffic} stride {pa.stride} delay {pa.delay}"
        if pa.buffer:
            what += f" buffer {format_size(pa.buffer)}"
        rows.append([what, f"{pa.latency:.2f}" if pa.latency else "n/a",
                     f"{pb.latency:.2f}" if pb.latency else "n/a", _ratio(pa.latency, pb.latency),
                     "" if pa.bandwidth is None else f"{pa.bandwidth:.1f}",
                     "" if pb.bandwidth is None else f"{pb.bandwidth:.1f}", _ratio(pa.bandwidth, pb.bandwidth)])
    lines.append(markdown_table(["Point", "Latency ns A", "Latency ns B", "B/A", "MB/s A", "MB/s B", "B/A"], rows))
    lines.append("")
    return lines


def compare_runs(dir_a: str, dir_b: str) -> str:
    a, b = _not_fleet(load(dir_a), dir_a), _not_fleet(load(dir_b), dir_b)
    name_a, name_b = Path(dir_a).name or dir_a, Path(dir_b).name or dir_b
    if name_a == name_b:
        name_a, name_b = str(dir_a), str(dir_b)
    lines = [f"# {name_a} (A) vs {name_b} (B)", "",
             "Points are matched on the workload (pattern, mix, block size, queue depth, jobs); ratio = B / A. "
             "For throughput above 1× means B is faster; for latency below 1× means B is faster.", ""]
    lines += _warnings(a, "A") + _warnings(b, "B")
    if a.storage or b.storage:
        lines += _storage_section(a, b)
        lines += _knee_section(a, b)
    if a.memory or b.memory:
        lines += _memory_section(a, b)
    return clean_text("\n".join(lines).rstrip() + "\n", newlines=True)


# --- host vs host of one fleet run ------------------------------------------------------------------------------


def _host_side(data: RunData, host: str, directory: str) -> RunData:
    """The run as one host of its fleet measured it (UsageError when the host is not one of the fleet's)."""
    assert data.fleet is not None
    if host not in data.fleet.names:
        raise UsageError(f"--host {host}: is not a host of the fleet run {directory}; its hosts are "
                         f"{', '.join(data.fleet.names)}.")
    return replace(data, storage=[p for p in data.storage if p.host == host])


def compare_hosts(directory: str, hosts: Sequence[str]) -> str:
    """Two hosts of one fleet run, side A the first ``--host``, side B the second: the tables two runs get."""
    if len(hosts) != 2 or hosts[0] == hosts[1]:
        raise UsageError(f"compare --host: give exactly two different hosts of the fleet run (got {len(hosts)}"
                         f"{': the same host twice' if len(hosts) == 2 else ''}).")
    data = load(directory)
    if data.fleet is None:
        raise UsageError(f"compare --host: {directory} is not a fleet run (its run.json has no 'fleet'); --host "
                         "compares two hosts of one run made with `run --host … --host …`.")
    a, b = (_host_side(data, h, directory) for h in hosts)
    lines = [f"# {hosts[0]} (A) vs {hosts[1]} (B), fleet run {Path(directory).name or directory}", "",
             "Both hosts ran each point at the same time; points are matched on the workload (pattern, mix, block "
             "size, queue depth, jobs); ratio = B / A. For throughput above 1× means B is faster; for latency "
             "below 1× means B is faster.", ""]
    lines += _warnings(data, "the run")
    lines += _storage_section(a, b)
    return clean_text("\n".join(lines).rstrip() + "\n", newlines=True)
