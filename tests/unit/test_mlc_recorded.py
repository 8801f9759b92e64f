"""The MLC parser's results on recorded outputs and their mutations are the recorded ones
(tests/helpers/mlc_recorded.py made the expectation file with the parser before its rules became a table)."""

from __future__ import annotations

import json

from tests.helpers.mlc_recorded import EXPECTED, results


def test_parser_results_are_the_recorded_ones() -> None:
    expected = json.loads(EXPECTED.read_text())
    got = results()
    assert len(got) == len(expected) > 40
    changed = [name for name in expected if got.get(name) != expected[name]]
    assert not changed, f"results differ from the recorded ones for: {changed[:5]}"
