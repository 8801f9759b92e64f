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

import errno
import os
import re
import shutil
import threading
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from functools import partial
from pathlib import Path
from typing import Callable, Mapping, Sequence

from app.core import settings
from app.core.errors import UsageError
from app.core.sanitize import clean_line, show_value
from app.host.container import RUN_FLAGS, container_engine
from app.host.devstat import locate
from app.host.envinfo import numa_info
from app.host.external import run_bounded
from app.host.link import device_number, nearest_with, sysfs_root
from app.host.topology import allowed_cpus, cpu_list, cpu_list_text
from app.store.results import NotRegularFile, read_regular

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
    read_at: str | None = None  # ISO time of the reading
    about: str | None = None  # what the device is ("a loop device backed by …"), or why there is none

    @property
    def warnings(self) -> list[Item]:
        return [i for i in self.items if i.status == "warn"]

    def warned(self, name: str) -> Item | None:
        return next((i for i in self.items if i.warning == name), None)


# --- reading: bounded, no symlink as the last component, one printable line ---------------------------------

PROCFS_ENV = settings.PROCFS.name
MAX_ATTR_BYTES = 256  # a queue or cpufreq attribute is a few bytes; a longer file is not the kernel's value
MAX_PATH_TEXT = 4096  # a loop device's backing file (PATH_MAX)
MAX_PROC_BYTES = 256 << 10  # /proc/meminfo, vmstat, status: a few KiB
MAX_NUMA_MAPS_BYTES = 1 << 20  # one line per mapping: the first MiB holds the stack's line of any sane process
MAX_CPUINFO_BYTES = 64 << 10  # only the first CPU's flags line is looked at
MAX_RUN_CPUS = 1024  # per-CPU files read for at most this many of the run's CPUs
MAX_IDLE_STATES = 16  # cpuidle state0 … state15: CPUIDLE_STATE_MAX is 10
MAX_TOOL_BYTES = 64 << 10  # nvme-cli's answer to one get-feature or id-ctrl is under 8 KiB
NVME_TIMEOUT_S = 5.0
SWAP_INTERVAL_S = 0.5
# seconds the swap watch lasts, when set (0.01 to 10; the test suite shortens it: every run starts with an audit)
SWAP_WATCH_ENV = settings.SWAP_WATCH_S.name
# the exit latency above which an enabled idle state warns (`cstates`): 10 µs is about what one 4K read on a fast
# NVMe drive takes, so waking from a deeper state adds a visible share to every I/O at low queue depth; POLL
# (0 µs), C1/halt (1-2 µs) and a guest's haltpoll stay below it, C6 and package states (tens to hundreds) above
CSTATE_MAX_LATENCY_US = 10
MAX_TEXT = 300  # characters of any value or note kept


class Unreadable(Exception):
    """An item's file or tool gave nothing usable: the message is the one sentence saying why."""


def procfs_root() -> Path:
    return settings.procfs_root()


def _open_read(path: Path, limit: int) -> bytes:
    """At most ``limit`` + 1 bytes of the regular file ``path`` (app.store.results.read_regular: the last component is
    never followed), or :class:`Unreadable` with the sentence saying why."""
    try:
        return read_regular(path, limit)
    except FileNotFoundError:
        raise Unreadable(f"{path} does not exist") from None
    except PermissionError:
        raise Unreadable(f"{path} may be read by root only (run as root)") from None
    except NotRegularFile:
        raise Unreadable(f"{path} is not a regular file") from None
    except OSError as e:
        if e.errno == errno.ELOOP:
            raise Unreadable(f"{path} is a symbolic link, not the kernel's file") from None
        raise Unreadable(f"{path} cannot be read ({e.strerror or e})") from None


def read_line(path: Path, limit: int = MAX_ATTR_BYTES) -> str:
    """A one-line attribute: bounded, one line of printable text, or :class:`Unreadable`."""
    data = _open_read(path, limit)
    if len(data) > limit:
        raise Unreadable(f"{path} holds more than {limit} bytes: not the kernel's value")
    text = data.decode("utf-8", "replace").rstrip("\n")
    if "\n" in text or not text.isprintable():
        raise Unreadable(f"{path} does not hold one line of printable text")
    return text.strip()


def read_lines(path: Path, limit: int = MAX_PROC_BYTES, cut: bool = False) -> list[str]:
    """A /proc table's lines; longer than ``limit``: :class:`Unreadable`, or cut at the last whole line."""
    data = _open_read(path, limit)
    if len(data) > limit:
        if not cut:
            raise Unreadable(f"{path} holds more than {limit} bytes: not the kernel's table")
        data = data[:limit].rpartition(b"\n")[0]
    lines = data.decode("utf-8", "replace").replace("\t", " ").splitlines()
    return [line for line in lines if line.isprintable()]


def read_int(path: Path, low: int = 0, high: int = 1 << 62) -> int:
    text = read_line(path)
    if not re.fullmatch(r"-?[0-9]{1,19}", text) or not low <= int(text) <= high:
        raise Unreadable(f"{path} holds {show_value(text, 40)}, not a whole number from {low} to {high}")
    return int(text)


def _bracketed(path: Path) -> tuple[str, list[str]]:
    """The chosen word of a sysfs choice list ("[none] mq-deadline" → "none") and every word offered."""
    text = read_line(path)
    words = text.split()
    if not words or len(words) > 32 or not all(re.fullmatch(r"\[?[a-z0-9_+.-]{1,32}\]?", w) for w in words):
        raise Unreadable(f"{path} holds {show_value(text, 60)}, not a list of choices")
    chosen = [w.strip("[]") for w in words if w.startswith("[") and w.endswith("]")]
    offered = [w.strip("[]") for w in words]
    if len(chosen) > 1 or (not chosen and len(words) > 1):
        raise Unreadable(f"{path} holds {show_value(text, 60)}: no single choice is marked")
    return (chosen[0] if chosen else offered[0]), offered


def _table_values(lines: list[str], sep: str | None = None) -> dict[str, int]:
    """"Name: 123 kB" (meminfo) or "name 123" (vmstat) lines as name → whole number; other lines left out."""
    out: dict[str, int] = {}
    for line in lines:
        m = re.fullmatch(r"([A-Za-z0-9_()]{1,40}):?\s+([0-9]{1,19})(?: kB)?", line.strip())
        if m:
            out.setdefault(m.group(1), int(m.group(2)))
    return out


# --- the device -------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Device:
    """The block device whose settings stand for a target."""

    name: str  # the device the target is or lives on (nvme0n1p2, loop3, dm-0)
    sysdir: Path  # its resolved sysfs directory
    queue: Path  # the request queue read: a partition's disk's
    about: str  # what it is, in words


def _what_it_is(name: str, sysdir: Path, disk: str) -> str:
    if (sysdir / "partition").exists():
        return f"a partition of {disk} (the queue read is {disk}'s)"
    if re.fullmatch(r"loop[0-9]{1,6}", name):
        try:
            backing = clean_line(read_line(sysdir / "loop" / "backing_file", MAX_PATH_TEXT), 200)
        except Unreadable:
            backing = "no file"
        return f"a loop device backed by {backing} (its own queue; the backing file's device is not read)"
    if name.startswith("dm-"):
        try:
            dm = clean_line(read_line(sysdir / "dm" / "name", 256), 100)
        except Unreadable:
            dm = "?"
        return f"a device-mapper device ({dm}; its own queue, not the queues of the devices under it)"
    if re.fullmatch(r"md[0-9]{1,6}", name):
        return "a software RAID device (its own queue, not its members')"
    return "a whole disk"


def find_device(target: str, root: Path) -> Device | str:
    """The device of ``target`` (app.host.devstat's choice: the target itself, or the device under a file's
    filesystem) and its queue, or one sentence saying why there is none."""
    where = locate(target, root)
    if isinstance(where, str):
        return where
    sysdir = where.stat_path.parent
    try:
        inside = sysdir.is_relative_to(root.resolve())
    except (OSError, RuntimeError):
        inside = False
    if not inside:
        return f"the sysfs entry of {where.name} lies outside {root}: not the kernel's tree"
    partition = (sysdir / "partition").exists()
    disk = sysdir.parent.name if partition else where.name
    queue = (sysdir.parent if partition else sysdir) / "queue"
    about = _what_it_is(where.name, sysdir, disk)
    if where.source == "filesystem":
        about = f"the device under {clean_line(target, 120)}'s filesystem, {about}"
    return Device(where.name, sysdir, queue, about)


def _nvme_controller(dev: Device) -> str | None:
    """/dev/nvmeN for a namespace nvmeNnM (or a partition of one), None for another device."""
    disk = dev.queue.parent.name
    m = re.fullmatch(r"nvme([0-9]{1,4})(?:c[0-9]{1,4})?n[0-9]{1,6}", disk)
    return f"/dev/nvme{m.group(1)}" if m else None


# --- nvme-cli ---------------------------------------------------------------------------------------------------

NvmeRunner = Callable[[Sequence[str]], str]


def run_nvme(args: Sequence[str], cancel: threading.Event | None = None) -> str:
    """nvme-cli's output for ``args`` (bounded in size and time; ``cancel`` kills it at once), or
    :class:`Unreadable` saying why not."""
    exe = shutil.which("nvme")
    if not exe:
        raise Unreadable("nvme-cli is not installed (no nvme command on PATH)")
    done = run_bounded([exe, *args], NVME_TIMEOUT_S, MAX_TOOL_BYTES, cancel)
    if not done.ok:
        raise Unreadable(f"nvme {' '.join(args)} failed ({done.failure})")
    if done.returncode != 0:
        said = clean_line((done.stderr or done.stdout).decode("utf-8", "replace").strip().split("\n")[0], 120)
        root = "" if os.geteuid() == 0 else " (it needs root)"
        raise Unreadable(f"nvme {' '.join(args)} failed{root}: {said or f'exit {done.returncode}'}")
    return done.stdout.decode("utf-8", "replace")


def _feature(out: str, what: str) -> int:
    """The "Current value" of a get-feature answer ("…, Current value:0x00000001")."""
    m = re.search(r"Current value:\s*(?:0x)?([0-9a-fA-F]{1,16})\b", out[:MAX_TOOL_BYTES])
    if not m:
        raise Unreadable(f"nvme-cli's answer for {what} has no current value that parses")
    return int(m.group(1), 16)


def _id_ctrl_field(out: str, field_name: str) -> int:
    m = re.search(rf"^{field_name}\s*:\s*(0x[0-9a-fA-F]{{1,16}}|[0-9]{{1,19}})\s*$", out[:MAX_TOOL_BYTES], re.M)
    if not m:
        raise Unreadable(f"nvme id-ctrl's answer has no {field_name} field that parses")
    return int(m.group(1), 0)


# --- what each item reads ---------------------------------------------------------------------------------------


@dataclass
class Context:
    sys: Path
    proc: Path
    device: Device | None
    no_device: str  # why there is no device (when ``device`` is None)
    cpus: tuple[int, ...]
    nvme: NvmeRunner
    swap_interval: float
    nodes: list[tuple[int, tuple[int, ...]]] = field(default_factory=list)  # (node, its CPUs)
    cancel: threading.Event | None = None  # set: the reading is abandoned (a run's ^C), waits and tools end at once

    def cpu_dir(self, cpu: int) -> Path:
        return self.sys / "devices" / "system" / "cpu" / f"cpu{cpu}"

    def need_device(self) -> Device:
        if self.device is None:
            raise Unreadable(self.no_device)
        return self.device

    def virtual_machine(self) -> bool:
        try:
            lines = read_lines(self.proc / "cpuinfo", MAX_CPUINFO_BYTES, cut=True)
        except Unreadable:
            return False
        return any(line.startswith("flags") and " hypervisor" in line for line in lines)


# what a benchmark usually wants and why it matters, per item
WANT: dict[str, tuple[str, str]] = {
    "scheduler": ("none (on a non-rotational device)",
                  "a scheduler orders and merges requests at a cost in CPU time and latency a fast device does not "
                  "need; a rotational disk gains from mq-deadline or bfq"),
    "nomerges": ("0 (merging on) for figures as applications see them; 2 only for a peak-IOPS run",
                 "merging adjacent requests changes the I/Os the device sees, and looking for merges costs CPU"),
    "rotational": ("what the medium is (0 for flash)",
                   "the kernel picks defaults (scheduler, wbt, read-ahead use) from it"),
    "read_ahead": ("the default (128 KiB); it does not touch direct I/O",
                   "buffered sequential reads fetch this much ahead, so they can move more than fio asked for"),
    "wbt": ("0 (off)", "write-back throttling holds back buffered writes whenever reads' latency rises"),
    "poll_queues": ("poll queues > 0 for a polled (hipri) run; otherwise either",
                    "polled I/O (io_uring hipri) needs the driver's poll queues, or it is not polled at all"),
    "apst": ("off (APST disabled)",
             "with APST an idle drive drops to a lower power state, and its exit latency adds to the next I/O"),
    "power_state": ("PS0 (full power)", "a lower power state caps the drive's performance"),
    "pcie_link": ("the device's maximum speed and width",
                  "a link that trained slower or narrower caps bandwidth below what the drive can do"),
    "numa_node": ("the run's CPUs on the device's node",
                  "I/O issued from another node crosses the interconnect, adding latency and CPU time"),
    "governor": ("performance", "other governors let the clock drop while the CPU waits for I/O, slowing the next"),
    "boost": ("the same in every run you compare (on: what the hardware reaches; off: steadier figures)",
              "boost clocks depend on temperature and how many cores are busy, so figures move with them"),
    "cstates": (f"states with an exit latency above {CSTATE_MAX_LATENCY_US} µs disabled",
                "waking a CPU from a deep idle state adds its exit latency to the completion of an I/O"),
    "thp": ("madvise (the memory engine asks for huge pages itself)",
            "with always, whether a buffer gets huge pages depends on what memory was free, and latency with it"),
    "numa_policy": ("default (the memory engine binds each point to its node itself)",
                    "a policy inherited from the shell (numactl) places every buffer the run allocates"),
    "swap": ("no pages swapped in or out", "a swapping system stalls the run on page faults and disk I/O"),
}


def _item(key: str, value: str | None, status: str, note: str | None = None, warning: str | None = None,
          tune: tuple[tuple[str, str], ...] = (), want: str | None = None) -> Item:
    return Item(key, None if value is None else clean_line(value, MAX_TEXT), want or WANT[key][0], WANT[key][1],
                status, warning, None if note is None else clean_line(note, MAX_TEXT), tune)


def _scheduler(c: Context) -> Item:
    dev = c.need_device()
    path = dev.queue / "scheduler"
    chosen, offered = _bracketed(path)
    try:
        rotational = read_int(dev.queue / "rotational", 0, 1) == 1
    except Unreadable:
        rotational = False  # unknown: judged as flash, the case where a scheduler costs most
    if rotational:
        return _item("scheduler", chosen, "info", want="mq-deadline or bfq (on a rotational disk)")
    if chosen == "none":
        return _item("scheduler", chosen, "ok")
    tune = ((str(path), "none"),) if "none" in offered else ()
    return _item("scheduler", chosen, "warn", f"{chosen} on a non-rotational device", "scheduler", tune)


def _nomerges(c: Context) -> Item:
    # not tuned: merging is part of the path an application's I/O takes; turning it off changes what a sequential
    # small-block workload sends to the device, and saves a random-read run only the CPU of the merge lookup
    n = read_int(c.need_device().queue / "nomerges", 0, 2)
    words = {0: "merging on", 1: "only simple one-hit merges", 2: "merging off"}
    return _item("nomerges", f"{n} ({words[n]})", "info")


def _rotational(c: Context) -> Item:
    n = read_int(c.need_device().queue / "rotational", 0, 1)
    return _item("rotational", f"{n} ({'rotational' if n else 'non-rotational'})", "info")


def _read_ahead(c: Context) -> Item:
    kb = read_int(c.need_device().queue / "read_ahead_kb", 0, 1 << 30)
    return _item("read_ahead", f"{kb} KiB", "info")


def _wbt(c: Context) -> Item:
    path = c.need_device().queue / "wbt_lat_usec"
    try:
        us = read_int(path, 0, 1 << 40)
    except Unreadable as e:
        if not path.exists() and path.parent.is_dir():
            raise Unreadable("this kernel has no write-back throttling (no wbt_lat_usec: CONFIG_BLK_WBT off)") from e
        raise
    if us == 0:
        return _item("wbt", "0 (off)", "ok")
    return _item("wbt", f"{us} µs", "warn", f"write-back throttling targets {us} µs read latency", "wbt-on",
                 ((str(path), "0"),))


def _poll_queues(c: Context) -> Item:
    dev = c.need_device()
    io_poll = read_int(dev.queue / "io_poll", 0, 1)
    value = f"io_poll {io_poll}"
    if _nvme_controller(dev):
        try:
            n = read_int(c.sys / "module" / "nvme" / "parameters" / "poll_queues", 0, 1 << 16)
            value += f", nvme poll_queues {n}"
        except Unreadable as e:
            value += f", nvme poll_queues unknown ({e})"
    note = None if io_poll else "no poll queues: hipri (polled) I/O would not be polled"
    return _item("poll_queues", value, "info", note)


def _apst(c: Context) -> Item:
    dev = c.need_device()
    ctrl = _nvme_controller(dev)
    if ctrl is None:
        raise Unreadable(f"{dev.name} is not an NVMe namespace: APST is an NVMe feature")
    param_path = c.sys / "module" / "nvme_core" / "parameters" / "default_ps_max_latency_us"
    try:
        param: int | None = read_int(param_path, 0, 1 << 40)
    except Unreadable:
        param = None
    kernel = "unknown" if param is None else ("0: the driver leaves APST off" if param == 0 else f"{param} µs")
    try:
        apsta = _id_ctrl_field(c.nvme(["id-ctrl", ctrl]), "apsta")
        if apsta & 1 == 0:
            return _item("apst", f"not supported by the drive (id-ctrl apsta {apsta})", "ok")
        on = _feature(c.nvme(["get-feature", ctrl, "-f", "12"]), "APST (feature 0x0c)") & 1
    except Unreadable as e:
        if param == 0:
            return _item("apst", f"off (kernel default_ps_max_latency_us {kernel})", "ok")
        return _item("apst", f"kernel default_ps_max_latency_us {kernel}", "info",
                     f"the driver enables APST on a drive that supports it; whether {ctrl} does is not known: {e}")
    if on:
        return _item("apst", f"enabled (APSTE 1; kernel default_ps_max_latency_us {kernel})", "warn",
                     f"{ctrl} may enter a non-operational power state when idle", "apst-on")
    return _item("apst", f"disabled (APSTE 0; kernel default_ps_max_latency_us {kernel})", "ok")


def _power_state(c: Context) -> Item:
    dev = c.need_device()
    ctrl = _nvme_controller(dev)
    if ctrl is None:
        raise Unreadable(f"{dev.name} is not an NVMe namespace: power states are an NVMe feature")
    ps = _feature(c.nvme(["get-feature", ctrl, "-f", "2"]), "power management (feature 0x02)") & 0x1F
    if ps == 0:
        return _item("power_state", "PS0", "ok")
    return _item("power_state", f"PS{ps}", "info", f"{ctrl} is in power state {ps}, below full power")


_GTS = re.compile(r"([0-9]{1,3}(?:\.[0-9]{1,3})?) GT/s(?: PCIe)?")


def _pcie_link(c: Context) -> Item:
    dev = c.need_device()
    function = nearest_with(dev.sysdir, c.sys, "current_link_speed")
    if function is None:
        raise Unreadable(f"no PCIe function with link attributes above {dev.name}: a loop or other virtual device "
                         "has none, and a conventional PCI bus (a virtual machine's virtio disk) reports no link")
    speed_text = read_line(function / "current_link_speed")
    cur_speed, max_speed = _GTS.fullmatch(speed_text), _GTS.fullmatch(read_line(function / "max_link_speed"))
    cur_width = read_int(function / "current_link_width", 0, 64)
    max_width = read_int(function / "max_link_width", 0, 64)
    if cur_speed is None or max_speed is None:
        raise Unreadable(f"{function.name}'s link speed reads {show_value(speed_text, 40)}: the link is down or "
                         "its speed unknown")
    cur, top = float(cur_speed.group(1)), float(max_speed.group(1))
    value = f"{cur:g} GT/s x{cur_width} (maximum {top:g} GT/s x{max_width}) at {function.name}"
    if cur < top or cur_width < max_width:
        return _item("pcie_link", value, "warn", f"the link of {function.name} trained below its maximum",
                     "link-degraded")
    return _item("pcie_link", value, "ok")


def _numa_node(c: Context) -> Item:
    dev = c.need_device()
    holder = nearest_with(dev.sysdir, c.sys, "numa_node")
    if holder is None:
        raise Unreadable(f"no device above {dev.name} names a NUMA node (a loop or other virtual device has none "
                         "of its own)")
    node = read_int(holder / "numa_node", -1, 1 << 16)
    several = len(c.nodes) > 1
    if node < 0:
        return _item("numa_node", f"none (-1 at {holder.name})", "info" if several else "ok",
                     "the firmware gives this device no node" if several else None)
    cpus = dict(c.nodes).get(node)
    value = f"node {node} (CPUs {cpu_list_text(cpus) if cpus else 'none'})"
    if several and cpus is not None and not set(cpus) & set(c.cpus):
        return _item("numa_node", value, "warn", f"the run's CPUs {cpu_list_text(c.cpus)} are all off node {node}",
                     "numa-remote")
    return _item("numa_node", value, "ok" if several else "info",
                 None if several else "the machine has one NUMA node: every CPU is local")


def _no_cpufreq(c: Context) -> Unreadable:
    if c.virtual_machine():
        return Unreadable("no CPU frequency driver: this is a virtual machine, whose clock the host sets")
    return Unreadable("no CPU frequency driver (no cpufreq directory): the firmware or the CPU sets the clock")


def _governor(c: Context) -> Item:
    seen: dict[str, list[int]] = {}
    tune: list[tuple[str, str]] = []
    for cpu in c.cpus[:MAX_RUN_CPUS]:
        d = c.cpu_dir(cpu) / "cpufreq"
        if not d.is_dir():
            continue
        gov = read_line(d / "scaling_governor")
        if not re.fullmatch(r"[a-z0-9_-]{1,32}", gov):
            raise Unreadable(f"{d / 'scaling_governor'} holds {show_value(gov, 40)}, not a governor's name")
        seen.setdefault(gov, []).append(cpu)
        if gov != "performance":
            try:
                offered = read_line(d / "scaling_available_governors").split()
            except Unreadable:
                offered = []
            if "performance" in offered:
                tune.append((str(d / "scaling_governor"), "performance"))
    if not seen:
        raise _no_cpufreq(c)
    value = ", ".join(f"{g} on CPUs {cpu_list_text(cs)}" for g, cs in seen.items()) if len(seen) > 1 else \
        f"{next(iter(seen))} (CPUs {cpu_list_text(next(iter(seen.values())))})"
    if set(seen) == {"performance"}:
        return _item("governor", value, "ok")
    return _item("governor", value, "warn", "a governor other than performance on the run's CPUs", "governor",
                 tuple(tune))


def _boost(c: Context) -> Item:
    cpu = c.sys / "devices" / "system" / "cpu"
    first = c.cpus[0] if c.cpus else 0
    try:
        driver = read_line(c.cpu_dir(first) / "cpufreq" / "scaling_driver")
    except Unreadable:
        driver = None
    if (cpu / "intel_pstate" / "no_turbo").exists():  # Intel: intel_pstate (active) or intel_cpufreq (passive)
        no_turbo = read_int(cpu / "intel_pstate" / "no_turbo", 0, 1)
        return _item("boost", f"{'off' if no_turbo else 'on'} (intel_pstate/no_turbo {no_turbo})", "info")
    # acpi-cpufreq (Intel without intel_pstate, AMD) and amd-pstate: one switch, or one per policy (newer kernels)
    for path in (cpu / "cpufreq" / "boost", cpu / f"cpu{first}" / "cpufreq" / "boost"):
        if path.exists():
            on = read_int(path, 0, 1)
            return _item("boost", f"{'on' if on else 'off'} ({driver or 'cpufreq'}: boost {on})", "info")
    if driver is None:
        raise _no_cpufreq(c)
    raise Unreadable(f"the frequency driver {clean_line(driver, 40)} offers no boost switch")


def _idle_states(c: Context, cpu: int) -> list[tuple[int, str, int, int]]:
    """(state number, name, exit latency µs, disabled) of one CPU's cpuidle states."""
    base = c.cpu_dir(cpu) / "cpuidle"
    out = []
    for i in range(MAX_IDLE_STATES):
        d = base / f"state{i}"
        if not d.is_dir():
            break
        name = clean_line(read_line(d / "name", 64), 32)
        out.append((i, name, read_int(d / "latency", 0, 1 << 32), read_int(d / "disable", 0, 1)))
    return out


IDLE_DRIVERS = {
    "intel_idle": "intel_idle (the kernel's own table of this Intel CPU's C-states)",
    "acpi_idle": "acpi_idle (the C-states the firmware's ACPI tables describe)",
    "haltpoll": "haltpoll (a virtual machine polls a while before it halts its vCPU)",
}


def _cstates(c: Context) -> Item:
    try:
        driver = read_line(c.sys / "devices" / "system" / "cpu" / "cpuidle" / "current_driver", 64)
    except Unreadable:
        driver = "none"
    per_cpu = {cpu: _idle_states(c, cpu) for cpu in c.cpus[:MAX_RUN_CPUS]}
    if not any(per_cpu.values()):
        raise Unreadable(f"no cpuidle states (driver {clean_line(driver, 40)}): the CPUs idle with the "
                         "architecture's default halt, which has no states to list")
    deep = [(cpu, s) for cpu, states in per_cpu.items() for s in states if s[2] > CSTATE_MAX_LATENCY_US and not s[3]]
    shown = next(states for states in per_cpu.values() if states)
    value = f"{clean_line(driver, 40)}: " + ", ".join(
        f"{name} {lat} µs" + (" (disabled)" if off else "") for _, name, lat, off in shown)
    if len({tuple(s) for s in per_cpu.values()}) > 1:
        value += " (on the first CPU; the others differ)"
    note = f"driver {IDLE_DRIVERS.get(driver, driver)}"
    if not deep:
        return _item("cstates", value, "ok", note)
    tune = tuple((str(c.cpu_dir(cpu) / "cpuidle" / f"state{i}" / "disable"), "1") for cpu, (i, *_) in deep)
    names = sorted({s[1] for _, s in deep})
    return _item("cstates", value, "warn", f"{', '.join(names)} enabled (exit above {CSTATE_MAX_LATENCY_US} µs); "
                 + note, "cstates", tune)


def _thp(c: Context) -> Item:
    base = c.sys / "kernel" / "mm" / "transparent_hugepage"
    enabled, _ = _bracketed(base / "enabled")
    try:
        defrag = _bracketed(base / "defrag")[0]
    except Unreadable:
        defrag = "unknown"
    value = f"enabled {enabled}, defrag {defrag}"
    if enabled == "always":
        return _item("thp", value, "info", "every large anonymous mapping may get huge pages")
    return _item("thp", value, "ok")


_POLICY = re.compile(r"[0-9a-f]{1,16} ((?:weighted )?[a-z]{1,16}(?: \(many\))?(?:=[a-z|]{1,40})?(?::[0-9,-]{1,200})?)"
                     r"(?: |$)")


def _numa_policy(c: Context) -> Item:
    # /proc/self/numa_maps shows, for a mapping without a policy of its own, the process's policy: the stack's line
    # is read (nothing mbinds the main stack); no syscall numbers per architecture as get_mempolicy would need
    mems = next((line.split(":", 1)[1].strip() for line in read_lines(c.proc / "self" / "status")
                 if line.startswith("Mems_allowed_list:")), None)
    mems = mems if mems and cpu_list(mems) else "unknown"
    lines = read_lines(c.proc / "self" / "numa_maps", MAX_NUMA_MAPS_BYTES, cut=True)
    line = next((x for x in lines if " stack" in x), lines[0] if lines else "")
    m = _POLICY.match(line)
    if not m:
        raise Unreadable(f"{c.proc / 'self' / 'numa_maps'} has no line with a policy that parses")
    policy = m.group(1)
    value = f"{policy} (memory nodes allowed: {mems})"
    if policy in ("default", "local"):
        return _item("numa_policy", value, "ok")
    return _item("numa_policy", value, "info", "a policy set when the tool was started (numactl) places its memory")


def _swap(c: Context) -> Item:
    meminfo = _table_values(read_lines(c.proc / "meminfo"))
    total, free = meminfo.get("SwapTotal"), meminfo.get("SwapFree")
    if total is None or free is None:
        raise Unreadable(f"{c.proc / 'meminfo'} has no SwapTotal and SwapFree lines")
    before = _table_values(read_lines(c.proc / "vmstat"))
    if c.cancel is not None:
        c.cancel.wait(c.swap_interval)
    else:
        _pause(c.swap_interval)
    after = _table_values(read_lines(c.proc / "vmstat"))
    if not all(k in d for d in (before, after) for k in ("pswpin", "pswpout")):
        raise Unreadable(f"{c.proc / 'vmstat'} has no pswpin and pswpout lines")
    moved_in, moved_out = after["pswpin"] - before["pswpin"], after["pswpout"] - before["pswpout"]
    used = max(0, total - free)
    value = "no swap" if total == 0 else f"{total / 1024:.0f} MiB, {used / 1024:.0f} MiB used"
    value += f"; {max(0, moved_in)} pages in, {max(0, moved_out)} out in {c.swap_interval:g} s"
    if moved_in > 0 or moved_out > 0:
        return _item("swap", value, "warn", "pages moved to or from swap while the audit watched", "swap-active")
    return _item("swap", value, "ok")


def _pause(seconds: float) -> None:
    """The wait between the two readings of /proc/vmstat (the tests replace it)."""
    if seconds > 0:
        time.sleep(seconds)


READERS: dict[str, Callable[[Context], Item]] = {
    "scheduler": _scheduler, "nomerges": _nomerges, "rotational": _rotational, "read_ahead": _read_ahead,
    "wbt": _wbt, "poll_queues": _poll_queues, "apst": _apst, "power_state": _power_state,
    "pcie_link": _pcie_link, "numa_node": _numa_node, "governor": _governor, "boost": _boost,
    "cstates": _cstates, "thp": _thp, "numa_policy": _numa_policy, "swap": _swap,
}


def _read_item(key: str, c: Context) -> Item:
    try:
        return READERS[key](c)
    except Unreadable as e:
        return _item(key, None, "unavailable", str(e))
    except Exception as e:
        return _item(key, None, "unavailable", f"could not be read ({type(e).__name__}: {e})")


def _nodes(root: Path) -> list[tuple[int, tuple[int, ...]]]:
    return [(n["node"], cpu_list(n["cpus"])) for n in numa_info(root)["nodes"]]


def _sys_read_only(proc: Path, sys: Path) -> bool:
    try:
        lines = read_lines(proc / "self" / "mountinfo", MAX_PROC_BYTES * 4, cut=True)
    except Unreadable:
        return False
    ro = False
    for line in lines:  # the last mount on the sysfs root is the one in effect
        parts = line.split()
        if len(parts) > 5 and parts[4] == str(sys):
            ro = "ro" in parts[5].split(",")
    return ro


def _unlisted(target: str | None, sys: Path) -> bool:
    """Whether ``target`` has a device number this sysfs does not list (/sys/dev/block/MAJ:MIN)."""
    number = device_number(target) if target is not None else None
    return number is not None and number[0] != 0 and not (sys / "dev" / "block" / f"{number[0]}:{number[1]}").exists()


def container_note(engine: str | None, sys: Path, proc: Path, unlisted: bool) -> str | None:
    """In a container: whose sysfs the audit read, and why some items may be unavailable; None outside one.
    ``unlisted``: the target's device is missing from this sysfs."""
    if engine is None:
        return None
    note = f"in a {engine} container: {sys} is the host kernel's sysfs (a container shares the host's kernel)"
    if _sys_read_only(proc, sys):
        note += "; it is mounted read-only (an unprivileged container): it is read all the same, --tune cannot write it"
    if unlisted:
        note += (f"; the target's device is not in this container's {sys}/dev/block, so the device's items are "
                 f"unavailable: run it with {RUN_FLAGS}")
    return note


def swap_watch_seconds() -> float:
    """How long the audit watches /proc/vmstat: SWAP_WATCH_ENV when it holds a number from 0.01 to 10, else
    SWAP_INTERVAL_S (the command line refuses another value when it starts: app.core.settings.check)."""
    try:
        seconds = settings.swap_watch_s()
    except UsageError:
        return SWAP_INTERVAL_S
    return SWAP_INTERVAL_S if seconds is None else seconds


def audit(target: str | None, cpus: Sequence[int] | None = None, *, sys_root: Path | None = None,
          proc_root: Path | None = None, nvme: NvmeRunner | None = None, swap_interval: float | None = None,
          engine: str | None = "detect", cancel: threading.Event | None = None) -> Audit:
    """Read every item of :data:`ITEMS` for ``target``'s device and ``cpus`` (None: the CPUs this process may
    run on).  Never raises for what it reads; an item it cannot read is ``unavailable`` with the reason.
    ``nvme`` runs nvme-cli (tests give a fake); ``engine``: the container engine, None outside one ("detect":
    app.host.container finds out); ``cancel``: set by another thread to end the reading at once (a run interrupted
    while it reads: nvme-cli is killed, the swap watch ends; what is left reads as it can)."""
    sys = sys_root or sysfs_root()
    proc = proc_root or procfs_root()
    device: Device | None = None
    no_device = "no target was given: the device's settings are read for a TARGET"
    if target is not None:
        try:
            found = find_device(target, sys)
        except Exception as e:
            found = f"the device of {clean_line(target, 120)} could not be found ({type(e).__name__})"
        device, no_device = (found, "") if isinstance(found, Device) else (None, clean_line(found, MAX_TEXT))
    run_cpus = tuple(sorted(set(cpus))) if cpus is not None else allowed_cpus()
    try:
        nodes = _nodes(sys)
    except Exception:
        nodes = []
    if swap_interval is None:
        swap_interval = swap_watch_seconds()
    if nvme is None:
        nvme = run_nvme if cancel is None else partial(run_nvme, cancel=cancel)
    c = Context(sys, proc, device, no_device, run_cpus, nvme, swap_interval, nodes, cancel)
    items = tuple(_read_item(key, c) for key in ITEMS)
    engine = container_engine() if engine == "detect" else engine
    try:
        unlisted = device is None and _unlisted(target, sys)
    except Exception:
        unlisted = False
    note = container_note(engine, sys, proc, unlisted)
    return Audit(target, device.name if device else None, run_cpus, items, note,
                 read_at=datetime.now(timezone.utc).isoformat(timespec="seconds"),
                 about=device.about if device else no_device)


# --- run.json ---------------------------------------------------------------------------------------------------


def to_json(a: Audit) -> dict[str, object]:
    """run.json's ``audit``."""
    items: list[dict[str, object]] = []
    for i in a.items:
        d: dict[str, object] = {"key": i.key, "value": i.value, "want": i.want, "why": i.why, "status": i.status}
        if i.warning is not None:
            d["warning"] = i.warning
        if i.note is not None:
            d["note"] = i.note
        items.append(d)
    return {"target": a.target, "device": a.device, "cpus": cpu_list_text(a.cpus), "read_at": a.read_at,
            "container": a.container, "items": items}


MAX_JSON_TARGET = 4096


def _text(obj: Mapping[str, object], key: str, limit: int = MAX_TEXT, optional: bool = True) -> str | None:
    v = obj.get(key)
    if isinstance(v, str):
        return clean_line(v, limit)
    return None if optional or v is None else ""


def _item_from_json(d: object) -> Item | None:
    if not isinstance(d, dict):
        return None
    key, status = d.get("key"), d.get("status")
    if key not in ITEMS or status not in STATUSES:
        return None
    warning = d.get("warning")
    warning = warning if isinstance(warning, str) and warning in WARNINGS and status == "warn" else None
    return Item(str(key), _text(d, "value"), _text(d, "want", optional=False) or "",
                _text(d, "why", optional=False) or "", str(status), warning, _text(d, "note"))


def from_json(obj: object) -> Audit | None:
    """The reader of a recorded ``audit`` (hostile: an old or edited run.json): None when it is not one; bounded
    text, unknown keys and statuses dropped."""
    if not isinstance(obj, dict) or not isinstance(obj.get("items"), list):
        return None
    items: list[Item] = []
    for d in obj["items"][: len(ITEMS) * 4]:
        item = _item_from_json(d)
        if item is not None and all(i.key != item.key for i in items):
            items.append(item)
    cpus_text = obj.get("cpus")
    cpus = cpu_list(cpus_text) if isinstance(cpus_text, str) else ()
    read_at = _text(obj, "read_at", 64)
    return Audit(_text(obj, "target", MAX_JSON_TARGET), _text(obj, "device", 64), cpus, tuple(items),
                 _text(obj, "container"), read_at=read_at)


MAX_TUNED_BY = 1000


def tuned_by(obj: object) -> str | None:
    """run.json ``audit.tuned_by``: why the reading is not the host's own — another run was tuning these settings
    with --tune when it was taken (app.host.tune.tuned_elsewhere) — or None."""
    return (_text(obj, "tuned_by", MAX_TUNED_BY) or None) if isinstance(obj, dict) else None


# --- the table `profiler-tui audit` prints -------------------------------------------------------------------

TABLE_HEADERS = ("setting", "value", "a benchmark wants", "why")


def shown_value(i: Item) -> str:
    """An item's value as the table shows it: the value and what was found, or why it is not available here."""
    if i.status == "unavailable":
        return f"not available here: {i.note}"
    if i.status == "warn":
        return f"{i.value} — WARNING {i.warning}: {i.note}"
    return f"{i.value}" + (f" ({i.note})" if i.note else "")


def heading(a: Audit) -> list[str]:
    """The lines above the table: what was read, and the container's note."""
    what = (f"{a.target}: {a.device}, {a.about}" if a.device else f"{a.target}: {a.about}") if a.target \
        else "the system (no TARGET given)"
    lines = [clean_line(f"audit of {what}; CPUs {cpu_list_text(a.cpus) or 'none'}", None)]
    if a.container:
        lines.append(clean_line(a.container, None))
    return lines


def render(a: Audit) -> str:
    """The plain-text audit (not on a terminal): one block per setting, so a pipe into a pager or a mail stays
    readable at any width (a four-column table of sentences is hundreds of characters wide)."""
    lines = [*heading(a), ""]
    for i in a.items:
        lines += [f"{i.label}: {shown_value(i)}", f"    a benchmark wants: {i.want}", f"    why: {i.why}"]
    warned = [f"warning {i.warning}: {WARNINGS.get(i.warning or '', '')}" for i in a.warnings]
    return "\n".join([*lines, *(["", *warned] if warned else [])])
