"""What the sweep engine expects of a runner, and the events runners yield.

A runner executes one or more consecutive plan points (a *batch*: points whose
``batch_key`` is equal, e.g. the delays of one MLC invocation) and yields, as they
happen, :class:`Sample` events (live figures), :class:`Phase` events (what the tool is doing:
laying out the test file, ramp, measuring, the steady-state window) and one :class:`Result` per
point; what it did to the machine that the run must remember goes to run.json through
``Context.note`` (the sweep owns that file).
Cancelling the consuming task must stop any child process in the runner's ``finally``.
"""

from __future__ import annotations

import asyncio
import codecs
import os
import signal
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, AsyncGenerator, AsyncIterator, Callable, Hashable, Protocol, Sequence, TypeAlias

from app.host.process import spawn
from app.model.points import Kind, Point
from app.model.records import MemoryMetrics, Parts, StorageMetrics


@dataclass
class Sample:
    index: int  # plan index of the point being measured
    # storage: t, iops, bw_bytes, lat_mean_ns, lat_p99_ns; memory: delay, latency_ns, bandwidth_mbps
    data: dict[str, Any]
    # storage: the second's latency histograms per direction (app.stats.latmap's record), for the live heat map
    hist: dict[str, list[int]] | None = None


PHASES = ("layout", "ramp", "measuring", "steady")


@dataclass
class Phase:
    """What the measuring tool is doing in the point now (fio; the memory runner yields none):

    - ``layout``: laying out the test file before any I/O, ``done`` of ``total`` bytes (``done`` is None when
      the progress cannot be read);
    - ``ramp``: ``done`` of ``total`` seconds of ``ramp_time`` run, not measured;
    - ``measuring``: measuring (``done`` and ``total`` None);
    - ``steady``: measuring a point with a steady criterion, ``done`` of ``total`` seconds of fio's
      steady-state window collected.

    A runner yields one when the phase or its figure changes."""

    index: int  # plan index of the point; -1 for the preconditioning pass
    phase: str  # one of PHASES
    done: float | None = None
    total: float | None = None


@dataclass
class Result:
    """One point measured (or failed).  The runner gives its metrics and its parts of the results line; the
    session builds the line (app.model.records.ResultLine), so a runner cannot change the point, target or times."""

    index: int
    metrics: StorageMetrics | MemoryMetrics | None  # None: nothing was measured
    raw: dict[str, str | bytes] = field(default_factory=dict)  # file name suffix → content, written to raw/
    parts: Parts = field(default_factory=Parts)  # the runner's named parts of the results line
    error: str | None = None  # set when the point failed: nothing is appended, resume retries it
    files: dict[str, Path] = field(default_factory=dict)  # suffix → a raw file the runner wrote itself


Event: TypeAlias = Sample | Phase | Result


def _forget(key: str, entry: dict[str, object]) -> None:
    return None


@dataclass
class Context:
    target: str | None  # storage target (file or device); None for memory
    raw_dir: Path
    engine: str = "auto"  # memory engine choice
    plan_writes: bool = True  # False: a read-only plan, which never changes an existing target
    # note(key, entry): append entry to the list under key in run.json, for what a runner did to the machine
    # that the run must remember (huge pages reserved and given back); the sweep owns run.json and writes it.
    # Safe to call in a runner's finally, also while the run is being cancelled.
    note: Callable[[str, dict[str, object]], None] = _forget
    # plan index → the load an open-loop point offers (app.plan.procedure.OfferedLoad), set by the sweep before the
    # point runs: a share of X_max is known only once the plan's closed-loop points were measured
    offered: dict[int, Any] = field(default_factory=dict)


class Runner(Protocol):
    """What the sweep engine needs of a runner.  Runners subclass this explicitly, so the methods with
    a body here are defaults they may leave alone."""

    kind: Kind
    notice: str | None = None  # one sentence for the user before a run (e.g. which engine was chosen, and why)

    def batch_key(self, point: Point) -> Hashable:
        """Points with equal keys, consecutive in the plan, are measured by one ``run`` call."""
        ...

    def tool_versions(self) -> dict[str, str]: ...

    def check_plan(self, plan: Sequence[Point]) -> None:
        """Raise UsageError for a plan this runner cannot measure here, before anything is created."""
        return None

    def run(self, items: list[tuple[int, Point]], ctx: Context) -> AsyncGenerator[Event, None]:
        """Measure a batch: yield Samples as they come and one Result per point; stop any child process in
        a ``finally`` when the consumer leaves early."""
        ...


class Child:
    """A measuring child started with :func:`spawn`, its stderr collected in the background.

    Read stdout with ``chunks()`` or ``lines()`` as it arrives, then ``await finish()`` for the exit and
    the stderr text;
    ``close()`` in a ``finally`` stops the process when the reader leaves early (cancel, error).
    """

    def __init__(self, proc: asyncio.subprocess.Process) -> None:
        self.proc = proc
        self._stderr = asyncio.ensure_future(proc.stderr.read())  # type: ignore[union-attr]

    @classmethod
    async def start(cls, *argv: str, ignore_sigpipe: bool = False,
                    cwd: str | os.PathLike[str] | None = None) -> "Child":
        return cls(await spawn(*argv, ignore_sigpipe=ignore_sigpipe, cwd=cwd))

    async def chunks(self, size: int = 1 << 16) -> AsyncIterator[bytes]:
        """The child's stdout as it arrives, until it closes."""
        assert self.proc.stdout is not None
        while chunk := await self.proc.stdout.read(size):
            yield chunk

    async def chunks_ticking(self, every_s: float, ticking: Callable[[], bool],
                             size: int = 1 << 16) -> AsyncGenerator[bytes | None, None]:
        """``chunks()``, and ``None`` each time ``every_s`` seconds pass without output while ``ticking()`` is
        true: the caller polls something between the child's outputs (fio laying out a file prints nothing
        for seconds).  The pending read is cancelled when the generator is closed: no task outlives it."""
        assert self.proc.stdout is not None
        read: asyncio.Future[bytes] | None = None
        try:
            while True:
                if read is None and not ticking():
                    chunk = await self.proc.stdout.read(size)  # as chunks() does
                else:
                    if read is None:
                        read = asyncio.ensure_future(self.proc.stdout.read(size))
                    done, _ = await asyncio.wait({read}, timeout=every_s if ticking() else None)
                    if not done:
                        yield None
                        continue
                    chunk, read = read.result(), None
                if not chunk:
                    return
                yield chunk
        finally:
            if read is not None and not read.done():
                read.cancel()
                await asyncio.wait({read})  # gone before the generator is

    async def lines(self, max_chars: int) -> AsyncIterator[str]:
        """The child's stdout decoded (UTF-8, errors replaced), one complete line at a time with its line
        end ("\\n", "\\r\\n" or "\\r"); a last line without one at the end.  A line longer than
        ``max_chars`` is cut there and given a "\\n"; the rest of it, up to its end, is dropped."""
        decoder = codecs.getincrementaldecoder("utf-8")("replace")
        pending = ""
        skipping = False  # the current line passed max_chars: the rest of it is dropped
        async for chunk in self.chunks(1 << 14):
            pending += decoder.decode(chunk)
            lines = pending.splitlines(keepends=True)
            pending = lines.pop() if lines and not lines[-1].endswith(("\n", "\r")) else ""
            if skipping:  # the rest of a line cut earlier: dropped up to its end
                if lines:
                    lines.pop(0)
                    skipping = False
                else:
                    pending = ""
            if len(pending) > max_chars:
                lines.append(pending[:max_chars] + "\n")
                pending, skipping = "", True
            for line in lines:
                yield line[:max_chars] + "\n" if len(line) > max_chars + 2 else line
        pending += decoder.decode(b"", final=True)
        if pending and not skipping:
            yield pending[:max_chars]

    async def finish(self) -> str:
        await self.proc.wait()
        return (await self._stderr).decode("utf-8", "replace")

    def stderr_if_done(self) -> str:
        """The stderr text of a child that was stopped, if its reader has reached the end; else ""."""
        task = self._stderr
        if task.done() and not task.cancelled() and task.exception() is None:
            return task.result().decode("utf-8", "replace")
        return ""

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
