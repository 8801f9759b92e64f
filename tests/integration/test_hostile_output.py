"""Other programs' output as an adversary writes it: a fleet host whose answer lies, contradicts itself, nests
without end or never ends; tools (nvme, lsblk, blkid) that print /dev/zero, hang, or print terminal control
sequences; fio's and ssh's words.  The controller judges a host's facts with its own rules, every tool is
read through one bounded reader (app.host.external) that stays small and interruptible, and no text the tool did
not write reaches a terminal or report.md with an escape sequence in it."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path
from typing import Any, Mapping

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from app.core.sanitize import clean_json, clean_line, clean_text, md_text
from app.fleet.inspect import BadAnswer, Contradiction, describe_target, parse_answer, read_target, verdict_of
from app.host import safety, telemetry
from app.host.external import run_bounded
from app.host.telemetry import Drive, Recorder, read_drive
from app.model import points
from app.runners.fio import _fio_message
from tests.conftest import DATA, run_cli
from tests.helpers.fleet_agents import agents
from tests.helpers.loopdev import loop_device
from tests.helpers.typed import as_dict
from tests.integration.test_fleet import sshd  # noqa: F401 - the fixture: sshd on 127.0.0.1 with its own keys)
from tests.integration.test_telemetry import fake_tool

ROOT = Path(__file__).resolve().parents[2]
ESC, CSI8 = b"\x1b", b"\x9b"
# a window title (OSC 0), a clipboard write (OSC 52), colour (CSI), an 8-bit CSI, a bell
HOSTILE = "A\x1b]0;pwned title\x07B\x1b]52;c;ZWNobyBwd25lZA==\x1b\\C\x1b[31;1mD\x9b2JE\x07F|*x*"
MAX_RSS_KB = 200 * 1024


def running(pattern: str) -> list[int]:
    """Processes whose command line holds ``pattern`` that still run (a killed orphan is a zombie until this
    machine's init reaps it)."""
    out = subprocess.run(["pgrep", "-f", pattern], capture_output=True, text=True).stdout.split()
    alive = []
    for pid in out:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            continue
        if state != "Z" and int(pid) != os.getpid():
            alive.append(int(pid))
    return alive


def no_escape(data: bytes | str) -> bool:
    raw = data.encode("utf-8", "surrogateescape") if isinstance(data, str) else data
    return ESC not in raw and CSI8 not in raw and "\x9b".encode() not in raw and b"\x07" not in raw


# --- the sanitiser ---------------------------------------------------------------------------------------------


def test_sequences_go_whole_and_only_the_visible_text_stays() -> None:
    assert clean_text(HOSTILE) == "ABCDEF|*x*"
    assert md_text(HOSTILE) == "ABCDEF\\|\\*x\\*"
    assert clean_text("a\tb\nc\r\x00d\x7f", newlines=True) == "a\tb\nc d"
    assert clean_line("  two\n lines\t ") == "two lines"
    assert clean_text("unterminated \x1b]0;title without end") == "unterminated "
    assert clean_json({"m\x1b[1m": ["x\x1b]52;c;AA\x07y", 3]}) == {"m": ["xy", 3]}


@settings(max_examples=500)
@given(st.text(alphabet=st.characters(codec="utf-8"), max_size=60)
       | st.lists(st.sampled_from(["\x1b", "[", "]", "0;", "52;c;", "\x07", "\x9b", "\x9d", "\x9c", "\\", "m", "a",
                                   "|", "\n", "\t", "\u202e", "\x85"]), max_size=30).map("".join))
def test_no_control_character_survives_the_sanitiser(text: str) -> None:
    for out in (clean_text(text), clean_line(text), md_text(text)):
        assert all(ch.isprintable() for ch in out), repr(out)
        assert clean_text(out) == out  # idempotent: what is shown is stable
    kept = clean_text(text, newlines=True)
    assert all(ch.isprintable() or ch in "\n\t" for ch in kept)
    assert "|" not in md_text(text).replace("\\|", "")


def test_fio_s_error_lines_are_cleaned() -> None:
    msg = _fio_message("fio: pid=1, err=5/file:io_u.c:1, func=io_u error, error=\x1b]0;x\x07Input/output error\n", [])
    assert msg == "fio: pid=1, err=5/file:io_u.c:1, func=io_u error, error=Input/output error"


# --- the bounded reader ----------------------------------------------------------------------------------------


def _in_child(code: str, timeout: float = 60) -> dict[str, Any]:
    """Run ``code`` in a fresh Python that prints one JSON line, with its own peak RSS.  The peak is VmHWM of
    /proc/self/status, the high-water mark of this program's memory: getrusage's ru_maxrss keeps that of the
    image before exec, the forked pytest's (360 MB late in a full run), and measured nothing of the code."""
    prog = textwrap.dedent(code) + textwrap.dedent("""
        import json
        with open("/proc/self/status") as f:
            OUT["peak_kb"] = int(next(ln for ln in f if ln.startswith("VmHWM:")).split()[1])
        print(json.dumps(OUT))
    """)
    proc = subprocess.run([sys.executable, "-c", prog], capture_output=True, text=True, timeout=timeout, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr
    return dict(json.loads(proc.stdout.splitlines()[-1]))


@pytest.mark.serial  # a deadline in seconds
def test_an_endless_output_stops_at_the_cap_and_the_memory_stays_small() -> None:
    out = _in_child("""
        import time
        from app.host.external import run_bounded
        t = time.monotonic()
        o = run_bounded(["cat", "/dev/zero"], 10, 1 << 20)
        OUT = {"failure": o.failure, "seconds": time.monotonic() - t, "kept": len(o.stdout)}
    """)
    assert out["failure"] == "too large" and out["kept"] == 0
    assert out["seconds"] < 3 and out["peak_kb"] < MAX_RSS_KB, out


@pytest.mark.serial  # a deadline in seconds
def test_the_timeout_holds_when_the_child_closes_its_pipes_and_the_child_is_killed(tmp_path: Path) -> None:
    marker = tmp_path / "alive"
    script = f"exec >&- 2>&-; (sleep 30; touch {marker}) & sleep 30"
    t = time.monotonic()
    o = run_bounded(["sh", "-c", script], 0.5)
    assert o.failure == "timeout" and time.monotonic() - t < 3
    time.sleep(0.2)
    assert running(f"touch {marker}") == []  # group killed


def _reading_in_a_child(mark: str) -> subprocess.Popen[str]:
    """A Python whose main thread reads ``sleep MARK`` through the bounded reader (20 s timeout)."""
    proc = subprocess.Popen([sys.executable, "-c", textwrap.dedent(f"""
        from app.host.external import run_bounded
        print("ready", flush=True)
        run_bounded(["sleep", "{mark}"], 20)
    """)], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert proc.stdout is not None and proc.stdout.readline() == "ready\n"
    time.sleep(0.5)
    assert running(f"sleep {mark}") != []
    return proc


@pytest.mark.serial  # a deadline in seconds
def test_a_sigint_takes_effect_within_a_slice_and_leaves_no_child() -> None:
    mark = "29.8731"
    proc = _reading_in_a_child(mark)
    t = time.monotonic()
    proc.send_signal(signal.SIGINT)
    proc.wait(10)
    latency = time.monotonic() - t
    assert "KeyboardInterrupt" in (proc.stderr.read() if proc.stderr else "")
    assert latency < 2.0, latency  # (measured: about 0.02 s)
    assert running(f"sleep {mark}") == []


@pytest.mark.serial  # a deadline in seconds
def test_a_reader_in_a_thread_stops_when_cancelled() -> None:
    cancel = threading.Event()
    threading.Timer(0.3, cancel.set).start()
    t = time.monotonic()
    o = run_bounded(["sleep", "30"], 20, cancel=cancel)
    assert o.failure == "cancelled" and time.monotonic() - t < 2.0


# --- telemetry tools: flooding, hanging, interrupted ------------------------------------------------------------


def _drive(tool: Path) -> Drive:
    return Drive("/dev/nvme0", "nvme", (str(tool), "smart-log", "/dev/nvme0", "-o", "json"))


@pytest.mark.serial  # a deadline in seconds
def test_a_fake_nvme_printing_dev_zero_is_stopped_at_the_cap(tmp_path: Path) -> None:
    zero = tmp_path / "nvme"
    zero.write_text("#!/bin/sh\nexec cat /dev/zero\n")
    zero.chmod(0o755)
    out = _in_child(f"""
        import time
        from app.host.telemetry import Drive, read_drive
        t = time.monotonic()
        r = read_drive(Drive("/dev/nvme0", "nvme", ({str(zero)!r}, "smart-log", "/dev/nvme0", "-o", "json")))
        OUT = {{"reading": r, "seconds": time.monotonic() - t}}
    """)
    assert out["reading"] == {"error": "nvme printed more than 1048576 characters (stopped)"}
    assert out["seconds"] < 3 and out["peak_kb"] < MAX_RSS_KB, out


@pytest.mark.serial  # a deadline in seconds
def test_a_hung_tool_is_asked_once_per_run_and_says_so(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    calls = tmp_path / "calls"
    tool = fake_tool(tmp_path / "bin", "nvme", f"""
        import time
        open({str(calls)!r}, "a").write("x\\n")
        time.sleep(30)
    """)
    monkeypatch.setattr(telemetry, "TOOL_TIMEOUT_S", 0.5)
    rec = Recorder(_drive(tool), tmp_path / "raw" / "telemetry.jsonl")

    async def a_run() -> None:
        await rec.take("before", None)
        for i in range(5):
            await rec.start_point(i)
            await rec.end_point(i)
        await rec.take("after", None)

    t = time.monotonic()
    asyncio.run(a_run())
    rec.close()
    assert time.monotonic() - t < 3  # not 12 readings × the timeout
    assert calls.read_text() == "x\n"
    lines = [json.loads(x) for x in (tmp_path / "raw" / "telemetry.jsonl").read_text().splitlines()]
    assert len(lines) == 1 and lines[0]["error"] == ("nvme smart-log /dev/nvme0 -o json gave no answer within 0.5 s; "
                                                     "it is not asked again during this run")


@pytest.mark.serial  # a deadline in seconds
def test_a_cancelled_reading_ends_the_tool_at_once(tmp_path: Path) -> None:
    tool = fake_tool(tmp_path / "bin", "nvme", "import time; time.sleep(30)\n")
    rec = Recorder(_drive(tool), tmp_path / "telemetry.jsonl")

    async def interrupted() -> None:
        task = asyncio.create_task(rec.take("during", 0))
        await asyncio.sleep(0.3)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    t = time.monotonic()
    asyncio.run(interrupted())  # asyncio.run waits for the reading's thread: it must end with the tool
    assert time.monotonic() - t < 2.0  # the reading's timeout is 3 s
    assert running(str(tool)) == []


def test_a_tool_s_stderr_reaches_no_reading_with_a_control_sequence(tmp_path: Path) -> None:
    tool = fake_tool(tmp_path / "bin", "nvme", f"import sys; sys.stderr.write({HOSTILE!r}); sys.exit(1)\n")
    r = read_drive(_drive(tool))
    assert r["error"].endswith("exited with status 1: ABCDEF|*x*") and no_escape(r["error"])


# --- a fleet host's answer: facts judged by the controller's rules ---------------------------------------------


@pytest.fixture
def ext4(tmp_path: Path):
    with loop_device(tmp_path, size_mb=32, mkfs="ext4", ram=True) as dev:
        yield dev


def test_the_controller_judges_the_facts_not_the_host_s_verdict(ext4) -> None:
    answer = describe_target(ext4.path)
    assert answer["facts"]["kind"] == "block" and as_dict(answer["facts"]["probe"])["signatures"]
    lying = json.loads(json.dumps(answer))
    lying["write"].update(verdict="ok", reasons=["all fine"], needs_yes=True)
    v = verdict_of(read_target({"target": lying}), True)
    assert v.verdict == points.Verdict.NEEDS_DESTRUCTIVE and v.confirm and "ext4" in v.reasons[0]
    with pytest.raises(safety.SafetyError, match="--allow-destructive"):
        safety.confirm(v, True, yes=True)
    assert verdict_of(read_target({"target": lying}), False).confirm  # a read needs --yes


def _mutate(answer: Mapping[str, object], path: str, value: Any) -> dict[str, Any]:
    doc = json.loads(json.dumps(answer))
    *keys, last = path.split(".")
    node = doc
    for k in keys:
        node = node[k]
    if value is KeyError:
        del node[last]
    else:
        node[last] = value
    return doc


@pytest.mark.parametrize("path, value", [
    ("write.needs_yes", False),  # a block device never runs without --yes
    ("read.needs_yes", False),
    ("write.kind", "file"),
    ("block", False),  # a block device's facts under a file's shape
    ("size", None),  # a block device without a size
    ("size", 12345),  # two sizes
    ("exists", False),
    ("facts.devices.NAME.mounts", [""]),  # mounted without a mount point
    ("facts.devices.NAME.holders", ["NAME"]),  # its own holder
    ("facts.devices.NAME.holders", ["dm-9"]),  # a holder without facts
    ("facts.parts", ["NAME"]),
    ("facts.parent", "NAME"),
    ("facts.path", "/dev/other"),
    ("facts.exclusive", ["ok", ""]),  # with mounts below: in use, yet opened exclusively
])
def test_an_answer_whose_facts_contradict_each_other_is_refused(ext4, path: str, value: Any) -> None:
    answer = describe_target(ext4.path)
    name = answer["facts"]["name"]
    assert isinstance(name, str)
    if path == "facts.exclusive":
        as_dict(as_dict(answer["facts"]["devices"])[name])["mounts"] = ["/mnt"]
    path = path.replace("NAME", name)
    value = [v.replace("NAME", name) for v in value] if isinstance(value, list) else (
        name if value == "NAME" else value)
    with pytest.raises(Contradiction):
        read_target({"target": _mutate(answer, path, value)})


def test_a_file_target_with_holders_is_refused(tmp_path: Path) -> None:
    answer = describe_target(str(tmp_path / "f.img"))
    with pytest.raises(Contradiction):
        read_target({"target": _mutate(answer, "facts.holders", ["dm-0"])})
    with pytest.raises(BadAnswer, match="older"):  # an answer without facts: nothing to judge
        read_target({"target": _mutate(answer, "facts", KeyError)})


fact_values: st.SearchStrategy[Any] = (st.none() | st.booleans() | st.integers(-2, 1 << 40) | st.text(max_size=12)
                                      | st.lists(st.text(max_size=8), max_size=3) | st.just([]) | st.just({}))


def test_any_change_to_a_real_answer_reads_or_is_refused(ext4) -> None:
    answer = describe_target(ext4.path)  # once: the probe is real, the changes are Hypothesis's
    name = answer["facts"]["name"]
    paths = ["size", "block", "exists", "write.needs_yes", "write.kind", "facts.kind", "facts.size", "facts.name",
             "facts.parent", "facts.parts", "facts.exclusive", "facts.probe.signatures", "facts.probe.error",
             "facts.probe.tool", "facts.udev", "facts.root_siblings", f"facts.devices.{name}.mounts",
             f"facts.devices.{name}.holders", f"facts.devices.{name}.read_only", f"facts.devices.{name}.swap",
             f"facts.devices.{name}.backs_loop"]

    @settings(max_examples=300, deadline=None)
    @given(st.lists(st.tuples(st.sampled_from(paths), fact_values), min_size=1, max_size=3))
    def changed(changes: list[tuple[str, Any]]) -> None:
        doc: Mapping[str, object] = answer
        for path, value in changes:
            doc = _mutate(doc, path, value)
        try:
            checked = read_target({"target": doc})
        except BadAnswer:
            return
        for writes in (True, False):
            v = verdict_of(checked, writes)
            assert v.confirm  # whatever the facts say, a block device is never run unconfirmed
            assert v.reasons and all(r.isprintable() for r in v.reasons)

    changed()


def test_deep_nesting_is_one_sentence_not_a_recursion_error() -> None:
    for text in ("[" * 100_000 + "]" * 100_000, '{"a":' * 50_000 + "1" + "}" * 50_000, "[" * 17 + "]" * 17):
        with pytest.raises(BadAnswer, match="nests deeper than 16 levels"):
            parse_answer(text)
    assert parse_answer('{"target": {"a": [1, 2]}}') == {"target": {"a": [1, 2]}}


# --- the same over ssh: a hostile remote command --------------------------------------------------------------


REMOTE = """#!{python}
import json, os, subprocess, sys
mode = {mode!r}
if mode == "endless":
    os.execvp("cat", ["cat", "/dev/zero"])
if mode == "nested":
    sys.stdout.write("[" * 100000 + "]" * 100000)
    sys.exit(0)
if mode == "stderr":
    sys.stderr.write({hostile!r} + "\\n")
    sys.exit(1)
doc = json.loads(subprocess.run([{real!r}, *sys.argv[1:]], capture_output=True, text=True, check=True).stdout)
t = doc["target"]
if mode == "needs_yes":
    for plan in ("write", "read"):
        t[plan].update(verdict="ok", needs_yes=False, reasons=["fine"])
elif mode == "verdict":
    t["write"].update(verdict="ok", reasons=["fine"])
elif mode == "old":
    del t["facts"]
elif mode == "reasons":
    t["facts"] = {{"path": t["path"], "kind": "other", "exists": True, "size": 0, "swap": False, "backs_loop": None,
                  "loop": None, "refusal": {hostile!r}}}
    for plan in ("write", "read"):
        t[plan].update(kind="other", reasons=[{hostile!r}])
print(json.dumps(doc))
"""


def _remote(tmp_path: Path, mode: str) -> dict[str, str]:
    script = tmp_path / f"remote-{mode}"
    script.write_text(REMOTE.format(python=sys.executable, mode=mode, hostile=HOSTILE,
                                    real=str(Path(sys.executable).parent / "profiler-tui")))
    script.chmod(0o755)
    return {"PROFILER_TUI_REMOTE_COMMAND": str(script)}


def _controller(tmp_path: Path, sshd_: tuple[int, Path], mode: str, target: str, *extra: str,
                agent_socket: str = "/nonexistent/agent.sock") -> tuple[subprocess.CompletedProcess[str], float, int]:
    """``run custom`` against the hostile host, in a wrapper that reports the controller's peak RSS (kB)."""
    port, d = sshd_
    env = {**os.environ, "PROFILER_TUI_SSH_CONFIG": str(d / "ssh_config"), **_remote(tmp_path, mode)}
    argv = [sys.executable, "-m", "app", "run", "custom", "--set", "runtime=1", "--set", "rw=randwrite",
            "--out", str(tmp_path / f"out-{mode}"), "--host", f"ssh://root@127.0.0.1:{port}",
            "--agent-socket", agent_socket, "--target", target, *extra]
    wrapper = ("import resource, subprocess, sys; p = subprocess.run(sys.argv[1:]); "
               "sys.stderr.write('PEAK %d\\n' % resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss); "
               "sys.exit(p.returncode)")
    t = time.monotonic()
    proc = subprocess.run([sys.executable, "-c", wrapper, *argv], capture_output=True, text=True, cwd=ROOT, env=env,
                          timeout=120, errors="surrogateescape")
    seconds = time.monotonic() - t
    *err, peak = proc.stderr.rstrip("\n").split("\n")
    proc.stderr = "\n".join(err) + "\n"
    return proc, seconds, int(peak.split()[1])


def _fs_type(path: str) -> str:
    probe = subprocess.run(["blkid", "-p", "-o", "value", "-s", "TYPE", path], capture_output=True, text=True)
    return probe.stdout.strip()


@pytest.mark.parametrize("mode, extra, words", [
    ("needs_yes", (), "contradicts itself"),
    ("needs_yes", ("--yes",), "contradicts itself"),
    ("verdict", ("--yes",), "--allow-destructive"),
    ("old", ("--yes",), "older than this one"),
])
def test_a_host_that_says_no_confirmation_is_needed_gets_no_randwrite_on_its_ext4_device(
        tmp_path: Path, sshd, ext4, mode: str, extra: tuple[str, ...], words: str) -> None:
    with agents(1) as (agent,):
        proc, _, _ = _controller(tmp_path, sshd, mode, ext4.path, *extra, agent_socket=agent.socket)
    assert proc.returncode in (1, 3), proc.stderr
    assert words in proc.stderr and f"127.0.0.1:{sshd[0]}" in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1 and "Traceback" not in proc.stderr
    assert _fs_type(ext4.path) == "ext4"  # the filesystem is untouched
    assert not (tmp_path / f"out-{mode}").exists()


@pytest.mark.serial  # a deadline in seconds
def test_a_deeply_nested_or_endless_answer_is_one_sentence_and_stays_small(tmp_path: Path, sshd) -> None:
    proc, _, peak = _controller(tmp_path, sshd, "nested", "/tmp/x.img")
    assert proc.returncode == 1 and "nests deeper than 16 levels" in proc.stderr, proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1
    proc, seconds, peak = _controller(tmp_path, sshd, "endless", "/tmp/x.img")
    assert proc.returncode == 1 and "its answer is larger than 4194304 bytes" in proc.stderr, proc.stderr
    assert peak < MAX_RSS_KB and seconds < 30, (peak, seconds)


@pytest.mark.parametrize("mode", ["stderr", "reasons"])
def test_a_host_s_reasons_and_ssh_s_stderr_reach_the_terminal_without_control_sequences(
        tmp_path: Path, sshd, mode: str) -> None:
    proc, _, _ = _controller(tmp_path, sshd, mode, "/tmp/x.img", "--yes")
    assert proc.returncode in (1, 3), proc.stderr
    assert "ABCDEF" in proc.stderr
    assert no_escape(proc.stdout) and no_escape(proc.stderr), repr(proc.stderr)


# --- the other sources: lsblk, blkid, presets, report.md ------------------------------------------------------


def _path_with(tmp_path: Path, name: str, body: str) -> dict[str, str]:
    fake_tool(tmp_path / "bin", name, body)
    return {"PATH": f"{tmp_path / 'bin'}:{os.environ['PATH']}"}


def test_a_device_model_from_lsblk_is_printed_without_control_sequences(tmp_path: Path) -> None:
    doc = {"blockdevices": [{"name": "loop7", "kname": "loop7", "path": "/dev/loop7", "type": "loop",
                             "model": HOSTILE, "vendor": HOSTILE, "serial": "s", "tran": None, "size": 4096,
                             "mountpoints": ["/mnt/\x1b]0;x\x07"], "fstype": None, "pttype": None}]}
    env = _path_with(tmp_path, "lsblk", f"import json; print(json.dumps({doc!r}))\n")
    for args in (["devices"], ["devices", "--json"]):
        proc = run_cli(*args, env=env)
        assert proc.returncode == 0, proc.stderr
        assert no_escape(proc.stdout) and no_escape(proc.stderr)
        assert "\\u001b" not in proc.stdout and "\\u009b" not in proc.stdout


def test_blkid_s_stderr_in_a_refusal_is_cleaned(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with loop_device(tmp_path, size_mb=8, ram=True) as dev:
        env = _path_with(tmp_path, "blkid", f"import sys; sys.stderr.write({HOSTILE!r}); sys.exit(4)\n")
        monkeypatch.setenv("PATH", env["PATH"])
        monkeypatch.setattr(shutil, "which", lambda name, *a, **k: str(tmp_path / "bin" / name)
                            if name == "blkid" else None)
        v = safety.classify(dev.path, True)
    assert v.verdict == points.Verdict.NEEDS_DESTRUCTIVE
    assert any("ABCDEF" in r for r in v.reasons) and all(no_escape(r) for r in v.reasons)


def test_a_preset_s_name_and_description_never_reach_the_terminal_raw(tmp_path: Path) -> None:
    presets = tmp_path / "cfg" / "profiler-tui" / "presets"
    presets.mkdir(parents=True)
    esc = json.dumps(HOSTILE)  # a TOML basic string is JSON's: \u001b escapes
    (presets / "evil.toml").write_text(f'name = {esc}\nkind = "storage"\ndescription = {esc}\n'
                                       '[fio]\nrw = "randread"\n')
    (presets / "evil2.toml").write_text(f'name = "evil2"\nkind = "storage"\ndescription = {esc}\n'
                                        '[fio]\nrw = "randread"\n')
    env = {"XDG_CONFIG_HOME": str(tmp_path / "cfg")}
    for args in (["presets"], ["presets", "show", "evil2"], ["run", "evil2", "--target", str(tmp_path / "f")]):
        proc = run_cli(*args, env=env)
        assert no_escape(proc.stdout) and no_escape(proc.stderr), (args, proc.stdout, proc.stderr)


def test_report_md_holds_no_control_sequence_from_run_json_or_telemetry(tmp_path: Path) -> None:
    out = tmp_path / "run"
    shutil.copytree(DATA / "report" / "golden-run", out)
    meta = json.loads((out / "run.json").read_text())
    meta["preset"]["name"] = HOSTILE
    meta["preset"]["description"] = HOSTILE
    meta["target_info"] = {**(meta.get("target_info") or {}), "filesystem": HOSTILE, "source": HOSTILE}
    meta["environment"] = {**(meta.get("environment") or {}), "cpu": {"model": HOSTILE}}
    meta["telemetry"] = {"available": False, "reason": HOSTILE}
    (out / "run.json").write_text(json.dumps(meta))
    proc = run_cli("report", str(out))
    assert proc.returncode == 0, proc.stderr
    md = (out / "report.md").read_bytes()
    assert no_escape(md) and no_escape(proc.stdout) and no_escape(proc.stderr)
    assert b"ABCDEF" in md
    # in a table cell the text is one cell: its '|' and '*' are escaped
    assert b"ABCDEF\\|\\*x\\*" in md


@pytest.mark.serial  # a deadline in seconds
def test_a_sigint_during_a_hung_telemetry_reading_ends_the_run_at_once(tmp_path: Path) -> None:
    """The run reads the drive's health log in a worker thread; ^C while the tool hangs ends the run within a
    moment (the tool is killed), not when the reading times out."""
    from tests.integration.test_telemetry import NVME_DIR
    from tests.integration.test_validity import fake_sysfs

    hanging = tmp_path / "hanging"
    fake_tool(tmp_path / "bin", "nvme", f"""
        import os, sys, time
        calls = {str(tmp_path / 'calls')!r}
        n = len(open(calls).read()) if os.path.exists(calls) else 0
        open(calls, "a").write("x")
        if n == 0:
            print(open({str(Path(__file__).parents[1] / 'data' / 'telemetry' / 'nvme-smart-log.json')!r}).read())
            sys.exit(0)
        open({str(hanging)!r}, "w").close()
        time.sleep(60)
    """)
    with loop_device(tmp_path, size_mb=16, ram=True) as dev:
        env = {**os.environ, "PROFILER_TUI_SYSFS": str(fake_sysfs(tmp_path / "sys", dev.path, NVME_DIR, {})),
               "PATH": f"{tmp_path / 'bin'}:{os.environ['PATH']}"}
        proc = subprocess.Popen([sys.executable, "-m", "app", "run", "custom", "--target", dev.path, "--yes",
                                 "--out", str(tmp_path / "out"), "--set", "runtime=1", "--set", "size=8m"],
                                cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            deadline = time.monotonic() + 60
            while not hanging.exists():
                assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
                time.sleep(0.02)
            time.sleep(0.3)
            t = time.monotonic()
            proc.send_signal(signal.SIGINT)
            proc.wait(30)
            latency = time.monotonic() - t
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        _, err = proc.communicate()
    assert proc.returncode == 130, err
    assert latency < 2.0, latency  # the reading's timeout is 3 s (measured: about 0.06 s)
    assert running(str(tmp_path / "bin" / "nvme")) == []


@pytest.mark.serial  # a deadline in seconds
def test_a_tool_dies_with_the_tool_that_reads_it() -> None:
    """A reader's child has its own session (a terminal's ^C does not reach it): the kernel kills it when
    profiler-tui dies, e.g. by SIGKILL or the start-up interrupt's os._exit."""
    mark = "29.8732"
    proc = _reading_in_a_child(mark)
    proc.kill()
    proc.wait()
    time.sleep(0.3)
    assert running(f"sleep {mark}") == []


@settings(max_examples=40, deadline=None)
@given(size=st.integers(0, 300_000), cap=st.integers(1, 200_000), err=st.integers(0, 80_000))
def test_the_reader_keeps_exactly_what_fits_and_refuses_the_rest(size: int, cap: int, err: int) -> None:
    o = run_bounded(["sh", "-c", f"head -c {err} /dev/zero >&2; head -c {size} /dev/zero"], 10, cap)
    if size > cap or err > min(cap, 64 << 10):
        assert o.failure == "too large" and o.stdout == b""
    else:
        assert o.ok and o.returncode == 0 and o.stdout == bytes(size) and len(o.stderr) == err
