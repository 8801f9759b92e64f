"""The report's Peak section (a peak run only: its peak with its interval, configuration, IOPS per CPU, what ran
out, the configurations and a skipped one) and the CPU cost table (any run with a CPU figure; hostile text
escaped, a figure from too little flagged)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from app.report.data.model import load
from app.report.render import workload
from app.report.sections import peak_text
from tests.helpers.peak_runs import HIPRI_SKIP, LIBAIO, SQPOLL, URING, line, peak_lines, qd_sweep, write_run


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
    assert rows["IOPS per CPU"] == ("905k per CPU-second of fio's own job threads (usr+sys, 0.40 CPU busy); host: 362k "
                                    "IOPS per busy host CPU; 1.00 of 2 CPUs busy (0-1), steal 0.00 CPU, counting every "
                                    "process on those CPUs, the kernel's threads and interrupts")
    assert rows["Ran out"].startswith("**device**: IOPS stopped growing (360k IOPS at QD64 × 1 job → 362k")
    configs = _rows(lines, "io_uring") + _rows(lines, "libaio")
    assert [r[0] for r in configs] == ["io_uring +registerfiles +fixedbufs, CPUs 0-1",
                                       "io_uring +registerfiles +fixedbufs +sqthread_poll, CPUs 0-1",
                                       "io_uring, CPUs 0-1", "io_uring +registerfiles +fixedbufs +hipri, CPUs 0-1",
                                       "libaio, CPUs 0-1"]
    # fio's own figure leaves sqpoll's polling thread out; the host's counts it
    assert configs[1][2:] == ["352k", "QD128 × 1 job", "1.41M", "0.25", "1.60 of 2 (0-1)", "0.00", "220k"]
    assert configs[3][1:] == ["0", "skipped: hipri needs poll queues: loop9's queue/io_poll is 0"] + ["—"] * 6


def test_only_peak_runs_get_the_section_and_the_figures_fall_back_to_fio(tmp_path: Path) -> None:
    one_engine = qd_sweep(0, LIBAIO, [100e3, 150e3], [50, 90], qds=(8, 16))
    assert peak_text.section(load(write_run(tmp_path / "a", one_engine, preset="qd-scaling"))) == []
    two = one_engine + qd_sweep(2, SQPOLL, [120e3, 170e3], [45, 80], qds=(8, 16), cpu_pct=30.0)
    md = peak_text.section(load(write_run(tmp_path / "b", two, preset="custom")))
    assert md[0] == "## Peak"
    assert any("IOPS per CPU | 567k per CPU-second of fio's own job threads (usr+sys, 0.30 CPU busy) — leaves out "
               "io_uring's SQ-poll thread, which the host figure counts; host CPU not recorded" in x for x in md)
    assert ["io_uring +registerfiles +fixedbufs +sqthread_poll, CPUs 0-1", "2", "170k", "QD16 × 1 job", "567k",
            "0.30", "—", "—", "—"] in _rows(md, "io_uring")


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
    assert rows[0] == ["a\\|b \\# c: randread 4K QD16", "100k", "40.0%", "0.40", "250k", "1.00 of 2 (0-1)", "0.00",
                       "100k"]
    assert rows[1][5:] == ["0.40 of 1 (0)", "not recorded", "125k (from only 0.20 CPU-s)"]
    assert rows[2][5:] == ["n/a: no \\| stat", "—", "—"]
    assert rows[3][2:] == ["0.0%", "0.00", "n/a", "—", "—", "—"]
    none = [line(0, LIBAIO, 16, 100e3, 100, cpu_pct=None)]
    assert peak_text.cpu_cost_section(load(write_run(tmp_path / "none", none)).storage, workload) == []


def test_iops_per_cpu_is_fios_own_and_the_hosts_busy_cpus_and_steal_stand_beside_it(tmp_path: Path) -> None:
    """The review's case: a VM of 2 CPUs, 1.90 of them busy over the point (other tenants' work too) while fio's one
    job used 36 % of one CPU, and steal recorded. IOPS per CPU is fio's own (62.9k / 0.36 = 175k), the host's
    figure (33.1k per busy CPU) beside it, labelled, with the steal; the CPU cost table and results.csv say both."""
    raw = qd_sweep(0, URING, [40e3, 62.9e3], [200, 250], busy=[1.5, 1.9], qds=(8, 16), cpu_pct=36.0)
    raw += qd_sweep(2, LIBAIO, [35e3, 50e3], [220, 300], busy=[1.5, 1.9], qds=(8, 16), cpu_pct=36.0)
    for x in raw:
        x["host_cpu"]["steal_s"] = 1.2  # 0.12 CPU over the 10 s window
    data = load(write_run(tmp_path / "run", raw, preset="peak"))
    md = peak_text.section(data)
    rows = {r[0]: r[1] for r in _rows(md, "") if len(r) == 2}
    assert rows["IOPS per CPU"] == ("175k per CPU-second of fio's own job threads (usr+sys, 0.36 CPU busy); host: "
                                    "33.1k IOPS per busy host CPU; 1.90 of 2 CPUs busy (0-1), steal 0.12 CPU, "
                                    "counting every process on those CPUs, the kernel's threads and interrupts")
    assert "1.90 of the 2 CPUs counted (0-1) busy, 95%, steal 0.12 CPU" in rows["Ran out"]
    assert "fio's job threads 36% busy each" in rows["Ran out"]  # whose CPU it was, both ways
    (best,) = _rows(md, "io_uring")
    assert best[4:] == ["175k", "0.36", "1.90 of 2 (0-1)", "0.12", "33.1k"]
    table = peak_text.cpu_cost_section(data.storage, workload)
    head = _rows(table, "Workload")[0]
    assert head[3:] == ["fio CPUs", "IOPS per CPU-second (fio)", "Host busy CPUs", "Host steal (CPUs)",
                        "IOPS per busy host CPU"]
    assert ["io_uring: randread 4K QD16", "62.9k", "36.0%", "0.36", "175k", "1.90 of 2 (0-1)", "0.12",
            "33.1k"] in _rows(table, "io_uring")
    from app.stats.frame import load_results

    df = load_results(data.path)
    row = df[df["index"] == 1].iloc[0]
    assert (round(row["fio_cpus"], 2), row["steal_cpus"], row["busy_cpus"]) == (0.36, 0.12, 1.9)
