"""import keeps a heat map: a json+ ``--status-interval`` stream's dumps differenced into per-interval histograms,
and fio's ``write_hist_log`` file read as one point with its intervals; a malformed histogram log is one sentence
naming the file and the line, exit 2."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from app.stats.histlog import PLAT_NR, bucket_value
from app.stats.latmap import read_intervals
from tests.integration.test_procedure import cli, lines


@pytest.fixture(scope="module")
def fio_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One 3 s randrw fio run writing both a json+ status stream and a histogram log a second."""
    d = tmp_path_factory.mktemp("fio")
    with (d / "stream.json").open("w") as out:
        subprocess.run(["fio", "--name=h", f"--filename={d / 'f.bin'}", "--size=4m", "--rw=randrw", "--bs=4k",
                        "--iodepth=2", "--ioengine=libaio", "--direct=1", "--time_based", "--runtime=3",
                        "--lat_percentiles=1", "--output-format=json+", "--status-interval=1",
                        f"--write_hist_log={d / 'h'}", "--log_hist_msec=1000"],
                       stdout=out, stderr=subprocess.DEVNULL, check=True, timeout=60, cwd=d)
    return d


def test_a_status_interval_stream_imports_with_each_intervals_histograms(fio_run: Path, tmp_path: Path) -> None:
    out = tmp_path / "imp"
    got = cli("import", str(fio_run / "stream.json"), "--out", str(out))
    assert got.returncode == 0, got.stderr
    (record,) = lines(out)
    intervals = read_intervals(out, record["raw"])
    assert len(intervals) >= 2
    # the dumps' differences add up to the run's count (the last dump is the result)
    assert sum(iv.ios for iv in intervals) == record["metrics"]["total_ios"]
    render = cli("report", str(out))
    assert render.returncode == 0, render.stderr
    assert "plots/latency-heatmap.svg" in (out / "report.md").read_text()


def test_a_histogram_log_imports_as_one_point_with_its_heat_map(fio_run: Path, tmp_path: Path) -> None:
    (log,) = fio_run.glob("h_clat_hist.*.log")
    out = tmp_path / "imp"
    got = cli("import", str(log), "--out", str(out))
    assert got.returncode == 0, got.stderr
    (record,) = lines(out)
    intervals = read_intervals(out, record["raw"])
    assert len(intervals) >= 2 and sum(iv.ios for iv in intervals) == record["metrics"]["total_ios"]
    assert record["point"]["rw"] == "rw" and record["point"]["bs"] == 4096
    assert record["metrics"]["percentiles_source"] == "clat_ns"
    # the buckets are fio's own values: every one the log filled is a bin of fio's json+ output of the same run
    json_bins = set()
    for doc_text in (fio_run / "stream.json").read_text().split("\n}\n"):
        if '"jobs"' in doc_text:
            doc = json.loads(doc_text[doc_text.index("{"):] + "\n}")
            for d in ("read", "write"):
                json_bins |= {int(v) for v in doc["jobs"][0][d]["clat_ns"].get("bins", {})}
    assert {v for iv in intervals for v in iv.values} <= json_bins


@pytest.mark.parametrize("text, why", [
    ("1000, 0, 4096, " + ", ".join(["1"] * 100) + "\n", "100 buckets"),
    ("1000, 7, 4096, " + ", ".join(["1"] * PLAT_NR) + "\n", "direction 7"),
    ("1000, 0, 4096, " + ", ".join(["x"] * PLAT_NR) + "\n", None),
    ("1000, 0, 4096, 1e999" + ", 1" * (PLAT_NR - 1) + "\n", "line 1, field 4: '1e999' is not a whole number"),
    ("1000, 0, 4096, 1, -5" + ", 1" * (PLAT_NR - 2) + "\n", "line 1, field 5: -5 is outside 0 to 2^63"),
    ("2000, 0, 4096, " + ", ".join(["1"] * PLAT_NR) + "\n1000, 0, 4096, " + ", ".join(["1"] * PLAT_NR) + "\n",
     "goes back"),
])
def test_a_malformed_histogram_log_is_refused_in_one_sentence(tmp_path: Path, text: str, why: str | None) -> None:
    log = tmp_path / "bad_clat_hist.1.log"
    log.write_text(text)
    got = cli("import", str(log), "--out", str(tmp_path / "imp"))
    assert got.returncode == 2 and str(log) in got.stderr and "Traceback" not in got.stderr, got.stderr
    if why is not None:
        assert why in got.stderr and "line " in got.stderr, got.stderr
    assert not (tmp_path / "imp").exists()


def test_bucket_values_are_fios() -> None:
    assert [bucket_value(i) for i in (0, 127, 128, 191, 192)] == [0, 127, 129, 255, 258]  # a bucket's middle
