"""The report of a fleet run (docs/report.md, "Fleet runs"): the median / MAD / outlier maths, the fleet table
against the results lines, the report's sections, figure and results.csv, and what is read from an untrusted
fleet directory.  Synthetic fleet directories (tests/helpers/fleet_util.py) are built from the real fio lines of the
golden run; a non-fleet run's report is the golden test's business (tests/integration/test_report.py)."""

from __future__ import annotations

import csv
import json
import re
from pathlib import Path

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from app.core.errors import UsageError
from app.core.units import format_count
from app.model.points import Kind
from app.report import render_report
from app.report.compute.fleet import MEASURES, NOISE_FLOOR, deviation_pct, fleet_points, mad, median, outliers, spread
from app.report.data.model import load
from app.report.fleet_render import fleet_table, outlier_section
from app.report.render import us
from app.stats.summary import point_label
from tests.helpers.fleet_util import GOLDEN_RUN, host_name, make_fleet_dir, read_lines

FAST = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _table_rows(md: str) -> list[list[str]]:
    """The fleet table's rows, the Point cell carried down from the first row of each point."""
    rows, point = [], ""
    for line in md.splitlines():
        if not line.startswith("|") or re.match(r"^\|[-:| ]+\|$", line):
            continue
        cells = [c.strip() for c in line.strip("|").split("|")]
        if cells[0] == "Point":
            continue
        point = cells[0] or point
        rows.append([point] + cells[1:])
    return rows


# --- the maths ---------------------------------------------------------------------------------------------


def test_median_and_mad() -> None:
    assert median([3.0, 1.0, 2.0]) == 2.0
    assert median([1.0, 2.0, 3.0, 10.0]) == 2.5
    assert mad([1.0, 2.0, 3.0, 4.0, 100.0]) == 1.0  # median 3, |deviations| 2 1 0 1 97
    assert deviation_pct(110.0, 100.0) == pytest.approx(10.0)
    assert deviation_pct(5.0, 0.0) is None


def test_outlier_rule() -> None:
    values = {"a": 100.0, "b": 110.0, "c": 90.0, "d": 105.0, "e": 30.0}
    found = outliers(values)
    assert set(found) == {"e"}
    assert found["e"] == pytest.approx((30.0 - 100.0) / 10.0)  # median 100, MAD 10 → 7 MADs below
    # exactly 3 MADs is not beyond 3 MADs
    assert outliers({"a": 0.0, "b": 1.0, "c": 2.0, "d": 3.0, "e": 5.0}) == {}
    assert set(outliers({"a": 0.0, "b": 1.0, "c": 2.0, "d": 3.0, "e": 5.5})) == {"e"}


def test_the_noise_floor_and_one_and_two_hosts() -> None:
    assert outliers({"a": 7.0, "b": 7.0, "c": 7.0, "d": 7.0}) == {}  # all equal
    assert outliers({"a": 0.0, "b": 0.0, "c": 0.0}) == {}
    # one slow host among identical ones (MAD 0): the spread is 2 % of the median, so it is an outlier
    assert outliers({"a": 7.0, "b": 7.0, "c": 7.0, "d": 1.0}) == {"d": pytest.approx((1.0 - 7.0) / 0.14)}
    # hosts agreeing to 0.1 %: one 2 % off is within 3 x 2 % of the median, not called out; 7 % off is
    assert outliers({"a": 1000.0, "b": 1001.0, "c": 999.0, "d": 1020.0}) == {}
    assert set(outliers({"a": 1000.0, "b": 1001.0, "c": 999.0, "d": 1070.0})) == {"d"}
    assert outliers({"a": 1.0, "b": 1000.0}) == {}  # two hosts: each exactly 1 MAD from their median
    assert outliers({"a": 1.0}) == {}


positive = st.floats(min_value=1e-3, max_value=1e9, allow_nan=False, allow_infinity=False)
host_values = st.dictionaries(st.text("abcdefgh", min_size=1, max_size=3), positive, min_size=1, max_size=24)


@FAST
@given(host_values, st.integers(min_value=-20, max_value=20))
def test_scaling_every_host_by_a_power_of_two_changes_no_verdict(values: dict[str, float], e: int) -> None:
    """×2^e is exact in floating point: the verdicts and the distances in MADs are the very same."""
    k = 2.0 ** e
    assert outliers({h: v * k for h, v in values.items()}) == outliers(values)


@FAST
@given(host_values, st.floats(min_value=1e-3, max_value=1e3))
def test_scaling_every_host_equally_never_creates_or_removes_an_outlier(values: dict[str, float], k: float) -> None:
    """Any factor: the rule is scale-free (values a rounding away from exactly 3 MADs aside)."""
    if len(values) >= 3:
        m = median(list(values.values()))
        width = spread(list(values.values()), m)
        assume(width == 0 or all(abs(abs(v - m) / width - 3.0) > 1e-6 for v in values.values()))
    assert set(outliers({h: v * k for h, v in values.items()})) == set(outliers(values))


@FAST
@given(st.lists(st.floats(min_value=0, max_value=1e6), min_size=2, max_size=20, unique=True),
       st.floats(min_value=1, max_value=1e6), st.booleans())
def test_a_host_far_out_is_always_an_outlier(others: list[float], margin: float, below: bool) -> None:
    """Distinct other hosts (so MAD > 0) and one host more than 3 × their range beyond them: an outlier, and
    the only one that far."""
    # beyond 3 x the spread the rule measures in: at most the others' range (they are the majority), at least
    # 2 % of the median (which lies within the others)
    width = max(max(others) - min(others), NOISE_FLOOR * max(abs(v) for v in others))
    far = (min(others) - 3 * width - margin) if below else (max(others) + 3 * width + margin)
    values = {f"h{i}": v for i, v in enumerate(others)} | {"far": far}
    found = outliers(values)
    assert "far" in found
    assert (found["far"] < 0) == below


@FAST
@given(host_values)
def test_the_median_host_is_never_an_outlier(values: dict[str, float]) -> None:
    m = median(list(values.values()))
    assert not any(values[h] == m for h in outliers(values))


# --- the fleet table against the lines ---------------------------------------------------------------------------


def test_fleet_table_holds_the_lines_figures_and_the_total_their_sum(tmp_path: Path) -> None:
    d = make_fleet_dir(tmp_path / "fleet", hosts=4, points=3, factor=lambda h, i: 1 + 0.1 * h + 0.05 * i)
    lines = read_lines(d)
    data = load(d)
    assert data.fleet is not None and len(data.storage) == 12  # every host's line, not one per index
    points = fleet_points(data)
    rows = _table_rows(fleet_table(points, data.fleet.names, set()))
    assert len(rows) == 3 * (4 + 2)  # per point: 4 hosts, the median and the total
    by_key = {(r[0], r[1]): r for r in rows}
    for fp in points:
        mine = [x for x in lines if x["index"] == fp.index]
        label = point_label(Kind.STORAGE, fp.point)
        assert len(mine) == 4
        for x in mine:
            m = x["metrics"]
            row = by_key[(label, x["host"])]
            assert row[2] == format_count(m["iops"])
            assert row[4] == f"{m['bw_bytes'] / 1e6:.1f}"
            assert row[5] == us(m["lat_ns"]["mean"])
            assert row[7] == us(m["lat_ns"]["p99"])
        total = by_key[(label, "fleet total (4 hosts)")]
        assert fp.total_iops == pytest.approx(sum(x["metrics"]["iops"] for x in mine), rel=1e-12)
        assert fp.total_bw == pytest.approx(sum(x["metrics"]["bw_bytes"] for x in mine), rel=1e-12)
        assert total[2] == format_count(sum(x["metrics"]["iops"] for x in mine))
        assert total[4] == f"{sum(x['metrics']['bw_bytes'] for x in mine) / 1e6:.1f}"
        assert total[5] == total[7] == "—"  # latencies are not summed
        iops = sorted(x["metrics"]["iops"] for x in mine)
        assert by_key[(label, "fleet median")][2] == format_count((iops[1] + iops[2]) / 2)


def test_deviation_column_is_percent_of_the_median(tmp_path: Path) -> None:
    d = make_fleet_dir(tmp_path / "fleet", hosts=3, points=1, factor=lambda h, i: (1.0, 1.1, 1.2)[h])
    data = load(d)
    (fp,) = fleet_points(data)
    iops = MEASURES[0]
    assert fp.deviation(host_name(0), iops) == pytest.approx(100 * (1.0 / 1.1 - 1))
    assert fp.deviation(host_name(1), iops) == pytest.approx(0.0)
    assert fp.deviation(host_name(2), iops) == pytest.approx(100 * (1.2 / 1.1 - 1))
    assert fp.outliers == []


# --- the report ----------------------------------------------------------------------------------------------------


def _slow_host(h: int, i: int) -> float:
    return 0.4 if (h == 2 and i == 1) else 1.0 + 0.02 * ((h + i) % 3)


@pytest.fixture(scope="module")
def fleet_report(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    d = make_fleet_dir(tmp_path_factory.mktemp("fleet") / "run", hosts=4, points=3, factor=_slow_host)
    return d, render_report(d).read_text(encoding="utf-8")


def test_report_has_host_sections_fleet_table_outlier_and_figure(fleet_report: tuple[Path, str]) -> None:
    d, md = fleet_report
    assert md.startswith("# Performance report: fleet-test (storage, fleet of 4 hosts)\n")
    for i in range(4):
        assert f"### {host_name(i)} — target /dev/loop{i}\n" in md
    headings = [ln for ln in md.splitlines() if ln.startswith("## ")]
    assert headings == ["## Environment", "## Run", "## Fleet", "## Storage results by host", "## Fleet comparison",
                        "## Latency distribution"]
    assert re.search(r"\| Points +\| 12 host-points measured of 12 planned \(3 points × 4 hosts\) +\|", md)
    assert "| Point " in md and "fleet total (4 hosts)" in md and "fleet median" in md
    outlier = [ln for ln in md.splitlines() if ln.startswith(f"- {host_name(2)} at ")]
    assert len(outlier) == 1  # one sentence for the one host-point
    slow = [x for x in read_lines(d) if x["host"] == host_name(2) and x["index"] == 1][0]["metrics"]
    assert f"IOPS {format_count(slow['iops'])} against a fleet median of " in outlier[0]
    assert "below" in outlier[0] and "MADs out" in outlier[0]
    assert "**-" in md  # the outlier's deviation is bold in the table
    figures = re.findall(r"!\[[^\]]*\]\(([^)]+)\)", md)
    assert figures == ["plots/fleet-iops.svg"]
    assert (d / "plots" / "fleet-iops.svg").stat().st_size > 1000
    assert "Little's law" not in md.split("## Fleet comparison")[0]


def test_results_csv_has_a_host_column_and_a_row_per_point_and_host(fleet_report: tuple[Path, str]) -> None:
    d, _ = fleet_report
    with (d / "results.csv").open() as f:
        rows = list(csv.DictReader(f))
    header = (d / "results.csv").read_text().splitlines()[0].split(",")
    assert header[:3] == ["kind", "index", "host"]
    assert [(r["index"], r["host"]) for r in rows] == [(str(i), host_name(h)) for i in range(3) for h in range(4)]
    lines = {(x["index"], x["host"]): x for x in read_lines(d)}
    for r in rows:
        assert float(r["iops"]) == pytest.approx(lines[(int(r["index"]), r["host"])]["metrics"]["iops"], rel=1e-6)


def test_a_non_fleet_results_csv_has_no_host_column(tmp_path: Path) -> None:
    import shutil

    d = tmp_path / "golden"
    shutil.copytree(GOLDEN_RUN, d)
    from app.report.render import results_csv

    data = load(d)
    assert data.fleet is None
    assert "host" not in results_csv(data).splitlines()[0].split(",")


def test_two_hosts_are_compared_but_never_outliers(tmp_path: Path) -> None:
    d = make_fleet_dir(tmp_path / "two", hosts=2, points=2, factor=lambda h, i: 1.0 if h == 0 else 0.2)
    data = load(d)
    points = fleet_points(data)
    assert all(fp.outliers == [] for fp in points)
    text = "\n".join(outlier_section(points, 2))
    assert "With 2 hosts no host can be an outlier" in text
    assert fleet_points(data)[0].deviation(host_name(1), MEASURES[0]) == pytest.approx(100 * (0.2 / 0.6 - 1))


def test_one_host_fleet_has_nothing_to_compare_and_no_figure(tmp_path: Path) -> None:
    d = make_fleet_dir(tmp_path / "one", hosts=1, points=2)
    md = render_report(d).read_text()
    assert "A fleet of one host has nothing to compare" in md
    assert "![" not in md and not list((d / "plots").glob("*.svg"))


def test_no_outlier_sentence_when_every_host_agrees(tmp_path: Path) -> None:
    d = make_fleet_dir(tmp_path / "same", hosts=5, points=2, factor=lambda h, i: 1.0)
    points = fleet_points(load(d))
    assert "No host lies more than 3 MADs" in "\n".join(outlier_section(points, 5))


def test_a_failed_host_point_shows_as_failed(tmp_path: Path) -> None:
    d = make_fleet_dir(tmp_path / "failed", hosts=3, points=2)
    lines = [x for x in read_lines(d) if not (x["index"] == 1 and x["host"] == host_name(1))]
    (d / "results.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    meta = json.loads((d / "run.json").read_text())
    meta["failures"] = [{"index": 1, "point": lines[0]["point"], "error": "host down", "host": host_name(1)}]
    (d / "run.json").write_text(json.dumps(meta))
    data = load(d)
    points = fleet_points(data)
    rows = _table_rows(fleet_table(points, data.fleet.names if data.fleet else [], {(1, host_name(1))}))
    assert [r for r in rows if r[1] == host_name(1) and r[2] == "failed"]
    assert any("fleet total (2 hosts)" == r[1] for r in rows)
    md = render_report(d).read_text()
    assert re.search(rf"\| {re.escape(host_name(1))} +\| /dev/loop1 +\| +1 \| +1 \|", md)


# --- reading an untrusted fleet directory -----------------------------------------------------------------------


def test_lines_of_a_host_not_in_the_fleet_and_repeats_are_counted(tmp_path: Path) -> None:
    d = make_fleet_dir(tmp_path / "odd", hosts=3, points=2)
    lines = read_lines(d)
    stranger = dict(lines[0], host="tcp://10.9.9.9:1")
    again = dict(lines[1])
    (d / "results.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines + [stranger, again]) + "{torn")
    data = load(d)
    assert len(data.storage) == 6
    warnings = " ".join(data.warnings())
    assert "1 line of results.jsonl names no host of run.json's fleet and was left out." in warnings
    assert "1 point was measured more than once" in warnings
    assert "1 line of results.jsonl could not be read" in warnings


@pytest.mark.parametrize("fleet, key", [
    ([], "fleet"),
    ({"hosts": []}, "fleet"),
    ({"hosts": ["tcp://a:1"]}, "fleet.hosts[0]"),
    ({"hosts": [{"host": "tcp://a:1 | x"}]}, "fleet.hosts[0].host"),
    ({"hosts": [{"host": "tcp://a:1", "target": 3}]}, "fleet.hosts[0].target"),
    ({"hosts": [{"host": "tcp://a:1"}, {"host": "tcp://a:1"}]}, "fleet.hosts[1].host"),
])
def test_an_ill_typed_fleet_key_is_one_sentence_naming_it(tmp_path: Path, fleet: object, key: str) -> None:
    d = make_fleet_dir(tmp_path / "bad", hosts=2, points=1)
    meta = json.loads((d / "run.json").read_text())
    meta["fleet"] = fleet
    (d / "run.json").write_text(json.dumps(meta))
    with pytest.raises(UsageError, match=re.escape(f"key '{key}' has invalid value")):
        load(d)


def test_rendering_a_fleet_run_twice_gives_the_same_bytes(fleet_report: tuple[Path, str]) -> None:
    d, md = fleet_report
    svg = (d / "plots" / "fleet-iops.svg").read_bytes()
    assert render_report(d).read_text(encoding="utf-8") == md
    assert (d / "plots" / "fleet-iops.svg").read_bytes() == svg
