"""The open-loop view: latency against offered load, and the queueing formulas tested against it.

An open-loop point (``rate`` set) offers Poisson arrivals at λ whatever the device has finished; only the points
whose loop stayed open (the line's ``open_loop.valid``: app.plan.openloop) are used as open-loop figures, the others
are listed as flagged and left out of every figure below.  For each workload:

* S, the service time, is the mean latency of the same workload's closed-loop point at one I/O in flight (QD1,
  one job); X_max the highest IOPS of its closed-loop points (else the X_max the preset gave); ρ = λ / X_max;
  N* = S · X_max, the closed loop's crossing point, is the c of M/M/c.
* The utilization law, U = X · S, beside ρ and the device's own busy share (its block counters' busy time over
  the point's window): U above 1 means the device serves I/Os in parallel, and the busy share, which counts any
  time with an I/O in flight, then says nothing of how full it is.
* Mean response time against the M/M/1 prediction S / (1 − ρ), M/D/1 S · (1 + ρ / (2 (1 − ρ))) and M/M/c (Erlang
  C, c = N* rounded, each server S); a model is applied only below ρ = 1 (no steady state above) and only where S
  was measured.  A model *fits* when every valid point's measured mean R is within :data:`FIT_TOLERANCE` of it;
  judged only with at least :data:`MIN_POINTS` valid points below ρ = 1.
* The seed formula L_queue = ρ² / (1 − ρ) (M/M/1's mean queue) beside the queue Little's law measures,
  L_queue = λ · R − ρ (I/Os in the system less those in service).
* The knee, where mean R first reaches 2 S, bracketed by the valid points either side; a bracket is stated only
  when each side's 95 % interval of mean latency lies on its side of 2 S.
* The highest offered load whose p99 meets the report's bound: the last valid point, in λ order, that meets it
  below the first that does not (the answer lies between them), a p99 used only where the point's I/Os support it
  (app.model.tails); beside it the closed loop's highest IOPS meeting the same bound.
Nothing here draws; :func:`section` gives the report's lines.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Mapping, Sequence

from app.core.sanitize import md_text
from app.core.textable import markdown_table
from app.core.units import format_size, us
from app.model.records import number
from app.model.tails import min_ios, supported
from app.report.compute import intervals
from app.report.data.model import StorageRow
from app.report.sections.tails import ios_of, tail_value

FIT_TOLERANCE = 0.25  # a model fits when every valid point's mean R is within 25 % of it
MIN_POINTS = 3  # valid points below ρ = 1 a model's fit is judged on
KNEE_FACTOR = 2.0  # the knee: mean R reaches twice S
SEED_TOLERANCE = 0.25  # the seed's L_queue "holds" at a point within 25 % (or 0.05 I/Os) of the measured queue
SEED_FLOOR = 0.05
SATURATED_SHARE = 0.05  # a point offered more than 5 % above what it achieved ran at the server's rate
SLOW_SHARE = 0.25  # a saturated rate this far below X_max is not the device's capacity
MODELS = ("M/M/1", "M/D/1", "M/M/c")


def is_open_row(row: StorageRow) -> bool:
    """A row of an open-loop point (its ``rate`` set)."""
    return row.point.get("rate") is not None


def loop_of(row: StorageRow) -> Mapping[str, object]:
    part = row.line.parts.open_loop
    return part if isinstance(part, Mapping) else {}


def _key(row: StorageRow) -> tuple[object, ...]:
    return (row.mix, row.bs, tuple(kv for kv in row.rest if kv[0] != "xmax"))


def mm1(s: float, rho: float) -> float:
    return s / (1 - rho)


def md1(s: float, rho: float) -> float:
    return s * (1 + rho / (2 * (1 - rho)))


def erlang_c(c: int, a: float) -> float:
    """The probability an arrival waits in M/M/c with ``a`` = λ·S Erlangs offered (a < c), by Erlang B's recursion."""
    b = 1.0
    for k in range(1, c + 1):
        b = a * b / (k + a * b)
    return c * b / (c - a * (1 - b))


def mmc(s: float, lam: float, c: int) -> float | None:
    """M/M/c's mean response time (ns), ``lam`` per ns; None at or above c servers' capacity."""
    a = lam * s
    if a >= c:
        return None
    return s + erlang_c(c, a) * s / (c - a)


@dataclass
class OpenPoint:
    row: StorageRow
    offered: float  # λ, IOPS
    achieved: float  # X, IOPS
    rho: float | None  # λ / X_max
    valid: bool
    why: str | None  # closed_because
    r_mean: float  # ns
    r_iv: tuple[float, float] | None  # 95 % interval of mean latency, ns
    p99: float | None  # ns, only where supported
    p99_why: str | None
    busy: float | None  # the device's busy share over the window
    models: dict[str, float | None] = field(default_factory=dict)  # ns
    lateness_s: float | None = None  # the bound on how late fio issued against its schedule (a valid point's)

    @property
    def l_measured(self) -> float | None:
        """Little's law: I/Os waiting, λ · R − ρ (the point's achieved rate)."""
        return self.achieved * self.r_mean * 1e-9 - self.rho if self.rho is not None else None

    @property
    def l_seed(self) -> float | None:
        return self.rho ** 2 / (1 - self.rho) if self.rho is not None and self.rho < 1 else None


@dataclass
class OpenCurve:
    label: str
    points: list[OpenPoint]  # in λ order
    s: float | None  # ns
    xmax: float | None
    xmax_from: str  # "measured" (closed-loop points) or "given"
    c: int | None  # N* rounded
    n_star: float | None
    closed: list[StorageRow]

    @property
    def valid(self) -> list[OpenPoint]:
        return [p for p in self.points if p.valid]

    @property
    def modelled(self) -> list[OpenPoint]:
        return [p for p in self.valid if p.rho is not None and p.rho < 1]

    @property
    def saturated(self) -> list[OpenPoint]:
        """Flagged points offered clearly more than they achieved (by SATURATED_SHARE): the server's rate capped
        them.  A valid point kept up with its offered rate second by second, whatever its whole-point mean."""
        return [p for p in self.points
                if not p.valid and p.achieved > 0 and p.offered > p.achieved * (1 + SATURATED_SHARE)]

    @property
    def service_rate(self) -> float | None:
        """The open loop's own estimate of the service rate: the median achieved rate of the saturated points."""
        got = sorted(p.achieved for p in self.saturated)
        return (got[(len(got) - 1) // 2] + got[len(got) // 2]) / 2 if got else None


def _busy(row: StorageRow) -> float | None:
    d = row.line.parts.device
    if not isinstance(d, Mapping):
        return None
    busy, window = number(d.get("busy_ms")), number(d.get("window_s"))
    return busy / (window * 1000) if busy is not None and window else None


def _p99(row: StorageRow, inflight: float) -> tuple[float | None, str | None]:
    n = max(1, math.ceil(inflight))
    if not supported(99.0, ios_of(row), n):
        return None, f"not supported: fewer than {min_ios(99.0, n):,} I/Os"
    v = tail_value(row, "p99", 99.0)
    return v, None if v is not None else "not recorded"


def open_curves(rows: Sequence[StorageRow], closed: Sequence[StorageRow],
                run_dir: Path | None = None) -> list[OpenCurve]:
    """The open-loop rows by workload (first-seen order), each with its closed-loop S, X_max and N*."""
    groups: dict[tuple[object, ...], list[StorageRow]] = {}
    for r in rows:
        groups.setdefault(_key(r), []).append(r)
    out = []
    for key, group in groups.items():
        same = [r for r in closed if _key(r) == key]
        qd1 = [r for r in same if r.inflight == 1 and r.lat_mean > 0]
        s = sum(r.lat_mean for r in qd1) / len(qd1) if qd1 else None
        xmax = max((r.iops for r in same), default=0.0) or None
        xfrom = "measured"
        if xmax is None:
            given = [number(loop_of(r).get("xmax_iops")) for r in group]
            xmax, xfrom = max((g for g in given if g), default=None), "given"
        n_star = s * 1e-9 * xmax if s is not None and xmax is not None else None
        c = max(1, round(n_star)) if n_star is not None else None
        pts = []
        for r in group:
            loop = loop_of(r)
            offered = number(loop.get("offered_iops")) or 0.0
            achieved = r.iops
            rho = offered / xmax if xmax else None
            valid = loop.get("valid") is True
            why = loop.get("closed_because")
            p99, p99_why = _p99(r, achieved * r.lat_mean * 1e-9)
            iv = intervals.storage_intervals(run_dir, r).get("lat_mean_ns")
            p = OpenPoint(r, offered, achieved, rho, valid, why if isinstance(why, str) else None, r.lat_mean,
                          iv, p99, p99_why, _busy(r), lateness_s=number(loop.get("lateness_bound_s")))
            if valid and s is not None and rho is not None and rho < 1:
                p.models = {"M/M/1": mm1(s, rho), "M/D/1": md1(s, rho),
                            "M/M/c": mmc(s, offered * 1e-9, c) if c is not None else None}
            pts.append(p)
        pts.sort(key=lambda p: p.offered)
        label = f"{group[0].mix} {format_size(group[0].bs)}"
        out.append(OpenCurve(label, pts, s, xmax, xfrom, c, n_star, same))
    return out


# --- judgements -------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Fit:
    model: str
    residuals: tuple[float, ...]  # (measured − model) / model, per modelled point
    fits: bool | None  # None: not judged

    @property
    def worst(self) -> float:
        return max((abs(r) for r in self.residuals), default=0.0)


def fits(curve: OpenCurve) -> list[Fit]:
    out = []
    for name in MODELS:
        res = tuple((p.r_mean - m) / m for p in curve.modelled if (m := p.models.get(name)) is not None and m > 0)
        judged = len(res) >= MIN_POINTS
        out.append(Fit(name, res, all(abs(r) <= FIT_TOLERANCE for r in res) if judged else None))
    return out


@dataclass(frozen=True)
class Bracket:
    low: OpenPoint | None  # the last valid point on the good side
    high: OpenPoint | None  # the first valid point past it
    judged: bool
    why: str = ""


def knee(curve: OpenCurve) -> Bracket | None:
    """Where mean R first reaches KNEE_FACTOR · S among the valid points (None without S)."""
    if curve.s is None:
        return None
    line = KNEE_FACTOR * curve.s
    valid = curve.valid
    for i, p in enumerate(valid):
        if p.r_mean >= line:
            low = valid[i - 1] if i else None
            above_ok = p.r_iv is not None and p.r_iv[0] >= line
            below_ok = low is None or (low.r_iv is not None and low.r_iv[1] < line)
            why = "" if above_ok and below_ok else ("a 95 % interval of mean R at the bracket's ends reaches 2 S, or "
                                                    "is not recorded")
            return Bracket(low, p, above_ok and below_ok, why)
    return Bracket(valid[-1] if valid else None, None, bool(valid), "" if valid else "no valid point")


def bounded(curve: OpenCurve, bound_ns: float) -> Bracket:
    """The highest offered load whose p99 meets ``bound_ns``: the last valid point meeting it before the first
    that does not (p99s only where supported)."""
    last = None
    for p in curve.valid:
        if p.p99 is None:
            continue
        if p.p99 > bound_ns:
            return Bracket(last, p, last is not None, "" if last is not None else "the lightest load already misses it")
        last = p
    return Bracket(last, None, last is not None, "" if last is not None else "no valid point with a supported p99")


def closed_bounded(curve: OpenCurve, bound_ns: float) -> StorageRow | None:
    """The closed-loop point of the workload with the most IOPS whose supported p99 meets ``bound_ns``."""
    ok = []
    for r in curve.closed:
        p99, _ = _p99(r, r.inflight)
        if p99 is not None and p99 <= bound_ns:
            ok.append(r)
    return max(ok, key=lambda r: r.iops, default=None)


# --- text --------------------------------------------------------------------------------------------------


def _iops(x: float | None) -> str:
    return "n/a" if x is None else f"{x:,.0f}"


def _rho(p: OpenPoint | None) -> str:
    return "n/a" if p is None or p.rho is None else f"{p.rho:.2f}"


def _model_cell(p: OpenPoint, name: str) -> str:
    m = p.models.get(name)
    if m is None:
        return "—"
    r = (p.r_mean - m) / m
    return f"{us(m)} ({0.0 if abs(r) < 0.005 else r:+.0%})"


INTRO = ("An open loop offers requests at a rate of their own (Poisson arrivals at λ) whether or not the device has "
         "finished the last ones; the closed loops above keep N I/Os outstanding and issue the next only when one "
         "completes, so their queue can never grow past N. Only the points whose loop stayed open are used below "
         "(achieved rate equal to the offered one within its interval in every second, the in-flight count below "
         "the iodepth cap); a flagged point's latency, timed from issue rather than from arrival, would understate "
         "the waiting (docs/report.md, \"Open loop\"). ρ = λ / X_max; S is the mean latency at QD1 of the same "
         "workload, measured closed-loop.")


def curve_text(c: OpenCurve, bound_ns: float) -> list[str]:
    out = [f"#### {c.label}", ""]
    source = "the highest of the closed-loop points" if c.xmax_from == "measured" else "as the preset gave it"
    xmax = f"X_max {_iops(c.xmax)} IOPS ({source})" if c.xmax is not None else "no X_max"
    s = (f"S = {us(c.s)} µs (closed loop, QD1)" if c.s is not None
         else "S not measured (no closed-loop QD1 point of this workload): no model is applied")
    nstar = f", N* = S · X_max = {c.n_star:.2f} (M/M/c's c = {c.c})" if c.n_star is not None else ""
    mu = c.service_rate
    got = sorted(p.achieved for p in c.saturated)
    spread = f", from {_iops(got[0])} to {_iops(got[-1])} IOPS" if len(got) > 1 else ""
    rate = (f"Service rate where the open loop saturated: {_iops(mu)} IOPS (the median achieved by the "
            f"{len(c.saturated)} point{'s' if len(c.saturated) != 1 else ''} offered more than "
            f"{1 + SATURATED_SHARE:.2f}× what they achieved{spread})" if mu is not None
            else "No point offered more than the device achieved: the open loop never saturated")
    if mu and c.xmax:
        rate += f", {mu / c.xmax:.0%} of X_max"
        if mu < (1 - SLOW_SHARE) * c.xmax:
            rate += (f"; more than {SLOW_SHARE:.0%} below the X_max the closed loop measured, so the device (or the "
                     "host serving it) ran slower during these points than during the closed loop's best, or the "
                     "generator could not issue faster: it is not the device's capacity")
    out += [f"{xmax}; {s}{nstar}.", "", rate + ".", ""]
    rows = []
    for p in c.points:
        util = f"{p.achieved * (c.s or 0) * 1e-9:.2f}" if c.s is not None else "n/a"
        busy = f"{p.busy:.0%}" if p.busy is not None else "n/a"
        rows.append([_rho(p), _iops(p.offered), _iops(p.achieved), "yes" if p.valid else "closed-by-generator",
                     util, busy, us(p.r_mean), us(p.p99) if p.p99 is not None else (p.p99_why or "n/a"),
                     *[_model_cell(p, m) if p.valid else "—" for m in MODELS]])
    out.append(markdown_table(["ρ", "λ offered", "X achieved", "open", "U = X·S", "device busy", "mean R µs",
                               "p99 µs", "M/M/1 µs (resid.)", "M/D/1 µs (resid.)", "M/M/c µs (resid.)"], rows))
    out.append("")
    flagged = [p for p in c.points if not p.valid]
    if flagged:
        out += ["Flagged, not used as open-loop figures: " + "; ".join(
            f"ρ {_rho(p)} ({md_text(p.why or 'the loop did not stay open')})" for p in flagged) + ".", ""]
    out += _lateness(c)
    out += _utilization(c) + _fit_text(c) + _seed_text(c) + _knee_text(c) + _bound_text(c, bound_ns)
    return out


def _lateness(c: OpenCurve) -> list[str]:
    """How late the generator issued, as far as it can be known: fio records no scheduled time per I/O (and its
    per-I/O log stamps whole milliseconds), so a valid point's lateness is bounded by its validity check."""
    bounded = [p for p in c.valid if p.lateness_s is not None]
    if not bounded:
        return []
    shown = "; ".join(f"ρ {_rho(p)}: {p.lateness_s:.3f} s" for p in bounded)
    return [f"How late the generator issued: not measured per I/O (fio records no scheduled time, and its per-I/O "
            "log stamps whole milliseconds), but bounded — a valid point's achieved I/Os stayed within their Poisson "
            f"interval of the offered ones in every checked second, so no I/O was issued more than this behind its "
            f"schedule ({shown}).", ""]


def _utilization(c: OpenCurve) -> list[str]:
    valid = c.valid
    if c.s is None or not valid:
        return ["Utilization law: not checked (no S, or no valid point).", ""]
    top = max(valid, key=lambda p: p.achieved)
    u = top.achieved * c.s * 1e-9
    busy = f", the device's counters {top.busy:.0%} busy" if top.busy is not None else ", no device counters"
    if c.n_star is not None and c.n_star > 1.2:
        why = (f"U = X · S is the mean number of I/Os in service, not a share: with N* = {c.n_star:.2f} the device "
               "serves several at once, and its busy share (any time with an I/O in flight) reads high long before "
               "it is full.")
    else:
        why = ("with N* near 1 the device serves about one I/O at a time, so U = X · S should track ρ and the busy "
               "share; where it does not, S at QD1 is not the service time under load.")
    return [f"Utilization law at the highest valid load (ρ {_rho(top)}): U = X · S = {u:.2f} against ρ = "
            f"{_rho(top)}{busy}; {why}", ""]


def _fit_text(c: OpenCurve) -> list[str]:
    if c.s is None:
        return []
    parts = []
    for f in fits(c):
        if f.fits is None:
            parts.append(f"{f.model} not judged: too few valid points below ρ = 1 ({len(f.residuals)}, where it "
                         f"needs {MIN_POINTS})")
        elif f.fits:
            parts.append(f"{f.model} fits (every residual within {FIT_TOLERANCE:.0%}; worst {f.worst:.0%})")
        else:
            parts.append(f"{f.model} does not fit (worst residual {f.worst:.0%}, beyond {FIT_TOLERANCE:.0%})")
    return ["Models (mean R, valid points below ρ = 1 only; none is applied at or above ρ = 1, where no queue is "
            "steady): " + "; ".join(parts) + ".", ""]


def _seed_text(c: OpenCurve) -> list[str]:
    rows: list[list[str]] = []
    holds: list[str] = []
    more: list[str] = []  # the measured queue longer than the formula's
    less: list[str] = []
    for p in c.points:
        seed, got = p.l_seed, p.l_measured
        if seed is None or got is None:
            continue
        if not p.valid:  # printed for every ρ, judged on the open points only
            rows.append([_rho(p), f"{seed:.3f}", f"{got:.3f}", "not judged: closed-by-generator"])
            continue
        ok = abs(got - seed) <= max(SEED_TOLERANCE * seed, SEED_FLOOR)
        (holds if ok else more if got > seed else less).append(_rho(p))
        rows.append([_rho(p), f"{seed:.3f}", f"{got:.3f}", "holds" if ok else "fails"])
    if not rows:
        return []
    out = ["The seed formula L_queue = ρ² / (1 − ρ) (M/M/1's mean queue) beside the queue Little's law measures, "
           "L_queue = λ · R − ρ:", "", markdown_table(["ρ", "ρ²/(1−ρ)", "λ·R − ρ", "verdict"], rows, right=(1, 2)), ""]
    fails = more + less
    sentence = (f"It holds (within {SEED_TOLERANCE:.0%} or {SEED_FLOOR} I/Os) at ρ {', '.join(holds) or 'none'} and "
                f"fails at ρ {', '.join(fails) or 'none'}: it assumes one server with exponential service times and "
                "S = 1 / X_max.")
    if less:
        sentence += (f" Where the measured queue is shorter (ρ {', '.join(less)}), the device serves several I/Os at "
                     "once or at a steadier pace, or a rate limiter lets bursts through until it is full.")
    if more:
        sentence += (f" Where it is longer (ρ {', '.join(more)}), requests wait more than Poisson arrivals at one "
                     "exponential server would: service slower under load than S, or completions in bursts (a "
                     "virtual machine descheduled, a device pausing).")
    if not holds and not fails:
        sentence = "No open point below ρ = 1 to judge it by."
    return out + [sentence + " It is undefined at ρ ≥ 1.", ""]


def _knee_text(c: OpenCurve) -> list[str]:
    k = knee(c)
    if k is None:
        return []
    if k.high is None and k.low is None:
        return ["Open-loop knee (mean R = 2 S): not judged — no valid point.", ""]
    if k.high is None:
        return [f"Open-loop knee (mean R = 2 S): not reached by the valid points (up to ρ {_rho(k.low)}).", ""]
    if k.low is None:  # the lightest valid load already reaches 2 S: no valid point below the knee to name
        where = f"at or below ρ {_rho(k.high)}, the lightest valid load (λ {_iops(k.high.offered)} IOPS)"
        if not k.judged:
            return [f"Open-loop knee (mean R = 2 S): not judged — {k.why} ({where}).", ""]
        return [f"Open-loop knee (mean R = 2 S = {us(KNEE_FACTOR * (c.s or 0))} µs): {where}, whose 95 % interval "
                "of mean R lies above 2 S.", ""]
    if not k.judged:
        return [f"Open-loop knee (mean R = 2 S): not judged — {k.why} (between ρ {_rho(k.low)} and "
                f"{_rho(k.high)}).", ""]
    return [f"Open-loop knee (mean R = 2 S = {us(KNEE_FACTOR * (c.s or 0))} µs): between ρ {_rho(k.low)} and "
            f"{_rho(k.high)} (λ {_iops(k.low.offered)} to {_iops(k.high.offered)} IOPS), each side's "
            "95 % interval of mean R on its side.", ""]


def _bound_text(c: OpenCurve, bound_ns: float) -> list[str]:
    b = bounded(c, bound_ns)
    shown = f"p99 ≤ {us(bound_ns, 0)} µs"
    if b.low is None:
        text = f"Highest offered load meeting {shown}: none stated — {b.why}."
    elif b.high is None:
        text = (f"Highest offered load meeting {shown}: at least {_iops(b.low.offered)} IOPS (ρ {_rho(b.low)}, p99 "
                f"{us(b.low.p99)} µs); no higher valid load was measured, so the limit is above it.")
    else:
        text = (f"Highest offered load meeting {shown}: between {_iops(b.low.offered)} IOPS (ρ {_rho(b.low)}, p99 "
                f"{us(b.low.p99)} µs) and {_iops(b.high.offered)} IOPS (ρ {_rho(b.high)}, p99 {us(b.high.p99)} µs), "
                "the measured loads either side of the bound.")
    closed = closed_bounded(c, bound_ns)
    if closed is None:
        closed_text = "The closed loop: no point of this workload meets it with a supported p99."
    else:
        closed_text = (f"The closed loop meets it at {_iops(closed.iops)} IOPS (QD{closed.iodepth}"
                       f"{'×' + str(closed.numjobs) if closed.numjobs > 1 else ''}, p99 {us(closed.p99)} µs): a "
                       "closed loop never lets more than N I/Os wait, so its bounded rate is what N clients that wait "
                       "for each answer get; independent clients arrive in bursts that queue, and the open-loop figure "
                       "is the one to promise them.")
    return [text + " " + closed_text, ""]


def section(rows: Sequence[StorageRow], closed: Sequence[StorageRow], bound_ns: float,
            run_dir: Path | None = None) -> list[str]:
    """The report's open-loop section (nothing without open-loop rows)."""
    if not rows:
        return []
    out = ["### Open loop: latency against offered load", "", INTRO, ""]
    for c in open_curves(rows, closed, run_dir):
        out += curve_text(c, bound_ns)
    return out
