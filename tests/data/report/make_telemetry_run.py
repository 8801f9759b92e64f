"""Make tests/data/report/telemetry-run/ from a real run (run once as root, checked in):

    .venv/bin/python tests/data/report/make_telemetry_run.py

A RAM-backed loop device, presented by a fake sysfs as the namespace of NVMe controller nvme0, its writes
throttled to 200 MB/s and lowered to 40 MB/s three seconds into the write point (what a drive's SLC cache
filling up looks like); a fake ``nvme`` on PATH replays nvme-cli's smart-log JSON
(tests/data/telemetry/nvme-smart-log.json) and raises the T1 thermal-management counter while the write
point runs.  Plan: 128 KiB sequential writes at QD 8 for 9 s, then 4 KiB random reads at QD 4 for 3 s.

Kept: run.json, results.jsonl, raw/*.samples.jsonl, raw/telemetry.jsonl — what the report reads — with the
machine's paths replaced by fixed ones.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
TESTS = HERE.parent.parent
ROOT = TESTS.parent
sys.path.insert(0, str(ROOT))  # the tests and app/ import by their names from the checkout

from tests.helpers.loopdev import loop_device  # noqa: E402 - after the sys.path line above
from tests.helpers.throttle import write_bps_throttle  # noqa: E402 - after the sys.path line above
from tests.integration.test_telemetry import FAKE_NVME, NVME_DIR, fake_tool  # noqa: E402 - after the sys.path line above
from tests.integration.test_validity import fake_sysfs  # noqa: E402 - after the sys.path line above

FIXED_DEVICE = "/dev/nvme0n1"


def main() -> None:
    dest = HERE / "telemetry-run"
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        out = tmp / "out"
        state = tmp / "state"
        state.mkdir()
        fake_tool(tmp / "bin", "nvme", FAKE_NVME)
        preset = tmp / "cliff.toml"
        preset.write_text('name = "cliff"\nkind = "storage"\ndescription = "a write cliff, then reads"\n'
                          '[settings]\nsize = "64m"\nramp_time = 0\n'
                          '[[group]]\nrw = "write"\nbs = "128k"\niodepth = 8\nruntime = 9\n'
                          '[[group]]\nrw = "randread"\nbs = "4k"\niodepth = 4\nruntime = 3\n')
        with (loop_device(tmp, size_mb=64, ram=True) as dev,
              write_bps_throttle(dev.path, 200_000_000) as (enter, set_bps)):
            root = fake_sysfs(tmp / "sys", dev.path, NVME_DIR, {})
            env = {**os.environ, "PROFILER_TUI_SYSFS": str(root), "PATH": f"{tmp / 'bin'}:{os.environ['PATH']}",
                   "FAKE_NVME_STATE": str(state),
                   "FAKE_NVME_DOC": str(TESTS / "data" / "telemetry" / "nvme-smart-log.json"),
                   "FAKE_NVME_HOT_JOB": "/raw/0000-"}
            proc = subprocess.Popen([sys.executable, "-m", "app", "run", str(preset), "--target", dev.path, "--yes",
                                     "--out", str(out), "--set", "telemetry_interval=2"], cwd=ROOT, env=env,
                                    preexec_fn=enter)
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline:
                found = list((out / "raw").glob("0000-*.samples.jsonl")) if (out / "raw").is_dir() else []
                if found and len(found[0].read_text().splitlines()) >= 4:
                    break
                time.sleep(0.05)
            set_bps(40_000_000)
            if proc.wait(timeout=120) != 0:
                raise SystemExit("the run failed")
            old = dev.path
        if dest.exists():
            shutil.rmtree(dest)
        (dest / "raw").mkdir(parents=True)
        for name in ["run.json", "results.jsonl"]:
            text = (out / name).read_text().replace(old, FIXED_DEVICE).replace(str(preset), "presets/cliff.toml")
            text = re.sub(r"/dev/shm/profiler-tui-test-[a-z0-9_]+", "/dev/shm/profiler-tui-replay", text)
            (dest / name).write_text(text)
        for f in sorted((out / "raw").glob("*.samples.jsonl")) + [out / "raw" / "telemetry.jsonl"]:
            shutil.copy(f, dest / "raw" / f.name)
        meta = json.loads((dest / "run.json").read_text())
        if "memory_engine_path" in meta.get("tools", {}):
            meta["tools"]["memory_engine_path"] = "native/memlat/build/memlat"
        (dest / "run.json").write_text(json.dumps(meta, indent=2) + "\n")
    print(f"wrote {dest}")


if __name__ == "__main__":
    main()
