"""The keys of a plan point: the parser that reads each key's value from a preset, ``--set``, the TUI form or
an untrusted run.json, and :class:`Key`, what a field of :class:`app.model.points.StoragePoint` /
:class:`app.model.points.MemoryPoint` declares about itself (parser, default, help, role, when it was added).

Every parser takes a value as TOML, JSON or a command line gives it (``object``: anything) and returns the
canonical one, or raises ValueError with the reason (the caller names file, key and value).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from enum import StrEnum
from typing import Callable, Generic, Mapping, TypeAlias, TypeVar

from app.core.sanitize import has_control
from app.core.units import parse_duration, parse_size

T = TypeVar("T")
V = TypeVar("V", covariant=True)
Parser = Callable[[object], T]
Value: TypeAlias = str | int | float | bool | None  # what a point's key holds (bool: direct, time_based)

RW_MODES = ("read", "write", "randread", "randwrite", "rw", "randrw", "trim", "randtrim")
IOENGINES = ("libaio", "io_uring", "psync", "sync", "pvsync2", "posixaio")
ENGINES = ("auto", "mlc", "builtin")  # the memory engines --engine names
MLC_DELAYS = (0, 2, 8, 15, 50, 100, 200, 300, 400, 500, 700, 1000, 1300, 1700, 2500, 3500, 5000, 9000, 20000)
TRAFFIC = ("R", "W2", "W3", "W4", "W5", "W6", "W7", "W8", "W9", "W10", "W11", "W12")
# idle and loaded latency, then the suite beside them (one results line = one figure of one of these)
MEMORY_MODES = ("loaded", "idle", "peak", "scaling", "latency_matrix", "bandwidth_matrix", "c2c", "working_set")
PAGE_SIZES = ("2m", "4k")  # the memory engines' page sizes: huge pages where the kernel allows, or base pages
C2C_KINDS = ("hitm", "hit")  # a cache-to-cache transfer of a modified line, or of a clean one
C2C_HOMES = ("writer", "reader")  # the node a remote c2c line's memory is bound to
MAX_THREADS = 1024

# the adaptive axes' saturation rule (app.plan.procedure) and the peak's "stopped growing" (app.stats.peak):
SATURATION_IOPS_GAIN = 0.03  # IOPS grew less than 3 % over a step
TELEMETRY_INTERVAL_S = 10  # seconds between drive telemetry readings while a point runs (app.host.telemetry)
MAX_SECONDS = 7 * 24 * 3600  # runtime and ramp_time: 7 days
MAX_MEMORY_SECONDS = 3600  # memory duration: the built-in engine's limit (MLC's -t is whole seconds)
MIN_MEMORY_SECONDS = 0.05  # a working-set point's window can be this short (MLC's -t rounds up to 1 s)
MAX_BS = 64 << 20  # 64 MiB
MAX_SIZE = 1 << 50  # 1 PiB
# 1 KiB … 4 GiB per thread, whole KiB (-b takes KiB).  4 GiB is the built-in engine's cap (native/memlat/src/memlat.h):
# 8 times the largest last-level cache one thread fills on current server CPUs (about 0.5 GiB), past every cache and
# the TLB reach of huge pages; a larger buffer measures nothing more, it only takes longer and more memory
MIN_BUFFER, MAX_BUFFER = 1 << 10, 4 << 30
MAX_STRIDE = 4096  # the built-in engine's limit
MIN_TLB_LOCALITY = 4 << 10  # tlb_locality groups: 4 KiB (one page; at least one slot at the largest stride) …
MAX_TLB_LOCALITY = 1 << 30  # … to 1 GiB, in whole KiB (the engine's --tlb_locality takes KiB)
MAX_DELAY = 10_000_000
MAX_CPU = 1023  # CPU numbers 0 … 1023 (the built-in engine's limit)
MAX_NODE = 1023  # NUMA node numbers 0 … 1023 (the kernel's largest MAX_NUMNODES, the built-in engine's limit)
MAX_CPUS_CHARS = 4096

# --- value parsers: each takes a TOML or command-line value, returns the canonical one ---------


def whole(lo: int | None = None, hi: int | None = None) -> Parser[int]:
    def parse(v: object) -> int:
        if isinstance(v, bool):
            raise ValueError("expected a whole number")
        if isinstance(v, str) and re.fullmatch(r" *-?[0-9]+ *", v):
            if len(v.strip().lstrip("-")) > 18:  # beyond every bound (and int()'s 4300-digit limit)
                raise ValueError(f"must be at least {lo}" if "-" in v else f"must be at most {hi}")
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


def choice(options: tuple[str, ...], fold: Callable[[str], str] = str.lower) -> Parser[str]:
    canon = {fold(o): o for o in options}

    def parse(v: object) -> str:
        # only spaces are stripped: "randread\n" is refused (control characters), not read as randread
        if not isinstance(v, str) or fold(v.strip(" ")) not in canon:
            raise ValueError("must be one of " + ", ".join(options))
        return canon[fold(v.strip(" "))]

    return parse


def boolean(v: object) -> bool:
    if isinstance(v, bool):
        return v
    if isinstance(v, int) and v in (0, 1):
        return bool(v)
    if isinstance(v, str) and v.strip(" ").lower() in ("1", "true", "yes", "on", "0", "false", "no", "off"):
        return v.strip(" ").lower() in ("1", "true", "yes", "on")
    raise ValueError("expected true or false")


def optional(parse: Parser[T]) -> Parser[T | None]:
    def wrapped(v: object) -> T | None:
        if v is None or (isinstance(v, str) and v.strip(" ").lower() in ("", "none", "null", "default")):
            return None
        return parse(v)

    return wrapped


def seconds(lo: float, hi: float) -> Parser[float | int]:
    """Seconds with millisecond resolution: an int when whole (10), else a float of at most three
    decimals (1.5 for "1.5" or "1500ms"); finer values are refused, not rounded."""

    def parse(v: object) -> float | int:
        s = parse_duration(v)
        if s < lo:
            raise ValueError(f"must be at least {lo:g} s")
        if s > hi:
            raise ValueError(f"must be at most {hi:g} s")
        ms = round(s * 1000)
        if abs(s * 1000 - ms) > 1e-6 * max(1.0, ms):
            raise ValueError("must be a whole number of milliseconds (e.g. 1.5 or 1500ms)")
        return ms // 1000 if ms % 1000 == 0 else ms / 1000

    return parse


def _bytes_text(n: int) -> str:
    for unit, mult in (("PiB", 1 << 50), ("TiB", 1 << 40), ("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= mult and n % mult == 0:
            return f"{n // mult} {unit}"
    return f"{n} bytes"


def size(lo: int, hi: int, unit: int = 1) -> Parser[int]:
    def parse(v: object) -> int:
        n = parse_size(v)
        if n < lo:
            raise ValueError(f"must be at least {_bytes_text(lo)}")
        if n > hi:
            raise ValueError(f"must be at most {_bytes_text(hi)}")
        if n % unit:
            raise ValueError(f"must be a whole number of {_bytes_text(unit)}")
        return n

    return parse


def stride(v: object) -> int:
    n = parse_size(v)
    if n < 64 or n > MAX_STRIDE or n & (n - 1):
        raise ValueError(f"must be a power of two from 64 to {MAX_STRIDE} bytes")
    return n


def tlb_locality(v: object) -> int | None:
    """None (the default) chases the whole buffer in one random order; a size chases randomly within
    groups of that many bytes, groups in random order (multichase's -T). 0, "0", "none", "whole" = None."""
    if v is None or (isinstance(v, int) and not isinstance(v, bool) and v == 0):
        return None
    if isinstance(v, str) and v.strip(" ").lower() in ("", "0", "none", "null", "default", "whole", "whole-buffer"):
        return None
    if isinstance(v, bool):
        raise ValueError("expected a size such as 256k, or none for the whole buffer")
    return size(MIN_TLB_LOCALITY, MAX_TLB_LOCALITY, 1024)(v)


def traffic(v: object) -> str:
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


def cpus(v: object) -> str:
    if isinstance(v, int) and not isinstance(v, bool):
        v = str(v)
    if isinstance(v, list) and all(isinstance(x, (int, str)) and not isinstance(x, bool) for x in v):
        v = ",".join(str(x) for x in v)
    if not isinstance(v, str) or len(v) > MAX_CPUS_CHARS:
        raise ValueError("expected a CPU list such as 0-3 or 0,2,4")
    v = v.replace(" ", "")
    if not re.fullmatch(r"[0-9]{1,4}(-[0-9]{1,4})?(,[0-9]{1,4}(-[0-9]{1,4})?)*", v):
        raise ValueError("expected a CPU list such as 0-3 or 0,2,4")
    seen: set[int] = set()
    for part in v.split(","):
        a, _, b = part.partition("-")
        first, last = int(a), int(b or a)
        if last < first or last > MAX_CPU:
            raise ValueError(f"expected a CPU list such as 0-3 or 0,2,4 with CPUs 0 to {MAX_CPU}, ranges ascending")
        if seen.intersection(range(first, last + 1)):
            raise ValueError("lists a CPU twice")
        seen.update(range(first, last + 1))
    return v


NODE = "node"  # a storage point's cpus: the CPUs of the target device's NUMA node, resolved for a target


def cpus_or_node(v: object) -> str:
    """A storage point's ``cpus``: a CPU list (:func:`cpus`) or the word ``node``, which the plan made for a
    target replaces by the CPUs of that device's NUMA node (app.engine.sweep)."""
    if isinstance(v, str) and v.strip(" ").lower() == NODE:
        return NODE
    try:
        return cpus(v)
    except ValueError as e:
        if str(e).startswith("expected a CPU list such as 0-3 or 0,2,4") and "CPUs 0 to" not in str(e):
            raise ValueError(f"{e}, or node (the CPUs of the target device's NUMA node)") from None
        raise


STEADY_METRICS = ("iops", "bw", "iops_slope", "bw_slope")
MAX_STEADY_PERCENT = 100


def steady(v: object) -> str:
    """A fio steady-state criterion: METRIC:PERCENT% with METRIC one of STEADY_METRICS ("iops:2%",
    "iops_slope:0.3%"); canonical as ``f"{metric}:{percent:g}%"``."""
    shape = "a fio steady-state criterion such as iops:2%, iops_slope:0.3% or bw:2%"
    if not isinstance(v, str):
        raise ValueError(f"expected {shape}")
    m = re.fullmatch(r" *([a-z_]+) *: *([0-9]{1,6}(?:\.[0-9]{1,6})?) *% *", v.lower())
    if not m or m.group(1) not in STEADY_METRICS:
        raise ValueError(f"expected {shape} (metric {', '.join(STEADY_METRICS)}, a percentage)")
    percent = float(m.group(2))
    if not 0 < percent <= MAX_STEADY_PERCENT:
        raise ValueError(f"the percentage must be above 0 and at most {MAX_STEADY_PERCENT}")
    return f"{m.group(1)}:{percent:g}%"


MIN_PRECISION_PERCENT, MAX_PRECISION_PERCENT = 0.1, 50


def precision(v: object) -> str:
    """A relative precision of mean IOPS, in percent of the mean, 0.1 to 50 with at most three decimals: "2%",
    "2 %", "0.5%" or a bare number (2, 2.5); canonical as ``f"{percent:g}%"`` ("2%")."""
    shape = "a precision in percent of the mean such as 2% or 0.5%"
    if isinstance(v, bool) or not isinstance(v, (int, float, str)):
        raise ValueError(f"expected {shape}")
    if isinstance(v, str):
        m = re.fullmatch(r" *([0-9]{1,6}(?:\.[0-9]{1,6})?) *%? *", v)
        if not m:
            raise ValueError(f"expected {shape}")
        p = float(m.group(1))
    elif isinstance(v, int) and not 0 < v <= MAX_PRECISION_PERCENT:  # before float(): a huge int overflows it
        raise ValueError(f"must be from {MIN_PRECISION_PERCENT:g}% to {MAX_PRECISION_PERCENT:g}%")
    else:
        p = float(v)
    if not (math.isfinite(p) and MIN_PRECISION_PERCENT <= p <= MAX_PRECISION_PERCENT):
        raise ValueError(f"must be from {MIN_PRECISION_PERCENT:g}% to {MAX_PRECISION_PERCENT:g}%")
    if round(p, 3) != p:
        raise ValueError("at most three decimals")
    return f"{p:g}%"


MAX_RATE_IOPS = 100_000_000  # an offered load above 100 M IOPS is no device's
MIN_RHO_PERCENT, MAX_RHO_PERCENT = 1, 200  # a relative offered load: 1 % to 200 % of the device's X_max


def rate(v: object) -> str:
    """An offered load (open loop: Poisson arrivals at this rate, whatever the device has finished): a whole
    number of I/Os per second (``20000``, ``"20k"``, ``"1.5m"``; canonical ``"20000"``), or a share of the
    device's X_max (``"50%"``, 1 % to 200 %, at most one decimal; canonical ``f"{percent:g}%"``), X_max being the
    ``xmax`` key or the highest IOPS the plan's closed-loop points of the same workload measured."""
    shape = "an offered load in I/Os per second such as 20000 or 20k, or a share of X_max such as 50%"
    if isinstance(v, bool) or not isinstance(v, (int, float, str)):
        raise ValueError(f"expected {shape}")
    if isinstance(v, str):
        m = re.fullmatch(r" *([0-9]{1,12}(?:\.[0-9]{1,6})?) *(%|k|m)? *", v.lower())
        if not m:
            raise ValueError(f"expected {shape}")
        number, unit = float(m.group(1)), m.group(2)
        if unit == "%":
            if not MIN_RHO_PERCENT <= number <= MAX_RHO_PERCENT:
                raise ValueError(f"a share of X_max must be from {MIN_RHO_PERCENT}% to {MAX_RHO_PERCENT}%")
            if round(number, 1) != number:
                raise ValueError("a share of X_max has at most one decimal")
            return f"{number:g}%"
        number *= {None: 1, "k": 1e3, "m": 1e6}[unit]
    elif isinstance(v, int) and not 1 <= v <= MAX_RATE_IOPS:  # before float(): a huge int overflows it
        raise ValueError(f"must be from 1 to {MAX_RATE_IOPS} I/Os per second")
    else:
        number = float(v)
    if not math.isfinite(number) or not number.is_integer():
        raise ValueError("must be a whole number of I/Os per second")
    if not 1 <= number <= MAX_RATE_IOPS:
        raise ValueError(f"must be from 1 to {MAX_RATE_IOPS} I/Os per second")
    return str(int(number))


def rate_share(value: str) -> float | None:
    """The share of X_max (0.5 for ``"50%"``) a canonical :func:`rate` names, None for an absolute rate."""
    return float(value[:-1]) / 100 if value.endswith("%") else None


MAX_LATENCY_BOUND_US = 60_000_000  # 60 s


def latency_bound(v: object) -> int:
    """A latency bound in whole microseconds: ``1ms``, ``500us``, ``800µs``, ``0.25s``; a bare number
    is microseconds (as fio's latency_target reads it)."""
    shape = "a latency such as 1ms or 500us"
    if isinstance(v, bool):
        raise ValueError(f"expected {shape}")
    if isinstance(v, str):
        m = re.fullmatch(r" *([0-9]{1,12}(?:\.[0-9]{1,6})?) *(us|µs|ms|s)? *", v.lower())
        if not m:
            raise ValueError(f"expected {shape}")
        us = float(m.group(1)) * {"us": 1, "µs": 1, "ms": 1000, "s": 1_000_000, None: 1}[m.group(2)]
    elif isinstance(v, int):
        if not 1 <= v <= MAX_LATENCY_BOUND_US:  # before float(): a huge int overflows it
            raise ValueError("must be from 1us to 60s")
        us = float(v)
    elif isinstance(v, float) and math.isfinite(v):
        us = v
    else:
        raise ValueError(f"expected {shape}")
    if not us.is_integer():
        raise ValueError("must be a whole number of microseconds")
    if not 1 <= us <= MAX_LATENCY_BOUND_US:
        raise ValueError("must be from 1us to 60s")
    return int(us)


def percentile(v: object) -> float | int:
    """A percentile above 0 and at most 100 (99, 99.9); an int when whole."""
    if isinstance(v, bool) or not isinstance(v, (int, float, str)):
        raise ValueError("expected a percentile such as 99 or 99.9")
    if isinstance(v, int) and not 0 < v <= 100:  # before float(): a huge int overflows it
        raise ValueError("must be above 0 and at most 100")
    try:
        p = float(v.strip(" ").rstrip("%")) if isinstance(v, str) else float(v)
    except ValueError:
        raise ValueError("expected a percentile such as 99 or 99.9") from None
    if not (math.isfinite(p) and 0 < p <= 100):
        raise ValueError("must be above 0 and at most 100")
    if round(p, 4) != p:
        raise ValueError("at most four decimals")
    return int(p) if p.is_integer() else p


def _no_control(parse: Parser[T]) -> Parser[T]:
    """Every key's parser refuses a string holding a control character before reading it."""

    def guarded(v: object) -> T:
        if isinstance(v, str) and has_control(v):
            raise ValueError("contains a control character (newline, tab, NUL, escape …)")
        if isinstance(v, list) and any(isinstance(x, str) and has_control(x) for x in v):
            raise ValueError("contains a control character (newline, tab, NUL, escape …)")
        return parse(v)

    return guarded


class Role(StrEnum):
    """What a point's key is to the report: its columns and the "everything else" of a workload."""

    WORKLOAD = "workload"  # names the workload: a column of the report's tables (rw, bs, iodepth …)
    DETAIL = "detail"  # defines the workload too, shown beside it (ioengine, direct …)
    SETTING = "setting"  # how long or how far the point runs (runtime, size …), not what it measures
    RECORD = "record"  # written by the tool, never set in a preset (group, round, engine)


@dataclass(frozen=True)
class Key(Generic[V]):
    """What one field of a plan point declares about itself; :func:`key` puts it in the field's metadata.

    ``default`` is the preset default; with ``needs`` the key only takes effect when that key is set, and
    ``implied`` is then its value unless given.  ``later``: added after the first plans were recorded, so a
    run.json plan may lack it (it then had ``default``).  ``csv``: the key's place among results.csv's point
    columns (None: not a column).  ``fio``: the fio job option a storage key is written as, ``option=value``
    in the job's section (None: the runner writes the key itself, or it is no fio option).
    """

    parse: Parser[V]
    default: V
    help: str
    role: Role = Role.SETTING
    needs: str | None = None
    implied: V | None = None
    later: bool = False
    csv: int | None = None
    fio: str | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "parse", _no_control(self.parse))


KEY = "key"  # where a field's metadata holds its Key
ROLE = "role"  # where a record field (no Key: the tool sets it) holds its Role


def key(parse: Parser[Value], default: Value, help: str, role: Role = Role.SETTING, *, needs: str | None = None,
        implied: Value = None, later: bool = False, csv: int | None = None,
        fio: str | None = None) -> Mapping[str, Key[Value]]:
    """The metadata of a point's field that a preset may set: ``field(metadata=key(parser, default, help))``."""
    return {KEY: Key(parse, default, help, role, needs=needs, implied=implied, later=later, csv=csv, fio=fio)}


def record(role: Role = Role.RECORD, csv: int | None = None) -> Mapping[str, Role | int | None]:
    """The metadata of a field the tool writes and no preset sets (a group's label, the round, the engine)."""
    return {ROLE: role, "csv": csv}
