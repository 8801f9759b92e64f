"""What a reader needs from the report's figures, at 4 and at 1,008 points (issue 17).

Each figure is checked with matplotlib's own renderer just before it is saved (plots.CHECK):
no two labels (tick labels, axis labels, titles, colour-scale labels) overlap anywhere in the
figure, and every figure has a legend per panel or a colour scale.  The saved SVGs are then
rendered to PNG with rsvg-convert (Debian librsvg2-bin, installed by `make setup`), which must
give a non-blank image, and every planned queue depth must be labelled in some figure: a panel
titled QDn, a legend entry QDn, or a tick label of an "outstanding I/Os" axis.
"""

from __future__ import annotations

import importlib.util
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from app.report import render_report
from app.report.figures import plots
from tests.conftest import ROOT
from tests.helpers.figure_text import shown_ticklabels as _shown_ticklabels

# reports of 120 and 1,008 points rendered under the checker: tens of CPU-seconds, left to `make test`
pytestmark = pytest.mark.slow


def _bench() -> Any:
    spec = importlib.util.spec_from_file_location("report_speed", ROOT / "bench" / "report_speed.py")
    mod = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    spec.loader.exec_module(mod)  # type: ignore[union-attr]
    return mod


class Checker:
    def __init__(self) -> None:
        self.overlaps: list[str] = []
        self.unexplained: list[str] = []
        self.qd_labels: set[str] = set()  # labels naming a queue depth
        self.figures: list[str] = []

    def __call__(self, fig: Any, name: str) -> None:
        self.figures.append(name)
        fig.draw_without_rendering()
        renderer = fig.canvas.get_renderer()
        texts: list[tuple[str, Any]] = []
        colour_scale = False
        legends = 0
        panels = 0
        for ax in fig.axes:
            if getattr(ax, "_colorbar", None) is not None:
                colour_scale = True
            if ax.get_legend() is not None:
                legends += 1
            if ax.get_title():
                panels += 1
            for t in _shown_ticklabels(ax.xaxis) + _shown_ticklabels(ax.yaxis) + [ax.xaxis.label, ax.yaxis.label,
                                                                                  ax.title]:
                if t.get_visible() and t.get_text().strip():
                    texts.append((t.get_text(), t.get_window_extent(renderer)))
            qd_axis = "outstanding I/Os" in ax.get_xlabel()
            if qd_axis:
                self.qd_labels.update(f"QD{t.get_text()}" for t in _shown_ticklabels(ax.xaxis) if t.get_text())
            for t in [ax.title] + (ax.get_legend().get_texts() if ax.get_legend() else []):
                m = re.match(r"QD(\d+)", t.get_text())
                if m:
                    self.qd_labels.add(f"QD{m.group(1)}")
            if getattr(ax, "_colorbar", None) is not None and "queue depth" in ax.get_ylabel():
                self.qd_labels.update(f"QD{t.get_text()}" for t in _shown_ticklabels(ax.yaxis) if t.get_text())
        for i, (a, ba) in enumerate(texts):
            for b, bb in texts[i + 1:]:
                if ba.overlaps(bb):
                    self.overlaps.append(f"{name}: {a!r} overlaps {b!r}")
        if not colour_scale and legends < panels:
            self.unexplained.append(f"{name}: {panels} panels, {legends} legends, no colour scale")


def _render(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str, **shape: Any) -> tuple[Path, Checker]:
    d = _bench().make_results_dir(tmp_path / name, **shape)
    check = Checker()
    monkeypatch.setattr(plots, "CHECK", check)
    monkeypatch.setattr(plots, "PARALLEL", False)  # the checker runs in this process
    render_report(d)
    return d, check


SHAPES: dict[str, dict[str, Any]] = {
    "4": {"rws": ["read", "randread"], "bss": [4096], "qds": [1, 32]},
    "1008": {"bss": [4096 << i for i in range(12)], "qds": [1 << i for i in range(14)]},
}


@pytest.fixture(scope="module")
def checked(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """Each shape rendered once, under the checker, for the tests that only read what it wrote (the 1,008-point
    render takes seconds): size -> (directory, checker)."""
    done: dict[str, tuple[Path, Checker]] = {}

    def get(size: str) -> tuple[Path, Checker]:
        if size not in done:
            # the checker and serial drawing for this render only: the module's other tests render as the tool does
            with pytest.MonkeyPatch.context() as mp:
                done[size] = _render(tmp_path_factory.mktemp("checked"), mp, f"run-{size}", **SHAPES[size])
        return done[size]
    return get


@pytest.mark.parametrize("size", list(SHAPES))
def test_figures_are_readable(checked: Any, size: str) -> None:
    rsvg = shutil.which("rsvg-convert")
    assert rsvg, "rsvg-convert is missing: `make setup` installs Debian's librsvg2-bin"
    shape = SHAPES[size]
    d, check = checked(size)
    md = (d / "report.md").read_text()
    referenced = re.findall(r"!\[[^\]]*\]\(plots/([^)]+)\)", md)
    assert sorted(referenced) == sorted(check.figures) == sorted(p.name for p in (d / "plots").glob("*.svg"))
    assert check.overlaps == [], "\n".join(check.overlaps)
    assert check.unexplained == []
    planned = {f"QD{q}" for q in shape["qds"]}
    assert planned <= check.qd_labels, sorted(planned - check.qd_labels)
    from PIL import Image

    for svg in sorted((d / "plots").glob("*.svg")):
        png = svg.with_suffix(".png")
        proc = subprocess.run([rsvg, "-o", str(png), str(svg)], capture_output=True, text=True)
        assert proc.returncode == 0, (svg.name, proc.stderr)
        with Image.open(png) as im:
            assert im.width > 300 and im.height > 200, svg.name
            colours = im.convert("RGB").getcolors(maxcolors=1 << 20)
            assert colours is None or len(colours) > 50, f"{svg.name}: nearly blank"


def test_1008_point_heatmaps_continue_in_further_figures(checked: Any) -> None:
    d, _check = checked("1008")
    names = sorted(p.name for p in (d / "plots").glob("heatmap-bs-mix-throughput*.svg"))
    # 14 queue depths, six panels per figure: 6 + 6 + 2
    assert names == ["heatmap-bs-mix-throughput-2.svg", "heatmap-bs-mix-throughput-3.svg",
                     "heatmap-bs-mix-throughput.svg"]
    md = (d / "report.md").read_text()
    assert "(QD4096 … QD8192 here; 14 in all, 6 per figure)" in md
    assert "Not drawn" not in md


def test_more_than_200_points_summary_in_body_every_point_in_appendix_and_csv(checked: Any) -> None:
    """Item 3: a 1,008-point report keeps one summary row per workload in the body and moves the
    per-point tables to an appendix; results.csv has every point."""
    import csv

    d, _check = checked("1008")  # the checker only looks at the figures: the report and CSV are the tool's own
    md = (d / "report.md").read_text()
    body, appendix = md.split("## Appendix: every point")
    section = body.split("## Storage results")[1].split("\n## ")[0]
    rows = [x for x in section.splitlines() if x.startswith("| ") and not x.startswith("| Workload")]
    assert len(rows) == 6 * 12  # one per workload (pattern × block size)
    assert "| randread 4K " in section and "Best point (most IOPS)" in section and "Operating point (p99" in section
    assert "| Test Type " not in body and "| Test Type " in appendix  # the per-point table is in the appendix
    every = appendix.split("### Storage results, every point")[1].split("Read and write sides")[0]
    # header and points (the rule starts "|-")
    assert sum(1 for x in every.splitlines() if x.startswith("| ")) == 1 + 1008
    little = appendix.split("### Little's law, every point")[1].split("\n### ")[0]
    assert sum(1 for x in little.splitlines() if x.startswith("| ")) == 1 + 1008
    assert len(list(csv.DictReader((d / "results.csv").open()))) == 1008


def test_120_points_keep_the_per_point_table_in_the_body(tmp_path: Path) -> None:
    d = _bench().make_results_dir(tmp_path / "run")
    md = render_report(d).read_text()
    assert "## Appendix" not in md
    section = md.split("## Storage results")[1].split("\n## ")[0]
    assert sum(1 for x in section.splitlines() if x.startswith("| ")) >= 2 + 120
