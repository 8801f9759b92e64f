"""``profiler-tui audit`` in the lab guest: the PCIe link and the NUMA node of a real (emulated) NVMe controller
as the guest's kernel trained and placed it, and nvme-cli asked for its power settings."""

from __future__ import annotations

import json
import re

from app.host.audit import ITEMS
from tests.helpers.vm_guest import Guest


def test_audit_reads_the_nvme_drives_link_node_and_power_state_from_the_guest(lab: Guest) -> None:
    done = lab.tool("audit", "/dev/nvme0n1", "--json", "--cpus", "0")
    assert done.rc == 0 and "Traceback" not in done.err, done.err
    data = json.loads(done.out)
    items = {i["key"]: i for i in data["items"]}
    assert data["device"] == "nvme0n1" and list(items) == list(ITEMS)
    for i in items.values():  # every item: a value, or why not here
        assert i["value"] if i["status"] != "unavailable" else i["note"], i
    # the link of the controller's PCIe function, as the guest's sysfs has it: QEMU's root port trains 2.5 GT/s x1
    function = lab.run("readlink -f /sys/block/nvme0n1/device/device").out.strip()
    sysfs = lab.run(f"cd {function} && cat current_link_speed current_link_width max_link_speed max_link_width "
                    "numa_node").out.split("\n")
    link = items["pcie_link"]
    m = re.fullmatch(r"([0-9.]+) GT/s x([0-9]+) \(maximum ([0-9.]+) GT/s x([0-9]+)\) at (\S+)", link["value"])
    assert m, link
    assert (m.group(1), m.group(2)) == ("2.5", "1")
    assert float(sysfs[0].split()[0]) == 2.5 and sysfs[1] == "1"
    assert (float(m.group(3)), m.group(4)) == (float(sysfs[2].split()[0]), sysfs[3])
    assert m.group(5) == function.rsplit("/", 1)[-1]
    degraded = float(m.group(1)) < float(m.group(3)) or int(m.group(2)) < int(m.group(4))
    assert (link["status"] == "warn") == degraded and (link.get("warning") == "link-degraded") == degraded
    # the node the guest's firmware gave the controller (the lab has two nodes)
    node = items["numa_node"]
    if sysfs[4] == "-1":
        assert node["status"] == "info" and node["value"].startswith("none (-1"), node
    else:
        assert node["value"].startswith(f"node {sysfs[4]} "), node
    for i in items.values():
        print(f"guest {i['key']}: {i['status']} {i['value']!r} {i.get('note') or ''}")
    # nvme-cli asked the controller (root in the guest): QEMU's has no APST (id-ctrl apsta 0), power state 0
    assert items["power_state"]["value"] == "PS0", items["power_state"]
    assert items["apst"] == {**items["apst"], "status": "ok", "value": "not supported by the drive (id-ctrl apsta 0)"}
    assert items["governor"]["status"] == "unavailable" and "virtual machine" in items["governor"]["note"]
