"""The peak of a run: the best point, the configuration that reached it, its IOPS per CPU, and what ran out.

Pure: it reads results lines (and run.json's skipped entries) and returns typed values; the report
(app.report.sections.peak_text) and the TUI's results table format them.

- **Peak**: the most IOPS among the measured pure-read storage points (pure writes when the run measured no
  pure read). With replicates (``repeat`` ≥ 2) a load is judged by the **mean over its replicates**, never by
  its best replicate (:func:`mean_line`): the peak is the load with the most IOPS on average, its figure that
  mean (the report adds the replicates' range and interval), the steps of "what ran out" compare loads' means,
  and its CPU figures are the counters of the replicate nearest that mean (one real run's, not a blend).
- **Configuration**: what a point is run with beside its load (iodepth × numjobs): its pattern and block size,
  ``ioengine``, the io_uring options set (``registerfiles``, ``fixedbufs``, ``sqthread_poll``, ``hipri``) and
  the CPUs its jobs were pinned to (``cpus``).  Read from the point's JSON with ``get``: a line written before
  those keys existed is a configuration without them.
- **IOPS per CPU** (:func:`cpu_cost`): ``metrics.iops_per_cpu``, the I/Os per CPU-second of fio's own job
  threads (usr+sys), with how many CPUs those threads kept busy; beside it, labelled as the host's, the
  ``host_cpu`` part (/proc/stat over the measured window): the busy CPUs, the steal, and the I/Os per busy host
  CPU.  The host figure counts every process on those CPUs — on a shared machine or a VM, other tenants' work
  (1.90 of 2 CPUs busy while fio's job used 36 % of one) — as well as the kernel's SQ-poll thread and interrupts
  done for fio, so it is no cost of fio's I/O alone and never the headline.
- **What ran out** (:func:`limit`), in this order: *CPU* when the peak point's CPUs were at least 90 % busy
  (host_cpu's busy CPUs over the CPUs it counted) or fio's job threads were each at least 90 % busy; *depth*
  when the peak is at the deepest iodepth and the most numjobs its configuration tried and IOPS still grew at
  least 3 % over the step before (the plan ran out, not the host); *device* when IOPS stopped growing (under
  3 % a step) while mean latency rose and the CPUs had headroom; else *not known*, with why.

Every part of a line is untrusted: :func:`host_cpu` bounds and checks the ``host_cpu`` part, and a value out of
its range makes the part unusable (with one sentence saying which key), never a figure.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Mapping, Sequence

from app.core.sanitize import clean_line
from app.core.units import format_count
from app.host.topology import cpu_list
from app.model.keys import SATURATION_IOPS_GAIN
from app.model.records import MIN_CPU_SECONDS, ResultLine, base_key, is_num, number, read_line

OPTIONS = ("registerfiles", "fixedbufs", "sqthread_poll", "hipri")  # io_uring options tried by the peak preset
CPU_BUSY_SHARE = 0.90  # at least this share of the counted CPUs (or of each fio job's CPU) busy: CPU ran out
GROWTH = SATURATION_IOPS_GAIN  # a step that adds less IOPS than this has stopped growing (the adaptive axes' rule)
# /proc/stat counts CPU time in ticks of 10 ms (USER_HZ 100): under 50 ticks of busy time the figure's rounding
# alone exceeds 2 %, so it is shown flagged, not bare
MIN_BUSY_S = 0.5
FIO_SOURCE = "per CPU-second of fio's job threads (usr+sys)"
HOST_WHAT = "every process on those CPUs, the kernel's threads and interrupts"  # what the host figure counts
PEAK_PRESETS = ("peak", "peak-write")
MAX_REASON = 300


# --- the host_cpu part and the CPU figures -------------------------------------------------------------------


@dataclass(frozen=True)
class HostCpu:
    """A checked ``host_cpu`` part: the CPUs counted, their busy time over the measured window."""

    cpus: str  # as recorded, e.g. "0-1"
    count: int  # how many CPUs that list names
    window_s: float
    busy_s: float
    busy_cpus: float
    iops_per_busy_cpu: float | None
    steal_s: float | None = None  # CPU-seconds the hypervisor gave to others (None: not recorded)

    @property
    def steal_cpus(self) -> float | None:
        """The CPUs' worth of time the hypervisor gave to other guests over the window."""
        return None if self.steal_s is None else self.steal_s / self.window_s

    @property
    def share(self) -> float:
        """The busy share of the counted CPUs, 0 … 1."""
        return self.busy_cpus / self.count

    @property
    def few(self) -> bool:
        """Too little busy time for a figure worth printing bare (:data:`MIN_BUSY_S`)."""
        return self.busy_s < MIN_BUSY_S


def host_cpu(part: object) -> HostCpu | str | None:
    """The ``host_cpu`` part of a line checked (None: the line has none; a sentence: why it cannot be used)."""
    if part is None:
        return None
    if not isinstance(part, Mapping):
        return "the host_cpu part is not an object"
    if "unavailable" in part:
        return clean_line(part.get("unavailable") or "not measured", MAX_REASON)
    text = part.get("cpus")
    cpus = cpu_list(text) if isinstance(text, str) else ()
    if not cpus:
        return "the host_cpu part's cpus is not a CPU list"
    values = {k: number(part.get(k)) for k in ("window_s", "busy_s", "busy_cpus")}
    for k, v in values.items():
        if v is None or not is_num(v):
            return f"the host_cpu part's {k} is not a number"
    window, busy, busy_cpus = values["window_s"], values["busy_s"], values["busy_cpus"]
    assert window is not None and busy is not None and busy_cpus is not None
    if window <= 0:
        return "the host_cpu part's window_s is not positive"
    # 5 % slack: busy_s and window_s are read at slightly different instants and in ticks
    if busy_cpus > len(cpus) * 1.05 or busy > window * len(cpus) * 1.05:
        return f"the host_cpu part counts more busy time than its {len(cpus)} CPUs have"
    per = part.get("iops_per_busy_cpu")
    per_busy = number(per) if is_num(per) else None
    steal = number(part.get("steal_s")) if is_num(part.get("steal_s")) else None
    if steal is not None and not 0 <= steal <= window * len(cpus) * 1.05:
        return f"the host_cpu part's steal_s is not a share of its {len(cpus)} CPUs' time"
    return HostCpu(text, len(cpus), window, busy, busy_cpus, per_busy, steal)  # type: ignore[arg-type]  # checked


@dataclass(frozen=True)
class CpuCost:
    """A point's IOPS per CPU of fio's own job threads: the figure, what it counts (:data:`FIO_SOURCE`), and why it
    is missing; ``fio_cpus``: the CPUs fio's job threads kept busy (usr+sys of its jobs), ``host``: the host's CPUs
    over the same point (checked, or why not; None: not recorded), shown beside fio's figure, never in its
    place."""

    value: float | None
    source: str | None = None
    why: str | None = None  # no figure: why; a figure: None
    fio_cpus: float | None = None
    host: HostCpu | str | None = None


def cpu_cost(line: ResultLine) -> CpuCost:
    """The point's IOPS per CPU of fio's own job threads (usr+sys), with the host's CPUs beside it."""
    host = host_cpu(line.parts.host_cpu)
    own = fio_cpus(line)
    fio = line.storage.iops_per_cpu
    if fio is not None and is_num(fio):
        return CpuCost(float(fio), FIO_SOURCE, fio_cpus=own, host=host)
    why = ("fio's job threads used too little CPU time for the figure (under "
           f"{MIN_CPU_SECONDS:g} CPU-s)" if _fio_share(line) is not None else "the line records no CPU figures of "
           "fio's job threads")
    return CpuCost(None, why=why, fio_cpus=own, host=host)


def fio_cpus(line: ResultLine) -> float | None:
    """How many CPUs fio's own job threads kept busy: its I/Os per second over its I/Os per CPU-second (their CPU
    time over the run), else their usr+sys share of one CPU times the jobs; None without fio's CPU figures."""
    fio, iops = line.storage.iops_per_cpu, line.storage.iops
    if fio is not None and is_num(fio) and fio > 0 and iops is not None and is_num(iops):
        return float(iops) / float(fio)
    share = _fio_share(line)
    if share is None:
        return None
    n = line.point.get("numjobs")
    return share * (n if isinstance(n, int) and not isinstance(n, bool) and n >= 1 else 1)


def _fio_share(line: ResultLine) -> float | None:
    """fio's usr+sys per job as a share of one CPU (its entries' runtime-weighted mean)."""
    usr, sys = line.storage.usr_cpu, line.storage.sys_cpu
    if usr is None and sys is None:
        return None
    return (float(usr or 0.0) + float(sys or 0.0)) / 100.0


@dataclass(frozen=True)
class CpuLoad:
    """How busy the point's CPUs were: the highest of the shares known, with the words that say it (``other``:
    the other view's words, when both are known)."""

    share: float
    text: str
    other: str = ""


def cpu_load(line: ResultLine) -> CpuLoad | None:
    """The busiest view of the point's CPUs: host_cpu's busy CPUs over those counted, or fio's per-job share."""
    loads = []
    host = host_cpu(line.parts.host_cpu)
    if isinstance(host, HostCpu):
        steal = "" if host.steal_cpus is None else f", steal {host.steal_cpus:.2f} CPU"
        loads.append(CpuLoad(host.share, f"{host.busy_cpus:.2f} of the {host.count} CPU{'s' if host.count != 1 else ''}"
                                         f" counted ({host.cpus}) busy, {host.share:.0%}{steal}, over "
                                         f"{host.window_s:.1f} s (/proc/stat: every process on them, the kernel's "
                                         "threads and interrupts)"))
    share = _fio_share(line)
    if share is not None:
        loads.append(CpuLoad(share, f"fio's job threads {share:.0%} busy each (usr+sys)"))
    if not loads:
        return None
    top = max(loads, key=lambda c: c.share)
    other = [c.text for c in loads if c is not top]
    return CpuLoad(top.share, top.text, other[0] if other else "")


# --- configurations ------------------------------------------------------------------------------------------


def options_of(point: Mapping[str, object]) -> tuple[str, ...]:
    """The io_uring options a point sets (true), in :data:`OPTIONS` order."""
    return tuple(o for o in OPTIONS if point.get(o) is True)


def _text(v: object) -> str | None:
    return clean_line(v, 40) if isinstance(v, str) and v else None


@dataclass(frozen=True)
class Config:
    """What a point runs with beside its load: pattern, block size, engine, io_uring options, pinned CPUs."""

    rw: str
    bs: int
    ioengine: str
    options: tuple[str, ...]
    cpus: str | None

    @classmethod
    def of(cls, point: Mapping[str, object]) -> Config:
        bs = point.get("bs")
        return cls(_text(point.get("rw")) or "read", bs if isinstance(bs, int) and not isinstance(bs, bool) else 0,
                   _text(point.get("ioengine")) or "fio's default engine", options_of(point),
                   _text(point.get("cpus")))

    @property
    def label(self) -> str:
        """``io_uring +registerfiles +fixedbufs``, with ``, CPUs 0-1`` when pinned."""
        return self.engine_label + (f", CPUs {self.cpus}" if self.cpus else "")

    @property
    def engine_label(self) -> str:
        """The engine and its io_uring options: what the Peak section compares."""
        return self.ioengine + "".join(f" +{o}" for o in self.options)

    @property
    def engine_key(self) -> tuple[str, tuple[str, ...]]:
        return self.ioengine, self.options


def _whole(point: Mapping[str, object], key: str) -> int:
    v = point.get(key)
    return v if isinstance(v, int) and not isinstance(v, bool) and v >= 1 else 1


def load_of(line: ResultLine) -> tuple[int, int]:
    """(iodepth, numjobs) of a point."""
    return _whole(line.point, "iodepth"), _whole(line.point, "numjobs")


def load_text(load: tuple[int, int]) -> str:
    qd, jobs = load
    return f"QD{qd} × {jobs} job{'s' if jobs != 1 else ''}"


def _pure(point: Mapping[str, object]) -> str | None:
    """"read" or "write" for a pure read or write pattern, else None (mixed, trim)."""
    rw = point.get("rw")
    return "read" if rw in ("read", "randread") else "write" if rw in ("write", "randwrite") else None


def _iops(line: ResultLine) -> float:
    v = line.storage.iops
    return float(v) if v is not None and is_num(v) else 0.0


def _lat(line: ResultLine) -> float | None:
    lat = line.storage.lat_ns
    v = lat.get("mean") if lat is not None else None
    return float(v) if v else None


# --- what ran out --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Limit:
    """Which resource ran out at the peak (``CPU``, ``device``, ``depth`` or ``not known``) and one sentence of
    evidence (the figures)."""

    resource: str
    evidence: str


def _pct(a: float, b: float) -> str:
    return f"{(b / a - 1) * 100:+.1f} %" if a else "n/a"


def _step_text(a: ResultLine, b: ResultLine) -> str:
    return (f"{format_count(_iops(a))} IOPS at {load_text(load_of(a))} → {format_count(_iops(b))} at "
            f"{load_text(load_of(b))}, {_pct(_iops(a), _iops(b))}")


def _device_text(line: ResultLine) -> str:
    """The device part's own figures (busy share of the window, mean time per request), when recorded."""
    d = line.parts.device
    if not isinstance(d, Mapping) or "unavailable" in d:
        return ""
    name = _text(d.get("name")) or "the device"
    busy, window, lat = (number(d.get(k)) if is_num(d.get(k)) else None for k in ("busy_ms", "window_s", "lat_mean_ns"))
    out = []
    if busy is not None and window and busy <= window * 1000 * 1.05:
        out.append(f"busy {min(1.0, busy / (window * 1000)):.0%} of the window")
    if lat is not None:
        out.append(f"{lat / 1e3:,.1f} µs mean per request")
    return f"; {name} {', '.join(out)}" if out else ""


def _neighbours(peak: ResultLine, points: Sequence[ResultLine]) -> tuple[list[ResultLine], list[ResultLine]]:
    """The steps before and after the peak along each axis: the nearest smaller and larger iodepth at its numjobs,
    then the nearest smaller and larger numjobs at its iodepth."""
    qd, jobs = load_of(peak)
    before, after = [], []
    for axis in (0, 1):
        same = [p for p in points if load_of(p)[1 - axis] == (jobs, qd)[axis]]
        at = (qd, jobs)[axis]
        lower = [p for p in same if load_of(p)[axis] < at]
        higher = [p for p in same if load_of(p)[axis] > at]
        if lower:
            before.append(max(lower, key=lambda p: load_of(p)[axis]))
        if higher:
            after.append(min(higher, key=lambda p: load_of(p)[axis]))
    return before, after


def limit(peak: ResultLine, points: Sequence[ResultLine]) -> Limit:
    """What ran out at ``peak``, one of ``points`` (its configuration's measured points)."""
    cpu = cpu_load(peak)
    if cpu is not None and cpu.share >= CPU_BUSY_SHARE:
        also = f"; {cpu.other}" if cpu.other else ""
        return Limit("CPU", f"at the peak {cpu.text}{also}: at least {CPU_BUSY_SHARE:.0%} busy, so more load could "
                            "not be submitted faster.")
    before, after = _neighbours(peak, points)
    if not before and not after:
        return Limit("not known", "its configuration measured one load only: no step to tell whether IOPS stopped "
                                  "growing.")
    if not after:  # the deepest iodepth and the most numjobs its configuration tried
        grew = [b for b in before if _iops(peak) >= _iops(b) * (1 + GROWTH)]
        if grew:
            return Limit("depth", f"the peak is the deepest load its configuration tried and IOPS still grew "
                                  f"({_step_text(grew[0], peak)}: at least {GROWTH:.0%} a step): the plan ran out "
                                  "before the host did; raise iodepth/numjobs.")
        a, b = before[0], peak
    else:
        a, b = peak, after[0]
    lat_a, lat_b = _lat(a), _lat(b)
    if cpu is None:
        return Limit("not known", f"IOPS stopped growing ({_step_text(a, b)}), but the peak point records no CPU "
                                  "figure (no host_cpu part, no fio usr+sys) to tell the CPU from the device.")
    if lat_a is None or lat_b is None or lat_b <= lat_a:
        return Limit("not known", f"IOPS stopped growing ({_step_text(a, b)}) but mean latency did not rise, so "
                                  "neither a saturated device nor a missing load explains it.")
    return Limit("device", f"IOPS stopped growing ({_step_text(a, b)}) while mean latency rose {lat_a / 1e3:,.1f} → "
                           f"{lat_b / 1e3:,.1f} µs, and the CPUs had headroom: {cpu.text}{_device_text(peak)}.")


# --- the peak ------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ConfigBest:
    """One configuration's best point and its cost in CPU."""

    config: Config
    best: ResultLine  # with replicates: the best load's mean_line
    points: int
    cost: CpuCost
    replicates: tuple[ResultLine, ...] = ()  # the best load's replicates (one line without repeats)

    @property
    def iops(self) -> float:
        """The best load's IOPS: the mean over its replicates."""
        return mean_iops(self.replicates or (self.best,))


@dataclass(frozen=True)
class Peak:
    direction: str  # read or write
    line: ResultLine
    config: Config
    cost: CpuCost
    limit: Limit
    configs: list[ConfigBest] = field(default_factory=list)  # best IOPS first
    skipped: list[tuple[Config, str]] = field(default_factory=list)  # configurations none of whose points ran
    replicates: tuple[ResultLine, ...] = ()  # the peak load's replicates (one line without repeats)

    @property
    def iops(self) -> float:
        """The peak: the mean IOPS over the peak load's replicates."""
        return mean_iops(self.replicates or (self.line,))


def mean_iops(lines: Sequence[ResultLine]) -> float:
    return math.fsum(_iops(ln) for ln in lines) / len(lines)


def load_sets(points: Sequence[ResultLine]) -> list[list[ResultLine]]:
    """The points grouped by their point less its replicate (a load's replicates), in first-seen order."""
    out: dict[str, list[ResultLine]] = {}
    for ln in points:
        out.setdefault(base_key(ln.point), []).append(ln)
    return list(out.values())


def nearest_mean(reps: Sequence[ResultLine]) -> ResultLine:
    """The replicate whose IOPS is nearest the mean over them (the first of a tie)."""
    m = mean_iops(reps)
    return min(reps, key=lambda ln: abs(_iops(ln) - m))


def mean_line(reps: Sequence[ResultLine]) -> ResultLine:
    """A load's line: the line itself, or for replicates the one nearest their mean IOPS (its point less the
    replicate, its parts and CPU counters) with IOPS and mean latency the means over the replicates."""
    if len(reps) == 1:
        return reps[0]
    doc = nearest_mean(reps).json()
    point = {k: v for k, v in (doc.get("point") or {}).items() if k != "replicate"}  # type: ignore[union-attr]
    metrics = dict(doc.get("metrics") or {})  # type: ignore[arg-type]
    metrics["iops"] = mean_iops(reps)
    lats = [_lat(ln) for ln in reps]
    if all(v is not None for v in lats) and isinstance(metrics.get("lat_ns"), dict):
        metrics["lat_ns"] = {**metrics["lat_ns"], "mean": math.fsum(v or 0.0 for v in lats) / len(lats)}  # type: ignore[dict-item]
    return read_line({**doc, "point": point, "metrics": metrics}, check=False)


def _candidates(lines: Sequence[ResultLine]) -> tuple[str, list[ResultLine]]:
    storage = [ln for ln in lines if ln.storage.iops is not None and _iops(ln) > 0]
    reads = [ln for ln in storage if _pure(ln.point) == "read"]
    return ("read", reads) if reads else ("write", [ln for ln in storage if _pure(ln.point) == "write"])


def configurations(lines: Sequence[ResultLine]) -> dict[Config, list[ResultLine]]:
    """The measured pure-read points (pure-write without any) by configuration."""
    out: dict[Config, list[ResultLine]] = {}
    for ln in _candidates(lines)[1]:
        out.setdefault(Config.of(ln.point), []).append(ln)
    return out


def is_peak_run(preset: str | None, lines: Sequence[ResultLine]) -> bool:
    """A run the report gives a Peak section: the peak or peak-write preset, or any run whose measured points
    (of the peak's direction) compare more than one engine or set of io_uring options."""
    if preset in PEAK_PRESETS:
        return True
    return len({c.engine_key for c in configurations(lines)}) > 1


def find_peak(lines: Sequence[ResultLine], skipped: Sequence[tuple[Mapping[str, object], str]] = ()) -> Peak | None:
    """The peak of a run's results lines; ``skipped``: run.json's skipped points (point, reason). None when no
    pure read or write point measured IOPS."""
    direction, _ = _candidates(lines)
    groups = configurations(lines)
    if not groups:
        return None
    bests = []
    for config, points in groups.items():
        most = max(load_sets(points), key=mean_iops)
        best = mean_line(most)
        bests.append(ConfigBest(config, best, len(points), cpu_cost(best), tuple(most)))
    bests.sort(key=lambda b: -b.iops)
    top = bests[0]
    missing: dict[Config, str] = {}
    for point, reason in skipped:
        c = Config.of(point)
        if c not in groups and _pure(point) == direction:
            missing.setdefault(c, clean_line(reason or "skipped", MAX_REASON))
    loads = [top.best if top.best in reps or reps == list(top.replicates) else mean_line(reps)
             for reps in load_sets(groups[top.config])]
    return Peak(direction, top.best, top.config, top.cost, limit(top.best, loads), bests,
                list(missing.items()), top.replicates)

