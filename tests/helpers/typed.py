"""Narrowing for tests: a value a test expects to have a shape (a JSON object, a storage point) checked to have it,
so that what follows indexes it with its type known (an assertion fails where the shape is not the expected one)."""

from __future__ import annotations

from typing import Any, Sequence

from app.model.points import MemoryPoint, Point, StoragePoint


def as_dict(value: object) -> dict[str, Any]:
    """VALUE, which the test expects to be a JSON object."""
    assert isinstance(value, dict), value
    return value


def as_list(value: object) -> list[Any]:
    """VALUE, which the test expects to be a JSON array."""
    assert isinstance(value, list), value
    return value


def storage_point(point: Point) -> StoragePoint:
    """POINT, which the test expects to be a storage point (a storage preset's)."""
    assert isinstance(point, StoragePoint), point
    return point


def storage_points(points: Sequence[Point]) -> list[StoragePoint]:
    """POINTS, each of which the test expects to be a storage point."""
    return [storage_point(p) for p in points]


def memory_point(point: Point) -> MemoryPoint:
    """POINT, which the test expects to be a memory point (a memory preset's)."""
    assert isinstance(point, MemoryPoint), point
    return point


def as_number(value: object) -> float:
    """VALUE, which the test expects to be a JSON number (not a bool)."""
    assert isinstance(value, (int, float)) and not isinstance(value, bool), value
    return value


def memory_points(points: Sequence[Point]) -> list[MemoryPoint]:
    """POINTS, each of which the test expects to be a memory point."""
    return [memory_point(p) for p in points]
