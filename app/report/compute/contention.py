"""Memory figures measured while their threads did not get a whole CPU (a busy machine), and peaks that are none.

The built-in engine measures each thread's CPU time against the wall time of its window and, when any thread got
less than 90 % of a CPU, prints ``*** Busy machine at <figure>: a thread got P% of a CPU in its window`` just
before that figure (native/memlat/README.md).  A figure whose threads got less than ``CONTENDED_SHARE`` of a CPU is
**contended**: its bandwidth is per wall second, so a load thread that ran a share s of the window moved at most
s of its traffic (below 90 % that loss exceeds the 10 % a knee must rise by, ``memory.MATERIAL``), and another
tenant on the core evicts the chase's lines and TLB entries between its steps.  The threshold is the engine's own
warning threshold, so every figure it warned about is contended, and no warned figure passes as clean.  A contended
figure is shown, marked, and used for no knee, peak or plateau.

Results written before each line carried only its own warnings carry every warning printed so far: a warning
naming another figure (``at delay 700`` on the line of delay 500) is not this line's and is skipped here; so is
MLC's prefetcher warning on a bandwidth figure (it chases at random for its latency tests because it could not turn
the prefetchers off: its bandwidth tests are untouched).

A peak injection bandwidth is no peak when a loaded-latency point of the same engine and traffic moved more (the
peak runs every load thread at full speed with no latency thread: nothing loaded can beat a true one); such a
peak is shown, marked, and used as no reference.
"""

from __future__ import annotations

import re
from typing import Sequence

from app.model.records import number
from app.report.data.model import MemoryRow
from app.runners.mlc_parse import latency_only, peak_traffic

CONTENDED_SHARE = 0.90  # a thread below this share of a CPU in the figure's window: contended (the engine's threshold)
_BUSY = re.compile(r"Busy machine at (.{1,120}?): (?:a|the) thread got (\d{1,3}(?:\.\d+)?)% of a CPU")
BANDWIDTH_MODES = ("peak", "scaling", "bandwidth_matrix")  # figures in MB/s alone
_SIZE = re.compile(r"(\d+) KiB")


def _names_me(p: MemoryRow, where: str) -> bool:
    """Does the busy warning's ``where`` name this figure (delay N, N KiB, N threads, a peak's label)?"""
    where = where.strip()
    if where.startswith("delay "):
        return p.mode == "loaded" and where[6:].strip() == str(p.delay)
    if p.mode == "working_set" and (m := _SIZE.fullmatch(where)):
        return p.buffer is not None and int(m.group(1)) * 1024 == p.buffer
    if p.mode == "scaling" and where.endswith(" threads"):
        return where.split()[0] == str(p.point.get("threads"))
    if p.mode == "peak" and (t := peak_traffic(where)) is not None:
        return t == (p.traffic or "R")
    return p.mode not in ("loaded", "working_set", "scaling", "peak")


def own_warnings(p: MemoryRow) -> list[str]:
    """The line's warnings that are about this figure: every one but a busy warning naming another figure."""
    got = p.line.parts.warnings
    out = []
    for w in got[:64] if isinstance(got, list) else []:
        if not isinstance(w, str):
            continue
        if p.mode in BANDWIDTH_MODES and latency_only(w):  # MLC's prefetcher lines: about its latency tests
            continue
        m = _BUSY.search(w)
        if m is None or _names_me(p, m.group(1)):
            out.append(w)
    return out


def cpu_share(p: MemoryRow) -> float | None:
    """The lowest share of a CPU a thread of this figure got in its window, as the engine's warning about it says;
    None when the engine printed none (every thread got at least 90 %, or an engine that does not measure it)."""
    shares = [float(m.group(2)) / 100 for w in own_warnings(p) if (m := _BUSY.search(w))]
    return min(shares) if shares else None


def contended(p: MemoryRow) -> bool:
    share = cpu_share(p)
    return share is not None and share < CONTENDED_SHARE


def contended_text(p: MemoryRow) -> str:
    """"contended: a thread got 23 % of a CPU", or "" for a clean figure."""
    share = cpu_share(p)
    return f"contended: a thread got {share:.0%} of a CPU" if share is not None and share < CONTENDED_SHARE else ""


UNCHECKED = "not checked: MLC reports no per-thread CPU time"  # so an MLC figure can never be flagged contended


def unchecked(p: MemoryRow) -> bool:
    """An Intel MLC figure (imported, or run here): MLC prints no thread's CPU time, so its contention is unknown."""
    return p.engine == "mlc"


def unchecked_text() -> str:
    return (f"Contention {UNCHECKED}, so a row measured while other work took its threads' CPUs cannot be told from "
            "a clean one; these rows are used as measured (the built-in engine measures each thread's share of a CPU "
            "and marks a contended figure).")


def rule_text() -> str:
    return (f"Contended: a thread of the figure got less than {CONTENDED_SHARE:.0%} of a CPU in its window (the "
            "engine's \"Busy machine\" warning); its bandwidth is per wall second, so it lost at least the share the "
            "thread did not run, and another tenant disturbed the chase. A contended figure is shown but used for no "
            "knee, peak or plateau.")


# --- peaks -------------------------------------------------------------------------------------------------


def beaten_by(peak: MemoryRow, loaded: Sequence[MemoryRow]) -> MemoryRow | None:
    """The loaded point of the same engine, traffic and source (an imported file may be another machine's) that moved
    the most, when it moved more than ``peak``."""
    same = [q for q in loaded if q.mode == "loaded" and q.engine == peak.engine and (q.traffic or "R") == (
        peak.traffic or "R") and q.bandwidth is not None and q.source == peak.source]
    top = max(same, key=lambda q: q.bandwidth or 0.0, default=None)
    return top if top is not None and peak.bandwidth is not None and (top.bandwidth or 0) > peak.bandwidth else None


def peak_problem(peak: MemoryRow, loaded: Sequence[MemoryRow]) -> str:
    """Why ``peak`` is no valid peak ("" when nothing says so): contended, or a loaded point moved more."""
    why = []
    if contended(peak):
        why.append(contended_text(peak))
    top = beaten_by(peak, loaded)
    if top is not None and top.bandwidth is not None and peak.bandwidth:
        why.append(f"the loaded point at delay {top.delay} moved {top.bandwidth:,.1f} MB/s, "
                   f"{top.bandwidth / peak.bandwidth:.0%} of it")
    return "; ".join(why)


def valid_peaks(peaks: Sequence[MemoryRow], loaded: Sequence[MemoryRow]) -> list[MemoryRow]:
    return [p for p in peaks if p.bandwidth and not peak_problem(p, loaded)]


def threads_text(p: MemoryRow, cpus: int | None) -> str:
    """"2 load threads of the 2 CPUs": how many threads made a peak, against the CPUs of the machine."""
    n = number(p.line.parts.load_threads)
    who = (f"{int(n)} load thread{'s' if n != 1 else ''}" if n is not None and n >= 1
           else "a number of load threads the output does not give")
    return who + (f" of the {cpus} CPUs" if cpus else "")
