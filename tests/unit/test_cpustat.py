"""The CPUs' busy time (app.host.cpustat): /proc/stat's per-CPU lines parsed strictly (real layouts, hostile text), the
``host_cpu`` part's arithmetic over a window, and the window's lifecycle shared with the device counters."""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from app.host.cpustat import MAX_PROC_STAT_BYTES, CpuTimes, CpuWindow, host_cpu_part, parse_proc_stat, read_proc_stat
from app.host.devstat import NO_DUMP, NO_RESET, FioDone

REAL = b"""cpu  2255 34 2290 22625563 6290 127 456 0 0 0
cpu0 1132 34 1441 11311718 3675 127 438 7 0 0
cpu1 1123 0 849 11313845 2615 0 18 3 0 0
intr 114930548 113199788 3 0 5 263 0 4 [... a long line]
ctxt 1990473
btime 1062191376
"""


def test_the_kernels_lines_give_busy_and_steal_per_cpu() -> None:
    assert parse_proc_stat(REAL) == {0: CpuTimes(busy=1132 + 34 + 1441 + 127 + 438, steal=7),
                                     1: CpuTimes(busy=1123 + 849 + 18, steal=3)}
    old = b"cpu0 10 1 5 100\ncpu1 2 0 3 90 4 6 7\n"  # 2.4's four fields, 2.6.0's seven: no steal counted
    assert parse_proc_stat(old) == {0: CpuTimes(16, 0), 1: CpuTimes(2 + 3 + 6 + 7, 0)}
    mine = read_proc_stat()
    assert mine and all(t.busy >= 0 for t in mine.values())


def test_text_that_is_not_proc_stat_gives_nothing() -> None:
    for bad in (b"", b"cpu 1 2 3 4\n", b"cpu0 1 2 3\n", b"cpu0 1 2 3 -4\n", b"cpu0 1 2 3 4\ncpu0 1 2 3 4\n",
                b"cpu99999 1 2 3 4\n", b"cpux 1 2 3 4\n", b"cpu0 " + b"1 " * 17 + b"\n", b"cpu0 1 2 3 4e5\n",
                b"cpu0 1 2 3 " + str(1 << 64).encode() + b"\n", b"cpu0 1 2 3 4\n" + b"x" * MAX_PROC_STAT_BYTES):
        assert parse_proc_stat(bad) is None, bad


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=300) | st.lists(st.sampled_from([b"cpu", b"cpu0", b"cpu1", b" ", b"1", b"\n", b"-", b"\t",
                                                             b"18446744073709551616", b"intr", b"7"]),
                                          max_size=40).map(b"".join))
def test_hostile_text_never_raises_and_what_parses_is_sane(data: bytes) -> None:
    got = parse_proc_stat(data)
    assert got is None or (got and all(0 <= cpu <= 1023 and t.busy >= 0 and t.steal >= 0 for cpu, t in got.items()))


@settings(max_examples=100, deadline=None)
@given(st.dictionaries(st.integers(0, 1023), st.lists(st.integers(0, 2**60), min_size=4, max_size=16), min_size=1,
                       max_size=8))
def test_any_kernel_layout_round_trips(cpus: dict[int, list[int]]) -> None:
    text = b"cpu  1 2 3 4\n" + b"".join(f"cpu{c} {' '.join(map(str, v))}\n".encode() for c, v in cpus.items())
    got = parse_proc_stat(text + b"intr 1 2\n")
    assert got is not None and set(got) == set(cpus)
    for c, v in cpus.items():
        v = v + [0] * 8
        assert got[c] == CpuTimes(v[0] + v[1] + v[2] + v[5] + v[6], v[7])


def times(**busy: int) -> dict[int, CpuTimes]:
    return {int(k[3:]): CpuTimes(v, v // 10) for k, v in busy.items()}


def test_the_part_counts_the_pinned_cpus_or_every_cpu_over_the_window() -> None:
    a, b = times(cpu0=100, cpu1=100, cpu2=100), times(cpu0=250, cpu1=300, cpu2=100)
    every = host_cpu_part(None, (1.0, a, FioDone(0, 0, 1000)), (3.0, b, FioDone(0, 0, 71000)), 100)
    assert every == {"cpus": "0-2", "window_s": 2.0, "busy_s": 3.5, "steal_s": 0.35, "busy_cpus": 1.75,
                     "iops_per_busy_cpu": 20000.0}
    pinned = host_cpu_part((1, 2), (1.0, a, FioDone(0, 0, 0)), (3.0, b, FioDone(0, 0, 4000)), 100)
    assert pinned["cpus"] == "1-2" and pinned["busy_cpus"] == 1.0 and pinned["iops_per_busy_cpu"] == 2000.0
    idle = host_cpu_part((2,), (1.0, a, FioDone(0, 0, 0)), (3.0, b, FioDone(0, 0, 10)), 100)
    assert idle["busy_s"] == 0 and idle["iops_per_busy_cpu"] is None


def test_a_part_that_cannot_be_counted_says_why() -> None:
    a, b = times(cpu0=100), times(cpu0=50)

    def why(cpus: tuple[int, ...] | None, end: dict[int, CpuTimes], t: float = 1.0) -> str:
        return str(host_cpu_part(cpus, (0, a, FioDone(0, 0, 0)), (t, end, FioDone(0, 0, 0)), 100)["unavailable"])

    assert "offline" in why((5,), a)
    assert "backwards" in why(None, b)
    assert "too short" in why(None, a, 0.4)


def test_the_window_opens_at_fios_dumps_and_restarts_with_its_counters(tmp_path: Path) -> None:
    stat = tmp_path / "stat"
    window = CpuWindow("0", ramp=True, path=stat)
    stat.write_bytes(b"cpu0 100 0 0 5\n")
    window.start(window.reading(), 1.0, FioDone(0, 0, 500), reset=False)  # in the ramp
    stat.write_bytes(b"cpu0 150 0 0 5\n")
    window.start(window.reading(), 2.0, FioDone(0, 0, 100), reset=True)  # fio's counters restarted
    stat.write_bytes(b"cpu0 250 0 0 5\n")
    part = window.finish(4.0, FioDone(0, 0, 2100))
    assert part["busy_s"] == 1.0 * 100 / window.hz and part["iops_per_busy_cpu"] == round(2000 / part["busy_s"], 1)
    assert CpuWindow(None, ramp=True, path=stat).finish(1.0, FioDone(0, 0, 0)) == {"unavailable": NO_DUMP}
    no_reset = CpuWindow(None, ramp=True, path=stat)
    no_reset.start(no_reset.reading(), 1.0, FioDone(0, 0, 0), reset=False)
    assert no_reset.finish(3.0, FioDone(0, 0, 9)) == {"unavailable": NO_RESET}
    gone = CpuWindow(None, ramp=False, path=tmp_path / "missing")
    gone.start(gone.reading(), 1.0, FioDone(0, 0, 0), reset=False)
    assert gone.finish(2.0, FioDone(0, 0, 1)) == {"unavailable": "/proc/stat could not be read at the window's start"}


GOLDEN_RUN = Path(__file__).resolve().parent.parent / "data" / "report" / "golden-run"


def test_results_csv_takes_the_parts_figures_and_leaves_a_foreign_ones_out(tmp_path: Path) -> None:
    from app.stats.frame import CSV_COLUMNS, load_results

    run = tmp_path / "run"
    shutil.copytree(GOLDEN_RUN, run)
    lines = [json.loads(text) for text in (run / "results.jsonl").read_text().splitlines()]
    lines[0]["host_cpu"] = {"cpus": "0-1", "window_s": 2.0, "busy_s": 3.0, "steal_s": 0.6, "busy_cpus": 1.5,
                            "iops_per_busy_cpu": 1673.0}
    lines[1]["host_cpu"] = {"cpus": "0", "window_s": 2.0, "busy_s": 1.0, "steal_s": 0.0, "busy_cpus": 1e308,
                            "iops_per_busy_cpu": -5}
    lines[2]["host_cpu"] = {"unavailable": "no dump"}
    (run / "results.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    at = CSV_COLUMNS.index("busy_cpus")  # after the older columns, before the whole-run figures
    assert CSV_COLUMNS[at:at + 4] == ["busy_cpus", "iops_per_busy_cpu", "fio_cpus", "steal_cpus"]
    assert CSV_COLUMNS[at + 4].endswith("_whole_run")
    df = load_results(run)
    first = df[df["index"] == 0].iloc[0]
    assert (first["busy_cpus"], first["iops_per_busy_cpu"]) == (1.5, 1673.0)
    # the host's steal in CPUs (0.6 CPU-s over 2 s), and fio's own CPUs (its usr+sys: 0 % + 4.5 % of one job)
    assert (first["steal_cpus"], first["fio_cpus"]) == (0.3, 0.045)
    for index in (1, 2, 3):
        row = df[df["index"] == index].iloc[0]
        assert math.isnan(row["busy_cpus"]) and math.isnan(row["iops_per_busy_cpu"])
