"""Digest of everything the tool writes from a set of results directories, to show a refactor changed no byte.

For each directory given (copied first; the originals are never touched) it runs `profiler-tui report` and
records the SHA-256 of report.md, results.csv and every plots/*.svg, the pandas loader's CSV
(`app.stats.frame.load_results`), the runs browser's summary of the directory, and `compare` of each directory
with the next.  The 120- and 1,008-point directories of bench/report_speed.py and the test suite's report
fixtures are always included.  With ``--stream`` a real one-second fio run on a scratch file is made with
``--json-stream``; its events are reduced to their shape (event name and key tree, no values, since the
measured figures differ from run to run) and digested too.

    python bench/output_digest.py OUT.txt [DIR ...] [--stream]

Run it before and after a change and `diff` the two files: no line may differ.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.report_speed import BIG_BS, BIG_QD, make_results_dir  # noqa: E402

FIXTURES = [ROOT / "tests" / "data" / "report" / "golden-run", ROOT / "tests" / "data" / "report" / "telemetry-run"]
CLI = [sys.executable, "-m", "app"]


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()[:16]


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(CLI + list(args), cwd=ROOT, capture_output=True, text=True)


def _digest_dir(name: str, d: Path, out: list[str]) -> None:
    for stale in ("report.md", "results.csv"):
        (d / stale).unlink(missing_ok=True)
    shutil.rmtree(d / "plots", ignore_errors=True)
    proc = _cli("report", str(d))
    out.append(f"{name} report exit {proc.returncode} stderr {_sha(proc.stderr.encode())}")
    for f in sorted([d / "report.md", d / "results.csv", *(d / "plots").glob("*.svg")]):
        if f.exists():
            out.append(f"{name} {f.relative_to(d)} {_sha(f.read_bytes())}")
    from app.stats.frame import load_results, to_csv
    from app.store.runs import summarise
    out.append(f"{name} frame {_sha(to_csv(load_results(d)).encode())}")
    s = summarise(d)
    fields = {k: v for k, v in vars(s).items() if k not in ("path", "mtime")}  # RunSummary: a plain dataclass
    out.append(f"{name} runs {_sha(repr(sorted((k, repr(v)) for k, v in dict(fields).items())).encode())}")


def _shape(value: object) -> object:
    if isinstance(value, dict):
        return {k: _shape(v) for k, v in sorted(value.items())}
    if isinstance(value, list):
        return [_shape(v) for v in value[:1]]
    return type(value).__name__


def _stream(work: Path, out: list[str]) -> Path:
    target = work / "stream.testfile"
    run_dir = work / "stream-run"
    proc = subprocess.run(CLI + ["run", "quick", "--target", str(target), "--out", str(run_dir), "--yes",
                                 "--set", "runtime=1", "--set", "size=16m", "--set", "repeat=1", "--json-stream"],
                          cwd=ROOT, capture_output=True, text=True)
    out.append(f"stream exit {proc.returncode}")
    for line in proc.stdout.splitlines():
        ev = json.loads(line)
        out.append(f"stream {ev.get('event')} {_sha(json.dumps(_shape(ev), sort_keys=True).encode())}")
    return run_dir


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out", help="write the digest lines here")
    ap.add_argument("dirs", nargs="*", help="more results directories (copied, then rendered)")
    ap.add_argument("--stream", action="store_true", help="also make a real 1 s fio run with --json-stream")
    args = ap.parse_args()
    lines: list[str] = []
    with tempfile.TemporaryDirectory(prefix="output-digest-") as tmp:
        work = Path(tmp)
        dirs = [make_results_dir(work / "bench-120"), make_results_dir(work / "bench-1008", bss=BIG_BS, qds=BIG_QD)]
        for src in FIXTURES + [Path(d) for d in args.dirs]:
            dst = work / f"{len(dirs):02d}-{src.name}"
            shutil.copytree(src, dst)
            dirs.append(dst)
        for d in dirs:
            _digest_dir(d.name, d, lines)
        for a, b in zip(dirs, dirs[1:]):
            proc = _cli("compare", str(a), str(b))
            text = (proc.stdout + proc.stderr).replace(str(work), "WORK")
            lines.append(f"compare {a.name} {b.name} exit {proc.returncode} {_sha(text.encode())}")
        if args.stream:
            _stream(work, lines)
    Path(args.out).write_text("\n".join(lines) + "\n")
    print(f"{len(lines)} digests written to {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
