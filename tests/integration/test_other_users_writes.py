"""What root writes or reads at a place a user named is never chosen by another user (``nobody``): ``compare --out``
never writes through another user's link or into another user's file, no file the tool opens for writing is
changed before it is found to be another user's (or a hard link, or a FIFO), and ``import`` never follows another
user's link to one of root's files.  No fio here: the results directory is the golden run of tests/data."""

from __future__ import annotations

import os
import pwd
import shutil
import subprocess
import tempfile
import threading
from pathlib import Path
from typing import Iterator

import pytest

from app.store.results import open_file, write_new
from tests.conftest import DATA, run_cli

NOBODY = pwd.getpwnam("nobody")
pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="needs root: the tool runs as root and the tests act as "
                                                          "nobody")
SECRET = b"root's own bytes\n"


@pytest.fixture
def shared() -> Iterator[Path]:
    """A fresh root-owned directory under /tmp holding a root-only file, a directory nobody owns and a sticky
    world-writable one (the places where nobody can plant names)."""
    d = Path(tempfile.mkdtemp(prefix="ptui-writes-", dir="/tmp"))
    os.chmod(d, 0o755)
    (d / "rootonly").write_bytes(SECRET)
    os.chmod(d / "rootonly", 0o600)
    (d / "nobodys").mkdir()
    os.chown(d / "nobodys", NOBODY.pw_uid, NOBODY.pw_gid)
    (d / "sticky").mkdir()
    os.chmod(d / "sticky", 0o1777)
    shutil.copytree(DATA / "report" / "golden-run", d / "run")
    try:
        yield d
    finally:
        shutil.rmtree(d, ignore_errors=True)


def as_nobody(*argv: str) -> None:
    subprocess.run(["runuser", "-u", "nobody", "--", *argv], check=True, capture_output=True, timeout=30)


def refused(proc: subprocess.CompletedProcess[str], *fragments: str) -> None:
    """Exit 2, one sentence naming every fragment, no traceback."""
    assert proc.returncode == 2, (proc.returncode, proc.stderr)
    lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("profiler-tui:"), proc.stderr
    for f in fragments:
        assert f in lines[0], (f, lines[0])


@pytest.mark.parametrize("where", ["nobodys", "sticky"])
def test_compare_out_never_writes_through_another_users_link(shared: Path, where: str) -> None:
    link = shared / where / "compare.md"
    as_nobody("ln", "-s", str(shared / "rootonly"), str(link))
    proc = run_cli("compare", str(shared / "run"), str(shared / "run"), "--out", str(link))
    refused(proc, str(link))
    assert (shared / "rootonly").read_bytes() == SECRET
    assert link.is_symlink() and os.lstat(link).st_uid == NOBODY.pw_uid


def test_compare_out_into_a_directory_nobody_owns_is_refused(shared: Path) -> None:
    out = shared / "nobodys" / "new.md"
    refused(run_cli("compare", str(shared / "run"), str(shared / "run"), "--out", str(out)),
            str(shared / "nobodys"), "another user")
    assert not out.exists()


def test_compare_out_onto_another_users_file_in_tmp_leaves_it_as_it_was(shared: Path) -> None:
    planted = shared / "sticky" / "compare.md"
    as_nobody("sh", "-c", f"printf 'nobody was here' > {planted}")
    refused(run_cli("compare", str(shared / "run"), str(shared / "run"), "--out", str(planted)), str(planted))
    assert planted.read_text() == "nobody was here"  # refused before it was emptied, not after


def test_compare_out_in_a_sticky_directory_writes_a_file_of_roots(shared: Path) -> None:
    out = shared / "sticky" / "fresh.md"
    proc = run_cli("compare", str(shared / "run"), str(shared / "run"), "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    st = os.lstat(out)
    assert st.st_uid == 0 and st.st_mode & 0o777 == 0o644 and "vs" in out.read_text()


def test_a_write_never_empties_another_users_file_or_a_hard_link(shared: Path) -> None:
    """The shared writer (report, compare, csv, raw files) checks before it truncates."""
    theirs = shared / "sticky" / "theirs.md"
    as_nobody("sh", "-c", f"printf 'theirs' > {theirs}")
    fd = os.open(shared / "sticky", os.O_RDONLY | os.O_DIRECTORY)
    try:
        with pytest.raises(OSError, match="not a file of this tool's"):
            write_new("theirs.md", b"x", dir_fd=fd)
        assert theirs.read_text() == "theirs"
        os.link(shared / "rootonly", shared / "sticky" / "second-name")  # root's own file, by a second name
        with pytest.raises(OSError, match="hard link"):
            write_new("second-name", b"x", dir_fd=fd)
        assert (shared / "rootonly").read_bytes() == SECRET
    finally:
        os.close(fd)


def test_a_fifo_under_the_name_is_refused_without_waiting(shared: Path) -> None:
    as_nobody("mkfifo", str(shared / "sticky" / "fifo.md"))
    fd = os.open(shared / "sticky", os.O_RDONLY | os.O_DIRECTORY)
    outcome: list[BaseException | int] = []

    def attempt() -> None:
        try:
            outcome.append(open_file("fifo.md", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, fd))
        except OSError as e:
            outcome.append(e)

    t = threading.Thread(target=attempt, daemon=True)
    t.start()
    t.join(5)
    try:
        assert not t.is_alive(), "opening a FIFO for writing waited for a reader"
        assert isinstance(outcome[0], OSError)
    finally:
        if not t.is_alive() and outcome and isinstance(outcome[0], int):
            os.close(outcome[0])
        if t.is_alive():  # free the thread: a reader lets its open return
            os.close(os.open(shared / "sticky" / "fifo.md", os.O_RDONLY | os.O_NONBLOCK))
        os.close(fd)


def test_import_never_follows_another_users_link(shared: Path) -> None:
    mlc = next((DATA / "mlc").glob("*.txt"))
    target = shared / "rootonly.txt"
    shutil.copy(mlc, target)
    os.chmod(target, 0o600)  # root's: valid MLC output nobody may read
    link = shared / "sticky" / "mine.txt"
    as_nobody("ln", "-s", str(target), str(link))
    out = shared / "imported"
    refused(run_cli("import", str(link), "--out", str(out)), str(link), "symbolic link of another user")
    assert not out.exists()
    own = shared / "own-link.txt"  # root's own link is followed as before
    own.symlink_to(target)
    assert run_cli("import", str(own), "--out", str(out)).returncode == 0


def test_report_never_reads_through_a_raw_link_another_user_made(shared: Path) -> None:
    """A run directory of nobody's (reported with --out elsewhere): its raw/ is a link to a directory of root's that
    holds a samples file; the report reads nothing through it (samples.csv would carry root's figures, 0644)."""
    from app.host.telemetry import load_readings
    from app.report.sections.procedure import read_samples

    private = shared / "private"
    private.mkdir(mode=0o700)
    (private / "p.samples.jsonl").write_text('{"t": 1, "iops": 424242.0, "mean_ns": 1, "p99_ns": 1}\n')
    (private / "telemetry.jsonl").write_text('{"t": 1}\n')
    run = shared / "sticky" / "theirs"
    shutil.copytree(shared / "run", run)
    lines = (run / "results.jsonl").read_text().splitlines()
    lines[0] = lines[0].replace('"raw":{', '"raw":{"samples":"raw/p.samples.jsonl",', 1)
    (run / "results.jsonl").write_text("\n".join(lines) + "\n")
    (run / "raw").symlink_to(private)
    subprocess.run(["chown", "-hR", "nobody", str(run)], check=True)
    assert read_samples(run, {"samples": "raw/p.samples.jsonl"}) == []
    assert load_readings(Path("raw/telemetry.jsonl"), beneath=run) == ([], 0)
    out = shared / "report" / "r.md"
    proc = run_cli("report", str(run), "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    assert "424242" not in "".join(p.read_text() for p in out.parent.glob("*.csv")) + out.read_text()
    (run / "raw").unlink()  # the same file, really inside the run directory, is read
    (run / "raw").mkdir()
    shutil.copy(private / "p.samples.jsonl", run / "raw")
    assert read_samples(run, {"samples": "raw/p.samples.jsonl"})[0]["iops"] == 424242.0
