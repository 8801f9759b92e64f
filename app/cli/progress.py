"""Headless progress output: a run's events as plain lines (CI logs, pipes, files).

On a terminal the CLI draws the same lines above a live bar instead: ``app.cli.console.RichProgress``, a
subclass on the UI side (rich), overrides the hooks ``_print``, ``_point_started`` and ``_bar``; this
module keeps the state both need (points done, the current point, its live sample, the ETA) and imports
no UI library.
"""

from __future__ import annotations

import os
import select
import time
from typing import Any, TextIO

from app.core.sanitize import clean_text
from app.core.textable import fit_line, stream_width
from app.core.units import format_duration
from app.model.points import Kind
from app.model.records import read_line
from app.runners.base import Sample
from app.stats.summary import flag_names, flag_text, live_line, metrics_line, outcome_line, point_label


def point_at_dev_null(*fds: int) -> None:
    """Make writes to ``fds`` succeed and go nowhere (the terminal behind them is gone)."""
    try:
        null = os.open(os.devnull, os.O_WRONLY | os.O_CLOEXEC)
    except OSError:
        return
    try:
        for fd in fds:
            try:
                os.dup2(null, fd)
            except OSError:
                pass
    finally:
        os.close(null)


def _gone(fd: int) -> bool:
    """Whether what ``fd`` writes to is gone: a terminal that hung up, a pipe whose reader closed it."""
    try:
        poll = select.poll()
        poll.register(fd, select.POLLOUT)
        return any(ev & (select.POLLHUP | select.POLLERR | select.POLLNVAL) for _, ev in poll.poll(0))
    except (OSError, ValueError):
        return False


def drop_lost_output() -> None:
    """Point stdout and stderr at /dev/null when what they lead to is gone (an SSH drop's terminal, a closed
    pipe): a run's last lines then go nowhere instead of failing half-way through its ending."""
    point_at_dev_null(*(fd for fd in (1, 2) if _gone(fd)))


class ProgressPrinter:
    def __init__(self, kind: Kind, stream: TextIO) -> None:
        self.kind = kind
        self.stream = stream
        self.total = 0
        self.done = 0
        self.label = ""
        self.live = ""
        self.sample: dict[str, Any] | None = None  # the current point's (or preconditioning's) last live sample
        self.remaining_s = 0.0
        self.point_started = time.monotonic()
        self.point_estimate = 0.0
        self.finished = False  # RunFinished seen

    # --- the hooks a live display overrides ------------------------------------------------------

    def _print(self, line: str) -> None:
        """One line a person reads: every completed point, failure, skip, the run's first line."""
        self.stream.write(clean_text(line, newlines=True) + "\n")  # a line may quote fio or a host
        self.stream.flush()

    def _point_started(self, line: str) -> None:
        """``[i/N] label ...``: a live display shows the point in its bar instead."""
        self._say(line)

    def _bar(self) -> None:
        """Redraw the live display (there is none in plain output)."""

    def width(self) -> int | None:
        """How wide a line may be (app.core.textable.stream_width: None for a pipe or a file without COLUMNS)."""
        return stream_width(self.stream)

    def _say(self, line: str) -> None:
        """A line of the run's (:meth:`_print`), broken between its figures to fit :meth:`width`."""
        self._print(fit_line(line, self.width()))

    # --- figures for a live display ---------------------------------------------------------------

    def elapsed_s(self) -> float:
        """Seconds since the current point (or preconditioning) started."""
        return time.monotonic() - self.point_started

    def eta_s(self) -> float:
        """The estimate of what is left; a point that overruns its estimate leaves the others' estimates."""
        elapsed = self.elapsed_s()
        if self.point_estimate:
            elapsed = min(elapsed, self.point_estimate)
        return max(0.0, self.remaining_s - elapsed)

    def fraction(self) -> float:
        """Points done over the total, the current point counted by its elapsed share of its estimate."""
        if not self.total:
            return 0.0
        share = min(1.0, self.elapsed_s() / self.point_estimate) if self.point_estimate else 0.0
        return min(1.0, (self.done + share) / self.total)

    # --- events -----------------------------------------------------------------------------------

    def handle(self, event: Any) -> None:
        from app.engine import sweep

        if isinstance(event, sweep.RunStarted):
            self.total = event.total
            self.done = event.total - event.pending
            self.remaining_s = event.estimate_s
            self._say(f"{event.pending} of {event.total} points to run, estimated {format_duration(event.estimate_s)}"
                        f" — results in {event.path}")
        elif isinstance(event, sweep.PointStarted):
            self.done = event.done
            self.remaining_s = event.remaining_s
            self.label = point_label(self.kind, event.point)
            self.live = ""
            self.sample = None
            self.point_started = time.monotonic()
            from app.plan.presets import estimate_point_seconds

            self.point_estimate = estimate_point_seconds(event.point)
            self._point_started(f"[{event.index + 1}/{event.total}] {self.label} ...")
            self._bar()
        elif isinstance(event, Sample):
            if event.data.get("host") is not None:  # a fleet host's own figures: the line shows the fleet total
                return
            self.live = live_line(self.kind, event.data)
            self.sample = event.data
            self._bar()
        elif isinstance(event, sweep.PointDone):
            self.done = event.done
            self.total = event.total
            self.remaining_s = max(0.0, self.remaining_s - self.point_estimate)  # until the next PointStarted
            self.point_estimate = 0.0
            self.point_started = time.monotonic()
            outcome = outcome_line(event.record)
            host = event.record.get("host")
            flags = flag_text(flag_names(read_line(event.record, check=False)))
            self._say(f"[{event.index + 1}/{event.total}] {point_label(self.kind, event.point)}"
                      + (f" on {host}" if host else "") + ": "
                      f"{metrics_line(self.kind, event.record['metrics'])}" + (f" {flags}" if flags else "")
                      + (f" — {outcome}" if outcome else ""))
        elif isinstance(event, sweep.PointSkipped):
            self.total = max(self.done, self.total - 1)
            self._say(f"[{event.index + 1}] {point_label(self.kind, event.point)} skipped: {event.reason}")
        elif isinstance(event, sweep.PreconditionStarted):
            self.label = "preconditioning"
            self.live = ""
            self.sample = None
            self.point_started = time.monotonic()  # the ETA counts down from here; no point is under way
            self.point_estimate = 0.0
            self._say(f"Preconditioning ({event.mode}): {event.description}, estimated "
                        f"{format_duration(event.estimate_s)} ...")
        elif isinstance(event, sweep.PreconditionProgress):
            self.live = live_line(self.kind, event.data)
            self.sample = event.data
            self._bar()
        elif isinstance(event, sweep.PreconditionDone):
            r = event.record
            self._say(f"Preconditioned in {format_duration(float(r.get('seconds') or 0))}: "
                        f"{(r.get('io_bytes') or 0) / 1e9:.2f} GB written at {(r.get('bw_bytes') or 0) / 1e6:.0f} MB/s"
                        + (f" — {outcome_line(r)}" if outcome_line(r) else ""))
        elif isinstance(event, sweep.PointFailed):
            self._say(f"[{event.index + 1}] {point_label(self.kind, event.point)} FAILED: {event.error}")
        elif isinstance(event, sweep.RunFinished):
            self.done = event.done
            self.total = event.total
            self.finished = True

    def close(self) -> None:
        self.stream.flush()
