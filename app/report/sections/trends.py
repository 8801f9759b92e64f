"""The report's written summary: what the data says about block size, read/write mix and queue depth.

Each sentence is computed from measured points and carries its effect size (a ratio, or a percentage change).
Every judgement comes from :mod:`app.report.compute.verdict`, the one rule the queueing view and the write-back check
use too: each point with all its replicates (or, measured once, its batch-means interval within the run), a
difference "real" at a 5 % false-alarm rate (per curve along an axis), "flat" / "no difference beyond noise"
only where the test had 80 % power to see a 10 % difference, and otherwise "not judged" with the reason.
docs/report.md states the same rule.
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable, Hashable, Sequence, TypeVar

from app.core.sanitize import md_text
from app.core.units import format_size
from app.report.compute import verdict
from app.report.compute.analysis import Rest
from app.report.compute.verdict import Verdict
from app.report.data.model import StorageRow

K = TypeVar("K", bound=Hashable)  # what tells a family of points apart

MAX_CLAUSES = 4  # block sizes listed in one read/write sentence


# --- wording -------------------------------------------------------------------------------------------


def size(d: Verdict) -> str:
    """The size of a change: "5.2×" (or "÷5.2") from a doubling on, else an unsigned percentage."""
    r = d.ratio or 0.0
    if r >= 2:
        return f"{r:.1f}×"
    if 0 < r <= 0.5:
        return f"÷{1 / r:.1f}"
    return f"{abs(r - 1) * 100:.0f} %"


def signed(d: Verdict) -> str:
    if d.effect is None:
        return "n/a"
    pct = round(d.effect * 100)
    return f"{pct:+d} %" if pct else "±0 %"  # not "-0 %" for a change that rounds to nothing


def change(d: Verdict) -> str:
    """A change with its sign: "5.2×", "÷3.1" from a doubling on, else "+4 %"."""
    r = d.ratio
    return signed(d) if r is None or 0.5 < r < 2 else size(d)


def share(d: Verdict) -> str:
    """b as a share of a: "62 %", or "3.4×" from a doubling on."""
    r = d.ratio or 0.0
    return f"{r:.1f}×" if r >= 2 else f"{r * 100:.0f} %"


def unjudged(d: Verdict, short: bool = False) -> str:
    """", not judged: <why>" — the whole reason, never cut (a cut lands mid-word or between a figure and its unit;
    a long sentence wraps) (``short``: the verdict alone)."""
    if short:
        return ", not judged"
    return f", not judged: {md_text(d.reason)}"  # may quote a results line's own reason: foreign text, escaped


def why_not_judged(diffs: Sequence[Verdict]) -> str:
    """Why the unjudged verdicts among ``diffs`` are, whole and in few words: the tests that ran but saw too
    little are one clause with the range of what they could see, and any other reason follows once."""
    unjudged_ = [d for d in diffs if d.verdict == verdict.NOT_JUDGED]
    weak = [d.detectable for d in unjudged_ if d.detectable is not None]
    others = list(dict.fromkeys(d.reason for d in unjudged_ if d.detectable is None))
    if len(weak) < 2:
        return "; ".join(dict.fromkeys(d.reason for d in unjudged_))
    low, high = verdict.size_text(min(weak)), verdict.size_text(max(weak))
    seen = (verdict.difference_text(min(weak)) if low == high
            else f"a {low.removesuffix(' %')}–{high} difference" if high.endswith(" %")
            else f"differences from {low} to {high}")
    return "; ".join([f"{verdict.TOO_FEW}: the {len(weak)} tests see only {seen} {verdict.POWER * 100:.0f} % "
                      f"of the time ({verdict.MIN_EFFECT * 100:.0f} % needed)", *others])


def support(diffs: Sequence[Verdict]) -> str:
    """What the sentence's verdicts rest on."""
    hows = sorted({d.how for d in diffs if d.how})
    if not hows:
        return "no interval to judge by"
    kinds = {"replicates": "replicates", "within-run": "within-run intervals",
             "replicates and within-run": "replicates and within-run intervals"}
    return "judged on " + " and ".join(kinds.get(h, h) for h in hows)


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


def growth(run_dir: Path, groups: Sequence[Sequence[StorageRow]], figure: str, what: str,
           name: Callable[[StorageRow], str]) -> str:
    """One sentence on how ``figure`` moves along ``groups`` (each a point and its replicates, sorted along the
    axis), from the curve's one judgement (:func:`app.report.compute.verdict.curve`): the rise to its peak, then what
    follows."""
    c = verdict.curve(run_dir, groups, figure)
    first, last, t = groups[0][0], groups[-1][0], c.top
    top = groups[t][0]
    rise = c.rise
    if t > 0 and rise.real:
        text = (f"{what} rises {size(rise)} from {name(first)} to {name(top)} "
                f"({values(figure, c.centre(0), c.centre(t))}")
        diffs = [rise]
        j = c.reached
        if 0 < j < t:  # the last steps to the peak are not told apart from it: say how sure they are
            near = c.between(j, t)
            text += (f"), within noise of it from {name(groups[j][0])} on ({signed(near)})" if near.within else
                     f"; {name(groups[j][0])} → {name(top)}: {signed(near)}{unjudged(near, short=True)})")
        else:
            text += ")"
        after = c.after
        if after is not None:
            diffs.append(after)
            if after.real:
                text += f", then falls {size(after)} to {name(last)}"
            elif after.within:
                text += f", then flat within noise to {name(last)} ({signed(after)})"
            else:
                text += f", then {change(after)} to {name(last)}{unjudged(after)}"
        return f"{text}; {support(diffs)}."
    whole = c.whole
    shown = values(figure, c.centre(0), c.centre(len(groups) - 1))
    span = f"from {name(first)} to {name(last)}"
    if whole.real:
        verb = "falls" if (whole.ratio or 0) < 1 else "rises"
        return f"{what} {verb} {size(whole)} {span} ({shown}); {support([whole])}."
    blocking = next((d for d in (rise, whole) if not d.within), None) if t > 0 else (
        None if whole.within else whole)
    if blocking is None:
        vs = values(figure, c.centre(0), c.centre(len(groups) - 1), sep=" vs ")
        return f"{what}: flat within noise {span} ({vs}; {support([whole])})."
    return f"{what}: {change(whole)} {span} ({shown}){unjudged(blocking)}."


# --- the three trends ------------------------------------------------------------------------------------


def _families(points: Sequence[StorageRow], key: Callable[[StorageRow], K]) -> dict[K, list[StorageRow]]:
    out: dict[K, list[StorageRow]] = {}
    for p in points:
        out.setdefault(key(p), []).append(p)
    return out


def _pick(families: dict[K, list[StorageRow]], axis: Callable[[StorageRow], int],
          prefer: Callable[[list[list[StorageRow]]], int]) -> dict[str, list[list[StorageRow]]]:
    """Per access pattern, the family measured at the most values of ``axis`` (ties: ``prefer``), as one group
    per axis value: the point and all its replicates (a trend is judged on every replicate, never on one)."""
    best: dict[str, list[list[StorageRow]]] = {}
    for pts in families.values():
        line = verdict.along(pts, axis)
        if len(line) < 2:
            continue
        mix = line[0][0].mix
        if mix not in best or (len(line), prefer(line)) > (len(best[mix]), prefer(best[mix])):
            best[mix] = line
    return best


def _order(points: Sequence[StorageRow]) -> dict[str, tuple[int, int]]:
    return {p.mix: p.mix_order for p in points}


def block_size_trends(run_dir: Path, points: Sequence[StorageRow]) -> list[str]:
    """Bandwidth against block size, per access pattern at its deepest load measured over most block sizes."""
    fams = _families(points, lambda p: (p.mix, p.iodepth, p.numjobs, p.rest))
    picked = _pick(fams, lambda p: p.bs, lambda line: line[0][0].inflight)
    order = _order(points)
    out = []
    for mix in sorted(picked, key=lambda m: (order[m], m)):
        line = picked[mix]
        out.append(growth(run_dir, line, "bw", f"{md_text(mix)} bandwidth at {load(line[0][0])}",
                          lambda p: kib(p.bs)))
    return out


def queue_depth_trends(run_dir: Path, points: Sequence[StorageRow]) -> list[str]:
    """IOPS against outstanding I/Os, per access pattern at its smallest block size measured over most loads."""
    fams = _families(points, lambda p: (p.mix, p.bs, p.rest, p.numjobs))
    picked = _pick(fams, lambda p: p.inflight, lambda line: -line[0][0].bs)
    order = _order(points)
    out = []
    for mix in sorted(picked, key=lambda m: (order[m], m)):
        line = picked[mix]
        out.append(growth(run_dir, line, "iops", f"{md_text(mix)} {kib(line[0][0].bs)} IOPS", load))
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
    and settings, at the deepest load both were measured at (each with all its replicates); one sentence per
    pattern and kind."""
    by: dict[tuple[bool, int, Rest, int, int], dict[str, list[StorageRow]]] = {}
    for p in points:
        kind = _kind(p)
        if kind is not None:
            by.setdefault((p.random, p.bs, p.rest, p.inflight, p.numjobs), {}).setdefault(kind, []).append(p)
    # per (pattern, kind, settings): block size -> the pair at the deepest common load
    pairs: dict[tuple[bool, str, Rest], dict[int, tuple[list[StorageRow], list[StorageRow]]]] = {}
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
            d = verdict.judge(run_dir, read, other, "iops")
            diffs.append(d)
            where = f"{kib(bs)} {load(other[0])}"
            a = d.a if d.a is not None else read[0].iops
            b = d.b if d.b is not None else other[0].iops
            shown = values("iops", b, a, sep=" vs ")
            if d.real:
                clauses.append(f"{share(d)} at {where} ({shown})")
            elif d.within:
                clauses.append(f"no difference beyond noise at {where} ({shown})")
            else:
                clauses.append(f"{share(d)} at {where} ({shown}, not judged)")
        more = len(per_bs) - MAX_CLAUSES
        tail = f"; {more} more block size{'s' if more > 1 else ''} in the tables" if more > 0 else ""
        judged = [d for d in diffs if d.verdict != verdict.NOT_JUDGED]
        why = why_not_judged(diffs)
        ends = ([support(judged)] if judged else []) + ([unjudged(Verdict(verdict.NOT_JUDGED, None, why))
                                                         .removeprefix(", ")] if why else [])
        out.append(f"{pattern} {kind}{'s' if kind == 'write' else ''} as a share of {pattern} reads' IOPS: "
                   + "; ".join(clauses) + f"{tail}; {'; '.join(ends)}.")
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
           "Each sentence compares measured points (each with all its replicates, or, measured once, its "
           "batch-means interval within this run) and gives the effect. A difference is called real when the "
           "interval of the difference excludes zero at a 5 % false-alarm rate (per curve, shared among its "
           "comparisons); \"flat\" or \"no difference beyond noise\" only when the test had at least 80 % "
           "power to see a 10 % difference; otherwise the sentence says \"not judged\" and why.", ""]
    for title, lines in parts:
        out += [f"- **{title}**: {s}" for s in lines]
    out.append("")
    return out
