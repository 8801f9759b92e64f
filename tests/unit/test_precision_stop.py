"""The error rate of a point stopped at its precision, on simulated IOPS series whose mean is known
(bench/precision_stop.py: 250 ms samples with the VM's sub-second correlation, a per-second level with lag-1 φ,
checked as the runner checks a point, a 30 s cap).  ``T*`` is the time an interval that knew the true
variance would need for ±2 %: no rule can stop sooner on average without stopping on a lucky estimate."""

from __future__ import annotations

from bench.precision_stop import RULES, Model, simulate

SERIES = 200


def test_a_point_stopped_at_its_precision_states_a_mean_within_it_at_the_nominal_rate() -> None:
    got = simulate(RULES["current"], Model(phi=0.5, oracle_s=10.0), SERIES, seed=7)  # the shipped rule
    assert got.stopped >= 0.95 * SERIES
    assert got.median_share <= 0.5  # 11 of the 30 s measured: T* is 10 s, the minimum 10 s
    # of the stopped points, the mean is more than the ±2 % asked from the truth and the stated 95 % interval misses
    # it each at most the nominal 5 % plus the binomial allowance of 200 series (measured on this seed: 4.0 %, 7.0 %)
    assert got.rate(got.off) <= 0.07, got
    assert got.rate(got.missed) <= 0.09, got


def test_overlapping_batch_means_alone_would_stop_on_too_narrow_intervals() -> None:
    """Why the stop keeps its rule: overlapping batch means (two thirds the variance of plain batch means at a
    batch size) has batches of a few correlation times of the 250 ms samples, too short for a per-second level
    that lasts (φ 0.9): its stops miss the truth about twice as often as the shipped rule's."""
    model = Model(phi=0.9, oracle_s=5.0)
    obm = simulate(RULES["obm"], model, SERIES, seed=9)
    shipped = simulate(RULES["current"], model, SERIES, seed=9)
    assert obm.rate(obm.missed) > 0.07 and obm.rate(obm.missed) > 1.5 * shipped.rate(shipped.missed)
    assert obm.median_share >= shipped.median_share  # and it does not stop sooner either
