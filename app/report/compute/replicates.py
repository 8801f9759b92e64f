"""The replicates of a repeated run (``repeat`` ≥ 2): each point's figures over its replicates.

Every replicate is its own results line (``point.replicate`` = 1, 2 …); the replicates of one point share
:func:`app.plan.presets.base_key`.  Per point the report shows the mean over the replicates, n, the between-run
coefficient of variation and the Student-t 95 % interval of that mean (:func:`app.stats.uncertainty.replicate_spread`).
The replicates were interleaved over the plan, so drift shows up as their variation.

A run's own (within-run) interval sees only that run's second-to-second fluctuation.  If the replicates vary
more than those intervals allow, the within-run interval undercovers on this device: a single run's ± is too
narrow, and the report says so and recommends repeats.  The test: the replicates' CV against the typical
within-run relative standard error (the median over the replicates of half-width / 1.96 / value); a CV more
than UNDERCOVER times it is flagged.  For n = 3 replicates of a point whose intervals are right, the sample sd
exceeds twice the true one with probability e⁻⁴ ≈ 2 % (χ² with 2 degrees of freedom).
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Sequence

from app.core.sanitize import md_text
from app.core.textable import markdown_table
from app.plan.presets import base_key
from app.report.compute import intervals
from app.report.data.model import MemoryRow, StorageRow
from app.stats.uncertainty import Replicates, replicate_spread

UNDERCOVER = 2.0  # between-run CV / within-run relative standard error above which the intervals undercover
Z95 = 1.96  # a 95 % half-width is about 1.96 standard errors


@dataclass(frozen=True)
class Group:
    """One point's replicates and one figure over them."""

    label: str
    rows: list[StorageRow] | list[MemoryRow]
    spread: Replicates
    within_se: float | None  # the median within-run relative standard error of the figure (None: no intervals)

    @property
    def ratio(self) -> float | None:
        """Between-run CV / within-run relative standard error (None when either is unknown or 0)."""
        if self.spread.cv is None or not self.within_se or self.spread.n < 2:
            return None
        return self.spread.cv / self.within_se

    @property
    def undercovers(self) -> bool:
        r = self.ratio
        return r is not None and r > UNDERCOVER


def repeated(rows: Sequence[StorageRow] | Sequence[MemoryRow]) -> bool:
    return any(r.replicate is not None for r in rows)


def groups_of(rows: Sequence[StorageRow | MemoryRow], label: Callable[[StorageRow | MemoryRow], str],
              value: Callable[[StorageRow | MemoryRow], float | None],
              interval: Callable[[StorageRow | MemoryRow], tuple[float, float] | None]) -> list[Group]:
    """The replicated points among ``rows`` (by :func:`base_key`, in the order of their first replicate), with
    the figure ``value`` gives over them; a point measured once, or with no figure, is left out."""
    by_key: dict[str, list[StorageRow | MemoryRow]] = {}
    for r in rows:
        if r.replicate is not None:
            by_key.setdefault(base_key(r.point), []).append(r)
    out = []
    for members in by_key.values():
        pairs = [(v, interval(r)) for r in members if (v := value(r)) is not None]
        if len(pairs) < 2:
            continue
        ses = [pct / 100 / Z95 for _, iv in pairs if (pct := intervals.rel_pct(iv)) is not None]
        out.append(Group(label(members[0]), members, replicate_spread([v for v, _ in pairs]),  # type: ignore[arg-type]
                         statistics.median(ses) if ses else None))
    return out


def storage_groups(run_dir: Path | None, rows: Sequence[StorageRow], label: Callable[[StorageRow], str],
                   figure: str = "iops") -> list[Group]:
    """The replicated storage points' ``figure`` (``iops``, ``bw_bytes`` or ``lat_mean_ns``), each named by
    ``label``."""
    get = {"iops": lambda r: r.iops, "bw_bytes": lambda r: r.bw, "lat_mean_ns": lambda r: r.lat_mean}[figure]
    return groups_of(rows, label, get,  # type: ignore[arg-type]
                     lambda r: intervals.storage_intervals(run_dir, r).get(figure))  # type: ignore[arg-type]


def memory_figure(row: MemoryRow) -> str:
    """The figure of a memory point the replicates are judged by: latency, or bandwidth for a bandwidth mode."""
    return "latency_ns" if row.latency is not None else "bandwidth_mbps"


def memory_groups(rows: Sequence[MemoryRow]) -> list[Group]:
    from app.stats.summary import point_label

    def value(r: MemoryRow) -> float | None:
        return r.latency if memory_figure(r) == "latency_ns" else r.bandwidth

    return groups_of(rows, lambda r: point_label("memory", r.point), value,  # type: ignore[arg-type]
                     lambda r: intervals.memory_intervals(r).get(memory_figure(r)))  # type: ignore[arg-type]


# --- the report's section ------------------------------------------------------------------------------------


def _cv(g: Group | None) -> str:
    return "n/a" if g is None or g.spread.cv is None else f"{100 * g.spread.cv:.1f}%"


def _within(g: Group) -> str:
    return "n/a" if g.within_se is None else f"±{100 * Z95 * g.within_se:.1f}%"


def _mean_pm(g: Group | None, fmt: Callable[[float, tuple[float, float] | None], str]) -> str:
    if g is None:
        return "n/a"
    return fmt(g.spread.mean, g.spread.ci)


def _verdict(g: Group) -> str:
    r = g.ratio
    if r is None:
        return "no within-run interval to compare" if g.within_se is None else "—"
    return f"undercovers (CV {r:.1f}× the within-run SE)" if g.undercovers else f"consistent ({r:.1f}×)"


INTRO = ("Each point was measured {n} times, interleaved over the plan (all points once, then all again), so "
         "drift between runs shows up as variation between the replicates. Per point: the mean over the "
         "replicates ± the Student-t 95 % interval of that mean, their coefficient of variation (CV = sd / mean, "
         "between runs), and the typical within-run 95 % interval of one replicate (median, per cent of its "
         "value). When the replicates vary more than {k:g}× what their within-run intervals allow (CV against the "
         "within-run standard error, half-width / 1.96), a single run's ± undercovers on this device.")


def storage_section(run_dir: Path, rows: Sequence[StorageRow], label: Callable[[StorageRow], str]) -> list[str]:
    """### Replicates: the mean over each storage point's replicates (nothing for a run without repeats); each
    point named by ``label``."""
    iops = storage_groups(run_dir, rows, label, "iops")
    if not iops:
        return []
    bw = {g.label: g for g in storage_groups(run_dir, rows, label, "bw_bytes")}
    lat = {g.label: g for g in storage_groups(run_dir, rows, label, "lat_mean_ns")}
    n = max(g.spread.n for g in iops)
    out = ["### Replicates: mean over the runs", "", INTRO.format(n=n, k=UNDERCOVER), ""]
    table = []
    for g in iops:
        b, lt = bw.get(g.label), lat.get(g.label)
        table.append([g.label, g.spread.n, _mean_pm(g, intervals.pm_count), _cv(g),
                      _mean_pm(b, lambda v, iv: intervals.pm_fixed(v, iv, 1, scale=1e6)),  # MB/s
                      _mean_pm(lt, lambda v, iv: intervals.pm_fixed(v, iv, 2, scale=1e3)),  # µs
                      _cv(lt),
                      _within(g), _verdict(g)])
    out.append(markdown_table(["Workload", "n", "IOPS (mean ± 95 %)", "IOPS CV", "MB/s (mean ± 95 %)",
                               "Latency avg µs (mean ± 95 %)", "Latency CV", "Within-run IOPS ± (median)",
                               "Replicates vs within-run"], table, right=range(1, 8)))
    out.append("")
    return out + advice(iops, "IOPS")


def memory_section(rows: Sequence[MemoryRow]) -> list[str]:
    """### Replicates for memory points: latency (or bandwidth) over the replicates."""
    groups = memory_groups(rows)
    if not groups:
        return []
    n = max(g.spread.n for g in groups)
    out = ["### Memory replicates: mean over the runs", "", INTRO.format(n=n, k=UNDERCOVER), ""]
    table = []
    for g in groups:
        fig = memory_figure(g.rows[0])  # type: ignore[arg-type]
        what = "latency ns" if fig == "latency_ns" else "bandwidth MB/s"
        table.append([g.label, what, g.spread.n,
                      _mean_pm(g, lambda v, iv: intervals.pm_fixed(v, iv, 2 if fig == "latency_ns" else 1)), _cv(g),
                      _within(g), _verdict(g)])
    out.append(markdown_table(["Point", "Figure", "n", "Mean ± 95 %", "CV", "Within-run ± (median)",
                               "Replicates vs within-run"], table, right=(2, 3, 4, 5)))
    out.append("")
    return out + advice(groups, "the figure")


def advice(groups: Sequence[Group], figure: str) -> list[str]:
    """The recommendation: repeats where the within-run intervals undercover."""
    bad = [g for g in groups if g.undercovers]
    if not bad:
        if any(g.ratio is not None for g in groups):
            return [f"The replicates vary no more than their within-run intervals allow ({figure}): on this device a "
                    "single run's ± holds.", ""]
        return []
    names = ", ".join(md_text(g.label) for g in bad[:4]) + (" …" if len(bad) > 4 else "")
    worst = max(g.ratio or 0.0 for g in bad)
    n = max(g.spread.n for g in groups)
    more = (f"`--set repeat={max(5, n + 2)}` or more (this run had {n}" if n >= 3 else "`--set repeat=3` or more ("
            + (f"this run had {n}" if n > 1 else "one run"))
    return [f"**Repeats recommended.** On {len(bad)} of {len(groups)} points ({names}) the replicates' {figure} "
            f"varies up to {worst:.1f}× more than their within-run intervals allow: the within-run interval "
            "undercovers for this device (drift between runs that one run cannot see). Trust the mean over the "
            f"replicates and its interval above, and measure this device with {more}; `repeat=auto` adds "
            "replicates until their CV is small).", ""]
