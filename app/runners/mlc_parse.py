"""Parser of Intel MLC's text output and of the built-in engine's identical format.

Public API (also used by ``profiler-tui import``)::

    from app.runners.mlc_parse import parse_text, LineParser

    sections = parse_text(open("mlc.txt").read())       # list[Section]
    for s in sections:
        s.kind      # "idle" | "loaded" | "idle_matrix" | "peak_bandwidth" | "bandwidth_matrix" | "c2c"
                    # | "scaling" | "working_set" (the built-in engine's) | "bandwidth" | "other"
        s.params    # dict: version, mode, traffic ("R", "W6", …), stride (bytes), buffer_bytes,
                    #       write_buffer_bytes, delays, duration, cpus, command_line, warnings, …
        s.rows      # loaded: list[Row(delay, latency_ns, bandwidth_mbps, extra)]
        s.values    # idle: {"latency_ns", "clocks", "clock"};  peak_bandwidth: {"ALL Reads": MB/s, …};
                    # c2c: {"Local Socket L2->L2 HIT latency": ns, …, "matrices": [{row: {col: ns}}],
                    #       "homes": ["writer", "reader"]};  scaling / working_set: {"table": [[n, figure]]}
        s.matrix    # idle_matrix / bandwidth_matrix: {"0": {"0": 90.2, "1": 144.3}, …}

    p = LineParser()                    # incremental, for live streaming
    for chunk in stream:                # any pieces of text (partial lines are buffered)
        for row in p.feed(chunk):       # loaded-latency rows, each as soon as its line is complete
            ...
        p.figures                       # every Figure of the matrix, peak, c2c, scaling and working-set
                                        # sections so far, appended as each one's line completes
    sections = p.close()
    p.warnings                          # the parser's own findings about the text (below)

Figures (:class:`Figure`: kind, key, value as printed, unit, its section): a matrix row's numeric cells
(``-`` gives none), each peak-bandwidth row whose label is a known traffic (``ALL Reads`` R, ``3:1
Reads-Writes`` W3, ``2:1`` W2, ``1:1`` W5, ``Stream-triad like`` W10, ``W<N> traffic``), the local c2c HIT and
HITM lines and the cells of a remote c2c matrix under a title naming its home (writer or reader socket), and
the rows of the built-in engine's two-column tables (scaling: threads, MB/s; working set: KiB, ns; read
after their ``===`` line).  The engine's other lines are kept on the section they appear in:
``Placement verified: CPU node X, memory node Y: pages …`` in ``values["placement"]["X,Y"]`` (a remote c2c
cell's ``writer node W, reader node R, memory node M`` in ``["W,R,writer"]`` or ``["W,R,reader"]``), ``Cache …``
lines in ``params["caches"]``, its writer/reader CPUs in ``params["c2c_cpus"]``, its load threads' CPUs in
``params["load_cpus"]`` and ``Traffic W3: reads …, writes …`` in ``values["split"]`` (and on the figure of
that traffic that follows, ``Figure.extra``).

What the parser accepts (every variant in ``tests/data/mlc/``): tabs or runs of spaces as
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

The built-in engine's sub-windows: ``Windows of 0.0250 s, latency_ns: 150.123 149.870 …`` (or
``bandwidth_mbps``; a figure's values may span several such lines) just before a loaded-latency row, a peak or
scaling figure or the idle line belong to it: ``Row.windows`` / ``Figure.windows`` (``{"latency_ns": (…)}``),
an idle section's ``values["windows"]``.  Intel MLC prints no such line.  At most ``MAX_WINDOWS`` (1,000) values
per figure are kept; a value that is not a plain number (finite, ≥ 0) makes the line malformed: that figure
gets no windows (a warning says so) and its row is read as ever.

Cut and truncated text (``LineParser.warnings``, a list of sentences; MLC's own ``*`` lines stay in
``params["warnings"]``):

* A last line with no line end in a matrix, peak-bandwidth, c2c, scaling or working-set section whose
  numbers lack the decimal places of the section's complete lines (or, with none before it, a decimal
  point) is kept in the section's values but gives no figure, and a warning names the section.
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
matrix cells and named values (``MAX_CELLS``) or 200,000 lines read (``MAX_LINES``; one MLC run prints
under 100; this also bounds the time, a few seconds), the rest of the text is ignored; at most 100
``*`` lines are kept per section and 50 parser warnings in all.  Numbers longer than 15 digits are not
numbers MLC prints and do not match.

Where the output starts does not matter: before the text's first section, the lines that no line rule can read
(no banner, command line, "Using …", title … — and '*' lines once 100 are kept) are skipped in C-speed searches
(``_skip_unread``), counted as lines but not read one by one and not against ``MAX_LINES``; so an output after
200,000 '*' lines or a long log is found, in time linear in the text (about 0.4 s per million skipped lines; the
import's own bound, 256 MiB per file, bounds it).  Such a line is never warned of, however long.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field
from typing import Callable, Generic, Iterable, TypeVar

from app.model.keys import MLC_DELAYS

__all__ = ["Row", "Section", "Figure", "LineParser", "parse", "parse_text", "parse_command_line",
           "traffic_from_text", "loaded_rows", "idle_latency", "idle_windows", "PEAK_LABELS", "SECTION_NAMES"]

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
MAX_CACHES = 16  # cache lines kept per section (a CPU has 4 or 5 levels and types)
MAX_WINDOWS = 1000  # sub-window values kept per figure (the engine's --windows cap)
WINDOW_FIGURES = ("latency_ns", "bandwidth_mbps")


@dataclass
class Row:
    """One line of the loaded-latency table."""

    delay: int
    latency_ns: float | None
    bandwidth_mbps: float
    extra: list[str] = field(default_factory=list)  # further columns, verbatim
    windows: dict[str, tuple[float, ...]] = field(default_factory=dict)  # the engine's sub-window figures
    # the '*' lines printed inside the table since the row before (the engine's "Busy machine at delay N" about it)
    warnings: tuple[str, ...] = field(default=(), compare=False)

    def as_dict(self) -> dict[str, object]:
        return {"delay": self.delay, "latency_ns": self.latency_ns, "bandwidth_mbps": self.bandwidth_mbps}


@dataclass
class Section:
    kind: str
    params: dict[str, object] = field(default_factory=dict)
    rows: list[Row] = field(default_factory=list)
    values: dict[str, object] = field(default_factory=dict)  # figures; load_mbps by delay; c2c matrices
    matrix: dict[str, dict[str, float | None]] = field(default_factory=dict)
    title: str = ""
    # how many of params["warnings"] are about the whole section (the file's and those before its table or first
    # figure); the rest are about one row or figure each (Row.warnings, Figure.warnings)
    shared_warnings: int = 0


@dataclass(frozen=True)
class Figure:
    """One figure of a matrix, peak-bandwidth, c2c, scaling or working-set section, as its line completes.

    ``key`` identifies it within its kind: idle_matrix / bandwidth_matrix ``(cpu_node, mem_node)``;
    peak_bandwidth ``(traffic,)`` e.g. ``("W3",)``; scaling ``(threads,)``; working_set ``(buffer_bytes,)``;
    c2c ``(c2c, writer_node, reader_node, home)``: ``("hitm", None, None, None)`` for the local figure,
    ``("hitm", 0, 1, "writer")`` for a cell of the remote matrix of lines homed in the writer's socket.
    ``value`` is the number printed (ns or MB/s); ``extra`` the engine's read/write split of a bandwidth
    (``read_mbps``, ``write_mbps``) when it printed one for this figure's traffic; ``warnings`` the ``*`` lines
    of its section printed since the figure before it (the engine's "Busy machine at …" about this one);
    ``windows`` the engine's sub-window figures printed just before it (``{"bandwidth_mbps": (…)}``)."""

    kind: str
    key: tuple[object, ...]
    value: float
    unit: str
    section: "Section" = field(compare=False, repr=False)
    extra: dict[str, float] = field(default_factory=dict, compare=False)
    warnings: tuple[str, ...] = field(default=(), compare=False)
    windows: dict[str, tuple[float, ...]] = field(default_factory=dict, compare=False)  # sub-window figures


# what each kind of section is called in messages (import names a section it could not read)
SECTION_NAMES = {
    "idle": "idle latency", "loaded": "loaded latency", "idle_matrix": "idle latency matrix",
    "peak_bandwidth": "peak injection bandwidth", "bandwidth_matrix": "bandwidth matrix", "c2c": "cache-to-cache",
    "scaling": "bandwidth scaling", "working_set": "working set", "bandwidth": "bandwidth", "other": "unknown section",
}
FIGURE_UNITS = {"idle_matrix": "ns", "bandwidth_matrix": "MB/s", "peak_bandwidth": "MB/s", "c2c": "ns",
                "scaling": "MB/s", "working_set": "ns"}
# MLC's peak-bandwidth labels (lower case, single spaces) and the traffic codes they measure
PEAK_LABELS = {"all reads": "R", "3:1 reads-writes": "W3", "2:1 reads-writes": "W2", "1:1 reads-writes": "W5",
               "stream-triad like": "W10"}


BANDWIDTH_KINDS = frozenset(("peak_bandwidth", "bandwidth_matrix", "scaling", "bandwidth"))  # figures in MB/s alone
# MLC's "*** Unable to modify prefetchers …" / "*** So, enabling random access for latency measurements": it could not
# turn the hardware prefetchers off, so its latency tests chase at random instead; its bandwidth tests are untouched
_LATENCY_ONLY = re.compile(r"unable to modify prefetchers|random access for latency", re.IGNORECASE)


def latency_only(warning: str) -> bool:
    """Is this warning about latency figures only (MLC's prefetcher lines), not about a bandwidth figure?"""
    return _LATENCY_ONLY.search(warning) is not None


def peak_traffic(label: str) -> str | None:
    """The traffic code of a peak-bandwidth row's label (``ALL Reads`` → R, ``W7 traffic`` → W7), or None."""
    t = re.sub(r"\s+", " ", label.strip().lower())
    m = re.fullmatch(r"w(\d{1,2}) traffic", t)
    return f"W{int(m.group(1))}" if m else PEAK_LABELS.get(t)


def _as_list(v: object) -> list[object]:
    return v if isinstance(v, list) else []


def _as_dict(v: object) -> dict[object, object]:
    return v if isinstance(v, dict) else {}


def _sub_list(d: dict[str, object], key: str) -> list[object]:
    """``d[key]``, an empty list put there first when absent (the parser's own entries: always a list)."""
    v = d.setdefault(key, [])
    assert isinstance(v, list)
    return v


def _sub_dict(d: dict[str, object], key: str) -> dict[object, object]:
    """``d[key]``, an empty dict put there first when absent (the parser's own entries: always a dict)."""
    v = d.setdefault(key, {})
    assert isinstance(v, dict)
    return v


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


def _duration(v: str) -> int | float:
    if not re.fullmatch(r"\d{1,9}(?:\.\d{1,9})?", v.strip()):
        raise ValueError(v)  # also refuses inf and nan, which float() would take
    t = float(v)
    return int(t) if t.is_integer() else t


def _buffer(v: str) -> int:
    b = _mlc_buffer_bytes(v)
    if b is None:
        raise ValueError(v)
    return b


# MLC's options that take a value (attached, -W6, or the next argument, -W 6): flag → (key, reader);
# a value the reader refuses (ValueError) is not recorded
_VALUE_FLAGS: dict[str, tuple[str, Callable[[str], object]]] = {
    "W": ("traffic", lambda v: f"W{_int(v)}"),
    "d": ("delays", lambda v: [_int(v)]),
    "D": ("delays", lambda v: [_int(x) for x in v.split(",") if x.strip()]),
    "l": ("stride", _int),
    "b": ("buffer_bytes", _buffer),
    "t": ("duration", _duration),
    "k": ("cpus", str),
    "c": ("latency_cpu", _int),
}
_SWITCHES = "RerXUY"  # MLC's value-less switches (-R: all reads)


def _split_args(text: str) -> list[str]:
    try:
        return shlex.split(text)
    except ValueError:
        return text.split()


def parse_command_line(text: str) -> dict[str, object]:
    """Parameters from MLC's (or the engine's) arguments, e.g. ``"--loaded_latency -W6 -l256 -d0"``."""
    args = _split_args(text)
    params: dict[str, object] = {}
    i = 0
    while i < len(args):
        a = args[i]
        i += 1
        if a in _MODES:
            params["mode"] = _MODES[a]
        elif a.startswith("--"):
            name, _, val = a[2:].partition("=")
            _sub_dict(params, "options")[name] = val or True
        elif len(a) < 2 or a[0] != "-":
            continue
        elif a[1] in _SWITCHES and len(a) == 2:
            if a[1] == "R":
                params["traffic"] = "R"
            else:
                _sub_list(params, "switches").append(a)
        else:
            flag, value = a[1], a[2:]
            if not value:
                if i >= len(args):
                    continue
                value, i = args[i], i + 1
            if flag in _VALUE_FLAGS:
                key, read = _VALUE_FLAGS[flag]
                try:
                    params[key] = read(value)
                except ValueError:
                    pass
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
_RE_STAR = re.compile(r"^\*+(.*)$")
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
_RE_THREADS = re.compile(r"^Using latency thread on CPU\s+(\d{1,15})\W+stride\s+(\d{1,15})\s+bytes",
                         re.IGNORECASE)  # engine
_RE_LOAD_THREADS = re.compile(r"\band (\d{1,6}) load thread", re.IGNORECASE)  # engine, on the latency-thread line
_RE_CHASE = re.compile(r"random chase (?:over the whole buffer|within (\d{1,15}) KiB groups)", re.IGNORECASE)  # engine
# the engine's "Load threads at delay N: X MB/sec (latency thread Y MB/sec)" before each row: the load threads'
# part of the row's bandwidth, kept in the section's values["load_mbps"][delay]
_RE_LOAD_BW = re.compile(rf"^Load threads at delay (\d{{1,15}}):\s*({_NUM})\s*MB/sec", re.IGNORECASE)  # engine
_RE_DELAY_UNIT = re.compile(rf"^Using injection delay unit of\s+({_NUM})\s*ns", re.IGNORECASE)  # the engine's
# the engine's "Using memory on NUMA node 1: pages N1=16384 (4096-byte pages; …)" (--mem_node: verified placement)
_RE_NUMA = re.compile(r"^Using memory on NUMA node (\d{1,4}): pages ((?:N\d{1,4}=\d{1,15} ){0,63}N\d{1,4}=\d{1,15}) "
                      r"\((\d{1,9})-byte pages", re.IGNORECASE)
_UNIT = {"kib": 1 << 10, "kb": 1 << 10, "mib": MIB, "mb": MIB, "gib": 1 << 30, "gb": 1 << 30}
# the engine's matrix modes: "Placement verified: CPU node 0, memory node 1: pages N1=32768 (4096-byte pages;
# /proc/self/numa_maps)", one per cell before the row that holds it; its remote c2c matrices "… writer node 0,
# reader node 1, memory node 1: …"
_RE_PLACEMENT = re.compile(r"^Placement verified: (?:CPU node (\d{1,4})|writer node (\d{1,4}), reader node (\d{1,4})), "
                           r"memory node (\d{1,4}): pages "
                           r"((?:N\d{1,4}=\d{1,15} ){0,63}N\d{1,4}=\d{1,15}) "
                           r"\((\d{1,9})-byte pages(?:;\s*([^)]{0,64}))?", re.IGNORECASE)
# the engine's working-set mode: "Cache L1d: 32 KiB (level 1, Data, shared by CPU(s) 0)"
_RE_CACHE = re.compile(rf"^Cache (\w{{1,16}}):\s*({_NUM})\s*(KiB|MiB|GiB|KB|MB|GB)\s*\(level (\d{{1,2}}),\s*"
                       r"([\w ]{1,32}?),\s*shared by CPU\(s\)\s*([\d,\-]{1,256})\)", re.IGNORECASE)
_RE_C2C_CPUS = re.compile(r"^Using writer thread on CPU (\d{1,4}) and reader thread on CPU (\d{1,4})\b", re.IGNORECASE)
_RE_LOAD_CPUS = re.compile(r"^Using load threads on CPU\(s\)\s*(\d{1,4}(?:,\d{1,4}){0,1023})(?!\d)", re.IGNORECASE)
# the engine's bandwidth modes, before a figure: "Traffic W3: reads 1234.5 MB/sec, writes 456.7 MB/sec"
_RE_SPLIT = re.compile(rf"^Traffic (R|W\d{{1,2}}):\s*reads\s+({_NUM})\s*MB/sec,\s*writes\s+({_NUM})\s*MB/sec",
                       re.IGNORECASE)
# the engine's sub-windows, before the row or figure they belong to (Intel MLC prints no line starting "Windows of"):
# "Windows of 0.0250 s, latency_ns: 150.123 149.870 …" (a figure's values may span several lines)
_RE_WINDOWS_ANY = re.compile(r"^Windows of\b", re.IGNORECASE)
_RE_WINDOWS = re.compile(rf"^Windows of\s+{_NUM}\s*s,\s*({'|'.join(WINDOW_FIGURES)}):((?:\s+{_NUM})+)$")
_RE_PAIR_ROW = re.compile(rf"^(\d{{1,15}})\s+({_NUM})$")  # scaling and working-set rows: two columns
_RE_C2C_HOME = re.compile(r"homed in (writer|reader) socket", re.IGNORECASE)
_RE_HITM = re.compile(r"\b(hitm?)\b", re.IGNORECASE)


# a section title's words → its kind, the first that the (lower-case) title contains
_TITLE_KINDS = (("loaded latenc", "loaded"), ("against buffer size", "working_set"), ("idle latenc", "idle_matrix"),
                ("peak injection", "peak_bandwidth"), ("maximum memory bandwidth", "peak_bandwidth"),
                ("cache-to-cache", "c2c"), ("bandwidths between nodes", "bandwidth_matrix"),
                ("against the number of load threads", "scaling"), ("bandwidth", "bandwidth"))


def _section_kind(title: str) -> str | None:
    t = title.lower()
    if not t.startswith("measuring"):
        return None
    return next((kind for words, kind in _TITLE_KINDS if words in t), "other")


_RE_EOL = re.compile(r"\r\n|\n|\r")
# Lines a LINE_RULE may read (a superset): the first words of every rule but the banner's (after blanks at the
# line's start), ``*`` too while '*' lines are still kept, and the banner's words anywhere in a line.  Before the
# text's first section no body reader reads a line, so the lines between two such lines read as nothing and are
# skipped at the speed of these searches (LineParser._skip_unread).  The patterns start with the line end before
# the line (the regular expression engine then skips to the next line end in C).
_RULE_WORDS = (r"command line parameters:|using\s|measuring|each iteration took|windows of|load threads at delay|"
               r"placement verified:|cache\s|traffic\s")
_MAY_READ = {star: (re.compile(rf"[^\S\r\n]*(?:{words})", re.IGNORECASE),  # at the line start given
                    re.compile(rf"(\r\n|\r|\n)[^\S\r\n]*(?:{words})", re.IGNORECASE))  # at a later line's start
             for star, words in ((False, _RULE_WORDS), (True, rf"\*|{_RULE_WORDS}"))}
_RE_BANNER_WORDS = re.compile(r"memory latency checker", re.IGNORECASE)


def _line_ends(text: str, start: int, end: int) -> int:
    """The line ends in ``text[start:end]`` (CRLF, LF or CR each one)."""
    return text.count("\n", start, end) + text.count("\r", start, end) - text.count("\r\n", start, end)


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
        self.header: dict[str, object] = {}  # file-wide: version, command line, buffer, warnings
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
        self._load_bw: tuple[int, float] | None = None  # (delay, MB/s) of the engine's line before a row
        self._split: tuple[str, dict[str, float]] | None = None  # the engine's read/write split before a figure
        self._c2c_home: str | None = None  # the home named by the remote c2c title before a matrix
        # the engine's sub-window values since the last row or figure (None: a malformed line, the figure gets none)
        self._windows: dict[str, list[float] | None] = {}
        self._last_open = False  # reading the text's last line, which had no line end (maybe cut)
        self.figures: list[Figure] = []  # figures of the matrix, peak, c2c, scaling and working-set sections
        self._stars: list[str] = []  # a figure section's '*' lines since its last figure (bounded as they are)
        self._full = False  # a limit was reached: the rest of the text is ignored
        self._closed = False
        self._noted: set[str] = set()
        self.lines = 0  # lines of the text so far (a line's number in a warning)
        self.read = 0  # of them, the lines read one by one (MAX_LINES counts these; see _skip_unread)

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

    def _cmd(self) -> dict[object, object]:
        """The parameters of the command line the text printed ({} before it or without one)."""
        return _as_dict(self.header.get("cmd"))

    def _global_params(self) -> dict[str, object]:
        params = {k: v for k, v in self.header.items() if k not in ("warnings", "cmd")}
        params.update({str(k): v for k, v in self._cmd().items()})
        return params

    def _open(self, kind: str, title: str) -> Section | None:
        if len(self.sections) >= MAX_SECTIONS:
            self._stop(f"more than {MAX_SECTIONS} sections")
            return None
        sec = Section(kind=kind, params=self._global_params(), title=title)
        shared = [w for w in _as_list(self.header.get("warnings"))
                  if not (kind in BANDWIDTH_KINDS and latency_only(str(w)))]
        if shared:
            sec.params["warnings"] = shared
        sec.shared_warnings = len(_as_list(sec.params.get("warnings")))
        self.sections.append(sec)
        self._current = sec
        self._in_table = False
        self._matrix_cols = None
        self._stars = []
        self._windows = {}
        return sec

    def _count_cells(self, n: int) -> bool:
        """Room for n more matrix cells or named values (False, and the rest ignored, when not)."""
        if self._cells + n > MAX_CELLS:
            self._stop(f"more than {MAX_CELLS} matrix cells and values")
            return False
        self._cells += n
        return True

    def _where(self) -> dict[str, object]:
        """The params of the current section, or the file-wide header before the first."""
        return self._current.params if self._current is not None else self.header

    def _complete(self, sec: Section, fields: list[str]) -> bool:
        """Whether a line's numbers may be read as figures: not the text's last line cut mid-number (its
        numbers have the decimal places of the section's complete lines before it, or each a decimal point
        as MLC and the engine print them)."""
        shape, ref = _shape(fields), self._row_shape.get(id(sec))
        if self._last_open:
            whole = _same_shape(shape, ref) if ref and len(ref) == len(shape) else all(
                "." in f or f == "-" for f in fields)
            if not whole:
                self._warn(f"the last line of the {SECTION_NAMES.get(sec.kind, sec.kind)} section has no line end "
                           "and is shorter than a complete line (cut mid-number?): its figures are not read.")
                return False
        self._row_shape[id(sec)] = shape
        return True

    def _figure(self, sec: Section, key: tuple[object, ...], value: float, traffic: object = None) -> None:
        split: dict[str, float] = {}
        if self._split is not None and traffic is not None and self._split[0] == traffic:
            split = self._split[1]
            self._split = None
        self.figures.append(Figure(sec.kind, key, value, FIGURE_UNITS[sec.kind], sec, split, tuple(self._stars),
                                   self._take_windows()))
        self._stars = []

    def _take_windows(self) -> dict[str, tuple[float, ...]]:
        """The sub-window values printed since the last row or figure (each figure that read whole), now taken."""
        got = {k: tuple(v) for k, v in self._windows.items() if v}
        self._windows = {}
        return got

    def _set_traffic(self, sec: Section, desc: str) -> None:
        sec.params["traffic_desc"] = desc
        if "traffic" in self._cmd():
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
        self._pending += chunk[start:end]

    def _end_line(self) -> Row | None:
        line, cut, self._pending, self._cut_line = self._pending, self._cut_line, "", False
        if cut and self._may_be_read(line):  # a line skipped whole before the first section is not warned of
            self._warn(f"line {self.lines + 1} is longer than {MAX_LINE_CHARS} characters: only its start is "
                       "read.", once="long line")
        if self.read >= MAX_LINES:
            self._stop(f"more than {MAX_LINES} lines")
            return None
        self.read += 1
        return self.feed_line(line)

    def _may_read(self) -> tuple[re.Pattern[str], re.Pattern[str]]:
        """The patterns of the lines a rule may read before the first section (:data:`_MAY_READ`)."""
        return _MAY_READ[len(_as_list(self.header.get("warnings"))) < MAX_STAR_LINES or "stars" not in self._noted]

    def _may_be_read(self, line: str) -> bool:
        """Whether a line :meth:`_skip_unread` would not skip (a rule may read it)."""
        return self._current is not None or bool(self._may_read()[0].match(line) or _RE_BANNER_WORDS.search(line))

    def _skip_unread(self, chunk: str, pos: int) -> int:
        """From ``pos``, a line start before the text's first section: the whole lines that no line rule can read
        (:data:`_RE_MAY_READ`), skipped — counted as lines, not read one by one, so output that follows pages of
        other text (200,000 '*' lines, a log) is still found, and in time linear in the text.  Returns where
        reading goes on: the next line a rule may read, or the start of the chunk's last, unfinished line."""
        here, later = self._may_read()
        if here.match(chunk, pos):
            return pos
        m = later.search(chunk, pos)
        end = m.end(1) if m is not None else max(chunk.rfind("\n"), chunk.rfind("\r")) + 1
        banner = _RE_BANNER_WORDS.search(chunk, pos, end)
        if banner is not None:  # the start of the line it is in
            end = max(chunk.rfind("\n", pos, banner.start()), chunk.rfind("\r", pos, banner.start()), pos - 1) + 1
        if end > pos:
            self.lines += _line_ends(chunk, pos, end)
            if end == len(chunk) and chunk[-1] == "\r":
                self._after_cr = True
        return max(end, pos)

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
        while True:
            if self._current is None and not self._pending and not self._cut_line:
                pos = self._skip_unread(chunk, pos)
            m = _RE_EOL.search(chunk, pos)
            if m is None:
                break
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
            self._last_open = True
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
        want = list(dict.fromkeys(expected if isinstance(expected, (list, tuple)) else ()))
        missing = [d for d in want if d not in seen]
        if missing:
            listed = ", ".join(str(d) for d in missing[:6]) + (", …" if len(missing) > 6 else "")
            self._warn(f"loaded-latency table has {len(want) - len(missing)} of {len(want)} delays "
                       f"(missing {listed}).")

    def feed_line(self, raw: str) -> Row | None:
        """Read one complete line (without its line end); the loaded-latency row it is, if any.

        A non-blank line is tried against :data:`LINE_RULES` in order (lines that may appear
        anywhere: banner, command line, section titles, …); the first rule that matches handles it.
        Any other line is read by the current section's body reader (:data:`BODY_READERS`)."""
        self.lines += 1
        line = raw.strip()
        if not line:
            self._matrix_cols = None  # a blank line ends a matrix; a table ends with its section
            return None
        if self._full:
            return None
        for rule in LINE_RULES:
            if rule.apply(self, line):
                return None
        sec = self._current
        reader = BODY_READERS.get(sec.kind) if sec is not None else None
        return reader(self, sec, line) if reader is not None and sec is not None else None

    # -- lines that may appear anywhere (LINE_RULES)
    def _on_star(self, line: str, m: re.Match[str]) -> None:
        target = self._current.params if self._current is not None else self.header
        kept = _sub_list(target, "warnings")
        if len(kept) < MAX_STAR_LINES:
            text = m.group(1).strip()
            kept.append(text)
            if self._current is not None and (self._current.kind in FIGURE_UNITS or (
                    self._current.kind == "loaded" and self._in_table)):
                self._stars.append(text)  # e.g. the engine's "Busy machine at …" about the figure that follows
        else:
            self._warn(f"more than {MAX_STAR_LINES} warning lines (starting with '*') in one place: the rest "
                       "are not kept.", once="stars")

    def _on_banner(self, line: str, m: re.Match[str]) -> None:
        self.header["version"] = m.group(1)
        self.header["banner"] = line
        engine = "profiler-tui" in line.lower() or "memlat" in line.lower()
        self.header["tool"] = "memlat" if engine else "mlc"

    def _on_command_line(self, line: str, m: re.Match[str]) -> None:
        self.header["command_line"] = m.group(1).strip()
        self.header["cmd"] = parse_command_line(m.group(1))

    def _on_buffer(self, line: str, m: re.Match[str]) -> None:
        where = self._current.params if self._current is not None else self.header
        if "buffer_bytes" not in self._cmd():
            where["buffer_bytes"] = _bytes(m.group(1), m.group(2))
        mw = _RE_BUFFER_W.search(m.group(3))
        if mw:
            where["write_buffer_bytes"] = _bytes(mw.group(1), mw.group(2))

    def _on_title(self, line: str, kind: str) -> None:
        self._open(kind, line)

    def _on_idle(self, line: str, m: re.Match[str]) -> None:
        windows = self._take_windows()  # printed before the line, maybe before the section it opens
        sec = self._current
        if sec is None or sec.kind != "idle" or "latency_ns" in sec.values:
            sec = self._open("idle", "Idle latency")
            if sec is None:
                return
        sec.values.update(latency_ns=float(m.group(3)), clocks=float(m.group(1)), clock=m.group(2).strip().lower())
        if windows:
            sec.values["windows"] = {k: list(v) for k, v in windows.items()}

    def _on_huge_pages(self, line: str, m: re.Match[str]) -> None:
        self.header["huge_pages"] = m.group(1).lower() == "yes"
        self.header["huge_pages_detail"] = m.group(2).strip()
        self._in_figure_section(huge_pages=self.header["huge_pages"])

    def _in_figure_section(self, **params: object) -> None:
        """Also keep on the current section what the engine prints after a figure section's title (the
        working-set mode's threads and pages lines): that section's own, not a later one's."""
        if self._current is not None and self._current.kind in FIGURE_UNITS:
            self._current.params.update(params)

    def _on_placement(self, line: str, m: re.Match[str]) -> None:
        sec = self._current
        if sec is None or not self._count_cells(1):
            return
        cpu, writer, reader, node = m.group(1, 2, 3, 4)
        pages = {n: int(c) for n, c in re.findall(r"N(\d{1,4})=(\d{1,15})", m.group(5))}
        where = (m.group(7) or "").strip()
        tool = next((t for t in ("numa_maps", "move_pages") if t in where), where[:32] or None)
        cell = {"node": int(node), "pages": pages, "page_bytes": int(m.group(6)), "verified_with": tool}
        # keyed as the figure it is about: "cpu_node,mem_node", or a remote c2c cell's "writer,reader,home"
        if cpu is not None:
            key = f"{int(cpu)},{int(node)}"
        else:
            home = "writer" if int(node) == int(writer) else "reader" if int(node) == int(reader) else node
            key = f"{int(writer)},{int(reader)},{home}"
        _sub_dict(sec.values, "placement")[key] = cell

    def _on_cache(self, line: str, m: re.Match[str]) -> None:
        caches = _sub_list(self._where(), "caches")
        if len(caches) >= MAX_CACHES:
            self._warn(f"more than {MAX_CACHES} cache lines in one section: the rest are not kept.", once="caches")
            return
        caches.append({"name": m.group(1), "level": int(m.group(4)), "type": m.group(5).strip(),
                       "size_bytes": _bytes(m.group(2), m.group(3)), "shared_cpus": m.group(6)})

    def _on_c2c_cpus(self, line: str, m: re.Match[str]) -> None:
        self._where()["c2c_cpus"] = [int(m.group(1)), int(m.group(2))]

    def _on_load_cpus(self, line: str, m: re.Match[str]) -> None:
        self._where()["load_cpus"] = [int(c) for c in m.group(1).split(",")]

    def _on_split(self, line: str, m: re.Match[str]) -> None:
        sec = self._current
        if sec is None or not self._count_cells(1):
            return
        code = m.group(1).upper()
        split = {"read_mbps": float(m.group(2)), "write_mbps": float(m.group(3))}
        _sub_dict(sec.values, "split")[code] = split
        self._split = (code, split)  # for the figure of that traffic, which follows

    def _on_latency_thread(self, line: str, m: re.Match[str]) -> None:
        self.header["latency_cpu"] = int(m.group(1))
        if "stride" not in self._cmd():
            self.header["stride"] = int(m.group(2))
        c = _RE_CHASE.search(line)
        if c:  # the engine names its chase: over the whole buffer, or within groups of N KiB
            self.header["chase_kib"] = int(c.group(1)) if c.group(1) else 0
        n = _RE_LOAD_THREADS.search(line)
        if n:  # how many threads made the load (MLC does not say: it uses every CPU unless told)
            self.header["load_threads"] = int(n.group(1))
        self._in_figure_section(**{k: self.header[k] for k in ("latency_cpu", "stride", "chase_kib", "load_threads")
                                   if k in self.header})

    def _on_load_bandwidth(self, line: str, m: re.Match[str]) -> None:
        self._load_bw = (int(m.group(1)), float(m.group(2)))  # for the row of that delay, which follows

    def _on_numa(self, line: str, m: re.Match[str]) -> None:
        pages = {n: int(c) for n, c in re.findall(r"N(\d{1,4})=(\d{1,15})", m.group(2))}
        self.header["numa"] = {"node": int(m.group(1)), "pages": pages, "page_bytes": int(m.group(3)),
                               "verified_with": "move_pages"}

    def _on_windows(self, line: str, m: re.Match[str]) -> None:
        """The engine's sub-window values of the next row or figure: at most MAX_WINDOWS per figure, each a plain
        number (finite, ≥ 0, as ``_NUM`` reads them); a malformed line leaves that figure without windows."""
        w = _RE_WINDOWS.match(line)
        name = w.group(1) if w else next((f for f in WINDOW_FIGURES if f in line), None)
        if name is None:
            self._warn(f"line {self.lines} {line[:60]!r} names no sub-window figure: it is ignored.", once="windows?")
            return
        kept = self._windows.get(name, [])
        if w is None or kept is None:
            if w is None:
                self._warn(f"line {self.lines} {line[:60]!r} is not a list of sub-window figures: that figure gets "
                           "no windows.", once="windows bad")
            self._windows[name] = None
            return
        values = [float(v) for v in w.group(2).split()]
        if len(kept) + len(values) > MAX_WINDOWS:
            self._warn(f"more than {MAX_WINDOWS} sub-window values for one figure: the rest are not kept.",
                       once="windows max")
        self._windows[name] = kept + values[:max(0, MAX_WINDOWS - len(kept))]

    def _on_delay_unit(self, line: str, m: re.Match[str]) -> None:
        self.header["delay_unit_ns"] = float(m.group(1))

    def _on_traffic(self, line: str, m: re.Match[str]) -> None:
        sec = self._current if self._current is not None else self._open("loaded", "")
        if sec is not None:
            self._set_traffic(sec, m.group(1))

    # -- section bodies (BODY_READERS)
    def _read_loaded(self, sec: Section, line: str) -> Row | None:
        if line.startswith("==="):
            self._in_table = True
            sec.shared_warnings = len(_as_list(sec.params.get("warnings")))  # those before the table: every row's
            self._stars = []
            return None
        m = _RE_ROW.match(line)
        if not (m and self._in_table):
            return None
        if self._rows >= MAX_ROWS:
            self._stop(f"more than {MAX_ROWS} loaded-latency rows")
            return None
        self._rows += 1
        lat = None if m.group(2) == "-" else float(m.group(2))
        extra = [f[:MAX_EXTRA_CHARS] for f in m.group(4).split()[:MAX_EXTRA_COLUMNS]]
        row = Row(int(m.group(1)), lat, float(m.group(3)), extra, self._take_windows(), tuple(self._stars))
        self._stars = []
        if self._load_bw is not None and self._load_bw[0] == row.delay:  # one per row: bounded as the rows are
            _sub_dict(sec.values, "load_mbps")[row.delay] = self._load_bw[1]
        self._load_bw = None
        sec.rows.append(row)
        self._row_shape[id(sec)] = _shape(line.split())
        return row

    def _read_matrix(self, sec: Section, line: str) -> None:
        m = _RE_MATRIX_HEAD.match(line)
        if m:
            self._matrix_cols = m.group(1).split()
            if sec.kind == "c2c" and self._count_cells(1):
                _sub_list(sec.values, "matrices").append({})
                _sub_list(sec.values, "homes").append(self._c2c_home)  # the home of each remote matrix
                self._c2c_home = None
            return
        m = _RE_MATRIX_ROW.match(line)
        if m and self._matrix_cols:
            cells = m.group(2).split()
            if not self._count_cells(min(len(cells), len(self._matrix_cols))):
                return
            target = sec.matrix if sec.kind != "c2c" else _as_list(sec.values["matrices"])[-1]
            assert isinstance(target, dict)  # the c2c matrix opened by its header line
            row = {c: (None if v == "-" else float(v)) for c, v in zip(self._matrix_cols, cells)}
            target[m.group(1)] = row
            if self._complete(sec, cells):
                self._matrix_figures(sec, int(m.group(1)), row)
            return
        if sec.kind == "c2c":
            home = _RE_C2C_HOME.search(line)
            if home:
                self._c2c_home = home.group(1).lower()
                return
            label = self._read_named_value(sec, _RE_C2C.match(line))
            hit = _RE_HITM.search(label or "")
            if hit and "remote" not in (label or "").lower():
                self._figure(sec, (hit.group(1).lower(), None, None, None), section_figure(sec, str(label)))

    def _matrix_figures(self, sec: Section, row: int, cells: dict[str, float | None]) -> None:
        """The figures of a matrix row: one per printed number; a c2c cell only under a remote title naming
        the line's home (writer or reader socket)."""
        home = _as_list(sec.values.get("homes"))[-1:] if sec.kind == "c2c" else [None]
        if sec.kind == "c2c" and home in ([], [None]):
            return
        stars = list(self._stars)  # printed before the row: about its cells, each named in the line
        for col, value in cells.items():
            if value is None:
                continue
            key: tuple[object, ...] = (row, int(col))
            if sec.kind == "c2c":
                key = ("hitm", row, int(col), home[0])
            self._stars = list(stars)
            self._figure(sec, key, value)

    def _read_peak(self, sec: Section, line: str) -> None:
        label = self._read_named_value(sec, _RE_PEAK.match(line))
        traffic = peak_traffic(label) if label is not None else None
        if traffic is not None:
            self._figure(sec, (traffic,), section_figure(sec, str(label)), traffic)
        else:
            self._take_windows()  # a row that is no figure: its windows are nobody's

    def _read_named_value(self, sec: Section, m: re.Match[str] | None) -> str | None:
        """Store ``label: number``; the label when it is one whose number may be read as a figure."""
        if m and self._count_cells(1):
            label = re.sub(r"\s+", " ", m.group(1))
            sec.values[label] = float(m.group(2))
            return label if self._complete(sec, [m.group(2)]) else None
        return None

    def _read_pairs(self, sec: Section, line: str) -> None:
        """A row of the engine's two-column tables: scaling (threads, MB/s), working set (KiB, ns)."""
        if line.startswith("==="):
            self._in_table = True
            return
        m = _RE_PAIR_ROW.match(line)
        if not (m and self._in_table):
            return
        if self._rows >= MAX_ROWS:
            self._stop(f"more than {MAX_ROWS} table rows")
            return
        self._rows += 1
        first, value = int(m.group(1)), float(m.group(2))
        _sub_list(sec.values, "table").append([first, value])
        if not self._complete(sec, [m.group(2)]):
            self._take_windows()
            return
        if sec.kind == "scaling":
            self._figure(sec, (first,), value, sec.params.get("traffic"))
        else:
            self._figure(sec, (first * 1024,), value)  # the table gives KiB


def _bytes(number: str, unit: str) -> int:
    return int(round(float(number) * _UNIT[unit.lower()]))


def _banner(line: str) -> re.Match[str] | None:
    m = _RE_VERSION.search(line)
    return m if m and "memory latency checker" in line.lower() else None


T = TypeVar("T")


@dataclass(frozen=True)
class LineRule(Generic[T]):
    """A kind of line that may appear anywhere: ``match`` gives None, or what ``handle`` reads."""

    name: str
    match: Callable[[str], T | None]
    handle: Callable[[LineParser, str, T], None]

    def apply(self, parser: LineParser, line: str) -> bool:
        """Read ``line`` when it is of this kind; whether it was."""
        m = self.match(line)
        if m is None:
            return False
        self.handle(parser, line, m)
        return True


# in order: the first that matches reads the line (a title is a title before it is a "Using …" line)
LINE_RULES: tuple[LineRule[re.Match[str]] | LineRule[str], ...] = (
    LineRule("MLC warning (* …)", _RE_STAR.match, LineParser._on_star),
    LineRule("banner with version", _banner, LineParser._on_banner),
    LineRule("command line", _RE_CMDLINE.match, LineParser._on_command_line),
    LineRule("buffer size", _RE_BUFFER.match, LineParser._on_buffer),
    LineRule("section title (Measuring …)", _section_kind, LineParser._on_title),
    LineRule("idle latency (Each iteration took …)", _RE_IDLE.match, LineParser._on_idle),
    LineRule("huge pages (engine)", _RE_HUGE.match, LineParser._on_huge_pages),
    LineRule("NUMA placement (engine)", _RE_NUMA.match, LineParser._on_numa),
    LineRule("latency thread and stride (engine)", _RE_THREADS.match, LineParser._on_latency_thread),
    LineRule("injection delay unit (engine)", _RE_DELAY_UNIT.match, LineParser._on_delay_unit),
    LineRule("sub-window figures (engine)", _RE_WINDOWS_ANY.match, LineParser._on_windows),
    LineRule("load threads' bandwidth before a row (engine)", _RE_LOAD_BW.match, LineParser._on_load_bandwidth),
    LineRule("traffic type", _RE_TRAFFIC.match, LineParser._on_traffic),
    LineRule("verified placement of a matrix cell (engine)", _RE_PLACEMENT.match, LineParser._on_placement),
    LineRule("cache level (engine)", _RE_CACHE.match, LineParser._on_cache),
    LineRule("c2c writer and reader CPUs (engine)", _RE_C2C_CPUS.match, LineParser._on_c2c_cpus),
    LineRule("load threads' CPUs (engine)", _RE_LOAD_CPUS.match, LineParser._on_load_cpus),
    LineRule("read/write split of a bandwidth (engine)", _RE_SPLIT.match, LineParser._on_split),
)

# the reader of the other lines, by the kind of the section they are in
BODY_READERS: dict[str, Callable[[LineParser, Section, str], Row | None]] = {
    "loaded": LineParser._read_loaded,
    "idle_matrix": LineParser._read_matrix,
    "bandwidth_matrix": LineParser._read_matrix,
    "c2c": LineParser._read_matrix,
    "peak_bandwidth": LineParser._read_peak,
    "scaling": LineParser._read_pairs,
    "working_set": LineParser._read_pairs,
}


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
            return section_figure(s, "latency_ns")
    return None


def idle_windows(sections: list[Section]) -> dict[str, tuple[float, ...]]:
    """The engine's sub-window figures of the idle latency :func:`idle_latency` reads ({} when it printed none)."""
    for s in sections:
        if s.kind == "idle" and "latency_ns" in s.values:
            windows = _as_dict(s.values.get("windows"))
            return {str(k): tuple(float(x) for x in _as_list(v) if isinstance(x, float)) for k, v in windows.items()}
    return {}


def load_mbps(parser: LineParser, row: Row) -> float | None:
    """The load threads' part of ``row``'s bandwidth when the engine printed it before the row (MLC does not)."""
    sec = parser.sections[-1] if parser.sections else None
    return section_load(sec, row.delay) if sec is not None else None


def section_figure(sec: Section, key: str) -> float:
    """One of a section's named figures (the parser stores each as a float)."""
    value = sec.values[key]
    assert isinstance(value, (int, float))
    return float(value)


def section_load(sec: Section, delay: int) -> float | None:
    """The load threads' bandwidth the engine printed before the row of ``delay`` (None: it did not)."""
    value = _as_dict(sec.values.get("load_mbps")).get(delay)
    assert value is None or isinstance(value, (int, float))
    return None if value is None else float(value)
