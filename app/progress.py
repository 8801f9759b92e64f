"""Headless progress output: a redrawn bar with ETA on a terminal, plain lines otherwise."""

from __future__ import annotations

import shutil
import time
from typing import Any, TextIO

from app.points import Kind
from app.runners.base import Sample
from app.summary import live_line, metrics_line, outcome_line, point_label
from app.units import format_duration


class ProgressPrinter:
    def __init__(self, kind: Kind, stream: TextIO, tty: bool | None = None) -> None:
        self.kind = kind
        self.stream = stream
        self.tty = stream.isatty() if tty is None else tty
        self.total = 0
        self.done = 0
        self.label = ""
        self.live = ""
        self.remaining_s = 0.0
        self.point_started = time.monotonic()
        self.point_estimate = 0.0
        self._bar_shown = False

    def _print(self, line: str) -> None:
        self._clear()
        self.stream.write(line + "\n")
        self.stream.flush()

    def _clear(self) -> None:
        if self.tty and self._bar_shown:
            self.stream.write("\r\x1b[2K")
            self._bar_shown = False

    def _bar(self) -> None:
        if not self.tty or not self.total:
            return
        elapsed = time.monotonic() - self.point_started
        eta = max(0.0, self.remaining_s - elapsed)
        frac = min(1.0, (self.done + min(1.0, elapsed / self.point_estimate if self.point_estimate else 0)) / self.total)
        width = 24
        filled = int(frac * width)
        text = (f"[{'#' * filled}{'-' * (width - filled)}] {self.done}/{self.total} {frac * 100:3.0f}% "
                f"ETA {format_duration(eta)}  {self.label}  {self.live}")
        cols = shutil.get_terminal_size((100, 24)).columns
        self.stream.write("\r\x1b[2K" + text[: cols - 1])
        self.stream.flush()
        self._bar_shown = True

    def handle(self, event: Any) -> None:
        from app import sweep

        if isinstance(event, sweep.RunStarted):
            self.total = event.total
            self.done = event.total - event.pending
            self.remaining_s = event.estimate_s
            self._print(f"{event.pending} of {event.total} points to run, estimated {format_duration(event.estimate_s)}"
                        f" — results in {event.path}")
        elif isinstance(event, sweep.PointStarted):
            self.done = event.done
            self.remaining_s = event.remaining_s
            self.label = point_label(self.kind, event.point)
            self.live = ""
            self.point_started = time.monotonic()
            from app.presets import estimate_point_seconds

            self.point_estimate = estimate_point_seconds(event.point)
            if not self.tty:
                self._print(f"[{event.index + 1}/{event.total}] {self.label} ...")
            self._bar()
        elif isinstance(event, Sample):
            self.live = live_line(self.kind, event.data)
            self._bar()
        elif isinstance(event, sweep.PointDone):
            self.done = event.done
            self.total = event.total
            outcome = outcome_line(event.record)
            self._print(f"[{event.index + 1}/{event.total}] {point_label(self.kind, event.point)}: "
                        f"{metrics_line(self.kind, event.record['metrics'])}" + (f" — {outcome}" if outcome else ""))
        elif isinstance(event, sweep.PointSkipped):
            self.total = max(self.done, self.total - 1)
            self._print(f"[{event.index + 1}] {point_label(self.kind, event.point)} skipped: {event.reason}")
        elif isinstance(event, sweep.PreconditionStarted):
            self.label = "preconditioning"
            self._print(f"Preconditioning ({event.mode}): {event.description}, estimated "
                        f"{format_duration(event.estimate_s)} ...")
        elif isinstance(event, sweep.PreconditionProgress):
            self.live = live_line(self.kind, event.data)
            self._bar()
        elif isinstance(event, sweep.PreconditionDone):
            r = event.record
            self._print(f"Preconditioned in {format_duration(float(r.get('seconds') or 0))}: "
                        f"{(r.get('io_bytes') or 0) / 1e9:.2f} GB written at {(r.get('bw_bytes') or 0) / 1e6:.0f} MB/s"
                        + (f" — {outcome_line(r)}" if outcome_line(r) else ""))
        elif isinstance(event, sweep.PointFailed):
            self._print(f"[{event.index + 1}] {point_label(self.kind, event.point)} FAILED: {event.error}")
        elif isinstance(event, sweep.RunFinished):
            self._clear()

    def close(self) -> None:
        self._clear()
        self.stream.flush()
