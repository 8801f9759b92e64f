"""A contended memory row (its thread got less than 90 % of a CPU) is marked in the memory figures as in the tables:
a hollow diamond over its point, never colour alone, with the legend entry saying what it means; a run without a
contended row draws no such mark and no such entry."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
from matplotlib.lines import Line2D

from app.report.compute import analysis as an
from app.report.data.model import load
from app.report.figures import plots
from tests.helpers.suite_runs import line, point, write_run
from tests.unit.test_memory_contention import ROWS, loaded_lines
from tests.unit.test_replicate_figures import taken  # noqa: F401 - the figures drawn, by file name, instead of written

LEGEND = "contended (thread < 90 % CPU)"


def _xs(mark: Line2D) -> list[Any]:
    """The mark's x values, as drawn."""
    return list(np.asarray(mark.get_xdata()))


def _ys(mark: Line2D) -> list[Any]:
    return list(np.asarray(mark.get_ydata()))


def _marks(ax: Any) -> list[Line2D]:
    return [ln for ln in ax.get_lines() if ln.get_marker() == plots.CONTENDED_MARKER and ln.get_linestyle() == "None"]


def _legend(ax: Any) -> list[str]:
    leg = ax.get_legend()
    return [t.get_text() for t in leg.get_texts()] if leg is not None else []


def test_contended_rows_are_hollow_diamonds_with_a_legend_entry(tmp_path: Path, taken: dict[str, Any]) -> None:
    data = load(write_run(tmp_path / "run", loaded_lines(cumulative=False)))
    figures = plots.memory_figures(an.memory_curves(data.memory), tmp_path / "plots")
    busy = {(bw, lat) for _, lat, bw, share in ROWS if share is not None}
    (curve_ax,) = taken["memory-latency-bandwidth.svg"].axes
    (mark,) = _marks(curve_ax)
    assert {(round(x * 1e3, 1), round(y, 2)) for x, y in zip(_xs(mark), _ys(mark))} == busy
    assert mark.get_markerfacecolor() in ("none", "white", (1.0, 1.0, 1.0, 1.0))  # hollow: not colour alone
    assert LEGEND in _legend(curve_ax)
    top, bottom = taken["memory-vs-delay.svg"].axes
    delays = {d for d, _, _, share in ROWS if share is not None}
    for ax in (top, bottom):
        (mark,) = _marks(ax)
        assert set(_xs(mark)) == delays
    assert LEGEND in _legend(top)
    captions = " ".join(f.caption for f in figures).lower()
    assert "hollow diamond" in captions and "less than 90 % of a cpu" in captions


def test_a_clean_run_has_no_contended_mark(tmp_path: Path, taken: dict[str, Any]) -> None:
    lines = [line(i, point("loaded", traffic="R", delay=delay, engine="builtin"),
                  {"latency_ns": lat, "bandwidth_mbps": bw}, engine="builtin", bandwidth_includes_latency_thread=True,
                  load_threads=1) for i, (delay, lat, bw, _share) in enumerate(ROWS)]
    data = load(write_run(tmp_path / "run", lines))
    figures = plots.memory_figures(an.memory_curves(data.memory), tmp_path / "plots")
    for fig in taken.values():
        for ax in fig.axes:
            assert not _marks(ax) and LEGEND not in _legend(ax)
    assert "hollow diamond" not in " ".join(f.caption for f in figures).lower()


def test_working_set_and_scaling_figures_mark_their_contended_rows(tmp_path: Path, taken: dict[str, Any]) -> None:
    from app.report.figures import suite_plots

    busy = "Busy machine at {}: a thread got 40% of a CPU in its window"
    lines = []
    for i, kib in enumerate((16, 64, 256, 1024, 4096, 16384, 65536, 262144)):
        lines.append(line(i, point("working_set", buffer=kib * 1024), {"latency_ns": 1.5 * (1 + i) ** 1.6},
                          engine="builtin", warnings=[busy.format(f"{kib} KiB")] if kib == 4096 else []))
    for n in (1, 2, 3, 4):
        lines.append(line(len(lines), point("scaling", traffic="R", threads=n), {"bandwidth_mbps": 9000.0 * n},
                          engine="builtin", warnings=[busy.format(f"{n} threads")] if n == 3 else []))
    data = load(write_run(tmp_path / "run", lines))
    figures = suite_plots.figures(data.memory, tmp_path / "plots")
    ws = next(f for name, f in taken.items() if "working" in name)
    (mark,) = _marks(ws.axes[0])
    assert _xs(mark) == [4096 * 1024] and LEGEND in _legend(ws.axes[0])
    scaling = next(f for name, f in taken.items() if "scaling" in name)
    (mark,) = _marks(scaling.axes[0])
    assert _xs(mark) == [3] and _ys(mark) == [27.0]
    assert LEGEND in _legend(scaling.axes[0])
    for f in figures:
        if "working" in f.file or "scaling" in f.file:
            assert "hollow diamond" in f.caption.lower(), f.file
