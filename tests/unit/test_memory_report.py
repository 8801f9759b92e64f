"""The memory part of the report says what it plots and what it cannot claim, on synthetic results.

The numbers are those of a reviewed built-in engine run on a 2-vCPU AMD EPYC KVM guest: one load thread,
14.3 GB/s at delay 0, latency between 191 and 193.6 ns over the whole sweep (no knee), 360.2 MB/s at delay
20000 of which 64 B / 191 ns = 335 MB/s is the latency thread's own chase; a chase of 960 MiB on 2 MiB
pages, an L3 of 32 MiB and /proc/cpuinfo's "TLB size: 3584 4K pages".
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from app.host.envinfo import tlb_size
from app.model.records import JSONObject
from app.report.compute import analysis as an
from app.report.compute import memory as mem
from app.report.data.model import MemoryRow
from app.report.figures import plots
from app.report.render import _memory_analysis, _memory_tables
from app.runners.mlc_parse import parse

MIB = 1 << 20
DELAYS = [0, 2, 8, 15, 50, 100, 200, 300, 400, 500, 700, 1000, 1300, 1700, 2500, 3500, 5000, 9000, 20000]
# (latency ns, bandwidth MB/s of all traffic) of the reviewed run, delay 0 first
FLAT = [(193.6, 14300.0), (192.9, 13900.0), (192.4, 11800.0), (191.8, 9900.0), (191.4, 4900.0), (191.2, 2900.0),
        (191.0, 1700.0), (191.3, 1250.0), (191.1, 1020.0), (191.5, 880.0), (191.2, 720.0), (191.0, 600.0),
        (191.6, 540.0), (191.4, 490.0), (191.2, 440.0), (191.3, 410.0), (191.1, 390.0), (191.0, 372.0),
        (191.0, 360.2)]
ENV = {"cpu": {"threads": 2, "caches": [{"name": "L1d", "size": "32K"}, {"name": "L1i", "size": "32K"},
                                        {"name": "L2", "size": "1024K"}, {"name": "L3", "size": "32768K"}],
               "tlb": {"entries": 3584, "page_bytes": 4096}},
       "system": {"virtualization": "virtual machine"}}
CHASE: JSONObject = {"by": "builtin", "mode": "whole_buffer", "buffer_bytes": 960 * MIB, "huge_pages": True,
         "text": "random chase over 960 MiB, 2 MiB pages, stride 64 B"}


def loaded(engine: str = "builtin", curve: list[tuple[float, float]] = FLAT, **record: Any) -> list[MemoryRow]:
    rec = {"bandwidth_includes_latency_thread": True, "delay_unit_ns": 0.118, "load_threads": 1, "chase": CHASE,
           **record} if engine == "builtin" else record
    return [MemoryRow.of(i, {"mode": "loaded", "traffic": "R", "delay": d, "stride": 64, "buffer": None,
                             "engine": engine},
                         {"latency_ns": lat, "bandwidth_mbps": bw}, {"engine": engine, **rec})
            for i, (d, (lat, bw)) in enumerate(zip(DELAYS, curve))]


def idle(ns: float, buffer: int = 960 * MIB, index: int = 100) -> MemoryRow:
    return MemoryRow.of(index, {"mode": "idle", "traffic": None, "delay": None, "stride": 64, "buffer": buffer,
                             "engine": "builtin"}, {"latency_ns": ns},
                     {"engine": "builtin", "chase": {**CHASE, "buffer_bytes": buffer}})


class Seen:
    """plots.CHECK: each saved figure's axis labels, latency axes' lower limits and line labels."""

    def __init__(self) -> None:
        self.xlabels: list[str] = []
        self.latency_ylim: list[float] = []
        self.lines: list[str] = []

    def __call__(self, fig: Any, name: str) -> None:
        for ax in fig.axes:
            self.xlabels.append(ax.get_xlabel())
            if ax.get_ylabel().startswith("latency"):
                self.latency_ylim.append(ax.get_ylim()[0])
            self.lines += [ln.get_label() for ln in ax.get_lines()]


@pytest.fixture
def seen(monkeypatch: pytest.MonkeyPatch) -> Seen:
    s = Seen()
    monkeypatch.setattr(plots, "CHECK", s)
    return s


def test_load_threads_share_is_the_whole_minus_the_latency_threads_line_per_step() -> None:
    far = loaded()[-1]  # delay 20000: 360.2 MB/s, latency 191.0 ns
    assert mem.latency_thread_mbps(far) == pytest.approx(64 / 191.0 * 1e3)  # 335.1 MB/s: most of the 360.2
    assert mem.load_mbps(far) == pytest.approx(360.2 - 335.08, abs=0.01)
    old = MemoryRow.of(0, far.point, far.metrics.json(), {"engine": "builtin"})  # before the engine counted it
    assert mem.load_mbps(old) == 360.2 and "load threads alone" in mem.bandwidth_words([old])
    assert mem.counts_latency_thread(loaded("mlc")[0]) is True  # MLC's convention


def test_memory_figures_say_what_they_plot_per_engine(tmp_path: Path, seen: Seen) -> None:
    rows = loaded() + [idle(190.5)]
    figs = plots.memory_figures(an.memory_curves(rows), tmp_path)
    captions = " ".join(f.caption for f in figs)
    assert "bandwidth of the load threads" not in captions
    assert "all traffic (load threads + the latency thread's 64 B per chase step" in captions
    assert "the load threads' share dashed" in captions
    assert "built-in engine spin steps, ≈ 0.118 ns each" in captions and "MLC delay units" not in captions
    assert "idle latency, 190.50 ns" in captions
    assert "injection delay (built-in spin steps ≈ 0.118 ns, symlog)" in seen.xlabels
    assert "bandwidth, all traffic (GB/s, 10^9 B/s)" in seen.xlabels
    assert seen.latency_ylim and all(y == 0 for y in seen.latency_ylim)  # 191–193.6 ns is not drawn as spikes
    assert "idle 190.5 ns" in seen.lines

    mlc = Seen()
    plots.CHECK = mlc
    figs = plots.memory_figures(an.memory_curves(loaded("mlc")), tmp_path / "mlc")
    assert "injection delay (MLC delay units, symlog)" in mlc.xlabels
    assert "Intel MLC's delay units" in figs[-1].caption and "no idle latency was measured" in figs[-1].caption


def test_a_flat_curve_has_no_knee_and_the_report_says_why() -> None:
    (curve,) = an.memory_curves(loaded())
    text = "\n".join(_memory_analysis([curve], cpus=2))
    assert "| R stride 64 B |" in text and "none" in text
    # 193.6 / 191.0 - 1 = +1.4 %; 14300 - 64/193.6e-9 B/s = 13969.4 MB/s from the single load thread
    assert ("Latency went from 191.00 ns at delay 20000 to 193.60 ns at delay 0 (+1.4%; every delay within "
            "191.00–193.60 ns) while bandwidth reached 14,300.0 MB/s of all traffic (13,969.4 MB/s from the load "
            "threads) with 1 load thread.") in text
    assert "Nothing shows that the load saturated memory" in text
    assert "no run here can add a load thread" in text  # 2 CPUs: the latency thread takes one
    assert "spin steps, ≈ 0.118 ns each" in text
    many = "\n".join(_memory_analysis([curve], cpus=16))
    assert "`--set cpus=0-15` uses all 16 CPUs" in many


def test_a_bend_inside_the_light_load_spread_is_no_knee() -> None:
    # the chord rule bends at delay 700, but delay 0's latency is inside the lighter loads' spread
    noisy = [(150.93, 6068.2), (153.0, 4570.1), (149.07, 1690.0), (146.52, 1239.4), (144.91, 540.6),
             (150.5, 392.3), (149.06, 123.5), (152.72, 74.0), (146.02, 107.5), (145.05, 47.6), (144.15, 31.1),
             (148.18, 14.7), (147.08, 19.1), (152.54, 9.1), (149.59, 5.8), (151.05, 7.4), (148.16, 11.8),
             (148.91, 7.6), (152.56, 1.0)]
    (curve,) = an.memory_curves(loaded(curve=noisy, bandwidth_includes_latency_thread=None))
    assert curve.knee is None and curve.rejected_knee is not None
    reason = mem.no_knee_reason(curve)
    assert reason and "is no knee" in reason and "by more than their own spread" in reason
    rising = [(lat * (2.0 if d < 100 else 1.0), bw) for d, (lat, bw) in zip(DELAYS, FLAT)]
    (curve,) = an.memory_curves(loaded(curve=rising))
    assert curve.knee is not None and mem.no_knee_reason(curve) is None


def test_tables_set_the_chase_buffer_against_llc_and_tlb_with_the_idle_baseline() -> None:
    text = "\n".join(_memory_tables(loaded() + [idle(190.5)], ENV))
    # 960 MiB / 32 MiB = 30.0; 3584 × 4 KiB = 14 MiB, 960 / 14 = 68.6
    assert ("Buffer: chase buffer 960 MiB per thread = 30.0× the 32 MiB L3 (last-level cache of CPU 0), 68.6× the "
            "TLB reach with 4 KiB pages (3584 entries × 4 KiB = 14 MiB, /proc/cpuinfo); the chase ran on 2 MiB "
            "pages") in text
    assert "idle baseline 190.50 ns; at the lightest load (delay 20000) 191.00 ns, +0.3%." in text
    assert "A pointer chase's latency depends on its buffer" in text
    bare = "\n".join(_memory_tables(loaded(), {"cpu": {"caches": []}}))
    assert "no idle baseline in this run" in bare and "TLB reach unknown" in bare
    assert "last-level cache not recorded" in bare


def test_latency_by_buffer_size_is_listed_when_the_run_measured_several() -> None:
    sizes = {480: 173.6, 960: 192.5, 1920: 202.7, 3840: 223.0, 7680: 261.1}
    rows = [idle(ns, mib * MIB, i) for i, (mib, ns) in enumerate(sizes.items())]
    text = "\n".join(_memory_tables(rows, ENV))
    assert ("This run's idle latency by buffer: 480 MiB 173.60 ns, 960 MiB 192.50 ns, 1920 MiB 202.70 ns, "
            "3840 MiB 223.00 ns, 7680 MiB 261.10 ns.") in text


def test_tlb_size_and_the_engines_load_thread_count_are_read() -> None:
    assert tlb_size("3584 4K pages") == {"entries": 3584, "page_bytes": 4096}
    assert tlb_size("junk") is None and tlb_size("-1 4K pages") is None
    text = ("Intel(R) Memory Latency Checker - compatible output: profiler-tui memlat v0.1\n"
            "Using latency thread on CPU 0 (stride 64 bytes, random chase over the whole buffer) and 3 load "
            "thread(s) on CPU(s) 1-3\nUsing injection delay unit of 0.118 ns (one iteration of a spin loop)\n")
    p = parse(text)
    assert p.header["load_threads"] == 3 and p.header["delay_unit_ns"] == 0.118


def test_the_engines_load_threads_line_is_kept_for_its_row_and_used_by_the_report() -> None:
    text = ("Intel(R) Memory Latency Checker - compatible output: profiler-tui memlat v0.1\n"
            "Measuring Loaded Latencies for the system\nUsing Read-only traffic type\nInject\tLatency\tBandwidth\n"
            "Delay\t(ns)\tMB/sec\n==========================\n"
            "Load threads at delay 00000: 13969.4 MB/sec (latency thread 330.6 MB/sec)\n 00000\t193.60\t  14300.0\n"
            "Load threads at delay 00007: 1.0 MB/sec (latency thread 2.0 MB/sec)\n"  # no row of its own: dropped
            " 20000\t191.00\t    360.2\n")
    p = parse(text)
    (sec,) = p.sections
    assert [r.delay for r in sec.rows] == [0, 20000] and sec.values["load_mbps"] == {0: 13969.4}
    row = loaded()[0]
    exact = MemoryRow.of(0, row.point, {**row.metrics.json(), "load_bandwidth_mbps": 13969.4}, row.line.json())
    assert mem.load_mbps(exact) == 13969.4 and mem.load_words([exact]) == "as the built-in engine measured it"
    assert mem.load_words(loaded()).startswith("estimated as the whole minus")


def test_points_on_numa_nodes_get_a_table_per_node_and_an_idle_column() -> None:
    """mem_node points: each node's loaded curve is a table of its own, and the idle table names each row's node."""
    def on(node: int | None, rows: list[MemoryRow]) -> list[MemoryRow]:
        return [MemoryRow.of(r.index, {**r.point, "mem_node": node} if node is not None else r.point,
                             {"latency_ns": r.latency}, {"engine": "builtin", "chase": CHASE}) for r in rows]
    text = "\n".join(_memory_tables(on(0, loaded()) + on(1, loaded()) + on(1, [idle(190.5)]) + [idle(200.0)], ENV))
    assert text.count("### R (") == 2
    assert "stride 64 B, memory on NUMA node 0 — builtin" in text and ", memory on NUMA node 1 — builtin" in text
    assert re.search(r"\| +NUMA node \|\n.*\n\| 64 +\| +960M \| +190\.50 \| builtin \| +1 \|\n"
                     r"\| 64 +\| +960M \| +200\.00 \| builtin \| kernel's choice \|", text), text
    assert "NUMA" not in "\n".join(_memory_tables(loaded() + [idle(190.5)], ENV))


def test_a_chase_buffer_below_four_last_level_caches_is_flagged() -> None:
    """A chase over 2x the LLC (the engine's old default) finds up to half its lines in the cache: its latency is no
    plain DRAM latency, and the note under its table says so; 4x and more is not flagged."""
    text = "\n".join(_memory_tables([idle(120.0, buffer=64 * MIB)], ENV))
    assert ("= 2.0× the 32 MiB L3 (last-level cache of CPU 0; below 4× it, some chase steps may find their line in "
            "that cache and the latency may lie below DRAM's)") in text
    assert "below 4× it" not in "\n".join(_memory_tables([idle(150.0, buffer=128 * MIB)], ENV))
