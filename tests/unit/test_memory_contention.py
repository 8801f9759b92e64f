"""Memory figures measured on a busy machine: each line's own warnings, contended rows shown as such and kept out
of knees, peaks and plateaus, knees with the storage knee's margin check, impossible derived values flagged, peaks
that are none (contended, or beaten by a loaded point) used as no reference."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from app.report.compute import analysis as an
from app.report.data.model import load
from app.report.render import render_markdown
from app.report.sections import suite
from tests.helpers.suite_runs import line, point, write_run
from tests.helpers.typed import as_list

BUSY = "Busy machine at delay {}: a thread got {}% of a CPU in its window"
SHARED = "Default buffer reduced to 512.000MiB/thread to fit the available memory"
# (delay, latency ns, bandwidth MB/s, CPU share % or None): a mem-loaded run beside two busy loops; the contended
# rows' bandwidth is not monotonic and the row at delay 700 has the curve's lowest latency at 3 % of its bandwidth
ROWS = [(20000, 151.2, 420.0, None), (5000, 151.9, 1450.0, None), (1000, 152.3, 6100.0, None),
        (700, 150.57, 410.0, 23), (500, 153.0, 11800.0, None), (200, 158.1, 4100.0, 41),
        (100, 171.4, 13600.0, None), (50, 175.0, 9800.0, 60), (0, 182.6, 13900.0, None)]


def loaded_lines(cumulative: bool, start: int = 0) -> list[Any]:
    """The run's lines: with ``cumulative`` as written before each line kept its own warnings (every line carries
    every warning printed so far), else each its own and the shared one."""
    out, seen = [], [SHARED]
    for i, (delay, lat, bw, share) in enumerate(ROWS):
        own = [BUSY.format(delay, share)] if share is not None else []
        seen += own
        warnings = list(seen) if cumulative else [SHARED, *own]
        out.append(line(start + i, point("loaded", traffic="R", delay=delay, engine="builtin"),
                        {"latency_ns": lat, "bandwidth_mbps": bw}, engine="builtin", warnings=warnings,
                        bandwidth_includes_latency_thread=True, load_threads=1))
    return out


def markdown(path: Path) -> str:
    data = load(path)
    return render_markdown(data, [], 1e6, [], an.memory_curves(data.memory))


def test_contended_rows_are_read_from_each_lines_own_warnings_also_in_old_cumulative_files(tmp_path: Path) -> None:
    from app.report.compute import contention

    for cumulative in (False, True):
        data = load(write_run(tmp_path / f"run{cumulative}", loaded_lines(cumulative)))
        shares = {p.delay: contention.cpu_share(p) for p in data.memory}
        assert shares == {d: (s / 100 if s is not None else None) for d, _, _, s in ROWS}, cumulative
        last = data.memory[-1]
        assert contention.own_warnings(last) == [SHARED]  # not the other rows' busy lines


def test_contended_rows_are_marked_in_the_loaded_table_with_their_warnings(tmp_path: Path) -> None:
    md = markdown(write_run(tmp_path / "run", loaded_lines(cumulative=True)))
    flat = re.sub(r" +", " ", md)  # the columns' padding follows the header (Inject with its unit)
    assert "| Inject (spin steps) | Latency (ns) | Bandwidth (MB/sec) | CPU |" in flat
    assert "| 00700 | 150.57 | 410.0 | contended: a thread got 23% of a CPU |" in flat
    assert "| 00500 | 153.00 | 11800.0 | clean" in flat
    assert "used for no knee, peak or plateau" in md
    assert "Engine warnings on 9 of 9 figures" in md and "Busy machine at delay 700" in md


def test_no_knee_is_taken_at_a_contended_row_and_a_narrow_knee_is_fragile(tmp_path: Path) -> None:
    data = load(write_run(tmp_path / "run", loaded_lines(cumulative=False)))
    (c,) = an.memory_curves(data.memory)
    assert c.knee is None or c.points[c.knee].delay not in (700, 200, 50)
    md = markdown(tmp_path / "run")
    assert "3 of 9 delays contended" in md
    analysis = md[md.index("### Memory: loaded-latency knees"):]
    assert "| 700" not in analysis and "150.57" not in analysis


def test_a_narrow_knee_gets_the_storage_knees_margin_check(tmp_path: Path) -> None:
    # two inner points almost equally far from the chord: as good a knee as each other
    rows = [(1000, 100.0, 1000.0), (500, 101.0, 5000.0), (300, 104.0, 8000.0), (200, 110.0, 9600.0),
            (0, 160.0, 10000.0)]
    lines = [line(i, point("loaded", traffic="R", delay=d, engine="builtin"), {"latency_ns": lat, "bandwidth_mbps": bw},
                  engine="builtin") for i, (d, lat, bw) in enumerate(rows)]
    data = load(write_run(tmp_path / "run", lines))
    (c,) = an.memory_curves(data.memory)
    assert c.knee is not None
    md = markdown(tmp_path / "run")
    assert "fragile: delay" in md and "margin 0." in md


def test_lines_in_flight_below_one_are_flagged_not_printed_bare(tmp_path: Path) -> None:
    rows = [(1000, 100.0, 150.0), (500, 101.0, 200.0), (0, 102.0, 300.0)]
    lines = [line(i, point("loaded", traffic="R", delay=d, engine="builtin"), {"latency_ns": lat, "bandwidth_mbps": bw},
                  engine="builtin") for i, (d, lat, bw) in enumerate(rows)]
    md = markdown(write_run(tmp_path / "run", lines))
    assert "0.48: impossible (below 1 line" in md
    assert "| 0 " not in md.split("Lines in flight")[1].split("\n")[2]


def peak_lines(start: int, bandwidth: float, share: int | None) -> list[Any]:
    warnings = [f"Busy machine at ALL Reads: a thread got {share}% of a CPU in its window"] if share else None
    return [line(start, point("peak", traffic="R", engine="builtin"), {"bandwidth_mbps": bandwidth},
                 engine="builtin", load_threads=2, **({"warnings": warnings} if warnings else {}))]


def test_a_contended_peak_below_a_loaded_point_is_no_peak_and_no_reference(tmp_path: Path) -> None:
    lines = peak_lines(0, 12047.8, 15) + loaded_lines(cumulative=False, start=1)
    data = load(write_run(tmp_path / "run", lines))
    md = markdown(tmp_path / "run")
    assert "of this run's peak injection bandwidth" not in md  # "reached 113 % of this run's peak" no more
    assert "the loaded point at delay 0 moved 13,900.0 MB/s, 115% of it" in md
    text = "\n".join(suite.section(data, []))
    assert "ALL Reads 12047.8 MB/s is no peak: contended: a thread got 15% of a CPU" in text


def test_a_clean_peak_states_its_threads_and_cpus(tmp_path: Path) -> None:
    data = load(write_run(tmp_path / "run", peak_lines(0, 29546.5, None)))
    text = "\n".join(suite.section(data, []))
    assert "ALL Reads 29546.5 MB/s: the peak of 2 load threads" in text
    assert "no scaling curve shows whether that many threads saturate the memory" in text


def test_mlcs_prefetcher_warning_stays_with_latency_figures_not_bandwidth_ones() -> None:
    """MLC's "Unable to modify prefetchers … So, enabling random access for latency measurements" is about its
    latency tests (it chases at random since it could not turn the prefetchers off); its bandwidth tests are
    untouched, so a peak or bandwidth-matrix figure does not carry it."""
    from app.engine.importer import mlc_points

    text = (Path(__file__).resolve().parents[1] / "data" / "mlc" / "v3.10-default-run-2socket-skylake.txt").read_text()
    points, _ = mlc_points(text)
    by_mode: dict[str, list[list[str]]] = {}
    for pt in points:
        by_mode.setdefault(str(pt.point["mode"]), []).append(as_list(pt.extra.get("warnings") or []))
    prefetch = "Unable to modify prefetchers (try executing 'modprobe msr')"
    assert all(prefetch in w for w in by_mode["latency_matrix"] + by_mode["c2c"])
    assert by_mode["peak"] and not any(prefetch in w for w in by_mode["peak"] + by_mode["bandwidth_matrix"])


def test_the_run_summary_marks_contended_rows(tmp_path: Path) -> None:
    from app.stats.summary import results_table

    table = results_table([r.line for r in load(write_run(tmp_path / "run", loaded_lines(cumulative=True))).memory])
    assert "contended: a thread got 23% of a CPU" in table and table.count("clean") == 6


def test_bandwidth_that_falls_as_load_rises_is_named(tmp_path: Path) -> None:
    md = markdown(write_run(tmp_path / "run", loaded_lines(cumulative=True)))
    assert "bandwidth is not monotonic: delay 500 moved 11,800.0 MB/s" not in md  # clean rows rise: 6100 → 11800
    rows = [(1000, 100.0, 6000.0), (500, 101.0, 9000.0), (200, 102.0, 5000.0), (0, 110.0, 9500.0)]
    lines = [line(i, point("loaded", traffic="R", delay=d, engine="builtin"), {"latency_ns": lat, "bandwidth_mbps": bw},
                  engine="builtin") for i, (d, lat, bw) in enumerate(rows)]
    md = markdown(write_run(tmp_path / "run2", lines))
    assert ("bandwidth is not monotonic: delay 200 moved 5,000.0 MB/s, -44% against the lighter delay 500's "
            "9,000.0 MB/s") in md


def curve_with_intervals(tmp_path: Path, rel: float) -> Any:
    """A memory curve with a clear knee at delay 200 whose every figure has a 95 % interval of ± ``rel``."""
    rows = [(2000, 100.0, 1000.0), (1000, 100.5, 3000.0), (500, 101.0, 6000.0), (200, 103.0, 9000.0),
            (100, 130.0, 9600.0), (0, 200.0, 10000.0)]
    lines = []
    for i, (d, lat, bw) in enumerate(rows):
        ci95 = {"latency_ns": [lat * (1 - rel), lat * (1 + rel)], "bandwidth_mbps": [bw * (1 - rel), bw * (1 + rel)]}
        m = {"latency_ns": lat, "bandwidth_mbps": bw, "ci95": ci95,
             "ci_method": {"method": "batch-means", "level": 0.95, "samples": 20,
                           "series": {"latency_ns": {"batch_size": 1, "batches": 20, "warmup": 0},
                                      "bandwidth_mbps": {"batch_size": 1, "batches": 20, "warmup": 0}}}}
        lines.append(line(i, point("loaded", traffic="R", delay=d, engine="builtin"), m, engine="builtin"))
    data = load(write_run(tmp_path / f"run{rel}", lines))
    (c,) = an.memory_curves(data.memory)
    return c


def test_a_memory_knee_is_bootstrapped_from_its_intervals(tmp_path: Path) -> None:
    from app.report.compute import support

    tight = support.memory_knee_support(curve_with_intervals(tmp_path, 0.005))
    assert tight.name(tight.knee) == "delay 200" and tight.verdict == "stable", tight
    wide = support.memory_knee_support(curve_with_intervals(tmp_path, 0.3))
    assert wide.verdict == "fragile" and wide.share(wide.knee) < support.BOOTSTRAP_AGREE


def test_an_imported_engine_text_keeps_each_rows_busy_warning() -> None:
    from app.engine.importer import mlc_points

    text = ("Intel(R) Memory Latency Checker - compatible output: profiler-tui memlat v0.1\n"
            "Measuring Loaded Latencies for the system\nUsing Read-only traffic type\nInject\tLatency\tBandwidth\n"
            "Delay\t(ns)\tMB/sec\n==========================\n"
            "*** Busy machine at delay 0: a thread got 23% of a CPU in its window\n"
            " 00000\t182.60\t  13900.0\n 00100\t171.40\t  13600.0\n")
    points, _ = mlc_points(text)
    assert [pt.extra.get("warnings") for pt in points] == [
        ["Busy machine at delay 0: a thread got 23% of a CPU in its window"], None]


def test_results_csv_flags_contended_memory_rows(tmp_path: Path) -> None:
    from app.stats.frame import records

    data = load(write_run(tmp_path / "run", loaded_lines(cumulative=True)))
    flags = {r["delay"]: r["flags"] for r in records([], data.memory)}
    assert flags == {d: ("contended" if s is not None else None) for d, _, _, s in ROWS}
