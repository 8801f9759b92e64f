"""The results table's dev/fio column: the device's bytes over fio's (the line's ``device`` part) in the point's
direction, both for a mixed point, marked where the point is flagged, "—" where there is no ratio; the column
only for runs whose lines carry the part.  The screen itself: test_tui_snapshots, test_results_with_device_ratios."""

from __future__ import annotations

import pytest

from app.screens.results import DEVICE_MARK, device_ratio

RATIOS = {"name": "loop3", "read_ratio": 0.98, "write_ratio": 1.013}


@pytest.mark.parametrize("rw, device, flags, cell", [
    ("randread", RATIOS, "", "0.98"),
    ("write", RATIOS, "", "1.01"),
    ("randrw", RATIOS, "", "0.98/1.01"),
    ("rw", {**RATIOS, "write_ratio": None}, "", "0.98/—"),
    ("read", {**RATIOS, "read_ratio": 0.04}, "buffered;not-on-device", "0.04" + DEVICE_MARK),
    ("randwrite", {**RATIOS, "write_ratio": 1.6}, "amplified", "1.60" + DEVICE_MARK),
    ("read", RATIOS, "cpu-bound", "0.98"),  # another flag is not the device's
    ("read", {"unavailable": "a file on tmpfs"}, "", "—"),
    ("read", None, "", "—"),  # a line without the part
    ("read", {**RATIOS, "read_ratio": None}, "", "—"),  # fio moved nothing that way
    ("read", {**RATIOS, "read_ratio": "1.0"}, "", "—"),  # an untrusted line: a string is no ratio
    ("read", {**RATIOS, "read_ratio": True}, "", "—"),
    ("read", {**RATIOS, "read_ratio": -1}, "", "—"),
    ("read", {**RATIOS, "read_ratio": 1e300}, "", "—"),
    ("read", [1, 2], "", "—"),
])
def test_the_cell_is_the_ratio_of_the_point_s_direction(rw: str, device: object, flags: str, cell: str) -> None:
    assert device_ratio(rw, device, flags)[1] == cell


def test_the_column_sorts_by_the_lower_ratio_with_no_ratio_first() -> None:
    keys = [device_ratio("randrw", RATIOS, "")[0], device_ratio("read", None, "")[0],
            device_ratio("read", {**RATIOS, "read_ratio": 0.5}, "")[0]]
    assert keys == [0.98, -1.0, 0.5]
