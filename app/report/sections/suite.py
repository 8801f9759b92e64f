"""The memory suite's sections of report.md, in Intel MLC's layout: the idle latency and bandwidth matrices,
peak injection bandwidth, bandwidth against load threads, cache-to-cache transfer latency, and the
working-set curve with its plateaus.

One results line is one figure (app.model.points.MemoryPoint's modes).  Numbers of MLC's sections print as MLC
prints them (one decimal), so an imported MLC text reads back unchanged; a planned point without a figure
shows as "—" with a footnote, never as a missing cell.  :mod:`app.report.figures.suite_plots` draws the figures
named here (the file names are this module's, so the text can place each figure in its section).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Callable, Iterable, Mapping, Sequence

from app.core.sanitize import Markup, md_text
from app.core.textable import markdown_figure, markdown_table
from app.core.units import format_size_human, size_text
from app.model.records import number
from app.report.compute import contention, intervals, plateaus
from app.report.compute import memory as mem
from app.report.data.model import TRAFFIC_DESCRIPTIONS, MemoryRow, RunData

SATURATED_GAIN = 0.10  # a last thread that adds more than this much bandwidth: the memory was not saturated
MODES = ("latency_matrix", "bandwidth_matrix", "peak", "scaling", "c2c", "working_set")
NOT_MEASURED = "—"
PREFIX = "plots/memory-suite-"  # every figure of this module's sections
PEAK_LABELS = {"R": "ALL Reads", "W3": "3:1 Reads-Writes", "W2": "2:1 Reads-Writes", "W5": "1:1 Reads-Writes",
               "W10": "Stream-triad like"}
# how each of MLC's five mixes is made and counted (bytes on the memory bus; native/memlat/README.md)
PEAK_BYTES = {
    "R": "loads only: 64 B read per line",
    "W3": "2 loads + 1 ordinary store: 3 reads (one of them the store's read-for-ownership) : 1 write-back",
    "W2": "1 load + 1 ordinary store: 2 reads (one of them the store's read-for-ownership) : 1 write-back",
    "W5": "ordinary stores only: each a read-for-ownership (64 B read) and a write-back (64 B written)",
    "W10": "2 loads + 1 non-temporal store (64 B written once, nothing read): like STREAM's triad",
}
C2C_LOCAL = {"hit": Markup("Local Socket L2->L2 HIT  latency"),  # MLC's words, its two spaces kept in the table
             "hitm": Markup("Local Socket L2->L2 HITM latency")}
C2C_REMOTE = "Remote Socket L2->L2 HITM latency (data address homed in {} socket)"


# --- the rows ------------------------------------------------------------------------------------------------


def rows(data: RunData) -> list[MemoryRow]:
    """The suite's rows: the measured lines of its modes, and a row without metrics for every planned point of
    those modes that has no line (it failed, or the run stopped before it)."""
    measured = [p for p in data.memory if p.mode in MODES]
    have = {p.index for p in data.memory}
    missing = [MemoryRow.of(i, dict(pt), {}) for i, pt in enumerate(data.meta.plan)
               if isinstance(pt, dict) and pt.get("mode") in MODES and i not in have]
    return sorted(measured + missing, key=lambda p: p.index)


def value(p: MemoryRow) -> float | None:
    """The point's one figure: bandwidth for the bandwidth modes, latency for the others."""
    return p.bandwidth if p.mode in ("peak", "scaling", "bandwidth_matrix") else p.latency


def mlc_number(v: float | None) -> str:
    """A figure as MLC prints it (one decimal), "—" when not measured."""
    return NOT_MEASURED if v is None else f"{v:.1f}"


def mlc_pm(p: MemoryRow) -> str:
    """The point's figure as MLC prints it, with ± the half-width of its 95 % interval where the line records
    one (the built-in engine's windows)."""
    v = value(p)
    figure = "bandwidth_mbps" if p.mode in ("peak", "scaling", "bandwidth_matrix") else "latency_ns"
    return mlc_number(v) if v is None else intervals.pm_fixed(v, intervals.memory_intervals(p).get(figure), 1)


def _int(p: MemoryRow, key: str) -> int | None:
    v = p.point.get(key)
    return v if isinstance(v, int) and not isinstance(v, bool) else None


def _str(p: MemoryRow, key: str) -> str:
    v = p.point.get(key)
    return v if isinstance(v, str) else ""


def page_key(p: MemoryRow) -> str:
    """The point's page size: its ``pages`` key, else what the engine printed (huge pages yes or no)."""
    pages = _str(p, "pages")
    if pages:
        return pages
    huge = p.line.parts.huge_pages
    huge = huge if isinstance(huge, bool) else mem.huge_pages([p])
    return "" if huge is None else "2m" if huge else "4k"


def groups(points: Iterable[MemoryRow], *keys: str) -> dict[tuple[str, ...], list[MemoryRow]]:
    """The points by engine, page size, ``keys`` and source (the imported file: another file may be another
    machine, so no table or figure mixes two), one table or figure each, in a fixed order."""
    out: dict[tuple[str, ...], list[MemoryRow]] = {}
    for p in points:
        out.setdefault((p.engine, page_key(p), *(_str(p, k) for k in keys), p.source), []).append(p)
    return dict(sorted(out.items()))


def source_text(points: Sequence[MemoryRow], several: bool) -> str:
    """", from FILE" naming the imported file of a group when the section has several sources, else ""."""
    src = points[0].source if points else ""
    return f", from {_md(src)}" if several and src else ""


def several_sources(points: Iterable[MemoryRow]) -> bool:
    return len({p.source for p in points}) > 1


def stem(mode: str, key: tuple[str, ...], several: bool) -> str:
    """A figure's file name for a group of a mode (the group's key in it when the mode has several groups; a long
    key, e.g. an imported file's name, cut and told apart by a digest of the whole)."""
    tail = "-".join(k for k in key if k) if several else ""
    safe = "".join(c if c.isalnum() else "-" for c in tail.lower())
    if len(safe) > 40:
        safe = safe[:31] + "-" + hashlib.sha256(tail.encode()).hexdigest()[:8]
    return f"{mode.replace('_', '-')}{'-' + safe if safe else ''}"


def figure_file(mode: str, key: tuple[str, ...], several: bool) -> str:
    return f"{PREFIX}{stem(mode, key, several)}.svg"


# --- what every table names: engine, chase, pages, threads --------------------------------------------------


def engine_text(points: Sequence[MemoryRow]) -> str:
    names = sorted({p.engine for p in points if p.engine})
    words = {"builtin": "built-in (memlat)", "mlc": "Intel MLC"}
    return ", ".join(words.get(n) or _md(n) for n in names) or "not recorded"


def pages_text(points: Sequence[MemoryRow]) -> str:
    kinds = {page_key(p) for p in points}
    if kinds == {"4k"}:
        return "4 KiB pages"
    if kinds == {"2m"}:
        return "2 MiB huge pages where the kernel allows"
    if len(kinds - {""}) > 1:
        return "2 MiB and 4 KiB pages"
    if points and all(p.engine == "mlc" for p in points):
        return "page size as Intel MLC chose it (not in its output)"
    return "page size not recorded"


def _cpus_count(text: str) -> int | None:
    n = 0
    for part in text.split(","):
        lo, _, hi = part.partition("-")
        if not (lo.isdigit() and (not hi or hi.isdigit())) or int(hi or lo) < int(lo):
            return None
        n += int(hi or lo) - int(lo) + 1
    return n or None


def load_threads_text(points: Sequence[MemoryRow]) -> str:
    """The load threads of a bandwidth figure: as the engine printed them, else the planned CPU list."""
    for p in points:
        n = p.line.parts.load_threads
        if n is not None and n >= 1:
            return f"{int(n)} load thread{'s' if n != 1 else ''}, no latency thread"
    cpus = next((c for p in points if (c := _str(p, "cpus"))), "")
    count = _cpus_count(cpus) if cpus else None
    if count:
        return f"{count} load thread{'s' if count != 1 else ''} (CPUs {_md(cpus)}), no latency thread"
    if points and all(p.engine == "mlc" for p in points):
        return "all the threads of each core (Intel MLC's default; their number is not in its output)"
    return "a load thread on every allowed CPU (their number was not recorded)"


def c2c_cpus_text(points: Sequence[MemoryRow]) -> str:
    pairs = []
    for p in points:
        cpus = p.line.parts.c2c_cpus
        if (isinstance(cpus, list) and len(cpus) == 2
                and all(isinstance(c, int) and not isinstance(c, bool) and 0 <= c < 1 << 20 for c in cpus)):
            pair = f"writer CPU {cpus[0]}, reader CPU {cpus[1]}"
            if pair not in pairs:
                pairs.append(pair)
    if pairs:
        return "; ".join(pairs[:4])
    return "as Intel MLC chose them (not in its output)" if all(p.engine == "mlc" for p in points) else "not recorded"


def measured_with(points: Sequence[MemoryRow], threads: str, chase: bool = True) -> list[str]:
    """The line under every table of the suite: its engine, chase, page size and threads."""
    done = [p for p in points if value(p) is not None] or list(points)
    parts = [f"engine: {engine_text(done)}"]
    if chase:
        texts = mem.chase_texts(done)[:3]
        strides = sorted({p.stride for p in done if p.stride})
        if texts == ["not recorded"] and strides:  # the plan still says how far apart the chase's steps were
            texts = [f"not recorded (stride {', '.join(map(str, strides))} B as planned)"]
        parts.append("chase: " + ", ".join(texts))
    parts += [pages_text(done), f"threads: {threads}"]
    return ["Measured with: " + "; ".join(parts) + ".", ""] + warnings_line(done)


def warnings_line(points: Sequence[MemoryRow]) -> list[str]:
    """The engine's warnings about these figures (a busy machine, a misplaced page), how many figures had one."""
    texts: list[str] = []
    warned = 0
    for p in points:
        mine = contention.own_warnings(p)[:8]  # not another figure's (lines written before each kept its own)
        warned += bool(mine)
        texts += [t for w in mine if (t := _md(w)) not in texts]
    if not warned:
        return []
    shown = "; ".join(texts[:3]) + (f"; … ({len(texts)} different)" if len(texts) > 3 else "")
    return [f"Engine warnings on {warned} of {len(points)} figure{'s' if len(points) != 1 else ''}: {shown}.", ""]


def footnote(points: Sequence[MemoryRow], data: RunData) -> list[str]:
    """Under a table with a "—": which points have no figure and why, as run.json's failures say."""
    missing = [p for p in points if value(p) is None]
    if not missing:
        return []
    errors = {f.index: f.error for f in data.meta.failures if f.index is not None and f.error}
    why = list(dict.fromkeys(_md(errors[p.index]) for p in missing if p.index in errors))
    text = (f"— {len(missing)} planned figure{'s' if len(missing) != 1 else ''} not measured: the point failed or the "
            "run stopped before it")
    text += (" (run.json's failures: " + "; ".join(why[:3]) + (" …" if len(why) > 3 else "") + ")") if why else ""
    return [text + ".", ""]


def _md(text: str) -> str:
    return md_text(text, 160)


def _figure(file: str, figures: Sequence[object]) -> list[str]:
    """The figure drawn for ``file`` (if it was drawn), as the report shows a figure."""
    for f in figures:
        if getattr(f, "file", None) == file:
            return markdown_figure(getattr(f, "title"), getattr(f, "caption"), file)
    return []


def owns(figure: object) -> bool:
    """A figure this module places in its own sections (the memory figures' list leaves it out)."""
    return str(getattr(figure, "file", "")).startswith(PREFIX)


# --- matrices ------------------------------------------------------------------------------------------------


@dataclass
class Matrix:
    rows: list[int]
    cols: list[int]
    cells: dict[tuple[int, int], MemoryRow]

    def cell(self, r: int, c: int) -> float | None:
        p = self.cells.get((r, c))
        return None if p is None else value(p)


def matrix(points: Sequence[MemoryRow], row_key: str, col_key: str) -> Matrix:
    cells: dict[tuple[int, int], MemoryRow] = {}
    for p in points:
        r, c = _int(p, row_key), _int(p, col_key)
        if r is not None and c is not None and (value(p) is not None or (r, c) not in cells):
            cells[(r, c)] = p
    return Matrix(sorted({r for r, _ in cells}), sorted({c for _, c in cells}), cells)


def matrix_table(m: Matrix, corner: str, diagonal: str | None = None) -> str:
    head = [corner] + [str(c) for c in m.cols]
    body = [[str(r)] + [diagonal if diagonal is not None and r == c and (r, c) not in m.cells
                        else mlc_number(m.cell(r, c)) if (r, c) in m.cells else NOT_MEASURED for c in m.cols]
            for r in m.rows]
    return markdown_table(head, body)


def _placement(points: Sequence[MemoryRow]) -> str:
    verified = [p for p in points if isinstance(p.line.parts.numa, dict)
                and p.line.parts.numa.get("verified_with") in ("numa_maps", "move_pages")]
    done = [p for p in points if value(p) is not None]
    if done and len(verified) == len(done):
        return "every cell's buffer verified page by page on its node (/proc/self/numa_maps)"
    if verified:
        return f"verified for {len(verified)} of {len(done)} cells"
    if done and all(p.engine == "mlc" for p in done):
        return "as Intel MLC bound it (it prints no verification)"
    return "verification not recorded"


def _one_node(m: Matrix) -> list[str]:
    return (["One NUMA node: the matrix is 1×1 (a machine with one node has no remote memory to compare).", ""]
            if len(m.rows) == 1 and len(m.cols) == 1 else [])


def _matrix_section(data: RunData, points: Sequence[MemoryRow], figures: Sequence[object], mode: str) -> list[str]:
    latency = mode == "latency_matrix"
    out = ["### Idle latency matrix (ns)" if latency else "### Memory bandwidth matrix (MB/sec)", ""]
    out += [("Idle latency of a pointer chase running on a CPU of the row's node over a buffer bound to the column's "
             "node, in ns (MLC's 'Measuring idle latencies', one decimal as MLC prints it)." if latency else
             "Bandwidth of load threads on every allowed CPU of the row's node reading a buffer bound to the column's "
             "node, in MB/sec (10^6 B/s; MLC's 'Measuring Memory Bandwidths between nodes')."), ""]
    keys = ("traffic",) if not latency else ()
    grouped = groups(points, *keys)
    for key, pts in grouped.items():
        m = matrix(pts, "cpu_node", "mem_node")
        if len(grouped) > 1 or not latency or several_sources(data.memory):
            traffic = key[2] if not latency else ""
            out += [f"#### {engine_text(pts)}, {pages_text(pts)}"
                    + (f", traffic {_md(traffic)} ({TRAFFIC_DESCRIPTIONS.get(traffic) or _md(traffic)})" if traffic
                       else "") + source_text(pts, several_sources(data.memory)), ""]
        out += [matrix_table(m, "Numa node (CPU ↓, memory →)"), ""]
        out += _one_node(m)
        threads = ("one latency thread on the first allowed CPU of the row's node, no load" if latency
                   else "a load thread on every allowed CPU of the row's node")
        out += measured_with(pts, threads, chase=latency)
        out += [f"Placement: {_placement(pts)}.", ""]
        out += footnote(pts, data)
        out += _figure(figure_file(mode, key, len(grouped) > 1), figures)
    return out


# --- peak injection bandwidth and scaling -------------------------------------------------------------------


def peak_order(traffic: str) -> tuple[int, int, str]:
    keys = list(PEAK_LABELS)
    digits = traffic[1:]
    return (keys.index(traffic) if traffic in keys else len(keys), int(digits) if digits.isdigit() else 0, traffic)


def peak_label(traffic: str) -> str:
    return PEAK_LABELS.get(traffic, f"{traffic} traffic")


def _extra(p: MemoryRow, key: str) -> str:
    v = number(p.metrics.more.get(key))
    return "" if v is None else f"{v:.1f}"


def _per_group(data: RunData, points: Sequence[MemoryRow], figures: Sequence[object], mode: str,
               body: Callable[[list[MemoryRow]], list[str]]) -> list[str]:
    """A section's tables, one per engine and page size (a heading each when there are several), each with its
    footnote and figure."""
    grouped = groups(points)
    out: list[str] = []
    for key, pts in grouped.items():
        if len(grouped) > 1 or several_sources(data.memory):
            out += [f"#### {engine_text(pts)}, {pages_text(pts)}{source_text(pts, several_sources(data.memory))}", ""]
        out += body(pts) + footnote(pts, data) + _figure(figure_file(mode, key, len(grouped) > 1), figures)
    return out


def _peak_table(pts: list[MemoryRow]) -> list[str]:
    by = sorted(pts, key=lambda p: peak_order(p.traffic or "R"))
    split = any(_extra(p, "read_mbps") or _extra(p, "write_mbps") for p in by)
    body = [[peak_label(p.traffic or "R"), p.traffic or "R", mlc_pm(p)]
            + ([_extra(p, "read_mbps"), _extra(p, "write_mbps")] if split else [])
            + [PEAK_BYTES.get(p.traffic or "R", TRAFFIC_DESCRIPTIONS.get(p.traffic or "", "traffic type"))]
            for p in by]
    head = ["Traffic", "Code", "Bandwidth (MB/sec)"] + (["Reads (MB/sec)", "Writes (MB/sec)"] if split else [])
    return ([markdown_table(head + ["Made of (how bytes are counted)"], body, right=range(2, len(head))), ""]
            + measured_with(pts, load_threads_text(pts), chase=False))


def _peak_section(data: RunData, points: Sequence[MemoryRow], figures: Sequence[object]) -> list[str]:
    return ["### Peak injection memory bandwidth (MB/sec)", "",
            "Measuring Peak Injection Memory Bandwidths as MLC does: every load thread as fast as it can (no injection "
            "delay, no latency thread). Bandwidths are in MB/sec (1 MB/sec = 1,000,000 Bytes/sec). The read:write "
            "ratios count bytes on the memory bus: an ordinary store first reads its line (read-for-ownership) and "
            "later writes it back, a non-temporal store writes it once.", ""
            ] + _per_group(data, points, figures, "peak", _peak_table) + _peak_validity(data, points)


def _machine_cpus(data: RunData) -> int | None:
    env = data.meta.environment
    cpu = env.cpu if env is not None and not data.imported else None
    n = number(cpu.get("threads")) if cpu is not None else None
    return int(n) if n is not None and n >= 1 else None


def _peak_validity(data: RunData, points: Sequence[MemoryRow]) -> list[str]:
    """Under the peak table: a peak that is none (contended, or beaten by a loaded point), and how many threads made
    each peak against the CPUs and what the run shows of saturation."""
    loaded = [p for p in data.memory if p.mode == "loaded"]
    scaling = [p for p in data.memory if p.mode == "scaling" and not contention.contended(p)]
    cpus = _machine_cpus(data)
    out = []
    valid: dict[str, list[str]] = {}  # what the run shows of saturation → the peaks it is said of
    for p in sorted(points, key=lambda p: peak_order(p.traffic or "R")):
        if p.bandwidth is None:
            continue
        name = f"{peak_label(p.traffic or 'R')} {mlc_number(p.bandwidth)} MB/s"
        why = contention.peak_problem(p, loaded)
        if why:
            out.append(f"- {name} is no peak: {_md(why)}. It is shown as measured and used as no reference.")
        else:
            valid.setdefault(_saturation(p, scaling, cpus), []).append(name)
    for text, names in valid.items():  # one line for the peaks the same sentence holds for
        who = names[0] if len(names) == 1 else (f"each of these {len(names)} peaks" if not out and len(valid) == 1
                                                  else ", ".join(names))
        out.append(f"- {who[:1].upper() + who[1:]}: {text}")
    return out + [""] if out else []


def _saturation(p: MemoryRow, scaling: Sequence[MemoryRow], cpus: int | None) -> str:
    """How many load threads made the peak, of how many CPUs, and whether the run shows they saturate memory."""
    who = contention.threads_text(p, cpus)
    curve = sorted((n, q.bandwidth) for q in scaling if (q.traffic or "R") == (p.traffic or "R") and q.engine == (
        p.engine) and q.source == p.source and (n := threads_of(q)) is not None and q.bandwidth)
    if len(curve) >= 2:
        (a, bw_a), (b, bw_b) = curve[-2], curve[-1]
        gain = bw_b / bw_a - 1
        if gain > SATURATED_GAIN:
            return (f"the peak of {who}, not of the memory: bandwidth still rose {gain:+.0%} from {a} to {b} threads "
                    "(not saturated).")
        return f"{who}; bandwidth rose {gain:+.0%} from {a} to {b} threads: saturated."
    return f"the peak of {who}; no scaling curve shows whether that many threads saturate the memory."


def threads_of(p: MemoryRow) -> int | None:
    return _int(p, "threads")


def _scaling_table(pts: list[MemoryRow]) -> list[str]:
    traffics = sorted({p.traffic or "R" for p in pts}, key=peak_order)
    counts = sorted({n for p in pts if (n := threads_of(p)) is not None})
    cell = {(threads_of(p), p.traffic or "R"): p for p in pts}
    body = [[str(n)] + [mlc_number(value(cell[(n, t)])) if (n, t) in cell else "" for t in traffics] for n in counts]
    cpus = next((c for p in pts if (c := _str(p, "cpus"))), "")
    return ([markdown_table(["Threads"] + [f"{t} ({TRAFFIC_DESCRIPTIONS.get(t, t)})" for t in traffics], body), ""]
            + measured_with(pts, f"N load threads on the first N CPUs of {_md(cpus) or 'the allowed CPUs'}",
                            chase=False))


def _scaling_section(data: RunData, points: Sequence[MemoryRow], figures: Sequence[object]) -> list[str]:
    return ["### Bandwidth against load threads (MB/sec)", "",
            "Bandwidth of N load threads on the first N CPUs of the list, each as fast as it can (no latency thread), "
            "one column per traffic type; MB/sec = 10^6 B/s.", ""] + _per_group(data, points, figures, "scaling",
                                                                               _scaling_table)


# --- cache to cache ------------------------------------------------------------------------------------------


def _c2c_section(data: RunData, points: Sequence[MemoryRow]) -> list[str]:
    out = ["### Cache-to-cache transfer latency (ns)", "",
           "Measuring cache-to-cache transfer latency as MLC does: a writer thread touches cache lines, then a reader "
           "thread on another core reads them. HITM: the writer modified the lines (Modified in its cache); HIT: it "
           "only read them (clean). Latency per line transfer in ns, one decimal as MLC prints it.", ""]
    by_source: dict[str, list[MemoryRow]] = {}
    for p in points:  # imported from several files: each its own tables (another file may be another machine)
        by_source.setdefault(p.source, []).append(p)
    for source, pts in sorted(by_source.items()):
        if len(by_source) > 1 or several_sources(data.memory):
            out += [f"#### From {_md(source)}" if source else "#### Measured by this run", ""]
        out += _c2c_tables(data, pts)
    return out


def _c2c_tables(data: RunData, points: Sequence[MemoryRow]) -> list[str]:
    out: list[str] = []
    local = [p for p in points if _int(p, "reader_node") is None]
    remote = [p for p in points if _int(p, "reader_node") is not None]
    if local:
        by = sorted(local, key=lambda p: (_str(p, "c2c") != "hit", p.index))
        body = [[C2C_LOCAL.get(_str(p, "c2c") or "hitm", _str(p, "c2c")), mlc_pm(p),
                 c2c_cpus_text([p])] for p in by]
        out += [markdown_table(["Local Socket", "Latency (ns)", "CPUs"], body, right=(1,)), ""]
        out += measured_with(local, c2c_cpus_text(local), chase=False)
    for home in ("writer", "reader"):
        pts = [p for p in remote if (_str(p, "home") or "writer") == home]
        if not pts:
            continue
        m = matrix(pts, "cpu_node", "reader_node")
        nodes = sorted(set(m.rows) | set(m.cols))
        m = Matrix(nodes, nodes, m.cells)
        out += [C2C_REMOTE.format(home) + ":", "", matrix_table(m, "Writer Numa Node ↓, Reader Numa Node →", "-"), ""]
        out += measured_with(pts, "a writer on the first allowed CPU of the row's node, a reader on the column's",
                             chase=False)
    if local and not remote:
        out += ["No remote figures: one NUMA node with CPUs, or the run measured only the local pair.", ""]
    out += footnote(points, data)
    return out


# --- working set ---------------------------------------------------------------------------------------------


def sysfs_caches(points: Sequence[MemoryRow]) -> list[plateaus.Cache]:
    """The data and unified caches a working-set curve was recorded with (results lines' ``caches``)."""
    for p in points:
        caches = p.line.parts.caches
        if not isinstance(caches, list):
            continue
        out = []
        for c in caches[:16]:
            if not isinstance(c, dict) or str(c.get("type", "")).lower().startswith("instr"):
                continue
            size, level = number(c.get("size_bytes")), number(c.get("level"))
            if size is None or not 0 < size < 1 << 42 or level is None or not 0 < level < 10:
                continue
            name = c.get("name")
            ok = isinstance(name, str) and name.isascii() and name.isalnum() and len(name) <= 8
            out.append(plateaus.Cache(name if ok else f"L{int(level)}", int(size)))  # type: ignore[arg-type]
        if out:
            return sorted(set(out), key=lambda c: c.size)
    return []


def curve(points: Sequence[MemoryRow], clean: bool = False) -> list[tuple[int, float]]:
    """(buffer, ns) of a working-set curve's sizes; ``clean``: without contended sizes (plateaus are found on those)."""
    return sorted((b, v) for p in points if (b := p.buffer) is not None and (v := p.latency) is not None
                  and not (clean and contention.contended(p)))


def page_words(pages: str) -> str:
    return {"4k": "4 KiB pages", "2m": "2 MiB pages"}.get(pages, "pages not recorded")


def size(n: float) -> str:
    """A buffer size as the curve's table prints it (whole KiB)."""
    return format_size_human(int(n)) if int(n) == n else f"{n:.0f} B"


def about(n: float) -> str:
    """A size in prose: 1.2 MiB."""
    return size_text(n)


def plateau_rows(found: Sequence[plateaus.Plateau], caches: Sequence[plateaus.Cache]) -> list[list[str]]:
    names = plateaus.labels(found, caches) if caches else [f"plateau {i + 1}" for i in range(len(found))]
    return [[names[i], f"{about(p.first)} – {about(p.last)}",
             f"{p.latency:.2f}", str(len(p.sizes)) + (f" ({p.outliers} outlier{'s' if p.outliers != 1 else ''})"
                                                       if p.outliers else "")] for i, p in enumerate(found)]


def comparison(found: Sequence[plateaus.Plateau], caches: Sequence[plateaus.Cache]) -> list[str]:
    """Sentences: each sysfs cache against the boundaries detected on the curve, and where they disagree."""
    if not caches:
        return ["The cache sizes were not recorded with this curve: the plateaus are not compared with sysfs."]
    matches, strays = plateaus.compare(found, caches)
    out = []
    for m in matches:
        c = m.cache
        if m.boundary is None:
            out.append(f"{c.name} ({about(c.size)}, sysfs): no boundary detected on the curve (fewer than two plateaus)"
                       " — they disagree.")
            continue
        gap = f"between {about(m.boundary.lo)} and {about(m.boundary.hi)}"
        if m.agrees:
            out.append(f"{c.name} ({about(c.size)}, sysfs): the latency leaves the {m.boundary.below.latency:.2f} ns "
                       f"plateau {gap} — agrees (within {plateaus.OCTAVES:g} octave).")
        else:
            out.append(f"{c.name} ({about(c.size)}, sysfs): disagrees — the nearest detected boundary is {gap}, "
                       f"{m.octaves:.1f} octaves away; no latency step shows at {about(c.size)}.")
    for b in strays:
        out.append(f"A boundary detected between {about(b.lo)} and {about(b.hi)} ({b.below.latency:.2f} → "
                   f"{b.above.latency:.2f} ns) matches no sysfs cache (a TLB reach or a cache sysfs does not list).")
    return out


def _working_set_curve(label: str, pts: Sequence[MemoryRow], caches: Sequence[plateaus.Cache]) -> list[str]:
    c = curve(pts, clean=True)
    left = len(curve(pts)) - len(c)
    found = plateaus.detect(c)
    if found is None:
        return [f"{label}: {len(c)} {'clean ' if left else ''}buffer size{'s' if len(c) != 1 else ''} measured — too "
                f"few to detect plateaus (the rule needs at least {plateaus.MIN_SIZES}); no plateau is claimed.", ""]
    busy = f" ({left} contended size{'s' if left != 1 else ''} left out). {contention.rule_text()}" if left else "."
    out = [f"{label}: {len(found)} plateau{'s' if len(found) != 1 else ''} detected over {len(c)} sizes{busy}", ""]
    if found:
        head = ["Level (by its measured edges)", "Buffer range", "Latency (ns, median)", "Sizes"]
        out += [markdown_table(head, plateau_rows(found, caches), right=(2, 3)), ""]
    out += ["- " + s for s in comparison(found, caches)] + [""]
    return out


def _working_set_section(data: RunData, points: Sequence[MemoryRow], figures: Sequence[object]) -> list[str]:
    out = ["### Latency against working-set size", "",
           "Idle latency of one pointer-chasing thread confined to a buffer of each size (as lmbench's lat_mem_rd), in "
           "ns. Plateaus are detected from the curve itself: by increasing size, a size within "
           f"{plateaus.TOLERANCE:.0%} of "
           "the current run's median latency joins it, else starts a new run (one size that leaves a run while the "
           "next comes back is an outlier, not counted in the median); a run of at least "
           f"{plateaus.MIN_RUN} sizes is a "
           "plateau, its latency the median. A cache boundary lies between two neighbouring plateaus; a sysfs cache "
           f"size within {plateaus.OCTAVES:g} octave of it agrees (a random chase misses a cache before it is "
           "full).", ""]
    caches = sysfs_caches(points)
    if caches:
        out += ["Caches from sysfs, recorded with the curve: "
                + ", ".join(f"{c.name} {about(c.size)}" for c in caches) + ".", ""]
    grouped = groups(points)
    for key, pts in grouped.items():
        label = f"{engine_text(pts)}, {page_words(key[1])}{source_text(pts, several_sources(data.memory))}"
        out += _working_set_curve(label, pts, caches)
    table = _curve_table(grouped, several_sources(data.memory))
    if table:
        out += [table, ""]
    for key, pts in grouped.items():
        out += measured_with(pts, "one latency thread" + (f" on CPU {_md(_str(pts[0], 'cpus').split(',')[0])}"
                                                          if _str(pts[0], "cpus") else ""))
    out += footnote(points, data)
    out += _figure(figure_file("working_set", (), False), figures)
    return out


def _curve_table(grouped: Mapping[tuple[str, ...], Sequence[MemoryRow]], several: bool) -> str:
    """Every size's latency, one column per curve (engine, page size)."""
    sizes = sorted({b for pts in grouped.values() for p in pts if (b := p.buffer) is not None})
    if not sizes:
        return ""
    cols = [{p.buffer: p for p in pts} for pts in grouped.values()]
    head = ["Buffer"] + [Markup(f"{engine_text(pts)}, {page_words(k[1])}{source_text(pts, several)} (ns)")
                         for k, pts in grouped.items()]
    body = [[size(s)] + [("" if s not in c else NOT_MEASURED if c[s].latency is None else f"{c[s].latency:.2f}")
                         for c in cols] for s in sizes]
    return markdown_table(head, body)


# --- the section ---------------------------------------------------------------------------------------------


Section = Callable[[RunData, Sequence[MemoryRow], Sequence[object]], list[str]]


BEFORE_LOADED = ("latency_matrix", "peak", "bandwidth_matrix")  # plain `mlc` prints these before loaded latencies
AFTER_LOADED = ("c2c", "scaling", "working_set")


def section(data: RunData, figures: Sequence[object], modes: Sequence[str] = MODES) -> list[str]:
    """The suite sections of ``modes`` the run has points of, in MLC's order (working set last)."""
    by_mode: dict[str, list[MemoryRow]] = {}
    for p in rows(data):
        by_mode.setdefault(p.mode, []).append(p)
    parts: list[tuple[str, Section]] = [
        ("latency_matrix", lambda d, p, f: _matrix_section(d, p, f, "latency_matrix")),
        ("peak", _peak_section),
        ("bandwidth_matrix", lambda d, p, f: _matrix_section(d, p, f, "bandwidth_matrix")),
        ("c2c", lambda d, p, f: _c2c_section(d, p)),
        ("scaling", _scaling_section),
        ("working_set", _working_set_section),
    ]
    out: list[str] = []
    for mode, write in parts:
        if mode in modes and by_mode.get(mode):
            out += write(data, by_mode[mode], figures)
    return out
