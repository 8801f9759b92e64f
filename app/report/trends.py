"""The report's written summary: what the data says about block size, read/write mix and queue depth.

Each sentence is computed from two (or a few) measured points and carries its effect size (a ratio, or a
percentage change).  Two points are told apart only when their difference is beyond noise:

- both points kept per-second samples (app.report.noise): their 95 % intervals of the mean must not
  overlap, and the relative difference of their figures must exceed the larger per-second coefficient of
  variation of the two — a difference smaller than one second's usual wobble is not called a trend;
- otherwise (no samples, or fewer than three whole seconds) the noise is unknown and the difference must
  be at least FALLBACK_EFFECT (10 %); the sentence says the noise is unknown.

A comparison within noise gives "no difference beyond noise" (read/write mix) or ends a growth run (block
size, queue depth); it never gives a direction.  docs/report.md states the same rule.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Hashable, Sequence, TypeVar

from app.report.analysis import Rest
from app.report.model import StorageRow
from app.report.noise import Spread, point_spread
from app.sanitize import md_text
from app.units import format_size

K = TypeVar("K", bound=Hashable)  # what tells a family of points apart

FALLBACK_EFFECT = 0.10  # without per-second samples, a smaller relative difference is not called a trend
MAX_CLAUSES = 4  # block sizes listed in one read/write sentence


@dataclass(frozen=True)
class Diff:
    """How point b's figure compares with point a's."""

    a: float  # the headline figures (the whole run)
    b: float
    real: bool  # beyond noise by the module's rule
    cv: float | None  # the larger per-second CV of the two; None: no samples, noise unknown

    @property
    def ratio(self) -> float:
        return self.b / self.a if self.a else float("inf")


def _spread(run_dir: Path, p: StorageRow, figure: str) -> Spread | None:
    """A point's per-second spread of ``figure``; bandwidth from IOPS × block size when the samples
    keep IOPS only (the two have the same relative spread at one block size)."""
    s = point_spread(run_dir, p, figure)
    if s is None and figure == "bw" and p.bs > 0:
        i = point_spread(run_dir, p, "iops")
        if i is not None:
            s = Spread(i.n, i.mean * p.bs, i.sd * p.bs, i.lo * p.bs, i.hi * p.bs)
    return s


def compare(run_dir: Path, a: StorageRow, b: StorageRow, figure: str) -> Diff:
    """Point b against point a on ``figure`` ("iops" or "bw"), judged against their per-second noise."""
    va, vb = (p.iops if figure == "iops" else p.bw for p in (a, b))
    if va <= 0 or vb <= 0:
        return Diff(va, vb, False, None)
    rel = abs(vb - va) / min(va, vb)
    sa, sb = _spread(run_dir, a, figure), _spread(run_dir, b, figure)
    if sa is None or sb is None:
        return Diff(va, vb, rel >= FALLBACK_EFFECT, None)
    cv = max(sa.cv, sb.cv)
    apart = sa.mean + sa.half_width < sb.mean - sb.half_width or sb.mean + sb.half_width < sa.mean - sa.half_width
    return Diff(va, vb, apart and rel > cv, cv)


# --- wording -------------------------------------------------------------------------------------------


def size(d: Diff) -> str:
    """The size of a change: "5.2×" (or "÷5.2") from a doubling on, else an unsigned percentage."""
    r = d.ratio
    if r >= 2:
        return f"{r:.1f}×"
    if 0 < r <= 0.5:
        return f"÷{1 / r:.1f}"
    return f"{abs(r - 1) * 100:.0f} %"


def signed(d: Diff) -> str:
    pct = round((d.ratio - 1) * 100)
    return f"{pct:+d} %" if pct else "±0 %"  # not "-0 %" for a change that rounds to nothing


def share(d: Diff) -> str:
    """b as a share of a: "62 %", or "3.4×" from a doubling on."""
    return f"{d.ratio:.1f}×" if d.ratio >= 2 else f"{d.ratio * 100:.0f} %"


def support(diffs: Sequence[Diff]) -> str:
    """What the sentence's comparisons were judged against."""
    cvs = [d.cv for d in diffs if d.cv is not None]
    if len(cvs) == len(diffs) and cvs:
        return f"per-second CV ≤ {max(cvs) * 100:.1f} %"
    if cvs:
        return f"per-second CV ≤ {max(cvs) * 100:.1f} % where recorded, elsewhere noise unknown"
    return "noise unknown"


def load(p: StorageRow) -> str:
    return f"QD{p.iodepth}" + (f"×{p.numjobs}" if p.numjobs > 1 else "")


def kib(bs: int) -> str:
    return format_size(bs).replace("K", " KiB").replace("M", " MiB").replace("G", " GiB") if bs % 1024 == 0 \
        else f"{bs} B"


def values(figure: str, *vs: float, sep: str = " → ") -> str:
    """Figures in one unit: "121 → 185 MB/s", "2.5 → 29.5 kIOPS"."""
    if figure == "bw":
        digits = 0 if min(vs) >= 1e7 else 1
        return sep.join(f"{v / 1e6:,.{digits}f}" for v in vs) + " MB/s"
    if min(vs) >= 1e4:
        return sep.join(f"{v / 1e3:,.1f}" for v in vs) + " kIOPS"
    return sep.join(f"{v:,.0f}" for v in vs) + " IOPS"


# --- growth along an axis (block size, queue depth) ---------------------------------------------------


def plateau(run_dir: Path, pts: Sequence[StorageRow], figure: str) -> int:
    """The first index from which no later point is beyond noise above it: where growth stops."""
    for j in range(len(pts)):
        later = pts[j + 1:]
        if not any(compare(run_dir, pts[j], q, figure).real and
                   (q.iops if figure == "iops" else q.bw) > (pts[j].iops if figure == "iops" else pts[j].bw)
                   for q in later):
            return j
    return len(pts) - 1


def growth(run_dir: Path, pts: Sequence[StorageRow], figure: str, what: str,
           name: Callable[[StorageRow], str]) -> str:
    """One sentence on how ``figure`` moves along ``pts`` (sorted along the axis): where it grows beyond noise,
    and what it does after."""
    first, last = pts[0], pts[-1]
    j = plateau(run_dir, pts, figure)
    fig = (lambda p: p.iops) if figure == "iops" else (lambda p: p.bw)
    up = compare(run_dir, first, pts[j], figure)
    if j == 0 or not up.real:  # no growth from the first point on (growth between middle points only is none)
        d = compare(run_dir, first, last, figure)
        if d.real and d.ratio < 1:
            return (f"{what} falls {size(d)} from {name(first)} to {name(last)} "
                    f"({values(figure, fig(first), fig(last))}; {support([d])}).")
        return (f"{what}: no difference beyond noise from {name(first)} to {name(last)} "
                f"({values(figure, fig(first), fig(last), sep=' vs ')}; {support([d])}).")
    top = pts[j]
    text = f"{what} rises {size(up)} from {name(first)} to {name(top)} ({values(figure, fig(first), fig(top))})"
    diffs = [up]
    if j < len(pts) - 1:
        tail = compare(run_dir, top, last, figure)
        diffs.append(tail)
        text += (f", then falls {size(tail)} to {name(last)}" if tail.real else
                 f", then flat within noise to {name(last)} ({signed(tail)})")
    return f"{text}; {support(diffs)}."


# --- the three trends ------------------------------------------------------------------------------------


def _families(points: Sequence[StorageRow], key: Callable[[StorageRow], K]) -> dict[K, list[StorageRow]]:
    out: dict[K, list[StorageRow]] = {}
    for p in points:
        out.setdefault(key(p), []).append(p)
    return out


def _first_each(pts: Sequence[StorageRow], axis: Callable[[StorageRow], int]) -> list[StorageRow]:
    """One point per axis value (a repeated point: its first measurement), sorted along the axis."""
    seen: dict[int, StorageRow] = {}
    for p in pts:
        seen.setdefault(axis(p), p)
    return [seen[k] for k in sorted(seen)]


def _pick(families: dict[K, list[StorageRow]], axis: Callable[[StorageRow], int],
          prefer: Callable[[list[StorageRow]], int]) -> dict[str, list[StorageRow]]:
    """Per access pattern, the family measured at the most values of ``axis`` (ties: ``prefer``)."""
    best: dict[str, list[StorageRow]] = {}
    for pts in families.values():
        line = _first_each(pts, axis)
        if len(line) < 2:
            continue
        mix = line[0].mix
        if mix not in best or (len(line), prefer(line)) > (len(best[mix]), prefer(best[mix])):
            best[mix] = line
    return best


def _order(points: Sequence[StorageRow]) -> dict[str, tuple[int, int]]:
    return {p.mix: p.mix_order for p in points}


def block_size_trends(run_dir: Path, points: Sequence[StorageRow]) -> list[str]:
    """Bandwidth against block size, per access pattern at its deepest load measured over most block sizes."""
    fams = _families(points, lambda p: (p.mix, p.iodepth, p.numjobs, p.rest))
    picked = _pick(fams, lambda p: p.bs, lambda line: line[0].inflight)
    order = _order(points)
    out = []
    for mix in sorted(picked, key=lambda m: (order[m], m)):
        line = picked[mix]
        out.append(growth(run_dir, line, "bw", f"{md_text(mix)} bandwidth at {load(line[0])}", lambda p: kib(p.bs)))
    return out


def queue_depth_trends(run_dir: Path, points: Sequence[StorageRow]) -> list[str]:
    """IOPS against outstanding I/Os, per access pattern at its smallest block size measured over most loads."""
    fams = _families(points, lambda p: (p.mix, p.bs, p.rest, p.numjobs))
    picked = _pick(fams, lambda p: p.inflight, lambda line: -line[0].bs)
    order = _order(points)
    out = []
    for mix in sorted(picked, key=lambda m: (order[m], m)):
        line = picked[mix]
        out.append(growth(run_dir, line, "iops", f"{md_text(mix)} {kib(line[0].bs)} IOPS", load))
    return out


def _kind(p: StorageRow) -> str | None:
    """"read", "write" or "mixed NN/MM"; None for trims."""
    if "trim" in p.rw:
        return None
    if p.mixed:
        return f"{p.read_pct}/{100 - p.read_pct} mix"
    return "read" if p.read_pct == 100 else "write"


def mix_trends(run_dir: Path, points: Sequence[StorageRow]) -> list[str]:
    """Writes and read/write mixes against pure reads of the same pattern (random or sequential), block size
    and settings, at the deepest load both were measured at; one sentence per pattern and kind."""
    by: dict[tuple[bool, int, Rest, int, int], dict[str, StorageRow]] = {}
    for p in points:
        kind = _kind(p)
        if kind is not None:
            by.setdefault((p.random, p.bs, p.rest, p.inflight, p.numjobs), {}).setdefault(kind, p)
    # per (pattern, kind, settings): block size -> the pair at the deepest common load
    pairs: dict[tuple[bool, str, Rest], dict[int, tuple[StorageRow, StorageRow]]] = {}
    for (rnd, bs, rest, n, _jobs), kinds in sorted(by.items(), key=lambda kv: kv[0][3]):
        read = kinds.get("read")
        if read is None:
            continue
        for kind, other in kinds.items():
            if kind != "read":
                pairs.setdefault((rnd, kind, rest), {})[bs] = (read, other)  # deeper loads replace shallower
    out = []
    for (rnd, kind, _rest), per_bs in sorted(pairs.items(), key=lambda kv: (not kv[0][0], kv[0][1])):
        pattern = "random" if rnd else "sequential"
        clauses, diffs = [], []
        for bs in sorted(per_bs)[:MAX_CLAUSES]:
            read, other = per_bs[bs]
            d = compare(run_dir, read, other, "iops")
            diffs.append(d)
            where = f"{kib(bs)} {load(other)}"
            shown = values("iops", d.b, d.a, sep=" vs ")
            clauses.append(f"{share(d)} at {where} ({shown})" if d.real else
                           f"no difference beyond noise at {where} ({shown})")
        more = len(per_bs) - MAX_CLAUSES
        tail = f"; {more} more block size{'s' if more > 1 else ''} in the tables" if more > 0 else ""
        out.append(f"{pattern} {kind}{'s' if kind == 'write' else ''} as a share of {pattern} reads' IOPS: "
                   + "; ".join(clauses) + f"{tail}; {support(diffs)}.")
    return out


def summary_section(run_dir: Path, points: Sequence[StorageRow]) -> list[str]:
    """### Summary of trends: the sentences above, or nothing when no point has a neighbour to compare."""
    points = [p for p in points if p.iops > 0 and p.bw > 0]  # a point that moved no data has no trend to join
    parts = [("Block size", block_size_trends(run_dir, points)),
             ("Read/write mix", mix_trends(run_dir, points)),
             ("Queue depth", queue_depth_trends(run_dir, points))]
    if not any(lines for _, lines in parts):
        return []
    out = ["### Summary of trends", "",
           "Each sentence compares measured points and gives the effect; a difference is called one only when it "
           "is beyond noise: the two points' 95 % intervals of their per-second figures do not overlap and the "
           "difference exceeds the larger per-second coefficient of variation (CV). Points without per-second "
           "samples need a difference of at least 10 % and say \"noise unknown\".", ""]
    for title, lines in parts:
        out += [f"- **{title}**: {s}" for s in lines]
    out.append("")
    return out
