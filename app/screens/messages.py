"""The messages screens post to ask for another screen; :class:`app.screens.application.ProfilerApp`
handles each (``@on``) and pushes the screen, so no screen imports another one to navigate."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from textual.message import Message

from app.plan.presets import Preset
from app.screens.state import TargetChoice

if TYPE_CHECKING:  # loaded with the runs browser's ctrl+y, not at start-up
    from app.engine.replay import Replay


class StartRun(Message):
    """Run ``preset`` (overrides applied) on ``target`` (None: memory, or the default test file)."""

    def __init__(self, preset: Preset, target: TargetChoice | None, engine: str | None = None) -> None:
        super().__init__()
        self.preset = preset
        self.target = target
        self.engine = engine  # None: the app's --engine


class ShowPresets(Message):
    """The preset list for a confirmed target."""

    def __init__(self, target: TargetChoice) -> None:
        super().__init__()
        self.target = target


class ShowCustomSweep(Message):
    """The custom-sweep form for a target, its fields filled from ``start`` (a preset) when given."""

    def __init__(self, target: TargetChoice, start: Preset | None = None) -> None:
        super().__init__()
        self.target = target
        self.start = start


class PrepareCustomSweep(ShowCustomSweep):
    """The custom-sweep form :class:`ShowCustomSweep` would show, made now and kept off screen for the key that
    shows it (asked for when the screen that has the key is idle)."""


class ShowDevices(Message):
    """Back to the device list (the first screen)."""


class ShowResults(Message):
    """The results of a run directory."""

    def __init__(self, path: Path) -> None:
        super().__init__()
        self.path = path


class ShowResultsAhead(ShowResults):
    """The results screen :class:`ShowResults` would show, made now off screen and kept for the key that shows it
    (``r`` as the run ends)."""


class ReadAhead(Message):
    """Read a run directory's results in a thread, for the results screen a key may open next (``r``, the runs
    browser's ``enter``): it then shows them without reading."""

    def __init__(self, path: Path) -> None:
        super().__init__()
        self.path = path


class ShowRuns(Message):
    """The runs browser (every results directory)."""


class ShowReport(Message):
    """The report of a results directory, inside the TUI."""

    def __init__(self, path: Path) -> None:
        super().__init__()
        self.path = path


class ShowFigures(Message):
    """The report's figures of a results directory as pictures (app.screens.figures)."""

    def __init__(self, path: Path) -> None:
        super().__init__()
        self.path = path


class ShowCompare(Message):
    """Run ``a`` against run ``b``, or against the reference sheet ``reference`` (``b`` None)."""

    def __init__(self, a: Path, b: Path | None, reference: str | None = None) -> None:
        super().__init__()
        self.a = a
        self.b = b
        self.reference = reference


class ShowImport(Message):
    """The import form (fio JSON / MLC text files into a new results directory)."""


class ResumeRun(Message):
    """Finish the interrupted run in ``path``: its target confirmed again, then the run screen."""

    def __init__(self, path: Path) -> None:
        super().__init__()
        self.path = path


class ShowReplay(Message):
    """A finished run's live view again (app.engine.replay: its events, already read from its directory)."""

    def __init__(self, replay: Replay) -> None:
        super().__init__()
        self.replay = replay
