"""How a plan is told to a person: ``profiler-tui presets show`` and the TUI's preset preview both render
:func:`describe_plan`, so they say the same thing in the same words."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from app.points import Kind, Point
from app.presets import Preset, describe_axes, summary
from app.units import format_size

SIZE_KEYS = ("bs", "size", "buffer")  # shown as 4K, 1G …
WRITES = "writes to the target"
READS = "reads only"


def setting_text(key: str, value: Any) -> str:
    """A setting as a person reads it: sizes with a unit, booleans 1/0, no value "-"."""
    if value is None:
        return "-"
    if key in SIZE_KEYS and isinstance(value, int) and not isinstance(value, bool):
        return format_size(value)
    if isinstance(value, bool):
        return "1" if value else "0"
    return str(value)


@dataclass(frozen=True)
class PlanDescription:
    name: str
    kind: Kind
    description: str
    source: str
    points: list[Point]
    axes: dict[str, list[Any]]  # the keys that vary, their values in plan order
    settings: dict[str, Any]  # the keys every point shares
    estimated: str  # "1m 30s"
    writes: bool

    def axis_text(self, key: str) -> str:
        return ", ".join(setting_text(key, v) for v in self.axes[key])

    @property
    def settings_text(self) -> str:
        return ", ".join(f"{k}={setting_text(k, v)}" for k, v in self.settings.items())

    @property
    def totals(self) -> str:
        return f"{len(self.points)} points, estimated {self.estimated}"

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
    settings = {k: v for k, v in first.items() if k not in axes and k != "group"}
    return PlanDescription(preset.name, Kind(preset.kind), preset.description, preset.source, points, axes,
                           settings, info["estimated"], info["writes"])
