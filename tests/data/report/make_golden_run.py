"""Assemble tests/data/report/golden-run/ from real results directories (run once, checked in).

    profiler-tui run custom --set rw=randread,randwrite,randrw --set rwmixread=70 \
        --set bs=4k,64k --set iodepth=1,4,16 --set runtime=1 --set size=32m --out /tmp/golden-src --yes
    profiler-tui run mem-idle --engine builtin --out /tmp/golden-mem
    profiler-tui run mem-seed-w --set traffic=W6,W7 --set stride=64 --set duration=1 \
        --engine builtin --out /tmp/golden-mem2
    python tests/data/report/make_golden_run.py /tmp/golden-src /tmp/golden-mem /tmp/golden-mem2

The storage run's run.json (environment, target) is kept, with the machine-specific paths
replaced by fixed ones; the memory directories' points are appended.  raw/ is not copied: the
report reads run.json and results.jsonl only.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
FIXED_TARGET = "/srv/profiler-tui/profiler-tui.testfile"


def main(storage: str, *memory: str) -> None:
    out = HERE / "golden-run"
    out.mkdir(exist_ok=True)
    meta = json.loads((Path(storage) / "run.json").read_text())
    old_target = meta["target"]
    records = [json.loads(x) for x in (Path(storage) / "results.jsonl").read_text().splitlines() if x.strip()]
    for m in memory:
        mm = json.loads((Path(m) / "run.json").read_text())
        meta["tools"].update(mm.get("tools") or {})
        meta["plan"] += mm["plan"]
        for x in (Path(m) / "results.jsonl").read_text().splitlines():
            if x.strip():
                rec = json.loads(x)
                rec["index"] = len(records)
                records.append(rec)
    meta["kind"] = "mixed"
    meta["points_total"] = meta["points_done"] = len(records)
    meta["preset"]["source"] = "presets/custom.toml"
    text = json.dumps(meta, indent=2).replace(old_target, FIXED_TARGET)
    text = text.replace(str(Path(old_target).parent), str(Path(FIXED_TARGET).parent))
    meta = json.loads(text)
    for key in ("memory_engine_path",):
        if key in meta["tools"]:
            meta["tools"][key] = "native/memlat/build/memlat"
    (out / "run.json").write_text(json.dumps(meta, indent=2) + "\n")
    lines = []
    for rec in records:
        if rec.get("kind") == "storage":
            rec["target"] = FIXED_TARGET
        if "command" in rec:
            rec["command"] = rec["command"].replace(str(Path.cwd()) + "/", "")
        lines.append(json.dumps(rec, separators=(",", ":")))
    (out / "results.jsonl").write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main(*sys.argv[1:])
