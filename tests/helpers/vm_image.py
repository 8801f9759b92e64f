"""The guest's boot files, made once and kept under the checkout's ignored ``build/vm/``.

- **Kernel**: Debian's own ``linux-image-*-amd64``, fetched with ``apt-get download`` from the Debian archive
  (the only download) and unpacked with ``dpkg -x``: nothing is installed on the host.  Its module tree gets
  a ``modules.dep`` (``depmod -b``); the guest binds that tree over its ``/lib/modules`` and loads the NVMe,
  SATA, ext4 and network drivers with ``modprobe`` as any Debian system does.
- **Initramfs** (about 1.4 MB): a static busybox (Debian's busybox-static) and the ten modules the guest
  needs to mount its root over virtio-9p; its ``/init`` mounts the host's ``/`` read-only at ``/newroot`` and
  hands over to ``tests/vm/guest_init.sh`` there.

The guest's root filesystem is the host's own, read-only (as virtme-ng does): fio, nvme-cli, smartmontools,
util-linux, OpenSSH, Python and this checkout with its venv are the ones the host tests use, at the same paths,
with no second root filesystem to build or keep in step.  See docs/testing.md ("Tests in QEMU guests").
"""

from __future__ import annotations

import fcntl
import gzip
import os
import re
import shutil
import stat
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CACHE = ROOT / "build" / "vm"
BUSYBOX = Path("/bin/busybox")
# what the initramfs loads to mount the root over virtio-9p (their dependencies come along)
INITRAMFS_MODULES = ("virtio_pci", "9pnet_virtio", "9p")
INIT = r"""#!/bin/busybox sh
# The guest's first process: mount the host's / read-only over virtio-9p and hand over to the script
# that the kernel's command line names (ptinit=…).  Made by tests/vm/image.py.
B=/bin/busybox
$B mount -t proc proc /proc
$B mount -t sysfs sys /sys
$B mount -t devtmpfs dev /dev
for m in virtio_pci 9pnet_virtio 9p; do $B modprobe $m || echo "initramfs: modprobe $m failed"; done
next=
for word in $($B cat /proc/cmdline); do
  case "$word" in ptinit=*) next="${word#ptinit=}";; esac
done
if ! $B mount -t 9p -o trans=virtio,version=9p2000.L,ro,msize=512000,cache=loose hostroot /newroot; then
  echo "initramfs: the host's root did not mount over virtio-9p"; $B poweroff -f
fi
$B umount /proc /sys
$B mount --move /dev /newroot/dev
exec $B switch_root /newroot /bin/sh "$next"
"""


class ImageError(Exception):
    """The boot files could not be made (no Debian archive, no busybox-static): the VM tests skip."""


@dataclass(frozen=True)
class BootFiles:
    version: str  # the kernel's release, e.g. 6.1.0-56-amd64
    kernel: Path
    initrd: Path
    modules: Path  # lib/modules/VERSION of the unpacked package (depmod-ed)


def _run(args: list[str], cwd: Path | None = None, timeout: float = 600) -> str:
    try:
        proc = subprocess.run(args, cwd=cwd, capture_output=True, text=True, timeout=timeout)
    except (OSError, subprocess.TimeoutExpired) as e:
        raise ImageError(f"{args[0]} failed: {e}") from None
    if proc.returncode != 0:
        tail = (proc.stderr.strip().splitlines() or ["(no message)"])[-1]
        raise ImageError(f"`{' '.join(args)}` exited {proc.returncode}: {tail}")
    return proc.stdout


def kernel_package() -> str:
    """The package Debian's ``linux-image-amd64`` depends on today (linux-image-6.1.0-NN-amd64)."""
    out = _run(["apt-cache", "depends", "linux-image-amd64"])
    found = re.findall(r"Depends:\s*(linux-image-[0-9][\w.+-]*-amd64)\b", out)
    if not found:
        raise ImageError("apt-cache names no kernel package behind linux-image-amd64")
    return found[0]


def _download(package: str, into: Path) -> Path:
    """``apt-get download``; when the package lists are missing or stale, ``apt-get update`` once and again."""
    try:
        _run(["apt-get", "download", package], cwd=into)
    except ImageError:
        _run(["apt-get", "update", "-q"], timeout=900)
        _run(["apt-get", "download", package], cwd=into)
    debs = sorted(into.glob(f"{package}_*.deb"))
    if not debs:
        raise ImageError(f"apt-get download {package} left no .deb")
    return debs[-1]


def _static_busybox() -> Path:
    if not BUSYBOX.is_file():
        raise ImageError("no /bin/busybox (Debian: busybox-static)")
    with open(BUSYBOX, "rb") as f:
        head = f.read(1 << 16)
    if b"ld-linux" in head:  # a dynamic busybox would need its libraries in the initramfs
        raise ImageError("/bin/busybox is not the static build (Debian: busybox-static)")
    return BUSYBOX


def _module_closure(tree: Path, version: str, names: tuple[str, ...]) -> list[Path]:
    """The .ko files ``modprobe NAME`` loads for each name, dependencies first, from the unpacked tree."""
    files: list[Path] = []
    for name in names:
        out = _run(["modprobe", "-d", str(tree), "-S", version, "--show-depends", name])
        for line in out.splitlines():
            parts = line.split()
            if len(parts) >= 2 and parts[0] == "insmod" and Path(parts[1]) not in files:
                files.append(Path(parts[1]))
    return files


def write_newc(root: Path, out: Path) -> None:
    """A gzip'd cpio archive in the kernel's "newc" format (no cpio on these machines)."""
    buf = bytearray()
    ino = 1

    def add(name: str, mode: int, data: bytes, nlink: int = 1) -> None:
        nonlocal ino
        encoded = name.encode() + b"\0"
        fields = (ino, mode, 0, 0, nlink, 0, len(data), 0, 0, 0, 0, len(encoded), 0)
        buf.extend(("070701" + "".join(f"{v:08X}" for v in fields)).encode() + encoded)
        buf.extend(b"\0" * (-len(buf) % 4))
        buf.extend(data)
        buf.extend(b"\0" * (-len(buf) % 4))
        ino += 1

    for dirpath, dirs, files in os.walk(root):
        dirs.sort()
        for name in sorted(dirs) + sorted(files):
            path = Path(dirpath) / name
            rel = str(path.relative_to(root))
            st = path.lstat()
            if stat.S_ISDIR(st.st_mode):
                add(rel, stat.S_IFDIR | 0o755, b"", 2)
            elif stat.S_ISLNK(st.st_mode):
                add(rel, stat.S_IFLNK | 0o777, os.readlink(path).encode())
            else:
                add(rel, stat.S_IFREG | (st.st_mode & 0o777), path.read_bytes())
    add("TRAILER!!!", 0, b"")
    with gzip.open(out, "wb", compresslevel=1) as f:
        f.write(bytes(buf))


def _make_initramfs(tree: Path, version: str, out: Path) -> None:
    with tempfile.TemporaryDirectory(dir=out.parent) as tmp:
        ird = Path(tmp)
        for d in ("bin", "proc", "sys", "dev", "newroot"):
            (ird / d).mkdir()
        shutil.copy2(_static_busybox(), ird / "bin" / "busybox")
        modroot = tree / "lib" / "modules" / version
        for ko in _module_closure(tree, version, INITRAMFS_MODULES):
            rel = ko.resolve().relative_to(modroot.resolve())
            (ird / "lib" / "modules" / version / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ko, ird / "lib" / "modules" / version / rel)
        for f in modroot.glob("modules.builtin*"):
            shutil.copy2(f, ird / "lib" / "modules" / version / f.name)
        _run(["depmod", "-b", str(ird), version])
        (ird / "init").write_text(INIT)
        (ird / "init").chmod(0o755)
        write_newc(ird, out)


def _ready(d: Path) -> BootFiles | None:
    try:
        version = (d / "READY").read_text().strip()
    except OSError:
        return None
    files = BootFiles(version, d / "tree" / "boot" / f"vmlinuz-{version}", d / "initrd.gz",
                      d / "tree" / "lib" / "modules" / version)
    return files if files.kernel.is_file() and files.initrd.is_file() and (files.modules / "modules.dep").is_file() \
        else None


def prepare(cache: Path = CACHE) -> BootFiles:
    """The boot files, made on first use (about 10 s plus a 70 MB download); one maker at a time."""
    for tool in ("apt-get", "dpkg", "depmod", "modprobe"):
        if shutil.which(tool) is None:
            raise ImageError(f"{tool} is not installed (Debian: apt, dpkg, kmod)")
    cache.mkdir(parents=True, exist_ok=True)
    with open(cache / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        for d in sorted(cache.glob("kernel-*")):
            if (found := _ready(d)) is not None:
                return found
        package = kernel_package()
        version = package.removeprefix("linux-image-")
        d = cache / f"kernel-{version}"
        shutil.rmtree(d, ignore_errors=True)
        d.mkdir()
        deb = _download(package, d)
        _run(["dpkg", "-x", str(deb), str(d / "tree")])
        deb.unlink()
        _run(["depmod", "-b", str(d / "tree"), version])
        _make_initramfs(d / "tree", version, d / "initrd.gz")
        (d / "READY").write_text(version + "\n")
        found = _ready(d)
        if found is None:
            raise ImageError(f"{d}: the unpacked kernel package has no vmlinuz-{version} or modules")
        return found


if __name__ == "__main__":
    print(prepare())  # `python tests/helpers/vm_image.py`: make the boot files now
