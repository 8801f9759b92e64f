"""How a storage plan is run beyond its points: preconditioning first, rounds, and the rules that skip
points no longer worth measuring (docs/presets.md, "Procedure").

* ``precondition``: ``none``; ``sequential`` (SNIA PTS workload-independent preconditioning: 128 KiB
  sequential writes over the whole region, twice); ``workload`` (the plan's first write point, run until
  fio sees steady state, capped at :data:`WORKLOAD_PRECONDITION_CAP_S`).
* ``rounds``: the plan is measured in up to this many rounds (the points carry ``round``); once the
  tracked point's IOPS is steady by SNIA's rule over the last :data:`SNIA_WINDOW` rounds, the rounds
  left are skipped.
* ``adaptive``: on a queue-depth (or numjobs) axis, once IOPS grew less than 3 % while mean latency
  grew at least 1.5x on two consecutive steps, the rest of that axis for that workload is skipped.
* ``repeat``: every point is measured this many times (the points carry ``replicate``), interleaved: every
  point's first replicate, then every point's second …, so that drift over the run shows up as variation
  between replicates.  ``"auto"`` plans ``repeat_max`` replicates and skips a point's later ones once at
  least :data:`MIN_AUTO_REPLICATES` of them have a coefficient of variation of IOPS (a memory point: of its
  latency, or of its bandwidth when it measures only that) under ``repeat_cv`` per cent.  Storage and memory.
* ``order``: within each replicate (and round) a storage plan's points run in a shuffled order (``auto``: when
  there are replicates; ``shuffled``; ``plan``), drawn from ``order_seed`` (recorded in run.json, so the order
  is reproducible and a resumed run keeps it), so that drift over the run cannot pose as a trend along the
  plan's axes.  The results keep their plan indices: the report is the same whatever the order.

A skipped point is not a failure: run.json lists it with the reason, ``resume`` does not run it and the
report lists it.  The rules are pure functions of the plan and of the measured points, so a resumed run
decides exactly as an uninterrupted one would.
"""

from __future__ import annotations

import random
import secrets
from dataclasses import dataclass, field, fields, replace
from typing import Iterable, Mapping, Sequence

from app.core.errors import UsageError
from app.model.keys import SATURATION_IOPS_GAIN, TELEMETRY_INTERVAL_S, rate_share
from app.model.points import WRITE_MODES, Kind, Point, StoragePoint
from app.model.records import ResultLine
from app.stats.uncertainty import replicate_spread

PRECONDITION_MODES = ("none", "sequential", "workload")
MAX_ROUNDS = 100
SNIA_WINDOW = 5  # rounds in the steady-state window
SNIA_RANGE = 0.20  # max - min of the window within 20 % of its mean
SNIA_EXCURSION = 0.10  # the best-fit line's excursion over the window within 10 % of the mean
SATURATION_LATENCY_GROWTH = 1.5  # ... while mean latency grew at least 1.5x ...
SATURATION_STEPS = 2  # ... on this many consecutive steps
ADAPTIVE_AXES = {"iodepth": "QD", "numjobs": "numjobs"}
SEQUENTIAL_PRECONDITION_BS = 128 << 10
SEQUENTIAL_PRECONDITION_PASSES = 2
SEQUENTIAL_PRECONDITION_QD = 32
WORKLOAD_PRECONDITION_CAP_S = 1800  # a workload preconditioning pass stops here if fio never saw steady state
ASSUMED_PRECONDITION_BYTES_PER_S = 500e6  # for the estimate only: the real time depends on the device
MAX_TELEMETRY_INTERVAL_S = 3600
AUTO = "auto"  # repeat = "auto": replicates until their spread is small (repeat_cv), at most repeat_max
MAX_REPEAT = 50
MIN_AUTO_REPLICATES = 3  # a coefficient of variation of fewer runs says little
REPEAT_CV_PCT = 3.0  # PTS's dynamic run count stops near this (3.5 %)
REPEAT_MAX = 10
ORDERS = ("auto", "plan", "shuffled")  # auto: shuffled when a storage plan has replicates
MAX_ORDER_SEED = 2 ** 32 - 1


@dataclass(frozen=True)
class Procedure:
    precondition: str = "none"
    adaptive: bool = False
    rounds: int = 1
    # settings selecting the tracked point of each round (e.g. {"bs": 4096, "rwmixread": 0}); empty:
    # the first point of the round
    track: dict[str, object] = field(default_factory=dict)
    precondition_cap: float | int = WORKLOAD_PRECONDITION_CAP_S  # seconds: a workload pass stops here
    timeseries: str = "none"  # the points the report draws over time: none, all or "KEY=VALUE ..." (app.plan.presets)
    telemetry_interval: int = TELEMETRY_INTERVAL_S  # seconds between drive health readings during a point
    repeat: int | str = 1  # replicates of every point, or AUTO
    repeat_cv: float = REPEAT_CV_PCT  # per cent: AUTO stops a point's replicates once their CV is under this
    repeat_max: int = REPEAT_MAX  # AUTO's replicates at most
    order: str = "auto"  # the points' order within a replicate: ORDERS
    order_seed: int | None = None  # the shuffle's seed; None: drawn when the run is created (with_order_seed)

    def to_dict(self) -> dict[str, object]:
        """run.json's ``procedure``; a key added later is left out at its default, so that the run.json of a
        run that does not use it keeps the bytes it had."""
        out = {f.name: getattr(self, f.name) for f in fields(self)}
        if out["timeseries"] == "none":
            del out["timeseries"]
        if out["telemetry_interval"] == TELEMETRY_INTERVAL_S:
            del out["telemetry_interval"]
        for key, default in (("repeat", 1), ("repeat_cv", REPEAT_CV_PCT), ("repeat_max", REPEAT_MAX),
                             ("order", "auto"), ("order_seed", None)):
            if out[key] == default:
                del out[key]
        return out

    @property
    def replicates(self) -> int:
        """Replicates planned of every point (AUTO: its cap; the skip rule ends a point's earlier)."""
        return self.repeat_max if self.repeat == AUTO else int(self.repeat)

    @property
    def shuffled(self) -> bool:
        """The points run in a shuffled order within each replicate (and round)."""
        return self.order == "shuffled" or (self.order == "auto" and self.replicates > 1)

    @property
    def is_default(self) -> bool:
        return self == Procedure()


def with_order_seed(procedure: Procedure) -> Procedure:
    """``procedure`` with a seed for its shuffle, drawn now when it shuffles and has none (a new run records it)."""
    if not procedure.shuffled or procedure.order_seed is not None:
        return procedure
    return replace(procedure, order_seed=secrets.randbelow(MAX_ORDER_SEED + 1))


def run_order(plan: Sequence[Point], procedure: Procedure) -> list[int]:
    """The plan's indices in the order they run: plan order, or (a storage plan whose procedure shuffles) each
    block of one replicate and round in plan order of the blocks, its points shuffled by a generator seeded
    from ``order_seed`` and the block, so the same seed gives the same order whatever was measured already.
    Points whose offered load is a share of a measured X_max (:func:`needs_xmax`) run after all the others,
    in that order: the closed-loop points they take X_max from are measured first."""
    order = _run_order(plan, procedure)
    later = [i for i in order if needs_xmax(plan[i])]
    return [i for i in order if not needs_xmax(plan[i])] + later if later else order


def _run_order(plan: Sequence[Point], procedure: Procedure) -> list[int]:
    if not procedure.shuffled or not all(isinstance(p, StoragePoint) for p in plan):
        return list(range(len(plan)))
    blocks: dict[tuple[int | None, int | None], list[int]] = {}
    for i, p in enumerate(plan):
        blocks.setdefault((getattr(p, "round", None), p.replicate), []).append(i)
    out: list[int] = []
    for (rnd, replicate), indices in blocks.items():
        random.Random(f"{procedure.order_seed or 0}/{rnd or 1}/{replicate or 1}").shuffle(indices)
        out.extend(indices)
    return out


@dataclass(frozen=True)
class Measured:
    """What the rules need of a measured point: a storage point's IOPS and mean latency, a memory point's
    latency and bandwidth (``iops`` None)."""

    iops: float | None
    lat_mean_ns: float | None
    latency_ns: float | None = None
    bandwidth_mbps: float | None = None

    @property
    def repeat_figure(self) -> tuple[str, float] | None:
        """The figure whose spread over replicates ends ``repeat = "auto"``, by name: IOPS; a memory point's
        latency, or its bandwidth when it measures only that."""
        if self.iops is not None:
            return "IOPS", self.iops
        if self.latency_ns is not None:
            return "latency", self.latency_ns
        if self.bandwidth_mbps is not None:
            return "bandwidth", self.bandwidth_mbps
        return None


def measured_from_line(line: ResultLine) -> Measured | None:
    """The figures of a results line (None when it has none the rules read)."""
    if line.kind == Kind.MEMORY:
        mem = line.memory
        if mem.latency_ns is None and mem.bandwidth_mbps is None:
            return None
        return Measured(None, None, mem.latency_ns, mem.bandwidth_mbps)
    m = line.storage
    if m.iops is None:
        return None
    mean = m.lat_ns.get("mean") if m.lat_ns is not None else None
    return Measured(float(m.iops), float(mean) if mean is not None else None)


# --- adaptive axes --------------------------------------------------------------------------------


def _flat_step(a: Measured, b: Measured) -> bool:
    if a.lat_mean_ns is None or b.lat_mean_ns is None or a.lat_mean_ns <= 0 or a.iops is None or b.iops is None:
        return False
    return b.iops < a.iops * (1 + SATURATION_IOPS_GAIN) and b.lat_mean_ns >= a.lat_mean_ns * SATURATION_LATENCY_GROWTH


def saturation_skips(plan: Sequence[Point], measured: Mapping[int, Measured]) -> dict[int, str]:
    """Plan index → reason, for the points after a saturated stretch of a QD or numjobs axis.

    A family is the points that differ only in the axis key; it is walked in ascending axis order while
    its points are measured.  Points searching a latency bound (iodepth is a ceiling there) are left out.
    """
    skips: dict[int, str] = {}
    for axis, label in ADAPTIVE_AXES.items():
        families: dict[tuple[object, ...], list[tuple[int, int]]] = {}
        for i, p in enumerate(plan):
            if not isinstance(p, StoragePoint) or p.latency_bound is not None:
                continue
            identity = tuple(sorted((k, v) for k, v in p.to_dict().items() if k not in (axis, "group")))
            families.setdefault(identity, []).append((getattr(p, axis), i))
        for family in families.values():
            if len(family) <= SATURATION_STEPS:
                continue
            family.sort()
            flat = 0
            for j in range(1, len(family)):
                a, b = measured.get(family[j - 1][1]), measured.get(family[j][1])
                if a is None or b is None:
                    break
                flat = flat + 1 if _flat_step(a, b) else 0
                if flat == SATURATION_STEPS:
                    knee = family[j - SATURATION_STEPS][0]
                    for _, index in family[j + 1:]:
                        skips.setdefault(index, f"saturated at {label} {knee}")
                    break
    return skips


# --- rounds ---------------------------------------------------------------------------------------


def matches(point: Point, track: Mapping[str, object]) -> bool:
    return all(getattr(point, k, None) == v for k, v in track.items())


def tracked_indices(plan: Sequence[Point], track: Mapping[str, object]) -> dict[int, int]:
    """Round → plan index of its tracked point (the first point of the round matching ``track``)."""
    out: dict[int, int] = {}
    for i, p in enumerate(plan):
        r = getattr(p, "round", None)
        if r is not None and r not in out and matches(p, track):
            out[r] = i
    return out


@dataclass(frozen=True)
class SteadyCheck:
    """SNIA's steady-state check of the tracked figure over a window of rounds."""

    rounds: tuple[int, ...]
    values: tuple[float, ...]
    mean: float
    range: float  # max - min
    slope: float  # per round, of the least-squares line
    intercept: float
    excursion: float  # |slope| x (rounds in the window - 1)

    @property
    def range_ok(self) -> bool:
        return self.range <= SNIA_RANGE * self.mean

    @property
    def slope_ok(self) -> bool:
        return self.excursion <= SNIA_EXCURSION * self.mean

    @property
    def steady(self) -> bool:
        return self.mean > 0 and self.range_ok and self.slope_ok


def snia_check(rounds: Sequence[int], values: Sequence[float]) -> SteadyCheck:
    n = len(values)
    xs = [float(r) for r in rounds]
    mx, my = sum(xs) / n, sum(values) / n
    sxx = sum((x - mx) ** 2 for x in xs)
    slope = sum((x - mx) * (y - my) for x, y in zip(xs, values)) / sxx if sxx else 0.0
    return SteadyCheck(tuple(rounds), tuple(values), my, max(values) - min(values), slope, my - slope * mx,
                       abs(slope) * (n - 1))


def rounds_series(plan: Sequence[Point], track: Mapping[str, object],
                  measured: Mapping[int, Measured]) -> list[tuple[int, float]]:
    """(round, IOPS) of the tracked point, for the rounds measured so far, in round order."""
    series = []
    for r, index in sorted(tracked_indices(plan, track).items()):
        iops = measured[index].iops if index in measured else None
        if iops is not None:
            series.append((r, iops))
    return series


def steady_window(plan: Sequence[Point], track: Mapping[str, object],
                  measured: Mapping[int, Measured]) -> SteadyCheck | None:
    """:func:`first_steady_window` of the tracked point's IOPS per round."""
    return first_steady_window(rounds_series(plan, track, measured))


def first_steady_window(series: Sequence[tuple[int, float]]) -> SteadyCheck | None:
    """The first window of SNIA_WINDOW consecutive measured rounds that is steady, else the last window
    (None before SNIA_WINDOW consecutive rounds are measured).  ``series``: (round, value), round order."""
    last = None
    for end in range(SNIA_WINDOW, len(series) + 1):
        part = series[end - SNIA_WINDOW:end]
        if part[-1][0] - part[0][0] != SNIA_WINDOW - 1:
            continue  # a round is missing (failed): the window is not consecutive
        last = snia_check([r for r, _ in part], [v for _, v in part])
        if last.steady:
            return last
    return last


def round_skips(plan: Sequence[Point], procedure: Procedure, measured: Mapping[int, Measured],
                skipped: Iterable[int] = ()) -> dict[int, str]:
    """Plan index → reason, for the rounds after the round in which the tracked point became steady
    (decided once that round is finished: every point of it measured or skipped)."""
    if procedure.rounds <= 1:
        return {}
    check = steady_window(plan, procedure.track, measured)
    if check is None or not check.steady:
        return {}
    last = check.rounds[-1]
    gone = set(skipped) | set(measured)
    if any(getattr(p, "round", None) == last and i not in gone for i, p in enumerate(plan)):
        return {}  # the round is still running
    reason = f"steady by round {last} (SNIA rule over rounds {check.rounds[0]}–{last})"
    return {i: reason for i, p in enumerate(plan) if (getattr(p, "round", None) or 0) > last}


def skips(plan: Sequence[Point], procedure: Procedure, measured: Mapping[int, Measured],
          skipped: Iterable[int] = ()) -> dict[int, str]:
    """Every point the procedure's rules skip, given what is measured (and already skipped)."""
    out: dict[int, str] = {}
    if procedure.adaptive:
        out.update(saturation_skips(plan, measured))
    for index, reason in round_skips(plan, procedure, measured, skipped).items():
        out.setdefault(index, reason)
    for index, reason in replicate_skips(plan, procedure, measured).items():
        out.setdefault(index, reason)
    return out


def in_rounds(points: Sequence[StoragePoint], rounds: int) -> list[StoragePoint]:
    """The plan of a run in rounds: every point once per round, round after round."""
    if rounds <= 1:
        return list(points)
    return [replace(p, round=r) for r in range(1, rounds + 1) for p in points]


# --- replicates -----------------------------------------------------------------------------------


def in_replicates(points: Sequence[Point], replicates: int) -> list[Point]:
    """The plan of a repeated run, interleaved: every point's replicate 1, then every point's replicate 2 …
    (one replicate: the points as they are, without a ``replicate``)."""
    if replicates <= 1:
        return list(points)
    return [replace(p, replicate=k) for k in range(1, replicates + 1) for p in points]


def replicate_skips(plan: Sequence[Point], procedure: Procedure, measured: Mapping[int, Measured]) -> dict[int, str]:
    """Plan index → reason, for ``repeat = "auto"``: a point's replicates after the first one at which its
    measured replicates so far (at least MIN_AUTO_REPLICATES) have a coefficient of variation under
    ``repeat_cv``.  Walked in replicate order, so the same measured points give the same answer whenever
    it is asked (a resumed run decides as an uninterrupted one)."""
    if procedure.repeat != AUTO:
        return {}
    families: dict[Point, list[tuple[int, int]]] = {}
    for i, p in enumerate(plan):
        if p.replicate is not None:
            families.setdefault(replace(p, replicate=None), []).append((p.replicate, i))
    out: dict[int, str] = {}
    for family in families.values():
        family.sort()
        values: list[float] = []
        for position, (replicate, index) in enumerate(family):
            figure = measured[index].repeat_figure if index in measured else None
            if figure is None:
                continue  # not measured (failed, or still to come)
            values.append(figure[1])
            cv = replicate_spread(values).cv if len(values) >= MIN_AUTO_REPLICATES else None
            if cv is not None and cv * 100 < procedure.repeat_cv:
                reason = (f"{figure[0]} CV {cv * 100:.1f} % < {procedure.repeat_cv:g} % over "
                          f"{len(values)} replicates (by replicate {replicate})")
                out.update({i: reason for _, i in family[position + 1:] if i not in measured})
                break
    return out


def check_repeat(procedure: Procedure, where: str) -> None:
    """UsageError for a procedure that both repeats points and runs rounds: a round is already a repeat of the
    plan, and the steady-state rule reads one figure per round."""
    if procedure.repeat != 1 and procedure.rounds > 1:
        raise UsageError(f"{where}: repeat = {procedure.repeat} cannot be combined with rounds = {procedure.rounds} "
                         "(a round already measures the whole plan again); use one of them.")


def region_size(plan: Sequence[Point]) -> int:
    """The largest region the plan's points exercise (what sequential preconditioning writes over)."""
    return max((p.size for p in plan if isinstance(p, StoragePoint)), default=0)


def precondition_estimate_s(procedure: Procedure, plan: Sequence[Point]) -> float:
    """Seconds the preconditioning pass is expected to take: the sequential pass at an assumed
    ASSUMED_PRECONDITION_BYTES_PER_S (the device decides), a workload pass at its cap (an upper bound)."""
    if procedure.precondition == "sequential":
        return region_size(plan) * SEQUENTIAL_PRECONDITION_PASSES / ASSUMED_PRECONDITION_BYTES_PER_S
    if procedure.precondition == "workload":
        return float(procedure.precondition_cap)
    return 0.0


def first_write_point(plan: Sequence[Point]) -> StoragePoint | None:
    return next((p for p in plan if isinstance(p, StoragePoint) and p.rw in WRITE_MODES), None)


def check_precondition(procedure: Procedure, plan: Sequence[Point], source: str) -> None:
    """UsageError, before anything is created, when the plan cannot give the preconditioning pass it asks for:
    ``workload`` runs the plan's first write point, which a plan that only reads does not have."""
    if procedure.precondition == "workload" and first_write_point(plan) is None:
        raise UsageError(f"{source}: key 'precondition' has value \"workload\", which runs the plan's first write "
                         "point, and none of its points writes; use precondition = \"sequential\" or \"none\".")


# --- open loop: offered loads that are a share of X_max ------------------------------------------


def needs_xmax(point: Point) -> bool:
    """A storage point whose offered load is a share of an X_max the run measures (``rate = "50%"``, no ``xmax``)."""
    return (isinstance(point, StoragePoint) and point.rate is not None and point.xmax is None
            and rate_share(point.rate) is not None)


def _workload(p: StoragePoint) -> tuple[object, ...]:
    return (p.rw, p.bs, p.rwmixread, p.ioengine, p.direct, p.size)


@dataclass(frozen=True)
class OfferedLoad:
    """What an open-loop point offers: ``iops`` (λ, I/Os per second, all jobs together), and where it came from:
    ``share`` of ``xmax`` (None for an absolute rate), ``xmax_from`` ("given": the point's ``xmax``; "measured":
    the highest IOPS of the plan's closed-loop points ``xmax_points``)."""

    iops: float
    share: float | None = None
    xmax: float | None = None
    xmax_from: str | None = None
    xmax_points: tuple[int, ...] = ()

    def to_dict(self) -> dict[str, object]:
        out: dict[str, object] = {"offered_iops": self.iops}
        if self.share is not None:
            out.update(rho=self.share, xmax_iops=self.xmax, xmax_from=self.xmax_from)
            if self.xmax_points:
                out["xmax_points"] = list(self.xmax_points)
        return out


def offered_load(plan: Sequence[Point], index: int, measured: Mapping[int, Measured]) -> OfferedLoad | str | None:
    """The load plan point ``index`` offers (None: it is a closed-loop point), or why it cannot be known: its
    rate is a share of X_max, it gives no ``xmax`` and no closed-loop point of its workload (same rw, bs, mix,
    engine, direct, size; no rate) was measured.  X_max is the highest IOPS those points measured: the run
    measures them first (:func:`run_order`), so a resumed run finds the same figure."""
    point = plan[index]
    if not isinstance(point, StoragePoint) or point.rate is None:
        return None
    share = rate_share(point.rate)
    if share is None:
        return OfferedLoad(float(point.rate))
    if point.xmax is not None:
        return OfferedLoad(share * point.xmax, share, float(point.xmax), "given")
    family = [i for i, p in enumerate(plan) if isinstance(p, StoragePoint) and p.rate is None
              and _workload(p) == _workload(point)]
    found = [(measured[i].iops, i) for i in family if i in measured and measured[i].iops]
    if not found:
        return ("no X_max to take a share of: no closed-loop point of this workload (rate unset) was measured; "
                "give xmax")
    xmax = max(v for v, _ in found if v is not None)
    return OfferedLoad(share * xmax, share, xmax, "measured", tuple(i for _, i in found))


def check_shares(plan: Sequence[Point], source: str) -> None:
    """UsageError, before anything is created, for a point whose rate is a share of an X_max no point of the plan
    can measure: it gives no ``xmax`` and the plan has no closed-loop point (no ``rate``) of its workload."""
    for p in plan:
        if needs_xmax(p):
            assert isinstance(p, StoragePoint)
            if not any(isinstance(q, StoragePoint) and q.rate is None and _workload(q) == _workload(p) for q in plan):
                raise UsageError(f"{source}: key 'rate' has value {p.rate}, a share of X_max, and the plan has no "
                                 "closed-loop point (without rate) of the same workload to measure X_max; give xmax, "
                                 "or add such points (the open-loop preset sweeps iodepth first).")
