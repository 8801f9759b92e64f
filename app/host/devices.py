"""Block-device discovery (``profiler-tui devices``) and device details for the report.

:func:`list_devices` returns lsblk's tree of disks, partitions and loop devices
as plain dicts (JSON-ready), each with the safety verdicts of :mod:`app.host.safety` (docs/safety.md) for a
write plan and for a read-only plan, and their reasons.  Without a udev
database lsblk's FSTYPE/PTTYPE columns are empty, so the filesystem and
partition-table type are probed on the device (``blkid -p``) when lsblk has
nothing.  When lsblk is missing or fails, /sys/block is walked instead.

:func:`device_details` gives the report what it says about a target: model,
size, transport, rotational, scheduler, sector sizes, and nvme-cli / smartctl
identity when those tools are installed.

Headless: no UI library is imported here.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
from dataclasses import dataclass

from app.core.sanitize import clean_line
from app.host import safety
from app.host.external import run_tool
from app.host.link import link_of

LSBLK_COLUMNS = [
    "NAME", "PATH", "TYPE", "SIZE", "MODEL", "VENDOR", "SERIAL", "TRAN", "ROTA", "MOUNTPOINTS",
    "FSTYPE", "PTTYPE", "RO", "RM", "PKNAME", "MAJ:MIN", "LOG-SEC", "PHY-SEC", "SCHED",
]
# util-linux < 2.37 has no MOUNTPOINTS/PATH; this set works back to 2.27.
LSBLK_FALLBACK_COLUMNS = ["NAME", "TYPE", "SIZE", "MODEL", "TRAN", "ROTA", "MOUNTPOINT", "FSTYPE", "RO", "MAJ:MIN"]

TOOL_TIMEOUT = 15.0


def _lsblk(extra: list[str] | None = None) -> list[dict] | None:
    """lsblk's JSON tree, or None when lsblk is missing or fails with both column sets."""
    exe = shutil.which("lsblk")
    if not exe:
        return None
    for columns in (LSBLK_COLUMNS, LSBLK_FALLBACK_COLUMNS):
        cp = run_tool([exe, "-J", "-b", "-o", ",".join(columns)] + (extra or []), TOOL_TIMEOUT)
        if cp is None or cp.returncode != 0:
            continue
        try:
            return json.loads(cp.stdout).get("blockdevices", [])
        except (ValueError, AttributeError, RecursionError):
            continue
    return None


def _bool(value) -> bool | None:
    if value is None:
        return None
    if isinstance(value, bool):
        return value
    return str(value).strip() in ("1", "true", "True")


def _int(value) -> int | None:
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


def _str(value) -> str | None:
    if value is None:
        return None
    value = clean_line(value, 4096)  # lsblk's words (a model, a label) go to the terminal and report.md
    return value or None


def _sysfs_tree() -> list[dict]:
    """A minimal lsblk-like tree from /sys/block, when lsblk is unavailable."""
    out = []
    for name in sorted(os.listdir("/sys/block")) if os.path.isdir("/sys/block") else []:
        if name.startswith(("loop", "ram")) and safety.size_bytes(name) == 0:
            continue  # unattached loop devices, like lsblk
        kind = "loop" if name.startswith("loop") else "rom" if name.startswith("sr") else "disk"
        node = {"name": name, "type": kind, "children": [
            {"name": p, "type": "part"} for p in safety.partitions(name)]}
        out.append(node)
    return out


def _sched(name: str) -> tuple[str | None, list[str]]:
    """(active scheduler, available schedulers) from /sys/block/X/queue/scheduler."""
    text = safety._read(f"/sys/block/{name}/queue/scheduler")
    active, available = None, []
    for word in text.split():
        if word.startswith("[") and word.endswith("]"):
            word = word[1:-1]
            active = word
        available.append(word)
    if active is None and len(available) == 1:
        active = available[0]  # "none" alone is printed without brackets
    return active, available


def _sys_attr(name: str, rel: str) -> str | None:
    return _str(safety._read(f"{safety.SYS_BLOCK}/{name}/{rel}")) or None


def _transport_guess(name: str) -> str | None:
    if name.startswith("nvme"):
        return "nvme"
    if name.startswith("loop"):
        return None
    real = os.path.realpath(f"{safety.SYS_BLOCK}/{name}")
    for needle, tran in (("/usb", "usb"), ("/ata", "sata"), ("/virtio", "virtio"), ("/mmc", "mmc")):
        if needle in real:
            return tran
    return None


def _node(raw: dict, state: safety.SystemState, parent: str | None) -> dict:
    name = raw.get("name") or raw.get("kname") or ""
    path = raw.get("path") or safety.dev_path(name)
    kname = safety.sys_name(path) or name
    whole = not safety.is_partition(kname)
    disk = kname if whole else (safety.parent_disk(kname) or parent or kname)
    mountpoints = raw.get("mountpoints")
    if mountpoints is None:
        mountpoints = [raw.get("mountpoint")]
    mountpoints = [clean_line(m, 4096) for m in mountpoints if isinstance(m, str) and m]
    if not mountpoints:
        dev = safety._devnum_of(kname)
        mountpoints = list(state.mounts.get(dev, [])) if dev is not None else []

    fstype, pttype = _str(raw.get("fstype")), _str(raw.get("pttype"))
    fs_source = "lsblk" if (fstype or pttype) else None
    probe = None
    dev_type = raw.get("type") or ("disk" if whole else "part")
    if safety.size_bytes(kname) > 0 and dev_type not in ("rom",):
        probe = safety.probe_signatures(path, thorough=False)
        if not (fstype or pttype) and (probe.fstype or probe.pttype):
            fstype, pttype, fs_source = probe.fstype, probe.pttype, probe.tool
    write = safety.classify_block(path, True, state, probe if probe and probe.signatures else None) \
        if _is_block(path) else safety.Verdict(path, "other", safety.REFUSED, [f"{path} is not a block device"])
    read = safety.classify_block(path, False, state) if _is_block(path) else write
    scheduler, _ = _sched(disk)
    backing = safety._read(f"/sys/block/{kname}/loop/backing_file") or None if dev_type == "loop" else None

    node = {
        "name": name,
        "path": path,
        "type": dev_type,
        "size": _int(raw.get("size")) if raw.get("size") is not None else safety.size_bytes(kname),
        "model": _str(raw.get("model")) or _sys_attr(disk, "device/model"),
        "vendor": _str(raw.get("vendor")),
        "serial": _str(raw.get("serial")),
        "transport": _str(raw.get("tran")) or _transport_guess(disk),
        "rotational": _bool(raw.get("rota")) if raw.get("rota") is not None
        else _bool(safety._read(f"/sys/block/{disk}/queue/rotational") or None),
        "mountpoints": mountpoints,
        "fstype": fstype,
        "pttype": pttype,
        "fs_source": fs_source,
        "read_only": _bool(raw.get("ro")) if raw.get("ro") is not None else safety.is_read_only(kname),
        "removable": _bool(raw.get("rm")),
        "parent": safety.dev_path(parent) if parent else None,
        "holders": [safety.dev_path(h) for h in safety.holders(kname)],
        "backing_file": backing,
        "scheduler": scheduler,
        "logical_sector_size": _int(raw.get("log-sec")) or _int(_sys_attr(disk, "queue/logical_block_size")),
        "physical_sector_size": _int(raw.get("phy-sec")) or _int(_sys_attr(disk, "queue/physical_block_size")),
        "link": link_of(path) if dev_type in ("disk", "part") else None,
        # The write-plan verdict is the one that matters for picking a target.
        "verdict": write.verdict,
        "reasons": write.reasons,
        "write": {"verdict": write.verdict, "reasons": write.reasons},
        "read": {"verdict": read.verdict, "reasons": read.reasons, "needs_yes": read.confirm},
        "children": [],
    }
    node["children"] = [_node(c, state, kname) for c in raw.get("children") or []]
    return node


def _is_block(path: str) -> bool:
    try:
        return stat.S_ISBLK(os.stat(path).st_mode)
    except OSError:
        return False


def list_devices() -> list[dict]:
    """Every block device lsblk reports, as a tree (``children``) of plain dicts.

    Keys: name, path, type, size (bytes), model, vendor, serial, transport,
    rotational, mountpoints, fstype, pttype, fs_source (lsblk/blkid/wipefs),
    read_only, removable, parent, holders, backing_file, scheduler,
    logical_sector_size, physical_sector_size, link (the PCIe, SATA or USB link above it: kind, text,
    bytes_per_s, speed, width; None for a loop, virtio or device-mapper device), verdict + reasons (write plan),
    write {verdict, reasons}, read {verdict, reasons, needs_yes}, children."""
    raw = _lsblk()
    if raw is None:
        raw = _sysfs_tree()
    state = safety.SystemState()
    return [_node(r, state, None) for r in raw]


def iter_devices(devs: list[dict]):
    """Depth-first walk of a :func:`list_devices` tree, yielding (depth, node)."""
    stack = [(0, d) for d in reversed(devs)]
    while stack:
        depth, dev = stack.pop()
        yield depth, dev
        stack.extend((depth + 1, c) for c in reversed(dev.get("children") or []))


# --------------------------------------------------------------------------- rendering


def human_size(n: int | float | None) -> str:
    if n is None:
        return "-"
    value = float(n)
    for unit in ("B", "K", "M", "G", "T", "P"):
        if value < 1024 or unit == "P":
            return f"{value:.0f}{unit}" if unit == "B" else f"{value:.1f}{unit}"
        value /= 1024
    return f"{n}B"


@dataclass(frozen=True)
class DeviceRow:
    """One line of ``profiler-tui devices`` (plain text here, a rich table on a terminal: app.cli.console)."""

    depth: int  # 0 for a disk, 1 for its partitions, …
    name: str
    size: str
    type: str
    transport: str
    rota: str
    fs: str
    mounted: str
    write: str  # the write plan's verdict as shown ("ok with --yes" for a block device)
    write_verdict: str
    read: str
    read_verdict: str
    reasons: list[str]  # "write: …" for each write reason, "read: …" when reads are not simply ok


def device_rows(devs: list[dict]) -> list[DeviceRow]:
    rows = []
    for depth, d in iter_devices(devs):
        fs = d.get("fstype") or (f"{d['pttype']} table" if d.get("pttype") else "-")
        read = d["read"]["verdict"]
        write = d["write"]["verdict"]
        reasons = [f"write: {r}" for r in d["write"]["reasons"]]
        if read != safety.OK:
            reasons += [f"read: {r}" for r in d["read"]["reasons"]]
        rows.append(DeviceRow(
            depth, str(d.get("path") or d["name"]), human_size(d.get("size")), str(d.get("type") or "-"),
            str(d.get("transport") or "-"), {True: "hdd", False: "ssd"}.get(d.get("rotational"), "-"), str(fs),
            ",".join(d.get("mountpoints") or []) or "-",
            "ok with --yes" if write == safety.OK and d["type"] != "file" else str(write), str(write),
            "ok with --yes" if read == safety.OK and d["read"].get("needs_yes") else str(read), str(read), reasons))
    return rows


DEVICE_COLUMNS = ("DEVICE", "SIZE", "TYPE", "TRAN", "ROTA", "FS/PT", "MOUNTED", "WRITE PLAN", "READ PLAN")


def render_devices_table(devs: list[dict]) -> str:
    """Plain-text table for ``profiler-tui devices``: one row per device, its
    reasons indented beneath it (the first reason for a write plan, and the
    read-only plan's verdict when it differs)."""
    rows = [DEVICE_COLUMNS]
    reasons: list[list[str]] = [[]]
    for r in device_rows(devs):
        mounted = r.mounted if len(r.mounted) <= 18 else r.mounted[:17] + "…"
        rows.append(("  " * r.depth + r.name, r.size, r.type, r.transport, r.rota, r.fs, mounted, r.write, r.read))
        reasons.append(["  " * r.depth + "    " + line for line in r.reasons])
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    right = {1}
    out = []
    for row, why in zip(rows, reasons):
        cells = [c.rjust(widths[i]) if i in right else c.ljust(widths[i]) for i, c in enumerate(row)]
        out.append("  ".join(cells).rstrip())
        out.extend(why)
    if len(rows) == 1:
        out.append("(no block devices found)")
    return "\n".join(out)


# --------------------------------------------------------------------------- report details


def _nvme_identity(path: str) -> dict | None:
    exe = shutil.which("nvme")
    if not exe or not os.path.basename(path).startswith("nvme"):
        return None
    cp = run_tool([exe, "id-ctrl", "-o", "json", path], TOOL_TIMEOUT)
    if cp is None or cp.returncode != 0:
        return None
    try:
        data = json.loads(cp.stdout)
    except (ValueError, RecursionError):
        return None
    keep = {"mn": "model", "sn": "serial", "fr": "firmware", "vid": "vendor_id", "tnvmcap": "total_capacity",
            "nn": "namespaces", "ver": "nvme_version"}
    if not isinstance(data, dict):
        return None
    return {new: (clean_line(data[old], 200) if isinstance(data[old], str) else data[old])
            for old, new in keep.items() if old in data}


def _smart_identity(path: str) -> dict | None:
    exe = shutil.which("smartctl")
    if not exe:
        return None
    cp = run_tool([exe, "-i", "-j", path], TOOL_TIMEOUT)
    if cp is None or not cp.stdout.strip():
        return None
    try:
        data = json.loads(cp.stdout)
    except (ValueError, RecursionError):
        return None
    if not isinstance(data, dict):
        return None
    out = {}
    for key, new in (("model_family", "family"), ("model_name", "model"), ("serial_number", "serial"),
                     ("firmware_version", "firmware"), ("rotation_rate", "rotation_rate"),
                     ("form_factor", "form_factor"), ("interface_speed", "interface_speed")):
        value = data.get(key)
        if isinstance(value, dict):
            value = value.get("name") or value.get("current", {}).get("string") if key != "form_factor" \
                else value.get("name")
        if value not in (None, "", {}):
            out[new] = clean_line(value, 200) if isinstance(value, str) else value
    cap = data.get("user_capacity")
    if isinstance(cap, dict) and "bytes" in cap:
        out["capacity_bytes"] = cap["bytes"]
    return out or None


def _block_details(path: str) -> dict:
    kname = safety.sys_name(path) or os.path.basename(path)
    disk = safety.parent_disk(kname) or kname
    lsblk = _lsblk(["-d", path]) or [{}]
    raw = lsblk[0] if lsblk else {}
    raw_disk = raw
    if disk != kname:
        got = _lsblk(["-d", safety.dev_path(disk)])
        raw_disk = got[0] if got else {}
    scheduler, schedulers = _sched(disk)
    details = {
        "kind": "block",
        "path": path,
        "name": kname,
        "disk": safety.dev_path(disk),
        "type": raw.get("type") or ("part" if disk != kname else "disk"),
        "model": _str(raw_disk.get("model")) or _sys_attr(disk, "device/model"),
        "vendor": _str(raw_disk.get("vendor")) or _sys_attr(disk, "device/vendor"),
        "serial": _str(raw_disk.get("serial")) or _sys_attr(disk, "device/serial"),
        "size_bytes": safety.size_bytes(kname),
        "transport": _str(raw_disk.get("tran")) or _transport_guess(disk),
        "rotational": _bool(safety._read(f"/sys/block/{disk}/queue/rotational") or None),
        "scheduler": scheduler,
        "schedulers": schedulers,
        "logical_sector_size": _int(_sys_attr(disk, "queue/logical_block_size")),
        "physical_sector_size": _int(_sys_attr(disk, "queue/physical_block_size")),
        "read_only": safety.is_read_only(kname),
        "backing_file": (safety._read(f"/sys/block/{disk}/loop/backing_file") or None) if disk.startswith("loop")
        else None,
    }
    nvme = _nvme_identity(safety.dev_path(disk))
    if nvme:
        details["nvme"] = nvme
        details["model"] = details["model"] or nvme.get("model")
    smart = _smart_identity(safety.dev_path(disk))
    if smart:
        details["smart"] = smart
        details["model"] = details["model"] or smart.get("model")
    return details


def _file_details(path: str) -> dict:
    """A regular-file target: its size and the filesystem and device it lives on."""
    probe = path
    while not os.path.exists(probe) and probe not in ("/", ""):
        probe = os.path.dirname(probe)
    out: dict = {"kind": "file", "path": path, "exists": os.path.exists(path)}
    try:
        st = os.stat(probe)
    except OSError:
        return out
    if out["exists"]:
        out["size_bytes"] = st.st_size
    best = None
    for line in safety._read("/proc/self/mountinfo").splitlines():
        parts = line.split()
        if len(parts) < 5 or "-" not in parts:
            continue
        if safety._devnum(parts[2]) != st.st_dev:
            continue
        sep = parts.index("-")
        mp = safety._unescape(parts[4])
        if (probe == mp or probe.startswith(mp.rstrip("/") + "/")) and (best is None or len(mp) > len(best[0])):
            best = (mp, parts[sep + 1] if len(parts) > sep + 1 else None,
                    safety._unescape(parts[sep + 2]) if len(parts) > sep + 2 else None)
    if best:
        out["mount_point"], out["filesystem"], out["source"] = best
    if os.major(st.st_dev):
        dev_link = os.path.realpath(f"/sys/dev/block/{os.major(st.st_dev)}:{os.minor(st.st_dev)}")
        if os.path.isdir(dev_link):
            out["device"] = _block_details(safety.dev_path(os.path.basename(dev_link)))
    return out


def device_details(path: str) -> dict:
    """What the report says about a target (`target_info` in run.json; docs/report.md, "Target").

    For a block device: path, name, disk, type, model, vendor, serial,
    size_bytes, transport, rotational, scheduler (the active one), schedulers,
    logical/physical_sector_size, read_only, backing_file, and ``nvme``
    (nvme id-ctrl) / ``smart`` (smartctl -i) identity when those tools exist.
    For a regular file: its size, mount point, filesystem and the ``device``
    details of the block device holding it.  Never raises for a bad path."""
    real = safety.resolve(path)
    try:
        mode = os.stat(real).st_mode
    except OSError:
        mode = 0
    if stat.S_ISBLK(mode):
        return _block_details(real)
    if mode == 0 or stat.S_ISREG(mode):
        return _file_details(real)
    return {"kind": "other", "path": real}
