"""What the sweep engine expects of a runner, and the events runners yield.

A runner executes one or more consecutive plan points (a *batch*: points whose
``batch_key`` is equal, e.g. the delays of one MLC invocation) and yields, as they
happen, :class:`Sample` events (live figures) and one :class:`Result` per point.
Cancelling the consuming task must stop any child process in the runner's ``finally``.
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, AsyncIterator, Hashable, Protocol


@dataclass
class Sample:
    index: int  # plan index of the point being measured
    data: dict[str, Any]  # storage: t, iops, bw_bytes, lat_mean_ns, lat_p99_ns; memory: delay, latency_ns, bandwidth_mbps


@dataclass
class Result:
    index: int
    metrics: dict[str, Any]
    raw: dict[str, str | bytes] = field(default_factory=dict)  # file name suffix → content, written to raw/
    extra: dict[str, Any] = field(default_factory=dict)  # more fields for the results.jsonl line
    error: str | None = None  # set when the point failed: nothing is appended, resume retries it


@dataclass
class Context:
    target: str | None  # storage target (file or device); None for memory
    raw_dir: Path
    engine: str = "auto"  # memory engine choice
    plan_writes: bool = True  # False: a read-only plan, which never changes an existing target


class Runner(Protocol):
    kind: str

    def batch_key(self, point: dict[str, Any]) -> Hashable: ...

    def tool_versions(self) -> dict[str, str]: ...

    def run(self, items: list[tuple[int, dict[str, Any]]], ctx: Context) -> AsyncIterator[Sample | Result]: ...


def _die_with_parent() -> None:  # runs in the child between fork and exec
    try:
        import ctypes

        PR_SET_PDEATHSIG = 1
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    except (OSError, AttributeError):
        pass


async def spawn(*argv: str) -> asyncio.subprocess.Process:
    """Start a measuring child: stdout/stderr piped, in its own session (we stop it, a terminal's ^C
    does not reach it half-way), and killed by the kernel if profiler-tui itself dies (SIGKILL, crash),
    so no fio or engine outlives the tool."""
    return await asyncio.create_subprocess_exec(
        *argv,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        stdin=asyncio.subprocess.DEVNULL,
        start_new_session=True,
        preexec_fn=_die_with_parent if sys.platform.startswith("linux") else None,
    )


class Child:
    """A measuring child started with :func:`spawn`, its stderr collected in the background.

    Read ``proc.stdout`` as it arrives, then ``await finish()`` for the exit and the stderr text;
    ``close()`` in a ``finally`` stops the process when the reader leaves early (cancel, error).
    """

    def __init__(self, proc: asyncio.subprocess.Process) -> None:
        self.proc = proc
        self._stderr = asyncio.ensure_future(proc.stderr.read())  # type: ignore[union-attr]

    @classmethod
    async def start(cls, *argv: str) -> "Child":
        return cls(await spawn(*argv))

    async def finish(self) -> str:
        await self.proc.wait()
        return (await self._stderr).decode("utf-8", "replace")

    async def close(self) -> None:
        if self.proc.returncode is None:
            await stop_process(self.proc)
        if not self._stderr.done():
            self._stderr.cancel()


async def stop_process(proc: asyncio.subprocess.Process, grace: float = 3.0) -> None:
    """SIGINT the process group (fio writes its final result on SIGINT), then SIGKILL."""
    if proc.returncode is not None:
        return
    try:
        os.killpg(proc.pid, signal.SIGINT)
    except ProcessLookupError:
        return
    try:
        await asyncio.wait_for(proc.wait(), grace)
    except asyncio.TimeoutError:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        await proc.wait()
    # children that outlived the leader (fio forks one process per job)
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
