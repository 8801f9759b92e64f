"""The programs the tool starts as root (fio, MLC, the memory engine, lsblk, blkid, nvme, smartctl, ssh): never one
another user can change.

root runs them with root's rights.  A binary another user owns or can write, or one in a directory another user
can write (not sticky), would run that user's code as root: ``/opt/mlc`` mounted from someone's folder,
``MLC_PATH`` or ``PROFILER_TUI_MEMLAT`` pointing into another user's home, a writable directory on ``PATH``.  So a
program is used only when the file and every directory above it (the links on the way resolved) are changeable
by root or the tool's own user alone (:mod:`app.core.owners`); a sticky directory such as /tmp is fine, since nobody
else can replace what root owns in it.  The resolved path is what is started, so a second look-up along PATH
cannot pick another file.  Headless: no UI library.
"""

from __future__ import annotations

import os
import shutil
import stat

from app.core.owners import foreign


def untrusted(path: str) -> str | None:
    """Why another user could change the program at ``path`` (resolved), or None when only trusted users can."""
    real = os.path.realpath(path)
    try:
        st = os.stat(real)
    except OSError as e:
        return f"cannot be examined ({e.strerror})"
    if not stat.S_ISREG(st.st_mode):
        return "is not a regular file"
    why = foreign(st)  # the file itself: its owner, or a group/other write bit (sticky means nothing on a file)
    if why:
        return f"{real} {why}"
    parent = os.path.dirname(real)
    while True:
        try:
            why = foreign(os.stat(parent), sticky_ok=True)
        except OSError as e:
            return f"{parent} cannot be examined ({e.strerror})"
        if why:
            return f"{parent} {why}"
        if parent == os.path.dirname(parent):
            return None
        parent = os.path.dirname(parent)


def refusal(name: str, path: str, why: str) -> str:
    """The sentence that names a program root will not run, and why."""
    return f"{name} at {path}: {why}, so root would run what that user puts there; install it where only root can write"


def which_trusted(name: str) -> tuple[str | None, str | None]:
    """(resolved path, None) for ``name`` (a command on PATH, or a path) when only trusted users can change it;
    (None, why) when another user could; (None, None) when there is none."""
    found = shutil.which(name)
    if not found:
        return None, None
    why = untrusted(found)
    if why:
        return None, refusal(os.path.basename(name), found, why)
    return os.path.realpath(found), None
