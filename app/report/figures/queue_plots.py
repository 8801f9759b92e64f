"""The queueing view's figure: each queue-depth curve's measured throughput X(N) and mean latency R(N)
against the closed-system bounds (:mod:`app.report.compute.queueing`), N* marked where the bounds cross."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Sequence, TypedDict

from app.report.compute import queueing
from app.report.compute.analysis import Curve
from app.report.figures.plots import MAX_PANELS, TEXT_PT, load_pyplot, log2_axis, panel_grid, plain_log, save_figure
from app.report.sections.queue_text import SECTION

if TYPE_CHECKING:
    from matplotlib.axes import Axes

NAME = "queueing-bounds.svg"
class _Line(TypedDict):
    color: str
    linewidth: float


BOUND = _Line(color="0.45", linewidth=1.0)


@dataclass
class QueueFigure:
    """A figure as the report lists it (like :class:`app.report.figures.plots.Figure`), in the queueing section."""

    file: str
    title: str
    caption: str
    section: str = SECTION


def queueing_figure(curves: Sequence[Curve], plots_dir: Path) -> list[QueueFigure]:
    """One figure, a column per curve (at most MAX_PANELS): X(N) on top, R(N) below, against their bounds."""
    qcs = queueing.queue_curves(curves)
    if not qcs:
        return []
    shown = qcs[:MAX_PANELS]
    plt = load_pyplot()
    fig, panels = panel_grid(plt, len(shown), per_panel=2, w=4.2, h=2.6)
    rows = 2 * -(-len(shown) // 3)
    fig.subplots_adjust(hspace=1.1 * rows / fig.get_figheight())  # a latency axis's label above the next title
    for (ax_x, ax_r), q in zip(panels, shown):
        _throughput(ax_x, q)
        _latency(ax_r, q)
    save_figure(plt, fig, plots_dir / NAME)
    left = len(qcs) - len(shown)
    caption = ("Per queue-depth curve, top: measured throughput X(N) (dots) against its bounds N/S and X_max "
               "(grey dashed and dotted; X ≤ the lower of the two); bottom: mean latency R(N) against S and N/X_max "
               "(R ≥ the higher; by Little's law the same bound as X's, seen as time)"
               + (", and the part of R inside the device by its block counters (green squares; the rest of R is "
                  "outside what the counters see)" if any(p.outside is not None for q in shown for p in q.points)
                  else "")
               + ". S is the mean latency at the lightest load, X_max the most IOPS measured; the "
               "vertical line marks N* = S · X_max, where the bounds cross. x: outstanding I/Os N = QD × jobs, log₂; "
               "throughput on a linear axis from 0, latency on a log axis.")
    if left:
        caption += (f" {left} more curve(s) ({', '.join(q.curve.label for q in qcs[len(shown):][:6])}"
                    f"{' …' if left > 6 else ''}) are not drawn; the queueing view's summary table has a row for each.")
    return [QueueFigure(f"plots/{NAME}", "Throughput and latency against the closed-system bounds", caption)]


def _bound_ns(q: queueing.QueueCurve, steps: int = 64) -> list[float]:
    """N values along which the bound lines are drawn: evenly spaced on the log₂ axis from the lightest to the
    heaviest load (N/S is a curve there), and N* itself so the lines meet at their crossing."""
    lo, hi = q.points[0].n, q.points[-1].n
    ns = {lo * (hi / lo) ** (i / steps) for i in range(steps + 1)}
    if lo < q.n_star < hi:
        ns.add(q.n_star)
    return sorted(ns)


def _n_star(ax: Axes, q: queueing.QueueCurve, label: bool) -> None:
    lo, hi = q.points[0].n, q.points[-1].n
    if not lo <= q.n_star <= hi:
        return
    ax.axvline(q.n_star, color="tab:red", linewidth=0.9, linestyle="-.")
    if label:
        ax.annotate(f"N* = {q.n_star:.1f}", (q.n_star, 0.04), xycoords=("data", "axes fraction"),
                    xytext=(3, 0), textcoords="offset points", fontsize=TEXT_PT, color="tab:red")


def _ticks(ax: Axes, q: queueing.QueueCurve) -> None:
    """A tick at every measured load, labelled as many as fit apart."""
    loads = [p.n for p in q.points]
    log2_axis(ax, loads, str)
    ax.set_xticks(loads, minor=True)


def _throughput(ax: Axes, q: queueing.QueueCurve) -> None:
    ns = _bound_ns(q)
    s = q.s * 1e-9
    top = q.x_max / 1e3
    ax.plot(ns, [n / s / 1e3 for n in ns], linestyle="--", label="N/S", **BOUND)
    ax.axhline(top, linestyle=":", label="X_max", **BOUND)
    ax.plot([p.n for p in q.points], [p.x / 1e3 for p in q.points], marker="o", markersize=3.5, color="tab:blue",
            label="X measured")
    ax.set_ylim(0, top * 1.2)
    _n_star(ax, q, label=True)
    _ticks(ax, q)
    ax.set_title(q.curve.label)
    ax.set_ylabel("throughput (kIOPS)")
    ax.legend(loc="lower right", fontsize=TEXT_PT, framealpha=0.8)


def _latency(ax: Axes, q: queueing.QueueCurve) -> None:
    ns = _bound_ns(q)
    ax.set_yscale("log")
    ax.axhline(q.s / 1e3, linestyle="--", label="S", **BOUND)
    ax.plot(ns, [n / q.x_max * 1e6 for n in ns], linestyle=":", label="N/X_max", **BOUND)
    ax.plot([p.n for p in q.points], [p.r / 1e3 for p in q.points], marker="o", markersize=3.5, color="tab:orange",
            label="R measured")
    dev = [p for p in q.points if p.outside is not None and p.device]
    if dev:  # R split by what the device counters support: their time per request; the rest of R is outside
        ax.plot([p.n for p in dev], [(p.device or 0) / 1e3 for p in dev], marker="s", markersize=3, color="tab:green",
                linewidth=0.9, label="in the device (counters)")
    rs = [p.r / 1e3 for p in q.points] + [q.s / 1e3] + [(p.device or 0) / 1e3 for p in dev]
    ax.set_ylim(min(rs) / 1.5, max(rs) * 1.5)
    _n_star(ax, q, label=False)
    _ticks(ax, q)
    plain_log(ax, "y")
    ax.set_xlabel("outstanding I/Os N")
    ax.set_ylabel("mean latency (µs)")
    ax.legend(loc="upper left", fontsize=TEXT_PT, framealpha=0.8)
