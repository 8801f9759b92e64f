"""A fleet's tail (docs/fleet.md, "Fleet tail percentiles"): the fleet's p99 … p99.999 come from the hosts' merged
json+ histograms, never from a mean or median of the hosts' percentiles; a host without a histogram leaves the
fleet figure uncomputed, said so; the host with the slowest tail is named against the fleet's merged figure.
The histograms are made by hand so that the merged percentile differs from both the median and the mean of the
hosts' percentiles."""

from __future__ import annotations

import json
import statistics
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from app.model.tails import merge, percentile
from app.report import render_report
from app.report.compute.fleet import fleet_points, fleet_tail, slowest_tail
from app.report.data.model import load
from app.report.fleet_render import MAX_NAMED_HOSTS, tail_section
from tests.helpers.fleet_util import host_name, make_fleet_dir, read_lines

# three hosts of 10,000 I/Os (ns, count): host 0 has a slow tail of 20 I/Os at 2 ms
HISTS = [[[300_000, 9_980], [2_000_000, 20]], [[200_000, 10_000]], [[100_000, 10_000]]]
# per host p99: 300, 200, 100 µs (median and mean 200 µs); p99.9: 2000, 200, 100 µs (median 200, mean 767)
# merged (30,000 I/Os): p99 and p99.9 are 300 µs: the 20 slow I/Os are 0.07 % of the fleet's


def _with_hists(d: Path, hist_of: dict[str, object]) -> Path:
    """The fleet directory's lines with ``metrics.lat_hist`` set per host (a host missing from the map: none)."""
    lines = read_lines(d)
    for x in lines:
        x["metrics"].pop("lat_hist", None)
        if x["host"] in hist_of:
            x["metrics"]["lat_hist"] = hist_of[x["host"]]
    (d / "results.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    return d


def _fleet(tmp_path: Path, hists: list, points: int = 1) -> Path:
    d = make_fleet_dir(tmp_path / "fleet", hosts=len(hists), points=points, factor=lambda h, i: 1.0)
    return _with_hists(d, {host_name(i): h for i, h in enumerate(hists) if h is not None})


def test_fleet_percentiles_are_the_merged_histograms_not_a_median_or_mean_of_the_hosts(tmp_path: Path) -> None:
    (fp,) = fleet_points(load(_fleet(tmp_path, HISTS)))
    tail = fleet_tail(fp)
    assert tail.computed and tail.ios == 30_000
    assert tail.values == {"p99": 300_000, "p99_9": 300_000, "p99_99": None, "p99_999": None}
    for key, pct in (("p99", 99.0), ("p99_9", 99.9)):
        per_host = [percentile([(v, c) for v, c in h], pct) for h in HISTS]
        assert None not in per_host
        assert tail.values[key] != statistics.median(p or 0 for p in per_host)
        assert tail.values[key] != statistics.mean(p or 0 for p in per_host)
    text = "\n".join(tail_section([fp]))
    row = next(ln for ln in text.splitlines() if ln.startswith("| ") and "30,000" in ln)
    cells = [c.strip() for c in row.strip("|").split("|")]
    assert cells[1:6] == ["30,000", "300.00", "300.00", "—", "—"]
    assert "p99.99 100,000" in text  # the footnote says what an unsupported percentile needs
    assert "never a mean or median of the hosts' percentiles" in text


def test_the_slowest_host_is_named_against_the_fleet_s_merged_figure(tmp_path: Path) -> None:
    (fp,) = fleet_points(load(_fleet(tmp_path, HISTS)))
    slow = slowest_tail(fp)
    assert slow is not None
    assert (slow.host, slow.label, slow.value, slow.fleet) == (host_name(0), "p99.9", 2_000_000, 300_000)
    text = "\n".join(tail_section([fp]))
    assert f"{host_name(0)}: p99.9 2000.00 µs vs fleet 300.00 µs" in text
    assert f"Slowest tail: {host_name(0)} at 1 point." in text


def test_the_slowest_host_falls_back_to_p99_when_a_host_is_too_short_for_p99_9(tmp_path: Path) -> None:
    short = [[50_000, 4_000], [900_000, 100]]  # 4,100 I/Os: p99 supported (≥ 1,000), p99.9 not (< 10,000)
    (fp,) = fleet_points(load(_fleet(tmp_path, [*HISTS, short])))
    slow = slowest_tail(fp)
    assert slow is not None and (slow.host, slow.label, slow.value) == (host_name(3), "p99", 900_000)
    assert slow.fleet == fleet_tail(fp).values["p99"]


def test_a_host_without_a_histogram_leaves_the_fleet_figure_uncomputed_and_says_why(tmp_path: Path) -> None:
    d = _fleet(tmp_path, HISTS, points=2)
    lines = read_lines(d)
    for x in lines:
        if x["index"] == 1 and x["host"] == host_name(1):
            del x["metrics"]["lat_hist"]
    (d / "results.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    whole, part = fleet_points(load(d))
    assert fleet_tail(whole).computed
    tail = fleet_tail(part)
    assert not tail.computed and tail.missing == (host_name(1),) and tail.values == {}
    assert slowest_tail(part) is None
    text = "\n".join(tail_section([whole, part]))
    rows = [ln for ln in text.splitlines() if ln.startswith("| randread")]
    assert "30,000" in rows[0] and "not computed" in rows[1] and "300.00" not in rows[1]
    assert f"Not computed at 1 point: {host_name(1)} has no latency histogram there" in text


def test_a_run_without_any_histogram_gets_one_sentence_and_no_table(tmp_path: Path) -> None:
    text = "\n".join(tail_section(fleet_points(load(_fleet(tmp_path, [None, None], points=2)))))
    assert "| Point" not in text
    assert f"Not computed at 2 points: {host_name(0)}, {host_name(1)} have no latency histogram" in text


def test_a_malformed_histogram_reads_as_none(tmp_path: Path) -> None:
    (fp,) = fleet_points(load(_fleet(tmp_path, [HISTS[0], [[5, 0]], HISTS[2]])))  # a zero count: not fio's
    assert fleet_tail(fp).missing == (host_name(1),)


def test_many_hosts_are_named_in_bounded_sentences(tmp_path: Path) -> None:
    n = MAX_NAMED_HOSTS + 4
    d = make_fleet_dir(tmp_path / "many", hosts=n, points=3, factor=lambda h, i: 1.0)
    # point by point a different host is slowest; at the last point every host but one lacks a histogram
    lines = read_lines(d)
    for x in lines:
        k = int(x["host"].rsplit(":", 1)[1]) - 18801
        slow = 1_000_000 + 1000 * ((k + 5 * x["index"]) % n)
        x["metrics"]["lat_hist"] = [[100_000, 19_990], [slow, 10]]
        if x["index"] == 2 and k > 0:
            del x["metrics"]["lat_hist"]
    (d / "results.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    text = "\n".join(tail_section(fleet_points(load(d))))
    missing = next(ln for ln in text.splitlines() if ln.startswith("Not computed"))
    assert missing.startswith("Not computed at 1 point: ") and f" and {n - 1 - MAX_NAMED_HOSTS} more have " in missing
    assert sum(host_name(k) in missing for k in range(n)) == MAX_NAMED_HOSTS
    assert text.count("Slowest tail:") == 1 and len(text) < 5000


def test_the_report_of_a_fleet_run_has_the_tail_table(tmp_path: Path) -> None:
    md = render_report(_fleet(tmp_path, HISTS, points=2)).read_text(encoding="utf-8")
    section = md.split("### Fleet tail percentiles", 1)[1].split("\n## ", 1)[0]
    assert section.count("| 30,000 ") == 2
    assert "the fleet's percentiles are read from the hosts' merged histograms" in md  # said at the fleet table


@settings(max_examples=60, deadline=None)
@given(st.lists(st.dictionaries(st.integers(1, 40).map(lambda k: k * 1000), st.integers(1, 500), min_size=1,
                                max_size=6), min_size=2, max_size=5),
       st.sampled_from([50.0, 99.0, 99.9]))
def test_the_merged_percentile_lies_within_the_hosts(hosts: list[dict[int, int]], pct: float) -> None:
    hists = [sorted(h.items()) for h in hosts]
    per_host = [percentile(h, pct) or 0 for h in hists]
    assert min(per_host) <= (percentile(merge(hists), pct) or 0) <= max(per_host)
