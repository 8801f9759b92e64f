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
- ``run_ended``: written by the CLI when the run stopped without ``run_finished``: ``status``
  (``interrupted`` or ``failed``) and ``reason``.
"""

from __future__ import annotations

import json
import math
import os
from typing import Any, TextIO

from app.points import Point
from app.results import SCHEMA_VERSION, now_iso
from app.runners.base import Phase, Sample


def _table(point: Point) -> dict[str, Any]:
    return point.to_dict()


def _clean(value: Any) -> Any:
    """JSON has no NaN or infinity: such a figure (never expected) is written as null."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {str(k): _clean(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_clean(v) for v in value]
    return value


def _figure(value: float | None) -> float | int | None:
    """A phase's figure: whole numbers (bytes, seconds) as integers, others to the millisecond."""
    if value is None:
        return None
    return int(value) if float(value).is_integer() else round(value, 3)


def event_object(event: Any) -> dict[str, Any] | None:
    """The stream's object for one session event (None for an event the stream does not carry)."""
    from app import sweep

    body: dict[str, Any]
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
    return _clean({"schema_version": SCHEMA_VERSION, "at": now_iso(), **body})


def ended_object(status: str, reason: str) -> dict[str, Any]:
    return {"schema_version": SCHEMA_VERSION, "at": now_iso(), "event": "run_ended", "status": status,
            "reason": reason}


class EventWriter:
    """Writes each event as one line and flushes it: a reader sees an event as soon as it happens.  A reader
    that went away (``| head``) stops the stream, not the run: the results directory is what counts."""

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream
        self.broken = False

    def write(self, obj: dict[str, Any] | None) -> None:
        if obj is None or self.broken:
            return
        try:
            self.stream.write(json.dumps(obj, separators=(",", ":"), default=str, allow_nan=False) + "\n")
            self.stream.flush()
        except (OSError, ValueError):
            self.broken = True
            try:  # what is still buffered would fail again at exit, with a message about a broken pipe
                null = os.open(os.devnull, os.O_WRONLY)
                os.dup2(null, self.stream.fileno())
                os.close(null)
            except (OSError, ValueError, AttributeError):
                pass

    def handle(self, event: Any) -> None:
        self.write(event_object(event))
