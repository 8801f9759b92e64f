"""What the MLC text parser made of the recorded MLC outputs in tests/data/mlc and of deterministic
mutations of them (lines dropped, repeated, cut, re-indented with tabs, upper-cased), fed whole and in
7-character pieces (sections, rows, the streamed figures, warnings); and of a few command lines.
``python -m tests.helpers.mlc_recorded`` rewrites the expectation file — only when a change of the parser's
results is intended."""

from __future__ import annotations

import dataclasses
import json
import random
from pathlib import Path
from typing import Any

from app.runners.mlc_parse import LineParser, parse_command_line

DATA = Path(__file__).resolve().parents[1] / "data"
EXPECTED = DATA / "mlc_expected" / "parsed.json"
COMMAND_LINES = ("--loaded_latency -W6 -l256 -d0", "-R -b4k -t 2.5 -k1-3 -c0", "--idle_latency -b 2g -D 0,100,x",
                 "-W 6 -l", "--foo=bar -e -X -t inf", "'unterminated -W5", "-b zz -t -1 -c 1.5 -D 1,,2")


def texts() -> dict[str, str]:
    out = {p.name: p.read_text() for p in sorted((DATA / "mlc").glob("*.txt"))}
    rnd = random.Random(12)
    for name, text in list(out.items()):
        lines = text.splitlines(True)
        for k in range(6):
            ls = list(lines)
            for _ in range(5):
                i = rnd.randrange(len(ls))
                op = rnd.random()
                if op < 0.3:
                    del ls[i]
                elif op < 0.5:
                    ls.insert(i, ls[rnd.randrange(len(ls))])
                elif op < 0.7:
                    ls[i] = ls[i][: rnd.randrange(len(ls[i]) + 1)]
                elif op < 0.85:
                    ls[i] = "   " + ls[i].replace(" ", "\t")
                else:
                    ls[i] = ls[i].upper()
            out[f"{name} #{k}"] = "".join(ls)
    return out


def _recorded(obj: Any) -> Any:
    """A dataclass as the file records it: a row without the engine's sub-window figures or its own warnings (MLC
    prints neither) as before they were read."""
    d = dataclasses.asdict(obj)
    d.pop("shared_warnings", None)  # a section's count of its shared warnings: derived, not recorded
    for row in [d] + d.get("rows", []):
        if row.get("windows") == {}:
            del row["windows"]
        if "delay" in row and "warnings" in row and not row["warnings"]:  # a row's own '*' lines (MLC's rows have none)
            del row["warnings"]
    return d


def parsed(text: str, piece: int) -> dict[str, Any]:
    p = LineParser()
    rows = []
    for i in range(0, len(text), piece):
        rows += [_recorded(r) for r in p.feed(text[i:i + piece])]
    sections = p.close()
    figures = [[f.kind, list(f.key), f.value, f.unit, p.sections.index(f.section), f.extra] for f in p.figures]
    return {"rows": rows, "sections": [_recorded(s) for s in sections], "warnings": p.warnings,
            "header": p.header, "lines": p.lines, "figures": figures}


def results() -> dict[str, Any]:
    out: dict[str, Any] = {name: [parsed(t, 7), parsed(t, 1 << 20)] for name, t in texts().items()}
    out.update({f"command line {c}": parse_command_line(c) for c in COMMAND_LINES})
    return json.loads(json.dumps(out))  # tuples → lists, as the file has them


if __name__ == "__main__":
    EXPECTED.write_text(json.dumps(results(), indent=1, sort_keys=True) + "\n")
    print(f"wrote {EXPECTED}")
