"""The per-point tables of a repeated run (``repeat`` ≥ 2) name each row's replicate, as the storage results table
does: three rows of one point with nothing to tell them apart read as duplicates."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from app.report.compute import analysis as an
from app.report.data.model import RunData, load
from app.report.render import render_markdown
from tests.helpers.tail_runs import storage_line, write_run


def _repeated(tmp_path: Path) -> Path:
    """randread 4K at QD1 and QD16, three replicates each, with fio's CPU figures."""
    lines: list[dict[str, Any]] = []
    for rep in (1, 2, 3):
        for qd in (1, 16):
            line = storage_line(len(lines), round(100_000 * qd ** 0.5 * (1 + 0.05 * rep)), 20_000.0 * qd ** 0.6,
                                iodepth=qd, replicate=rep)
            line["metrics"].update(usr_cpu=10.0 + rep, sys_cpu=20.0, iops_per_cpu=50_000.0)
            lines.append(line)
    return write_run(tmp_path / "rep", lines)


def render_report(data: RunData) -> str:
    return render_markdown(data, [], 1e6, an.storage_curves(data.storage), an.memory_curves(data.memory))


def _section(text: str, heading: str) -> str:
    return text.split(heading, 1)[1].split("\n#", 1)[0]


def test_little_s_law_and_cpu_cost_rows_name_their_replicate(tmp_path: Path) -> None:
    text = render_report(load(_repeated(tmp_path)))
    for heading in ("### Little's law per point", "### CPU cost"):
        rows = [r for r in _section(text, heading).splitlines() if r.startswith("| randread")]
        assert len(rows) == 6, heading
        names = [r.split("|")[1].strip() for r in rows]
        assert len(set(names)) == 6, (heading, names)  # no two rows alike
        for rep in (1, 2, 3):
            assert sum(bool(re.search(rf"QD16\b.*replicate {rep}\b", n)) for n in names) == 1, (heading, names)


def test_a_run_without_replicates_keeps_its_plain_names(tmp_path: Path) -> None:
    lines = [storage_line(i, 100_000, 20_000.0, iodepth=qd) for i, qd in enumerate((1, 16))]
    text = render_report(load(write_run(tmp_path / "once", lines)))
    assert "replicate" not in _section(text, "### Little's law per point")
