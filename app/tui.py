"""The Textual TUI (SPEC §9): devices → confirm → presets or custom sweep → live run → results.

The UI renders state and sends intents to the headless core (app.sweep, app.presets, app.safety,
app.devices, app.report); it never runs a blocking call on the event loop.  ``create_app`` builds the
application with injectable inputs (device list, results directory, overrides, clock) for the tests.

This module imports no UI library itself: ``run_tui`` starts listing the block devices in a thread
first, so lsblk and the probes overlap with importing Textual (the first screen is up sooner).
"""

from __future__ import annotations

import signal
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any


def create_app(**options: Any) -> Any:
    """The application (:class:`app.screens.application.ProfilerApp`); keyword arguments are
    :class:`app.screens.application.Options` fields: ``devices`` (a list, or a callable run in a
    thread), ``results_dir``, ``overrides`` (``["runtime=1", "size=16m"]``), ``engine``, ``clock``,
    ``chart_interval``."""
    from app.screens.application import Options, ProfilerApp

    if "results_dir" in options:
        options["results_dir"] = Path(options["results_dir"])
    if "overrides" in options:
        options["overrides"] = tuple(options["overrides"])
    return ProfilerApp(Options(**options))


def _prefetch_devices() -> Future:
    def listing() -> list[dict[str, Any]]:
        from app.devices import list_devices

        return list_devices()

    pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="devices")
    future = pool.submit(listing)
    pool.shutdown(wait=False)
    return future


def run_tui() -> int:
    future = _prefetch_devices()
    first: list[Future] = [future]

    def devices() -> list[dict[str, Any]]:
        if first:  # the prefetched listing once; a rescan lists again
            return first.pop().result()
        from app.devices import list_devices

        return list_devices()

    app = create_app(devices=devices, handle_signals=True)  # imports Textual and its terminal driver
    # Until here ^C ends the process at once with one line (app.__main__: a KeyboardInterrupt raised
    # mid-import can surface as another exception); the running app gets Python's KeyboardInterrupt.
    try:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    except ValueError:  # not the main thread
        pass
    code = app.run()
    return code if isinstance(code, int) else app.exit_code


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(run_tui())
