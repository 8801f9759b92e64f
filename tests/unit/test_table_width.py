"""The CLI's plain tables and lines fit the width they are given (a terminal's, or COLUMNS): headers and text
wrap, trailing text columns move under their rows, a row becomes a card when nothing else fits, and no figure is
ever cut; without a width the table is laid out as it always was."""

from __future__ import annotations

import os
import re
from pathlib import Path

from app.core.textable import fit_line, format_table, table_lines
from app.host.sparse import hole_warning
from app.model.points import StoragePoint
from app.plan import presets
from app.stats.summary import FLAG_MARK, flag_legend, flag_text

HEAD = ["Workload", "Figure", "A", "B", "B/A", "B − A (95 %)", "Noise", "How"]
ROWS = [["randwrite 4K QD32", "Mean µs", "620.63", "1377.54", "2.22×", "+756.91 ± 1678.07", "too few samples",
         "Welch, 3 + 3 runs"],
        ["randrw 70/30 64K QD16", "p99 µs", "18240.85", "17541.80", "0.96×", "", "", "no interval for a percentile"]]
RIGHT = (2, 3, 4, 5)


def _figures(rows: list[list[str]]) -> list[str]:
    return [c for r in rows for i, c in enumerate(r) if i in RIGHT and c]


def test_without_a_width_the_table_is_the_plain_one_of_before() -> None:
    text = format_table(HEAD, ROWS, right=RIGHT)
    lines = text.splitlines()
    assert len(lines) == 4 and lines[1] == "  ".join("-" * len(w) for w in lines[1].split("  ") if w)
    assert text == format_table(HEAD, ROWS, right=RIGHT, width=len(max(lines, key=len)))


def test_every_width_is_kept_and_no_figure_is_cut() -> None:
    for width in (120, 100, 80, 60, 40, 30):
        lines = [line.text for line in table_lines(HEAD, ROWS, RIGHT, width=width)]
        assert all(len(line) <= width for line in lines), (width, lines)
        text = "\n".join(lines)
        for figure in _figures(ROWS):
            assert figure in text, (width, figure, lines)


def test_at_80_columns_the_trailing_text_moves_under_its_row_in_column_order() -> None:
    lines = table_lines(HEAD, ROWS, RIGHT, width=80)
    head = [line.text for line in lines if line.role == "head"]
    assert "How" not in " ".join(head) and "B/A" in head[-1]
    notes = [line.text for line in lines if line.role == "note"]
    assert notes[0] == "  Noise: too few samples · How: Welch, 3 + 3 runs", notes
    wide = table_lines(HEAD, ROWS, RIGHT, width=130)
    assert not [line for line in wide if line.role == "note"] and "How" in wide[0].text, "a wide terminal: all of it"


def test_an_empty_figure_column_keeps_a_two_line_header() -> None:
    rows = [r[:5] + [""] + r[6:] for r in ROWS]
    head = [line.text for line in table_lines(HEAD, rows, RIGHT, width=80) if line.role == "head"]
    assert len(head) <= 2 and any("B − A" in h for h in head) and any("(95 %)" in h for h in head), head


def test_a_point_line_breaks_between_figures_not_inside_one() -> None:
    line = ("[3/4] RND4K Q32T1: randread 1M QD1 T1: 9464 IOPS, 9923.5 MB/s, lat mean 103.5 µs p99 34865.2 µs "
            f"{FLAG_MARK} depth-not-reached, not-on-device")
    fitted = fit_line(line, 80).splitlines()
    assert all(len(x) <= 80 for x in fitted) and len(fitted) > 1
    assert " ".join(x.strip() for x in fitted) == line
    for whole in ("p99 34865.2 µs", "103.5 µs", f"{FLAG_MARK} depth-not-reached", "9923.5 MB/s"):
        assert any(whole in x for x in fitted), (whole, fitted)
    assert fit_line(line, None) == line and fit_line(line, 200) == line


def test_flags_are_marked_and_explained() -> None:
    assert flag_text(["not-on-device", "imprecise"]) == f"{FLAG_MARK} not-on-device, imprecise"
    assert flag_text([]) == ""
    legend = flag_legend(["not-on-device", "not-on-device", "contended"], 80)
    assert len(legend) == 2 and legend[0].startswith(f"{FLAG_MARK} not-on-device: the device's own counters")
    assert all(len(x) <= 80 for line in legend for x in line.splitlines())


def _plan(size: int, rw: str = "read") -> list[StoragePoint]:
    return [p for p in presets.apply_overrides(presets.load("custom"), [f"size={size}", f"rw={rw}"]).expand()
            if isinstance(p, StoragePoint)]


def test_a_sparse_target_is_named_before_a_read_plan(tmp_path: Path) -> None:
    sparse = tmp_path / "sparse.img"
    with open(sparse, "wb") as f:
        f.truncate(64 << 20)
    warning = hole_warning(str(sparse), _plan(64 << 20))
    assert warning is not None and warning.startswith(f"{sparse}: its blocks are unwritten (64 MiB of the 64 MiB")
    assert "reads never reach the device" in warning and "--set precondition=sequential" in warning
    assert hole_warning(str(sparse), _plan(64 << 20, "write")) is None, "a plan that only writes fills it"
    assert hole_warning(str(sparse), _plan(64 << 20), precondition="sequential") is None, "preconditioning fills it"
    written = tmp_path / "written.img"
    written.write_bytes(os.urandom(4 << 20))
    assert hole_warning(str(written), _plan(4 << 20)) is None
    half = tmp_path / "half.img"  # 1 MiB written of the 4 MiB read: mostly holes
    with open(half, "wb") as f:
        f.write(os.urandom(1 << 20))
        f.truncate(4 << 20)
    assert re.search(r"its blocks are unwritten \(3 MiB of the 4 MiB", hole_warning(str(half), _plan(4 << 20)) or "")
    assert hole_warning(str(half), _plan(1 << 20)) is None, "only the region the plan reads counts"
    link = tmp_path / "link.img"
    link.symlink_to(sparse)
    assert hole_warning(str(link), _plan(64 << 20)) is None, "a link is not followed (the run resolves its target)"
    assert hole_warning(str(tmp_path / "absent.img"), _plan(64 << 20)) is None, "a file the tool creates"
