"""The parsers of fleet input: --host and --target values, a host's `devices --json --target` answer (it comes over
the network), run.json's fleet entry, and the block counters the live figures read.  Hostile text gets one
UsageError sentence (or a BadAnswer / None), never another exception."""

from __future__ import annotations

import json
import os
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from app.core.errors import UsageError
from app.fleet.hosts import Host, host_targets, parse_host, parse_hosts
from app.fleet.inspect import BadAnswer, describe_target, device_of, read_target, verdict_of
from app.fleet.links import Link
from app.fleet.meter import Counters, parse_stat, rates
from app.fleet.runner import fleet_command, fleet_from_meta, host_entry
from app.model import points
from tests.helpers.typed import storage_point


@pytest.mark.parametrize("text, want", [
    ("tcp://127.0.0.1:8765", Host("tcp://127.0.0.1:8765", "tcp", "127.0.0.1", 8765)),
    ("ssh://node1", Host("ssh://node1", "ssh", "node1", 22)),
    ("ssh://bob@node-1.lab:2222", Host("ssh://bob@node-1.lab:2222", "ssh", "node-1.lab", 2222, "bob")),
    ("tcp://[::1]:9000", Host("tcp://[::1]:9000", "tcp", "::1", 9000)),
    ("ssh://root@[fe80::1]", Host("ssh://root@[fe80::1]", "ssh", "fe80::1", 22, "root")),
    ("unix:///run/profiler-tui/agent.sock", Host("unix:///run/profiler-tui/agent.sock", "unix",
                                                 "/run/profiler-tui/agent.sock", 0)),
])
def test_good_hosts(text: str, want: Host) -> None:
    assert parse_host(text) == want


@pytest.mark.parametrize("text", [
    "", "node1", "http://node1", "ssh://", "ssh://-oProxyCommand=touch /tmp/x", "ssh://-p1", "ssh://a b",
    "ssh://node1\n", "tcp://node1", "tcp://bob@node1:1", "tcp://node1:0", "tcp://node1:65536", "tcp://node1:+1",
    "ssh://node1:22/path", "ssh://node1?x=1", "ssh://-bob@node1", "tcp://[::1", "tcp://[zz]:1", "tcp://::1:80",
    "ssh://" + "a" * 300, "tcp://node1:٣", "ssh://node1:22:33",
    "unix://rel.sock", "unix:///a/../b.sock", "unix:///a=b.sock", "unix:///" + "a" * 120, "unix:///a/", "unix://",
])
def test_bad_hosts_get_one_sentence(text: str) -> None:
    with pytest.raises(UsageError) as e:
        parse_host(text)
    assert "\n" not in str(e.value) and len(str(e.value)) < 400


@settings(max_examples=300)
@given(st.text(max_size=80))
def test_any_host_text_parses_or_gets_a_usage_error(text: str) -> None:
    try:
        h = parse_host(text)
    except UsageError:
        return
    # what parses can go on an ssh or fio command line as one word that is not an option
    assert not h.address.startswith("-") and (h.user is None or not h.user.startswith("-"))
    assert all(c.isprintable() and not c.isspace() for c in h.name)
    assert 1 <= h.port <= 65535 or (h.scheme == "unix" and h.address.startswith("/") and "=" not in h.address)
    assert h.slug and all(c.isalnum() or c in "._-" for c in h.slug)


def test_targets_per_host_and_for_all() -> None:
    hosts = parse_hosts(["tcp://127.0.0.1:1", "tcp://127.0.0.1:2"])
    assert host_targets(hosts, ["/dev/a"]) == {"tcp://127.0.0.1:1": "/dev/a", "tcp://127.0.0.1:2": "/dev/a"}
    assert host_targets(hosts, ["/dev/a", "tcp://127.0.0.1:2=/x=y"]) == {"tcp://127.0.0.1:1": "/dev/a",
                                                                       "tcp://127.0.0.1:2": "/x=y"}
    for bad in (["/a", "/b"], ["tcp://127.0.0.1:1=/a"], ["tcp://127.0.0.1:1=/a", "tcp://127.0.0.1:1=/b", "/c"],
                ["rel"], ["/a\nb"]):
        with pytest.raises(UsageError):
            host_targets(hosts, bad)


def test_fio_addresses_and_command() -> None:
    assert Link(parse_host("tcp://127.0.0.1:9")).fio_client == "ip:127.0.0.1,9"
    assert Link(parse_host("tcp://[::1]:9")).fio_client == "ip6:::1,9"
    assert Link(parse_host("tcp://node1:9")).fio_client == "node1,9"
    assert Link(parse_host("unix:///run/a.sock")).fio_client == "sock:/run/a.sock"
    argv = fleet_command([("ip:127.0.0.1,1", "/r/a.fio", False), ("ip:127.0.0.1,2", "/r/b.fio", True)])
    assert argv[1:] == ["--output-format=json+", "--eta=never", "--client=ip:127.0.0.1,1", "/r/a.fio",
                        "--client=ip:127.0.0.1,2", "/r/b.fio", "--readonly"]


def test_a_host_s_entry_is_found_by_address_never_the_sum() -> None:
    doc = {"client_stats": [{"jobname": "j", "hostname": "127.0.0.1", "port": 1},
                            {"jobname": "j", "hostname": "127.0.0.1", "port": 2},
                            {"jobname": "All clients", "hostname": "127.0.0.1", "port": 3}, "junk"]}
    assert (host_entry(doc, ("127.0.0.1", 2)) or {}).get("port") == 2
    assert host_entry(doc, ("127.0.0.1", 3)) is None
    assert host_entry({"client_stats": "x"}, ("127.0.0.1", 1)) is None
    # fio names a socket client by its path (and some port of its own): the path alone is the host's
    socks = {"client_stats": [{"jobname": "j", "hostname": "/run/a.sock", "port": 8765},
                              {"jobname": "j", "hostname": "/tmp/b/agent.sock", "port": 8765},
                              {"jobname": "All clients", "hostname": "/run/c.sock", "port": 8765}]}
    assert (host_entry(socks, ("/tmp/b/agent.sock", None)) or {}).get("hostname") == "/tmp/b/agent.sock"
    assert host_entry(socks, ("/run/c.sock", None)) is None


def test_tcp_hosts_need_the_user_s_consent() -> None:
    from app.fleet.hosts import TcpConsent

    local, remote, unix = parse_host("tcp://127.0.0.1:1"), parse_host("tcp://192.0.2.1:1"), parse_host("unix:///a.s")
    assert "--allow-local-users" in (TcpConsent().refusal(local) or "")
    assert "--allow-network" in (TcpConsent(local_users=True).refusal(remote) or "")
    # the network is not the local users
    assert "--allow-local-users" in (TcpConsent(network=True).refusal(local) or "")
    assert TcpConsent(network=True).refusal(remote) is None and TcpConsent(local_users=True).refusal(local) is None
    assert TcpConsent().refusal(unix) is None and TcpConsent().refusal(parse_host("ssh://h")) is None
    with pytest.raises(UsageError):
        TcpConsent(local_users=True).check([unix, remote])


def test_a_local_answer_reads_back(tmp_path) -> None:
    answer = read_target({"target": describe_target(str(tmp_path / "new.img"))})
    v = verdict_of(answer, True)
    assert v.verdict == points.Verdict.OK and v.kind == "file"
    assert device_of(answer) is not None
    refused = verdict_of(read_target({"target": describe_target(str(tmp_path))}), True)
    assert refused.verdict == points.Verdict.REFUSED


json_values = st.recursive(st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20),
                           lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=10), inner,
                                                                                       max_size=5), max_leaves=20)


@settings(max_examples=300)
@given(st.dictionaries(st.sampled_from(["path", "exists", "block", "size", "device", "write", "read", "x"]),
                       json_values, max_size=8))
def test_any_answer_reads_or_is_refused(doc: dict[str, Any]) -> None:
    try:
        answer = read_target({"target": doc})
    except BadAnswer:
        return
    for writes in (True, False):
        v = verdict_of(answer, writes)
        assert v.reasons and all("\n" not in r for r in v.reasons)


def test_a_verdict_from_a_host_cannot_claim_more_than_it_is() -> None:
    good = describe_target("/tmp/profiler-tui-nonexistent/x.img")
    for key, value in [("verdict", "fine"), ("verdict", None), ("needs_yes", "no"), ("reasons", []),
                       ("reasons", ["a"] * 100), ("kind", "pipe")]:
        doc = json.loads(json.dumps(good))
        doc["write"][key] = value
        with pytest.raises(BadAnswer):
            read_target({"target": doc})


@pytest.mark.parametrize("meta", [None, [], {"hosts": []}, {"hosts": ["x"]}, {"hosts": [{"host": "ssh://-x"}]},
                                  {"hosts": [{"host": "tcp://127.0.0.1:1", "target": "rel"}]},
                                  {"hosts": [{"host": "unix:///a.sock", "target": "/a"}], "agent_socket": "rel"},
                                  {"hosts": [{"host": "unix:///a.sock", "target": "/a"}], "agent_socket": 8765},
                                  {"hosts": [{"host": f"unix:///{i}.sock", "target": "/a"} for i in range(3000)]},
                                  {"hosts": [{"host": "tcp://127.0.0.1:1", "target": "/a"},
                                             {"host": "tcp://127.0.0.1:1", "target": "/b"}]}])
def test_a_hostile_fleet_entry_in_run_json_is_refused(meta: Any) -> None:
    with pytest.raises(UsageError) as e:
        fleet_from_meta(meta, "/r/run.json")
    assert "/r/run.json" in str(e.value)


def test_run_json_holds_at_most_64_hosts_as_host_does() -> None:
    entry = {"hosts": [{"host": f"unix:///{i}.sock", "target": "/a"} for i in range(64)]}
    assert len(fleet_from_meta(entry, "/r/run.json").hosts) == 64
    entry["hosts"].append({"host": "unix:///64.sock", "target": "/a"})
    with pytest.raises(UsageError) as e:
        fleet_from_meta(entry, "/r/run.json")
    assert str(e.value) == ("/r/run.json: key 'fleet.hosts' names 65 hosts; a fleet run takes at most 64 hosts.")


def test_failures_of_many_hosts_give_the_event_loop_its_turn_between_them(tmp_path) -> None:
    """A SIGTERM that arrives while a point's host failures are recorded reaches the run (exit 130): the runner
    awaits between host results, so the event loop runs the signal's handler before the run can end."""
    import asyncio

    from app.fleet.runner import Fleet, FleetRunner
    from app.runners.base import Context, Result

    hosts = [parse_host(f"unix:///{i}.sock") for i in range(64)]
    fleet = Fleet(hosts, {h.name: "/tmp/x" for h in hosts}, unreachable={h.name: f"host {h.name}: gone"
                                                                          for h in hosts})
    runner = FleetRunner(fleet)
    from app.plan.presets import STORAGE_KEYS

    defaults: dict[str, Any] = {k: spec.default for k, spec in STORAGE_KEYS.items()}
    point = points.StoragePoint(**defaults)
    ctx = Context(target=None, raw_dir=tmp_path / "raw", plan_writes=False)

    async def turns() -> list[int]:
        ticks = [0]

        def tick() -> None:
            ticks[0] += 1
            asyncio.get_running_loop().call_soon(tick)

        asyncio.get_running_loop().call_soon(tick)
        seen = []
        async for event in runner.run_point(0, point, ctx):
            assert isinstance(event, Result) and event.error
            seen.append(ticks[0])
        return seen

    seen = asyncio.run(turns())
    assert len(seen) == 64 and seen[-1] >= 63  # the loop ran between every two host results


def test_block_counters() -> None:
    line = "  100 0 800 50 200 0 1600 150 0 0 0 0 0 0 0 0 0\n"
    c = parse_stat(line)
    assert c == Counters(300, 2400, 200)
    r = rates(Counters(0, 0, 0), c, 2.0)
    assert r == {"iops": 150.0, "bw_bytes": 2400 * 512 / 2.0, "lat_mean_ns": 200 * 1e6 / 300, "lat_p99_ns": None}
    assert rates(c, Counters(0, 0, 0), 1.0) is None  # counters went back (a device replaced): no figure


@given(st.text(max_size=200))
def test_any_counter_text_parses_or_is_none(text: str) -> None:
    c = parse_stat(text)
    assert c is None or (c.ios >= 0 and c.sectors >= 0 and c.ticks_ms >= 0)


def test_targets_say_which_hosts_still_miss_each_point_and_only_assign_missing_tells_the_fleet() -> None:
    """The session's question (which host-points are still to measure) writes nothing; the fleet runner learns
    the answer only through assign_missing.  A local target has one result per point, keyed without a host."""
    from dataclasses import replace

    from app.engine.sweep import FleetTargets, LocalTarget
    from app.fleet.runner import Fleet
    from app.plan import presets
    from app.plan.presets import point_key

    base = storage_point(presets.load("custom").expand()[0])
    plan = [replace(base, iodepth=d) for d in (1, 4, 16)]
    hosts = [parse_host(f"unix:///{n}.sock") for n in ("a", "b")]
    a, b = (h.name for h in hosts)
    fleet = FleetTargets(Fleet(hosts, {h.name: "/tmp/x" for h in hosts}))
    done = {fleet.key(point_key(plan[0]), a), fleet.key(point_key(plan[0]), b), fleet.key(point_key(plan[1]), b)}
    missing = fleet.missing(plan, done, skipped={2})
    assert missing == {1: [a]} and fleet.width == 2
    assert fleet.fleet.missing == {}, "asking wrote nothing"
    fleet.assign_missing(missing)
    assert fleet.fleet.missing == {1: [a]}
    local = LocalTarget(None)
    assert local.width == 1 and local.missing(plan, {point_key(plan[0])}, skipped=set()) == {1: [None], 2: [None]}


def test_a_link_directory_leaves_room_for_its_sockets_under_a_deep_tmpdir(monkeypatch: pytest.MonkeyPatch,
                                                                         tmp_path) -> None:
    """ssh refuses a forward whose local socket path does not fit a sockaddr_un ("Bad local forwarding
    specification"): under a TMPDIR too deep for that, links' directories go to /tmp."""
    import tempfile

    from app.fleet import links

    monkeypatch.setattr(tempfile, "tempdir", "/run/user/0")
    assert links._link_dir().startswith("/run/user/0/" + links.LINK_PREFIX)  # TMPDIR is kept where it fits
    deep = tmp_path / ("d" * 80)
    monkeypatch.setattr(tempfile, "tempdir", str(deep))
    path = links._link_dir()
    assert path.startswith("/tmp/" + links.LINK_PREFIX)
    for name in ("agent.sock", "ctl.0123456789abcdef"):
        assert len(os.path.join(path, name).encode()) <= links.SOCKET_PATH_MAX
