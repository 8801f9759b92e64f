"""Reading a fleet run's results directory: its hosts from run.json's ``fleet`` and one results line per
(point, host) from results.jsonl.

A fleet run (``profiler-tui run PRESET --host … --host …``) writes one line per plan point *and host*: the
lines of one point share its ``index`` and differ in ``host``; :meth:`app.store.results.ResultsDir.read_records`
keeps the last line of each (``index``, ``host``) pair.

Both files are untrusted: ``fleet`` must be an object whose ``hosts`` is a list of objects with a ``host``
string (``target`` a string or null); anything else is a UsageError naming the key (exit 2).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from app.core.errors import UsageError
from app.model.runmeta import RunMeta, shown

MAX_HOST_CHARS = 255
# a host as --host takes it (app/fleet/hosts.py): ssh://user@name:port, tcp://addr:port, [v6]; nothing that
# could break a markdown table or heading
_HOST = re.compile(r"[A-Za-z0-9._:/@\[\]-]{1,%d}" % MAX_HOST_CHARS)


@dataclass(frozen=True)
class FleetHost:
    host: str  # exactly as given to --host: the ``host`` of its results lines
    target: str  # the target path on that host ("" when run.json names none)


def is_fleet(meta: RunMeta) -> bool:
    """run.json describes a fleet run (its ``fleet`` key is set)."""
    return meta.is_fleet


def _bad(path: Path, key: str, value: object, why: str) -> UsageError:
    return UsageError(f"{path}: key '{key}' has invalid value {shown(value)}: {why}.")


def fleet_hosts(meta: RunMeta, path: Path) -> list[FleetHost]:
    """The hosts run.json's ``fleet`` names, in its order (UsageError naming the key when ill-typed)."""
    entries = meta.fleet.get("hosts") if meta.fleet is not None else None
    if not isinstance(entries, list) or not entries:
        raise _bad(path, "fleet", meta.fleet, "must be an object with a non-empty list 'hosts'")
    hosts: list[FleetHost] = []
    for i, entry in enumerate(entries):
        key = f"fleet.hosts[{i}]"
        if not isinstance(entry, dict):
            raise _bad(path, key, entry, "must be an object")
        host, target = entry.get("host"), entry.get("target")
        if not isinstance(host, str) or not _HOST.fullmatch(host):
            raise _bad(path, f"{key}.host", host, "must be a host as --host takes it (1 to 255 letters, digits and "
                       "'.', '_', '-', ':', '/', '@', '[', ']')")
        if target is not None and not isinstance(target, str):
            raise _bad(path, f"{key}.target", target, "must be a string")
        if any(h.host == host for h in hosts):
            raise _bad(path, f"{key}.host", host, "the fleet names this host twice")
        hosts.append(FleetHost(host, target or ""))
    return hosts
