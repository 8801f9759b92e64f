"""The host settings that bend a storage or memory result, read before a run (``profiler-tui audit``).

Each :class:`Item` is one setting of the target's device, of the CPUs the run will use, or of the system:
its value as read, what a benchmark usually wants, and why.  An item whose value bends results has status
``warn`` and names its warning (:data:`WARNINGS`); one that cannot be read here has status ``unavailable``
and says why.  Everything read is untrusted (sysfs and /proc of a host, possibly a container's view): each
file is read bounded, without following a symlink another user could place, and text that does not parse
reads as unavailable, never as an error.  ``PROFILER_TUI_SYSFS`` / ``PROFILER_TUI_PROCFS`` name other roots
(the tests' fake trees).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

STATUSES = ("ok", "warn", "info", "unavailable")
# the items, in the order they are listed: key → label
ITEMS: dict[str, str] = {
    "scheduler": "I/O scheduler",
    "nomerges": "request merging (nomerges)",
    "rotational": "rotational",
    "read_ahead": "read-ahead",
    "wbt": "write-back throttling latency",
    "poll_queues": "poll queues / io_poll",
    "apst": "NVMe autonomous power state transitions (APST)",
    "power_state": "NVMe power state",
    "pcie_link": "PCIe link (current vs maximum)",
    "numa_node": "device's NUMA node",
    "governor": "CPU frequency governor",
    "boost": "CPU boost / turbo",
    "cstates": "CPU idle states (C-states)",
    "thp": "transparent huge pages",
    "numa_policy": "memory NUMA policy",
    "swap": "swap activity",
}
# audit warnings: name → what it means for a result
WARNINGS: dict[str, str] = {
    "scheduler": "an I/O scheduler on a fast non-rotational device adds CPU time and latency to every I/O",
    "wbt-on": "write-back throttling delays buffered writes to keep reads fast",
    "apst-on": "APST lets an idle NVMe drive drop to a power state whose exit adds latency to the next I/O",
    "link-degraded": "the PCIe link trained below the device's maximum speed or width: bandwidth is capped",
    "numa-remote": "the run's CPUs are not on the device's NUMA node: every I/O crosses the interconnect",
    "governor": "a CPU frequency governor other than performance lets the clock drop between I/Os",
    "cstates": "deep CPU idle states are enabled: waking from them adds latency at low load",
    "swap-active": "the system was swapping: memory pressure disturbs every figure",
}


@dataclass(frozen=True)
class Item:
    """One setting as read.  ``tune``: the files ``--tune`` writes and the values it writes to reach ``want``
    (empty when the item is not tunable here)."""

    key: str  # one of ITEMS
    value: str | None  # as read, one line (None: unavailable)
    want: str  # what a benchmark usually wants, e.g. "none"
    why: str  # one sentence: why it matters
    status: str  # one of STATUSES
    warning: str | None = None  # a WARNINGS name when status is "warn"
    note: str | None = None  # unavailable: why not here; warn: what was found
    tune: tuple[tuple[str, str], ...] = ()  # (absolute path, value to write)

    @property
    def label(self) -> str:
        return ITEMS.get(self.key, self.key)


@dataclass(frozen=True)
class Audit:
    """What ``audit`` read: for ``target`` (None: the system only), its block device, and ``cpus``."""

    target: str | None
    device: str | None  # the block device whose queue was read ("nvme0n1"), None for no target or none found
    cpus: tuple[int, ...]  # the CPUs the run will use (its pinned CPUs, else every CPU it may run on)
    items: tuple[Item, ...] = field(default_factory=tuple)
    container: str | None = None  # in a container: whose sysfs was read, or why some of the host's could not be

    @property
    def warnings(self) -> list[Item]:
        return [i for i in self.items if i.status == "warn"]

    def warned(self, name: str) -> Item | None:
        return next((i for i in self.items if i.warning == name), None)


def audit(target: str | None, cpus: Sequence[int] | None = None, *, sys_root: Path | None = None,
          proc_root: Path | None = None) -> Audit:
    """Read every item of :data:`ITEMS` for ``target``'s device and ``cpus`` (None: the CPUs this process may
    run on).  Never raises for what it reads; an item it cannot read is ``unavailable`` with the reason."""
    raise NotImplementedError


def to_json(a: Audit) -> dict[str, object]:
    """run.json's ``audit``."""
    raise NotImplementedError


def from_json(obj: object) -> Audit | None:
    """The reader of a recorded ``audit`` (hostile: an old or edited run.json): None when it is not one; bounded
    text, unknown keys and statuses dropped."""
    raise NotImplementedError
