"""A fake sysfs and procfs for app.host.audit's tests: an NVMe namespace behind a PCIe function on node 0 of a two-node
machine with four CPUs, every setting as a benchmark wants it (a test then bends one)."""

from __future__ import annotations

import os
from pathlib import Path

FUNCTION = "devices/pci0000:00/0000:00:01.0/0000:01:00.0"
NAMESPACE = f"{FUNCTION}/nvme/nvme0/nvme0n1"
NUMBER = (259, 0)


def put(path: Path, text: str | bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(text if isinstance(text, bytes) else text.encode())
    return path


def build(tmp: Path) -> tuple[Path, Path]:
    """(sysfs root, procfs root) under ``tmp``."""
    sys, proc = tmp / "sys", tmp / "proc"
    for name, value in {"current_link_speed": "8.0 GT/s PCIe", "max_link_speed": "8.0 GT/s PCIe",
                        "current_link_width": "4", "max_link_width": "4", "numa_node": "0"}.items():
        put(sys / FUNCTION / name, value + "\n")
    q = sys / NAMESPACE / "queue"
    for name, value in {"scheduler": "[none] mq-deadline kyber", "nomerges": "0", "rotational": "0",
                        "read_ahead_kb": "128", "wbt_lat_usec": "0", "io_poll": "1"}.items():
        put(q / name, value + "\n")
    put(sys / NAMESPACE / "stat", "0 " * 17 + "\n")
    (sys / "dev" / "block").mkdir(parents=True)
    os.symlink(f"../../{NAMESPACE}", sys / "dev" / "block" / f"{NUMBER[0]}:{NUMBER[1]}")
    put(sys / "module/nvme_core/parameters/default_ps_max_latency_us", "0\n")
    put(sys / "module/nvme/parameters/poll_queues", "2\n")
    for node, cpus in ((0, "0-1"), (1, "2-3")):
        put(sys / f"devices/system/node/node{node}/cpulist", cpus + "\n")
    cpu = sys / "devices/system/cpu"
    put(cpu / "cpufreq/boost", "1\n")
    put(cpu / "cpuidle/current_driver", "acpi_idle\n")
    for n in range(4):
        put(cpu / f"cpu{n}/cpufreq/scaling_governor", "performance\n")
        put(cpu / f"cpu{n}/cpufreq/scaling_available_governors", "performance powersave\n")
        put(cpu / f"cpu{n}/cpufreq/scaling_driver", "acpi-cpufreq\n")
        for i, (name, latency) in enumerate((("POLL", 0), ("C1", 1), ("C2", 18))):
            state = cpu / f"cpu{n}/cpuidle/state{i}"
            put(state / "name", name + "\n")
            put(state / "latency", f"{latency}\n")
            put(state / "disable", "1\n" if latency > 10 else "0\n")
    put(sys / "kernel/mm/transparent_hugepage/enabled", "always [madvise] never\n")
    put(sys / "kernel/mm/transparent_hugepage/defrag", "always defer defer+madvise [madvise] never\n")
    put(proc / "self/status", "Name:\tpython\nMems_allowed_list:\t0-1\n")
    put(proc / "self/numa_maps", "55d0c0000000 default file=/usr/bin/python3 mapped=1 N0=1\n"
                                 "7ffd4a000000 default stack anon=3 dirty=3 N0=3 kernelpagesize_kB=4\n")
    put(proc / "self/mountinfo", "22 1 0:21 / /sys rw,nosuid - sysfs sysfs rw\n")
    put(proc / "meminfo", "MemTotal:        4000000 kB\nSwapTotal:       1048576 kB\nSwapFree:        1048576 kB\n")
    put(proc / "vmstat", "nr_free_pages 1000\npswpin 10\npswpout 20\n")
    put(proc / "cpuinfo", "processor\t: 0\nvendor_id\t: AuthenticAMD\nflags\t\t: fpu sse2\n")
    return sys, proc
