"""The children the tool starts: in their own session, and killed by the kernel when the tool dies.

The host layer's one process helper: the runners' measuring children (:func:`spawn`), the block tracer, the small
external tools (``app.host.external``), the fleet's ssh tunnels and the TUI's prerender child all use it.
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys


def die_with_parent() -> None:
    """A child's pre-exec hook (it runs between fork and exec): the kernel kills the child with SIGKILL when the
    tool's thread that started it ends, so no fio, ssh or tracer outlives a tool that was killed."""
    try:
        import ctypes

        PR_SET_PDEATHSIG = 1
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    except (OSError, AttributeError):
        pass


async def spawn(*argv: str, ignore_sigpipe: bool = False, cwd: str | os.PathLike[str] | None = None
                ) -> asyncio.subprocess.Process:
    """Start a measuring child: stdout/stderr piped, in its own session (we stop it, a terminal's ^C
    does not reach it half-way), and killed by the kernel if profiler-tui itself dies (SIGKILL, crash),
    so no fio or engine outlives the tool.  ``ignore_sigpipe``: the child keeps Python's SIG_IGN for SIGPIPE,
    so a write to a peer that went away fails with EPIPE instead of killing it (fio's client, whose server
    dropped mid-point, would otherwise die with every other host's result).  ``cwd``: the child's working
    directory (fio's is the held raw/, where it reads its job file by name)."""
    return await asyncio.create_subprocess_exec(
        *argv,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        stdin=asyncio.subprocess.DEVNULL,
        start_new_session=True,
        restore_signals=not ignore_sigpipe,
        cwd=cwd,
        preexec_fn=die_with_parent if sys.platform.startswith("linux") else None,
    )
