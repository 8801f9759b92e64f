"""app.engine.replay without a terminal: the samples reader (hostile input, Hypothesis), the timeline, the player."""

from __future__ import annotations

import asyncio
import json
import math
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from app.engine import replay
from app.engine.replay import FIGURES, MAX_PROBLEMS, MAX_SAMPLE_LINE, ReplayClock, Step, parse_samples, play
from app.runners.base import Phase, Sample

SHOWN = "raw/0000-read.samples.jsonl"

figure = st.one_of(st.none(), st.floats(min_value=0, max_value=1e15, allow_nan=False), st.integers(0, 10**12))


@st.composite
def sample_lists(draw: st.DrawFn) -> list[dict[str, Any]]:
    """Samples as fio's reader writes them: t non-decreasing, figures finite ≥ 0 or null."""
    n = draw(st.integers(0, 30))
    t = 0.0
    out = []
    for _ in range(n):
        t += draw(st.floats(min_value=0, max_value=5, allow_nan=False))
        s: dict[str, Any] = {"t": t}
        for key in draw(st.lists(st.sampled_from(FIGURES), unique=True)):
            s[key] = draw(figure)
        if draw(st.booleans()):
            s["ramp"] = draw(st.booleans())
        out.append(s)
    return out


def lines(samples: list[dict[str, Any]]) -> bytes:
    return b"".join(json.dumps(s).encode() + b"\n" for s in samples)


def expected(s: dict[str, Any]) -> dict[str, Any]:
    """What the reader keeps of a good sample: t and the figures as floats, null figures and ramp=false left out."""
    out: dict[str, Any] = {"t": float(s["t"])}
    out.update({k: float(v) for k, v in s.items() if k in FIGURES and v is not None})
    if s.get("ramp"):
        out["ramp"] = True
    return out


@given(sample_lists())
def test_good_lines_come_back_as_written(samples: list[dict[str, Any]]) -> None:
    read = parse_samples(lines(samples), SHOWN)
    assert read.problems == []
    assert read.samples == [expected(s) for s in samples]


@given(sample_lists(), st.integers(0, 30), st.sampled_from([
    ({"t": "1"}, "t"), ({"t": -1}, "t"), ({"t": 1, "iops": "many"}, "iops"), ({"t": 1, "bw_bytes": -5}, "bw_bytes"),
    ({"t": 1, "lat_p99_ns": True}, "lat_p99_ns"), ({"t": 1, "ramp": "yes"}, "ramp"),
    ({"t": 1, "steady": {"window_s": "x"}}, "steady.window_s"), ({"t": 1, "steady": [1]}, "steady"),
]))
def test_a_bad_line_is_named_by_file_line_and_key_and_skipped(samples: list[dict[str, Any]], at: int,
                                                             bad: tuple[dict[str, Any], str]) -> None:
    at = min(at, len(samples))
    obj, key = bad
    # t of the bad line not before the one before it, so the named key is the only fault
    obj = {**obj, "t": obj["t"] if not isinstance(obj["t"], (int, float)) or obj["t"] < 0
           else (samples[at - 1]["t"] if at else 0.0)}
    data = lines(samples[:at]) + json.dumps(obj).encode() + b"\n" + lines(samples[at:])
    read = parse_samples(data, SHOWN)
    assert read.samples == [expected(s) for s in samples]
    assert len(read.problems) == 1
    assert read.problems[0].startswith(f"{SHOWN}, line {at + 1}, key '{key}': ")
    assert read.problems[0].endswith("the line is skipped.")


@settings(max_examples=300)
@given(st.binary(max_size=2000) | st.lists(st.sampled_from([b"{", b"}", b'"t"', b":", b"1e999", b"-1", b"\n", b"null",
                                                           b'"iops"', b",", b"[", b"]", b"\xff", b"1.5", b"\x1b[31m"]),
                                           max_size=80).map(b"".join))
def test_any_bytes_give_sane_samples_and_one_sentence_per_problem(data: bytes) -> None:
    read = parse_samples(data, SHOWN)
    last = -1.0
    for s in read.samples:
        assert set(s) <= {"t", "ramp", "steady", *FIGURES}
        assert math.isfinite(s["t"]) and s["t"] >= last
        last = s["t"]
        assert all(math.isfinite(s[k]) and s[k] >= 0 for k in FIGURES if k in s)
    assert len(read.problems) <= MAX_PROBLEMS + 1
    for p in read.problems:
        assert p.startswith(SHOWN) and "\n" not in p and "\x1b" not in p


def test_a_torn_last_line_is_left_out_silently_and_a_long_line_is_named() -> None:
    good = lines([{"t": 1.0, "iops": 5}])
    assert parse_samples(good + b'{"t": 2.0, "io', SHOWN).samples == [{"t": 1.0, "iops": 5.0}]
    assert parse_samples(good + b'{"t": 2.0, "io', SHOWN).problems == []
    long = b'{"t": 3, "x": "' + b"a" * MAX_SAMPLE_LINE + b'"}\n'
    read = parse_samples(good + long, SHOWN)
    assert read.samples == [{"t": 1.0, "iops": 5.0}]
    assert read.problems == [f"{SHOWN}, line 2: is longer than {MAX_SAMPLE_LINE >> 10} KiB; the line is skipped."]


def test_time_going_back_is_named() -> None:
    read = parse_samples(lines([{"t": 2.0}, {"t": 1.0}, {"t": 3.0}]), SHOWN)
    assert [s["t"] for s in read.samples] == [2.0, 3.0]
    assert read.problems == [f"{SHOWN}, line 2, key 't': goes back in time (1 s after 2 s); the line is skipped."]


def test_a_figure_no_device_has_is_named_and_its_line_skipped() -> None:
    """1e307 IOPS is a finite number JSON allows, and it stopped the charts (plotext overflowed): a figure above
    MAX_FIGURE, or a steady-state figure above it, is a bad line like any other."""
    read = parse_samples(lines([{"t": 1, "iops": 5}, {"t": 2, "iops": 1e307}, {"t": 3, "lat_p99_ns": 1e15},
                                {"t": 4, "steady": {"window_s": 1e300}}]), SHOWN)
    assert [s["t"] for s in read.samples] == [1.0, 3.0]
    assert read.problems == [
        f"{SHOWN}, line 2, key 'iops': has value 1e+307, more than any device's figure (at most 1e+15); the line is "
        "skipped.",
        f"{SHOWN}, line 4, key 'steady.window_s': has value 1e+300, not a number from 0 to 1e+15; the line is "
        "skipped."]


def test_only_known_keys_pass_so_no_text_of_the_file_reaches_the_screen() -> None:
    read = parse_samples(lines([{"t": 1, "iops": 1, "host": "\x1b]0;pwned\x07", "note": "\x1b[2J"}]), SHOWN)
    assert read.samples == [{"t": 1.0, "iops": 1.0}]


# --- the timeline ------------------------------------------------------------------------------------


def test_samples_keep_their_own_pace_and_gaps_are_compressed() -> None:
    tl = replay._Timeline()
    # fio started 30 s before its first measured second (a layout): compressed to GAP_S; then 1 s apart,
    # and a 20 s hole (lines missing) is compressed too
    samples = [{"t": 31.0, "interval_s": 1.0}, {"t": 32.0, "interval_s": 1.0}, {"t": 52.0, "interval_s": 1.0}]
    tl.samples_of(0, samples, 0.0)
    at = [s.at for s in tl.steps if isinstance(s.event, Sample)]
    assert at == [1.0 + replay.GAP_S, 2.0 + replay.GAP_S, 3.0 + 2 * replay.GAP_S]
    phases = [s.event for s in tl.steps if isinstance(s.event, Phase)]
    assert [p.phase for p in phases] == ["measuring"]  # said once, at the point's start


def test_the_samples_own_timestamps_set_the_pace_and_a_hostile_interval_is_bounded() -> None:
    tl = replay._Timeline()
    # as fio wrote them: a first interval shorter than a second, a last one cut short at the runtime's end;
    # then a line claiming a billion-second interval after a billion-second jump
    samples = [{"t": 1.161, "interval_s": 0.858}, {"t": 2.161, "interval_s": 1.0}, {"t": 2.35, "interval_s": 0.188},
               {"t": 1e9, "interval_s": 1e9}]
    tl.samples_of(0, samples, 0.0)
    at = [s.at for s in tl.steps if isinstance(s.event, Sample)]
    assert at[:3] == pytest.approx([1.161, 2.161, 2.35])
    assert at[3] - at[2] == pytest.approx(replay.MAX_INTERVAL_S + replay.GAP_S)


def test_ramp_seconds_replay_as_the_ramp_phase() -> None:
    tl = replay._Timeline()
    tl.samples_of(3, [{"t": 1.0, "ramp": True}, {"t": 2.0, "ramp": True}, {"t": 3.0}], 2.0)
    phases = [(s.event.phase, s.event.done, s.event.total) for s in tl.steps if isinstance(s.event, Phase)]
    assert phases == [("ramp", 0.0, 2.0), ("ramp", 1.0, 2.0), ("ramp", 2.0, 2.0), ("measuring", None, None)]


# --- the clock and the player ----------------------------------------------------------------------------


class FakeTime:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now

    async def sleep(self, s: float) -> None:
        self.now += s


def test_the_clock_keeps_its_position_across_speed_changes_and_pauses() -> None:
    t = FakeTime()
    clock = ReplayClock(10, t)
    t.now += 1
    assert clock.position() == 10
    assert clock.step_speed(up=True) == 30
    t.now += 1
    assert clock.position() == 40
    assert clock.toggle_pause() is True
    t.now += 5
    assert clock.position() == 40 and clock.wall_until(50) is None
    clock.toggle_pause()
    assert [clock.step_speed(up=False) for _ in range(5)] == [10, 5, 2, 1, 1]
    assert [clock.step_speed(up=True) for _ in range(7)] == [2, 5, 10, 30, 60, 60, 60]


def test_play_hands_out_each_event_at_its_time_divided_by_the_speed() -> None:
    t = FakeTime()
    clock = ReplayClock(10, t)
    steps = [Step(at, f"e{at}") for at in (0.0, 1.0, 2.5, 2.5, 30.0)]
    seen: list[tuple[str, float]] = []

    async def run() -> None:
        async for ev in play(steps, clock, t.sleep):
            seen.append((str(ev), round(t.now - 100.0, 6)))

    asyncio.run(run())
    assert seen == [("e0.0", 0.0), ("e1.0", 0.1), ("e2.5", 0.25), ("e2.5", 0.25), ("e30.0", 3.0)]
