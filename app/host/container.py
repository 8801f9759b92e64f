"""Where the tool runs: in a container or not, what it can see of the host's block devices, and whether
its results outlive it.

The image is meant to run as ``docker run --rm -it --privileged -v /dev:/dev -v "$PWD/results:/results"``.
Each flag has a failure that would otherwise be silent or misleading:

* without ``--privileged`` / ``-v /dev:/dev`` the kernel's block devices are listed in /sys/block but
  have no node in /dev (or the node cannot be opened): the tool says which flags to add instead of
  "no block devices";
* without the ``/results`` volume the results are written into the container's own layer and vanish
  with ``--rm``: the tool warns before a run and on the TUI's first screen.

Headless: no UI library is imported here.  Every probe takes its roots as arguments so tests can fake
a container from the outside.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

from app.core import settings

RUN_FLAGS = '--privileged -v /dev:/dev'
RESULTS_FLAG = '-v "$PWD/results:/results"'
# the host folder mounted on the results root, as the launcher names it (-e PROFILER_TUI_HOST_RESULTS="$PWD/results"):
# from inside, a bind mount's source on the host cannot be known
HOST_RESULTS_ENV = settings.HOST_RESULTS.name
# filesystems a container engine builds its root from: writes there live in the container's own layer
LAYERED_FS = ("overlay", "fuse-overlayfs", "fuse.fuse-overlayfs", "aufs", "vfs")


def container_engine(root: str = "/") -> str | None:
    """``podman``, ``docker``, another engine's name, or None when not in a container."""
    r = Path(root)
    marker = "podman" if (r / "run/.containerenv").exists() else "docker" if (r / ".dockerenv").exists() else None
    if marker:
        # a machine booted from a disk image that was built in a container keeps the marker file: its
        # root is then a filesystem on a block device, not a container engine's layered root
        return None if _root_on_a_disk(r) else marker
    env = settings.container() if root == "/" else None
    if env:
        return env
    try:
        cgroup = (r / "proc/1/cgroup").read_text(errors="replace")
    except OSError:
        return None
    for marker, name in (("libpod", "podman"), ("docker", "docker"), ("kubepods", "kubernetes"),
                         ("containerd", "containerd")):
        if marker in cgroup:
            return name
    return None


def _root_on_a_disk(root: Path) -> bool:
    try:
        mountinfo = (root / "proc/self/mountinfo").read_text(errors="replace")
    except OSError:
        return False  # cannot tell: the marker stands
    on_disk = False
    for line in mountinfo.splitlines():  # the last mount on / is the one in effect
        parts = line.split()
        if len(parts) > 4 and parts[4] == "/" and "-" in parts[5:]:
            sep = parts.index("-", 5)
            fstype = parts[sep + 1] if len(parts) > sep + 1 else ""
            source = parts[sep + 2] if len(parts) > sep + 2 else ""
            on_disk = source.startswith("/dev/") and fstype not in LAYERED_FS
    return on_disk


def _kernel_block_devices(sys_block: str) -> list[str]:
    try:
        names = sorted(os.listdir(sys_block))
    except OSError:
        return []
    out = []
    for name in names:
        try:
            size = int(Path(sys_block, name, "size").read_text().strip() or 0)
        except (OSError, ValueError):
            size = 0
        if size > 0:
            out.append(name)
    return out


def device_access_problem(root: str = "/", engine: str | None = None) -> str | None:
    """One sentence when this container cannot reach the host's block devices, saying which flag to add;
    None outside a container or when the devices are reachable."""
    engine = engine if engine is not None else container_engine(root)
    if engine is None:
        return None
    names = _kernel_block_devices(os.path.join(root, "sys/block"))
    if not names:
        return None
    dev = os.path.join(root, "dev")
    nodes = [n for n in names if os.path.exists(os.path.join(dev, n.replace("!", "/")))]
    if not nodes:
        shown = ", ".join(names[:4]) + (" …" if len(names) > 4 else "")
        return (f"This {engine} container cannot see the host's block devices ({shown} are in /sys/block but "
                f"not in /dev): run it with {RUN_FLAGS}.")
    denied = []
    for n in nodes:
        path = os.path.join(dev, n.replace("!", "/"))
        try:
            if not stat.S_ISBLK(os.stat(path).st_mode):
                continue
            fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
            os.close(fd)
            return None  # at least one device can be opened: access is there
        except OSError as e:
            if e.errno in (errno.EPERM, errno.EACCES):
                denied.append(n)
    if denied:
        return (f"This {engine} container may not open the host's block devices ({', '.join(denied[:4])}: "
                f"permission denied by the container's device policy): run it with {RUN_FLAGS}.")
    return None


def missing_device_hint(path: str, root: str = "/", engine: str | None = None) -> str | None:
    """For a /dev path that does not exist: the flag to add when the kernel has that device but this
    container has no node for it."""
    engine = engine if engine is not None else container_engine(root)
    if engine is None or not path.startswith("/dev/"):
        return None
    name = os.path.basename(path)
    if (os.path.isdir(os.path.join(root, "sys/class/block", name))
            or os.path.isdir(os.path.join(root, "sys/block", name))):
        return f"the kernel has {name}, but this {engine} container has no {path}: run it with {RUN_FLAGS}"
    return None


def unlisted_device_hint(path: str, root: str = "/", engine: str | None = None) -> str | None:
    """For a block-device node whose device the kernel's /sys does not list (as in a container started
    without the flags): the flags to add, as ``devices`` says them; None outside a container."""
    engine = engine if engine is not None else container_engine(root)
    if engine is None:
        return None
    return f"this {engine} container does not reach the host's block devices such as {path}: run it with {RUN_FLAGS}"


def shown_path(path: str | os.PathLike[str], engine: str | None = "detect") -> str:
    """A results path as its reader finds it: in a container whose launcher named the host folder mounted
    on the results root ($PROFILER_TUI_HOST_RESULTS), the container's path and the host's
    ("/results/quick-… (on the host: /home/me/results/quick-…)"); else the path alone."""
    host, root = settings.host_results(), settings.results_root_set()
    engine = container_engine() if engine == "detect" and host and root else engine
    if not host or not root or engine is None:
        return str(path)
    try:
        inside = Path(os.path.abspath(path)).relative_to(os.path.abspath(root))
    except ValueError:
        return str(path)  # an --out elsewhere: its host path is not known
    return f"{path} (on the host: {Path(host) / inside})"


def _mount_of(path: str, mountinfo: str) -> tuple[str, str]:
    """(mount point, filesystem type) of the mount ``path`` lies on (longest matching mount point)."""
    best, fstype = "", ""
    for line in mountinfo.splitlines():
        parts = line.split()
        if len(parts) < 5 or "-" not in parts[5:]:
            continue
        mp = parts[4].replace("\\040", " ")
        sep = parts.index("-", 5)
        if (path == mp or path.startswith(mp.rstrip("/") + "/")) and len(mp) >= len(best):
            best, fstype = mp, parts[sep + 1] if len(parts) > sep + 1 else ""
    return best or "/", fstype


def results_volume_warning(results_dir: str | os.PathLike[str], root: str = "/", engine: str | None = None,
                           mountinfo: str | None = None) -> str | None:
    """One sentence when results would be written into the container's own layer (lost with ``--rm``):
    in a container, on its root filesystem, and that root is an engine's layered filesystem (overlay …)
    rather than a disk (a VM built from a container image also has /.dockerenv)."""
    engine = engine if engine is not None else container_engine(root)
    if engine is None:
        return None
    if mountinfo is None:
        try:
            mountinfo = Path(root, "proc/self/mountinfo").read_text(errors="replace")
        except OSError:
            return None
    path = os.path.realpath(os.path.abspath(results_dir))
    mount, fstype = _mount_of(path, mountinfo)
    if mount != "/" or fstype not in LAYERED_FS:
        return None  # a volume, a bind mount or a real disk: it outlives the container
    return (f"Results in {path} will be lost when the container exits: add {RESULTS_FLAG} to the {engine} run "
            "command.")


def unwritable_hint(path: str | os.PathLike[str], err: OSError, engine: str | None = "detect",
                    choose: str = "with --out") -> str:
    """What to change when the results directory cannot be written (read-only volume, wrong owner); ``choose``: how
    another directory is chosen outside a container (the CLI's ``--out``; the TUI's environment variable)."""
    engine = container_engine() if engine == "detect" else engine
    where = f"{path}"
    if err.errno == errno.EROFS:
        fix = ("mount the results volume read-write (no ':ro' after -v …:/results)" if engine
               else f"choose a directory on a writable filesystem {choose}")
        return f"{where} is on a read-only filesystem: {fix}."
    if err.errno in (errno.EACCES, errno.EPERM):
        uid = os.geteuid()
        fix = (f"run the container as a user who owns the results folder (it runs as uid {uid}: --user), "
               "or chown/chmod that folder on the host" if engine
               else f"choose a directory you may write {choose}, or fix its permissions")
        return f"{where} is not writable by uid {uid}: {fix}."
    if err.errno == errno.ENOSPC:
        return f"{where}: no space left on the device: free space or choose another --out directory."
    return f"{where} cannot be written ({err.strerror}): choose another --out directory."


def results_dir_problem(results_dir: str | os.PathLike[str], engine: str | None = "detect",
                        choose: str = "with --out") -> str | None:
    """One sentence when no run could write its results under ``results_dir``: the nearest existing directory on
    the way is on a read-only filesystem (a volume mounted ``:ro``) or not writable by this user; None otherwise.
    The checks ``check_dir_path`` makes when a run starts, made before one is asked for (the TUI's first screen)."""
    path = Path(os.path.abspath(results_dir))
    p = path
    while not os.path.lexists(p) and p.parent != p:
        p = p.parent
    try:
        read_only = bool(os.statvfs(p).f_flag & os.ST_RDONLY)
    except OSError:
        return None  # said when a run starts, by the run's own checks
    if read_only:
        code = errno.EROFS
    elif os.path.isdir(p) and not os.access(p, os.W_OK | os.X_OK):
        code = errno.EACCES
    else:
        return None
    return unwritable_hint(path, OSError(code, os.strerror(code)), engine, choose)


def environment_warnings(results_dir: str | os.PathLike[str]) -> list[str]:
    """What the first screen says about the container it runs in: missing device access, results that
    would vanish with the container (empty outside a container or when all is well)."""
    out = [device_access_problem(), results_volume_warning(results_dir)]
    return [w for w in out if w]
