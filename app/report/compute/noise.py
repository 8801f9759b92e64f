"""How much a point's figures moved while it ran: the spread of its whole-second samples.

fio prints a status dump every second; the runner keeps the difference of consecutive dumps as one
sample (raw/NNNN-….samples.jsonl: IOPS, mean latency, p99 of that second); the seconds of fio's ramp_time
are marked and left out here, as in fio's own figures.  A point's headline figure is
its whole run; the samples show how far one second strayed from it.  The report uses them to say when a
claim (a knee, an operating point under a bound) lies within that spread — "within noise".  Differences
between points (trends, the queueing view, the write-back check) are judged by :mod:`app.report.compute.verdict`
on batch-means intervals and replicates instead.

The interval is a Student-t 95 % interval of the mean of the per-second values.  Consecutive seconds of
one device are correlated, so the interval is a lower bound of the true uncertainty; it is only computed
from MIN_SAMPLES seconds or more, and never called more than it is.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping, Sequence

from app.model.records import MAX_NUMBER, number
from app.report.data.model import StorageRow
from app.report.sections.procedure import read_samples
from app.stats.uncertainty import student_t_quantile

MIN_SAMPLES = 3  # fewer whole seconds cannot give a spread worth a sentence
WHOLE_INTERVAL_S = 0.5  # a job's last dump covers the few ms after the previous one: not a one-second figure

# what a sample calls each figure
SAMPLE_KEYS = {"iops": "iops", "lat_mean": "lat_mean_ns", "p99": "lat_p99_ns", "bw": "bw_bytes"}


def t95(df: int) -> float:
    """The two-sided 95 % Student-t critical value for ``df`` degrees of freedom (df ≥ 1; below, the normal's)."""
    return student_t_quantile(0.975, df if df >= 1 else math.inf)


@dataclass(frozen=True)
class Spread:
    """The per-second values of one figure of one point."""

    n: int  # whole-second samples
    mean: float
    sd: float  # sample standard deviation (n − 1)
    lo: float  # the lowest second
    hi: float  # the highest second

    @property
    def half_width(self) -> float:
        """Half-width of the 95 % interval of the mean (Student t, seconds taken as independent)."""
        return t95(self.n - 1) * self.sd / math.sqrt(self.n)

    @property
    def cv(self) -> float:
        """Coefficient of variation of one second: sd / mean (0 when the mean is 0)."""
        return self.sd / self.mean if self.mean else 0.0

    def straddles(self, bound: float) -> bool:
        """Some seconds were on each side of ``bound``."""
        return self.lo <= bound < self.hi or self.lo < bound <= self.hi


def spread(values: Sequence[float]) -> Spread | None:
    """The spread of finite ``values``; None with fewer than MIN_SAMPLES of them.  A value beyond ±MAX_NUMBER
    (2**64, the largest figure a results file may hold) is junk, not a sample: near the float limit the
    standard deviation itself would overflow to infinity."""
    xs = [float(v) for v in values if isinstance(v, (int, float)) and math.isfinite(v) and abs(v) <= MAX_NUMBER]
    if len(xs) < MIN_SAMPLES:
        return None
    return Spread(len(xs), statistics.fmean(xs), statistics.stdev(xs), min(xs), max(xs))


def whole_samples(samples: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """The measured samples that cover (about) a whole status interval: a second of fio's ``ramp_time``
    (marked ``"ramp": true``) is left out, as fio's own figures and the batch-means intervals leave it out."""
    return [s for s in samples
            if (number(s.get("interval_s")) or 1.0) >= WHOLE_INTERVAL_S and s.get("ramp") is not True]


def samples_of(run_dir: Path, row: StorageRow) -> list[Mapping[str, object]]:
    """The whole-second samples of ``row`` (read once per row: several analyses ask for them)."""
    if row.whole_samples is None:
        row.whole_samples = whole_samples(read_samples(run_dir, row.line.raw))
    return row.whole_samples


def point_spread(run_dir: Path, row: StorageRow, figure: str) -> Spread | None:
    """The per-second spread of one figure of a point (``iops``, ``lat_mean``, ``p99`` or ``bw``), in the
    units of the results (IOPS, ns, bytes/s); None when the point kept fewer than MIN_SAMPLES whole seconds."""
    key = SAMPLE_KEYS[figure]
    return spread([v for s in samples_of(run_dir, row) if (v := number(s.get(key))) is not None])
