"""``profiler-tui audit`` on a loop device made for the test (always detached again): every item has a value or
says why it is not available here, the loop device's own queue is read, and the system's items are this machine's."""

from __future__ import annotations

import json
import re
from pathlib import Path

from app.host.audit import ITEMS
from tests.conftest import run_cli
from tests.helpers.loopdev import loop_factory, needs_loop  # noqa: F401 - a fixture and the skip mark


@needs_loop
def test_audit_of_a_loop_device_lists_every_item_with_a_value_or_a_reason(loop_factory) -> None:
    dev = loop_factory(size_mb=16)
    done = run_cli("audit", dev.path, "--json", "--cpus", "0", timeout=60)
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
    data = json.loads(done.stdout)
    name = Path(dev.path).name
    assert data["device"] == name and data["cpus"] == "0" and "a loop device backed by" in data["about"]
    items = {i["key"]: i for i in data["items"]}
    assert list(items) == list(ITEMS)
    for i in items.values():
        assert (i["value"] if i["status"] != "unavailable" else i["note"]) and i["want"] and i["why"], i
    queue = Path("/sys/block") / name / "queue"
    offered = (queue / "scheduler").read_text()
    chosen = re.search(r"\[(\S+)\]", offered)
    assert items["scheduler"]["value"] == (chosen.group(1) if chosen else offered.strip())
    assert items["rotational"]["value"].startswith((queue / "rotational").read_text().strip())
    for key in ("apst", "power_state"):
        assert items[key]["status"] == "unavailable" and "not an NVMe namespace" in items[key]["note"]
    assert items["pcie_link"]["status"] == "unavailable" and "no PCIe function" in items["pcie_link"]["note"]
    assert items["thp"]["value"].startswith("enabled ") and items["swap"]["status"] in ("ok", "warn")

    table = run_cli("audit", dev.path, timeout=60)  # the plain table (not a terminal): every item's label
    assert table.returncode == 0 and all(label in table.stdout for label in ITEMS.values()), table.stdout
