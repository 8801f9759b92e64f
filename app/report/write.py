"""Writing a results directory's report: ``render_report(dir, out=None, p99_bound_us=1000)`` writes
``report.md`` (or ``out``) and, beside it, ``plots/*.svg``, ``results.csv`` and ``samples.csv``; returns the
report's path.  A fleet run's report is :mod:`app.report.fleet_render`'s, any other run's
:mod:`app.report.render`'s.  Nothing in the text depends on the clock or on the directory's absolute path,
so rendering the same directory twice gives the same report.
"""

from __future__ import annotations

import math
import os
from dataclasses import replace
from pathlib import Path

from app.errors import UsageError
from app.report import analysis as an
from app.report import procedure as rp
from app.report import series
from app.report.fleet_render import write_fleet_report
from app.report.model import load
from app.report.render import render_markdown, results_csv


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
                  p99_bound_us: float = an.DEFAULT_P99_BOUND_US) -> Path:
    """Write the report of a results directory; plots/ and results.csv go beside it."""
    if not (isinstance(p99_bound_us, (int, float)) and math.isfinite(p99_bound_us) and p99_bound_us > 0):
        raise UsageError(f"--p99-bound-us {p99_bound_us}: must be a positive finite number of microseconds.")
    data = load(directory)
    report_path = _out_path(directory, out)
    if data.fleet is not None:
        try:
            return write_fleet_report(data, report_path, _clean_plots(report_path.parent))
        except OSError as e:
            raise _unwritable(e, report_path.parent) from None
    views = rp.storage_views(data.storage)
    measured = len(data.storage) + len(data.memory)
    loaded, data = data, replace(data, storage=views.main)
    base = report_path.parent
    plots_dir = base / "plots"
    curves = an.storage_curves(data.storage)
    mem_curves = an.memory_curves(data.memory)
    try:
        _clean_plots(base)
        from app.report.plots import draw_all

        steady = [(p, rp.steady_of(p) or {}, rp.read_samples(data.path, p.record)) for p in data.storage
                  if rp.steady_of(p) is not None]
        traces = series.series_traces(data)
        figures = draw_all(data.storage, curves, mem_curves, plots_dir, searches=views.searches, steady=steady,
                           series=traces)
        text = render_markdown(replace(data, measured=measured), figures, float(p99_bound_us) * 1e3, curves,
                               mem_curves, views)
        report_path.write_text(text, encoding="utf-8")
        (base / "results.csv").write_text(results_csv(loaded), encoding="utf-8")  # every round, every search
        main_ids = {id(p) for p in views.main}
        measured_storage = sorted(views.main + views.searches + [p for p in views.rounds if id(p) not in main_ids],
                                  key=lambda p: p.index)
        if measured_storage:
            (base / "samples.csv").write_text(series.samples_csv_of(data, measured_storage), encoding="utf-8")
    except OSError as e:
        raise _unwritable(e, base) from None
    return report_path


def _clean_plots(base: Path) -> Path:
    """``base/plots``, created, without the figures of an earlier rendering."""
    plots_dir = base / "plots"
    plots_dir.mkdir(parents=True, exist_ok=True)
    for old in plots_dir.glob("*.svg"):
        old.unlink()
    return plots_dir


def _unwritable(e: OSError, base: Path) -> UsageError:
    where = e.filename or base
    return UsageError(f"{where}: cannot write the report there ({e.strerror or e}); choose another place with "
                      "--out FILE.")
