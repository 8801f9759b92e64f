"""What the memory report says beside its numbers: which traffic a bandwidth counts, what an injection delay
is in time, why a curve has no knee, and the chase buffer against the caches and the TLB.

Every figure comes from the results lines or run.json (read through :func:`app.model.records.number`); a
fact the run did not record is said to be unknown, never guessed.
"""

from __future__ import annotations

import statistics
from typing import Protocol, Sequence

from app.core.sanitize import md_text
from app.core.units import format_size_human
from app.model.records import number
from app.report.compute.contention import CONTENDED_SHARE, threads_text
from app.report.data.model import MemoryRow


class MemCurve(Protocol):
    """What this module reads of app.report.compute.analysis.MemCurve (which uses this module: no import back)."""

    engine: str
    points: list[MemoryRow]  # by increasing load
    knee: int | None
    rejected_knee: int | None

    @property
    def clean(self) -> list[MemoryRow]: ...

MATERIAL = 0.10  # a knee's latency rise must exceed 10 % of the light-load latency: less is drift, not saturation
CHASE_CACHES = 4  # a DRAM latency's chase spans at least this many last-level caches (the engine's default buffer)
LINE_BYTES = 64  # one latency-thread step reads one line (native/memlat/README.md, "How bytes are counted")


# --- which traffic a bandwidth counts ---------------------------------------------------------------------


def counts_latency_thread(p: MemoryRow) -> bool | None:
    """Does ``p``'s bandwidth include the latency thread's own reads?  MLC's always does (its convention,
    derived from its outputs in native/memlat/README.md); the built-in engine says so in its results lines
    since it counts them, and built-in results without that word counted the load threads alone; an imported
    built-in text does not say (None)."""
    if p.line.parts.bandwidth_includes_latency_thread is True or p.engine == "mlc":
        return True
    if p.engine == "builtin" and not p.line.imported_from:
        return False
    return None


def latency_thread_mbps(p: MemoryRow) -> float | None:
    """The latency thread's share of the traffic: one 64 B line per chase step, a step every latency_ns."""
    return LINE_BYTES / p.latency * 1e3 if p.latency and p.latency > 0 else None


def load_mbps(p: MemoryRow) -> float | None:
    """The load threads' bandwidth (MB/s): as the built-in engine measured it (``load_bandwidth_mbps``), else
    the whole figure when it counts them alone, else the whole minus the latency thread's 64 B per step
    (an estimate: the chase's latency is per CPU second, its traffic per wall second; never below 0); None
    when unknown."""
    measured = number(p.metrics.load_bandwidth_mbps)
    if measured is not None and measured >= 0:
        return measured
    counts = counts_latency_thread(p)
    if p.bandwidth is None or counts is None:
        return None
    if not counts:
        return p.bandwidth
    lat = latency_thread_mbps(p)
    return None if lat is None else max(0.0, p.bandwidth - lat)


def bandwidth_words(points: Sequence[MemoryRow]) -> str:
    """What a bandwidth figure of these points counts, in words."""
    kinds = {counts_latency_thread(p) for p in points if p.bandwidth is not None}
    if kinds == {True}:
        return "all traffic (load threads + the latency thread's 64 B per chase step, as Intel MLC counts it)"
    if kinds == {False}:
        return "the load threads alone (recorded before the built-in engine counted the latency thread)"
    return "all traffic as the engine printed it (whether that counts the latency thread is not recorded)"


def load_words(points: Sequence[MemoryRow]) -> str:
    """How the load threads' part of these points' bandwidth is known, in words."""
    measured = [number(p.metrics.load_bandwidth_mbps) is not None for p in points if p.bandwidth is not None]
    if measured and all(measured):
        return "as the built-in engine measured it"
    how = "the whole minus the latency thread's 64 B per chase step (64 B / latency)"
    return ("estimated as " + how) if not any(measured) else f"as the engine measured it, or estimated as {how}"


def bandwidth_axis_words(curves: Sequence[MemCurve]) -> str:
    """A bandwidth axis label's qualifier: ", all traffic", ", load threads" or nothing when they are mixed."""
    kinds = {counts_latency_thread(p) for c in curves for p in c.points if p.bandwidth is not None}
    if kinds == {True}:
        return ", all traffic"
    return ", load threads" if kinds == {False} else ""


# --- the injection delay ----------------------------------------------------------------------------------


def delay_unit_ns(points: Sequence[MemoryRow]) -> float | None:
    """The built-in engine's spin step in ns, as it calibrated it at the start of the run (median over
    the points that recorded one)."""
    units = [u for u in (p.line.parts.delay_unit_ns for p in points) if u is not None and u > 0]
    return statistics.median(units) if units else None


def delay_unit_text(engine: str, points: Sequence[MemoryRow]) -> str:
    """The unit of the injection delay of one engine's points, in words."""
    if engine == "mlc":
        return "Intel MLC's delay units (their duration is not in MLC's output)"
    if engine == "builtin":
        unit = delay_unit_ns(points)
        if unit is None:
            return "built-in engine spin steps (their duration was not recorded)"
        return f"built-in engine spin steps, ≈ {unit:.3g} ns each on the machine that ran it (calibrated at its start)"
    return "the engine's own delay units"


def delay_axis_label(curves: Sequence[MemCurve]) -> str:
    """The x label of a delay axis: one engine's unit, or a warning that the panels mix two."""
    engines = sorted({c.engine for c in curves})
    if engines == ["mlc"]:
        return "injection delay (MLC delay units, symlog)"
    if engines == ["builtin"]:
        unit = delay_unit_ns([p for c in curves for p in c.points])
        each = f" ≈ {unit:.3g} ns" if unit is not None else ", duration not recorded"
        return f"injection delay (built-in spin steps{each}, symlog)"
    return "injection delay (each engine's own unit, not comparable; symlog)"


# --- why a curve has no knee ------------------------------------------------------------------------------


def load_threads(points: Sequence[MemoryRow]) -> int | None:
    """How many threads made the load: as the engine printed it, else from the CPU list (its first CPU runs
    the latency thread); None when the run does not say (MLC uses every CPU unless told)."""
    for p in points:
        n = p.line.parts.load_threads
        if n is not None and n >= 1:
            return int(n)
    cpus = points[0].point.get("cpus") if points else None
    if isinstance(cpus, str) and cpus:
        count = 0
        for part in cpus.split(","):
            lo, _, hi = part.partition("-")
            if not (lo.isdigit() and (not hi or hi.isdigit())):
                return None
            count += int(hi or lo) - int(lo) + 1
        return count - 1 if count > 1 else None
    return None


def rises_above(lighter: Sequence[float], heavy: float) -> bool:
    """Does ``heavy`` rise above the band of ``lighter`` latencies by more than the band's own width and by
    more than MATERIAL of it?  One figure per delay and no repeats: the spread of the light loads is the only
    noise the curve shows, and a chase's latency drifts by several per cent on its own (native/memlat/README.md)."""
    if not lighter:
        return False
    top = max(lighter)
    return heavy - top > max(top - min(lighter), MATERIAL * top)


def knee_supported(curve: MemCurve) -> bool:
    """A bend is a knee only when the heaviest load's latency rises above the band of the lighter points'
    latencies (those before the bend) by more than that band's width."""
    if curve.knee is None:
        return False
    clean = curve.clean
    ids = {id(p) for p in clean}
    lighter = [p.latency for p in curve.points[:curve.knee] if p.latency is not None and id(p) in ids]
    heavy = clean[-1].latency if clean else None
    return heavy is not None and rises_above(lighter, heavy)


def _load_text(pts: Sequence[MemoryRow], cpus: int | None) -> str:
    """The heaviest load's bandwidth and who made it: "22,648.1 MB/s of all traffic (… from the load threads)
    with 1 load thread"."""
    heavy = pts[-1]
    counts = counts_latency_thread(heavy)
    bw = f"{heavy.bandwidth or 0:,.1f} MB/s" + (" of all traffic" if counts else "")
    load = load_mbps(heavy)
    if load is not None and counts:
        bw += f" ({load:,.1f} MB/s from the load threads)"
    threads = load_threads(pts)
    who = f"{threads} load thread{'s' if threads != 1 else ''}" if threads else ""
    if not threads and pts[0].engine == "builtin" and not pts[0].point.get("cpus") and cpus and cpus > 1:
        # results written before the engine's count was recorded: its default is every CPU but the latency thread's
        who = (f"{cpus - 1} load thread{'s' if cpus > 2 else ''} (the engine's default on this {cpus}-CPU machine: "
               "every CPU but the latency thread's)")
    return f"{bw} with {who or 'the load threads (their number is not in the output)'}"


def _more_threads_hint(cpus: int | None) -> str:
    """How a run with more load threads could be made, given the measuring machine's CPU count."""
    if cpus is not None and cpus <= 2:
        return (f" (this machine has {cpus} CPU{'s' if cpus != 1 else ''} and the latency thread takes one, so no "
                "run here can add a load thread; Intel MLC's --peak_injection_bandwidth on a larger machine gives the "
                "peak to compare with)")
    if cpus is not None:
        return f" (`--set cpus=0-{cpus - 1}` uses all {cpus} CPUs: one latency thread, {cpus - 1} load threads)"
    return " (`--set cpus=…`: the first CPU runs the latency thread, the others load threads)"


def no_knee_reason(curve: MemCurve, cpus: int | None = None, peak: MemoryRow | None = None) -> str | None:
    """Why ``curve`` has no knee, from its own numbers; None when it has one.  ``cpus``: the CPUs of the
    machine that ran it (None for an import: that machine was not recorded); ``peak``: the run's peak
    injection bandwidth of the same engine and traffic, when it measured one."""
    if curve.knee is not None:
        return None
    pts = curve.clean
    left = len(curve.points) - len(pts)
    if len(pts) < 3:
        if left:
            return (f"{left} of the {len(curve.points)} delays are contended (a thread got less than "
                    f"{CONTENDED_SHARE:.0%} of a CPU) and left out; the {len(pts)} others are too few: a knee needs at "
                    "least three.")
        return f"{len(pts)} delays measured: a knee needs at least three."
    if any(p.bandwidth is None for p in pts):
        return "bandwidth not recorded at every delay: no curve to find a knee on."
    light, heavy = pts[0], pts[-1]
    lats = [p.latency for p in pts if p.latency is not None]
    if not light.latency or not heavy.latency:
        return "latency not recorded at the ends of the sweep."
    text = (f"Latency went from {light.latency:.2f} ns at delay {light.delay} to {heavy.latency:.2f} ns at delay "
            f"{heavy.delay} ({heavy.latency / light.latency - 1:+.1%}; every delay within {min(lats):.2f}–"
            f"{max(lats):.2f} ns) while bandwidth reached {_load_text(pts, cpus)}.")
    if left:
        text = (f"{left} contended delay{'s' if left != 1 else ''} (a thread got less than {CONTENDED_SHARE:.0%} of a "
                "CPU) left out. ") + text
    if curve.rejected_knee is not None:
        ids = {id(p) for p in pts}
        band = [p.latency for p in curve.points[:curve.rejected_knee] if p.latency is not None and id(p) in ids]
        text += (f" The chord rule's bend at delay {curve.points[curve.rejected_knee].delay} is no knee: the heaviest "
                 f"load's {heavy.latency:.2f} ns does not rise above the lighter loads' {min(band):.2f}–"
                 f"{max(band):.2f} ns by more than their own spread and {MATERIAL:.0%}.")
    if rises_above(lats[:-1], heavy.latency):
        return text + " Latency rose above the lighter loads' spread, but without a bend sharp enough to call a knee."
    if curve.rejected_knee is None:
        text += (f" The heaviest load's latency is not above the lighter loads' by more than their spread and "
                 f"{MATERIAL:.0%}.")
    if peak is not None and peak.bandwidth and heavy.bandwidth is not None:
        return text + (f" Nothing shows that the load saturated memory: there is no knee to find. The heaviest load "
                       f"reached {heavy.bandwidth / peak.bandwidth:.0%} of this run's peak injection bandwidth "
                       f"({peak.bandwidth:.1f} MB/s, every load thread at full speed and no latency thread; "
                       f"{threads_text(peak, cpus)}).")
    return text + (" Nothing shows that the load saturated memory: there is no knee to find. This run has no "
                   "peak-bandwidth figure to say how many load threads would saturate it; a run with more load "
                   "threads would show it" + _more_threads_hint(cpus) + ".")


# --- the chase a latency comes from ----------------------------------------------------------------------


def chase_texts(points: Sequence[MemoryRow]) -> list[str]:
    """The chases the points' latencies come from, each once, in words (Markdown: the lines' text escaped): the
    results lines' "chase" sentence, written by the memory runner; older results have none: "not recorded", or
    for MLC "chase as chosen by Intel MLC"."""
    texts: list[str] = []
    for p in points:
        chase = p.line.parts.chase
        text = chase.get("text") if isinstance(chase, dict) else None
        if not (isinstance(text, str) and text.isprintable() and len(text) <= 200):
            text = "chase as chosen by Intel MLC" if p.engine == "mlc" else "not recorded"
        text = md_text(text)
        if text not in texts:
            texts.append(text)
    return texts


# --- the chase buffer against the caches and the TLB -----------------------------------------------------


def _cache_bytes(size: object) -> int | None:
    """sysfs's cache size text ("32768K", "1M") in bytes."""
    if not isinstance(size, str) or len(size) > 20:
        return None
    t = size.strip().upper()
    mult = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}.get(t[-1:], 1)
    digits = t.rstrip("KMG")
    return int(digits) * mult if digits.isdigit() and int(digits) > 0 else None


def llc(env: object) -> tuple[str, int] | None:
    """(name, bytes) of the last-level data or unified cache of CPU 0 in run.json's environment."""
    cpu = env.get("cpu") if isinstance(env, dict) else None
    caches = cpu.get("caches") if isinstance(cpu, dict) else None
    best: tuple[str, int] | None = None
    for c in caches if isinstance(caches, list) else []:
        if not isinstance(c, dict) or not isinstance(c.get("name"), str) or c["name"].endswith("i"):
            continue
        n = _cache_bytes(c.get("size"))
        if n is not None and (best is None or c["name"] > best[0]):
            best = (c["name"][:8], n)
    return best


def tlb_reach(env: object) -> tuple[int, int] | None:
    """(entries, page bytes) of the CPU's TLB as run.json's environment records it (AMD's /proc/cpuinfo
    "TLB size: 3584 4K pages"), or None."""
    cpu = env.get("cpu") if isinstance(env, dict) else None
    tlb = cpu.get("tlb") if isinstance(cpu, dict) else None
    if not isinstance(tlb, dict):
        return None
    entries, page = number(tlb.get("entries")), number(tlb.get("page_bytes"))
    if entries is None or page is None or entries < 1 or page < 1:
        return None
    return int(entries), int(page)


def chase_buffer(points: Sequence[MemoryRow]) -> int | None:
    """The latency thread's buffer in bytes: as the engine printed it, else as planned."""
    for p in points:
        chase = p.line.parts.chase
        for v in (chase.get("buffer_bytes") if isinstance(chase, dict) else None, p.line.parts.buffer_bytes, p.buffer):
            n = number(v)
            if n is not None and n > 0:
                return int(n)
    return None


def huge_pages(points: Sequence[MemoryRow]) -> bool | None:
    """Whether the chase ran on 2 MiB pages (the engine's word in ``chase``), None when not recorded."""
    for p in points:
        chase = p.line.parts.chase
        if isinstance(chase, dict) and isinstance(chase.get("huge_pages"), bool):
            return bool(chase["huge_pages"])
    return None


def _ratio(a: int, b: int) -> str:
    r = a / b
    return f"{r:.1f}×" if r >= 1 else f"{r:.2f}×"


def idle_baseline(points: Sequence[MemoryRow], idle: Sequence[MemoryRow]) -> MemoryRow | None:
    """The run's idle point to compare ``points`` with: same source (an imported file: another file may be
    another machine), engine and stride, the same buffer first."""
    if not points:
        return None
    ref = points[0]
    same = [q for q in idle if q.latency and q.source == ref.source and q.engine == ref.engine
            and (q.stride or 64) == (ref.stride or 64)]
    buf = chase_buffer(points)
    exact = [q for q in same if chase_buffer([q]) == buf]
    pick = exact or same
    return pick[0] if pick else None


def _buffer_text(buf: int | None, env: object) -> str:
    """The chase buffer against the last-level cache and the TLB reach of run.json's environment."""
    if not (isinstance(env, dict) and env):
        return (f"chase buffer {format_size_human(buf) if buf else 'size not recorded'} per thread; the caches and "
                "TLB of the machine that measured it are not recorded (an import)")
    if buf is None:
        return "chase buffer size not recorded"
    text = f"chase buffer {format_size_human(buf)} per thread"
    cache = llc(env)
    if cache:
        below = (f"; below {CHASE_CACHES}× it, some chase steps may find their line in that cache and the latency may "
                 "lie below DRAM's") if buf < CHASE_CACHES * cache[1] else ""
        text += (f" = {_ratio(buf, cache[1])} the {format_size_human(cache[1])} {md_text(cache[0])} (last-level cache "
                 f"of CPU 0{below})")
    else:
        text += " (last-level cache not recorded)"
    tlb = tlb_reach(env)
    if tlb:
        reach = tlb[0] * tlb[1]
        text += (f", {_ratio(buf, reach)} the TLB reach with {format_size_human(tlb[1])} pages ({tlb[0]} entries × "
                 f"{format_size_human(tlb[1])} = {format_size_human(reach)}, /proc/cpuinfo)")
    else:
        text += ", TLB reach unknown (no TLB size recorded for this CPU)"
    return text


def _pages_text(huge: bool | None, env: object) -> str:
    system = env.get("system") if isinstance(env, dict) else None
    vm = isinstance(system, dict) and system.get("virtualization") == "virtual machine"
    if huge is True:
        return ("the chase ran on 2 MiB pages, whose TLB entries /proc/cpuinfo does not count"
                + ("; in a virtual machine the TLB holds a guest page at the host's page size, which the guest "
                   "cannot see" if vm else ""))
    if huge is False:
        return "the chase ran on 4 KiB pages"
    return "page size of the chase not recorded"


def _baseline_text(points: Sequence[MemoryRow], idle: Sequence[MemoryRow], buf: int | None) -> str:
    """The idle latency to read a loaded table against, and the lightest load's distance from it."""
    base = idle_baseline(points, idle)
    if base is None or not base.latency:
        if points and points[0].source and any(q.latency for q in idle):  # another file's idle may be another machine's
            return "no idle baseline in the same file (another file's may be another machine's)"
        return "no idle baseline in this run"
    text = f"idle baseline {base.latency:.2f} ns"
    other = chase_buffer([base])
    if other != buf:
        text += f" (measured with a {format_size_human(other)} buffer)" if other else " (its buffer not recorded)"
    lightest = max((p for p in points if p.delay is not None and p.latency), key=lambda p: p.delay or 0, default=None)
    if lightest is not None and lightest.latency:
        text += (f"; at the lightest load (delay {lightest.delay}) {lightest.latency:.2f} ns, "
                 f"{lightest.latency / base.latency - 1:+.1%}")
    return text


def buffer_note(points: Sequence[MemoryRow], env: object, idle: Sequence[MemoryRow] | None) -> str:
    """One line under a memory table: the chase buffer against the LLC and the TLB reach, the pages, and
    the idle baseline (``idle`` None: the table is the idle one, it has no baseline to compare with)."""
    buf = chase_buffer(points)
    parts = [_buffer_text(buf, env), _pages_text(huge_pages(points), env)]
    if idle is not None:
        parts.append(_baseline_text(points, idle, buf))
    return "Buffer: " + "; ".join(parts) + "."


def buffer_dependence(idle: Sequence[MemoryRow], loaded: Sequence[MemCurve]) -> list[str]:
    """The paragraph after the memory tables: a chase's latency depends on its buffer, and what this run
    shows of that (latency per buffer size when it measured more than one)."""
    # within one source only: two imported files may be two machines, whose latencies say nothing of the buffer
    sources = sorted({q.source for q in idle} | {c.points[0].source for c in loaded if c.points})
    by_buf: dict[int, float] = {}
    what = "idle"
    for src in sources:
        by_buf = {}
        for q in idle:
            b = chase_buffer([q])
            if b and q.latency and q.source == src:
                by_buf.setdefault(b, q.latency)
        what = "idle"
        if len(by_buf) < 2:
            by_buf = {}
            for c in loaded:
                b = chase_buffer(c.points)
                if b and c.points[0].latency and c.points[0].source == src:
                    by_buf.setdefault(b, c.points[0].latency)
            what = "lightest-load"
        if len(by_buf) >= 2:
            what += f" (from {md_text(src, 120)})" if len(sources) > 1 else ""
            break
    text = ("A pointer chase's latency depends on its buffer: past the last-level cache every step reads DRAM, and "
            "past the TLB reach every step also walks the page tables (in a virtual machine, a two-level walk), so "
            "latency keeps growing with the buffer. The latencies above hold for the buffer each table names.")
    if len(by_buf) >= 2:
        text += (f" This run's {what} latency by buffer: "
                 + ", ".join(f"{format_size_human(b)} {by_buf[b]:.2f} ns" for b in sorted(by_buf)) + ".")
    elif len(sources) > 1:
        text += (" No imported file measured more than one buffer size (files are not compared: each may be another "
                 "machine).")
    else:
        text += " This run measured one buffer size; `--set buffer=…` with several sizes shows the dependence."
    return [text, ""]


def not_monotonic(points: Sequence[MemoryRow]) -> str | None:
    """A sentence when bandwidth falls, as the load rises (points by increasing load), by more than MATERIAL of the
    curve's top bandwidth (a few MB/s among the lightest loads is noise, not a change): the machine's state changed
    during the sweep, the curve is not the memory's response to load alone; None otherwise."""
    top = max((p.bandwidth for p in points if p.bandwidth is not None), default=0.0)
    best: MemoryRow | None = None
    for p in points:
        if p.bandwidth is None:
            continue
        if best is not None and best.bandwidth and best.bandwidth - p.bandwidth > MATERIAL * top:
            return (f"bandwidth is not monotonic: delay {p.delay} moved {p.bandwidth:,.1f} MB/s, "
                    f"{p.bandwidth / best.bandwidth - 1:+.0%} against the lighter delay {best.delay}'s "
                    f"{best.bandwidth:,.1f} MB/s; the machine's state changed during the sweep, so the curve is not "
                    "the memory's response to load alone.")
        if best is None or (best.bandwidth or 0) < p.bandwidth:
            best = p
    return None
