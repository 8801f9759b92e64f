"""Presets as hostile input: non-finite and huge numbers, special files, oversized files and plans,
control characters, fractional seconds.  Each ends in one sentence and exit 2, never a traceback or
a hang."""

from __future__ import annotations

import dataclasses
import math
import os
import socket
import stat
import time
from pathlib import Path
from typing import Any

import pytest

from app.core.errors import UsageError
from app.model.points import StoragePoint
from app.plan import presets
from tests.conftest import run_cli
from tests.helpers.typed import storage_point, storage_points

HEADER = 'name = "x"\nkind = "{kind}"\n'

NUMERIC_KEYS = {
    presets.STORAGE: ("bs", "rwmixread", "iodepth", "numjobs", "runtime", "ramp_time", "size"),
    presets.MEMORY: ("delay", "stride", "buffer", "duration"),
}

# key: (largest accepted, smallest refused above it, words of the help text that state the bound)
UPPER_BOUNDS: dict[str, tuple[Any, Any, str]] = {
    "bs": ("64m", 64 * 2**20 + 1, "at most 64 MiB"),
    "size": ("1p", 2**50 + 1, "at most 1 PiB"),
    "rwmixread": (100, 101, "0 to 100"),
    "iodepth": (65536, 65537, "1 to 65536"),
    "numjobs": (1024, 1025, "1 to 1024"),
    "runtime": (604800, 604800.001, "7 days"),
    "ramp_time": (604800, 604801, "7 days"),
    "delay": (10_000_000, 10_000_001, "0 to 10000000"),
    "stride": (4096, 8192, "64 to 4096"),
    "buffer": ("4g", 4 * 2**30 + 1024, "4 GiB"),
    "duration": (3600, 3600.5, "0.05 to 3600"),
}


def kind_of(key: str) -> str:
    return presets.STORAGE if key in presets.STORAGE_KEYS else presets.MEMORY


def write(tmp_path: Path, text: str, name: str = "p.toml") -> Path:
    f = tmp_path / name
    f.write_text(text)
    return f


# --- item 5: inf / nan -------------------------------------------------------------------------


@pytest.mark.parametrize("kind, key", [(k, key) for k, keys in NUMERIC_KEYS.items() for key in keys])
@pytest.mark.parametrize("literal", ["inf", "-inf", "nan", "+inf", "-nan"])
def test_non_finite_toml_number_is_one_sentence_naming_file_key_value(tmp_path: Path, kind: str, key: str,
                                                                     literal: str) -> None:
    for where in ("[settings]\n{key} = {v}\n", "[matrix]\n{key} = [{ok}, {v}]\n"):
        ok = {"stride": 64, "buffer": 4096}.get(key, 1)
        f = write(tmp_path, HEADER.format(kind=kind) + where.format(key=key, v=literal, ok=ok))
        with pytest.raises(UsageError) as e:
            presets.load(str(f))
        msg = str(e.value)
        assert msg.startswith(f"{f}: key '{key}' has invalid value ") and literal.lstrip("+-") in msg, msg
        assert "\n" not in msg


@pytest.mark.parametrize("literal", ["inf", "nan", "-inf"])
def test_runtime_inf_exits_2_from_the_cli(tmp_path: Path, literal: str) -> None:
    f = write(tmp_path, HEADER.format(kind="storage") + f"[settings]\nruntime = {literal}\n")
    for args in (["run", str(f), "--out", str(tmp_path / "out")], ["presets", "show", str(f)]):
        proc = run_cli(*args, timeout=60)
        assert proc.returncode == 2, proc.stderr
        assert f"{f}: key 'runtime' has invalid value {literal}: " in proc.stderr
        assert "Traceback" not in proc.stderr and len(proc.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "out").exists()


# --- item 5: special files are refused before they are read -------------------------------------


def _special_files(tmp_path: Path) -> dict[str, tuple[str, str]]:
    fifo = tmp_path / "fifo.toml"
    os.mkfifo(fifo)
    sock_path = tmp_path / "sock.toml"
    sock = socket.socket(socket.AF_UNIX)
    sock.bind(str(sock_path))
    sock.close()  # the socket file stays
    (tmp_path / "dir.toml").mkdir()
    os.symlink("/dev/zero", tmp_path / "zero.toml")
    return {
        "fifo": (str(fifo), "is a FIFO (named pipe)"),
        "socket": (str(sock_path), "is a socket"),
        "directory": (str(tmp_path / "dir.toml"), "is a directory"),
        "/dev/zero": ("/dev/zero", "is a character device"),
        "symlink to /dev/zero": (str(tmp_path / "zero.toml"), "is a character device"),
        "/dev/null": ("/dev/null", "is a character device"),
    }


def test_special_files_are_refused_in_process_without_blocking(tmp_path: Path) -> None:
    for label, (path, needle) in _special_files(tmp_path).items():
        t0 = time.monotonic()
        with pytest.raises(UsageError) as e:
            presets.load(path)
        assert time.monotonic() - t0 < 30, label  # a FIFO without a writer must not block
        assert str(e.value) == f"{path}: {needle}, not a preset file; give a regular file.", label


def test_special_files_exit_2_from_the_cli(tmp_path: Path) -> None:
    for label, (path, needle) in _special_files(tmp_path).items():
        for args in (["run", path, "--out", str(tmp_path / "out")], ["presets", "show", path]):
            proc = run_cli(*args, timeout=60)  # a hang is a TimeoutExpired failure
            assert proc.returncode == 2, (label, proc.stderr)
            assert needle in proc.stderr and "Traceback" not in proc.stderr, (label, proc.stderr)
    assert not (tmp_path / "out").exists()


def test_a_block_device_preset_is_refused(tmp_path: Path) -> None:
    node = tmp_path / "blk.toml"  # a node of our own (loop 7:0), never opened: no system device is touched
    try:
        os.mknod(node, stat.S_IFBLK | 0o600, os.makedev(7, 0))
    except PermissionError:
        pytest.skip("mknod needs CAP_MKNOD")
    with pytest.raises(UsageError, match="is a block device, not a preset file"):
        presets.read_toml(node)


def test_preset_file_size_is_capped_at_one_mib(tmp_path: Path) -> None:
    body = HEADER.format(kind="storage") + "[settings]\nbs = \"4k\"\n"
    pad = presets.MAX_PRESET_BYTES - len(body)
    at_cap = write(tmp_path, body + "#" * (pad - 1) + "\n", "at-cap.toml")
    assert at_cap.stat().st_size == presets.MAX_PRESET_BYTES
    assert storage_point(presets.load(str(at_cap)).expand()[0]).bs == 4096
    over = write(tmp_path, body + "#" * pad + "\n", "over.toml")
    with pytest.raises(UsageError) as e:
        presets.load(str(over))
    assert str(e.value) == f"{over}: larger than 1 MiB, the limit for a preset file."


def test_deeply_nested_toml_is_refused_before_tomllib(tmp_path: Path) -> None:
    # tomllib: RecursionError for deep brackets; memory grows with the square of a dotted key's length
    # ('a.' * 20000 takes 1.5 GB), so both are refused by counting
    for text in ("a = " + "[" * 100_000, "a." * 400_000 + "b = 1\n", "[" + "a." * 100 + "b]\n",
                 "x = {" * 50 + "}" * 50):
        f = write(tmp_path, text)
        with pytest.raises(UsageError, match="TOML nested more than 32 levels deep"):
            presets.load(str(f))
    ok = write(tmp_path, HEADER.format(kind="storage") + '[settings]\nbs = "4k"  # a.b.c.d\n'
               'description = "a.b.c.d.e.f.g.h.i.j.k.l.m.n.o.p.q.r.s.t.u.v.w.x.y.z.a.b.c.d.e.f.g.h.i.j"\n', "ok.toml")
    with pytest.raises(UsageError, match="unknown key 'description'"):  # got as far as validation
        presets.load(str(ok))


def test_non_utf8_and_huge_integer_literals_are_one_sentence(tmp_path: Path) -> None:
    f = tmp_path / "bin.toml"
    f.write_bytes(b'name = "\xff"\n')
    with pytest.raises(UsageError, match="is not UTF-8 text"):
        presets.load(str(f))
    g = write(tmp_path, HEADER.format(kind="storage") + "[settings]\nsize = 1" + "0" * 5000 + "\n")
    with pytest.raises(UsageError, match="TOML cannot be read"):
        presets.load(str(g))
    h = write(tmp_path, HEADER.format(kind="storage") + "[settings]\nsize = 1" + "0" * 4000 + "\n")
    with pytest.raises(UsageError, match="key .size. has invalid value 1000.*: must be at most 1 PiB"):
        presets.load(str(h))


# --- item 6: the plan size is computed before expanding -----------------------------------------


def _matrix(kind: str, axes: dict[str, list[Any]]) -> str:
    lines = [HEADER.format(kind=kind), "[matrix]"]
    lines += [f"{k} = [{', '.join(repr(v) if isinstance(v, int) else f'{chr(34)}{v}{chr(34)}' for v in vs)}]"
              for k, vs in axes.items()]
    return "\n".join(lines) + "\n"


FOUR_BY_HUNDRED = {
    "bs": [4096 * (i + 1) for i in range(100)],
    "iodepth": list(range(1, 101)),
    "numjobs": list(range(1, 101)),
    "size": [(i + 1) << 20 for i in range(100)],
}


def test_a_hundred_million_point_plan_is_refused_naming_its_axes(tmp_path: Path) -> None:
    f = write(tmp_path, _matrix("storage", FOUR_BY_HUNDRED))
    preset = presets.load(str(f))
    assert preset.plan_size() == 100**4
    expected = (f"{f}: the plan has 100,000,000 points (bs (100 values) × iodepth (100 values) × numjobs (100 values)"
                " × size (100 values)), more than the limit of 100,000 points per run; use fewer values on an axis "
                "(--set KEY=V replaces one).")
    for call in (preset.expand, lambda: presets.summary(preset), lambda: presets.describe_axes(preset)):
        with pytest.raises(UsageError) as e:
            call()
        assert str(e.value) == expected
    proc = run_cli("run", str(f), "--out", str(tmp_path / "out"), timeout=60)
    assert proc.returncode == 2 and "100,000,000 points" in proc.stderr and "Traceback" not in proc.stderr
    assert not (tmp_path / "out").exists()
    # --set shrinks it below the cap: 100 × 100 = 10,000 points
    shrunk = presets.apply_overrides(presets.load(str(f)), ["bs=4k", "size=1m"])
    assert shrunk.plan_size() == len(shrunk.expand()) == 10_000


def test_plan_cap_counts_groups_overrides_and_memory_delays(tmp_path: Path) -> None:
    groups = "".join(f'[[group]]\nlabel = "g{i}"\nbs = [{", ".join(str(4096 * (j + 1)) for j in range(100))}]\n'
                     f"iodepth = [{', '.join(str(j + 1) for j in range(100))}]\n" for i in range(11))
    f = write(tmp_path, HEADER.format(kind="storage") + groups)
    with pytest.raises(UsageError) as e:
        presets.load(str(f)).expand()
    assert "110,000 points (group 'g0': bs (100 values) × iodepth (100 values);" in str(e.value)
    assert "and 8 more groups" in str(e.value)
    # the exact cap is allowed; a memory matrix multiplies by MLC's 19 delays
    at_cap = presets.apply_overrides(presets.load("custom"), ["bs=" + ",".join(str(512 * (i + 1)) for i in range(1000)),
                                                             "iodepth=" + ",".join(str(i + 1) for i in range(100))])
    assert at_cap.plan_size() == presets.MAX_PLAN_POINTS and len(at_cap.expand()) == presets.MAX_PLAN_POINTS
    buffers = "buffer=" + ",".join(f"{4 * (i + 1)}k" for i in range(5263))
    mem = presets.apply_overrides(presets.load("mem-loaded"), [buffers])
    assert mem.plan_size() == 5263 * 19 <= presets.MAX_PLAN_POINTS
    over = presets.apply_overrides(presets.load("mem-loaded"), [buffers, "stride=64,128"])
    with pytest.raises(UsageError, match=r"buffer \(5263 values\) × stride \(2 values\) × delay \(19 values\)"):
        over.expand()


def test_an_axis_longer_than_the_cap_is_refused_before_parsing(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="has 100,001 values, more than the limit of 100,000"):
        presets.parse_overrides("storage", ["iodepth=" + ",".join(["1"] * 100_001)])
    f = write(tmp_path, HEADER.format(kind="storage") + "[matrix]\niodepth = [" + ", ".join(["1"] * 100_001) + "]\n")
    with pytest.raises(UsageError, match="axis 'iodepth' has 100,001 values"):
        presets.load(str(f))


def test_merging_65536_points_is_linear(tmp_path: Path) -> None:
    """Was 50 s (describe_axes compared every point with every distinct value); now well under 1 s
    here.  The bound is generous so that a busy machine cannot fail it, yet far below quadratic."""
    sizes = write(tmp_path, _matrix("storage", {"size": [(i + 1) * 4096 for i in range(65536)]}), "sizes.toml")
    four = write(tmp_path, _matrix("storage", {k: v[:16] for k, v in FOUR_BY_HUNDRED.items()}), "four.toml")
    # two identical groups: 131,072 combinations merge into 32,768 points
    dup_axes = (f"bs = [{', '.join(str(4096 * (i + 1)) for i in range(256))}]\n"
                f"iodepth = [{', '.join(str(i + 1) for i in range(128))}]\n")
    dups = write(tmp_path, HEADER.format(kind="storage") + "[[group]]\n" + dup_axes + "[[group]]\n" + dup_axes,
                 "d.toml")
    for f, n in ((sizes, 65536), (four, 65536), (dups, 32768)):
        t0 = time.monotonic()
        preset = presets.load(str(f))
        points = preset.expand()
        info = presets.summary(preset)
        axes = presets.describe_axes(preset)
        elapsed = time.monotonic() - t0
        assert len(points) == info["points"] == n
        assert len({presets.point_key(p) for p in points}) == n
        assert sum(len(v) > 1 for v in axes.values()) >= 1
        assert elapsed < 15, (f.name, elapsed)


def test_expand_returns_fresh_copies_and_follows_overrides() -> None:
    preset = presets.load("custom")
    first = preset.expand()
    with pytest.raises(dataclasses.FrozenInstanceError):
        setattr(first[0], "bs", 1)  # points are frozen
    first[0] = dataclasses.replace(storage_point(first[0]), bs=1)
    assert storage_point(preset.expand()[0]).bs == 4096  # the cache was not touched
    presets.apply_overrides(preset, ["bs=8k,16k"])
    assert [p.bs for p in storage_points(preset.expand())] == [8192, 16384]


# --- item 7: fractional seconds and upper bounds -------------------------------------------------


@pytest.mark.parametrize("value, expected", [
    ("1.5", 1.5), ("1500ms", 1.5), (1.5, 1.5), ("1.5s", 1.5), ("2m", 120), (10, 10), ("10", 10), (2.0, 2),
    ("1234ms", 1.234), ("0.1m", 6), ("1.001", 1.001), ("604800", 604800), ("168h", 604800), ("1000ms", 1),
    ("1.5 h", 5400),
])
def test_runtime_is_kept_exactly_in_milliseconds(value: Any, expected: float) -> None:
    for key in ("runtime", "ramp_time"):
        got = presets.STORAGE_KEYS[key].parse(value)
        assert got == expected and type(got) is type(expected), (key, value, got)
    got = presets.MEMORY_KEYS["duration"].parse(value) if expected <= 3600 else None
    assert got is None or (got == expected and type(got) is type(expected))


@pytest.mark.parametrize("value, reason", [
    ("1.0005", "must be a whole number of milliseconds"), (1.0005, "must be a whole number of milliseconds"),
    ("0.5", "must be at least 1 s"), ("999ms", "must be at least 1 s"), (1e30, "must be at most 604800 s"),
    ("1e30", "expected a duration"), ("9" * 40, "is too large"), (2**80, "is too large"), ("-1", "expected a duration"),
    (True, "expected a duration"), ("169h", "must be at most 604800 s"), (float("inf"), "finite"),
])
def test_runtime_refusals_name_the_reason(value: Any, reason: str) -> None:
    with pytest.raises(ValueError, match=reason):
        presets.STORAGE_KEYS["runtime"].parse(value)


def test_fractional_runtime_round_trips_through_a_preset_and_set(tmp_path: Path) -> None:
    f = write(tmp_path, HEADER.format(kind="storage") + "[settings]\nruntime = 1.5\nramp_time = \"250ms\"\n")
    point = presets.load(str(f)).expand()[0]
    assert isinstance(point, StoragePoint) and point.runtime == 1.5 and point.ramp_time == 0.25
    point = presets.apply_overrides(presets.load("custom"), ["runtime=1500ms"]).expand()[0]
    assert isinstance(point, StoragePoint) and point.runtime == 1.5
    proc = run_cli("run", "custom", "--set", "runtime=1.0005", "--out", str(tmp_path / "o"), timeout=60)
    assert proc.returncode == 2 and "must be a whole number of milliseconds" in proc.stderr


@pytest.mark.parametrize("key", sorted(UPPER_BOUNDS))
def test_every_numeric_key_has_a_documented_upper_bound(key: str) -> None:
    largest, refused, words = UPPER_BOUNDS[key]
    spec = presets.KEYS[kind_of(key)][key]
    assert spec.parse(largest) is not None
    with pytest.raises(ValueError, match="must be at most|power of two|whole number of"):
        spec.parse(refused)
    for huge in (1e30, 1e35, 2**63, 10**4000, "9" * 25, "1" + "0" * 29 + "p"):
        with pytest.raises(ValueError):
            spec.parse(huge)
    assert words in spec.help, spec.help
    doc = (Path(__file__).resolve().parents[2] / "docs" / "presets.md").read_text()
    row = next(line for line in doc.splitlines() if line.startswith(f"| `{key}` |"))
    assert words.replace("at most ", "") in row or words in row, row


ALL_KEYS = [(kind, key, spec) for kind, keys in presets.KEYS.items() for key, spec in keys.items()] + \
    [(presets.STORAGE, key, spec) for key, spec in presets.PROCEDURE_KEYS.items()]


@pytest.mark.parametrize("kind, key, spec", ALL_KEYS, ids=[f"{k}-{key}" for k, key, _ in ALL_KEYS])
def test_every_key_refuses_huge_and_negative_numbers_with_a_value_error(kind: str, key: str, spec: Any) -> None:
    """float() of an int past 2^1024 raises OverflowError, not ValueError: each parser must look first (the
    latency_bound and latency_percentile parsers did not)."""
    for huge in (10**400, -10**400, 2**1024, -(2**1024), 10**4000):
        with pytest.raises(ValueError):
            spec.parse(huge)


def test_bs_of_1e35_and_runtime_of_1e30_are_refused_from_toml(tmp_path: Path) -> None:
    f = write(tmp_path, HEADER.format(kind="storage") + "[settings]\nbs = 1e35\n")
    with pytest.raises(UsageError, match=r"key 'bs' has invalid value 1e\+35: must be at most 64 MiB"):
        presets.load(str(f))
    g = write(tmp_path, HEADER.format(kind="storage") + "[settings]\nruntime = 1e30\n")
    with pytest.raises(UsageError, match=r"key 'runtime' has invalid value 1e\+30: must be at most 604800 s"):
        presets.load(str(g))


def test_memory_buffer_is_whole_kib_and_cpus_are_checked() -> None:
    buffer = presets.MEMORY_KEYS["buffer"].parse
    assert buffer("4k") == 4096 and buffer(None) is None and buffer("4g") == 2**32 and buffer("1k") == 1024
    # at most 4 GiB, the engine's cap: memlat -b 20000000 (19 GiB) started allocating
    for bad, reason in ((5000, "whole number of 1 KiB"), ("0.5k", "at least 1 KiB"), ("5.5k", "whole number of 1 KiB"),
                        ("2p", "at most 4 GiB"), ("20000000k", "at most 4 GiB"), (2**32 + 1024, "at most 4 GiB")):
        with pytest.raises(ValueError, match=reason):
            buffer(bad)
    cpus = presets.MEMORY_KEYS["cpus"].parse
    assert cpus("0-3, 8") == "0-3,8" and cpus([0, 2]) == "0,2" and cpus(5) == "5" and cpus("none") is None
    for bad_cpus in ("3-1", "0,0", "1024", "0-1024", "\u0664", "0-3,2", "1" * 5000, [True], [[0]]):
        with pytest.raises(ValueError):
            cpus(bad_cpus)


def test_tlb_locality_is_a_bounded_whole_kib_size_or_none() -> None:
    tlb = presets.MEMORY_KEYS["tlb_locality"].parse
    assert presets.MEMORY_KEYS["tlb_locality"].default is None
    assert tlb("256k") == 262144 and tlb("4k") == 4096 and tlb("1g") == 2**30 and tlb(262144) == 262144
    for whole in (None, 0, "0", "none", " none ", "whole", ""):
        assert tlb(whole) is None, whole
    for bad, reason in (("3k", "at least 4 KiB"), ("2g", "at most 1 GiB"), (5000, "whole number of 1 KiB"),
                        (-1, "positive"), (True, "none for the whole buffer"), ("256k\n", "control character"),
                        ("lots", "expected a size")):
        with pytest.raises(ValueError, match=reason):
            tlb(bad)


# --- control characters: refused by every parser, shown escaped ---------------------------------

CONTROL = ["\n", "\r", "\t", "\x00", "\x1b", "\x7f", "\x85", "\u2028", "\u202e", "\u200b", "\ufeff"]
VALID = {"rw": "randread", "bs": "4k", "rwmixread": "50", "iodepth": "4", "numjobs": "2", "ioengine": "libaio",
         "direct": "true", "runtime": "2", "ramp_time": "1", "size": "1m", "time_based": "yes", "mode": "idle",
         "traffic": "W6", "delay": "200", "stride": "128", "buffer": "64k", "duration": "2", "cpus": "0-1",
         "tlb_locality": "256k"}


@pytest.mark.parametrize("key", sorted(VALID))
def test_every_parser_refuses_control_characters_even_where_strip_would_remove_them(key: str) -> None:
    spec = presets.KEYS[kind_of(key)][key]
    assert spec.parse(VALID[key]) is not None or key in ("rwmixread", "buffer", "cpus")
    assert spec.parse(f"  {VALID[key]}  ") == spec.parse(VALID[key])  # spaces are still fine
    for c in CONTROL:
        for bad in (VALID[key] + c, c + VALID[key], VALID[key][:1] + c + VALID[key][1:], c):
            with pytest.raises(ValueError, match="control character"):
                spec.parse(bad)
        with pytest.raises(ValueError):
            spec.parse([VALID[key] + c])


@pytest.mark.parametrize("value", ["randread\n", "randread\nexec_prerun=touch PWNED", "\trandread", "rand\x00read"])
def test_set_with_a_control_character_exits_2_with_one_escaped_line(tmp_path: Path, value: str) -> None:
    with pytest.raises(UsageError) as e:
        presets.parse_overrides("storage", [f"rw={value}"])
    msg = str(e.value)
    assert "key 'rw' has invalid value" in msg and "control character" in msg
    assert not presets.has_control(msg), msg
    if "\x00" in value:
        return  # a NUL cannot be passed in argv
    proc = run_cli("run", "custom", "--set", f"rw={value}", "--out", str(tmp_path / "o"), timeout=60)
    assert proc.returncode == 2 and "contains a control character" in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1 and "Traceback" not in proc.stderr
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize("toml, needle", [
    ('name = "a\\nb"\nkind = "storage"\n', "key 'name' has invalid value 'a\\x0ab': contains a control character"),
    ('name = "x\\u001b[2J"\nkind = "storage"\n', "key 'name' has invalid value 'x\\x1b[2J'"),
    ('name = "x"\nkind = "storage"\ndescription = "a\\tb"\n', "key 'description' has invalid value 'a\\x09b'"),
    ('name = "x"\nkind = "storage"\n[[group]]\nlabel = "SEQ\\r"\n',
     "group 1: key 'label' has invalid value 'SEQ\\x0d'"),
    ('name = "x"\nkind = "storage"\n[[group]]\nlabel = 3\n', "group 1: key 'label' must be a string, not 3"),
    (f'name = "{"n" * 101}"\nkind = "storage"\n', "key 'name' is 101 characters long; at most 100 are allowed"),
    ('name = "x"\nkind = "storage\\n"\n', "key 'kind' has invalid value 'storage\\x0a': must be storage or memory"),
    ('name = "x"\nkind = "storage"\n[settings]\n"b\\ns" = 1\n', "unknown key 'b\\x0as' for a storage preset"),
    ('name = "x"\nkind = "storage"\n[settings]\nruntime = 1979-05-27\n',
     "key 'runtime' has invalid value \"1979-05-27\""),
    ('name = "x"\nkind = "storage"\n[settings]\nbs = {a = 1}\n', "key 'bs' has invalid value {\"a\": 1}"),
])
def test_names_labels_and_keys_with_control_characters_are_refused(tmp_path: Path, toml: str, needle: str) -> None:
    f = write(tmp_path, toml)
    with pytest.raises(UsageError) as e:
        presets.load(str(f))
    assert needle in str(e.value) and not presets.has_control(str(e.value)), str(e.value)


def test_show_value_escapes_and_shortens() -> None:
    assert presets.show_value("ab") == "'ab'"
    assert presets.show_value("a\nb\x1b") == "'a\\x0ab\\x1b'"
    assert presets.show_value(math.inf) == "inf" and presets.show_value(float("nan")) == "nan"
    assert not presets.has_control(presets.show_value(["a\n", {"k": "\x1b"}]))
    assert presets.show_value(10**5000) == "(an integer of 16610 bits)"
    assert len(presets.show_value("x" * 1000)) == 60
