"""The MLC text parser against every real MLC output in tests/data/mlc/ (real outputs of Intel MLC v3.5, v3.7
and v3.10)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from app.plan.presets import MLC_DELAYS
from app.runners.mlc_parse import (
    LineParser,
    Row,
    idle_latency,
    loaded_rows,
    parse,
    parse_command_line,
    parse_text,
    traffic_from_text,
)
from tests.helpers.typed import as_list

DATA = Path(__file__).resolve().parents[1] / "data" / "mlc"
FILES = sorted(DATA.glob("*.txt"))
LOADED_FILES = ["v3.10-loaded-latency.txt", "v3.5-loaded-latency-MB.txt", "v3.7-loaded-latency-spaces.txt",
                "v3.10-default-run-2socket-skylake.txt"]
MIB = 1 << 20


def read(name: str) -> str:
    return (DATA / name).read_text()


def table_lines(text: str) -> list[list[str]]:
    """The loaded-latency table rows as whitespace-split fields: an independent reading of the file."""
    rows, on = [], False
    for line in text.splitlines():
        if line.startswith("====="):
            on = True
            continue
        if on and not line.strip():
            on = False
        if on:
            rows.append(line.split())
    return rows


def test_every_reference_file_is_present_and_parses() -> None:
    names = {f.name for f in FILES}
    assert names == {"v3.10-default-run-2socket-skylake.txt", "v3.10-loaded-latency.txt",
                     "v3.5-loaded-latency-MB.txt", "v3.7-idle-latency.txt", "v3.7-loaded-latency-spaces.txt",
                     "v3.7-peak-injection-bandwidth.txt"}
    shared = Path(__file__).resolve().parents[3] / "shared" / "reference" / "mlc"
    for f in FILES:  # byte-for-byte copies of the reference outputs
        if (shared / f.name).exists():
            assert f.read_bytes() == (shared / f.name).read_bytes()
    for f in FILES:
        sections = parse_text(f.read_text())
        assert sections, f.name


@pytest.mark.parametrize("name", LOADED_FILES)
def test_loaded_tables_match_the_file_row_by_row(name: str) -> None:
    text = read(name)
    loaded = [s for s in parse_text(text) if s.kind == "loaded"]
    assert len(loaded) == 1
    rows = loaded[0].rows
    assert [r.delay for r in rows] == list(MLC_DELAYS)  # MLC's 19 default delays
    expected = table_lines(text)
    assert len(expected) == 19
    for row, fields in zip(rows, expected):
        assert row.delay == int(fields[0])
        assert row.latency_ns == float(fields[1])
        assert row.bandwidth_mbps == float(fields[2])
    assert loaded[0].params["traffic"] == "R"


@pytest.mark.parametrize("name, first, at_500, last", [
    ("v3.10-loaded-latency.txt", (0, 282.55, 135345.6), (500, 108.59, 18821.4), (20000, 105.48, 1148.7)),
    ("v3.5-loaded-latency-MB.txt", (0, 135.35, 27186.0), (500, 100.38, 6751.4), (20000, 93.43, 851.7)),
    ("v3.7-loaded-latency-spaces.txt", (0, 233.86, 243421.9), (500, 95.68, 55139.0), (20000, 80.19, 2179.9)),
    ("v3.10-default-run-2socket-skylake.txt", (0, 166.18, 210643.1), (500, 101.35, 50291.8),
     (20000, 91.66, 2027.6)),
])
def test_loaded_specific_figures(name: str, first: tuple, at_500: tuple, last: tuple) -> None:
    rows = {r.delay: r for r in loaded_rows(parse_text(read(name)))}
    for delay, lat, bw in (first, at_500, last):
        assert (rows[delay].latency_ns, rows[delay].bandwidth_mbps) == (lat, bw)


def test_buffer_line_mb_and_mib_are_the_same_binary_megabytes() -> None:
    for name in ("v3.10-loaded-latency.txt", "v3.5-loaded-latency-MB.txt", "v3.7-loaded-latency-spaces.txt"):
        sec = parse_text(read(name))[0]
        assert sec.params["buffer_bytes"] == 100 * MIB, name
        assert sec.params["write_buffer_bytes"] == 100 * MIB, name
        assert sec.params["mode"] == "loaded"
    assert parse_text(read("v3.10-loaded-latency.txt"))[0].params["version"] == "3.10"
    assert parse_text(read("v3.5-loaded-latency-MB.txt"))[0].params["version"] == "3.5"


def test_idle_latency_core_clocks() -> None:
    sections = parse_text(read("v3.7-idle-latency.txt"))
    assert [s.kind for s in sections] == ["idle"]
    s = sections[0]
    assert s.values == {"latency_ns": 80.9, "clocks": 186.1, "clock": "core"}
    assert s.params["buffer_bytes"] == 2000 * MIB and s.params["mode"] == "idle" and s.params["version"] == "3.7"
    assert idle_latency(sections) == 80.9


def test_idle_latency_base_frequency_clocks_with_tabs() -> None:
    # v3.10+ wording and tabs (also the built-in engine's line), derived from the v3.7 file
    text = read("v3.7-idle-latency.txt").replace("186.1 core clocks ( 80.9    ns)",
                                                 "186.1 base frequency clocks (\t 80.9\tns)\t")
    assert "base frequency" in text
    s = parse_text(text)[0]
    assert s.values == {"latency_ns": 80.9, "clocks": 186.1, "clock": "base frequency"}


def test_peak_injection_bandwidth() -> None:
    s = parse_text(read("v3.7-peak-injection-bandwidth.txt"))
    assert [x.kind for x in s] == ["peak_bandwidth"]
    assert s[0].values == {"ALL Reads": 243159.4, "3:1 Reads-Writes": 219132.5, "2:1 Reads-Writes": 216603.1,
                           "1:1 Reads-Writes": 203713.0, "Stream-triad like": 193790.8}


def test_plain_mlc_run_has_every_section_and_warnings() -> None:
    sections = parse_text(read("v3.10-default-run-2socket-skylake.txt"))
    assert [s.kind for s in sections] == ["idle_matrix", "peak_bandwidth", "bandwidth_matrix", "loaded", "c2c"]
    idle, peak, bw, loaded, c2c = sections
    assert idle.matrix == {"0": {"0": 90.2, "1": 144.3}, "1": {"0": 143.2, "1": 89.1}}
    assert peak.values["ALL Reads"] == 211194.2 and peak.values["Stream-triad like"] == 172770.4
    assert bw.matrix == {"0": {"0": 104362.2, "1": 34290.6}, "1": {"0": 34283.3, "1": 106028.4}}
    assert bw.params["traffic"] == "R"
    assert len(loaded.rows) == 19 and loaded.params["traffic"] == "R"
    assert c2c.values["Local Socket L2->L2 HIT latency"] == 50.5
    assert c2c.values["Local Socket L2->L2 HITM latency"] == 49.9
    assert as_list(c2c.values["matrices"])[1]["1"] == {"0": 123.2, "1": None}
    assert any("Unable to modify prefetchers" in w for w in as_list(loaded.params["warnings"]))


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_crlf_and_indented_copies_parse_the_same(path: Path) -> None:
    text = path.read_text()
    plain = parse_text(text)
    crlf = parse_text(text.replace("\n", "\r\n"))  # mlc.exe on Windows
    indented = parse_text("\n".join("    " + ln for ln in text.splitlines()))  # as pasted in docs
    for other in (crlf, indented):
        assert [(s.kind, s.rows, s.values, s.matrix) for s in other] == \
               [(s.kind, s.rows, s.values, s.matrix) for s in plain]
        assert [s.params.get("traffic") for s in other] == [s.params.get("traffic") for s in plain]


def test_incremental_parser_emits_each_row_when_its_line_completes() -> None:
    text = read("v3.10-loaded-latency.txt").replace("\n", "\r\n")
    p = LineParser()
    emitted: list[Row] = []
    seen_at: list[int] = []
    for i, ch in enumerate(text):  # one character at a time, the worst case of a pipe
        rows = p.feed(ch)
        if rows:
            seen_at.append(i)
            emitted += rows
    p.close()
    assert [r.delay for r in emitted] == list(MLC_DELAYS)
    # each row comes out at the end of its own line, not later
    for i, row in zip(seen_at, emitted):
        line_start = text.rfind("\n", 0, i - 1) + 1
        assert re.match(rf"\s*0*{row.delay}\s", text[line_start:i])
    assert p.sections[0].rows == emitted


def test_last_line_without_newline_is_kept_on_close() -> None:
    text = read("v3.5-loaded-latency-MB.txt").rstrip("\n")
    p = LineParser()
    rows = p.feed(text)
    assert len(rows) == 18  # the 20000 row has no newline yet
    sections = p.close()
    assert sections[0].rows[-1].delay == 20000 and sections[0].rows[-1].bandwidth_mbps == 851.7


def test_command_line_parameters_give_traffic_stride_buffer_delay() -> None:
    text = read("v3.10-loaded-latency.txt").replace("Command line parameters: --loaded_latency ",
                                                    "Command line parameters: --loaded_latency -W6 -l256 -b4k -d0 -t4 ")
    text = "\n".join(ln for ln in text.splitlines() if not ln.startswith("Using Read-only"))
    s = parse_text(text)[0]
    assert s.params["traffic"] == "W6" and s.params["stride"] == 256 and s.params["buffer_bytes"] == 4096
    assert s.params["delays"] == [0] and s.params["duration"] == 4
    # the command line is explicit: it wins over the buffer line
    assert parse_command_line("--loaded_latency -R -l64 -b512000")["buffer_bytes"] == 512000 * 1024
    assert parse_command_line("--loaded_latency -b2g")["buffer_bytes"] == 2 << 30
    assert parse_command_line("--loaded_latency -b1M -W5")["traffic"] == "W5"
    engine = parse_command_line("--loaded_latency -D 0,100,1000 -W 8 -l 128 -b 64 -t 0.5 -k 0-1")
    assert engine == {"mode": "loaded", "delays": [0, 100, 1000], "traffic": "W8", "stride": 128,
                      "buffer_bytes": 65536, "duration": 0.5, "cpus": "0-1"}
    assert parse_command_line("--idle_latency -c2")["latency_cpu"] == 2


@pytest.mark.parametrize("desc, code", [
    ("Read-only", "R"), ("2:1 Reads-Writes", "W2"), ("3:1 Reads-Writes", "W3"), ("3:2 Reads-Writes", "W4"),
    ("1:1 Reads-Writes", "W5"), ("0:1 Reads-NT Writes (non-temporal)", "W6"),
    ("2:1 Reads-NT Writes (non-temporal)", "W7"), ("1:1 Reads-NT Writes (non-temporal)", "W8"),
    ("3:1 Reads-NT Writes (non-temporal)", "W9"), ("Stream-triad like 2:1 Reads-NT Writes", "W10"),
    ("Stream-triad like 3:1 Reads-Writes (RFO)", "W11"), ("4:1 Reads-Writes", "W12"), ("-W7", "W7"),
    ("something else", None),
])
def test_traffic_wording(desc: str, code: str | None) -> None:
    assert traffic_from_text(desc) == code


def test_traffic_type_line_sets_the_section_traffic_without_a_command_line() -> None:
    text = read("v3.7-loaded-latency-spaces.txt")
    text = text.replace("Command line parameters: --loaded_latency\n", "")
    text = text.replace("Using Read-only traffic type", "Using 1:1 Reads-NT Writes (non-temporal) traffic type")
    assert parse_text(text)[0].params["traffic"] == "W8"


def test_single_star_warnings_and_bandwidth_only_rows() -> None:
    text = ("Intel(R) Memory Latency Checker - v3.11b\n"
            "Command line parameters: --loaded_latency -t4 \n\n"
            "Using buffer size of 183.105MiB/thread for reads and an additional 183.105MiB/thread for writes\n"
            "* Unable to modify prefetchers (try executing 'modprobe msr')\n"
            "Measuring Loaded Latencies for the system\nUsing Read-only traffic type\n"
            "Inject\tLatency\tBandwidth\nDelay\t(ns)\tMB/sec\n==========================\n"
            " 00000\t189.66\t  55445.5\n 00002\t     -\t  55398.7\n")
    s = parse_text(text)[0]
    assert s.params["warnings"] == ["Unable to modify prefetchers (try executing 'modprobe msr')"]
    assert [r.as_dict() for r in s.rows] == [{"delay": 0, "latency_ns": 189.66, "bandwidth_mbps": 55445.5},
                                             {"delay": 2, "latency_ns": None, "bandwidth_mbps": 55398.7}]
    assert s.params["duration"] == 4 and s.params["version"] == "3.11b"


def test_engine_header_lines() -> None:
    # the built-in engine's extra header lines (native/memlat/README.md), without a -l on its command line
    text = ("Intel(R) Memory Latency Checker - compatible output: profiler-tui memlat v0.1\n"
            "Command line parameters: --loaded_latency -W7 -D 0,500 -t 0.3\n\n"
            "Using buffer size of 64.000MiB/thread for reads and an additional 64.000MiB/thread for writes\n"
            "Using huge pages: yes (transparent huge pages (madvise): 192.0 of 192.0 MiB in 2 MiB pages)\n"
            "Using latency thread on CPU 0 (stride 128 bytes) and 1 load thread(s) on CPU(s) 1\n"
            "Using injection delay unit of 0.410 ns (one iteration of a spin loop)\n\n"
            "Measuring Loaded Latencies for the system\n"
            "Using 2:1 Reads-NT Writes (non-temporal) traffic type\n"
            "Inject\tLatency\tBandwidth\nDelay\t(ns)\tMB/sec\n==========================\n"
            " 00000\t147.85\t   3046.6\n 00500\t140.10\t    120.3\n")
    (s,) = parse_text(text)
    p = s.params
    assert (p["tool"], p["version"], p["traffic"], p["stride"], p["latency_cpu"]) == ("memlat", "0.1", "W7", 128, 0)
    assert p["huge_pages"] is True and p["delay_unit_ns"] == 0.41 and p["delays"] == [0, 500]
    assert p["buffer_bytes"] == 64 * MIB and p["duration"] == 0.3
    assert [r.delay for r in s.rows] == [0, 500]


# --- cut and truncated text -------------------------------------------------------------------------


def parsed(text: str) -> LineParser:
    p = LineParser()
    p.feed(text)
    p.close()
    return p


@pytest.mark.parametrize("cut_after", ["00500\t108.59\t  18", "00500\t108.59\t  18821", "00500\t108.59\t  ",
                                       "00500\t108.5", "005"])
def test_text_cut_mid_row_drops_the_partial_row_and_says_the_table_is_short(cut_after: str) -> None:
    text = read("v3.10-loaded-latency.txt")
    at = text.index(" 00500\t108.59\t  18821.4") + 1 + len(cut_after)
    p = parsed(text[:at])
    (sec,) = p.sections
    assert [r.delay for r in sec.rows] == [0, 2, 8, 15, 50, 100, 200, 300, 400]  # no "500 → 18 MB/s" row
    assert "loaded-latency table has 9 of 19 delays (missing 500, 700, 1000, 1300, 1700, 2500, …)." in p.warnings
    if cut_after.endswith(("18", "18821")):
        assert any(w.startswith(f"the last line {cut_after!r} has no line end") for w in p.warnings), p.warnings


def test_a_complete_last_row_without_line_end_is_kept_and_a_full_table_warns_nothing() -> None:
    for name in LOADED_FILES:
        p = parsed(read(name).rstrip("\r\n "))
        assert p.warnings == [], (name, p.warnings)
        assert [r.delay for r in loaded_rows(p.sections)] == list(MLC_DELAYS)


def test_cut_crlf_text_and_a_first_row_cut() -> None:
    text = read("v3.7-loaded-latency-spaces.txt").replace("\n", "\r\n")
    p = parsed(text[:text.index("=====")] + "=" * 30 + "\r\n 00000  233.86   2434")
    assert p.sections[0].rows == []  # no complete row to compare with: a bandwidth without its point is cut
    assert "loaded-latency table has 0 of 19 delays (missing 0, 2, 8, 15, 50, 100, …)." in p.warnings
    p = parsed(text[:text.index("=====")] + "=" * 30 + "\r\n 00000  233.86   2434.1")
    assert [r.bandwidth_mbps for r in p.sections[0].rows] == [2434.1]


def test_explicit_delays_set_what_a_table_should_hold() -> None:
    head = ("Intel(R) Memory Latency Checker - v3.11b\nCommand line parameters: --loaded_latency -d500 -R\n\n"
            "Measuring Loaded Latencies for the system\nUsing Read-only traffic type\n"
            "Inject\tLatency\tBandwidth\nDelay\t(ns)\tMB/sec\n==========================\n")
    assert parsed(head + " 00500\t108.59\t  18821.4\n").warnings == []  # -d: one row is the whole table
    assert parsed(head).warnings == ["loaded-latency table has 0 of 1 delays (missing 500)."]
    engine = head.replace("-d500 -R", "-D 0,500,9000 -R")
    assert parsed(engine + " 00000\t150.00\t  9000.0\n").warnings == [
        "loaded-latency table has 1 of 3 delays (missing 500, 9000)."]
    # rows that are not MLC's default delays, with no command line saying which were run: no guess
    other = head.replace("Command line parameters: --loaded_latency -d500 -R\n", "")
    assert parsed(other + " 00007\t150.00\t  9000.0\n").warnings == []


def test_mlc_points_returns_the_warnings() -> None:
    from app.engine.importer import mlc_points

    text = read("v3.10-loaded-latency.txt")
    cut = text[:text.index("00500\t108.59\t  18821.4") + len("00500\t108.59\t  97")]
    points, info = mlc_points(cut)
    assert [p.point["delay"] for p in points] == [0, 2, 8, 15, 50, 100, 200, 300, 400]
    assert all(p.metrics["bandwidth_mbps"] != 97.0 for p in points)
    assert any("9 of 19 delays" in w for w in info["warnings"]) and len(info["warnings"]) == 2
    # the same through pieces (a file's lines), and a whole file warns nothing
    assert mlc_points(iter(cut.splitlines(keepends=True)))[1]["warnings"] == info["warnings"]
    assert mlc_points(text)[1]["warnings"] == []


# --- bounded state ----------------------------------------------------------------------------------


def test_limits_bound_the_parser_and_are_announced() -> None:
    from app.runners import mlc_parse as mp

    head = read("v3.10-loaded-latency.txt").split("=====")[0] + "=" * 26 + "\n"
    p = LineParser()
    p.feed(head)
    for i in range(mp.MAX_ROWS + 500):
        p.feed(f" {i % 20000:05d}\t100.00\t  5000.0\n")
    assert len(p.sections[0].rows) == mp.MAX_ROWS and p.full
    assert any(w.startswith(f"more than {mp.MAX_ROWS} loaded-latency rows") for w in p.warnings)
    # a line with no end: only its first MAX_LINE_CHARS characters are kept, whatever the chunks
    p = LineParser()
    p.feed("Using ")
    for _ in range(1000):
        p.feed("x" * 10_000)
    assert len(p._pending) == mp.MAX_LINE_CHARS
    p.feed("\n* short\n")
    p.close()
    assert p.header["warnings"] == ["short"] and p.warnings == [
        f"line 1 is longer than {mp.MAX_LINE_CHARS} characters: only its start is read."]
    # before the first section, a line no rule reads is skipped whole, however long: nothing to warn of
    for chunks in (["x" * 10_000 + "\n* short\n"], ["x" * 5_000, "x" * 5_000 + "\n* short\n"]):
        p = LineParser()
        for c in chunks:
            p.feed(c)
        p.close()
        assert p.header["warnings"] == ["short"] and p.warnings == [] and p.lines == 2
    # sections, '*' lines, extra columns
    p = parsed("Measuring Peak Injection Memory Bandwidths for the system\n" * (mp.MAX_SECTIONS + 5))
    assert len(p.sections) == mp.MAX_SECTIONS and p.full
    p = parsed("*** again\n" * 1000)
    assert len(as_list(p.header["warnings"])) == mp.MAX_STAR_LINES
    p = parsed(head + " 00000\t100.00\t  5000.0" + " abcdefghij" * 10 + " " + "z" * 100 + "\n")
    assert p.sections[0].rows[0].extra == ["abcdefghij"] * mp.MAX_EXTRA_COLUMNS
    # numbers MLC never prints are not rows (and never overflow)
    p = parsed(head + " 00000\t100.00\t  " + "9" * 400 + ".0\n" + " " + "1" * 4000 + "\t1.00\t1.0\n")
    assert p.sections[0].rows == []
    assert parse_command_line("--loaded_latency -b" + "9" * 400 + " -t1e999 -tinf -d" + "9" * 5000) == \
        {"mode": "loaded"}


@pytest.mark.parametrize("line, kib", [
    ("Using latency thread on CPU 0, stride 256 bytes, random chase within 256 KiB groups\n", 256),
    ("Using latency thread on CPU 0 (stride 64 bytes, random chase over the whole buffer) and 1 load thread(s) "
     "on CPU(s) 1\n", 0),
    ("Using latency thread on CPU 3 (stride 64 bytes) and 1 load thread(s) on CPU(s) 1\n", None),  # engine v0.1
])
def test_the_engines_chase_is_read_from_its_threads_line(line: str, kib: int | None) -> None:
    parser = LineParser()
    list(parser.feed(line))
    assert parser.header.get("chase_kib") == kib and parser.header["stride"] in (64, 256)


NUMA_LINE = ("Using memory on NUMA node 1: pages N1=16384 (4096-byte pages; bound with mbind MPOL_BIND before the "
             "first touch, verified with move_pages)")


@pytest.mark.parametrize("line, numa", [
    (NUMA_LINE, {"node": 1, "pages": {"1": 16384}, "page_bytes": 4096, "verified_with": "move_pages"}),
    (NUMA_LINE.replace("N1=16384", "N0=3 N1=16381"), {"node": 1, "pages": {"0": 3, "1": 16381}, "page_bytes": 4096,
                                                      "verified_with": "move_pages"}),
    (NUMA_LINE.replace("N1=16384", "N1=x"), None),  # not the engine's line: nothing read
    (NUMA_LINE.replace("N1=16384", " ".join(f"N{n}=1" for n in range(65))), None),  # beyond 64 nodes: refused
    (NUMA_LINE.replace("node 1", "node 12345"), None),
])
def test_the_engines_numa_line_is_read_bounded(line: str, numa: dict[str, object] | None) -> None:
    assert parse(f"Using buffer size of 64.000MiB\n{line}\n").header.get("numa") == numa


NOISE = {"stars": "***\n", "log": "kernel: some other tool's line, using 4 threads\n", "blank": "\n"}


@pytest.mark.parametrize("noise", sorted(NOISE))
@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_output_after_200k_other_lines_is_read_as_without_them(path: Path, noise: str) -> None:
    """200,000 '*' lines (or lines of another program, or blank lines) before real MLC output made the parser stop
    at MAX_LINES before the output began: the file was not recognised.  Lines before the first section that no
    rule reads are skipped, not counted: the same sections, rows and figures as the output alone."""
    from app.runners import mlc_parse as mp

    text = path.read_text()
    alone = parsed(text)
    prefixed = LineParser()
    prefix = NOISE[noise] * 200_000
    for i in range(0, len(prefix), 1 << 16):  # as the importer feeds a file: in pieces
        prefixed.feed(prefix[i:i + (1 << 16)])
    prefixed.feed(text)
    prefixed.close()
    assert prefixed.read < mp.MAX_LINES and not prefixed.full
    assert prefixed.lines == 200_000 + alone.lines
    assert [(s.kind, s.title, s.rows, s.values, s.matrix) for s in prefixed.sections] == \
        [(s.kind, s.title, s.rows, s.values, s.matrix) for s in alone.sections]
    assert [(f.kind, f.key, f.value) for f in prefixed.figures] == [(f.kind, f.key, f.value) for f in alone.figures]
    assert alone.sections and all(w in prefixed.warnings for w in alone.warnings)
