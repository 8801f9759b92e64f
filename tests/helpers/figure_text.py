"""What a reader sees of a matplotlib figure's texts, for the tests that check figures as drawn."""

from __future__ import annotations

from typing import Any


def shown_ticklabels(axis: Any) -> list[Any]:
    """Major tick labels inside the axis' view (matplotlib keeps, but does not draw, the others)."""
    lo, hi = sorted(axis.get_view_interval())
    span = (hi - lo) * 1e-9
    return [t for loc, t in zip(axis.get_majorticklocs(), axis.get_majorticklabels()) if lo - span <= loc <= hi + span]
