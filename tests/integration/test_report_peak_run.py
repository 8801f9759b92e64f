"""A peak run's report.md: the Peak section before the storage table, the CPU cost table after it, and a run of
one engine without the section (its CPU cost table still there)."""

from __future__ import annotations

from pathlib import Path

from app.report import render_report
from tests.helpers.peak_runs import HIPRI_SKIP, LIBAIO, peak_lines, qd_sweep, write_run


def test_peak_report_order_and_a_plain_run(tmp_path: Path) -> None:
    md = render_report(write_run(tmp_path / "peak", peak_lines(), skipped=[HIPRI_SKIP])).read_text()
    at = [md.index(h) for h in ("## Run", "## Peak", "## Storage results", "### CPU cost", "## Analysis")]
    assert at == sorted(at)
    assert "| Ran out      | **device**: IOPS stopped growing" in md
    plain = render_report(write_run(tmp_path / "plain", qd_sweep(0, LIBAIO, [1e5, 2e5], [50, 60], qds=(8, 16)),
                                    preset="qd-scaling")).read_text()
    assert "## Peak" not in plain and "### CPU cost" in plain
