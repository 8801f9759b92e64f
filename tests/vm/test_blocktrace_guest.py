"""The layer split on the QEMU NVMe namespace (a real NVMe driver): bpftrace traces nvme0n1's requests during a
``layers = true`` point; the traced device time agrees with the device counters' mean (Δticks / Δrequests) within
10 %, and the scheduler part is 0 under scheduler ``none``.  Skips with the reason where the guest's kernel does not
allow tracing (no BTF, no bpftrace on the host's root the guest runs from)."""

from __future__ import annotations

import json

import pytest

from vm_guest import ROOT, Guest


def test_the_layer_split_on_the_nvme_namespace_agrees_with_its_counters(lab: Guest) -> None:
    lab.run("mountpoint -q /sys/kernel/tracing || mount -t tracefs nodev /sys/kernel/tracing; "
            "echo none > /sys/block/nvme0n1/queue/scheduler")
    why = lab.run(f"cd /run/xchg && PYTHONPATH={ROOT} {ROOT}/.venv/bin/python -c "
                  "'from app.blocktrace import unavailable; print(unavailable() or \"\")'").out.strip()
    if why:
        pytest.skip(f"in the guest: {why}")
    done = lab.run(f"cd /run/xchg && PYTHONPATH={ROOT} exec {ROOT}/.venv/bin/profiler-tui run custom --yes "
                   "--target /dev/nvme0n1 --out /run/xchg/layers --set rw=randread --set size=64m --set iodepth=4 "
                   "--set runtime=5 --set layers=true", timeout=300, check=False)
    assert done.rc == 0, done.err
    (record,) = [json.loads(x) for x in (lab.xchg / "layers" / "results.jsonl").read_text().splitlines()]
    layers, device = record["layers"], record["device"]
    assert layers["source"] == "ebpf" and layers["device"] == "nvme0n1", layers
    assert abs(layers["device_time"]["mean_ns"] - device["lat_mean_ns"]) <= 0.10 * device["lat_mean_ns"], (
        layers, device)
    assert layers["queue"]["mean_ns"] == 0 and layers["queue"]["p99_ns"] == 0, layers
    assert 0 <= layers["tracer_cpu_share"] < 0.5, layers
