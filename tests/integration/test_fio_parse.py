"""fio output parsing against real fio runs: streams with noise, jobs, directions."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest

from app.runners.fio_parse import DocumentSplitter, SampleTracker, combine_latency, metrics, split_documents
from tests.helpers.typed import as_dict, as_list, as_number


def _fio(tmp_path: Path, *args: str) -> str:
    cmd = ["fio", f"--filename={tmp_path / 'f.bin'}", "--size=16m", "--direct=1", "--ioengine=libaio",
           "--time_based=1", "--runtime=1", "--lat_percentiles=1", "--percentile_list=50:90:99:99.9:99.99", *args]
    return subprocess.run(cmd, capture_output=True, text=True, check=True, timeout=60).stdout


def test_splitter_skips_noise_before_between_and_after_documents() -> None:
    a = {"fio version": "fio-3.33", "jobs": [{"jobname": "x", "read": {"iops": 1}}]}
    text = ("fio: this platform does not support process shared mutexes\n"
            + json.dumps(a, indent=2) + "\n<host> some client line\n"
            + json.dumps(a, indent=2) + "\ntrailing junk\n")
    s = DocumentSplitter()
    docs = []
    for i in range(0, len(text), 7):  # arrives in small pieces
        docs += s.feed(text[i:i + 7])
    docs += s.close()
    assert docs == [a, a]
    assert "trailing junk" in s.noise and any("mutexes" in n for n in s.noise)


def test_splitter_survives_a_truncated_document() -> None:
    docs, noise = split_documents('{\n  "a": 1,\n  "b": [\n')
    assert docs == [] and noise


def test_group_reporting_and_per_job_outputs_agree(tmp_path: Path) -> None:
    """numjobs=2 without group_reporting, combined by us, matches fio's own group report."""
    per_job_doc = json.loads(_fio(tmp_path, "--name=j", "--rw=randread", "--bs=4k", "--iodepth=4", "--numjobs=2",
                                  "--output-format=json+"))
    assert len(per_job_doc["jobs"]) == 2
    m = metrics(per_job_doc)
    jobs = per_job_doc["jobs"]
    assert m["iops"] == pytest.approx(sum(j["read"]["iops"] for j in jobs))
    assert m["read_bw_bytes"] == pytest.approx(sum(j["read"]["bw_bytes"] for j in jobs))
    n = sum(j["read"]["lat_ns"]["N"] for j in jobs)
    mean = sum(j["read"]["lat_ns"]["mean"] * j["read"]["lat_ns"]["N"] for j in jobs) / n
    assert m["lat_ns"]["mean"] == pytest.approx(mean)
    assert m["lat_ns"]["min"] == min(j["read"]["lat_ns"]["min"] for j in jobs)
    assert m["lat_ns"]["max"] == max(j["read"]["lat_ns"]["max"] for j in jobs)
    # json+ bins merged: the percentile lies between the jobs' own percentiles
    p99s = [j["read"]["lat_ns"]["percentile"]["99.000000"] for j in jobs]
    assert min(p99s) <= m["lat_ns"]["p99"] <= max(p99s)
    assert "percentiles_approx" not in m["lat_ns"]


def test_mixed_read_write_latency_is_weighted_by_io_count(tmp_path: Path) -> None:
    doc = json.loads(_fio(tmp_path, "--name=m", "--rw=randrw", "--rwmixread=70", "--bs=4k", "--iodepth=8",
                          "--output-format=json"))
    job = doc["jobs"][0]
    r, w = job["read"]["lat_ns"], job["write"]["lat_ns"]
    m = metrics(doc)
    assert (m["read_iops"] == pytest.approx(job["read"]["iops"])
            and m["write_iops"] == pytest.approx(job["write"]["iops"]))
    assert m["iops"] == pytest.approx(job["read"]["iops"] + job["write"]["iops"])
    assert m["lat_ns"]["mean"] == pytest.approx((r["mean"] * r["N"] + w["mean"] * w["N"]) / (r["N"] + w["N"]))
    assert m["usr_cpu"] == pytest.approx(job["usr_cpu"]) and m["sys_cpu"] == pytest.approx(job["sys_cpu"])
    # without json+ bins the combined percentiles are an I/O-weighted estimate and say so
    assert m["lat_ns"]["percentiles_approx"] is True
    assert m["read_lat_ns"]["p99"] == r["percentile"]["99.000000"]


def test_single_direction_percentiles_are_fios_own(tmp_path: Path) -> None:
    doc = json.loads(_fio(tmp_path, "--name=r", "--rw=randread", "--bs=4k", "--iodepth=2", "--output-format=json"))
    lat = doc["jobs"][0]["read"]["lat_ns"]
    m = metrics(doc)
    assert m["lat_ns"]["p50"] == lat["percentile"]["50.000000"]
    assert m["lat_ns"]["p99_9"] == lat["percentile"]["99.900000"]
    assert m["lat_ns"]["p99_99"] == lat["percentile"]["99.990000"]


def test_combine_latency_pooled_stddev() -> None:
    a: dict[str, object] = {"N": 2, "min": 1, "max": 3, "mean": 2.0, "stddev": 1.0}  # values 1, 3
    b: dict[str, object] = {"N": 2, "min": 5, "max": 7, "mean": 6.0, "stddev": 1.0}  # values 5, 7
    c = combine_latency([a, b])
    # population variance of 1,3,5,7 is 5
    assert c["mean"] == 4.0 and c["stddev"] == pytest.approx(5 ** 0.5) and c["min"] == 1 and c["max"] == 7


def test_sample_tracker_differences_cumulative_dumps(tmp_path: Path) -> None:
    out = subprocess.run(
        ["fio", "--name=s", f"--filename={tmp_path / 's.bin'}", "--size=16m", "--rw=randread", "--bs=4k",
         "--iodepth=4", "--direct=1", "--ioengine=libaio", "--time_based=1", "--runtime=3",
         "--lat_percentiles=1", "--output-format=json+", "--status-interval=1"],
        capture_output=True, text=True, check=True, timeout=60).stdout
    docs, _ = split_documents(out)
    assert len(docs) >= 3
    tracker = SampleTracker()
    updates = [tracker.update(d, float(i)) for i, d in enumerate(docs)]
    samples = [s for s in updates if s]
    final = as_dict(as_list(docs[-1]["jobs"])[0])["read"]
    total_ios = sum(as_number(s["iops"]) * as_number(s["interval_s"]) for s in samples)
    assert total_ios == pytest.approx(final["total_ios"], rel=0.02)
    assert all(s["lat_p99_ns"] and s["lat_mean_ns"] for s in samples)


def _dump(ts_ms: int, ios: int, runtime_ms: int) -> dict:
    return {"timestamp_ms": ts_ms, "jobs": [{"read": {"total_ios": ios, "io_bytes": ios * 4096, "runtime": runtime_ms,
                                                    "lat_ns": {"N": ios, "mean": 80000.0}}}]}


def test_a_ramp_that_ends_between_two_dumps_restarts_the_differences() -> None:
    """ramp_time=1 at 12,000 IOPS: the first dump 0.2 s into the ramp (2,400 I/Os), the next 0.9 s after the ramp
    ended (10,800 I/Os counted again from zero).  The counters grew, so only the runtime falling behind fio's
    clock shows the reset: the sample is 12,000 IOPS over 0.9 s, not 8,400 over 1 s."""
    tracker = SampleTracker()
    first = tracker.update(_dump(1_000_200, 2_400, 200), 0.2)
    assert first is not None and first["iops"] == pytest.approx(12_000)
    second = tracker.update(_dump(1_001_900, 10_800, 900), 1.9)
    assert second is not None and second["iops"] == pytest.approx(12_000) and second["interval_s"] == 0.9
    third = tracker.update(_dump(1_002_900, 22_800, 1_900), 2.9)  # measuring: plain differences again
    assert third is not None and third["iops"] == pytest.approx(12_000) and third["interval_s"] == 1.0


def test_submission_completion_split_and_disk_util_are_fios_own(tmp_path: Path) -> None:
    """A real randrw run: slat and clat means are fio's, I/O-weighted over both directions like lat_ns; the
    device's disk_util is kept as fio wrote it (name and util %), and the line validates against its schema."""
    from jsonschema import Draft202012Validator

    from tests.helpers.schema_check import schema

    doc = json.loads(_fio(tmp_path, "--name=s", "--rw=randrw", "--rwmixread=70", "--bs=4k", "--iodepth=4",
                          "--runtime=0.5", "--output-format=json"))
    job = doc["jobs"][0]
    m = metrics(doc)
    for key in ("slat_ns", "clat_ns"):
        r, w = job["read"][key], job["write"][key]
        assert m[key]["mean"] == pytest.approx((r["mean"] * r["N"] + w["mean"] * w["N"]) / (r["N"] + w["N"]))
    # fio's total latency is submission + completion, per I/O and so in the mean
    assert m["slat_ns"]["mean"] + m["clat_ns"]["mean"] == pytest.approx(m["lat_ns"]["mean"], rel=1e-3)
    expected = [{"name": d["name"], "util": float(d["util"])} for d in doc.get("disk_util") or []]
    assert m.get("disk_util", []) == expected  # a container without /sys/block stats has none: then no key
    defs = schema("results-line")["$defs"]
    assert not list(Draft202012Validator({"$ref": "#/$defs/storage_metrics", "$defs": defs}).iter_errors(m))


def test_a_synchronous_engine_records_no_slat(tmp_path: Path) -> None:
    """psync's submission is the syscall itself: fio does not time slat (N = 0), so the line has no slat_ns
    rather than a 0 that would read as 'free submission'."""
    doc = json.loads(_fio(tmp_path, "--name=p", "--rw=randread", "--bs=4k", "--ioengine=psync", "--runtime=0.3",
                          "--output-format=json"))
    m = metrics(doc)
    assert "slat_ns" not in m and m["clat_ns"]["mean"] > 0


@pytest.mark.parametrize(("disk", "key"), [
    ({"name": "sda", "util": "96.8"}, "disk_util[0].util"),
    ({"name": "sda", "util": float("nan")}, "disk_util[0].util"),
    ({"name": "sda", "util": 1e30}, "disk_util[0].util"),
    ({"name": "sda", "util": 100.5}, "disk_util[0].util"),
    ({"name": "sda", "util": 50, "in_queue": -1}, "disk_util[0].in_queue"),
    ({"name": "\x1b]0;owned\x07sda", "util": 50}, "disk_util[0].name"),
    ({"name": "sda\nsdb", "util": 50}, "disk_util[0].name"),
    ({"name": "x" * 65, "util": 50}, "disk_util[0].name"),
    ({"name": 7, "util": 50}, "disk_util[0].name"),
    ("sda", "disk_util[0]"),
])
def test_hostile_disk_util_is_refused_by_the_check_and_left_out_of_the_metrics(disk: object, key: str) -> None:
    from app.runners.fio_parse import FormatError, check_document

    read = {"iops": 1, "total_ios": 1, "lat_ns": {"N": 1, "mean": 5}}
    doc: dict[str, object] = {"fio version": "fio-3.33", "disk_util": [disk], "jobs": [{"jobname": "j", "read": read}]}
    with pytest.raises(FormatError, match=re.escape(f"key '{key}'")):
        check_document(doc)
    # a run's own document is not checked: an entry with a bad name or util is dropped (other counters are not read)
    assert ("disk_util" in metrics(doc)) == key.endswith("in_queue")


def test_hostile_slat_is_refused_by_the_check() -> None:
    from app.runners.fio_parse import FormatError, check_document

    doc: dict[str, object] = {"jobs": [{"read": {"slat_ns": {"N": 1, "mean": "fast"}}}]}
    with pytest.raises(FormatError, match=re.escape("key 'jobs[0].read.slat_ns.mean'")):
        check_document(doc)
    with pytest.raises(FormatError, match="disk_util"):
        check_document({"jobs": [], "disk_util": {"name": "sda"}})


def test_an_imported_document_of_several_points_keeps_no_disk_util() -> None:
    """fio's disk_util covers the whole document: one point keeps it, several (different jobs) do not."""
    from app.engine.importer import fio_points

    def job(name: str, depth: str) -> dict:
        return {"jobname": name, "job options": {"rw": "randread", "bs": "4k", "iodepth": depth},
                "read": {"iops": 10, "total_ios": 10, "io_bytes": 40960, "lat_ns": {"N": 10, "mean": 5e4}}}

    disks = [{"name": "nvme0n1", "util": 96.8, "in_queue": 5}]
    one = fio_points({"fio version": "fio-3.33", "disk_util": disks, "jobs": [job("a", "1")]})
    two = fio_points({"fio version": "fio-3.33", "disk_util": disks, "jobs": [job("a", "1"), job("b", "16")]})
    assert one[0].metrics["disk_util"] == [{"name": "nvme0n1", "util": 96.8}]
    assert len(two) == 2 and not any("disk_util" in p.metrics for p in two)
