"""app.host.audit on a fake sysfs and procfs (tests/helpers/audit_tree.py): every warning, the items that cannot be read
here and why, both CPU vendors' boost switches, and hostile text."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Sequence

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import app.host.audit as audit_mod
import app.host.devstat
from app.host.audit import ITEMS, WARNINGS, Audit, Item, audit
from tests.helpers.audit_tree import FUNCTION, NAMESPACE, NUMBER, build, put

APST_ON = {"id-ctrl": "NVME Identify Controller:\nvid       : 0x1b36\napsta     : 0x1\nwctemp    : 343\n",
           "12": "get-feature:0x0c (Autonomous Power State Transition), Current value:0x00000001\n",
           "2": "get-feature:0x02 (Power Management), Current value:0x00000000\n"}


class FakeNvme:
    """nvme-cli's answers by sub-command (get-feature by its feature number); a missing answer fails as nvme-cli
    does without root."""

    def __init__(self, answers: dict[str, str] | None = None) -> None:
        self.answers = answers if answers is not None else {"id-ctrl": "apsta     : 0\n", "2": "Current value:0x0\n"}
        self.calls: list[list[str]] = []

    def __call__(self, args: Sequence[str]) -> str:
        self.calls.append(list(args))
        key = args[0] if args[0] != "get-feature" else args[-1]
        if key not in self.answers:
            raise audit_mod.Unreadable(f"nvme {' '.join(args)} failed: open: Permission denied")
        return self.answers[key]


class Host:
    def __init__(self, tmp: Path) -> None:
        self.sys, self.proc = build(tmp)
        self.target = str(tmp / "fio.file")
        self.queue = self.sys / NAMESPACE / "queue"
        self.cpu = self.sys / "devices/system/cpu"
        self.nvme = FakeNvme()

    def audit(self, cpus: Sequence[int] = (0, 1), target: str | None = "", engine: str | None = None) -> Audit:
        return audit(self.target if target == "" else target, cpus, sys_root=self.sys, proc_root=self.proc,
                     nvme=self.nvme, swap_interval=0, engine=engine)

    def item(self, key: str, cpus: Sequence[int] = (0, 1)) -> Item:
        return next(i for i in self.audit(cpus).items if i.key == key)


@pytest.fixture
def host(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Host:
    monkeypatch.setattr(app.host.devstat, "device_number", lambda target: NUMBER)
    monkeypatch.setattr(audit_mod, "device_number", lambda target: NUMBER)
    return Host(tmp_path)


def test_a_host_set_as_a_benchmark_wants_has_no_warning_and_every_item_a_value(host: Host) -> None:
    a = host.audit()
    assert [i.key for i in a.items] == list(ITEMS)
    assert a.device == "nvme0n1" and a.cpus == (0, 1) and "the device under" in (a.about or "")
    assert a.warnings == [], a.warnings
    assert all(i.value and i.status in ("ok", "info") and not i.tune for i in a.items), a.items
    found = {i.key: i for i in a.items}
    assert found["pcie_link"].value == "8 GT/s x4 (maximum 8 GT/s x4) at 0000:01:00.0"
    assert found["numa_node"].value == "node 0 (CPUs 0-1)"
    assert found["poll_queues"].value == "io_poll 1, nvme poll_queues 2"
    assert found["apst"].value == "not supported by the drive (id-ctrl apsta 0)"
    assert found["power_state"].value == "PS0"
    assert found["numa_policy"].value == "default (memory nodes allowed: 0-1)"
    assert found["cstates"].value == "acpi_idle: POLL 0 µs, C1 1 µs, C2 18 µs (disabled)"
    assert "acpi_idle (the C-states the firmware's ACPI tables describe)" in (found["cstates"].note or "")
    assert found["swap"].value == "1024 MiB, 0 MiB used; 0 pages in, 0 out in 0 s"


def test_scheduler_on_a_non_rotational_device_warns_and_tune_sets_none(host: Host) -> None:
    put(host.queue / "scheduler", "none [mq-deadline] kyber\n")
    i = host.item("scheduler")
    assert (i.status, i.warning, i.value) == ("warn", "scheduler", "mq-deadline")
    assert i.tune == ((str(host.queue / "scheduler"), "none"),)
    put(host.queue / "rotational", "1\n")  # a disk that spins gains from a scheduler: said, not warned, not tuned
    i = host.item("scheduler")
    assert (i.status, i.tune) == ("info", ()) and "rotational" in i.want


def test_wbt_on_warns_and_tune_sets_0(host: Host) -> None:
    put(host.queue / "wbt_lat_usec", "2000\n")
    i = host.item("wbt")
    assert (i.status, i.warning, i.value) == ("warn", "wbt-on", "2000 µs")
    assert i.tune == ((str(host.queue / "wbt_lat_usec"), "0"),)


def test_apst_enabled_on_an_nvme_drive_warns(host: Host) -> None:
    host.nvme = FakeNvme(APST_ON)
    i = host.item("apst")
    assert (i.status, i.warning) == ("warn", "apst-on") and i.value and i.value.startswith("enabled (APSTE 1")
    assert ["get-feature", "/dev/nvme0", "-f", "12"] in host.nvme.calls
    host.nvme = FakeNvme({**APST_ON, "12": "get-feature:0x0c (Autonomous Power State Transition), Current value:0x0\n"})
    assert host.item("apst").status == "ok"


def test_apst_through_a_fake_nvme_cli_on_path(host: Host, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    bin_dir = tmp_path / "bin"
    script = put(bin_dir / "nvme", "#!/bin/sh\n"
                 "case \"$1\" in id-ctrl) printf 'apsta     : 1\\n';;\n"
                 "get-feature) printf 'get-feature:0x0c (Autonomous Power State Transition), "
                 "Current value:0x00000001\\n';;\nesac\n")
    script.chmod(0o755)
    monkeypatch.setenv("PATH", str(bin_dir))
    host.nvme = audit_mod.run_nvme  # type: ignore[assignment]
    assert host.item("apst").warning == "apst-on"


def test_apst_without_nvme_cli_says_what_the_kernel_allows(host: Host, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", "/nonexistent")
    host.nvme = audit_mod.run_nvme  # type: ignore[assignment]
    put(host.sys / "module/nvme_core/parameters/default_ps_max_latency_us", "100000\n")
    a = {i.key: i for i in host.audit().items}
    assert a["apst"].status == "info" and "nvme-cli is not installed" in (a["apst"].note or "")
    assert a["power_state"].status == "unavailable" and "nvme-cli is not installed" in (a["power_state"].note or "")
    put(host.sys / "module/nvme_core/parameters/default_ps_max_latency_us", "0\n")
    assert host.item("apst").status == "ok"


@pytest.mark.parametrize("speed,width", [("2.5 GT/s PCIe", "4"), ("8.0 GT/s PCIe", "2")])
def test_a_link_below_its_maximum_speed_or_width_is_degraded(host: Host, speed: str, width: str) -> None:
    put(host.sys / FUNCTION / "current_link_speed", speed + "\n")
    put(host.sys / FUNCTION / "current_link_width", width + "\n")
    i = host.item("pcie_link")
    assert (i.status, i.warning) == ("warn", "link-degraded") and "maximum 8 GT/s x4" in (i.value or "")


def test_cpus_off_the_devices_node_are_numa_remote_on_a_machine_of_two_nodes(host: Host) -> None:
    assert host.item("numa_node", cpus=(2, 3)).warning == "numa-remote"
    assert host.item("numa_node", cpus=(1, 2)).status == "ok"  # one of the run's CPUs is on the node
    for d in (host.sys / "devices/system/node/node1").iterdir():
        d.unlink()
    (host.sys / "devices/system/node/node1").rmdir()
    i = host.item("numa_node", cpus=(2, 3))
    assert i.status == "info" and "one NUMA node" in (i.note or "")


def test_a_governor_other_than_performance_warns_and_tune_names_those_cpus(host: Host) -> None:
    put(host.cpu / "cpu1/cpufreq/scaling_governor", "powersave\n")
    i = host.item("governor")
    assert (i.status, i.warning) == ("warn", "governor")
    assert i.value == "performance on CPUs 0, powersave on CPUs 1"
    assert i.tune == ((str(host.cpu / "cpu1/cpufreq/scaling_governor"), "performance"),)


def test_an_enabled_deep_idle_state_warns_and_tune_disables_it_on_the_runs_cpus(host: Host) -> None:
    for n in range(4):
        put(host.cpu / f"cpu{n}/cpuidle/state2/disable", "0\n")
    i = host.item("cstates", cpus=(1, 2))
    assert (i.status, i.warning) == ("warn", "cstates") and "C2" in (i.note or "")
    assert i.tune == ((str(host.cpu / "cpu1/cpuidle/state2/disable"), "1"),
                      (str(host.cpu / "cpu2/cpuidle/state2/disable"), "1"))


def test_pages_moved_to_swap_during_the_audit_warn(host: Host, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(audit_mod, "_pause", lambda s: put(host.proc / "vmstat", "pswpin 10\npswpout 84\n"))
    i = host.item("swap")
    assert (i.status, i.warning) == ("warn", "swap-active") and "0 pages in, 64 out" in (i.value or "")


def test_every_warning_name_is_one_an_item_raises() -> None:
    raised = {"scheduler", "wbt-on", "apst-on", "link-degraded", "numa-remote", "governor", "cstates", "swap-active"}
    assert set(WARNINGS) == raised


# --- not available here ---------------------------------------------------------------------------------------


def test_without_a_target_the_devices_items_say_so_and_the_rest_are_read(host: Host) -> None:
    a = host.audit(target=None)
    device_items = ["scheduler", "nomerges", "rotational", "read_ahead", "wbt", "poll_queues", "apst",
                    "power_state", "pcie_link", "numa_node"]
    for i in a.items:
        if i.key in device_items:
            assert i.status == "unavailable" and "no target" in (i.note or "")
        else:
            assert i.status in ("ok", "info"), i


def test_a_virtual_machine_without_cpufreq_says_the_host_sets_the_clock(host: Host) -> None:
    for n in range(4):
        for f in (host.cpu / f"cpu{n}/cpufreq").iterdir():
            f.unlink()
        (host.cpu / f"cpu{n}/cpufreq").rmdir()
    (host.cpu / "cpufreq/boost").unlink()
    put(host.proc / "cpuinfo", "processor\t: 0\nflags\t\t: fpu hypervisor sse2\n")
    a = {i.key: i for i in host.audit().items}
    for key in ("governor", "boost"):
        assert a[key].status == "unavailable" and "virtual machine" in (a[key].note or ""), a[key]


def test_a_loop_device_has_no_link_node_or_nvme_settings(host: Host) -> None:
    loop = "devices/virtual/block/loop7"
    put(host.sys / loop / "queue/scheduler", "[none] mq-deadline\n")
    put(host.sys / loop / "loop/backing_file", "/var/tmp/img\n")
    put(host.sys / loop / "stat", "0 " * 17)
    link = host.sys / "dev/block" / f"{NUMBER[0]}:{NUMBER[1]}"
    link.unlink()
    os.symlink(f"../../{loop}", link)
    a = host.audit()
    found = {i.key: i for i in a.items}
    assert a.device == "loop7" and "a loop device backed by /var/tmp/img" in (a.about or "")
    assert found["scheduler"].status == "ok"
    assert "no PCIe function" in (found["pcie_link"].note or "")
    assert "names a NUMA node" in (found["numa_node"].note or "")
    assert "not an NVMe namespace" in (found["apst"].note or "")
    assert "not an NVMe namespace" in (found["power_state"].note or "")
    assert host.nvme.calls == []


def test_a_partition_reads_its_disks_queue(host: Host) -> None:
    put(host.sys / NAMESPACE / "nvme0n1p1" / "partition", "1\n")
    put(host.sys / NAMESPACE / "nvme0n1p1" / "stat", "0 " * 17)
    link = host.sys / "dev/block" / f"{NUMBER[0]}:{NUMBER[1]}"
    link.unlink()
    os.symlink(f"../../{NAMESPACE}/nvme0n1p1", link)
    put(host.queue / "wbt_lat_usec", "2000\n")
    a = host.audit()
    assert a.device == "nvme0n1p1" and "a partition of nvme0n1" in (a.about or "")
    assert a.warned("wbt-on") is not None and a.warned("wbt-on").tune[0][0] == str(host.queue / "wbt_lat_usec")  # type: ignore[union-attr]
    assert {i.key: i for i in a.items}["apst"].status == "ok"  # the namespace's controller was asked


def test_a_kernel_without_wbt_says_so(host: Host) -> None:
    (host.queue / "wbt_lat_usec").unlink()
    i = host.item("wbt")
    assert i.status == "unavailable" and "CONFIG_BLK_WBT" in (i.note or "")


def test_in_a_container_the_note_says_whose_sysfs_was_read(host: Host) -> None:
    a = host.audit(engine="docker")
    assert a.container and "docker container" in a.container and "host kernel's sysfs" in a.container
    assert "read-only" not in a.container
    put(host.proc / "self/mountinfo", f"22 1 0:21 / {host.sys} ro,nosuid - sysfs sysfs ro\n")
    assert "mounted read-only" in (host.audit(engine="docker").container or "")
    (host.sys / "dev/block" / f"{NUMBER[0]}:{NUMBER[1]}").unlink()
    a = host.audit(engine="podman")
    assert a.device is None and "--privileged" in (a.container or "")
    assert {i.key: i for i in a.items}["scheduler"].status == "unavailable"
    assert host.audit().container is None


# --- both CPU vendors' boost switches ---------------------------------------------------------------------------


def test_boost_through_acpi_cpufreq_or_amd_pstate(host: Host) -> None:
    assert host.item("boost").value == "on (acpi-cpufreq: boost 1)"
    put(host.cpu / "cpufreq/boost", "0\n")
    assert host.item("boost").value == "off (acpi-cpufreq: boost 0)"
    (host.cpu / "cpufreq/boost").unlink()  # amd-pstate on a newer kernel: a switch per policy
    put(host.cpu / "cpu0/cpufreq/scaling_driver", "amd-pstate-epp\n")
    put(host.cpu / "cpu0/cpufreq/boost", "1\n")
    assert host.item("boost").value == "on (amd-pstate-epp: boost 1)"


def test_boost_through_intel_pstate_no_turbo(host: Host) -> None:
    (host.cpu / "cpufreq/boost").unlink()
    put(host.cpu / "intel_pstate/no_turbo", "1\n")
    assert host.item("boost").value == "off (intel_pstate/no_turbo 1)"
    put(host.cpu / "intel_pstate/no_turbo", "0\n")
    assert host.item("boost").value == "on (intel_pstate/no_turbo 0)"
    for n in range(4):
        (host.cpu / f"cpu{n}/cpufreq/scaling_driver").unlink()
    (host.cpu / "intel_pstate/no_turbo").unlink()
    i = host.item("boost")
    assert i.status == "unavailable" and "no CPU frequency driver" in (i.note or "")


# --- hostile text -----------------------------------------------------------------------------------------------


def test_escape_sequences_a_huge_file_a_symlink_and_non_numbers_read_as_unavailable(host: Host, tmp_path: Path) -> None:
    put(host.queue / "scheduler", "\x1b]0;owned\x07[none] mq-deadline\n")
    put(host.queue / "read_ahead_kb", "9" * 100_000)
    (host.queue / "nomerges").unlink()
    secret = put(tmp_path / "secret", "2\n")
    os.symlink(secret, host.queue / "nomerges")
    put(host.queue / "rotational", "zero\n")
    put(host.sys / FUNCTION / "current_link_width", "-4\n")
    put(host.cpu / "cpu0/cpuidle/state1/name", "C1\x1b[2J\n")
    put(host.proc / "self/numa_maps", "\x00\x01 garbage\n")
    host.nvme = FakeNvme({"id-ctrl": "apsta : \x1b[31m1\n" + "x" * 70_000, "2": "Current value:zz\n"})
    found = {i.key: i for i in host.audit().items}
    assert "printable" in (found["scheduler"].note or "")
    assert "more than 256 bytes" in (found["read_ahead"].note or "")
    assert "symbolic link" in (found["nomerges"].note or "")
    assert "not a whole number" in (found["rotational"].note or "")
    assert "not a whole number" in (found["pcie_link"].note or "")
    assert "printable" in (found["cstates"].note or "")
    assert "no line with a policy" in (found["numa_policy"].note or "")
    assert found["apst"].status == "ok"  # the driver's own setting (0) stands when nvme-cli's answer does not parse
    assert "no current value" in (found["power_state"].note or "")
    for i in found.values():
        for text in (i.value, i.note):
            assert text is None or (text.isprintable() and "\x1b" not in text and len(text) <= audit_mod.MAX_TEXT)


def test_a_reader_that_fails_unexpectedly_makes_its_item_unavailable(host: Host,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(c: object) -> Item:
        raise ZeroDivisionError("boom")

    monkeypatch.setitem(audit_mod.READERS, "thp", broken)
    i = host.item("thp")
    assert i.status == "unavailable" and "ZeroDivisionError" in (i.note or "")


@settings(max_examples=80, deadline=None)
@given(data=st.binary(max_size=300) | st.text(max_size=80).map(str.encode))
def test_any_bytes_in_an_attribute_or_a_tools_answer_parse_or_are_unreadable(data: bytes,
                                                                            tmp_path_factory: pytest.TempPathFactory
                                                                            ) -> None:
    path = tmp_path_factory.getbasetemp() / "attribute"
    path.write_bytes(data)
    for parse in (audit_mod.read_line, audit_mod.read_int, audit_mod._bracketed):
        try:
            got = parse(path)
        except audit_mod.Unreadable as e:
            assert str(e).isprintable() or str(path) in str(e)
            continue
        texts = [got] if isinstance(got, (str, int)) else [got[0], *got[1]]
        assert all(str(t).isprintable() and len(str(t)) <= audit_mod.MAX_ATTR_BYTES for t in texts)
    text = data.decode("utf-8", "replace")
    for parse_answer in (lambda: audit_mod._feature(text, "x"), lambda: audit_mod._id_ctrl_field(text, "apsta")):
        try:
            assert 0 <= parse_answer() < 1 << 64
        except audit_mod.Unreadable:
            pass
