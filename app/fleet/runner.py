"""Fleet runs: every plan point runs on all hosts at once, in one ``fio --client`` invocation.

For a point, each host that still lacks it gets its own job file in ``raw/`` (``NNNN-JOB@HOST.fio``: the
host's target and shape), and one fio process runs them all::

    fio --output-format=json+ --eta=never --client=ADDR1 JOB1 [--readonly] --client=ADDR2 JOB2 …

fio's client writes one JSON document at the end, whose ``client_stats`` hold each host's group-reported job
(``hostname`` and ``port`` as the client connected to them) and, for several hosts, an "All clients" sum.  That
document is kept as ``NNNN-JOB.fleet.json``; each host's figures are computed from its own ``client_stats``
entry alone (:func:`app.runners.fio_parse.metrics`), so they are exactly fio's.  A host without an entry (its
agent unreachable or gone mid-point) or with a job error fails only its own host-point, with fio's message.

fio's client reports nothing while the jobs run, so the live figures of a host come from its target's block
device counters (:mod:`app.fleet.meter`).

fio's protocol has no keepalive: a host that vanishes without closing its connection (power lost, a frozen
machine, a cut network) would leave the client waiting for ever.  So a point that outlives twice its expected
time plus a grace (``PROFILER_TUI_FLEET_STALL_S``, 120 s by default), and saw no I/O on any measured target
for the last grace seconds (I/O keeps it alive for at most ten graces more: a file laid out slowly), is
stopped: fio is interrupted, and every host without figures fails this point with a sentence saying so.  fio's
client writes its JSON only when every host has answered, so the hosts that did answer lose this point too;
``resume`` measures it again.
"""

from __future__ import annotations

import asyncio
import json
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, AsyncGenerator, Sequence, cast

from app.core import settings
from app.fleet import hosts as fleet_hosts
from app.fleet.hosthist import ALL_CLIENTS as ALL_CLIENTS  # fio's sum of the hosts, named here too
from app.fleet.hosthist import SPARE_DUMPS, ClientStream, final_entries, host_entries
from app.fleet.hosts import DEFAULT_AGENT_SOCKET, MAX_HOSTS, Host
from app.fleet.links import HostUnreachable, Link, close_links, open_links
from app.fleet.meter import FleetMeter
from app.model.points import StoragePoint
from app.model.records import JSONObject, Parts, StorageMetrics
from app.plan.openloop import open_loop_part, rate_options
from app.plan.presets import estimate_point_seconds
from app.plan.procedure import OfferedLoad, offered_load
from app.runners.base import Child, Context, Event, Phase, Result, Sample, stop_process
from app.runners.fio import (
    STATUS_INTERVAL_S,
    FioRunner,
    TargetShape,
    fio_binary,
    job_file,
    job_name,
    with_interval,
)
from app.runners.fio_parse import metrics, split_documents, unserved
from app.stats.latmap import HIST_SUFFIX
from app.stats.uncertainty import none_because
from app.store.results import write_new

STALL_ENV = settings.FLEET_STALL_S.name
DEFAULT_STALL_S = 120
STALL_CAP_GRACES = 10  # I/O seen on a target keeps a late point alive for at most this many graces more
MAX_OUTPUT_BYTES = 256 << 20
FLEET_SUFFIX = ".fleet.json"
# the live figures are the target device's block counters (other I/O counts, merges differ): no series of fio's
# own figures to compute an interval of their mean from
NO_HOST_SAMPLES = none_because("fio's client reports a host's figures only when the point ends, and only their "
                               "latency histograms are kept a second at a time, so there are no per-second samples "
                               "of them")


@dataclass
class Fleet:
    """The hosts of a fleet run, their targets, and the links that reach them."""

    hosts: list[Host]
    targets: dict[str, str]  # host name → target path on that host
    agent_socket: str = DEFAULT_AGENT_SOCKET  # the agents' socket on the ssh hosts
    links: dict[str, Link] = field(default_factory=dict)
    shapes: dict[str, TargetShape] = field(default_factory=dict)  # host → its target, as the host said
    devices: dict[str, tuple[int, int] | None] = field(default_factory=dict)  # host → its target's block device
    # what the sweep tells before the run (sweep.FleetTargets.assign_missing): plan index → hosts still to
    # measure it; and what each check learns: host → why it could not be asked (its host-points of that round fail)
    missing: dict[int, list[str]] = field(default_factory=dict)
    unreachable: dict[str, str] = field(default_factory=dict)

    def open(self) -> "Fleet":
        if not self.links:
            fleet_hosts.CONSENT.check(self.hosts)  # nothing is connected to a tcp:// host the user did not allow
            self.links = {link.host.name: link for link in open_links(self.hosts, self.agent_socket)}
        return self

    def close(self) -> None:
        close_links(list(self.links.values()))
        self.links = {}

    def check(self, writes: bool, *, yes: bool, allow_destructive: bool, strict: bool = True) -> None:
        """Judge every host's target for this plan with the user's confirmations.  SafetyError (exit 3) naming
        the host when one may not run.  A host that cannot be asked: HostUnreachable when ``strict`` (before
        the run), else ``unreachable`` says why (its host-points of this round fail)."""
        self.open()
        unreachable: dict[str, str] = {}
        for h in self.hosts:
            try:
                judged = self.links[h.name].judge(self.targets[h.name], writes, yes=yes,
                                                  allow_destructive=allow_destructive)
            except HostUnreachable as e:
                if strict:
                    raise
                unreachable[h.name] = str(e)
                continue
            self.shapes[h.name] = judged.shape
            self.devices[h.name] = judged.device
        self.unreachable = unreachable

    def to_meta(self) -> dict[str, Any]:
        return {"hosts": [{**h.to_dict(), "target": self.targets[h.name]} for h in self.hosts],
                "agent_socket": self.agent_socket}


def host_entry(doc: dict[str, Any], address: tuple[str, int | None]) -> dict[str, Any] | None:
    """The ``client_stats`` entry of the host fio reached at ``address`` (hostname, port; a socket's path and
    None: fio names a socket client by its path, each host's own), not the sum: its last, the point's result (the
    ones before it are the status dumps its agent sends once a second, app.fleet.hosthist)."""
    found = host_entries(doc, address)
    return found[-1] if found else None


def stall_grace_from_env() -> int:
    """Seconds without an answer (or I/O) after which a fleet point is stopped: ``PROFILER_TUI_FLEET_STALL_S``."""
    return settings.fleet_stall_s(DEFAULT_STALL_S)


def fleet_command(jobs: Sequence[tuple[str, str, bool]]) -> list[str]:
    """fio's command line for (client address, job file, read-only) per host."""
    argv = [fio_binary(), "--output-format=json+", "--eta=never"]
    for client, path, read_only in jobs:
        argv += [f"--client={client}", path] + (["--readonly"] if read_only else [])
    return argv


def _message(lines: list[str], returncode: int | None) -> str:
    useful = [ln.strip() for ln in lines if ln.strip() and ("err" in ln.lower() or "fio:" in ln or "client" in ln
                                                            or "fail" in ln.lower() or "refused" in ln.lower())]
    if useful:
        return "; ".join(dict.fromkeys(useful))[:600]
    return f"fio exited with status {returncode} and gave no result for this host"


class _ClientRun:
    """What one ``fio --client`` process gave: its last document with ``client_stats``, its other lines."""

    def __init__(self, stdout: str, stderr: str, returncode: int | None, wall: float, stalled: str = "") -> None:
        docs, noise = split_documents(stdout)
        self.doc = next((d for d in reversed(docs) if "client_stats" in d), None)
        self.lines = noise + stderr.splitlines()
        self.message = stalled or _message(self.lines, returncode)
        self.wall = wall

    def keep(self, path: Path) -> dict[str, Path]:
        """fio's document without the hosts' status dumps (app.fleet.hosthist.final_entries), written to ``path``
        (the results lines name it ``raw.fleet``)."""
        if self.doc is None:
            return {}
        write_new(path, json.dumps({**self.doc, "client_stats": final_entries(self.doc)}, indent=1).encode())
        return {FLEET_SUFFIX: path}


class FleetRunner(FioRunner):
    """The fio runner's points (one at a time, fio's version), each measured on every host that lacks it."""

    def __init__(self, fleet: Fleet) -> None:
        fio_binary()  # ToolMissing (exit 4) before anything is created
        self.fleet = fleet
        self.stall_s = stall_grace_from_env()  # a bad value: exit 2 before anything is created

    def _job(self, index: int, point: StoragePoint, host: Host, ctx: Context) -> tuple[str, str, bool]:
        """(fio's client address, job file, read-only) of the host's job, its file written to raw/."""
        shape = self.fleet.shapes.get(host.name) or TargetShape(False, False, None)
        load = offered_load([point], 0, {})  # an absolute rate, or a share of the point's xmax (a fleet plan gives one)
        more = rate_options(point, load.iops) if isinstance(load, OfferedLoad) else None
        text = job_file(point, self.fleet.targets[host.name], ctx.plan_writes, more, shape=shape)
        path = ctx.raw_dir / f"{index:04d}-{job_name(point)}@{host.slug}.fio"
        write_new(path, text.encode())
        read_only = not ctx.plan_writes and shape.exists
        return self.fleet.links[host.name].fio_client, str(path), read_only

    async def run_point(self, index: int, point: StoragePoint, ctx: Context) -> AsyncGenerator[Event, None]:
        ctx.raw_dir.mkdir(parents=True, exist_ok=True)
        unreachable = self.fleet.unreachable
        wanted = self.fleet.missing.get(index, [h.name for h in self.fleet.hosts])
        hosts = [h for h in self.fleet.hosts if h.name in wanted]
        job = job_name(point)
        for h in [h for h in hosts if h.name in unreachable]:
            yield Result(index, None, {}, self._extra(h, job, 0.0), error=unreachable[h.name])
            await asyncio.sleep(0)  # the event loop handles a SIGTERM/^C between host results
        hosts = [h for h in hosts if h.name not in unreachable]
        if not hosts:
            return
        jobs = {h.name: self._job(index, point, h, ctx) for h in hosts}
        yield Phase(index, "measuring")
        started = time.monotonic()
        # a host that drops mid-point must not kill the client (SIGPIPE) and the other hosts' results with it
        child = await Child.start(*fleet_command(list(jobs.values())), ignore_sigpipe=True)
        meter = FleetMeter(self.fleet.links, self.fleet.devices, [h.name for h in hosts])
        stalled = ""
        # no keepalive in fio's protocol: past twice the expected time, a point stays alive only while
        # some target still does I/O, for at most the grace after the last I/O seen
        alive_until = started + 2 * estimate_point_seconds(point) + self.stall_s
        cap = alive_until + STALL_CAP_GRACES * self.stall_s  # a target shared with other I/O: still an end
        # a host's status dumps: at most one a second of the longest time the point may run
        out = ClientStream(MAX_OUTPUT_BYTES, int((cap - started) / STATUS_INTERVAL_S) + 1 + SPARE_DUMPS)
        try:
            reading = asyncio.ensure_future(self._read(child, out))
            while not reading.done():
                await asyncio.wait({reading}, timeout=1.0)
                now = time.monotonic()
                for sample in meter.read(now - started):
                    if sample["host"] is None and (sample["iops"] or sample["bw_bytes"]):
                        alive_until = min(cap, max(alive_until, now + self.stall_s))
                    yield Sample(index, sample)
                if not reading.done() and now > alive_until:
                    why = (f"the last {self.stall_s} s with no I/O on any target" if alive_until < cap else
                           f"the cap of {STALL_CAP_GRACES} graces of {self.stall_s} s past its expected time")
                    stalled = (f"fio was still waiting for a host after {now - started:.0f} s, {why} "
                               f"({STALL_ENV}); the point was stopped")
                    await stop_process(child.proc)  # SIGINT: fio prints what it has; SIGKILL after 3 s
                    await asyncio.wait({reading}, timeout=5.0)
                    break
            if reading.done():
                reading.result()
            else:  # a process that outlived fio still holds its stdout
                reading.cancel()
                await asyncio.wait({reading})
            stderr = await child.finish() if not stalled else child.stderr_if_done()
        finally:
            await child.close()
            meter.close()
        run = _ClientRun(out.text(), stderr, child.proc.returncode, time.monotonic() - started, stalled)
        files = run.keep(ctx.raw_dir / f"{index:04d}-{job}{FLEET_SUFFIX}")
        for h in hosts:
            hist = self._host_hists(h, run, out, ctx.raw_dir / f"{index:04d}-{job}@{h.slug}{HIST_SUFFIX}")
            yield self._host_result(index, h, job, run, {**files, **hist, ".fio": Path(jobs[h.name][1])}, point)
            await asyncio.sleep(0)  # the event loop handles a SIGTERM/^C between host results

    @staticmethod
    def _extra(h: Host, job: str, wall: float, fio_version: object = None, measured: bool = False) -> Parts:
        """The host's parts of its line (the session adds the host's own target after ``host``)."""
        return Parts(host=h.name, wall_s=round(wall, 3), job=f"{job}@{h.slug}",
                     fio_version=fio_version if isinstance(fio_version, str) else None,
                     keys=("host", "wall_s", "job") + (("fio_version",) if measured else ()))

    def _host_hists(self, h: Host, run: "_ClientRun", out: ClientStream, path: Path) -> dict[str, Path]:
        """The host's per-second histograms written to ``path`` from its status dumps (app.fleet.hosthist), {}
        when it has none; why a host's dumps were not kept is added to what fio said (the point's stderr)."""
        seconds = out.host(self.fleet.links[h.name].fio_address)
        if seconds is None:
            return {}
        lines, why = seconds.result(int(run.wall / STATUS_INTERVAL_S) + 1)
        if why and seconds.dumps > 1:
            run.lines.append(f"profiler-tui: host {h.name}: no per-second histograms kept: {why}.")
        if not lines:
            return {}
        try:
            write_new(path, "".join(line + "\n" for line in lines).encode())
        except OSError:
            return {}  # the results line is what counts: without the file, the point has no heat map
        return {HIST_SUFFIX: path}

    def _host_result(self, index: int, h: Host, job: str, run: "_ClientRun", files: dict[str, Path],
                     point: StoragePoint | None = None) -> Result:
        """One host's result of the point: its own ``client_stats`` entry, or why there is none."""
        raw: dict[str, str | bytes] = {}
        if any(ln.strip() for ln in run.lines):
            raw[".stderr.txt"] = "\n".join(run.lines)
        entry = host_entry(run.doc, self.fleet.links[h.name].fio_address) if run.doc is not None else None
        if run.doc is None or entry is None:
            return Result(index, None, raw, self._extra(h, job, run.wall),
                          error=f"host {h.name}: no result from fio ({run.message})", files=files)
        one = {"fio version": run.doc.get("fio version"), "client_stats": [entry]}
        raw[".json"] = json.dumps(one, indent=1)
        m = metrics(one, jobs=[entry])
        sm = with_interval(StorageMetrics.of(m), NO_HOST_SAMPLES)
        ex = self._extra(h, job, run.wall, one["fio version"], measured=True)
        load = offered_load([point], 0, {}) if point is not None else None
        if point is not None and isinstance(load, OfferedLoad):  # open loop: the host's rate, in-flight levels
            runtime = entry.get("job_runtime")
            seconds = runtime / 1000 if isinstance(runtime, (int, float)) and not isinstance(runtime, bool) else None
            loop = open_loop_part(point, load.to_dict(), [], [entry], m.get("iops"), seconds)
            ex = replace(ex, open_loop=cast(JSONObject, loop), keys=ex.keys + ("open_loop",))
        if m.get("errors"):
            return Result(index, sm, raw, ex,
                          error=f"host {h.name}: fio job error {entry.get('error')} ({run.message})", files=files)
        why = unserved(m)
        return Result(index, sm, raw, ex, error=f"host {h.name}: {why}" if why else None, files=files)

    @staticmethod
    async def _read(child: Child, out: ClientStream) -> None:
        async for chunk in child.chunks():
            out.feed(chunk)


def open_fleet(host_values: Sequence[str], target_values: Sequence[str],
               agent_socket: str = DEFAULT_AGENT_SOCKET) -> Fleet:
    """The fleet of ``--host``/``--target`` values, checked (UsageError, also a tcp:// host without the consent
    it needs) but not connected yet."""
    from app.fleet.hosts import check_socket_path, host_targets, parse_hosts

    hosts = parse_hosts(host_values)
    fleet_hosts.CONSENT.check(hosts)
    return Fleet(hosts, host_targets(hosts, target_values), check_socket_path(agent_socket, "--agent-socket"))


def fleet_from_meta(meta: Any, source: str) -> Fleet:
    """The fleet run.json recorded (untrusted: every host and target is parsed again)."""
    from app.core.errors import UsageError
    from app.fleet.hosts import check_remote_path, check_socket_path, parse_host

    if not isinstance(meta, dict) or not isinstance(meta.get("hosts"), list) or not meta["hosts"]:
        raise UsageError(f"{source}: key 'fleet' has invalid value: expected its hosts and targets.")
    if len(meta["hosts"]) > MAX_HOSTS:
        raise UsageError(f"{source}: key 'fleet.hosts' names {len(meta['hosts'])} hosts; a fleet run takes at most "
                         f"{MAX_HOSTS} hosts.")
    hosts, targets = [], {}
    for i, entry in enumerate(meta["hosts"]):
        if not isinstance(entry, dict):
            raise UsageError(f"{source}: key 'fleet.hosts[{i}]' is not an object.")
        h = parse_host(str(entry.get("host")), f"{source}: key 'fleet.hosts[{i}].host'")
        hosts.append(h)
        target = entry.get("target")
        targets[h.name] = check_remote_path(target if isinstance(target, str) else "",
                                            f"{source}: key 'fleet.hosts[{i}].target'")
    if len({(h.scheme, h.address, h.port) for h in hosts}) < len(hosts):
        raise UsageError(f"{source}: key 'fleet.hosts' names the same host twice.")
    agent_socket = meta.get("agent_socket", DEFAULT_AGENT_SOCKET)
    check_socket_path(agent_socket if isinstance(agent_socket, str) else "",
                      f"{source}: key 'fleet.agent_socket'")
    return Fleet(hosts, targets, agent_socket)

