"""Plain data passed between screens: the chosen target and what a run is asked to do."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from app.screens import messages as msg


@dataclass(frozen=True)
class TargetChoice:
    """A storage target as the user confirmed it.  ``path=None`` is the default test file."""

    label: str
    path: str | None = None
    allow_writes: bool = True
    yes: bool = False  # the plain confirmation every block-device plan needs
    allow_destructive: bool = False  # the device name was typed
    test_file_dir: Path | None = None

    @classmethod
    def test_file(cls, results_dir: Path) -> "TargetChoice":
        return cls(label=msg.TEST_FILE_LABEL, path=None, allow_writes=True, test_file_dir=results_dir)

    @property
    def display(self) -> str:
        return self.path or f"{msg.TEST_FILE_LABEL} (under {self.test_file_dir or 'the results directory'})"


@dataclass
class RunRequest:
    preset: Any  # app.presets.Preset, overrides applied
    target: TargetChoice | None  # None for memory presets
    out: Path
    engine: str = "auto"
    overrides: list[str] = field(default_factory=list)


def run_dir(results_dir: Path, preset_name: str) -> Path:
    """A fresh results directory for one run, unique even within the same second."""
    stamp = datetime.now().strftime("%Y%m%d-%H%M%S")
    base = Path(results_dir) / f"{preset_name}-{stamp}"
    path, n = base, 1
    while path.exists():
        n += 1
        path = base.with_name(f"{base.name}-{n}")
    return path
