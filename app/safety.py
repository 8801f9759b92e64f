"""Target safety (SPEC §5).  Placeholder until the device-safety work lands:
regular files are fine, block devices are refused for every plan."""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass, field

from app.errors import SafetyError

OK = "ok"
NEEDS_DESTRUCTIVE = "needs --allow-destructive"
REFUSED = "refused"


@dataclass
class Verdict:
    target: str
    kind: str  # "file" or "block"
    verdict: str
    reasons: list[str] = field(default_factory=list)

    @property
    def allowed(self) -> bool:
        return self.verdict == OK


def resolve(target: str) -> str:
    return os.path.realpath(target)


def classify(target: str, writes: bool) -> Verdict:
    path = resolve(target)
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        return Verdict(path, "file", OK, ["regular file (created)"])
    if stat.S_ISBLK(mode):
        return Verdict(path, "block", REFUSED, ["block-device targets are not supported yet"])
    if stat.S_ISREG(mode):
        return Verdict(path, "file", OK, ["regular file"])
    return Verdict(path, "other", REFUSED, [f"{path} is neither a regular file nor a block device"])


def check_target(target: str, writes: bool, *, yes: bool = False, allow_destructive: bool = False) -> Verdict:
    """Raise SafetyError when the plan may not run on ``target``; else return the verdict."""
    v = classify(target, writes)
    if v.verdict != OK:
        raise SafetyError(f"Refusing target {v.target}: {'; '.join(v.reasons)}.")
    return v
