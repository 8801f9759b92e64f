"""Results directories another user made, or that hold another user's text, in a real pseudo-terminal: the bytes
the app writes to its terminal carry none of the escape sequences planted in them (OSC 0 window titles, OSC 52
clipboard writes, CSI screen clears, DCS strings, the one-byte C1 CSI U+009B, Rich markup links).

The results root is a shared sticky directory (/tmp/…, mode 1777, root's), as ``$PROFILER_TUI_RESULTS`` may be;
nobody's run directory in it is listed by its cleaned name as ``foreign`` and nothing in it is read or opened;
a directory of root's that holds hostile text (an imported run, a copy) shows it cleaned on every screen.  The
report view never follows report.md's link, never reads a FIFO or a device, never reads another user's file,
says why in one sentence, and ``ctrl+q`` quits at once."""

from __future__ import annotations

import json
import os
import pwd
import re
import shutil
import tempfile
import time
from pathlib import Path
from typing import Iterator

import pytest

from tests.tui.pty_harness import PtyApp

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="needs root: the tests chown to nobody")

NOBODY = pwd.getpwnam("nobody")
GOLDEN = Path(__file__).resolve().parents[1] / "data" / "report" / "golden-run"

OSC_TITLE = "\x1b]0;PWNED-TITLE\x1b\\"
CLEAR = "\x1b[2J"
OSC_CLIPBOARD = "\x1b]52;c;UFdORUQ=\x07"
DCS = "\x1bPpwned-dcs\x1b\\"
C1_CSI = "\x9b31m"
LINK = "[link=http://pwned.example/]x[/link]"
PRESET = f"{OSC_TITLE}{CLEAR}quick{C1_CSI}{LINK}"
GROUP = f"g{DCS}{C1_CSI}{CLEAR}SEQ{OSC_TITLE}{LINK}"
REPORT = f"# Report\n\n{OSC_CLIPBOARD}ZEBRA{CLEAR} text\n\nmore {DCS}{OSC_TITLE}words\n"
NOBODY_DIR = "nobody\x1b]0;PWNED-DIR\x07run\x9b2J"


def planted(raw: bytes) -> list[str]:
    """The planted sequences (or their payloads) found in what the app wrote to its terminal."""
    text = raw.decode("utf-8", "replace")
    found = [name for name, needle in (("OSC 0 title", "\x1b]0;"), ("a payload", "PWNED"), ("OSC 52", "\x1b]52"),
                                       ("CSI 2J", "\x1b[2J"), ("DCS", "\x1bP"), ("C1 CSI", "\x9b"),
                                       ("DCS payload", "pwned-dcs")) if needle in text]
    if re.search(r"\x1b\]8;[^\x07\x1b]*pwned", text):
        found.append("a hyperlink of the markup")
    return found


@pytest.fixture
def shared() -> Iterator[Path]:
    """A sticky, world-writable results root of root's under /tmp (the tool makes its runs there, as may others)."""
    d = Path(tempfile.mkdtemp(prefix="ptui-hostile-", dir="/tmp"))
    os.chmod(d, 0o1777)
    try:
        yield d
    finally:
        shutil.rmtree(d, ignore_errors=True)


def copy_run(dest: Path, *, preset: str = "custom", group: str | None = None, started: str = "",
             report: str | None = None) -> Path:
    """The golden run as ``dest`` (its preset's name, a group label on every point, the start time it lists by),
    report.md written after its other files (not stale)."""
    dest.mkdir()
    meta = json.loads((GOLDEN / "run.json").read_text())
    meta["preset"]["name"] = preset
    if started:
        meta["started"] = started
    lines = [json.loads(line) for line in (GOLDEN / "results.jsonl").read_text().splitlines()]
    if group is not None:
        for point in meta["plan"]:
            point["group"] = group
        for line in lines:
            line["point"]["group"] = group
    (dest / "run.json").write_text(json.dumps(meta))
    (dest / "results.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    if report is not None:
        (dest / "report.md").write_text(report)
    old = time.time() - 3600
    for name in ("run.json", "results.jsonl"):
        os.utime(dest / name, (old, old))
    return dest


def chown_tree(top: Path, uid: int, gid: int) -> None:
    for root, dirs, files in os.walk(top):
        for name in dirs + files:
            os.chown(os.path.join(root, name), uid, gid, follow_symlinks=False)
    os.chown(top, uid, gid)


def quits_at_once(app: PtyApp) -> float:
    """ctrl+q; the seconds until the process ended (it must, within 2 s: about 0.4 s here)."""
    t0 = time.monotonic()
    app.send("\x11", pause=0)
    app.wait(timeout=2)
    return time.monotonic() - t0


def test_nobodys_run_is_listed_as_foreign_by_its_cleaned_name_and_nothing_of_it_is_read(tmp_path: Path,
                                                                                        shared: Path) -> None:
    """nobody's run in the shared root — their directory named with an OSC 0 and a C1 CSI, their run.json naming
    the preset with an OSC 0 title and a screen clear, their report.md with an OSC 52 clipboard write: the runs
    browser lists it by its cleaned name as foreign, reads none of its files, and opening it, its report and its
    replay are each refused with the sentence why."""
    theirs = copy_run(shared / NOBODY_DIR, preset=PRESET, group=GROUP, started="2026-11-23T00:00:00+00:00",
                      report=REPORT)
    chown_tree(theirs, NOBODY.pw_uid, NOBODY.pw_gid)
    copy_run(shared / "root-run", started="2026-11-22T02:10:06+00:00")
    with PtyApp(tmp_path, size=(160, 40), env={"PROFILER_TUI_RESULTS": str(shared)}) as app:
        app.wait_for("Pick a target", timeout=30)
        app.send("h")
        app.wait_for("2 of 2 runs")
        # the rows may follow the title in a later frame on a loaded machine
        app.wait_for("nobodyrun")
        app.wait_for("foreign")
        assert planted(bytes(app.output)) == [], planted(bytes(app.output))
        assert "quick" not in app.text()
        app.send("\x1b[B")  # root's run first (nobody's has no start time: it is not read), then nobody's
        for key in ("\r", "\x12", "\x19"):  # open, report, replay: each refused with the sentence why
            mark = len(app.text())
            app.send(key)
            app.wait_for("(uid 65534)", since=mark)
        assert "ZEBRA" not in app.text()
        seconds = quits_at_once(app)
        raw = bytes(app.output)
    assert planted(raw) == [], planted(raw)
    assert seconds < 2


def test_roots_run_holding_hostile_text_shows_it_cleaned_on_every_screen(tmp_path: Path, shared: Path) -> None:
    """A run of root's whose files hold another user's text (an import, a copy): the preset's name, its target and
    every point's group label (DCS, C1 CSI, CSI 2J, OSC 0, a markup link) on the runs browser and the results
    table, report.md's OSC 52 and DCS in the report view — all drawn without a sequence."""
    copy_run(shared / "root-run", preset=PRESET, group=GROUP, started="2026-11-22T02:10:06+00:00", report=REPORT)
    with PtyApp(tmp_path, size=(160, 40), env={"PROFILER_TUI_RESULTS": str(shared)}) as app:
        app.wait_for("Pick a target", timeout=30)
        app.send("h")
        app.wait_for("1 of 1 runs")
        app.send("\r")  # its results table: the group labels in the test column
        app.wait_for("sorted by")
        app.wait_for("SEQ")
        app.send("\x1b")
        time.sleep(0.5)
        app.send("\x12")  # ctrl+r: its report
        app.wait_for("ZEBRA text")
        time.sleep(0.3)
        seconds = quits_at_once(app)
        raw = bytes(app.output)
    assert planted(raw) == [], planted(raw)
    assert seconds < 2


@pytest.mark.parametrize("what", ["fifo", "zero", "shadow", "nobody's file"])
def test_the_report_view_reads_no_fifo_device_link_or_other_users_file_and_quits_at_once(
        tmp_path: Path, shared: Path, what: str) -> None:
    """root's run whose report.md is a FIFO (a plain read waited forever and ctrl+q did not quit), a link to
    /dev/zero (a plain read grew to gigabytes) or to /etc/shadow (shown), or nobody's file with an OSC 52 in it:
    the report view says in one sentence why it does not read it, and ctrl+q quits within a second or two."""
    run = copy_run(shared / "root-run", started="2026-11-22T02:10:06+00:00")
    report = run / "report.md"
    if what == "fifo":
        os.mkfifo(report)
        sentence = "is not a regular file"
    elif what == "zero":
        os.symlink("/dev/zero", report)
        sentence = "is a symbolic link"
    elif what == "shadow":
        os.symlink("/etc/shadow", report)
        sentence = "is a symbolic link"
    else:
        report.write_text(REPORT)
        os.chown(report, NOBODY.pw_uid, NOBODY.pw_gid)
        sentence = "(uid 65534)"
    with PtyApp(tmp_path, size=(160, 40), env={"PROFILER_TUI_RESULTS": str(shared)}) as app:
        app.wait_for("Pick a target", timeout=30)
        app.send("h")
        app.wait_for("1 of 1 runs")
        app.send("\x12")
        try:
            app.wait_for(sentence, timeout=10)
            said = ""
        except AssertionError as e:  # the quit below comes first: it must not wait on the read
            said = str(e)
        shown = app.text()
        seconds = quits_at_once(app)
        raw = bytes(app.output)
    assert seconds < 2
    assert planted(raw) == [], planted(raw)
    assert not said, said
    assert "root:" not in shown and "ZEBRA" not in shown  # /etc/shadow's first line, nobody's text
