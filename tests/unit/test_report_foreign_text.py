"""Text from a results directory never becomes markup in report.md or report.html (docs/report.md, "The HTML
report"; docs/safety.md).

Every string a results directory can hold — each string field the contracts (app/schemas/run.schema.json,
results-line.schema.json, telemetry.schema.json) define, nested ones included, and the free-form objects
(environment, target_info) — is set to its own value followed by a payload of Markdown and HTML: a newline and a
heading, table pipes, a link, an autolink, an image, raw HTML, a code span, emphasis, an entity, bare URLs, an
e-mail address and terminal escapes.  Fixtures cover the report's sections: a storage and memory run with every
run.json part (audit, tuning, preconditioning, failures, skipped points, imports, warnings), drive telemetry, a
fleet run, a peak run, the memory suite, latency tails with device figures, replicates with samples, and a real
`import` of a fio JSON document.  Then, for each: report.md has the same blocks (headings, paragraphs, lists,
tables and their cells) as the report of the same directory with a benign payload of the same length (a cut
string's newline cannot start a heading either), every table row has its header's cells, and nothing in it is a
link, an image (but a figure), an autolink, raw HTML or an entity; report.html holds no ``<a``, no ``<img`` and no
element but markdown-it's and the figures' SVG.  Last, a 10 MB string gives a report of normal size.
"""

from __future__ import annotations

import json
import re
import shutil
import time
from pathlib import Path
from typing import Any, Callable, Iterator

import pytest
from markdown_it import MarkdownIt

from app.cli.compare import Reference, compare_reference, compare_runs, parse_reference
from app.core.sanitize import FOREIGN_LIMIT
from app.core.textable import markdown_cells
from app.host.audit import ITEMS, Audit, Item, to_json
from app.report import render_report
from app.report.figures import plots
from app.stats.validity import FLAGS
from tests.conftest import DATA, ROOT, run_cli
from tests.helpers import interval_runs, open_runs, peak_runs, suite_runs, tail_runs
from tests.helpers.fleet_util import make_fleet_dir
from tests.unit.test_report_html import Tags

pytestmark = pytest.mark.filterwarnings("ignore:Glyph")  # matplotlib: a payload's control characters have none

SCHEMAS = ROOT / "app" / "schemas"
GOLDEN_RUN = DATA / "report" / "golden-run"
TELEMETRY_RUN = DATA / "report" / "telemetry-run"
GOLDEN_MD = DATA / "report" / "golden" / "report.md"

# each field's payload: {n} numbers the field, so a leak names it
PAYLOAD = ("\n## PWNED{n}\n| x{n} | y |\n[a{n}](http://x.example/{n}) <http://y.example/{n}> "
           "![i{n}](http://127.0.0.1/{n}) <script>alert({n})</script> <pwned{n}></pwned{n}> `code{n}` *em{n}* "
           "__strong{n}__ &amp; &#60;b&#62; ~~del{n}~~ www.w{n}.example a{n}@mail.example //localhost/etc/passwd "
           "\x1b[31mred\x1b[0m "
           "\x1b]8;;http://z.example/\x1b\\osc8\x1b]8;;\x1b\\ \x9b2J\n- item{n}\n1. one{n}\n===")
# the same markup on one line of printable text, for the fields a reader takes only when they are
PRINTABLE = (" ## PWNED{n} | x{n} | [a{n}](http://x.example/) <http://y.example/> ![i{n}](http://127.0.0.1/) "
             "<pwned{n}> `code{n}` *em{n}* &amp; www.w{n}.example a{n}@mail.example")  # short: under 200 characters

# string fields the readers take only from a fixed vocabulary (another value refuses the file or leaves the line
# out, so the text never reaches the report) or whose text picks what the line is: kept as they are
KEEP = {
    ("tool",), ("kind",), ("status",), ("engine",), ("preset", "kind"), ("procedure", "precondition"),
    ("precondition", "mode"), ("precondition", "status"), ("telemetry", "bus"), ("fleet", "hosts", "scheme"),
    ("fleet", "hosts", "host"), ("host",), ("failures", "host"), ("audit", "items", "key"),
    ("audit", "items", "status"), ("audit", "items", "warning"),
    ("point", "mode"), ("point", "pages"), ("point", "c2c"), ("point", "home"), ("point", "engine"),
    ("metrics", "percentiles_source"), ("flags", "flag"), ("precision", "figure"), ("precision", "stop"),
    ("telemetry", "warnings"), ("device", "source"), ("ci_method", "method"), ("metrics", "ci_method", "method"),
    ("checks", "*", "result"), ("target_info", "type"), ("target_info", "kind"),
    ("raw", "*"), ("raw", "fio"), ("raw", "json"), ("raw", "samples"), ("raw", "fleet"),  # files the report opens
}


def _keep(path: tuple[str, ...], keep: frozenset[tuple[str, ...]] = frozenset()) -> bool:
    return any(path[-len(k):] == k or (len(k) == 3 and k[1] == "*" and len(path) >= 3 and path[-3] == k[0]
                                        and path[-1] == k[2]) for k in KEEP | keep)


class Mutator:
    """Appends a numbered payload to every string of a JSON value (same field, same number); ``keep``: more fields
    to leave as they are (a fixture whose sections need its points' patterns as they are)."""

    def __init__(self, keep: frozenset[tuple[str, ...]] = frozenset(), payload: str = PAYLOAD) -> None:
        self.numbers: dict[tuple[str, ...], int] = {}
        self.keep = keep
        self.payload = payload

    def __call__(self, value: Any, path: tuple[str, ...] = ()) -> Any:
        if isinstance(value, dict):
            return {k: self(v, path + (k,)) for k, v in value.items()}
        if isinstance(value, list):
            return [self(v, path) for v in value]
        if isinstance(value, str) and not _keep(path, self.keep):
            n = self.numbers.setdefault(path, len(self.numbers) + 1)
            return value + self.payload.format(n=n)
        return value


def _mutate_dir(d: Path, mutate: Mutator) -> None:
    """run.json, results.jsonl and raw/telemetry.jsonl of ``d`` with every string field's payload; the plan's
    points get the payloads their lines' points get (a line measures a plan point only when the two are equal)."""
    meta = json.loads((d / "run.json").read_text())
    plan = meta.pop("plan", [])
    meta = {**mutate(meta), "plan": [mutate(p, ("point",)) for p in plan]}
    (d / "run.json").write_text(json.dumps(meta, indent=1))
    for name in ("results.jsonl", "raw/telemetry.jsonl"):
        f = d / name
        if f.exists():
            recs = [json.loads(x) for x in f.read_text().splitlines() if x.strip()]
            prefix = ("telemetry",) if name.startswith("raw") else ()
            f.write_text("".join(json.dumps(_mutate_line(r, mutate, prefix)) + "\n" for r in recs))


def _mutate_line(rec: dict[str, Any], mutate: Mutator, prefix: tuple[str, ...]) -> dict[str, Any]:
    if prefix:
        return {k: mutate(v, prefix + (k,)) for k, v in rec.items()}
    return {k: mutate(v, (k,)) for k, v in rec.items()}


# --- the fixtures -------------------------------------------------------------------------------------------


def _audit() -> dict[str, object]:
    items = tuple(Item(k, "value", "what a benchmark wants", "why it matters", "warn" if i % 2 else "ok",
                       "scheduler" if k == "scheduler" else None, "a note") for i, k in enumerate(ITEMS))
    return {**to_json(Audit("/dev/nvme0n1", "nvme0n1", (0, 1), items, "a container note")),
            "read_at": "2026-11-25T08:00:00Z", "tuned_by": "run 4242 was tuning /dev/nvme0n1 as they were read"}


def _every_run_json_part(meta: dict[str, Any]) -> dict[str, Any]:
    """``meta`` with the run.json parts the golden run lacks, shaped as run.schema.json says."""
    meta = dict(meta)
    meta["preset"] = {**meta["preset"], "name": "custom"}
    meta["environment"] = {**meta["environment"],
                           "numa": {"nodes": [{"node": 0, "cpus": "0-1", "memory_bytes": 1 << 34}], "unknown": "why"}}
    meta["target_info"] = {**meta["target_info"],
                           "device": {"name": "vda", "vendor": "virtio", "model": "disk", "transport": "virtio",
                                      "scheduler": "none", "size_bytes": 1 << 36, "rotational": False,
                                      "backing_file": "/var/lib/disk.img"}}
    meta["procedure"] = {"precondition": "sequential", "timeseries": "all"}
    meta["precondition"] = {"mode": "sequential", "status": "failed", "description": "128 KiB sequential writes",
                            "started": "2026-11-22T02:09:00+00:00", "ended": "2026-11-22T02:10:00+00:00",
                            "seconds": 60.0, "error": "fio stopped", "throttled": "thermal", "over_temperature": "yes"}
    meta["telemetry"] = {"available": False, "reason": "no drive health log for a virtio disk"}
    meta["warnings"] = ["a warning of the run"]
    meta["sources"] = [{"file": "fio.json", "warnings": ["a warning of the import"]}]
    meta["failures"] = [{"index": 3, "error": "fio failed", "at": "2026-11-22T02:10:10+00:00"}]
    meta["skipped"] = [{"index": 5, "reason": "hipri needs poll queues", "at": "2026-11-22T02:10:11+00:00",
                        "point": meta["plan"][5]}]
    meta["error"] = "the run stopped"
    meta["resumed_at"] = meta["imported_at"] = "2026-11-22T02:11:00+00:00"
    meta["audit"] = _audit()
    change = {"key": "scheduler", "path": "/sys/block/vda/queue/scheduler", "previous": "mq-deadline", "value": "none",
              "applied": True, "restored": False, "error": "refused", "restore_error": "busy"}
    meta["tune"] = {"requested": True, "restored_at": "2026-11-22T02:12:00+00:00", "changes": [change]}
    return meta


def _every_line_part(rec: dict[str, Any], i: int) -> dict[str, Any]:
    """A storage line of the golden run with the parts it lacks, shaped as results-line.schema.json says."""
    rec = dict(rec)
    rec["point"] = {**rec["point"], "group": "fast", "cpus": "0-1", "steady": "iops:2%", "precision": "iops:5%"}
    rec["flags"] = [{"flag": "not-steady", "reason": "fio's criterion did not hold"}]
    rec["checks"] = {name: {"result": "not-applicable", "why": f"no {name} check here"} for name in FLAGS}
    rec["steady"] = {"attained": False, "criterion": "iops:2%", "after_s": 4.0}
    rec["notes"] = ["an importer's note"]
    rec["imported_from"] = "fio.json"
    rec["metrics"] = {**rec["metrics"], "disk_util": [{"name": "vda", "util": 50.0}],
                      "ci_method": {"method": "none", "reason": "no samples kept"}}
    rec["device"] = ({"unavailable": "no block device"} if i % 2 else
                     {"name": "vda", "source": "target", "note": "a note", "read_bytes": 1, "write_bytes": 1})
    rec["tail"] = {"unavailable": "no json+ histogram"}
    rec["host_cpu"] = {"unavailable": "no /proc/stat"} if i % 2 else {"cpus": "0-1", "window_s": 1.0, "busy_s": 0.5,
                                                                      "busy_cpus": 0.5}
    layer = {"requests": 10, "mean_ns": 1e4, "p50_ns": 1e4, "p99_ns": 2e4}
    rec["layers"] = ({"unavailable": "no tracefs"} if i % 2 else
                     {"source": "ebpf", "device": "vda", "queue": layer, "device_time": dict(layer)})
    return rec


def _memory_part(rec: dict[str, Any]) -> dict[str, Any]:
    rec = dict(rec)
    rec["point"] = {**rec["point"], "group": "mem", "cpus": "0"}
    rec.update(engine_version="memlat v0.1", command="memlat -x", command_line="memlat -x -y", job="a job",
               warnings=["a memory warning"], numa={"verified_with": "move_pages"}, imported_from="mlc.txt",
               chase={"text": "random chase over 64 MiB"})
    return rec


def golden(d: Path) -> Path:
    shutil.copytree(GOLDEN_RUN, d)
    meta = _every_run_json_part(json.loads((d / "run.json").read_text()))
    (d / "run.json").write_text(json.dumps(meta, indent=1))
    recs = [json.loads(x) for x in (d / "results.jsonl").read_text().splitlines()]
    recs = [_every_line_part(r, i) if r["kind"] == "storage" else _memory_part(r) for i, r in enumerate(recs)]
    (d / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in recs))
    return d


def telemetry(d: Path) -> Path:
    shutil.copytree(TELEMETRY_RUN, d)
    with (d / "raw" / "telemetry.jsonl").open("a") as f:  # a reading that failed
        f.write(json.dumps({"schema_version": 1, "at": "2026-11-23T21:26:00+00:00", "t": 1795469160.0,
                            "phase": "after", "index": None, "error": "nvme smart-log failed"}) + "\n")
    return d


def fleet(d: Path) -> Path:
    make_fleet_dir(d, hosts=4, points=3)
    meta = json.loads((d / "run.json").read_text())
    meta["failures"] = [{"index": 1, "error": "the agent went away", "host": meta["fleet"]["hosts"][0]["host"]}]
    meta["fleet"]["hosts"][0]["user"] = "root"
    (d / "run.json").write_text(json.dumps(meta, indent=1))
    return d


def peak(d: Path) -> Path:
    return peak_runs.write_run(d, peak_runs.peak_lines(), skipped=[peak_runs.HIPRI_SKIP])


def suite(d: Path) -> Path:
    sizes = suite_runs.octave_sizes(hi=64 << 20)
    lines = suite_runs.mlc_default_lines() + suite_runs.working_set_lines(20, sizes, "4k")
    suite_runs.write_run(d, lines)
    recs = [_memory_part(json.loads(x)) for x in (d / "results.jsonl").read_text().splitlines()]
    (d / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in recs))
    return d


def tails(d: Path) -> Path:
    lines = tail_runs.matrix(["randread", "randrw"], [4096], [1, 4, 16])
    for x in lines:
        x["device"] = tail_runs.device_part(1e9, 1.0, 1e5, name="nvme0n1", note="a device note")
    return tail_runs.write_run(d, lines)


def open_loop(d: Path) -> Path:
    return open_runs.mm1_run(d, rhos=(0.2, 0.5, 0.8), flagged=[{"rho": 0.6, "valid": False, "mean_ns": 1e5}])


def replicates(d: Path) -> Path:
    points = [(interval_runs.storage_point(iodepth=q, replicate=r), 1e4 * q, 0.01) for q in (1, 4, 16)
              for r in (1, 2, 3)]
    return interval_runs.write_storage_run(d, points)


# the access patterns and traffic types a section is drawn for: the other fixtures put the payload in them
PATTERNS = frozenset({("point", "rw"), ("point", "traffic")})
# name: (the results directory, the fields kept as they are, the payload)
FIXTURES: dict[str, tuple[Callable[[Path], Path], frozenset[tuple[str, ...]], str]] = {
    "golden": (golden, frozenset({("caches", "size")}), PAYLOAD),  # a cache's size read: its name is shown
    "golden-printable": (golden, frozenset(), PRINTABLE),
    "telemetry": (telemetry, frozenset(), PAYLOAD), "fleet": (fleet, frozenset(), PAYLOAD),
    "peak": (peak, PATTERNS, PAYLOAD), "suite": (suite, PATTERNS, PAYLOAD), "tails": (tails, frozenset(), PAYLOAD),
    "replicates": (replicates, PATTERNS, PAYLOAD), "open-loop": (open_loop, PATTERNS, PAYLOAD)}


# --- the fields the contracts define ------------------------------------------------------------------------------


def _schema_strings(schema: dict[str, Any], node: Any, path: tuple[str, ...]) -> Iterator[tuple[str, ...]]:
    """The path of every string field ``node`` (a part of ``schema``) defines, its $refs followed; a field with
    a fixed vocabulary (enum, const, pattern) is not free text and is left out."""
    if not isinstance(node, dict):
        return
    if "$ref" in node:
        name = node["$ref"].rsplit("/", 1)[-1]
        yield from _schema_strings(schema, schema["$defs"][name], path)
    types = node.get("type")
    if ("string" in types if isinstance(types, list) else types == "string") and not (
            {"enum", "const", "pattern"} & set(node)):
        yield path
    for key, sub in (node.get("properties") or {}).items():
        yield from _schema_strings(schema, sub, path + (key,))
    if isinstance(node.get("additionalProperties"), dict):
        yield from _schema_strings(schema, node["additionalProperties"], path + ("*",))
    if isinstance(node.get("items"), dict):
        yield from _schema_strings(schema, node["items"], path)
    for key in ("oneOf", "anyOf", "allOf"):
        for sub in node.get(key) or []:
            yield from _schema_strings(schema, sub, path)


def contract_fields() -> set[tuple[str, ...]]:
    fields = set()
    for name, prefix in (("run", ()), ("results-line", ()), ("telemetry", ("telemetry",))):
        schema = json.loads((SCHEMAS / f"{name}.schema.json").read_text())
        fields |= {prefix + p for p in _schema_strings(schema, schema, ())}
    return {f for f in fields if not _keep(f) and f[:1] != ("plan",)}


def _covers(mutated: set[tuple[str, ...]], field: tuple[str, ...]) -> bool:
    return any(len(m) == len(field) and all(a == b or a == "*" for a, b in zip(field, m)) for m in mutated)


# --- the checks -------------------------------------------------------------------------------------------------

COMMONMARK = MarkdownIt("commonmark", {"html": True}).enable("table")
GITHUB = MarkdownIt("gfm-like", {"html": True})  # with GitHub's autolinks of bare URLs, e-mail addresses, www.
assert GITHUB.linkify is not None  # "gfm-like" has linkify on
GITHUB.linkify.set({"fuzzy_link": False})
HEADING_START = re.compile(r"^ {0,3}#{1,6}(?:\s|$)")


def _inline_children(tokens: list[Any]) -> Iterator[Any]:
    for t in tokens:
        yield t
        yield from t.children or []


def check_markdown(md: str) -> None:
    assert "\x1b" not in md and "\x9b" not in md
    lines = md.splitlines()
    for line in lines:  # no heading but the tool's: a payload's "## PWNED" never starts a line, nor a list item
        assert not re.match(r"^\W*(PWNED|item\d|one\d|===)", line), line
        if HEADING_START.match(line):
            assert not line.lstrip("# ").startswith("PWNED"), line
    tables: list[list[str]] = [[]]
    for line in lines:  # every row of a table has the header's cells
        if line.startswith("|"):
            tables[-1].append(line)
        elif tables[-1]:
            tables.append([])
    for table in filter(None, tables):
        width = len(markdown_cells(table[0]))
        assert all(len(markdown_cells(row)) == width for row in table), table[:3]
    for parser in (COMMONMARK, GITHUB):
        for t in _inline_children(parser.parse(md)):
            assert t.type not in ("link_open", "html_inline", "html_block"), (t.type, t.content[:80])
            assert t.info != "entity", t.content  # "&amp;" is shown as written
            if t.type == "image":
                assert re.fullmatch(r"plots/[\w.+-]+\.svg", t.attrGet("src") or ""), t.attrGet("src")
        page = parser.render(md)
        spans = re.findall(r"<(code|em|strong|s|del)>(?:code|em|strong|del)\d+</\1>", page)
        assert not spans, spans[:3]


# elements markdown-it makes, the page's own, and those of matplotlib's SVG figures
PAGE_TAGS = {"html", "head", "meta", "title", "style", "body", "span", "p", "h1", "h2", "h3", "h4", "h5", "h6", "em",
             "strong", "code", "pre", "ul", "ol", "li", "blockquote", "hr", "br", "table", "thead", "tbody", "tr",
             "th", "td"}
SVG_TAGS = {"svg", "g", "path", "defs", "use", "clippath", "rect", "text", "tspan", "style", "image", "title", "desc",
            "lineargradient", "radialgradient", "stop", "pattern", "mask", "circle", "ellipse", "line", "polyline",
            "polygon", "symbol"}


def check_html(page: str) -> None:
    assert "\x1b" not in page
    parser = Tags()  # every start tag, with its attributes
    parser.feed(page)
    for tag, attrs in parser.tags:
        assert tag in PAGE_TAGS | SVG_TAGS, tag
        for name, value in attrs:
            assert not name.startswith("on") and name != "src", (tag, name)
            if name in ("href", "xlink:href"):
                assert (value or "").startswith(("#", "data:image/png;base64,")), (tag, name, value)


# --- the tests --------------------------------------------------------------------------------------------------


def benign(payload: str) -> str:
    """``payload`` with every character Markdown or HTML could read as markup made a letter: as long, the same
    lines and control characters, so a report of it is drawn from the same decisions as one of ``payload``."""
    return payload.translate({ord(c): "x" for c in "#|[]()<>!`*_&~=-.:/@;{}\\$+"})


def structure(md: str) -> list[tuple[str, str]]:
    """The blocks of a Markdown text, without their text: headings, paragraphs, lists, tables and their cells."""
    return [(t.type, t.tag) for t in COMMONMARK.parse(md) if t.type != "inline"]


Rendered = dict[str, tuple[Path, set[tuple[str, ...]], str]]


@pytest.fixture(scope="module")
def rendered(tmp_path_factory: pytest.TempPathFactory) -> Rendered:
    """Each fixture with every string field's payload, rendered (report.md and report.html); the fields it
    mutated; and the report.md of the fixture with the benign payload instead."""
    out = {}
    for name, (make, keep, payload) in FIXTURES.items():
        plain = make(tmp_path_factory.mktemp(name) / "plain")
        _mutate_dir(plain, Mutator(keep, benign(payload)))
        plots.TAKEN.sink = lambda _figure, _name: None  # the figures are drawn, not saved: only report.md is read
        try:
            render_report(plain)
        finally:
            plots.TAKEN.sink = None
        d = make(tmp_path_factory.mktemp(name) / "run")
        mutate = Mutator(keep, payload)
        _mutate_dir(d, mutate)
        render_report(d, html=True)
        out[name] = (d, set(mutate.numbers), (plain / "report.md").read_text())
    return out


@pytest.mark.parametrize("name", list(FIXTURES))
def test_no_field_of_a_results_directory_becomes_markup(rendered: Rendered, name: str) -> None:
    d, _, clean = rendered[name]
    md = (d / "report.md").read_text()
    assert "PWNED" in md  # the payloads reached the report
    check_markdown(md)
    # the same headings, paragraphs, lists, tables and cells as with the benign payload: the text, never the shape
    shape, clean_shape = structure(md), structure(clean)
    first = next((i for i, (a, b) in enumerate(zip(shape, clean_shape)) if a != b), min(len(shape), len(clean_shape)))
    assert shape == clean_shape, (first, shape[first - 3:first + 3], clean_shape[first - 3:first + 3])
    check_html((d / "report.html").read_text())


def test_the_fixtures_hold_every_string_field_of_the_contracts(rendered: Rendered) -> None:
    mutated = set().union(*(fields for _, fields, _ in rendered.values()))
    missing = sorted(f for f in contract_fields() if not _covers(mutated, f))
    assert not missing, missing


def test_an_imported_fio_documents_text_never_becomes_markup(tmp_path: Path) -> None:
    """The fio version, job name and file name of an imported fio JSON document, through `import` and `report`."""
    doc = fio_document(PAYLOAD.format(n=1))
    (tmp_path / "fio.json").write_text(json.dumps(doc, indent=2))
    run_cli("import", str(tmp_path / "fio.json"), "--out", str(tmp_path / "run"), check=True)
    run_cli("report", str(tmp_path / "run"), "--html", check=True)
    md = (tmp_path / "run" / "report.md").read_text()
    assert md.count("PWNED1") >= 2  # the version and the file name are shown
    check_markdown(md)
    check_html((tmp_path / "run" / "report.html").read_text())


def fio_document(payload: str) -> dict[str, Any]:
    """A fio JSON document of one 4K random-read job, its strings ending in ``payload``."""
    def side(iops: float, n: int) -> dict[str, Any]:
        lat = {"min": 10000, "max": 900000, "mean": 50000.0, "stddev": 1000.0, "N": n,
               "percentile": {"1.000000": 20000, "50.000000": 48000, "99.000000": 120000}}
        return {"io_bytes": n * 4096, "io_kbytes": n * 4, "bw_bytes": iops * 4096, "bw": iops * 4, "iops": iops,
                "runtime": 1000, "total_ios": n, "short_ios": 0, "drop_ios": 0, "clat_ns": lat, "lat_ns": lat,
                "slat_ns": {"min": 0, "max": 0, "mean": 0.0, "stddev": 0.0, "N": 0}}

    job = {"jobname": "randread" + payload, "groupid": 0, "error": 0, "elapsed": 2,
           "job options": {"rw": "randread", "bs": "4k", "iodepth": "4", "name": "randread" + payload},
           "read": side(1000.0, 1000), "write": side(0.0, 0), "trim": side(0.0, 0), "job_runtime": 1000,
           "usr_cpu": 1.0, "sys_cpu": 2.0}
    return {"fio version": "fio-3.33" + payload, "time": "Sat Nov 22 02:10:07 2026" + payload,
            "global options": {"ioengine": "libaio", "direct": "1", "filename": "/tmp/x" + payload, "size": "32m",
                               "runtime": "1", "time_based": "1"},
            "jobs": [job], "disk_util": [{"name": "vda", "util": 10.0}]}


# --- size: a long string is one bounded cell, never a padded column ------------------------------------------------


def _golden_with(tmp_path: Path, change: Callable[[dict[str, Any]], None]) -> Path:
    d = tmp_path / "run"
    shutil.copytree(GOLDEN_RUN, d)
    meta = json.loads((d / "run.json").read_text())
    change(meta)
    (d / "run.json").write_text(json.dumps(meta))
    return d


@pytest.mark.slow
def test_a_10_mb_cache_name_gives_a_report_of_normal_size_and_a_page(tmp_path: Path) -> None:
    """The Environment table pads its rows to its widest cell: a 10 MB cache name once made report.md 130 MB (and
    --html fail); a foreign string is cut to a bounded length in its cell, and padding never multiplies it."""
    normal = GOLDEN_MD.stat().st_size  # the golden run's report

    def long_name(meta: dict[str, Any]) -> None:
        meta["environment"]["cpu"]["caches"][0]["name"] = "A|<" * ((10 << 20) // 3)

    d = _golden_with(tmp_path, long_name)
    t0 = time.monotonic()
    render_report(d, html=True)
    took = time.monotonic() - t0
    size = (d / "report.md").stat().st_size
    assert size < normal + (64 << 10), size  # the name's cell: at most FOREIGN_LIMIT characters, escaped
    assert (d / "report.html").stat().st_size < 4 << 20
    assert took < 60, took
    (row,) = [x for x in (d / "report.md").read_text().splitlines() if x.startswith("| Caches (CPU 0)")]
    assert "…" in row and len(row) < 3 * FOREIGN_LIMIT


@pytest.mark.slow
def test_every_long_string_of_run_json_stays_bounded(tmp_path: Path) -> None:
    """Every string of run.json 200,000 characters long: each is one bounded cell or sentence."""
    normal = GOLDEN_MD.stat().st_size

    def lengthen(value: Any, path: tuple[str, ...] = ()) -> Any:
        if isinstance(value, dict):
            return {k: lengthen(v, path + (k,)) for k, v in value.items()}
        if isinstance(value, list):
            return [lengthen(v, path) for v in value]
        return value + "|x" * 100_000 if isinstance(value, str) and not _keep(path) else value

    def change(meta: dict[str, Any]) -> None:
        plan = meta.pop("plan")
        meta.update(lengthen(_every_run_json_part({**meta, "plan": plan})), plan=plan)

    md = render_report(_golden_with(tmp_path, change)).read_text()
    assert len(md) < normal + (512 << 10), len(md)
    assert max(len(line) for line in md.splitlines()) < 16 * FOREIGN_LIMIT


# --- compare's Markdown ----------------------------------------------------------------------------------------------


def _sheet(payload: str) -> Reference:
    """A reference sheet whose every text is the payload (a user's TOML file is text from elsewhere too)."""
    text = payload.format(n=0)
    return parse_reference({"name": "sheet" + text, "source": "a datasheet" + text, "url": "https://x.example/" + text,
                            "description": "about" + text,
                            "figure": [{"label": "4K read" + text, "rw": "randread", "bs": "4k", "metric": "iops",
                                        "value": 20000, "note": "a note" + text}]}, "sheet.toml")


def test_compare_s_markdown_never_becomes_markup(tmp_path: Path) -> None:
    """Two runs and a run against a reference sheet, every text of them with the payload: compare's Markdown has
    the shape it has with the benign payload, and no link, HTML or heading of theirs."""
    def run(name: str, payload: str) -> str:
        d = golden(tmp_path / name)
        _mutate_dir(d, Mutator(frozenset(), payload))
        return str(d)

    hostile = compare_runs(run("a", PAYLOAD), run("b", PAYLOAD))
    plain = compare_runs(run("pa", benign(PAYLOAD)), run("pb", benign(PAYLOAD)))
    vs_sheet = compare_reference(str(tmp_path / "a"), _sheet(PAYLOAD))
    vs_plain_sheet = compare_reference(str(tmp_path / "pa"), _sheet(benign(PAYLOAD)))
    for md, clean in ((hostile, plain), (vs_sheet, vs_plain_sheet)):
        assert "PWNED" in md
        check_markdown(md)
        assert structure(md) == structure(clean)
