"""The report's "Latency distribution" section: the tail table's support rule, its footnote, the device check
(ratios, device vs software time, the reasons the counters were not read, hostile text escaped), results.csv's
tail and device columns, fleet rows, and the exceedance figure (readable, bounded, rendered by rsvg-convert)."""

from __future__ import annotations

import csv
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from app.report import render_report
from app.report.data.model import load
from app.report.figures import plots, tail_plots
from app.report.sections import tails
from tests.helpers.fleet_util import host_name
from tests.helpers.tail_runs import device_part, matrix, storage_line, write_run
from tests.unit.test_report_visual import Checker

HOSTILE = "evil | note\n# heading `code` <b>x</b>"


def _section(md: str) -> str:
    return md[md.index("### Latency distribution"):md.index("**Figure: Throughput")]


@pytest.fixture(scope="module")
def small(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    lines = [storage_line(0, 25_000, 80_000, iodepth=1, device=device_part(25_000 * 4096, 1.0, 70_000.0)),
             storage_line(1, 400_000, 120_000, iodepth=16,
                          device=device_part(400_000 * 4096, 0.05, 60_000.0, note=HOSTILE)),
             storage_line(2, 2_000_000, 300_000, rw="randwrite", iodepth=32,
                          device={"unavailable": "no block device | " + HOSTILE}),
             storage_line(3, 5_000, 90_000, rw="randwrite", bs=65536, iodepth=4, hist=False)]
    d = write_run(tmp_path_factory.mktemp("tails") / "run", lines)
    render_report(d)
    return d, (d / "report.md").read_text()


def _row(md: str, workload: str, mark: str = ",") -> list[str]:
    """The cells of the first table row of ``workload`` holding ``mark`` (the tail table's I/O counts do)."""
    line = next(x for x in md.splitlines() if x.startswith(f"| {workload} ") and mark in x)
    return [c.strip() for c in line.strip("|").split("|")]


def test_tail_table_prints_only_supported_percentiles(small: tuple[Path, str]) -> None:
    md = _section(small[1])
    # 25,000 I/Os: p99 (1,000) and p99.9 (10,000) supported, p99.99 and p99.999 not
    row = _row(md, "randread 4K QD1")
    assert row[1] == "25,000" and re.fullmatch(r"\d+\.\d\d", row[2]) and re.fullmatch(r"\d+\.\d\d", row[3])
    assert row[4:] == ["—", "—"]
    # a stall can hold every I/O in flight: a percentile needs 10 · QD / (1 − p) I/Os
    qd16 = _row(md, "randread 4K QD16")
    assert qd16[3] != "—" and qd16[4:] == ["—", "—"]  # 400,000 I/Os: p99.9 (160,000) yes, p99.99 (1.6 M) no
    qd32 = _row(md, "randwrite 4K QD32")
    assert qd32[3] != "—" and qd32[4:] == ["—", "—"]  # 2,000,000 I/Os: p99.9 (320,000) yes, p99.99 (3.2 M) no
    few = _row(md, "randwrite 64K QD4")  # 5,000 I/Os: p99 only (4,000 at QD4)
    assert few[2] != "—" and few[3:] == ["—", "—", "—"]
    assert ("too few I/Os to support that percentile (4 points; each point's count is in the I/Os column)" in md
            and "at N = 1: p99 1,000, p99.9 10,000, p99.99 100,000, p99.999 1,000,000" in md)
    assert "n/a:" not in md  # every percentile is recorded


def test_section_says_which_points_the_figure_leaves_out(small: tuple[Path, str]) -> None:
    md = _section(small[1])
    assert "![Latency distribution: fraction of I/Os slower than x](plots/exceedance.svg)" in md
    assert "1 point of this run records no latency histogram and is not drawn" in md
    assert md.count("plots/exceedance") == 1 and small[1].count("plots/exceedance.svg") == 1


def test_device_check_table_and_reasons(small: tuple[Path, str]) -> None:
    md = _section(small[1])
    head = "| Workload         | Device | Read bytes device/fio |"
    assert head in md
    r = _row(md.split(head)[1], "randread 4K QD16", "loop9")
    assert r[:5] == ["randread 4K QD16", "loop9", "0.05", "—", "60.00"]
    assert float(r[6]) == pytest.approx(float(r[5]) - 60.0, abs=0.011)  # software = fio mean − device mean
    assert "Means only" in md
    # foreign text: one line, Markdown's characters escaped (no new table cell, heading or code)
    escaped = "evil \\| note \\# heading \\`code\\` \\<b\\>x\\</b\\>"
    assert f"- Counters not read on 1 point: no block device \\| {escaped}" in md
    assert "- randread 4K QD16: evil \\| note \\# heading" in md
    assert "\n# heading" not in small[1]


def test_validity_table_lists_the_device_flags(small: tuple[Path, str]) -> None:
    md = small[1]
    assert re.search(r"\| not-on-device +\| flagged \(1 point\), passed \(1\), not applicable \(2\)", md)
    assert re.search(r"\| tail-unstable +\| not applicable", md)


def test_results_csv_tail_and_device_columns(small: tuple[Path, str]) -> None:
    rows = list(csv.DictReader((small[0] / "results.csv").open()))
    qd1, qd16, qd32, big = rows
    assert qd1["lat_p99_9_us"] and qd1["lat_p99_99_us"] == "" and qd1["lat_p99_999_us"] == ""
    assert qd32["lat_p99_9_us"] and qd32["lat_p99_99_us"] == "" == qd32["lat_p99_999_us"]  # 10 stalls of 32 I/Os
    assert big["lat_p99_us"] and big["lat_p99_9_us"] == ""  # p99 stays as fio gave it
    assert (qd16["device_read_ratio"], qd16["device_write_ratio"], qd16["device_lat_mean_us"]) == ("0.05", "", "60.0")
    assert qd32["device_read_ratio"] == "" and big["device_lat_mean_us"] == ""


def test_old_lines_get_the_table_and_no_figure(tmp_path: Path) -> None:
    lines = [storage_line(i, 20_000, 50_000, hist=False, iodepth=q) for i, q in enumerate((1, 8))]
    for ln in lines:
        del ln["metrics"]["lat_ns"]["p99_999"]  # fio ran without it
    d = write_run(tmp_path / "old", lines)
    render_report(d)
    md = _section((d / "report.md").read_text())
    assert "No point of this run records fio's latency histogram, so there is no exceedance figure" in md
    assert _row(md, "randread 4K QD1")[5] == "—"  # unsupported wins over unrecorded
    assert not (d / "plots" / "exceedance.svg").exists()


def test_fleet_rows_per_host(tmp_path: Path) -> None:
    hosts = [host_name(i) for i in range(3)]
    lines = [storage_line(i, ios, 60_000 * (1 + k), host=h, iodepth=q)
             for i, (ios, q) in enumerate(((30_000, 1), (1_200_000, 32))) for k, h in enumerate(hosts)]
    d = write_run(tmp_path / "fleet", lines, hosts)
    render_report(d)
    md = (d / "report.md").read_text()
    sec = md[md.index("## Latency distribution"):]
    assert "| Workload         | Host                  |      I/Os |" in sec
    assert sum(1 for x in sec.splitlines() if x.startswith("| randread 4K QD32 | tcp://")) == 3
    assert "![Latency distribution per host: fraction of I/Os slower than x](plots/exceedance.svg)" in sec
    assert md.count("plots/exceedance.svg") == 1


def test_panels_bound_their_lines() -> None:
    lines = [tail_plots.Line(f"QD{q}", q, [(1000, 1)]) for q in range(1, 13)]
    kept = tail_plots._spread(lines)
    assert len(kept) == tail_plots.MAX_LINES and kept[0].load == 1 and kept[-1].load == 12


def _draw(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, lines: list[dict[str, Any]],
          hosts: list[str] | None = None) -> tuple[list[plots.Figure], Checker]:
    d = write_run(tmp_path / "run", lines, hosts or ())
    check = Checker()
    monkeypatch.setattr(plots, "CHECK", check)
    points = load(d).storage
    figs = (tail_plots.fleet_exceedance_figures(points, hosts, tmp_path) if hosts
            else tail_plots.exceedance_figures(points, tmp_path))
    return figs, check


def _png(svg: Path) -> None:
    from PIL import Image

    rsvg = shutil.which("rsvg-convert")
    assert rsvg, "rsvg-convert is missing: `make setup` installs Debian's librsvg2-bin"
    png = svg.with_suffix(".png")
    subprocess.run([rsvg, "-o", str(png), str(svg)], check=True, capture_output=True)
    with Image.open(png) as im:
        colours = im.convert("RGB").getcolors(maxcolors=1 << 20)
        assert im.width > 300 and (colours is None or len(colours) > 50), f"{svg.name}: nearly blank"


def test_many_loads_are_coloured_by_load_and_bounded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # 12 loads of two block sizes: more than MAX_LINES per pattern, so a panel per block size, 8 loads drawn
    figs, check = _draw(tmp_path, monkeypatch, matrix(["randread"], [4096, 65536], list(range(1, 13)), ios=30_000))
    assert [f.file for f in figs] == ["plots/exceedance.svg"]
    assert check.overlaps == [] and check.unexplained == []
    assert "at most 8 loads per panel" in figs[0].caption and "(8 points not drawn" in figs[0].caption
    _png(tmp_path / "exceedance.svg")
    svg = (tmp_path / "exceedance.svg").read_text()
    assert "randread 4K (8 of 12 loads)" in svg and "outstanding I/Os (QD × jobs)" in svg


def test_fleet_figure_has_a_line_per_host(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    hosts = [host_name(i) for i in range(3)]
    lines = [storage_line(0, 30_000, 60_000 * (1 + k), host=h) for k, h in enumerate(hosts)]
    figs, check = _draw(tmp_path, monkeypatch, lines, hosts)
    assert len(figs) == 1 and check.overlaps == [] and check.unexplained == []
    svg = (tmp_path / "exceedance.svg").read_text()
    assert all(h in svg for h in hosts)
    _png(tmp_path / "exceedance.svg")


def test_owns_only_its_figures() -> None:
    fig = plots.Figure("plots/exceedance-2.svg", "t", "c", plots.Kind.STORAGE)
    assert tails.owns(fig) and not tails.owns(plots.Figure("plots/latency-throughput.svg", "t", "c",
                                                            plots.Kind.STORAGE))


def test_big_run_keeps_the_body_bounded(small: tuple[Path, str]) -> None:
    from app.report.render import workload

    points = load(small[0]).storage
    body = "\n".join(tails.section(points, [], workload, table=False))
    assert "| Workload" not in body and "in the appendix (Latency distribution, every point)" in body
    appendix = "\n".join(tails.appendix(points, workload))
    assert appendix.startswith("### Latency distribution, every point") and "| randwrite 64K QD4 " in appendix


def test_many_hosts_share_one_legend(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    hosts = [host_name(i) for i in range(tail_plots.MAX_PANEL_LEGEND + 2)]
    lines = [storage_line(0, 2_000, 60_000 * (1 + k / 10), host=h) for k, h in enumerate(hosts)]
    _draw(tmp_path, monkeypatch, lines, hosts)
    svg = (tmp_path / "exceedance.svg").read_text()
    assert all(svg.count(h) == 1 for h in hosts)  # named once, in the figure's legend
