"""The CLI on a terminal and off it: in a real pseudo-terminal `run` draws a live rich bar (points, percent,
ETA, elapsed, the point's live IOPS, MB/s, mean and p99 latency) and `devices`, `presets` and `compare` print
rich tables that fit 80 columns; ^C leaves a clean screen.  Piped, the output is the plain text of before,
byte for byte, and rich is never imported.

The screen is rebuilt from the bytes the program wrote by ``Screen``, a minimal terminal (the controls rich
uses: carriage return, cursor up, erase line, automatic wrap at the right margin)."""

from __future__ import annotations

import fcntl
import json
import os
import re
import select
import struct
import subprocess
import sys
import termios
import threading
import time
from pathlib import Path

from app.cli.compare import compare_runs
from app.core.units import format_duration
from app.model.records import read_line
from app.plan import presets
from app.plan.presets import estimate_point_seconds
from app.stats.summary import FLAG_MARK, flag_names, flag_text, metrics_line, point_label, results_table
from tests.conftest import DATA, ROOT, run_cli

ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]")
COLOUR = re.compile(r"\x1b\[[0-9;]*(?:3[0-9]|4[0-9]|9[0-7]|10[0-7])(?:;[0-9;]*)?m")  # an SGR that sets a colour
CSI = re.compile(r"\x1b\[([0-9;?]*)([@-~])")
SHORT_RUN = ["--set", "size=16m", "--set", "ramp_time=0", "--set", "rw=randread", "--yes"]
GOLDEN_RUN = DATA / "report" / "golden-run"


class Screen:
    """What a terminal of ``cols`` columns shows after ``raw`` (all rows ever written, top to bottom)."""

    def __init__(self, raw: str, cols: int) -> None:
        self.cols = cols
        self.rows: list[list[str]] = [[]]
        self.row = self.col = 0
        i = 0
        while i < len(raw):
            ch = raw[i]
            if ch == "\x1b":
                m = CSI.match(raw, i)
                if m is not None:
                    self._control(*m.groups())
                    i = m.end()
                    continue
                i += 2  # another escape (none expected): skip it
                continue
            if ch == "\r":
                self.col = 0
            elif ch == "\n":
                self._down()
            elif ch == "\b":
                self.col = max(0, self.col - 1)
            elif ch >= " ":
                self._put(ch)
            i += 1

    def _down(self) -> None:
        self.row += 1
        while len(self.rows) <= self.row:
            self.rows.append([])

    def _put(self, ch: str) -> None:
        if self.col >= self.cols:  # the right margin: the next character wraps
            self._down()
            self.col = 0
        line = self.rows[self.row]
        line.extend(" " * (self.col + 1 - len(line)))
        line[self.col] = ch
        self.col += 1

    def _control(self, params: str, final: str) -> None:
        if final == "K":
            line = self.rows[self.row]
            if params == "2":
                line.clear()
            elif params in ("", "0"):
                del line[self.col:]
        elif final == "A":
            self.row = max(0, self.row - int(params or 1))
        elif final == "G":
            self.col = int(params or 1) - 1

    def lines(self) -> list[str]:
        return ["".join(r).rstrip() for r in self.rows]


class Terminal:
    """``python -m app ARGS`` (or ``python -c CODE``) with a pty of ``cols``×24 as its controlling terminal:
    its stdin, stdout and stderr, or stderr only when ``stdout_pipe``."""

    def __init__(self, args: list[str], cols: int = 80, env: dict[str, str] | None = None,
                 stdout_pipe: bool = False, code: str | None = None) -> None:
        full = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "COLUMNS", "LINES", "FORCE_COLOR")}
        full.update({"TERM": "xterm-256color", "PROFILER_TUI_PRESETS": str(ROOT / "presets")})
        full.update(env or {})
        self.cols = cols
        self.master, slave = os.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, cols, 0, 0))
        argv = [sys.executable, "-m", "app", *args] if code is None else [sys.executable, "-c", code]
        self.proc = subprocess.Popen(argv, stdin=slave,
                                     stdout=subprocess.PIPE if stdout_pipe else slave, stderr=slave, cwd=ROOT,
                                     env=full, start_new_session=True, close_fds=True,
                                     preexec_fn=lambda: fcntl.ioctl(0, termios.TIOCSCTTY, 0))
        os.close(slave)
        self.data = bytearray()
        self._lock = threading.Lock()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        while True:
            try:
                ready, _, _ = select.select([self.master], [], [], 0.05)
                if ready:
                    chunk = os.read(self.master, 65536)
                    if not chunk:
                        return
                    with self._lock:
                        self.data += chunk
            except OSError:  # EIO: every holder of the pty's other side has closed it
                return

    def raw(self) -> str:
        with self._lock:
            return self.data.decode("utf-8", "replace")

    def wait_for(self, needle: str, timeout: float = 20) -> None:
        deadline = time.monotonic() + timeout
        while needle not in ANSI.sub("", self.raw()):
            assert self.proc.poll() is None, f"exited {self.proc.returncode} before {needle!r}:\n{self.raw()[-2000:]}"
            assert time.monotonic() < deadline, f"{needle!r} not shown in {timeout} s:\n{self.raw()[-2000:]}"
            time.sleep(0.05)

    def send(self, keys: str) -> None:
        os.write(self.master, keys.encode())

    def finish(self, timeout: float = 60) -> tuple[int, str, str]:
        """The exit code, everything written to the pty, and stdout when it was a pipe."""
        try:
            out = self.proc.stdout.read().decode() if self.proc.stdout is not None else ""
            rc = self.proc.wait(timeout=timeout)
        finally:
            if self.proc.poll() is None:
                os.killpg(self.proc.pid, 9)
                self.proc.wait()
        self._reader.join(timeout=10)
        os.close(self.master)
        return rc, self.raw(), out


def squeezed(lines: list[str]) -> str:
    """Screen rows joined with every space left out: a line the terminal wrapped reads whole again."""
    return "".join(lines).replace(" ", "")


def frames(raw: str) -> list[str]:
    """Every line the program drew (the live display's too), colours left out."""
    return [ANSI.sub("", part) for part in re.split(r"\r\n|\r|\n", raw) if ANSI.sub("", part).strip()]


def test_run_on_a_terminal_draws_the_live_bar_with_the_points_figures(tmp_path: Path) -> None:
    out = tmp_path / "out"
    term = Terminal(["run", "custom", "--set", "runtime=3", *SHORT_RUN, "--target", str(tmp_path / "t.img"),
                     "--out", str(out)])
    rc, raw, _ = term.finish()
    assert rc == 0, raw[-2000:]
    drawn = frames(raw)
    bars = [f for f in drawn if "━" in f and "1 points" in f]
    assert any(re.search(r"0/1 points +\d+% +elapsed \d+s +ETA \d+s$", f) for f in bars), bars[:5]
    assert any("▸ randread 4K QD1 T1" in f and " of ~" in f for f in drawn)
    live = [f for f in drawn if re.fullmatch(r"  [\d.]+[kM]? IOPS · [\d.]+ MB/s · mean [\d.]+ µs · p99 [\d.]+ µs", f)]
    assert live, "the point's live IOPS, MB/s, mean and p99 latency: " + repr(drawn[-12:])
    assert all(len(f) <= 80 for f in drawn if "━" in f or "─" in f or f.startswith(("▸", "  "))), \
        "the live display fits 80 columns"
    screen = [line for line in Screen(raw, 80).lines() if line]
    record = json.loads((out / "results.jsonl").read_text())
    done = f"[1/1] randread 4K QD1 T1: {metrics_line('storage', record['metrics'])}"
    assert done.replace(" ", "") in squeezed(screen), "the completed point's line stays above the bar"
    final = [line for line in screen if "━" in line]
    assert len(final) == 1 and re.search(r"━ 1/1 points 100% elapsed \d+s$", final[0]), final
    assert not any("▸" in line or "IOPS ·" in line or "waiting" in line for line in screen), \
        "the live lines are gone once the run ended"
    assert squeezed(screen).endswith(f"complete: 1/1 points — results in {out}".replace(" ", "")), screen[-3:]
    assert raw.rfind("\x1b[?25h") > raw.rfind("\x1b[?25l"), "the cursor is shown again"


def test_ctrl_c_leaves_a_clean_terminal_and_says_what_is_kept(tmp_path: Path) -> None:
    """^C typed at the terminal mid-point (under NO_COLOR): exit 130, the bar's last frame whole on one line,
    no live line or echoed ^C left, the cursor back, and the same sentence as ever."""
    out = tmp_path / "out"
    term = Terminal(["run", "custom", "--set", "runtime=20", *SHORT_RUN, "--target", str(tmp_path / "t.img"),
                     "--out", str(out)], env={"NO_COLOR": "1"})
    term.wait_for("IOPS ·")
    term.send("\x03")
    rc, raw, _ = term.finish(timeout=30)
    assert rc == 130, raw[-2000:]
    assert not COLOUR.search(raw), "NO_COLOR: no colour at all"
    screen = [line for line in Screen(raw, 80).lines() if line]
    bar = [i for i, line in enumerate(screen) if "━" in line or "─" in line]
    assert len(bar) == 1 and re.search(r"0/1 points +\d+% elapsed \d+s  stopped$", screen[bar[0]]), screen
    assert not any(("▸" in line or "IOPS ·" in line or "waiting" in line or "ETA" in line or "^C" in line)
                   for line in screen), screen
    after = squeezed(screen[bar[0] + 1:])
    assert after == f"Interrupted: 0 of 1 points are kept in {out}; finish with `profiler-tui resume {out}`.".replace(
        " ", ""), screen[bar[0]:]
    assert raw.rfind("\x1b[?25h") > raw.rfind("\x1b[?25l"), "the cursor is shown again"
    assert json.loads((out / "run.json").read_text())["status"] == "interrupted"


def summary(out: Path) -> list[str]:
    """The summary lines a run prints after its table (app.report.sections.answer), as wide as they take (piped)."""
    from app.report.compute import analysis as an
    from app.report.data.model import load
    from app.report.sections.answer import plain_lines

    data = load(out)
    return ["", *plain_lines(data, an.storage_curves(data.storage, data.path), an.DEFAULT_P99_BOUND_US * 1e3, None)]


def test_piped_run_prints_the_plain_lines_of_before_and_loads_no_rich(tmp_path: Path) -> None:
    out = tmp_path / "out"
    sets = ["runtime=1", "bs=4k,64k", "size=16m", "ramp_time=0", "rw=randread"]
    args = ["run", "custom", *[a for s in sets for a in ("--set", s)], "--yes", "--target", str(tmp_path / "t.img"),
            "--out", str(out)]
    flag = tmp_path / "rich-loaded"
    code = (f"import atexit, sys; atexit.register(lambda: open({str(flag)!r}, 'w').write(str('rich' in sys.modules)));"
            f"sys.argv = ['profiler-tui', *{args!r}]; from app.__main__ import main; main()")
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120,
                          env={**os.environ, "COLUMNS": "80"})  # piped, COLUMNS changes nothing
    assert proc.returncode == 0, proc.stderr
    assert flag.read_text() == "False", "a piped run imports no rich"
    plan = presets.apply_overrides(presets.load("custom"), sets).expand()
    records = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    labels = [point_label("storage", p) for p in plan]
    marks = [(" " + flag_text(flag_names(read_line(r)))).rstrip() for r in records]  # a flagged point: its mark
    done = [f"{metrics_line('storage', r['metrics'])}{mark}" for r, mark in zip(records, marks)]
    expected = (f"2 of 2 points to run, estimated {format_duration(sum(map(estimate_point_seconds, plan)))}"
                f" — results in {out}\n"
                f"[1/2] {labels[0]} ...\n[1/2] {labels[0]}: {done[0]}\n"
                f"[2/2] {labels[1]} ...\n[2/2] {labels[1]}: {done[1]}\n"
                + results_table([read_line(r) for r in records]) + "\n" + "".join(f"{x}\n" for x in summary(out))
                + f"complete: 2/2 points — results in {out}\n")
    assert proc.stdout == expected
    assert "Summary\n- Most IOPS: " in proc.stdout  # the answer, after the table
    assert "\x1b" not in proc.stdout + proc.stderr


def test_json_stream_draws_the_bar_on_a_terminals_stderr_while_stdout_is_piped(tmp_path: Path) -> None:
    term = Terminal(["run", "custom", "--set", "runtime=1", *SHORT_RUN, "--json-stream", "--target",
                     str(tmp_path / "t.img"), "--out", str(tmp_path / "out")], stdout_pipe=True)
    rc, raw, out = term.finish()
    assert rc == 0, raw[-2000:]
    events = [json.loads(line)["event"] for line in out.splitlines()]
    assert events[0] == "run_started" and events[-1] == "run_finished", "stdout holds only the NDJSON"
    assert any(re.search(r"━ 1/1 points 100% elapsed \d+s$", line) for line in Screen(raw, 80).lines())
    assert "complete: 1/1 points" in raw


def _terminal_output(args: list[str], cols: int = 80, env: dict[str, str] | None = None) -> tuple[str, list[str]]:
    rc, raw, _ = Terminal(args, cols=cols, env=env).finish()
    assert rc == 0, raw[-2000:]
    return raw, [line for line in Screen(raw, cols).lines() if line]


def _no_wrap(raw: str, cols: int) -> None:
    too_long = [line for line in frames(raw) if len(line) > cols]
    assert not too_long, f"lines wider than {cols} columns: {too_long[:3]}"


def test_presets_and_devices_are_tables_on_a_terminal_and_honour_no_color() -> None:
    raw, screen = _terminal_output(["presets"])
    _no_wrap(raw, 80)
    assert re.match(r"preset +kind +points +est\. +writes +description$", screen[0]) and set(screen[1]) == {"─"}
    names = [s["name"] for s in map(presets.summary, presets.load_all())]
    assert [line.split()[0] for line in screen[2:] if not line.startswith(" ")] == names
    assert COLOUR.search(raw), "control: colours without NO_COLOR"
    raw, _ = _terminal_output(["presets"], env={"NO_COLOR": "1"})
    assert not COLOUR.search(raw) and "\x1b[1m" in raw, "NO_COLOR: bold but no colour"
    raw, screen = _terminal_output(["devices"])
    _no_wrap(raw, 80)
    assert screen[0].startswith("DEVICE") or screen[1].startswith("DEVICE"), screen[:3]
    assert any(v in "".join(screen) for v in ("refused", "ok with --yes", "needs --allow-destructive", "ok"))


def test_compare_on_a_terminal_fits_its_wide_table_to_80_columns_and_out_stays_markdown(tmp_path: Path) -> None:
    md = tmp_path / "compare.md"
    raw, screen = _terminal_output(["compare", str(GOLDEN_RUN), str(GOLDEN_RUN), "--out", str(md)])
    _no_wrap(raw, 80)
    text = "\n".join(screen)
    headers = [line for line in screen if line.startswith("Workload")]
    assert len(headers) == 1 and re.match(r"Workload +Figure +A +B +B/A +\(95 %\) +Noise$", headers[0]), \
        "the storage table (a row per point and figure, 8 columns) is one table: its method moves under each row"
    assert "  How: A, B: no samples" in screen, "a row's method under it, named"
    memory = screen[screen.index("Memory"):]
    assert re.match(r" +B − A$", memory[1]) and re.match(r"Point +Figure .* \(95 %\) +Noise$", memory[2]), \
        "the empty interval column keeps its header on two lines (was four, 3 characters wide)"
    for column in ("Figure", "B/A", "Noise", "How", "IOPS", "p99 µs", "no interval"):
        assert column in text
    assert "Geometric mean of the IOPS ratios over 18 matched points: 1.00×." in text
    assert "|" not in text, "tables, not markdown"
    assert md.read_text(encoding="utf-8") == compare_runs(str(GOLDEN_RUN), str(GOLDEN_RUN)), "--out keeps markdown"
    piped = run_cli("compare", str(GOLDEN_RUN), str(GOLDEN_RUN))
    assert piped.returncode == 0 and piped.stdout == md.read_text(encoding="utf-8"), "piped: the markdown as before"


def test_help_and_piped_listings_do_not_import_rich(tmp_path: Path) -> None:
    for args in (["--help"], ["presets"], ["presets", "--json"], ["devices"], ["run", "--help"]):
        code = ("import sys\nfrom app.cli.commands import main\ntry:\n    main(" + repr(args) + ")\n"
                "except SystemExit as e:\n    code = e.code\nprint('rich' in sys.modules, code, file=sys.stderr)\n")
        proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60)
        assert proc.stderr.splitlines()[-1] == "False 0", (args, proc.stderr[-1000:])
    # and the check can see rich: on a terminal, the same listing loads it
    code = ("import sys\nfrom app.cli.commands import main\ntry:\n    main(['presets'])\nexcept SystemExit:\n    pass\n"
            "print('LOADED', 'rich' in sys.modules)\n")
    rc, raw, _ = Terminal([], code=code).finish()
    assert rc == 0 and "LOADED True" in raw, raw[-500:]


def _widest(lines: list[str]) -> int:
    return max(len(line) for line in lines)


def test_at_80_columns_run_compare_and_presets_show_fit_and_a_sparse_targets_reads_are_marked(tmp_path: Path) -> None:
    """A never-written 256 MiB file read at 80 columns: its holes are named before the first point, every point line
    and table row carries the not-on-device mark, and no line of run, compare or presets show is wider than 80
    (a terminal's width and COLUMNS alike); at 120 columns compare keeps its full table."""
    sparse = tmp_path / "sparse.img"
    with open(sparse, "wb") as f:
        f.truncate(256 << 20)
    sets = ["runtime=1", "ramp_time=0", "rw=read,randread", "bs=1m"]
    args = [a for s in sets for a in ("--set", s)] + ["--yes"]
    raw, screen = _terminal_output(["run", "custom", *args, "--set", "size=256m", "--target", str(sparse), "--out",
                                    str(tmp_path / "a")])
    _no_wrap(raw, 80)
    text = squeezed(screen)
    warned = text.index(f"Warning: {sparse}: its blocks are unwritten".replace(" ", ""))
    assert warned < text.index("pointstorun"), "named before the run"
    assert "readsneverreachthedevice" in text and "--setprecondition=sequential" in text
    records = [json.loads(line) for line in (tmp_path / "a" / "results.jsonl").read_text().splitlines()]
    assert all("not-on-device" in flag_names(read_line(r)) for r in records), "the sparse file's reads are flagged"
    done = [i for i, line in enumerate(screen) if re.match(r"\[\d/2\] ", line) and "IOPS" in line]
    assert len(done) == 2
    for i in done:  # the point line, or the line its flags wrapped onto, carries the mark and the name
        block = " ".join(screen[i:i + 3])
        assert f"{FLAG_MARK} " in block and "not-on-device" in block, screen[i:i + 3]
    rows = [i for i, line in enumerate(screen) if re.match(r"(rand)?read 1M QD1 T1 ", line)]
    assert len(rows) == 2 and all("not-on-device" in " ".join(screen[i:i + 2]) for i in rows), screen
    assert any(line.startswith(f"{FLAG_MARK} not-on-device: the device's own counters") for line in screen)

    written = tmp_path / "written.img"
    written.write_bytes(os.urandom(4 << 20))
    run_cli("run", "custom", *args, "--set", "size=4m", "--target", str(written), "--out", str(tmp_path / "b"),
            check=True)
    raw, screen = _terminal_output(["compare", str(tmp_path / "a"), str(tmp_path / "b")])
    _no_wrap(raw, 80)
    assert any("B − A" in line for line in screen) and not any(len(line.split()) == 1 and line.strip() in (
        "B", "−", "A", "(95", "%)") for line in screen), "the interval's header takes at most two lines"
    raw, wide = _terminal_output(["compare", str(tmp_path / "a"), str(tmp_path / "b")], cols=120)
    _no_wrap(raw, 120)
    head = [i for i, line in enumerate(wide) if line.startswith("Workload")]
    # the flags are a column when they fit beside How, else a line under each row (A's flags vary with the
    # machine: sparse reads at 25 GB/s may or may not also be cpu-bound)
    assert len(head) == 1 and re.match(r"Workload +Figure +A +B +B/A +(B − A )?\(95 %\) +Noise +How( +Flags A)?$",
                                       wide[head[0]]), wide[head[0] - 1:head[0] + 3]
    assert "Flags A" in wide[head[0]] or wide[head[0] + 3].lstrip().startswith("Flags A: "), wide[head[0]:head[0] + 4]

    raw, screen = _terminal_output(["presets", "show", "quick"])
    _no_wrap(raw, 80)
    assert screen[0].startswith("quick (storage) — ") and screen[1].startswith("    "), "the header wraps, indented"
    raw, _ = _terminal_output(["presets", "show", "snia-iops"], cols=120, env={"COLUMNS": "80"})
    _no_wrap(raw, 80)  # COLUMNS before the terminal's own width, as rich reads it
    piped = run_cli("presets", "show", "quick", env={"COLUMNS": "80"})
    assert piped.returncode == 0 and _widest(piped.stdout.splitlines()) > 80, "piped: a line per point, as before"
