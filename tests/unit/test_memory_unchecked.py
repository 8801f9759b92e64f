"""Intel MLC prints no per-thread CPU time, so an MLC figure (imported, or run here) can never be flagged
contended: the memory section says that contention was not checked for it, instead of passing it as clean in
silence.  The built-in engine's figures are checked and say nothing of the kind."""

from __future__ import annotations

from pathlib import Path

from app.engine.importer import import_files
from app.report.compute import analysis as an
from app.report.compute import contention
from app.report.data.model import load
from app.report.render import render_markdown
from tests.helpers.suite_runs import write_run
from tests.unit.test_memory_contention import loaded_lines

MLC = Path(__file__).resolve().parents[1] / "data" / "mlc"


def _markdown(path: Path) -> str:
    data = load(path)
    return render_markdown(data, [], 1e6, [], an.memory_curves(data.memory))


def test_imported_mlc_loaded_rows_say_contention_was_not_checked(tmp_path: Path) -> None:
    out, _ = import_files([str(MLC / "v3.10-loaded-latency.txt"), str(MLC / "v3.7-loaded-latency-spaces.txt")],
                          tmp_path / "imp")
    md = _markdown(out)
    results = md.split("## Analysis", 1)[0]
    tables = results.split("### R (all reads)")[1:]
    assert len(tables) == 2
    for table in tables:  # each source's table says it of its own rows
        assert contention.UNCHECKED in table.split("\n### ", 1)[0]
    assert contention.UNCHECKED == "not checked: MLC reports no per-thread CPU time"
    analysis = md.split("### Memory: loaded-latency knees", 1)[1]
    assert contention.UNCHECKED in analysis  # the knees rest on rows no one checked


def test_built_in_engine_rows_are_checked(tmp_path: Path) -> None:
    md = _markdown(write_run(tmp_path / "run", loaded_lines(cumulative=False)))
    assert contention.UNCHECKED not in md and "MLC reports no" not in md
