"""report.html in a real browser: Debian's Chromium, headless, driven over the DevTools pipe
(tests/helpers/headless_chromium.py; no TCP port).

Three reports, each rendered once (module fixtures) and opened once: a real `quick` run (fio, runtime 1, a 16 MiB
file), a real fleet run (two agents on Unix sockets, each with its own RAM loop device) and the synthetic
1,008-point sweep of bench/report_speed.py.  Each must open with every figure of its report.md drawn (as many
<svg> elements as figures, each with a non-zero box and content), no script, nothing that loads, and no request
but the file itself (the browser's network log).  A fourth page holds hostile strings from run.json: they show
as text, and nothing runs.  Two more (the golden run's storage sweep and memory tables, a memory suite) are opened
at a desktop's 1400 px and a phone's 400 px: no table is cut and every figure's text is at least 11 px as shown.
Screenshots go to the test's temporary directory (or PROFILER_TUI_HTML_SHOTS)."""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shutil
from pathlib import Path

import pytest

from tests.conftest import DATA, ROOT, run_cli
from tests.helpers.fleet_agents import agents, processes
from tests.helpers.headless_chromium import PageReport, chromium, open_page
from tests.helpers.loopdev import loop_device, needs_loop

pytestmark = pytest.mark.skipif(chromium() is None, reason="chromium is not installed (`make setup` installs it "
                                "from Debian's chromium package)")

FIGURE = re.compile(r"^!\[[^\]]*\]\(plots/[^)]+\.svg\)$", re.MULTILINE)


def _bench() -> object:
    spec = importlib.util.spec_from_file_location("report_speed", ROOT / "bench" / "report_speed.py")
    mod = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    spec.loader.exec_module(mod)  # type: ignore[union-attr]
    return mod


def _render(directory: Path) -> tuple[Path, int]:
    """`profiler-tui report DIR --html`; the page and the number of figures report.md shows."""
    proc = run_cli("report", str(directory), "--html")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines()[-1] == f"html: {directory / 'report.html'}"
    figures = len(FIGURE.findall((directory / "report.md").read_text(encoding="utf-8")))
    return directory / "report.html", figures


def _shots(tmp: Path) -> Path:
    where = Path(os.environ.get("PROFILER_TUI_HTML_SHOTS") or tmp)
    where.mkdir(parents=True, exist_ok=True)
    return where


def _open(page: Path, tmp: Path, name: str) -> PageReport:
    return open_page(page, tmp / f"profile-{name}", _shots(tmp) / f"{name}.png")


def _assert_renders(report: PageReport, figures: int) -> None:
    # nothing but the page itself: matplotlib's rasters are data: URIs inside the SVGs (no fetch)
    assert [u for u in report.requests if not u.startswith("data:")] == [report.url], report.requests
    assert not [e for e in report.log if e.get("level") in ("error", "warning")], report.log
    dom = report.dom
    assert figures > 0 and len(dom["svgs"]) == figures, (len(dom["svgs"]), figures)
    for width, height, elements in dom["svgs"]:
        assert width > 100 and height > 50 and elements > 20  # drawn, with its axes and marks
    assert dom["scripts"] == 0 and dom["loaders"] == 0
    assert dom["tables"] > 0 and dom["title"].startswith("Performance report")
    assert report.screenshot is not None and report.screenshot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.fixture(scope="module")
def quick_page(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, int]:
    tmp = tmp_path_factory.mktemp("quick")
    out = tmp / "r"
    proc = run_cli("run", "quick", "--set", "runtime=1", "--set", "repeat=1", "--set", "size=16m", "--yes", "--target",
                   str(tmp / "target.img"), "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    return _render(out)


@pytest.fixture(scope="module")
def fleet_page(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, int]:
    tmp = tmp_path_factory.mktemp("fleet")
    with agents(2) as running, loop_device(tmp, name="a", ram=True) as a, loop_device(tmp, name="b", ram=True) as b:
        args = ["run", "quick", "--set", "runtime=1", "--set", "repeat=1", "--set", "bs=4k", "--set", "iodepth=1",
                "--yes",
                "--out", str(tmp / "r")]
        for agent, dev in zip(running, (a, b)):
            args += ["--host", agent.host, "--target", f"{agent.host}={dev.path}"]
        proc = run_cli(*args)
        assert proc.returncode == 0, proc.stderr
    return _render(tmp / "r")


@pytest.fixture(scope="module")
def big_page(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, int]:
    bench = _bench()
    out = bench.make_results_dir(tmp_path_factory.mktemp("big") / "r", bench.RW, bench.BIG_BS,  # type: ignore[attr-defined]
                                 bench.BIG_QD)  # type: ignore[attr-defined]
    assert len((out / "results.jsonl").read_text().splitlines()) == 1008
    return _render(out)


def test_a_quick_run_s_page_opens_with_every_figure_and_fetches_nothing(quick_page: tuple[Path, int],
                                                                        tmp_path: Path) -> None:
    page, figures = quick_page
    report = _open(page, tmp_path, "quick")
    _assert_renders(report, figures)


@needs_loop
def test_a_fleet_run_s_page_opens_with_every_figure_and_fetches_nothing(fleet_page: tuple[Path, int],
                                                                        tmp_path: Path) -> None:
    page, figures = fleet_page
    report = _open(page, tmp_path, "fleet")
    _assert_renders(report, figures)
    assert report.dom["title"] == "Performance report: quick (storage, fleet of 2 hosts)"


def test_the_1008_point_page_opens_with_every_figure_and_fetches_nothing(big_page: tuple[Path, int],
                                                                         tmp_path: Path) -> None:
    page, figures = big_page
    report = _open(page, tmp_path, "big")
    _assert_renders(report, figures)


def test_hostile_strings_in_run_json_stay_text_in_the_browser(tmp_path: Path) -> None:
    """A CPU model, a hostname and a target path that would be markup (or end the figure's SVG) if pasted: the
    page shows them as text, runs no script and still draws every figure."""
    out = tmp_path / "hostile"
    shutil.copytree(DATA / "report" / "golden-run", out)
    meta = json.loads((out / "run.json").read_text())
    evil = '<script>document.title="pwned"</script></svg><img src=x onerror=alert(1)>\x1b]0;t\x07'
    meta["environment"]["cpu"]["model"] = evil
    meta["environment"]["system"]["hostname"] = meta["environment"]["system"]["os"] = \
        "</table><iframe src=http://127.0.0.1:9/>"
    meta["target"] = meta["target_info"]["path"] = "/srv/![x](http://127.0.0.1:9/x.png)"
    (out / "run.json").write_text(json.dumps(meta))
    page, figures = _render(out)
    report = _open(page, tmp_path, "hostile")
    _assert_renders(report, figures)
    text = page.read_text(encoding="utf-8")
    assert "&lt;script&gt;" in text and "<script" not in text and "<iframe" not in text and "\x1b" not in text
    assert report.dom["title"] != "pwned"


def test_the_browser_is_killed_when_it_does_not_answer_in_time(tmp_path: Path) -> None:
    """The helper's bound: a browser that has not answered by the deadline is a TimeoutError, and none of its
    processes (all started with this test's profile directory) is left running."""
    page = tmp_path / "page.html"
    page.write_text("<p>x</p>")
    profile = tmp_path / "profile"
    with pytest.raises(TimeoutError):
        open_page(page, profile, timeout=0.05)
    assert not processes(str(profile))


# --- the page where it is read: a desktop's 1400 px and a phone's 400 px --------------------------------------------

# every table's box against its column, the page's width, and every figure text's size as displayed: its font size
# (in the SVG's user units) times the scale from those units to the screen
LAYOUT = """(() => {
  const tables = [...document.querySelectorAll('table')].map(t => {
    const r = t.getBoundingClientRect(), column = t.parentElement, c = column.getBoundingClientRect();
    const pad = parseFloat(getComputedStyle(column).paddingRight);
    return {head: (t.querySelector('th') || t).textContent.trim().slice(0, 40), content: t.scrollWidth,
            shown: t.clientWidth, right: r.right, column: c.right - pad};
  });
  const texts = [...document.querySelectorAll('svg text')].filter(t => t.textContent.trim()).map(t => {
    const m = t.getScreenCTM();
    return {px: parseFloat(getComputedStyle(t).fontSize) * Math.hypot(m.a, m.b), text: t.textContent.slice(0, 30),
            figure: t.closest('.figure').getAttribute('aria-label').slice(0, 50)};
  });
  const figures = [...document.querySelectorAll('.figure')].map(f => ({
    figure: f.getAttribute('aria-label').slice(0, 50), content: f.scrollWidth, shown: f.clientWidth}));
  return {tables, texts, figures, page: document.documentElement.scrollWidth, window: innerWidth};
})()"""
WIDTHS = (1400, 400)  # a desktop browser's window, a phone's screen


@pytest.fixture(scope="module")
def readable_pages(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Two reports with every kind of table: the golden run (a storage sweep of three patterns × two block sizes ×
    three depths with its storage, mixed-sides, latency-distribution, knee, operating-point and queueing tables,
    and memory loaded-latency tables) and a memory suite (MLC's matrices, peaks and c2c, and a working-set
    curve)."""
    from tests.helpers.suite_runs import mlc_default_lines, octave_sizes, working_set_lines, write_run

    tmp = tmp_path_factory.mktemp("readable")
    golden = tmp / "golden"
    shutil.copytree(DATA / "report" / "golden-run", golden)
    n = len(mlc_default_lines())
    sizes = octave_sizes(per_octave=2)
    suite = write_run(tmp / "suite", mlc_default_lines() + working_set_lines(n, sizes, "2m"))
    return {"golden": _render(golden)[0], "suite": _render(suite)[0]}


_measured: dict[tuple[str, int], PageReport] = {}


def _measure(pages: dict[str, Path], name: str, width: int, tmp: Path) -> dict:
    """The page opened once at ``width`` (kept for the other test); its screenshot kept as NAME-WIDTH.png."""
    if (name, width) not in _measured:
        _measured[name, width] = open_page(pages[name], tmp / f"profile-{name}-{width}",
                                           _shots(tmp) / f"{name}-{width}.png", width=width, measure=LAYOUT,
                                           shot_height=16000, shot_scale=0.5 if width > 1000 else 1.0)
    return dict(_measured[name, width].measured)


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("name", ["golden", "suite"])
def test_no_table_is_wider_than_its_column(readable_pages: dict[str, Path], name: str, width: int,
                                           tmp_path: Path) -> None:
    """No table is cut: its content fits the box it is shown in (no hidden part to scroll to) and the box fits the
    page's column, at a desktop's 1400 px (the storage table once ended at "IO De…", the operating point's at "Next
    load: p9…") and at a phone's 400 px (a table of four columns or more becomes a card per row); nor is the
    page wider than the window."""
    m = _measure(readable_pages, name, width, tmp_path)
    assert len(m["tables"]) >= 5
    cut = [t for t in m["tables"] if t["content"] > t["shown"] + 1 or t["right"] > t["column"] + 1]
    assert not cut, cut
    assert m["page"] <= m["window"], (m["page"], m["window"])


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("name", ["golden", "suite"])
def test_figure_text_is_at_least_11_px_as_displayed(readable_pages: dict[str, Path], name: str, width: int,
                                                    tmp_path: Path) -> None:
    """Every text of every figure (ticks, labels, legends, values in cells) is at least 11 CSS px high as the page
    shows it — its font size times the figure's displayed scale — at 1400 px and at 400 px (figures were shrunk
    to their column with text of about 7 px, 2–3 px on a phone); at 1400 px no figure needs scrolling."""
    m = _measure(readable_pages, name, width, tmp_path)
    assert len(m["texts"]) > 50
    small = sorted((round(t["px"], 2), t["figure"], t["text"]) for t in m["texts"] if t["px"] < 11)
    assert not small, small[:10]
    if width >= 1400:  # on a desktop every figure is shown whole; on a phone a wide one scrolls in its frame
        assert not [f for f in m["figures"] if f["content"] > f["shown"] + 1], m["figures"]
