"""The report's Summary: the answer on top, each figure with what its ± is, and every flag in words."""

from __future__ import annotations

import json
from pathlib import Path

from app.report.compute import analysis as an
from app.report.data.model import load
from app.report.render import render_markdown
from tests.helpers.interval_runs import storage_point, write_storage_run

QUICK = [("SEQ1M Q8T1", "read", 1 << 20, 8), ("SEQ1M Q8T1", "write", 1 << 20, 8),
         ("RND4K Q1T1", "randread", 4096, 1), ("RND4K Q1T1", "randwrite", 4096, 1)]


def _summary(path: Path) -> str:
    data = load(path)
    md = render_markdown(data, [], 1e6, an.storage_curves(data.storage), an.memory_curves(data.memory))
    assert md.index("## Summary") < md.index("## Environment")  # the answer comes first
    return md.split("## Summary", 1)[1].split("## Environment", 1)[0]


def test_labelled_read_write_pairs_get_crystaldiskmarks_box_with_the_replicates_interval(tmp_path: Path) -> None:
    points = []
    for rep, scale in ((1, 1.0), (2, 1.04), (3, 0.96)):
        for label, rw, bs, qd in QUICK:
            pt = {**storage_point(rw=rw, bs=bs, iodepth=qd, replicate=rep), "group": label}
            points.append((pt, (2000.0 if bs > 4096 else 20000.0) * scale, 0.02))
    s = _summary(write_storage_run(tmp_path / "quick", points, ci95=True))
    rows = [x for x in s.splitlines() if x.startswith("| SEQ") or x.startswith("| RND")]
    assert [r.split("|")[1].strip() for r in rows] == ["SEQ1M Q8T1", "RND4K Q1T1"]  # sequential first
    # 2000 IOPS × 1 MiB = 2097.2 MB/s over 3 runs of ×1, ×1.04, ×0.96: mean 2097.2, sd 83.9, t(2) 4.303 → ± 208.4
    assert "2097.2 ± 208.4" in rows[0] and "(20.0k ± 2.0k IOPS)" in rows[1]
    assert "the mean over 3 runs" in s and "No point carries a flag." in s


def test_a_sweep_states_its_peak_knee_and_operating_point_with_their_support(tmp_path: Path) -> None:
    loads = [(1, 20000.0), (2, 38000.0), (4, 60000.0), (8, 66000.0), (16, 68000.0), (32, 69000.0)]
    run = write_storage_run(tmp_path / "qd", [(storage_point(iodepth=q), v, 0.02) for q, v in loads], ci95=True)
    s = _summary(run)
    assert "- **Most IOPS**: 69.00k ± 0.38k IOPS" in s and "at randread 4K QD32 (± within this run)" in s
    assert "a deeper queue may give more" in s  # the peak is at the heaviest load measured
    assert "- **Knee** of randread 4K: QD4" in s
    assert "- **Operating point** (p99 ≤ 1000 µs): randread 4K QD32" in s  # p99 = 2 × mean = 928 µs


def test_a_flagged_figure_is_marked_where_it_stands_and_the_flag_said_in_words(tmp_path: Path) -> None:
    """Reads of a sparse file: 243k IOPS that never reached the device were printed bare."""
    points = [({**storage_point(rw=rw, bs=4096, iodepth=1), "group": "RND4K Q1T1"}, 243000.0, 0.02)
              for rw in ("randread", "randwrite")]
    run = write_storage_run(tmp_path / "sparse", points, ci95=True)
    jl = run / "results.jsonl"
    recs = [json.loads(x) for x in jl.read_text().splitlines()]
    recs[0]["flags"] = [{"flag": "not-on-device", "reason": "the device read 0.00× of fio's bytes"}]
    jl.write_text("".join(json.dumps(r) + "\n" for r in recs))
    s = _summary(run)
    (row,) = [x for x in s.splitlines() if x.startswith("| RND4K Q1T1")]
    read, write = row.split("|")[2:4]
    assert "⚑ not-on-device" in read and "⚑" not in write
    assert "- ⚑ `not-on-device` on 1 point (randread 4K QD1): " in s
    # one run: the ± is of the figure's mean within it (the note read "the 95 % interval of within this run")
    assert "± is the 95 % interval of the figure's mean within this run" in s
