"""The 95 % interval of a storage point's mean from its sub-second samples.

fio's status dumps come every 100–1000 ms (app.runners.fio.status_interval_ms), so a 2 s point has 20 samples
where whole seconds gave it 2 (no interval).  Sub-second samples of one device are strongly correlated: on
this project's 2-CPU VM the lag-1 autocorrelation of 100 ms IOPS samples was 0.58–0.67 (QD32, QD1).  Plain
batch means (app.stats.uncertainty, at least 10 batches) then cover the true mean in only 71–78 % of AR(1) series
of 20–40 samples with φ = 0.65, so the interval here is the wider of two:

1. batch means of the samples averaged in groups of :data:`GROUP` consecutive ones, at least
   :data:`MIN_BATCHES` batches (:func:`app.stats.uncertainty.batch_means_interval`: MSER-5 warm-up, LBATCH batch
   size, AR(1) widening);
2. the AR(1) effective-sample-size interval of the samples the first one used:
   ``mean ± t(n/f − 1) · s/√n · √(f / (1 − f/n))`` with ``f = (1 + r)/(1 − r)`` the samples per independent
   one (``1 − f/n`` corrects the sample variance of a correlated series, low by about that), ``r`` their lag-1
   autocorrelation less its small-sample bias, raised by :data:`R_MARGIN` of its standard error (a low estimate
   of ``r`` is what makes such an interval too narrow) and clipped to 0–0.95.

On AR(1) series with known mean (tests/unit/test_fine_samples.py, 1000 series a case) the 95 % interval covers
it in 94–97 % of series of 20–300 samples for φ from 0 to 0.8 (φ = 0.65, the VM's: 94.1–96.6 %), and 97–100 %
of series get one.  A point of fewer than GROUP × MIN_BATCHES samples left after its warm-up has none.
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Mapping, Sequence

from app.model.records import MAX_NUMBER, number
from app.stats.uncertainty import (
    LEVEL,
    STORAGE_SERIES,
    Interval,
    LevelShift,
    NoInterval,
    Uncertainty,
    batch_means_interval,
    level_shift,
    student_t_quantile,
    unbiased_lag1,
    uncertainty_of,
)

GROUP = 4  # sub-second samples averaged per value before batch means
MIN_BATCHES = 5
MAX_R = 0.95
R_MARGIN = 0.5  # the lag-1 estimate is raised by this many of its standard errors, √((1 − r²)/n)


def grouped(values: Sequence[float], g: int) -> list[float]:
    """``values`` averaged in groups of ``g`` consecutive samples (the earliest remainder left out)."""
    start = len(values) % g
    return [math.fsum(values[i:i + g]) / g for i in range(start, len(values), g)]


def fine_interval(values: Sequence[float], level: float = LEVEL) -> Interval | NoInterval:
    """The ``level`` interval of the mean of sub-second samples ``values`` (the module's rule); its
    ``batch_size`` and ``truncated`` count samples."""
    got = batch_means_interval(grouped(values, GROUP), level, MIN_BATCHES, gate=False)  # widened below
    if not isinstance(got, Interval):
        return got
    used = got.batches * got.batch_size * GROUP
    kept = [float(v) for v in values[len(values) - used:]]
    n = len(kept)
    centre = math.fsum(kept) / n
    sd = math.sqrt(math.fsum((v - centre) ** 2 for v in kept) / (n - 1)) if n > 1 else 0.0
    r = unbiased_lag1(kept)
    r = min(max(r + R_MARGIN * math.sqrt(max(1 - r * r, 0.0) / n), 0.0), MAX_R) if sd > 0 else 0.0
    factor = (1 + r) / (1 - r)  # samples per independent one
    df = max(1, math.floor(n / factor) - 1)
    # the sample variance of a correlated series is low by about factor/n: corrected
    ar1 = student_t_quantile((1 + level) / 2, df) * sd / math.sqrt(n) * math.sqrt(factor / max(1 - factor / n, 0.25))
    half = max(ar1, (got.high - got.low) / 2)
    return Interval(got.mean - half, got.mean + half, got.mean, got.batches, got.batch_size * GROUP,
                    len(values) - used)


def fine_shift(values: Sequence[float]) -> LevelShift | None:
    """:func:`app.stats.uncertainty.level_shift` of sub-second samples, tested on their means of GROUP (nearer the
    whole seconds its thresholds were set on); where it is, in samples."""
    shift = level_shift(grouped(values, GROUP))
    if shift is None:
        return None
    start = len(values) % GROUP
    return replace(shift, at=start + shift.at * GROUP, skipped=start + shift.skipped * GROUP)


def fine_intervals(series: Mapping[str, Sequence[float]]) -> Uncertainty:
    """The interval record of a point from its sub-second samples, one series per figure; a series with a level
    shift has none, the shift recorded instead (as :func:`app.stats.uncertainty.intervals_of`)."""
    return uncertainty_of(series, fine_interval, fine_shift, GROUP)


def series_of(samples: Sequence[Mapping[str, object]]) -> dict[str, list[float]]:
    """The series of a point's sub-second samples file (raw/NNNN-JOB.fine.jsonl, untrusted) as
    :class:`app.runners.fio.FineSamples` took them: not marked ``ramp``, spanning at least half the typical
    (median) interval, a sample without a usable figure skipped for that figure."""
    spans = sorted(s for x in samples if (s := number(x.get("interval_s"))) is not None and s > 0)
    if not spans:
        return {}
    nominal = spans[len(spans) // 2]
    out: dict[str, list[float]] = {k: [] for k in STORAGE_SERIES}
    for x in samples:
        span = number(x.get("interval_s"))
        if x.get("ramp") is True or span is None or span < nominal / 2:
            continue
        for k in STORAGE_SERIES:
            v = number(x.get(k))
            if v is not None and 0 <= v <= MAX_NUMBER:
                out[k].append(v)
    return {k: v for k, v in out.items() if v}
