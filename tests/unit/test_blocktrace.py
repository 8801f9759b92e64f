"""The block tracer's parts that need no kernel: its program text (integers only), the strict parser of its output
(property tests), the buckets and percentiles, every reason it is unavailable, the ``layers`` part, and the report's
"Where the time goes" subsection with its fallback to the device counters' mean."""

from __future__ import annotations

import asyncio
import os
import re
import stat
import time
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from app.host import blocktrace as bt
from app.report.data.model import load
from app.report.sections.layers import layers_section
from tests.helpers.tail_runs import device_part, storage_line, write_run

# --- the program -------------------------------------------------------------------------------------------------


def test_the_program_holds_the_device_number_and_nothing_else_that_varies() -> None:
    text = bt.program(7, 3)
    assert f"args->dev == {(7 << 20) | 3}/" in text
    assert text.count(str((7 << 20) | 3)) == 4  # io_start, issue, complete, io_done: every per-request probe filtered
    assert "interval:ms:200 " in text
    older = bt.program(7, 3, accounting=False)  # a kernel before 6.5: no block_io_start/block_io_done
    assert older.count(str((7 << 20) | 3)) == 3 and "block_io_" not in older and "@c" not in older


def test_the_three_parts_time_the_span_the_device_counters_time() -> None:
    """The counters add now - start_time_ns at blk_account_io_done, stamped after blk_account_io_start: the program
    times block_io_start -> block_rq_issue -> block_rq_complete -> block_io_done, each request from one probe to the
    next (one clock reading per probe), so the three parts add up to the span; the older kernels' program starts at
    block_rq_insert and has no completion part."""
    text = bt.program(7, 3)
    order = [text.index(f"tracepoint:block:{e} ") for e in ("block_io_start", "block_rq_issue", "block_rq_complete",
                                                            "block_io_done")]
    assert order == sorted(order)
    issue, complete, done = text.split("interval:")[0].split("tracepoint:block:")[2:5]
    assert "@st[args->sector]" in issue and "$q = $now - $t" in issue and "@iss[args->sector] = $now" in issue
    assert "$d = $now - $t" in complete and "@cmp[args->sector] = $now" in complete
    assert "$c = $now - $t" in done and "@c[" in done and "@cs = sum($c)" in done
    assert all(probe.count("nsecs") == 1 for probe in (issue, complete, done))
    assert "print(@c); " in text and "print(@cs); " in text
    for prog in (text, bt.program(7, 3, accounting=False)):  # running totals: cleared only at the end
        assert "clear(" not in prog.split("interval:")[1].split("END")[0] and "clear(@d);" in prog.split("END")[1]
    with pytest.raises(ValueError):
        bt.program(7, 3, "1000; system(\"id\")")  # type: ignore[arg-type]
    assert text.replace(str((7 << 20) | 3), "DEV") == bt.program(259, 1).replace(str((259 << 20) | 1), "DEV")
    assert not re.search(r"kprobe|uprobe|system\(|cat\(|str\(", text)  # tracepoints only; no command, no file


@pytest.mark.parametrize("major, minor", [(-1, 0), (0, -1), (4096, 0), (0, 1 << 20), ("7", 0), (True, 0),
                                          (7.0, 0), (7, "0; system(\"id\")")])
def test_a_device_number_that_is_not_two_integers_in_range_is_refused(major: object, minor: object) -> None:
    with pytest.raises(ValueError):
        bt.program(major, minor)  # type: ignore[arg-type]


# --- buckets ------------------------------------------------------------------------------------------------------


def bucket_of(v: int) -> int:
    """The key the program computes for ``v`` ns (its while loop, in Python)."""
    b = 0
    while v >= bt.SUB:
        v >>= 1
        b += 1
    return b * bt.SUB + v


@given(st.integers(min_value=0, max_value=(1 << 63) - 1))
def test_every_time_lands_in_a_bucket_that_holds_it_and_is_at_most_an_eighth_wide(v: int) -> None:
    k = bucket_of(v)
    assert bt.valid_key(k)
    lo, hi = bt.bucket_bounds(k)
    assert lo <= v < hi
    assert hi - lo == 1 or (hi - lo) / lo <= 0.125


def test_percentiles_of_a_bucket_histogram() -> None:
    hist = {bucket_of(1000): 50, bucket_of(100_000): 49, bucket_of(10_000_000): 1}
    assert bt.percentile({}, 0.5) is None
    lo, hi = bt.bucket_bounds(bucket_of(1000))
    assert bt.percentile(hist, 0.5) == (lo + hi) / 2
    assert abs(bt.percentile(hist, 0.99) - 100_000) / 100_000 < 0.07  # type: ignore[operator]
    assert bt.percentile({bucket_of(0): 10}, 0.99) == 0.0


# --- the parser ---------------------------------------------------------------------------------------------------

keys = st.integers(min_value=0, max_value=bt.MAX_EXP * bt.SUB + bt.SUB - 1).filter(bt.valid_key)
hists = st.dictionaries(keys, st.integers(min_value=1, max_value=(1 << 59) - 1), max_size=12)
sums = st.integers(min_value=0, max_value=(1 << 60) - 1)
intervals = st.lists(st.tuples(st.integers(min_value=0, max_value=10**9), hists, hists, hists, sums, sums, sums),
                     max_size=8)
Rendered = tuple[int, dict[int, int], dict[int, int], dict[int, int], int, int, int]


def render(ivs: list[Rendered], t0: int = 10**12) -> bytes:
    """The output bpftrace gives for these intervals (its blank line for an empty map, as it prints one): its maps
    never cleared, so each printing is the running total (every key printed once seen)."""
    out = [b"Attaching 6 probes..."]
    t = t0
    totals: list[dict[int, int]] = [{}, {}, {}]
    sums = [0, 0, 0]
    for step, q, d, c, qs, ds, cs in ivs:
        t += step
        out.append(b"tick %d" % t)
        for name, hist, total in zip((b"q", b"d", b"c"), (q, d, c), totals):
            for k, n in hist.items():
                total[k] = total.get(k, 0) + n
            out += [b"@%s[%d]: %d" % (name, k, n) for k, n in total.items()] or [b""]
        for i, (name, n) in enumerate(zip((b"qs", b"ds", b"cs"), (qs, ds, cs))):
            sums[i] += n
            out.append(b"@%s: %d" % (name, sums[i]))
    return b"\n".join(out) + b"\n"


@settings(max_examples=150)
@given(intervals, st.lists(st.integers(min_value=1, max_value=64), max_size=20))
def test_the_parser_reads_back_what_the_program_prints_however_the_output_is_cut(ivs, cuts) -> None:
    data = render(ivs)
    parser = bt.TraceParser()
    at = 0
    for c in cuts:
        parser.feed(data[at:at + c])
        at += c
    parser.feed(data[at:])
    parser.close()
    assert parser.refused is None and parser.attached
    got = [(iv.queue, iv.device, iv.completion, iv.queue_sum_ns, iv.device_sum_ns, iv.completion_sum_ns)
           for iv in parser.intervals]
    assert got == [(q, d, c, qs, ds, cs) for _, q, d, c, qs, ds, cs in ivs]


@settings(max_examples=300)
@given(st.binary(max_size=600), st.binary(max_size=200))
def test_any_output_is_read_without_error_and_what_is_kept_is_the_programs_own(head: bytes, tail: bytes) -> None:
    parser = bt.TraceParser()
    parser.feed(b"Attaching 5 probes...\ntick 5\n" + head)
    parser.feed(tail)
    parser.close()
    for iv in parser.intervals:
        assert all(bt.valid_key(k) and 0 <= n < 1 << 63 for k, n in {**iv.queue, **iv.device,
                                                                       **iv.completion}.items())
        assert all(0 <= n < 1 << 64 for n in (iv.queue_sum_ns, iv.device_sum_ns, iv.completion_sum_ns))
    assert [iv.t_ns for iv in parser.intervals] == sorted(iv.t_ns for iv in parser.intervals)


@pytest.mark.parametrize("line, why", [
    (b"@q[17]: 3", "bucket"),  # 17 = exponent 1, top bits 1: the program never prints it
    (b"@x[16]: 3", "not its own"),
    (b"\x1b]0;owned\x07", "not its own"),
    (b"tick 4", "backwards"),
    (b"@qs: 1\n@qs: 2", "sum"),
    (b"@cs: 1\n@cs: 2", "sum"),
    (b"@c[17]: 3", "bucket"),
    (b"@d[24]: 1\n@d[24]: 2", "bucket"),
    (b"@q[24]: " + b"9" * 30, "not its own"),
    (b"x" * 300, "longer"),
])
def test_a_line_that_is_not_the_programs_refuses_the_whole_trace(line: bytes, why: str) -> None:
    parser = bt.TraceParser()
    parser.feed(b"Attaching 5 probes...\ntick 5\n@q[0]: 7\n" + line + b"\ntick 9\n@d[24]: 1\n")
    assert parser.refused is not None and why in parser.refused
    assert "\x1b" not in parser.refused
    assert [iv.t_ns for iv in parser.intervals] == [5]  # nothing after the refusal is taken


def test_an_interval_is_the_increase_of_the_running_totals_and_a_total_that_shrinks_refuses_the_trace() -> None:
    """The program never clears its maps while tracing (bpftrace would clear them from user space, after the probe
    asked, losing what was counted meanwhile): each interval is the difference of two printings."""
    parser = bt.TraceParser()
    parser.feed(b"Attaching 6 probes...\ntick 5\n@d[24]: 3\n@d[40]: 1\n@ds: 700\n"
                b"tick 9\n@d[24]: 3\n@d[40]: 4\n@d[56]: 2\n@ds: 2000\n@qs: 0\n")
    parser.close()
    assert parser.refused is None
    assert [(iv.device, iv.device_sum_ns) for iv in parser.intervals] == [({24: 3, 40: 1}, 700),
                                                                          ({40: 3, 56: 2}, 1300)]
    for shrinks in (b"@d[24]: 2", b"@ds: 699"):
        parser = bt.TraceParser()
        parser.feed(b"tick 5\n@d[24]: 3\n@ds: 700\ntick 9\n" + shrinks + b"\n")
        assert parser.refused is not None and "cannot have" in parser.refused, shrinks


def test_an_interval_read_late_ends_when_it_was_read() -> None:
    """bpftrace reads a printed map when its user space gets to it: a lagging tracer's counts are those of the time
    it read them, so an interval ends no earlier than its lines arrived (the window then takes it where it was)."""
    parser = bt.TraceParser()
    parser.feed(b"tick 5\n@d[24]: 3\n", arrived_ns=6)
    parser.feed(b"tick 9\n@d[24]: 4\ntick 12\n@d[24]: 6\n", arrived_ns=40)  # two intervals read together, late
    parser.feed(b"tick 50\n@d[24]: 6\n", arrived_ns=51)
    assert parser.refused is None and [iv.t_ns for iv in parser.intervals] == [6, 40, 40, 51]
    assert [iv.device for iv in parser.intervals] == [{24: 3}, {24: 1}, {24: 2}, {}]
    parser.feed(b"tick 49\n", arrived_ns=60)  # the tracer's own clock still may not go back
    assert parser.refused is not None and "backwards" in parser.refused


def test_what_is_held_is_bounded_however_long_the_point(monkeypatch: pytest.MonkeyPatch) -> None:
    """At MAX_INTERVALS intervals each pair of neighbours is merged: the counts stay, the span doubles."""
    monkeypatch.setattr(bt, "MAX_INTERVALS", 8)
    parser = bt.TraceParser()
    for i in range(100):
        parser.feed(b"tick %d\n@d[24]: %d\n@ds: %d\n" % (i + 1, i + 1, 10 * (i + 1)))  # running totals
    parser.close()
    assert parser.refused is None and len(parser.intervals) <= 8
    assert sum(iv.device[24] for iv in parser.intervals) == 100
    assert sum(iv.device_sum_ns for iv in parser.intervals) == 1000 and parser.intervals[-1].t_ns == 100
    parser = bt.TraceParser()
    parser.feed(b"tick 1\n@q[0]" + b"0" * 500)  # a line without its end, longer than any of the program's
    assert parser.refused is not None and "longer" in parser.refused


# --- the layers part ----------------------------------------------------------------------------------------------


def interval(t_s: float, device_ns: int, n: int) -> bt.Interval:
    return bt.Interval(int(t_s * 1e9), {0: n}, {bucket_of(device_ns): n}, 0, device_ns * n)


def test_the_part_has_the_three_parts_that_add_up_to_the_counters_span_and_says_where_the_queue_starts() -> None:
    iv = bt.Interval(10**9, {bucket_of(400): 100}, {bucket_of(9_000): 100}, 400 * 100, 9_000 * 100,
                     {bucket_of(1_200): 99}, 1_200 * 99)
    part: dict[str, Any] = bt.layers_part("loop3", [iv], (None, None), None, None)
    assert part["queue_from"] == "block_io_start"
    assert part["queue"]["mean_ns"] == 400.0 and part["device_time"]["mean_ns"] == 9000.0
    assert part["completion"] == {"requests": 99, "mean_ns": 1200.0,
                                  "p50_ns": part["completion"]["p50_ns"], "p99_ns": part["completion"]["p99_ns"]}
    assert 1_100 <= part["completion"]["p50_ns"] <= 1_300
    older = bt.layers_part("loop3", [iv], (None, None), None, None, accounting=False)
    assert older["queue_from"] == "block_rq_insert" and "completion" not in older
    merged = bt.merged([iv, iv])
    assert merged.completion == {bucket_of(1_200): 198} and merged.completion_sum_ns == 2 * 1_200 * 99
    raw = iv.json()  # the point's raw .layers.jsonl line
    assert raw["completion"] == {str(bucket_of(1_200)): 99} and raw["completion_sum_ns"] == 1_200 * 99


def test_the_part_keeps_the_seconds_of_fios_window_and_its_means_are_exact() -> None:
    ivs = [interval(1, 1_000_000, 10), interval(2, 20_000, 100), interval(3, 20_000, 100)]
    a, b = bt.CpuReading(0.0, 1.0), bt.CpuReading(4.0, 1.02)
    part: dict[str, Any] = bt.layers_part("loop3", ivs, (1_500_000_000, None), (a, b), 0.4)
    assert part["intervals"] == 2
    assert part["device_time"] == {"requests": 200, "mean_ns": 20000.0, "p50_ns": part["device_time"]["p50_ns"],
                                   "p99_ns": part["device_time"]["p99_ns"]}
    assert part["queue"]["mean_ns"] == 0.0
    assert part["tracer_cpu_s"] == 0.02 and part["tracer_cpu_share"] == 0.005 and part["tracer_start_cpu_s"] == 0.4
    assert bt.layers_part("dm-0", [], (None, None), None, None)["unavailable"].startswith(  # type: ignore[union-attr]
        "no block request of dm-0 completed")


# --- where it is unavailable --------------------------------------------------------------------------------------


def fake_tracefs(tmp_path: Path, events: tuple[str, ...] = (bt.INSERT, *bt.EVENTS, *bt.ACCOUNTING)) -> Path:
    root = tmp_path / "tracing"
    (root / "events").mkdir(parents=True)
    for e in events:
        (root / "events" / "block" / e).mkdir(parents=True)
        (root / "events" / "block" / e / "format").write_text("name: " + e)
    return root


def test_each_reason_it_is_unavailable_is_one_sentence_naming_it(tmp_path: Path,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    btf = tmp_path / "vmlinux"
    btf.write_bytes(b"BTF")
    tracefs = fake_tracefs(tmp_path)
    assert "not running as root" in bt.unavailable(euid=1000, btf=btf, tracefs=tracefs)  # type: ignore[operator]
    assert "no BTF" in bt.unavailable(euid=0, btf=tmp_path / "none", tracefs=tracefs)  # type: ignore[operator]
    why = bt.unavailable(euid=0, btf=btf, tracefs=tmp_path / "not-mounted")
    assert why is not None and "tracefs is not mounted" in why and "mount -t tracefs" in why
    partial = fake_tracefs(tmp_path / "p", ("block_rq_issue", "block_rq_complete"))
    why = bt.unavailable(euid=0, btf=btf, tracefs=partial)
    assert why is not None and "block_io_start" in why and "block_rq_insert" in why
    assert "block_rq_issue" in bt.unavailable(euid=0, btf=btf, tracefs=fake_tracefs(  # type: ignore[operator]
        tmp_path / "i", ("block_rq_complete", *bt.ACCOUNTING)))
    newer = fake_tracefs(tmp_path / "n", (*bt.EVENTS, *bt.ACCOUNTING))  # no block_rq_insert needed then
    older = fake_tracefs(tmp_path / "o", (*bt.EVENTS, bt.INSERT))
    assert bt.accounted(newer) and not bt.accounted(older) and not bt.accounted(partial)
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    assert bt.unavailable(euid=0, btf=btf, tracefs=tracefs) == "bpftrace is not installed (not on PATH)"
    for why in filter(None, [bt.unavailable(euid=1000, btf=btf, tracefs=tracefs)]):
        assert why.count(". ") == 0 and "\n" not in why


def test_a_bpftrace_another_user_can_change_is_not_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    shared = tmp_path / "shared"
    shared.mkdir()
    os.chmod(shared, 0o777)  # anyone may replace what is in it (not sticky)
    prog = shared / "bpftrace"
    prog.write_text("#!/bin/sh\n")
    os.chmod(prog, stat.S_IRWXU)
    monkeypatch.setenv("PATH", str(shared))
    path, why = bt.which_bpftrace()
    assert path is None and why is not None and "install it where only root can write" in why


def test_without_btf_the_point_gets_the_reason_and_no_tracer(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(bt, "BTF", Path("/nonexistent/vmlinux"))
    tracer = asyncio.run(bt.start_tracing("/dev/null"))
    assert isinstance(tracer, str)
    no_btf = "the kernel has no BTF (/nonexistent/vmlinux is missing), which bpftrace needs"
    assert tracer == (no_btf if os.geteuid() == 0 else "eBPF tracing needs root and the tool is not running as root")
    assert bt.tracing_part(tracer, None) == {"unavailable": tracer}
    assert bt.tracing_part(None, None) is None  # not asked: no part


def test_a_partition_is_traced_as_its_disk(tmp_path: Path) -> None:
    """The tracepoints name the disk a request goes to, never a partition."""
    target = tmp_path / "file"
    target.write_bytes(b"")
    st_dev = os.stat(target).st_dev
    number = f"{os.major(st_dev)}:{os.minor(st_dev)}"
    sysfs = tmp_path / "sys"
    disk = sysfs / "devices" / "virtual" / "block" / "sdz"
    part = disk / "sdz1"
    part.mkdir(parents=True)
    (part / "partition").write_text("1\n")
    (part / "stat").write_text("0 " * 17)
    (part / "dev").write_text(number + "\n")
    (disk / "dev").write_text("8:0\n")
    (sysfs / "dev" / "block").mkdir(parents=True)
    (sysfs / "dev" / "block" / number).symlink_to(part)
    if os.major(st_dev) == 0:
        pytest.skip("the test directory is on a filesystem with no block device")
    assert bt.traced_device(str(target), sysfs) == ("sdz", 8, 0)
    (disk / "dev").write_text("8:0; rm\n")
    assert "no readable device number" in bt.traced_device(str(target), sysfs)


# --- the report ---------------------------------------------------------------------------------------------------


def test_the_report_splits_fios_latency_and_says_why_a_point_was_not_traced(tmp_path: Path) -> None:
    traced = storage_line(0, 100_000, 50_000, iodepth=1, layers=True,
                          device=device_part(100_000 * 4096, 1.0, 31_000.0))
    traced["layers"] = {"source": "ebpf", "device": "loop9", "intervals": 10, "queue_from": "block_io_start",
                        "queue": {"requests": 100_000, "mean_ns": 400.0, "p50_ns": 368.0, "p99_ns": 1_600.0},
                        "device_time": {"requests": 100_000, "mean_ns": 30_000.0, "p50_ns": 28_000.0,
                                        "p99_ns": 90_000.0},
                        "completion": {"requests": 100_000, "mean_ns": 1_200.0, "p50_ns": 1_000.0,
                                       "p99_ns": 5_000.0},
                        "tracer_cpu_s": 0.05, "tracer_cpu_share": 0.005, "tracer_start_cpu_s": 0.4}
    older = storage_line(3, 100_000, 50_000, iodepth=8, layers=True)  # a kernel before 6.5: two parts
    older["layers"] = {"source": "ebpf", "device": "loop9", "queue_from": "block_rq_insert",
                       "queue": {"requests": 9, "mean_ns": 0.0, "p50_ns": 0.0, "p99_ns": 0.0},
                       "device_time": {"requests": 9, "mean_ns": 30_000.0, "p50_ns": 28_000.0, "p99_ns": 90_000.0}}
    fallback = storage_line(1, 100_000, 50_000, iodepth=2, layers=True,
                            device=device_part(100_000 * 4096, 1.0, 41_000.0))
    fallback["layers"] = {"unavailable": "tracefs is not mounted at /sys/kernel/tracing\x1b[31m"}
    plain = storage_line(2, 100_000, 50_000, iodepth=4)
    data = load(write_run(tmp_path / "run", [traced, fallback, plain, older]))
    text = "\n".join(layers_section(data.storage, lambda p: f"QD{p.point['iodepth']}"))
    assert text.startswith("### Where the time goes, by layer")
    mean = next(ln for ln in text.splitlines() if "| QD1 " in ln)
    fio_mean = traced["metrics"]["lat_ns"]["mean"]
    cells = [c.strip() for c in mean.split("|")[1:-1]]
    assert cells[1] == "mean" and cells[2] == f"{fio_mean / 1e3:.2f}"
    assert cells[3] == f"{(fio_mean - 31_600) / 1e3:.2f}" and cells[4] == "0.40" and cells[5] == "30.00"
    assert cells[6] == "1.20" and cells[7] == "0.50 % of a CPU (+0.40 CPU-s to start)"
    assert ("- QD1: queue + device + completion 31.60 µs per request; the device counters' mean 31.00 µs (+1.9 %), "
            "of which the device part alone 30.00 µs") in text
    old = [c.strip() for c in next(ln for ln in text.splitlines() if "| QD8 " in ln).split("|")[1:-1]]
    assert old[3] == f"{(fio_mean - 30_000) / 1e3:.2f}" and old[6] == "n/a"  # no completion part: none subtracted
    assert "- QD8:" not in text
    assert "block_io_start → block_rq_issue" in text and "block_rq_complete → block_io_done" in text
    assert "| p99 " in text.replace("|        | p99", "| p99")
    assert ("- QD2: not traced: tracefs is not mounted at /sys/kernel/tracing; the device counters' mean instead: "
            "41.00 µs per request") in text
    assert "\x1b" not in text and "QD4" not in text
    assert layers_section([r for r in data.storage if r.point["iodepth"] == 4], lambda p: "x") == []


def test_a_fleet_run_refuses_the_trace_which_reads_this_machines_device() -> None:
    from app.core.errors import UsageError
    from app.engine.sweep import _check_fleet_plan
    from app.model.points import Kind
    from app.plan import presets

    preset = presets.apply_overrides(presets.load("quick"), ["layers=true"])
    with pytest.raises(UsageError, match="key 'layers' has value true, which needs the target's device"):
        _check_fleet_plan(Kind(preset.kind), preset.procedure, preset.expand(), preset.source)


# --- the tracer process, with a stand-in for bpftrace ---------------------------------------------------------------


def stand_in(tmp_path: Path, body: str) -> str:
    path = tmp_path / "bpftrace"
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(0o755)
    return str(path)


def test_the_tracer_waits_for_its_probes_and_its_last_interval_comes_on_sigint(tmp_path: Path) -> None:
    """SIGINT: bpftrace's END prints the part interval since the last tick, and the part counts it."""
    fake = stand_in(tmp_path, 'trap \'echo "tick 2000000000"; echo "@d[200]: 5"; echo "@ds: 500000"; exit 0\' INT\n'
                              'echo "$@" > ' + str(tmp_path / "argv") + '\necho "Attaching 5 probes..."\n'
                              'echo "tick 1000000000"\necho "@q[0]: 3"\necho "@qs: 0"\n'
                              'while :; do sleep 0.05; done\n')
    tracer = bt.BlockTracer(fake, ("loop9", 7, 9))

    async def run() -> None:
        assert await tracer.start(timeout=10)
        await asyncio.sleep(0.2)
        await tracer.stop()
    asyncio.run(run())
    assert tracer.proc is not None and tracer.proc.returncode == 0
    part: dict[str, Any] = tracer.part((None, None))
    assert part["device_time"] == {"requests": 5, "mean_ns": 100000.0, "p50_ns": part["device_time"]["p50_ns"],
                                   "p99_ns": part["device_time"]["p99_ns"]}
    assert part["queue"]["requests"] == 3 and part["tracer_cpu_share"] is not None
    assert (tmp_path / "argv").read_text().startswith("-e tracepoint:block:block_io_start /args->dev == 7340041/")
    assert tracer.intervals_jsonl().count("\n") == 2


def test_a_tracer_that_fails_or_never_attaches_is_stopped_and_says_why(tmp_path: Path) -> None:
    failing = bt.BlockTracer(stand_in(tmp_path, 'echo "ERROR: \x1b[31mno BTF\x1b[0m for you" >&2\nexit 1\n'),
                             ("loop9", 7, 9))
    assert not asyncio.run(failing.start(timeout=10))
    assert failing.part((None, None)) == {"unavailable": "bpftrace exited before it traced: ERROR: no BTF for you"}
    (tmp_path / "slow").mkdir()
    silent = bt.BlockTracer(stand_in(tmp_path / "slow", "exec sleep 30\n"), ("loop9", 7, 9))
    started = time.monotonic()
    assert not asyncio.run(silent.start(timeout=0.5))
    assert time.monotonic() - started < 5 and silent.proc is not None and silent.proc.returncode is not None
    assert silent.part((None, None)) == {"unavailable": "bpftrace did not attach its probes within 0.5 s"}
    (tmp_path / "rogue").mkdir()
    rogue = bt.BlockTracer(stand_in(tmp_path / "rogue", 'echo "Attaching 5 probes..."\necho "tick 1"\n'
                                                        'echo "rm -rf /"\nexec sleep 30\n'), ("loop9", 7, 9))

    async def run() -> None:
        await rogue.start(timeout=10)
        await asyncio.sleep(0.3)
        await rogue.stop()
    started = time.monotonic()
    asyncio.run(run())
    assert time.monotonic() - started < 5
    assert rogue.part((None, None))["unavailable"].startswith(  # type: ignore[union-attr]
        "the tracer's output was refused: the tracer printed a line that is not its own: rm -rf /")


def test_layers_false_is_the_same_point_as_unset() -> None:
    from app.plan import presets

    off = presets.apply_overrides(presets.load("quick"), ["layers=false"]).expand()
    assert [p.to_dict() for p in off] == [p.to_dict() for p in presets.load("quick").expand()]
    on = presets.apply_overrides(presets.load("quick"), ["layers=true"]).expand()
    assert all(p.to_dict()["layers"] is True for p in on)
