"""report.md, plots/ and results.csv (issue 5; docs/report.md).

Golden test: tests/data/report/golden-run/ is a fixed results directory (a real 18-point fio
sweep and real memory-engine curves on this project's machine type, assembled by
tests/data/report/make_golden_run.py); its rendered report must equal
tests/data/report/golden/report.md byte for byte.  After an intended change to the report,
regenerate the golden file and review the diff:

    PROFILER_TUI_REGEN_GOLDEN=1 .venv/bin/pytest tests/integration/test_report.py -k golden
"""

from __future__ import annotations

import csv
import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from app.model.records import JSONObject
from app.report import render_report
from tests.conftest import DATA, ROOT, run_cli

GOLDEN_RUN = DATA / "report" / "golden-run"
GOLDEN_MD = DATA / "report" / "golden" / "report.md"


def _bench() -> object:
    spec = importlib.util.spec_from_file_location("report_speed", ROOT / "bench" / "report_speed.py")
    mod = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    spec.loader.exec_module(mod)  # type: ignore[union-attr]
    return mod


def _figures(md: str) -> list[str]:
    return re.findall(r"!\[[^\]]*\]\(([^)]+)\)", md)


@pytest.fixture()
def golden_copy(tmp_path: Path) -> Path:
    d = tmp_path / "golden-run"
    shutil.copytree(GOLDEN_RUN, d)
    return d


@pytest.fixture(scope="module")
def golden_rendered(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """The golden directory rendered once, for the tests that only read the result."""
    d = tmp_path_factory.mktemp("rendered") / "golden-run"
    shutil.copytree(GOLDEN_RUN, d)
    return d, render_report(d).read_text(encoding="utf-8")


def test_golden_report(golden_rendered: tuple[Path, str]) -> None:
    text = golden_rendered[1]
    if os.environ.get("PROFILER_TUI_REGEN_GOLDEN"):
        GOLDEN_MD.parent.mkdir(parents=True, exist_ok=True)
        GOLDEN_MD.write_text(text, encoding="utf-8")
    assert text == GOLDEN_MD.read_text(encoding="utf-8"), \
        "report changed: review, then PROFILER_TUI_REGEN_GOLDEN=1 pytest tests/integration/test_report.py -k golden"


def test_golden_report_sections_and_units(golden_rendered: tuple[Path, str]) -> None:
    golden_copy, md = golden_rendered
    for heading in ("## Environment", "## Run", "## Target", "## Test conditions", "## Storage results",
                    "## Memory results", "## Analysis", "### Little's law per point", "### Saturation knee",
                    "### Best operating point under p99 ≤ 1000 µs", "### Queueing view",
                    "### Memory vs storage latency"):
        assert heading in md
    # seed 000's storage columns, with units
    assert ("| Test Type | Block Size | IOPS | Bandwidth MB/s (MiB/s) | Latency min (µs) | Latency max (µs) | "
            "Latency avg (µs) | Latency p99 (µs) | CPU usr | CPU sys | IO Depth | Jobs |") in re.sub(r" +", " ", md)
    assert "| Inject (spin steps) | Latency (ns) | Bandwidth (MB/sec) |" in re.sub(r" +", " ", md)
    # honest about the target: a file on a VM's virtual disk
    target = md.split("## Target")[1].split("## Storage")[0]
    assert "virtual disk" in target and "say little about any physical SSD" in target
    assert str(golden_copy) not in md  # no absolute path of the directory itself


def test_every_referenced_figure_exists_and_rendering_is_reproducible(golden_rendered: tuple[Path, str]) -> None:
    golden_copy, md = golden_rendered
    figs = _figures(md)
    assert len(figs) >= 7
    first = {}
    for f in figs:
        path = golden_copy / f
        assert path.is_file() and path.stat().st_size > 1000, f
        assert path.read_bytes().lstrip().startswith(b"<?xml") and b"<svg" in path.read_bytes()
        first[f] = path.read_bytes()
    on_disk = {f"plots/{p.name}" for p in (golden_copy / "plots").glob("*.svg")}
    assert on_disk == set(figs)  # nothing drawn that the report does not show
    md2 = render_report(golden_copy).read_text(encoding="utf-8")
    assert md2 == md
    assert all((golden_copy / f).read_bytes() == b for f, b in first.items())


def test_results_csv_has_one_row_per_point(golden_rendered: tuple[Path, str]) -> None:
    golden_copy = golden_rendered[0]
    rows = list(csv.DictReader((golden_copy / "results.csv").open()))
    lines = [x for x in (golden_copy / "results.jsonl").read_text().splitlines() if x.strip()]
    assert len(rows) == len(lines)
    storage = [r for r in rows if r["kind"] == "storage"]
    assert storage and all(float(r["iops"]) > 0 and float(r["lat_p99_us"]) > 0 for r in storage)
    assert all(abs(float(r["littles_ratio"]) - float(r["littles_L"]) / int(r["littles_N"])) < 1e-3 for r in storage)
    memory = [r for r in rows if r["kind"] == "memory"]
    assert memory and all(float(r["latency_ns"]) > 0 for r in memory)


def test_out_file_puts_plots_beside_it(golden_copy: Path, tmp_path: Path) -> None:
    out = tmp_path / "elsewhere" / "my-report.md"
    assert render_report(golden_copy, out) == out
    for f in _figures(out.read_text()):
        assert (out.parent / f).is_file()
    assert (out.parent / "results.csv").is_file()


@pytest.mark.parametrize("shape, drawn, absent", [
    # a queue-depth sweep of one workload: no block-size plot, no heatmap
    ({"rws": ["randread"], "bss": [4096], "qds": [1, 2, 4, 8, 16, 32]},
     {"storage-vs-queue-depth", "latency-throughput"}, {"heatmap", "storage-vs-block-size"}),
    # block sizes only: one line per pattern, no QD figure, no heatmap
    ({"rws": ["read"], "bss": [4096, 65536, 1048576], "qds": [8]},
     {"storage-vs-block-size"}, {"heatmap", "queue-depth", "latency-throughput"}),
    # block size × mix at one depth: the bs × mix heatmap but not the qd × mix one
    ({"rws": ["read", "randread", "randwrite"], "bss": [4096, 131072], "qds": [16]},
     {"storage-vs-block-size", "heatmap-bs-mix-throughput"}, {"heatmap-qd", "latency-throughput"}),
])
def test_figures_only_where_the_data_has_the_dimension(tmp_path: Path, shape: dict, drawn: set, absent: set) -> None:
    d = _bench().make_results_dir(tmp_path / "run", **shape)  # type: ignore[attr-defined]
    md = render_report(d).read_text()
    names = {Path(f).stem for f in _figures(md)}
    for want in drawn:
        assert any(n.startswith(want) for n in names), (want, names)
    for bad in absent:
        assert not any(bad in n for n in names), (bad, names)
    assert {p.stem for p in (d / "plots").glob("*.svg")} == names


def test_no_one_cell_heatmap_rows_for_crystaldiskmark_style_groups(tmp_path: Path) -> None:
    """quick: each pattern has its own block size, so no heatmap row/column would hold two cells."""
    d = _bench().make_results_dir(tmp_path / "run", rws=["read", "write"], bss=[1 << 20], qds=[1, 8])  # type: ignore
    rnd = _bench().make_results_dir(tmp_path / "rnd", rws=["randread", "randwrite"], bss=[4096], qds=[1, 32])  # type: ignore
    with open(d / "results.jsonl", "a") as f:
        for i, line in enumerate((rnd / "results.jsonl").read_text().splitlines()):
            f.write(line.replace('"index": ' + str(i), '"index": ' + str(100 + i)) + "\n")
    md = render_report(d).read_text()
    names = [Path(f).stem for f in _figures(md)]
    # read/write 1M and randread/randwrite 4K never share a block size: bs × mix has no 2×2 block
    assert not any(n.startswith("heatmap-bs") for n in names)
    assert "storage-vs-queue-depth" in names


def test_120_point_seed_matrix_report(tmp_path: Path) -> None:
    d = _bench().make_results_dir(tmp_path / "seed-matrix")  # type: ignore[attr-defined]
    md = render_report(d).read_text()
    assert md.count("\n| ") > 120 * 2
    assert len(_figures(md)) == 8 and "plots/queueing-bounds.svg" in _figures(md)
    knee_rows = md.split("### Saturation knee")[1].split("###")[0]
    assert knee_rows.count("| 1, 16, 64, 256, 1024 |") == 24  # 6 patterns × 4 block sizes


def test_bound_option_changes_the_analysis(golden_copy: Path) -> None:
    proc = run_cli("report", str(golden_copy), "--p99-bound-us", "5000")
    assert proc.returncode == 0, proc.stderr
    md = (golden_copy / "report.md").read_text()
    assert "### Best operating point under p99 ≤ 5000 µs" in md


@pytest.mark.parametrize("args, fragment", [
    (["report", "/nonexistent/dir"], "/nonexistent/dir: not a results directory"),
    (["report", "DIR", "--p99-bound-us", "-3"], "--p99-bound-us"),
])
def test_report_usage_errors_exit_2_without_traceback(golden_copy: Path, args: list[str], fragment: str) -> None:
    proc = run_cli(*[str(golden_copy) if a == "DIR" else a for a in args])
    assert proc.returncode == 2
    assert fragment in proc.stderr and "Traceback" not in proc.stderr


def test_report_package_is_headless() -> None:
    code = ("import sys, app.report, app.report.render, app.engine.importer, app.cli.compare; "
            "bad = [m for m in sys.modules if m.split('.')[0] in ('textual', 'rich', 'plotext', 'textual_plotext')]; "
            "assert not bad, bad; assert 'matplotlib' not in sys.modules, 'matplotlib imported eagerly'")
    subprocess.run([sys.executable, "-c", code], check=True, cwd=ROOT)


def test_every_memory_table_names_its_chase() -> None:
    from app.report.data.model import MemoryRow
    from app.report.render import _memory_tables

    def point(i: int, delay: int | None, chase: Any, engine: str = "builtin") -> MemoryRow:
        mode = "idle" if delay is None else "loaded"
        p: JSONObject = {"mode": mode, "traffic": None if delay is None else "R", "delay": delay, "stride": 64,
                         "buffer": None, "engine": engine}
        rec: JSONObject = {"engine": engine} if chase is None else {"engine": engine, "chase": chase}
        return MemoryRow.of(i, p, {"latency_ns": 100.0, "bandwidth_mbps": 500.0}, rec)

    whole = {"text": "random chase over 1 GiB, 2 MiB pages, stride 64 B"}
    groups = {"text": "random chase within 256 KiB groups, 4 KiB pages, stride 256 B"}
    text = "\n".join(_memory_tables([point(0, None, whole), point(1, 0, whole), point(2, 200, groups),
                                     point(3, 0, None, "mlc"), point(4, 0, {"text": "evil\x1b[2J"}, "x")]))
    assert "Chase: random chase over 1 GiB, 2 MiB pages, stride 64 B.\n" in text  # under the idle table
    assert ("Chase: random chase over 1 GiB, 2 MiB pages, stride 64 B; random chase within 256 KiB groups, "
            "4 KiB pages, stride 256 B.") in text  # one curve measured with two chases names both
    assert "Chase: chase as chosen by Intel MLC." in text
    assert "Chase: not recorded." in text and "\x1b" not in text
    assert text.count("Chase: ") == 4  # idle + three loaded tables (builtin, mlc, x)


def test_load_results_is_the_frame_of_results_csv(golden_rendered: tuple[Path, str]) -> None:
    """results.csv is the loader's frame written out; one row per point, typed columns."""
    from app.stats.frame import CSV_COLUMNS, load_results, to_csv

    golden_copy = golden_rendered[0]
    df = load_results(golden_copy)
    assert list(df.columns) == CSV_COLUMNS
    assert to_csv(df) == (golden_copy / "results.csv").read_text(encoding="utf-8")
    assert str(df["kind"].dtype) == "string" and str(df["bs"].dtype) == "Int64"
    assert str(df["iops"].dtype) == "float64" and str(df["delay"].dtype) == "Int64"
    storage = df[df["kind"] == "storage"]
    assert storage["bs"].notna().all() and df[df["kind"] == "memory"]["bs"].isna().all()


def test_load_results_keeps_numbers_beyond_64_bits(tmp_path: Path) -> None:
    """A block size past 2^63 (results lines allow up to 2^64) keeps its column as Python ints."""
    import json

    from app.stats.frame import load_results, to_csv

    point = {"rw": "read", "bs": 2 ** 64, "iodepth": 1, "numjobs": 1}
    (tmp_path / "run.json").write_text(json.dumps({"kind": "storage", "status": "complete", "plan": [point]}))
    (tmp_path / "results.jsonl").write_text(json.dumps({"kind": "storage", "index": 0, "point": point,
                                                        "metrics": {"iops": 1.0}}) + "\n")
    df = load_results(tmp_path)
    assert len(df) == 1 and df["bs"].iloc[0] == 2 ** 64
    assert to_csv(df).splitlines()[1].startswith(f"storage,0,,read,,{2 ** 64},1,1,")


def test_the_cli_and_the_tui_do_not_import_pandas() -> None:
    """pandas loads only when a report, a comparison or the results table reads data."""
    code = ("import sys, app.cli.commands, app.tui, app.stats.frame, app.report, app.cli.compare, app.screens.results; "
            "sys.exit('pandas' in sys.modules)")
    assert subprocess.run([sys.executable, "-c", code], cwd=ROOT).returncode == 0


TELEMETRY_RUN = DATA / "report" / "telemetry-run"
TELEMETRY_MD = DATA / "report" / "golden" / "telemetry-report.md"


def test_golden_report_of_a_run_with_drive_telemetry_and_a_write_cliff(tmp_path: Path) -> None:
    """tests/data/report/telemetry-run/ is a real run (make_telemetry_run.py): a write point whose device slowed
    mid-run while a replayed NVMe health log's thermal counter rose, then a read point.  Its report must equal
    the golden file byte for byte, with the telemetry summary, the cliff sentence and the time-series figure."""
    d = tmp_path / "telemetry-run"
    shutil.copytree(TELEMETRY_RUN, d)
    text = render_report(d).read_text(encoding="utf-8")
    if os.environ.get("PROFILER_TUI_REGEN_GOLDEN"):
        TELEMETRY_MD.write_text(text, encoding="utf-8")
    assert text == TELEMETRY_MD.read_text(encoding="utf-8"), \
        "report changed: review, then PROFILER_TUI_REGEN_GOLDEN=1 pytest tests/integration/test_report.py -k golden"
    assert "## Drive telemetry" in text and "`nvme smart-log /dev/nvme0 -o json`" in text
    assert re.search(r"\| Thermal-management T1 transitions +\| \+4 ", text)
    assert "A throttle counter rose while 1 point(s) ran, flagged **throttled**: write 128K QD8." in text
    assert "- Point 1 (write 128K QD8 T1): throughput fell from 200 MB/s to 41 MB/s" in text
    assert "![Over time: IOPS and latency percentiles per second](plots/timeseries.svg)" in text
    svg = (d / "plots" / "timeseries.svg").read_text()
    assert "write cliff, throttled" in svg


def test_results_csv_of_a_run_in_rounds_has_every_round_with_its_round(tmp_path: Path) -> None:
    """3 rounds of 2 points, too few rounds for SNIA's window of 5, so every round runs: 6 rows, not the last 2."""
    out = tmp_path / "rounds"
    run = run_cli("run", "custom", "--target", str(tmp_path / "t.img"), "--out", str(out), "--set", "size=16m",
                  "--set", "runtime=1", "--set", "ramp_time=0", "--set", "rw=randread", "--set", "bs=4k,64k",
                  "--set", "rounds=3", timeout=180)
    assert run.returncode == 0, run.stderr
    report = run_cli("report", str(out))
    assert report.returncode == 0, report.stderr
    lines = [json.loads(x) for x in (out / "results.jsonl").read_text().splitlines()]
    rows = list(csv.DictReader((out / "results.csv").open()))
    assert len(rows) == len(lines) == 6
    header = next(csv.reader((out / "results.csv").open()))
    assert header[:3] == ["kind", "index", "round"]
    assert [(int(r["index"]), int(r["round"]), int(r["bs"])) for r in rows] == \
           [(x["index"], x["point"]["round"], x["point"]["bs"]) for x in lines]
    assert sorted({int(r["round"]) for r in rows}) == [1, 2, 3]
    assert [float(r["iops"]) for r in rows] == pytest.approx([x["metrics"]["iops"] for x in lines], rel=1e-6)
    text = (out / "report.md").read_text()
    assert "### Steady-state verification (SNIA PTS)" in text, "the report's own rounds section is unchanged"
