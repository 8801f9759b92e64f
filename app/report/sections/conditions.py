"""The report's Test conditions: how the storage points were measured, from what the results directory
records — engine, direct, runtime and ramp, the state of the file or device, the working set against the
host's memory and the device, signs of host write-back caching, the machine's virtualisation — and a warning
for each condition that weakens the figures (short points, no ramp).

Only recorded facts are stated; a fact the directory does not record is said to be "not recorded".  run.json
and results.jsonl are untrusted: numbers are read through :func:`app.model.records.number` (a string, a
bool, NaN or infinity is no number); text is bounded (:func:`_text`), and escaped by the table it goes into or,
in a note, by :func:`app.core.sanitize.md_text`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping, Sequence

from app.core.sanitize import clean_line, md_text
from app.core.textable import markdown_table
from app.core.units import format_size, size_text
from app.model.records import number
from app.model.runmeta import RunMeta
from app.report.compute import noise, verdict
from app.report.compute.verdict import Verdict
from app.report.data.model import RunData, StorageRow

SHORT_POINT_S = 2.0  # a point this short has few one-second samples and its first I/Os weigh in its figures
MB = 1e6
MAX_BYTES = float(1 << 70)  # as app.core.units.size_text: no memory or device is that large


def _mapping(v: object) -> Mapping[str, object]:
    return v if isinstance(v, Mapping) else {}


def _size(v: object) -> float | None:
    """A byte count as recorded, None when it is no number or beyond any real memory or device (2^70 B)."""
    n = number(v)
    return n if n is not None and 0 < n < MAX_BYTES else None


def _text(v: object, limit: int = 60) -> str | None:
    """A recorded string cut to ``limit`` (the table escapes it), None when it is none."""
    return clean_line(v, limit) if isinstance(v, str) and v.strip() else None


def _bytes(n: float | None) -> str:
    return "not recorded" if n is None or n <= 0 else size_text(n)


def _values(points: Sequence[StorageRow], key: str) -> list[object]:
    """The distinct values of one point setting, in first-seen order (unhashable junk as its text)."""
    seen: dict[str, object] = {}
    for p in points:
        v = p.point.get(key)
        seen.setdefault(repr(v), v)
    return list(seen.values())


def _seconds(values: Sequence[object]) -> str:
    nums = sorted({n for v in values if (n := number(v)) is not None})
    text = ", ".join(f"{n:g} s" for n in nums[:8]) + (" …" if len(nums) > 8 else "")
    if len(nums) < len(values):
        text += (", " if text else "") + "not recorded"
    return text


# --- the rows ---------------------------------------------------------------------------------------------


def _engine_row(points: Sequence[StorageRow]) -> list[str]:
    engines = [clean_line(v, 40) if isinstance(v, str) and v else "not recorded" for v in _values(points, "ioengine")]
    return ["Engine (ioengine)", ", ".join(dict.fromkeys(engines))]


def _direct_row(points: Sequence[StorageRow]) -> list[str]:
    direct = sum(1 for p in points if p.point.get("direct") in (True, 1))
    buffered = sum(1 for p in points if p.point.get("direct") in (False, 0))
    if direct == len(points):
        return ["Direct I/O", "direct=1 on every point (O_DIRECT: past this machine's page cache)"]
    parts = []
    if direct:
        parts.append(f"direct=1 on {direct}")
    if buffered:
        parts.append(f"direct=0 on {buffered} (the page cache serves part of their I/O: they may exceed what the "
                     "device can do)")
    if direct + buffered < len(points):
        parts.append(f"not recorded on {len(points) - direct - buffered}")
    return ["Direct I/O", ", ".join(parts) + f" of {len(points)} points"]


def _state_rows(data: RunData) -> list[list[str]]:
    meta = data.meta
    info = meta.target_info or {}
    kind = info.get("type") or info.get("kind")
    if kind == "file" and meta.target_created_by_tool is True:
        state = "a new file the tool created for this run: fio laid it out (wrote it) before its first point"
    elif kind == "file":
        state = "an existing file: what was written to it before is not recorded"
    elif info:
        state = "a block device: what was written to it before the run is not recorded"
    else:
        state = "not recorded"
    rows = [["File or device state", state], ["Preconditioned", _preconditioned(meta)]]
    steady = [p for p in data.storage if p.point.get("steady")]
    if steady:
        held = sum(1 for p in steady if _mapping(p.line.parts.steady).get("attained") is True)
        rows.append(["Steady state", f"{len(steady)} of {len(data.storage)} points ran to fio's steady-state "
                                     f"criterion; {held} reached it (see Steady state)"])
    else:
        rows.append(["Steady state", "no criterion: each point ran for its fixed runtime, steady or not"])
    rows.append(["TRIM before the run", "not recorded"])
    return rows


def _preconditioned(meta: RunMeta) -> str:
    """run.json's ``precondition`` (the pass as it ran), else what its ``procedure`` asked."""
    pre = meta.precondition
    if pre is not None:
        parts = [_text(pre.get("mode"), 40) or "mode not recorded", "done" if pre.get("status") == "done" else "failed"]
        steady = _mapping(pre.get("steady")).get("attained")
        if steady is not None:
            parts.append("steady" if steady is True else "not steady at its cap")
        return f"yes: {parts[0]} ({', '.join(parts[1:])}; see Run)"
    asked = meta.procedure.precondition if meta.procedure is not None else None
    if asked in (None, "none"):  # run.json keeps a procedure only when it is not the default
        return "no (precondition = none)"
    return f"{_text(asked, 40) or 'a preconditioning pass'} was asked; run.json records no pass"


def _device_size(info: Mapping[str, object]) -> float | None:
    if (info.get("type") or info.get("kind")) == "file":
        return _size(_mapping(info.get("device")).get("size_bytes"))
    return _size(info.get("size_bytes"))


def _working_set_rows(data: RunData) -> list[list[str]]:
    """The region the points span against the host's memory and the device: a working set the page cache
    can hold is measured from memory whenever I/O goes through it."""
    meta = data.meta
    info = meta.target_info or {}
    device = _device_size(info)
    sizes = [s for p in data.storage if (s := _size(p.point.get("size"))) is not None]
    ws = max(sizes) if sizes else device
    if sizes:
        spread = sorted(set(sizes))
        text = _bytes(ws) if len(spread) == 1 else f"{_bytes(spread[0])} to {_bytes(ws)}"
        text += " (the region each point spans; its jobs share it)"
    elif device:
        text = f"{_bytes(device)} (the whole device)"
    else:
        text = "not recorded"
    rows = [["Working set", text]]
    memory = (meta.environment.memory if meta.environment is not None else None) or {}
    ram, free = _size(memory.get("total_bytes")), _size(memory.get("available_bytes"))
    if ram and ram > 0 and ws:
        fits = ws <= (free if free and free > 0 else ram)
        ram_text = f"{_bytes(ram)}; the working set is {ws / ram:.2%} of it"
        ram_text += (" and fits the page cache (available at the start: " + _bytes(free) + ")" if fits and free else
                     " and fits in RAM" if fits else ", more than the page cache can hold")
        if all(p.point.get("direct") in (True, 1) for p in data.storage):
            ram_text += "; direct=1 bypasses that cache"
        rows.append(["Host RAM", ram_text])
    else:
        rows.append(["Host RAM", _bytes(ram) if ram else "not recorded"])
    if device and ws:
        rows.append(["Device size", f"{_bytes(device)}; the working set is {min(ws / device, 1e6):.2%} of it"])
    else:
        free = _size(info.get("free_bytes"))
        rows.append(["Device size", _bytes(device) + (f" (the filesystem had {_bytes(free)} free)" if free else "")])
    return rows


@dataclass(frozen=True)
class Pair:
    """A pure read and a pure write point with the same pattern, block size, load, engine and direct (each with
    its replicates), and the verdict on the write's bandwidth against the read's (:mod:`app.report.compute.verdict`)."""

    read: StorageRow
    write: StorageRow
    verdict: Verdict

    @property
    def write_wins(self) -> bool:
        return (self.verdict.ratio or 0.0) > 1 if self.verdict.effect is not None else self.write.bw > self.read.bw > 0

    @property
    def beyond_noise(self) -> bool:
        return self.verdict.real


def _direction_pairs(data: RunData) -> list[Pair]:
    # (random, bs, iodepth, numjobs, ioengine, direct as written)
    reads: dict[tuple[bool, int, int, int, str, str], list[StorageRow]] = {}
    writes: dict[tuple[bool, int, int, int, str, str], list[StorageRow]] = {}
    for p in data.storage:
        if "trim" in p.rw or p.read_pct not in (0, 100):
            continue
        key = (p.random, p.bs, p.iodepth, p.numjobs, p.ioengine, repr(p.point.get("direct")))
        (reads if p.read_pct == 100 else writes).setdefault(key, []).append(p)  # every replicate
    out = []
    for key, r in reads.items():
        w = writes.get(key)
        if w is None:
            continue
        out.append(Pair(r[0], w[0], verdict.judge(data.path, r, w, "bw")))
    return out


def _pair_text(pair: Pair) -> str:
    r, w, v = pair.read, pair.write, pair.verdict
    load = f"{format_size(r.bs)} QD{r.iodepth}" + (f"×{r.numjobs}" if r.numjobs > 1 else "")
    wb, rb = (v.b, v.a) if v.a is not None and v.b is not None else (w.bw, r.bw)
    return (f"{'random' if r.random else 'sequential'} {load}: write {wb / MB:.1f} vs read {rb / MB:.1f} MB/s "
            f"(+{(wb / rb - 1) * 100:.0f} %)")


def _shown(pairs: Sequence[Pair]) -> str:
    return "; ".join(_pair_text(p) for p in pairs[:4]) + (" …" if len(pairs) > 4 else "")


def _write_back_row(data: RunData) -> tuple[list[str], list[str]]:
    """The row on host write-back caching, and a warning when it is suspected: a write beating the read of the
    same pattern, block size and load by a real difference (:mod:`app.report.compute.verdict`, every replicate)."""
    info = data.meta.target_info or {}
    env = data.meta.environment
    system = _mapping((env.system if env is not None else None) or {})
    virtual = bool(_text(system.get("virtualization")))
    if (info.get("type") or info.get("kind")) != "file" and not virtual:
        return ["Host write-back caching", "not judged: it is looked for on file targets and virtual disks"], []
    pairs = _direction_pairs(data)
    wins = [p for p in pairs if p.write_wins]
    beyond = [p for p in wins if p.beyond_noise]
    unjudged = [p for p in wins if p.verdict.verdict == verdict.NOT_JUDGED]
    of = f"{{}} of the {len(pairs)} read/write pair{'s' if len(pairs) != 1 else ''}"
    if beyond:
        return (["Host write-back caching", "suspected: writes beat reads beyond noise in " + of.format(len(beyond))],
                [f"Host write-back caching suspected: writes beat reads of the same pattern, block size and load "
                 f"by a real difference ({_shown(beyond)}). A write acknowledged from a cache (the host's page cache "
                 "under a virtual disk or a file, a RAID or drive cache) is faster than a read the medium must "
                 "serve: the write figures measure that cache."])
    if unjudged:
        why = md_text(unjudged[0].verdict.reason)  # whole: a cut lands mid-word
        return (["Host write-back caching", f"not judged: writes beat reads in {of.format(len(unjudged))} "
                                            f"({_shown(unjudged)}), but {why}"], [])
    if wins:
        verdict_text = f"not suspected: writes beat reads in {of.format(len(wins))}, within noise (a 10 % " \
                       "difference would have shown)"
    elif pairs:
        verdict_text = f"not suspected: no write beat its read in the {len(pairs)} read/write pair(s)"
    else:
        verdict_text = "not judged: no read and write point of the same pattern, block size and load"
    return ["Host write-back caching", verdict_text], []


def _machine_row(data: RunData) -> list[str]:
    env = data.meta.environment
    system = (env.system if env is not None else None) or {}
    if not system:
        return ["Machine", "not recorded"]
    virt, container = system.get("virtualization"), system.get("container")
    parts = [f"a {_text(virt)}" if _text(virt) else "bare metal (no hypervisor flag seen)"]
    if container is True:
        parts.append("inside a container: the target is seen through the container's mounts; cgroup I/O limits "
                     "are not recorded")
    return ["Machine", ", ".join(parts)]


def target_notes(info: Mapping[str, object], env: Mapping[str, object]) -> list[str]:
    """What the target is and is not: a loop device, a memory or container filesystem, a virtual disk, a file
    (which measures its filesystem too)."""
    notes = []
    virt = _mapping(env.get("system")).get("virtualization")
    virt = md_text(virt, 60) if _text(virt) else None
    kind = info.get("type") or info.get("kind")
    source = md_text(info.get("source") or "", 200)
    device = _mapping(info.get("device"))
    if kind == "file":
        if source.startswith("/dev/loop") or str(device.get("name", "")).startswith("loop"):
            notes.append("The file lives on a loop device, itself a file on another filesystem: the figures measure "
                         "that stack (two filesystems and the host's caches), not an SSD.")
        if source in ("overlay", "tmpfs") or info.get("filesystem") in ("overlay", "tmpfs", "ramfs"):
            notes.append(f"The filesystem is {md_text(info.get('filesystem'), 40)}: memory or a container layer "
                         "answers the I/O, not a storage device.")
        if virt:
            notes.append(f"This machine is a {virt}: {source or 'the disk'} is a virtual disk whose figures include "
                         "the hypervisor's I/O path and the host's caches; they say little about any physical SSD.")
        elif not notes:
            notes.append("A file target measures the filesystem as well as the device under it (allocation, journal, "
                         "metadata); a partition or whole device isolates the device.")
    elif kind in ("block", "disk", "part", "loop"):
        name = str(info.get("name") or info.get("path") or "")
        if name.startswith(("loop", "/dev/loop")) or info.get("backing_file"):
            notes.append(f"A loop device (backed by {md_text(info.get('backing_file') or 'a file', 200)}) is not a "
                         "physical device: the figures measure the filesystem and caches holding its backing file.")
        elif virt:
            notes.append(f"This machine is a {virt}: the device is virtual; its figures include the hypervisor's I/O "
                         "path and say little about the physical drive behind it.")
    return notes


# --- warnings ---------------------------------------------------------------------------------------------


def _warnings(points: Sequence[StorageRow]) -> list[str]:
    out = []
    short = [p for p in points if (r := number(p.point.get("runtime"))) is not None and r <= SHORT_POINT_S]
    if short:
        out.append(f"{len(short)} of {len(points)} points ran for {SHORT_POINT_S:g} s or less (runtime "
                   f"{_seconds(_values(short, 'runtime'))}): fewer than {noise.MIN_SAMPLES} one-second samples, so "
                   "the report cannot say how much their figures moved, and the first I/Os weigh in them.")
    no_ramp = [p for p in points if number(p.point.get("ramp_time")) == 0]
    if no_ramp:
        out.append(f"{len(no_ramp)} of {len(points)} points had ramp_time = 0: their figures include the start of "
                   "the job (queues filling, caches and the device warming up).")
    return out


def section(data: RunData) -> list[str]:
    """``## Test conditions`` of a run with storage points ([] without): a table of the conditions, then notes
    on what the target is and warnings on what weakens the figures."""
    points = data.storage
    if not points:
        return []
    out = ["## Test conditions", "",
           "How the storage points were measured, as the results directory records it; \"not recorded\" where it "
           "does not.", ""]
    rows = [_engine_row(points), _direct_row(points),
            ["Runtime per point", _seconds(_values(points, "runtime")) or "not recorded"],
            ["Ramp time (ramp_time)", _seconds(_values(points, "ramp_time")) or "not recorded"]]
    rows += _state_rows(data)
    rows += _working_set_rows(data)
    write_back, suspected = _write_back_row(data)
    rows += [write_back, _machine_row(data)]
    out.append(markdown_table(["Condition", "Value"], rows, right=()))
    out.append("")
    env = data.meta.environment
    notes = [*target_notes(data.meta.target_info or {}, env.entry if env is not None else {}),
             *suspected, *_warnings(points)]
    for note in notes:
        out += [f"> {note}", ""]
    return out
