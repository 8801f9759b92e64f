"""Regenerate the MLC text files of this directory from appendix.md (seed report 000's appendix).

Each `### mlc_test_<stride>-W-<n>` table becomes `mlc_test_<stride>-W-<n>.txt` in Intel MLC's
`--loaded_latency` text layout (banner, command line, section title, the tab-separated
Inject/Latency/Bandwidth table).  The numbers are the appendix's, digit for digit; nothing
else is invented: the seed states no MLC version or buffer size, so those lines are left out.
The stride-256 files are written with Windows line endings, as `mlc.exe` would save them.

    python tests/data/seed000/make_mlc.py
"""

from __future__ import annotations

import re
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROW = re.compile(r"^\s*\|?\s*(\d{5})\s*\|\s*([\d.]+)\s*\|\s*([\d.]+)\s*\|?\s*$")


def appendix_tables(text: str) -> dict[str, list[tuple[str, str, str]]]:
    """{"mlc_test_64-W-6": [("00000", "185.86", "71162.7"), ...], ...} — the appendix as printed."""
    tables: dict[str, list[tuple[str, str, str]]] = {}
    name = None
    for line in text.splitlines():
        m = re.match(r"^###\s+(mlc_test_\d+-W-\d+)\s*$", line)
        if m:
            name = m.group(1)
            tables[name] = []
            continue
        m = ROW.match(line.replace("\t", " "))
        if m and name:
            tables[name].append((m.group(1), m.group(2), m.group(3)))
    return tables


def mlc_text(name: str, rows: list[tuple[str, str, str]]) -> str:
    stride, traffic = re.match(r"mlc_test_(\d+)-W-(\d+)", name).groups()  # type: ignore[union-attr]
    lines = [
        "Intel(R) Memory Latency Checker",
        f"Command line parameters: --loaded_latency -W{traffic} -l{stride} ",
        "",
        "Measuring Loaded Latencies for the system",
        "Using all the threads from each core if Hyper-threading is enabled",
        "Inject\tLatency\tBandwidth",
        "Delay\t(ns)\tMB/sec",
        "==========================",
    ]
    lines += [f" {d}\t{lat}\t {bw}" for d, lat, bw in rows]
    return "\n".join(lines) + "\n"


def main() -> None:
    tables = appendix_tables((HERE / "appendix.md").read_text(encoding="utf-8"))
    for name, rows in tables.items():
        text = mlc_text(name, rows)
        newline = "\r\n" if "_256-" in name else "\n"
        (HERE / f"{name}.txt").write_bytes(text.replace("\n", newline).encode())


if __name__ == "__main__":
    main()
