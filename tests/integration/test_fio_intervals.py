"""A real fio point's results line (and its ``--json-stream`` point_done record) carries the 95 % interval of its
mean IOPS, bandwidth and latency from its sub-second samples (kept in raw/…fine.jsonl), or says why it has none."""

from __future__ import annotations

import json
import math
import re
import statistics
from pathlib import Path

from app.model.records import StorageMetrics
from app.stats.finesamples import fine_intervals, series_of
from app.stats.uncertainty import half_width, storage_series
from tests.conftest import run_cli
from tests.helpers.schema_check import validate_events
from tests.helpers.typed import as_dict, as_number
from tests.integration.test_procedure import lines


def _measure(tmp_path: Path, runtime: int, ramp: int = 0) -> tuple[StorageMetrics, list[dict[str, object]]]:
    """One randread point run by the CLI with ``--json-stream``: its metrics, as the line and the stream's record
    both hold them (checked against the schemas), and its kept per-second samples."""
    target = tmp_path / "t.img"
    if not target.exists():
        target.write_bytes(b"\x5a" * (32 << 20))  # laid out beforehand: every second of the point is measured I/O
    out = tmp_path / f"run{runtime}"
    proc = run_cli("run", "custom", "--set", "size=32m", "--set", "rw=randread", "--set", "bs=4k", "--set", "iodepth=4",
                   "--set", f"runtime={runtime}", "--set", f"ramp_time={ramp}", "--yes", "--json-stream",
                   "--target", str(target), "--out", str(out), check=True)
    events = validate_events(proc.stdout)  # a point_done record against results-line.schema.json: ci95 too
    (line,) = lines(out)
    assert [e["record"] for e in events if e["event"] == "point_done"] == [line]
    (samples_file,) = (out / "raw").glob("*.samples.jsonl")
    return StorageMetrics.of(line["metrics"]), [json.loads(ln) for ln in samples_file.read_text().splitlines()]


def _fine(tmp_path: Path, runtime: int) -> list[dict[str, object]]:
    (fine_file,) = (tmp_path / f"run{runtime}" / "raw").glob("*.fine.jsonl")
    return [json.loads(ln) for ln in fine_file.read_text().splitlines()]


def test_a_20_s_point_gets_the_interval_of_its_kept_samples_whose_mean_is_fios_iops(tmp_path: Path) -> None:
    m, samples = _measure(tmp_path, 20)
    series = series_of(_fine(tmp_path, 20))  # 500 ms apart: 40 over the runtime
    again = fine_intervals(series)  # the kept sub-second samples give the same record again
    assert (m.ci95 or {}) == again.ci95
    assert m.ci_method == ({**again.ci_method, "sample_s": 0.5} if again.intervals else again.ci_method)
    # fio's IOPS is the whole run's I/Os over its runtime: the samples' time-weighted mean, warm-up and last
    # partial second included; the interval is of the mean past the warm-up (a real transient may be cut)
    ios = math.fsum(float(s["iops"]) * float(s["interval_s"]) for s in samples)  # type: ignore[arg-type]
    seconds = math.fsum(float(s["interval_s"]) for s in samples)  # type: ignore[arg-type]
    assert m.iops is not None and abs(m.iops - ios / seconds) <= 0.02 * m.iops, (m.iops, ios / seconds)
    method = m.ci_method
    assert method is not None and len(storage_series(samples)["iops"]) >= 19 and 38 <= len(series["iops"]) <= 41
    if m.ci95 is None:  # on a machine shared with other work 20 s of IOPS can drift or correlate so much that no
        # batch size leaves uncorrelated batches, or that the samples are too few for their correlation time, or
        # another tenant steps the throughput mid-point (a level shift, both levels stated; seen in CI with 2 vCPUs
        # loaded by other tests): said, not hidden
        why = str(method["reason"])
        assert method["method"] == "none" and ("batch means stay correlated" in why
                                               or "too few samples for their correlation" in why
                                               or re.search(r"a level shift from sample \d+ on: [\d,.]+ before, "
                                                            r"[\d,.]+ after", why)), method
        return
    assert method["method"] == "batch-means" and method["level"] == 0.95 and method["samples"] == len(series["iops"])
    per = method["series"]
    assert isinstance(per, dict) and set(per) == {"iops", "bw_bytes", "lat_mean_ns"}
    # one without an interval says why
    assert all(("reason" in as_dict(per[k])) == (k not in (m.ci95 or {})) for k in per), per
    ci = m.interval("iops")
    if ci is not None:  # the interval is of the mean of the samples it used: past the warm-up, whole batches
        warmup, size, batches = (int(as_number(as_dict(per["iops"])[k])) for k in ("warmup", "batch_size", "batches"))
        kept = series["iops"][warmup:]
        used = kept[len(kept) - size * batches:]
        assert math.isclose((ci[0] + ci[1]) / 2, statistics.fmean(used)) and half_width(ci) > 0


def test_a_3_s_point_has_an_interval_of_its_sub_second_samples_and_its_ramp_seconds_are_marked(
        tmp_path: Path) -> None:
    """3 s with 3 whole seconds had no interval ("too few samples"); its 30 samples 100 ms apart give one."""
    m, samples = _measure(tmp_path, 3, ramp=2)
    ramp = [s for s in samples if s.get("ramp") is True]
    assert ramp and samples[0].get("ramp") is True and len(ramp) <= 3  # fio's 2 s ramp (its dumps arrive late)
    assert all(s.get("ramp") is True for s in samples[:len(ramp)])  # the first seconds, none after them
    # the samples file keeps a sample a second (the first after the ramp and the last are as long as they were)
    measured = [float(s["interval_s"]) for s in samples if not s.get("ramp")]  # type: ignore[arg-type]
    assert measured and all(0.9 <= span < 1.3 for span in measured[1:-1]), measured
    fine = _fine(tmp_path, 3)
    assert any(s.get("ramp") is True for s in fine) and 25 <= len(series_of(fine)["iops"]) <= 31
    assert m.ci_method is not None
    assert fine_intervals(series_of(fine)).ci95 == (m.ci95 or {})
    if m.ci95 is None:  # a stall on a VM shared with other work can leave too few uncorrelated batches: said
        assert "batch means stay correlated" in str(m.ci_method.get("reason")), m.ci_method
        return
    assert m.ci_method.get("sample_s") == 0.1, m.ci_method
    per = m.ci_method["series"]
    # or why not
    assert isinstance(per, dict) and all(("reason" in as_dict(per[k])) == (k not in (m.ci95 or {})) for k in per), per
    assert list(m.json())[-1] == "ci_method"
