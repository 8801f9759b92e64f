"""Work done before the key that needs it: the report of a run rendered when the run ends, and the screens' modules
imported once the first screen is drawn.

A run's report (report.md, plots/, results.csv) takes seconds to render on a busy machine; rendered when its run
ends, by a child process (a thread of this one would hold the interpreter's lock for seconds: every key would wait
on it), the report view opens from it at once (``wait_rendered`` then reads the files it
wrote instead of rendering them again).  The threads are daemons and the app stops the children when it exits
(:func:`stop_renders`): quitting never waits for them, and no rendering outlives the app that asked for it (a report
cut short is stale, and rendered again when it is next viewed)."""

from __future__ import annotations

import os
import threading
from concurrent.futures import Future
from pathlib import Path

_lock = threading.Lock()
_renders: dict[Path, Future[None]] = {}  # a results directory → its rendering (running or done)
_children: set[int] = set()  # the process groups of the renderings still running


def _key(path: Path) -> Path:
    return Path(path).absolute()


# the child's program: the report of one directory (argv[2]), by the app package the TUI runs (argv[1] is the
# directory that holds it; -I keeps the current directory and PYTHON* variables out of the child's imports)
RENDER = "import sys; sys.path.insert(0, sys.argv[1]); from app.report import render_report; render_report(sys.argv[2])"
RENDER_TIMEOUT_S = 900
RENDER_NICE = 10  # below the TUI's priority: on a busy 2-core machine the keys come first


def render_in_child(path: Path) -> None:
    """The report of ``path`` rendered by a child process of the same Python and the same app package: the
    rendering holds no lock of this process's interpreter, and runs at a lower priority (nice 10), so the screens
    answer keys meanwhile at full speed.  It dies with the thread that waits for it (the app quitting).
    RuntimeError when it failed."""
    import subprocess
    import sys

    import app
    from app.host.process import die_with_parent

    def child_setup() -> None:  # between fork and exec: dies with its thread, and yields the CPU to the screens
        die_with_parent()
        os.nice(RENDER_NICE)

    package_dir = str(Path(app.__file__).resolve().parent.parent)
    child = subprocess.Popen([sys.executable, "-I", "-c", RENDER, package_dir, str(path)], stdin=subprocess.DEVNULL,
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, preexec_fn=child_setup,
                             start_new_session=True)  # a group of its own: stopping it stops its figure workers too
    with _lock:
        _children.add(child.pid)
    try:
        returncode = child.wait(timeout=RENDER_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        _stop_group(child.pid)
        returncode = child.wait()
    finally:
        with _lock:
            _children.discard(child.pid)
    if returncode != 0:
        raise RuntimeError(f"the report of {path} was not rendered (exit status {returncode})")


def _stop_group(pgid: int) -> None:
    import signal

    try:
        os.killpg(pgid, signal.SIGKILL)
    except OSError:  # gone already
        pass


def stop_renders() -> None:
    """Stop every rendering still running (the app exits): its report stays stale, rendered when next viewed."""
    with _lock:
        groups = list(_children)
    for pgid in groups:
        _stop_group(pgid)


def render_when_done(path: Path) -> Future[None]:
    """Render the report of the results directory ``path`` in a child process, waited for by a daemon thread (one
    rendering per directory at a time: asked again while one runs, the running one is returned)."""
    key = _key(path)
    with _lock:
        running = _renders.get(key)
        if running is not None and not running.done():
            return running
        future: Future[None] = Future()
        _renders[key] = future

    def render() -> None:
        try:
            render_in_child(key)
        except BaseException as e:  # the report view renders it again and says what failed
            future.set_exception(e)
        else:
            future.set_result(None)

    threading.Thread(target=render, name="report", daemon=True).start()
    return future


def wait_rendered(path: Path) -> bool:
    """In a thread: wait for the rendering of ``path`` started when its run ended, if any; whether one finished
    without error (its report.md is the run's)."""
    with _lock:
        future = _renders.get(_key(path))
    if future is None:
        return False
    try:
        future.result()
    except BaseException:
        return False
    return True


MODULES = ("app.report.data.model", "app.report.data.fleet_read", "app.screens.results", "app.screens.report",
           "app.screens.runs",
           "app.screens.custom", "app.screens.confirm", "app.screens.presets", "app.screens.run", "app.widgets.figure",
           "app.report")


def import_ahead() -> None:
    """Import the modules of the screens a key opens, in a daemon thread (the first press of ``v``, ``r``, ``c``
    or ``h`` then does not wait seconds for the imports of its screen, matplotlib's among them)."""

    def run() -> None:
        import importlib

        for name in MODULES:
            try:
                importlib.import_module(name)
            except Exception:  # an import that fails fails again, with its message, where the screen is shown
                pass

    threading.Thread(target=run, name="imports", daemon=True).start()
