"""The runs a results root holds: one summary per results directory, for the TUI's runs browser and its bench.

A results root is ``$PROFILER_TUI_RESULTS`` (else ``results/``), plus the container's ``/results`` when it
exists.  Each directory with a ``run.json`` directly under a root is a run; its summary comes from run.json
(read bounded, by :func:`app.model.runmeta.parse`: a run.json larger than :data:`MAX_META_BYTES`, not JSON, or with
a key of the wrong type is listed as unreadable with that sentence, never an error) and, for a run that did
not end, the lines of results.jsonl that measure a point of its plan, counted as resume counts them.  The
status is :func:`app.store.lock.effective_status`: ``running`` only while a process holds the directory's lock.

**Another user's run.**  The TUI shows what a run directory holds, so it reads one only when no other user can
change it: the directory (and, for a run opened, every directory above it) owned by root or this user and not
writable by group or others (:func:`app.store.results.foreign`; a sticky root such as a shared ``/tmp/results`` is
fine), its files likewise.  Any other directory is listed as ``foreign`` with the sentence why, and nothing in it
is read; every action on it is refused with that sentence.  :func:`view_problem` is the check the TUI's screens
make before they open a run, :func:`read_report` the report view's reader of ``report.md``.

**Text from a run.**  Every string a summary holds (the directory's name too) is cleaned by
:func:`app.core.sanitize.clean_line`: no control character or escape sequence of a results directory reaches a
terminal.

Headless: no UI library; the TUI calls :func:`list_runs` in a thread.
"""

from __future__ import annotations

import errno
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable

from app.core import settings
from app.core.errors import ProfilerError, UsageError
from app.core.sanitize import clean_line, clean_text
from app.model.runmeta import RunMeta, RunMetaError
from app.model.runmeta import parse as parse_run_json
from app.store.lock import effective_status
from app.store.results import NotRegularFile, ResultsDir, foreign, open_trusted_dir, read_regular

MAX_META_BYTES = 64 << 20  # as app.store.results reads run.json
MAX_RUNS = 5000  # directories looked at per root, newest names first
CONTAINER_RESULTS = Path("/results")
RESUMABLE = frozenset({"interrupted", "partial", "failed", "planned"})
FOREIGN = "foreign"  # the status of a directory another user can change: listed, never read
VIEW_RISK = "another user could change what it shows; the TUI opens only runs that only you or root can change"
MAX_REPORT_BYTES = 16 << 20  # report.md as the report view reads it


@dataclass(frozen=True)
class RunSummary:
    path: Path
    preset: str
    kind: str  # storage, memory, mixed, or "?" when run.json does not say
    target: str  # the path measured, "memory" for a memory run, "" when unknown
    started: str  # ISO-8601 as run.json has it ("" when unknown)
    done: int
    planned: int
    status: str  # complete, partial, interrupted, running, failed, planned, imported, unreadable, foreign
    problem: str = ""  # why run.json could not be read, or why the directory is not read (foreign)

    @property
    def name(self) -> str:
        """The directory's name as a screen may show it (another user chose it: cleaned)."""
        return clean_line(self.path.name, 200)

    @property
    def resumable(self) -> bool:
        return self.status in RESUMABLE

    @property
    def usable(self) -> bool:
        """Whether the TUI opens it (its results, report, replay, a comparison, a resume): not when its run.json
        cannot be read or another user can change it (``problem`` says which)."""
        return not self.problem

    def matches(self, words: str) -> bool:
        """Every word of ``words`` appears in one of the shown fields (case-insensitive)."""
        hay = " ".join((self.name, self.preset, self.kind, self.target, self.started, self.status)).lower()
        return all(w in hay for w in words.lower().split())


def results_roots(configured: str | os.PathLike[str] | None = None) -> list[Path]:
    """The roots to list: the configured one (or $PROFILER_TUI_RESULTS, else results/) and /results."""
    first = settings.results_root(configured)
    roots = [first]
    try:
        if CONTAINER_RESULTS.is_dir() and CONTAINER_RESULTS.resolve() != first.resolve():
            roots.append(CONTAINER_RESULTS)
    except OSError:
        pass
    return roots


class _Foreign(Exception):
    """A file another user can change: not read."""


def _not_foreign(st: os.stat_result) -> None:
    """A file's check before it is read (app.store.results.read_regular): another user's, or writable by others, is
    not."""
    why = foreign(st)
    if why:
        raise _Foreign(why)


def _read_meta(path: Path) -> RunMeta | str:
    """run.json by :func:`app.model.runmeta.parse`, or why it cannot be read (raises _Foreign for another user's)."""
    try:
        data = read_regular(path, MAX_META_BYTES, check=_not_foreign)
    except NotRegularFile:
        return "run.json is not a regular file"
    except OSError as e:
        return clean_line(e.strerror or e)
    if len(data) > MAX_META_BYTES:
        return "run.json is too large"
    try:
        return parse_run_json(data, path)
    except RunMetaError as e:
        return clean_line(e, 400)


def _count_measured(path: Path, meta: RunMeta) -> int:
    """The lines of results.jsonl that measure a point of run.json's plan, counted as resume and the report count
    them (:meth:`app.store.results.ResultsDir.read_records` with the plan: a torn last line, a line whose index and
    point disagree with the plan are not one); 0 when it cannot be read."""
    try:
        return len(ResultsDir(path).lines(meta.plan))
    except (ProfilerError, OSError):
        return 0


def _text(v: str | None, limit: int = 200) -> str:
    return clean_line(v, limit) if v is not None else ""


def _not_read(path: Path, status: str, problem: str) -> RunSummary:
    """A directory listed by its name alone, with why it is not read."""
    return RunSummary(path, clean_line(path.name, 200), "?", "", "", 0, 0, status, problem)


def _foreign(path: Path, what: str, why: str) -> RunSummary:
    """A directory (``what`` "it") or its run.json (``what`` "its run.json") another user can change."""
    return _not_read(path, FOREIGN, f"{what} {why}, so {VIEW_RISK}.")


def summarise(path: Path, root_problem: str | None = None) -> RunSummary:
    """The summary of one results directory (never raises for what it finds there); ``root_problem``: why the
    root it is in can be changed by another user (then nothing in it is read)."""
    if root_problem:
        return _not_read(path, FOREIGN, root_problem)
    try:
        why = foreign(os.lstat(path))
    except OSError:
        why = None  # gone: run.json cannot be read either
    if why:
        return _foreign(path, "it", why)
    try:
        meta = _read_meta(path / "run.json")
    except _Foreign as e:
        return _foreign(path, "its run.json", str(e))
    if isinstance(meta, str):
        return _not_read(path, "unreadable", meta)
    name = _text(meta.preset_name)
    kind = _text(meta.kind, 16) or "?"
    target = _text(meta.target, 400) or ("memory" if kind == "memory" else "")
    planned = meta.points_total or len(meta.plan)
    hosts = meta.fleet.get("hosts") if meta.fleet is not None else None
    if isinstance(hosts, list) and 0 < len(hosts) <= 4096:  # a fleet run: a result per point and host
        target = f"fleet of {len(hosts)} host{'s' if len(hosts) > 1 else ''}"
        planned *= len(hosts)
    status = clean_line(effective_status(path, meta.status), 16)
    done = meta.points_done or 0
    if status not in ("complete", "imported") or not done:
        done = _count_measured(path, meta)
    started = _text(meta.started, 40) or _text(meta.imported_at, 40)
    return RunSummary(path, name or clean_line(path.name, 200), kind, target, started, done, planned, status)


def _candidates(root: Path) -> Iterable[tuple[Path, tuple[int, int]]]:
    """(directory, its device and inode) of each subdirectory of ``root`` holding a run.json."""
    try:
        with os.scandir(root) as it:
            entries = [e for e in it if e.is_dir(follow_symlinks=False)]
    except OSError:
        return []
    entries.sort(key=lambda e: e.name, reverse=True)
    out = []
    for e in entries[:MAX_RUNS]:
        try:
            st = e.stat(follow_symlinks=False)
        except OSError:
            continue
        if os.path.exists(os.path.join(e.path, "run.json")):
            out.append((Path(e.path), (st.st_dev, st.st_ino)))
    return out


def list_runs(roots: Iterable[Path]) -> list[RunSummary]:
    """Every run under the roots, newest first (by start time, then name); a directory reached from two
    roots is listed once."""
    seen: set[tuple[int, int]] = set()
    runs: list[RunSummary] = []
    for root in roots:
        candidates = _candidates(root)
        problem = _root_problem(root) if candidates else None
        for path, identity in candidates:
            if identity in seen:
                continue
            seen.add(identity)
            runs.append(summarise(path, problem))
    runs.sort(key=lambda r: (r.started, r.path.name), reverse=True)
    return runs


def _root_problem(root: Path) -> str | None:
    """Why another user can change what a results root holds (its runs could be swapped), or None: the root and
    the directories above it are checked as a run's are; the root itself may be sticky (a shared /tmp/results)."""
    try:
        os.close(open_trusted_dir(root, sticky_ok=True, risk=VIEW_RISK))
    except UsageError as e:
        return clean_line(e, 400)
    return None


def view_problem(path: Path) -> str | None:
    """Why the TUI does not open the run directory ``path`` (one sentence: another user owns it or can change it
    or a directory above it, or a symbolic link of another user's is on the way), or None (also when it is not
    there: the screen then says what it finds)."""
    try:
        os.lstat(path)
    except OSError:
        return None
    try:
        os.close(open_trusted_dir(Path(path), risk=VIEW_RISK))
    except UsageError as e:
        return clean_line(e, 400)
    return None


def read_report(path: Path, limit: int = MAX_REPORT_BYTES) -> str:
    """The ``report.md`` of the run directory ``path`` as the report view shows it, read as the replay reads a
    run: the directory opened once and checked (:func:`view_problem`'s rules), the file opened relative to it
    without following a symbolic link or waiting on a FIFO, a regular file no other user can change, at most
    ``limit`` bytes; its text cleaned of control characters and escape sequences (newlines kept).  UsageError,
    one sentence naming the file and why, otherwise."""
    shown = clean_line(Path(path) / "report.md", 400)
    try:
        fd = open_trusted_dir(Path(path), risk=VIEW_RISK)
    except UsageError as e:  # the sentence names the directory, which another user may have named
        raise UsageError(clean_line(e, 400)) from None
    try:
        data = read_regular("report.md", limit, dir_fd=fd, check=_not_foreign)
    except _Foreign as e:
        raise UsageError(f"{shown}: {e}, so {VIEW_RISK}.") from None
    except NotRegularFile:
        raise UsageError(f"{shown}: is not a regular file (a FIFO, a device or a directory); it is not read.") from None
    except OSError as e:
        if e.errno == errno.ELOOP:
            raise UsageError(f"{shown}: is a symbolic link; the report view does not follow it.") from None
        raise UsageError(f"{shown}: cannot be read ({clean_line(e.strerror or e)}).") from None
    finally:
        os.close(fd)
    if len(data) > limit:
        raise UsageError(f"{shown}: is larger than {limit >> 20} MiB, more than a report of this tool; it is not "
                         "shown.")
    return clean_text(data.decode("utf-8", "replace"), newlines=True)
