"""`profiler-tui compare DIR --host A --host B`: two hosts of one fleet run side by side (docs/report.md,
"compare"), and the refusals — one sentence, exit 2."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from app.cli.compare import compare_hosts, compare_reference, compare_runs, load_reference
from app.core.errors import UsageError
from tests.conftest import run_cli
from tests.helpers.fleet_util import GOLDEN_RUN, host_name, make_fleet_dir, read_lines


def _rows(md: str) -> list[list[str]]:
    return [[c.strip() for c in line.strip("|").split("|")] for line in md.splitlines()
            if line.startswith("|") and not re.match(r"^\|[-:| ]+\|$", line)]


@pytest.fixture()
def fleet(tmp_path: Path) -> Path:
    return make_fleet_dir(tmp_path / "fleet", hosts=3, points=4, factor=lambda h, i: (1.0, 0.5, 1.2)[h])


def test_two_hosts_side_by_side(fleet: Path) -> None:
    a, b = host_name(0), host_name(1)
    md = compare_hosts(str(fleet), [a, b])
    assert md.startswith(f"# {a} (A) vs {b} (B), fleet run fleet\n")
    rows = _rows(md)
    assert rows[0][:5] == ["Workload", "Figure", "A", "B", "B/A"]
    lines = read_lines(fleet)
    iops = [r for r in rows[1:] if r[1] == "IOPS"]
    bw = [r for r in rows[1:] if r[1] == "MB/s"]
    assert len(iops) == len(bw) == 4
    for i_row, b_row, index in zip(iops, bw, range(4)):
        la = next(x for x in lines if x["index"] == index and x["host"] == a)["metrics"]
        lb = next(x for x in lines if x["index"] == index and x["host"] == b)["metrics"]
        assert b_row[2:4] == [f"{la['bw_bytes'] / 1e6:.1f}", f"{lb['bw_bytes'] / 1e6:.1f}"]
        assert i_row[4] == f"{lb['iops'] / la['iops']:.2f}×" == "0.50×"
    assert "Geometric mean of the IOPS ratios over 4 matched points: 0.50×." in md


def test_the_order_of_the_hosts_is_the_order_of_the_sides(fleet: Path) -> None:
    md = compare_hosts(str(fleet), [host_name(2), host_name(0)])
    assert "over 4 matched points: 0.83×." in md  # 1.0 / 1.2


@pytest.mark.parametrize("hosts, fragment", [
    ([host_name(0)], "give exactly two different hosts of the fleet run (got 1)"),
    ([host_name(0), host_name(1), host_name(2)], "(got 3)"),
    ([host_name(0), host_name(0)], "the same host twice"),
    ([host_name(0), "tcp://10.0.0.9:8765"], "--host tcp://10.0.0.9:8765: is not a host of the fleet run"),
])
def test_refusals(fleet: Path, hosts: list[str], fragment: str) -> None:
    with pytest.raises(UsageError, match=re.escape(fragment)):
        compare_hosts(str(fleet), hosts)


def test_a_run_that_is_no_fleet_is_refused() -> None:
    with pytest.raises(UsageError, match="is not a fleet run"):
        compare_hosts(str(GOLDEN_RUN), ["a", "b"])


def test_a_fleet_run_is_not_compared_with_another_run_or_a_sheet(fleet: Path) -> None:
    for call in (lambda: compare_runs(str(fleet), str(GOLDEN_RUN)), lambda: compare_runs(str(GOLDEN_RUN), str(fleet)),
                 lambda: compare_reference(str(fleet), load_reference("intel-d7-p5600"))):
        with pytest.raises(UsageError, match=r"is a fleet run of 3 hosts; compare two of its hosts with"):
            call()


def test_cli_compares_two_hosts_and_refuses_with_one_sentence(fleet: Path) -> None:
    ok = run_cli("compare", str(fleet), "--host", host_name(0), "--host", host_name(2), timeout=60)
    assert ok.returncode == 0, ok.stderr
    assert f"# {host_name(0)} (A) vs {host_name(2)} (B)" in ok.stdout
    for args, fragment in (([str(fleet), "--host", host_name(0)], "got 1"),
                           ([str(GOLDEN_RUN), "--host", "a", "--host", "b"], "is not a fleet run"),
                           ([str(fleet), str(GOLDEN_RUN), "--host", "a", "--host", "b"], "give no DIR2")):
        proc = run_cli("compare", *args, timeout=60)
        assert proc.returncode == 2, proc.stderr
        assert fragment in proc.stderr and "Traceback" not in proc.stderr
        assert len(proc.stderr.strip().splitlines()) == 1
