"""The report's time-series parts: write cliffs, the points drawn over time, samples.csv.

A results directory is untrusted: every figure read from a line or from run.json is checked to be a finite
number (:func:`cliff_of`), samples come through :func:`app.report.sections.procedure.read_samples`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping, Sequence

from app.core.sanitize import md_text
from app.core.units import format_bandwidth, format_size_human
from app.model.points import Kind
from app.model.records import number
from app.plan.presets import timeseries_filter
from app.report.data.model import RunData, StorageRow
from app.report.sections.procedure import read_samples
from app.stats.summary import point_label
from app.stats.timeseries import samples_csv

MAX_DRAWN = 24  # points drawn over time at most (the figure pages beyond a dozen)


def cliff_of(holder: Mapping[str, object]) -> dict[str, float] | None:
    """A line's (or the precondition record's) ``write_cliff``, when all four figures are numbers."""
    c = holder.get("write_cliff")
    if not isinstance(c, Mapping):
        return None
    out = {k: number(c.get(k)) for k in ("at_bytes", "at_s", "before_bw_bytes", "after_bw_bytes")}
    if any(v is None or v < 0 for v in out.values()):
        return None
    return {k: float(v) for k, v in out.items() if v is not None}


def cliff_sentence(what: str, c: Mapping[str, float]) -> str:
    return (f"{what}: throughput fell from {format_bandwidth(c['before_bw_bytes'])} to "
            f"{format_bandwidth(c['after_bw_bytes'])} ({c['after_bw_bytes'] / c['before_bw_bytes']:.0%}) after "
            f"{_bytes(c['at_bytes'])} written, {c['at_s']:.0f} s into the job.")


def _bytes(n: float) -> str:
    for unit, size in (("TiB", 1 << 40), ("GiB", 1 << 30), ("MiB", 1 << 20)):
        if n >= size:
            return f"{n / size:.1f} {unit}"
    return format_size_human(int(n))


def cliff_section(data: RunData) -> list[str]:
    """One sentence per write cliff found (the preconditioning pass first), nothing when none was."""
    found: list[str] = []
    pre = data.meta.precondition
    if pre is not None:
        c = cliff_of(pre)
        if c is not None:
            found.append(cliff_sentence("Preconditioning", c))
    for p in data.storage:
        c = cliff_of(p.line.parts.json())
        if c is not None:
            found.append(cliff_sentence(f"Point {p.index + 1} ({md_text(point_label(Kind.STORAGE, p.point))})", c))
    if not found:
        return []
    out = ["### Write cliff", "",
           "During sequential writes the tool looks for a sustained drop of throughput — the point where a "
           "drive's write cache (SLC or DRAM) is full and writes go to the slower medium. Figures after the "
           "drop are what the drive sustains.", ""]
    out += [f"- {s}" for s in found]
    return out + [""]


@dataclass(frozen=True)
class SeriesTrace:
    """One point's samples over time, for the time-series figure."""

    label: str
    why: str
    t: tuple[float, ...]
    iops: tuple[float, ...]
    p99_us: tuple[float | None, ...]
    cliff_s: float | None
    p50_us: tuple[float | None, ...] = ()  # per second, like p99_us; () when the samples carry none
    p99_9_us: tuple[float | None, ...] = ()


def _matches(point: Mapping[str, object], wanted: Mapping[str, object]) -> bool:
    return all(point.get(k) == v for k, v in wanted.items())


def sample_figure(v: object) -> float:
    """A figure of a live sample, which ``read_samples`` checked is a number."""
    assert isinstance(v, (int, float, str))
    return float(v)


def _trace(label: str, why: str, samples: Sequence[Mapping[str, object]], cliff: Mapping[str, float] | None
           ) -> SeriesTrace | None:
    # the last dump of a job covers the few ms after the previous one: not a one-second figure
    whole = [s for s in samples if (number(s.get("interval_s")) or 1.0) >= 0.5]
    if len(whole) < 2:
        return None
    return SeriesTrace(label, why, tuple(sample_figure(s["t"]) for s in whole),
                       tuple(sample_figure(s["iops"]) for s in whole),
                       _us(whole, "lat_p99_ns"), cliff["at_s"] if cliff else None,
                       _us(whole, "lat_p50_ns"), _us(whole, "lat_p99_9_ns"))


def _us(samples: Sequence[Mapping[str, object]], key: str) -> tuple[float | None, ...]:
    """The samples' ``key`` (ns) in µs, None where a sample has none."""
    return tuple((v / 1e3 if (v := number(s.get(key))) is not None else None) for s in samples)


def series_traces(data: RunData) -> list[SeriesTrace]:
    """The points drawn over time: those with a write cliff, a ``throttled`` or ``tail-unstable`` flag, those the run's
    ``timeseries`` setting names, and the preconditioning pass when it had a cliff; at most MAX_DRAWN."""
    setting = data.meta.procedure.timeseries if data.meta.procedure is not None else None
    wanted = timeseries_filter(setting) if setting is not None else None
    traces: list[SeriesTrace] = []
    pre = data.meta.precondition
    if pre is not None and cliff_of(pre) is not None:
        t = _trace("Preconditioning", "write cliff", read_samples(data.path, pre.get("raw")), cliff_of(pre))
        if t is not None:
            traces.append(t)
    for p in data.storage:
        if len(traces) >= MAX_DRAWN:
            break
        cliff = cliff_of(p.line.parts.json())
        reasons = [r for r, hit in (("write cliff", cliff is not None),
                                    ("throttled", any(f["flag"] == "throttled" for f in p.flags)),
                                    ("tail unstable", any(f["flag"] == "tail-unstable" for f in p.flags)),
                                    ("named by the preset", wanted is not None and _matches(p.point, wanted))) if hit]
        if reasons:
            t = _trace(f"{p.index + 1}: {point_label(Kind.STORAGE, p.point)}", ", ".join(reasons),
                       read_samples(data.path, p.line.raw), cliff)
            if t is not None:
                traces.append(t)
    return traces


def samples_csv_of(data: RunData, points: Sequence[StorageRow]) -> str:
    """samples.csv: every sample each measured storage point kept (app.stats.timeseries.samples_csv)."""
    return samples_csv((p.index, read_samples(data.path, p.line.raw)) for p in points)
