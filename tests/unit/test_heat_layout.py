"""The heat map figure as drawn (plots.CHECK, matplotlib's own renderer): a fleet page — each host's strip titled
with its socket path, then the hosts' merge — has no two texts overlapping, the lines' legend included, and none
leaving the figure."""

from __future__ import annotations

from typing import Any

import pytest

from app.report.figures import heat, plots
from app.stats.latmap import intervals_of
from tests.helpers.figure_text import shown_ticklabels


def _texts(fig: Any) -> list[tuple[str, Any]]:
    fig.draw_without_rendering()
    renderer = fig.canvas.get_renderer()
    found = []
    for ax in fig.axes:
        ticks = [t for axis in (ax.xaxis, ax.yaxis) for t in shown_ticklabels(axis) if t.get_visible()]
        # a title placed left is an artist of its own (matplotlib's _left_title), not ax.title
        titles = [getattr(ax, name, None) for name in ("title", "_left_title", "_right_title")]
        for t in ticks + [ax.xaxis.label, ax.yaxis.label] + [t for t in titles if t is not None]:
            if t.get_visible() and t.get_text().strip():
                found.append((t.get_text(), t.get_window_extent(renderer)))
    for legend in fig.legends + [ax.get_legend() for ax in fig.axes if ax.get_legend() is not None]:
        # the legend whole, its line samples too: a title ran into them
        found.append((" ".join(t.get_text() for t in legend.get_texts()), legend.get_window_extent(renderer)))
    return found


@pytest.mark.parametrize("hosts", [2, 8])
def test_a_fleet_page_of_long_host_names_draws_without_overlaps(tmp_path: Any, monkeypatch: pytest.MonkeyPatch,
                                                                 hosts: int) -> None:
    problems: list[str] = []
    legends: list[int] = []

    def check(fig: Any, name: str) -> None:
        texts = _texts(fig)
        legends.append(sum(1 for text, _ in texts if text == "p50 p99 p99.9"))
        canvas = fig.bbox
        for i, (a, ba) in enumerate(texts):
            if not (canvas.x0 - 1 <= ba.x0 and ba.x1 <= canvas.x1 + 1 and canvas.y0 - 1 <= ba.y0
                    and ba.y1 <= canvas.y1 + 1):
                problems.append(f"{name}: {a!r} leaves the figure")
            problems.extend(f"{name}: {a!r} overlaps {b!r}" for b, bb in texts[i + 1:] if ba.overlaps(bb))

    monkeypatch.setattr(plots, "CHECK", check)
    seconds = [{"t": t + 0.9, "interval_s": 0.9 if t == 0 else 1.0, "read": [20_000, 900, 4_000, 90, 400_000, 10]}
               for t in range(3)]
    ivs = intervals_of(seconds)
    strips: list[tuple[str, Any, list[Any]]] = [
        (f"randread 4K QD1 on unix:///tmp/profiler-tui-agent-{i:08d}/agent.sock", ivs, []) for i in range(hosts)]
    strips.append((f"randread 4K QD1, {heat.MERGED} ({hosts})", ivs, []))
    figures = heat.draw(strips, tmp_path)
    assert problems == []
    assert len(figures) == 1 and legends == [1]  # one legend of the three lines per figure
