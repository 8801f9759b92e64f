"""Bounded memory for any import file: large inputs are read as streams.  Each import runs in a
child process whose peak RSS (``ru_maxrss``) is measured.  Before streaming, a 64 MiB fio status
stream took 461 MiB; streamed it takes about 35 MiB (200 MiB: 34 MiB, see docs/report.md).  Test
files are written in blocks, so the test process itself stays small."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.conftest import ROOT
from tests.helpers.readers_util import fio_json_plus

RSS_LIMIT_MIB = 150  # measured 35-55 MiB; the bound for any input is 500 MB

# VmHWM, the peak RSS of this process's own memory (ru_maxrss would also count the test process's
# peak before the exec of the child)
MEASURE = """
import sys
from app.cli.commands import main
try:
    main(sys.argv[1:])
except SystemExit as e:
    code = e.code
hwm = next(ln for ln in open("/proc/self/status") if ln.startswith("VmHWM:")).split()[1]
print("RSS", int(hwm) // 1024, "EXIT", code, file=sys.stderr)
"""


def _import_rss(*args: str) -> tuple[int, int, str]:
    """(peak RSS in MiB, exit code, stderr) of ``profiler-tui import ARGS`` in a child process."""
    proc = subprocess.run([sys.executable, "-c", MEASURE, "import", *args], capture_output=True, text=True,
                          timeout=600, cwd=ROOT)
    last = proc.stderr.strip().splitlines()[-1].split()
    assert last[0] == "RSS", proc.stderr
    return int(last[1]), int(last[3]), proc.stderr


def test_a_64_mib_fio_status_stream(tmp_path: Path) -> None:
    doc = json.loads(fio_json_plus(tmp_path).read_text())
    stream = tmp_path / "stream.json"
    with open(stream, "w") as f:
        written, i = 0, 0
        while written < 64 << 20:  # cumulative dumps of one run, as --status-interval writes them
            i += 1
            for job in doc["jobs"]:
                job["job_runtime"] = i
            text = "fio: a warning line between dumps\n" + json.dumps(doc, indent=2) + "\n"
            f.write(text)
            written += len(text)
    rss, code, err = _import_rss(str(stream), "--out", str(tmp_path / "out"))
    assert code == 0, err
    assert "1 point(s)" in err or (tmp_path / "out" / "run.json").is_file()
    assert rss < RSS_LIMIT_MIB, f"{rss} MiB"


def test_an_unclosed_document_of_40_mib_is_dropped_not_held(tmp_path: Path) -> None:
    f = tmp_path / "unclosed.json"
    with open(f, "w") as out:
        out.write('{\n  "jobs" : [\n')
        line = '    {"padding": "' + "x" * 1000 + '"},\n'
        for _ in range((40 << 20) // len(line)):
            out.write(line)
    rss, code, err = _import_rss(str(f), "--out", str(tmp_path / "out"))
    assert code == 2 and "larger than 32 MiB" in err and "Traceback" not in err, err
    assert rss < RSS_LIMIT_MIB, f"{rss} MiB"


def test_one_40_mib_line_without_a_newline(tmp_path: Path) -> None:
    f = tmp_path / "oneline.txt"
    with open(f, "w") as out:
        for _ in range(40):
            out.write("x" * (1 << 20))
    rss, code, err = _import_rss(str(f), "--out", str(tmp_path / "out"))
    assert code == 2 and "neither fio JSON" in err, err
    assert rss < RSS_LIMIT_MIB, f"{rss} MiB"


def test_a_64_mib_mlc_text(tmp_path: Path) -> None:
    f = tmp_path / "rows.txt"
    head = ("Intel(R) Memory Latency Checker - v3.10\nCommand line parameters: --loaded_latency\n\n"
            "Measuring Loaded Latencies for the system\nUsing Read-only traffic type\n"
            "Inject\tLatency\tBandwidth\nDelay\t(ns)\tMB/sec\n==========================\n")
    with open(f, "w") as out:
        out.write(head)
        block = " 00000\t108.59\t 97362.0\n" * 10_000
        for _ in range((64 << 20) // len(block)):
            out.write(block)
    rss, code, err = _import_rss(str(f), "--out", str(tmp_path / "out"))
    assert code == 0, err
    assert rss < RSS_LIMIT_MIB, f"{rss} MiB"


def test_mlc_output_after_200k_star_lines_is_recognised(tmp_path: Path) -> None:
    """200,000 '***' lines before a real MLC output made the file "neither fio JSON nor Intel MLC text": the
    parser stopped after MAX_LINES lines before the output began.  It is imported as the output alone is."""
    from app.store.results import ResultsDir
    from tests.conftest import DATA, run_cli

    source = DATA / "mlc" / "v3.10-default-run-2socket-skylake.txt"
    stars = tmp_path / "stars.txt"
    with open(stars, "w") as out:
        out.write("***\n" * 200_000)
        out.write(source.read_text())
    for name, path in (("alone", source), ("stars", stars)):
        proc = run_cli("import", str(path), "--out", str(tmp_path / name))
        assert proc.returncode == 0, proc.stderr
    alone, after = (ResultsDir(tmp_path / n).records() for n in ("alone", "stars"))
    assert after and [(r["point"], r["metrics"]) for r in after] == [(r["point"], r["metrics"]) for r in alone]
