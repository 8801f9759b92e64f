"""Replay: a finished storage run's live view again, from what its results directory kept.

The run screen draws a run from its session's events (app.engine.sweep: ``RunStarted``, ``PointStarted``, ``Phase``,
``Sample``, ``PointDone`` …).  A finished run kept every one-second sample of each point in
``raw/NNNN-JOB.samples.jsonl`` and every point's results line in ``results.jsonl``; :func:`load` rebuilds the
same events from those files, each placed on the run's own timeline (:class:`Step`), and :func:`play` hands
them out in time with a :class:`ReplayClock` whose speed (1× to 60×) changes, and which pauses, while it plays.

**Time.**  Within a point the samples' own timestamps are kept: a sample comes ``t`` minus the previous
sample's ``t`` after it (its ``t`` after the point's start for the first).  What the samples do not cover —
fio starting and laying out its test file before its first measured second, a jump in ``t`` beyond a sample's
own ``interval_s`` (a line left out, a stall between dumps) — is shortened: a sample comes at most its own
interval (at most :data:`MAX_INTERVAL_S`) plus :data:`GAP_S` after the one before it.  Between two points
(fio's exit, the results line, the next fio's start) no time passes.  The replay at speed N shows each run
second in 1/N of a wall second.

**Hostile input.**  The directory and raw/ are opened once, checked like a run's
(:func:`app.store.results.open_trusted_dir`:
no directory another user can change, no symbolic link followed), every file in them is opened relative to
them without following a symbolic link, must be a regular file no other user can write, and is read up to a
bound (:data:`MAX_SAMPLES_BYTES`, :data:`MAX_SAMPLE_LINE`, :data:`MAX_SAMPLES`).  A samples line that is not a
JSON object of finite figures is named (file, line, key) in :attr:`Replay.problems` and skipped; only the
known keys of a sample are passed on, so no text from the file reaches the screen.

**Nothing is written and no lock is taken.**  A run whose process still holds the directory's lock (status
``running``) is refused: its last point is still being written; it is replayed once it has finished.  The lock
is only tested the way the runs browser tests it (:func:`app.store.lock.effective_status`).
"""

from __future__ import annotations

import asyncio
import json
import os
import stat
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, AsyncIterator, Awaitable, Callable, Mapping, Sequence

from app.core.errors import UsageError
from app.core.sanitize import clean_json, clean_line
from app.model.points import Kind, RunStatus, point_from_dict
from app.model.records import line_json, number
from app.model.runmeta import RunMeta
from app.runners.base import Phase, Sample
from app.stats.latmap import DIRECTIONS as HIST_DIRECTIONS
from app.stats.latmap import MAX_HIST_BYTES, sample_hists
from app.store.lock import effective_status
from app.store.results import (
    RAW,
    RESULTS_JSONL,
    RUN_JSON,
    NotRegularFile,
    ResultsDir,
    foreign,
    json_objects,
    open_trusted_dir,
    read_regular,
)

SPEEDS = (1, 2, 5, 10, 30, 60)  # the speeds a replay steps through (run seconds per wall second)
DEFAULT_SPEED = 10
GAP_S = 1.0  # run seconds a stretch without samples (fio starting, between points) is compressed to at most
MAX_INTERVAL_S = 60.0  # a sample's own interval counted at most this long (fio prints one every second)
MAX_SAMPLES_BYTES = 16 << 20  # a samples file: at most this much is read …
MAX_SAMPLE_LINE = 64 << 10  # … no line longer than this is parsed …
MAX_SAMPLES = 100_000  # … and at most this many samples kept (a day of seconds is 86,400)
MAX_RUN_HIST_SECONDS = 20_000  # seconds of histograms the Heat tab replays (each ~2-5 KB held); later points without
MAX_RUN_SAMPLES = 200_000  # samples of the whole run kept (two days of seconds); later points replay without
MAX_PROBLEMS = 20  # problems named one by one; beyond, only counted
EARLY_S = 0.001  # an event this close to its time is shown now (a float's rounding never spins the loop)
TICK_S = 0.05  # the longest the player sleeps before it looks at the clock again (speed or pause changed)

REPLAY_RISK = "what it holds could be changed by another user while it is read; replay a run only you or root can write"

MAX_FIGURE = 1e15  # a sample's figure above this is no device's (10^15 IOPS, B/s, ns: 11 days): the line is skipped

#: the figures a sample may hold (docs/results-schema.md, "raw/NNNN-JOB.samples.jsonl")
FIGURES = ("interval_s", "iops", "read_iops", "write_iops", "bw_bytes", "lat_mean_ns", "lat_p50_ns", "lat_p99_ns",
           "lat_p99_9_ns")
STEADY_FIGURES = ("window_s", "filled_s", "deviation")


class ReplayError(UsageError):
    """A run that cannot be replayed: one sentence naming the directory or file and why."""


# --- the samples file -------------------------------------------------------------------------------


@dataclass
class SamplesRead:
    """What a samples file held: its usable samples, in order, and one sentence per line left out."""

    samples: list[dict[str, Any]] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)


def _bad(shown: str, lineno: int, key: str | None, what: str) -> str:
    where = f"{shown}, line {lineno}" + (f", key '{key}'" if key is not None else "")
    return f"{where}: {what}; the line is skipped."


def _quoted(value: object) -> str:
    """A value as a problem quotes it: JSON, at most 40 characters, non-ASCII escaped (no control character
    from the file reaches a terminal)."""
    text = json.dumps(value, ensure_ascii=True, default=str)
    return text if len(text) <= 40 else text[:39] + "…"


def sample_of(obj: object, shown: str, lineno: int, after_t: float | None) -> tuple[dict[str, Any] | None, str | None]:
    """One samples line's object checked: (the sample with only its known keys, None) or (None, the problem).
    ``t`` must be a finite number of seconds ≥ 0 not before ``after_t`` (the line before); each figure a finite
    number from 0 to :data:`MAX_FIGURE` or null; ``ramp`` a boolean; ``steady`` an object of such figures and
    ``attained``."""
    if not isinstance(obj, dict):
        return None, _bad(shown, lineno, None, "is not a JSON object")
    t = number(obj.get("t"))
    if t is None or t < 0:
        return None, _bad(shown, lineno, "t", f"has value {_quoted(obj.get('t'))}, not a number of seconds ≥ 0")
    if after_t is not None and t < after_t:
        return None, _bad(shown, lineno, "t", f"goes back in time ({t:g} s after {after_t:g} s)")
    sample: dict[str, Any] = {"t": t}
    for key in FIGURES:
        if key not in obj or obj[key] is None:
            continue
        v = number(obj[key])
        if v is None or v < 0:
            return None, _bad(shown, lineno, key, f"has value {_quoted(obj[key])}, not a number ≥ 0")
        if v > MAX_FIGURE:
            return None, _bad(shown, lineno, key, f"has value {_quoted(obj[key])}, more than any device's figure "
                                                  f"(at most {MAX_FIGURE:g})")
        sample[key] = v
    ramp = obj.get("ramp")
    if ramp is not None:
        if not isinstance(ramp, bool):
            return None, _bad(shown, lineno, "ramp", f"has value {_quoted(ramp)}, not true or false")
        if ramp:
            sample["ramp"] = True
    steady = obj.get("steady")
    if steady is not None:
        if not isinstance(steady, dict):
            return None, _bad(shown, lineno, "steady", f"has value {_quoted(steady)}, not an object")
        kept: dict[str, Any] = {}
        for key in STEADY_FIGURES:
            if steady.get(key) is None:
                continue
            v = number(steady[key])
            if v is None or v < 0 or v > MAX_FIGURE:
                return None, _bad(shown, lineno, f"steady.{key}",
                                  f"has value {_quoted(steady[key])}, not a number from 0 to {MAX_FIGURE:g}")
            kept[key] = v
        if isinstance(steady.get("attained"), bool):
            kept["attained"] = steady["attained"]
        sample["steady"] = kept
    return sample, None


def parse_samples(data: bytes, shown: str) -> SamplesRead:
    """The samples of a samples file's bytes (already bounded by the reader): each line a JSON object
    (:func:`sample_of`); a line longer than :data:`MAX_SAMPLE_LINE`, not UTF-8 JSON, or with a bad key is named
    and skipped; a last line without its newline (the run was cut off while it wrote it) is left out silently
    when it does not parse."""
    out = SamplesRead()
    lines = data.split(b"\n")
    torn = lines[-1] if lines and lines[-1] else None  # no newline after the last line
    left_out = 0
    after: float | None = None
    for lineno, raw in enumerate(lines, start=1):
        if not raw.strip():
            continue
        if len(out.samples) >= MAX_SAMPLES:
            out.problems.append(f"{shown}: holds more than {MAX_SAMPLES:,} samples; the rest is not replayed.")
            break
        problem: str | None
        if len(raw) > MAX_SAMPLE_LINE:
            problem = _bad(shown, lineno, None, f"is longer than {MAX_SAMPLE_LINE >> 10} KiB")
        else:
            try:
                obj = json.loads(raw.decode("utf-8"))
            except (UnicodeDecodeError, ValueError, RecursionError):
                if raw is torn and lineno == len(lines):
                    continue  # a torn last line: the interval it began was never complete
                problem = _bad(shown, lineno, None, "is not a line of JSON")
            else:
                sample, problem = sample_of(obj, shown, lineno, after)
                if sample is not None:
                    out.samples.append(sample)
                    after = sample["t"]
                    continue
        if len(out.problems) < MAX_PROBLEMS:
            out.problems.append(str(problem))
        else:
            left_out += 1
    if left_out:
        out.problems.append(f"{shown}: {left_out} more lines are skipped.")
    return out


def read_samples_file(raw_fd: int, name: str, shown: str) -> SamplesRead:
    """A point's samples file (``name`` in raw/, no symbolic link followed, no FIFO waited on): a regular file no
    other user can write (ReplayError otherwise), at most :data:`MAX_SAMPLES_BYTES` of it."""

    def ours(st: os.stat_result) -> None:
        why = foreign(st)
        if why:
            raise ReplayError(f"{shown}: {why}, so {REPLAY_RISK}.")

    try:
        data = read_regular(name, MAX_SAMPLES_BYTES, dir_fd=raw_fd, check=ours)
    except NotRegularFile:
        raise ReplayError(f"{shown}: is not a regular file.") from None
    except OSError as e:
        raise ReplayError(f"{shown}: cannot be read ({e.strerror or e}).") from None
    if len(data) <= MAX_SAMPLES_BYTES:
        return parse_samples(data, shown)
    cut = data[:MAX_SAMPLES_BYTES]
    out = parse_samples(cut[:cut.rfind(b"\n") + 1], shown)
    out.problems.append(f"{shown}: is larger than {MAX_SAMPLES_BYTES >> 20} MiB; only its first "
                        f"{MAX_SAMPLES_BYTES >> 20} MiB are replayed.")
    return out


# --- the run's events on its timeline ----------------------------------------------------------------


@dataclass(frozen=True)
class Step:
    at: float  # run seconds since the replay's start when the event is shown
    event: object


@dataclass
class Replay:
    """A run's events in order, each at its run time; ``duration_s`` is when the last comes (at 1×)."""

    path: Path
    meta: RunMeta
    steps: list[Step]
    duration_s: float
    samples: int  # samples replayed
    problems: list[str]  # lines of the files left out, one sentence each


def sample_file_name(raw: object, shown_dir: Path, key: str = "samples") -> str | None:
    """The name in raw/ of a results line's samples file (its ``raw.samples``: ``raw/NAME``; ``key``: another of
    its files, ``hist``), None when the line names none; ReplayError when it names a path outside raw/."""
    rel = raw.get(key) if isinstance(raw, dict) else None
    if rel is None:
        return None
    parts = rel.split("/") if isinstance(rel, str) else []
    if len(parts) != 2 or parts[0] != RAW or parts[1] in ("", ".", "..") or "\0" in rel:
        raise ReplayError(f"{shown_dir / RESULTS_JSONL}: key 'raw.{key}' has value {_quoted(rel)}, not a file "
                          "in raw/.")
    return parts[1]


def read_hist_file(raw_fd: int, name: str, shown: str) -> dict[float, dict[str, list[int]]]:
    """A point's per-second histograms (raw/NNNN-JOB.hist.jsonl, app.stats.latmap) by their second's ``t``, for the
    Heat tab: the same rule as the samples file (a regular file no other user can write, ReplayError otherwise),
    at most app.stats.latmap.MAX_HIST_BYTES; a line that is not a histograms line is left out."""

    def ours(st: os.stat_result) -> None:
        why = foreign(st)
        if why:
            raise ReplayError(f"{shown}: {why}, so {REPLAY_RISK}.")

    try:
        data = read_regular(name, MAX_HIST_BYTES, dir_fd=raw_fd, check=ours)[:MAX_HIST_BYTES]
    except NotRegularFile:
        raise ReplayError(f"{shown}: is not a regular file.") from None
    except OSError as e:
        raise ReplayError(f"{shown}: cannot be read ({e.strerror or e}).") from None
    out: dict[float, dict[str, list[int]]] = {}
    for obj in json_objects(data.decode("utf-8", "replace").splitlines()):
        t = number(obj.get("t"))
        if t is not None and sample_hists(obj) is not None:  # checked: its records are histograms
            out[t] = {d: obj[d] for d in HIST_DIRECTIONS if d in obj}
    return out


def _phase(index: int, sample: dict[str, Any], ramp_s: float) -> Phase:
    """What fio was doing in a sample's second, as the live run said it (Phase): the ramp, the steady-state
    window's filling, or measuring."""
    if sample.get("ramp"):
        return Phase(index, "ramp", min(ramp_s, sample["t"]) if ramp_s else sample["t"], ramp_s or None)
    steady = sample.get("steady")
    if isinstance(steady, dict) and steady.get("window_s") is not None:
        return Phase(index, "steady", steady.get("filled_s", 0.0), steady["window_s"])
    return Phase(index, "measuring", None, None)


class _Timeline:
    """Builds the steps: a cursor on the run's time that samples advance by their own intervals."""

    def __init__(self) -> None:
        self.steps: list[Step] = []
        self.at = 0.0
        self.samples = 0

    def add(self, event: object) -> None:
        self.steps.append(Step(self.at, event))

    def samples_of(self, index: int, samples: Sequence[dict[str, Any]], ramp_s: float,
                   wrap: Callable[[dict[str, Any]], object] | None = None,
                   hists: Mapping[float, dict[str, list[int]]] | None = None) -> None:
        """A point's samples at their own pace (module docstring, "Time"); its phases where they change."""
        shown: tuple[object, ...] | None = None
        if samples and wrap is None:  # what the live run said as fio started: the first second's phase, at 0
            first = _phase(index, samples[0], ramp_s)
            if first.done is not None:
                first.done = 0.0
            self.add(first)
            shown = (first.phase, first.done, first.total)
        before: float | None = None
        for sample in samples:
            own = min(float(sample.get("interval_s") or 1.0), MAX_INTERVAL_S)  # the second it measured
            since = sample["t"] - (before if before is not None else 0.0)  # since the last sample, or fio's start
            self.at += min(since, own + GAP_S)  # the samples' own time, what they do not cover shortened
            before = sample["t"]
            if wrap is None:
                phase = _phase(index, sample, ramp_s)
                key = (phase.phase, phase.done, phase.total)
                if key != shown:
                    shown = key
                    self.add(phase)
                self.add(Sample(index, sample, (hists or {}).get(sample["t"])))
            else:
                self.add(wrap(sample))
            self.samples += 1


def _check_file(results: ResultsDir, name: str) -> None:
    """run.json or results.jsonl: a regular file (or absent) no other user can write."""
    assert results.fd is not None
    try:
        st = os.stat(name, dir_fd=results.fd, follow_symlinks=False)
    except FileNotFoundError:
        return
    except OSError as e:
        raise ReplayError(f"{results.path / name}: cannot be examined ({e.strerror}).") from None
    if not stat.S_ISREG(st.st_mode):
        raise ReplayError(f"{results.path / name}: is not a regular file.")
    why = foreign(st)
    if why:
        raise ReplayError(f"{results.path / name}: {why}, so {REPLAY_RISK}.")


def _refuse_unless_replayable(path: Path, meta: RunMeta) -> None:
    status = effective_status(path, meta.status)
    if status in (RunStatus.RUNNING, RunStatus.PLANNED):
        raise ReplayError(f"{path}: its run is still {status} (another process holds its lock); replay it once it has "
                          "finished.")
    if meta.kind != Kind.STORAGE:
        kind = clean_line(meta.kind or "unknown", 20)
        raise ReplayError(f"{path}: a {kind} run keeps no per-second samples; only storage runs can be replayed.")
    if meta.is_fleet:
        raise ReplayError(f"{path}: a fleet run keeps no per-second samples of its hosts; it cannot be replayed.")


def load(path: str | os.PathLike[str]) -> Replay:
    """The run in ``path`` as a replay (ReplayError, one sentence, when it cannot be one).  Reads run.json,
    results.jsonl and the samples files they name; writes nothing."""
    from app.engine import sweep

    results = ResultsDir(path)
    try:
        results.fd = open_trusted_dir(results.path, risk=REPLAY_RISK)
        _check_file(results, RUN_JSON)
        _check_file(results, RESULTS_JSONL)
        meta = results.read_meta()
        _refuse_unless_replayable(results.path, meta)
        records = results.read_records(meta.plan)
        lines = sorted(records.lines, key=lambda line: line.index if line.index is not None else -1)
        try:
            os.stat(RAW, dir_fd=results.fd, follow_symlinks=False)
            results.raw_fd = open_trusted_dir(results.path / RAW, RAW, results.fd, risk=REPLAY_RISK)
        except FileNotFoundError:
            pass
        replay = _build(results, meta, lines, sweep)
        # the results lines left out, each named (file, line, key), before the samples' own notes
        more = records.unreadable + records.outside - len(records.problems)
        named = [f"{p} Its point is not replayed." for p in records.problems]
        if more:
            named.append(f"{results.results_jsonl}: {more} more lines cannot be read; their points are not replayed.")
        replay.problems[:0] = named
        return replay
    except ReplayError:
        raise
    except UsageError as e:  # the directory's own refusals (another user's, a link, run.json unreadable)
        raise ReplayError(str(e)) from None
    except OSError as e:
        raise ReplayError(f"{results.path}: cannot be read ({e.strerror or e}).") from None
    finally:
        results.close()


def _build(results: ResultsDir, meta: RunMeta, lines: Sequence[Any], sweep: Any) -> Replay:
    path = results.path
    problems: list[str] = []

    kept = 0

    def samples(raw: object) -> list[dict[str, Any]]:
        nonlocal kept
        name = sample_file_name(raw, path)
        if name is None or results.raw_fd is None or kept >= MAX_RUN_SAMPLES:
            return []
        read = read_samples_file(results.raw_fd, name, f"{path / RAW / name}")
        problems.extend(read.problems)
        out = read.samples[:MAX_RUN_SAMPLES - kept]
        kept += len(out)
        if kept >= MAX_RUN_SAMPLES:
            problems.append(f"{path}: holds more than {MAX_RUN_SAMPLES:,} samples; the points after "
                            f"{path / RAW / name} replay without theirs.")
        return out

    hist_seconds = 0

    def hists(raw: object) -> dict[float, dict[str, list[int]]]:
        """The point's per-second histograms for the Heat tab, at most MAX_RUN_HIST_SECONDS in the run."""
        nonlocal hist_seconds
        name = sample_file_name(raw, path, "hist")
        if name is None or results.raw_fd is None or hist_seconds >= MAX_RUN_HIST_SECONDS:
            return {}
        got = read_hist_file(results.raw_fd, name, f"{path / RAW / name}")
        hist_seconds += len(got)
        return got

    skipped = {s.index: s for s in meta.skipped if s.index is not None}
    measured = {line.index for line in lines}
    # a point that failed and was measured again by a resume: its results line, not the failure
    failed = {f.index: f for f in meta.failures if f.index is not None and f.index not in measured}
    total = max(len(meta.plan) - len(skipped), len(lines))
    tl = _Timeline()
    tl.add(sweep.RunStarted(total, total, 0.0, meta, path))  # estimate_s set below, once the timeline is known
    pre = meta.precondition
    if isinstance(pre, dict) and isinstance(pre.get("raw"), dict):
        pre_samples = samples(pre["raw"])
        if pre_samples:
            tl.add(sweep.PreconditionStarted(clean_line(pre.get("mode") or "sequential", 40),
                                             clean_line(pre.get("description") or "", 200), 0.0))
            tl.samples_of(-1, pre_samples, 0.0, wrap=lambda s: sweep.PreconditionProgress(s))
            # what the run screen says of it: its figures (numbers only) and its status
            shown = {k: number(pre.get(k)) for k in ("seconds", "io_bytes", "bw_bytes")}
            tl.add(sweep.PreconditionDone({**shown, "status": clean_line(pre.get("status") or "", 40)}))
    done = 0
    # the points in plan order: measured (0), failed (1, from run.json), skipped (2, from run.json)
    entries: list[tuple[int, int, Any]] = [(line.index if line.index is not None else -1, 0, line) for line in lines]
    entries += [(i, 1, f) for i, f in failed.items()] + [(i, 2, s) for i, s in skipped.items()]
    for index, what, entry in sorted(entries, key=lambda e: (e[0], e[1])):
        record: dict[str, Any] | None = None
        if what == 0:
            cleaned = clean_json(line_json(entry))  # its strings (a steady criterion, notes) go into the log
            record = cleaned if isinstance(cleaned, dict) else {}
            point_json = record.get("point")
        else:
            point_json = entry.point if what == 2 else entry.entry.get("point")
        try:
            point = point_from_dict(Kind.STORAGE, point_json) if isinstance(point_json, dict) else None
        except (TypeError, ValueError):
            point = None
        if point is None:
            problems.append(f"{path / RESULTS_JSONL}: the point of index {index} cannot be read; it is not replayed.")
            continue
        if what == 2:
            tl.add(sweep.PointSkipped(index, point, clean_line(entry.reason or "skipped")))
            continue
        tl.add(sweep.PointStarted(index, point, done, total, 0.0))
        if record is None:
            tl.add(sweep.PointFailed(index, point, clean_line(entry.error or "failed")))
            continue
        tl.samples_of(index, samples(record.get("raw")), number(getattr(point, "ramp_time", 0)) or 0.0,
                      hists=hists(record.get("raw")))
        done += 1
        tl.add(sweep.PointDone(index, record, done, total))
    status = meta.status if meta.status in tuple(RunStatus) else RunStatus.INTERRUPTED
    tl.add(sweep.RunFinished(RunStatus(status), done, total, len(failed), path))
    if not tl.samples:
        raise ReplayError(f"{path}: kept no per-second samples (raw/*.samples.jsonl); there is nothing to replay.")
    _set_estimates(tl.steps, sweep)
    return Replay(path, meta, tl.steps, tl.at, tl.samples, problems)


def _set_estimates(steps: list[Step], sweep: Any) -> None:
    """Each PointStarted's (and the RunStarted's) time left: the replay's run seconds from there to its end,
    what the run screen counts down."""
    end = steps[-1].at if steps else 0.0
    for i, step in enumerate(steps):
        ev = step.event
        if isinstance(ev, (sweep.RunStarted, sweep.PointStarted)):
            left = end - step.at
            if isinstance(ev, sweep.RunStarted):
                ev.estimate_s = left
            else:
                ev.remaining_s = left
            steps[i] = Step(step.at, ev)


# --- playing it --------------------------------------------------------------------------------------


class ReplayClock:
    """The replay's position on the run's timeline (run seconds), advancing ``speed`` times as fast as the wall
    clock ``now`` while not paused.  Changing the speed or pausing keeps the position."""

    def __init__(self, speed: float = DEFAULT_SPEED, now: Callable[[], float] = time.monotonic) -> None:
        self.now = now
        self.speed = float(speed)
        self.paused = False
        self._pos = 0.0
        self._since = now()

    def position(self) -> float:
        if self.paused:
            return self._pos
        return self._pos + (self.now() - self._since) * self.speed

    def _rebase(self) -> None:
        self._pos = self.position()
        self._since = self.now()

    def set_speed(self, speed: float) -> None:
        self._rebase()
        self.speed = float(speed)

    def step_speed(self, up: bool) -> float:
        """The next speed of :data:`SPEEDS` up or down (kept at either end); the speed now."""
        if up:
            nxt = next((s for s in SPEEDS if s > self.speed), SPEEDS[-1])
        else:
            nxt = next((s for s in reversed(SPEEDS) if s < self.speed), SPEEDS[0])
        self.set_speed(nxt)
        return self.speed

    def toggle_pause(self) -> bool:
        """Paused or playing again; whether paused now."""
        self._rebase()
        self.paused = not self.paused
        return self.paused

    def wall_until(self, at: float) -> float | None:
        """Wall seconds until the position reaches ``at`` (≤ 0: reached), None while paused."""
        if self.paused:
            return None
        return (at - self.position()) / self.speed


async def play(steps: Sequence[Step], clock: ReplayClock,
               sleep: Callable[[float], Awaitable[None]] = asyncio.sleep) -> AsyncIterator[object]:
    """The steps' events, each once the clock reaches its time; the clock is looked at at least every
    :data:`TICK_S`, so a new speed or a pause takes effect at once."""
    for step in steps:
        while True:
            left = clock.wall_until(step.at)
            if left is not None and left <= EARLY_S:
                break
            await sleep(TICK_S if left is None else min(TICK_S, left))
        yield step.event
