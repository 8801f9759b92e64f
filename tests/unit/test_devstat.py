"""The device's own counters (app.host.devstat): the stat parser on real and hostile text, the window arithmetic with
fio's counter restarts, and the ratio/flag boundaries (app.stats.validity) — pure, on files in tmp_path, no root."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from app.host.devstat import (
    MAX_STAT_BYTES,
    NO_DUMP,
    NO_RESET,
    DeviceWindow,
    FioDone,
    Located,
    Mark,
    Stat,
    StatFile,
    device_part,
    locate,
    open_counters,
    parse_stat,
)
from app.model.records import JSONObject, Parts, StorageMetrics
from app.runners.fio_parse import SampleTracker, direction_bytes
from app.stats.validity import MIN_DEVICE_BYTES, device_reasons, point_checks, point_flags
from app.stats.validity import TargetFacts as Facts

# /sys/block/vda/stat of a 6.1 kernel (17 fields), and the same counters as older kernels print them
LINE17 = (b"  250597 1102713 4440358 38076  45275 3490659 3923565 13726        0  8403 52047  2514"
          b"       73 530565848   233167   250361    11721\n")
FIELDS = LINE17.split()


def line(n: int) -> bytes:
    return b" ".join(FIELDS[:n] if n <= 17 else FIELDS + [b"7"] * (n - 17)) + b"\n"


@pytest.mark.parametrize("n", [11, 15, 17, 18, 64])
def test_the_kernels_layouts_parse(n: int) -> None:
    assert parse_stat(line(n)) == Stat(read_ios=250597, read_sectors=4440358, read_ms=38076, write_ios=45275,
                                       write_sectors=3923565, write_ms=13726, busy_ms=8403, in_queue_ms=52047)


@pytest.mark.parametrize("text", [
    b"", b"\n", line(10), line(12), line(16),  # no kernel prints these counts
    LINE17.replace(b"250597", b"25O597"),  # a letter
    LINE17.replace(b"250597", b"-250597"), LINE17.replace(b"250597", b"2.5e5"), LINE17.replace(b"250597", b"0x10"),
    LINE17.replace(b"250597", str(1 << 64).encode()),  # past the kernel's unsigned long
    LINE17.replace(b"250597", b"9" * 21),
    LINE17.replace(b"250597", "٢٥٠".encode()),  # digits, but not ASCII ones
    LINE17.replace(b"250597", b"\x1b[2J250597"), LINE17.replace(b" 73 ", b" \x1b]0;x\x07 "),  # terminal escapes
    LINE17 * 2,  # a second line: no stat file has one
    LINE17 * 40,  # endless: longer than any stat line
    line(65),
    b"0 " * (MAX_STAT_BYTES // 2 + 1),
])
def test_hostile_stat_text_is_no_reading(text: bytes) -> None:
    assert parse_stat(text) is None


def test_the_largest_counter_the_kernel_can_hold_parses() -> None:
    top = str((1 << 64) - 1).encode()
    got = parse_stat(b" ".join([top] * 11))
    assert got is not None and got.in_queue_ms == (1 << 64) - 1


@settings(max_examples=300, deadline=None, derandomize=True)
@given(st.binary(max_size=MAX_STAT_BYTES + 64))
def test_any_bytes_parse_to_none_or_whole_counters(data: bytes) -> None:
    got = parse_stat(data)
    if got is not None:
        assert all(isinstance(v, int) and 0 <= v < 1 << 64 for v in vars(got).values())


@settings(max_examples=200, deadline=None, derandomize=True)
@given(st.sampled_from([11, 15, 17, 19]), st.lists(st.integers(0, (1 << 64) - 1), min_size=30, max_size=30),
       st.lists(st.sampled_from([" ", "  ", "\t", "       "]), min_size=31, max_size=31))
def test_whole_numbers_in_any_spacing_round_trip(n: int, values: list[int], gaps: list[str]) -> None:
    text = "".join(g + str(v) for g, v in zip(gaps, values[:n])) + gaps[-1] + "\n"
    got = parse_stat(text.encode())
    v = values
    assert got == Stat(v[0], v[2], v[3], v[4], v[6], v[7], v[9], v[10])


# --- the file held open ----------------------------------------------------------------------------------------


def stat_text(read_sectors: int = 0, write_sectors: int = 0, ios: tuple[int, int] = (0, 0),
              ms: tuple[int, int] = (0, 0), busy: int = 0, queue: int = 0) -> bytes:
    return (f"{ios[0]} 0 {read_sectors} {ms[0]} {ios[1]} 0 {write_sectors} {ms[1]} 0 {busy} {queue} "
            "0 0 0 0 0 0\n").encode()


def held(tmp_path: Path, text: bytes, name: str = "loop9") -> tuple[StatFile, Path]:
    path = tmp_path / "stat"
    path.write_bytes(text)
    return StatFile(Located(name, "target", path)), path


def test_the_held_file_is_read_again_at_each_reading_and_an_endless_one_is_none(tmp_path: Path) -> None:
    counters, path = held(tmp_path, stat_text(8))
    assert counters.read() == parse_stat(stat_text(8))
    path.write_bytes(stat_text(16))  # the same inode, new content: pread at 0 sees it
    got = counters.read()
    assert got is not None and got.read_sectors == 16
    path.write_bytes(stat_text(16) * 200)  # a file that never ends within the bound
    assert counters.read() is None
    counters.close()
    assert counters.read() is None


def test_a_stat_path_that_is_no_regular_file_is_refused(tmp_path: Path) -> None:
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    with pytest.raises(OSError):
        StatFile(Located("x", "target", fifo))


def fake_sysfs(tmp_path: Path, target: Path, text: bytes) -> Path:
    """A sysfs root whose /dev/block entry for ``target``'s filesystem device leads to a stat file of ``text``."""
    st_dev = os.stat(target).st_dev
    root = tmp_path / "sys"
    device = root / "devices" / "virtual" / "block" / "vdz" / "vdz1"
    device.mkdir(parents=True)
    (device / "stat").write_bytes(text)
    (root / "dev" / "block").mkdir(parents=True)
    (root / "dev" / "block" / f"{os.major(st_dev)}:{os.minor(st_dev)}").symlink_to(device)
    return root


def test_a_file_is_counted_on_its_filesystems_device_and_a_new_file_on_its_directorys(tmp_path: Path) -> None:
    target = tmp_path / "data"
    target.write_bytes(b"x")
    if os.major(os.stat(target).st_dev) == 0:
        pytest.skip("tmp_path is on a filesystem without a block device")
    root = fake_sysfs(tmp_path, target, stat_text(8))
    for path in (target, tmp_path / "not-yet" / "file"):
        where = locate(str(path), root)
        assert isinstance(where, Located) and (where.name, where.source) == ("vdz1", "filesystem")
    counters = open_counters(str(target), root)
    assert isinstance(counters, StatFile)
    counters.close()
    (root / "devices" / "virtual" / "block" / "vdz" / "vdz1" / "stat").write_bytes(b"garbage")
    assert "do not read as a block-device stat line" in str(open_counters(str(target), root))
    assert "has no" in str(locate(str(target), tmp_path / "empty"))


def test_a_file_on_a_memory_filesystem_has_no_device_and_the_sentence_names_it() -> None:
    if not Path("/dev/shm").is_dir() or os.major(os.stat("/dev/shm").st_dev) != 0:
        pytest.skip("no tmpfs at /dev/shm")
    why = locate("/dev/shm/profiler-tui-no-such-file")
    assert isinstance(why, str) and "on tmpfs" in why and "no block device of its own" in why


# --- the window and the part ----------------------------------------------------------------------------------

MIB = 1 << 20


def test_the_window_restarts_where_fios_counters_restart(tmp_path: Path) -> None:
    """Layout and ramp I/O fall before the last start: only what follows fio's counter restart counts."""
    counters, path = held(tmp_path, b"")
    window = DeviceWindow(counters, ramp=True)
    # first dump, in the ramp
    window.start(parse_stat(stat_text(2048 * 100)), 1.0, FioDone(100 * MIB, 0, 0), reset=False)
    # the ramp ended
    window.start(parse_stat(stat_text(2048 * 150, ios=(12800, 0))), 2.0, FioDone(5 * MIB, 0, 0), reset=True)
    path.write_bytes(stat_text(2048 * 195, 2048, ios=(24320, 3), ms=(500, 12), busy=900, queue=1400))
    part = window.finish(5.5, FioDone(50 * MIB, 0, 0))
    assert part == {"name": "loop9", "source": "target", "read_bytes": 45 * MIB, "write_bytes": MIB,
                    "read_ios": 11520, "write_ios": 3, "ios": 11523, "read_ms": 500, "write_ms": 12, "busy_ms": 900,
                    "in_queue_ms": 1400, "window_s": 3.5, "fio_read_bytes": 45 * MIB, "fio_write_bytes": 0,
                    "read_ratio": 1.0, "write_ratio": None, "lat_mean_ns": round(512 * 1e6 / 11523, 1),
                    "note": "loop9 wrote 1.0 MB while fio wrote 0.0 MB: I/O fio did not issue (other processes on the "
                            "device, the filesystem's own, or read-modify-write) — the counters are the whole "
                            "device's"}
    assert counters.fd is None  # closed by finish


def test_a_window_that_cannot_be_matched_says_why(tmp_path: Path) -> None:
    s = stat_of(stat_text())
    counters, _ = held(tmp_path, stat_text(4096))
    ramp = DeviceWindow(counters, ramp=True)
    ramp.start(s, 1.0, FioDone(MIB, 0, 0), reset=False)
    assert ramp.finish(3.0, FioDone(9 * MIB, 0, 0)) == {"unavailable": NO_RESET}
    no_dump = DeviceWindow(held(tmp_path, stat_text())[0], ramp=False)
    assert no_dump.finish(1.0, FioDone(MIB, 0, 0)) == {"unavailable": NO_DUMP}
    unread = DeviceWindow(held(tmp_path, stat_text())[0], ramp=False)
    unread.start(None, 1.0, FioDone(0, 0, 0), reset=False)
    assert "could not be read at the window's start" in str(unread.finish(2.0, FioDone(MIB, 0, 0))["unavailable"])
    assert DeviceWindow("no device here", ramp=False).finish(1.0, FioDone(0, 0, 0)) == {"unavailable": "no device here"}
    where = Located("sdz", "target", tmp_path / "stat")
    back = device_part(where, Mark(0, stat_of(stat_text(100)), 0, 0), Mark(1, stat_of(stat_text(50)), MIB, 0))
    assert "went backwards" in str(back["unavailable"])
    lost = device_part(where, Mark(0, s, 8 * MIB, 0), Mark(1, s, MIB, 0))  # fio restarted after its last dump
    assert "restarted after its last status dump" in str(lost["unavailable"])


def stat_of(text: bytes) -> Stat:
    """The counters of a stat file's text the test made well-formed."""
    stat = parse_stat(text)
    assert stat is not None, text
    return stat


def part_of(read_ratio: float, fio_bytes: int = 100 * MIB) -> JSONObject:
    where = Located("vdb", "filesystem", Path("/x"))
    sectors = round(fio_bytes * read_ratio) // 512
    return device_part(where, Mark(0, stat_of(stat_text()), 0, 0),
                       Mark(2, stat_of(stat_text(sectors, ios=(1000, 0), ms=(50, 0))), fio_bytes, 0))


@pytest.mark.parametrize("ratio, flag", [(0.9, None), (0.8999, "not-on-device"), (0.05, "not-on-device"),
                                         (1.0, None), (1.1, None), (1.1002, "amplified"), (3.0, "amplified")])
def test_the_ratio_boundaries(ratio: float, flag: str | None) -> None:
    part = part_of(ratio)
    assert part["lat_mean_ns"] == 50_000.0  # 50 ms over 1000 I/Os
    flags = [f["flag"] for f in point_flags({"direct": True}, _metrics(), Parts(device=part))]
    assert flags == ([flag] if flag else [])
    low, high = device_reasons(part)
    if flag == "not-on-device":
        assert low is not None and low.startswith(f"reads: vdb read {round(ratio, 2):.2f}× the bytes fio read")


def test_under_a_mib_of_fio_bytes_is_not_judged() -> None:
    part = part_of(0.0, MIN_DEVICE_BYTES - 512)
    checks = point_checks({"direct": True}, _metrics(), Parts(device=part), None, Facts(), [])
    assert checks["not-on-device"]["result"] == "not-applicable"
    assert point_flags({"direct": True}, _metrics(), Parts(device=part)) == []
    checks = point_checks({"direct": True}, _metrics(), Parts(device={"unavailable": "on tmpfs"}), None, Facts(), [])
    assert checks["amplified"] == {"result": "not-applicable", "why": "on tmpfs"}


def _metrics() -> StorageMetrics:
    return StorageMetrics.of({"iops": 1000.0, "bw_bytes": 4096e3, "usr_cpu": 1.0, "sys_cpu": 1.0,
                              "lat_ns": {"mean": 1e6}})


def dump(ios: int, nbytes: int, runtime_ms: int, at_ms: int) -> dict[str, object]:
    return {"timestamp_ms": at_ms, "jobs": [{"read": {"total_ios": ios, "io_bytes": nbytes, "runtime": runtime_ms},
                                             "write": {"total_ios": 0, "io_bytes": 0, "runtime": runtime_ms}}]}


def test_the_sample_tracker_says_where_fios_counters_restarted() -> None:
    tracker = SampleTracker()
    seen = []
    for doc in (dump(100, 409600, 1000, 10_000), dump(200, 819200, 2000, 11_000),
                dump(50, 204800, 500, 12_000),  # the counters dropped: the ramp ended mid-interval
                dump(150, 614400, 1500, 13_000)):
        tracker.update(doc, 0.0)
        seen.append(tracker.reset)
    assert seen == [False, False, True, False]
    assert direction_bytes(dump(150, 614400, 1500, 0)) == {"read": 614400, "write": 0, "trim": 0}
