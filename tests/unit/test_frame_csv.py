"""results.csv is written with the csv module (the report does not import pandas); these hold its bytes
equal to what pandas' ``to_csv`` writes of the typed frame :func:`app.stats.frame.load_results` gives."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from app.stats.frame import (
    CSV_COLUMNS,
    INT_COLUMNS,
    OBJECT_COLUMNS,
    PANDAS_MISSING,
    TEXT_COLUMNS,
    csv_text,
    load_results,
    records_frame,
    records_rows,
    results_rows,
    rows,
    to_csv,
    typed_frame,
    typed_rows,
)

GOLDEN_RUN = Path(__file__).resolve().parent.parent / "data" / "report" / "golden-run"

FAST = settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])

# text with the characters CSV must quote (comma, quote, line breaks) and some it must not
TEXT = st.text(alphabet=st.sampled_from(list('ab ,"\n\r;µ\t\'')) | st.characters(), max_size=12)
INT = st.integers(min_value=-(2**63), max_value=2**64)  # beyond 64 bits the column stays object
FLOAT = st.floats(allow_nan=False)  # any magnitude, infinities, -0.0


def _value(column: str) -> st.SearchStrategy[object]:
    if column in TEXT_COLUMNS:
        return st.none() | TEXT
    if column in INT_COLUMNS:
        return st.none() | INT
    if column in OBJECT_COLUMNS:  # what the point gave: direct is a bool or 0/1, runtime a number or a string
        return st.none() | st.booleans() | st.integers(0, 10**6) | FLOAT | TEXT
    return st.none() | FLOAT


ROW = st.fixed_dictionaries({c: _value(c) for c in CSV_COLUMNS})


@FAST
@given(st.lists(ROW, max_size=6))
def test_csv_text_is_pandas_to_csv_of_the_typed_frame(rows: list[dict[str, object]]) -> None:
    assert csv_text(CSV_COLUMNS, rows) == to_csv(typed_frame(rows))


@FAST
@given(st.lists(ROW, max_size=6))
def test_typed_rows_are_the_typed_frames_rows(rows_: list[dict[str, object]]) -> None:
    """The TUI's results table gets, without pandas, the values the typed frame holds."""
    want = rows(typed_frame(rows_))
    assert typed_rows(rows_) == want


def test_results_rows_are_load_results_rows_and_import_no_pandas(tmp_path: Path) -> None:
    """The TUI's results table (app.screens.results.load_rows) reads a directory without importing pandas, so an
    install without the pandas extra has the whole TUI; its rows are the frame's."""
    from app.store.results import ResultsDir

    run = shutil.copytree(GOLDEN_RUN, tmp_path / "run")
    assert results_rows(run) == rows(load_results(run))
    lines = ResultsDir(run).lines()
    assert records_rows(lines) == rows(records_frame(lines))  # a directory whose run.json cannot be read
    code = ("import sys; from pathlib import Path; from app.screens.results import load_rows\n"
            "assert load_rows(Path(sys.argv[1])), 'no rows'\n"
            "assert 'pandas' not in sys.modules, 'the results table imported pandas'")
    subprocess.run([sys.executable, "-c", code, str(run)], check=True, capture_output=True)


def test_load_results_without_pandas_says_so_in_one_sentence(tmp_path: Path) -> None:
    """pandas is the optional extra profiler-tui[pandas]: without it, load_results raises one sentence naming it."""
    run = shutil.copytree(GOLDEN_RUN, tmp_path / "run")
    code = ("import sys; sys.modules['pandas'] = None\n"
            "from app.stats.frame import load_results\n"
            "try: load_results(sys.argv[1])\n"
            "except ModuleNotFoundError as e: print(e)\n"
            "else: sys.exit('no error')")
    out = subprocess.run([sys.executable, "-c", code, str(run)], check=True, capture_output=True, text=True).stdout
    assert out.strip() == PANDAS_MISSING
    assert "profiler-tui[pandas]" in out and out.count(". ") == 0 and len(out.splitlines()) == 1


def test_a_missing_key_and_nan_are_empty_cells() -> None:
    rows: list[dict[str, object]] = [{"kind": "memory", "index": 3, "iops": float("nan"), "rw": 'a,"b"\nc'}]
    assert csv_text(CSV_COLUMNS, rows) == to_csv(typed_frame(rows))
    assert csv_text(["kind", "rw", "iops", "bs"], rows) == 'kind,rw,iops,bs\nmemory,"a,""b""\nc",,\n'


@pytest.mark.slow
def test_the_report_does_not_import_pandas(tmp_path: Path) -> None:
    """A whole report (load, curves, heatmaps, results.csv) leaves pandas out: its import is ~0.3 s of it."""
    run = shutil.copytree(GOLDEN_RUN, tmp_path / "run")
    code = ("import runpy, sys; sys.argv = ['profiler-tui', 'report', sys.argv[1]]\n"
            "try: runpy.run_module('app', run_name='__main__')\n"
            "except SystemExit as e: assert not e.code, e.code\n"
            "assert 'pandas' not in sys.modules, 'the report imported pandas'")
    subprocess.run([sys.executable, "-c", code, str(run)], check=True, capture_output=True)
    assert (run / "results.csv").read_text(encoding="utf-8") == to_csv(load_results(run))


def test_text_cells_from_a_results_directory_are_cleaned_in_the_frame_and_results_csv(tmp_path: Path) -> None:
    """A group label holding escape sequences (a results line from anywhere): the TUI's table, pandas users and
    results.csv get it without them, and results.csv stays the frame's to_csv."""
    import json

    from app.report.data.model import load
    from app.stats.frame import records

    run = shutil.copytree(GOLDEN_RUN, tmp_path / "run")
    label = "SEQ\x1b]0;PWNED\x07\x1b[2J\x9b31m\x1bPdcs\x1b\\ 1M\nQ8"
    meta = json.loads((run / "run.json").read_text())
    for point in meta["plan"]:
        point["group"] = label
    (run / "run.json").write_text(json.dumps(meta))
    lines = [json.loads(line) for line in (run / "results.jsonl").read_text().splitlines()]
    for line in lines:
        line["point"]["group"] = label
    (run / "results.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    df = load_results(run)
    assert set(df["group"].dropna()) == {"SEQ 1M Q8"}
    data = load(run)
    assert csv_text(CSV_COLUMNS, records(data.storage, data.memory, run)) == to_csv(df)
