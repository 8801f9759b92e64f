"""The results table's IOPS/CPU column: fio's own figure (per CPU-second of its job threads), k-formatted, never the
host's busy CPUs (they count other processes too), "—" without one, and no column for a run with no fio CPU
figure.  The screen itself: test_tui_snapshots, test_results_with_iops_per_cpu."""

from __future__ import annotations

from typing import Any

from app.model.records import ResultLine
from app.screens.results import STORAGE_COLUMNS, cpu_cell, with_cpu_column
from app.stats.peak import FIO_SOURCE, CpuCost
from tests.helpers.peak_runs import LIBAIO, line, lines_of


def test_cells() -> None:
    assert cpu_cell(CpuCost(212_400.0, FIO_SOURCE)) == (212_400.0, "212k")
    assert cpu_cell(CpuCost(1_250_000.0, FIO_SOURCE))[1] == "1.25M"
    assert cpu_cell(CpuCost(None, why="the line records no CPU figures")) == (-1.0, "—")


def test_the_column_only_for_a_run_with_a_figure() -> None:
    lines: dict[int | None, ResultLine] = dict(enumerate(lines_of([line(0, LIBAIO, 16, 1e5, 90, cpu_pct=None),
                                                                   line(1, LIBAIO, 32, 2e5, 90)])))
    records: list[dict[str, Any]] = [{"index": 0}, {"index": 1}]
    columns, note = with_cpu_column(lines, STORAGE_COLUMNS, records)
    assert [c[0] for c in columns][-2:] == ["CPU %", "IOPS/CPU"] and note == "IOPS/CPU: per CPU-second of fio's threads"
    assert [r["iops_cpu"][1] for r in records] == ["—", "500k"]
    assert with_cpu_column({0: lines[0]}, STORAGE_COLUMNS, records[:1]) == (STORAGE_COLUMNS, None)


def test_the_column_is_fios_own_figure_not_the_hosts_busy_cpus() -> None:
    """fio's job used 36 % of one CPU (175k I/Os per CPU-second) while the host's 2 CPUs were 1.90 busy with other
    tenants' work too (33.1k per busy CPU): the column shows fio's own figure."""
    lines: dict[int | None, ResultLine] = dict(
        enumerate(lines_of([line(0, LIBAIO, 16, 62.9e3, 250, cpu_pct=36.0, busy=1.9)])))
    records: list[dict[str, Any]] = [{"index": 0}]
    columns, note = with_cpu_column(lines, STORAGE_COLUMNS, records)
    assert records[0]["iops_cpu"][1] == "175k" and note == "IOPS/CPU: per CPU-second of fio's threads"
