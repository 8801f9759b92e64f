"""The sweep engine: plans a run, executes its points in order, records every result.

The CLI and the TUI drive the same :class:`Session`::

    session = new_session(preset, target=..., out=..., yes=True)
    async for event in session.events():
        ...   # RunStarted, PointStarted, Phase, Sample, PointDone, PointFailed, RunFinished

Cancelling the task that iterates ``events()`` stops the child process (the runner's
``finally``), marks the run ``interrupted`` and keeps every completed point.

A session holds its results directory's lock (:class:`app.store.lock.DirLock`) from ``new_session`` /
``load_session`` until ``events()`` ends (or ``close()``): one process per directory.  When the
results directory cannot be written (full filesystem, I/O error) or fio finds no space for the test
file, ``events()`` stops the run, records it ``failed`` with the reason, removes a test file the tool
created, and raises :class:`RunFailed` (exit 1) with one sentence.
"""

from __future__ import annotations

import asyncio
import errno
import json
import os
import secrets
import signal
import stat
import threading
import time
from contextlib import aclosing, contextmanager, suppress
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, AsyncGenerator, Callable, Container, Hashable, Iterator, Mapping, Sequence, cast

from app.core import settings
from app.core.errors import ENDING_SIGNALS, ProfilerError, UsageError
from app.host import audit, envinfo, safety, telemetry, topology, tune
from app.host.devstat import poll_problem
from app.host.link import link_of
from app.host.space import check_free_space
from app.host.topology import cpu_list_text, device_cpus
from app.model import runmeta
from app.model.keys import NODE
from app.model.points import Kind, MemoryPoint, Point, RunStatus, StoragePoint, point_from_dict
from app.model.records import JSONObject, JSONValue, MemoryMetrics, ResultLine, StorageMetrics, line_json
from app.model.runmeta import RunMeta
from app.plan.presets import (
    ENGINES,
    KINDS,
    Preset,
    check_track,
    estimate_point_seconds,
    estimate_seconds,
    plan_writes,
    point_key,
    procedure_entry,
    table_key,
    validate_plan,
    validate_procedure,
)
from app.plan.procedure import (
    AUTO,
    Measured,
    Procedure,
    check_precondition,
    check_shares,
    measured_from_line,
    needs_xmax,
    offered_load,
    precondition_estimate_s,
    run_order,
    skips,
    with_order_seed,
)
from app.runners import get_runner
from app.runners.base import Context, Phase, Result, Runner, Sample
from app.runners.fio import check_target_name, precondition_job
from app.stats.validity import FLEET_NOT_AUDITED, NO_LINK, TargetFacts, point_checks, point_flags, target_facts
from app.store.lock import DirLock
from app.store.results import (
    SCHEMA_VERSION,
    ResultsDir,
    check_dir_path,
    foreign,
    make_dirs,
    new_run_dir,
    now_iso,
    remove_dirs,
    trusted_uids,
)

if TYPE_CHECKING:
    from app.fleet.runner import Fleet

DEFAULT_TARGET_NAME = "profiler-tui.testfile"
SCRATCH_DIR_PREFIX = "profiler-tui-"  # the directory the tool makes for its test file in a sticky one like /tmp
TUNING_WAIT_S = 10.0  # an interrupted run waits this long at most for the thread making --tune's changes


# --- events ---------------------------------------------------------------------------------


@dataclass
class RunStarted:
    total: int
    pending: int
    estimate_s: float
    meta: RunMeta
    path: Path


@dataclass
class PointStarted:
    index: int
    point: Point
    done: int  # points completed before this one (including earlier sessions)
    total: int
    remaining_s: float  # estimated time left including this point


@dataclass
class PointDone:
    index: int
    record: dict[str, Any]  # the line appended to results.jsonl (its "point" is the point's JSON table)
    done: int
    total: int

    @property
    def point(self) -> Point:
        """The measured point, typed (a memory point names the engine that measured it)."""
        return point_from_dict(self.record["kind"], self.record["point"])


@dataclass
class PointFailed:
    index: int
    point: Point
    error: str
    host: str | None = None  # a fleet run's host whose point failed


@dataclass
class PointSkipped:
    """A point the procedure's rules decided not to measure (adaptive axis, rounds already steady)."""

    index: int
    point: Point
    reason: str


@dataclass
class PreconditionStarted:
    mode: str  # sequential | workload
    description: str  # one line: what is written
    estimate_s: float


@dataclass
class PreconditionProgress:
    data: dict[str, Any]  # a live sample of the preconditioning job (t, iops, bw_bytes, steady …)


@dataclass
class PreconditionDone:
    record: dict[str, Any]  # what run.json's "precondition" holds


@dataclass
class RunFinished:
    status: RunStatus  # complete | partial (some points failed) | interrupted | failed
    done: int
    total: int
    failed: int
    path: Path


#: what ``Session.events()`` yields (a runner's own events are :data:`app.runners.base.Event`)
SessionEvent = (RunStarted | PointStarted | Phase | Sample | PointDone | PointFailed | PointSkipped
                | PreconditionStarted | PreconditionProgress | PreconditionDone | RunFinished)


class RunFailed(ProfilerError):
    """The run cannot go on (results directory not writable, no space for the test file); exit 1."""


class _PreconditionFailed(Exception):
    """The preconditioning pass failed: the points would measure a device in an unknown state."""


class _NoSpace(Exception):
    """fio reported no space left for the test file: every further point would fail the same way."""


NO_SPACE = os.strerror(errno.ENOSPC)


WRITE_ERRORS = (errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EIO, errno.EFBIG)


def _remove_files(ev: Result) -> None:
    """Remove the files a runner streamed for a point whose record could not be written."""
    for path in ev.files.values():
        try:
            os.unlink(path)
        except OSError:
            pass


def _os_reason(e: OSError, where: Path | None = None) -> str:
    """One clause naming the file: "cannot write F: No space left on device"."""
    what = e.strerror or str(e)
    if e.filename:
        return f"cannot write {e.filename}: {what}" if e.errno in WRITE_ERRORS else f"{e.filename}: {what}"
    return f"cannot write in {where}: {what}" if where else what


@contextmanager
def _sigint_deferred() -> Iterator[None]:
    """Hold back SIGINT and every other signal that ends a run (this thread) for a few quick file-system steps, so a
    ^C or a SIGHUP cannot leave them half done; one that came meanwhile is delivered when the block ends."""
    try:
        old = signal.pthread_sigmask(signal.SIG_BLOCK, set(ENDING_SIGNALS))
    except (AttributeError, OSError, ValueError):
        old = None
    try:
        yield
    finally:
        if old is not None:
            signal.pthread_sigmask(signal.SIG_SETMASK, old)


def _is_block_device(path: str) -> bool:
    try:
        return stat.S_ISBLK(os.stat(path).st_mode)
    except OSError:
        return False


def _try_lock(lock: DirLock) -> bool:
    try:
        lock.acquire()
        return True
    except ProfilerError:
        return False


def _ending(e: BaseException) -> tuple[RunStatus, str | None]:
    """(status, reason) for run.json when ``e`` ends a run."""
    if isinstance(e, (asyncio.CancelledError, KeyboardInterrupt, GeneratorExit)):
        return RunStatus.INTERRUPTED, None
    return RunStatus.FAILED, str(e) if isinstance(e, ProfilerError) else f"{type(e).__name__}: {e}"


# --- planning -------------------------------------------------------------------------------


def default_out_dir(preset_name: str) -> Path:
    """Where a run without ``--out`` writes: a new directory under $PROFILER_TUI_RESULTS (or ./results)."""
    return new_run_dir(settings.results_root(), preset_name)


def resolve_target(target: str | None, out: Path, writes: bool = True) -> "LocalTarget":
    """The storage target: the path named (resolved), or the tool's scratch test file ``profiler-tui.testfile``
    in the results directory (no target) or in the directory named — in a directory of the tool's own made in it
    when others may write there (sticky, like /tmp), as ``--out`` does.  The scratch file is the tool's (it removes
    it when the run completes) only when the name is free now.  A symbolic link of another user on the way is
    refused (SafetyError, exit 3) before anything is resolved."""
    if target is None:
        path = str((out / DEFAULT_TARGET_NAME).resolve())
        return LocalTarget(path, ours=not os.path.lexists(path))
    safety.check_trust(target, writes, links_only=True)
    path = os.path.realpath(target)
    if not os.path.isdir(path):
        return LocalTarget(path)
    own_dir = safety.shared_sticky(path)
    if own_dir:
        path = os.path.join(path, f"{SCRATCH_DIR_PREFIX}{secrets.token_hex(4)}")
    path = os.path.join(path, DEFAULT_TARGET_NAME)
    return LocalTarget(path, ours=not os.path.lexists(path), own_dir=own_dir)


def _device_size(path: str) -> int:
    """A block device's size in bytes as the kernel lists it now (0: no medium, detached, or not listed)."""
    name = safety.sys_name(path)
    return safety.size_bytes(name) if name is not None else 0


def check_storage_target(target: str, plan: Sequence[Point], *, yes: bool, allow_destructive: bool,
                         writes: bool | None = None) -> None:
    """Every check a storage target passes before a run and again before every point: the safety rules
    with the user's confirmations, a name fio can take, and a size a read-only plan can read as it is.
    ``writes``: the run writes (a write point, or preconditioning); by default, whether the plan does."""
    writes = plan_writes(plan) if writes is None else writes
    safety.check_target(target, writes, yes=yes, allow_destructive=allow_destructive)
    check_target_name(target)
    if not writes:
        safety.check_read_only_size(target, max((p.bs for p in plan if isinstance(p, StoragePoint)), default=0))


def plan_for_target(plan: Sequence[Point], target: str, sysfs: Path | None = None,
                    allowed: tuple[int, ...] | None = None) -> list[Point]:
    """The plan as it runs on ``target`` (the CLI's and the TUI's runs both make it here, so run.json's plan holds
    what ran): ``cpus = "node"`` becomes the CPUs of the target device's NUMA node (app.host.topology.device_cpus), and
    such a point is dropped when its numjobs is above that many CPUs while the plan holds the same point with a
    numjobs that fits (the jobs would share CPUs: the numjobs axis is cut at the node's CPUs, never emptied)."""
    if not any(isinstance(p, StoragePoint) and p.cpus == NODE for p in plan):
        return list(plan)
    cpus, _ = device_cpus(target, sysfs, allowed)
    text, count = cpu_list_text(cpus), len(cpus)
    fits = {replace(p, numjobs=1) for p in plan if isinstance(p, StoragePoint) and p.cpus == NODE
            and p.numjobs <= count}
    out: list[Point] = []
    for p in plan:
        if isinstance(p, StoragePoint) and p.cpus == NODE:
            if p.numjobs > count and replace(p, numjobs=1) in fits:
                continue
            p = replace(p, cpus=text)
        out.append(p)
    return list(dict.fromkeys(out))


class Targets:
    """What a session measures: one local target (:class:`LocalTarget`), or a fleet's hosts
    (:class:`FleetTargets`).  It owns what differs between the two: the target check before every point, the
    hosts each plan point runs on, and so which results are still to come."""

    path: str | None = None  # the local target (None: a memory run, or a fleet run: its targets are on its hosts)

    @property
    def hosts(self) -> Sequence[str | None]:
        """Where each plan point runs: the one local target (no host name), or every host of a fleet."""
        raise NotImplementedError

    @property
    def width(self) -> int:
        """Results per plan point."""
        return len(self.hosts)

    def key(self, point_key: str, host: str | None) -> str:
        """Names one result of a plan point (``point_key``: :func:`app.plan.presets.point_key`)."""
        raise NotImplementedError

    def missing(self, plan: Sequence[Point], done: set[str], skipped: Container[int]) -> dict[int, list[str | None]]:
        """Plan index → the hosts still to measure it, for every point neither skipped nor measured everywhere
        (``done``: the keys of the results lines)."""
        out: dict[int, list[str | None]] = {}
        for i, p in enumerate(plan):
            hosts = [h for h in self.hosts if self.key(point_key(p), h) not in done]
            if hosts and i not in skipped:
                out[i] = hosts
        return out

    def assign_missing(self, missing: Mapping[int, Sequence[str | None]]) -> None:
        """Tell the runner which hosts still need each point (one local target: nothing to tell)."""

    def target_of(self, host: str | None) -> str | None:
        """The target a result of ``host`` measured (the session's own word, never the runner's)."""
        return self.path

    def check(self, plan: Sequence[Point], writes: bool, *, yes: bool, allow_destructive: bool) -> None:
        """The checks a target passes again before every point (the device may have changed since planning)."""
        raise NotImplementedError

    def unread_facts(self) -> TargetFacts:
        """What the validity checks know of the target before it is read (a local target is read next)."""
        return TargetFacts()

    def remove_scratch(self) -> bool:
        """Remove the test file the tool created (not a result); True if there was one."""
        return False

    def seen(self) -> JSONObject | None:
        """After a fio of the tool's ended: run.json's record of the test file it made (``target_info.scratch``)
        when that changed, else None."""
        return None

    def snapshot(self, point: Point, writes: bool) -> "TargetState | None":
        """What says, after ``point``, that the target is still the one it started on (None: nothing to compare)."""
        return None

    def vanished(self, before: "TargetState | None") -> str | None:
        """Why the target is not the one ``before`` describes any more (removed, replaced, detached), None when it
        is: a point whose target went away measured something else, or nothing."""
        return None

    def close(self) -> None:
        """Let go of what reaches the target (a fleet's connections)."""


@dataclass(frozen=True)
class TargetState:
    """A local target as a point starts: a block device's number and size, or a file's device and inode."""

    block: bool
    ident: tuple[int, ...]  # (st_rdev,) of a block device, (st_dev, st_ino) of a file
    size: int  # a block device's size in bytes
    kept: bool  # a file fio will not lay out again for the point (it removes and re-creates a smaller one)


class LocalTarget(Targets):
    """The file or block device of this machine a storage run measures; none (``path`` None) for a memory run."""

    def __init__(self, path: str | None, *, ours: bool = False, own_dir: bool = False,
                 made: tuple[int, int] | None = None) -> None:
        self.path = path
        # the test file is the tool's: its scratch name, free when the run was planned, in a directory no other user
        # can change (the checks before every point): the tool's fio makes it, and the tool removes it
        self.ours = ours
        self.own_dir = own_dir  # and in a directory the tool made for it (in a sticky one like /tmp), removed too
        self.made = made  # (st_dev, st_ino) of that file as the tool saw it after its last fio: what it removes

    @property
    def hosts(self) -> Sequence[str | None]:
        return (None,)

    def key(self, point_key: str, host: str | None) -> str:
        return point_key

    def check(self, plan: Sequence[Point], writes: bool, *, yes: bool, allow_destructive: bool) -> None:
        if self.path is not None:
            check_storage_target(self.path, plan, yes=yes, allow_destructive=allow_destructive, writes=writes)

    def snapshot(self, point: Point, writes: bool) -> TargetState | None:
        if self.path is None or not isinstance(point, StoragePoint):
            return None
        try:
            st = os.stat(self.path)
        except OSError:
            return None  # a file fio creates: nothing to compare with
        if stat.S_ISBLK(st.st_mode):
            return TargetState(True, (st.st_rdev,), _device_size(self.path), True)
        # a read-only plan reads an existing file as it is (--readonly); a write plan's fio lays out a smaller one anew
        return TargetState(False, (st.st_dev, st.st_ino), st.st_size, not writes or st.st_size >= point.size)

    def vanished(self, before: TargetState | None) -> str | None:
        if before is None or self.path is None:
            return None
        try:
            st = os.stat(self.path)
        except OSError as e:
            return f"{self.path} went away during the point ({e.strerror})"
        if before.block:
            if not stat.S_ISBLK(st.st_mode) or (st.st_rdev,) != before.ident:
                return f"{self.path} is no longer the block device it was when the point started"
            size = _device_size(self.path)
            if size != before.size:
                return (f"{self.path} changed size during the point ({before.size:,} to {size:,} bytes: detached or "
                        "resized), so the point did not measure the device it started on")
            return None
        if not stat.S_ISREG(st.st_mode) or (before.kept and (st.st_dev, st.st_ino) != before.ident):
            return f"{self.path} was removed or replaced during the point, so the point did not measure that file"
        return None

    @classmethod
    def recorded(cls, path: str, meta: RunMeta) -> "LocalTarget":
        """The target of a run.json (its ``target`` checked and resolved): the test file is the tool's when run.json
        says the tool made it under its scratch name, and what the tool last saw of it is ``target_info.scratch``."""
        ours = meta.target_created_by_tool is True and os.path.basename(path) == DEFAULT_TARGET_NAME
        entry = (meta.target_info or {}).get("scratch")
        entry = entry if isinstance(entry, dict) else {}
        dev, ino = entry.get("dev"), entry.get("ino")
        made = (dev, ino) if type(dev) is int and type(ino) is int else None
        own_dir = entry.get("dir") is True and os.path.basename(os.path.dirname(path)).startswith(SCRATCH_DIR_PREFIX)
        return cls(path, ours=ours, own_dir=own_dir, made=made)

    def _scratch_dir(self) -> int | None:
        """The test file's directory opened (a symbolic link not followed), when no other user can change it."""
        assert self.path is not None
        try:
            fd = os.open(os.path.dirname(self.path), os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
        except OSError:
            return None
        if foreign(os.fstat(fd)) is None:
            return fd
        os.close(fd)
        return None

    def _scratch_id(self) -> tuple[int, int] | None:
        """(st_dev, st_ino) of the regular file at the test file's name (never a link followed), one link, root's."""
        fd = self._scratch_dir()
        if fd is None:
            return None
        try:
            st = os.stat(os.path.basename(str(self.path)), dir_fd=fd, follow_symlinks=False)
        except OSError:
            return None
        finally:
            os.close(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_nlink != 1 or st.st_uid not in trusted_uids():
            return None
        return st.st_dev, st.st_ino

    def seen(self) -> JSONObject | None:
        if not self.ours or self.path is None:
            return None
        found = self._scratch_id()
        if found is None or found == self.made:
            return None
        self.made = found
        return self.scratch_entry()

    def scratch_entry(self) -> JSONObject:
        """run.json's ``target_info.scratch``: whether the tool made the test file's directory, and the file's
        device and inode as the tool last saw it."""
        entry: JSONObject = {"dir": self.own_dir}
        if self.made is not None:
            entry.update(dev=self.made[0], ino=self.made[1])
        return entry

    def remove_scratch(self) -> bool:
        """Only the file the tool made (its device and inode as seen after its last fio), unlinked in its directory
        opened without following a link; then the directory the tool made for it, when it did."""
        if not self.ours or self.path is None or self.made is None:
            return False
        fd = self._scratch_dir()
        if fd is None:
            return False
        name = os.path.basename(self.path)
        try:
            st = os.stat(name, dir_fd=fd, follow_symlinks=False)
            if (st.st_dev, st.st_ino) != self.made or not stat.S_ISREG(st.st_mode):
                return False
            os.unlink(name, dir_fd=fd)
        except OSError:
            return False
        finally:
            os.close(fd)
        self.made = None
        if self.own_dir:
            try:
                os.rmdir(os.path.dirname(self.path))
            except OSError:
                pass
        return True


class FleetTargets(Targets):
    """A fleet run's targets: every plan point runs on each host that lacks it, all at once (the fleet runner)."""

    def __init__(self, fleet: "Fleet") -> None:
        self.fleet = fleet

    @property
    def hosts(self) -> Sequence[str | None]:
        return [h.name for h in self.fleet.hosts]

    def key(self, point_key: str, host: str | None) -> str:
        return f"{point_key}@{host}"

    def target_of(self, host: str | None) -> str | None:
        return self.fleet.targets[host] if host is not None else None

    def assign_missing(self, missing: Mapping[int, Sequence[str | None]]) -> None:
        self.fleet.missing = {i: [h for h in hosts if h is not None] for i, hosts in missing.items()}

    def check(self, plan: Sequence[Point], writes: bool, *, yes: bool, allow_destructive: bool) -> None:
        # every host, again: a host that cannot be asked now fails this point there
        self.fleet.check(writes, yes=yes, allow_destructive=allow_destructive, strict=False)

    def unread_facts(self) -> TargetFacts:
        # the hosts' links and drives are not read: their checks cannot run
        return TargetFacts(no_link=f"{NO_LINK}: a fleet run does not read its hosts' links",
                           no_telemetry="no drive telemetry: a fleet run does not read its hosts' drives",
                           no_audit=FLEET_NOT_AUDITED)

    def close(self) -> None:
        self.fleet.close()


@dataclass
class _Progress:
    """Where a run stands while ``events()`` goes: what its PointStarted and RunFinished events report."""

    total: int  # results the run makes (a fleet run: host-points), skipped points left out
    done: int
    remaining_s: float  # estimated time left
    skipped: dict[int, str]  # plan index → why the procedure skipped it
    measured: dict[int, Measured]  # plan index → its figures, for the procedure's rules
    failed: int = 0
    failed_at: set[int] = field(default_factory=set)


@dataclass(kw_only=True)
class Session:
    results: ResultsDir
    kind: Kind
    plan: list[Point]
    targets: Targets
    runner: Runner
    yes: bool = False
    allow_destructive: bool = False
    engine: str = "auto"
    lock: DirLock | None = None
    procedure: Procedure = field(default_factory=Procedure)
    facts: TargetFacts = field(default_factory=TargetFacts)
    recorder: telemetry.Recorder | None = None  # the drive's health log, read while the run lasts
    tune_settings: bool = False  # --tune: the audit's benchmark values set for the run, restored at its end
    tuning: tune.Tuning | None = None  # app.host.tune: what --tune changed, while the run lasts
    notes: list[str] = field(default_factory=list)  # what the session did before its run (leftover --tune records)
    # --tune: the locks of what it may change, held by the session (app.host.tune.lock_settings)
    settings_lock: tune.SettingsLock | None = field(default=None, init=False)
    # a run without --tune: why its audit is not the host's own (another run was tuning), when it was read
    tuned_elsewhere: str | None = field(default=None, init=False)

    def close(self) -> None:
        """Release the results directory (``events()`` does it when it ends), the locks of --tune and a fleet's
        connections."""
        self.targets.close()
        if self.lock is not None:
            self.lock.release()
            self.lock = None
        if self.settings_lock is not None:
            self.settings_lock.release()
            self.settings_lock = None
        self.results.close()

    def abandon(self) -> None:
        """The last resort of a process that must end before ``events()`` could (any thread; the session is left
        open for whoever still uses it): the settings --tune changed go back, ``.space-reserve`` goes, run.json
        says ``interrupted`` (best effort).  Nothing of it is done twice."""
        self._end_tuning()
        self.results.drop_reserve()
        try:
            if self.results.read_meta().status in (RunStatus.PLANNED, RunStatus.RUNNING):
                self.results.update_meta(status=RunStatus.INTERRUPTED, ended=now_iso())
        except (OSError, ProfilerError):
            pass

    def mark_interrupted(self) -> None:
        """An interrupt before ``events()`` took over, or after it: :meth:`abandon`, then the locks are freed."""
        self.abandon()
        self.close()

    @property
    def path(self) -> Path:
        return self.results.path

    @property
    def target(self) -> str | None:
        """The local target's path (None: a memory run, or a fleet run)."""
        return self.targets.path

    @property
    def writes(self) -> bool:
        """The run may write to the target: a write point, or preconditioning."""
        return plan_writes(self.plan) or self.procedure.precondition != "none"

    def measured_lines(self) -> list[ResultLine]:
        """The lines of results.jsonl that measure a point of the plan: their index and point agree with it
        (app.model.records.plan_mismatch, the identity the report and the runs browser use too)."""
        return self.results.lines([p.to_dict() for p in self.plan])

    def completed_keys(self) -> set[str]:
        """The results results.jsonl holds, by :meth:`Targets.key` (a fleet run: point@host)."""
        return {self.targets.key(table_key(r.point), r.host) for r in self.measured_lines()}

    def skipped(self) -> dict[int, str]:
        """Plan index → reason, for the points run.json says the procedure skipped (entries that do not name
        a plan point are ignored)."""
        return {e.index: e.reason or "skipped" for e in self.results.read_meta().skipped
                if e.index is not None and e.index < len(self.plan)}

    def missing(self) -> dict[int, list[str | None]]:
        """Plan index → the hosts (one local target: ``[None]``) still to measure it."""
        return self.targets.missing(self.plan, self.completed_keys(), self.skipped())

    def pending(self) -> list[tuple[int, Point]]:
        """The points still to measure (on at least one host), in the order they run (:func:`run_order`)."""
        return self._in_order(self.missing())

    def _in_order(self, missing: Container[int]) -> list[tuple[int, Point]]:
        return [(i, self.plan[i]) for i in run_order(self.plan, self.procedure) if i in missing]

    def check_target(self) -> None:
        self.targets.check(self.plan, self.writes, yes=self.yes, allow_destructive=self.allow_destructive)

    def _batches(self, pending: list[tuple[int, Point]]) -> list[list[tuple[int, Point]]]:
        batches: list[list[tuple[int, Point]]] = []
        last_key: Hashable = None
        for item in pending:
            # replicates never share a runner call: each is its own measurement (and a memory suite batch
            # names each figure once)
            key = (item[1].replicate, self.runner.batch_key(item[1]))
            if batches and key == last_key:
                batches[-1].append(item)
            else:
                batches.append([item])
            last_key = key
        return batches

    async def events(self) -> AsyncGenerator[SessionEvent, None]:
        try:
            progress, pending, meta = self._begin()
            # sysfs, nvme-cli and a look at swap activity over half a second: off the event loop (a TUI stays live)
            cancel = threading.Event()
            reading = asyncio.ensure_future(asyncio.to_thread(self._host_settings, meta, cancel))
            try:
                read = await asyncio.shield(reading)
            except asyncio.CancelledError:
                cancel.set()  # nvme-cli killed, the swap watch ended: an interrupt never waits for the reading …
                with suppress(BaseException):  # … but --tune's changes, made in that thread, are known before the end
                    await asyncio.wait_for(reading, TUNING_WAIT_S)
                raise
            meta = self._audit(meta, read)  # written here, never by the thread a ^C leaves behind
        except OSError as e:
            raise self._fail(_os_reason(e, self.path)) from None
        except BaseException as e:
            self._finish(*_ending(e))
            raise
        # fleet runs: host-points
        yield RunStarted(progress.total, progress.total - progress.done, progress.remaining_s, meta, self.path)
        ctx = Context(target=self.target, raw_dir=self.results.raw_dir, engine=self.engine, plan_writes=self.writes,
                      note=self._note)
        rec = self.recorder
        polling: asyncio.Future[None] | None = None
        try:
            if rec is not None:
                await rec.take("before", None)
                polling = asyncio.ensure_future(rec.poll())
            if self._needs_precondition(meta):
                async with aclosing(self._precondition(ctx)) as precondition:  # fio stopped when we leave
                    async for event in precondition:
                        yield event
            for batch in self._batches(pending):
                async with aclosing(self._batch_events(batch, progress, ctx)) as events:  # the runner stopped too
                    async for event in events:
                        yield event
            if polling is not None:
                polling.cancel()
            if rec is not None:
                await rec.take("after", None)
            status = RunStatus.COMPLETE if progress.failed == 0 else RunStatus.PARTIAL
        except OSError as e:  # writing the results directory: full, read-only, I/O error
            raise self._fail(_os_reason(e, self.path)) from None
        except (_NoSpace, _PreconditionFailed) as e:
            raise self._fail(str(e)) from None
        except BaseException as e:  # interrupt (cancel, ^C, consumer gone), a refusal, a bug
            self._finish(*_ending(e))
            raise
        finally:
            if polling is not None:
                polling.cancel()
            if rec is not None:
                rec.close()
            self._end_tuning()  # _finish did it, unless the run ended another way
        self._finish(status, None)
        yield RunFinished(status, progress.done, progress.total, progress.failed, self.path)

    def _begin(self) -> tuple[_Progress, list[tuple[int, Point]], RunMeta]:
        """The run marked running in run.json; where it stands (earlier sessions included), the points still to
        measure, and run.json.  The target's facts and its drive's telemetry are read now (the host's settings
        next, :meth:`_audit`)."""
        missing = self.missing()
        self.targets.assign_missing(missing)
        pending = self._in_order(missing)
        skipped = self.skipped()
        total = (len(self.plan) - len(skipped)) * self.targets.width
        done = total - sum(len(hosts) for hosts in missing.values())
        remaining = sum(estimate_point_seconds(p) for _, p in pending)
        self.results.repair_tail()
        self.results.make_reserve()
        meta = self.results.update_meta(status=RunStatus.RUNNING, resumed_at=now_iso() if done else None)
        measured = self._measured()
        self.facts = self.targets.unread_facts()
        if self.kind == Kind.STORAGE and self.target is not None:
            meta = self._read_target_facts(meta)
            meta = self._open_telemetry(meta)
        if self._needs_precondition(meta):
            remaining += precondition_estimate_s(self.procedure, self.plan)
        return _Progress(total, done, remaining, skipped, measured), pending, meta

    async def _batch_events(self, batch: list[tuple[int, Point]], progress: _Progress,
                            ctx: Context) -> AsyncGenerator[SessionEvent, None]:
        """One runner call: its points started in turn, their live figures passed on, each result recorded."""
        batch = [(i, p) for i, p in batch if i not in progress.skipped]
        for skip in self._skip_events(self._target_skips(batch), progress):
            yield skip
        batch = [(i, p) for i, p in batch if i not in progress.skipped]
        for skip in self._skip_events(self._offered_loads(batch, progress, ctx), progress):
            yield skip
        batch = [(i, p) for i, p in batch if i not in progress.skipped]
        if not batch:
            return
        # the device's state may have changed since planning; the check may probe the device
        # (blkid), so it runs off the event loop and a TUI stays responsive
        await asyncio.to_thread(self.check_target)
        before = self.targets.snapshot(batch[0][1], self.writes)
        points = dict(batch)
        started_at = {batch[0][0]: now_iso()}
        t0 = time.monotonic()
        yield PointStarted(batch[0][0], batch[0][1], progress.done, progress.total, progress.remaining_s)
        if self.recorder is not None:  # its telemetry window opens
            await self.recorder.start_point(batch[0][0])
        async with aclosing(self.runner.run(batch, ctx)) as stream:  # the runner's finally stops its child
            async for ev in stream:
                if not isinstance(ev, Result):  # live figures; what fio is doing (layout, ramp …)
                    yield ev
                    continue
                gone = self.targets.vanished(before)
                if gone is not None:  # what fio measured was not this target: a failed point, measured again by resume
                    ev = replace(ev, error="; ".join(filter(None, (gone, ev.error))))
                result = self._result_events(ev, points[ev.index], started_at.get(ev.index), t0, progress)
                async with aclosing(result) as events:
                    async for event in events:
                        yield event
                nxt = next((i for i in points if i > ev.index and i not in progress.skipped), None)
                if nxt is not None:
                    started_at[nxt] = now_iso()
                    t0 = time.monotonic()
                    yield PointStarted(nxt, points[nxt], progress.done, progress.total, progress.remaining_s)
                    if self.recorder is not None:
                        await self.recorder.start_point(nxt)

    async def _result_events(self, ev: Result, point: Point, started: str | None, t0: float,
                             progress: _Progress) -> AsyncGenerator[SessionEvent, None]:
        """One result of a point: recorded (results.jsonl, or run.json's failures), then the points the
        procedure's rules skip now."""
        progress.remaining_s -= estimate_point_seconds(point) / self.targets.width
        self._scratch_seen()
        drive, drive_flags = await self.recorder.end_point(ev.index) if self.recorder is not None else ({}, {})
        if ev.error:
            no_space = self.kind == Kind.STORAGE and NO_SPACE in ev.error
            yield self._point_failed(ev, point, ev.error, progress, no_space)
            if no_space:  # every further point would fail the same way
                raise _NoSpace(f"fio found no space left on device for the test file {self.target}")
        else:
            yield self._point_done(ev, point, started, t0, drive, drive_flags, progress)
        for skip in self._skip_events(self._new_skips(progress.measured, progress.skipped, progress.failed_at),
                                      progress):
            yield skip

    def _skip_events(self, new: Mapping[int, str], progress: _Progress) -> list[PointSkipped]:
        """Points just skipped (already in run.json) taken off the run's progress, one event each."""
        events = []
        for index, reason in new.items():
            progress.skipped[index] = reason
            progress.total -= self.targets.width
            progress.remaining_s -= estimate_point_seconds(self.plan[index])
            events.append(PointSkipped(index, self.plan[index], reason))
        return events

    def _point_failed(self, ev: Result, point: Point, error: str, progress: _Progress, no_space: bool) -> PointFailed:
        progress.failed += 1
        progress.failed_at.add(ev.index)
        if no_space:  # fio filled the disk laying out our test file: free it first
            self._remove_scratch()
        self._write_raw(ev, point)
        host = ev.parts.host
        self._record_failure(ev.index, point, error, host)
        return PointFailed(ev.index, point, error, host)

    def _point_done(self, ev: Result, point: Point, started: str | None, t0: float, drive: Mapping[str, object],
                    drive_flags: Mapping[str, str], progress: _Progress) -> PointDone:
        try:
            record = self._record(ev, point, started, t0, drive, drive_flags)
            self.results.append(record)
        except OSError:  # not recorded (disk full): the runner's files name no line
            _remove_files(ev)
            raise
        progress.done += 1
        found = measured_from_line(record)
        if found is not None:
            progress.measured[ev.index] = found
        return PointDone(ev.index, line_json(record), progress.done, progress.total)

    def _open_telemetry(self, meta: RunMeta) -> RunMeta:
        """Find the target's drive and how to read its health log; run.json's ``telemetry`` says which, or why
        there is none (a resumed run looks again: it may be on another machine)."""
        assert self.target is not None
        drive, why_not = telemetry.find_drive(self.target)
        interval = self.procedure.telemetry_interval
        entry = telemetry.run_entry(drive, why_not, interval)
        if meta.telemetry != entry:
            meta = self.results.update_meta(telemetry=entry)
        if drive is not None:
            self.recorder = telemetry.Recorder(drive, self.results.raw_dir / telemetry.FILE_NAME, interval)
        self.facts = replace(self.facts, telemetry=drive is not None,
                             no_telemetry=f"no drive telemetry: {why_not}" if why_not else self.facts.no_telemetry)
        return meta

    def _audit(self, meta: RunMeta, read: audit.Audit | None) -> RunMeta:
        """The host's settings (app.host.audit) for the target and the CPUs the run will use, read once before the
        run's first point (``read``, by :meth:`_host_settings`) into run.json's ``audit``; a resumed run keeps the
        first reading (its points were measured under it).  A fleet run reads none: its hosts' settings are on
        its hosts."""
        if isinstance(self.targets, FleetTargets):  # its facts say why there is no audit
            return meta
        found = audit.from_json(meta.audit) if meta.audit is not None else None
        elsewhere = self.tuned_elsewhere
        if found is None and read is not None:
            found = read
            meta = self.results.update_meta(audit={**audit.to_json(found),
                                                   **({"tuned_by": elsewhere} if elsewhere else {})})
        if elsewhere:  # said once per session: the first run's, and a resume's that found another run tuning
            meta = self.results.update_meta(warnings=[*meta.warnings, f"profiler-tui: {elsewhere}."])
        why_not = elsewhere or audit.tuned_by(meta.audit)
        if why_not:  # the settings read are another run's: the checks that read them cannot judge a point
            self.facts = replace(self.facts, audit=None, no_audit=why_not)
        elif found is not None:
            self.facts = replace(self.facts, audit=found)
        return meta

    def _read_target_facts(self, meta: RunMeta) -> RunMeta:
        """What the validity checks need of the target (its link, its filesystem), read now: a resumed run may
        be on another machine or port.  The link goes into run.json's target_info."""
        assert self.target is not None
        link = link_of(self.target)
        info = meta.target_info
        if info is not None and link is not None and info.get("link") != link:
            meta = self.results.update_meta(target_info={**info, "link": link})
        self.facts = target_facts(meta.target_info, link, meta.environment.entry if meta.environment else None)
        return meta

    # --- the procedure: skipped points, preconditioning ---------------------------------------------

    def _measured(self) -> dict[int, Measured]:
        """Plan index → figures, for the points results.jsonl holds (earlier sessions included)."""
        out: dict[int, Measured] = {}
        for line in self.measured_lines():
            found = measured_from_line(line)
            if line.index is not None and found is not None:
                out[line.index] = found
        return out

    def _new_skips(self, measured: dict[int, Measured], skipped: dict[int, str], failed: set[int]) -> dict[int, str]:
        """Points the procedure's rules skip now (not measured, not skipped before), recorded in run.json
        before the run goes on."""
        if self.procedure.is_default:
            return {}
        found = skips(self.plan, self.procedure, measured, set(skipped) | failed)
        return self._record_skips({i: r for i, r in found.items() if i not in skipped and i not in measured})

    def _target_skips(self, batch: Sequence[tuple[int, Point]]) -> dict[int, str]:
        """Points the target cannot measure, found as they come up (recorded in run.json): a polled point
        (hipri) on a device without poll queues, whose figures would not be those of polled completions."""
        polled = [i for i, p in batch if isinstance(p, StoragePoint) and p.hipri]
        why = poll_problem(self.target) if polled and self.target is not None else None
        return self._record_skips({i: why for i in polled} if why else {})

    def _offered_loads(self, batch: Sequence[tuple[int, Point]], progress: _Progress, ctx: Context) -> dict[int, str]:
        """The load each open-loop point of the batch offers, for the runner (``ctx.offered``); the points whose
        rate is a share of an X_max nothing measured are skipped (recorded in run.json), with the reason."""
        why: dict[int, str] = {}
        for i, _ in batch:
            load = offered_load(self.plan, i, progress.measured)
            if isinstance(load, str):
                why[i] = load
            elif load is not None:
                ctx.offered[i] = load
        return self._record_skips(why)

    def _record_skips(self, new: dict[int, str]) -> dict[int, str]:
        """``new`` (plan index → reason) added to run.json's skipped points before the run goes on."""
        if new:
            meta = self.results.read_meta()
            entries = meta.listed("skipped") + [{"index": i, "point": self.plan[i].to_dict(), "reason": r,
                                                 "at": now_iso()} for i, r in sorted(new.items())]
            self.results.write_meta(meta.with_changes(skipped=entries))
        return new

    def _write_precondition_raw(self, suffix: str, content: str | bytes) -> str:
        return self.results.write_raw_file(f"precondition{suffix}", content)

    def _needs_precondition(self, meta: RunMeta) -> bool:
        if self.kind != Kind.STORAGE or self.procedure.precondition == "none":
            return False
        return not meta.precondition_done  # a resumed run does not repeat it

    async def _precondition(self, ctx: Context) -> AsyncGenerator[SessionEvent, None]:
        """Run the preconditioning pass (safety checked first, as for a point); run.json records it."""
        await asyncio.to_thread(self.check_target)
        job = precondition_job(self.procedure, self.plan, ctx)
        before = self.targets.snapshot(job.point, True)
        yield PreconditionStarted(self.procedure.precondition, job.description, job.estimate_s)
        started, t0 = now_iso(), time.monotonic()
        result: Result | None = None
        if self.recorder is not None:
            await self.recorder.start_point(None)
        async with aclosing(job.run(ctx)) as events:
            async for ev in events:
                if isinstance(ev, Sample):
                    yield PreconditionProgress(ev.data)
                elif isinstance(ev, Phase):  # index -1: the preconditioning pass
                    yield ev
                else:
                    result = ev
        record: dict[str, object] = {"mode": self.procedure.precondition, "description": job.description,
                                     "started": started, "ended": now_iso(), "seconds": round(time.monotonic() - t0, 3)}
        if self.recorder is not None:
            seen, drive_flags = await self.recorder.end_point(None)
            record["telemetry"] = seen
            for name, reason in drive_flags.items():  # throttled, over_temperature
                record[name.replace("-", "_")] = reason
        self._scratch_seen()
        if result is not None:
            raw = {suffix.lstrip("."): self._write_precondition_raw(suffix, content)
                   for suffix, content in result.raw.items()}
            for suffix, path in result.files.items():
                raw[suffix.lstrip(".").split(".")[0]] = self.results.relative(path)
            record["raw"] = raw
            parts = result.parts
            record.update({k: v for k, v in parts.json().items() if k in ("wall_s", "steady", "write_cliff")})
            written = result.metrics if isinstance(result.metrics, StorageMetrics) else StorageMetrics()
            record["io_bytes"] = written.io_bytes
            record["bw_bytes"] = written.bw_bytes
        error = "; ".join(filter(None, (self.targets.vanished(before),
                                        "fio gave no result" if result is None else result.error)))
        record["status"] = "failed" if error else "done"
        if error:
            record["error"] = error
        self.results.update_meta(precondition=record)
        if error:
            raise _PreconditionFailed(f"preconditioning failed: {error}")
        yield PreconditionDone(record)

    def _remove_scratch(self) -> bool:
        """Remove the test file the tool created (not a result); True if there was one."""
        return self.targets.remove_scratch()

    def _scratch_seen(self) -> None:
        """After a fio of the tool's ended: the test file it made, as it is now, recorded in run.json's
        ``target_info.scratch`` (so a resume removes only that file; best effort, the session holds it too)."""
        entry = self.targets.seen()
        if entry is None:
            return
        try:
            meta = self.results.read_meta()
            self.results.write_meta(meta.with_changes(target_info={**(meta.target_info or {}), "scratch": entry}))
        except (OSError, ProfilerError):
            pass

    def _finish(self, status: RunStatus, reason: str | None) -> str | None:
        """Record how the run ended and release the directory; never raises.  Returns why run.json
        could not be updated, or None."""
        problem = None
        try:
            self.results.drop_reserve()  # room for this last update when the filesystem is full
            self._end_tuning()  # while run.json can still record what was restored
            if status in (RunStatus.COMPLETE, RunStatus.FAILED):
                self._remove_scratch()
            changes: dict[str, object] = {"status": status, "ended": now_iso()}
            try:
                changes["points_done"] = len(self.completed_keys())
            except (OSError, ProfilerError):
                pass
            changes["error"] = reason  # why a failed run stopped; null otherwise
            for attempt in (1, 2):
                try:
                    self.results.update_meta(**changes)
                    problem = None
                    break
                except (OSError, ProfilerError) as e:
                    problem = _os_reason(e) if isinstance(e, OSError) else str(e)
                    # a second try once the scratch test file no longer takes the space
                    if attempt == 2 or not self._remove_scratch():
                        break
        finally:
            self.close()
        return problem

    def _fail(self, reason: str) -> RunFailed:
        """End the run as failed (run.json, scratch file, lock) and the one sentence that says so."""
        problem = self._finish(RunStatus.FAILED, reason)
        try:
            kept = len(self.completed_keys())
        except (OSError, ProfilerError):
            kept = 0
        where = f"{kept} of {len(self.plan)} points are kept in {self.path}"
        if problem:
            return RunFailed(f"{reason}; the run stopped and {where}, but run.json could not record it ({problem}).")
        return RunFailed(f"{reason}; the run stopped, {where} and run.json records it as failed.")

    def _write_raw(self, ev: Result, point: Point) -> dict[str, str]:
        stem = str(ev.parts.job or point.group or "point")
        written = {suffix.lstrip("."): self.results.write_raw(ev.index, stem, suffix, content)
                   for suffix, content in ev.raw.items()}
        for suffix, path in ev.files.items():
            written[suffix.lstrip(".").split(".")[0]] = self.results.relative(path)
        return written

    def _record(self, ev: Result, point: Point, started: str | None, t0: float,
                drive: Mapping[str, object] | None = None, drive_flags: Mapping[str, str] | None = None
                ) -> ResultLine:
        """The point's results line: the session's own parts (the point, its target, files, times, validity)
        around the runner's metrics and parts, which name nothing else."""
        raw = self._write_raw(ev, point)
        if isinstance(point, MemoryPoint) and ev.parts.engine is not None:
            point = replace(point, engine=ev.parts.engine)  # the engine that measured it
        table: dict[str, JSONValue] = {**point.to_dict()}
        if self.kind != Kind.STORAGE:
            return ResultLine(self.kind, table, ev.metrics or MemoryMetrics(), ev.index, SCHEMA_VERSION, ev.parts,
                              raw, started, now_iso())
        metrics = ev.metrics if isinstance(ev.metrics, StorageMetrics) else StorageMetrics()
        host = ev.parts.host
        target = self.targets.target_of(host)
        flags = point_flags(table, metrics, ev.parts, self.facts, (drive_flags or {}).get("throttled"),
                            (drive_flags or {}).get("over-temperature"))
        # the drive's telemetry entries are JSON: the recorder writes the same entries to run.json
        telemetry_entry = cast("JSONObject | None", dict(drive) if drive else None)
        checks = point_checks(table, metrics, ev.parts, telemetry_entry, self.facts, flags)
        flags_json: list[JSONValue] = [{k: v for k, v in f.items()} for f in flags]
        checks_json: dict[str, JSONValue] = {name: {k: v for k, v in c.items()} for name, c in checks.items()}
        return ResultLine(self.kind, table, metrics, ev.index, SCHEMA_VERSION, ev.parts, raw, started, now_iso(),
                          target, telemetry_entry, flags_json, checks_json)

    def _host_settings(self, meta: RunMeta, cancel: threading.Event) -> audit.Audit | None:
        """In a thread: --tune's changes made first, then the audit read (:meth:`_audit` records it), so run.json's
        ``audit`` holds the settings the points ran under (a tuned run's warnings are the ones tuning left) and
        ``tune`` what they were before.  None: nothing to read (a fleet run, a resumed run's first reading)."""
        self._start_tuning(cancel)
        if isinstance(self.targets, FleetTargets) or cancel.is_set():  # a fleet's facts say why there is none
            return None
        if not self.tune_settings:
            self.tuned_elsewhere = tune.tuned_elsewhere(self.target)
        if meta.audit is not None and audit.from_json(meta.audit) is not None:
            return None
        return audit.audit(self.target, run_cpus(self.plan), cancel=cancel)

    def _start_tuning(self, cancel: threading.Event | None = None) -> None:
        """--tune: the audit read now, its changes recorded and made (app.host.tune); not once the run is
        interrupted."""
        if not self.tune_settings:
            return
        found = audit.audit(self.target, run_cpus(self.plan), cancel=cancel)
        if cancel is None or not cancel.is_set():
            self.tuning = tune.start(found, self.path, lambda obj: self.results.update_meta(tune=obj))

    def tune_preview(self) -> list[str]:
        """What --tune will change, as the audit reads this machine now (app.host.tune.describe); [] without --tune."""
        if not self.tune_settings:
            return []
        return tune.describe(audit.audit(self.target, run_cpus(self.plan)))

    def _end_tuning(self) -> None:
        if self.tuning is not None:
            self.tuning.restore()

    def _note(self, key: str, entry: dict[str, object]) -> None:
        """Context.note: append ``entry`` (with the time) to the list under ``key`` in run.json.  Called
        from a runner's finally, also while the run is being cancelled: never raises (what the entry says
        is in the results lines too)."""
        try:
            meta = self.results.read_meta()
            self.results.write_meta(meta.with_changes(**{key: meta.listed(key) + [{**entry, "at": now_iso()}]}))
        except (OSError, ProfilerError):
            pass

    def _record_failure(self, index: int, point: Point, error: str, host: str | None = None) -> None:
        meta = self.results.read_meta()
        failures = [f.entry for f in meta.failures if (f.index, f.host) != (index, host)]
        failures.append({"index": index, "point": point.to_dict(), "error": error, "at": now_iso(),
                         **({"host": host} if host is not None else {})})
        self.results.write_meta(meta.with_changes(failures=failures))


def _pinned(point: Point, topo: Callable[[], topology.Topology]) -> set[int]:
    """The CPUs a plan point is pinned to (empty: not pinned, it may run on any CPU the process may use)."""
    if isinstance(point, MemoryPoint):
        cpus = set(topology.cpu_list(point.cpus))
        for node in (point.cpu_node, point.reader_node):
            found = topo().node(node) if node is not None else None
            cpus |= set(found.cpus) if found is not None else set()
        return cpus
    pinned = getattr(point, "cpus", None)  # a storage point's fio cpus_allowed, resolved to a list by planning
    return set(topology.cpu_list(pinned)) if isinstance(pinned, str) else set()


def run_cpus(plan: Sequence[Point]) -> tuple[int, ...]:
    """The CPUs a run will use, as the audit reads them: every point's pinned CPUs when each point is pinned,
    else every CPU this process may run on."""
    topo: list[topology.Topology] = []

    def read() -> topology.Topology:
        if not topo:
            topo.append(topology.read())
        return topo[0]

    used: set[int] = set()
    for point in plan:
        cpus = _pinned(point, read)
        if not cpus:
            return topology.allowed_cpus()
        used |= cpus
    return tuple(sorted(used))


def _new_meta(preset: Preset, plan: list[Point], runner: Runner, target_path: str | None, ours: bool, *,
              yes: bool, allow_destructive: bool, engine: str, overrides: list[str] | tuple[str, ...]
              ) -> dict[str, object]:
    """run.json of a run about to start (``target_info`` is filled in by the caller)."""
    return {
        "schema_version": SCHEMA_VERSION,
        "tool": "profiler-tui",
        "preset": {"name": preset.name, "kind": preset.kind, "description": preset.description,
                   "source": preset.source, "overrides": list(overrides)},
        "kind": preset.kind,
        "plan": [p.to_dict() for p in plan],
        "points_total": len(plan),
        "points_done": 0,
        "estimated_seconds": estimate_seconds(plan, preset.procedure),
        "target": target_path,
        "target_created_by_tool": ours,
        "target_info": None,
        "confirmed": {"yes": yes, "allow_destructive": allow_destructive},
        "engine": engine,
        **({"procedure": procedure_entry(preset.kind, preset.procedure)} if not preset.procedure.is_default else {}),
        "environment": envinfo.collect(),
        "tools": runner.tool_versions(),
        "started": now_iso(),
        "ended": None,
        "status": RunStatus.PLANNED,
    }


def new_session(
    preset: Preset,
    *,
    target: str | None = None,
    out: str | os.PathLike[str] | None = None,
    yes: bool = False,
    allow_destructive: bool = False,
    engine: str = "auto",
    overrides: list[str] | tuple[str, ...] = (),
    on_created: Callable[[Session], None] | None = None,
    fleet: "Fleet | None" = None,
    tune_settings: bool = False,
) -> Session:
    """Validate, check safety, create the results directory and run.json. Starts nothing.
    ``on_created`` is called with the session as soon as run.json exists.  With ``fleet``, every point runs on
    each of its hosts (their targets judged on each host before anything is created).  ``tune_settings``: --tune
    (root only, this machine only)."""
    plan = preset.expand()
    if not plan:
        raise UsageError(f"{preset.source}: the plan has no points.")
    check_precondition(preset.procedure, plan, preset.source)  # before any directory exists
    check_shares(plan, preset.source)
    if preset.kind == Kind.STORAGE:
        preset = replace(preset, procedure=with_order_seed(preset.procedure))  # run.json records the seed
    out_dir = Path(out) if out else default_out_dir(preset.name)
    check_dir_path(out_dir)  # a file, a name too long, read-only: usage errors before the target is looked at
    if tune_settings:
        check_tune(fleet is not None)
    if fleet is not None:
        return _new_fleet_session(preset, plan, out_dir, fleet, yes=yes, allow_destructive=allow_destructive,
                                  overrides=overrides, on_created=on_created)
    runner = get_runner(preset.kind, engine)
    runner.check_plan(plan)  # e.g. memory buffers larger than MemAvailable: UsageError before any file
    local = LocalTarget(None)
    target_path: str | None = None
    writes = preset.writes()
    if preset.kind == Kind.STORAGE:
        local = resolve_target(target, out_dir, writes)
        target_path = local.path
        assert target_path is not None
        check_storage_target(target_path, plan, yes=yes, allow_destructive=allow_destructive, writes=writes)
        plan = plan_for_target(plan, target_path)
    elif target is not None:
        raise UsageError(f"--target {target}: memory presets take no target.")
    check_free_space(out_dir, target_path, plan, len(plan), writes)
    meta = _new_meta(preset, plan, runner, target_path, local.ours, yes=yes, allow_destructive=allow_destructive,
                     engine=engine, overrides=overrides)
    if target_path is not None and _is_block_device(target_path):
        meta["target_info"] = envinfo.target_info(target_path)  # may probe the device: before the steps below
    notes = restore_tune_leftovers()  # the run is going ahead: a killed --tune run's settings go back first
    if notes:
        meta["warnings"] = notes
    if tune_settings:
        meta["tune"] = {"requested": True, "changes": []}
    # Nothing is written before this point.  Then, as one step that a ^C cannot cut in half (SIGINT is
    # held back until it is done): the directory, its lock, the check that it holds no run, run.json.
    # A refusal or error on the way removes everything it made (the lock file stays only in a directory
    # that existed before).
    def make(results: ResultsDir, lock: DirLock) -> Session:
        if target_path is not None:
            created.extend(make_dirs(Path(target_path).parent, risk=None))  # a test file's: no results there
            safety.check_trust(target_path, writes)  # a directory another user made first on the way is not used
            if meta["target_info"] is None:
                meta["target_info"] = envinfo.target_info(target_path)  # a file: no probe, quick
            if local.ours:
                meta["target_info"] = {**cast(dict[str, object], meta["target_info"]), "scratch": local.scratch_entry()}
        results.create(runmeta.new(meta, results.run_json))
        return Session(results=results, kind=preset.kind, plan=plan, targets=local,
                       runner=runner, yes=yes, allow_destructive=allow_destructive, engine=engine, lock=lock,
                       procedure=preset.procedure, tune_settings=tune_settings, notes=notes)

    created: list[Path] = []
    settings = (lambda: tune.lock_settings(target_path, out_dir)) if tune_settings else None
    return _create(out_dir, make, created, on_created, settings)


def _create(out_dir: Path, make: Callable[[ResultsDir, DirLock], Session], created: list[Path],
            on_created: Callable[[Session], None] | None,
            settings: Callable[[], tune.SettingsLock] | None = None) -> Session:
    """``settings``' locks (--tune: SafetyError when another run holds one, before anything is made), then the
    results directory, its lock, the check that it holds no run, and ``make`` (run.json, the session)."""
    held = settings() if settings is not None else None
    results = ResultsDir(out_dir)
    lock = DirLock(out_dir)
    try:
        with _sigint_deferred():
            created += make_dirs(out_dir)
            results.open()  # checked, held by a descriptor: nothing another user swaps in later is used
            lock = DirLock(out_dir, results.fd)
            lock.acquire()
            results.check_empty()
            session = make(results, lock)
            session.settings_lock = held
            if on_created is not None:
                on_created(session)  # e.g. the CLI's ^C handler, told before a held-back ^C is delivered
    except BaseException as e:
        if held is not None:
            held.release()
        with _sigint_deferred():
            if out_dir in created and results.fd is not None and (lock.fd is not None or _try_lock(lock)):
                lock.remove()  # the directory is ours: nothing of this run stays
            lock.release()
            results.close()
            remove_dirs(created)
        if isinstance(e, OSError):
            raise UsageError(f"{out_dir}: {_os_reason(e)}.") from None
        raise
    return session


# the procedure keys a fleet run takes: replicates (a fixed number) and their order
FLEET_PROCEDURE_KEYS = frozenset({"repeat", "repeat_cv", "repeat_max", "order", "order_seed"})


def _check_fleet_plan(kind: Kind, procedure: Procedure, plan: Sequence[Point], source: str) -> None:
    if kind != Kind.STORAGE:
        raise UsageError(f"{source}: a memory preset runs on this machine only; --host takes storage presets "
                         "(run the memory preset on each host itself).")
    # replicates and their shuffled order are the plan itself (each replicate one more point, run on every host at
    # once): a fleet run takes them; the rest of the procedure reads one target's figures or state as it goes
    if procedure.repeat == AUTO:
        raise UsageError(f"{source}: key 'repeat' has value \"auto\", which stops a point's replicates on one "
                         "target's figures; a fleet run (--host) measures every host at once: give repeat a number "
                         "(the presets' default, 3, runs in a fleet).")
    fixed = {f.name for f in fields(Procedure)} - FLEET_PROCEDURE_KEYS
    refused = [k for k in sorted(fixed) if getattr(procedure, k) != getattr(Procedure(), k)]
    if refused:
        raise UsageError(f"{source}: key{'s' if len(refused) > 1 else ''} {', '.join(repr(k) for k in refused)} "
                         "cannot be used in a fleet run (--host): preconditioning, rounds to steady state, adaptive "
                         "axes, time series and telemetry are for one target at a time (replicates and their order "
                         "run in a fleet).")
    if any(isinstance(p, StoragePoint) and p.precision is not None for p in plan):
        raise UsageError(f"{source}: key 'precision' cannot be used in a fleet run (--host): fio's client reports "
                         "nothing per second while its hosts run, so no host's point can be stopped on its own.")
    if any(needs_xmax(p) for p in plan):
        raise UsageError(f"{source}: key 'rate' is a share of X_max without key 'xmax', which takes X_max from the "
                         "points one target measured; a fleet run (--host) measures every host at once: give xmax, "
                         "or a rate in I/Os per second.")
    for key, value in (("cpus", NODE), ("hipri", True), ("layers", True)):
        if any(isinstance(p, StoragePoint) and getattr(p, key) == value for p in plan):
            raise UsageError(f"{source}: key '{key}' has value {json.dumps(value)}, which needs the target's device "
                             "on this machine (its NUMA node, its poll queues, its block requests); a fleet run "
                             "(--host) cannot read its hosts' devices.")


def _new_fleet_session(preset: Preset, plan: list[Point], out_dir: Path, fleet: "Fleet", *, yes: bool,
                       allow_destructive: bool, overrides: Sequence[str],
                       on_created: Callable[[Session], None] | None) -> Session:
    """A fleet run: every host's target judged on that host (SafetyError, exit 3, before anything is created
    anywhere), then the results directory and run.json with the hosts."""
    from app.fleet.runner import FleetRunner

    _check_fleet_plan(Kind(preset.kind), preset.procedure, plan, preset.source)
    writes = preset.writes()
    try:
        runner = FleetRunner(fleet)  # ToolMissing (exit 4) without fio
        fleet.check(writes, yes=yes, allow_destructive=allow_destructive, strict=True)
        check_free_space(out_dir, None, plan, len(plan) * len(fleet.hosts), writes)
        meta = _new_meta(preset, plan, runner, None, False, yes=yes, allow_destructive=allow_destructive,
                         engine="auto", overrides=list(overrides))
        meta["fleet"] = fleet.to_meta()

        def make(results: ResultsDir, lock: DirLock) -> Session:
            results.create(runmeta.new(meta, results.run_json))
            return Session(results=results, kind=Kind.STORAGE, plan=plan, targets=FleetTargets(fleet), runner=runner,
                           yes=yes, allow_destructive=allow_destructive, lock=lock, procedure=preset.procedure)

        return _create(out_dir, make, [], on_created)
    except BaseException:
        fleet.close()
        raise


def load_session(path: str | os.PathLike[str], *, engine: str | None = None, yes: bool = False,
                 allow_destructive: bool = False) -> Session:
    """Re-open a results directory to finish it (``resume``), holding its lock (before its pending
    points are read: one process per directory).  A run.json that says ``running`` with the lock free
    was left by a process that died, and is resumed like an interrupted run.

    A results directory is untrusted input: run.json may have been edited, so every plan point is
    validated again by the presets' own validators, and the target is checked again with the safety
    rules and the confirmations given now (``yes``/``allow_destructive``), exactly as for a new run.
    Nothing in run.json confirms anything."""
    results = ResultsDir(path)
    lock: DirLock | None = None
    try:
        if os.path.isdir(path):
            # the directory and raw/ checked (no other user can write them: fio reads its job files there)
            # and held by a descriptor from here on
            results.open()
        if results.exists():  # no run.json: read_meta says so
            lock = DirLock(results.path, results.fd).acquire()
            results.open_raw()
        session = _open_session(results, lock, engine=engine, yes=yes, allow_destructive=allow_destructive)
        if session.tune_settings:  # SafetyError when another --tune run holds what this one changes
            session.settings_lock = tune.lock_settings(session.target, session.path)
        return session
    except BaseException:
        if lock is not None:
            lock.release()
        results.close()
        raise


@dataclass(frozen=True)
class RecordedPlan:
    """What a results directory's run.json says was planned, every value checked by the presets' validators."""

    meta: RunMeta
    kind: Kind
    plan: list[Point]
    procedure: Procedure

    @property
    def writes(self) -> bool:
        """The rest of the run may write to the target: a write point, or preconditioning."""
        return plan_writes(self.plan) or self.procedure.precondition != "none"


def recorded_plan(results: ResultsDir) -> RecordedPlan:
    """run.json's kind, plan and procedure, validated as a new run's are (UsageError naming the key)."""
    meta = results.read_meta()
    source = str(results.run_json)
    if meta.kind not in KINDS:
        raise UsageError(f"{source}: key 'kind' has invalid value {json.dumps(meta.kind)[:80]}: "
                         "must be storage or memory.")
    kind = Kind(meta.kind)
    plan = validate_plan(kind, meta.doc.get("plan"), source)
    procedure = validate_procedure(kind, meta.procedure.entry if meta.procedure else None, source)
    check_track(f"{source}: procedure", plan, procedure.track)
    return RecordedPlan(meta, kind, plan, procedure)


def _open_fleet_session(results: ResultsDir, lock: DirLock | None, recorded: RecordedPlan, *, yes: bool,
                        allow_destructive: bool) -> Session:
    """``resume`` of a fleet run: its hosts and targets read again from run.json (untrusted), every host's
    target judged again with the confirmations given now."""
    from app.fleet.runner import FleetRunner, fleet_from_meta

    source = str(results.run_json)
    meta = recorded.meta
    _check_fleet_plan(recorded.kind, recorded.procedure, recorded.plan, source)
    if meta.target is not None:
        raise UsageError(f"{source}: key 'target' has invalid value {json.dumps(meta.target)[:200]}: a fleet run "
                         "names its targets under 'fleet'.")
    fleet = fleet_from_meta(meta.fleet, source)
    try:
        runner = FleetRunner(fleet)  # ToolMissing (exit 4) without fio
        fleet.check(recorded.writes, yes=yes, allow_destructive=allow_destructive, strict=True)
        check_free_space(results.path, None, recorded.plan, len(recorded.plan) * len(fleet.hosts), recorded.writes)
    except BaseException:
        fleet.close()
        raise
    return Session(results=results, kind=Kind.STORAGE, plan=recorded.plan, targets=FleetTargets(fleet), runner=runner,
                   yes=yes, allow_destructive=allow_destructive, lock=lock, procedure=recorded.procedure)


def _open_session(results: ResultsDir, lock: DirLock | None, *, engine: str | None, yes: bool,
                  allow_destructive: bool) -> Session:
    recorded = recorded_plan(results)
    meta, kind, plan, procedure = recorded.meta, recorded.kind, recorded.plan, recorded.procedure
    source = str(results.run_json)
    check_precondition(procedure, plan, source)
    check_shares(plan, source)
    chosen_engine = engine or meta.engine or "auto"
    if chosen_engine not in ENGINES:
        raise UsageError(f"{source}: key 'engine' has invalid value {json.dumps(chosen_engine, default=str)[:80]}: "
                         f"must be one of {', '.join(ENGINES)}.")
    target = meta.target
    local = LocalTarget(None)
    writes = recorded.writes
    if meta.is_fleet:
        return _open_fleet_session(results, lock, recorded, yes=yes, allow_destructive=allow_destructive)
    if kind == Kind.STORAGE:
        if target is None or not target.startswith("/") or any(ord(c) < 32 or c == "\x7f" for c in target):
            raise UsageError(f"{source}: key 'target' has invalid value {json.dumps(target, default=str)[:200]}: "
                             "expected the absolute path of the file or block device the run measured.")
        safety.check_trust(target, writes, links_only=True)
        target = os.path.realpath(target)
        local = LocalTarget.recorded(target, meta)
        check_storage_target(target, plan, yes=yes, allow_destructive=allow_destructive, writes=writes)
    elif target is not None:
        raise UsageError(f"{source}: key 'target' has invalid value {json.dumps(target, default=str)[:200]}: "
                         "a memory run has no target.")
    check_free_space(results.path, target, plan, len(plan), writes)
    runner = get_runner(kind, chosen_engine)
    runner.check_plan(plan)  # as for run: nodes, CPUs, free memory and what the engine can do, on this machine now
    tune_settings = bool(meta.tune and meta.tune.get("requested") is True)
    if tune_settings:
        check_tune(False)
    notes = _resume_tune_leftovers(results)
    return Session(results=results, kind=kind, plan=plan, targets=local, runner=runner,
                   yes=yes, allow_destructive=allow_destructive, engine=chosen_engine, lock=lock, procedure=procedure,
                   tune_settings=tune_settings, notes=notes)


def check_tune(fleet: bool) -> None:
    """--tune is for this machine, as root (UsageError otherwise, before anything is made or changed)."""
    if fleet:
        raise UsageError("--tune changes this machine's settings, not a fleet host's: run without --host, or "
                         "without --tune.")
    if os.geteuid() != 0:
        raise UsageError(tune.NEEDS_ROOT)


def restore_tune_leftovers(own: ResultsDir | None = None) -> list[str]:
    """Every --tune restore record a killed run left (app.host.tune.restore_leftovers) acted on; one line each for
    run.json's warnings.  ``own``: a resumed run, whose run.json ``tune`` records what was restored of its own."""
    found, refused = tune.restore_leftovers()
    for left in found:
        if own is not None and left.run_dir == os.path.realpath(own.path):
            meta = own.read_meta()
            own.write_meta(meta.with_changes(tune=tune.merge_restored(meta.tune, left.changes)))
    return [left.line for left in found] + refused


def _resume_tune_leftovers(results: ResultsDir) -> list[str]:
    notes = restore_tune_leftovers(results)
    if notes:
        results.update_meta(warnings=list(results.read_meta().warnings) + notes)
    return notes
