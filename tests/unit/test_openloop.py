"""Open-loop points without fio: the ``rate`` key (an offered load, absolute or a share of X_max), where X_max
comes from, the order the points run in, the fio job lines, and the proof that the loop stayed open (offered
against achieved rate per second, fio's in-flight levels against the iodepth cap)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from app.core.errors import UsageError
from app.engine.sweep import _check_fleet_plan
from app.model.keys import rate, rate_share
from app.model.points import Kind, StoragePoint
from app.model.records import Parts, StorageMetrics
from app.plan import presets
from app.plan.openloop import CLOSED, cap_share, depth_level, open_loop_part, per_job_rates
from app.plan.procedure import Measured, OfferedLoad, Procedure, check_shares, offered_load, run_order
from app.runners.fio import job_file
from app.stats.summary import point_label
from app.stats.validity import TargetFacts, point_checks, point_flags
from tests.conftest import run_cli
from tests.helpers.typed import storage_point, storage_points


def base(**changes: Any) -> StoragePoint:
    return replace(storage_point(presets.load("qd-scaling").expand()[0]), **changes)


# --- the key --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("given, canonical", [(20000, "20000"), ("20000", "20000"), ("20k", "20000"),
                                              (" 1.5m ", "1500000"), (2e4, "20000"), ("50%", "50%"),
                                              ("50.0 %", "50%"), ("95.5%", "95.5%"), ("110%", "110%")])
def test_a_rate_is_canonical(given: object, canonical: str) -> None:
    assert rate(given) == canonical


@pytest.mark.parametrize("bad", ["abc", "0", 0, -5, "0.5%", "250%", "50.25%", "1.5", 1.5, True, "1e9", "inf",
                                 10 ** 30, "50%\n", None, [1]])
def test_a_bad_rate_is_refused(bad: object) -> None:
    with pytest.raises(ValueError):
        rate(bad)


def test_rate_share() -> None:
    assert rate_share("50%") == 0.5 and rate_share("20000") is None


def test_a_bad_rate_on_the_command_line_is_one_sentence_and_exit_2() -> None:
    proc = run_cli("presets", "show", "qd-scaling", "--set", "rate=fast")
    assert proc.returncode == 2
    assert proc.stderr.count("\n") == 1 and "key 'rate'" in proc.stderr and "'fast'" in proc.stderr
    assert "Traceback" not in proc.stderr


@pytest.mark.parametrize("other", ["latency_bound=1ms", "steady=iops:2%", "precision=2%"])
def test_a_rate_with_a_key_that_ends_the_point_by_what_it_measures_is_refused(other: str) -> None:
    with pytest.raises(UsageError, match="key 'rate' has value 50%.*cannot be combined with"):
        presets.apply_overrides(presets.load("qd-scaling"), ["rate=50%", other]).expand()


def test_xmax_is_kept_only_with_a_share() -> None:
    qd = presets.load("qd-scaling")
    share = storage_point(presets.apply_overrides(qd, ["rate=50%", "xmax=4000"]).expand()[0])
    absolute = storage_point(presets.apply_overrides(qd, ["rate=2000", "xmax=4000"]).expand()[0])
    assert (share.rate, share.xmax) == ("50%", 4000) and (absolute.rate, absolute.xmax) == ("2000", None)


def test_the_open_loop_preset_is_a_closed_loop_sweep_then_shares_of_its_xmax() -> None:
    plan = storage_points(presets.load("open-loop").expand())
    closed = [p for p in plan if p.rate is None]
    opened = [p for p in plan if p.rate is not None]
    assert [p.iodepth for p in closed] == [1, 4, 16, 64]
    assert [rate_share(p.rate or "") for p in opened] == pytest.approx(
        [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95, 1.0, 1.1])
    assert all(p.rw == "randread" and p.bs == 4096 and p.iodepth == 64 for p in opened)
    assert "λ 50%" in point_label("storage", opened[4])


# --- X_max and the order ----------------------------------------------------------------------------------------


def test_a_share_is_of_the_highest_iops_of_the_closed_loop_points_of_its_workload() -> None:
    plan = [base(iodepth=1), base(iodepth=16), base(bs=8192, iodepth=16), base(iodepth=64, rate="50%")]
    measured = {0: Measured(1000.0, 1e6), 1: Measured(4000.0, 4e6), 2: Measured(9000.0, 2e6)}
    load = offered_load(plan, 3, measured)
    assert isinstance(load, OfferedLoad)
    assert (load.iops, load.xmax, load.xmax_from, load.xmax_points) == (2000.0, 4000.0, "measured", (0, 1))
    assert load.to_dict()["rho"] == 0.5
    assert offered_load(plan, 0, measured) is None  # a closed-loop point offers nothing


def test_a_share_with_nothing_measured_says_why_and_a_given_xmax_needs_nothing() -> None:
    plan = [base(iodepth=1), base(iodepth=64, rate="50%"), base(iodepth=64, rate="50%", xmax=3000),
            base(iodepth=64, rate="1500")]
    why = offered_load(plan, 1, {})
    assert isinstance(why, str) and "no X_max" in why and "xmax" in why
    given = offered_load(plan, 2, {})
    assert isinstance(given, OfferedLoad) and (given.iops, given.xmax_from) == (1500.0, "given")
    absolute = offered_load(plan, 3, {})
    assert isinstance(absolute, OfferedLoad) and absolute.iops == 1500.0 and "rho" not in absolute.to_dict()


@pytest.mark.parametrize("order", ["plan", "shuffled"])
def test_shares_of_a_measured_xmax_run_after_every_other_point(order: str) -> None:
    plan = [base(iodepth=64, rate="50%"), base(iodepth=1), base(iodepth=64, rate="2000"), base(iodepth=16),
            base(iodepth=64, rate="90%")]
    got = run_order(plan, Procedure(order=order, order_seed=7))
    assert sorted(got) == list(range(5)) and set(got[-2:]) == {0, 4}


def test_a_plan_without_shares_keeps_its_order() -> None:
    plan = [base(iodepth=d) for d in (1, 2, 4, 8)]
    assert run_order(plan, Procedure(order="shuffled", order_seed=3)) == run_order(
        plan, Procedure(order="shuffled", order_seed=3))
    assert run_order(plan, Procedure()) == [0, 1, 2, 3]


# --- the job ------------------------------------------------------------------------------------------------------


def test_the_jobs_offer_lambda_between_them_with_poisson_arrivals(tmp_path: Any) -> None:
    point = base(iodepth=64, numjobs=4, rate="10000")
    assert per_job_rates(point, 10000) == (2500,)
    text = job_file(point, str(tmp_path / "t"), True, [("rate_iops", "2500"), ("rate_process", "poisson")])
    assert "rate_iops=2500\nrate_process=poisson" in text
    mix = base(rw="randrw", rwmixread=70, iodepth=64, rate="1000")
    assert per_job_rates(mix, 1000) == (700, 300)


# --- validity -----------------------------------------------------------------------------------------------------


def seconds(values: list[float]) -> list[dict[str, object]]:
    # fio's last second: its end
    last: dict[str, object] = {"t": len(values) + 1.0, "interval_s": 0.95, "iops": values[-1] * 0.8}
    firsts: list[dict[str, object]] = [{"t": i + 1.0, "interval_s": 1.0, "iops": v} for i, v in enumerate(values)]
    return firsts + [last]


LEVELS_LOW = {"1": 80.0, "2": 15.0, "4": 5.0, "8": 0.0, "16": 0.0, "32": 0.0, ">=64": 0.0}


def part(point: StoragePoint, per_s: list[float], levels: dict[str, float] = LEVELS_LOW,
         offered: float = 2000.0) -> dict[str, object]:
    achieved = sum(per_s) / len(per_s)
    return open_loop_part(point, OfferedLoad(offered, 0.5, 4000.0, "measured").to_dict(), seconds(per_s),
                          [{"iodepth_level": levels}], achieved, float(len(per_s)))


def test_an_open_loop_point_that_kept_its_schedule_is_valid() -> None:
    p = part(base(iodepth=64, rate="50%"), [2010.0, 1985.0, 1960.0, 2040.0, 1990.0])
    assert p["valid"] is True and "flag" not in p
    assert p["offered_iops"] == 2000.0 and p["seconds_checked"] == 5 and p["arrivals"] == "poisson"
    assert 0 < p["lateness_bound_s"] < 0.1  # type: ignore[operator]


def test_a_second_short_of_the_offered_rate_beyond_poisson_closes_the_loop() -> None:
    p = part(base(iodepth=64, rate="50%"), [2010.0, 1985.0, 1700.0, 2040.0, 1990.0])
    assert p["valid"] is False and p["flag"] == CLOSED
    assert "1 of 5 seconds (first: second 3)" in str(p["closed_because"]) and p["lateness_bound_s"] is None


def test_the_in_flight_count_at_the_cap_closes_the_loop() -> None:
    at_cap = {**LEVELS_LOW, "1": 70.0, ">=64": 10.0}
    p = part(base(iodepth=64, rate="50%"), [2000.0] * 5, at_cap)
    assert p["flag"] == CLOSED and "iodepth cap 64 at 10 %" in str(p["closed_because"])
    deeper = part(base(iodepth=256, rate="50%"), [2000.0] * 5, at_cap)
    assert "64 or more (fio's top level; the cap is 256)" in str(deeper["closed_because"])
    assert (depth_level(48), depth_level(64), depth_level(1000)) == (32, 64, 64)
    assert cap_share(LEVELS_LOW, 4) == 5.0 and cap_share({}, 4) is None


def metrics(iops: float = 2000.0, mean_ns: float = 100_000.0) -> StorageMetrics:
    return StorageMetrics.of({"iops": iops, "read_iops": iops, "write_iops": 0.0, "bw_bytes": iops * 4096,
                              "read_bw_bytes": iops * 4096, "write_bw_bytes": 0.0, "lat_ns": {"mean": mean_ns},
                              "usr_cpu": 1.0, "sys_cpu": 1.0})


def test_a_closed_point_is_flagged_and_an_open_one_passes_the_check() -> None:
    point = base(iodepth=64, rate="50%")
    table = point.to_dict()
    closed = part(point, [2000.0, 1500.0, 2000.0])
    flags = point_flags(table, metrics(), Parts(open_loop=closed))  # type: ignore[arg-type]
    assert [f["flag"] for f in flags] == [CLOSED]
    assert flags[0]["reason"] == closed["closed_because"]
    opened = part(point, [2000.0, 1990.0, 2010.0])
    assert point_flags(table, metrics(), Parts(open_loop=opened)) == []  # type: ignore[arg-type]
    checks = point_checks(table, metrics(), Parts(open_loop=opened), None, TargetFacts(), [])  # type: ignore[arg-type]
    assert checks[CLOSED] == {"result": "passed"}
    assert checks["depth-not-reached"]["result"] == "not-applicable"  # in flight follows the load, not iodepth


def test_a_closed_loop_point_is_not_judged_for_the_open_loop() -> None:
    table = base(iodepth=1).to_dict()
    checks = point_checks(table, metrics(1000.0, 1_000_000.0), Parts(), None, TargetFacts(), [])
    assert checks[CLOSED] == {"result": "not-applicable", "why": "not an open-loop point (no rate)"}


def test_a_fleet_plan_takes_an_absolute_rate_or_a_given_xmax_but_not_a_share_of_a_measured_one() -> None:
    _check_fleet_plan(Kind.STORAGE, Procedure(), [base(rate="2000"), base(rate="50%", xmax=4000)], "x.toml")
    with pytest.raises(UsageError, match="key 'rate' is a share of X_max without key 'xmax'"):
        _check_fleet_plan(Kind.STORAGE, Procedure(), [base(), base(rate="50%")], "x.toml")


def test_a_share_no_point_of_the_plan_can_measure_is_refused_before_anything_is_created(tmp_path: Any) -> None:
    target, out = tmp_path / "t.img", tmp_path / "out"
    target.write_bytes(b"\0" * 4096)
    proc = run_cli("run", "custom", "--target", str(target), "--yes", "--out", str(out), "--set", "rate=50%")
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1, proc.stderr
    assert "key 'rate' has value 50%, a share of X_max, and the plan has no closed-loop point" in proc.stderr
    assert not out.exists()
    check_shares([base(iodepth=1), base(iodepth=64, rate="50%")], "x.toml")  # a closed-loop point to measure it
    check_shares([base(iodepth=64, rate="50%", xmax=1000)], "x.toml")  # or a given X_max
    with pytest.raises(UsageError, match="x.toml: key 'rate'"):
        check_shares([base(bs=8192, iodepth=1), base(iodepth=64, rate="50%")], "x.toml")  # another workload's
