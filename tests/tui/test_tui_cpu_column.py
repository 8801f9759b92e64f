"""The results table's IOPS/CPU column: k-formatted, per busy CPU where the line has the host_cpu figure, fio's
figure marked * in a run that has both kinds, ! on a figure from too little busy time, "—" without one, and no
column for a run with no CPU figure.  The screen itself: test_tui_snapshots, test_results_with_iops_per_cpu."""

from __future__ import annotations

from app.peak import BUSY_SOURCE, FIO_SOURCE, CpuCost
from app.screens.results import STORAGE_COLUMNS, cpu_cell, with_cpu_column
from tests.helpers.peak_runs import LIBAIO, line, lines_of


def test_cells() -> None:
    assert cpu_cell(CpuCost(212_400.0, BUSY_SOURCE), mixed=True) == (212_400.0, "212k")
    assert cpu_cell(CpuCost(212_400.0, FIO_SOURCE), mixed=False)[1] == "212k"
    assert cpu_cell(CpuCost(1_250_000.0, FIO_SOURCE), mixed=True)[1] == "1.25M*"
    assert cpu_cell(CpuCost(150_000.0, BUSY_SOURCE, few="0.30 CPU-s busy in 0.6 s"), mixed=False)[1] == "150k!"
    assert cpu_cell(CpuCost(None, why="the line records no CPU figures"), mixed=True) == (-1.0, "—")


def test_the_column_only_for_a_run_with_a_figure() -> None:
    lines = dict(enumerate(lines_of([line(0, LIBAIO, 16, 1e5, 90, cpu_pct=None), line(1, LIBAIO, 32, 2e5, 90)])))
    records = [{"index": 0}, {"index": 1}]
    columns, note = with_cpu_column(lines, STORAGE_COLUMNS, records)
    assert [c[0] for c in columns][-2:] == ["CPU %", "IOPS/CPU"] and note == "IOPS/CPU: per CPU-second of fio's threads"
    assert [r["iops_cpu"][1] for r in records] == ["—", "500k"]
    assert with_cpu_column({0: lines[0]}, STORAGE_COLUMNS, records[:1]) == (STORAGE_COLUMNS, None)
