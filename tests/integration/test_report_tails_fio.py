"""The Latency distribution section from a real fio run: two one-second points on a small file, reported; the
figure is drawn from the histograms fio wrote, the table agrees with them and prints only what the counts
support."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

from app.core.units import us
from app.model.tails import count, hist_of_record, min_ios, percentile
from app.report.figures import tail_plots
from tests.conftest import run_cli

PRESET = """name = "tails-check"
kind = "storage"
[settings]
runtime = 1
size = "16m"
rw = "randread"
bs = "4k"
[matrix]
iodepth = [1, 8]
"""


def test_real_run_gets_figure_and_supported_tail_table(tmp_path: Path) -> None:
    (tmp_path / "p.toml").write_text(PRESET)
    out = tmp_path / "out"
    run_cli("run", str(tmp_path / "p.toml"), "--target", str(tmp_path / "target"), "--out", str(out), check=True)
    run_cli("report", str(out), check=True)
    lines = [json.loads(x) for x in (out / "results.jsonl").read_text().splitlines()]
    md = (out / "report.md").read_text()
    section = md[md.index("### Latency distribution"):]
    for line in lines:
        m = line["metrics"]
        hist = hist_of_record(m["lat_hist"])
        assert hist is not None and count(hist) == m["total_ios"]  # every I/O is in the histogram
        lat = m["lat_ns"]
        assert percentile(hist, 99.9) == lat["p99_9"]  # the figure and the table read the same I/Os
        ios = m["total_ios"]
        assert ios < min_ios(99.999)  # one second: far from a million I/Os
        row = next(x for x in section.splitlines() if x.startswith(f"| randread 4K QD{line['point']['iodepth']} "))
        cells = [c.strip() for c in row.strip("|").split("|")]
        assert cells[1] == f"{ios:,}" and cells[2] == us(lat["p99"]) and cells[5] == "—"
        assert (cells[4] == "—") == (ios < min_ios(99.99))
        # the line ends at its slowest I/O: fraction 1/N
        _xs, _ys, end = tail_plots._curve(hist)
        assert end is not None and end[1] == 1 / ios and end[0] == hist[-1][0] / 1e3
    assert "![Latency distribution: fraction of I/Os slower than x](plots/exceedance.svg)" in section
    rsvg = shutil.which("rsvg-convert")
    assert rsvg
    subprocess.run([rsvg, "-o", str(tmp_path / "ex.png"), str(out / "plots" / "exceedance.svg")], check=True)
