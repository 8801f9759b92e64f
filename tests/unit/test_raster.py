"""The report's figures drawn again as PNG (app.report.raster): the same figures, titles and order as report.md,
pictures that fit the asked pixel size with the figure's proportions, the same bytes for the same size, nothing
written while drawing (an export in another thread still writes its SVGs), and plots/NAME.png written only
through the checked directory."""

from __future__ import annotations

import io
import shutil
import threading
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from PIL import Image

from app.core.errors import UsageError
from app.core.textable import markdown_figure
from app.report import render_report
from app.report.raster import draw_report_figures, report_order
from tests.helpers.fleet_util import GOLDEN_RUN, make_fleet_dir


@pytest.fixture(scope="module")
def golden(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("raster") / "golden"
    shutil.copytree(GOLDEN_RUN, d)
    render_report(d)
    return d


@pytest.fixture(scope="module")
def figures(golden: Path):
    return draw_report_figures(golden)


def test_the_figures_are_the_reports_in_its_order(golden: Path, figures) -> None:
    md = (golden / "report.md").read_text(encoding="utf-8")
    assert [s.file for s in figures.shown] == report_order(md)
    for s in figures.shown:
        assert s.caption and "\n".join(markdown_figure(s.title, s.caption, s.file)) in md  # as the report writes it


def test_a_picture_fits_the_box_with_the_figures_proportions(figures) -> None:
    for width, height in ((780, 440), (400, 800), (1600, 300)):
        image = Image.open(io.BytesIO(figures.png(0, width, height)))
        assert image.format == "PNG"
        assert image.width <= width and image.height <= height
        assert image.width >= width - 2 or image.height >= height - 2  # as large as fits, on one side
    a = Image.open(io.BytesIO(figures.png(0, 780, 10_000))).size
    b = Image.open(io.BytesIO(figures.png(0, 390, 10_000))).size
    assert abs(a[0] / a[1] - b[0] / b[1]) < 0.02  # the figure's proportions whatever the size


@pytest.mark.slow
def test_the_same_size_gives_the_same_bytes(golden: Path, figures) -> None:
    again = draw_report_figures(golden)
    for i in range(len(figures)):
        assert figures.png(i, 500, 300) == again.png(i, 500, 300)


@pytest.mark.slow
def test_drawing_writes_nothing_and_an_export_meanwhile_still_writes_its_svgs(golden: Path, tmp_path: Path) -> None:
    other = tmp_path / "other"
    shutil.copytree(GOLDEN_RUN, other)
    before = {p.name: p.stat().st_mtime_ns for p in (golden / "plots").iterdir()}
    exported: list[Path] = []
    thread = threading.Thread(target=lambda: exported.append(render_report(other)))
    thread.start()
    drawn = draw_report_figures(golden)
    thread.join()
    assert {p.name: p.stat().st_mtime_ns for p in (golden / "plots").iterdir()} == before
    assert len(drawn) == len(list((other / "plots").glob("*.svg"))) == len(report_order(exported[0].read_text()))


def test_write_png_beside_the_svg(golden: Path, figures) -> None:
    path = figures.write_png(2)
    assert path == golden / "plots" / (Path(figures.shown[2].file).stem + ".png")
    assert Image.open(path).format == "PNG"


def test_write_png_refuses_a_plots_link(tmp_path: Path) -> None:
    d = tmp_path / "run"
    shutil.copytree(GOLDEN_RUN, d)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (d / "plots").symlink_to(elsewhere)
    figures = draw_report_figures(d)
    with pytest.raises(UsageError) as e:
        figures.write_png(0)
    assert str(e.value).startswith(f"{d / 'plots' / figures.shown[0].png_name} not written: ")
    assert list(elsewhere.iterdir()) == []


def test_a_fleet_runs_figures(tmp_path: Path) -> None:
    d = make_fleet_dir(tmp_path / "fleet", hosts=3, points=3)
    md = render_report(d).read_text(encoding="utf-8")
    figures = draw_report_figures(d)
    assert len(figures) >= 1
    assert [s.file for s in figures.shown] == report_order(md)


@given(st.lists(st.tuples(st.text(alphabet=st.characters(blacklist_characters="]\n\r"), max_size=20),
                          st.from_regex(r"plots/[a-z0-9-]{1,12}\.svg", fullmatch=True)), max_size=5),
       st.lists(st.text(max_size=40), max_size=5))
def test_report_order_reads_the_figure_lines_only(figs: list[tuple[str, str]], other: list[str]) -> None:
    lines = [f"![{t}]({f})" for t, f in figs] + [o.replace("!", "") for o in other]
    assert report_order("\n".join(lines)) == [f for _, f in figs]
