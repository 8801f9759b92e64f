"""Whose files and directories root may use: the one rule of who counts as "another user".

root (or the user the tool runs as, or under ``sudo`` the invoking user) may use a directory, a link or a program
only when no other user can change it: another user's file, a file or directory another user can write, or a
non-sticky directory they can write would let that user choose what root reads, writes or runs.  The results
directory (app.store.results), the settings file (app.host.config), the replay, and the programs the tool starts
(app.host.programs) all ask here.  Headless: no UI library, no other module of the tool.
"""

from __future__ import annotations

import os
import stat

from app.core import settings


def trusted_uids() -> frozenset[int]:
    """Whose directories and links root may use: root's, this process's user's and, under ``sudo``, the
    invoking user's (``SUDO_UID``, set by sudo), who can already run anything as root — so ``sudo profiler-tui
    run …`` from one's own home directory writes ``./results`` there."""
    uids = {0, os.geteuid()}
    sudo = settings.sudo_uid()
    if os.geteuid() == 0 and sudo is not None:
        uids.add(sudo)
    return frozenset(uids)


def foreign(st: os.stat_result, *, sticky_ok: bool = False) -> str | None:
    """Why another user can change what is in the directory ``st`` describes (None when only the
    :func:`trusted_uids` can): its owner, or its group/other write bit (allowed with the sticky bit when
    ``sticky_ok``)."""
    if st.st_uid not in trusted_uids():
        return f"is owned by another user (uid {st.st_uid})"
    if st.st_mode & (stat.S_IWGRP | stat.S_IWOTH) and not (sticky_ok and st.st_mode & stat.S_ISVTX):
        return "is writable by other users" if st.st_mode & stat.S_IWOTH else "is writable by its group"
    return None
