"""Writing a results directory's report: ``render_report(dir, out=None, p99_bound_us=1000)`` writes
``report.md`` (or ``out``) and, beside it, ``plots/*.svg``, ``results.csv`` and ``samples.csv`` (and with
``html=True`` ``report.html``: :mod:`app.report.html`); returns the report's path.  A fleet run's report is
:mod:`app.report.fleet_render`'s, any other run's :mod:`app.report.render`'s.  Nothing in the text depends on
the clock or on the directory's absolute path, so rendering the same directory twice gives the same report.

The report is written by root into a directory that may not be its own: the directory it goes into must be
changeable only by root (or the user the tool runs as), or be sticky like /tmp, and every file is opened relative
to that directory's descriptor without following a symbolic link (plots/ too), so nothing another user prepared
there redirects a write (docs/safety.md).
"""

from __future__ import annotations

import contextlib
import errno
import gc
import math
import os
import stat
from dataclasses import replace
from pathlib import Path
from typing import Any, Callable, Iterator, Sequence

from app.core.errors import UsageError
from app.report.compute import analysis, intervals
from app.report.data.model import RunData, load
from app.report.figures import heat, series
from app.report.fleet_render import write_fleet_report
from app.report.html import html_path, write_html
from app.report.render import render_markdown, results_csv, workload_namer
from app.report.sections import procedure
from app.store.results import held_path, make_dir, make_dirs, open_trusted_dir, write_new

# what another user's write access to the report's directory would allow
REPORT_RISK = ("another user could redirect what root writes there; write the report elsewhere with --out FILE, in a "
               "directory only root can write")


def _out_path(directory: str | Path, out: str | Path | None) -> Path:
    """Where the report goes; ``--out`` must name a file (not a directory, nor end in /)."""
    if not out:
        return Path(directory) / "report.md"
    text = str(out)
    if text.endswith(("/", os.sep)) or Path(text).is_dir():
        raise UsageError(f"--out {text}: is a directory; give the report's file name, e.g. "
                         f"{os.path.join(text, 'report.md')}.")
    if os.path.lexists(text) and not Path(text).is_file():
        raise UsageError(f"--out {text}: exists and is not a regular file; give a new file name for the report.")
    return Path(text)


def render_report(directory: str | Path, out: str | Path | None = None,
                  p99_bound_us: float = analysis.DEFAULT_P99_BOUND_US, html: bool = False) -> Path:
    """Write the report of a results directory; plots/ and results.csv go beside it, and with ``html`` the
    one-file page (:mod:`app.report.html`) too, named as the report with ``.html``.  ``out`` ending in ``.html``
    names that page: the Markdown report then goes beside it with ``.md``."""
    if not (isinstance(p99_bound_us, (int, float)) and math.isfinite(p99_bound_us) and p99_bound_us > 0):
        raise UsageError(f"--p99-bound-us {p99_bound_us}: must be a positive finite number of microseconds.")
    data = load(directory)
    report_path = _out_path(directory, out)
    if report_path.suffix.lower() == ".html":  # --out page.html: the page, and page.md beside it
        html, report_path = True, _out_path(directory, report_path.with_suffix(".md"))
    try:
        if not stat.S_ISDIR(os.stat(report_path.parent).st_mode):
            raise OSError(errno.ENOTDIR, os.strerror(errno.ENOTDIR))
    except FileNotFoundError:
        make_dirs(report_path.parent, REPORT_RISK)  # as a results directory's are made: checked, fixed modes
    except OSError as e:
        raise _unwritable(e, report_path.parent) from None
    base_fd = open_trusted_dir(report_path.parent, sticky_ok=True, risk=REPORT_RISK)
    try:
        with _collector_paused():
            return _render(data, report_path, base_fd, float(p99_bound_us), html)
    finally:
        os.close(base_fd)


@contextlib.contextmanager
def _collector_paused() -> Iterator[None]:
    """Python's cycle collector off while the report is drawn, and what exists before it frozen.

    matplotlib makes and drops tens of thousands of objects per figure (ticks, texts, transforms), so the
    collector runs often, and each of its full passes walked the objects the imports made (matplotlib's;
    pandas' too when the report imported it): 15–20 % of a report's CPU time.  What the drawing leaves in
    cycles waits for the collector once it is on again (a 1,008-point report drawn in one process peaks about
    60 MB higher); the forked figure workers inherit the pause and free theirs when they exit."""
    enabled = gc.isenabled()
    gc.freeze()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()
        gc.unfreeze()


def _render(data: RunData, report_path: Path, base_fd: int, p99_bound_us: float, html: bool = False) -> Path:
    """The report, results.csv, samples.csv and plots/ (and with ``html`` the page) written into the directory
    ``base_fd`` holds."""
    base = report_path.parent
    try:
        plots_fd = _clean_plots(base, base_fd)
        try:
            plots_dir = held_path(plots_fd, base / "plots")
            if data.fleet is not None:
                write_fleet_report(data, report_path, plots_dir, base_fd)
            else:
                _render_run(data, report_path.name, base_fd, plots_dir, p99_bound_us)
            if html:  # from what was just written, through the same checked descriptors
                write_html(report_path, base_fd, plots_fd, html_path(report_path).name)
        finally:
            os.close(plots_fd)
    except OSError as e:
        raise _unwritable(e, base) from None
    return report_path


def _render_run(data: RunData, name: str, base_fd: int, plots_dir: Path, p99_bound_us: float) -> None:
    """A single-target run's report (file ``name``) and its CSV files in ``base_fd``, its figures in ``plots_dir``."""
    views = procedure.storage_views(data.storage)
    measured = len(data.storage) + len(data.memory)
    loaded, data = data, replace(data, storage=views.main)
    curves = analysis.storage_curves(data.storage, data.path)
    mem_curves = analysis.memory_curves(data.memory)
    figures = draw_run_figures(loaded, data, views, curves, mem_curves, plots_dir)
    text = render_markdown(replace(data, measured=measured), figures, p99_bound_us * 1e3, curves, mem_curves, views)
    write_new(name, text.encode("utf-8"), dir_fd=base_fd)
    write_new("results.csv", results_csv(loaded).encode("utf-8"), dir_fd=base_fd)  # every round, every search
    main_ids = {id(p) for p in views.main}
    measured_storage = sorted(views.main + views.searches + [p for p in views.rounds if id(p) not in main_ids],
                              key=lambda p: p.index)
    if measured_storage:
        write_new("samples.csv", series.samples_csv_of(data, measured_storage).encode("utf-8"), dir_fd=base_fd)


def draw_run_figures(loaded: RunData, data: RunData, views: procedure.StorageViews, curves: list[analysis.Curve],
                     mem_curves: list[analysis.MemCurve], plots_dir: Path) -> list[Any]:
    """Every figure of a single-target run's report (``data``: ``loaded`` with only its main points), drawn by
    :mod:`app.report.figures.plots` into ``plots_dir``; the report's :class:`~app.report.figures.plots.Figure` list."""
    for p in loaded.storage:  # every point's interval, computed once before the figures' workers fork
        intervals.storage_intervals(data.path, p)
    from app.report.figures.plots import draw_all
    from app.report.figures.queue_plots import queueing_figure
    from app.report.figures.suite_plots import figures as suite_figures
    from app.report.figures.tail_plots import exceedance_figures

    steady = [(p, procedure.steady_of(p) or {}, procedure.read_samples(data.path, p.line.raw)) for p in data.storage
              if procedure.steady_of(p) is not None]
    traces = series.series_traces(data)
    more: list[Callable[[], Sequence[Any]]] = [lambda: queueing_figure(curves, plots_dir),
                                               lambda: suite_figures(data.memory, plots_dir),
                                               lambda: exceedance_figures(data.storage, plots_dir),
                                               lambda: heat.figures(data.path, data.storage, plots_dir,
                                                                    workload_namer(data.storage))]
    return list(draw_all(data.storage, curves, mem_curves, plots_dir, searches=views.searches, steady=steady,
                         series=traces, more=more))


def draw_figures(data: RunData, plots_dir: Path) -> list[Any]:
    """The figures of ``data``'s report, as :func:`render_report` draws them (a fleet run's or another's)."""
    if data.fleet is not None:
        from app.report.fleet_render import draw_fleet_figures

        return draw_fleet_figures(data, plots_dir)
    views = procedure.storage_views(data.storage)
    main = replace(data, storage=views.main)
    curves = analysis.storage_curves(main.storage, data.path)
    return draw_run_figures(data, main, views, curves, analysis.memory_curves(main.memory),
                            plots_dir)


def _clean_plots(base: Path, base_fd: int) -> int:
    """``base/plots`` (in the directory ``base_fd`` holds), created, opened and checked like the report's directory
    (a symbolic link or another user's directory is refused), without the figures of an earlier rendering."""
    try:
        make_dir("plots", base_fd)
    except FileExistsError:
        pass
    plots_fd = open_trusted_dir(base / "plots", "plots", base_fd, risk=REPORT_RISK)
    try:
        for name in os.listdir(plots_fd):
            if name.endswith(".svg"):
                os.unlink(name, dir_fd=plots_fd)
    except BaseException:
        os.close(plots_fd)
        raise
    return plots_fd


def _unwritable(e: OSError, base: Path) -> UsageError:
    where = base / os.path.basename(e.filename) if e.filename else base
    return UsageError(f"{where}: cannot write the report there ({e.strerror or e}); choose another place with "
                      "--out FILE.")
