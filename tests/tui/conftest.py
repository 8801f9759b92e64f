"""Each TUI test ends with no read of a run's results still under way ahead (a daemon thread outlives the app that
started it): a later test opening the same directory would find it being read and show "Reading the results…"
before its rows."""

from __future__ import annotations

from collections.abc import Iterator

import pytest


@pytest.fixture(autouse=True)
def _no_read_ahead_left() -> Iterator[None]:
    yield
    from app.screens import results

    with results._read_lock:
        reading = list(results._reading.values())
    for thread, done in reading:
        done.wait(60)
