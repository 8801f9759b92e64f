"""The report's Peak section (a peak run only: its peak with its interval, configuration, IOPS per CPU, what ran
out, the configurations and a skipped one) and the CPU cost table (any run with a CPU figure; hostile text
escaped, a figure from too little flagged)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from app.report import peak_text
from app.report.model import load
from app.report.render import workload
from tests.helpers.peak_runs import HIPRI_SKIP, LIBAIO, SQPOLL, line, peak_lines, qd_sweep, write_run


def _rows(md: list[str], first: str) -> list[list[str]]:
    """The cells of the table rows starting with ``first``, escaped pipes kept in their cell."""
    rows = "\n".join(md).splitlines()
    return [[c.strip().replace("\0", "\\|") for c in x.replace("\\|", "\0").strip("|").split("|")] for x in rows
            if x.startswith(f"| {first}")]


def _peak_run(tmp_path: Path, **kw: Any) -> Path:
    raw = peak_lines()
    raw[11]["metrics"]["ci95"] = {"iops": [358e3, 366e3]}  # the peak point's 95 % interval
    raw[11]["metrics"]["ci_method"] = {"method": "batch-means", "level": 0.95}
    return write_run(tmp_path / "run", raw, **kw)


def test_peak_section_of_a_peak_run(tmp_path: Path) -> None:
    lines = "\n".join(peak_text.section(load(_peak_run(tmp_path, skipped=[HIPRI_SKIP])))).splitlines()
    assert lines[0] == "## Peak"
    rows = {r[0]: r[1] for r in _rows(lines, "") if len(r) == 2}
    assert rows["Peak"] == "362.0k ± 4.0k IOPS (± the 95 % interval of its mean within this run, around its centre)"
    assert rows["Reached by"] == ("io_uring +registerfiles +fixedbufs, CPUs 0-1, QD128 × 1 job, randread 4K, mean "
                                  "latency 350.00 µs")
    assert rows["IOPS per CPU"] == "362k (per busy CPU from /proc/stat, counting kernel threads and interrupts)"
    assert rows["Ran out"].startswith("**device**: IOPS stopped growing (360k IOPS at QD64 × 1 job → 362k")
    configs = _rows(lines, "io_uring") + _rows(lines, "libaio")
    assert [r[0] for r in configs] == ["io_uring +registerfiles +fixedbufs, CPUs 0-1",
                                       "io_uring +registerfiles +fixedbufs +sqthread_poll, CPUs 0-1",
                                       "io_uring, CPUs 0-1", "io_uring +registerfiles +fixedbufs +hipri, CPUs 0-1",
                                       "libaio, CPUs 0-1"]
    assert configs[1][2:6] == ["352k", "QD128 × 1 job", "220k", "/proc/stat"]
    assert configs[3][1:] == ["0", "skipped", "—", "—", "hipri needs poll queues: loop9's queue/io_poll is 0"]


def test_only_peak_runs_get_the_section_and_the_figures_fall_back_to_fio(tmp_path: Path) -> None:
    one_engine = qd_sweep(0, LIBAIO, [100e3, 150e3], [50, 90], qds=(8, 16))
    assert peak_text.section(load(write_run(tmp_path / "a", one_engine, preset="qd-scaling"))) == []
    two = one_engine + qd_sweep(2, SQPOLL, [120e3, 170e3], [45, 80], qds=(8, 16), cpu_pct=30.0)
    md = peak_text.section(load(write_run(tmp_path / "b", two, preset="custom")))
    assert md[0] == "## Peak"
    assert any("IOPS per CPU | 567k (per CPU-second of fio's job threads (usr+sys))" in x for x in md)
    assert ["io_uring +registerfiles +fixedbufs +sqthread_poll, CPUs 0-1", "2", "170k", "QD16 × 1 job", "567k",
            "fio usr+sys"] in _rows(md, "io_uring")


def test_cpu_cost_table(tmp_path: Path) -> None:
    raw = [line(0, LIBAIO, 16, 100e3, 100, busy=1.0, group="a|b\n# c"),
           line(1, LIBAIO, 32, 100e3, 100, host={"cpus": "0", "window_s": 0.5, "busy_s": 0.2, "busy_cpus": 0.4,
                                                 "iops_per_busy_cpu": 125e3}),
           line(2, LIBAIO, 64, 100e3, 100, host={"unavailable": "no | stat"}),
           line(3, LIBAIO, 128, 100e3, 100, cpu_pct=0.0)]
    data = load(write_run(tmp_path / "run", raw, preset="qd-scaling"))
    md = peak_text.cpu_cost_section(data.storage, workload)
    assert md[0] == "### CPU cost"
    rows = _rows(md, "")[1:]  # after the header
    assert rows[0] == ["a\\|b \\# c: randread 4K QD16", "100k", "40.0%", "250k", "1.00 of 2 (0-1)", "100k"]
    assert rows[1][4:] == ["0.40 of 1 (0)", "125k (from only 0.20 CPU-s)"]
    assert rows[2][4:] == ["n/a: no \\| stat", "—"]
    assert rows[3][2:] == ["0.0%", "n/a", "—", "—"]
    none = [line(0, LIBAIO, 16, 100e3, 100, cpu_pct=None)]
    assert peak_text.cpu_cost_section(load(write_run(tmp_path / "none", none)).storage, workload) == []
