"""The report's written summary of trends (app.report.sections.trends) and the storage figures it sits beside:
each sentence carries its effect size, none gives a direction where the points lie within noise, and the
latency–throughput and block-size figures label every load, tick the whole throughput range, name p99 in
the legend and share the y axes of compared panels.  All synthetic: no fio runs here."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from app.model.records import JSONObject
from app.report import render_report
from app.report.compute import analysis as an
from app.report.compute import verdict
from app.report.data.model import StorageRow
from app.report.figures import plots
from app.report.sections import trends
from tests.conftest import ROOT


def row(run_dir: Path, i: int, rw: str, bs: int, qd: int, iops: float, cv: float | None = None,
        mean_us: float = 100.0, p99_us: float = 300.0, rwmixread: int | None = None) -> StorageRow:
    """A measured point; with ``cv``, ten whole seconds of IOPS around ``iops`` with that spread in raw/."""
    record: dict[str, Any] = {}
    if cv is not None:
        (run_dir / "raw").mkdir(exist_ok=True)
        name = f"raw/{i:04d}.samples.jsonl"
        # ±1 alternating deviations: sample sd = cv × iops × sqrt(10/9)
        lines = [{"t": float(t + 1), "interval_s": 1.0, "iops": iops * (1 + cv * (1 if t % 2 else -1))}
                 for t in range(10)]
        (run_dir / name).write_text("".join(json.dumps(s) + "\n" for s in lines))
        record["raw"] = {"samples": name}
    point: JSONObject = {"rw": rw, "bs": bs, "iodepth": qd, "numjobs": 1, "ioengine": "libaio", "rwmixread": rwmixread}
    metrics: JSONObject = {"iops": iops, "bw_bytes": iops * bs, "lat_ns": {"mean": mean_us * 1e3, "p99": p99_us * 1e3}}
    return StorageRow.of(i, point, metrics, record)


def test_queue_depth_growth_with_its_size_then_flat_within_noise(tmp_path: Path) -> None:
    pts = [row(tmp_path, 0, "randread", 4096, 1, 10_000, cv=0.02),
           row(tmp_path, 1, "randread", 4096, 32, 98_000, cv=0.05),
           row(tmp_path, 2, "randread", 4096, 64, 102_000, cv=0.05)]
    (s,) = trends.queue_depth_trends(tmp_path, pts)
    # QD32 vs QD64: +4 % is within the two points' intervals, but one run per point cannot see drift between runs
    # (5 % allowed for each): the step is not judged, never "within noise"
    assert "randread 4 KiB IOPS rises 10.2× from QD1 to QD64 (10.0 → 102.0 kIOPS; QD32 → QD64: +4 %, not judged); " \
           "judged on within-run intervals." == s, s
    # the same +4 % measured tightly (CV 0.5 %) is beyond noise: the growth runs on to QD64
    tight = [row(tmp_path, 10 + i, "randread", 4096, qd, v, cv=0.005) for i, (qd, v) in
             enumerate(((1, 10_000), (32, 98_000), (64, 102_000)))]
    (s,) = trends.queue_depth_trends(tmp_path, tight)
    assert "rises 10.2× from QD1 to QD64" in s and "within noise" not in s, s


def test_read_write_share_is_stated_or_said_to_be_within_noise(tmp_path: Path) -> None:
    noisy = [row(tmp_path, 0, "randread", 4096, 16, 100_000, cv=0.065),
             row(tmp_path, 1, "randwrite", 4096, 16, 95_000, cv=0.065),
             row(tmp_path, 2, "randread", 65536, 16, 20_000, cv=0.01),
             row(tmp_path, 3, "randwrite", 65536, 16, 12_400, cv=0.01)]
    (s,) = trends.mix_trends(tmp_path, noisy)
    # one run per point: 5 % apart is not judged (never "no difference"), 38 % apart is real
    assert "95 % at 4 KiB QD16 (95.0 vs 100.0 kIOPS, not judged)" in s, s
    assert "62 % at 64 KiB QD16 (12.4 vs 20.0 kIOPS)" in s and "no difference" not in s, s


def test_without_samples_a_difference_is_not_judged_never_no_difference(tmp_path: Path) -> None:
    pts = [row(tmp_path, 0, "read", 4096, 16, 100_000), row(tmp_path, 1, "write", 4096, 16, 92_000),
           row(tmp_path, 2, "read", 4096, 1, 20_000), row(tmp_path, 3, "write", 4096, 1, 20_500)]
    (s,) = trends.mix_trends(tmp_path, pts)
    assert s == ("sequential writes as a share of sequential reads' IOPS: 92 % at 4 KiB QD16 (92.0 vs 100.0 kIOPS, "
                 "not judged); not judged: too few samples: the line records no interval and kept no per-second "
                 "samples."), s
    # with tight per-second samples the same 8 % gap is still not judged on one run per point (drift between runs
    # is allowed for), while a 30 % gap is a measured difference
    tight = [row(tmp_path, 4, "read", 4096, 16, 100_000, cv=0.005),
             row(tmp_path, 5, "write", 4096, 16, 92_000, cv=0.005)]
    (s,) = trends.mix_trends(tmp_path, tight)
    assert "92 % at 4 KiB QD16 (92.0 vs 100.0 kIOPS, not judged)" in s and "drift between runs" in s, s
    tight = [row(tmp_path, 6, "read", 4096, 16, 100_000, cv=0.005),
             row(tmp_path, 7, "write", 4096, 16, 70_000, cv=0.005)]
    (s,) = trends.mix_trends(tmp_path, tight)
    assert "70 % at 4 KiB QD16 (70.0 vs 100.0 kIOPS); judged on within-run intervals." in s, s


def test_block_size_bandwidth_rises_then_flattens(tmp_path: Path) -> None:
    mb = 1e6
    pts = [row(tmp_path, i, "read", bs, 32, bw * mb / bs) for i, (bs, bw) in
           enumerate(((4096, 200), (65536, 900), (131072, 1040), (1 << 20, 1050)))]
    (s,) = trends.block_size_trends(tmp_path, pts)
    # no samples: the effect is stated, the verdict is not given
    assert s == ("read bandwidth at QD32: 5.2× from 4 KiB to 1 MiB (200 → 1,050 MB/s), not judged: too few samples: "
                 "the line records no interval and kept no per-second samples."), s
    pts = [row(tmp_path, 20 + i, "read", bs, 32, bw * mb / bs, cv=0.02) for i, (bs, bw) in
           enumerate(((4096, 200), (65536, 900), (131072, 1040), (1 << 20, 1050)))]
    (s,) = trends.block_size_trends(tmp_path, pts)
    # 64 KiB → 1 MiB is +17 %: more than one run's interval, not more than drift between runs can make
    assert s.startswith("read bandwidth at QD32 rises 5.2× from 4 KiB to 1 MiB (200 → 1,050 MB/s; 64 KiB → 1 MiB: "
                        "+17 %, not judged)"), s
    falling = [row(tmp_path, 10 + i, "randwrite", bs, 4, bw * mb / bs, cv=0.01) for i, (bs, bw) in
               enumerate(((4096, 500), (65536, 300)))]
    (s,) = trends.block_size_trends(tmp_path, falling)
    assert s.startswith("randwrite bandwidth at QD4 falls 40 % from 4 KiB to 64 KiB"), s


def test_single_points_give_no_summary(tmp_path: Path) -> None:
    assert trends.summary_section(tmp_path, [row(tmp_path, 0, "randread", 4096, 16, 1000)]) == []
    # a point that moved no data (a failed job's zeros) is no neighbour to compare with
    assert trends.summary_section(tmp_path, [row(tmp_path, 0, "randread", 4096, 16, 1000),
                                             row(tmp_path, 1, "randread", 4096, 32, 0)]) == []


def test_junk_samples_leave_the_difference_not_judged(tmp_path: Path) -> None:
    a, b = row(tmp_path, 0, "read", 4096, 16, 100_000, cv=0.01), row(tmp_path, 1, "write", 4096, 16, 97_000, cv=0.01)
    (tmp_path / "raw" / "0000.samples.jsonl").write_text("not json\n{\"t\": \"x\"}\n")
    d = verdict.judge(tmp_path, [a], [b], "iops")
    assert d.verdict == "not judged" and d.reason.startswith("too few samples"), d


def test_report_places_the_summary_first_in_the_analysis(tmp_path: Path) -> None:
    import importlib.util

    spec = importlib.util.spec_from_file_location("report_speed", ROOT / "bench" / "report_speed.py")
    bench = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    spec.loader.exec_module(bench)  # type: ignore[union-attr]
    d = bench.make_results_dir(tmp_path / "run", rws=["randread", "randwrite"], bss=[4096], qds=[1, 32])
    md = render_report(d).read_text()
    analysis = md.split("## Analysis\n\n")[1]
    assert analysis.startswith("### Summary of trends")
    # the generated points keep no samples: the effect is stated, the verdict not given
    assert re.search(r"randread 4 KiB IOPS: [\d.]+× from QD1 to QD32 \(.*\), not judged: too few samples", analysis)
    assert "random writes as a share of random reads' IOPS: " in analysis


# --- figures -----------------------------------------------------------------------------------------------


@pytest.fixture
def figures(monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """The figures drawn in this process, by file name, as matplotlib objects just before saving (and, under
    "NAME renderer", the renderer that laid them out: a closed figure's canvas has none)."""
    seen: dict[str, Any] = {}

    def keep(fig: Any, name: str) -> None:
        fig.draw_without_rendering()
        seen[name] = fig
        seen[f"{name} renderer"] = fig.canvas.get_renderer()

    monkeypatch.setattr(plots, "CHECK", keep)
    return seen


def qd_curve(tmp_path: Path) -> list[StorageRow]:
    """A qd-scaling-shaped curve: 100–147k IOPS from QD8 on (squeezed into a sliver of a log axis before)."""
    loads = ((1, 15_000, 66, 90), (2, 28_000, 71, 100), (4, 52_000, 77, 120), (8, 88_000, 91, 160),
             (16, 103_000, 155, 260), (32, 123_000, 260, 480), (64, 139_600, 458, 962), (128, 146_600, 873, 1790))
    return [row(tmp_path, i, "randread", 4096, qd, iops, mean_us=m, p99_us=p)
            for i, (qd, iops, m, p) in enumerate(loads)]


def test_latency_throughput_labels_every_load_ticks_the_range_and_names_p99(tmp_path: Path,
                                                                           figures: dict[str, Any]) -> None:
    pts = qd_curve(tmp_path)
    curves = an.storage_curves(pts)
    plots.latency_throughput(curves, tmp_path / "plots")
    svg = (tmp_path / "plots" / "latency-throughput.svg").read_text()
    for p in pts:
        assert f">QD{p.iodepth}<" in svg, p.iodepth
    (ax,) = [a for a in figures["latency-throughput.svg"].axes if a.get_title()]
    assert ax.get_xscale() == "linear" and ax.get_xlim()[0] == 0
    shown = [t for t in ax.get_xticks() if ax.get_xlim()[0] <= t <= ax.get_xlim()[1]]
    assert len(shown) >= 4 and shown[-1] >= 0.6 * 146.6  # ticks across the whole range, not stopping at 100
    assert "p99" in [t.get_text() for t in ax.get_legend().get_texts()]
    renderer = figures["latency-throughput.svg renderer"]
    box = ax.get_window_extent(renderer)
    labels = [t for t in ax.texts if t.get_text().startswith("QD")]
    assert len(labels) == len(pts)
    extents = [t.get_window_extent(renderer) for t in labels]
    for t, e in zip(labels, extents):  # inside the axes: the QD128 label no longer runs over the axis line
        assert box.x0 <= e.x0 and e.x1 <= box.x1 and box.y0 <= e.y0 and e.y1 <= box.y1, t.get_text()
    for i, a in enumerate(extents):
        assert not any(a.overlaps(b) for b in extents[i + 1:]), labels[i].get_text()


def test_block_size_panels_share_a_y_axis_from_zero(tmp_path: Path, figures: dict[str, Any]) -> None:
    mb = 1e6
    pts = [row(tmp_path, i, rw, bs, 16, bw * mb / bs) for i, (rw, bs, bw) in
           enumerate((("read", 4096, 400), ("read", 131072, 1870), ("write", 4096, 500), ("write", 131072, 2250)))]
    plots.storage_vs_axis(plots.rows_of(pts), tmp_path / "plots", "bs")
    fig = figures["storage-vs-block-size.svg"]
    tops = [a for a in fig.axes if a.get_ylabel().startswith("throughput")]
    bottoms = [a for a in fig.axes if a.get_ylabel().startswith("mean latency")]
    assert len(tops) == 2 and len(bottoms) == 2
    assert tops[0].get_ylim() == tops[1].get_ylim() and tops[0].get_ylim()[0] == 0
    assert tops[0].get_ylim()[1] >= 2250 and bottoms[0].get_ylim() == bottoms[1].get_ylim()
