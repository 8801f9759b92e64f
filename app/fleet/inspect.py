"""What a fleet host says about its target: the facts the safety rules read (what the target is, its size, how
it and its family are in use, its signatures), and the target's shape (exists, block device, size) that the job
file needs.

On the host itself this is ``profiler-tui devices --json --target PATH`` (:func:`describe_target`); on the
controller, :func:`read_target` reads that JSON back as untrusted input (it came over the network).  The
controller takes only facts from it: :func:`verdict_of` applies the controller's own rules
(:func:`app.host.safety.judge_block` / :func:`app.host.safety.judge_file`, exactly those of a local target) to them, and
:func:`app.host.safety.confirm` judges that verdict with the user's confirmations.  The host's own verdicts in the
answer are for a person reading it; an answer whose facts contradict each other (or those verdicts' kind or
confirmation) is refused.
"""

from __future__ import annotations

import json
import re
from dataclasses import asdict
from typing import TypedDict

from app.core.sanitize import clean_line
from app.host import safety
from app.model import points
from app.runners.fio import TargetShape, target_shape

MAX_REASONS = 20
MAX_REASON_CHARS = 1000
MAX_DEPTH = 16  # nesting of a host's answer (the real one has 5 levels)
MAX_DEVICES = 256  # devices in a target's family (itself, disk, partitions, holders)
MAX_LIST = 64
_KERNEL_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9!._:+-]{0,63}")


class VerdictAnswer(TypedDict):
    """A host's verdict on its target for one kind of plan, as ``devices --json --target`` writes it."""

    verdict: str
    reasons: list[str]
    needs_yes: bool
    kind: str


class TargetAnswer(TypedDict):
    """What ``devices --json --target PATH`` writes about the target."""

    path: str
    exists: bool
    block: bool
    size: int | None
    device: str | None  # "major:minor"
    facts: dict[str, object]
    write: VerdictAnswer
    read: VerdictAnswer


def _verdict_dict(v: safety.Verdict) -> VerdictAnswer:
    return {"verdict": str(v.verdict), "reasons": list(v.reasons), "needs_yes": v.confirm, "kind": v.kind}


def target_facts(path: str) -> dict[str, object]:
    """The facts the rules read about ``path`` (already resolved), as JSON."""
    if target_shape(path).block:
        block = safety.block_facts(path)
        if block is not None:
            return {"kind": "block", **asdict(block)}
        return asdict(safety.FileFacts(path, "other", True, refusal=f"{path} is a block device the kernel does "
                                                                   "not list in /sys"))
    file = safety.file_facts(path)
    out = asdict(file)
    if file.backs_loop:  # a read-only plan on it is judged like the device it backs: that device's facts too
        loop = safety.block_facts(safety.dev_path(file.backs_loop))
        out["loop"] = {"kind": "block", **asdict(loop)} if loop else None
    return out


def describe_target(path: str) -> TargetAnswer:
    """The JSON a host gives about ``path`` (``devices --json --target PATH``)."""
    real = safety.resolve(path)
    shape = target_shape(real)
    from app.host.link import device_number

    number = device_number(real)
    return {"path": real, "exists": shape.exists, "block": shape.block, "size": shape.size,
            "device": f"{number[0]}:{number[1]}" if number and number[0] else None, "facts": target_facts(real),
            "write": _verdict_dict(safety.classify(real, True)), "read": _verdict_dict(safety.classify(real, False))}


class BadAnswer(ValueError):
    """A host's answer is not what ``devices --json --target`` writes."""


class Contradiction(BadAnswer):
    """A host's answer whose facts contradict each other, or the kind and confirmation of its own verdicts."""


def _reasons(value: object) -> list[str]:
    if not isinstance(value, list) or not value or len(value) > MAX_REASONS:
        raise BadAnswer("'reasons' is not a list of 1 to 20 sentences")
    if not all(isinstance(r, str) for r in value):
        raise BadAnswer("'reasons' holds something other than text")
    return [clean_line(r, MAX_REASON_CHARS) for r in value]


def _host_verdict(answer: dict[str, object], writes: bool) -> tuple[str, bool]:
    """The kind and needs_yes of the host's own verdict (checked against the facts, never obeyed)."""
    entry = answer.get("write" if writes else "read")
    if not isinstance(entry, dict):
        raise BadAnswer(f"no '{'write' if writes else 'read'}' verdict")
    try:
        points.Verdict(str(entry.get("verdict")))
    except ValueError:
        raise BadAnswer(f"unknown verdict {clean_line(entry.get('verdict'), 40)!r}") from None
    kind = entry.get("kind")
    if kind not in ("file", "block", "other"):
        raise BadAnswer(f"unknown target kind {clean_line(kind, 40)!r}")
    needs_yes = entry.get("needs_yes")
    if not isinstance(needs_yes, bool):
        raise BadAnswer("'needs_yes' is not true or false")
    _reasons(entry.get("reasons"))
    return kind, needs_yes


def verdict_of(answer: dict[str, object], writes: bool) -> safety.Verdict:
    """The controller's verdict on the host's target for a write (or read-only) plan: its own rules applied to
    the facts the host reported (checked by :func:`read_target`)."""
    facts = read_facts(answer)
    if isinstance(facts, safety.BlockFacts):
        return safety.judge_block(safety.GivenBlock(facts, writes))
    return safety.judge_file(facts, writes)


def device_of(answer: dict[str, object]) -> tuple[int, int] | None:
    """The block device (major, minor) the host's target is or lives on, None when unknown."""
    text = answer.get("device")
    if not isinstance(text, str) or len(text) > 24:
        return None
    major, sep, minor = text.partition(":")
    if not sep or not major.isdigit() or not minor.isdigit() or not major.isascii() or not minor.isascii():
        return None
    return int(major), int(minor)


def shape_of(answer: dict[str, object]) -> TargetShape:
    exists, block, size = answer.get("exists"), answer.get("block"), answer.get("size")
    if not isinstance(exists, bool) or not isinstance(block, bool):
        raise BadAnswer("'exists' or 'block' is not true or false")
    if size is not None and (not isinstance(size, int) or isinstance(size, bool) or not 0 <= size < 1 << 63):
        raise BadAnswer("'size' is not a byte count")
    return TargetShape(exists, block, size)


def read_target(doc: object) -> dict[str, object]:
    """The ``target`` object of a host's ``devices --json --target`` answer, checked (BadAnswer otherwise)."""
    if not isinstance(doc, dict) or not isinstance(doc.get("target"), dict):
        raise BadAnswer("the answer has no 'target' object")
    answer: dict[str, object] = doc["target"]
    path = answer.get("path")
    if not isinstance(path, str) or not path.startswith("/") or len(path) > 4096 or clean_line(path, None) != path:
        raise BadAnswer("'path' is not an absolute path")
    facts = read_facts(answer)
    shape = shape_of(answer)
    _agree(facts, shape, answer)
    return answer


def parse_answer(text: str) -> object:
    """A host's JSON answer, refused (BadAnswer) when it is not JSON or nests deeper than MAX_DEPTH levels
    (json.loads recurses per level: a deep enough answer would end in a RecursionError)."""
    try:
        doc = json.loads(text)
    except RecursionError:
        raise BadAnswer(f"it nests deeper than {MAX_DEPTH} levels") from None
    except ValueError:
        raise BadAnswer("it is not JSON") from None
    stack = [(doc, 1)]
    while stack:
        value, depth = stack.pop()
        if depth > MAX_DEPTH:
            raise BadAnswer(f"it nests deeper than {MAX_DEPTH} levels")
        children = value.values() if isinstance(value, dict) else value if isinstance(value, list) else ()
        stack.extend((c, depth + 1) for c in children)
    return doc


# --- the facts, read as untrusted input ---------------------------------------------------------------------


def _flag(d: dict[str, object], key: str, where: str) -> bool:
    value = d.get(key)
    if not isinstance(value, bool):
        raise BadAnswer(f"'{where}.{key}' is missing or of the wrong type")
    return value


def _name(value: object, where: str) -> str:
    if not isinstance(value, str) or not _KERNEL_NAME.fullmatch(value):
        raise BadAnswer(f"'{where}' is not a device name")
    return value


def _names(value: object, where: str) -> list[str]:
    if not isinstance(value, list) or len(value) > MAX_LIST:
        raise BadAnswer(f"'{where}' is not a list of device names")
    return [_name(v, where) for v in value]


def _texts(value: object, where: str) -> list[str]:
    if not isinstance(value, list) or len(value) > MAX_LIST or not all(isinstance(v, str) for v in value):
        raise BadAnswer(f"'{where}' is not a list of texts")
    return [clean_line(v, 300) for v in value]


def _optional_text(value: object, where: str) -> str | None:
    if value is not None and not isinstance(value, str):
        raise BadAnswer(f"'{where}' is not text")
    return None if value is None else clean_line(value, 300)


def _size(value: object, where: str) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or not 0 <= value < 1 << 63:
        raise BadAnswer(f"'{where}' is not a byte count")
    return value


def _device(value: object, name: str) -> safety.DeviceFacts:
    where = f"facts.devices.{name}"
    if not isinstance(value, dict):
        raise BadAnswer(f"'{where}' is not an object")
    mounts = _texts(value.get("mounts"), where + ".mounts")
    if any(not m.startswith("/") for m in mounts):
        raise Contradiction(f"'{where}' is mounted without a mount point")
    loop = value.get("backs_loop")
    holders = _names(value.get("holders"), where + ".holders")
    if name in holders:
        raise Contradiction(f"'{where}' holds itself")
    return safety.DeviceFacts(_flag(value, "root", where), mounts, _flag(value, "swap", where),
                              None if loop is None else _name(loop, where + ".backs_loop"), holders,
                              _flag(value, "read_only", where))


def _probe(value: object) -> safety.Probe:
    if not isinstance(value, dict):
        raise BadAnswer("'facts.probe' is not an object")
    tool = value.get("tool")
    if tool not in (None, "blkid", "wipefs"):
        raise BadAnswer("'facts.probe.tool' is not blkid or wipefs")
    return safety.Probe(_optional_text(value.get("fstype"), "facts.probe.fstype"),
                        _optional_text(value.get("pttype"), "facts.probe.pttype"),
                        _optional_text(value.get("usage"), "facts.probe.usage"),
                        _texts(value.get("signatures"), "facts.probe.signatures"), tool,
                        _optional_text(value.get("error"), "facts.probe.error"))


def _block_facts(d: object, path: str) -> safety.BlockFacts:
    if not isinstance(d, dict) or d.get("kind") != "block":
        raise BadAnswer("the block device's facts are missing")
    name = _name(d.get("name"), "facts.name")
    raw = d.get("devices")
    if not isinstance(raw, dict) or not 0 < len(raw) <= MAX_DEVICES:
        raise BadAnswer("'facts.devices' is not an object of 1 to 256 devices")
    devices = {_name(k, "facts.devices"): _device(v, k) for k, v in raw.items()}
    parent = d.get("parent")
    parent = None if parent is None else _name(parent, "facts.parent")
    parts = _names(d.get("parts"), "facts.parts")
    exclusive = d.get("exclusive")
    if not (isinstance(exclusive, list) and len(exclusive) == 2
            and exclusive[0] in ("ok", "busy", "no-medium", "error") and isinstance(exclusive[1], str)):
        raise BadAnswer("'facts.exclusive' is not an exclusive open's outcome")
    facts = safety.BlockFacts(_path_of(d, path), name, _size(d.get("size"), "facts.size"), parent, parts, devices,
                              (exclusive[0], clean_line(exclusive[1], 100)), _probe(d.get("probe")),
                              _texts(d.get("udev"), "facts.udev"),
                              _names(d.get("root_siblings"), "facts.root_siblings"))
    _block_agrees(facts)
    return facts


def _block_agrees(f: safety.BlockFacts) -> None:
    """BadAnswer when a block device's facts contradict each other."""
    named = {f.name, *f.parts, *([f.parent] if f.parent else [])}
    for d in f.devices.values():
        named.update(d.holders)
    missing = sorted(named - f.devices.keys())
    if missing:
        raise Contradiction(f"the facts name device {missing[0]!r} without saying how it is in use")
    if f.parent and (f.parts or f.parent == f.name or f.parent in f.root_siblings):
        raise Contradiction("the facts give a partition partitions of its own, or make it its own disk")
    if f.name in f.parts or f.name in f.root_siblings:
        raise Contradiction("the facts list the device among its own partitions")
    if f.root_siblings and not f.parent:
        raise Contradiction("the facts give a whole disk sibling partitions")
    if f.exclusive[0] == "ok" and any(d.mounts or d.swap or d.root for d in [f.devices[f.name]]):
        raise Contradiction("the facts say the device is in use, yet opened exclusively")
    if f.probe.fstype and not f.probe.signatures:
        raise Contradiction("the facts name a filesystem type but no signature")


def _path_of(d: dict[str, object], path: str) -> str:
    if d.get("path") != path:
        raise Contradiction("the facts are about another path than the answer")
    return path


def _file_facts(d: dict[str, object], path: str) -> safety.FileFacts:
    kind = d.get("kind")
    for key in ("devices", "holders", "parts", "parent"):
        if key in d:
            raise Contradiction(f"the facts give a {kind} target {key}")
    if kind == "other":
        refusal = _optional_text(d.get("refusal"), "facts.refusal")
        if not refusal:
            raise BadAnswer("the facts refuse the target without saying why")
        return safety.FileFacts(_path_of(d, path), "other", refusal=refusal)
    exists, swap = _flag(d, "exists", "facts"), _flag(d, "swap", "facts")
    size = _size(d.get("size"), "facts.size")
    loop = d.get("backs_loop")
    loop = None if loop is None else _name(loop, "facts.backs_loop")
    if not exists and (size or swap or loop):
        raise Contradiction("the facts give a file that does not exist a size or a use")
    given = d.get("loop")
    if loop and given is None:
        raise BadAnswer("the facts say the file backs a loop device but not how that device is in use")
    block = _block_facts(given, safety.dev_path(loop)) if loop and given is not None else None
    if block is not None and block.name != loop:
        raise Contradiction("the facts give another loop device than the one the file backs")
    if d.get("refusal") is not None:
        raise Contradiction("the facts refuse a regular file")
    return safety.FileFacts(_path_of(d, path), "file", exists, size, swap, loop, block)


def read_facts(answer: dict[str, object]) -> safety.BlockFacts | safety.FileFacts:
    """The facts of a host's answer, checked: BadAnswer when they are missing, malformed or contradict each
    other."""
    facts, path = answer.get("facts"), answer.get("path")
    if not isinstance(facts, dict):
        raise BadAnswer("it carries no facts about the target (is profiler-tui on that host older than this one?)")
    if not isinstance(path, str):
        raise BadAnswer("'path' is not an absolute path")
    kind = facts.get("kind")
    if kind == "block":
        return _block_facts(facts, path)
    if kind in ("file", "other"):
        return _file_facts(facts, path)
    raise BadAnswer(f"unknown target kind {clean_line(kind, 40)!r}")


def _agree(facts: safety.BlockFacts | safety.FileFacts, shape: TargetShape, answer: dict[str, object]) -> None:
    """BadAnswer when the facts contradict the answer's shape or the kind and confirmation of its verdicts."""
    block = isinstance(facts, safety.BlockFacts)
    kind = "block" if block else facts.kind  # type: ignore[union-attr]
    if shape.block != block:
        raise Contradiction(f"it says {'block' if shape.block else 'not block'} device and gives facts of a {kind}")
    if block and (not shape.exists or shape.size != facts.size):
        raise Contradiction("a block device without its size, or with two sizes")
    if isinstance(facts, safety.FileFacts) and kind == "file" and shape.exists != facts.exists:
        raise Contradiction("it says the file exists and does not")
    for writes in (True, False):
        said_kind, needs_yes = _host_verdict(answer, writes)
        if said_kind != kind:
            raise Contradiction(f"its verdict is about a {said_kind}, its facts about a {kind}")
        if block and not needs_yes:
            raise Contradiction("it says a block device needs no confirmation (--yes)")
