"""The memory runner: Intel MLC when it is available, otherwise the built-in engine (SPEC §6).

``MemoryRunner(engine)`` with ``engine`` one of ``auto``, ``mlc``, ``builtin``:

* MLC is looked for in ``MLC_PATH`` (a file, or a directory holding ``mlc``), then ``mlc`` on
  ``PATH``, then ``/opt/mlc/mlc``.  ``--engine mlc`` without it is :class:`ToolMissing` (exit 4).
* The built-in engine (``native/memlat``) is looked for in ``PROFILER_TUI_MEMLAT``, then the
  repository's ``native/memlat/build/memlat``, then ``memlat`` on ``PATH`` (the container installs
  it as ``/usr/local/bin/memlat``).
* ``auto`` takes MLC when found and usable (x86; on AMD only with huge pages reserved, see
  ANCHORS.md) and otherwise the built-in engine; the fallback is announced by
  :attr:`MemoryRunner.notice` (the CLI prints it) and recorded in run.json's tools and in every
  results line (``point.engine`` and ``engine``).

Batches: all delays of one (traffic, stride, buffer, duration, cpus) form one batch.  The built-in
engine measures a batch in one process (``-D d1,d2,…``).  MLC measures one delay per process
(``-d N``) unless the batch is exactly its 19 default delays, which one plain ``--loaded_latency``
sweeps.  Either way stdout is parsed as it prints (:class:`app.runners.mlc_parse.LineParser`) and
every row becomes a :class:`Sample` and its point's :class:`Result` at once, so a UI draws the
curve live.  The raw text of a point (``raw/NNNN-….txt``) is the output up to and including its
row: it parses on its own.

Command lines (``-b`` is KiB per thread; MLC's ``-t`` is whole seconds, so a fractional duration
is rounded up for MLC; ``cpus`` = latency CPU first, then the load CPUs)::

    mlc --idle_latency -l64 [-b KIB] [-c CPU]
    mlc --loaded_latency [-dN] -R|-WN -l64 [-b KIB] -tS [-c CPU -k LOAD_CPUS]
    memlat --idle_latency -l 64 [-b KIB] -t S [-k CPUS]
    memlat --loaded_latency -D d1,d2,… -R|-W N -l 64 [-b KIB] -t S [-k CPUS]
"""

from __future__ import annotations

import codecs
import math
import os
import platform
import shlex
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any, AsyncIterator, Hashable

from app.errors import ToolMissing, UsageError
from app.presets import ENGINES, MLC_DELAYS
from app.runners.base import Child, Context, Result, Sample
from app.runners.mlc_parse import LineParser, Row, idle_latency
from app.units import format_size_human

MLC_DEFAULT_PATH = "/opt/mlc/mlc"
REPO_ENGINE = Path(__file__).resolve().parent.parent.parent / "native" / "memlat" / "build" / "memlat"

MLC_HOWTO = ("install Intel MLC (https://www.intel.com/content/www/us/en/download/736633/) and put `mlc` on PATH, "
             f"set MLC_PATH to the binary, or mount it at {MLC_DEFAULT_PATH}; or use --engine builtin")
ENGINE_HOWTO = ("build it with `make setup` (or `make -C native/memlat`), or set PROFILER_TUI_MEMLAT to the "
                "memlat binary")


def _executable(path: str | os.PathLike[str]) -> bool:
    return os.path.isfile(path) and os.access(path, os.X_OK)


def find_mlc() -> tuple[str | None, str | None]:
    """(path, problem): MLC's binary, or None and why an explicit MLC_PATH was not usable."""
    env = os.environ.get("MLC_PATH")
    problem = None
    if env:
        candidate = os.path.join(env, "mlc") if os.path.isdir(env) else env
        if _executable(candidate):
            return os.path.abspath(candidate), None
        problem = f"MLC_PATH={env} is not an executable file"
    found = shutil.which("mlc")
    if found:
        return found, None
    if _executable(MLC_DEFAULT_PATH):
        return MLC_DEFAULT_PATH, None
    return None, problem


def mlc_unusable_reason() -> str | None:
    """Why MLC cannot measure on this machine (ANCHORS.md), or None: auto then prefers the built-in engine."""
    machine = platform.machine().lower()
    if machine not in ("x86_64", "amd64", "i386", "i686"):
        return f"MLC runs on x86 only and this machine is {machine}"
    try:
        cpuinfo = Path("/proc/cpuinfo").read_text()
        hugepages = int(Path("/proc/sys/vm/nr_hugepages").read_text().strip() or 0)
    except (OSError, ValueError):
        return None
    if "AuthenticAMD" in cpuinfo and hugepages == 0:
        return "MLC needs huge pages on AMD and /proc/sys/vm/nr_hugepages is 0"
    return None


def find_engine() -> tuple[str | None, str | None]:
    """(path, problem): the built-in engine's binary, or None and why PROFILER_TUI_MEMLAT was not usable."""
    env = os.environ.get("PROFILER_TUI_MEMLAT")
    if env:
        if _executable(env):
            return os.path.abspath(env), None
        return None, f"PROFILER_TUI_MEMLAT={env} is not an executable file"
    if _executable(REPO_ENGINE):
        return str(REPO_ENGINE), None
    found = shutil.which("memlat")
    if found:
        return found, None
    return None, None


def _cpu_list(spec: str) -> list[int]:
    cpus: list[int] = []
    for part in spec.split(","):
        lo, _, hi = part.partition("-")
        cpus.extend(range(int(lo), int(hi or lo) + 1))
    return cpus


def _kib(nbytes: int) -> int:
    return max(1, math.ceil(nbytes / 1024))


def _seconds_arg(s: float | int) -> str:
    return str(int(s)) if float(s).is_integer() else f"{s:g}"


def mem_available_bytes() -> int | None:
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


def buffers_per_thread(traffic: str | None) -> int:
    """Buffers one thread allocates: a read buffer, a second one for triad-like mixes, one for writes."""
    if traffic in (None, "R"):
        return 1
    if traffic in ("W10", "W11"):
        return 3
    return 2


def point_threads(point: dict[str, Any]) -> int:
    if point.get("mode") == "idle":
        return 1
    if point.get("cpus"):
        return len(_cpu_list(point["cpus"]))
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def check_memory(plan: list[dict[str, Any]], available: int | None = None) -> None:
    """UsageError when a point's buffers (buffer × threads × buffers per thread) exceed MemAvailable."""
    available = mem_available_bytes() if available is None else available
    if not available:
        return
    for point in plan:
        buf = point.get("buffer")
        if not buf:
            continue
        threads = point_threads(point)
        per = buffers_per_thread(point.get("traffic"))
        need = buf * threads * per
        if need > available:
            raise UsageError(
                f"buffer={format_size_human(buf)}: {threads} thread(s) × {per} buffer(s) of {format_size_human(buf)} "
                f"need {need / 2**30:.1f} GiB, more than the {available / 2**30:.1f} GiB available "
                "(MemAvailable in /proc/meminfo); choose a smaller buffer, e.g. --set buffer=256m.")


class MemoryRunner:
    kind = "memory"

    def __init__(self, engine: str = "auto") -> None:
        if engine not in ENGINES:
            raise UsageError(f"--engine {engine}: must be one of {', '.join(ENGINES)}.")
        self.requested = engine
        self.notice: str | None = None
        mlc, mlc_problem = find_mlc() if engine in ("auto", "mlc") else (None, None)
        if engine == "mlc":
            if mlc is None:
                why = f" ({mlc_problem})" if mlc_problem else ""
                raise ToolMissing(f"Intel MLC was not found{why}: {MLC_HOWTO}.")
            self.engine, self.binary = "mlc", mlc
            return
        unusable = mlc_unusable_reason() if mlc is not None else None
        if engine == "auto" and mlc is not None and unusable is None:
            self.engine, self.binary = "mlc", mlc
            return
        memlat, problem = find_engine()
        if memlat is None and engine == "auto" and mlc is not None:
            self.engine, self.binary = "mlc", mlc
            self.notice = f"Intel MLC at {mlc} may fail ({unusable}) and the built-in engine was not found: trying MLC."
            return
        if memlat is None:
            why = f" ({problem})" if problem else ""
            if engine == "builtin":
                raise ToolMissing(f"The built-in memory engine was not found{why}: {ENGINE_HOWTO}.")
            raise ToolMissing(f"Neither Intel MLC nor the built-in memory engine was found{why}: {ENGINE_HOWTO}; "
                              f"or {MLC_HOWTO.split('; or use')[0]}.")
        self.engine, self.binary = "builtin", memlat
        if engine == "auto" and mlc is not None:
            self.notice = (f"Intel MLC found at {mlc} but {unusable}: using the built-in memory engine {memlat} "
                           "(--engine mlc forces MLC).")
        elif engine == "auto":
            why = f" ({mlc_problem})" if mlc_problem else ""
            self.notice = (f"Intel MLC not found{why}: using the built-in memory engine {memlat} "
                           "(--engine auto falls back; install MLC or set MLC_PATH to use it).")

    # --- protocol ----------------------------------------------------------------------------

    def batch_key(self, point: dict[str, Any]) -> Hashable:
        if point.get("mode") == "idle":
            return ("idle", point.get("stride"), point.get("buffer"), point.get("duration"), point.get("cpus"))
        return ("loaded", point.get("traffic"), point.get("stride"), point.get("buffer"), point.get("duration"),
                point.get("cpus"))

    def tool_versions(self) -> dict[str, str]:
        tools = {"memory_engine": self.engine, "memory_engine_path": self.binary}
        if self.engine == "builtin":
            tools["memlat"] = engine_version(self.binary)
        else:
            # MLC prints its version in the banner of every run (recorded per point as engine_version);
            # it is not started here because MLC has no side-effect-free version query on every release.
            tools["mlc"] = self.binary
        if self.notice:
            tools["memory_engine_note"] = self.notice
        return tools

    def check_plan(self, plan: list[dict[str, Any]]) -> None:
        """Refuse, before anything starts, a plan whose buffers do not fit in free memory."""
        check_memory(plan)

    # --- command lines -------------------------------------------------------------------------

    def commands(self, points: list[dict[str, Any]]) -> list[list[str]]:
        """The processes that measure a batch of points (same batch_key), in order."""
        first = points[0]
        if first.get("mode") == "idle":
            return [self._idle_command(p) for p in points]
        delays = [p["delay"] for p in points]
        if self.engine == "builtin":
            return [self._engine_loaded(first, delays)]
        if sorted(delays) == sorted(MLC_DELAYS) and len(delays) == len(MLC_DELAYS):
            return [self._mlc_loaded(first, None)]
        return [self._mlc_loaded(first, d) for d in delays]

    def _idle_command(self, p: dict[str, Any]) -> list[str]:
        if self.engine == "mlc":
            cmd = [self.binary, "--idle_latency", f"-l{p['stride']}"]
            if p.get("buffer"):
                cmd.append(f"-b{_kib(p['buffer'])}")
            if p.get("cpus"):
                cmd.append(f"-c{_cpu_list(p['cpus'])[0]}")
            return cmd
        return [self.binary, "--idle_latency"] + self._engine_common(p)

    def _mlc_loaded(self, p: dict[str, Any], delay: int | None) -> list[str]:
        cmd = [self.binary, "--loaded_latency"]
        if delay is not None:
            cmd.append(f"-d{delay}")
        cmd.append("-R" if p["traffic"] == "R" else f"-W{p['traffic'][1:]}")
        cmd.append(f"-l{p['stride']}")
        if p.get("buffer"):
            cmd.append(f"-b{_kib(p['buffer'])}")
        cmd.append(f"-t{math.ceil(float(p['duration']))}")
        if p.get("cpus"):
            cpus = _cpu_list(p["cpus"])
            cmd.append(f"-c{cpus[0]}")
            if len(cpus) > 1:
                cmd.append("-k" + ",".join(str(c) for c in cpus[1:]))
        return cmd

    def _engine_loaded(self, p: dict[str, Any], delays: list[int]) -> list[str]:
        cmd = [self.binary, "--loaded_latency", "-D", ",".join(str(d) for d in delays)]
        cmd += ["-R"] if p["traffic"] == "R" else ["-W", p["traffic"][1:]]
        return cmd + self._engine_common(p)

    @staticmethod
    def _engine_common(p: dict[str, Any]) -> list[str]:
        """The built-in engine's stride, buffer, duration and CPU arguments."""
        cmd = ["-l", str(p["stride"])]
        if p.get("buffer"):
            cmd += ["-b", str(_kib(p["buffer"]))]
        cmd += ["-t", _seconds_arg(p["duration"])]
        if p.get("cpus"):
            cmd += ["-k", p["cpus"]]
        return cmd

    # --- running -------------------------------------------------------------------------------

    def _extra(self, point: dict[str, Any], cmd: list[str], parser: LineParser, job: str,
               wall: float) -> dict[str, Any]:
        extra: dict[str, Any] = {
            "point": {**point, "engine": self.engine},
            "engine": self.engine,
            "command": shlex.join(cmd),
            "job": job,
            "wall_s": round(wall, 3),
        }
        version = parser.header.get("version")
        if version:
            extra["engine_version"] = version
        sec = parser.sections[-1] if parser.sections else None
        params = {**parser.header, **(sec.params if sec else {})}
        for key in ("buffer_bytes", "write_buffer_bytes", "huge_pages", "delay_unit_ns"):
            if params.get(key) is not None:
                extra[key] = params[key]
        warnings = params.get("warnings")
        if warnings:
            extra["warnings"] = warnings
        return extra

    def _job(self, point: dict[str, Any]) -> str:
        if point.get("mode") == "idle":
            return f"{self.engine}-idle-l{point['stride']}"
        return f"{self.engine}-{point['traffic']}-l{point['stride']}-d{point['delay']}"

    async def run(self, items: list[tuple[int, dict[str, Any]]], ctx: Context) -> AsyncIterator[Sample | Result]:
        points = [p for _, p in items]
        cmds = self.commands(points)
        if points[0].get("mode") == "idle":
            for (index, point), cmd in zip(items, cmds):
                async for ev in self._run_process(cmd, {None: (index, point)}):
                    yield ev
            return
        by_delay = {p["delay"]: (i, p) for i, p in items}
        for cmd in cmds:
            if len(cmds) == 1:
                wanted = by_delay
            else:
                d = int(next(a for a in cmd if a.startswith("-d"))[2:])
                wanted = {d: by_delay[d]}
            async for ev in self._run_process(cmd, wanted):
                yield ev

    async def _run_process(self, cmd: list[str], wanted: dict[int | None, tuple[int, dict[str, Any]]]
                           ) -> AsyncIterator[Sample | Result]:
        """Run one process; ``wanted`` maps a delay (None for idle) to its (index, point)."""
        started = last = time.monotonic()
        try:
            child = await Child.start(*cmd)
        except OSError as e:
            for index, point in wanted.values():
                yield Result(index, {}, {}, {"engine": self.engine, "command": shlex.join(cmd)},
                             error=f"cannot start {cmd[0]}: {e}")
            return
        parser = LineParser()
        text: list[str] = []
        pending = ""
        decoder = codecs.getincrementaldecoder("utf-8")("replace")
        done: set[int | None] = set()
        proc = child.proc
        stderr = ""
        try:
            assert proc.stdout is not None
            while True:
                chunk = await proc.stdout.read(1 << 14)
                if not chunk:
                    break
                pending += decoder.decode(chunk)
                lines = pending.splitlines(keepends=True)
                pending = lines.pop() if lines and not lines[-1].endswith(("\n", "\r")) else ""
                for line in lines:  # line by line, so a point's raw text ends with its own row
                    text.append(line)
                    for row in parser.feed(line):
                        if row.delay not in wanted or row.delay in done or None in wanted:
                            continue
                        done.add(row.delay)
                        index, point = wanted[row.delay]
                        now = time.monotonic()
                        yield Sample(index, {**row.as_dict(), "engine": self.engine})
                        yield self._row_result(index, point, row, cmd, parser, "".join(text), now - last)
                        last = now
            pending += decoder.decode(b"", final=True)
            if pending:
                text.append(pending)
                parser.feed(pending)
            parser.close()
            stderr = await child.finish()
        finally:
            await child.close()
        output = "".join(text)
        if None in wanted:  # idle latency: one figure for the whole process
            index, point = wanted[None]
            lat = idle_latency(parser.sections)
            raw: dict[str, str | bytes] = {".txt": output}
            if stderr.strip():
                raw[".stderr.txt"] = stderr
            extra = self._extra(point, cmd, parser, self._job(point), time.monotonic() - started)
            if lat is None or proc.returncode:
                yield Result(index, {}, raw, extra, error=self._failure(cmd, proc.returncode, stderr, output, None))
            else:
                yield Sample(index, {"delay": None, "latency_ns": lat, "engine": self.engine})
                yield Result(index, {"latency_ns": lat}, raw, extra)
            return
        for delay, (index, point) in wanted.items():
            if delay in done:
                continue
            raw = {".txt": output}
            if stderr.strip():
                raw[".stderr.txt"] = stderr
            extra = self._extra(point, cmd, parser, self._job(point), time.monotonic() - last)
            yield Result(index, {}, raw, extra, error=self._failure(cmd, proc.returncode, stderr, output, delay))

    def _row_result(self, index: int, point: dict[str, Any], row: Row, cmd: list[str], parser: LineParser,
                    output: str, wall: float) -> Result:
        metrics: dict[str, Any] = {"latency_ns": row.latency_ns, "bandwidth_mbps": row.bandwidth_mbps}
        return Result(index, metrics, {".txt": output}, self._extra(point, cmd, parser, self._job(point), wall))

    def _failure(self, cmd: list[str], rc: int | None, stderr: str, output: str, delay: int | None) -> str:
        name = os.path.basename(cmd[0])
        lines = [ln.strip() for ln in stderr.splitlines() if ln.strip()]
        if not lines:  # MLC prints some errors on stdout
            lines = [ln.strip() for ln in output.splitlines()[-3:] if ln.strip() and not ln.startswith("*")]
        what = "no idle latency figure" if delay is None else f"no row for delay {delay}"
        status = f"exited with status {rc}" if rc else "finished"
        msg = f"{name} {status} and printed {what}"
        return f"{msg}: {'; '.join(lines[-3:])}" if lines else msg + "."


def engine_version(binary: str) -> str:
    try:
        out = subprocess.run([binary, "--version"], capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return "unknown"
    return (out.stdout or out.stderr).strip() or "unknown"

