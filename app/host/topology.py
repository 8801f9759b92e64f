"""The machine's layout as the memory suite plans on it: NUMA nodes (the CPUs this process may use on each,
memory per node), the allowed CPUs, and CPU 0's cache levels from sysfs.

Presets resolve their plan-time values (``cpu_node = "each"``, ``buffer = "working-set"`` …) from a
:class:`Topology` (:func:`read`; tests build one by hand or point ``PROFILER_TUI_SYSFS`` at a tree of their own).
Everything read is untrusted: bounded reads, values that do not parse are left out, at most 1024 nodes and
64 cache levels.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from app.core.errors import UsageError
from app.host.envinfo import MAX_CPULIST_CHARS, numa_info
from app.host.link import ancestors, device_number, read_attr, sysfs_root
from app.model.keys import MAX_BUFFER, MAX_NODE

KIB = 1 << 10
MIB = 1 << 20
MAX_CACHES = 64  # index0 … index63 of cpu0/cache: far more than any CPU has
MAX_CPU_NUMBER = 1 << 16  # a CPU list naming a larger number is not a real machine's
MAX_CACHE_BYTES = 1 << 40
WORKING_SET_MIN = 4 * KIB
WORKING_SET_FLOOR = 64 * MIB  # the ladder reaches at least this far, whatever the LLC says
WORKING_SET_PER_OCTAVE = 4
_CPULIST = re.compile(r"[0-9]{1,5}(-[0-9]{1,5})?(,[0-9]{1,5}(-[0-9]{1,5})?)*")
_SIZE = re.compile(r"([0-9]{1,12})([KMG]?)", re.IGNORECASE)
_CACHE_TYPES = {"Data": "d", "Instruction": "i", "Unified": ""}


def cpu_list(text: str | None) -> tuple[int, ...]:
    """The CPUs of a list as sysfs and the presets write it ("0-3,8"); () for an empty, malformed or absurd one."""
    if not text or len(text) > MAX_CPULIST_CHARS or not _CPULIST.fullmatch(text):
        return ()
    cpus: list[int] = []
    for part in text.split(","):
        lo, _, hi = part.partition("-")
        first, last = int(lo), int(hi or lo)
        if last < first or last >= MAX_CPU_NUMBER or len(cpus) + last - first >= MAX_CPU_NUMBER:
            return ()
        cpus.extend(range(first, last + 1))
    return tuple(sorted(set(cpus)))


def cpu_list_text(cpus: tuple[int, ...] | list[int]) -> str:
    """"0-3,8" for (0, 1, 2, 3, 8): ascending ranges, as the engines take them."""
    parts: list[str] = []
    ordered = sorted(set(cpus))
    i = 0
    while i < len(ordered):
        j = i
        while j + 1 < len(ordered) and ordered[j + 1] == ordered[j] + 1:
            j += 1
        parts.append(str(ordered[i]) if i == j else f"{ordered[i]}-{ordered[j]}")
        i = j + 1
    return ",".join(parts)


@dataclass(frozen=True)
class Node:
    node: int
    cpus: tuple[int, ...]  # the CPUs of the node this process may run on
    memory_bytes: int | None  # the node's MemTotal; None when sysfs did not say


@dataclass(frozen=True)
class Cache:
    name: str  # L1d, L1i, L2, L3
    level: int
    type: str  # Data, Instruction, Unified
    size_bytes: int
    shared_cpus: str | None

    def as_dict(self) -> dict[str, object]:
        return {"name": self.name, "level": self.level, "type": self.type, "size_bytes": self.size_bytes,
                "shared_cpus": self.shared_cpus}


@dataclass(frozen=True)
class Topology:
    nodes: tuple[Node, ...]  # empty when the kernel reports no NUMA node (see ``unknown``)
    cpus: tuple[int, ...]  # the CPUs this process may run on
    caches: tuple[Cache, ...] = ()
    unknown: str | None = None  # why there are no nodes

    def cpu_nodes(self) -> list[int]:
        """Nodes with a CPU this process may use: a matrix's rows, a c2c writer's or reader's node."""
        return [n.node for n in self.nodes if n.cpus]

    def memory_nodes(self) -> list[int]:
        """Nodes with memory (or whose memory sysfs did not state): a matrix's columns."""
        return [n.node for n in self.nodes if n.memory_bytes is None or n.memory_bytes > 0]

    def node(self, number: int) -> Node | None:
        return next((n for n in self.nodes if n.node == number), None)

    @property
    def llc_bytes(self) -> int | None:
        """The last (highest-level) data or unified cache's size."""
        caches = [c for c in self.caches if c.type != "Instruction"]
        return max(caches, key=lambda c: (c.level, c.size_bytes)).size_bytes if caches else None

    def working_set(self) -> list[int]:
        """The working-set ladder in bytes: 4 KiB to max(4 x LLC, 64 MiB) (at most a buffer's 4 GiB cap), 4 points per
        octave, whole KiB."""
        return working_set_sizes(self.llc_bytes)


def working_set_sizes(llc_bytes: int | None) -> list[int]:
    top = min(max(4 * (llc_bytes or 0), WORKING_SET_FLOOR), MAX_BUFFER)  # a buffer's cap (app.model.keys)
    sizes: list[int] = []
    step = 0
    while True:
        kib = round(WORKING_SET_MIN / KIB * 2 ** (step / WORKING_SET_PER_OCTAVE))
        if kib * KIB >= top:
            break
        if not sizes or kib * KIB > sizes[-1]:
            sizes.append(kib * KIB)
        step += 1
    sizes.append(top // KIB * KIB)
    return sizes


def _size_bytes(text: str | None) -> int | None:
    m = _SIZE.fullmatch(text or "")
    if not m:
        return None
    n = int(m.group(1)) * {"": 1, "K": KIB, "M": MIB, "G": 1 << 30}[m.group(2).upper()]
    return n if 0 < n <= MAX_CACHE_BYTES else None


def caches(root: Path | None = None, cpu: int = 0) -> list[Cache]:
    """The cache levels of one CPU (sysfs ``cpuN/cache/index*``), in index order; unreadable ones left out."""
    base = (root or sysfs_root()) / "devices" / "system" / "cpu" / f"cpu{cpu}" / "cache"
    found: list[Cache] = []
    for i in range(MAX_CACHES):
        d = base / f"index{i}"
        level_text = read_attr(d / "level", 16)
        if level_text is None:
            if i and not os.path.isdir(d):
                break
            continue
        kind = read_attr(d / "type", 32) or ""
        size = _size_bytes(read_attr(d / "size", 32))
        if not level_text.isdigit() or not 1 <= int(level_text) <= 9 or kind not in _CACHE_TYPES or size is None:
            continue
        shared = read_attr(d / "shared_cpu_list", MAX_CPULIST_CHARS + 1)
        shared = shared if shared is not None and cpu_list(shared) else None
        found.append(Cache(f"L{level_text}{_CACHE_TYPES[kind]}", int(level_text), kind, size, shared))
    return found


def allowed_cpus() -> tuple[int, ...]:
    try:
        return tuple(sorted(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return tuple(range(os.cpu_count() or 1))


def present_cpus(root: Path | None = None) -> tuple[int, ...]:
    """The CPUs this machine has (sysfs ``devices/system/cpu/present``; ``root`` for tests); () when unknown."""
    return cpu_list(read_attr((root or sysfs_root()) / "devices" / "system" / "cpu" / "present", MAX_CPULIST_CHARS))


def check_cpus(plan: Iterable[object], allowed: tuple[int, ...] | None = None, root: Path | None = None) -> None:
    """UsageError (exit 2) when a point's ``cpus`` names a CPU this process may not run on — one the machine does not
    have, or one outside its affinity (taskset, a cgroup's cpuset): fio and the memory engines would fail the point —
    before anything is made.  ``allowed`` and ``root`` for tests."""
    mine = set(allowed_cpus() if allowed is None else allowed)
    for point in plan:
        text = getattr(point, "cpus", None)
        bad = [c for c in cpu_list(text if isinstance(text, str) else None) if c not in mine]
        if not bad:
            continue
        present = set(present_cpus(root)) | mine
        absent = [c for c in bad if c not in present]
        why = (f"this machine has no CPU {absent[0]} (its CPUs: {cpu_list_text(sorted(present))})" if absent else
               f"CPU {bad[0]} is not one this process may run on (taskset or a cgroup's cpuset allows CPUs "
               f"{cpu_list_text(sorted(mine))})")
        raise UsageError(f"key 'cpus' has value {text}: {why}.")


def read(root: Path | None = None, allowed: tuple[int, ...] | None = None) -> Topology:
    """This machine's topology (``root``: a sysfs tree for tests; ``allowed``: the CPUs this process may use)."""
    cpus = allowed_cpus() if allowed is None else tuple(sorted(set(allowed)))
    info = numa_info(root)
    mine = set(cpus)
    nodes = tuple(Node(n["node"], tuple(c for c in cpu_list(n["cpus"]) if c in mine), n["memory_bytes"])
                  for n in info["nodes"])
    return Topology(nodes, cpus, tuple(caches(root)), info.get("unknown"))


MAX_NODE_TEXT = 16  # numa_node holds "-1" or a node number


def device_node(target: str, root: Path | None = None) -> int | None:
    """The NUMA node of the device holding ``target`` (a block device, or a file's filesystem's device): the first
    ``numa_node`` up its sysfs path (the PCI function, an NVMe controller); None when it reports -1 or has none
    (a loop or virtual device)."""
    sysfs = root or sysfs_root()
    number = device_number(target)
    if number is None or number[0] == 0:
        return None
    try:
        here = (sysfs / "dev" / "block" / f"{number[0]}:{number[1]}").resolve(strict=True)
    except (OSError, RuntimeError):
        return None
    for d in ancestors(here, sysfs):
        for probe in (d / "device" / "numa_node", d / "numa_node"):
            text = read_attr(probe, MAX_NODE_TEXT)
            if text is not None:
                return int(text) if re.fullmatch(r"[0-9]{1,4}", text) and int(text) <= MAX_NODE else None
    return None


def device_cpus(target: str, root: Path | None = None,
                allowed: tuple[int, ...] | None = None) -> tuple[tuple[int, ...], str]:
    """The CPUs a ``cpus = "node"`` point runs on for ``target``, and what they are in words: the CPUs of its
    device's NUMA node this process may use; every allowed CPU when the device reports no node or the node has
    none of them."""
    topo = read(root, allowed)
    node = device_node(target, root)
    if node is None:
        return topo.cpus, "every allowed CPU (the device reports no NUMA node)"
    found = topo.node(node)
    if found is None or not found.cpus:
        return topo.cpus, f"every allowed CPU (the device's NUMA node {node} has none this process may use)"
    return found.cpus, f"the CPUs of the device's NUMA node {node}"
