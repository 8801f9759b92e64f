"""The report's open-loop section on results directories whose truth is known (tests/helpers/open_runs.py): an
M/M/1 server measured closed-loop and open-loop.  M/M/1 must fit and M/D/1 not; the seed's L_queue must hold;
the knee and the p99-bounded load are bracketed where the truth puts them; a point flagged closed-by-generator,
whose latency would change every answer, is never used; no formula is applied where its assumptions fail."""

from __future__ import annotations

from pathlib import Path

import pytest

from app.report import render_report
from app.report.data.model import load
from app.report.sections import open_loop as ol
from app.report.sections.procedure import storage_views
from tests.helpers.open_runs import mm1_run


def _section(md: str) -> str:
    return md.split("### Open loop: latency against offered load", 1)[1]


@pytest.fixture(scope="module")
def mm1(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    # a point at ρ 0.5 whose generator fell behind, with a latency far below the truth (coordinated omission):
    # used, it would move the knee below ρ 0.6 and the bounded load to 5,000 IOPS
    d = mm1_run(tmp_path_factory.mktemp("open") / "run",
                flagged=[{"rho": 0.5, "valid": False, "mean_ns": 110_000.0, "p99_ns": 300_000.0},
                         {"rho": 1.2, "valid": False, "mean_ns": 5e6, "p99_ns": 2e7, "achieved": 10_050.0}])
    render_report(d)
    return d, (d / "report.md").read_text()


def curve(d: Path) -> ol.OpenCurve:
    data = load(d)
    views = storage_views(data.storage)
    (c,) = ol.open_curves(views.opened, views.main, d)
    return c


def test_open_loop_points_are_kept_out_of_the_closed_loop_views(mm1: tuple[Path, str]) -> None:
    data = load(mm1[0])
    views = storage_views(data.storage)
    assert len(views.opened) == 8 and all(r.point.get("rate") is None for r in views.main) and len(views.main) == 2


def test_s_xmax_and_n_star_come_from_the_closed_loop(mm1: tuple[Path, str]) -> None:
    c = curve(mm1[0])
    assert c.s == pytest.approx(100_000.0) and c.xmax == pytest.approx(10_000.0)
    assert c.n_star == pytest.approx(1.0) and c.c == 1 and c.xmax_from == "measured"
    assert c.service_rate == pytest.approx(10_050.0)  # the overloaded point ran at the server's rate


def test_mm1_fits_md1_does_not_and_flagged_points_are_not_modelled(mm1: tuple[Path, str]) -> None:
    c = curve(mm1[0])
    fits = {f.model: f for f in ol.fits(c)}
    assert fits["M/M/1"].fits is True and fits["M/M/1"].worst == pytest.approx(0.0, abs=1e-9)
    assert fits["M/M/c"].fits is True  # c = N* = 1: M/M/1 again
    assert fits["M/D/1"].fits is False
    assert len(fits["M/M/1"].residuals) == 6  # the six valid points below ρ = 1, never the flagged ones
    flagged = [p for p in c.points if not p.valid]
    assert len(flagged) == 2 and all(p.models == {} for p in flagged)
    text = _section(mm1[1])
    assert "M/M/1 fits (every residual within 25%; worst 0%)" in text
    assert "M/D/1 does not fit (worst residual" in text


def test_the_seed_queue_length_holds_for_an_mm1_server_and_is_printed_per_rho(mm1: tuple[Path, str]) -> None:
    text = _section(mm1[1])
    table = text.split("L_queue = λ · R − ρ:", 1)[1].split("\n\n")[1]
    rows = {r[0]: r[1:] for r in ([c.strip() for c in ln.strip("|").split("|")] for ln in table.splitlines()[2:])}
    assert rows["0.90"] == ["8.100", "8.100", "holds"]
    # the figures right-aligned, the verdict (words) left-aligned under its own header
    header, rule = (ln.strip("|").split("|") for ln in table.splitlines()[:2])
    assert header[3].strip() == "verdict"
    assert [c.endswith(":") for c in rule] == [False, True, True, False]
    # every ρ below 1 is printed; a flagged point's without a verdict
    flagged = [r for r in rows.values() if r[2] == "not judged: closed-by-generator"]
    assert len(rows) == 6 + len(flagged) and all(r[2] in ("holds", "not judged: closed-by-generator")
                                                  for r in rows.values())
    assert "It holds (within 25% or 0.05 I/Os) at ρ 0.10, 0.30, 0.45, 0.60, 0.80, 0.90 and fails at ρ none" in text
    assert "It is undefined at ρ ≥ 1." in text


def test_the_knee_and_the_bounded_load_are_bracketed_where_the_truth_is(mm1: tuple[Path, str]) -> None:
    text = _section(mm1[1])
    # R = 2 S at ρ 0.5: between the valid points at 0.45 and 0.60 (not the flagged one at 0.50)
    assert "Open-loop knee (mean R = 2 S = 200.00 µs): between ρ 0.45 and 0.60 (λ 4,500 to 6,000 IOPS)" in text
    # p99 = S / (1 − ρ) · ln 100 ≤ 1 ms up to ρ 0.54: between the valid 4,500 and 6,000
    assert "Highest offered load meeting p99 ≤ 1000 µs: between 4,500 IOPS (ρ 0.45" in text
    assert "and 6,000 IOPS (ρ 0.60" in text
    assert "The closed loop meets it at 10,000 IOPS (QD1, p99 460.52 µs)" in text
    assert "Flagged, not used as open-loop figures: ρ 0.50 (fewer I/Os than offered in 3 of 10 seconds" in text


def test_no_formula_is_applied_at_or_above_rho_1(mm1: tuple[Path, str]) -> None:
    c = curve(mm1[0])
    over = [p for p in c.points if p.rho is not None and p.rho >= 1]
    assert over and all(p.models == {} and p.l_seed is None for p in over)
    row = next(ln for ln in _section(mm1[1]).splitlines() if ln.startswith("| 1.20 "))
    assert row.count("—") == 3 and "closed-by-generator" in row


def test_without_a_qd1_point_no_model_is_applied_and_too_few_points_are_not_judged(tmp_path: Path) -> None:
    d = mm1_run(tmp_path / "noqd1", rhos=(0.2, 0.5), closed=(4,))
    render_report(d)
    text = _section((d / "report.md").read_text())
    assert "S not measured (no closed-loop QD1 point of this workload): no model is applied" in text
    assert "Models (" not in text and "Open-loop knee" not in text
    d2 = mm1_run(tmp_path / "few", rhos=(0.2, 0.5))
    render_report(d2)
    text2 = _section((d2 / "report.md").read_text())
    assert "M/M/1 not judged: too few valid points below ρ = 1 (2, where it needs 3)" in text2


def test_a_closed_loop_run_has_no_open_loop_section(tmp_path: Path) -> None:
    d = mm1_run(tmp_path / "closed", rhos=(), closed=(1, 4, 16))
    render_report(d)
    md = (d / "report.md").read_text()
    assert "Open loop" not in md and "closed-by-generator" not in md


def test_erlang_c_matches_its_textbook_values() -> None:
    assert ol.erlang_c(1, 0.5) == pytest.approx(0.5)  # M/M/1: P(wait) = ρ
    assert ol.erlang_c(2, 1.0) == pytest.approx(1 / 3)  # c = 2, a = 1: 1/3
    assert ol.mmc(100.0, 0.5 / 100.0, 1) == pytest.approx(ol.mm1(100.0, 0.5))
    assert ol.mmc(100.0, 1 / 100.0, 1) is None


def test_the_summary_on_top_names_the_flagged_open_loop_points_by_their_offered_load(mm1: tuple[Path, str]) -> None:
    summary = mm1[1].split("## Summary", 1)[1].split("\n## ", 1)[0]
    assert "`closed-by-generator` on 2 points (randread 4K QD64 λ 50%; randread 4K QD64 λ 120%)" in summary
    assert "No point carries a flag" not in summary
    assert "λ" not in summary.split("**Flags**", 1)[0]  # the closed-loop answers read the closed-loop points only


def test_a_knee_below_the_lightest_valid_load_is_stated_as_at_or_below_it(tmp_path: Path) -> None:
    # as on an emulated NVMe drive: mean R at the lightest load, ρ 0.10, is already 3 S (and the later loads are
    # flagged): the knee lies at or below ρ 0.10, and there is no valid point below it to name
    d = mm1_run(tmp_path / "early", rhos=(), flagged=[{"rho": 0.1, "mean_ns": 300_000.0},
                                                        {"rho": 0.2, "mean_ns": 450_000.0},
                                                        {"rho": 0.5, "valid": False, "mean_ns": 2e6}])
    render_report(d)
    text = _section((d / "report.md").read_text())
    knee = next(ln for ln in text.splitlines() if ln.startswith("Open-loop knee"))
    assert "n/a" not in knee and "λ 0 " not in knee, knee
    assert "at or below ρ 0.10, the lightest valid load" in knee, knee


def test_a_curve_without_a_valid_point_judges_no_knee(tmp_path: Path) -> None:
    # as on an emulated NVMe drive on a loaded host: even ρ 0.10 filled its 64 slots, so every point is flagged
    d = mm1_run(tmp_path / "none", rhos=(), flagged=[{"rho": 0.1, "valid": False}, {"rho": 0.5, "valid": False}])
    render_report(d)
    text = _section((d / "report.md").read_text())
    knee = next(ln for ln in text.splitlines() if ln.startswith("Open-loop knee"))
    assert knee == "Open-loop knee (mean R = 2 S): not judged — no valid point.", knee
    assert "Utilization law: not checked (no S, or no valid point)." in text
    assert "none stated — no valid point with a supported p99" in text


def test_a_saturated_rate_far_below_xmax_is_not_called_the_devices_capacity(tmp_path: Path) -> None:
    # as on the emulated NVMe drive of a loaded host: offered 0.5 to 1.1 of X_max, each point achieved far less; the
    # valid point at ρ 0.1 fell 6 % short over the whole point but kept up second by second: it did not saturate
    d = mm1_run(tmp_path / "slow", rhos=(), flagged=[{"rho": 0.1, "achieved": 940.0}, *[
        {"rho": r, "valid": False, "mean_ns": 9e6, "achieved": got}
        for r, got in ((0.5, 2_000.0), (0.8, 3_000.0), (1.1, 4_500.0))]])
    render_report(d)
    text = _section((d / "report.md").read_text())
    line = next(ln for ln in text.splitlines() if ln.startswith("Service rate where the open loop saturated"))
    assert "3,000 IOPS (the median achieved by the 3 points" in line and "from 2,000 to 4,500 IOPS" in line, line
    assert "30% of X_max; more than 25% below the X_max the closed loop measured" in line, line
    assert "it is not the device's capacity." in line, line


def test_the_generators_lateness_is_stated_as_the_bound_of_each_valid_point(mm1: tuple[Path, str]) -> None:
    """fio records no scheduled time per I/O: the section states the bound each valid point's check gives (the
    line's lateness_bound_s), and none for a flagged point."""
    text = _section(mm1[1])
    line = next(ln for ln in text.splitlines() if ln.startswith("How late the generator issued"))
    assert "not measured per I/O" in line and "ρ 0.10: 0.010 s" in line
    assert line.count(" s;") + 1 == 6  # the six valid points, never the two flagged ones
