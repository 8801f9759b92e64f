"""The device list and its verdicts on a real NVMe drive and a SATA disk (the kernel's own drivers; lsblk and
blkid without udev), as a user runs ``profiler-tui devices`` and ``run``."""

from __future__ import annotations

import json

import pytest

from tests.helpers.vm_guest import Guest

SCRATCH = "/dev/nvme0n2"  # the lab's namespace for partitions and filesystems


def devices(lab: Guest) -> dict[str, dict]:
    out: dict[str, dict] = {}
    stack = list(json.loads(lab.tool("devices", "--json", check=True).out))
    while stack:
        d = stack.pop()
        out[d["name"]] = d
        stack.extend(d.get("children") or [])
    return out


def test_devices_json_lists_the_nvme_namespaces_and_the_sata_disk_with_their_links(lab: Guest) -> None:
    found = devices(lab)
    nvme = found["nvme0n1"]
    assert nvme["model"] == "QEMU NVMe Ctrl" and nvme["serial"] == "PTUI-NVME-0001"
    assert nvme["size"] == 256 << 20 and nvme["transport"] == "nvme" and nvme["type"] == "disk"
    # the controller sits behind a PCIe root port: the link the kernel trained, read from sysfs
    assert nvme["link"]["kind"] == "pcie" and nvme["link"]["speed"] == "2.5 GT/s" and nvme["link"]["width"] == 1
    assert nvme["link"]["text"] == "PCIe 2.5 GT/s x1" and nvme["link"]["bytes_per_s"] == pytest.approx(250e6)
    assert found["nvme0n2"]["size"] == 128 << 20 and found["nvme0n2"]["link"] == nvme["link"]
    sata = found["sda"]
    assert sata["transport"] == "sata" and sata["model"] == "PTUI SATA DISK" and sata["size"] == 128 << 20
    assert sata["link"]["kind"] == "sata" and sata["link"]["text"].startswith("SATA ")
    for name in ("nvme0n1", "sda"):
        assert found[name]["verdict"] == "ok" and found[name]["read"]["needs_yes"] is True


def refused_write(lab: Guest, *extra: str) -> tuple[int, str]:
    done = lab.tool("run", "custom", "--set", "rw=randwrite", "--set", "runtime=1", "--set", "size=16m", "--yes",
                    "--target", SCRATCH, "--out", "/run/xchg/refused", *extra)
    assert "Traceback" not in done.err
    return done.rc, done.err


def test_a_partitioned_namespace_refuses_writes_while_mounted_and_needs_allow_destructive_after(lab: Guest) -> None:
    lab.run(f"echo 'label: gpt' | sfdisk -q {SCRATCH} && printf ',\\n' | sfdisk -q --append {SCRATCH} && "
            f"mkfs.ext4 -q -F {SCRATCH}p1 && mkdir -p /mnt/p1 && mount {SCRATCH}p1 /mnt/p1")
    try:
        found = devices(lab)
        part = found["nvme0n2p1"]
        assert part["fstype"] == "ext4" and part["mountpoints"] == ["/mnt/p1"] and part["parent"] == SCRATCH
        assert found["nvme0n2"]["pttype"] == "gpt" and found["nvme0n2"]["verdict"] == "refused"
        rc, err = refused_write(lab)
        assert rc == 3 and "mounted" in err and "/mnt/p1" in err, err

        lab.run("umount /mnt/p1")
        found = devices(lab)
        assert found["nvme0n2p1"]["mountpoints"] == [] and found["nvme0n2"]["verdict"] != "ok"
        rc, err = refused_write(lab)
        assert rc == 3 and "--allow-destructive" in err, err
    finally:
        lab.run(f"umount /mnt/p1 2>/dev/null; wipefs -q -a {SCRATCH}p1 2>/dev/null; wipefs -q -a {SCRATCH}; "
                f"blockdev --rereadpt {SCRATCH}", check=False)
    assert lab.run(f"lsblk -n -o NAME {SCRATCH}").out.split() == ["nvme0n2"]  # as the other tests expect it
