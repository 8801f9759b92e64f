"""Running the small external tools the core asks about devices (lsblk, blkid, wipefs, nvme, smartctl).

A tool that is missing, cannot be started or outlives its timeout answers None instead of raising:
every caller treats "no answer" as "unknown" and goes on.  Headless: no UI library is imported here.
"""

from __future__ import annotations

import subprocess


def run_tool(argv: list[str], timeout: float) -> subprocess.CompletedProcess[str] | None:
    """``argv``'s exit code and text output (never raises for a non-zero exit), or None when it
    could not be run or took longer than ``timeout`` seconds."""
    try:
        return subprocess.run(argv, capture_output=True, text=True, timeout=timeout, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
