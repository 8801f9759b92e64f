"""The figures of a repeated run (``repeat`` ≥ 2): a point is drawn once, as the mean over its replicates (no
zig-zag line through every replicate at one x, no heatmap cell of replicate 1 shown as the point), and the
exceedance figure keys its lines by what varies between them (the replicates of one load are not put on a
colour scale of loads that has one value)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Iterator

import pytest

from app.report.compute import analysis as an
from app.report.data.model import load
from app.report.figures import plots, tail_plots
from app.report.render import workload
from app.report.sections.tails import section
from tests.helpers.tail_runs import storage_line, write_run


@pytest.fixture()
def taken() -> Iterator[dict[str, Any]]:
    """The figures drawn, by file name, instead of written."""
    kept: dict[str, Any] = {}
    plots.TAKEN.sink = lambda fig, name: kept.__setitem__(name, fig)
    try:
        yield kept
    finally:
        plots.TAKEN.sink = None


def _repeated(tmp_path: Path) -> Path:
    """randread and randwrite at 4K, 64K, 128K and QD4, QD16, three replicates each, the IOPS of a replicate 10 %
    apart."""
    lines: list[dict[str, Any]] = []
    for rep in (1, 2, 3):
        for rw in ("randread", "randwrite"):
            for bs in (4096, 65536, 131072):
                for qd in (4, 16):
                    ios = int(200_000 * (1 + 0.1 * (rep - 2)) * (qd / 16) ** 0.5)
                    lines.append(storage_line(len(lines), ios, 40_000.0 * qd ** 0.7, rw=rw, bs=bs, iodepth=qd,
                                              replicate=rep))
    return write_run(tmp_path / "rep", lines)


def test_a_repeated_point_is_drawn_once_as_the_mean_over_its_replicates(tmp_path: Path,
                                                                      taken: dict[str, Any]) -> None:
    data = load(_repeated(tmp_path))
    figures = plots.draw_all(data.storage, an.storage_curves(data.storage), [], tmp_path / "plots", parallel=False)
    fig = taken["storage-vs-queue-depth.svg"]
    top = fig.axes[0]
    lines = [ln for ln in top.get_lines() if ln.get_marker() == "o" and ln.get_linestyle() == "-"]
    assert len(lines) == 3  # one line per block size (the first panel: randread)
    for ln in lines:
        xs = list(ln.get_xdata())
        assert xs == sorted(set(xs)) == [4, 16]  # no zig-zag: each load once
    means = {round(float(y), 3) for ln in lines for y in ln.get_ydata()}
    qd16 = [r.iops for r in data.storage if r.iodepth == 16 and r.bs == 4096 and r.rw == "randread"]
    assert round(sum(qd16) / 3 / 1e3, 3) in means
    heat = taken["heatmap-qd-mix-throughput.svg"]
    cells = [t.get_text() for ax in heat.axes for t in ax.texts]
    rep1 = next(r for r in data.storage if r.iodepth == 16 and r.bs == 4096 and r.replicate == 1 and r.rw == "randread")
    mean = sum(r.bw for r in data.storage if r.iodepth == 16 and r.bs == 4096 and r.rw == "randread") / 3
    assert plots.format_short(mean / 1e6, fixed=True) in cells
    assert plots.format_short(rep1.bw / 1e6, fixed=True) not in cells
    caption = next(f.caption for f in figures if isinstance(f, plots.Figure) and "heatmap-qd" in f.file)
    assert "the mean over its 3 replicates, never one of them" in caption


def test_the_exceedance_lines_of_one_load_are_told_apart_by_replicate(tmp_path: Path, taken: dict[str, Any]) -> None:
    """Three block sizes at QD16, three replicates each: nine lines, all QD16 — no colour scale of loads."""
    pairs = [(rep, bs) for rep in (1, 2, 3) for bs in (4096, 65536, 131072)]
    lines = [storage_line(i, 200_000 + 10_000 * rep, 400_000.0, bs=bs, iodepth=16, replicate=rep)
             for i, (rep, bs) in enumerate(pairs)]
    data = load(write_run(tmp_path / "qd16", lines))
    panels, by_load = tail_plots.run_panels(data.storage)
    assert not by_load
    assert [p.title for p in panels] == ["randread 4K QD16", "randread 64K QD16", "randread 128K QD16"]
    assert [ln.label for ln in panels[0].lines] == ["replicate 1", "replicate 2", "replicate 3"]
    (fig,) = tail_plots.exceedance_figures(data.storage, tmp_path / "plots")
    drawn = taken["exceedance.svg"]
    assert not any("outstanding" in ax.get_ylabel() for ax in drawn.axes)  # no colour bar keyed by load
    assert [t.get_text() for t in drawn.axes[0].get_legend().get_texts()] == ["replicate 1", "replicate 2",
                                                                              "replicate 3"]
    assert "all at one load (in the title); one line per replicate (in the legend)" in fig.caption


def test_replicates_of_several_loads_share_their_loads_colour_and_are_all_drawn(tmp_path: Path) -> None:
    """Four loads × three replicates of one pattern (12 points, more than a legend holds): coloured by load, every
    replicate of the four loads drawn (no "8 of 12 loads"), and the tail table names each replicate."""
    pairs = [(rep, qd) for rep in (1, 2, 3) for qd in (1, 4, 16, 64)]
    lines = [storage_line(i, 200_000, 50_000.0 * qd ** 0.7, iodepth=qd, replicate=rep)
             for i, (rep, qd) in enumerate(pairs)]
    data = load(write_run(tmp_path / "loads", lines))
    panels, by_load = tail_plots.run_panels(data.storage)
    assert by_load and len(panels) == 1
    assert len(panels[0].lines) == 12 and panels[0].left_out == panels[0].loads_left_out == 0
    assert sorted({ln.label for ln in panels[0].lines})[:3] == ["QD1, replicate 1", "QD1, replicate 2",
                                                                "QD1, replicate 3"]
    md = "\n".join(section(data.storage, [], workload))
    assert "| randread 4K QD16, replicate 2 " in md and "| randread 4K QD16 " not in md
