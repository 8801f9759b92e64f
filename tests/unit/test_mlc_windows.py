"""The built-in engine's sub-window lines (``Windows of … s, latency_ns: …``): read into the row, figure or idle
section they precede, bounded and validated (a malformed line costs that figure its windows, never its row), and
turned into the results line's interval by the memory runner (or a sentence why there is none)."""

from __future__ import annotations

import math

from hypothesis import given, settings
from hypothesis import strategies as st

from app.model.records import MemoryMetrics
from app.runners import mlc_parse
from app.runners.memory import MLC_NO_WINDOWS, NO_WINDOWS, window_uncertainty
from app.runners.mlc_parse import idle_windows, loaded_rows, parse
from tests.helpers.typed import as_dict

HEAD = ("Intel(R) Memory Latency Checker - compatible output: profiler-tui memlat v0.1\n"
        "Command line parameters: --loaded_latency -D 0,500 -t 0.3 --windows 3\n\n"
        "Measuring Loaded Latencies for the system\nUsing Read-only traffic type\n"
        "Inject\tLatency\tBandwidth\nDelay\t(ns)\tMB/sec\n==========================\n")


def loaded(rows: str) -> str:
    return HEAD + rows


def test_each_row_gets_the_windows_printed_just_before_it() -> None:
    p = parse(loaded("Load threads at delay 00000: 2613.7 MB/sec (latency thread 432.9 MB/sec)\n"
                     "Windows of 0.1000 s, latency_ns: 150.500 149.250 151.000\n"
                     "Windows of 0.1000 s, bandwidth_mbps: 3046.6 3001.2 3100.0\n"
                     " 00000\t150.25\t   3046.6\n"
                     " 00500\t145.52\t    500.8\n"))
    rows = loaded_rows(p.sections)
    assert rows[0].windows == {"latency_ns": (150.5, 149.25, 151.0), "bandwidth_mbps": (3046.6, 3001.2, 3100.0)}
    assert rows[1].windows == {}  # none printed before it: nothing carried over
    assert p.warnings == []


def test_values_spanning_lines_join_and_idle_keeps_them_in_its_section() -> None:
    text = ("Intel(R) Memory Latency Checker - compatible output: profiler-tui memlat v0.1\n"
            "Windows of 0.0250 s, latency_ns: 1.5 2.5\nWindows of 0.0250 s, latency_ns: 3.5\n"
            "Each iteration took 414.1 base frequency clocks (\t159.5\tns)\n")
    assert idle_windows(parse(text).sections) == {"latency_ns": (1.5, 2.5, 3.5)}
    assert idle_windows(parse(text.replace("Windows", "Window")).sections) == {}


def test_peak_figure_gets_its_windows() -> None:
    text = ("Measuring Peak Injection Memory Bandwidths for the system\n"
            "Traffic R: reads 100.0 MB/sec, writes 0.0 MB/sec\n"
            "Windows of 0.0250 s, bandwidth_mbps: 99.0 101.0\n"
            "ALL Reads        :\t100.0\t\n")
    (fig,) = parse(text).figures
    assert fig.key == ("R",) and fig.windows == {"bandwidth_mbps": (99.0, 101.0)}


def test_a_malformed_line_costs_the_figure_its_windows_not_its_row() -> None:
    for bad in ("nan 1.0", "-1.0 2.0", "1e5", "12.5x", "1." + "9" * 20):
        p = parse(loaded(f"Windows of 0.1000 s, latency_ns: 1.0 2.0\nWindows of 0.1000 s, latency_ns: {bad}\n"
                         "Windows of 0.1000 s, latency_ns: 3.0\nWindows of 0.1000 s, bandwidth_mbps: 5.0\n"
                         " 00000\t150.25\t   3046.6\n"))
        (row,) = loaded_rows(p.sections)
        assert (row.delay, row.latency_ns) == (0, 150.25)
        assert row.windows == {"bandwidth_mbps": (5.0,)}, bad
        assert any("sub-window" in w for w in p.warnings)


def test_at_most_max_windows_values_are_kept() -> None:
    line = "Windows of 0.0010 s, latency_ns:" + " 1.5" * 50 + "\n"
    p = parse(loaded(line * 30 + " 00000\t150.25\t   3046.6\n"))
    (row,) = loaded_rows(p.sections)
    assert len(row.windows["latency_ns"]) == mlc_parse.MAX_WINDOWS
    assert sum("more than 1000 sub-window values" in w for w in p.warnings) == 1


VALUES = st.lists(st.floats(0, 1e9, allow_nan=False, allow_infinity=False), min_size=1, max_size=120)


@settings(derandomize=True, deadline=None, max_examples=150)
@given(VALUES, st.sampled_from(["latency_ns", "bandwidth_mbps"]), st.integers(1, 60))
def test_printed_values_read_back_exactly(values: list[float], name: str, per_line: int) -> None:
    """However the engine spreads them over lines, the values read are the numbers printed, in order."""
    printed = [f"{v:.3f}" for v in values]
    lines = "".join(f"Windows of 0.0250 s, {name}: {' '.join(printed[i:i + per_line])}\n"
                    for i in range(0, len(printed), per_line))
    (row,) = loaded_rows(parse(loaded(lines + " 00000\t150.25\t   3046.6\n")).sections)
    assert row.windows == {name: tuple(float(v) for v in printed)}


@settings(derandomize=True, deadline=None, max_examples=300)
@given(st.text(max_size=80))
def test_any_tail_keeps_the_row_and_only_sane_windows(tail: str) -> None:
    p = parse(loaded(f"Windows of 0.1 s, latency_ns:{tail}\n 00000\t150.25\t   3046.6\n"))
    rows = loaded_rows(p.sections)
    assert rows and rows[-1].latency_ns == 150.25  # a newline in the tail may add a line, never lose the row
    for values in rows[-1].windows.values():
        assert 0 < len(values) <= mlc_parse.MAX_WINDOWS and all(math.isfinite(v) and v >= 0 for v in values)


# --- the runner's interval ------------------------------------------------------------------------------------

def test_windows_give_each_present_figure_its_interval() -> None:
    lat = tuple(100.0 + (i % 3) for i in range(20))
    m = window_uncertainty("builtin", "loaded", {"latency_ns": lat, "bandwidth_mbps": (5.0,) * 20},
                           MemoryMetrics(101.0, None))  # a row without bandwidth: its windows are not used
    assert set(m.ci95 or {}) == {"latency_ns"}
    low, high = m.interval("latency_ns") or (0, 0)
    assert low < 101.0 < high
    assert m.ci_method is not None and set(as_dict(m.ci_method["series"])) == {"latency_ns"}
    assert list(m.json())[-2:] == ["ci95", "ci_method"]


def test_no_windows_say_why() -> None:
    cases = {("mlc", "loaded"): MLC_NO_WINDOWS, ("builtin", "c2c"): NO_WINDOWS["c2c"],
             ("builtin", "working_set"): NO_WINDOWS["working_set"],
             ("builtin", "idle"): "the engine printed no sub-window figures for this row"}
    for (engine, mode), reason in cases.items():
        m = window_uncertainty(engine, mode, {"latency_ns": (1.0,) * 20} if engine == "mlc" else {},
                               MemoryMetrics(90.0))
        assert m.ci95 is None and m.ci_method == {"method": "none", "reason": reason}
    assert "median" in NO_WINDOWS["c2c"]
