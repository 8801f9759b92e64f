"""The custom form's plan (the TUI's ``c``): the starting preset as a table the form edits key by key, so that
the form never runs another test than the one it shows.

- The form's fields are the keys the plan's modes read: a memory mode's own keys (:data:`MODE_FIELDS`; the keys
  only some modes read are :data:`app.plan.presets.MODE_ONLY_KEYS`'s), the storage mix only for rw/randrw.
- A field left as the form first showed it changes nothing: the preset's settings, groups, labels and procedure
  (repeat, order …) are kept, and so are the keys the form has no field for (ioengine, cpu_node = "each" …).
- An edited key replaces the preset's values of that key, like ``--set``; a key the preset *pairs* (its values
  differ between its groups, as quick's rw, bs and iodepth do) keeps the pairing when the new values are some of
  the preset's own: each group keeps its values among them, and a group left with none is dropped.  A value in
  none of the groups cannot keep the pairing: the plan becomes every combination of the fields, and
  :attr:`FormPlan.note` says so in plain words.

No UI here: app/screens/custom.py draws the fields; tests check every shipped preset's form without a screen.
"""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass, field
from typing import Sequence, cast

from app.core.errors import UsageError
from app.core.units import setting_text
from app.model.points import PointValue
from app.plan import presets as core
from app.plan.describe import describe_plan
from app.plan.presets import MODE_ONLY_KEYS, PROCEDURE_KEYS, Group, Preset, procedure_keys
from app.plan.procedure import Procedure


@dataclass(frozen=True)
class Field:
    key: str
    label: str
    default: str
    optional: bool = False


STORAGE_FIELDS = (
    Field("rw", "rw modes", "randread"),
    Field("bs", "block sizes", "4k"),
    Field("iodepth", "queue depths", "1"),
    Field("numjobs", "jobs", "1"),
    Field("rwmixread", "mix (% read)", "", optional=True),
    Field("runtime", "runtime (s)", "10"),
    Field("size", "size", "1g"),
)
MEMORY_FIELDS = (
    Field("mode", "modes", "loaded"),
    Field("traffic", "traffic", "R"),
    Field("delay", "delays", ",".join(str(d) for d in core.MLC_DELAYS)),
    Field("threads", "load threads", "each"),
    Field("c2c", "c2c line", "hitm"),
    Field("stride", "stride", "64"),
    Field("buffer", "buffer", "", optional=True),
    Field("pages", "pages", "", optional=True),
    Field("duration", "duration (s)", "2"),
)
FIELDS: dict[str, tuple[Field, ...]] = {core.STORAGE: STORAGE_FIELDS, core.MEMORY: MEMORY_FIELDS}

# the form's keys each memory mode reads (its engine's arguments: app/runners/memory.py); a key of
# MODE_ONLY_KEYS is listed only under the modes that read it
MEMORY_COMMON = ("stride", "buffer", "pages", "duration")
MODE_FIELDS: dict[str, tuple[str, ...]] = {
    "loaded": ("traffic", "delay", *MEMORY_COMMON),
    "idle": MEMORY_COMMON,
    "peak": ("traffic", *MEMORY_COMMON),
    "scaling": ("traffic", "threads", *MEMORY_COMMON),
    "latency_matrix": MEMORY_COMMON,
    "bandwidth_matrix": ("traffic", *MEMORY_COMMON),
    "c2c": ("c2c", "pages", "duration"),  # one cache line: no buffer or stride of its own
    "working_set": ("buffer", "pages", "stride", "duration"),
}
MIXED_RW = ("rw", "randrw")  # the storage modes that read rwmixread


def shown_keys(kind: str, modes: list[object]) -> list[str]:
    """The form's keys for a plan of these memory modes (or storage rw modes), in the form's order."""
    if kind == core.MEMORY:
        read = {"mode"} | {k for m in modes for k in MODE_FIELDS.get(str(m), ())
                           if k not in MODE_ONLY_KEYS or m in MODE_ONLY_KEYS[k]}
        return [f.key for f in MEMORY_FIELDS if f.key in read]
    return [f.key for f in STORAGE_FIELDS if f.key != "rwmixread" or any(m in MIXED_RW for m in modes)]


def mode_key(kind: str) -> str:
    """The field whose values decide which other fields a plan reads."""
    return "mode" if kind == core.MEMORY else "rw"


def check_field(kind: str, key: str, raw: str, optional: bool) -> tuple[list[object] | None, str]:
    """Parse a comma list with the core's parser: (values or None, error message or ''); an optional field
    left empty is ``[]`` (the key's default)."""
    raw = raw.strip()
    if not raw:
        return ([], "") if optional else (None, "a value is required")
    try:
        return core.parse_overrides(kind, [f"{key}={raw}"])[key], ""
    except UsageError as e:
        text = str(e)
        prefix = f"--set {key}={raw}: "
        return None, text[len(prefix):] if text.startswith(prefix) else text


# --- a preset as a table -----------------------------------------------------------------------------------------


@dataclass
class Table:
    """A preset as its file says it: [settings] (point and procedure keys), then [matrix] (one group without a
    label) or [[group]] tables."""

    name: str
    kind: str
    description: str
    settings: dict[str, object] = field(default_factory=dict)
    groups: list[Group] = field(default_factory=list)

    @property
    def labels(self) -> list[str]:
        return [g.label for g in self.groups if g.label]


def _procedure_settings(kind: str, proc: Procedure) -> dict[str, object]:
    """The procedure keys a preset sets to other than their default, written as [settings] takes them."""
    out: dict[str, object] = {}
    for key in procedure_keys(kind):
        value = getattr(proc, key)
        if value == PROCEDURE_KEYS[key].default:
            continue
        out[key] = " ".join(f"{k}={v}" for k, v in value.items()) if isinstance(value, dict) else value
    return out


def table_of(preset: Preset) -> Table:
    """``preset`` with its overrides (``--set``, the app's) folded in, as a table that gives the same plan."""
    settings: dict[str, object] = {k: v for k, v in preset.settings.items() if k not in preset.overrides}
    settings.update(_procedure_settings(preset.kind, preset.procedure))
    groups = [Group(g.label, {k: list(v) for k, v in g.axes.items() if k not in preset.overrides})
              for g in preset.groups]
    t = Table(preset.name, preset.kind, preset.description, settings, groups)
    for key, values in preset.overrides.items():
        _replace(t, key, list(values))
    return t


def blank(kind: str, name: str, description: str) -> Table:
    return Table(name, kind, description, {"mode": "loaded"} if kind == core.MEMORY else {})


def _value(v: object) -> str:
    if v is None:
        return '"none"'
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return repr(v)
    return json.dumps(str(v))


def _entry(key: str, values: list[object]) -> str:
    return f"{key} = {_value(values[0])}" if len(values) == 1 else \
        f"{key} = [{', '.join(_value(v) for v in values)}]"


def to_toml(t: Table) -> str:
    """The preset file of ``t``: what the form saves, and what it runs (parsed back by the core's parser)."""
    lines = [f"name = {_value(t.name)}", f"kind = {_value(t.kind)}", f"description = {_value(t.description)}",
             "", "[settings]"]
    lines += [_entry(k, [v]) for k, v in t.settings.items()]
    if len(t.groups) == 1 and not t.groups[0].label:
        if t.groups[0].axes:
            lines += ["", "[matrix]"] + [_entry(k, list(v)) for k, v in t.groups[0].axes.items()]
    else:
        for g in t.groups:
            lines += ["", "[[group]]"] + ([f"label = {_value(g.label)}"] if g.label else [])
            lines += [_entry(k, list(v)) for k, v in g.axes.items()]
    return "\n".join(lines) + "\n"


def preset_of(t: Table, source: str = "custom sweep (TUI)") -> Preset:
    import tomllib

    return core.parse_preset(tomllib.loads(to_toml(t)), source)


# --- what the form shows first ------------------------------------------------------------------------------------


def _raw_values(preset: Preset, key: str) -> list[object]:
    """The values ``preset`` gives ``key`` as its file writes them (plan-time words such as "each" kept), in
    order, without repeats; [] when it does not set the key."""
    if key in preset.overrides:
        return list(preset.overrides[key])
    values: list[object] = []
    for g in preset.groups:
        values += g.axes.get(key, [])
    if key in preset.settings and (not preset.groups or any(key not in g.axes for g in preset.groups)):
        values.insert(0, preset.settings[key])
    return list(dict.fromkeys(values))


def start_values(preset: Preset) -> dict[str, str]:
    """The form's fields as ``preset`` (overrides applied) has them, written as a person types them; a key the
    preset leaves to its default shows the plan's value (the memory delays), or the field's default."""
    d = describe_plan(preset)
    found: dict[str, str] = {}
    for f in FIELDS.get(preset.kind, ()):
        raw = _raw_values(preset, f.key)
        if raw:
            text = ",".join(setting_text(f.key, v) if v is not None else "none" for v in raw)
        elif f.key in d.axes:
            text = d.axis_text(f.key).replace(", ", ",")
        elif d.settings.get(f.key) is not None:
            text = setting_text(f.key, d.settings[f.key])
        else:
            continue
        if check_field(preset.kind, f.key, text, f.optional)[0] is not None:
            found[f.key] = text
    return found


# --- the form's edits ---------------------------------------------------------------------------------------------


def _replace(t: Table, key: str, values: Sequence[object]) -> None:
    """``key`` takes ``values`` in every group, as ``--set`` does; [] leaves it to its default."""
    t.settings.pop(key, None)
    for g in t.groups:
        g.axes.pop(key, None)
    if len(values) == 1:
        t.settings[key] = values[0]
    elif values:
        if not t.groups:
            t.groups = [Group(None, {})]
        for g in t.groups:
            g.axes[key] = cast("list[PointValue]", list(values))  # values the key's parser gave


def paired(t: Table, key: str) -> bool:
    """``key``'s values differ between the table's groups (quick's rw, bs and iodepth)."""
    if len(t.groups) < 2 or not any(key in g.axes for g in t.groups):
        return False
    own = [g.axes.get(key) for g in t.groups]
    return any(v != own[0] for v in own)


def _every_combination(t: Table, form: dict[str, list[object]]) -> Table:
    """The plan of the fields' values crossed, the preset's other settings kept; the groups' other keys become
    axes of every value they had (their labels are lost)."""
    out = Table(t.name, t.kind, t.description, {k: v for k, v in t.settings.items() if k not in form})
    axes: dict[str, list[PointValue]] = {}
    for g in t.groups:
        for key, values in g.axes.items():
            if key not in form:
                axes[key] = list(dict.fromkeys(axes.get(key, []) + list(values)))
    out.groups = [Group(None, axes)] if axes else []
    for key, typed in form.items():
        _replace(out, key, typed)
    return out


@dataclass
class FormPlan:
    table: Table
    note: str  # how the preset's pairing fared, in plain words ("" for a preset without groups)
    kept: bool  # the preset's groups (pairing and labels) are what runs


def _names(keys: list[str], kind: str) -> str:
    labels = {f.key: f.label for f in FIELDS[kind]}
    words = [labels.get(k, k) for k in keys]
    return ", ".join(words[:-1]) + " and " + words[-1] if len(words) > 1 else words[0]


def _label_list(labels: list[str], limit: int = 4) -> str:
    return ", ".join(labels[:limit]) + (f" and {len(labels) - limit} more" if len(labels) > limit else "")


def form_plan(start: Table, form: dict[str, list[object]], first: dict[str, list[object]]) -> FormPlan:
    """The table the form runs: ``start`` with the fields whose values differ from ``first`` (what the form
    showed at first) applied; the note says whether the preset's pairing is kept and what runs."""
    t = copy.deepcopy(start)
    edited = {k: v for k, v in form.items() if first.get(k) != v}
    pairs = [k for k in form if paired(start, k)]
    broken: list[tuple[str, list[object]]] = []
    for key, values in edited.items():
        if not paired(t, key):
            _replace(t, key, values)
            continue
        had = [v for g in t.groups for v in g.axes.get(key, [])]
        new = [v for v in values if v not in had]
        if new or not values:
            broken.append((key, new))
            continue
        for g in t.groups:
            if key in g.axes:
                g.axes[key] = [v for v in g.axes[key] if v in values]
        t.groups = [g for g in t.groups if all(g.axes.values())]
    labels = start.labels
    if broken:
        key, new = broken[0]
        what = (f"{_names([key], start.kind).lower()} {', '.join(setting_text(key, v) for v in new)} is in none "
                f"of them" if new else f"{_names([key], start.kind).lower()} is left empty")
        note = (f"{start.name} pairs {_names(pairs, start.kind)} in its groups"
                + (f" ({_label_list(labels)})" if labels else "") + f"; {what}, so the pairing cannot be kept: this "
                f"runs every combination of the fields instead" + (f", without {start.name}'s labels" if labels else "")
                + f". To keep {start.name}'s tests, use only values it has.")
        return FormPlan(_every_combination(t, form), note, False)
    if not pairs:
        return FormPlan(t, "", True)
    kept = t.labels
    if len(t.groups) == len(start.groups):
        note = (f"Runs {start.name}'s {len(t.groups)} groups as it pairs them"
                + (f" ({_label_list(labels)})" if labels else "")
                + f": removing a value of {_names(pairs, start.kind)} drops the tests that use it; "
                  "a value it does not have cannot keep the pairing.")
    else:
        gone = [lbl for lbl in labels if lbl not in kept]
        note = (f"Runs {len(t.groups)} of {start.name}'s {len(start.groups)} groups"
                + (f" ({_label_list(kept)})" if kept else "") + ", as it pairs them"
                + (f"; the values removed drop {_label_list(gone)}." if gone else "."))
    return FormPlan(t, note, True)
