"""The command line (README.md, "What it does"). With no subcommand it opens the TUI."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import sys
from typing import TYPE_CHECKING, Any, Mapping, TextIO

import click

from app import __version__
from app.core import settings
from app.core.errors import ENDING_SIGNALS, EXIT_INTERRUPTED, ProfilerError, UsageError
from app.core.sanitize import clean_line, clean_text
from app.core.textable import fit_line, format_table, stream_width
from app.plan import presets
from app.stats.summary import point_label, results_table

if TYPE_CHECKING:  # imported where a run starts: `--help`, `presets` and `report` stay quick (no asyncio)
    from pathlib import Path

    from app.cli.eventstream import EventWriter
    from app.cli.progress import ProgressPrinter
    from app.engine.sweep import RunFinished, Session

ENGINE_CHOICE = click.Choice(list(presets.ENGINES))


def on_terminal(stream: TextIO) -> bool:
    """Whether ``stream`` goes to a terminal that can redraw (a TTY, and TERM is not ``dumb``).  There the
    CLI draws with rich (app.cli.console, imported only then: the UI side of the import contract); anywhere
    else — a pipe, a file, a CI log — it prints the core's plain text."""
    if settings.term() == "dumb":
        return False
    try:
        return stream.isatty()
    except (AttributeError, ValueError, OSError):  # a closed or fileno-less stream
        return False


def tool_lines() -> list[str]:
    """Which measuring tools this installation would use (for --version)."""
    from app.core.errors import ToolMissing
    from app.runners.fio import fio_binary, fio_version
    from app.runners.memory import MemoryRunner

    try:
        fio = f"{fio_version()} ({fio_binary()})"
    except ToolMissing:
        fio = "not found (storage runs need it)"
    try:
        runner = MemoryRunner("auto")
        memory = ("Intel MLC" if runner.engine == "mlc" else "built-in engine (memlat)") + f" at {runner.binary}"
    except ProfilerError as e:
        memory = f"none: {e}"
    return [f"storage: {fio}", f"memory engine (--engine auto): {memory}"]


def _version(ctx: click.Context, _param: click.Parameter, value: bool) -> None:
    if not value or ctx.resilient_parsing:
        return
    click.echo(f"profiler-tui, version {__version__}")
    for line in tool_lines():
        click.echo(line)
    ctx.exit()


@click.group(invoke_without_command=True, context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--version", is_flag=True, expose_value=False, is_eager=True, callback=_version,
              help="Show the version and which fio and memory engine are active.")
@click.option("--ascii", "ascii_mode", is_flag=True,
              help="The TUI in ASCII only, 16 colours at most (automatic for TERM=linux, vt100, vt220, dumb and "
                   "other consoles; PROFILER_TUI_ASCII=1 too).")
@click.pass_context
def cli(ctx: click.Context, ascii_mode: bool) -> int | None:
    """A terminal profiler for memory and storage: fio sweeps, loaded memory latency, reports.

    Without a command it opens the interactive TUI.
    """
    settings.check()  # a bad value of a variable read deep inside (a switch, the swap watch): said before anything
    settings.check()  # a bad value of a variable read deep inside (a switch, the swap watch): said before anything
    if ctx.invoked_subcommand is None:
        from app.fleet.hosts import agent_socket_from_env
        from app.tui import run_tui  # the UI is imported only when it is used

        return run_tui(agent_socket=agent_socket_from_env(), ascii=ascii_mode)
    return None


# --- devices ----------------------------------------------------------------------------------


@cli.command()
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@click.option("--target", metavar="PATH",
              help="Also judge PATH (a file or block device) for a write and a read-only plan; with --json the "
                   "output is then {\"devices\": [...], \"target\": {...}} (what a fleet controller reads).")
def devices(as_json: bool, target: str | None) -> int:
    """Block devices with size, model, transport, mounts, filesystem and the safety verdict."""
    from app.host.container import device_access_problem
    from app.host.devices import list_devices, render_devices_table

    devs = list_devices()
    about = None
    if target is not None:
        from app.fleet.inspect import describe_target

        if not target.startswith("/") or any(ord(c) < 32 for c in target):
            raise UsageError(f"--target {target[:120]!r}: expected an absolute path without control characters.")
        about = describe_target(target)
    if as_json:
        click.echo(json.dumps(devs if about is None else {"devices": devs, "target": about}, indent=2))
        return 0
    if about is not None:
        for plan, v in (("write", about["write"]), ("read", about["read"])):
            click.echo(clean_line(f"{about['path']}, {plan} plan: {v['verdict']} ({'; '.join(v['reasons'])})", None))
    if on_terminal(sys.stdout):
        from app.cli.console import print_devices

        print_devices(devs, sys.stdout)
    else:
        click.echo(render_devices_table(devs))
    problem = device_access_problem()
    if problem:  # in a container without --privileged / -v /dev:/dev: say which flag, not "no devices"
        click.echo(problem, err=True)
    return 0


# --- audit ------------------------------------------------------------------------------------


def _audit_target(target: str) -> None:
    """A TARGET audit can read: a block device, a regular file, or a file not made yet in an existing folder."""
    import stat

    if any(ord(c) < 32 for c in target):
        raise UsageError(f"audit {target[:120]!r}: a TARGET has no control characters.")
    try:
        mode = os.stat(target).st_mode
    except FileNotFoundError:
        if os.path.isdir(os.path.dirname(os.path.abspath(target))):
            return  # a file a run would create: its folder's filesystem is audited
        raise UsageError(f"audit {clean_line(target, 120)}: no such file, and its folder does not exist.") from None
    except OSError as e:
        raise UsageError(f"audit {clean_line(target, 120)}: cannot be looked at ({e.strerror}).") from None
    if stat.S_ISDIR(mode):
        raise UsageError(f"audit {clean_line(target, 120)}: a directory; give a file in it (one a run would create "
                         "will do) or a block device.")
    if not (stat.S_ISBLK(mode) or stat.S_ISREG(mode)):
        raise UsageError(f"audit {clean_line(target, 120)}: not a block device or a regular file (a run's target "
                         "is one of these).")


@cli.command()
@click.argument("target", required=False, metavar="[TARGET]")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output (run.json's audit object).")
@click.option("--cpus", metavar="LIST", help="The CPUs the run will use, e.g. 0-3,8 (default: every CPU this "
                                             "process may run on).")
def audit(target: str | None, as_json: bool, cpus: str | None) -> int:
    """The host settings that bend results, for TARGET's device and the run's CPUs: value, what a benchmark
    wants, and why (docs/audit.md). A report: exits 0 whatever it finds."""
    from app.host.audit import audit as read_audit
    from app.host.audit import render, to_json
    from app.host.topology import allowed_cpus, cpu_list

    chosen = None
    if cpus is not None:
        chosen = cpu_list(cpus)
        allowed = set(allowed_cpus())
        if not chosen:
            raise UsageError(f"--cpus {cpus[:60]!r}: expected a CPU list such as 0-3,8.")
        if not set(chosen) <= allowed:
            from app.host.topology import cpu_list_text

            raise UsageError(f"--cpus {cpus[:60]!r}: CPU {min(set(chosen) - allowed)} is not one this process may "
                             f"run on ({cpu_list_text(sorted(allowed))}).")
    if target is not None:
        _audit_target(target)
    found = read_audit(target, chosen)
    if as_json:
        click.echo(json.dumps({**to_json(found), "about": found.about}, indent=2, ensure_ascii=False))
    elif on_terminal(sys.stdout):
        from app.cli.console import print_audit

        print_audit(found, sys.stdout)
    else:
        click.echo(render(found))
    return 0


# --- presets ----------------------------------------------------------------------------------


@cli.group(name="presets", invoke_without_command=True)
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@click.pass_context
def presets_cmd(ctx: click.Context, as_json: bool) -> int | None:
    """List the presets (shipped and your own in ~/.config/profiler-tui/presets)."""
    if ctx.invoked_subcommand is not None:
        return None
    user = presets.user_presets()
    for note in user.notes:  # a user preset another user can change is not listed (nor run): said, not fatal
        click.echo(f"Note: {note}", err=True)
    summaries = [presets.summary(p) for p in presets.load_all(user)]
    if as_json:
        click.echo(json.dumps(summaries, indent=2))
        return 0
    if on_terminal(sys.stdout):
        from app.cli.console import print_presets

        print_presets(summaries, sys.stdout)
        return 0
    rows = [[s["name"], s["kind"], s["points"], s["estimated"], "yes" if s["writes"] else "no", s["description"]]
            for s in summaries]
    click.echo(format_table(["preset", "kind", "points", "est.", "writes", "description"], rows, right=(2, 3)))
    return 0


@presets_cmd.command(name="show")
@click.argument("name")
@click.option("--set", "sets", multiple=True, metavar="KEY=V[,V...]", help="Override a setting or axis.")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
def presets_show(name: str, sets: tuple[str, ...], as_json: bool) -> int:
    """The expanded plan of a preset: every point, the count and the estimated duration."""
    from app.plan.describe import describe_plan, setting_text

    preset = presets.apply_overrides(presets.load(name), sets)
    if as_json:
        points = [p.to_dict() for p in preset.expand()]  # as run.json's "plan" holds them
        click.echo(json.dumps({**presets.summary(preset), "axes": presets.describe_axes(preset), "plan": points},
                              indent=2))
        return 0
    d = describe_plan(preset)
    width = stream_width(sys.stdout)
    lines = [f"{d.name} ({d.kind}) — {d.description}", f"source: {clean_line(d.source, None)}",  # anybody's name
             "settings: " + d.settings_text, *(f"axis {key}: " + d.axis_text(key) for key in d.axes), *d.procedure]
    for line in lines:
        click.echo(fit_line(line, width))
    tables = [p.to_dict() for p in d.points]
    keys = [k for k in tables[0] if k in d.axes or k == "replicate"]
    rows = [[i + 1, point_label(d.kind, p)] + [setting_text(k, p.get(k)) for k in keys] for i, p in enumerate(tables)]
    head = ["#", "point"] + keys
    click.echo(format_table(head, rows, right=(0,), width=width, spill=list(range(len(head) - 1, 1, -1))))
    click.echo(fit_line(f"{d.totals} — {d.access}", width))
    return 0


# --- run / resume -----------------------------------------------------------------------------


_TCP_OPTIONS = (
    click.option("--allow-network", is_flag=True,
                 help="Allow tcp:// hosts on other machines: anyone who can reach such an agent's port runs jobs "
                      "there as root."),
    click.option("--allow-local-users", is_flag=True,
                 help="Allow loopback tcp:// hosts: every user of this machine can run jobs as root on them."),
)


def _consent(allow_network: bool, allow_local_users: bool) -> None:
    from app.fleet import hosts

    hosts.CONSENT = hosts.TcpConsent(allow_network, allow_local_users)


def _warn_tcp(hosts: Any) -> None:
    from app.fleet import hosts as fleet_hosts

    for h in hosts:
        warning = fleet_hosts.CONSENT.warning(h)
        if warning:
            click.echo(warning, err=True)


def _interrupted_line(session: Session) -> str:
    records = session.measured_lines()
    return (f"Interrupted: {len(records)} of {len(session.plan)} points are kept in {session.path}; "
            f"finish with `profiler-tui resume {session.path}`.")


def _ignore_endings() -> None:
    """From here on no signal cuts the clean-up short (app.core.errors.ENDING_SIGNALS ignored)."""
    for sig in ENDING_SIGNALS:
        try:
            signal.signal(sig, signal.SIG_IGN)
        except (ValueError, OSError):  # not the main thread
            return


def drop_lost_output() -> None:
    """app.cli.progress.drop_lost_output, imported where a run is under way (app.cli.progress loads asyncio)."""
    from app.cli.progress import drop_lost_output as drop

    drop()


def _say(line: str) -> None:
    """One line on stderr while the run ends: output that cannot be written is dropped."""
    try:
        click.echo(line, err=True)
    except OSError:
        drop_lost_output()


class StartUpInterrupt:
    """The handler of every signal that ends the process (app.core.errors.ENDING_SIGNALS: SIGINT, SIGTERM, SIGHUP, …)
    for ``run`` and ``resume`` outside their event loop (``_drive``), which handles them while the run goes.

    Before the loop nothing has been measured and nothing changed, so a signal ends the process at once: exit
    130 and one line, after a fleet's ssh connections are closed (app.fleet.links.close_all); after the loop the
    run has already ended and recorded how.  It raises nothing into whatever Python is doing at that moment (a
    KeyboardInterrupt raised while a module is being imported can surface as another exception, with a
    traceback).  Once the session's run.json exists (``track``), it is first marked ``interrupted``.  The steps
    that create run.json hold these signals back (app.engine.sweep), so the handler never runs half-way through them.
    """

    def __init__(self) -> None:
        self.session: Session | None = None

    def install(self) -> None:
        for sig in ENDING_SIGNALS:  # SIGTERM too: a fleet start-up's ssh connections and directories go first
            try:
                signal.signal(sig, self)
            except ValueError:  # not the main thread: nothing to install
                return

    def track(self, session: Session) -> None:
        self.session = session

    def __call__(self, signum: int, frame: Any) -> None:
        _ignore_endings()  # a second ^C does not cut this short
        line = "profiler-tui: interrupted."
        if self.session is not None:
            self.session.mark_interrupted()
            try:
                line = _interrupted_line(self.session)
            except Exception:
                pass
        try:
            sys.stdout.flush()
        except Exception:
            pass
        links = sys.modules.get("app.fleet.links")
        if links is not None:  # a fleet start-up: its ssh connections and forwards end before the process
            try:
                links.close_all()
            except Exception:
                pass
        try:
            os.write(2, (line + "\n").encode())
        except OSError:
            pass
        os._exit(EXIT_INTERRUPTED)


START_UP = StartUpInterrupt()


async def _drive(session: Session, printer: ProgressPrinter, stream: EventWriter | None = None) -> RunFinished:
    """Iterate the run's events, printing them (and writing them to the event stream); the run's last event
    (events() ends with it or raises)."""
    import asyncio  # here, not at the top: `report`, `compare`, `presets` start without it (~70 ms)

    from app.engine.sweep import RunFinished

    loop = asyncio.get_running_loop()
    task = asyncio.current_task()
    assert task is not None
    stopping: list[int] = []

    def interrupt(sig: int) -> None:
        if not stopping:  # the first signal stops the run; none after it cuts the run's clean-up short
            stopping.append(sig)
            drop_lost_output()
            task.cancel()

    for sig in ENDING_SIGNALS:  # from here a signal stops the run cleanly (replaces START_UP)
        loop.add_signal_handler(sig, interrupt, sig)
    finished: RunFinished | None = None
    events = session.events()
    try:
        async for event in events:
            if isinstance(event, RunFinished):
                finished = event
            try:
                printer.handle(event)
            except OSError:  # the terminal or the pipe the progress goes to is gone: nobody follows the run now
                drop_lost_output()
                if finished is None:
                    raise asyncio.CancelledError() from None
            if stream is not None:
                stream.handle(event)
    finally:
        await events.aclose()  # the run's own clean-up, when it is left early, still under the handlers above
        for sig in ENDING_SIGNALS:
            loop.remove_signal_handler(sig)
        START_UP.install()
    assert finished is not None, "Session.events() ended without RunFinished"
    return finished


def _progress_printer(session: Session, human: TextIO, json_stream: bool) -> ProgressPrinter:
    """A live bar (app.cli.console) when the person's stream is a terminal, plain lines otherwise.  With
    ``--json-stream`` onto the same terminal the events' lines would tear the bar: plain lines then too."""
    if on_terminal(human) and not (json_stream and on_terminal(sys.stdout)):
        from app.cli.console import RichProgress

        return RichProgress(session.kind, human)
    from app.cli.progress import ProgressPrinter

    return ProgressPrinter(session.kind, human)


def _execute(session: Session, json_stream: bool = False) -> int:
    """Run a session to its end; it holds the results directory's lock until then.  With ``json_stream`` the
    events go to stdout as NDJSON (app.cli.eventstream) and everything meant for a person to stderr."""
    import asyncio

    from app.cli.eventstream import EventWriter, ended_object
    from app.host.container import results_volume_warning, shown_path
    from app.host.sparse import hole_warning

    human = sys.stderr if json_stream else sys.stdout
    stream = EventWriter(sys.stdout) if json_stream else None
    lost = results_volume_warning(session.path)
    if lost:  # in a container without a /results volume, --rm throws the results away
        click.echo(f"Warning: {lost}", err=True)
    holes = hole_warning(session.target, [session.plan[i] for i, _ in session.pending()],
                         session.procedure.precondition)
    if holes:  # a sparse target's reads are the filesystem's zeros: said before the first point, not only after
        click.echo(fit_line(f"Warning: {clean_line(holes, None)}", stream_width(sys.stderr)), err=True)
    try:
        notice = session.runner.notice
        if notice:  # e.g. --engine auto falling back to the built-in memory engine
            click.echo(notice, err=True)
        printer = _progress_printer(session, human, json_stream)
        try:
            finished = asyncio.run(_drive(session, printer, stream))
        finally:
            try:
                printer.close()
            except OSError:  # the terminal went away meanwhile
                drop_lost_output()
    except (asyncio.CancelledError, KeyboardInterrupt):
        _ignore_endings()  # a second ^C does not cut the clean-up short
        session.mark_interrupted()  # when the interrupt came before the run itself recorded it
        line = _interrupted_line(session)
        if stream is not None:
            stream.write(ended_object("interrupted", line))
        _say(line)
        return EXIT_INTERRUPTED
    except ProfilerError as e:
        if stream is not None:
            stream.write(ended_object("failed", str(e)))
        raise
    finally:
        session.close()
        if stream is not None:  # waits for a reader that reads, never for one that stopped (app.cli.eventstream)
            stream.close()
    records = session.measured_lines()
    if records:
        click.echo(results_table(records, stream_width(human)), file=human)
        for line in _summary(session.path, stream_width(human)):
            click.echo(line, file=human)
    skipped = len(session.skipped())
    click.echo(fit_line(f"{finished.status}: {finished.done}/{finished.total} points"
                        + (f", {finished.failed} failed (see run.json)" if finished.failed else "")
                        + (f", {skipped} skipped (see run.json)" if skipped else "")
                        + f" — results in {shown_path(session.path)}", stream_width(human)), file=human)
    return 0 if finished.failed == 0 else 1


def _summary(path: Path, width: int | None) -> list[str]:
    """The report's summary (the answers, with their ±, then the flags in words) as the run's last lines; none
    when the results directory cannot be read back (the run itself already succeeded or failed)."""
    from dataclasses import replace

    from app.report.compute import analysis
    from app.report.data.model import load
    from app.report.sections.answer import plain_lines

    try:
        data = load(path)
    except ProfilerError:
        return []
    # open-loop points answer in their own section: their iodepth is a cap, their load the offered rate
    opened = [r for r in data.storage if r.point.get("rate") is not None]
    data = replace(data, storage=[r for r in data.storage if r.point.get("rate") is None])
    return ["", *plain_lines(data, analysis.storage_curves(data.storage, data.path),
                             analysis.DEFAULT_P99_BOUND_US * 1e3, width,
                             opened)]


@cli.command()
@click.argument("preset")
@click.option("--target", "targets", multiple=True, metavar="PATH",
              help="A file (created if absent) or a block device. Default: a file in --out. With --host: the "
                   "target on every host, or HOST=PATH for one host (HOST exactly as given to --host).")
@click.option("--host", "hosts", multiple=True, metavar="ssh://[USER@]HOST[:PORT] | unix:///SOCKET | tcp://ADDR:PORT",
              help="Run on this fleet host's agent (profiler-tui agent) too; repeat for each host. ssh:// forwards "
                   "a socket of this run to the agent's socket on the host; unix:// is an agent's socket here; "
                   "tcp:// connects directly (needs --allow-network or --allow-local-users).")
@click.option("--agent-socket", default="/run/profiler-tui/agent.sock", show_default=True, metavar="PATH",
              envvar=settings.AGENT_SOCKET.name,
              help="The agents' socket on ssh:// hosts (also PROFILER_TUI_AGENT_SOCKET).")
@_TCP_OPTIONS[0]
@_TCP_OPTIONS[1]
@click.option("--start-agent", is_flag=True,
              help="Start each host's agent as a container of --agent-image through the host's Docker Engine API "
                   "(reached over SSH; privileged, no network, /dev and the socket's directory) for this run, and "
                   "remove it when the run ends or is interrupted. The image must already be on the host. See "
                   "docs/fleet.md.")
@click.option("--agent-image", metavar="IMAGE",
              help="The image --start-agent runs on each host (built or loaded there; nothing is pulled). "
                   "Default: profiler-tui.")
@click.option("--out", metavar="DIR", help="Results directory (default: results/PRESET-TIMESTAMP).")
@click.option("--set", "sets", multiple=True, metavar="KEY=V[,V...]",
              help="Override a scalar or replace a matrix axis, e.g. --set bs=4k,64k --set runtime=3.")
@click.option("--yes", is_flag=True, help="Confirm the target (needed for block devices).")
@click.option("--allow-destructive", is_flag=True,
              help="Confirm destroying a filesystem or partition table on the device.")
@click.option("--engine", type=ENGINE_CHOICE, default="auto", show_default=True, help="Memory engine.")
@click.option("--adaptive", is_flag=True,
              help="Skip the rest of a QD or numjobs axis once it saturates (same as --set adaptive=yes).")
@click.option("--json-stream", is_flag=True,
              help="Write the run's events to stdout as NDJSON (one object per line); progress goes to stderr.")
@click.option("--tune", is_flag=True,
              help="Set the benchmark values the audit names (I/O scheduler none, write-back throttling off, CPU "
                   "governor performance, deep idle states off) for the run and restore them when it ends; root "
                   "only. See docs/tune.md.")
def run(preset: str, targets: tuple[str, ...], hosts: tuple[str, ...], agent_socket: str, allow_network: bool,
        allow_local_users: bool, start_agent: bool, agent_image: str | None, out: str | None, sets: tuple[str, ...],
        yes: bool, allow_destructive: bool, engine: str, adaptive: bool, json_stream: bool, tune: bool) -> int:
    """Run PRESET (a shipped name or a TOML file) headlessly, here or on fleet hosts (--host)."""
    START_UP.install()
    _consent(allow_network, allow_local_users)
    from app.engine.sweep import new_session

    if adaptive:
        sets = sets + ("adaptive=yes",)
    p = presets.apply_overrides(presets.load(preset), sets)
    fleet = None
    if hosts:
        from app.fleet.runner import open_fleet

        fleet = open_fleet(hosts, targets, agent_socket)
        _warn_tcp(fleet.hosts)
    elif len(targets) > 1:
        raise UsageError(f"--target was given {len(targets)} times; without --host a run has one target.")
    elif targets and "://" in targets[0].split("=", 1)[0] and "=" in targets[0]:
        raise UsageError(f"--target {targets[0][:120]!r} names a fleet host's target (HOST=PATH): give that host "
                         "with --host too.")
    if (start_agent or agent_image is not None) and fleet is None:
        raise UsageError("--start-agent and --agent-image start the agents of fleet hosts: give --host too.")
    if agent_image is not None and not start_agent:
        raise UsageError(f"--agent-image {agent_image!r} is the image --start-agent runs: give --start-agent too.")
    with contextlib.ExitStack() as agents:
        if start_agent and fleet is not None:
            from app.fleet.containers import started_agents  # loads the docker SDK: only when asked for

            agents.enter_context(started_agents(fleet.hosts, image=agent_image or "profiler-tui",
                                                socket=fleet.agent_socket))
        session = new_session(p, target=None if fleet else (targets[0] if targets else None), out=out, yes=yes,
                              allow_destructive=allow_destructive, engine=engine, overrides=sets,
                              on_created=START_UP.track, fleet=fleet, tune_settings=tune)
        for note in p.notes():  # what plan-time values came to here: one node's 1x1 matrices …
            click.echo(f"Note: {note}.", err=True)
        _tune_lines(session)
        return _execute(session, json_stream)


def _tune_lines(session: Session, preview: bool = True) -> None:
    """What the session restored of a killed --tune run, and what --tune will change (stderr)."""
    for line in session.notes + (session.tune_preview() if preview else []):
        click.echo(clean_line(line, None), err=True)


@cli.command()
@click.argument("directory", metavar="DIR")
@click.option("--engine", type=ENGINE_CHOICE, default=None, help="Memory engine (default: the run's own).")
@click.option("--yes", is_flag=True, help="Confirm the target again (needed for block devices, as for run).")
@click.option("--allow-destructive", is_flag=True, help="Confirm again destroying a filesystem or partition table.")
@click.option("--json-stream", is_flag=True, help="As for run: the events to stdout as NDJSON, progress to stderr.")
@_TCP_OPTIONS[0]
@_TCP_OPTIONS[1]
def resume(directory: str, engine: str | None, yes: bool, allow_destructive: bool, json_stream: bool,
           allow_network: bool, allow_local_users: bool) -> int:
    """Finish an interrupted run without repeating completed points.

    The plan in DIR/run.json is validated again and the target checked again with the same rules and
    confirmations as `run`: confirmations given to the first run are not carried over."""
    START_UP.install()
    _consent(allow_network, allow_local_users)
    from app.engine.sweep import load_session

    session = load_session(directory, engine=engine, yes=yes, allow_destructive=allow_destructive)
    START_UP.track(session)
    try:
        if not session.pending():
            _tune_lines(session, preview=False)
            skipped = len(session.skipped())
            click.echo(f"Nothing to resume: all {len(session.plan) - skipped} points of {directory} are complete"
                       + (f" ({skipped} skipped)." if skipped else "."))
            return 0
        _tune_lines(session)
        return _execute(session, json_stream)
    finally:
        session.close()


@cli.command()
@click.option("--socket", "socket_path", metavar="PATH",
              help="The Unix socket fio's server listens on (default /run/profiler-tui/agent.sock), in a directory "
                   "of this user with mode 0700 (created if absent).")
@click.option("--bind", metavar="ADDR", help="Listen on TCP at this address instead (needs --allow-local-users for "
                                              "a loopback address, --allow-network for another).")
@click.option("--port", type=click.IntRange(1, 65535), help="The TCP port (default 8765 with --bind).")
@click.option("--allow-network", is_flag=True,
              help="Allow a non-loopback --bind: fio's server has no authentication (anyone reaching it runs jobs "
                   "as root).")
@click.option("--allow-local-users", is_flag=True,
              help="Allow a loopback --bind: every user of this machine can then run jobs as root.")
def agent(socket_path: str | None, bind: str | None, port: int | None, allow_network: bool,
          allow_local_users: bool) -> int:
    """Serve fio jobs for a fleet controller (`run --host`): fio --server on this host, until SIGTERM."""
    from app.fleet.agent import run_agent

    return run_agent(socket_path, bind, port, allow_network, allow_local_users)


# --- report / import / compare (docs/report.md) --------------------------------------------------


def _finite(value: float, name: str) -> float:
    """nan passes click's FloatRange (every comparison with it is false), inf is not a bound."""
    import math

    if not math.isfinite(value):
        raise click.BadParameter(f"{value} is not a finite number.", param_hint=f"'{name}'")
    return value


@cli.command()
@click.argument("directory", metavar="DIR")
@click.option("--out", metavar="FILE", help="Write the report here (default: DIR/report.md); plots/ and results.csv "
              "go beside it.  FILE ending in .html: the HTML report there, the Markdown one beside it as .md.")
@click.option("--p99-bound-us", type=click.FloatRange(min=0, min_open=True), default=1000.0, show_default=True,
              callback=lambda _ctx, _param, v: _finite(v, "--p99-bound-us"),
              help="Latency bound for the best operating point: p99 at most this many µs.")
@click.option("--html", "html", is_flag=True, help="Also write report.html (beside the report, same name): one "
              "self-contained file with the figures inlined, to share; nothing in it is fetched or run.")
def report(directory: str, out: str | None, p99_bound_us: float, html: bool) -> int:
    """(Re)render report.md, plots/ and results.csv (and with --html report.html) from a results directory."""
    import atexit
    import gc

    from app.report import render_report

    # at exit the interpreter's last collection would walk the million objects matplotlib's and pandas' imports
    # made, only to free them as the process ends (a quarter of a second of CPU): frozen, they are not walked
    atexit.register(gc.freeze)
    path = render_report(directory, out, p99_bound_us=p99_bound_us, html=html)
    click.echo(f"report: {path}")
    if html or (out or "").lower().endswith(".html"):
        from app.report.html import html_path

        click.echo(f"html: {html_path(path)}")
    return 0


@cli.command(name="import")
@click.argument("files", nargs=-1, required=True, metavar="FILE...")
@click.option("--out", required=True, metavar="DIR", help="The results directory to create.")
def import_cmd(files: tuple[str, ...], out: str) -> int:
    """Ingest fio JSON / json+ outputs and MLC text outputs into a results directory."""
    from app.engine.importer import import_files

    path, sources = import_files(list(files), out)
    for s in sources:
        click.echo(f"{s['file']}: {s['format']}, {_sections(s)}{s['points']} point(s)")
        for warning in s.get("warnings", []):  # e.g. a section import could not read, by name
            click.echo(f"  warning: {warning}")
    click.echo(f"imported {sum(s['points'] for s in sources)} point(s) into {path}; "
               f"`profiler-tui report {path}` renders the report")
    return 0


def _sections(source: Mapping[str, object]) -> str:
    """The sections an MLC file's points came from, as the import line shows them: ``5 sections (idle latency
    matrix, …), ``; nothing for a fio file."""
    names = source.get("sections")
    if not isinstance(names, list) or not names:
        return ""
    return f"{len(names)} section{'s' if len(names) > 1 else ''} ({', '.join(map(str, names))}), "


@cli.command()
@click.argument("directory", metavar="DIR")
@click.argument("other", required=False, metavar="[DIR2]")
@click.option("--reference", metavar="NAME_OR_TOML", help="Compare with a spec sheet (presets/references/NAME.toml "
              "or a TOML path) instead of a second run.")
@click.option("--host", "hosts", multiple=True, metavar="HOST", help="Compare two hosts of the fleet run DIR: "
              "give --host twice, each exactly as the run's --host named it.")
@click.option("--out", metavar="FILE", help="Also write the tables (markdown) to FILE.")
@click.option("--json", "as_json", is_flag=True, help="Print each difference (diff, low, high, method, "
              "within_noise) and the counts as JSON instead of the tables.")
def compare(directory: str, other: str | None, reference: str | None, hosts: tuple[str, ...], out: str | None,
            as_json: bool) -> int:
    """Ratio tables: two runs matched point by point, two hosts of a fleet run, or a run against a spec sheet."""
    from app.cli.compare import compare_hosts, compare_reference, compare_runs, load_reference

    if hosts and (other is not None or reference is not None):
        raise UsageError("compare --host: --host compares two hosts of the one fleet run DIR; give no DIR2 and "
                         "no --reference with it.")
    if not hosts and (other is None) == (reference is None):
        raise UsageError("compare: give a second results directory, --reference NAME_OR_TOML or two --host "
                         "(exactly one of them).")
    found: dict[str, object] = {}
    if hosts:
        text = compare_hosts(directory, hosts, found)
    elif other is not None:
        text = compare_runs(directory, other, found)
    else:
        assert reference is not None  # exactly one of the two, checked above
        text = compare_reference(directory, load_reference(reference), found)
    if out:
        from app.cli.compare import write_text

        write_text(out, text)
    if as_json:
        click.echo(json.dumps(found, ensure_ascii=False, allow_nan=False))
    elif on_terminal(sys.stdout):
        from app.cli.console import print_markdown

        print_markdown(text, sys.stdout)
    else:
        click.echo(text, nl=False)
    return 0


INTERRUPTED_LINE = "profiler-tui: interrupted."


def main(argv: list[str] | None = None) -> None:
    # nothing the tool or its children (fio, matplotlib) create is writable by group or others, whatever the
    # umask it was started with (a stricter umask is kept)
    os.umask(os.umask(0o022) | 0o022)
    try:
        rv = cli.main(args=argv, prog_name="profiler-tui", standalone_mode=False)
    except click.exceptions.Abort as e:
        _ignore_endings()
        click.echo(INTERRUPTED_LINE if isinstance(e.__cause__, KeyboardInterrupt) else "Aborted.", err=True)
        sys.exit(EXIT_INTERRUPTED)
    except KeyboardInterrupt:
        _ignore_endings()
        click.echo(INTERRUPTED_LINE, err=True)
        sys.exit(EXIT_INTERRUPTED)
    except click.ClickException as e:
        e.show()
        sys.exit(e.exit_code)
    except ProfilerError as e:
        click.echo(f"profiler-tui: {clean_text(e, newlines=True)}", err=True)  # it may quote a host or a tool
        sys.exit(e.exit_code)
    sys.exit(rv if isinstance(rv, int) else 0)
