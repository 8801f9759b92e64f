"""`profiler-tui compare`: two runs matched point by point, a run against a spec sheet; the
reference-sheet schema and its errors."""

from __future__ import annotations

import importlib.util
import json
import re
from pathlib import Path

import pytest

from app.cli.compare import available_references, compare_reference, compare_runs, load_reference
from app.core.errors import UsageError
from tests.conftest import ROOT, run_cli


def _make(path: Path, **shape: object) -> Path:
    spec = importlib.util.spec_from_file_location("report_speed", ROOT / "bench" / "report_speed.py")
    mod = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    spec.loader.exec_module(mod)  # type: ignore[union-attr]
    return mod.make_results_dir(path, **shape)


def _scale(directory: Path, factor: float) -> None:
    """Multiply every point's IOPS and bandwidth by factor (latency divided by it)."""
    lines = []
    for line in (directory / "results.jsonl").read_text().splitlines():
        rec = json.loads(line)
        m = rec["metrics"]
        for k in ("iops", "bw_bytes", "read_iops", "write_iops", "read_bw_bytes", "write_bw_bytes"):
            m[k] *= factor
        m["lat_ns"] = {k: v / factor for k, v in m["lat_ns"].items()}
        lines.append(json.dumps(rec))
    (directory / "results.jsonl").write_text("\n".join(lines) + "\n")


def _rows(md: str) -> list[list[str]]:
    return [[c.strip() for c in line.strip("|").split("|")] for line in md.splitlines()
            if line.startswith("|") and not re.match(r"^\|[-:| ]+\|$", line)]


def test_shipped_reference_sheets_load_and_carry_the_seed_figures() -> None:
    refs = available_references()
    assert {"intel-d7-p5600", "intel-dc-p4600"} <= set(refs)
    for name in refs:
        ref = load_reference(name)
        assert ref.source.strip() and ref.figures
    p5600 = {(f.rw, f.bs, f.metric): f.value for f in load_reference("intel-d7-p5600").figures}
    assert p5600 == {("read", 131072, "bw_mbps"): 7000, ("write", 131072, "bw_mbps"): 4300,
                     ("randread", 4096, "iops"): 1_000_000, ("randwrite", 4096, "iops"): 260_000}
    assert [f.value for f in load_reference("intel-d7-p5600-1.6tb").figures] == [130_000]
    p4600 = load_reference("intel-dc-p4600")
    assert len(p4600.figures) == 27 and all(f.iodepth == 16 and f.numjobs == 1 for f in p4600.figures)
    assert "seed report 000" in p4600.source


def test_run_against_reference_ratio(tmp_path: Path) -> None:
    d = _make(tmp_path / "run", rws=["randread", "randwrite"], bss=[4096], qds=[1, 32])
    records = [json.loads(x) for x in (d / "results.jsonl").read_text().splitlines()]
    best_read = max(r["metrics"]["iops"] for r in records if r["point"]["rw"] == "randread")
    md = compare_reference(str(d), load_reference("intel-d7-p5600"))
    rows = {r[0]: r for r in _rows(md)}
    assert rows["Random read 4K"][4] == f"{best_read / 1_000_000:.2f}×"
    assert "best of 2" in rows["Random read 4K"][6]
    assert rows["Sequential read 128K"][3] == "not measured"


def _set_mix(directory: Path, mix: int) -> None:
    """Give every point of the run the read percentage ``mix`` (rwmixread), in run.json's plan and the lines."""
    for name in ("run.json", "results.jsonl"):
        text = (directory / name).read_text()
        (directory / name).write_text(text.replace('"rwmixread": 50', f'"rwmixread": {mix}'))


@pytest.mark.parametrize(("mix", "label", "other", "counted"), [
    (100, "Random read 4K", "Random write 4K", "all reads: counted as randread"),
    (0, "Random write 4K", "Random read 4K", "all writes: counted as randwrite"),
])
def test_one_sided_randrw_point_matches_the_pure_pattern(tmp_path: Path, mix: int, label: str, other: str,
                                                          counted: str) -> None:
    """A randrw job at 100/0 issues only random reads (0/100 only random writes): the sheet's random read
    (write) figure is compared with it, the table names the point and says so, and the other pattern stays
    not measured."""
    d = _make(tmp_path / "run", rws=["randrw"], bss=[4096], qds=[16])
    _set_mix(d, mix)
    (rec,) = [json.loads(x) for x in (d / "results.jsonl").read_text().splitlines()]
    md = compare_reference(str(d), load_reference("intel-d7-p5600"))
    rows = {r[0]: r for r in _rows(md)}
    assert rows[label][3] != "not measured"
    sheet = {f.label: f.value for f in load_reference("intel-d7-p5600").figures}
    assert rows[label][4] == f"{rec['metrics']['iops'] / sheet[label]:.2f}×"
    assert rows[label][6].startswith(f"randrw {mix}/{100 - mix} 4K QD16") and counted in rows[label][6]
    assert rows[other][3] == "not measured"


def test_two_sided_randrw_point_is_no_pure_pattern(tmp_path: Path) -> None:
    d = _make(tmp_path / "run", rws=["randrw"], bss=[4096], qds=[16])
    rows = {r[0]: r for r in _rows(compare_reference(str(d), load_reference("intel-d7-p5600")))}
    assert rows["Random read 4K"][3] == rows["Random write 4K"][3] == "not measured"


def test_reference_figure_with_queue_depth_picks_that_point(tmp_path: Path) -> None:
    d = _make(tmp_path / "run", rws=["randread"], bss=[4096], qds=[1, 16, 64])
    sheet = tmp_path / "mine.toml"
    sheet.write_text('name = "mine"\nsource = "test"\n[[figure]]\nlabel = "r"\nrw = "randread"\nbs = "4k"\n'
                     'iodepth = 16\nmetric = "lat_mean_us"\nvalue = 100\n')
    rec16 = [json.loads(x) for x in (d / "results.jsonl").read_text().splitlines()][1]
    assert rec16["point"]["iodepth"] == 16
    md = compare_reference(str(d), load_reference(str(sheet)))
    (row,) = [r for r in _rows(md) if r[0].startswith("r (QD16)")]
    assert row[3] == f"{rec16['metrics']['lat_ns']['mean'] / 1e3:.2f}"
    assert row[4] == f"{rec16['metrics']['lat_ns']['mean'] / 1e3 / 100:.2f}×"


def test_two_runs_matched_by_point(tmp_path: Path) -> None:
    a = _make(tmp_path / "a", rws=["randread", "write"], bss=[4096, 65536], qds=[1, 8])
    b = _make(tmp_path / "b", rws=["randread"], bss=[4096, 65536], qds=[1, 8, 32])
    _scale(b, 2.0)
    md = compare_runs(str(a), str(b))
    rows = [r for r in _rows(md) if r[0].startswith("randread")]
    assert len(rows) == 4 * 4  # randread × 2 bs × QD1/8 exist in both, one row per figure
    ratios = {(r[0], r[1]): r[4] for r in rows}
    for (_, figure), ratio in ratios.items():
        assert ratio == {"IOPS": "2.00×", "MB/s": "2.00×", "Mean µs": "0.50×", "p99 µs": "0.50×"}[figure]
    assert "Geometric mean of the IOPS ratios over 4 matched points: 2.00×" in md
    assert "Only in A (4)" in md and "Only in B (2)" in md


def test_compare_cli_writes_out_file(tmp_path: Path) -> None:
    a = _make(tmp_path / "a", rws=["randread"], bss=[4096], qds=[1, 8])
    out = tmp_path / "cmp.md"
    proc = run_cli("compare", str(a), "--reference", "intel-d7-p5600-1.6tb", "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    assert out.read_text() == proc.stdout and "130k" in proc.stdout


@pytest.mark.parametrize("toml, fragment", [
    ('source = "x"\n[[figure]]\nlabel="a"\nrw="read"\nbs="4k"\nmetric="iops"\nvalue=1\n', "key 'name' is missing"),
    ('name = "x"\n[[figure]]\nlabel="a"\nrw="read"\nbs="4k"\nmetric="iops"\nvalue=1\n', "key 'source' is missing"),
    ('name = "x"\nsource = "y"\n', "needs at least one [[figure]]"),
    ('name = "x"\nsource = "y"\n[[figure]]\nlabel="a"\nrw="sideways"\nbs="4k"\nmetric="iops"\nvalue=1\n',
     "key 'rw' has invalid value 'sideways'"),
    ('name = "x"\nsource = "y"\n[[figure]]\nlabel="a"\nrw="read"\nbs="4q"\nmetric="iops"\nvalue=1\n',
     "key 'bs' has invalid value '4q'"),
    ('name = "x"\nsource = "y"\n[[figure]]\nlabel="a"\nrw="read"\nbs="4k"\nmetric="speed"\nvalue=1\n',
     "key 'metric' has invalid value 'speed'"),
    ('name = "x"\nsource = "y"\n[[figure]]\nlabel="a"\nrw="read"\nbs="4k"\nmetric="iops"\nvalue=0\n',
     "key 'value' has invalid value 0"),
    ('name = "x"\nsource = "y"\n[[figure]]\nlabel="a"\nrw="read"\nbs="4k"\nmetric="iops"\nvalue=1\nrwmixread=70\n',
     "key 'rwmixread' has invalid value 70"),
    ('name = "x"\nsource = "y"\ncolour = "red"\n[[figure]]\nlabel="a"\nrw="read"\nbs="4k"\nmetric="iops"\nvalue=1\n',
     "unknown key 'colour'"),
    ('name = "x\n', "TOML syntax error"),
])
def test_invalid_reference_sheets(tmp_path: Path, toml: str, fragment: str) -> None:
    sheet = tmp_path / "bad.toml"
    sheet.write_text(toml)
    with pytest.raises(UsageError) as e:
        load_reference(str(sheet))
    assert str(sheet) in str(e.value) and fragment in str(e.value)
    run = _make(tmp_path / "run", rws=["read"], bss=[4096], qds=[1])
    proc = run_cli("compare", str(run), "--reference", str(sheet))
    assert proc.returncode == 2 and fragment in proc.stderr and "Traceback" not in proc.stderr


@pytest.mark.parametrize("args, fragment", [
    (["compare", "RUN"], "exactly one"),
    (["compare", "RUN", "RUN", "--reference", "intel-d7-p5600"], "exactly one"),
    (["compare", "RUN", "--reference", "no-such-sheet"], "no such reference sheet; available:"),
    (["compare", "RUN", "/no/such/dir"], "/no/such/dir: not a results directory"),
])
def test_compare_usage_errors(tmp_path: Path, args: list[str], fragment: str) -> None:
    run = _make(tmp_path / "run", rws=["read"], bss=[4096], qds=[1])
    proc = run_cli(*[str(run) if a == "RUN" else a for a in args])
    assert proc.returncode == 2 and fragment in proc.stderr and "Traceback" not in proc.stderr


def _flag(directory: Path, index: int, flags: list[dict[str, str]]) -> None:
    lines = []
    for line in (directory / "results.jsonl").read_text().splitlines():
        rec = json.loads(line)
        rec["flags"] = flags if rec["index"] == index else []
        lines.append(json.dumps(rec))
    (directory / "results.jsonl").write_text("\n".join(lines) + "\n")


def test_compare_shows_each_sides_validity_flags_and_explains_them(tmp_path: Path) -> None:
    a = _make(tmp_path / "a", rws=["randread"], bss=[4096], qds=[1, 8])
    b = _make(tmp_path / "b", rws=["randread"], bss=[4096], qds=[1, 8])
    md = compare_runs(str(a), str(b))
    assert "Flags A" not in md, "no flag, no column"
    _flag(b, 1, [{"flag": "cpu-bound", "reason": "fio used 97 % of a CPU per job"},
                 {"flag": "bogus", "reason": "an unknown flag of a hostile line is left out"}])
    md = compare_runs(str(a), str(b))
    rows = _rows(md)
    header = rows[0]
    assert header[-2:] == ["Flags A", "Flags B"]
    assert {tuple(r[-2:]) for r in rows[1:] if "QD1 " in r[0] + " "} == {("—", "—")}
    assert {tuple(r[-2:]) for r in rows[1:] if "QD8" in r[0]} == {("—", "cpu-bound")}
    assert "**cpu-bound**: fio used ≥ 90 % of a CPU per job" in md and "bogus" not in md


def test_runs_that_measured_different_loads_name_each_runs_own_knee(tmp_path: Path) -> None:
    """Each knee is a load of its own run's curve: with other queue depths in B (1 … 8192 against 1 … 1024),
    B's knee is read from B's points, not by its position in A's (that raised IndexError)."""
    a = _make(tmp_path / "a", rws=["randread"], bss=[4096], qds=[1, 16, 64, 256, 1024])
    b = _make(tmp_path / "b", rws=["randread"], bss=[4096], qds=[1 << i for i in range(14)])
    md = compare_runs(str(a), str(b))
    knees = [line for line in md.splitlines() if line.startswith("- randread 4K:")]
    assert len(knees) == 1 and re.search(r"QD\d+ \(A\) to QD\d+ \(B\)", knees[0]), knees
