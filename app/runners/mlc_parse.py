"""Parser of Intel MLC's text output and of the built-in engine's identical format (SPEC §6).

Public API (also used by ``profiler-tui import``)::

    from app.runners.mlc_parse import parse_text, LineParser

    sections = parse_text(open("mlc.txt").read())       # list[Section]
    for s in sections:
        s.kind      # "idle" | "loaded" | "idle_matrix" | "peak_bandwidth" | "bandwidth_matrix" | "c2c"
        s.params    # dict: version, mode, traffic ("R", "W6", …), stride (bytes), buffer_bytes,
                    #       write_buffer_bytes, delays, duration, cpus, command_line, warnings, …
        s.rows      # loaded: list[Row(delay, latency_ns, bandwidth_mbps, extra)]
        s.values    # idle: {"latency_ns", "clocks", "clock"};  peak_bandwidth: {"ALL Reads": MB/s, …};
                    # c2c: {"Local Socket L2->L2 HIT latency": ns, …}
        s.matrix    # idle_matrix / bandwidth_matrix: {"0": {"0": 90.2, "1": 144.3}, …}

    p = LineParser()                    # incremental, for live streaming
    for chunk in stream:                # any pieces of text (partial lines are buffered)
        for row in p.feed(chunk):       # loaded-latency rows, each as soon as its line is complete
            ...
    sections = p.close()

What the parser accepts (every variant in ``shared/reference/mlc/``): tabs or runs of spaces as
column separators; leading and trailing whitespace (documentation pages indent the output);
Windows line endings (mlc.exe); ``MB`` or ``MiB`` in the buffer line (MLC 3.5 printed "MB" for the
same binary megabytes later versions call "MiB": both are read as 2^20 bytes); "core clocks" or
"base frequency clocks" in the idle line; warning lines starting with ``*`` or ``***`` (kept in
``params["warnings"]``); several sections in one file (plain ``mlc``).

Where parameters come from, strongest first: the ``Command line parameters:`` line (``-R``,
``-W6``/``-W 6``, ``-l256``, ``-b4k``/``-b 2g``/``-b512000`` (KiB unless suffixed), ``-d0``,
``-D 0,100``, ``-t4``, ``-k1-3``, ``-c0``), then the "Using … traffic type" line of each section
("Read-only" → ``R``; a ratio such as "1:1 Reads-NT Writes" → ``W8``), then the buffer line.
A delay column in the table is an integer; a latency of ``-`` (the engine's bandwidth-only mode)
reads as ``None``.  Numbers are never invented: a field the text does not show is absent.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field
from typing import Any, Iterable

__all__ = ["Row", "Section", "LineParser", "parse_text", "parse_command_line", "traffic_from_text",
           "loaded_rows", "idle_latency"]

MIB = 1 << 20


@dataclass
class Row:
    """One line of the loaded-latency table."""

    delay: int
    latency_ns: float | None
    bandwidth_mbps: float
    extra: list[str] = field(default_factory=list)  # further columns, verbatim

    def as_dict(self) -> dict[str, Any]:
        return {"delay": self.delay, "latency_ns": self.latency_ns, "bandwidth_mbps": self.bandwidth_mbps}


@dataclass
class Section:
    kind: str
    params: dict[str, Any] = field(default_factory=dict)
    rows: list[Row] = field(default_factory=list)
    values: dict[str, Any] = field(default_factory=dict)
    matrix: dict[str, dict[str, float | None]] = field(default_factory=dict)
    title: str = ""


# --- the command line ----------------------------------------------------------------------

_MODES = {
    "--idle_latency": "idle", "--loaded_latency": "loaded", "--peak_injection_bandwidth": "peak_bandwidth",
    "--bandwidth_matrix": "bandwidth_matrix", "--latency_matrix": "idle_matrix", "--max_bandwidth": "max_bandwidth",
    "--c2c_latency": "c2c", "--bandwidth_only": "bandwidth",
}
_SIZE_SUFFIX = {"": 1024, "k": 1024, "m": MIB, "g": 1 << 30, "t": 1 << 40}


def _mlc_buffer_bytes(value: str) -> int | None:
    """MLC ``-b``: KiB per thread unless suffixed (``-b4k`` 4 KiB, ``-b2g`` 2 GiB)."""
    m = re.fullmatch(r"(\d+(?:\.\d+)?)([kmgt]?)i?b?", value.strip(), re.IGNORECASE)
    if not m:
        return None
    return int(float(m.group(1)) * _SIZE_SUFFIX[m.group(2).lower()])


def parse_command_line(text: str) -> dict[str, Any]:
    """Parameters from MLC's (or the engine's) arguments, e.g. ``"--loaded_latency -W6 -l256 -d0"``."""
    try:
        args = shlex.split(text)
    except ValueError:
        args = text.split()
    params: dict[str, Any] = {}
    i = 0
    while i < len(args):
        a = args[i]
        i += 1
        if a in _MODES:
            params["mode"] = _MODES[a]
            continue
        if a.startswith("--"):
            name, _, val = a[2:].partition("=")
            params.setdefault("options", {})[name] = val or True
            continue
        if len(a) < 2 or a[0] != "-":
            continue
        flag, attached = a[1], a[2:]
        if flag in "RerXUY" and not attached:  # MLC's value-less switches
            if flag == "R":
                params["traffic"] = "R"
            else:
                params.setdefault("switches", []).append("-" + flag)
            continue

        def value() -> str | None:
            nonlocal i
            if attached:
                return attached
            if i < len(args):
                i += 1
                return args[i - 1]
            return None

        v = value()
        if v is None:
            continue
        try:
            if flag == "W":
                params["traffic"] = f"W{int(v)}"
            elif flag == "d":
                params["delays"] = [int(v)]
            elif flag == "D":
                params["delays"] = [int(x) for x in v.split(",") if x.strip()]
            elif flag == "l":
                params["stride"] = int(v)
            elif flag == "b":
                b = _mlc_buffer_bytes(v)
                if b is not None:
                    params["buffer_bytes"] = b
            elif flag == "t":
                t = float(v)
                params["duration"] = int(t) if t.is_integer() else t
            elif flag == "k":
                params["cpus"] = v
            elif flag == "c":
                params["latency_cpu"] = int(v)
        except ValueError:
            continue
    return params


# --- traffic wording ---------------------------------------------------------------------------

_PLAIN_RATIO = {"2:1": "W2", "3:1": "W3", "3:2": "W4", "1:1": "W5", "4:1": "W12"}
_NT_RATIO = {"0:1": "W6", "2:1": "W7", "1:1": "W8", "3:1": "W9"}


def traffic_from_text(desc: str) -> str | None:
    """``R``/``W…`` from the words of a "Using … traffic type" line, or None when unclear."""
    d = desc.strip().lower()
    m = re.search(r"(?:-w\s*|\bw|type\s+)(\d+)\b", d)
    if m:
        return f"W{int(m.group(1))}"
    if "read-only" in d or "all read" in d or d in ("read only", "reads", "r"):
        return "R"
    nt = "non-temporal" in d or "nt write" in d or "nt-write" in d or re.search(r"\bnt\b", d) is not None
    if "triad" in d:
        return "W10" if nt else "W11"
    m = re.search(r"(\d+)\s*:\s*(\d+)", d)
    if m:
        ratio = f"{m.group(1)}:{m.group(2)}"
        return (_NT_RATIO if nt else _PLAIN_RATIO).get(ratio)
    return None


# --- line patterns -----------------------------------------------------------------------------

_NUM = r"\d+(?:\.\d+)?"
_RE_VERSION = re.compile(r"Memory Latency Checker.*?\bv(\d[\w.\-]*)", re.IGNORECASE)
_RE_CMDLINE = re.compile(r"^Command line parameters:\s*(.*)$", re.IGNORECASE)
_RE_BUFFER = re.compile(rf"^Using buffer size of\s+({_NUM})\s*(MiB|MB|KiB|KB|GiB|GB)\b(.*)$", re.IGNORECASE)
_RE_BUFFER_W = re.compile(rf"additional\s+({_NUM})\s*(MiB|MB|KiB|KB|GiB|GB)", re.IGNORECASE)
_RE_TRAFFIC = re.compile(r"^Using\s+(.+?)\s+traffic type\b", re.IGNORECASE)
_RE_IDLE = re.compile(rf"^Each iteration took\s+({_NUM})\s+(.*?)\s*clocks\s*\(\s*({_NUM})\s*ns\s*\)", re.IGNORECASE)
_RE_ROW = re.compile(rf"^(\d+)\s+({_NUM}|-)\s+({_NUM})((?:\s+\S+)*)$")
_RE_PEAK = re.compile(rf"^(.+?)\s*:\s*({_NUM})$")
_RE_C2C = re.compile(rf"^(.*?latency)\s+({_NUM})$", re.IGNORECASE)
_RE_MATRIX_HEAD = re.compile(r"^(?:Numa node|Writer Numa Node)((?:\s+\d+)+)$", re.IGNORECASE)
_RE_MATRIX_ROW = re.compile(rf"^(\d+)((?:\s+(?:{_NUM}|-))+)$")
_RE_HUGE = re.compile(r"^Using huge pages:\s*(yes|no)\b\s*\(?(.*?)\)?$", re.IGNORECASE)  # the engine's
_RE_THREADS = re.compile(r"^Using latency thread on CPU\s+(\d+)\W+stride\s+(\d+)\s+bytes", re.IGNORECASE)  # engine
_RE_DELAY_UNIT = re.compile(rf"^Using injection delay unit of\s+({_NUM})\s*ns", re.IGNORECASE)  # the engine's
_UNIT = {"kib": 1 << 10, "kb": 1 << 10, "mib": MIB, "mb": MIB, "gib": 1 << 30, "gb": 1 << 30}


def _section_kind(title: str) -> str | None:
    t = title.lower()
    if not t.startswith("measuring"):
        return None
    if "loaded latenc" in t:
        return "loaded"
    if "idle latenc" in t:
        return "idle_matrix"
    if "peak injection" in t:
        return "peak_bandwidth"
    if "cache-to-cache" in t:
        return "c2c"
    if "bandwidths between nodes" in t:
        return "bandwidth_matrix"
    if "bandwidth" in t:
        return "bandwidth"
    return "other"


class LineParser:
    """Incremental parser: ``feed`` text as it arrives, get loaded-latency rows as they complete."""

    def __init__(self) -> None:
        self.sections: list[Section] = []
        self.header: dict[str, Any] = {}  # file-wide: version, command line, buffer, warnings
        self._pending = ""
        self._current: Section | None = None
        self._in_table = False
        self._matrix_cols: list[str] | None = None
        self.lines = 0

    # -- helpers
    def _global_params(self) -> dict[str, Any]:
        params = {k: v for k, v in self.header.items() if k not in ("warnings", "cmd")}
        params.update(self.header.get("cmd", {}))
        return params

    def _open(self, kind: str, title: str) -> Section:
        sec = Section(kind=kind, params=self._global_params(), title=title)
        if self.header.get("warnings"):
            sec.params["warnings"] = list(self.header["warnings"])
        self.sections.append(sec)
        self._current = sec
        self._in_table = False
        self._matrix_cols = None
        return sec

    def _set_traffic(self, sec: Section, desc: str) -> None:
        sec.params["traffic_desc"] = desc
        if "traffic" in self.header.get("cmd", {}):
            return  # the command line is explicit; the wording only describes it
        t = traffic_from_text(desc)
        if t is not None:
            sec.params["traffic"] = t

    # -- public
    def feed(self, chunk: str) -> list[Row]:
        """Consume text (whole or partial lines); return the loaded-latency rows completed by it."""
        self._pending += chunk
        *complete, self._pending = re.split(r"\r\n|\n|\r", self._pending)
        rows: list[Row] = []
        for line in complete:
            row = self.feed_line(line)
            if row is not None:
                rows.append(row)
        return rows

    def close(self) -> list[Section]:
        """Parse a last line without newline; return every section."""
        if self._pending:
            pending, self._pending = self._pending, ""
            self.feed_line(pending)
        return self.sections

    def feed_line(self, raw: str) -> Row | None:
        self.lines += 1
        line = raw.strip()
        if not line:
            self._matrix_cols = None  # a blank line ends a matrix; a table ends with its section
            return None
        if line.startswith("*"):
            msg = line.lstrip("*").strip()
            target = self._current.params if self._current is not None else self.header
            target.setdefault("warnings", []).append(msg)
            return None
        m = _RE_VERSION.search(line)
        if m and "memory latency checker" in line.lower():
            self.header["version"] = m.group(1)
            self.header["banner"] = line
            if "profiler-tui" in line.lower() or "memlat" in line.lower():
                self.header["tool"] = "memlat"
            else:
                self.header["tool"] = "mlc"
            return None
        m = _RE_CMDLINE.match(line)
        if m:
            self.header["command_line"] = m.group(1).strip()
            self.header["cmd"] = parse_command_line(m.group(1))
            return None
        m = _RE_BUFFER.match(line)
        if m:
            size = int(round(float(m.group(1)) * _UNIT[m.group(2).lower()]))
            where = self._current.params if self._current is not None else self.header
            if "buffer_bytes" not in self.header.get("cmd", {}):
                where["buffer_bytes"] = size
            mw = _RE_BUFFER_W.search(m.group(3))
            if mw:
                where["write_buffer_bytes"] = int(round(float(mw.group(1)) * _UNIT[mw.group(2).lower()]))
            return None
        title_kind = _section_kind(line)
        if title_kind is not None:
            self._open(title_kind, line)
            return None
        m = _RE_IDLE.match(line)
        if m:
            sec = self._current
            if sec is None or sec.kind != "idle" or "latency_ns" in sec.values:
                sec = self._open("idle", "Idle latency")
            sec.values.update(latency_ns=float(m.group(3)), clocks=float(m.group(1)),
                              clock=m.group(2).strip().lower())
            return None
        m = _RE_HUGE.match(line)
        if m:
            self.header["huge_pages"] = m.group(1).lower() == "yes"
            self.header["huge_pages_detail"] = m.group(2).strip()
            return None
        m = _RE_THREADS.match(line)
        if m:
            self.header["latency_cpu"] = int(m.group(1))
            if "stride" not in self.header.get("cmd", {}):
                self.header["stride"] = int(m.group(2))
            return None
        m = _RE_DELAY_UNIT.match(line)
        if m:
            self.header["delay_unit_ns"] = float(m.group(1))
            return None
        m = _RE_TRAFFIC.match(line)
        if m:
            sec = self._current if self._current is not None else self._open("loaded", "")
            self._set_traffic(sec, m.group(1))
            return None
        sec = self._current
        if sec is None:
            return None
        if sec.kind == "loaded":
            if line.startswith("==="):
                self._in_table = True
                return None
            m = _RE_ROW.match(line)
            if m and self._in_table:
                lat = None if m.group(2) == "-" else float(m.group(2))
                row = Row(int(m.group(1)), lat, float(m.group(3)), m.group(4).split())
                sec.rows.append(row)
                return row
            return None
        if sec.kind in ("idle_matrix", "bandwidth_matrix", "c2c"):
            m = _RE_MATRIX_HEAD.match(line)
            if m:
                self._matrix_cols = m.group(1).split()
                if sec.kind == "c2c":
                    sec.values.setdefault("matrices", []).append({})
                return None
            m = _RE_MATRIX_ROW.match(line)
            if m and self._matrix_cols:
                cells = m.group(2).split()
                target = sec.matrix if sec.kind != "c2c" else sec.values["matrices"][-1]
                target[m.group(1)] = {c: (None if v == "-" else float(v)) for c, v in zip(self._matrix_cols, cells)}
                return None
            if sec.kind == "c2c":
                m = _RE_C2C.match(line)
                if m:
                    sec.values[re.sub(r"\s+", " ", m.group(1))] = float(m.group(2))
            return None
        if sec.kind == "peak_bandwidth":
            m = _RE_PEAK.match(line)
            if m:
                sec.values[re.sub(r"\s+", " ", m.group(1))] = float(m.group(2))
        return None


def parse_text(text: str | Iterable[str]) -> list[Section]:
    """Every section of an MLC (or engine) text output, whole or in pieces (e.g. a file's chunks)."""
    p = LineParser()
    for chunk in [text] if isinstance(text, str) else text:
        p.feed(chunk)
    return p.close()


# --- conveniences --------------------------------------------------------------------------------


def loaded_rows(sections: list[Section]) -> list[Row]:
    return [r for s in sections if s.kind == "loaded" for r in s.rows]


def idle_latency(sections: list[Section]) -> float | None:
    for s in sections:
        if s.kind == "idle" and "latency_ns" in s.values:
            return float(s.values["latency_ns"])
    return None
