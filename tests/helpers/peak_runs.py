"""Results lines of a peak run made by hand: the io_uring option keys on the point (``registerfiles``, ``fixedbufs``,
``sqthread_poll``, ``hipri``, ``cpus``) and a ``host_cpu`` part shaped as the results-line contract says
(``cpus``, ``window_s``, ``busy_s``, ``steal_s``, ``busy_cpus``, ``iops_per_busy_cpu``)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Sequence

from app.model.records import ResultLine, read_line
from tests.helpers.compare_util import POINT

LIBAIO: dict[str, Any] = {"ioengine": "libaio"}
URING: dict[str, Any] = {"ioengine": "io_uring"}
REGISTERED: dict[str, Any] = {**URING, "registerfiles": True, "fixedbufs": True}
SQPOLL: dict[str, Any] = {**REGISTERED, "sqthread_poll": True}
HIPRI: dict[str, Any] = {**REGISTERED, "hipri": True}


def host_cpu(busy_cpus: float, ios: float, cpus: str = "0-1", window_s: float = 10.0, **more: Any) -> dict[str, Any]:
    busy_s = busy_cpus * window_s
    return {"cpus": cpus, "window_s": window_s, "busy_s": busy_s, "steal_s": 0.0, "busy_cpus": busy_cpus,
            "iops_per_busy_cpu": round(ios / busy_s, 1) if busy_s else None, **more}


def line(index: int, config: dict[str, Any], qd: int, iops: float, lat_us: float, jobs: int = 1,
         cpu_pct: float | None = 40.0, busy: float | None = None, host: dict[str, Any] | None = None,
         **point: Any) -> dict[str, Any]:
    """A 4 KiB randread line of ``iops`` at QD``qd`` × ``jobs``; fio's usr+sys ``cpu_pct`` per job (split 1:3),
    ``iops_per_cpu`` from it; a host_cpu part of ``busy`` CPUs (or ``host`` as given)."""
    runtime = 10
    ios = iops * runtime
    pt = {**POINT, "runtime": runtime, **config, "iodepth": qd, "numjobs": jobs, "cpus": "0-1", **point}
    m: dict[str, Any] = {"iops": iops, "read_iops": iops, "write_iops": 0.0, "bw_bytes": iops * 4096,
                         "lat_ns": {"mean": lat_us * 1e3, "p99": lat_us * 3e3}, "total_ios": ios, "jobs": jobs}
    if cpu_pct is not None:
        m.update(usr_cpu=cpu_pct / 4, sys_cpu=cpu_pct * 3 / 4)
        secs = cpu_pct / 100 * jobs * runtime
        if secs >= 0.01:
            m["iops_per_cpu"] = round(ios / secs, 1)
    out: dict[str, Any] = {"kind": "storage", "index": index, "point": pt, "metrics": m, "target": "/dev/loop9"}
    if host is not None:
        out["host_cpu"] = host
    elif busy is not None:
        out["host_cpu"] = host_cpu(busy, ios)
    return out


def lines_of(raw: Sequence[dict[str, Any]]) -> list[ResultLine]:
    return [read_line(json.dumps(x)) for x in raw]


def qd_sweep(start: int, config: dict[str, Any], iops: Sequence[float], lat: Sequence[float],
             busy: Sequence[float] | None = None, qds: Sequence[int] = (16, 32, 64, 128), jobs: int = 1,
             cpu_pct: float | None = 40.0) -> list[dict[str, Any]]:
    return [line(start + i, config, qd, v, la, jobs=jobs, cpu_pct=cpu_pct, busy=None if busy is None else busy[i])
            for i, (qd, v, la) in enumerate(zip(qds, iops, lat))]


def peak_lines() -> list[dict[str, Any]]:
    """A device-bound peak run: io_uring with registered files and fixed buffers flattens at QD64 on a device
    that is busy the whole window, its CPUs half idle; libaio costs more CPU per I/O; sqpoll burns a CPU."""
    out = qd_sweep(0, LIBAIO, [150e3, 250e3, 300e3, 305e3], [100, 120, 200, 400], busy=[0.8, 1.1, 1.2, 1.2])
    out += qd_sweep(4, URING, [170e3, 280e3, 330e3, 335e3], [90, 110, 190, 380], busy=[0.7, 1.0, 1.1, 1.1])
    out += qd_sweep(8, REGISTERED, [180e3, 300e3, 360e3, 362e3], [85, 105, 175, 350], busy=[0.6, 0.9, 1.0, 1.0])
    for x in out[8:]:
        x["device"] = {"name": "loop9", "source": "target", "busy_ms": 9990, "window_s": 10.0, "lat_mean_ns": 170e3}
    out += qd_sweep(12, SQPOLL, [200e3, 310e3, 350e3, 352e3], [80, 100, 180, 360], busy=[1.4, 1.5, 1.6, 1.6],
                    cpu_pct=25.0)
    return out


def write_run(path: Path, lines: Sequence[dict[str, Any]], preset: str = "peak",
              skipped: Sequence[dict[str, Any]] = ()) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    (path / "raw").mkdir(exist_ok=True)
    plan = [x["point"] for x in lines] + [s["point"] for s in skipped]
    entries = [{"index": len(lines) + i, **s} for i, s in enumerate(skipped)]
    meta: dict[str, Any] = {"tool": "profiler-tui", "preset": {"name": preset, "kind": "storage"}, "kind": "storage",
                            "plan": plan, "points_total": len(plan), "points_done": len(lines), "target": "/dev/loop9",
                            "status": "complete", "skipped": entries}
    (path / "run.json").write_text(json.dumps(meta, indent=1))
    (path / "results.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    return path


HIPRI_SKIP: dict[str, Any] = {"point": {**POINT, "runtime": 10, **HIPRI, "iodepth": 16, "numjobs": 1, "cpus": "0-1"},
              "reason": "hipri needs poll queues: loop9's queue/io_poll is 0"}
