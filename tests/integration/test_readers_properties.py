"""Property tests of everything that reads files: the fio JSON parser and importer (random fio-like
documents, random mutations of a real fio output, random bytes) and the results reader (random
run.json and results.jsonl contents through report and compare).  Whatever the input, the outcome
is a result or the tool's own error (ProfilerError) — never another exception.  Seeded
(derandomize), a few thousand cases in all."""

from __future__ import annotations

import json
import shutil
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from app.cli.compare import compare_reference, compare_runs, load_reference
from app.core.errors import ProfilerError
from app.engine.importer import parse_file
from app.report import render_report
from app.report.compute import analysis as an
from app.report.data.model import load
from app.report.render import render_markdown, results_csv
from app.stats.summary import results_table
from app.store.results import ResultsDir
from tests.conftest import DATA
from tests.helpers.readers_util import fio_json_plus

GOLDEN_RUN = DATA / "report" / "golden-run"
SETTINGS = settings(derandomize=True, deadline=None, database=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture,
                                           HealthCheck.data_too_large])

# --- values: plausible ones and junk ------------------------------------------------------------------------

EDGE_NUMBERS = [0, 1, -1, 0.5, 1e-300, 5e-324, 2 ** 64, 2 ** 64 + 1, 1e308, 10 ** 30, float("nan"), float("inf"),
                -float("inf")]
scalars = st.one_of(st.none(), st.booleans(), st.integers(-2 ** 70, 2 ** 70), st.sampled_from(EDGE_NUMBERS),
                    st.floats(allow_nan=True, allow_infinity=True), st.text(max_size=8),
                    st.sampled_from(["abc", "nan", "inf", "4k", "1e308", "-1", "", "randread", "50.000000"]))
junk = st.recursive(scalars, lambda c: st.lists(c, max_size=3) | st.dictionaries(st.text(max_size=6), c, max_size=3),
                    max_leaves=6)


def maybe(good: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    """Mostly a plausible value, sometimes junk."""
    return st.one_of(good, good, good, junk)


counts = st.integers(0, 10 ** 7)
reals = st.floats(0, 1e9, allow_nan=False)
latency = st.fixed_dictionaries({}, optional={
    "N": maybe(counts), "min": maybe(counts), "max": maybe(counts), "mean": maybe(reals), "stddev": maybe(reals),
    "percentile": maybe(st.dictionaries(st.sampled_from(["50.000000", "90.000000", "99.000000", "99.900000",
                                                         "99.990000", "abc", "101", "nan"]), maybe(counts),
                                        max_size=5)),
    "bins": maybe(st.dictionaries(st.from_regex(r"\A[0-9]{1,6}\Z") | st.text(max_size=3), maybe(counts), max_size=5)),
})
direction = st.fixed_dictionaries({}, optional={
    "iops": maybe(reals), "bw_bytes": maybe(reals), "total_ios": maybe(counts), "io_bytes": maybe(counts),
    "runtime": maybe(counts), "lat_ns": maybe(latency), "clat_ns": maybe(latency)})
option_values = st.one_of(st.sampled_from(["randread", "randrw", "read", "rw:4", "4k", "64k,4k", "1", "0", "16",
                                           "libaio", "psync", "10s", "500ms", "8m", "50%", "70", "abc", "1e308",
                                           "99999999999999999999999k", "randread\nexec_prerun=x"]),
                          st.text(max_size=6), st.integers(-5, 2 ** 40))
options = st.dictionaries(st.sampled_from(["rw", "readwrite", "bs", "blocksize", "iodepth", "numjobs", "rwmixread",
                                           "rwmixwrite", "ioengine", "direct", "buffered", "runtime", "ramp_time",
                                           "size", "time_based", "filename", "group_reporting"]),
                          maybe(option_values), max_size=8)
job = st.fixed_dictionaries({}, optional={
    "jobname": maybe(st.sampled_from(["a", "b"])), "groupid": maybe(st.integers(0, 3)),
    "job options": maybe(options), "read": maybe(direction), "write": maybe(direction), "trim": maybe(direction),
    "job_runtime": maybe(counts), "usr_cpu": maybe(reals), "sys_cpu": maybe(reals), "error": maybe(st.integers(0, 5)),
    "hostname": maybe(st.sampled_from(["host1", "h\x00st", "All clients"]))})
fio_doc = st.fixed_dictionaries({}, optional={
    "fio version": maybe(st.just("fio-3.33")), "global options": maybe(options), "timestamp_ms": maybe(counts),
    "jobs": maybe(st.lists(maybe(job), max_size=3)), "client_stats": maybe(st.lists(maybe(job), max_size=3))})


@pytest.fixture(scope="module")
def scratch() -> Any:
    d = Path(tempfile.mkdtemp(prefix="pt-props-"))
    yield d
    shutil.rmtree(d, ignore_errors=True)


def _import_outcome(path: Path) -> None:
    """parse_file's result must be plain JSON (no NaN or infinity stored); anything else it may raise
    is the tool's own error."""
    try:
        _kind, points, _info = parse_file(str(path))
    except ProfilerError:
        return
    assert points
    for pt in points:
        json.dumps([pt.point, pt.metrics, pt.extra], allow_nan=False)


# --- the fio parser and importer ----------------------------------------------------------------------------


@settings(SETTINGS, max_examples=400)
@given(docs=st.lists(fio_doc, min_size=1, max_size=3), indent=st.sampled_from([None, 2]),
       noise=st.sampled_from(["", "fio: note: something\n", "<h> client line\n{broken\n"]))
def test_random_fio_like_documents(scratch: Path, docs: list[dict[str, Any]], indent: int | None, noise: str) -> None:
    text = noise + "\n".join(json.dumps(d, indent=indent, allow_nan=True) for d in docs) + "\n"
    f = scratch / "random.json"
    f.write_text(text)
    _import_outcome(f)


@pytest.fixture(scope="module")
def real_fio_text(tmp_path_factory: pytest.TempPathFactory) -> str:
    return fio_json_plus(tmp_path_factory.mktemp("fio"), "prop").read_text()


def _paths(x: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [path] if path else []
    if isinstance(x, dict):
        for k, v in x.items():
            out += _paths(v, path + (k,))
    elif isinstance(x, list):
        for i, v in enumerate(x):
            out += _paths(v, path + (i,))
    return out


@settings(SETTINGS, max_examples=300)
@given(data=st.data())
def test_random_mutations_of_a_real_fio_output(scratch: Path, real_fio_text: str, data: st.DataObject) -> None:
    doc = json.loads(real_fio_text)
    paths = [p for p in _paths(doc) if "bins" not in p[:-1]]  # a bin is like any other: keep the draws useful
    for _ in range(data.draw(st.integers(1, 3))):
        path = data.draw(st.sampled_from(paths))
        parent = doc
        try:
            for p in path[:-1]:
                parent = parent[p]
            parent[path[-1]] = data.draw(junk)
        except (KeyError, IndexError, TypeError):
            pass  # an earlier mutation replaced the parent
    f = scratch / "mutated.json"
    f.write_text(json.dumps(doc, indent=2, allow_nan=True))
    _import_outcome(f)


@settings(SETTINGS, max_examples=600)
@given(data=st.data())
def test_import_of_random_bytes(scratch: Path, real_fio_text: str, data: st.DataObject) -> None:
    """Random bytes, alone or cut into a real fio output or an MLC text (truncation, garbage inside)."""
    mlc = (DATA / "mlc" / "v3.10-loaded-latency.txt").read_bytes()
    base = data.draw(st.sampled_from([b"", real_fio_text.encode(), mlc]))
    cut = data.draw(st.integers(0, len(base)))
    raw = base[:cut] + data.draw(st.binary(max_size=300)) + base[cut:][:data.draw(st.integers(0, len(base)))]
    f = scratch / "bytes.bin"
    f.write_bytes(raw)
    _import_outcome(f)


# --- the results reader through report and compare ------------------------------------------------------------

GOLDEN_META = json.loads((GOLDEN_RUN / "run.json").read_text())
GOLDEN_LINES = (GOLDEN_RUN / "results.jsonl").read_text().splitlines()


EXTREME = st.sampled_from([0, 0.0, 1, 5e-324, 1e-300, 2 ** 64, 1.8e19, 0.001])


def _mutate(value: Any, data: st.DataObject, times: int) -> Any:
    value = json.loads(json.dumps(value))
    paths = _paths(value)
    for _ in range(times):
        if not paths:
            break
        path = data.draw(st.sampled_from(paths))
        parent = value
        try:
            for p in path[:-1]:
                parent = parent[p]
            parent[path[-1]] = data.draw(st.one_of(junk, EXTREME))  # junk, or valid values at their edges
        except (KeyError, IndexError, TypeError):
            pass
    return value


@st.composite
def results_dirs(draw: Any) -> tuple[str, list[str]]:
    data = draw(st.data())
    meta = _mutate(GOLDEN_META, data, draw(st.sampled_from([0, 0, 1, 2]))) if draw(st.booleans()) else \
        draw(st.sampled_from([GOLDEN_META, {"status": "running", "plan": [1, 2]}, {}]))
    lines = []
    for _ in range(draw(st.integers(0, 12))):
        how = draw(st.sampled_from(["good", "good", "mutated", "mutated", "text", "repeat"]))
        if how == "text":
            lines.append(draw(st.text(max_size=40)).replace("\n", " "))
            continue
        rec = json.loads(draw(st.sampled_from(GOLDEN_LINES)))
        if how == "mutated":
            rec = _mutate(rec, data, draw(st.integers(1, 3)))
        lines.append(json.dumps(rec, allow_nan=True))
    return json.dumps(meta, allow_nan=True), lines


def _write(d: Path, meta: str, lines: list[str]) -> None:
    d.mkdir(parents=True, exist_ok=True)
    (d / "run.json").write_text(meta)
    (d / "results.jsonl").write_text("\n".join(lines) + ("\n" if lines else ""))


@settings(SETTINGS, max_examples=400)
@given(case=results_dirs(), bound=st.sampled_from([1.0, 1000.0, 1e-9, 1e12]))
def test_random_results_directories_through_report_text_and_compare(scratch: Path, case: tuple[str, list[str]],
                                                                   bound: float) -> None:
    d = scratch / "results"
    _write(d, *case)
    try:
        data = load(d)
    except ProfilerError:
        return
    md = render_markdown(data, [], bound * 1e3, an.storage_curves(data.storage), an.memory_curves(data.memory))
    assert md.startswith("# ")
    results_csv(data)
    results_table(ResultsDir(d).lines())
    compare_runs(str(GOLDEN_RUN), str(d))
    compare_runs(str(d), str(d))
    compare_reference(str(d), load_reference("intel-dc-p4600"))


@settings(SETTINGS, max_examples=2)
@given(data=st.data())
def test_extreme_but_valid_values_through_the_whole_report_with_figures(scratch: Path, data: st.DataObject) -> None:
    """Values the reader accepts (0 … 2^64) at their edges, in every number of some points, through the
    figures too."""
    lines = []
    for ln in GOLDEN_LINES:
        rec = json.loads(ln)
        if data.draw(st.booleans()):
            m = rec["metrics"]
            for k in list(m):
                if isinstance(m[k], (int, float)) and not isinstance(m[k], bool):
                    m[k] = data.draw(EXTREME)
                elif isinstance(m[k], dict):
                    m[k] = {kk: data.draw(EXTREME) for kk in m[k]}
        lines.append(json.dumps(rec))
    d = scratch / "extreme"
    _write(d, json.dumps(GOLDEN_META), lines)
    render_report(d)
