"""The link a block device hangs on, read from sysfs: how many bytes a second it can carry at most.

A storage figure above its link's capacity did not come from the medium (a cache answered, or the
measurement is wrong): the ``above-link`` validity flag (app.stats.validity).  The link is found by walking up
the device's sysfs path (``/sys/dev/block/MAJ:MIN`` resolved) to the nearest ancestor that describes one:

- a SATA port: ``ataN/linkM/ata_link/linkM/sata_spd`` ("6.0 Gbps"), 8b/10b line code;
- a USB device: its ``speed`` in Mb/s (480 for USB 2.0, 5000/10000/20000 for USB 3.x), 8b/10b at 5 Gb/s and
  128b/132b above, USB 2.0 taken at its raw 480 Mb/s;
- a PCIe function: ``current_link_speed`` ("8.0 GT/s PCIe") × ``current_link_width``, 8b/10b up to 5 GT/s
  and 128b/130b from 8 GT/s (PCIe 3.0 on).

The capacity is the line rate after the line code only — protocol overhead is left in — so it is an upper
bound a real figure never reaches.  ``PROFILER_TUI_SYSFS`` names another sysfs root (the tests' fake trees).
Everything read is untrusted: short reads, text that does not parse and loops give "no link", never an error.
"""

from __future__ import annotations

import os
import re
import stat
from pathlib import Path
from typing import NotRequired, TypedDict

from app.core import settings

SYSFS_ENV = settings.SYSFS.name
MAX_ATTR_BYTES = 128
MAX_DEPTH = 32  # ancestors walked at most


class Link(TypedDict):
    """run.json ``target_info.link``."""

    kind: str  # "pcie", "sata" or "usb"
    text: str  # what a reader sees: "PCIe 8.0 GT/s x4", "SATA 6.0 Gb/s", "USB 480 Mb/s"
    bytes_per_s: float  # the line rate after the line code
    speed: NotRequired[str]  # the rate as sysfs gives it, per lane: "2.5 GT/s", "6.0 Gb/s", "480 Mb/s"
    width: NotRequired[int]  # lanes (PCIe)


def sysfs_root() -> Path:
    return settings.sysfs_root()


def read_attr(path: Path, limit: int = MAX_ATTR_BYTES) -> str | None:
    """The first ``limit`` bytes of a regular sysfs file, stripped; None when it is missing or not a file."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        return os.read(fd, limit).decode("ascii", "replace").strip()
    except OSError:
        return None
    finally:
        os.close(fd)


def _number(text: str | None, pattern: str) -> float | None:
    m = re.fullmatch(pattern, text or "")
    if not m:
        return None
    value = float(m.group(1))
    return value if 0 < value < 1e6 else None


def _pcie(d: Path) -> Link | None:
    gts = _number(read_attr(d / "current_link_speed"), r"([0-9]+(?:\.[0-9]+)?) GT/s(?: PCIe)?")
    width = _number(read_attr(d / "current_link_width"), r"([0-9]+)")
    if gts is None or width is None or width > 64:
        return None
    code = 8 / 10 if gts <= 5 else 128 / 130
    return {"kind": "pcie", "text": f"PCIe {gts:g} GT/s x{int(width)}", "bytes_per_s": gts * 1e9 * code * width / 8,
            "speed": f"{gts:g} GT/s", "width": int(width)}


def _sata(d: Path) -> Link | None:
    if not re.fullmatch(r"ata[0-9]+", d.name):
        return None
    for spd in sorted(d.glob("link*/ata_link/link*/sata_spd"))[:4]:
        gbps = _number(read_attr(spd), r"([0-9]+(?:\.[0-9]+)?) Gbps")
        if gbps is not None:
            return {"kind": "sata", "text": f"SATA {gbps:g} Gb/s", "bytes_per_s": gbps * 1e9 * 0.8 / 8,
                    "speed": f"{gbps:g} Gb/s"}
    return None


def _usb(d: Path) -> Link | None:
    if not (d / "idVendor").exists():
        return None
    mbps = _number(read_attr(d / "speed"), r"([0-9]+(?:\.[0-9]+)?)")
    if mbps is None:
        return None
    code = 1.0 if mbps <= 480 else 8 / 10 if mbps <= 5000 else 128 / 132
    return {"kind": "usb", "text": f"USB {mbps:g} Mb/s", "bytes_per_s": mbps * 1e6 * code / 8,
            "speed": f"{mbps:g} Mb/s"}


def device_number(target: str) -> tuple[int, int] | None:
    """The block device a target is (its st_rdev) or lives on (a file's st_dev; a path not created yet: its
    nearest existing parent's)."""
    probe = target
    for _ in range(MAX_DEPTH * 4):
        try:
            st = os.stat(probe)
        except OSError:
            parent = os.path.dirname(probe.rstrip("/"))
            if not parent or parent == probe:
                return None
            probe = parent
            continue
        number = st.st_rdev if stat.S_ISBLK(st.st_mode) else st.st_dev
        return os.major(number), os.minor(number)
    return None


def nearest_with(here: Path, root: Path, name: str) -> Path | None:
    """The nearest of :func:`ancestors` that has the attribute ``name`` (None: none has)."""
    return next((d for d in ancestors(here, root) if (d / name).exists()), None)


def ancestors(here: Path, root: Path) -> list[Path]:
    """A resolved sysfs device directory and the directories above it, nearest first, stopping below the sysfs
    root (at most :data:`MAX_DEPTH`): where a device's link, NUMA node or PCIe function is looked for."""
    try:
        top = root.resolve()
    except (OSError, RuntimeError):
        return []
    out = []
    for d in [here, *here.parents][:MAX_DEPTH]:
        if d == top or d == top.parent:
            break
        out.append(d)
    return out


def link_of(target: str, sysfs: Path | None = None) -> Link | None:
    """The nearest link above the block device holding ``target``, None when there is none to read (a loop or
    virtio device, tmpfs, a container without sysfs) or sysfs says nothing that parses."""
    root = sysfs or sysfs_root()
    number = device_number(target)
    if number is None or number[0] == 0:
        return None
    try:
        here = (root / "dev" / "block" / f"{number[0]}:{number[1]}").resolve(strict=True)
    except (OSError, RuntimeError):
        return None
    for d in ancestors(here, root):
        for probe in (_sata, _usb, _pcie):
            found = probe(d)
            if found is not None:
                return found
    return None
