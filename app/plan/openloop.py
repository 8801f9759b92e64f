"""Open-loop points: a load offered at its own rate (Poisson arrivals), and the proof that the loop stayed open.

A point with ``rate`` runs fio with ``rate_iops`` (each job offers its share of λ) and ``rate_process=poisson``:
I/Os are due at exponentially spaced times whatever the device has finished, up to ``iodepth`` in flight.  The
loop is open only while fio keeps that schedule.  Two things close it, and either makes the point's latency an
understatement of the waiting an open system sees (coordinated omission: a late request's wait before issue is
not in fio's latency):

* the generator fell behind: fewer I/Os were done in some second than were due (beyond what Poisson arrivals
  vary by: a one-sided bound at a 0.1 % family-wise error over the point's seconds, so that a sweep of
  a dozen points is rarely flagged wrongly; fio's last second, in which it
  stops issuing, is left out), or over the whole point;
* the in-flight count reached the ``iodepth`` cap, where fio waits for a free slot before it issues the next.
  fio counts in-flight depths at submission in power-of-two levels (1, 2, 4 … 32, >=64): the level holding the
  cap is taken as reaching it (exact for a power-of-two cap up to 64; above 64, ">=64" cannot be told from the
  cap and counts as reached).

Either way the point is ``closed-by-generator`` (:data:`CLOSED`): recorded, shown, never used as an open-loop
figure.  The per-second check also bounds how late fio issued: at a second's end no more than the shortfall it
allows was still to issue, so no I/O was issued later than ``lateness_bound_s`` behind its schedule (a bound
from counts; fio logs no scheduled time per I/O, and its per-I/O logs stamp completions in whole milliseconds).
"""

from __future__ import annotations

import math
from statistics import NormalDist
from typing import Mapping, Sequence

from app.model.points import StoragePoint

CLOSED = "closed-by-generator"
FAMILY_ALPHA = 0.001  # the per-second checks together flag a point that kept its schedule this rarely
MIN_SECOND_SHARE = 0.5  # a sample spanning less than half a second (fio's last part-second) is not checked
MAX_SECONDS_KEPT = 600  # the achieved rate of at most this many seconds is kept in the line
DEPTH_LEVELS = (1, 2, 4, 8, 16, 32, 64)  # fio's iodepth_level keys: "1" … "32", ">=64"


def per_job_rates(point: StoragePoint, offered_iops: float) -> tuple[int, ...]:
    """fio's ``rate_iops`` of each job: the offered λ shared between ``numjobs`` jobs (whole I/Os per second, at
    least 1), a mix split by ``rwmixread`` into read and write rates."""
    per_job = max(1, round(offered_iops / point.numjobs))
    if point.rw in ("rw", "randrw"):
        mix = (point.rwmixread if point.rwmixread is not None else 50) / 100
        return (max(1, round(per_job * mix)) if mix > 0 else 0, max(1, round(per_job * (1 - mix))) if mix < 1 else 0)
    return (per_job,)


def offered_of(point: StoragePoint, offered_iops: float) -> int:
    """The λ the jobs offer together, as fio is told it (the per-job rates summed over the jobs)."""
    return sum(per_job_rates(point, offered_iops)) * point.numjobs


def rate_options(point: StoragePoint, offered_iops: float) -> list[tuple[str, object]]:
    """The job options of an open-loop point: its per-job rate, Poisson arrivals."""
    rates = per_job_rates(point, offered_iops)
    return [("rate_iops", ",".join(str(r) for r in rates)), ("rate_process", "poisson")]


def depth_level(iodepth: int) -> int:
    """fio's iodepth_level that holds a depth of ``iodepth`` (the highest level at or below it)."""
    return max(level for level in DEPTH_LEVELS if level <= max(1, iodepth))


def _level_key(level: int) -> str:
    return ">=64" if level == 64 else str(level)


def depth_levels(job: Mapping[str, object]) -> dict[str, float]:
    """fio's iodepth_level of a job (percent of submissions at each in-flight level), numbers only."""
    raw = job.get("iodepth_level")
    out: dict[str, float] = {}
    if isinstance(raw, Mapping):
        for level in DEPTH_LEVELS:
            v = raw.get(_level_key(level))
            if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v):
                out[_level_key(level)] = float(v)
    return out


def cap_share(levels: Mapping[str, float], iodepth: int) -> float | None:
    """Percent of submissions made with the in-flight count at the cap's level or above (None: fio gave none)."""
    if not levels:
        return None
    cap = depth_level(iodepth)
    return sum(v for level in DEPTH_LEVELS if level >= cap and (v := levels.get(_level_key(level))) is not None)


def family_z(checks: int) -> float:
    """The one-sided normal quantile that keeps ``checks`` checks together at FAMILY_ALPHA (Bonferroni)."""
    return NormalDist().inv_cdf(1 - FAMILY_ALPHA / max(1, checks))


def open_loop_part(point: StoragePoint, load: Mapping[str, object], samples: Sequence[Mapping[str, object]],
                   jobs: Sequence[Mapping[str, object]], achieved_iops: float | None,
                   measured_s: float | None) -> dict[str, object]:
    """The results line's ``open_loop`` part: the load offered (``load``: app.plan.procedure.OfferedLoad.to_dict), what
    was achieved per second and over the point, fio's in-flight levels, and whether the loop stayed open
    (``valid``; else ``flag`` is :data:`CLOSED` and ``closed_because`` says why)."""
    asked = load.get("offered_iops")
    asked_iops = float(asked) if isinstance(asked, (int, float)) else 0.0
    offered = float(offered_of(point, asked_iops))
    seconds = [(dt, iops) for s in samples if not s.get("ramp")
               and isinstance(dt := s.get("interval_s"), (int, float))
               and isinstance(iops := s.get("iops"), (int, float)) and dt >= MIN_SECOND_SHARE]
    # fio's last second holds the job's end (it stops issuing inside it): not held to the schedule
    seconds = seconds[:-1] if len(seconds) > 1 else seconds
    z = family_z(len(seconds) + 1)
    why: list[str] = []
    short = []
    for i, (dt, iops) in enumerate(seconds):
        due = offered * dt
        if iops * dt < due - z * math.sqrt(due):
            short.append(i + 1)
    if short:
        why.append(f"fewer I/Os than offered in {len(short)} of {len(seconds)} seconds (first: second {short[0]})")
    if achieved_iops is not None and measured_s:
        due = offered * measured_s
        if achieved_iops * measured_s < due - z * math.sqrt(due):
            why.append(f"{achieved_iops:.0f} IOPS achieved over the point, below the {offered:.0f} offered")
    levels: dict[str, float] = {}
    for job in jobs:
        for k, v in depth_levels(job).items():
            levels[k] = levels.get(k, 0.0) + v / max(1, len(jobs))
    at_cap = cap_share(levels, point.iodepth)
    if at_cap is not None and at_cap > 0:
        level = depth_level(point.iodepth)
        where = (f"{level} or more (fio's top level; the cap is {point.iodepth})" if level == 64 and point.iodepth > 64
                 else f"the level of the iodepth cap {point.iodepth}")
        why.append(f"I/Os in flight reached {where} at {at_cap:.3g} % of submissions")
    part: dict[str, object] = dict(load)
    part["offered_iops"] = offered
    part["per_job_rate_iops"] = list(per_job_rates(point, asked_iops))
    part["arrivals"] = "poisson"
    part["achieved_iops"] = achieved_iops
    part["achieved_per_s"] = [round(iops, 1) for _, iops in seconds[:MAX_SECONDS_KEPT]]
    part["seconds_checked"] = len(seconds)
    part["z"] = round(z, 3)
    part["iodepth_cap"] = point.iodepth
    part["iodepth_level"] = {k: round(v, 4) for k, v in levels.items()}
    # at a second's end at most z·√(λ·1 s) I/Os were still to issue: none waited longer than that many arrivals
    part["lateness_bound_s"] = round(z * math.sqrt(offered) / offered, 6) if offered > 0 and not why else None
    part["valid"] = not why
    if why:
        part["flag"] = CLOSED
        part["closed_because"] = "; ".join(why)
    return part


def is_open(part: object) -> bool:
    """The line's open_loop part says the loop stayed open (a line without one is no open-loop point)."""
    return isinstance(part, Mapping) and part.get("valid") is True
