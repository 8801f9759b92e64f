"""app.model.records: the one reader and the one writer of a results line.

The reader never raises anything but LineError, whatever JSON it is given; a line the tool writes is written
back byte for byte (``write_line(read_line(line)) == line``); a refused line's error is one sentence naming
the file, the line, the key and the value, and exits 2.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from app.core.errors import EXIT_USAGE
from app.model.points import Kind
from app.model.records import (
    PART_KEYS,
    LineError,
    MemoryMetrics,
    Parts,
    ResultLine,
    StorageMetrics,
    line_json,
    read_line,
    write_json,
    write_line,
)

DATA = Path(__file__).resolve().parents[1] / "data" / "report"
# lines the tool wrote (the golden runs), compact as results.jsonl holds them
WRITTEN = [write_json(json.loads(text)) for run in ("golden-run", "telemetry-run")
           for text in (DATA / run / "results.jsonl").read_text().splitlines() if text.strip()]
SETTINGS = settings(derandomize=True, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])

JSON = st.recursive(st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8),
                    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
                    max_leaves=24)
KEYS = st.sampled_from(["kind", "index", "host", "point", "metrics", "raw", "flags", "checks", "steady", "target",
                        "rw", "bs", "iops", "lat_ns", "p99", "latency_ns", "mode", "delay", "engine", "chase"])


def test_the_lines_the_tool_wrote_are_written_back_byte_for_byte() -> None:
    assert len(WRITTEN) > 50
    for text in WRITTEN:
        assert write_line(read_line(text)) == text


@settings(SETTINGS, max_examples=300)
@given(line=st.sampled_from(WRITTEN), data=st.data())
def test_a_line_keeps_what_it_does_not_know_and_its_key_order(line: str, data: st.DataObject) -> None:
    """A newer version's keys (and values of another type where the reader does not refuse them) are kept in
    their place, so a line of an older or newer version is written back as it was."""
    obj = json.loads(line)
    key = data.draw(st.sampled_from(["engine_version", "steady", "telemetry", "future_key", "chase", "wall_s",
                                     "started"]))
    obj[key] = data.draw(JSON.filter(lambda v: not isinstance(v, float) or v == v))  # NaN is no JSON
    text = write_json(obj)
    assert write_line(read_line(text)) == text


@settings(SETTINGS, max_examples=500)
@given(value=JSON | st.dictionaries(KEYS, JSON, max_size=6))
def test_the_reader_raises_nothing_but_its_error_on_any_json(value: object) -> None:
    for obj in (value, {"kind": "storage", "point": {"rw": "read", "bs": 1}, "metrics": {}, "x": value},
                {"kind": "memory", "point": {}, "metrics": value}, {"kind": "storage", "point": value, "metrics": {}}):
        try:
            line = read_line(obj, "d/results.jsonl", 3)
        except LineError as e:
            assert str(e).startswith("d/results.jsonl, line 3: ") and "\n" not in str(e)
            continue
        write_line(line)  # whatever it read, it can write


@settings(SETTINGS, max_examples=300)
@given(base=st.sampled_from(WRITTEN), path=st.sampled_from([("metrics", "iops"), ("metrics", "lat_ns"),
                                                             ("point", "bs"), ("index",), ("host",), ("kind",)]),
       value=JSON)
def test_a_mutated_line_is_read_or_refused_in_one_sentence(base: str, path: tuple[str, ...], value: object) -> None:
    obj = json.loads(base)
    holder = obj
    for k in path[:-1]:
        holder = holder[k]
    holder[path[-1]] = value
    try:
        read_line(write_json(obj), "r/results.jsonl", 7)
    except LineError as e:
        text = str(e)
        assert text.startswith("r/results.jsonl, line 7: ") and text.endswith(".") and "\n" not in text
        assert e.exit_code == EXIT_USAGE


def test_the_error_names_file_line_key_and_value() -> None:
    obj = json.loads(WRITTEN[0])
    obj["metrics"]["iops"] = "fast"
    with pytest.raises(LineError) as e:
        read_line(obj, "run/results.jsonl", 12)
    assert str(e.value) == ("run/results.jsonl, line 12: key 'metrics.iops' has invalid value 'fast': must be a finite "
                            "number from 0 to 2^64.")
    with pytest.raises(LineError, match=r"line 2: key 'kind' has invalid value 'disk': must be storage or memory\."):
        read_line('{"kind": "disk", "point": {}, "metrics": {}}', "r", 2)
    with pytest.raises(LineError, match=r"line 1: is not JSON\."):
        read_line("{torn", "r", 1)


FIGURE = st.none() | st.integers(0, 1 << 40) | st.floats(0, 1e12, allow_nan=False)


@settings(SETTINGS, max_examples=200)
@given(iops=FIGURE, bw=FIGURE, wall=FIGURE, job=st.none() | st.text(max_size=10),
       steady=st.none() | st.dictionaries(st.sampled_from(["attained", "criterion"]),
                                          st.booleans() | st.text(max_size=5)),
       host=st.none() | st.text(min_size=1, max_size=8), latency=FIGURE)
def test_a_line_the_session_builds_reads_back_as_itself(iops: float | None, bw: float | None, wall: float | None,
                                                        job: str | None, steady: dict[str, object] | None,
                                                        host: str | None, latency: float | None) -> None:
    parts = Parts(host=host, wall_s=wall, job=job, steady=steady)
    storage = ResultLine(Kind.STORAGE, {"rw": "read", "bs": 4096}, StorageMetrics.of({"iops": iops, "bw_bytes": bw}),
                         0, 1, parts, {"fio": "raw/0000-read.fio"}, "2026-01-01T00:00:00+00:00", None, "/t/f",
                         None, [], {})
    memory = ResultLine(Kind.MEMORY, {"mode": "idle"}, MemoryMetrics(latency_ns=latency), 1, 1,
                        Parts(engine="builtin", wall_s=wall), {}, None, None)
    for line in (storage, memory):
        text = write_line(line)
        again = read_line(text)
        assert write_line(again) == text
        assert line_json(again) == line_json(line) == json.loads(text)
        assert (again.storage.iops, again.storage.bw_bytes, again.memory.latency_ns, again.parts.steady) == \
               (line.storage.iops, line.storage.bw_bytes, line.memory.latency_ns, line.parts.steady)


def test_a_runner_s_parts_cannot_name_what_the_session_writes() -> None:
    """A runner gives its metrics and its Parts; the point, target, files, times and validity are the session's
    (the memory runner names its engine, and the session names it in the point)."""
    session_keys = {"schema_version", "kind", "index", "point", "metrics", "target", "raw", "started", "ended",
                    "telemetry", "flags", "checks"}
    assert not session_keys & PART_KEYS
    line = ResultLine(Kind.MEMORY, {"mode": "idle", "engine": "builtin"}, MemoryMetrics(latency_ns=90.5), 0, 1,
                      Parts(engine="builtin", command="memlat", job="j", wall_s=1.0,
                            keys=("engine", "command", "job", "wall_s")), {"txt": "raw/0000-j.txt"}, "s", "e")
    assert list(line_json(line)) == ["schema_version", "kind", "index", "point", "metrics", "engine", "command", "job",
                                     "wall_s", "raw", "started", "ended"]
