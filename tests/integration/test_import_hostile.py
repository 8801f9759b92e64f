"""`import` of hostile inputs: wrong types anywhere in a real fio JSON, special files, huge files,
an unwritable --out, truncated MLC tables.  Every one ends in a result or in one sentence with exit
2 — never a traceback, never a hang."""

from __future__ import annotations

import json
import os
import socket
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any, Iterator

import pytest

from app.core.errors import UsageError
from app.engine import importer
from app.engine.importer import import_files, parse_file
from app.report import render_report
from app.store.results import ResultsDir
from tests.conftest import DATA, ROOT
from tests.helpers.readers_util import assert_one_sentence, cli, fio_json_plus, read_only_mount
from tests.helpers.typed import as_list

MLC_SAMPLE = DATA / "mlc" / "v3.10-loaded-latency.txt"

# the wrong values every field of the fio document is set to, one at a time (as JSON text)
WRONG = {
    "null": "null", "string": '"abc"', "list": "[]", "object": "{}", "negative": "-1", "1e308": "1e308",
    "nan-string": '"nan"', "NaN": "NaN", "Infinity": "Infinity", "huge-int": "1" + "0" * 30,
    "over-digit-limit": "9" * 5000, "true": "true",
}
SENTINEL = "\u2063MUTATION\u2063"


@pytest.fixture(scope="module")
def real_fio(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """A real fio json+ document (mixed read/write), its histograms cut to 4 bins per direction so that
    every field can be mutated in reasonable time (each bin is read by the same code)."""
    doc = json.loads(fio_json_plus(tmp_path_factory.mktemp("fio")).read_text())

    def trim(x: Any) -> None:
        if isinstance(x, dict):
            for k, v in list(x.items()):
                if k == "bins" and isinstance(v, dict):
                    x[k] = dict(sorted(v.items(), key=lambda t: int(t[0]))[:4])
                else:
                    trim(v)
        elif isinstance(x, list):
            for v in x:
                trim(v)

    trim(doc)
    return doc


def _paths(x: Any, path: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    if path:
        yield path
    if isinstance(x, dict):
        for k, v in x.items():
            yield from _paths(v, path + (k,))
    elif isinstance(x, list):
        for i, v in enumerate(x):
            yield from _paths(v, path + (i,))


def _mutated(doc: dict[str, Any], path: tuple[Any, ...], value_json: str | None) -> str:
    """The document as fio prints it (indented) with the field at ``path`` set to ``value_json``
    (removed when None)."""
    d = json.loads(json.dumps(doc))
    parent = d
    for p in path[:-1]:
        parent = parent[p]
    if value_json is None:
        del parent[path[-1]]
        return json.dumps(d, indent=2)
    parent[path[-1]] = SENTINEL
    return json.dumps(d, indent=2).replace(json.dumps(SENTINEL), value_json)


def _check_result(points: list[Any]) -> None:
    """What import would store is plain JSON: no NaN or infinity slipped through."""
    for pt in points:
        json.dumps([pt.point, pt.metrics, pt.extra], allow_nan=False)


def test_every_single_field_mutation_of_a_real_fio_json_ends_in_a_result_or_exit_2(
        real_fio: dict[str, Any], tmp_path: Path) -> None:
    paths = list(_paths(real_fio))
    assert len(paths) > 250  # the whole document: options, jobs, directions, latencies, percentiles, bins
    f = tmp_path / "mutated.json"
    outcomes = {"result": 0, "refused": 0}
    refused_keys: set[str] = set()
    cli_checked = 0
    n = 0
    for path in paths:
        for name, value in [*WRONG.items(), ("deleted", None)]:
            n += 1
            f.write_text(_mutated(real_fio, path, value))
            try:
                kind, points, _ = parse_file(str(f))
            except UsageError as e:
                outcomes["refused"] += 1
                msg = str(e)
                assert msg.startswith(str(f)) and "\n" not in msg, msg
                refused_keys.add(msg)
            else:
                outcomes["result"] += 1
                assert kind == "fio" and points
                _check_result(points)
            if n % 40 == 0:  # a sample of them all the way through the real entry point, writing a directory
                code, _, err = cli("import", str(f), "--out", str(tmp_path / f"out{n}"))
                assert code in (0, 2) and "Traceback" not in err, (path, name, err)
                if code == 0:
                    assert ResultsDir(tmp_path / f"out{n}").read_records().unreadable == 0
                cli_checked += 1
    assert n == len(paths) * (len(WRONG) + 1)
    # both outcomes happen: harmless changes (a job name) import, impossible values are refused
    assert outcomes["result"] > 100 and outcomes["refused"] > 1000, outcomes
    assert cli_checked > 50


@pytest.mark.parametrize("doc, fragments", [
    ({"jobs": "x"}, ["key 'jobs'", "'x'", "must be a list"]),
    ({"jobs": [None]}, ["key 'jobs[0]'", "null"]),
    ({"jobs": [{"jobname": "j", "read": {"iops": "abc", "total_ios": 5}}]}, ["key 'jobs[0].read.iops'", "'abc'"]),
    ({"jobs": [{}]}, ["no job did any I/O"]),
    ({"jobs": [{"jobname": "j", "job options": {"rw": "randread\nexec_prerun=x"}, "read": {"total_ios": 1}}]},
     ["key 'jobs[0].job options.rw'"]),
    ({"jobs": [{"jobname": "j", "job options": {"iodepth": "1e308"}, "read": {"total_ios": 1}}]},
     ["key 'jobs[0].job options.iodepth'", "'1e308'"]),
    ({"jobs": [{"read": {"total_ios": 1, "lat_ns": {"N": 1, "percentile": {"abc": 1}}}}]},
     ["key 'jobs[0].read.lat_ns.percentile'"]),
])
def test_wrong_types_are_one_sentence_naming_file_key_and_value(tmp_path: Path, doc: dict[str, Any],
                                                                 fragments: list[str]) -> None:
    f = tmp_path / "bad.json"
    f.write_text(json.dumps(doc, indent=2))
    code, _, err = cli("import", str(f), "--out", str(tmp_path / "out"))
    assert_one_sentence(code, err, str(f), *fragments)
    assert not (tmp_path / "out").exists()


def test_a_huge_integer_or_deep_nesting_is_not_a_traceback(tmp_path: Path) -> None:
    f = tmp_path / "bad.json"
    for text in ('{\n"jobs": [{"read": {"iops": ' + "9" * 5000 + "}}]\n}\n",
                 "{\n\"jobs\": " + "[" * 100_000 + "]" * 100_000 + "\n}\n"):
        f.write_text(text)
        code, _, err = cli("import", str(f), "--out", str(tmp_path / "out"))
        assert_one_sentence(code, err, str(f))


# --- special files: refused before they are read ------------------------------------------------------------


def _special_files(tmp_path: Path) -> dict[str, tuple[str, str]]:
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    blk = tmp_path / "blockdev"
    os.mknod(blk, stat.S_IFBLK | 0o600, os.makedev(7, 200))  # a node only: never opened
    link = tmp_path / "zero-link"
    link.symlink_to("/dev/zero")
    return {"fifo": (str(fifo), "is a FIFO"), "dev-zero": ("/dev/zero", "is a character device"),
            "dev-null": ("/dev/null", "is a character device"), "link": (str(link), "is a character device"),
            "block": (str(blk), "is a block device"), "dir": (str(tmp_path), "is a directory")}


@pytest.mark.skipif(os.geteuid() != 0, reason="mknod of a block device node needs root")
def test_special_files_are_refused_before_they_are_read(tmp_path: Path) -> None:
    sock_dir = Path(f"/tmp/pt-sock-{os.getpid()}")
    sock_dir.mkdir(exist_ok=True)
    s = socket.socket(socket.AF_UNIX)
    try:
        s.bind(str(sock_dir / "s"))
        cases = {**_special_files(tmp_path), "socket": (str(sock_dir / "s"), "is a socket")}
        for name, (path, fragment) in cases.items():
            # the real entry point in a subprocess: a FIFO without a writer would hang a reader forever
            proc = subprocess.run([sys.executable, "-m", "app", "import", path, "--out", str(tmp_path / f"o-{name}")],
                                  capture_output=True, text=True, timeout=60, cwd=ROOT)
            assert_one_sentence(proc.returncode, proc.stderr, path, fragment)
            assert not (tmp_path / f"o-{name}").exists()
    finally:
        s.close()
        for p in sock_dir.iterdir():
            p.unlink()
        sock_dir.rmdir()


def test_a_fifo_swapped_in_after_the_check_is_opened_without_blocking(tmp_path: Path) -> None:
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    with pytest.raises(UsageError, match="is a FIFO"):
        importer.open_regular(str(fifo))  # O_NONBLOCK: returns at once although nobody writes


def test_a_file_over_the_cap_is_refused_naming_it_and_the_cap(tmp_path: Path) -> None:
    big = tmp_path / "big.txt"
    with open(big, "wb") as f:
        f.truncate(importer.MAX_IMPORT_BYTES + 1)  # sparse: costs no disk
    code, _, err = cli("import", str(big), "--out", str(tmp_path / "out"))
    assert_one_sentence(code, err, str(big), "256 MiB")


def test_a_file_that_grows_past_the_cap_while_read_is_refused(tmp_path: Path) -> None:
    f = tmp_path / "grows.txt"
    f.write_bytes(b"x" * 5000)
    with pytest.raises(UsageError, match="more than the 4096 bytes"):
        list(importer.text_chunks(str(f), limit=4096))


def test_text_chunks_decode_like_the_whole_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """CRLF split across two chunks, a BOM, UTF-16 and a bad byte read as one string would."""
    monkeypatch.setattr(importer, "CHUNK_BYTES", 7)
    cases = [(b"ab\r\ncd\re\r\n\r\nf", "ab\ncd\ne\n\nf"), (b"\xef\xbb\xbfhello\r\n", "hello\n"),
             (b"\xff\xfe" + "hi\r\nthere".encode("utf-16-le"), "hi\nthere"),
             (b"caf\xc3\xa9 \xff ok\r", "caf\u00e9 \ufffd ok\n")]
    f = tmp_path / "t.txt"
    for data, want in cases:
        f.write_bytes(data)
        assert "".join(importer.text_chunks(str(f))) == want


# --- --out that cannot be written -----------------------------------------------------------------------------


def test_import_out_on_a_read_only_filesystem(tmp_path: Path) -> None:
    with read_only_mount(tmp_path / "ro") as ro:
        code, _, err = cli("import", str(MLC_SAMPLE), "--out", str(ro / "imported"))
        assert_one_sentence(code, err, str(ro / "imported"), "read-only filesystem")


def test_import_out_that_is_a_file(tmp_path: Path) -> None:
    (tmp_path / "afile").write_text("x")
    code, _, err = cli("import", str(MLC_SAMPLE), "--out", str(tmp_path / "afile"))
    assert_one_sentence(code, err, "afile", "not a directory")
    assert (tmp_path / "afile").read_text() == "x"


# --- caps and warnings -----------------------------------------------------------------------------------------


def test_more_points_than_the_cap_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(importer, "MAX_IMPORT_POINTS", 20)
    code, _, err = cli("import", str(MLC_SAMPLE), str(MLC_SAMPLE), "--out", str(tmp_path / "out"))
    assert_one_sentence(code, err, "more than 20 points")
    assert import_files([str(MLC_SAMPLE)], tmp_path / "one")  # 19 points fit


def test_mlc_warnings_are_kept_in_run_json_and_shown_by_the_report(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """Whatever warnings the MLC parser gives (e.g. a truncated table) reach run.json and the report."""
    real = importer.mlc_points

    def with_warnings(text: Any, *limit: Any) -> tuple[list[Any], dict[str, Any]]:
        points, read = real(text, *limit)
        points = points[:9]
        info = dict(read, warnings=["loaded-latency table has 9 of 19 delays (missing 700, 1000, …)"])
        return points, info

    monkeypatch.setattr(importer, "mlc_points", with_warnings)
    out, sources = import_files([str(MLC_SAMPLE)], tmp_path / "imp")
    meta = ResultsDir(out).read_meta()
    assert list(meta.sources[0].warnings) == ["loaded-latency table has 9 of 19 delays (missing 700, 1000, …)"]
    md = render_report(out).read_text()
    section = md.split("### Warnings\n\n", 1)[1].split("\n\n", 1)[0]
    assert section == f"- {MLC_SAMPLE.name}: loaded-latency table has 9 of 19 delays (missing 700, 1000, …)"


def test_a_clean_import_has_no_warnings_section(tmp_path: Path) -> None:
    out, _ = import_files([str(MLC_SAMPLE)], tmp_path / "imp")
    assert "warnings" not in as_list(ResultsDir(out).read_meta().doc["sources"])[0]
    assert "### Warnings" not in render_report(out).read_text()
