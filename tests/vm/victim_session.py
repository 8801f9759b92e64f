"""Run only by tests/vm/test_vm_cleanup.py, in a pytest of its own (the file name keeps the suite from
collecting it): boot a guest, say so in VICTIM_MARKER, wait for MARKER.go, then fail (VICTIM_MODE=fail) or
wait to be killed."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

from tests.helpers.fleet_agents import free_port
from tests.helpers.vm_guest import Guest, Spec
from tests.helpers.vm_image import prepare


def test_victim(tmp_path: Path) -> None:
    port = free_port()
    with Guest(tmp_path / "guest", prepare(), Spec(numa=False, ssh_port=port, memory_mb=256)) as guest:
        assert guest.proc is not None
        Path(os.environ["VICTIM_MARKER"]).write_text(json.dumps({"pid": guest.proc.pid, "port": port,
                                                                 "dir": str(guest.dir)}))
        go = Path(os.environ["VICTIM_MARKER"] + ".go")  # the killer has seen the guest running
        deadline = time.monotonic() + 300
        while not go.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        if os.environ.get("VICTIM_MODE") == "fail":
            raise AssertionError("failing midway, with the guest running")
        time.sleep(600)
