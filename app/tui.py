"""The Textual TUI (docs/tui.md): devices → confirm → presets or custom sweep → live run → results.

The UI renders state and sends intents to the headless core (app.engine.sweep, app.plan.presets, app.host.safety,
app.host.devices, app.report); it never runs a blocking call on the event loop.  ``create_app`` builds the
application with injectable inputs (device list, results directory, overrides, clock) for the tests.

This module imports no UI library itself: ``run_tui`` starts listing the block devices in a thread
first, so lsblk and the probes overlap with importing Textual (the first screen is up sooner).
"""

from __future__ import annotations

import signal
import sys
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, Any

from app.core import settings
from app.fleet.hosts import DEFAULT_AGENT_SOCKET

if TYPE_CHECKING:
    from app.host.audit import Audit
    from app.screens.application import ProfilerApp


def create_app(**options: Any) -> ProfilerApp:  # Any: the tests pass Options fields of every type
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


def _prefetch_devices() -> Future[list[dict[str, object]]]:
    def listing() -> list[dict[str, object]]:
        from app.host.devices import list_devices

        return list_devices()

    pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="devices")
    future = pool.submit(listing)
    pool.shutdown(wait=False)
    return future


def utf8_output() -> None:
    """Textual draws boxes, charts and scrollbars with Unicode; with an ASCII-only Python output encoding
    (``LC_ALL=C``, ``PYTHONUTF8=0``) they would print as ``\\u2502``. Terminals take UTF-8, so write it."""
    for stream in (sys.__stdout__, sys.__stderr__):
        encoding = (getattr(stream, "encoding", None) or "").lower().replace("-", "")
        if stream is not None and encoding != "utf8" and hasattr(stream, "reconfigure"):
            try:
                stream.reconfigure(encoding="utf-8", errors="replace")
            except (ValueError, OSError):
                pass


def exit_status(app: ProfilerApp) -> int:
    """The TUI's exit code: 1 after a crash, 130 when a run was interrupted (quit mid-run, a signal,
    a lost terminal), else 0."""
    if getattr(app, "_exception", None) is not None or app.return_code not in (None, 0):
        return 1
    return 130 if app.exit_code == 130 or app.lost_terminal else int(app.exit_code or 0)


def crash_message(app: ProfilerApp) -> str:
    error = getattr(app, "_exception", None)
    what = f"{type(error).__name__}: {error}" if error is not None else "see the error above"
    return (f"profiler-tui: the TUI stopped on an internal error ({what}); completed points are kept, "
            "`profiler-tui resume DIR` finishes an interrupted run.")


def run_tui(agent_socket: str = DEFAULT_AGENT_SOCKET, ascii: bool = False) -> int:
    """The TUI until it ends; its exit code.  ``ascii`` (``--ascii``): ASCII mode, as PROFILER_TUI_ASCII=1 or a
    console TERM gives it (app.screens.ascii)."""
    future = _prefetch_devices()
    first: list[Future[list[dict[str, object]]]] = [future]

    def devices() -> list[dict[str, object]]:
        if first:  # the prefetched listing once; a rescan lists again
            return first.pop().result()
        from app.host.devices import list_devices

        return list_devices()

    utf8_output()
    def environment() -> list[str]:
        from app.host.container import environment_warnings

        return environment_warnings(settings.results_root())

    def host_settings(target: str) -> Audit:
        from app.host.audit import audit

        return audit(target)

    from app.host.config import config_path
    from app.screens.ascii import ascii_terminal  # imports Textual (the filter), as create_app would anyway

    app = create_app(devices=devices, handle_signals=True, environment=environment, audit=host_settings,
                     agent_socket=agent_socket, ascii=ascii or ascii_terminal(settings.environ()),
                     settings=config_path())
    # Until here ^C ends the process at once with one line (app.__main__: a KeyboardInterrupt raised
    # mid-import can surface as another exception); the running app gets Python's KeyboardInterrupt.
    try:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    except ValueError:  # not the main thread
        pass
    if not app.ascii:  # ASCII mode draws no pictures: a console is not asked (it might print the query)
        from app.widgets.termcaps import prepare

        prepare()  # which pictures the terminal draws: asked once, bounded, before Textual reads the terminal's input
    try:
        app.run()
    finally:
        # whatever ended the app: no child left running, no run.json left saying "running"
        from app.screens.terminal import kill_children

        kill_children()
        app.mark_sessions_interrupted()
    code = exit_status(app)
    if code == 1:
        print(crash_message(app), file=sys.stderr)
    return code


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(run_tui())
