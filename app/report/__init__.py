"""Reports: report.md with tables, figures and a queueing analysis of a results directory.

Headless: never imports Textual, rich or plotext; matplotlib (Agg) only inside
:mod:`app.report.figures.plots`, when figures are drawn.
"""

from __future__ import annotations

from app.report.compute.analysis import DEFAULT_P99_BOUND_US
from app.report.write import render_report

__all__ = ["render_report", "DEFAULT_P99_BOUND_US"]
