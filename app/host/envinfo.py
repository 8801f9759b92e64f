"""The environment a run measured on (for run.json and the report's first section)."""

from __future__ import annotations

import os
import platform
import re
import socket
import stat
import sys
from pathlib import Path
from typing import NotRequired, TypedDict

from app.host.link import read_attr, sysfs_root


class CacheInfo(TypedDict):
    name: str  # L1d, L1i, L2, L3
    size: str  # as sysfs gives it: "32K"
    shared_cpus: str | None  # CPU list: "0-3"


class TlbInfo(TypedDict):
    entries: int  # /proc/cpuinfo "TLB size: 3584 4K pages" (AMD; the kernel prints none for Intel)
    page_bytes: int


class CpuInfo(TypedDict):
    model: str
    sockets: int
    cores: int
    threads: int
    caches: list[CacheInfo]
    arch: str
    tlb: NotRequired[TlbInfo]


class MemoryInfo(TypedDict):
    total_bytes: int | None
    available_bytes: int | None
    hugepages_total: int | None
    transparent_hugepages: str | None  # the sysfs line: "always [madvise] never"


class OsInfo(TypedDict):
    os: str
    kernel: str
    hostname: str
    python: str
    container: bool
    virtualization: str | None


class NumaNode(TypedDict):
    node: int
    cpus: str | None  # CPU list as sysfs writes it ("0-3,8"); "" for a node without CPUs; None: unreadable
    memory_bytes: int | None  # the node's MemTotal; None: unreadable


class NumaInfo(TypedDict):
    """The machine's NUMA nodes from sysfs; ``nodes`` is empty and ``unknown`` says why when sysfs has none."""

    nodes: list[NumaNode]
    unknown: NotRequired[str]


class Environment(TypedDict):
    """run.json's ``environment``."""

    cpu: CpuInfo
    memory: MemoryInfo
    system: OsInfo
    numa: NotRequired[NumaInfo]


class FileTargetInfo(TypedDict):
    """run.json's ``target_info`` for a file target (a block device's comes from app.host.devices)."""

    type: str  # "file"
    path: str
    mount_point: str
    source: str
    filesystem: str
    free_bytes: NotRequired[int]


def _read(path: str | Path) -> str | None:
    try:
        return Path(path).read_text().strip()
    except OSError:
        return None


def cpu_info() -> CpuInfo:
    model = None
    cores_per_socket: dict[str, set[str]] = {}
    phys, core = None, None
    text = _read("/proc/cpuinfo") or ""
    tlb: TlbInfo | None = None
    for line in text.splitlines():
        key, _, value = line.partition(":")
        key, value = key.strip(), value.strip()
        if key == "model name" and model is None:
            model = value
        elif key == "TLB size" and tlb is None:
            tlb = tlb_size(value)
        elif key == "physical id":
            phys = value
        elif key == "core id":
            core = value
        elif not line.strip() and phys is not None and core is not None:
            cores_per_socket.setdefault(phys, set()).add(core)
            phys, core = None, None
    if phys is not None and core is not None:
        cores_per_socket.setdefault(phys, set()).add(core)
    threads = os.cpu_count() or 0
    cores = sum(len(c) for c in cores_per_socket.values()) or threads
    caches: list[CacheInfo] = []
    base = Path("/sys/devices/system/cpu/cpu0/cache")
    for idx in sorted(base.glob("index*")):
        level = _read(idx / "level")
        ctype = _read(idx / "type")
        size = _read(idx / "size")
        if level and size:
            name = f"L{level}" + ({"Data": "d", "Instruction": "i"}.get(ctype or "", ""))
            caches.append({"name": name, "size": size, "shared_cpus": _read(idx / "shared_cpu_list")})
    info: CpuInfo = {
        "model": model or platform.processor() or platform.machine(),
        "sockets": len(cores_per_socket) or 1,
        "cores": cores,
        "threads": threads,
        "caches": caches,
        "arch": platform.machine(),
    }
    if tlb:
        info["tlb"] = tlb
    return info


def tlb_size(value: str) -> TlbInfo | None:
    """/proc/cpuinfo's "TLB size" value ("3584 4K pages": the L2 TLB's entries for 4 KiB pages) as numbers."""
    parts = value.split()
    units = {"4K": 4096, "2M": 2 << 20, "1G": 1 << 30}
    if len(parts) >= 2 and parts[0].isdigit() and int(parts[0]) > 0 and parts[1].upper() in units:
        return {"entries": int(parts[0]), "page_bytes": units[parts[1].upper()]}
    return None


def memory_info() -> MemoryInfo:
    info: dict[str, int] = {}
    for line in (_read("/proc/meminfo") or "").splitlines():
        key, _, value = line.partition(":")
        if key in ("MemTotal", "MemAvailable", "HugePages_Total", "Hugepagesize"):
            parts = value.split()
            n = int(parts[0]) if parts else 0
            info[key] = n * 1024 if len(parts) > 1 and parts[1] == "kB" else n
    thp = _read("/sys/kernel/mm/transparent_hugepage/enabled")
    return {
        "total_bytes": info.get("MemTotal"),
        "available_bytes": info.get("MemAvailable"),
        "hugepages_total": info.get("HugePages_Total"),
        "transparent_hugepages": thp,
    }


MAX_NODES = 1024  # node numbers 0 … 1023: the kernel's largest MAX_NUMNODES
MAX_CPULIST_CHARS = 8192
MAX_NODE_MEMINFO_BYTES = 16 << 10
_NODE_DIR = re.compile(r"node(0|[1-9][0-9]{0,3})")
_CPULIST = re.compile(r"[0-9]{1,5}(-[0-9]{1,5})?(,[0-9]{1,5}(-[0-9]{1,5})?)*")


def numa_info(root: Path | None = None) -> NumaInfo:
    """The NUMA nodes of ``root``/devices/system/node (the sysfs root: /sys, or ``PROFILER_TUI_SYSFS``): each
    node's CPU list and MemTotal.  Without that folder (a kernel built without NUMA) the layout is recorded as
    unknown rather than guessed as one node.  Untrusted: at most 1024 nodes, bounded reads, a value that does
    not parse is None."""
    base = (root or sysfs_root()) / "devices" / "system" / "node"
    try:
        names = [e.name for e in os.scandir(base) if e.is_dir(follow_symlinks=False)]
    except OSError:
        return {"nodes": [], "unknown": f"{base} is missing: the kernel reports no NUMA nodes"}
    ids = sorted(int(m.group(1)) for name in names if (m := _NODE_DIR.fullmatch(name)))[:MAX_NODES]
    if not ids:
        return {"nodes": [], "unknown": f"{base} lists no node"}
    return {"nodes": [_numa_node(base / f"node{n}", n) for n in ids]}


def _numa_node(d: Path, node: int) -> NumaNode:
    cpus = read_attr(d / "cpulist", MAX_CPULIST_CHARS + 1)
    if cpus is not None and (len(cpus) > MAX_CPULIST_CHARS or not (cpus == "" or _CPULIST.fullmatch(cpus))):
        cpus = None
    memory = None
    pattern = re.compile(rf"Node {node} MemTotal: +([0-9]{{1,15}}) kB")
    for line in (read_attr(d / "meminfo", MAX_NODE_MEMINFO_BYTES) or "").splitlines():
        if m := pattern.fullmatch(line.strip()):
            memory = int(m.group(1)) * 1024
            break
    return {"node": node, "cpus": cpus, "memory_bytes": memory}


def node_ids(root: Path | None = None) -> list[int] | None:
    """The machine's NUMA node numbers, or None when sysfs does not say (see :func:`numa_info`)."""
    info = numa_info(root)
    return None if "unknown" in info else [n["node"] for n in info["nodes"]]


def os_info() -> OsInfo:
    pretty = None
    for line in (_read("/etc/os-release") or "").splitlines():
        if line.startswith("PRETTY_NAME="):
            pretty = line.split("=", 1)[1].strip('"')
    u = platform.uname()
    return {
        "os": pretty or u.system,
        "kernel": u.release,
        "hostname": socket.gethostname(),
        "python": sys.version.split()[0],
        "container": os.path.exists("/.dockerenv") or os.path.exists("/run/.containerenv"),
        "virtualization": _virt(),
    }


def _virt() -> str | None:
    flags = ""
    for line in (_read("/proc/cpuinfo") or "").splitlines():
        if line.startswith("flags"):
            flags = line
            break
    if " hypervisor" in flags:
        vendor = _read("/sys/class/dmi/id/sys_vendor") or _read("/sys/class/dmi/id/product_name")
        return f"virtual machine ({vendor})" if vendor else "virtual machine"
    return None


def collect() -> Environment:
    return {"cpu": cpu_info(), "memory": memory_info(), "system": os_info(), "numa": numa_info()}


def file_target_info(path: str) -> FileTargetInfo:
    """The filesystem a file target lives on (longest mount-point prefix in /proc/mounts)."""
    real = os.path.realpath(path)
    best = ("/", "?", "?")
    for line in (_read("/proc/mounts") or "").splitlines():
        parts = line.split()
        if len(parts) < 3:
            continue
        mnt = parts[1].replace("\\040", " ")
        if (real == mnt or real.startswith(mnt.rstrip("/") + "/")) and len(mnt) >= len(best[0]):
            best = (mnt, parts[0], parts[2])
    info: FileTargetInfo = {"type": "file", "path": real, "mount_point": best[0], "source": best[1],
                            "filesystem": best[2]}
    try:
        st = os.statvfs(os.path.dirname(real) or "/")
        info["free_bytes"] = st.f_bavail * st.f_frsize
    except OSError:
        pass
    return info


def target_info(path: str) -> FileTargetInfo | dict[str, object]:
    """run.json's ``target_info``: the filesystem of a file, or what app.host.devices tells of a block device."""
    try:
        is_block = stat.S_ISBLK(os.stat(path).st_mode)
    except OSError:
        is_block = False
    if not is_block:
        return file_target_info(path)
    try:
        from app.host.devices import device_details
    except ImportError:  # device discovery not available
        return {"type": "block", "path": os.path.realpath(path)}
    details = dict(device_details(path))
    details.setdefault("type", "block")
    details.setdefault("path", os.path.realpath(path))
    return details
