"""A trend's "not judged" reason is shown whole: never cut, so never mid-word ("20 samp…") or mid-figure
("… the …"); several reasons of one sentence are said in fewer words instead."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from app.core.sanitize import cut_at_word
from app.report.compute import verdict as vd
from app.report.data.model import load
from app.report.sections import trends
from tests.helpers.tail_runs import storage_line, write_run


def _mix_run(tmp_path: Path) -> Path:
    """randread against randwrite at four block sizes, two replicates each, spread too wide to judge a 10 %
    difference (each block size a different spread, so each test a different reason)."""
    lines: list[dict[str, Any]] = []
    for rep in (1, 2):
        for k, bs in enumerate((4096, 16384, 65536, 131072)):
            for rw in ("randread", "randwrite"):
                spread = 0.04 * (k + 1) * (1 if rep == 1 else -1)
                ios = int(100_000 * (1 + spread) * (1.0 if rw == "randread" else 1.02))
                lines.append(storage_line(len(lines), ios, 40_000.0, rw=rw, bs=bs, iodepth=16, replicate=rep))
    return write_run(tmp_path / "r", lines)


def test_the_reasons_of_a_mix_sentence_are_whole(tmp_path: Path) -> None:
    data = load(_mix_run(tmp_path))
    (sentence,) = trends.mix_trends(data.path, data.storage)
    assert "…" not in sentence.replace(" … ", "")  # an interval's "a … b" is no cut
    assert sentence.endswith("needed).")
    why = sentence.split("not judged: ", 1)[1]
    assert why.startswith(vd.TOO_FEW)
    # the four tests' reasons said once, with the range of what they could see
    assert re.search(r"the 4 tests see only (a [\d–]+ %|a [\d–]+-fold|differences (from|over) .*?) difference"
                     r"|the 4 tests see only differences over 1000-fold 80 % of the time \(10 % needed\)", why), why
    assert not re.search(r"\d{5,} %", why)  # a size, never a ten-digit per cent


def test_a_long_reason_is_not_cut() -> None:
    reason = ("too few samples: with 3 s and 4 s kept after the warm-up cut of 17 s and 16 s (the first 20 s of "
              "each point were ramp), and the batch means of 1 s each correlated at lag 1 by 0.62 and 0.71, the test "
              "sees only a 24 % difference 80 % of the time (10 % needed)")
    text = trends.unjudged(vd.Verdict(vd.NOT_JUDGED, 0.05, reason))
    assert text == f", not judged: {reason}"


def test_a_cut_never_ends_on_a_bare_figure() -> None:
    """The shared cut (app.core.sanitize.cut_at_word) keeps a figure with its unit, or leaves both out."""
    text = "too few samples: 20 samples of 1 s each"
    assert cut_at_word(text, 24) == "too few samples…"
    assert cut_at_word(text, 29) == "too few samples: 20 samples…"
    assert cut_at_word("the test sees only a 24 % difference", 25) == "the test sees only a…"
