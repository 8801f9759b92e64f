"""Container awareness: which flag is missing, and whether results outlive the container.

The probes take a root directory, so a container is faked from the outside with the files the engines
really leave (/run/.containerenv for podman, /.dockerenv for docker) and sysfs-like trees.  The real
image is checked by container/test.sh.
"""

from __future__ import annotations

import errno
import os
from pathlib import Path

from app.host import container


def fake_root(tmp_path: Path, engine: str | None, devices: dict[str, int], nodes: tuple[str, ...] = ()) -> Path:
    root = tmp_path / "root"
    (root / "proc/1").mkdir(parents=True)
    (root / "proc/1/cgroup").write_text("0::/\n")
    (root / "run").mkdir()
    if engine == "podman":
        (root / "run/.containerenv").write_text("")
    elif engine == "docker":
        (root / ".dockerenv").write_text("")
    for name, sectors in devices.items():
        d = root / "sys/block" / name
        d.mkdir(parents=True)
        (d / "size").write_text(f"{sectors}\n")
    (root / "dev").mkdir()
    for n in nodes:
        (root / "dev" / n).write_text("")  # a regular file stands in for a node: exists, not a block device
    return root


def test_engines_are_recognised(tmp_path):
    assert container.container_engine(str(fake_root(tmp_path / "a", "podman", {}))) == "podman"
    assert container.container_engine(str(fake_root(tmp_path / "b", "docker", {}))) == "docker"
    assert container.container_engine(str(fake_root(tmp_path / "c", None, {}))) is None
    # a machine booted from an image built in a container keeps /.dockerenv; its root is a disk
    vm = fake_root(tmp_path / "vm", "docker", {})
    (vm / "proc/self").mkdir(parents=True)
    (vm / "proc/self/mountinfo").write_text("27 1 254:0 / / rw,relatime - ext4 /dev/vda rw\n")
    assert container.container_engine(str(vm)) is None
    (vm / "proc/self/mountinfo").write_text("600 500 0:50 / / rw - overlay overlay rw,lowerdir=/a\n")
    assert container.container_engine(str(vm)) == "docker"
    r = fake_root(tmp_path / "d", None, {})
    (r / "proc/1/cgroup").write_text("0::/system.slice/docker-0123abcd.scope\n")
    assert container.container_engine(str(r)) == "docker"


def test_missing_dev_nodes_name_the_flags(tmp_path):
    root = fake_root(tmp_path, "podman", {"vda": 2048, "zram0": 0, "loop0": 0, "nvme0n1": 4096})
    msg = container.device_access_problem(str(root))
    assert msg and "--privileged -v /dev:/dev" in msg and "nvme0n1" in msg and "vda" in msg
    assert "zram0" not in msg  # size 0: not a device anyone measures
    assert container.device_access_problem(str(root), engine=None) is not None
    # outside a container nothing is said
    plain = fake_root(tmp_path / "host", None, {"vda": 2048})
    assert container.device_access_problem(str(plain)) is None


def test_nodes_present_is_not_a_problem(tmp_path):
    root = fake_root(tmp_path, "docker", {"vda": 2048}, nodes=("vda",))
    assert container.device_access_problem(str(root)) is None


def test_missing_device_hint(tmp_path):
    root = fake_root(tmp_path, "docker", {"nvme0n1": 4096})
    (root / "sys/class/block/nvme0n1").mkdir(parents=True)
    hint = container.missing_device_hint("/dev/nvme0n1", str(root))
    assert hint and "--privileged -v /dev:/dev" in hint
    assert container.missing_device_hint("/dev/sdz", str(root)) is None
    assert container.missing_device_hint("/dev/nvme0n1", str(fake_root(tmp_path / "h", None, {}))) is None


MOUNTINFO_NO_VOLUME = """\
600 500 0:50 / / rw,relatime - overlay overlay rw,lowerdir=/a,upperdir=/b,workdir=/c
601 600 0:51 / /proc rw,nosuid,nodev,noexec,relatime - proc proc rw
602 600 0:52 / /dev rw,nosuid - tmpfs tmpfs rw,size=65536k,mode=755
"""
MOUNTINFO_VOLUME = MOUNTINFO_NO_VOLUME + "603 600 254:1 /root/results /results rw,relatime - ext4 /dev/vda1 rw\n"


def test_results_volume_warning(tmp_path):
    assert container.results_volume_warning("/results/quick-1", engine="podman", mountinfo=MOUNTINFO_VOLUME) is None
    msg = container.results_volume_warning("/results/quick-1", engine="podman", mountinfo=MOUNTINFO_NO_VOLUME)
    assert msg and '-v "$PWD/results:/results"' in msg and "lost" in msg
    assert container.results_volume_warning("/results", engine=None, mountinfo=MOUNTINFO_NO_VOLUME) is None \
        or container.container_engine() is not None
    # a prefix is not a mount: /resultsX is not under /results
    assert container.results_volume_warning("/resultsX/a", engine="docker", mountinfo=MOUNTINFO_VOLUME)
    # a VM made from a container image keeps /.dockerenv, but its root is a disk: nothing is lost
    vm = "27 1 254:1 / / rw,relatime - ext4 /dev/vda rw\n"
    assert container.results_volume_warning("/results/q", engine="docker", mountinfo=vm) is None


def test_unwritable_hints():
    ro = container.unwritable_hint("/results", OSError(errno.EROFS, os.strerror(errno.EROFS)), engine="docker")
    assert "read-only" in ro and ":ro" in ro
    perm = container.unwritable_hint("/results", OSError(errno.EACCES, os.strerror(errno.EACCES)), engine="docker")
    assert "not writable by uid" in perm and "--user" in perm
    host = container.unwritable_hint("/x", OSError(errno.EACCES, os.strerror(errno.EACCES)), engine=None)
    assert "--out" in host


def test_a_target_missing_from_sys_in_a_container_names_the_flags(monkeypatch):
    """`run --target /dev/loop0` in a container started without the flags: the node is there, /sys has no
    entry for its device number; the refusal says which flags to add, as `devices` does."""
    from app.host import safety

    monkeypatch.setattr(safety, "sys_name", lambda path: None)  # no /sys/dev/block entry for the node
    monkeypatch.setattr(container, "container_engine", lambda root="/": "docker")
    v = safety.classify_block("/dev/loop0", True)
    assert v.verdict == safety.REFUSED
    assert "does not list in /sys" in v.reasons[0] and "--privileged -v /dev:/dev" in v.reasons[0]
    monkeypatch.setattr(container, "container_engine", lambda root="/": None)  # not in a container: no flags
    assert "--privileged" not in safety.classify_block("/dev/loop0", True).reasons[0]


def test_a_results_path_names_the_host_folder_the_launcher_passed(monkeypatch):
    monkeypatch.setenv("PROFILER_TUI_RESULTS", "/results")
    monkeypatch.setenv(container.HOST_RESULTS_ENV, "/home/me/results")
    shown = container.shown_path("/results/quick-20261124-120000", engine="docker")
    assert shown == "/results/quick-20261124-120000 (on the host: /home/me/results/quick-20261124-120000)"
    assert container.shown_path("/data/elsewhere", engine="docker") == "/data/elsewhere"  # --out: not known
    assert container.shown_path("/results/x", engine=None) == "/results/x"  # not in a container
    monkeypatch.delenv(container.HOST_RESULTS_ENV)
    assert container.shown_path("/results/x", engine="docker") == "/results/x"  # not passed: not guessed
