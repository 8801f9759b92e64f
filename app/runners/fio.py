"""The fio runner: one plan point → one job file → one fio process, streamed live.

The job file written to ``raw/`` is exactly what runs (``fio JOBFILE`` reproduces the job);
output options stay on the command line: ``--output-format=json+ --status-interval=1``.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import time
from typing import Any, AsyncIterator

from app.errors import ToolMissing
from app.results import write_new
from app.runners.base import Child, Context, Result, Sample
from app.runners.fio_parse import PERCENTILE_LIST, DocumentSplitter, SampleTracker, metrics
from app.units import format_size

STATUS_INTERVAL_S = 1


def fio_binary() -> str:
    path = os.environ.get("FIO") or shutil.which("fio")
    if not path:
        raise ToolMissing("fio is not installed; install it (Debian: apt-get install fio) or run `make setup`.")
    return path


def fio_version() -> str:
    try:
        out = subprocess.run([fio_binary(), "--version"], capture_output=True, text=True, timeout=10).stdout
    except (OSError, subprocess.TimeoutExpired):
        return "unknown"
    return out.strip()


def job_name(point: dict[str, Any]) -> str:
    rw = point["rw"]
    if rw in ("rw", "randrw") and point.get("rwmixread") is not None:
        rw = f"{rw}{point['rwmixread']}"
    return f"{rw}-{format_size(point['bs']).lower()}-qd{point['iodepth']}-j{point['numjobs']}"


def _device_size(path: str) -> int | None:
    try:
        if not stat.S_ISBLK(os.stat(path).st_mode):
            return None
        fd = os.open(path, os.O_RDONLY)
        try:
            return os.lseek(fd, 0, os.SEEK_END)
        finally:
            os.close(fd)
    except OSError:
        return None


def job_file(point: dict[str, Any], target: str) -> str:
    """The fio job file of a point (an INI text fio reads as is)."""
    size = point["size"]
    dev_size = _device_size(target)
    if dev_size is not None:
        size = min(size, dev_size)
    glob = [
        f"filename={target}",
        f"ioengine={point['ioengine']}",
        f"direct={int(bool(point['direct']))}",
        f"size={size}",
        f"time_based={int(bool(point['time_based']))}",
        f"runtime={point['runtime']}",
        f"ramp_time={point['ramp_time']}",
        "group_reporting=1",
        "lat_percentiles=1",
        f"percentile_list={PERCENTILE_LIST}",
        "randrepeat=0",
        # jobs as threads of the one fio process, which the kernel kills with profiler-tui
        # (PR_SET_PDEATHSIG); forked job processes would outlive it (each calls setsid)
        "thread=1",
    ]
    job = [
        f"rw={point['rw']}",
        f"bs={point['bs']}",
        f"iodepth={point['iodepth']}",
        f"numjobs={point['numjobs']}",
    ]
    if point.get("rwmixread") is not None and point["rw"] in ("rw", "randrw"):
        job.append(f"rwmixread={point['rwmixread']}")
    lines = ["; written by profiler-tui; run with: fio --output-format=json+ THIS_FILE", "[global]"]
    lines += glob
    lines += ["", f"[{job_name(point)}]"] + job
    return "\n".join(lines) + "\n"


def fio_command(job_path: str) -> list[str]:
    return [fio_binary(), "--output-format=json+", f"--status-interval={STATUS_INTERVAL_S}", "--eta=never", job_path]


class FioRunner:
    kind = "storage"

    def batch_key(self, point: dict[str, Any]) -> object:
        return object()  # every point runs on its own

    def tool_versions(self) -> dict[str, str]:
        return {"fio": fio_version()}

    async def run(self, items: list[tuple[int, dict[str, Any]]], ctx: Context) -> AsyncIterator[Sample | Result]:
        for index, point in items:
            async for event in self.run_point(index, point, ctx):
                yield event

    async def run_point(self, index: int, point: dict[str, Any], ctx: Context) -> AsyncIterator[Sample | Result]:
        assert ctx.target is not None
        text = job_file(point, ctx.target)
        ctx.raw_dir.mkdir(parents=True, exist_ok=True)
        job_path = ctx.raw_dir / f"{index:04d}-{job_name(point)}.fio"
        write_new(job_path, text.encode())  # removed again if the disk is full
        started = time.monotonic()
        child = await Child.start(*fio_command(str(job_path)))
        proc = child.proc
        splitter = DocumentSplitter()
        tracker = SampleTracker()
        last: dict[str, Any] | None = None
        try:
            assert proc.stdout is not None
            while True:
                chunk = await proc.stdout.read(1 << 16)
                if not chunk:
                    break
                for doc in splitter.feed(chunk.decode("utf-8", "replace")):
                    last = doc
                    sample = tracker.update(doc, time.monotonic() - started)
                    if sample is not None:
                        yield Sample(index, sample)
            for doc in splitter.close():
                last = doc
            stderr = await child.finish()
        finally:
            await child.close()
        wall = time.monotonic() - started
        raw: dict[str, str | bytes] = {".fio": text}
        if stderr.strip() or splitter.noise:
            raw[".stderr.txt"] = "\n".join(splitter.noise + [stderr])
        extra = {"wall_s": round(wall, 3), "job": job_name(point)}
        if last is None:
            msg = _fio_message(stderr, splitter.noise) or f"fio exited with status {proc.returncode} and no result"
            yield Result(index, {}, raw, extra, error=msg)
            return
        raw[".json"] = json.dumps(last, indent=1)
        m = metrics(last)
        extra["fio_version"] = last.get("fio version")
        if m.get("errors") or proc.returncode:
            msg = _fio_message(stderr, splitter.noise) or f"fio job error {m.get('errors')}"
            yield Result(index, m, raw, extra, error=msg)
            return
        yield Result(index, m, raw, extra)


def _fio_message(stderr: str, noise: list[str]) -> str:
    lines = [ln.strip() for ln in (stderr.splitlines() + noise) if ln.strip()]
    errs = [ln for ln in lines if "err" in ln.lower() or ln.startswith("fio:")]
    return "; ".join((errs or lines)[:3])
