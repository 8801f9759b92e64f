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
    p.warnings                          # the parser's own findings about the text (below)

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

Cut and truncated text (``LineParser.warnings``, a list of sentences; MLC's own ``*`` lines stay in
``params["warnings"]``):

* A last line with no line end that is a table row but lacks the shape of the complete rows
  before it (the same number of columns, the same number of decimal places in each number; with no
  complete row before it, a bandwidth with a decimal point, as MLC prints it) is a row cut
  mid-number, e.g. ``00500  108.59  97`` of ``97362.0``: it is dropped and a warning names it.
* A loaded-latency table with fewer delays than its run measures says so, e.g. "loaded-latency
  table has 9 of 19 delays (missing 700, 1000, …)": the delays are those of the command line
  (``-d N`` one, ``-D`` its list) or, without one, MLC's 19 default delays (only when every row's
  delay is one of them).

Bounded memory whatever the input (every limit is counted per parser and announced in ``warnings``
once when reached): lines longer than 4096 characters (``MAX_LINE_CHARS``) are cut there (MLC's
lines are under 200); at most 8 extra table columns of 32 characters are kept per row; after 10,000
table rows (``MAX_ROWS``, about 500 full MLC tables), 1,000 sections (``MAX_SECTIONS``), 100,000
matrix cells and named values (``MAX_CELLS``) or 200,000 lines (``MAX_LINES``; one MLC run prints
under 100; this also bounds the time, a few seconds), the rest of the text is ignored; at most 100
``*`` lines are kept per section and 50 parser warnings in all.  Numbers longer than 15 digits are not
numbers MLC prints and do not match.
"""

from __future__ import annotations

import math
import re
import shlex
from dataclasses import dataclass, field
from typing import Any, Iterable

from app.presets import MLC_DELAYS

__all__ = ["Row", "Section", "LineParser", "parse", "parse_text", "parse_command_line", "traffic_from_text",
           "loaded_rows", "idle_latency"]

MIB = 1 << 20
MAX_LINE_CHARS = 4096
MAX_LINES = 200_000
MAX_ROWS = 10_000
MAX_SECTIONS = 1_000
MAX_CELLS = 100_000
MAX_STAR_LINES = 100
MAX_WARNINGS = 50
MAX_EXTRA_COLUMNS = 8
MAX_EXTRA_CHARS = 32


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
    m = re.fullmatch(r"(\d{1,15}(?:\.\d{1,15})?)([kmgt]?)i?b?", value.strip(), re.IGNORECASE)
    if not m:
        return None
    return int(float(m.group(1)) * _SIZE_SUFFIX[m.group(2).lower()])


def _int(v: str) -> int:
    """An integer argument of at most 15 digits (ValueError otherwise: not a value MLC takes)."""
    v = v.strip()
    if not re.fullmatch(r"[+-]?\d{1,15}", v):
        raise ValueError(v)
    return int(v)


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
                params["traffic"] = f"W{_int(v)}"
            elif flag == "d":
                params["delays"] = [_int(v)]
            elif flag == "D":
                params["delays"] = [_int(x) for x in v.split(",") if x.strip()]
            elif flag == "l":
                params["stride"] = _int(v)
            elif flag == "b":
                b = _mlc_buffer_bytes(v)
                if b is not None:
                    params["buffer_bytes"] = b
            elif flag == "t":
                if not re.fullmatch(r"\d{1,9}(?:\.\d{1,9})?", v.strip()):
                    raise ValueError(v)  # also refuses inf and nan, which float() would take
                t = float(v)
                params["duration"] = int(t) if t.is_integer() else t
            elif flag == "k":
                params["cpus"] = v
            elif flag == "c":
                params["latency_cpu"] = _int(v)
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

_NUM = r"\d{1,15}(?:\.\d{1,15})?"
_RE_VERSION = re.compile(r"Memory Latency Checker.*?\bv(\d[\w.\-]*)", re.IGNORECASE)
_RE_CMDLINE = re.compile(r"^Command line parameters:\s*(.*)$", re.IGNORECASE)
_RE_BUFFER = re.compile(rf"^Using buffer size of\s+({_NUM})\s*(MiB|MB|KiB|KB|GiB|GB)\b(.*)$", re.IGNORECASE)
_RE_BUFFER_W = re.compile(rf"additional\s+({_NUM})\s*(MiB|MB|KiB|KB|GiB|GB)", re.IGNORECASE)
_RE_TRAFFIC = re.compile(r"^Using\s+(.+?)\s+traffic type\b", re.IGNORECASE)
_RE_IDLE = re.compile(rf"^Each iteration took\s+({_NUM})\s+(.*?)\s*clocks\s*\(\s*({_NUM})\s*ns\s*\)", re.IGNORECASE)
_RE_ROW = re.compile(rf"^(\d{{1,15}})\s+({_NUM}|-)\s+({_NUM})((?:\s+\S+)*)$")
_RE_PEAK = re.compile(rf"^(.+?)\s*:\s*({_NUM})$")
_RE_C2C = re.compile(rf"^(.*?latency)\s+({_NUM})$", re.IGNORECASE)
_RE_MATRIX_HEAD = re.compile(r"^(?:Numa node|Writer Numa Node)((?:\s+\d+)+)$", re.IGNORECASE)
_RE_MATRIX_ROW = re.compile(rf"^(\d{{1,15}})((?:\s+(?:{_NUM}|-))+)$")
_RE_HUGE = re.compile(r"^Using huge pages:\s*(yes|no)\b\s*\(?(.*?)\)?$", re.IGNORECASE)  # the engine's
_RE_THREADS = re.compile(r"^Using latency thread on CPU\s+(\d{1,15})\W+stride\s+(\d{1,15})\s+bytes", re.IGNORECASE)  # engine
_RE_CHASE = re.compile(r"random chase (?:over the whole buffer|within (\d{1,15}) KiB groups)", re.IGNORECASE)  # engine
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


_RE_EOL = re.compile(r"\r\n|\n|\r")


def _shape(fields: list[str]) -> tuple[int, ...]:
    """Decimal places of each column of a table row (-1 for ``-``, no digits after the point)."""
    return tuple(-1 if f == "-" else (len(f) - f.index(".") - 1 if "." in f else 0) for f in fields)


def _same_shape(row: tuple[int, ...], ref: tuple[int, ...]) -> bool:
    return len(row) == len(ref) and all(a == b or -1 in (a, b) for a, b in zip(row, ref))


class LineParser:
    """Incremental parser: ``feed`` text as it arrives, get loaded-latency rows as they complete.

    Its state is bounded whatever it is fed (see the module's docstring for the limits)."""

    def __init__(self) -> None:
        self.sections: list[Section] = []
        self.header: dict[str, Any] = {}  # file-wide: version, command line, buffer, warnings
        self.warnings: list[str] = []  # the parser's own: cut last row, truncated tables, limits reached
        self._pending = ""
        self._cut_line = False  # the pending line reached MAX_LINE_CHARS: the rest up to its end is dropped
        self._after_cr = False  # the last chunk ended with "\r": a "\n" opening the next one is its CRLF
        self._current: Section | None = None
        self._in_table = False
        self._matrix_cols: list[str] | None = None
        self._row_shape: dict[int, tuple[int, ...]] = {}  # id(section) → shape of its last complete row
        self._rows = 0
        self._cells = 0
        self._full = False  # a limit was reached: the rest of the text is ignored
        self._closed = False
        self._noted: set[str] = set()
        self.lines = 0

    # -- helpers
    def _warn(self, msg: str, once: str | None = None) -> None:
        if once is not None:
            if once in self._noted:
                return
            self._noted.add(once)
        if len(self.warnings) < MAX_WARNINGS:
            self.warnings.append(msg)

    def _stop(self, what: str) -> None:
        self._full = True
        self._warn(f"{what}: the text from line {self.lines} on is ignored.")

    def _global_params(self) -> dict[str, Any]:
        params = {k: v for k, v in self.header.items() if k not in ("warnings", "cmd")}
        params.update(self.header.get("cmd", {}))
        return params

    def _open(self, kind: str, title: str) -> Section | None:
        if len(self.sections) >= MAX_SECTIONS:
            self._stop(f"more than {MAX_SECTIONS} sections")
            return None
        sec = Section(kind=kind, params=self._global_params(), title=title)
        if self.header.get("warnings"):
            sec.params["warnings"] = list(self.header["warnings"])
        self.sections.append(sec)
        self._current = sec
        self._in_table = False
        self._matrix_cols = None
        return sec

    def _count_cells(self, n: int) -> bool:
        """Room for n more matrix cells or named values (False, and the rest ignored, when not)."""
        if self._cells + n > MAX_CELLS:
            self._stop(f"more than {MAX_CELLS} matrix cells and values")
            return False
        self._cells += n
        return True

    def _set_traffic(self, sec: Section, desc: str) -> None:
        sec.params["traffic_desc"] = desc
        if "traffic" in self.header.get("cmd", {}):
            return  # the command line is explicit; the wording only describes it
        t = traffic_from_text(desc)
        if t is not None:
            sec.params["traffic"] = t

    def _take(self, chunk: str, start: int, end: int) -> None:
        """Add chunk[start:end] (no line end in it) to the pending line, up to MAX_LINE_CHARS."""
        if self._cut_line or start >= end:
            return
        room = MAX_LINE_CHARS - len(self._pending)
        if end - start > room:
            end = start + room
            self._cut_line = True
            self._warn(f"line {self.lines + 1} is longer than {MAX_LINE_CHARS} characters: only its start is "
                       "read.", once="long line")
        self._pending += chunk[start:end]

    def _end_line(self) -> Row | None:
        line, self._pending, self._cut_line = self._pending, "", False
        if self.lines >= MAX_LINES:
            self._stop(f"more than {MAX_LINES} lines")
            return None
        return self.feed_line(line)

    # -- public
    @property
    def full(self) -> bool:
        """A limit was reached: whatever is fed from now on is ignored."""
        return self._full

    def feed(self, chunk: str) -> list[Row]:
        """Consume text (whole or partial lines); return the loaded-latency rows completed by it."""
        rows: list[Row] = []
        if self._full or self._closed or not chunk:
            return rows
        pos = 0
        if self._after_cr:
            self._after_cr = False
            if chunk[0] == "\n":
                pos = 1
        for m in _RE_EOL.finditer(chunk, pos):
            self._take(chunk, pos, m.start())
            pos = m.end()
            if m.end() == len(chunk) and chunk[-1] == "\r":
                self._after_cr = True
            row = self._end_line()
            if row is not None:
                rows.append(row)
            if self._full:
                return rows
        self._take(chunk, pos, len(chunk))
        return rows

    def close(self) -> list[Section]:
        """Parse a last line without line end (unless it is a cut row); check the tables; return every section."""
        if self._closed:
            return self.sections
        self._closed = True
        if self._pending and not self._full:
            line = self._pending.strip()
            sec = self._current
            m = _RE_ROW.match(line)
            if sec is not None and sec.kind == "loaded" and self._in_table and m:
                fields = line.split()
                ref = self._row_shape.get(id(sec))
                complete = _same_shape(_shape(fields), ref) if ref else "." in m.group(3)
                if not complete:
                    self._warn(f"the last line {line[:80]!r} has no line end and is shorter than a complete row "
                               "(cut mid-number?): it is not read as a row.")
                    self._pending = ""
            if self._pending:
                self._end_line()
        self._pending = ""
        for sec in self.sections:
            if sec.kind == "loaded":
                self._check_table(sec)
        return self.sections

    def _check_table(self, sec: Section) -> None:
        seen = {r.delay for r in sec.rows}
        expected = sec.params.get("delays")
        if not expected:
            if not seen <= set(MLC_DELAYS):
                return  # not MLC's default sweep, and no command line says which delays were run
            expected = MLC_DELAYS
        want = list(dict.fromkeys(expected))
        missing = [d for d in want if d not in seen]
        if missing:
            listed = ", ".join(str(d) for d in missing[:6]) + (", …" if len(missing) > 6 else "")
            self._warn(f"loaded-latency table has {len(want) - len(missing)} of {len(want)} delays "
                       f"(missing {listed}).")

    def feed_line(self, raw: str) -> Row | None:
        self.lines += 1
        line = raw.strip()
        if not line:
            self._matrix_cols = None  # a blank line ends a matrix; a table ends with its section
            return None
        if self._full:
            return None
        if line.startswith("*"):
            msg = line.lstrip("*").strip()
            target = self._current.params if self._current is not None else self.header
            kept = target.setdefault("warnings", [])
            if len(kept) < MAX_STAR_LINES:
                kept.append(msg)
            else:
                self._warn(f"more than {MAX_STAR_LINES} warning lines (starting with '*') in one place: the rest "
                           "are not kept.", once="stars")
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
                if sec is None:
                    return None
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
            c = _RE_CHASE.search(line)
            if c:  # the engine names its chase: over the whole buffer, or within groups of N KiB
                self.header["chase_kib"] = int(c.group(1)) if c.group(1) else 0
            return None
        m = _RE_DELAY_UNIT.match(line)
        if m:
            self.header["delay_unit_ns"] = float(m.group(1))
            return None
        m = _RE_TRAFFIC.match(line)
        if m:
            sec = self._current if self._current is not None else self._open("loaded", "")
            if sec is not None:
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
                if self._rows >= MAX_ROWS:
                    self._stop(f"more than {MAX_ROWS} loaded-latency rows")
                    return None
                self._rows += 1
                lat = None if m.group(2) == "-" else float(m.group(2))
                extra = [f[:MAX_EXTRA_CHARS] for f in m.group(4).split()[:MAX_EXTRA_COLUMNS]]
                row = Row(int(m.group(1)), lat, float(m.group(3)), extra)
                sec.rows.append(row)
                self._row_shape[id(sec)] = _shape(line.split())
                return row
            return None
        if sec.kind in ("idle_matrix", "bandwidth_matrix", "c2c"):
            m = _RE_MATRIX_HEAD.match(line)
            if m:
                self._matrix_cols = m.group(1).split()
                if sec.kind == "c2c" and self._count_cells(1):
                    sec.values.setdefault("matrices", []).append({})
                return None
            m = _RE_MATRIX_ROW.match(line)
            if m and self._matrix_cols:
                cells = m.group(2).split()
                if not self._count_cells(min(len(cells), len(self._matrix_cols))):
                    return None
                target = sec.matrix if sec.kind != "c2c" else sec.values["matrices"][-1]
                target[m.group(1)] = {c: (None if v == "-" else float(v)) for c, v in zip(self._matrix_cols, cells)}
                return None
            if sec.kind == "c2c":
                m = _RE_C2C.match(line)
                if m and self._count_cells(1):
                    sec.values[re.sub(r"\s+", " ", m.group(1))] = float(m.group(2))
            return None
        if sec.kind == "peak_bandwidth":
            m = _RE_PEAK.match(line)
            if m and self._count_cells(1):
                sec.values[re.sub(r"\s+", " ", m.group(1))] = float(m.group(2))
        return None


def parse(text: str | Iterable[str]) -> LineParser:
    """The closed parser of a whole text, or of its pieces in order (e.g. a file's lines or blocks):
    ``.sections`` and ``.warnings``."""
    p = LineParser()
    if isinstance(text, str):
        p.feed(text)
    else:
        for chunk in text:
            p.feed(chunk)
            if p.full:
                break
    p.close()
    return p


def parse_text(text: str | Iterable[str]) -> list[Section]:
    """Every section of an MLC (or engine) text output."""
    return parse(text).sections


# --- conveniences --------------------------------------------------------------------------------


def loaded_rows(sections: list[Section]) -> list[Row]:
    return [r for s in sections if s.kind == "loaded" for r in s.rows]


def idle_latency(sections: list[Section]) -> float | None:
    for s in sections:
        if s.kind == "idle" and "latency_ns" in s.values:
            return float(s.values["latency_ns"])
    return None
