"""A new line's interval record: the fio runner's from synthetic per-second samples
(app.runners.fio.point_uncertainty), an imported memory text's from the engine's sub-windows or why none."""

from __future__ import annotations

import json
import statistics
from pathlib import Path
from typing import cast

import numpy as np
import pytest

from app.engine.importer import mlc_points
from app.model.records import JSONObject, StorageMetrics
from app.runners import fio
from app.runners.fio import point_uncertainty
from app.stats.uncertainty import intervals_of, storage_series


def _samples(n: int, seed: int = 3) -> list[dict[str, object]]:
    """``n`` whole seconds around 50k IOPS of 4 KiB at depth 8 (mean latency = depth / IOPS, Little's law)."""
    rng = np.random.default_rng(seed)
    out: list[dict[str, object]] = []
    for t, iops in enumerate(50_000 + rng.normal(0, 500, n)):
        out.append({"t": t + 1.0, "interval_s": 1.0, "iops": float(iops), "bw_bytes": float(iops) * 4096,
                    "lat_mean_ns": 8 / float(iops) * 1e9})
    return out


def test_a_long_point_gets_an_interval_of_each_figure_around_its_sample_mean(tmp_path: Path) -> None:
    samples = _samples(40)
    u = point_uncertainty(samples, tmp_path / "none.jsonl")
    assert set(u.ci95) == {"iops", "bw_bytes", "lat_mean_ns"}
    mean = statistics.fmean(float(s["iops"]) for s in samples)  # type: ignore[arg-type]
    low, high = u.ci95["iops"]
    assert low < mean < high and (high - low) / 2 < 0.01 * mean  # ±500 per second, 40 s: about ±0.3 %
    method = u.ci_method
    assert method["method"] == "batch-means" and method["level"] == 0.95 and method["samples"] == 40
    series = method["series"]
    assert isinstance(series, dict) and set(series["iops"]) == {"batch_size", "batches", "warmup"}
    m = StorageMetrics.of({"iops": mean}).with_ci(cast(JSONObject, u.ci95), cast(JSONObject, u.ci_method))
    assert list(m.json())[-2:] == ["ci95", "ci_method"] and m.interval("iops") == (low, high)


def test_a_short_point_says_it_has_too_few_samples(tmp_path: Path) -> None:
    u = point_uncertainty(_samples(3), tmp_path / "none.jsonl")
    assert u.ci95 == {} and u.ci_method["method"] == "none"
    assert str(u.ci_method["reason"]).startswith("too few samples: 3 left after dropping 0 as warm-up, 10 needed")


def test_fios_last_dump_a_few_ms_after_the_one_before_is_no_second(tmp_path: Path) -> None:
    samples = _samples(20) + [{"t": 20.004, "interval_s": 0.004, "iops": 1.0, "bw_bytes": 4096.0,
                               "lat_mean_ns": 1.0}]
    u = point_uncertainty(samples, tmp_path / "none.jsonl")
    assert u.ci_method["samples"] == 20 and u.ci95["iops"][0] > 40_000


def test_the_seconds_of_ramp_time_are_left_out_as_fio_leaves_them_out(tmp_path: Path) -> None:
    ramp = [{**s, "iops": 5.0, "ramp": True} for s in _samples(5, seed=4)]
    u = point_uncertainty(ramp + _samples(20), tmp_path / "none.jsonl")
    assert u.ci_method["samples"] == 20 and u.ci95["iops"][0] > 40_000


def test_no_whole_second_sample_is_said_in_one_sentence(tmp_path: Path) -> None:
    for samples in ([], [{"t": 0.3, "interval_s": 0.3, "iops": 10.0}]):
        u = point_uncertainty(samples, tmp_path / "none.jsonl")
        assert u.ci_method == {"method": "none", "reason": "fio gave no whole-second samples for this point"}


def test_a_point_longer_than_the_samples_kept_in_memory_is_read_from_its_samples_file(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    samples = _samples(60)
    path = tmp_path / "0000-x.samples.jsonl"
    path.write_text("".join(json.dumps(s) + "\n" for s in samples) + "not json\n[]\n")
    monkeypatch.setattr(fio, "MAX_SERIES", 25)  # the run kept only the first 25 in memory
    from_file = point_uncertainty(samples[:25], path)
    assert from_file.ci_method["samples"] == 60
    assert from_file.ci95 == intervals_of(storage_series(samples)).ci95 != {}
    assert point_uncertainty(samples[:25], tmp_path / "gone.jsonl").ci_method["method"] == "none"


ENGINE_IDLE = ("Intel(R) Memory Latency Checker - compatible output: profiler-tui memlat v0.1\n{windows}"
               "Each iteration took 414.1 base frequency clocks (\t159.5\tns)\n")


def test_an_imported_engine_text_gets_the_interval_of_its_windows_and_mlc_says_why_not() -> None:
    values = " ".join(f"{159.5 + (-1) ** i * 0.5:.3f}" for i in range(20))
    ((pt,), _) = mlc_points(ENGINE_IDLE.format(windows=f"Windows of 0.0250 s, latency_ns: {values}\n"))
    assert list(pt.metrics) == ["latency_ns", "ci95", "ci_method"]
    low, high = pt.metrics["ci95"]["latency_ns"]  # type: ignore[index]
    assert low < 159.5 < high and pt.metrics["ci_method"]["method"] == "batch-means"  # type: ignore[index]
    ((bare,), _) = mlc_points(ENGINE_IDLE.format(windows=""))  # an older engine: no sub-windows
    assert bare.metrics["ci_method"] == {"method": "none",
                                         "reason": "the engine printed no sub-window figures for this row"}
    mlc = ENGINE_IDLE.format(windows="").replace("compatible output: profiler-tui memlat v0.1", "v3.11")
    ((row,), _) = mlc_points(mlc)
    assert row.metrics == {"latency_ns": 159.5,
                           "ci_method": {"method": "none", "reason": "Intel MLC prints one figure per row"}}
