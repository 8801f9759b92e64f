"""A fleet run's hosts side by side: each point's figures per host, the fleet's median and total, each host's
deviation from the median and the outliers (docs/report.md, "Fleet runs").

Outlier rule: for one point and one figure (IOPS, mean latency, p99 latency), with the fleet median ``m`` and
the median absolute deviation ``MAD = median(|x_h − m|)`` over the hosts that measured the point, a host is an
outlier when ``|x − m| > 3 · max(MAD, 2 % of m)`` (the raw MAD, not scaled to a normal's standard deviation).
The floor of 2 % of the median is the run-to-run noise of a fio point: when the other hosts agree to a
fraction of a percent (MAD near 0), a host 1 % off is not called out, while one host far from several equal
ones (MAD exactly 0) is.  No host is an outlier with fewer than three hosts: with two, each lies exactly one
MAD from their median, so the rule could never fire; with one there is nothing to compare.  MB/s is IOPS ×
block size at every point, so it deviates exactly as IOPS does and is not tested (nor called out) twice.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field
from typing import Callable, Mapping, Sequence

from app.model.points import Kind
from app.model.runmeta import RunMeta
from app.model.tails import TAIL_PERCENTILES, Hist, count, merge, percentile, supported
from app.report.data.model import RunData, StorageRow, replicate_of
from app.stats.summary import point_label

OUTLIER_MADS = 3.0
MIN_OUTLIER_HOSTS = 3
NOISE_FLOOR = 0.02  # the spread is at least this share of the median: fio's run-to-run noise


# --- the maths ---------------------------------------------------------------------------------------------


def median(values: Sequence[float]) -> float:
    return float(statistics.median(values))


def mad(values: Sequence[float], centre: float | None = None) -> float:
    """Median absolute deviation from ``centre`` (default: the median of ``values``)."""
    m = median(values) if centre is None else centre
    return median([abs(v - m) for v in values])


def deviation_pct(value: float, centre: float) -> float | None:
    """``value`` above (+) or below (−) ``centre``, in percent of it; None when ``centre`` is 0."""
    return None if centre == 0 else (value - centre) / centre * 100.0


def spread(values: Sequence[float], centre: float) -> float:
    """The spread the outlier rule measures in: the MAD, at least NOISE_FLOOR of the median."""
    return max(mad(values, centre), NOISE_FLOOR * abs(centre))


def outliers(values: Mapping[str, float], k: float = OUTLIER_MADS) -> dict[str, float]:
    """The hosts whose value lies more than ``k`` spreads (:func:`spread`) from the median, each with its signed
    distance in spreads; none with fewer than MIN_OUTLIER_HOSTS values, or when all are 0."""
    if len(values) < MIN_OUTLIER_HOSTS:
        return {}
    m = median(list(values.values()))
    spread_ = spread(list(values.values()), m)
    if spread_ <= 0:
        return {}
    return {h: (v - m) / spread_ for h, v in values.items() if abs(v - m) > k * spread_}


# --- the figures compared -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Measure:
    key: str  # iops | lat_mean | p99
    name: str  # in a sentence
    value: Callable[[StorageRow], float | None]


MEASURES = (
    Measure("iops", "IOPS", lambda p: p.iops),
    Measure("lat_mean", "mean latency", lambda p: p.lat_mean or None),
    Measure("p99", "p99 latency", lambda p: p.p99),
)


@dataclass
class Outlier:
    host: str
    figure: Measure
    value: float
    median: float
    mads: float  # signed distance from the median, in MADs


@dataclass
class FleetPoint:
    """One plan point as the fleet measured it: a row per host that has a result."""

    index: int
    point: Mapping[str, object]
    rows: dict[str, StorageRow]  # host → its row, in the fleet's host order
    medians: dict[str, float] = field(default_factory=dict)  # figure key → median over the hosts with it
    outliers: list[Outlier] = field(default_factory=list)

    @property
    def replicate(self) -> int | None:
        return replicate_of(self.point)

    @property
    def label(self) -> str:
        """The point in a few words, with its replicate in a repeated run: three rows of one point are no
        duplicates (the single-host points table names the replicate the same way)."""
        return point_label(Kind.STORAGE, self.point) + (f", replicate {self.replicate}" if self.replicate else "")

    def values(self, figure: Measure) -> dict[str, float]:
        return {h: v for h, p in self.rows.items() if (v := figure.value(p)) is not None}

    @property
    def total_iops(self) -> float:
        return sum(p.iops for p in self.rows.values())

    @property
    def total_bw(self) -> float:
        return sum(p.bw for p in self.rows.values())

    def deviation(self, host: str, figure: Measure) -> float | None:
        v = figure.value(self.rows[host]) if host in self.rows else None
        m = self.medians.get(figure.key)
        return None if v is None or m is None else deviation_pct(v, m)

    def is_outlier(self, host: str, figure: Measure) -> bool:
        return any(o.host == host and o.figure.key == figure.key for o in self.outliers)


def _judge(fp: FleetPoint) -> FleetPoint:
    for fig in MEASURES:
        values = fp.values(fig)
        if not values:
            continue
        m = median(list(values.values()))
        fp.medians[fig.key] = m
        fp.outliers += [Outlier(h, fig, values[h], m, d) for h, d in outliers(values).items()]
    return fp


def fleet_points(data: RunData) -> list[FleetPoint]:
    """The run's points by plan index, each with its hosts' rows (in the fleet's order), medians and outliers."""
    names = data.fleet.names if data.fleet is not None else []
    by_index: dict[int, FleetPoint] = {}
    for p in data.storage:
        if p.host is None:
            continue
        fp = by_index.setdefault(p.index, FleetPoint(p.index, p.point, {}))
        fp.rows[p.host] = p
    for fp in by_index.values():
        fp.rows = {h: fp.rows[h] for h in names if h in fp.rows}
    return [_judge(by_index[i]) for i in sorted(by_index)]


def rows_of_host(data: RunData, host: str) -> list[StorageRow]:
    return [p for p in data.storage if p.host == host]


def failed_host_points(meta: RunMeta) -> set[tuple[int, str]]:
    """(plan index, host) of every failure run.json records for a host."""
    return {(f.index, f.host) for f in meta.failures if f.index is not None and f.host is not None}


# --- the fleet's tail: percentiles of the hosts' merged histograms ------------------------------------------------
#
# A fleet percentile is read from the hosts' json+ histograms added bucket by bucket (app.model.tails.merge): the exact
# percentile of every I/O the fleet completed.  A mean or median of the hosts' percentiles is not a percentile of
# anything (one slow host's tail is diluted by the others), so none is computed here.


@dataclass(frozen=True)
class FleetTail:
    """One point's fleet percentiles, or why there are none."""

    ios: int  # I/Os in the merged histogram (0 when it was not computed)
    values: dict[str, int | None]  # TAIL_PERCENTILES key → ns; None where the count does not support it
    missing: tuple[str, ...] = ()  # hosts whose line has no (or a malformed) latency histogram: nothing computed

    @property
    def computed(self) -> bool:
        return not self.missing and self.ios > 0


@dataclass(frozen=True)
class SlowestTail:
    """The host with the highest tail at one point, at the highest percentile every host supports."""

    host: str
    label: str  # "p99.9" or "p99"
    value: int  # that host's percentile, ns (from its own histogram)
    fleet: int | None  # the fleet's merged percentile, ns (None when the merged one is not computed)


def host_hists(fp: FleetPoint) -> dict[str, Hist | None]:
    return {h: p.metrics.hist() for h, p in fp.rows.items()}


def fleet_tail(fp: FleetPoint) -> FleetTail:
    """The point's fleet percentiles from its hosts' merged histograms; none when a host has no histogram (a
    percentile of the other hosts alone is not the fleet's)."""
    hists = host_hists(fp)
    missing = tuple(h for h, hist in hists.items() if hist is None)
    if missing or not hists:
        return FleetTail(0, {}, missing)
    merged = merge(h for h in hists.values() if h is not None)
    n = count(merged)
    inflight = sum(p.inflight for p in fp.rows.values())  # a stall of shared storage may hold every host's queue
    return FleetTail(n, {key: percentile(merged, pct) if supported(pct, n, inflight) else None
                         for key, pct, _ in TAIL_PERCENTILES})


SLOWEST_LEVELS = (("p99_9", 99.9, "p99.9"), ("p99", 99.0, "p99"))


def slowest_tail(fp: FleetPoint, tail: FleetTail | None = None) -> SlowestTail | None:
    """The host whose own histogram has the highest p99.9 (p99 when a host's count does not support p99.9),
    with the fleet's merged figure at the same percentile; None when a host has no histogram or none supports
    p99."""
    hists = host_hists(fp)
    if not hists or any(h is None for h in hists.values()):
        return None
    tail = fleet_tail(fp) if tail is None else tail
    for key, pct, label in SLOWEST_LEVELS:
        if all(h is not None and supported(pct, count(h), fp.rows[host].inflight) for host, h in hists.items()):
            values = {host: percentile(h, pct) or 0 for host, h in hists.items() if h is not None}
            host = max(values, key=lambda k: values[k])  # the first of equals, in the fleet's order
            return SlowestTail(host, label, values[host], tail.values.get(key))
    return None
