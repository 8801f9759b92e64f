"""Stop a storage point at a precision: once the 95 % interval of its mean IOPS is within ±p % of the mean.

A point with ``precision = "2%"`` runs until the batch-means interval (:mod:`app.stats.uncertainty`) of the mean of
its measured IOPS samples (fio's status dumps at most 250 ms apart, app.runners.fio) has a half-width of at most
2 % of that mean, with ``runtime`` as the cap.  IOPS
is the figure for every workload: at a fixed queue depth mean latency is depth / IOPS (Little's law), so the
relative precision of mean IOPS is that of mean latency too.

The minimum: :data:`MIN_SECONDS` measured seconds (after ``ramp_time``), and the interval must exist
(MSER-5 and the batch-size rule may still find too few uncorrelated batches), and the series must have no
level shift (:func:`app.stats.finesamples.fine_shift`).  Checked at every sample after the
minimum; a long point is checked every ``n / CHECKS_PER_SPAN`` samples, and a series longer than
:data:`MAX_CHECK_SAMPLES` is averaged in groups first, so a check costs about the same at any length.

With ``steady`` too, both must hold.  fio ends a job itself the moment its steady-state criterion holds, so
such a point is never stopped for precision before that: it ends on steady state (``stop`` ``precise`` when the
precision was reached by then, ``steady`` when not) or at the cap (``runtime``).  A point whose precision was
not reached, whatever ended it, is flagged ``imprecise`` (app.stats.validity).
"""

from __future__ import annotations

import math
from array import array
from dataclasses import dataclass, field
from typing import Mapping, Sequence

from app.model.records import number
from app.stats.finesamples import fine_interval, fine_shift
from app.stats.uncertainty import LEVEL, Interval

MIN_SECONDS = 10  # whole measured seconds before the first check
FIGURE = "iops"
CHECKS_PER_SPAN = 60  # past 60 samples a check every n/60 s: the overshoot stays within about 2 % of the time
MAX_CHECK_SAMPLES = 2400  # a longer series is averaged in groups to at most this many values per check
STOPS = ("precise", "runtime", "steady")


def target_percent(text: str) -> float:
    """The percentage of a ``precision`` value as the key's parser writes it ("2%" → 2.0)."""
    return float(text.rstrip("%"))


def _grouped(values: Sequence[float]) -> list[float]:
    """``values`` averaged in groups of consecutive samples (the earliest remainder left out) so that at most
    MAX_CHECK_SAMPLES remain: the mean is the same, and batch means of group means are batch means of the
    samples with a larger smallest batch."""
    g = math.ceil(len(values) / MAX_CHECK_SAMPLES)
    if g <= 1:
        return list(values)
    start = len(values) % g
    return [math.fsum(values[i:i + g]) / g for i in range(start, len(values), g)]


def reached_percent(iops: Sequence[float]) -> float | None:
    """The half-width of the 95 % batch-means interval of mean IOPS in percent of that mean; None when there is
    no interval, the mean is not above 0, or the series has a level shift (its interval would be of one level,
    MSER-5 having cut the other as warm-up: the point runs on to its cap and is flagged)."""
    values = _grouped(iops)
    if fine_shift(values) is not None:
        return None
    got = fine_interval(values, LEVEL)
    if not isinstance(got, Interval) or not got.mean > 0:
        return None
    return 100 * (got.high - got.low) / 2 / got.mean


@dataclass(frozen=True)
class Decision:
    stop: bool
    reached_pct: float | None  # None: no check was made, or no interval yet


def decide(iops: Sequence[float], target_pct: float, steady_held: bool = True) -> Decision:
    """Whether a point whose measured whole-second IOPS are ``iops`` may stop now: at least MIN_SECONDS of them,
    an interval, its half-width within ``target_pct`` % of the mean, and (with ``steady``) fio's criterion held."""
    if len(iops) < MIN_SECONDS:
        return Decision(False, None)
    reached = reached_percent(iops)
    return Decision(reached is not None and reached <= target_pct and steady_held, reached)


def due(n: int, last_checked: int) -> bool:
    """A check is due at ``n`` samples when the minimum is reached and enough came since the last check."""
    return n >= MIN_SECONDS and n - last_checked >= max(1, n // CHECKS_PER_SPAN)


@dataclass
class PrecisionWatch:
    """The live check of one point: fed each sample as it comes, says when the point may stop."""

    target_pct: float
    steady: bool = False  # the point has a steady criterion: fio's steady state must have held too
    # 8 bytes a second (a 7-day cap: 5 MB); a check reads them all, grouped (_grouped)
    iops: array[float] = field(default_factory=lambda: array("d"))
    reached_pct: float | None = None
    checked: int = 0  # samples at the last check
    stopped: bool = False  # the point was told to stop for precision

    measured_s: float = 0.0  # seconds the samples span (feed_fine)

    def feed(self, iops: Sequence[float], measured_s: float, measuring: bool = True,
                  steady: object = None) -> bool:
        """Take the point's sub-second IOPS samples so far (``iops``, spanning ``measured_s`` seconds after
        ``ramp_time``); True when the point should stop now.  ``steady``: fio's steady-state progress of the
        last dump (app.runners.fio_parse.steady_progress)."""
        if not measuring or self.stopped:
            return False
        self.measured_s = measured_s
        n = len(iops)
        if measured_s < MIN_SECONDS or not due(n, self.checked):
            return False
        self.iops = iops if isinstance(iops, array) else array("d", iops)  # the runner's own series: kept to the end
        self.checked = n
        held = not self.steady or (isinstance(steady, Mapping) and steady.get("attained") is True)
        got = decide(self.iops, self.target_pct, held)
        self.reached_pct = got.reached_pct
        self.stopped = got.stop
        if got.stop:  # the series the precision was reached on: fio's dumps until it ends do not count
            self.iops = array("d", self.iops)
        return got.stop


def precision_part(watch: PrecisionWatch, after_s: float | None, steady_attained: bool | None) -> dict[str, object]:
    """The results line's ``precision``: the precision asked and reached (over every measured second), the
    figure, what ended the point (``precise``: stopped at the precision, or fio's steady state ended it with the
    precision reached; ``steady``: fio's steady state ended it first; ``runtime``: the cap) and the measured
    seconds then."""
    reached = reached_percent(watch.iops) if len(watch.iops) >= MIN_SECONDS else None
    met = reached is not None and reached <= watch.target_pct
    if watch.stopped or (steady_attained and met):
        stop = "precise"
    else:
        stop = "steady" if steady_attained else "runtime"
    return {"target_pct": watch.target_pct, "reached_pct": round(reached, 3) if reached is not None else None,
            "figure": FIGURE, "stop": stop,
            "after_s": after_s if after_s is not None else (watch.measured_s or float(len(watch.iops)))}


def imprecise_reason(part: Mapping[str, object]) -> str | None:
    """Why a point is flagged ``imprecise`` (its precision asked was not reached), None when it was."""
    target, reached = number(part.get("target_pct")), number(part.get("reached_pct"))
    if target is None or (reached is not None and reached <= target):
        return None
    after = number(part.get("after_s"))
    when = f" in {after:g} s" if after is not None else ""
    ended = {"runtime": " before the runtime cap", "steady": " when fio's steady state ended the point"}
    end = ended.get(str(part.get("stop")), "")
    got = (f"reached ±{reached:.2g} % of mean IOPS" if reached is not None
           else f"no interval of mean IOPS (at least {MIN_SECONDS} s and enough uncorrelated batches needed)")
    return f"{got}, ±{target:g} % asked{when}{end}"
