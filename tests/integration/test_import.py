"""`profiler-tui import`: fio outputs the tests make with the real fio, in every form users save
them, must come back with fio's own numbers; every MLC sample gives its rows; seed 000's appendix
survives import → report unchanged."""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from app.core.errors import UsageError
from app.engine.importer import import_files
from app.report import render_report
from app.store.results import ResultsDir
from tests.conftest import DATA, run_cli

MLC_SAMPLES = DATA / "mlc"
SEED000 = DATA / "seed000"

JOB = """[global]
filename={file}
size=8m
runtime=1
time_based
{extra}
[{name}]
rw={rw}
bs={bs}
iodepth={qd}
ioengine={engine}
direct={direct}
numjobs={jobs}
{more}
"""


def _job(tmp: Path, name: str, *, rw: str = "randread", bs: str = "4k", qd: int = 4, engine: str = "libaio",
         direct: int = 1, jobs: int = 1, extra: str = "", more: str = "") -> Path:
    f = tmp / f"{name}.fio"
    f.write_text(JOB.format(file=tmp / "target.bin", name=name, rw=rw, bs=bs, qd=qd, engine=engine, direct=direct,
                            jobs=jobs, extra=extra, more=more))
    return f


def _first_json(text: str) -> dict:
    """fio's JSON from a saved output, found independently of the importer's splitter."""
    start = re.search(r"^\{", text, re.M)
    assert start, text[:300]
    doc, _ = json.JSONDecoder().raw_decode(text[start.start():])
    return doc


def _all_json(text: str) -> list[dict]:
    out, dec = [], json.JSONDecoder()
    for m in re.finditer(r"^\{", text, re.M):
        try:
            out.append(dec.raw_decode(text[m.start():])[0])
        except json.JSONDecodeError:
            pass
    return out


@pytest.fixture(scope="module")
def fio_outputs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """One short real fio run per saved form, run side by side (each output is compared with itself)."""
    tmp = tmp_path_factory.mktemp("fio")
    (tmp / "target.bin").write_bytes(b"\0" * (8 << 20))
    forms: dict[str, tuple[list[str], bool]] = {
        # plain --output-format=json into --output
        "json": ([str(_job(tmp, "plain", more="lat_percentiles=1")), "--output-format=json",
                  f"--output={tmp / 'json.out'}"], False),
        # json+ with histogram bins
        "jsonplus": ([str(_job(tmp, "plus", more="lat_percentiles=1")), "--output-format=json+"], True),
        # stdout and stderr in one file, fio's warning lines first; psync caps the depth (a "note:")
        "mixed_stderr": ([str(_job(tmp, "warn", rw="randrw", engine="psync", direct=0, more="rwmixread=70")),
                          "--output-format=json"], True),
        # --output-format=normal,json: the human report and the JSON in one stream
        "normal_json": ([str(_job(tmp, "both", rw="randwrite", bs="8k")), "--output-format=normal,json"], True),
        # several jobs without group_reporting, json+ (exact merged percentiles)
        "jobs_plus": ([str(_job(tmp, "many", jobs=2, more="lat_percentiles=1")), "--output-format=json+"], True),
        # several jobs, plain json, mixed read/write
        "jobs_mixed": ([str(_job(tmp, "mixrw", rw="randrw", jobs=2, more="rwmixread=60")),
                        "--output-format=json"], True),
        # a --status-interval stream: cumulative dumps, the last is the result
        "stream": ([str(_job(tmp, "live", more="lat_percentiles=1").as_posix()).replace("runtime=1", "runtime=2"),
                    "--output-format=json", "--status-interval=1"], True),
    }
    (tmp / "live.fio").write_text((tmp / "live.fio").read_text().replace("runtime=1", "runtime=2"))
    procs = {}
    for name, (args, capture) in forms.items():
        out = open(tmp / f"{name}.out", "w") if capture else subprocess.DEVNULL
        procs[name] = (subprocess.Popen(["fio", *args], stdout=out, stderr=subprocess.STDOUT), out)
    for name, (proc, out) in procs.items():
        assert proc.wait(timeout=60) == 0, (name, (tmp / f"{name}.out").read_text()[-500:])
        if not isinstance(out, int):  # a file of its own, not DEVNULL
            out.close()
    return {name: tmp / f"{name}.out" for name in forms}


def _import_one(path: Path, tmp_path: Path) -> list[dict]:
    out, _ = import_files([str(path)], tmp_path / f"imp-{path.stem}")
    return ResultsDir(out).records()


def test_plain_json(fio_outputs: dict[str, Path], tmp_path: Path) -> None:
    doc = _first_json(fio_outputs["json"].read_text())
    (rec,) = _import_one(fio_outputs["json"], tmp_path)
    job = doc["jobs"][0]
    m = rec["metrics"]
    assert m["iops"] == pytest.approx(job["read"]["iops"])
    assert m["lat_ns"]["p99"] == job["read"]["lat_ns"]["percentile"]["99.000000"]
    assert m["lat_ns"]["p99_9"] == job["read"]["lat_ns"]["percentile"]["99.900000"]
    assert m["lat_ns"]["mean"] == pytest.approx(job["read"]["lat_ns"]["mean"])
    assert m["usr_cpu"] == pytest.approx(job["usr_cpu"]) and m["sys_cpu"] == pytest.approx(job["sys_cpu"])
    assert "percentiles_source" not in m
    assert m["ci_method"] == {"method": "none", "reason": "imported fio JSON has no per-second samples"}
    assert "ci95" not in m and list(m)[-1] == "ci_method"
    p = rec["point"]
    assert (p["rw"], p["bs"], p["iodepth"], p["numjobs"], p["ioengine"], p["direct"], p["runtime"]) \
        == ("randread", 4096, 4, 1, "libaio", True, 1)
    # fio leaves value-less flags like time_based out of its JSON: inferred when the job moved more than size
    assert p["time_based"] is (job["read"]["io_bytes"] > 8 << 20)
    assert p["size"] == 8 << 20


def test_json_plus(fio_outputs: dict[str, Path], tmp_path: Path) -> None:
    doc = _first_json(fio_outputs["jsonplus"].read_text())
    (rec,) = _import_one(fio_outputs["jsonplus"], tmp_path)
    lat = doc["jobs"][0]["read"]["lat_ns"]
    assert "bins" in lat
    assert rec["metrics"]["iops"] == pytest.approx(doc["jobs"][0]["read"]["iops"])
    for name, key in (("p50", "50.000000"), ("p90", "90.000000"), ("p99", "99.000000"), ("p99_99", "99.990000")):
        assert rec["metrics"]["lat_ns"][name] == lat["percentile"][key]


def test_stdout_and_stderr_mixed_with_warnings_first(fio_outputs: dict[str, Path], tmp_path: Path) -> None:
    text = fio_outputs["mixed_stderr"].read_text()
    assert not text.startswith("{") and "note:" in text.split("{")[0]  # the warning really came first
    doc = _first_json(text)
    (rec,) = _import_one(fio_outputs["mixed_stderr"], tmp_path)
    job = doc["jobs"][0]
    m = rec["metrics"]
    # mixed read/write: fio's own per-direction figures, summed
    assert m["read_iops"] == pytest.approx(job["read"]["iops"])
    assert m["write_iops"] == pytest.approx(job["write"]["iops"])
    assert m["iops"] == pytest.approx(job["read"]["iops"] + job["write"]["iops"])
    # no lat_percentiles in this job: p99 is fio's clat p99, and the record says so
    assert m["percentiles_source"] == "clat_ns"
    assert m["read_lat_ns"]["p99"] == job["read"]["clat_ns"]["percentile"]["99.000000"]
    assert m["write_lat_ns"]["p99"] == job["write"]["clat_ns"]["percentile"]["99.000000"]
    assert m["usr_cpu"] == pytest.approx(job["usr_cpu"])
    p = rec["point"]
    assert (p["rw"], p["rwmixread"], p["ioengine"], p["direct"]) == ("randrw", 70, "psync", False)


def test_normal_and_json_in_one_stream(fio_outputs: dict[str, Path], tmp_path: Path) -> None:
    text = fio_outputs["normal_json"].read_text()
    assert "IOPS=" in text  # the normal report is in the file too
    doc = _first_json(text)
    (rec,) = _import_one(fio_outputs["normal_json"], tmp_path)
    job = doc["jobs"][0]
    assert rec["metrics"]["iops"] == pytest.approx(job["write"]["iops"])
    assert rec["metrics"]["lat_ns"]["p99"] == job["write"]["clat_ns"]["percentile"]["99.000000"]
    assert (rec["point"]["rw"], rec["point"]["bs"]) == ("randwrite", 8192)


def test_several_jobs_without_group_reporting_json_plus(fio_outputs: dict[str, Path], tmp_path: Path) -> None:
    doc = _first_json(fio_outputs["jobs_plus"].read_text())
    jobs = doc["jobs"]
    assert len(jobs) == 2
    (rec,) = _import_one(fio_outputs["jobs_plus"], tmp_path)
    m = rec["metrics"]
    assert rec["point"]["numjobs"] == 2
    assert m["iops"] == pytest.approx(sum(j["read"]["iops"] for j in jobs))
    assert m["total_ios"] == sum(j["read"]["total_ios"] for j in jobs)
    weights = [j["job_runtime"] for j in jobs]
    assert m["usr_cpu"] == pytest.approx(sum(j["usr_cpu"] * w for j, w in zip(jobs, weights)) / sum(weights))
    # fio's group reporting merges the histograms: the p99 is the first bin reaching 99 % of all I/Os
    merged: dict[int, int] = {}
    for j in jobs:
        for k, v in j["read"]["lat_ns"]["bins"].items():
            merged[int(k)] = merged.get(int(k), 0) + v
    total, run = sum(merged.values()), 0
    for value in sorted(merged):
        run += merged[value]
        if run >= total * 0.99:
            break
    assert m["lat_ns"]["p99"] == value
    assert "percentiles_approx" not in m["lat_ns"]
    assert m["lat_ns"]["min"] == min(j["read"]["lat_ns"]["min"] for j in jobs)
    assert m["lat_ns"]["max"] == max(j["read"]["lat_ns"]["max"] for j in jobs)


def test_several_jobs_mixed_plain_json(fio_outputs: dict[str, Path], tmp_path: Path) -> None:
    doc = _first_json(fio_outputs["jobs_mixed"].read_text())
    jobs = doc["jobs"]
    (rec,) = _import_one(fio_outputs["jobs_mixed"], tmp_path)
    m = rec["metrics"]
    assert rec["point"]["numjobs"] == 2 and rec["point"]["rwmixread"] == 60
    assert m["read_iops"] == pytest.approx(sum(j["read"]["iops"] for j in jobs))
    assert m["write_iops"] == pytest.approx(sum(j["write"]["iops"] for j in jobs))
    n = sum(j[d]["lat_ns"]["N"] for j in jobs for d in ("read", "write"))
    mean = sum(j[d]["lat_ns"]["mean"] * j[d]["lat_ns"]["N"] for j in jobs for d in ("read", "write")) / n
    assert m["lat_ns"]["mean"] == pytest.approx(mean)
    assert m["lat_ns"]["percentiles_approx"] is True  # plain json: no histograms to merge


def test_status_interval_stream_keeps_the_final_result(fio_outputs: dict[str, Path], tmp_path: Path) -> None:
    docs = _all_json(fio_outputs["stream"].read_text())
    assert len(docs) >= 2
    (rec,) = _import_one(fio_outputs["stream"], tmp_path)
    final = docs[-1]["jobs"][0]
    assert rec["metrics"]["iops"] == pytest.approx(final["read"]["iops"])
    assert rec["metrics"]["total_ios"] == final["read"]["total_ios"]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_client_server_output(tmp_path: Path) -> None:
    port = _free_port()
    pidfile = tmp_path / "server.pid"
    (tmp_path / "target.bin").write_bytes(b"\0" * (8 << 20))
    job = _job(tmp_path, "remote", qd=8, more="lat_percentiles=1")
    subprocess.run(["fio", f"--server=ip:127.0.0.1,{port}", f"--daemonize={pidfile}"], check=True, timeout=20)
    try:
        for _ in range(50):
            if pidfile.exists() and pidfile.read_text().strip():
                break
            time.sleep(0.1)
        out = tmp_path / "client.out"
        with open(out, "w") as f:
            proc = subprocess.run(["fio", f"--client=127.0.0.1,{port}", str(job), "--output-format=json"],
                                  stdout=f, stderr=subprocess.STDOUT, timeout=60)
        assert proc.returncode == 0, out.read_text()[-500:]
    finally:
        if pidfile.exists() and pidfile.read_text().strip():
            try:
                os.kill(int(pidfile.read_text().strip()), signal.SIGTERM)
            except ProcessLookupError:
                pass
    doc = _first_json(out.read_text())
    assert "client_stats" in doc and not doc.get("jobs")
    (rec,) = _import_one(out, tmp_path)
    stats = [j for j in doc["client_stats"] if j["jobname"] != "All clients"][0]
    assert rec["metrics"]["iops"] == pytest.approx(stats["read"]["iops"])
    assert rec["metrics"]["lat_ns"]["p99"] == stats["read"]["lat_ns"]["percentile"]["99.000000"]
    assert rec["metrics"]["usr_cpu"] == pytest.approx(stats["usr_cpu"])
    assert rec["point"]["host"] == stats["hostname"] and rec["point"]["iodepth"] == 8


def test_import_several_files_copies_raw_and_records_sources(fio_outputs: dict[str, Path], tmp_path: Path) -> None:
    files = [fio_outputs["json"], fio_outputs["jobs_plus"], MLC_SAMPLES / "v3.10-loaded-latency.txt"]
    proc = run_cli("import", *map(str, files), "--out", str(tmp_path / "imp"))
    assert proc.returncode == 0, proc.stderr
    rd = ResultsDir(tmp_path / "imp")
    meta: dict[str, Any] = dict(rd.read_meta().doc)
    assert meta["status"] == "imported" and meta["kind"] == "mixed"
    assert len(meta["plan"]) == len(rd.records()) == 1 + 1 + 19
    for src, f in zip(meta["sources"], files):
        assert (tmp_path / "imp" / src["raw"]).read_bytes() == f.read_bytes()
    assert meta["tools"]["fio"] == "fio-3.33" and meta["tools"]["mlc"] == "v3.10"
    assert run_cli("report", str(tmp_path / "imp")).returncode == 0


# --- MLC ---------------------------------------------------------------------------------------------


def _table_rows(text: str) -> list[tuple[int, float, float]]:
    """The loaded-latency rows of an MLC text, read independently of the importer."""
    rows, on = [], False
    for line in text.replace("\r", "").splitlines():
        if line.startswith("====="):
            on = True
            continue
        m = re.match(r"^\s*(\d+)\s+([\d.]+)\s+([\d.]+)\s*$", line)
        if on and m:
            rows.append((int(m.group(1)), float(m.group(2)), float(m.group(3))))
        elif on and line.strip() == "":
            on = False
    return rows


LOADED_SAMPLES = sorted(p.name for p in MLC_SAMPLES.glob("*.txt") if "Loaded Latencies" in p.read_text()) \
    + sorted(f"seed000/{p.name}" for p in SEED000.glob("mlc_test_*.txt"))


@pytest.mark.parametrize("name", LOADED_SAMPLES)
def test_every_mlc_sample_gives_its_19_rows(name: str, tmp_path: Path) -> None:
    path = DATA / name if name.startswith("seed000/") else MLC_SAMPLES / name
    expected = _table_rows(path.read_text())
    assert len(expected) == 19
    recs = [r for r in _import_one(path, tmp_path) if r["point"]["mode"] == "loaded"]
    assert [(r["point"]["delay"], r["metrics"]["latency_ns"], r["metrics"]["bandwidth_mbps"]) for r in recs] == expected
    assert [r["point"]["delay"] for r in recs] == [0, 2, 8, 15, 50, 100, 200, 300, 400, 500, 700, 1000, 1300, 1700,
                                                    2500, 3500, 5000, 9000, 20000]


def test_mlc_parameters_from_the_command_line(tmp_path: Path) -> None:
    recs = _import_one(SEED000 / "mlc_test_256-W-7.txt", tmp_path)  # CRLF, -W7 -l256
    assert {(r["point"]["traffic"], r["point"]["stride"], r["point"]["engine"]) for r in recs} == {("W7", 256, "mlc")}
    recs = _import_one(MLC_SAMPLES / "v3.10-loaded-latency.txt", tmp_path / "b")
    assert {(r["point"]["traffic"], r["point"]["buffer"]) for r in recs} == {("R", 100 << 20)}


def test_mlc_idle_latency(tmp_path: Path) -> None:
    (rec,) = _import_one(MLC_SAMPLES / "v3.7-idle-latency.txt", tmp_path)
    assert rec["point"]["mode"] == "idle" and rec["metrics"] == {
        "latency_ns": 80.9, "ci_method": {"method": "none", "reason": "Intel MLC prints one figure per row"}}


def test_seed000_appendix_reproduced_by_import_and_report(tmp_path: Path) -> None:
    from tests.data.seed000.make_mlc import appendix_tables

    files = sorted(SEED000.glob("mlc_test_*.txt"))
    assert len(files) == 8
    out, _ = import_files([str(f) for f in files], tmp_path / "seed000")
    md = render_report(out).read_text()
    # the report's memory tables, by (stride, traffic)
    got: dict[tuple[str, str], list[tuple[str, str, str]]] = {}
    key = None
    for line in md.splitlines():
        m = re.match(r"^### (W\d+) \(.*\), stride (\d+) B", line)
        if m:
            key = (m.group(2), m.group(1))
            got[key] = []
            continue
        m = re.match(r"^\|\s*(\d{5})\s*\|\s*([\d.]+)\s*\|\s*([\d.]+)\s*\|$", line)
        if m and key:
            got[key].append((m.group(1), m.group(2), m.group(3)))
        elif line.startswith("#"):
            key = None
    want = {}
    for name, rows in appendix_tables((SEED000 / "appendix.md").read_text()).items():
        stride, w = re.match(r"mlc_test_(\d+)-W-(\d+)", name).groups()  # type: ignore[union-attr]
        want[(stride, f"W{w}")] = rows
    assert got == want
    assert "| Inject (MLC units) | Latency (ns) | Bandwidth (MB/sec) |" in re.sub(r" +", " ", md)


@pytest.fixture(autouse=True)
def _seed000_on_path(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(SEED000))


# --- errors ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("content, fragment", [
    (None, "no such file"),
    ("hello\nworld\n", "neither fio JSON"),
    ('{\n  "fio version" : "fio-3.33",\n  "jobs" : [\n', "no complete document"),
    ((MLC_SAMPLES / "v3.7-peak-injection-bandwidth.txt").read_text().split("ALL Reads")[0],
     "without a figure import can read (sections found: peak injection bandwidth)"),
])
def test_bad_input_exits_2_naming_the_file(tmp_path: Path, content: str | None, fragment: str) -> None:
    bad = tmp_path / "input.txt"
    if content is not None:
        bad.write_text(content)
    good = MLC_SAMPLES / "v3.10-loaded-latency.txt"
    proc = run_cli("import", str(good), str(bad), "--out", str(tmp_path / "out"))
    assert proc.returncode == 2
    assert str(bad) in proc.stderr and fragment in proc.stderr
    assert "Traceback" not in proc.stderr and len(proc.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "out").exists()  # nothing written when any input is bad
    with pytest.raises(UsageError):
        import_files([str(bad)], tmp_path / "out2")


def test_import_refuses_an_existing_run(tmp_path: Path) -> None:
    good = str(MLC_SAMPLES / "v3.10-loaded-latency.txt")
    assert run_cli("import", good, "--out", str(tmp_path / "o")).returncode == 0
    proc = run_cli("import", good, "--out", str(tmp_path / "o"))
    assert proc.returncode == 2 and "already holds a run" in proc.stderr
