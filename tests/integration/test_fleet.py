"""Fleet runs for real: agents (`profiler-tui agent`, fio's server) on Unix sockets of this machine, each with its own
loop device made here, one `fio --client` per point across them; a host that drops mid-run; a refused host
stopping everything before anything runs; one loopback TCP agent with its explicit flags; and one host reached
through a real OpenSSH server started by the test.  The agent's own rules (socket directory, lock, no fio left
after kill -9, nobody locked out) are in tests/integration/test_fleet_agent.py."""

from __future__ import annotations

import json
import os
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable

import pytest

from app.fleet.hosts import parse_host
from app.fleet.links import Link, agent_reachable
from app.fleet.runner import ALL_CLIENTS, NO_HOST_SAMPLES, STALL_ENV
from app.runners.fio_parse import metrics
from tests.conftest import ROOT, run_cli
from tests.helpers import schema_check
from tests.helpers.fleet_agents import agents, fio_servers, kill_matching, processes, stop_process
from tests.helpers.loopdev import loop_device, needs_loop

pytestmark = needs_loop


def _lines(out: Path) -> list[dict]:
    return [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]


def _wait_for_lines(out: Path, n: int, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if (out / "results.jsonl").exists() and len(_lines(out)) >= n:
            return
        time.sleep(0.05)


def _client_stats(out: Path, record: dict) -> list[dict]:
    return json.loads((out / record["raw"]["fleet"]).read_text())["client_stats"]


def test_four_agents_run_quick_with_every_host_figure_fio_s_own(tmp_path: Path) -> None:
    with agents(4) as running, loop_device(tmp_path, name="a", ram=True) as a, \
            loop_device(tmp_path, name="b", ram=True) as b, loop_device(tmp_path, name="c", ram=True) as c, \
            loop_device(tmp_path, name="d", ram=True) as d:
        devs = [a, b, c, d]
        # bs=4k, iodepth=1: quick's eight points merge into its four patterns (read, write, randread, randwrite),
        # each still run once on all four hosts, in half the time
        args = ["run", "quick", "--set", "runtime=1", "--set", "repeat=1", "--set", "bs=4k", "--set", "iodepth=1",
                "--yes", "--json-stream",
                "--out", str(tmp_path / "r")]
        for agent, dev in zip(running, devs):
            args += ["--host", agent.host, "--target", f"{agent.host}={dev.path}"]
        proc = run_cli(*args)
        assert proc.returncode == 0, proc.stderr
        out = tmp_path / "r"
        lines = _lines(out)
        assert len(lines) == 4 * 4
        by_host = {agent.host: dev.path for agent, dev in zip(running, devs)}
        assert {r["host"] for r in lines} == set(by_host)
        for r in lines:
            assert r["target"] == by_host[r["host"]]
            sock = r["host"].removeprefix("unix://")
            stats = _client_stats(out, r)
            # fio names a socket client by its path: each host's entry is its own agent's
            mine = [e for e in stats if e["hostname"] == sock and e["jobname"] != ALL_CLIENTS]
            assert len(mine) == 1
            entry = mine[0]
            # exactly fio's own client_stats figures for this host
            # and why a host's figure has no interval: fio's client gives no per-second figures
            assert r["metrics"] == {**metrics({"client_stats": [entry]}, jobs=[entry]),
                                    "ci_method": NO_HOST_SAMPLES.ci_method}
            assert r["metrics"]["ci_method"]["method"] == "none" and "per-second" in r["metrics"]["ci_method"]["reason"]
            assert r["metrics"]["read_iops"] == entry["read"]["iops"]
            assert r["metrics"]["write_bw_bytes"] == entry["write"]["bw_bytes"]
            assert r["metrics"]["lat_ns"]["mean"] > 0
            # fio's client passes each host's json+ bins on: the fleet's percentiles merge them
            # (app.report.compute.fleet)
            hist = r["metrics"]["lat_hist"]
            assert sum(c for _, c in hist) == entry["read"]["total_ios"] + entry["write"]["total_ios"] > 0
        # each point ran once, on all four hosts together: one fio document per point with all four hosts
        for index in range(4):
            stats = _client_stats(out, next(r for r in lines if r["index"] == index))
            assert sorted(e["hostname"] for e in stats if e["jobname"] != ALL_CLIENTS) == sorted(
                a.socket for a in running)
        meta = json.loads((out / "run.json").read_text())
        assert meta["status"] == "complete" and meta["target"] is None
        checks = lines[0]["checks"]  # the controller reads no host's link or drive: those checks cannot run
        assert checks["above-link"]["result"] == checks["throttled"]["result"] == "not-applicable"
        assert "a fleet run does not read its hosts' drives" in checks["throttled"]["why"]
        assert [h["host"] for h in meta["fleet"]["hosts"]] == [a.host for a in running]
        schema_check.validate_dir(out)
        events = schema_check.validate_events(proc.stdout)
        done = [e for e in events if e["event"] == "point_done"]
        assert len(done) == 16 and {e["record"]["host"] for e in done} == set(by_host)
        assert events[0]["event"] == "run_started" and events[0]["total"] == events[0]["pending"] == 16
        report = run_cli("report", str(out))
        assert report.returncode == 0, report.stderr
        text = (out / "report.md").read_text()
        assert "Fleet" in text and "fleet total (4 hosts)" in text and "fleet median" in text
        tails = text.split("### Fleet tail percentiles", 1)[1].split("**Figure", 1)[0]
        assert "not computed" not in tails.lower() and "Slowest tail: " in tails
        for agent in running:  # a host's name as report.md escapes it (e.g. '_' after '-')
            assert agent.host in text.replace("\\", "")
        assert (out / "plots" / "fleet-iops.svg").stat().st_size > 0 and "plots/fleet-iops.svg" in text
    for agent in running:
        assert not fio_servers(agent.socket)


def _run_on_two(tmp_path: Path, running: list, *args: str) -> None:
    """``run ARGS`` on two agents, each with a RAM loop device of its own, into tmp_path/r: exit 0."""
    with loop_device(tmp_path, name="a", ram=True) as a, loop_device(tmp_path, name="b", ram=True) as b:
        full = ["run", *args, "--yes", "--out", str(tmp_path / "r")]
        for agent, dev in zip(running, (a, b)):
            full += ["--host", agent.host, "--target", f"{agent.host}={dev.path}"]
        proc = run_cli(*full)
        assert proc.returncode == 0, proc.stderr


def test_a_fleet_run_of_quick_runs_its_default_replicates(tmp_path: Path) -> None:
    """quick measures every point 3 times by default; a fleet run does too, without --set repeat=1: each
    replicate on every host at once, shuffled within each replicate from the seed run.json records."""
    with agents(2) as running:
        _run_on_two(tmp_path, running, "quick", "--set", "runtime=1", "--set", "bs=4k", "--set", "iodepth=1",
                    "--set", "rw=randread")
        out = tmp_path / "r"
        lines = _lines(out)
        assert sorted((r["point"]["replicate"], r["host"]) for r in lines) == sorted(
            (rep, agent.host) for rep in (1, 2, 3) for agent in running)
        meta = json.loads((out / "run.json").read_text())
        assert meta["procedure"]["repeat"] == 3 and isinstance(meta["procedure"]["order_seed"], int)
        schema_check.validate_dir(out)
        report = run_cli("report", str(out))
        assert report.returncode == 0, report.stderr
        text = (out / "report.md").read_text()
        assert all(f"randread 4K QD1 T1, replicate {rep}" in text for rep in (1, 2, 3))


def test_a_host_that_drops_fails_only_its_points_and_resume_completes_them(tmp_path: Path) -> None:
    out = tmp_path / "r"
    with agents(2) as (keep, drop):
        # three points: the drop comes after the first, so at least the two others fail on that host
        args = [sys.executable, "-m", "app", "run", "custom", "--set", "runtime=1", "--set", "rw=read,write,randread",
                "--set", "bs=4k", "--host", keep.host, "--host", drop.host, "--target", str(tmp_path / "t.img"),
                "--target", f"{drop.host}={tmp_path / 'u.img'}", "--set", "size=32m", "--out", str(out)]
        proc = subprocess.Popen(args, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            _wait_for_lines(out, 2)  # both hosts finished point 0
            drop.stop()  # the agent goes away (its fio server with it) while the run goes on
            stdout, stderr = proc.communicate(timeout=180)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        assert proc.returncode == 1, stderr
        lines = _lines(out)
        assert sum(r["host"] == keep.host for r in lines) == 3
        missing = 3 - sum(r["host"] == drop.host for r in lines)
        assert missing >= 2
        meta = json.loads((out / "run.json").read_text())
        assert meta["status"] == "partial"
        failures = meta["failures"]
        assert len(failures) == missing and {f["host"] for f in failures} == {drop.host}
        assert all(drop.host in f["error"] for f in failures)
        assert "failed" in stdout
        # the agent is back: resume measures exactly the missing host-points
        drop.start()
        resumed = run_cli("resume", str(out))
        assert resumed.returncode == 0, resumed.stderr
        after = _lines(out)
        assert len(after) == 6
        assert sum(r["host"] == drop.host for r in after) == 3
        assert [r for r in after[:len(lines)]] == lines  # nothing measured again
        new = after[len(lines):]
        assert {r["host"] for r in new} == {drop.host}
        assert json.loads((out / "run.json").read_text())["status"] == "complete"


def test_a_frozen_host_is_stopped_after_the_grace_and_resume_completes_the_point(tmp_path: Path) -> None:
    """fio's protocol has no keepalive: a host frozen with its connection open would hang the run for ever."""
    out = tmp_path / "r"
    env = {**os.environ, STALL_ENV: "2"}
    # RAM loop devices: their I/O counters (which keep a late point alive) are the run's alone
    with agents(2) as (keep, frozen), loop_device(tmp_path, name="a", ram=True) as a, \
            loop_device(tmp_path, name="b", ram=True) as b:
        args = [sys.executable, "-m", "app", "run", "custom", "--set", "runtime=1", "--set", "rw=read",
                "--set", "bs=4k,64k", "--host", keep.host, "--host", frozen.host, "--target", a.path,
                "--target", f"{frozen.host}={b.path}", "--set", "size=16m", "--yes", "--out", str(out)]
        proc = subprocess.Popen(args, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            _wait_for_lines(out, 2)  # both hosts finished point 0
            frozen.freeze()  # it still accepts connections (the kernel does), but never answers
            froze = time.monotonic()
            stdout, stderr = proc.communicate(timeout=120)
            took = time.monotonic() - froze
        finally:
            frozen.thaw()
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        assert proc.returncode == 1, stderr
        meta = json.loads((out / "run.json").read_text())
        assert meta["status"] == "partial"
        assert took < 2 * 1.5 + 2 + 3 + 10, took  # twice the point's 1.5 s, the grace, fio's SIGINT; not the cap
        failed = {(f["index"], f["host"]) for f in meta["failures"]}
        assert (1, frozen.host) in failed and all(i == 1 for i, _ in failed)
        assert all(f"host {f['host']}: " in f["error"] and "the point was stopped" in f["error"]
                   and STALL_ENV in f["error"] for f in meta["failures"])
        # the frozen host again: resume measures exactly the missing host-points
        resumed = run_cli("resume", str(out), "--yes")
        assert resumed.returncode == 0, resumed.stderr
        after = _lines(out)
        assert sorted((r["index"], r["host"]) for r in after) == sorted(
            (i, h) for i in (0, 1) for h in (keep.host, frozen.host))
        assert json.loads((out / "run.json").read_text())["status"] == "complete"


def test_a_bad_stall_grace_is_one_sentence_before_anything_runs(tmp_path: Path) -> None:
    for bad in ("0", "-3", "1.5", "ten", "9" * 40, "86401"):
        proc = subprocess.run([sys.executable, "-m", "app", "run", "quick", "--set", "repeat=1",
                               "--host", "unix:///tmp/none.sock",
                               "--target", "/tmp/x", "--out", str(tmp_path / "r")], cwd=ROOT, capture_output=True,
                              text=True, env={**os.environ, STALL_ENV: bad}, timeout=60)
        assert proc.returncode == 2 and STALL_ENV in proc.stderr, (bad, proc.stderr)
        assert len(proc.stderr.strip().splitlines()) == 1 and "Traceback" not in proc.stderr
        assert not (tmp_path / "r").exists()


def test_a_host_whose_target_is_mounted_stops_a_write_run_before_anything_runs(tmp_path: Path) -> None:
    with agents(2) as (ok, bad), loop_device(tmp_path, name="free", ram=True) as free, \
            loop_device(tmp_path, name="mounted", mkfs="ext4", mount=True) as mounted:
        out = tmp_path / "r"
        proc = run_cli("run", "quick", "--set", "runtime=1", "--set", "repeat=1", "--yes", "--allow-destructive",
                       "--out", str(out),
                       "--host", ok.host, "--host", bad.host, "--target", f"{ok.host}={free.path}",
                       "--target", f"{bad.host}={mounted.path}")
        assert proc.returncode == 3, proc.stderr
        assert bad.host in proc.stderr and "mounted" in proc.stderr
        assert len(proc.stderr.strip().splitlines()) <= 2
        assert not out.exists()  # nothing was created, no job ran anywhere


def _hist_file(out: Path, line: dict) -> dict[float, dict[int, int]]:
    """A host's measured seconds from its raw histograms file, read here directly: end time → value (ns) → count,
    its directions added (the compact record: first value and count, then each next value's step and count)."""
    seconds: dict[float, dict[int, int]] = {}
    for text in (out / line["raw"]["hist"]).read_text().splitlines():
        rec = json.loads(text)
        if rec.get("ramp"):
            continue
        one = seconds.setdefault(rec["t"], {})
        for d in ("read", "write", "trim"):
            flat, value = rec.get(d, []), 0
            for step, count in zip(flat[0::2], flat[1::2]):
                value += step
                one[value] = one.get(value, 0) + count
    return seconds


def _p99(hist: dict[int, int]) -> int:
    """fio's percentile rule on a histogram: the first bucket where the running count reaches 99 % of all."""
    total, running = sum(hist.values()), 0
    for value in sorted(hist):
        running += hist[value]
        if running >= total * 0.99:
            return value
    raise AssertionError("empty histogram")


def test_two_agents_keep_each_hosts_seconds_and_the_reports_merge_is_their_sum(tmp_path: Path) -> None:
    """Each agent sends its fio figures once a second; the controller keeps each host's per-second histograms in
    raw/, and the report's merged heat map and merged p99 are exactly those of both hosts' files added up."""
    from app.core.units import us
    from app.model.tails import hist_of_record
    from app.report.data.model import load
    from app.report.figures.heat import MERGED, fleet_strips
    from app.stats.latmap import heat_map, row_of

    with agents(2) as running:
        _run_on_two(tmp_path, running, "custom", "--set", "runtime=2", "--set", "ramp_time=1", "--set", "rw=randread",
                    "--set", "bs=4k", "--set", "size=4m")
    out = tmp_path / "r"
    lines = _lines(out)
    assert sorted(r["host"] for r in lines) == sorted(agent.host for agent in running)
    per_host = {r["host"]: _hist_file(out, r) for r in lines}
    for r in lines:
        seconds = per_host[r["host"]]
        assert len(seconds) >= 2, seconds.keys()  # a second and the rest of the point, at least
        # the seconds add up to the host's result, bucket by bucket: every I/O fio counted, in its own bucket
        total: dict[int, int] = {}
        for h in seconds.values():
            for v, c in h.items():
                total[v] = total.get(v, 0) + c
        assert total == dict(hist_of_record(r["metrics"]["lat_hist"]) or ())
        # the kept document holds each host's result, not its status dumps (nor fio's sum of their first ones)
        stats = _client_stats(out, r)
        assert sorted(e["hostname"] for e in stats) == sorted(agent.socket for agent in running)
    schema_check.validate_dir(out)
    report = run_cli("report", str(out))
    assert report.returncode == 0, report.stderr

    # the merge computed here: both hosts' seconds, those ending within half a second of each other added up
    union: dict[int, int] = {}
    for seconds in per_host.values():
        for h in seconds.values():
            for v, c in h.items():
                union[v] = union.get(v, 0) + c
    row = next(ln for ln in (out / "report.md").read_text().splitlines()
               if f"{MERGED} (2)" in ln and ln.startswith("|"))
    cells = [c.strip() for c in row.strip("|").split("|")]
    assert cells[1] == f"{sum(union.values()):,}" and cells[2] == us(_p99(union)), (row, _p99(union))

    strips = fleet_strips(out, load(out).storage, lambda p: "p")
    (label, ivs, _), = [s for s in strips if MERGED in s[0]]
    m = heat_map(ivs)
    assert m is not None
    ends = sorted((t, host) for host, seconds in per_host.items() for t in seconds)
    columns: list[dict[str, float]] = []  # host → its second's end
    for t, host in ends:  # a second of each host, ending within half a second of the column's first: one column
        if columns and t - min(columns[-1].values()) <= 0.5 and host not in columns[-1]:
            columns[-1][host] = t
        else:
            columns.append({host: t})
    assert len(m.counts) == len(columns)
    # each whole second shares its column with the other host's: their clocks agree past the ramp (a dump in it is
    # no second); only a last moment (fio's result a few ms after its last dump) may stand alone
    lengths = {(r["host"], rec["t"]): rec["interval_s"] for r in lines
               for rec in map(json.loads, (out / r["raw"]["hist"]).read_text().splitlines())}
    assert all(len(col) == 2 for col in columns if any(lengths[(h, t)] >= 0.5 for h, t in col.items())), columns
    for col, counts in zip(columns, m.counts):
        cell: dict[int, int] = {}
        for host, t in col.items():
            for v, c in per_host[host][t].items():
                cell[row_of(v)] = cell.get(row_of(v), 0) + c
        assert {m.low + i: c for i, c in enumerate(counts) if c} == cell
    assert any(f.name.startswith("latency-heatmap") for f in (out / "plots").iterdir())


def test_one_loopback_tcp_agent_runs_only_with_the_explicit_flags(tmp_path: Path) -> None:
    """TCP stays possible with consent on both sides; each side says who can reach the agent."""
    with agents(1, tcp=True) as (agent,):
        args = ["run", "custom", "--set", "runtime=1", "--set", "rw=read", "--set", "size=8m", "--host", agent.host,
                "--target", str(tmp_path / "t.img")]
        refused = run_cli(*args, "--out", str(tmp_path / "no"))
        assert refused.returncode == 2 and "--allow-local-users" in refused.stderr, refused.stderr
        assert not (tmp_path / "no").exists()
        proc = run_cli(*args, "--allow-local-users", "--out", str(tmp_path / "r"))
        assert proc.returncode == 0, proc.stderr
        assert "every user of this machine can run any fio job as root" in proc.stderr
        line, = _lines(tmp_path / "r")
        stats = [e for e in _client_stats(tmp_path / "r", line) if e["jobname"] != ALL_CLIENTS]
        assert [(e["hostname"], e["port"]) for e in stats] == [("127.0.0.1", agent.port)]
        # resume asks for the consent again, as for --yes
        again = run_cli("resume", str(tmp_path / "r"))
        assert again.returncode == 2 and "--allow-local-users" in again.stderr, again.stderr
        again = run_cli("resume", str(tmp_path / "r"), "--allow-local-users")
        assert again.returncode == 0 and "Nothing to resume" in again.stdout, again.stderr
    assert not fio_servers(agent.port)


U = "unix:///tmp/a.sock"


@pytest.mark.parametrize("args, words", [
    (["--host", "ssh://-oProxyCommand=x"], "not a host name"),
    (["--host", "tcp://127.0.0.1"], "needs the agent's port"),
    (["--host", "tcp://127.0.0.1:70000"], "1 to 65535"),
    (["--host", U, "--host", U], "same host"),
    (["--host", U], "has no target"),
    (["--host", U, "--target", "relative.img"], "absolute path"),
    (["--host", U, "--target", "unix:///tmp/b.sock=/x"], "not one of the --host values"),
    (["--host", "unix://relative.sock", "--target", "/x"], "an agent's socket is an absolute path"),
    (["--host", "unix:///tmp/a b.sock", "--target", "/x"], "without spaces"),
    (["--host", "ssh://h", "--agent-socket", "/tmp/x=y", "--target", "/x"], "an agent's socket"),
    (["--target", "unix:///tmp/a.sock=/x"], "give that host with --host"),
    (["--start-agent"], "give --host too"),
    (["--host", U, "--target", "/x", "--agent-image", "i"], "give --start-agent too"),
    (["--host", "tcp://127.0.0.1:1", "--target", "/x"], "--allow-local-users"),
    (["--host", "tcp://127.0.0.1:1", "--target", "/x", "--allow-network"], "--allow-local-users"),
    (["--host", "tcp://192.0.2.1:1", "--target", "/x"], "--allow-network"),
    (["--host", "tcp://192.0.2.1:1", "--target", "/x", "--allow-local-users"], "anyone who can reach that port"),
])
def test_bad_fleet_options_get_one_sentence_and_exit_2(tmp_path: Path, args: list[str], words: str) -> None:
    proc = run_cli("run", "quick", "--set", "repeat=1", "--out", str(tmp_path / "r"), *args)
    assert proc.returncode == 2, proc.stderr
    assert words in proc.stderr and "Traceback" not in proc.stderr
    assert not (tmp_path / "r").exists()


# --- one host over SSH: a real OpenSSH server on 127.0.0.1 ----------------------------------------------


SSHD = shutil.which("sshd") or "/usr/sbin/sshd"


def _keygen(path: Path) -> str:
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(path)], check=True)
    return path.with_suffix(".pub").read_text().strip() if path.suffix else Path(str(path) + ".pub").read_text().strip()


@pytest.fixture
def sshd(tmp_path: Path):
    """sshd on 127.0.0.1 at a free high port: its own host key, a key made here as the only authorised one; an
    ssh_config for the controller that trusts exactly that host key.  Stopped afterwards, nothing left."""
    if not os.path.exists(SSHD) or not shutil.which("ssh-keygen"):
        pytest.skip("OpenSSH server not installed (Debian: openssh-server)")
    from tests.helpers.fleet_agents import free_port, listening

    d = tmp_path / "ssh"
    d.mkdir()
    host_pub = _keygen(d / "host_key")
    client_pub = _keygen(d / "id")
    (d / "authorized_keys").write_text(client_pub + "\n")
    port = free_port()
    (d / "sshd_config").write_text("\n".join([
        f"Port {port}", "ListenAddress 127.0.0.1", f"HostKey {d / 'host_key'}", f"PidFile {d / 'sshd.pid'}",
        f"AuthorizedKeysFile {d / 'authorized_keys'}", "PasswordAuthentication no", "KbdInteractiveAuthentication no",
        "PubkeyAuthentication yes", "PermitRootLogin prohibit-password", "UsePAM no", "StrictModes no",
        "AllowTcpForwarding yes", "X11Forwarding no", ""]))
    (d / "known_hosts").write_text(f"[127.0.0.1]:{port} {host_pub}\n")
    (d / "ssh_config").write_text("\n".join([
        "Host 127.0.0.1", f"  IdentityFile {d / 'id'}", "  IdentitiesOnly yes",
        f"  UserKnownHostsFile {d / 'known_hosts'}", "  StrictHostKeyChecking yes",
        "  GlobalKnownHostsFile /dev/null", ""]))
    os.makedirs("/run/sshd", exist_ok=True)  # sshd's privilege separation directory
    proc = subprocess.Popen([SSHD, "-D", "-e", "-f", str(d / "sshd_config")], stdout=subprocess.DEVNULL,
                            stderr=open(d / "sshd.log", "w"))
    try:
        deadline = time.monotonic() + 15
        while not listening(port):
            if proc.poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"sshd did not start: {(d / 'sshd.log').read_text()}")
            time.sleep(0.05)
        yield port, d
    finally:
        stop_process(proc)
        kill_matching(str(d / "sshd_config"))  # session processes sshd forked


def _nobody_tries(forward: str, public: Path) -> None:
    """As user nobody, a job with exec_prerun through the run's forward socket: refused, the command never ran."""
    marker = public / "ran-as-root"
    job = public / "job.fio"
    job.write_text(f"[j]\nfilename={public / 'data'}\nsize=1m\nrw=write\nexec_prerun=touch {marker}\n")
    job.chmod(0o644)
    assert stat.S_IMODE(os.lstat(os.path.dirname(forward)).st_mode) == 0o700
    assert stat.S_IMODE(os.lstat(forward).st_mode) == 0o600  # StreamLocalBindMask=0177
    denied = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--", "fio",
                             f"--client=sock:{forward}", str(job)], capture_output=True, text=True, timeout=60, cwd="/")
    assert denied.returncode != 0 and "Permission denied" in denied.stderr, denied.stderr
    assert not marker.exists() and not (public / "data").exists()


def test_one_host_end_to_end_over_ssh_and_nobody_cannot_use_its_forward(tmp_path: Path, sshd,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    port, d = sshd
    env = {"PROFILER_TUI_SSH_CONFIG": str(d / "ssh_config"),
           "PROFILER_TUI_REMOTE_COMMAND": str(Path(sys.executable).parent / "profiler-tui")}
    host = f"ssh://root@127.0.0.1:{port}"
    out = tmp_path / "r"
    public = Path(tempfile.mkdtemp(prefix="profiler-tui-public-"))  # pytest's tmp_path is root's alone
    public.chmod(0o755)
    with agents(1) as (agent,), loop_device(tmp_path, name="s", ram=True) as dev:
        run = subprocess.Popen([sys.executable, "-m", "app", "run", "custom", "--set", "runtime=1", "--set",
                                "rw=randread,randwrite", "--yes", "--out", str(out), "--host", host,
                                "--agent-socket", agent.socket, "--target", dev.path], cwd=ROOT,
                               env={**os.environ, **env}, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            forward = None
            deadline = time.monotonic() + 60
            while forward is None and time.monotonic() < deadline and run.poll() is None:
                found = [p for p in _links_of(run.pid)[1] if os.path.exists(os.path.join(p, "agent.sock"))]
                forward = os.path.join(found[0], "agent.sock") if found else None
                time.sleep(0.05)
            assert forward is not None, "the run's forward socket never appeared"
            _nobody_tries(forward, public)
            _, stderr = run.communicate(timeout=120)
        finally:
            shutil.rmtree(public, ignore_errors=True)
            if run.poll() is None:
                run.kill()
                run.wait()
        assert run.returncode == 0, stderr  # root's run went through the same forward, end to end
        assert _wait_no_ssh(run.pid) == ([], [])
        lines = _lines(out)
        assert len(lines) == 2 and {r["host"] for r in lines} == {host}
        for r in lines:
            stats = [e for e in _client_stats(out, r) if e["jobname"] != ALL_CLIENTS]
            assert len(stats) == 1
            # fio reached the agent through the forward's local socket (this run's own directory), not the agent's
            assert "/profiler-tui-ssh-" in stats[0]["hostname"] and stats[0]["hostname"] != agent.socket
            assert r["metrics"]["iops"] > 0
        # the TUI's connection test: through the SSH connection, the agent answers; a port without one does not
        with monkeypatch.context() as m:
            for key, value in env.items():
                m.setenv(key, value)
            for sock, answers in ((agent.socket, True), (str(tmp_path / "none.sock"), False)):
                link = Link(parse_host(host), sock).open()
                try:
                    assert agent_reachable(link, timeout=2.0) is answers
                    assert any(d.get("path") == dev.path for d in link.devices())
                finally:
                    link.close()
        # a refusal judged on the far side comes back as exit 3 naming the host
        refused = run_cli("run", "quick", "--set", "runtime=1", "--set", "repeat=1", "--yes",
                          "--out", str(tmp_path / "r2"),
                          "--host", host, "--agent-socket", agent.socket, "--target", "/dev/vda", env=env)
        assert refused.returncode == 3, refused.stderr
        assert host in refused.stderr
    leftover = subprocess.run(["pgrep", "-a", "-f", "profiler-tui-ssh-"], capture_output=True, text=True).stdout
    assert [ln for ln in leftover.splitlines() if "pgrep" not in ln] == []


def test_the_fleet_client_ignores_sigpipe_so_a_dropped_host_cannot_kill_it() -> None:
    """CI once saw fio's client die of SIGPIPE (status -13) when a host dropped mid-point, with every host's
    result of the point; the fleet's children keep SIG_IGN, other measuring children get the default."""
    import asyncio

    from app.runners.base import Child

    async def sig_ign(ignore: bool) -> int:
        child = await Child.start("sh", "-c", "grep SigIgn /proc/self/status", ignore_sigpipe=ignore)
        out = b"".join([chunk async for chunk in child.chunks()])
        await child.finish()
        return int(out.split()[1], 16)

    sigpipe = 1 << (13 - 1)
    assert asyncio.run(sig_ign(True)) & sigpipe
    assert not asyncio.run(sig_ign(False)) & sigpipe


def _ssh_env(d: Path) -> dict[str, str]:
    return {**os.environ, "PROFILER_TUI_SSH_CONFIG": str(d / "ssh_config"),
            "PROFILER_TUI_REMOTE_COMMAND": str(Path(sys.executable).parent / "profiler-tui")}


def _start_run(tmp_path: Path, port: int, d: Path, agent_socket: str, *extra: str) -> subprocess.Popen[str]:
    args = [sys.executable, "-m", "app", "run", "custom", "--set", "rw=randread", "--set", "size=16m",
            "--host", f"ssh://root@127.0.0.1:{port}", "--agent-socket", agent_socket,
            "--target", str(tmp_path / "t.img"), *extra]
    return subprocess.Popen(args, cwd=ROOT, env=_ssh_env(d), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)


def _links_of(pid: int) -> tuple[list[str], list[str]]:
    """The ssh processes and the connection directories of controller ``pid``."""
    import glob
    import tempfile

    mark = f"profiler-tui-ssh-{pid}-"
    procs = [cmd for _, cmd in processes(mark)]
    return procs, glob.glob(os.path.join(tempfile.gettempdir(), mark + "*"))


def _wait_no_ssh(pid: int, timeout: float = 5) -> tuple[list[str], list[str]]:
    deadline = time.monotonic() + timeout
    while _links_of(pid)[0] and time.monotonic() < deadline:
        time.sleep(0.05)
    return _links_of(pid)


# moments after the start (s) at which the start-up is interrupted: Python's start, ssh connecting, the host
# answering `devices --json --target`, run.json being made, the first point
MOMENTS = (0.05, 0.3, 0.6, 0.9, 1.3, 1.8, 2.5)


def _ssh_started(pid: int) -> bool:
    return bool(_links_of(pid)[0])


def _judging(pid: int) -> bool:
    """The host's target is being judged: `devices --json --target` runs over the connection."""
    return any("devices --json --target" in cmd for cmd in _links_of(pid)[0])


def _python_not_yet_started(moment: float | Callable[[int], bool], sig: int, returncode: int | None,
                            stderr: str) -> bool:
    """A SIGINT in the first moment that landed while CPython was still importing its `site` module, before any
    code of the tool ran: CPython itself ends with "Fatal Python error: init_import_site" and exit 1 (seen on a
    loaded CI machine at 0.05 s).  No program can answer a signal before its first line runs; the test then
    checks only that nothing was left behind."""
    return (moment == MOMENTS[0] and sig == signal.SIGINT and returncode == 1
            and "Fatal Python error: init_import_site" in stderr)


def test_interrupting_a_fleet_start_up_at_any_moment_leaves_no_ssh_and_no_forward(tmp_path: Path, sshd) -> None:
    port, d = sshd
    # fixed moments, then the two states the start-up passes through whatever the machine's speed: the ssh
    # connection just started, and the host's target being judged over it
    moments: list[float | Callable[[int], bool]] = [*MOMENTS, _ssh_started, _judging, _judging]
    hit = []
    with agents(1) as (agent,):
        for i, moment in enumerate(moments):
            sig = signal.SIGTERM if i % 3 == 2 else signal.SIGINT
            run = _start_run(tmp_path, port, d, agent.socket, "--set", "runtime=1", "--out", str(tmp_path / f"r{i}"))
            try:
                if callable(moment):
                    deadline = time.monotonic() + 30
                    while not moment(run.pid) and time.monotonic() < deadline:
                        time.sleep(0.005)
                    hit.append(moment(run.pid))
                else:
                    time.sleep(moment)
                run.send_signal(sig)
                _, stderr = run.communicate(timeout=60)
            finally:
                if run.poll() is None:
                    run.kill()
                    run.wait()
            if not _python_not_yet_started(moment, sig, run.returncode, stderr):
                assert run.returncode == 130, (moment, sig, run.returncode, stderr)
                assert "Traceback" not in stderr
            assert _wait_no_ssh(run.pid) == ([], []), (moment, sig)
        assert all(hit), "a start-up state to interrupt in was never seen"
        # SIGKILL of the controller: the kernel ends its ssh (parent-death signal); its 0700 directory stays
        run = _start_run(tmp_path, port, d, agent.socket, "--set", "runtime=1", "--out", str(tmp_path / "k"))
        try:
            deadline = time.monotonic() + 30
            while not _links_of(run.pid)[0] and time.monotonic() < deadline:
                time.sleep(0.02)
            run.kill()
            run.wait()
            procs, dirs = _wait_no_ssh(run.pid)
            assert procs == [] and dirs  # nothing could remove the directory of a SIGKILLed controller
            assert all(stat.S_IMODE(os.lstat(p).st_mode) == 0o700 and os.lstat(p).st_uid == 0 for p in dirs)
            # the next controller's first connection removes the killed one's directory
            from app.fleet.links import _link_dir

            _link_dir()
            assert _links_of(run.pid) == ([], [])
        finally:
            for p in _links_of(run.pid)[1]:
                shutil.rmtree(p, ignore_errors=True)
