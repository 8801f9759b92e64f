"""`--target /dev/shm` is what the refusal of a file in a sticky directory recommends: the tool makes a directory of
its own in /dev/shm and the test file in it.  A missing path elsewhere under /dev (a device's name mistyped) is
still never created as a regular file."""

from __future__ import annotations

from app.host.safety import file_facts


def test_a_new_file_under_dev_shm_is_a_file_to_create() -> None:
    f = file_facts("/dev/shm/profiler-tui-00000000/profiler-tui.testfile")
    assert f.kind == "file" and f.refusal is None and not f.exists


def test_a_missing_device_name_is_never_a_file_to_create() -> None:
    for path in ("/dev/nvme9n9", "/dev/sdzz", "/dev/shmx", "/dev/mapper/nothing-here"):
        f = file_facts(path)
        assert f.kind == "other" and f.refusal and "never created as a file" in f.refusal, path
