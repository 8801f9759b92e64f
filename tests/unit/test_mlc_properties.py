"""Property tests of the MLC parser (Hypothesis, seeded): whatever text it is given — random characters,
random bytes decoded, real MLC outputs from tests/data/mlc/ mutated, cut anywhere, with CRLF line ends,
fed whole or in any pieces — it ends in sections and rows, never in an exception; what it keeps is sane
(finite numbers, strict JSON, bounded warnings); pieces give the same result as the whole; and a real
table cut anywhere yields a prefix of its true rows, never a number cut short."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from app.engine.importer import MAX_FILE_WARNINGS, mlc_points
from app.model.keys import MEMORY_MODES
from app.model.points import MemoryPoint, keys_of
from app.runners import mlc_parse
from app.runners.mlc_parse import LineParser, Section, loaded_rows, parse
from tests.helpers.typed import as_list

DATA = Path(__file__).resolve().parents[1] / "data" / "mlc"
SAMPLES = [p.read_text() for p in sorted(DATA.glob("*.txt"))]
TABLES = [t for t in SAMPLES if loaded_rows(parse(t).sections)]
KINDS = {"idle", "loaded", "idle_matrix", "peak_bandwidth", "bandwidth_matrix", "c2c", "bandwidth", "other", "scaling",
         "working_set"}
# the shape of a figure's key by kind: a type (or None allowed) per position
KEY_TYPES: dict[str, tuple[tuple[type, ...], ...]] = {
    "idle_matrix": ((int,), (int,)), "bandwidth_matrix": ((int,), (int,)), "peak_bandwidth": ((str,),),
    "scaling": ((int,),), "working_set": ((int,),),
    "c2c": ((str,), (int, type(None)), (int, type(None)), (str, type(None))),
}
KEYS = keys_of(MemoryPoint)
NUMBER = re.compile(r"\d{1,15}(?:\.\d{1,15})?")

SETTINGS = settings(derandomize=True, deadline=None, max_examples=600,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

# pieces of MLC's own vocabulary, so that random text reaches the parser's deeper branches
TOKENS = st.sampled_from([
    "Intel(R) Memory Latency Checker - v3.11b\n", "Command line parameters: ", "--loaded_latency", "--idle_latency",
    " -d", " -D 0,100,", " -b", " -t", " -W", " -l", " -k0-3", " -c", "inf", "nan", "1e999", "9" * 30, "-",
    "Measuring Loaded Latencies for the system\n", "Measuring idle latencies for random access (in ns)...\n",
    "Measuring Peak Injection Memory Bandwidths for the system\n", "Measuring cache-to-cache transfer latency\n",
    "Numa node\n", "Numa node\t0\t1\n", "=" * 26 + "\n", "*** Unable to modify prefetchers\n", "Using buffer size of ",
    "MiB", "MB/thread for reads and an additional 1.5GiB", "Using Read-only traffic type\n",
    "Using 1:1 Reads-NT Writes (non-temporal) traffic type\n", "Each iteration took 186.1 core clocks ( 80.9 ns)\n",
    "Using huge pages: yes (x)\n", "Using latency thread on CPU 0 (stride 64 bytes)\n",
    "Using injection delay unit of 0.4 ns\n", "ALL Reads  :  1234.5\n", "Local Socket L2->L2 HIT latency\t50.5\n",
    " 00000\t282.55\t  135345.6\n", " 00002\t     -\t  55398.7\n", "0\t90.2\t144.3\n", "\t", " ", "\n", "\r",
    "\r\n", "\x00", "\u2028", "\x85", "\u0663\u0664", "\ufeff", ".", ":",
    # the built-in engine's sections
    "Measuring Maximum Memory Bandwidths for the system\n", "Traffic W3: reads 12.5 MB/sec, writes 3.5 MB/sec\n",
    "Measuring Memory Bandwidth against the number of load threads\n", "Threads\tBandwidth\n", " 2\t  32001.9\n",
    "Using load threads on CPU(s) 0,1 in this order\n", "Measuring idle latency against buffer size (working set)\n",
    "Cache L1d: 32 KiB (level 1, Data, shared by CPU(s) 0)\n", " 48\t    3.50\n", "W12 traffic :\t10.5\n",
    "Placement verified: CPU node 0, memory node 1: pages N1=32768 (4096-byte pages; /proc/self/numa_maps)\n",
    "Using writer thread on CPU 0 and reader thread on CPU 1\n", "Writer Numa Node     0\t     1\n",
    "Placement verified: writer node 0, reader node 1, memory node 1: pages N1=1 (4096-byte pages; x)\n",
    "Remote Socket L2->L2 HITM latency (data address homed in reader socket)\n", "1\t -\t 114.0\n",
    "Windows of 0.0250 s, latency_ns: 150.123 149.870\n", "Windows of 0.0250 s, bandwidth_mbps: 3046.6\n",
    "Windows of 0.1 s, latency_ns:", " 1e9", " -4.5",
])
TEXT = st.lists(st.one_of(TOKENS, st.text(max_size=12)), max_size=40).map("".join)


@st.composite
def mutated(draw: st.DrawFn) -> str:
    """A real MLC output with a few edits, maybe CRLF, maybe cut."""
    text = draw(st.sampled_from(SAMPLES))
    for _ in range(draw(st.integers(0, 6))):
        op = draw(st.sampled_from(["delete", "insert", "replace", "dup_line", "drop_line"]))
        i = draw(st.integers(0, len(text)))
        if op == "delete":
            text = text[:i] + text[min(len(text), i + draw(st.integers(1, 40))):]
        elif op == "insert":
            text = text[:i] + draw(st.one_of(TOKENS, st.text(max_size=8))) + text[i:]
        elif op == "replace":
            text = text[:i] + draw(st.characters()) + text[i + 1:]
        else:
            lines = text.splitlines(keepends=True)
            if lines:
                j = min(draw(st.integers(0, len(lines) - 1)), len(lines) - 1)
                lines[j:j + 1] = [lines[j]] * 2 if op == "dup_line" else []
                text = "".join(lines)
    if draw(st.booleans()):
        text = text.replace("\n", "\r\n")
    if draw(st.booleans()):
        text = text[:draw(st.integers(0, len(text)))]
    return text


ANY_TEXT = st.one_of(TEXT, mutated(), st.binary(max_size=400).map(lambda b: b.decode("utf-8", "replace")),
                     st.text(max_size=300))


def finite(x: Any) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)


def check_sane(p: LineParser) -> None:
    assert isinstance(p.warnings, list) and len(p.warnings) <= mlc_parse.MAX_WARNINGS
    assert all(isinstance(w, str) and w for w in p.warnings)
    assert len(p.sections) <= mlc_parse.MAX_SECTIONS
    for s in p.sections:
        assert isinstance(s, Section) and s.kind in KINDS
        for r in s.rows:
            assert isinstance(r.delay, int) and r.delay >= 0
            assert r.latency_ns is None or finite(r.latency_ns)
            assert finite(r.bandwidth_mbps)
            assert len(r.extra) <= mlc_parse.MAX_EXTRA_COLUMNS
            check_windows(r.windows)
        json.dumps(s.params, allow_nan=False)  # strict JSON: no inf or nan anywhere
        json.dumps(s.values, allow_nan=False)
        json.dumps(s.matrix, allow_nan=False)
    assert len(p.figures) <= mlc_parse.MAX_ROWS + mlc_parse.MAX_CELLS
    for f in p.figures:
        assert f.kind == f.section.kind and any(f.section is s for s in p.sections)
        assert f.unit == mlc_parse.FIGURE_UNITS[f.kind] and finite(f.value)
        types = KEY_TYPES[f.kind]
        assert len(f.key) == len(types) and all(isinstance(k, t) for k, t in zip(f.key, types))
        assert all(finite(v) for v in f.extra.values())
        check_windows(f.windows)


def check_windows(windows: dict[str, tuple[float, ...]]) -> None:
    """The engine's sub-window values as kept: known figures, at most MAX_WINDOWS each, finite and ≥ 0."""
    assert set(windows) <= set(mlc_parse.WINDOW_FIGURES)
    for values in windows.values():
        assert 0 < len(values) <= mlc_parse.MAX_WINDOWS and all(finite(v) and v >= 0 for v in values)


def snapshot(p: LineParser) -> Any:
    return ([(s.kind, s.title, s.params, s.rows, s.values, s.matrix) for s in p.sections], p.warnings, p.header,
            p.figures)


@SETTINGS
@given(ANY_TEXT)
def test_any_text_parses_to_sane_sections(text: str) -> None:
    check_sane(parse(text))


@SETTINGS
@given(ANY_TEXT)
def test_every_figure_is_a_number_the_text_printed(text: str) -> None:
    printed = {float(n) for n in NUMBER.findall(text)}
    assert all(f.value in printed for f in parse(text).figures)


@SETTINGS
@given(st.lists(st.floats(0, 1e6), min_size=1, max_size=6), st.lists(st.floats(0, 1e6), min_size=1, max_size=6))
def test_figures_of_printed_tables_are_the_numbers_printed(row0: list[float], ws: list[float]) -> None:
    """Tables as the engine prints them: a matrix row and a working-set table give back each number as printed."""
    cols = "".join(f"\t{i:6d}" for i in range(len(row0)))
    text = ("Measuring Memory Bandwidths between nodes within system\n\t\tNuma node\nNuma node" + cols + "\t\n"
            + "       0" + "".join(f"\t{x:6.1f}" for x in row0) + "\t\n"
            + "Measuring idle latency against buffer size (working set)\nBuffer\tLatency\n(KiB)\t(ns)\n" + "=" * 26
            + "\n" + "".join(f" {4 * (i + 1)}\t{x:8.2f}\n" for i, x in enumerate(ws)))
    p = parse(text)
    assert [(f.key, f.value) for f in p.figures if f.kind == "bandwidth_matrix"] == [
        ((0, i), float(f"{x:.1f}")) for i, x in enumerate(row0)]
    assert [(f.key, f.value) for f in p.figures if f.kind == "working_set"] == [
        ((4096 * (i + 1),), float(f"{x:.2f}")) for i, x in enumerate(ws)]


@SETTINGS
@given(ANY_TEXT)
def test_mlc_points_of_any_text_are_strict_json(text: str) -> None:
    points, info = mlc_points(text)
    printed = {float(n) for n in NUMBER.findall(text)}
    # each figure as printed (the interval record is computed from the windows, not printed)
    figures = [{k: v for k, v in pt.metrics.items() if k not in ("ci95", "ci_method")} for pt in points]
    assert all(v is None or v in printed for m in figures for v in m.values())
    assert isinstance(info["warnings"], list) and len(info["warnings"]) <= MAX_FILE_WARNINGS + 1
    assert all(isinstance(w, str) and w for w in info["warnings"])
    for pt, m in zip(points, figures):
        assert pt.kind == "memory" and pt.point["mode"] in MEMORY_MODES
        assert all(v is None or finite(v) for v in m.values())
        json.dumps([pt.point, pt.metrics, pt.extra], allow_nan=False)
        for name in ("traffic", "buffer", "cpu_node", "mem_node", "threads", "c2c", "reader_node", "home", "pages"):
            if pt.point.get(name) is not None and pt.point["mode"] != "loaded":  # as a plan would hold it
                assert KEYS[name].parse(pt.point[name]) == pt.point[name]


@SETTINGS
@given(ANY_TEXT, st.lists(st.integers(0, 10_000), max_size=12))
def test_pieces_give_the_same_result_as_the_whole(text: str, cuts: list[int]) -> None:
    """As the runner feeds MLC's stdout: in whatever pieces the pipe delivers."""
    bounds = sorted({min(c, len(text)) for c in cuts} | {0, len(text)})
    pieces = [text[a:b] for a, b in zip(bounds, bounds[1:])]
    whole, fed = LineParser(), LineParser()
    whole.feed(text)
    whole.close()
    for piece in pieces:
        fed.feed(piece)
    fed.close()
    assert snapshot(fed) == snapshot(whole)


@SETTINGS
@given(st.sampled_from(TABLES), st.data())
def test_a_table_cut_anywhere_keeps_only_true_rows(text: str, data: st.DataObject) -> None:
    if data.draw(st.booleans()):
        text = text.replace("\n", "\r\n")
    full = loaded_rows(parse(text).sections)
    at = data.draw(st.integers(0, len(text)))
    p = parse(text[:at])
    rows = loaded_rows(p.sections)
    assert rows == full[:len(rows)]  # a prefix of the true rows: never "97" for "97362.0"
    if rows and len(rows) < len(full):
        assert any(f"{len(rows)} of 19 delays" in w for w in p.warnings), p.warnings


def test_a_buffer_size_no_plan_can_hold_is_recorded_as_unknown_with_a_note() -> None:
    """Hypothesis found it: "Using buffer size of 0KB" made an idle point of buffer 0, which no plan holds."""
    points, _ = mlc_points("Using buffer size of 0KB\nEach iteration took 0 clocks (0 ns)\n")
    assert [pt.point["buffer"] for pt in points] == [None]
    assert "0 bytes" in as_list(points[0].extra["notes"])[0]
