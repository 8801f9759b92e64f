"""Presets: every shipped one loads and expands; bad input exits 2 with a sentence, no traceback."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from app.core.errors import UsageError
from app.model.points import Kind, MemoryPoint, StoragePoint
from app.plan import presets
from tests.conftest import run_cli
from tests.helpers.typed import memory_points, storage_point, storage_points

EXPECTED_POINTS = {
    "custom": 1,
    # the presets a user runs first: 3 interleaved replicates of each point
    "quick": 8 * 3,
    "nvme": 8 * 3,
    "seed-p4600": 9 * 3,
    "seed-usb": 9 * 3,
    "seed-qd": 18 * 3,
    "seed-matrix": 120 * 3,
    "seed-mix": 36 * 3,
    "qd-scaling": 9,
    "peak": 5 * 7 * 6,  # before numjobs is cut at the target's node's CPUs (app.engine.sweep.plan_for_target)
    "peak-write": 5 * 7 * 6,
    "mem-idle": 1,
    "mem-loaded": 19,
    "mem-seed-w": 8 * 19,
    "mem-seed-mix": 8 * 19,
}


def test_every_spec_preset_is_shipped_and_expands_to_its_count() -> None:
    shipped = {p.stem for p in presets.shipped_dir().glob("*.toml")}
    assert set(EXPECTED_POINTS) <= shipped
    for name, count in EXPECTED_POINTS.items():
        preset = presets.load(name)
        points = preset.expand()
        assert len(points) == count, name
        assert len({presets.point_key(p) for p in points}) == count, f"{name} has duplicate points"


def test_quick_is_crystaldiskmark_default() -> None:
    points = storage_points(presets.load("quick").expand())
    labels = {(p.group, p.rw, p.bs, p.iodepth, p.numjobs) for p in points}
    assert ("SEQ1M Q8T1", "read", 1 << 20, 8, 1) in labels
    assert ("SEQ1M Q1T1", "write", 1 << 20, 1, 1) in labels
    assert ("RND4K Q32T1", "randread", 4096, 32, 1) in labels
    assert ("RND4K Q1T1", "randwrite", 4096, 1, 1) in labels


def test_points_are_typed_and_keep_their_json_table() -> None:
    """expand() gives frozen points; their tables are run.json's plan, keys in the preset's key order."""
    plan = presets.apply_overrides(presets.load("quick"), ["repeat=1"]).expand()
    assert all(isinstance(p, StoragePoint) and p.kind == Kind.STORAGE for p in plan)
    quick = storage_points(plan)
    unset = presets.OMITTED_WHEN_UNSET[Kind.STORAGE]  # in a table only when set
    assert list(quick[0].to_dict()) == [k for k in presets.STORAGE_KEYS if k not in unset] + ["group"]
    steady = dataclasses.replace(quick[0], steady="iops:2%", steady_window=5, steady_ramp=2, round=3)
    assert list(steady.to_dict())[-5:] == ["steady", "steady_window", "steady_ramp", "round", "group"]
    assert presets.point_key(quick[0]) == presets.table_key({**quick[0].to_dict(), "group": "other"})
    idle = presets.load("mem-idle").expand()[0]
    assert isinstance(idle, MemoryPoint) and "group" not in idle.to_dict() and "engine" not in idle.to_dict()
    assert presets.estimate_point_seconds(idle) == idle.duration + presets.MEMORY_OVERHEAD_S
    assert not presets.plan_writes([idle]) and presets.plan_writes(quick)


def test_normalise_point_makes_settings_without_effect_canonical() -> None:
    point = presets.load("custom").expand()[0]
    assert isinstance(point, StoragePoint)
    read70 = storage_point(presets.normalise_point(dataclasses.replace(point, rw="read", rwmixread=70)))
    assert read70.rwmixread is None
    randrw = storage_point(presets.normalise_point(dataclasses.replace(point, rw="randrw", rwmixread=None)))
    assert randrw.rwmixread == 50
    randrw70 = storage_point(presets.normalise_point(dataclasses.replace(point, rw="randrw", rwmixread=70)))
    assert randrw70.rwmixread == 70
    loaded = presets.load("mem-loaded").expand()[3]
    assert isinstance(loaded, MemoryPoint) and loaded.delay is not None
    idle = presets.normalise_point(dataclasses.replace(loaded, mode="idle"))
    assert isinstance(idle, MemoryPoint) and idle.delay is None and idle.traffic is None
    assert presets.normalise_point(loaded) is loaded


def test_seed_matrix_axes() -> None:
    axes = presets.describe_axes(presets.load("seed-matrix"))
    assert axes["rw"] == ["read", "write", "randread", "randwrite", "rw", "randrw"]
    assert axes["bs"] == [4096, 16384, 32768, 131072]
    assert axes["iodepth"] == [1, 16, 64, 256, 1024]


def test_memory_presets_use_mlc_delays_and_codes() -> None:
    points = memory_points(presets.load("mem-loaded").expand())
    assert [p.delay for p in points] == list(presets.MLC_DELAYS)
    w = memory_points(presets.load("mem-seed-w").expand())
    assert {p.traffic for p in w} == {"W6", "W7", "W8", "W9"} and {p.stride for p in w} == {64, 256}
    idle = memory_points(presets.load("mem-idle").expand())
    assert idle[0].mode == "idle" and idle[0].delay is None


def test_set_replaces_axes_in_every_group_and_merges_duplicates() -> None:
    quick = presets.apply_overrides(presets.load("quick"), ["bs=4k", "iodepth=1", "runtime=3", "repeat=1"])
    points = storage_points(quick.expand())
    # SEQ groups become read/write 4k QD1, RND groups randread/randwrite 4k QD1: duplicates merged
    assert sorted(p.rw for p in points) == ["randread", "randwrite", "read", "write"]
    assert all(p.runtime == 3 and p.bs == 4096 for p in points)
    custom = presets.apply_overrides(presets.load("custom"),
                                     ["rw=randread,randwrite", "bs=4k,128k", "iodepth=1,32"])
    assert len(custom.expand()) == 8


def test_estimate_covers_runtime_and_ramp() -> None:
    p = presets.load("qd-scaling")
    est = presets.estimate_seconds(p.expand())
    assert est >= 9 * (10 + 1)


@pytest.mark.parametrize(
    "toml, needle",
    [
        ('name = "x"\nkind = "storage"\n[settings\nbs = 4', "TOML syntax error"),
        ('name = "x"\nkind = "storage"\n[settings]\nblocksize = "4k"', "unknown key 'blocksize'"),
        ('name = "x"\nkind = "storage"\n[settings]\nbs = "4q"', "key 'bs' has invalid value '4q'"),
        ('name = "x"\nkind = "storage"\n[matrix]\nrw = ["read", "sideways"]', "key 'rw' has invalid value 'sideways'"),
        ('name = "x"\nkind = "storage"\n[settings]\niodepth = 0', "key 'iodepth' has invalid value 0"),
        ('name = "x"\nkind = "disk"', "key 'kind' has invalid value \"disk\""),
        ('name = "x"\nkind = "memory"\n[settings]\nstride = 100', "key 'stride' has invalid value 100"),
        ('name = "x"\nkind = "memory"\n[matrix]\ndelay = [0, -1]', "key 'delay' has invalid value -1"),
    ],
)
def test_bad_preset_file_exits_2_naming_file_key_value(tmp_path: Path, toml: str, needle: str) -> None:
    f = tmp_path / "bad.toml"
    f.write_text(toml)
    with pytest.raises(UsageError) as e:
        presets.load(str(f))
    assert str(f) in str(e.value) and needle in str(e.value)
    proc = run_cli("run", str(f), "--out", str(tmp_path / "out"), "--yes")
    assert proc.returncode == 2, proc.stderr
    assert needle in proc.stderr and str(f) in proc.stderr
    assert "Traceback" not in proc.stderr
    assert len(proc.stderr.strip().splitlines()) <= 2
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize(
    "args, needle",
    [
        (["run", "nosuchpreset"], "Unknown preset 'nosuchpreset'"),
        (["run", "custom", "--set", "runtime3"], "--set 'runtime3' is not KEY=VALUE"),
        (["run", "custom", "--set", "bs=4q"], "key 'bs' has invalid value '4q'"),
        (["run", "custom", "--set", "rw=sideways"], "key 'rw' has invalid value 'sideways'"),
        (["run", "custom", "--set", "iodepth=0"], "key 'iodepth' has invalid value '0'"),
        (["run", "custom", "--set", "colour=blue"], "unknown key 'colour'"),
        (["run", "custom", "--set", "bs="], "key 'bs' has an empty value"),
        (["presets", "show", "nosuchpreset"], "Unknown preset 'nosuchpreset'"),
        (["resume", "/nonexistent/dir"], "not a results directory"),
    ],
)
def test_bad_command_line_exits_2_with_one_sentence(tmp_path: Path, args: list[str], needle: str) -> None:
    proc = run_cli(*args, "--out", str(tmp_path / "o")) if args[0] == "run" else run_cli(*args)
    assert proc.returncode == 2, (proc.returncode, proc.stderr)
    assert needle in proc.stderr
    assert "Traceback" not in proc.stderr


def test_presets_cli_lists_and_shows(tmp_path: Path) -> None:
    listing = json.loads(run_cli("presets", "--json", check=True).stdout)
    assert {s["name"]: s["points"] for s in listing}["seed-matrix"] == 360
    shown = run_cli("presets", "show", "seed-mix", check=True).stdout
    assert "108 points, estimated" in shown
    plan = json.loads(run_cli("presets", "show", "custom", "--set", "bs=4k,64k", "--json", check=True).stdout)
    assert plan["points"] == 2 and [p["bs"] for p in plan["plan"]] == [4096, 65536]


def test_user_presets_directory_shadows_and_extends(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    text = 'name = "mine"\nkind = "storage"\ndescription = "d"\n[matrix]\nbs = ["4k", "8k"]\n'
    path = presets.save_user_preset(text, "mine")
    assert path == tmp_path / "profiler-tui" / "presets" / "mine.toml"
    assert len(presets.load("mine").expand()) == 2
    with pytest.raises(UsageError):
        presets.save_user_preset('name = "bad"\nkind = "storage"\n[settings]\nbs = "4q"\n', "bad")


def test_version_says_which_tools_are_active(tmp_path: Path) -> None:
    out = run_cli("--version", check=True).stdout
    assert out.startswith("profiler-tui, version ")
    assert "storage: fio-" in out and "memory engine (--engine auto):" in out
    missing = run_cli("--version", env={"PATH": str(tmp_path)}, check=True).stdout
    assert "storage: not found" in missing
