"""The per-second spread the report's claims are checked against (app.report.compute.noise)."""

from __future__ import annotations

import json
import math
from pathlib import Path

from hypothesis import example, given
from hypothesis import strategies as st

from app.model.records import MAX_NUMBER
from app.report.compute.noise import MIN_SAMPLES, point_spread, spread, t95
from app.report.data.model import StorageRow


def test_spread_needs_three_seconds_and_states_the_interval() -> None:
    assert spread([1.0, 2.0]) is None
    s = spread([100.0, 110.0, 90.0, 100.0])
    assert s is not None and s.n == 4 and s.mean == 100.0 and (s.lo, s.hi) == (90.0, 110.0)
    # sd = sqrt(200/3) = 8.165; half-width = t(3) 3.182 × 8.165 / 2 = 12.99
    assert math.isclose(s.half_width, 3.1824463 * math.sqrt(200 / 3) / 2, rel_tol=1e-6)  # t(0.975, 3) = 3.18245
    assert s.straddles(105.0) and not s.straddles(120.0) and not s.straddles(80.0)


def test_t95_is_the_t_quantile_at_every_df() -> None:
    """Printed-table values (1, 30) and beyond the old 30-row table (500: 1.965, not the normal 1.96)."""
    assert round(t95(1), 3) == 12.706 and round(t95(30), 3) == 2.042 and round(t95(500), 3) == 1.965
    assert round(t95(0), 3) == 1.960  # no degrees of freedom: the normal value, as before


@given(st.lists(st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.integers(-10**6, 10**6)), max_size=40))
@example([1e307, -1e307, 1e307, 0.0])  # near the float limit the sd itself overflows: such values are junk
def test_spread_of_anything_is_finite_or_none(values: list) -> None:
    s = spread(values)
    finite = [v for v in values if math.isfinite(v) and abs(v) <= MAX_NUMBER]
    assert (s is None) == (len(finite) < MIN_SAMPLES)
    if s is not None:
        assert s.lo <= s.mean + 1e-6 * abs(s.mean) + 1e-9 and s.mean <= s.hi + 1e-6 * abs(s.hi) + 1e-9
        assert s.sd >= 0 and math.isfinite(s.half_width)


def test_point_spread_reads_whole_seconds_only_and_ignores_junk(tmp_path: Path) -> None:
    (tmp_path / "raw").mkdir()
    lines = [{"t": 1.0, "interval_s": 1.0, "iops": 100, "lat_p99_ns": 900},
             {"t": 2.0, "interval_s": 1.0, "iops": 120, "lat_p99_ns": 1100},
             "not json", {"t": 3.0, "interval_s": 1.0, "iops": 110, "lat_p99_ns": "x"},
             {"t": 3.1, "interval_s": 0.1, "iops": 5, "lat_p99_ns": 5}]
    (tmp_path / "raw" / "p.samples.jsonl").write_text(
        "\n".join(x if isinstance(x, str) else json.dumps(x) for x in lines) + "\n")
    row = StorageRow.of(0, {"rw": "randread"}, {"iops": 110}, {"raw": {"samples": "raw/p.samples.jsonl"}})
    iops = point_spread(tmp_path, row, "iops")
    assert iops is not None and (iops.n, iops.lo, iops.hi) == (3, 100.0, 120.0)
    assert point_spread(tmp_path, row, "p99") is None  # two usable seconds
    escape = StorageRow.of(1, {}, {}, {"raw": {"samples": "../p.samples.jsonl"}})
    assert point_spread(tmp_path, escape, "iops") is None
