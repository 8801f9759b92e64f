"""The open loop against a server of known capacity: a RAM-backed loop device the kernel throttles to a known
IOPS (blkio), measured by a short open-loop preset: X_max from a closed-loop sweep, then Poisson arrivals at
shares of it.  Below the cap the loop stays open and latency stays low; above it the generator falls behind and
the in-flight count fills, so the point is flagged and never used as an open-loop figure.  And a generator asked
for more than it can issue is flagged too."""

from __future__ import annotations

import json
import re
import statistics
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.loopdev import loop_device
from tests.helpers.schema_check import validate_dir
from tests.helpers.throttle import throttled
from tests.integration.test_procedure import cli, lines, run_custom

CAP = 2000  # IOPS the kernel lets through: the server's capacity
PRESET = """name = "open-loop-test"
kind = "storage"
description = "a short open-loop sweep"

[settings]
rw = "randread"
bs = "4k"
runtime = 2
ramp_time = 1
size = "16m"

[[group]]
label = "closed loop"
iodepth = [1, 16]

[[group]]
label = "open loop"
iodepth = 64
rate = ["20%", "50%", "80%", "125%"]
"""


def _open(line: dict[str, Any]) -> dict[str, Any]:
    return line.get("open_loop") or {}


@pytest.fixture(scope="module")
def throttled_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("open-loop")
    preset = tmp / "open-loop-test.toml"
    preset.write_text(PRESET)
    out = tmp / "out"
    with loop_device(tmp, size_mb=16, ram=True) as dev, throttled(dev.path, CAP, CAP) as enter:
        proc = cli("run", str(preset), "--target", dev.path, "--yes", "--out", str(out), enter=enter)
    assert proc.returncode == 0, proc.stderr
    return out


def test_xmax_and_the_saturated_rate_are_the_throttle_and_points_above_it_are_flagged(throttled_run: Path) -> None:
    got = lines(throttled_run)
    closed = [ln for ln in got if ln["point"].get("rate") is None]
    opened = {ln["point"]["rate"]: ln for ln in got if ln["point"].get("rate") is not None}
    assert len(closed) == 2 and set(opened) == {"20%", "50%", "80%", "125%"}
    xmax = max(ln["metrics"]["iops"] for ln in closed)
    assert xmax == pytest.approx(CAP, rel=0.05)
    for ln in opened.values():  # the share is of the X_max measured, by the points that ran first
        assert _open(ln)["xmax_iops"] == pytest.approx(xmax) and _open(ln)["xmax_from"] == "measured"
        assert ln["point"]["iodepth"] == 64 and _open(ln)["arrivals"] == "poisson"
    over = opened["125%"]
    assert _open(over)["valid"] is False and _open(over)["flag"] == "closed-by-generator"
    assert "closed-by-generator" in [f["flag"] for f in over["flags"]]
    assert over["metrics"]["iops"] == pytest.approx(CAP, rel=0.05)  # the server's rate, whatever was offered
    # well below the cap the loop stays open (on a loaded machine fio itself may fall behind: then it is flagged)
    valid = [opened[s] for s in ("20%", "50%") if _open(opened[s])["valid"]]
    assert valid, [_open(opened[s]).get("closed_because") for s in ("20%", "50%")]
    for ln in valid:
        assert ln["checks"]["closed-by-generator"] == {"result": "passed"}
        assert ln["metrics"]["iops"] == pytest.approx(_open(ln)["offered_iops"], rel=0.1)
    # flat well below the cap, steep past it: the overloaded point waited far longer
    low = statistics.median(opened[s]["metrics"]["lat_ns"]["mean"] for s in ("20%", "50%"))
    assert over["metrics"]["lat_ns"]["mean"] > 10 * low
    report_of_the_run(throttled_run, xmax)
    validate_dir(throttled_run)  # every line, its open_loop part and its flag as the contract says
    run = json.loads((throttled_run / "run.json").read_text())
    order = [ln["index"] for ln in sorted(got, key=lambda ln: ln["started"])]
    assert order[:2] == [0, 1] and run["status"] == "complete"  # the closed loop ran first


def test_a_generator_asked_for_more_than_it_can_issue_is_flagged(tmp_path: Path) -> None:
    out = tmp_path / "out"
    proc = run_custom(tmp_path, out, "iodepth=4", "runtime=1", "rate=90000000")
    assert proc.returncode == 0, proc.stderr
    (first, *_) = lines(out)
    loop = _open(first)
    assert loop["offered_iops"] == 90_000_000 and loop["valid"] is False
    assert "below the 90000000 offered" in loop["closed_because"]
    assert "closed-by-generator" in [f["flag"] for f in first["flags"]]


def report_of_the_run(out: Path, xmax: float) -> None:
    """The report's open-loop section: the service rate the open loop saturated at is the throttle's (±5 %), the
    utilization law, the models with their residuals and the p99-bounded load are stated, and the flagged point is
    listed as not used."""
    proc = cli("report", str(out))
    assert proc.returncode == 0, proc.stderr
    text = (out / "report.md").read_text().split("### Open loop: latency against offered load", 1)[1]
    rate = re.search(r"Service rate where the open loop saturated: ([0-9,]+) IOPS", text)
    assert rate is not None, text
    assert float(rate.group(1).replace(",", "")) == pytest.approx(CAP, rel=0.05)
    assert f"X_max {xmax:,.0f} IOPS (the highest of the closed-loop points)" in text
    assert "Utilization law at the highest valid load" in text
    assert "M/M/1 µs (resid.)" in text and "Models (mean R, valid points below ρ = 1 only" in text
    assert "Highest offered load meeting p99 ≤ 1000 µs" in text
    flagged = text.split("Flagged, not used as open-loop figures: ", 1)[1].split("\n", 1)[0]
    assert "ρ 1.25 (" in flagged
    assert "L_queue = ρ² / (1 − ρ)" in text


def test_fleet_hosts_each_offer_the_rate_and_a_share_of_a_measured_xmax_is_refused(tmp_path: Path) -> None:
    from tests.helpers.fleet_agents import agents

    with agents(2) as running, loop_device(tmp_path, name="a", ram=True) as a, \
            loop_device(tmp_path, name="b", ram=True) as b:
        hosts: list[str] = []
        for agent, dev in zip(running, (a, b)):
            hosts += ["--host", agent.host, "--target", f"{agent.host}={dev.path}"]
        base = ["run", "custom", "--set", "runtime=1", "--set", "size=16m", "--set", "iodepth=16", "--yes"]
        refused = cli(*base, "--out", str(tmp_path / "no"), "--set", "rate=none,50%", *hosts)  # X_max measured first
        assert refused.returncode == 2 and "without key 'xmax'" in refused.stderr
        assert refused.stderr.count("\n") == 1 and not (tmp_path / "no").exists()
        proc = cli(*base, "--out", str(tmp_path / "r"), "--set", "rate=500", *hosts)
        assert proc.returncode == 0, proc.stderr
    got = lines(tmp_path / "r")
    assert sorted(ln["host"] for ln in got) == sorted(agent.host for agent in running)
    for ln in got:  # each host offered the whole rate (its job file says so) and its line says what it achieved
        loop = _open(ln)
        assert loop["offered_iops"] == 500 and loop["per_job_rate_iops"] == [500]
        assert loop["achieved_iops"] == pytest.approx(500, rel=0.2)
        job = (tmp_path / "r" / ln["raw"]["fio"]).read_text()
        assert "rate_iops=500\nrate_process=poisson" in job
    validate_dir(tmp_path / "r")
