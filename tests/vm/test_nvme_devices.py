"""The device list and its verdicts on a real NVMe drive and a SATA disk (the kernel's own drivers, lsblk
and blkid without udev), as a user runs ``profiler-tui devices``."""

from __future__ import annotations

import json

from vm_guest import Guest


def test_devices_json_lists_the_nvme_namespaces_and_the_sata_disk(lab: Guest) -> None:
    done = lab.tool("devices", "--json", check=True)
    devices = {d["name"]: d for d in json.loads(done.out)}
    nvme = devices["nvme0n1"]
    assert nvme["model"] == "QEMU NVMe Ctrl" and nvme["serial"] == "PTUI-NVME-0001"
    assert nvme["size"] == 256 << 20 and nvme["transport"] == "nvme"
    assert devices["nvme0n2"]["size"] == 128 << 20
    sata = devices["sda"]
    assert sata["transport"] == "sata" and sata["model"] == "PTUI SATA DISK" and sata["size"] == 128 << 20
