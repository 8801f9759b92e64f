"""Free space, checked before a run starts: the test file fio will lay out and the results must fit.

fio lays a test file out to ``size`` before it measures; on a volume too small for it, fio fills the
volume, and then run.json, the raw outputs and even fio's own message cannot be written.  So a run (and
a resume) is refused up front, in one sentence naming the path and the sizes, when

* the target is a file the run will create or extend (a new file, the tool's scratch file, or an
  existing file a write plan may grow to ``size``) and its filesystem lacks the missing bytes, or
* the results directory's filesystem lacks the room for run.json, results.jsonl and the raw outputs
  (``RESULTS_BASE`` plus ``RESULTS_PER_POINT`` per point to run),

both summed when the target and the results share a filesystem.  Space is counted as ``f_bavail`` (what
an unprivileged writer may use).  ENOSPC that still happens (another writer fills the volume during the
run) is handled by the sweep itself.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path
from typing import Sequence

from app.core import settings
from app.core.errors import UsageError
from app.core.units import format_size_human
from app.model.points import Point, StoragePoint

RESULTS_BASE = 4 << 20  # run.json, results.jsonl, report headroom
RESULTS_PER_POINT = 256 << 10  # a storage point's raw json+ (latency bins), job file and stderr: ~30-150 KiB


def _existing_dir(path: Path) -> Path:
    """The nearest existing ancestor of ``path`` (where a directory to be created will live)."""
    p = path.absolute()
    while not p.exists() and p != p.parent:
        p = p.parent
    return p


def free_bytes(path: Path) -> tuple[int, int]:
    """(bytes available, device id) of the filesystem holding ``path`` or its nearest existing ancestor.
    A read-only filesystem is a UsageError saying so (no free space could help it)."""
    where = _existing_dir(path)
    st = os.statvfs(where)
    if st.f_flag & os.ST_RDONLY:
        from app.host.container import unwritable_hint

        raise UsageError(unwritable_hint(path, OSError(errno.EROFS, os.strerror(errno.EROFS))))
    return st.f_bavail * st.f_frsize, os.stat(where).st_dev


def _human(n: int) -> str:
    for unit, mult in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= mult:
            return f"{n / mult:.1f} {unit}"
    return format_size_human(n)


def _largest_size(plan: Sequence[Point]) -> int:
    return max((p.size for p in plan if isinstance(p, StoragePoint)), default=0)


def target_growth(target: str, plan: Sequence[Point], writes: bool) -> int:
    """Bytes fio may add to a file target: up to the plan's largest ``size`` (block devices: none; an
    existing file under a read-only plan: none, it is read as it is)."""
    try:
        st = os.stat(target)
    except FileNotFoundError:
        return _largest_size(plan)
    except OSError:
        return 0
    if not stat.S_ISREG(st.st_mode) or not writes:
        return 0
    # an existing file occupies its allocated blocks already; a sparse one may still need the rest
    allocated = st.st_blocks * 512
    return max(0, _largest_size(plan) - allocated)


def check_free_space(out_dir: str | os.PathLike[str], target: str | None, plan: Sequence[Point],
                     pending: int, writes: bool) -> None:
    """UsageError (exit 2) when the results directory or a file target's filesystem is too small.
    ``PROFILER_TUI_NO_SPACE_CHECK=1`` skips the check (a filesystem whose free space statvfs misreports;
    the tests use it to provoke ENOSPC during a run)."""
    if settings.no_space_check():
        return
    out = Path(out_dir)
    needs: dict[int, list[tuple[str, int]]] = {}
    avail: dict[int, int] = {}
    try:
        free, dev = free_bytes(out)
    except OSError:
        return  # cannot tell: the run's own errors will speak
    avail[dev] = free
    needs.setdefault(dev, []).append((f"the results in {out}", RESULTS_BASE + RESULTS_PER_POINT * pending))
    if target is not None:
        grow = target_growth(target, plan, writes)
        if grow:
            try:
                tfree, tdev = free_bytes(Path(target).parent)
            except OSError:
                tfree, tdev = None, None
            if tdev is not None and tfree is not None:
                avail.setdefault(tdev, tfree)
                needs.setdefault(tdev, []).append((f"the test file {target}", grow))
    for dev, items in needs.items():
        total = sum(n for _, n in items)
        if total > avail[dev]:
            what = " and ".join(f"{name} ({_human(n)})" for name, n in items)
            raise UsageError(
                f"Not enough free space: {what} need {_human(total)}, but their filesystem has "
                f"{_human(avail[dev])} free; free space, choose a smaller size (e.g. --set size=…), or "
                "another --out/--target.")
