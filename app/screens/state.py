"""Plain data shared by the screens: the app's options, the chosen target, what a run is asked to do,
and the helpers that turn one into the other."""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Protocol, cast

from app.core import settings
from app.engine.sweep import Session, recorded_plan
from app.fleet.hosts import DEFAULT_AGENT_SOCKET
from app.host.audit import Audit
from app.plan import presets as core
from app.plan.presets import Preset
from app.screens import strings
from app.store.results import new_run_dir

# a fleet host's connection test (app.screens.fleet.probe_host; tests replace it)
Probe = Callable[[str, str], "HostProbe"]


@dataclass
class HostProbe:
    """What testing a host's connection found.  ``error``: the host could not be reached (one sentence)."""

    host: str
    address: str = ""  # where fio reaches the agent
    agent: bool | None = None  # something answers there (None: the host was not reached)
    devices: list[dict[str, object]] | None = None  # None: not listed (see ``devices_note``)
    devices_note: str | None = None  # why the devices are not listed
    error: str | None = None

    @property
    def state(self) -> str:
        """ok | agent-down | unreachable"""
        if self.error is not None:
            return "unreachable"
        return "ok" if self.agent else "agent-down"


def results_problem(results_dir: Path) -> str | None:
    """In a thread: why no run could write its results under ``results_dir`` (one sentence in the TUI's words), or
    None (app.host.container.results_dir_problem)."""
    from app.host.container import results_dir_problem

    return results_dir_problem(results_dir, choose=strings.RESULTS_CHOOSE)


@dataclass
class Options:
    """What the app is started with; tests replace the parts that touch the machine."""

    devices: list[dict[str, object]] | Callable[[], list[dict[str, object]]] | None = None  # None: app.host.devices
    results_dir: Path = field(default_factory=settings.results_root)
    overrides: tuple[str, ...] = ()  # --set equivalents applied to every run (keys the preset knows)
    engine: str = "auto"  # memory engine for presets
    clock: Callable[[], float] = time.monotonic
    chart_interval: float = 0.5  # chart redraw period (s): 2 Hz
    # SIGTERM/SIGHUP/SIGINT (docker stop, SSH hang-up, kill -INT) stop a run cleanly, then exit 130
    handle_signals: bool = False
    # warnings about the container the app runs in (app.host.container.environment_warnings), computed in a
    # thread by the devices screen; None: not checked (tests)
    environment: Callable[[], list[str]] | list[str] | None = None
    # why no run could write under results_dir (checked in a thread by the devices screen; a run is then refused)
    results_check: Callable[[Path], str | None] | None = results_problem
    agent_socket: str = DEFAULT_AGENT_SOCKET  # the fleet agents' socket on ssh:// hosts (run --agent-socket)
    # tests: replaces app.screens.fleet.probe_host (a fleet host's connection test, run in a thread)
    probe_host: Probe | None = None
    # the host's settings for a target (app.host.audit.audit), read in a thread while the target confirmation is shown;
    # None: not read (tests)
    audit: Callable[[str], Audit] | None = None
    # ASCII mode (app.screens.ascii): nothing but ASCII on screen, 16 colours at most
    ascii: bool = False
    # the settings file the units toggle is remembered in (app.host.config); None: neither read nor written (tests)
    settings: Path | None = None


class _ProfilerApp(Protocol):
    """What screens use of app.screens.application.ProfilerApp (a screen sees its app as Textual's App)."""

    options: Options
    sessions: list[Session]
    results_problem: str | None


def app_options(app: object) -> Options:
    """The options the running app was started with."""
    return cast(_ProfilerApp, app).options


def set_results_problem(app: object, problem: str) -> None:
    """Why no run can write its results (a sentence): the app refuses to start or resume one while it is set."""
    cast(_ProfilerApp, app).results_problem = problem


def app_sessions(app: object) -> list[Session]:
    """Every session a run screen of the running app created (the app's exit marks those that did not end)."""
    return cast(_ProfilerApp, app).sessions


@dataclass(frozen=True)
class TargetChoice:
    """A storage target as the user confirmed it.  ``path=None`` is the default test file."""

    label: str
    path: str | None = None
    allow_writes: bool = True
    yes: bool = False  # the plain confirmation every block-device plan needs
    allow_destructive: bool = False  # the device name was typed
    tune: bool = False  # the host's settings the audit names set for the run and put back after it (--tune)
    test_file_dir: Path | None = None
    # a fleet run: the hosts (each as the user wrote it), ``path`` the target on every host (None when each
    # host has its own) and the hosts' own targets (host, path)
    hosts: tuple[str, ...] = ()
    host_targets: tuple[tuple[str, str], ...] = ()
    agent_socket: str = DEFAULT_AGENT_SOCKET

    @classmethod
    def test_file(cls, results_dir: Path) -> "TargetChoice":
        return cls(label=strings.TEST_FILE_LABEL, path=None, allow_writes=True, test_file_dir=results_dir)

    @property
    def fleet(self) -> bool:
        return bool(self.hosts)

    def target_values(self) -> list[str]:
        """The ``--target`` values of a fleet run: ``PATH`` (every host) and ``HOST=PATH`` (one host's own)."""
        return ([self.path] if self.path else []) + [f"{host}={path}" for host, path in self.host_targets]

    @property
    def display(self) -> str:
        if self.fleet:
            own = len(dict(self.host_targets))
            if self.path is None:
                return strings.FLEET_OWN_TARGETS_DISPLAY.format(n=len(self.hosts))
            shown = strings.FLEET_TARGET_DISPLAY.format(path=self.path, n=len(self.hosts))
            return shown + (strings.FLEET_SOME_OWN_DISPLAY.format(own=own) if own else "")
        return self.path or f"{strings.TEST_FILE_LABEL} (under {self.test_file_dir or 'the results directory'})"


@dataclass
class RunRequest:
    preset: Preset  # overrides applied
    target: TargetChoice | None  # None for memory presets
    out: Path
    engine: str = "auto"
    overrides: list[str] = field(default_factory=list)
    resume: bool = False  # finish the run already in ``out`` (app.engine.sweep.load_session) instead of a new one


def overrides_for(kind: str, overrides: tuple[str, ...] | list[str]) -> list[str]:
    """The app-wide overrides this kind of preset knows (runtime/size mean nothing to memory)."""
    keys = core.KEYS[kind]
    return [o for o in overrides if o.partition("=")[0].strip() in keys]


def run_request(options: Options, preset: Preset, target: TargetChoice | None,
                engine: str | None = None) -> RunRequest | str:
    """What a run of ``preset`` (overrides applied) is asked to do, or why it may not run (a sentence)."""
    if target is not None and target.fleet and preset.kind != core.STORAGE:
        return strings.FLEET_MEMORY.format(preset=preset.name)
    if preset.kind == core.STORAGE:
        target = target or TargetChoice.test_file(options.results_dir)
        if preset.writes() and not target.allow_writes:
            return strings.WRITES_NOT_CONFIRMED.format(preset=preset.name, target=target.display)
    else:
        target = None
    return RunRequest(preset=preset, target=target, out=new_run_dir(options.results_dir, preset.name),
                      engine=engine or options.engine, overrides=overrides_for(preset.kind, options.overrides))


@dataclass
class ResumeTarget:
    """What resuming a results directory needs to ask: its run's name and kind, its target, whether the rest of
    the run writes, and for a block device the safety verdicts the confirmation shows (checked now)."""

    path: Path
    preset: Preset
    target: str | None
    writes: bool
    device: dict[str, object] | None = None
    fleet: list[tuple[str, str]] | None = None  # a fleet run: each host and its target, as run.json names them
    agent_socket: str = DEFAULT_AGENT_SOCKET


def resume_target(path: Path) -> ResumeTarget | str:
    """In a thread: run.json read and its plan validated as ``resume`` does (a sentence when it cannot be)."""
    import stat as stat_

    from app.core.errors import ProfilerError
    from app.host import safety
    from app.model.points import Kind
    from app.store.results import ResultsDir

    try:
        recorded = recorded_plan(ResultsDir(path))
    except ProfilerError as e:
        return str(e)
    meta, kind, writes = recorded.meta, recorded.kind, recorded.writes
    name = (meta.preset_name or path.name)[:80]
    preset = Preset(name=name, kind=kind, description=(meta.preset.description if meta.preset else None) or "",
                    source=str(path / "run.json"))
    if meta.is_fleet:  # its hosts and targets, checked as `resume` reads them
        from app.fleet.runner import fleet_from_meta

        try:
            fleet = fleet_from_meta(meta.fleet, str(path / "run.json"))
        except ProfilerError as e:
            return str(e)
        return ResumeTarget(path, preset, None, writes, fleet=[(h.name, fleet.targets[h.name]) for h in fleet.hosts],
                            agent_socket=fleet.agent_socket)
    target = meta.target if kind == Kind.STORAGE else None
    device: dict[str, object] | None = None
    if target is not None:
        real = os.path.realpath(target)
        try:
            is_block = stat_.S_ISBLK(os.stat(real).st_mode)
        except OSError:
            is_block = False
        if is_block:
            write, read = safety.classify(target, True), safety.classify(target, False)  # the trust rules too
            device = {"path": real, "name": os.path.basename(real),
                      "write": {"verdict": write.verdict, "reasons": write.reasons},
                      "read": {"verdict": read.verdict, "reasons": read.reasons}}
    return ResumeTarget(path, preset, target, writes, device)
