"""The peak run's storage keys: io_uring's registerfiles, fixedbufs, sqthread_poll and hipri (refused with another
ioengine; false stored as unset), a point's ``cpus`` (a list, or ``node`` resolved for a target from a faked sysfs,
numjobs cut at the node's CPUs), the poll-queue check behind the hipri skip, and the job file they make."""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path

import pytest

from app.core.errors import UsageError
from app.engine.sweep import plan_for_target
from app.host import devstat, topology
from app.model.points import StoragePoint
from app.plan import presets
from app.runners.fio import job_file
from tests.helpers.typed import storage_point, storage_points


def storage(settings: dict[str, object], **matrix: list[object]) -> presets.Preset:
    data: dict[str, object] = {"name": "t", "kind": "storage", "settings": settings}
    if matrix:
        data["matrix"] = matrix
    return presets.parse_preset(data, "t.toml")


@pytest.mark.parametrize("key, engine", [("registerfiles", "libaio"), ("fixedbufs", "psync"),
                                         ("sqthread_poll", "pvsync2"), ("hipri", "libaio"), ("hipri", "posixaio")])
def test_an_io_uring_option_with_another_engine_is_refused_in_one_sentence(key: str, engine: str) -> None:
    with pytest.raises(UsageError) as e:
        storage({key: True, "ioengine": engine}).expand()
    msg = str(e.value)
    assert msg.startswith("t.toml: ") and f"key '{key}' has value true" in msg and f"ioengine is {engine}" in msg
    assert msg.count(". ") == 0 and "\n" not in msg


def test_the_engines_that_take_each_option_plan_it_and_false_is_stored_as_unset() -> None:
    hipri = storage_point(storage({"hipri": True, "ioengine": "pvsync2"}).expand()[0])
    assert hipri.hipri is True and hipri.to_dict()["hipri"] is True
    points = storage_points(storage({"ioengine": "io_uring", "fixedbufs": False}, registerfiles=[True, False]).expand())
    assert [p.registerfiles for p in points] == [True, None] and "fixedbufs" not in points[1].to_dict()
    # a libaio point may say false: that is fio's default, the same job as saying nothing
    assert storage_point(storage({"ioengine": "libaio", "sqthread_poll": "off"}).expand()[0]).sqthread_poll is None


def test_a_recorded_plan_is_checked_as_a_new_one() -> None:
    point = replace(storage_point(storage({}).expand()[0]), ioengine="libaio").to_dict()
    with pytest.raises(UsageError, match=r"run.json: plan\[0\]: key 'fixedbufs' has value true, which needs "
                                         r"ioengine io_uring \(this point's ioengine is libaio\)"):
        presets.validate_plan("storage", [{**point, "fixedbufs": True}], "run.json")
    with pytest.raises(UsageError, match=r"plan\[0\] key 'cpus' has invalid value \"node\""):
        presets.validate_plan("storage", [{**point, "cpus": "node"}], "run.json")
    assert presets.validate_plan("storage", [{**point, "cpus": "0-1"}], "run.json")[0].cpus == "0-1"


@pytest.mark.parametrize("value, want", [("node", "node"), (" NODE ", "node"), ("0-3", "0-3"), ("0, 2", "0,2")])
def test_cpus_takes_a_list_or_the_word_node(value: object, want: str) -> None:
    assert storage({"cpus": value}).expand()[0].cpus == want


def test_a_bad_cpu_list_names_the_word_too() -> None:
    with pytest.raises(UsageError, match=r"key 'cpus' has invalid value 'nodes': expected a CPU list such as 0-3 "
                                         r"or 0,2,4, or node"):
        storage({"cpus": "nodes"})


def test_the_job_file_holds_the_options_and_one_job_per_cpu() -> None:
    point = StoragePoint(rw="randread", bs=4096, rwmixread=None, iodepth=128, numjobs=2, ioengine="io_uring",
                         direct=True, runtime=1, ramp_time=0, size=1 << 20, time_based=True, registerfiles=True,
                         fixedbufs=True, sqthread_poll=True, hipri=True, cpus="0-1")
    lines = job_file(point, "/dev/null-target", plan_writes=False).splitlines()
    for option in ("registerfiles=1", "fixedbufs=1", "sqthread_poll=1", "hipri=1", "cpus_allowed=0-1",
                   "cpus_allowed_policy=split"):
        assert option in lines
    plain = job_file(replace(point, registerfiles=None, fixedbufs=None, sqthread_poll=None, hipri=None, cpus=None),
                     "/dev/null-target", plan_writes=False)
    assert "registerfiles" not in plain and "cpus_allowed" not in plain
    with pytest.raises(UsageError, match="key 'cpus' has value node"):
        job_file(replace(point, cpus="node"), "/dev/null-target")


# --- cpus = "node" on a faked sysfs ----------------------------------------------------------------------------

def fake_sysfs(tmp_path: Path, numa_node: str | None) -> Path:
    """A sysfs with two nodes (CPUs 0-1 and 2-3) and the block device 259:0 on a PCI function whose numa_node is
    ``numa_node`` (None: no such file, as a virtual device)."""
    root = tmp_path / "sys"
    for node, cpus in ((0, "0-1"), (1, "2-3")):
        d = root / "devices" / "system" / "node" / f"node{node}"
        d.mkdir(parents=True)
        (d / "cpulist").write_text(cpus + "\n")
    pci = root / "devices" / "pci0000:00" / "0000:00:04.0"
    disk = pci / "nvme" / "nvme0" / "nvme0n1"
    disk.mkdir(parents=True)
    (disk / "stat").write_text("0 " * 17 + "\n")
    (disk / "queue").mkdir()
    (disk / "queue" / "io_poll").write_text("0\n")
    if numa_node is not None:
        (pci / "numa_node").write_text(numa_node + "\n")
    (root / "dev" / "block").mkdir(parents=True)
    os.symlink(disk, root / "dev" / "block" / "259:0")
    return root


@pytest.fixture
def on_device(monkeypatch: pytest.MonkeyPatch) -> None:
    for module in (topology, devstat):
        monkeypatch.setattr(module, "device_number", lambda target: (259, 0))


def node_plan() -> list:
    return storage({"cpus": "node", "ioengine": "io_uring"}, numjobs=[1, 2, 4], iodepth=[1, 32]).expand()


@pytest.mark.usefixtures("on_device")
def test_node_is_the_cpus_of_the_devices_node_and_numjobs_stops_there(tmp_path: Path) -> None:
    plan = storage_points(plan_for_target(node_plan(), "/dev/nvme0n1", fake_sysfs(tmp_path, "1"), allowed=(0, 1, 2, 3)))
    assert {p.cpus for p in plan} == {"2-3"}
    assert [(p.numjobs, p.iodepth) for p in plan] == [(1, 1), (1, 32), (2, 1), (2, 32)]  # 4 jobs > 2 CPUs: cut


@pytest.mark.usefixtures("on_device")
@pytest.mark.parametrize("numa_node", ["-1", None, "garbage\x00", "7"])
def test_a_device_without_a_node_runs_on_every_allowed_cpu(tmp_path: Path, numa_node: str | None) -> None:
    """-1 (no node), no numa_node file, text that is not a node, a node with none of our CPUs: every allowed CPU."""
    plan = storage_points(plan_for_target(node_plan(), "/dev/nvme0n1", fake_sysfs(tmp_path, numa_node),
                                          allowed=(0, 1, 3)))
    assert {p.cpus for p in plan} == {"0-1,3"} and {p.numjobs for p in plan} == {1, 2}  # 3 CPUs: 4 jobs cut


@pytest.mark.usefixtures("on_device")
def test_numjobs_is_never_emptied_and_a_plan_without_node_is_left_alone(tmp_path: Path) -> None:
    sysfs = fake_sysfs(tmp_path, "0")
    wide = storage({"cpus": "node"}, numjobs=[4, 8]).expand()
    wide_plan = storage_points(plan_for_target(wide, "/dev/x", sysfs, allowed=(0, 1)))
    assert [p.numjobs for p in wide_plan] == [4, 8]  # jobs share CPUs
    pinned = storage({"cpus": "2"}, numjobs=[1, 4]).expand()
    assert plan_for_target(pinned, "/dev/x", sysfs, allowed=(0, 1)) == pinned


@pytest.mark.usefixtures("on_device")
def test_poll_queues_are_read_from_the_devices_queue(tmp_path: Path) -> None:
    sysfs = fake_sysfs(tmp_path, "0")
    assert devstat.poll_problem("/dev/nvme0n1", sysfs) == devstat.NO_POLL_QUEUES
    io_poll = sysfs / "devices" / "pci0000:00" / "0000:00:04.0" / "nvme" / "nvme0" / "nvme0n1" / "queue" / "io_poll"
    io_poll.write_text("1\n")
    assert devstat.poll_problem("/dev/nvme0n1", sysfs) is None
    io_poll.write_text("yes\n")
    assert "poll queues are unknown" in str(devstat.poll_problem("/dev/nvme0n1", sysfs))
