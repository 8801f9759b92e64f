"""Target safety: may this plan run on this target?  (The rules as a table: docs/safety.md.)

A target is a regular file (created if absent) or a block device.  For block
devices the rules are:

* a plan that **writes** is refused when the device, any of its partitions, its
  parent disk or any of its holders is mounted, is swap, holds the root
  filesystem, is a member of an LVM/RAID/dm holder, backs a loop device, is
  opened exclusively by the kernel (``O_EXCL`` open fails with EBUSY — this
  also catches mounts in other mount namespaces, e.g. the host's when we run
  in a container), or is read-only;
* a write plan on a device that carries a filesystem or partition-table
  signature needs ``--allow-destructive``.  Signatures are probed on the device
  itself (``blkid -p``, then ``wipefs -n``): without a udev database lsblk's
  FSTYPE/PTTYPE are empty and prove nothing.  A device whose signatures cannot
  be probed is treated as carrying one;
* every plan on a block device — read-only plans included, mounted or not —
  needs a plain confirmation (``--yes``).  ``--allow-destructive`` is the
  stronger confirmation and implies it.

:func:`classify` answers without any confirmation: its verdict is an
:class:`app.model.points.Verdict` (``ok``, ``needs --allow-destructive`` or ``refused``)
with the reasons, and ``Verdict.confirm`` says whether ``--yes`` is still needed.
For a block device the checks are the named rules of :data:`REFUSAL_RULES` and
:data:`DECISION_RULES`, evaluated in order.  :func:`check_target`
applies the user's confirmations and raises :class:`app.core.errors.SafetyError`
(exit 3) with one or two plain sentences when the plan may not run.

The check reads /proc and /sys directly and spawns at most two short probes
(only for write plans), so the sweep engine can call it before every point.
This module is headless: it imports no UI library.
"""

from __future__ import annotations

import errno
import os
import shutil
import stat
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from functools import cached_property
from typing import Any, Literal

from app.core.errors import SafetyError
from app.core.sanitize import clean_line
from app.host.external import run_tool
from app.model import points
from app.store.results import TOO_MANY_LINKS, foreign, foreign_above, foreign_link

# the verdicts under their old names (callers and tests compare with these)
OK = points.Verdict.OK
NEEDS_DESTRUCTIVE = points.Verdict.NEEDS_DESTRUCTIVE
REFUSED = points.Verdict.REFUSED

SYS_BLOCK = "/sys/class/block"
UDEV_DATA = "/run/udev/data"  # absent in most containers: then only the probes speak
PROBE_TIMEOUT = 10.0


@dataclass
class Verdict:
    target: str
    kind: str  # "file", "block" or "other" (what the target is, not a plan's Kind)
    verdict: points.Verdict
    reasons: list[str] = field(default_factory=list)
    # True when the plan additionally needs a plain confirmation (--yes): every
    # plan on a block device.  Not part of ``allowed``: classify() knows nothing
    # of the user's confirmations; check_target() applies them.
    confirm: bool = False

    @property
    def allowed(self) -> bool:
        return self.verdict == OK

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


# --------------------------------------------------------------------------- helpers


def resolve(target: str) -> str:
    """The absolute path of ``target`` with every symlink resolved."""
    return os.path.realpath(os.path.expanduser(str(target)))


def _read(path: str, default: str = "") -> str:
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return f.read().strip()
    except OSError:
        return default


def _listdir(path: str) -> list[str]:
    try:
        return sorted(os.listdir(path))
    except OSError:
        return []


def _unescape(field_: str) -> str:
    """Undo the octal escapes of /proc/self/mountinfo and /proc/swaps (\\040 = space)."""
    if "\\" not in field_:
        return field_
    out, i = [], 0
    while i < len(field_):
        if field_[i] == "\\" and i + 3 < len(field_) and field_[i + 1 : i + 4].isdigit():
            out.append(chr(int(field_[i + 1 : i + 4], 8)))
            i += 4
        else:
            out.append(field_[i])
            i += 1
    return "".join(out)


def _devnum(spec: str) -> int | None:
    try:
        major, minor = spec.split(":")
        return os.makedev(int(major), int(minor))
    except (ValueError, TypeError):
        return None


def _rdev(path: str) -> int | None:
    """The device number of a block-device path, None when it is not one."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_rdev if stat.S_ISBLK(st.st_mode) else None


def dev_path(name: str) -> str:
    """/dev path of a kernel block-device name (dm-0 → /dev/dm-0, cciss!c0d0 → /dev/cciss/c0d0)."""
    return "/dev/" + name.replace("!", "/")


# --------------------------------------------------------------------------- system state


class SystemState:
    """One snapshot of mounts, swaps, the root device and loop backing files."""

    def __init__(self) -> None:
        self.mounts: dict[int, list[str]] = {}  # devnum → mount points
        self.swaps: dict[int, str] = {}  # devnum of a swap block device → its name
        self.swap_files: set[tuple[int, int]] = set()  # (st_dev, st_ino) of swap files
        self.root_devs: set[int] = set()
        self.loop_backing: dict[object, str] = {}  # rdev or (st_dev, st_ino) → loop name
        self._read_mounts()
        self._read_swaps()
        self._read_root()
        self._read_loops()

    def _add_mount(self, dev: int | None, mountpoint: str) -> None:
        if dev is None or os.major(dev) == 0:
            return
        points = self.mounts.setdefault(dev, [])
        if mountpoint not in points:
            points.append(mountpoint)

    def _read_mounts(self) -> None:
        text = _read("/proc/self/mountinfo")
        if text:
            for line in text.splitlines():
                parts = line.split()
                if len(parts) < 5 or "-" not in parts:
                    continue
                mountpoint = _unescape(parts[4])
                self._add_mount(_devnum(parts[2]), mountpoint)
                sep = parts.index("-")
                if len(parts) > sep + 2 and parts[sep + 2].startswith("/dev/"):
                    # btrfs and friends report an anonymous st_dev: use the source too.
                    self._add_mount(_rdev(_unescape(parts[sep + 2])), mountpoint)
            return
        for line in _read("/proc/mounts").splitlines():  # no mountinfo: older kernels
            parts = line.split()
            if len(parts) >= 2 and parts[0].startswith("/dev/"):
                self._add_mount(_rdev(_unescape(parts[0])), _unescape(parts[1]))

    def _read_swaps(self) -> None:
        for line in _read("/proc/swaps").splitlines()[1:]:
            parts = line.split()
            if not parts:
                continue
            name = _unescape(parts[0])
            try:
                st = os.stat(name)
            except OSError:
                continue
            if stat.S_ISBLK(st.st_mode):
                self.swaps[st.st_rdev] = name
            else:
                self.swap_files.add((st.st_dev, st.st_ino))

    def _read_root(self) -> None:
        try:
            dev = os.stat("/").st_dev
        except OSError:
            return
        if os.major(dev) != 0:
            self.root_devs.add(dev)
        for dev_, mount_points in self.mounts.items():
            if "/" in mount_points:
                self.root_devs.add(dev_)

    def _read_loops(self) -> None:
        for name in _listdir("/sys/block"):
            if not name.startswith("loop"):
                continue
            backing = _read(f"/sys/block/{name}/loop/backing_file")
            if not backing:
                continue
            backing = backing.removesuffix(" (deleted)")
            try:
                st = os.stat(backing)
            except OSError:
                continue
            key: object = st.st_rdev if stat.S_ISBLK(st.st_mode) else (st.st_dev, st.st_ino)
            self.loop_backing[key] = name


# --------------------------------------------------------------------------- sysfs topology


def sys_name(path: str) -> str | None:
    """Kernel name (``loop0p1``) of a block-device path, from its device number."""
    dev = _rdev(path)
    if dev is None:
        return None
    link = f"/sys/dev/block/{os.major(dev)}:{os.minor(dev)}"
    real = os.path.realpath(link)
    if not os.path.isdir(real):
        return None
    return os.path.basename(real)


def is_partition(name: str) -> bool:
    return os.path.exists(f"{SYS_BLOCK}/{name}/partition")


def parent_disk(name: str) -> str | None:
    """The whole disk a partition belongs to (None for a whole disk)."""
    if not is_partition(name):
        return None
    return os.path.basename(os.path.dirname(os.path.realpath(f"{SYS_BLOCK}/{name}")))


def partitions(name: str) -> list[str]:
    base = os.path.realpath(f"{SYS_BLOCK}/{name}")
    return [d for d in _listdir(base) if os.path.exists(f"{base}/{d}/partition")]


def holders(name: str) -> list[str]:
    return _listdir(f"{SYS_BLOCK}/{name}/holders")


def size_bytes(name: str) -> int:
    try:
        return int(_read(f"{SYS_BLOCK}/{name}/size", "0")) * 512
    except ValueError:
        return 0


def is_read_only(name: str) -> bool:
    return _read(f"{SYS_BLOCK}/{name}/ro", "0") == "1"


def _devnum_of(name: str) -> int | None:
    return _devnum(_read(f"{SYS_BLOCK}/{name}/dev"))


# --------------------------------------------------------------------------- signatures


@dataclass
class Probe:
    """What a signature probe found on the device itself."""

    fstype: str | None = None  # blkid TYPE (ext4, swap, LVM2_member, ...)
    pttype: str | None = None  # partition-table type (dos, gpt)
    usage: str | None = None
    signatures: list[str] = field(default_factory=list)  # human descriptions
    tool: str | None = None  # "blkid" / "wipefs"
    error: str | None = None  # why the probe could not run


_USAGE = {"filesystem": "filesystem", "raid": "RAID/LVM member", "crypto": "encrypted volume", "other": "signature"}


def _first_line(text: str) -> str:
    """A tool's first non-empty line of stderr, cleaned of control sequences (it is shown as a reason)."""
    return next((clean_line(ln) for ln in text.splitlines() if clean_line(ln)), "")


def _probe_blkid(path: str) -> Probe | None:
    exe = shutil.which("blkid")
    if not exe:
        return None
    cp = run_tool([exe, "-p", "-o", "export", path], PROBE_TIMEOUT)
    if cp is None:
        return Probe(tool="blkid", error="blkid could not be run")
    values = {}
    for line in cp.stdout.splitlines():
        key, sep, value = line.partition("=")
        if sep:
            values[key.strip()] = clean_line(value, 100)
    probe = Probe(tool="blkid", fstype=values.get("TYPE"), pttype=values.get("PTTYPE"), usage=values.get("USAGE"))
    if probe.fstype:
        probe.signatures.append(f"{probe.fstype} {_USAGE.get(probe.usage or '', 'signature')}")
    if probe.pttype:
        probe.signatures.append(f"{probe.pttype} partition table")
    if cp.returncode == 8:  # ambivalent: several signatures
        probe.signatures.append("several signatures (blkid: ambivalent result)")
    elif cp.returncode not in (0, 2):
        probe.error = _first_line(cp.stderr) or f"blkid exited with {cp.returncode}"
    elif cp.returncode == 2 and cp.stderr.strip():  # 2 is also "nothing found"; stderr tells an error
        probe.error = _first_line(cp.stderr)
    return probe


def _probe_wipefs(path: str) -> Probe | None:
    exe = shutil.which("wipefs")
    if not exe:
        return None
    cp = run_tool([exe, "--no-act", "--noheadings", "--output", "TYPE,OFFSET", path], PROBE_TIMEOUT)
    if cp is None:
        return Probe(tool="wipefs", error="wipefs could not be run")
    if cp.returncode != 0:
        return Probe(tool="wipefs", error=_first_line(cp.stderr) or f"wipefs exited with {cp.returncode}")
    probe = Probe(tool="wipefs")
    for line in cp.stdout.splitlines():
        parts = clean_line(line).split()
        if parts:
            probe.signatures.append(f"{parts[0]} at offset {parts[1] if len(parts) > 1 else '?'}")
            probe.fstype = probe.fstype or parts[0]
    return probe


def udev_signatures(name: str) -> list[str]:
    """What the udev database (lsblk's FSTYPE/PTTYPE source) records for ``name``, when it exists."""
    dev = _devnum_of(name)
    if dev is None:
        return []
    text = _read(f"{UDEV_DATA}/b{os.major(dev)}:{os.minor(dev)}")
    values = dict(line[2:].split("=", 1) for line in text.splitlines() if line.startswith("E:") and "=" in line)
    out = []
    if values.get("ID_FS_TYPE"):
        out.append(f"{values['ID_FS_TYPE']} {_USAGE.get(values.get('ID_FS_USAGE', ''), 'signature')} (udev)")
    if values.get("ID_PART_TABLE_TYPE"):
        out.append(f"{values['ID_PART_TABLE_TYPE']} partition table (udev)")
    return out


def probe_signatures(path: str, thorough: bool = True) -> Probe:
    """Probe ``path`` for filesystem / partition-table signatures (blkid -p, then wipefs -n).

    With ``thorough`` wipefs also runs when blkid saw nothing (it lists every
    signature, e.g. a backup GPT header at the end of the disk)."""
    probe = _probe_blkid(path)
    if probe is None or probe.error or (thorough and not probe.signatures):
        second = _probe_wipefs(path)
        if second is not None and (probe is None or probe.error or second.signatures):
            if probe is not None and not probe.error:
                second.fstype = probe.fstype or second.fstype
                second.pttype = probe.pttype
            probe = second
    if probe is None:
        probe = Probe(error="neither blkid nor wipefs is installed")
    return probe


# --------------------------------------------------------------------------- classification


def _label(name: str, target_name: str, relation: str = "") -> str:
    path = dev_path(name)
    return path if name == target_name or not relation else f"{path} ({relation})"


@dataclass
class DeviceFacts:
    """How one device of a target's family (itself, its disk, its partitions, their holders) is in use."""

    root: bool = False  # holds the root filesystem
    mounts: list[str] = field(default_factory=list)
    swap: bool = False
    backs_loop: str | None = None  # the loop device (kernel name) it backs
    holders: list[str] = field(default_factory=list)  # kernel names of its direct holders (dm, md, LVM)
    read_only: bool = False


def device_facts(name: str, state: SystemState) -> DeviceFacts:
    dev = _devnum_of(name)
    facts = DeviceFacts(holders=holders(name), read_only=is_read_only(name))
    if dev is not None:
        facts.root, facts.mounts = dev in state.root_devs, list(state.mounts.get(dev, []))
        facts.swap, facts.backs_loop = dev in state.swaps, state.loop_backing.get(dev)
    return facts


def _in_use(d: DeviceFacts, label: str) -> list[str]:
    """Blocking reasons that a device itself is in use."""
    out: list[str] = []
    if d.root:
        out.append(f"{label} holds the root filesystem")
    if d.mounts:
        shown = ", ".join(clean_line(m) for m in d.mounts[:3]) + (" …" if len(d.mounts) > 3 else "")
        out.append(f"{label} is mounted at {shown}")
    if d.swap:
        out.append(f"{label} is in use as swap")
    if d.backs_loop:
        out.append(f"{label} backs the loop device {dev_path(d.backs_loop)}")
    return out


def _all_holders(b: "_Block", name: str, seen: set[str]) -> Iterator[str]:
    """Every holder of ``name``, holders of holders included (iteratively: a host's answer may nest deep)."""
    stack = [name]
    while stack:
        for h in b.device(stack.pop()).holders:
            if h not in seen:
                seen.add(h)
                yield h
                stack.append(h)


def _holder_reasons(b: "_Block", name: str, label: str) -> list[str]:
    """Blocking reasons that ``name`` is a member of a holder (dm, md, LVM), and
    whether those holders (recursively) are themselves in use."""
    hs = b.device(name).holders
    if not hs:
        return []
    out = [f"{label} is a member of {', '.join(dev_path(h) for h in hs)} (an LVM, RAID or device-mapper holder)"]
    for h in _all_holders(b, name, {name}):
        out += _in_use(b.device(h), f"{dev_path(h)} (holding {dev_path(name)})")
    return out


def _exclusive_open(path: str) -> OSError | None:
    """Try an exclusive read-only open; the kernel answers EBUSY when the device is
    mounted, swap or held anywhere — in any mount namespace."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_EXCL | os.O_CLOEXEC | os.O_NONBLOCK)
    except OSError as e:
        return e
    os.close(fd)
    return None


@dataclass
class FileFacts:
    """What the rules read about a target that is not a block device: a regular file (or a new one), or
    something refused outright (``kind`` "other", ``refusal`` says why)."""

    path: str
    kind: Literal["file", "other"]
    exists: bool = False
    size: int = 0
    swap: bool = False  # an active swap file
    backs_loop: str | None = None  # the loop device (kernel name) it backs
    loop: "BlockFacts | None" = None  # that device's facts (a fleet host's answer carries them)
    refusal: str | None = None


SHM = "/dev/shm/"


def file_facts(path: str, state: SystemState | None = None) -> FileFacts:
    try:
        st = os.stat(path)
    except FileNotFoundError:
        # a device's name mistyped must not become a regular file in /dev; /dev/shm is a tmpfs for files (and
        # `--target /dev/shm` puts the test file in a new directory of the tool's own there)
        if (path == "/dev" or path.startswith("/dev/")) and not path.startswith(SHM):
            from app.host.container import missing_device_hint

            hint = missing_device_hint(path)
            return FileFacts(path, "other", refusal=(
                f"{path} does not exist, and a missing path under /dev is never created as a file "
                + (f"({hint})" if hint else "(check the device name with `profiler-tui devices`)")))
        return FileFacts(path, "file")
    except OSError as e:
        return FileFacts(path, "other", refusal=f"{path} cannot be examined: {e.strerror}")
    if stat.S_ISDIR(st.st_mode):
        return FileFacts(path, "other", True, refusal=f"{path} is a directory; name a file inside it or a block device")
    if stat.S_ISCHR(st.st_mode):
        return FileFacts(path, "other", True, refusal=(
            f"{path} is a character device, not a block device (for NVMe use the namespace, e.g. /dev/nvme0n1)"))
    if not stat.S_ISREG(st.st_mode):
        return FileFacts(path, "other", True, refusal=f"{path} is neither a regular file nor a block device")
    state = state or SystemState()
    key = (st.st_dev, st.st_ino)
    return FileFacts(path, "file", True, st.st_size, key in state.swap_files, state.loop_backing.get(key))


def judge_file(f: FileFacts, writes: bool, state: SystemState | None = None) -> Verdict:
    """The rules for a target that is not a block device, applied to its facts."""
    path = f.path
    if f.kind == "other":
        return Verdict(path, "other", REFUSED, [f.refusal or f"{path} is neither a regular file nor a block device"])
    if not f.exists:
        return Verdict(path, "file", OK, [f"{path} is a new regular file (created to the plan's size)"])
    loop = f.backs_loop
    reasons: list[str] = []
    if f.swap:
        reasons.append(f"{path} is an active swap file")
    if loop:
        reasons.append(f"{path} backs the loop device {dev_path(loop)}"
                       + ("; writing it would corrupt that device" if writes else ""))
    if reasons:
        # a file the kernel uses as a device gets the verdicts of that device: never written, and read
        # only with the same confirmation (--yes) as the device itself
        if writes:
            return Verdict(path, "file", REFUSED, reasons)
        if loop:
            device = judge_block(GivenBlock(f.loop, False)) if f.loop else classify_block(dev_path(loop), False, state)
            if device.verdict == REFUSED:
                return Verdict(path, "file", REFUSED, reasons + device.reasons, confirm=True)
            reasons += device.reasons[1:]
        return Verdict(path, "file", OK, [
            f"a read-only plan reads {path} in place and never writes it; it needs confirmation (--yes) like "
            "the device it backs"] + reasons, confirm=True)
    if writes and f.size:
        return Verdict(path, "file", OK, [f"{path} is a regular file; a write plan overwrites its contents"])
    if f.size:
        return Verdict(path, "file", OK, [f"{path} is a regular file; a read-only plan reads what it holds "
                                          "and never writes, grows or truncates it"])
    return Verdict(path, "file", OK, [f"{path} is a regular file"])


def _classify_file(path: str, writes: bool, state: SystemState | None) -> Verdict:
    return judge_file(file_facts(path, state), writes, state)


def check_read_only_size(target: str, block: int) -> None:
    """SafetyError when an existing regular file is too small for a read-only plan: such a plan reads
    the file as it is (a read-only plan never grows a file), so it must hold at least one block."""
    path = resolve(target)
    try:
        st = os.stat(path)
    except OSError:
        return  # absent: the tool creates it
    if stat.S_ISREG(st.st_mode) and st.st_size < block:
        raise SafetyError(
            f"Refusing to read {path}: it holds {st.st_size} bytes, less than one {block}-byte block, and a "
            "read-only plan never grows or writes a file it did not create; name a larger file, a smaller bs, "
            "or a new file (then the tool creates it).")


class _Block:
    """The facts about one block device that the rules read, each looked up once and only when a rule
    asks (the signature probe, in particular, runs only when a write plan gets that far).  A fleet host's
    device is a :class:`GivenBlock`: the same facts, read from the host's answer."""

    def __init__(self, path: str, name: str, writes: bool, state: SystemState | None, probe: Probe | None) -> None:
        self.path, self.name, self.writes, self._state = path, name, writes, state
        self._given_probe = probe
        self._devices: dict[str, DeviceFacts] = {}
        self.blockers: list[str] = []  # the refusal rules' reasons so far

    def device(self, name: str) -> DeviceFacts:
        if name not in self._devices:
            self._devices[name] = device_facts(name, self.state)
        return self._devices[name]

    @property
    def state(self) -> SystemState:
        if self._state is None:
            self._state = SystemState()
        return self._state

    @cached_property
    def size(self) -> int:
        return size_bytes(self.name)

    @cached_property
    def parent(self) -> str | None:
        return parent_disk(self.name)

    @cached_property
    def parts(self) -> list[str]:
        return [] if self.parent else partitions(self.name)

    @cached_property
    def root_siblings(self) -> list[str]:
        """The other partitions of its disk that hold the root filesystem."""
        if not self.parent:
            return []
        return [p for p in partitions(self.parent) if p != self.name and _devnum_of(p) in self.state.root_devs]

    @cached_property
    def exclusive(self) -> tuple[str, str]:
        """("ok" | "busy" | "no-medium" | "error", the system's words) of an exclusive open."""
        err = _exclusive_open(self.path)
        if err is None:
            return "ok", ""
        if err.errno == errno.EBUSY:
            return "busy", err.strerror or ""
        if err.errno in (errno.ENOMEDIUM, errno.ENXIO, errno.ENODEV):
            return "no-medium", err.strerror or ""
        return "error", err.strerror or ""

    @cached_property
    def probe(self) -> Probe:
        return self._given_probe or probe_signatures(self.path)

    @cached_property
    def udev(self) -> list[str]:
        return udev_signatures(self.name)

    @cached_property
    def notes(self) -> list[str]:
        """Said after every verdict's reasons; they change no verdict."""
        if not self.writes or not self.root_siblings:
            return []
        return [f"{self.path} shares its disk with the root filesystem ({dev_path(self.root_siblings[0])})"]

    @cached_property
    def signatures(self) -> list[str]:
        sigs = list(self.probe.signatures)
        sigs += [u for u in self.udev if u.strip() and u.split()[0] not in " ".join(self.probe.signatures)]
        if self.parts:
            sigs.append(f"partitions {', '.join(dev_path(p) for p in self.parts)}")
        return sigs

    def partition_label(self, part: str) -> str:
        return f"{dev_path(part)} (a partition of {self.path})"

    def family(self) -> list[str]:
        """The kernel names whose facts the rules may read: itself, its disk, partitions and all their holders."""
        names = [self.name] + ([self.parent] if self.parent else []) + self.parts
        seen = set(names)
        for n in list(names):
            names += list(_all_holders(self, n, seen))
        return names


@dataclass
class BlockFacts:
    """Everything :data:`REFUSAL_RULES` and :data:`DECISION_RULES` read about a block device, as one value: what
    a fleet host reports (``devices --json --target``) and the controller judges with its own rules."""

    path: str
    name: str
    size: int
    parent: str | None
    parts: list[str]
    devices: dict[str, DeviceFacts]
    exclusive: tuple[str, str]
    probe: Probe
    udev: list[str]
    root_siblings: list[str]


def block_facts(path: str, state: SystemState | None = None) -> BlockFacts | None:
    """The facts of the block device ``path`` (every one gathered, the signature probe too); None when the
    kernel does not list it in /sys."""
    name = sys_name(path)
    if name is None:
        return None
    b = _Block(path, name, True, state or SystemState(), None)
    return BlockFacts(path, name, b.size, b.parent, b.parts, {n: b.device(n) for n in b.family()}, b.exclusive,
                      b.probe, b.udev, b.root_siblings)


class GivenBlock(_Block):
    """A block device known only by its facts (a fleet host's answer): the rules read these, nothing here."""

    def __init__(self, facts: BlockFacts, writes: bool) -> None:
        super().__init__(facts.path, facts.name, writes, None, facts.probe)
        self.facts = facts
        for attr in ("size", "parent", "parts", "exclusive", "udev", "root_siblings"):
            self.__dict__[attr] = getattr(facts, attr)  # fills the cached properties: nothing is looked up

    def device(self, name: str) -> DeviceFacts:
        return self.facts.devices.get(name) or DeviceFacts()


@dataclass(frozen=True)
class BlockRule:
    """One check of :func:`classify_block`: its ``name``, the plans it applies to, the ``verdict`` it
    gives and ``check``, which returns the reasons for that verdict ([] when the rule does not fire)."""

    name: str
    plans: Literal["write", "read", "any"]
    verdict: points.Verdict
    check: Callable[[_Block], list[str]]

    def applies(self, writes: bool) -> bool:
        return self.plans == "any" or (self.plans == "write") == writes


def _rule_empty(b: _Block) -> list[str]:
    return [f"{b.path} has size 0 (no medium, or an unconfigured device)"] if b.size == 0 else []


def _rule_in_use(b: _Block) -> list[str]:
    return _in_use(b.device(b.name), b.path) + _holder_reasons(b, b.name, b.path)


def _rule_partition_in_use(b: _Block) -> list[str]:
    out: list[str] = []
    for part in b.parts:
        label = b.partition_label(part)
        out += _in_use(b.device(part), label) + _holder_reasons(b, part, label)
    return out


def _rule_disk_in_use(b: _Block) -> list[str]:
    if not b.parent:
        return []
    label = f"{dev_path(b.parent)} (the disk holding {b.path})"
    out = _in_use(b.device(b.parent), label) + _holder_reasons(b, b.parent, label)
    if b.device(b.parent).read_only and not b.device(b.name).read_only:
        out.append(f"{label} is read-only")
    return out


def _rule_read_only(b: _Block) -> list[str]:
    return [f"{b.path} is read-only"] if b.device(b.name).read_only else []


def _rule_exclusive_open(b: _Block) -> list[str]:
    """The kernel's own answer: an exclusive open fails while anything holds the device.  Busy counts
    only against a write plan that no earlier rule refused (it would repeat their reason)."""
    state, words = b.exclusive
    if state == "ok":
        return []
    if state == "busy":
        if b.writes and not b.blockers:
            return [f"{b.path} is in use: the kernel refuses an exclusive open (mounted, swap "
                    "or held by another device or program, perhaps outside this container)"]
        return []
    if state == "no-medium":
        return [f"{b.path} has no medium ({words})"]
    return [f"{b.path} cannot be opened: {words}"]


def _rule_signature(b: _Block) -> list[str]:
    if not b.signatures:
        return []
    via = f", found by {b.probe.tool}" if b.probe.signatures and b.probe.tool else ""
    return [f"{b.path} carries a filesystem or partition-table signature ({'; '.join(b.signatures)}{via}) "
            "that a write plan destroys"]


def _rule_unprobed(b: _Block) -> list[str]:
    if not b.probe.error:
        return []
    return [f"{b.path} could not be probed for signatures ({b.probe.error}), so it cannot be shown blank"]


def _rule_blank(b: _Block) -> list[str]:
    return [f"{b.path} is not mounted, not swap, not held and carries no filesystem or partition-table "
            "signature; a write plan needs confirmation (--yes)"]


def _rule_read(b: _Block) -> list[str]:
    in_use = _in_use(b.device(b.name), b.path)
    for part in b.parts:
        in_use += _in_use(b.device(part), b.partition_label(part))
    return [f"a read-only plan never writes {b.path}; it needs confirmation (--yes)"] + [
        f"{r}; reads run regardless" for r in in_use]


# Every refusal rule that applies runs, in this order; the reasons of all that fire make one
# ``refused`` verdict.
REFUSAL_RULES: tuple[BlockRule, ...] = (
    BlockRule("empty device", "any", REFUSED, _rule_empty),
    BlockRule("device in use or held", "write", REFUSED, _rule_in_use),
    BlockRule("a partition in use or held", "write", REFUSED, _rule_partition_in_use),
    BlockRule("its disk in use, held or read-only", "write", REFUSED, _rule_disk_in_use),
    BlockRule("read-only device", "write", REFUSED, _rule_read_only),
    BlockRule("exclusive open refused", "any", REFUSED, _rule_exclusive_open),
)
# When nothing refused: the first of these that applies and fires gives the verdict.
DECISION_RULES: tuple[BlockRule, ...] = (
    BlockRule("signature found", "write", NEEDS_DESTRUCTIVE, _rule_signature),
    BlockRule("signatures not probed", "write", NEEDS_DESTRUCTIVE, _rule_unprobed),
    BlockRule("blank device", "write", OK, _rule_blank),
    BlockRule("read-only plan", "read", OK, _rule_read),
)


def classify_block(path: str, writes: bool, state: SystemState | None = None,
                   probe: Probe | None = None) -> Verdict:
    """Verdict for a block device: :data:`REFUSAL_RULES`, then :data:`DECISION_RULES`.  ``state`` and
    ``probe`` let a caller that classifies many devices (``devices``) share one snapshot and one probe."""
    name = sys_name(path)
    if name is None:
        from app.host.container import unlisted_device_hint

        hint = unlisted_device_hint(path)
        return Verdict(path, "block", REFUSED, [f"{path} is a block device the kernel does not list in /sys"
                                                + (f" ({hint})" if hint else "")])
    return judge_block(_Block(path, name, writes, state or SystemState(), probe))


def judge_block(b: _Block) -> Verdict:
    """The rules applied to one device's facts (looked up here, or given by a fleet host)."""
    for rule in REFUSAL_RULES:
        if rule.applies(b.writes):
            b.blockers += rule.check(b)
    if b.blockers:
        return Verdict(b.path, "block", REFUSED, b.blockers + b.notes, confirm=True)
    for rule in DECISION_RULES:
        if rule.applies(b.writes):
            reasons = rule.check(b)
            if reasons:
                return Verdict(b.path, "block", rule.verdict, reasons + b.notes, confirm=True)
    raise AssertionError("the last decision rule for each plan always fires")


# --------------------------------------------------------------------------- who else can steer the path
#
# root's fio opens the target by name, and a file it lays out (a new one, or one smaller than the job) it first
# removes and then creates again, following a symbolic link put there meanwhile.  So no one but root (or the user
# the tool runs as, or under sudo the user who ran it: app.store.results.trusted_uids) may own a link on the way to the
# target or be able to change the directory it is in; docs/safety.md, "Regular files".

STEERS = "another user could choose what root's fio opens"


def shared_sticky(path: str) -> bool:
    """``path`` is a directory of root's (or this user's) that others may write but not rename or remove in:
    sticky and group- or world-writable, like /tmp."""
    try:
        st = os.stat(path)
    except OSError:
        return False
    return stat.S_ISDIR(st.st_mode) and foreign(st) is not None and foreign(st, sticky_ok=True) is None


def link_reasons(target: str) -> list[str]:
    """Why a symbolic link on the way to ``target`` (the target itself included) steers root: another user's."""
    found = foreign_link(os.path.abspath(os.path.expanduser(target)))
    if found is None:
        return []
    where, why = found
    return [f"{where} {why}" + ("" if why == TOO_MANY_LINKS else ", so that user chooses what root's fio opens")]


def _nearest_dir(real: str) -> tuple[str, os.stat_result | None, bool]:
    """The directory ``real`` is in, or the nearest one above it that exists (the tool makes the rest, 0755, its
    own): (its path, its status or None when it cannot be examined, whether it is ``real``'s own directory)."""
    here, direct = os.path.dirname(real), True
    while True:
        try:
            return here, os.lstat(here), direct
        except FileNotFoundError:
            if here == os.path.dirname(here):
                return here, None, direct
            here, direct = os.path.dirname(here), False
        except OSError:
            return here, None, direct


def place_reasons(real: str, writes: bool = True) -> list[str]:
    """Why another user could change what root's fio opens at the resolved path ``real``: the directory it is in
    (or will be created in) is another user's or writable by others (a sticky one like /tmp too, for a plan that
    writes or a file not there yet: a name in it is free until root's fio takes it), a directory above it is (sticky
    ones are fine there: nothing root made in them can be renamed by others), or the file that is there is another
    user's or writable by others.  A block device's node is root's (group disk): its owner and mode are not
    judged."""
    here, st, direct = _nearest_dir(real)
    if st is None:
        return [f"{here} cannot be examined"]
    if not stat.S_ISDIR(st.st_mode):
        return []  # nothing can be created there: the checks of the target say so
    why = foreign(st, sticky_ok=not direct)
    if why and foreign(st, sticky_ok=True) is None and not writes and _trusted_file(real):
        why = None  # read with --readonly, never laid out, and in a sticky directory no one else can replace it
    if why and foreign(st, sticky_ok=True) is None:  # sticky and shared, like /tmp
        return [f"{here} {why} (a sticky directory like /tmp), and fio removes and creates again, by name, a file it "
                f"lays out: another user could put a symbolic link at {real} first; name a file in a directory only "
                f"root can write, or {here} itself (the tool then makes its own directory in it)"]
    if why:
        return [f"{here} {why}, so {STEERS} (a symbolic link put at {real})"]
    try:
        found = foreign_above(here)
    except OSError as e:
        return [f"{e.filename} cannot be examined ({e.strerror})"]
    if found:
        return [f"{found[0]} {found[1]}, so {STEERS}"]
    try:
        st = os.lstat(real)
    except OSError:
        return []
    why = foreign(st) if stat.S_ISREG(st.st_mode) else None
    return [f"{real} {why}: root's fio neither writes nor reads a file another user can change"] if why else []


def _trusted_file(real: str) -> bool:
    """``real`` is a regular file (not a link) that only trusted users can change."""
    try:
        st = os.lstat(real)
    except OSError:
        return False
    return stat.S_ISREG(st.st_mode) and foreign(st) is None


def trust_reasons(target: str, writes: bool = True) -> list[str]:
    """Why another user could steer what root's fio opens for ``target`` in a plan that ``writes`` or only reads
    ([] when no one can): a link of theirs on the way (:func:`link_reasons`), or the place it resolves to
    (:func:`place_reasons`)."""
    return link_reasons(target) or place_reasons(resolve(target), writes)


def check_trust(target: str, writes: bool, *, links_only: bool = False) -> None:
    """SafetyError (exit 3) when another user could steer what root's fio opens for ``target``
    (:func:`trust_reasons`); ``links_only``: only a link on the way, checked before a target is resolved (its
    resolved path names no link)."""
    reasons = link_reasons(target) if links_only else trust_reasons(target, writes)
    if reasons:
        confirm(Verdict(os.path.abspath(os.path.expanduser(target)), "file", REFUSED, reasons), writes)


def classify(target: str, writes: bool) -> Verdict:
    """The verdict for running a plan (``writes`` or read-only) on ``target``,
    before any confirmation by the user.  Every verdict has reasons."""
    path = resolve(target)
    try:
        mode = os.stat(path).st_mode
    except OSError:
        mode = 0
    steered = trust_reasons(target, writes)
    if steered:  # named as given: a link of another user's is not followed, not even in a sentence
        kind = "block" if stat.S_ISBLK(mode) else "file" if not mode or stat.S_ISREG(mode) else "other"
        return Verdict(os.path.abspath(os.path.expanduser(target)), kind, REFUSED, steered, confirm=kind == "block")
    if stat.S_ISBLK(mode):
        return classify_block(path, writes)
    return _classify_file(path, writes, None)


def check_target(target: str, writes: bool, *, yes: bool = False, allow_destructive: bool = False) -> Verdict:
    """Raise SafetyError (exit 3) when the plan may not run on ``target``; else return the verdict.

    ``allow_destructive`` confirms destroying a signature and implies ``yes``."""
    return confirm(classify(target, writes), writes, yes=yes, allow_destructive=allow_destructive)


def confirm(v: Verdict, writes: bool, *, yes: bool = False, allow_destructive: bool = False) -> Verdict:
    """Apply the user's confirmations to a verdict (:func:`check_target`; a fleet host's verdict comes from
    that host): SafetyError (exit 3) when the plan may not run, else the verdict with how it was confirmed."""
    what = "write to" if writes else "read"
    if v.verdict == REFUSED:
        raise SafetyError(f"Refusing to {what} {v.target}: {'; '.join(v.reasons)}.")
    if v.verdict == NEEDS_DESTRUCTIVE:
        if not allow_destructive:
            raise SafetyError(f"Refusing to write to {v.target}: {v.reasons[0]}. "
                              "Pass --allow-destructive to destroy it.")
        return Verdict(v.target, v.kind, OK, v.reasons + ["destruction confirmed with --allow-destructive"], True)
    if v.confirm and not (yes or allow_destructive):
        what = f"{v.target} is a block device" if v.kind == "block" else "; ".join(v.reasons[1:2]) or v.target
        raise SafetyError(f"{what}: pass --yes to confirm the {'write' if writes else 'read-only'} run on it.")
    if v.confirm:
        how = "confirmed with --yes" if yes else "confirmed with --allow-destructive"
        return Verdict(v.target, v.kind, OK, v.reasons + [how], True)
    return v
