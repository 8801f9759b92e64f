"""How a plan is told to a person: ``profiler-tui presets show`` and the TUI's preset preview both render
:func:`describe_plan`, so they say the same thing in the same words."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping, Sequence

from app.core.units import format_duration, format_size, setting_text
from app.model.points import Kind, Point, StoragePoint
from app.plan.presets import Preset, describe_axes, summary
from app.plan.procedure import (
    AUTO,
    MIN_AUTO_REPLICATES,
    SEQUENTIAL_PRECONDITION_PASSES,
    SNIA_WINDOW,
    Procedure,
    precondition_estimate_s,
    region_size,
)

WRITES = "writes to the target"
READS = "reads only"


def procedure_lines(preset: Preset, points: list[Point]) -> list[str]:
    """How the plan is run beyond its points, one line each (none for a plain plan)."""
    proc = preset.procedure
    lines = [f"on this machine: {note}" for note in preset.notes()]
    if proc.precondition != "none":
        est = format_duration(precondition_estimate_s(proc, points))
        if proc.precondition == "sequential":
            size = region_size(points)
            lines.append(f"precondition: sequential — 128 KiB sequential writes over {format_size(size)}, "
                         f"{SEQUENTIAL_PRECONDITION_PASSES} passes "
                         f"({format_size(size * SEQUENTIAL_PRECONDITION_PASSES)};"
                         f" ~{est} at 500 MB/s)")
        else:
            lines.append(f"precondition: workload — the first write point until fio sees steady state, at most {est}")
    if proc.rounds > 1:
        track = " ".join(f"{k}={setting_text(k, v)}" for k, v in proc.track.items()) or "the first point"
        lines.append(f"rounds: up to {proc.rounds}, stopping once {track} is steady by SNIA's rule "
                     f"({SNIA_WINDOW}-round window, range ≤ 20% and slope excursion ≤ 10% of the mean)")
    lines.extend(repeat_lines(proc, preset.kind))
    if proc.adaptive:
        lines.append("adaptive: the rest of a QD or numjobs axis is skipped once IOPS grows < 3% while mean "
                     "latency grows ≥ 1.5x on two consecutive steps")
    return lines


def repeat_lines(proc: Procedure, kind: Kind) -> list[str]:
    """``repeat``: how many replicates of every point, in which order, and when "auto" stops."""
    if proc.repeat == AUTO:
        figure = "IOPS" if kind == Kind.STORAGE else "latency (bandwidth where a point has no latency)"
        span = f"{MIN_AUTO_REPLICATES}–{proc.repeat_max}" if proc.repeat_max > MIN_AUTO_REPLICATES else proc.repeat_max
        return [f"repeat: auto: {span} replicates until {figure} CV < "
                f"{proc.repeat_cv:g} %, interleaved"] + order_lines(proc, kind)
    if proc.replicates > 1:
        return [f"repeat: ×{proc.replicates} replicates, interleaved (every point once, then again)",
                *order_lines(proc, kind)]
    return order_lines(proc, kind)


def order_lines(proc: Procedure, kind: Kind) -> list[str]:
    """``order``: a storage plan's points shuffled within each replicate, and from which seed."""
    if kind != Kind.STORAGE or not proc.shuffled:
        return []
    seed = f"seed {proc.order_seed}" if proc.order_seed is not None else "seed drawn when the run starts"
    return [f"order: shuffled within each replicate ({seed}; set order_seed to repeat it, order=plan for none)"]


@dataclass(frozen=True)
class PlanDescription:
    name: str
    kind: Kind
    description: str
    source: str
    points: list[Point]
    axes: Mapping[str, Sequence[object]]  # the keys that vary, their values in plan order
    settings: Mapping[str, object]  # the keys every point shares
    estimated: str  # "1m 30s"
    writes: bool
    procedure: list[str]  # how the plan is run beyond its points (preconditioning, rounds, adaptive)
    bounded: bool  # the estimate is an upper bound (steady state, a latency search, rounds, adaptive axes)

    def axis_text(self, key: str) -> str:
        return ", ".join(setting_text(key, v) for v in self.axes[key])

    @property
    def settings_text(self) -> str:
        return ", ".join(f"{k}={setting_text(k, v)}" for k, v in self.settings.items())

    @property
    def totals(self) -> str:
        n = len(self.points)
        return f"{n} point{'' if n == 1 else 's'}, estimated {'at most ' if self.bounded else ''}{self.estimated}"

    @property
    def access(self) -> str:
        """What the plan does to its target."""
        return WRITES if self.writes else READS


def describe_plan(preset: Preset) -> PlanDescription:
    """The plan of ``preset`` (overrides applied) described: axes, shared settings, count, time."""
    points = preset.expand()
    info = summary(preset)
    axes = describe_axes(preset)
    first = points[0].to_dict() if points else {}
    settings = {k: v for k, v in first.items() if k not in axes and k not in ("group", "round", "replicate")}
    proc = preset.procedure
    bounded = (proc.rounds > 1 or proc.repeat == AUTO or proc.adaptive or proc.precondition == "workload"
               or any(isinstance(p, StoragePoint) and (p.steady or p.latency_bound or p.precision) for p in points))
    return PlanDescription(preset.name, Kind(preset.kind), preset.description, preset.source, points, axes,
                           settings, info["estimated"], info["writes"], procedure_lines(preset, points), bounded)
