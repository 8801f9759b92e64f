"""A fleet host's per-second histograms from the status dumps its agent sends (app.fleet.hosthist): the difference
of consecutive entries, the point's result its last entry, and every entry checked as the hostile input it may be
(a host is another machine): sizes, counts, bucket names, NaN, huge values, escape sequences, too many dumps."""

from __future__ import annotations

import json
import math
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from app.fleet.hosthist import (
    SPARE_DUMPS,
    ClientStream,
    entry_problem,
    final_entries,
    host_entries,
    host_hist_lines,
)
from app.fleet.runner import host_entry
from app.model.tails import MAX_BINS, MAX_COUNT
from app.runners.fio_parse import split_documents
from app.stats.latmap import decode, interval_of, intervals_of, merge_hosts, sample_hists
from tests.helpers.typed import as_number

SOCK = "/tmp/a/agent.sock"


def _entry(runtime_ms: int, bins: dict[int, int], host: str = SOCK, jobname: str = "j") -> dict[str, Any]:
    n = sum(bins.values())
    return {"jobname": jobname, "hostname": host, "port": 8765, "job_runtime": runtime_ms,
            "read": {"total_ios": n, "io_bytes": 4096 * n, "runtime": runtime_ms,
                     "lat_ns": {"N": n, "mean": 1000.0, "bins": {str(k): v for k, v in bins.items()}}}}


def _decoded(line: dict[str, object]) -> dict[int, int]:
    hists = sample_hists(line)
    assert hists is not None
    return dict(hists["read"])


def test_each_second_is_the_difference_of_two_of_the_host_s_dumps_and_its_result_the_last() -> None:
    dumps = [_entry(1000, {1000: 5}), _entry(2000, {1000: 9, 5000: 1}), _entry(2100, {1000: 10, 5000: 1})]
    other = _entry(2100, {7000: 3}, host="/tmp/b/agent.sock")
    doc = {"client_stats": [dumps[0], other | {"job_runtime": 1000}, {"jobname": "All clients", "hostname": SOCK},
                            dumps[1], dumps[2], other]}
    assert host_entries(doc, (SOCK, None)) == dumps
    assert host_entry(doc, (SOCK, None)) is dumps[2]  # the point's result, not its first second
    lines, why = host_hist_lines(dumps, 3)
    assert why == ""
    # the result 0.1 s after the last dump joins that second: alone it would take another host's from its column
    assert [(ln["t"], ln["interval_s"]) for ln in lines] == [(1.0, 1.0), (2.1, 1.1)]
    assert [_decoded(ln) for ln in lines] == [{1000: 5}, {1000: 5, 5000: 1}]
    # the kept document: each host's result only, and no "All clients" (fio summed the hosts' first dumps)
    assert final_entries(doc) == [dumps[2], other]
    single = {"client_stats": [dumps[2], other, {"jobname": "All clients", "hostname": SOCK}]}
    assert final_entries(single) == single["client_stats"]  # an agent without dumps: fio's sum is the point's


def test_the_seconds_before_fio_s_counters_restart_are_its_ramp() -> None:
    dumps = [_entry(1000, {1000: 50}), _entry(2000, {1000: 100}), _entry(900, {2000: 30}), _entry(1900, {2000: 60})]
    lines, why = host_hist_lines(dumps, 4)
    assert why == ""
    assert [ln.get("ramp", False) for ln in lines] == [True, True, False, False]
    assert [_decoded(ln) for ln in lines[2:]] == [{2000: 30}, {2000: 30}]
    assert [interval_of(ln) is None for ln in lines] == [True, True, False, False]


def test_an_agent_without_status_dumps_has_no_seconds() -> None:
    lines, why = host_hist_lines([_entry(2000, {1000: 9})], 3)
    assert lines == [] and "no status dumps" in why


def test_a_host_sending_more_dumps_than_the_point_s_seconds_keeps_none() -> None:
    dumps = [_entry(10 * i, {1000: i}) for i in range(1, 3 + SPARE_DUMPS + 2)]
    lines, why = host_hist_lines(dumps, 3)
    assert lines == [] and f"it sent {len(dumps)} status dumps" in why


HOSTILE: list[tuple[Any, str]] = [
    ({"read": "x"}, "'read' is not an object"),
    ({"read": {"lat_ns": []}}, "'read.lat_ns' is not an object"),
    ({"read": {"lat_ns": {"bins": [1, 2]}}}, "'read.lat_ns.bins' is not an object"),
    ({"read": {"total_ios": -1}}, "'read.total_ios' is -1"),
    ({"read": {"total_ios": 2 ** 64}}, "'read.total_ios' is 18446744073709551616"),
    ({"read": {"runtime": 1.5}}, "'read.runtime' is 1.5"),
    ({"read": {"io_bytes": True}}, "'read.io_bytes' is true"),
    ({"read": {"lat_ns": {"N": "7"}}}, "'read.lat_ns.N' is '7'"),
    ({"read": {"lat_ns": {"mean": math.nan}}}, "'read.lat_ns.mean' is nan"),
    ({"read": {"lat_ns": {"mean": math.inf}}}, "'read.lat_ns.mean' is inf"),
    ({"read": {"lat_ns": {"bins": {"1e3": 1}}}}, "a bucket named '1e3'"),
    ({"read": {"lat_ns": {"bins": {"-5": 1}}}}, "a bucket named '-5'"),
    ({"read": {"lat_ns": {"bins": {"99999999999999999999": 1}}}}, "a bucket named '99999999999999999999'"),
    ({"read": {"lat_ns": {"bins": {"\x1b[2J": 1}}}}, "a bucket named '\\x1b[2J'"),
    ({"read": {"lat_ns": {"bins": {"1000": -3}}}}, "'read.lat_ns.bins.1000' is -3"),
    ({"read": {"lat_ns": {"bins": {"1000": math.nan}}}}, "'read.lat_ns.bins.1000' is nan"),
    ({"read": {"lat_ns": {"bins": {"1000": 1e30}}}}, "'read.lat_ns.bins.1000' is 1e+30"),
    ({"read": {"lat_ns": {"bins": {str(i): 1 for i in range(MAX_BINS + 1)}}}}, f"more than {MAX_BINS}"),
]


def test_hostile_entries_keep_no_seconds_and_say_which_figure_in_one_plain_sentence() -> None:
    for bad, words in HOSTILE:
        assert words in entry_problem(bad), (bad, entry_problem(bad))
        lines, why = host_hist_lines([_entry(1000, {1000: 5}), bad], 3)
        assert lines == [] and why.startswith("its status dump 2: ") and words in why, why
        assert "\x1b" not in why and "\n" not in why and len(why) < 300


JSON = st.recursive(st.none() | st.booleans() | st.integers(-2 ** 70, 2 ** 70) | st.floats() | st.text(max_size=8),
                    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4),
                    max_leaves=12)
BINS = st.dictionaries(st.one_of(st.integers(0, 2 ** 64).map(str), st.text(max_size=5)),
                       st.one_of(st.integers(-5, 2 ** 64), st.floats(), st.booleans(), st.text(max_size=3)),
                       max_size=12)
PART = st.fixed_dictionaries({}, optional={
    "total_ios": JSON | st.integers(0, 10 ** 6), "io_bytes": JSON | st.integers(0, 10 ** 9),
    "runtime": st.integers(-10, 5000) | JSON,
    "lat_ns": st.fixed_dictionaries({}, optional={"N": st.integers(0, 10 ** 6) | JSON, "mean": st.floats() | JSON,
                                                  "bins": BINS | JSON}) | JSON})
ENTRY = st.fixed_dictionaries({}, optional={"read": PART | JSON, "write": PART | JSON, "trim": PART,
                                            "job_runtime": JSON})


@settings(max_examples=300, deadline=None)
@given(st.lists(ENTRY, max_size=6), st.integers(0, 8))
def test_whatever_a_host_sends_the_seconds_kept_are_sound_histograms_or_none_and_one_sentence(
        entries: list[dict[str, Any]], max_dumps: int) -> None:
    lines, why = host_hist_lines(entries, max_dumps)
    assert (lines == []) or why == ""
    assert len(lines) <= len(entries) <= max_dumps + SPARE_DUMPS or lines == []
    assert "\x1b" not in why and "\n" not in why and len(why) < 400
    for ln in lines:
        assert set(ln) <= {"t", "interval_s", "ramp", "read", "write", "trim"}
        assert isinstance(ln["t"], float) and isinstance(ln["interval_s"], float) and ln["interval_s"] > 0
        hists = sample_hists(ln)
        assert hists is not None  # what the report reads back is what was written
        for d in ("read", "write", "trim"):
            if d in ln:
                h = decode(ln[d])
                assert h is not None and all(0 <= v <= MAX_COUNT and 0 < c <= MAX_COUNT for v, c in h)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 2 ** 63), st.dictionaries(st.integers(0, 2 ** 63), st.integers(0, 2 ** 63),
                                                                   max_size=6)), min_size=2, max_size=8))
def test_well_formed_dumps_whose_figures_jump_about_keep_only_sound_seconds(
        dumps: list[tuple[int, dict[int, int]]]) -> None:
    """Dumps of the right shape whose counters and runtime go back, leap to 2^63 or stand still."""
    entries = [_entry(ms, bins) for ms, bins in dumps]
    lines, why = host_hist_lines(entries, len(entries))
    assert why == "" or lines == []
    for ln in lines:
        assert sample_hists(ln) is not None and as_number(ln["interval_s"]) > 0
        assert all(0 < c <= MAX_COUNT for c in _decoded(ln).values())


def test_two_seconds_of_one_host_are_never_one_column() -> None:
    """Intervals of one host ending within half a second of each other stay two columns, and another host's second
    joins the first of them."""
    def ivs(*ends: tuple[float, float, int]) -> list[Any]:
        return intervals_of([{"t": t, "interval_s": dt, "read": [1000, n]} for t, dt, n in ends])

    a = ivs((1.0, 1.0, 5), (2.0, 1.0, 4), (2.1, 0.1, 1))
    b = ivs((1.01, 1.0, 7), (2.05, 1.0, 9))
    both = merge_hosts([a, b])
    assert [round(iv.t, 3) for iv in both] == [1.0, 2.0, 2.1]
    assert [iv.ios for iv in both] == [12, 13, 1]


def _fio_layout(doc: dict[str, Any]) -> bytes:
    """A document laid out as fio's client prints it (two-space indent, " : " between a key and its value), after
    its noise lines."""
    return b"<vm> j: (g=0): rw=randread\n<vm> Starting 1 process\n\n" + json.dumps(
        doc, indent=2, separators=(",", " : ")).encode() + b"\n"


def test_the_client_s_output_is_read_as_it_comes_each_host_s_dumps_differenced_and_only_its_result_kept() -> None:
    a = [_entry(1000, {1000: 5}), _entry(2000, {1000: 9, 5000: 1}), _entry(2100, {1000: 10, 5000: 1})]
    b = [_entry(990, {3000: 2}, host="/tmp/b/agent.sock"), _entry(1990, {3000: 7}, host="/tmp/b/agent.sock"),
         _entry(2050, {3000: 8}, host="/tmp/b/agent.sock")]
    stats = [a[0], b[0], {"jobname": "All clients", "hostname": "/tmp/b/agent.sock", "port": 8765}, a[1], b[1],
             a[2], b[2]]
    doc = {"fio version": "fio-3.33", "client_stats": stats, "disk_util": [{"name": "vda"}]}
    text = _fio_layout(doc)
    for size in (1, 7, 4096, len(text)):
        stream = ClientStream(1 << 20, 100)
        for i in range(0, len(text), size):
            stream.feed(text[i:i + size])
        docs, noise = split_documents(stream.text())
        assert noise[:1] == ["<vm> j: (g=0): rw=randread"]
        assert docs == [{**doc, "client_stats": [a[2], b[2]]}]  # the results; fio's sum of the first dumps gone
        for host, entries in ((SOCK, a), ("/tmp/b/agent.sock", b)):
            seconds = stream.host((host, None))
            assert seconds is not None and seconds.dumps == 3
            lines, why = seconds.result(3)
            assert why == "" and [json.loads(ln) for ln in lines] == host_hist_lines(entries, 3)[0]


def test_output_not_laid_out_as_fio_s_client_is_kept_whole_up_to_the_cap() -> None:
    doc = {"client_stats": [_entry(1000, {1000: 5})]}
    compact = json.dumps(doc).encode() + b"\n"
    stream = ClientStream(1 << 20, 100)
    stream.feed(compact)
    assert split_documents(stream.text())[0] == [doc] and stream.seconds == {}
    small = ClientStream(10, 100)
    small.feed(b"0123456789abcdef\n" * 3 + b"tail without its end")
    assert len(small.text()) <= 10 + len("tail without its end")


def test_a_flood_of_dumps_is_counted_not_held() -> None:
    stream = ClientStream(1 << 20, 5)
    stream.feed(_fio_layout({"client_stats": [_entry(10 * i, {1000: i}) for i in range(1, 40)]}))
    seconds = stream.host((SOCK, None))
    assert seconds is not None and seconds.dumps == 39 and seconds.lines == []
    assert seconds.result(3)[0] == [] and "it sent 39 status dumps" in seconds.result(3)[1]
    assert split_documents(stream.text())[0][0]["client_stats"] == [_entry(390, {1000: 39})]


def test_a_dump_in_fio_s_ramp_time_is_no_second_and_the_next_counts_from_the_ramp_s_end() -> None:
    """Two hosts of a real run (ramp_time=1, randrw QD4): each first dump is in the ramp (I/Os counted, no latency
    recorded: N 0), the next counts from zero again with a runtime of 999 ms.  One host had done fewer I/Os in its
    ramp dump than in the next second, the other more: both must give the same seconds, at the same times."""
    def ramp(ms: int, ios: int) -> dict[str, Any]:
        e = _entry(ms, {})
        e["read"].update(total_ios=ios, io_bytes=4096 * ios)
        return e

    for first in (5800, 12243):  # below, above the next second's 6332 I/Os
        lines, why = host_hist_lines([ramp(887, first), _entry(999, {20_000: 6332}),
                                      _entry(1999, {20_000: 13762})], 3)
        assert why == ""
        assert [(ln["t"], ln["interval_s"]) for ln in lines] == [(1.886, 0.999), (2.886, 1.0)]
        assert [_decoded(ln) for ln in lines] == [{20_000: 6332}, {20_000: 7430}]
