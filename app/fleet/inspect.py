"""What a fleet host says about its target: the safety verdicts of a write and of a read-only plan, and the
target's shape (exists, block device, size) that the job file needs.

On the host itself this is ``profiler-tui devices --json --target PATH`` (:func:`describe_target`); on the
controller, :func:`read_target` reads that JSON back as untrusted input (it came over the network) and
:func:`verdict_of` rebuilds the :class:`app.safety.Verdict` that :func:`app.safety.confirm` judges with the
user's confirmations, exactly as for a local target.
"""

from __future__ import annotations

from typing import Any

from app import points, safety
from app.runners.fio import TargetShape, target_shape

MAX_REASONS = 20
MAX_REASON_CHARS = 1000


def _verdict_dict(v: safety.Verdict) -> dict[str, Any]:
    return {"verdict": str(v.verdict), "reasons": list(v.reasons), "needs_yes": v.confirm, "kind": v.kind}


def describe_target(path: str) -> dict[str, Any]:
    """The JSON a host gives about ``path`` (``devices --json --target PATH``)."""
    real = safety.resolve(path)
    shape = target_shape(real)
    from app.link import device_number

    number = device_number(real)
    return {"path": real, "exists": shape.exists, "block": shape.block, "size": shape.size,
            "device": f"{number[0]}:{number[1]}" if number and number[0] else None,
            "write": _verdict_dict(safety.classify(real, True)), "read": _verdict_dict(safety.classify(real, False))}


class BadAnswer(ValueError):
    """A host's answer is not what ``devices --json --target`` writes."""


def _reasons(value: Any) -> list[str]:
    if not isinstance(value, list) or not value or len(value) > MAX_REASONS:
        raise BadAnswer("'reasons' is not a list of 1 to 20 sentences")
    if not all(isinstance(r, str) for r in value):
        raise BadAnswer("'reasons' holds something other than text")
    return [r.replace("\n", " ")[:MAX_REASON_CHARS] for r in value]


def verdict_of(answer: dict[str, Any], writes: bool) -> safety.Verdict:
    """The verdict a host gave for a write (or read-only) plan on its target."""
    entry = answer.get("write" if writes else "read")
    if not isinstance(entry, dict):
        raise BadAnswer(f"no '{'write' if writes else 'read'}' verdict")
    try:
        verdict = points.Verdict(str(entry.get("verdict")))
    except ValueError:
        raise BadAnswer(f"unknown verdict {str(entry.get('verdict'))[:40]!r}") from None
    kind = entry.get("kind")
    if kind not in ("file", "block", "other"):
        raise BadAnswer(f"unknown target kind {str(kind)[:40]!r}")
    needs_yes = entry.get("needs_yes")
    if not isinstance(needs_yes, bool):
        raise BadAnswer("'needs_yes' is not true or false")
    path = answer.get("path")
    if not isinstance(path, str) or not path.startswith("/") or len(path) > 4096:
        raise BadAnswer("'path' is not an absolute path")
    return safety.Verdict(path, kind, verdict, _reasons(entry.get("reasons")), needs_yes)


def device_of(answer: dict[str, Any]) -> tuple[int, int] | None:
    """The block device (major, minor) the host's target is or lives on, None when unknown."""
    text = answer.get("device")
    if not isinstance(text, str) or len(text) > 24:
        return None
    major, sep, minor = text.partition(":")
    if not sep or not major.isdigit() or not minor.isdigit() or not major.isascii() or not minor.isascii():
        return None
    return int(major), int(minor)


def shape_of(answer: dict[str, Any]) -> TargetShape:
    exists, block, size = answer.get("exists"), answer.get("block"), answer.get("size")
    if not isinstance(exists, bool) or not isinstance(block, bool):
        raise BadAnswer("'exists' or 'block' is not true or false")
    if size is not None and (not isinstance(size, int) or isinstance(size, bool) or not 0 <= size < 1 << 63):
        raise BadAnswer("'size' is not a byte count")
    return TargetShape(exists, block, size)


def read_target(doc: Any) -> dict[str, Any]:
    """The ``target`` object of a host's ``devices --json --target`` answer, checked (BadAnswer otherwise)."""
    if not isinstance(doc, dict) or not isinstance(doc.get("target"), dict):
        raise BadAnswer("the answer has no 'target' object")
    answer: dict[str, Any] = doc["target"]
    verdict_of(answer, True)
    verdict_of(answer, False)
    shape_of(answer)
    return answer
