"""``run --json-stream``: a session's events as NDJSON, one object per line, for CI systems and dashboards.

Every object has ``schema_version``, ``event`` (its type, below) and ``at`` (ISO-8601 UTC); the rest are
the event's fields (docs/results-schema.md, "Event stream"; app/schemas/event.schema.json):

- ``run_started``: ``total``, ``pending``, ``estimate_s``, ``path``;
- ``point_started``: ``index``, ``point`` (the point's JSON table), ``done``, ``total``, ``remaining_s``;
- ``phase``: ``index`` (-1: the preconditioning pass), ``phase`` (``layout``, ``ramp``, ``measuring``, ``steady``),
  ``done``, ``total`` (layout: bytes of the test file laid out and to lay out; ramp: seconds of ramp_time run and
  asked; steady: seconds of the steady-state window collected and its length; null when unknown or measuring);
- ``sample``: ``index``, ``sample`` (what raw/*.samples.jsonl holds: one interval's figures);
- ``point_done``: ``index``, ``done``, ``total``, ``record`` (the results.jsonl line, byte for byte the same
  object);
- ``point_failed``: ``index``, ``point``, ``error``; ``point_skipped``: ``index``, ``point``, ``reason``;
- ``precondition_started``: ``mode``, ``description``, ``estimate_s``; ``precondition_progress``: ``sample``;
  ``precondition_done``: ``record``;
- ``run_finished``: ``status``, ``done``, ``total``, ``failed``, ``path``;
- ``events_dropped``: ``count`` events (``point_done`` of them point_done) were left out just before this one:
  the reader did not keep up (``EventWriter``);
- ``run_ended``: written by the CLI when the run stopped without ``run_finished``: ``status``
  (``interrupted`` or ``failed``) and ``reason``.
"""

from __future__ import annotations

import collections
import json
import math
import os
import sys
import threading
import time
from typing import Callable, Mapping, TextIO

from app.model.points import Point
from app.runners.base import Phase, Sample
from app.store.results import SCHEMA_VERSION, now_iso


def _table(point: Point) -> dict[str, object]:
    return {**point.to_dict()}


def _clean(value: object) -> object:
    """JSON has no NaN or infinity: such a figure (never expected) is written as null."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return _clean_dict(value)
    if isinstance(value, (list, tuple)):
        return [_clean(v) for v in value]
    return value


def _clean_dict(d: Mapping[str, object]) -> dict[str, object]:
    return {str(k): _clean(v) for k, v in d.items()}


def _figure(value: float | None) -> float | int | None:
    """A phase's figure: whole numbers (bytes, seconds) as integers, others to the millisecond."""
    if value is None:
        return None
    return int(value) if float(value).is_integer() else round(value, 3)


def event_object(event: object) -> dict[str, object] | None:
    """The stream's object for one session event (None for an event the stream does not carry)."""
    from app.engine import sweep

    body: dict[str, object]
    if isinstance(event, sweep.RunStarted):
        body = {"event": "run_started", "total": event.total, "pending": event.pending,
                "estimate_s": round(event.estimate_s, 3), "path": str(event.path)}
    elif isinstance(event, sweep.PointStarted):
        body = {"event": "point_started", "index": event.index, "point": _table(event.point), "done": event.done,
                "total": event.total, "remaining_s": round(event.remaining_s, 3)}
    elif isinstance(event, Sample):
        body = {"event": "sample", "index": event.index, "sample": event.data}
    elif isinstance(event, Phase):
        body = {"event": "phase", "index": event.index, "phase": event.phase, "done": _figure(event.done),
                "total": _figure(event.total)}
    elif isinstance(event, sweep.PointDone):
        body = {"event": "point_done", "index": event.index, "done": event.done, "total": event.total,
                "record": event.record}
    elif isinstance(event, sweep.PointFailed):
        body = {"event": "point_failed", "index": event.index, "point": _table(event.point), "error": event.error}
        if event.host is not None:
            body["host"] = event.host
    elif isinstance(event, sweep.PointSkipped):
        body = {"event": "point_skipped", "index": event.index, "point": _table(event.point), "reason": event.reason}
    elif isinstance(event, sweep.PreconditionStarted):
        body = {"event": "precondition_started", "mode": event.mode, "description": event.description,
                "estimate_s": round(event.estimate_s, 3)}
    elif isinstance(event, sweep.PreconditionProgress):
        body = {"event": "precondition_progress", "sample": event.data}
    elif isinstance(event, sweep.PreconditionDone):
        body = {"event": "precondition_done", "record": event.record}
    elif isinstance(event, sweep.RunFinished):
        body = {"event": "run_finished", "status": str(event.status), "done": event.done, "total": event.total,
                "failed": event.failed, "path": str(event.path)}
    else:
        return None
    return _clean_dict({"schema_version": SCHEMA_VERSION, "at": now_iso(), **body})


def ended_object(status: str, reason: str) -> dict[str, object]:
    return {"schema_version": SCHEMA_VERSION, "at": now_iso(), "event": "run_ended", "status": status,
            "reason": reason}


#: What the stream keeps in memory for a reader that does not keep up; beyond it events are dropped
#: (docs/results-schema.md, "Event stream").  Each point's record stays in results.jsonl regardless.
QUEUE_BYTES = 4 << 20
#: How long the end of a run waits for a reader that has stopped reading, counted from its last read.
DRAIN_S = 2.0


class EventWriter:
    """Writes each event as one line as soon as it happens, from a thread of its own: a reader that stops
    reading (a full pipe) holds up that thread only, never the run or its signals.

    Lines wait in a queue of at most ``limit_bytes``; an event that would overflow it is dropped, counted,
    and the reader gets one ``events_dropped`` line before the next event that fits; stderr says so once
    (``notice``).  ``close`` waits for the queue to drain while the reader keeps reading, and gives up
    ``drain_s`` after its last read.  A reader that went away (``| head``) stops the stream, not the run:
    the results directory is what counts."""

    def __init__(self, stream: TextIO, limit_bytes: int = QUEUE_BYTES, drain_s: float = DRAIN_S,
                 notice: Callable[[str], None] | None = None) -> None:
        self.stream = stream
        self.limit_bytes = limit_bytes
        self.drain_s = drain_s
        self.notice = notice or _to_stderr
        self.broken = False
        self._queue: collections.deque[bytes] = collections.deque()
        self._queued = 0  # bytes in _queue
        self._writing = False  # a line is between the queue and the reader
        self._progress = 0  # writes the reader took, for close() to tell a slow reader from a stalled one
        self._dropped = 0  # events dropped since the last events_dropped line
        self._dropped_done = 0  # of which point_done
        self._dropped_total = 0
        self._closed = False
        self._cond = threading.Condition()
        try:
            stream.flush()  # nothing is expected there; were it, it comes before the events
            self._fd: int | None = stream.fileno()
        except (AttributeError, ValueError, OSError):  # an in-memory stream: nothing there can block
            self._fd = None
        self._thread: threading.Thread | None = None

    def write(self, obj: dict[str, object] | None) -> None:
        if obj is None or self.broken or self._closed:
            return
        line = _line(obj)
        if self._fd is None:
            self.stream.write(line.decode())
            return
        with self._cond:
            fits = self._queued + len(line) <= self.limit_bytes
            first_drop = not fits and not self._dropped_total
            if not fits:
                self._drop(obj)
            else:
                self._flush_dropped()
                self._enqueue(line)
        if first_drop:
            self.notice("--json-stream: its reader is not keeping up; events are dropped until it does "
                        "(results.jsonl has every completed point).")
        if self._thread is None:
            self._thread = threading.Thread(target=self._pump, name="json-stream", daemon=True)
            self._thread.start()

    def handle(self, event: object) -> None:
        self.write(event_object(event))

    def close(self) -> None:
        """Hand the reader what is queued while it reads; a reader idle for ``drain_s`` is left behind (the
        thread, blocked in its write, ends with the process), and stderr says how many events it missed."""
        with self._cond:
            if self._closed:
                return
            if not self.broken:
                self._flush_dropped()
            self._closed = True
            seen, idle_since = self._progress, time.monotonic()
            while (self._queue or self._writing) and not self.broken:
                if self._progress != seen:
                    seen, idle_since = self._progress, time.monotonic()
                left = self.drain_s - (time.monotonic() - idle_since)
                if left <= 0:
                    break
                self._cond.wait(min(left, 0.1))
            missed = len(self._queue) + self._writing if not self.broken else 0
            self._cond.notify_all()
        if missed or self._dropped_total:
            self.notice(f"--json-stream: {self._dropped_total + missed} events were not written because its reader "
                        "did not read them; results.jsonl has every completed point.")

    def _enqueue(self, line: bytes) -> None:
        self._queue.append(line)
        self._queued += len(line)
        self._cond.notify_all()

    def _flush_dropped(self) -> None:
        """The reader learns of a gap before the next event it gets (the line may pass the limit a little)."""
        if self._dropped:
            self._enqueue(_line(dropped_object(self._dropped, self._dropped_done)))
            self._dropped = self._dropped_done = 0

    def _drop(self, obj: dict[str, object]) -> None:
        self._dropped += 1
        self._dropped_total += 1
        self._dropped_done += obj.get("event") == "point_done"

    def _pump(self) -> None:
        assert self._fd is not None
        while True:
            with self._cond:
                while not self._queue and not self._closed:
                    self._cond.wait()
                if not self._queue:
                    return
                line = self._queue.popleft()
                self._queued -= len(line)
                self._writing = True
            try:
                view = memoryview(line)
                while view:
                    view = view[os.write(self._fd, view):]
                    self._progress += 1
            except OSError:  # the reader went away (EPIPE), or the stream failed: the run goes on without it
                with self._cond:
                    self.broken = True
                    self._queue.clear()
                    self._queued = 0
            with self._cond:
                self._writing = False
                self._cond.notify_all()
                if self.broken:
                    return


def dropped_object(count: int, point_done: int) -> dict[str, object]:
    return {"schema_version": SCHEMA_VERSION, "at": now_iso(), "event": "events_dropped", "count": count,
            "point_done": point_done}


def _line(obj: dict[str, object]) -> bytes:
    return (json.dumps(obj, separators=(",", ":"), default=str, allow_nan=False) + "\n").encode()


def _to_stderr(text: str) -> None:
    try:
        sys.stderr.write(text + "\n")
        sys.stderr.flush()
    except (OSError, ValueError):
        pass
