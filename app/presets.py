"""Presets (SPEC §4): TOML files validated on load, expanded into a plan of points.

A preset file::

    name = "quick"
    kind = "storage"            # or "memory"
    description = "..."

    [settings]                  # scalars shared by every point
    runtime = 5

    [matrix]                    # axes: the plan is their cartesian product
    bs = ["4k", "128k"]

or, instead of ``[matrix]``, several ``[[group]]`` tables, each a small matrix of
its own (a scalar is a one-value axis) with an optional ``label``.  ``--set``
overrides apply to every group; identical points are merged.

Every value is checked by the parser of its key; errors name file, key and value.
"""

from __future__ import annotations

import itertools
import json
import os
import re
import sys
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from app.errors import UsageError
from app.units import format_duration, parse_duration, parse_size

STORAGE = "storage"
MEMORY = "memory"
KINDS = (STORAGE, MEMORY)

RW_MODES = ("read", "write", "randread", "randwrite", "rw", "randrw", "trim", "randtrim")
WRITE_MODES = frozenset({"write", "randwrite", "rw", "randrw", "trim", "randtrim"})
IOENGINES = ("libaio", "io_uring", "psync", "sync", "pvsync2", "posixaio")
MLC_DELAYS = (0, 2, 8, 15, 50, 100, 200, 300, 400, 500, 700, 1000, 1300, 1700, 2500, 3500, 5000, 9000, 20000)
TRAFFIC = ("R", "W2", "W3", "W4", "W5", "W6", "W7", "W8", "W9", "W10", "W11", "W12")
MEMORY_MODES = ("loaded", "idle")
ENGINES = ("auto", "mlc", "builtin")


# --- value parsers: each takes a TOML or command-line value, returns the canonical one ---------


def _int(lo: int | None = None, hi: int | None = None) -> Callable[[Any], int]:
    def parse(v: Any) -> int:
        if isinstance(v, bool):
            raise ValueError("expected a whole number")
        if isinstance(v, str) and re.fullmatch(r"\s*-?\d+\s*", v):
            v = int(v)
        if isinstance(v, float) and v.is_integer():
            v = int(v)
        if not isinstance(v, int):
            raise ValueError("expected a whole number")
        if lo is not None and v < lo:
            raise ValueError(f"must be at least {lo}")
        if hi is not None and v > hi:
            raise ValueError(f"must be at most {hi}")
        return v

    return parse


def _choice(options: tuple[str, ...], fold: Callable[[str], str] = str.lower) -> Callable[[Any], str]:
    canon = {fold(o): o for o in options}

    def parse(v: Any) -> str:
        if not isinstance(v, str) or fold(v.strip()) not in canon:
            raise ValueError("must be one of " + ", ".join(options))
        return canon[fold(v.strip())]

    return parse


def _bool(v: Any) -> bool:
    if isinstance(v, bool):
        return v
    if isinstance(v, int) and v in (0, 1):
        return bool(v)
    if isinstance(v, str) and v.strip().lower() in ("1", "true", "yes", "on", "0", "false", "no", "off"):
        return v.strip().lower() in ("1", "true", "yes", "on")
    raise ValueError("expected true or false")


def _optional(parse: Callable[[Any], Any]) -> Callable[[Any], Any]:
    def wrapped(v: Any) -> Any:
        if v is None or (isinstance(v, str) and v.strip().lower() in ("", "none", "null", "default")):
            return None
        return parse(v)

    return wrapped


def _seconds(lo: float) -> Callable[[Any], float | int]:
    def parse(v: Any) -> float | int:
        s = parse_duration(v)
        if s < lo:
            raise ValueError(f"must be at least {lo:g} s")
        return int(s) if float(s).is_integer() else s

    return parse


def _stride(v: Any) -> int:
    n = parse_size(v)
    if n < 64 or n & (n - 1):
        raise ValueError("must be a power of two of at least 64 bytes")
    return n


def _traffic(v: Any) -> str:
    if isinstance(v, int) and not isinstance(v, bool):
        v = f"W{v}"
    if isinstance(v, str):
        s = v.strip().upper()
        if s in ("R", "READ", "READS", "ALL-READS", "-R"):
            return "R"
        s = s.lstrip("-")
        if s.isdigit():
            s = "W" + s
        if s in TRAFFIC:
            return s
    raise ValueError("must be R (all reads) or an MLC traffic code W2 … W12")


def _cpus(v: Any) -> str:
    if isinstance(v, int) and not isinstance(v, bool):
        v = str(v)
    if isinstance(v, list):
        v = ",".join(str(x) for x in v)
    if not isinstance(v, str) or not re.fullmatch(r"\d+(-\d+)?(,\d+(-\d+)?)*", v.replace(" ", "")):
        raise ValueError("expected a CPU list such as 0-3 or 0,2,4")
    return v.replace(" ", "")


@dataclass(frozen=True)
class Key:
    parse: Callable[[Any], Any]
    default: Any
    help: str


STORAGE_KEYS: dict[str, Key] = {
    "rw": Key(_choice(RW_MODES), "randread", "I/O pattern: " + ", ".join(RW_MODES)),
    "bs": Key(parse_size, 4096, "block size in bytes (4k, 128k, 1m)"),
    "rwmixread": Key(_optional(_int(0, 100)), None, "percentage of reads in rw/randrw mixes"),
    "iodepth": Key(_int(1, 65536), 1, "I/Os in flight per job"),
    "numjobs": Key(_int(1, 1024), 1, "parallel jobs (threads of I/O)"),
    "ioengine": Key(_choice(IOENGINES), "libaio", "fio ioengine: " + ", ".join(IOENGINES)),
    "direct": Key(_bool, True, "O_DIRECT, bypassing the page cache"),
    "runtime": Key(_seconds(1), 10, "measured seconds per point"),
    "ramp_time": Key(_seconds(0), 0, "seconds run before measuring"),
    "size": Key(parse_size, 1 << 30, "file size, or the region of a device exercised"),
    "time_based": Key(_bool, True, "run for runtime even when size is covered"),
}

MEMORY_KEYS: dict[str, Key] = {
    "mode": Key(_choice(MEMORY_MODES), "loaded", "idle (one latency figure) or loaded (latency under load)"),
    "traffic": Key(_traffic, "R", "R for all reads or an MLC -W code (W2 … W12)"),
    "delay": Key(_int(0, 10_000_000), 0, "injection delay between load-thread accesses"),
    "stride": Key(_stride, 64, "bytes between accesses (power of two, at least 64)"),
    "buffer": Key(_optional(parse_size), None, "buffer per thread (default: 2x the last-level cache)"),
    "duration": Key(_seconds(1), 2, "measured seconds per point (MLC -t)"),
    "cpus": Key(_optional(_cpus), None, "CPU list; the first runs the latency thread"),
}

KEYS = {STORAGE: STORAGE_KEYS, MEMORY: MEMORY_KEYS}
TOP_LEVEL = ("name", "kind", "description", "settings", "matrix", "group")


@dataclass
class Group:
    label: str | None
    axes: dict[str, list[Any]]


@dataclass
class Preset:
    name: str
    kind: str
    description: str
    source: str
    settings: dict[str, Any] = field(default_factory=dict)
    groups: list[Group] = field(default_factory=list)
    overrides: dict[str, list[Any]] = field(default_factory=dict)

    @property
    def keys(self) -> dict[str, Key]:
        return KEYS[self.kind]

    def expand(self) -> list[dict[str, Any]]:
        """Every point of the plan, in order, duplicates merged."""
        keys = self.keys
        base = {k: spec.default for k, spec in keys.items()}
        if self.kind == MEMORY and "delay" not in self.settings:
            base_axes: dict[str, list[Any]] = {"delay": list(MLC_DELAYS)}
        else:
            base_axes = {}
        base.update(self.settings)
        points: list[dict[str, Any]] = []
        seen: set[str] = set()
        for group in self.groups or [Group(None, {})]:
            axes = dict(base_axes)
            axes.update(group.axes)
            for key, values in self.overrides.items():
                axes[key] = values
            # delay varies fastest: the delays of one curve are consecutive, so the runner measures
            # them in one MLC/engine invocation (sweep batches consecutive points)
            if self.kind == MEMORY and "delay" in axes:
                axes["delay"] = axes.pop("delay")
            # an idle-latency point has no injection delay
            if self.kind == MEMORY and axes.get("mode", [base["mode"]]) == ["idle"]:
                axes.pop("delay", None)
            names = list(axes)
            for combo in itertools.product(*(axes[n] for n in names)):
                point = dict(base)
                point.update(zip(names, combo))
                if group.label:
                    point["group"] = group.label
                normalise_point(self.kind, point)
                key = point_key(point)
                if key not in seen:
                    seen.add(key)
                    points.append(point)
        return points

    def writes(self) -> bool:
        return plan_writes(self.kind, self.expand())


def normalise_point(kind: str, point: dict[str, Any]) -> None:
    """Settings that have no effect are made canonical so equal jobs compare equal."""
    if kind == STORAGE:
        if point["rw"] not in ("rw", "randrw"):
            point["rwmixread"] = None
        elif point.get("rwmixread") is None:
            point["rwmixread"] = 50
    elif point.get("mode") == "idle":
        point["delay"] = None
        point["traffic"] = None


def point_key(point: dict[str, Any]) -> str:
    """A stable identity of a point, used to merge duplicates and to resume."""
    # "engine" is added to memory records by the runner (SPEC §7), never part of the plan
    return json.dumps({k: v for k, v in point.items() if k not in ("group", "engine")}, sort_keys=True)


def plan_writes(kind: str, points: list[dict[str, Any]]) -> bool:
    if kind != STORAGE:
        return False
    # rw/randrw count as writes even at rwmixread=100: fio opens the target for writing.
    return any(p["rw"] in WRITE_MODES for p in points)


# --- loading ---------------------------------------------------------------------------------


def _fail(where: str, msg: str) -> UsageError:
    return UsageError(f"{where}: {msg}")


def _check_value(where: str, kind: str, key: str, value: Any) -> Any:
    keys = KEYS[kind]
    if key not in keys:
        raise _fail(where, f"unknown key '{key}' for a {kind} preset; known keys: {', '.join(keys)}.")
    try:
        return keys[key].parse(value)
    except ValueError as e:
        shown = json.dumps(value) if not isinstance(value, str) else f"'{value}'"
        raise _fail(where, f"key '{key}' has invalid value {shown}: {e}.") from None


def _axis(where: str, kind: str, key: str, value: Any) -> list[Any]:
    values = value if isinstance(value, list) else [value]
    if not values:
        raise _fail(where, f"axis '{key}' is an empty list.")
    return [_check_value(where, kind, key, v) for v in values]


def parse_preset(data: dict[str, Any], source: str) -> Preset:
    for key in data:
        if key not in TOP_LEVEL:
            raise _fail(source, f"unknown top-level key '{key}'; expected one of {', '.join(TOP_LEVEL)}.")
    kind = data.get("kind")
    if kind not in KINDS:
        raise _fail(source, f"key 'kind' has invalid value {json.dumps(kind)}: must be storage or memory.")
    name = data.get("name")
    if not isinstance(name, str) or not name.strip():
        raise _fail(source, "key 'name' is missing or empty.")
    description = data.get("description", "")
    if not isinstance(description, str):
        raise _fail(source, "key 'description' must be a string.")
    settings_raw = data.get("settings", {})
    if not isinstance(settings_raw, dict):
        raise _fail(source, "[settings] must be a table of key = value.")
    settings = {}
    for key, value in settings_raw.items():
        if isinstance(value, list):
            raise _fail(source, f"[settings] key '{key}' is a list; put axes under [matrix] or [[group]].")
        settings[key] = _check_value(source, kind, key, value)
    if "matrix" in data and "group" in data:
        raise _fail(source, "use either [matrix] or [[group]] tables, not both.")
    groups: list[Group] = []
    raw_groups = data.get("group", [data["matrix"]] if "matrix" in data else [])
    if not isinstance(raw_groups, list) or not all(isinstance(g, dict) for g in raw_groups):
        raise _fail(source, "[matrix] must be a table and [[group]] an array of tables.")
    for i, raw in enumerate(raw_groups):
        label = raw.get("label")
        if label is not None and not isinstance(label, str):
            raise _fail(source, f"group {i + 1}: key 'label' must be a string.")
        axes = {k: _axis(source, kind, k, v) for k, v in raw.items() if k != "label"}
        groups.append(Group(label, axes))
    return Preset(name=name, kind=kind, description=description, source=source, settings=settings, groups=groups)


def read_toml(path: str | os.PathLike[str], what: str = "preset file") -> dict[str, Any]:
    """A TOML file's table; a missing, unreadable or malformed file is a UsageError naming it."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise UsageError(f"{path}: no such {what}.") from None
    except (OSError, UnicodeDecodeError) as e:
        raise UsageError(f"{path}: cannot be read ({e}).") from None
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise UsageError(f"{path}: TOML syntax error: {e}.") from None


def load_file(path: str | os.PathLike[str]) -> Preset:
    return parse_preset(read_toml(path), str(path))


# --- where presets live -----------------------------------------------------------------------


def shipped_dir() -> Path:
    """The shipped presets: the repository's presets/ or the installed copy."""
    env = os.environ.get("PROFILER_TUI_PRESETS")
    if env:
        return Path(env)
    here = Path(__file__).resolve().parent.parent / "presets"
    if here.is_dir():
        return here
    return Path(sys.prefix) / "share" / "profiler-tui" / "presets"


def user_dir() -> Path:
    base = os.environ.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config")
    return Path(base) / "profiler-tui" / "presets"


def available() -> dict[str, Path]:
    """Preset name → file; a user preset of the same name shadows a shipped one."""
    found: dict[str, Path] = {}
    for directory in (shipped_dir(), user_dir()):
        if directory.is_dir():
            for f in sorted(directory.glob("*.toml")):
                found[f.stem] = f
    return found


def load(name_or_path: str) -> Preset:
    """A shipped or user preset by name, or a TOML file by path."""
    if name_or_path.endswith(".toml") or os.sep in name_or_path:
        return load_file(name_or_path)
    table = available()
    if name_or_path not in table:
        raise UsageError(
            f"Unknown preset '{name_or_path}'; available: {', '.join(sorted(table))} (or give a path to a .toml file)."
        )
    return load_file(table[name_or_path])


def load_all() -> list[Preset]:
    return [load_file(p) for p in available().values()]


# --- --set overrides --------------------------------------------------------------------------


def parse_overrides(kind: str, items: list[str] | tuple[str, ...]) -> dict[str, list[Any]]:
    """``["bs=4k,64k", "runtime=3"]`` → ``{"bs": [4096, 65536], "runtime": [3]}``."""
    result: dict[str, list[Any]] = {}
    for item in items:
        if "=" not in item:
            raise UsageError(f"--set '{item}' is not KEY=VALUE (for example --set bs=4k,64k).")
        key, _, value = item.partition("=")
        key = key.strip()
        where = f"--set {item}"
        values = [v.strip() for v in value.split(",")]
        if not value.strip() or any(v == "" for v in values):
            raise _fail(where, f"key '{key}' has an empty value.")
        result[key] = [_check_value(where, kind, key, v) for v in values]
    return result


def apply_overrides(preset: Preset, items: list[str] | tuple[str, ...]) -> Preset:
    overrides = parse_overrides(preset.kind, items)
    preset.overrides.update(overrides)
    for key in overrides:
        preset.settings.pop(key, None)
    return preset


def save_user_preset(preset_toml: str, name: str) -> Path:
    """Write a user preset (validated first) into the user directory."""
    if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_.-]*", name):
        raise UsageError(f"Preset name '{name}' may use letters, digits, '-', '_' and '.' only.")
    directory = user_dir()
    path = directory / f"{name}.toml"
    parse_preset(tomllib.loads(preset_toml), str(path))
    directory.mkdir(parents=True, exist_ok=True)
    path.write_text(preset_toml, encoding="utf-8")
    return path


# --- estimates --------------------------------------------------------------------------------

# Wall time a point costs beyond what it measures (process start, file layout check, teardown);
# bench/fio_overhead.py measures the real figure.
STORAGE_OVERHEAD_S = 0.5
MEMORY_OVERHEAD_S = 1.0


def estimate_point_seconds(kind: str, point: dict[str, Any]) -> float:
    if kind == STORAGE:
        return float(point["runtime"]) + float(point["ramp_time"]) + STORAGE_OVERHEAD_S
    return float(point["duration"]) + MEMORY_OVERHEAD_S


def estimate_seconds(kind: str, points: list[dict[str, Any]]) -> float:
    return sum(estimate_point_seconds(kind, p) for p in points)


def describe_axes(preset: Preset) -> dict[str, list[Any]]:
    """Every key that varies across the plan, with its values in plan order."""
    points = preset.expand()
    axes: dict[str, list[Any]] = {}
    for key in preset.keys:
        values: list[Any] = []
        for p in points:
            if p.get(key) not in values:
                values.append(p.get(key))
        if len(values) > 1:
            axes[key] = values
    return axes


def summary(preset: Preset) -> dict[str, Any]:
    points = preset.expand()
    seconds = estimate_seconds(preset.kind, points)
    return {
        "name": preset.name,
        "kind": preset.kind,
        "description": preset.description,
        "source": preset.source,
        "points": len(points),
        "estimated_seconds": seconds,
        "estimated": format_duration(seconds),
        "writes": plan_writes(preset.kind, points),
    }
