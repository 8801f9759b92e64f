#!/usr/bin/env python3
"""Engine tests run by `make test` (and `make asan-test` with --sanitized).

1. argument validation: bad arguments exit 2 with one clear line on stderr;
2. the counting rule on cases whose bytes are known (--count_check runs exactly N steps and reports the
   lines it really read and wrote), for every traffic type, with and without injection delay;
3. the output: MLC-style table rows streamed one by one, JSON schema, NT types report write traffic;
4. physics (skipped with --sanitized): the load threads' bandwidth falls as delay grows, and the median latency at
   the largest delay is within 15% of the median idle latency (7 alternating pairs of short runs);
5. the suite modes (peak, scaling, matrices, c2c, working set): bad arguments, text layout, JSON, byte counts, the
   plan on a faked two-node sysfs (MEMLAT_SYSFS_ROOT) and a short real run of each; their physics (working-set
   plateaus, c2c range) is skipped with --sanitized.
Standard library only, so it runs before the project's venv exists.
"""
import argparse
import itertools
import json
import os
import platform
import re
import subprocess
import sys
import tempfile
import time

FAILS = []


def check(cond, msg):
    if not cond:
        FAILS.append(msg)
        print("FAIL", msg)


def run(binary, *args, timeout=120, env=None):
    p = subprocess.run([binary, *args], capture_output=True, text=True, timeout=timeout, env=env)
    return p.returncode, p.stdout, p.stderr


def check_error(args, rc, out, err, word, want_rc=2):
    """one line 'memlat: error: ...' naming `word`, the exit code wanted"""
    lines = err.strip().splitlines()
    check(rc == want_rc, f"{args}: exit {rc}, want {want_rc}")
    check(len(lines) == 1 and word.lower() in lines[0].lower() and lines[0].startswith("memlat: error:"),
          f"{args}: stderr {err!r} should be one line mentioning {word!r}")


def usage_errors(binary, cases):
    for args, word in cases:
        rc, out, err = run(binary, *args)
        check_error(args, rc, out, err, word)
        check(out == "", f"{args}: nothing on stdout, got {out!r}")


def test_usage_errors(binary):
    cases = [
        (["--loaded_latency", "-d", "-5"], "negative"),
        (["--loaded_latency", "-D", "0,-100"], "negative"),
        (["--loaded_latency", "-W", "13"], "traffic type"),
        (["--loaded_latency", "-W", "1"], "traffic type"),
        (["--loaded_latency", "-l", "96"], "power of two"),
        (["--loaded_latency", "-l", "32"], "power of two"),
        (["--loaded_latency", "--frobnicate"], "unknown option"),
        (["--loaded_latency", "-Q"], "unknown option"),
        (["--loaded_latency", "-t", "0"], "duration"),
        (["-R"], "no mode"),
        (["--idle_latency", "-b", str(1 << 40)], "4 GiB"),
        (["--idle_latency", "-b", "20000000"], "4 GiB"),  # 19 GiB: refused before anything is allocated
        (["--idle_latency", "-t", "0x10"], "plain decimal"),  # not 16 s
        (["--loaded_latency", "--warmup", "1e-1"], "plain decimal"),
        (["--loaded_latency", "-k", "4000"], "cpu"),
        (["--loaded_latency", "-k", "0"], "two cpus"),
        (["--idle_latency", "--mem_node", "x"], "numa node"),
        (["--idle_latency", "--mem_node", "1024"], "numa node"),
    ]
    if os.path.exists("/sys/devices/system/node/online"):  # a kernel without NUMA refuses every node
        cases.append((["--idle_latency", "--mem_node", "1023"], "does not exist"))
    usage_errors(binary, cases)
    rc, out, _ = run(binary, "--help")
    check(rc == 0 and "--loaded_latency" in out and "-W" in out, "--help")


# bus lines read / written per step; an ordinary store's RFO is a read, an NT store is a write only
KNOWN = {"R": (1, 0), "2": (2, 1), "3": (3, 1), "4": (3, 2), "5": (1, 1), "6": (0, 1), "7": (2, 1),
         "8": (1, 1), "9": (3, 1), "10": (2, 1), "11": (3, 1), "12": (4, 1)}


def test_counting(binary):
    isas = [None, dict(os.environ, MEMLAT_ISA="sse2")] if platform.machine() in ("x86_64", "i686") else [None]
    for code, (r, w) in KNOWN.items():
        traffic = ["-R"] if code == "R" else ["-W", code]
        for (steps, delay), env in itertools.product(((1000, 0), (1001, 3)), isas):
            rc, out, err = run(binary, "--count_check", str(steps), *traffic, "-d", str(delay), env=env)
            check(rc == 0, f"count_check {code}: exit {rc} {err}")
            if rc != 0:
                continue
            d = json.loads(out)
            check(d["read_bytes"] == steps * r * 64 and d["write_bytes"] == steps * w * 64,
                  f"count_check {code} steps={steps}: read {d['read_bytes']} write {d['write_bytes']}, "
                  f"want {steps * r * 64} / {steps * w * 64}")
            check(d["ok"] and d["observed_partial_lines"] == 0, f"count_check {code}: kernel did not do what "
                  f"the count says: {d}")
            # the latency thread's steps count too (MLC's convention): one 64-byte line per step, and the
            # total the bandwidth column reports is the load threads' bytes plus the chase's
            lat = (steps + 15) // 16 * 16
            check(d["latency_steps"] == lat and d["latency_bytes"] == lat * 64
                  and d["observed_latency_bytes"] == lat * 64,
                  f"count_check {code} steps={steps}: latency thread {d.get('latency_bytes')} bytes, want {lat * 64}")
            check(d["total_bytes"] == steps * (r + w) * 64 + lat * 64 == d["observed_total_bytes"],
                  f"count_check {code} steps={steps}: total {d.get('total_bytes')} observed "
                  f"{d.get('observed_total_bytes')}, want {steps * (r + w) * 64 + lat * 64}")
            if code in ("6", "7", "8", "9", "10"):
                check(d["store_kind"] == "non-temporal", f"{code} uses non-temporal stores")


ROW = re.compile(r"^ (\d{5,})\t([ \d.]{6,})\t([ \d.]{9,})$")


def test_output(binary, quick):
    t = "0.05" if quick else "0.2"
    # text: MLC layout, rows streamed before the process ends
    p = subprocess.Popen([binary, "--loaded_latency", "-D", "0,50,500", "-t", t, "-b", "8192"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    lines, first_row_while_running = [], None
    for line in p.stdout:
        lines.append(line.rstrip("\n"))
        if ROW.match(lines[-1]) and first_row_while_running is None:
            first_row_while_running = p.poll() is None
    p.wait(timeout=60)
    err = p.stderr.read()
    check(p.returncode == 0, f"loaded text run exit {p.returncode}: {err}")
    text = "\n".join(lines)
    check(lines[0].startswith("Intel(R) Memory Latency Checker - compatible output: profiler-tui memlat v"),
          "banner line")
    check(lines[1].startswith("Command line parameters: --loaded_latency -D 0,50,500"), "command line echo")
    check(re.search(r"^Using buffer size of 8\.000MiB/thread for reads and an additional 0\.000MiB/thread "
                    r"for writes$", text, re.M) is not None, "buffer line")
    check(re.search(r"^Using huge pages: (yes|no) \(.+\)$", text, re.M) is not None, "huge pages line")
    check("Measuring Loaded Latencies for the system\nUsing Read-only traffic type\nInject\tLatency\tBandwidth\n"
          "Delay\t(ns)\tMB/sec\n==========================\n" in text, "table header")
    rows = [ROW.match(x) for x in lines if ROW.match(x)]
    check([int(m.group(1)) for m in rows] == [0, 50, 500], f"rows {rows}")
    split = [re.match(r"^Load threads at delay (\d{5}): [\d.]+ MB/sec \(latency thread [\d.]+ MB/sec\)$", x)
             for x in lines if x.startswith("Load threads")]
    check([int(m.group(1)) for m in split if m] == [0, 50, 500], f"one load-threads line per row: {split}")
    check(first_row_while_running is True, "first row must be printed (flushed) while the run goes on")

    rc, out, err = run(binary, "--idle_latency", "-t", t, "-b", "8192")
    check(rc == 0 and re.search(r"^Each iteration took [\d.]+ base frequency clocks \(\t *[\d.]+\tns\)$", out, re.M),
          f"idle line: {out!r} {err}")
    check("Using buffer size of 8.000MiB\n" in out, "idle buffer line")

    # JSON schema, NT traffic shows write traffic, triad has two read buffers
    for code, want_r, want_w in (("6", 0, 1), ("8", 1, 1), ("10", 2, 1), ("5", 1, 1)):
        rc, out, err = run(binary, "--loaded_latency", "-W", code, "-D", "0,100", "-t", t, "-b", "8192", "--json")
        check(rc == 0, f"W{code} json exit {rc}: {err}")
        if rc:
            continue
        d = json.loads(out)
        for key in ("mode", "traffic", "stride", "buffer_kib", "huge_pages", "threads", "rows", "load_cpus",
                    "latency_cpu", "delay_unit_ns"):
            check(key in d, f"JSON key {key}")
        check(d["mode"] == "loaded" and d["traffic"] == f"W{code}" and d["stride"] == 64 and d["buffer_kib"] == 8192,
              f"JSON header {d}")
        check([r["delay"] for r in d["rows"]] == [0, 100], "JSON delays")
        for r in d["rows"]:
            for key in ("delay", "latency_ns", "bandwidth_mbps", "read_bytes", "write_bytes"):
                check(key in r, f"row key {key}")
            check(r["write_bytes"] > 0 and r["write_mbps"] > 0, f"W{code} must report write traffic: {r}")
            check(r["read_bytes"] * want_w == r["write_bytes"] * want_r, f"W{code} read:write {want_r}:{want_w}: {r}")
            check(r["latency_ns"] > 0 and r["bandwidth_mbps"] > 0, f"W{code} figures: {r}")
            check(r["latency_bytes"] == r["hops"] * 64, f"W{code}: latency thread counts 64 B per step: {r}")
            check(abs(r["bandwidth_mbps"] - r["load_bandwidth_mbps"] - r["latency_mbps"]) <= 0.11
                  and r["latency_mbps"] > 0, f"W{code}: bandwidth = load threads + latency thread: {r}")
    rc, out, err = run(binary, "--bandwidth_only", "-d", "0", "-t", t, "-b", "8192", "--json")
    check(rc == 0 and json.loads(out)["rows"][0]["latency_ns"] is None and json.loads(out)["latency_cpu"] is None,
          f"bandwidth_only JSON: {out} {err}")
    rc, out, err = run(binary, "--idle_latency", "-t", t, "-b", "8192", "-l", "256", "--tlb_locality", "64", "--json")
    check(rc == 0 and json.loads(out)["latency_ns"] > 0 and json.loads(out)["mode"] == "idle", f"idle JSON: {out} {err}")


WINDOWS = re.compile(r"^Windows of (\d+\.\d{4}) s, (latency_ns|bandwidth_mbps):((?: \d+\.\d+)+)$")


def window_values(lines, name):
    """the sub-window values of one figure in a block of lines (a figure's values may span lines)"""
    out = []
    for line in lines:
        m = WINDOWS.match(line)
        if m and m.group(2) == name:
            out += [float(v) for v in m.group(3).split()]
    return out


def test_windows(binary, quick):
    """--windows N: each figure also in N sub-windows of -t, printed just before its row and in JSON; their mean
    is the row's figure within what the sub-windows' own spread allows (the same work, cut in pieces)"""
    t = "0.1" if quick else "0.4"
    rc, out, err = run(binary, "--idle_latency", "-t", t, "-b", "8192", "--windows", "8")
    lines = out.splitlines()
    idle = [i for i, x in enumerate(lines) if x.startswith("Each iteration took")]
    lat = window_values(lines, "latency_ns")
    check(rc == 0 and idle and WINDOWS.match(lines[idle[0] - 1]) and 1 <= len(lat) <= 8 and all(v > 0 for v in lat),
          f"idle: the window line just before the figure: {out} {err}")
    check(all(WINDOWS.match(x).group(1) == f"{float(t) / 8:.4f}" for x in lines if WINDOWS.match(x)),
          "sub-window length -t / N")
    check(not window_values(lines, "bandwidth_mbps"), "idle: no bandwidth windows")
    rc, out, err = run(binary, "--idle_latency", "-t", "0.05", "-b", "8192", "--windows", "1")
    check(rc == 0 and "Windows of" not in out, f"--windows 1: no window line: {out}")
    rc, out, err = run(binary, "--idle_latency", "-t", "0.2", "-b", "8192", "--windows", "120")
    check(rc == 0 and all(len(x) < 4096 for x in out.splitlines())
          and len(window_values(out.splitlines(), "latency_ns")) > 50, f"many windows: lines of 50 values: {err}")
    rc, out, err = run(binary, "--loaded_latency", "-D", "0,500", "-t", t, "-b", "8192", "--windows", "6")
    blocks, block = [], []
    for line in out.splitlines():
        block.append(line)
        if ROW.match(line):
            blocks.append((ROW.match(line), block))
            block = []
    check(rc == 0 and len(blocks) == 2, f"loaded rows: {out} {err}")
    for m, b in blocks:
        lat, bw = window_values(b, "latency_ns"), window_values(b, "bandwidth_mbps")
        check(1 <= len(lat) <= 6 and 1 <= len(bw) <= 6, f"loaded delay {m.group(1)}: windows {lat} {bw}")
        if lat and bw:  # loose: the pieces against the whole (a noisy shared machine)
            # the whole is CPU time / hops: the hop-weighted, i.e. harmonic, mean of windows of equal CPU time
            harmonic = len(lat) / sum(1 / v for v in lat)
            check(abs(harmonic / float(m.group(2)) - 1) < 0.25, f"latency windows {lat} vs {m.group(2)}")
            check(abs(sum(bw) / len(bw) / float(m.group(3)) - 1) < 0.25, f"bandwidth windows {bw} vs {m.group(3)}")
    rc, out, err = run(binary, "--bandwidth_only", "-d", "0", "-t", t, "-b", "8192", "--windows", "5", "--json")
    row = json.loads(out)["rows"][0] if rc == 0 else {}
    check(json.loads(out)["windows"] == 5 and 1 <= len(row.get("window_bandwidth_mbps", [])) <= 5
          and "window_latency_ns" not in row, f"bandwidth-only JSON windows: {out} {err}")
    rc, out, err = run(binary, "--loaded_latency", "-d", "0", "-t", t, "-b", "8192", "--json")
    row = json.loads(out)["rows"][0] if rc == 0 else {}
    check(json.loads(out)["windows"] == 20 and 1 <= len(row.get("window_latency_ns", [])) <= 20
          and 1 <= len(row.get("window_bandwidth_mbps", [])) <= 20, f"loaded JSON: 20 windows by default: {out}")
    rc, out, err = run(binary, "--peak_injection_bandwidth", "-R", "-t", "0.1", "-b", "4096", "--windows", "4")
    peak = [i for i, x in enumerate(out.splitlines()) if x.startswith("ALL Reads")]
    check(rc == 0 and peak and out.splitlines()[peak[0] - 1].startswith("Windows of 0.0250 s, bandwidth_mbps:"),
          f"peak: window line just before the row: {out} {err}")


def test_numa(binary):
    """--mem_node 0 (every NUMA kernel has node 0): each buffer bound there and every page verified on it,
    in the JSON and the text; without --mem_node neither says anything about nodes."""
    if not os.path.exists("/sys/devices/system/node/online"):
        print("numa: skipped (this kernel has no NUMA support)")
        return
    rc, out, err = run(binary, "--loaded_latency", "-W", "2", "-D", "0", "-t", "0.1", "-b", "8192", "--mem_node", "0",
                       "--json")
    check(rc == 0, f"--mem_node 0 exit {rc}: {err}")
    if rc == 0:
        numa = json.loads(out)["numa"]
        pages = 3 * 8192 * 1024 // numa["page_bytes"]  # the latency buffer, a read and a write buffer
        check(numa["node"] == 0 and numa["pages"] == {"0": pages} and numa["pages_total"] == pages, f"numa: {numa}")
    rc, out, err = run(binary, "--idle_latency", "-t", "0.1", "-b", "4096", "--mem_node", "0")
    line = [x for x in out.splitlines() if x.startswith("Using memory on NUMA node 0: pages N0=")]
    check(rc == 0 and len(line) == 1 and "N0=1024 " in line[0], f"--mem_node text: {out} {err}")
    rc, out, err = run(binary, "--idle_latency", "-t", "0.1", "-b", "4096", "--json")
    check(rc == 0 and "numa" not in json.loads(out) and "NUMA" not in out, f"no --mem_node, no numa: {out}")


def test_physics(binary):
    """Short runs on the default buffer (4x LLC, at least 256 MiB): bandwidth falls as delay grows; latency at the
    largest delay is within 15% of idle latency.

    One run's latency swings by +-15% on a shared 2-vCPU guest (measured here: 215 to 286 ns for the same idle run;
    each run places its buffer on other pages), so the latency check compares medians of PAIRS alternating idle and
    loaded runs, which also cancels drift between them: the median of 7 moves about 4%, so 15% between two of them
    is rarely crossed by noise alone.  A loaded machine can still disturb one attempt: two attempts."""
    delays = [0, 200, 1000, 5000, 20000]
    pairs = 7

    def latency(*args):
        rc, out, err = run(binary, *args, "-t", "0.2", "--json")
        check(rc == 0, f"{args} exit {rc}: {err}")
        got = json.loads(out)
        return got["latency_ns"] if "latency_ns" in got else got["rows"][0]["latency_ns"]

    for attempt in (1, 2):
        rc, out, err = run(binary, "--loaded_latency", "-D", ",".join(map(str, delays)), "-t", "0.5", "--json")
        check(rc == 0, f"loaded exit {rc}: {err}")
        rows = json.loads(out)["rows"]
        # the load threads' share: the latency thread's own 64 B per step is nearly constant across delays
        bw = [r["load_bandwidth_mbps"] for r in rows]
        falls = all(b2 < b1 for b1, b2 in zip(bw, bw[1:])) and bw[-1] < 0.2 * bw[0]
        idle, quiet = [], []
        for _ in range(pairs):
            idle.append(latency("--idle_latency"))
            quiet.append(latency("--loaded_latency", "-D", str(delays[-1])))
        idle_ns, quiet_ns = sorted(idle)[pairs // 2], sorted(quiet)[pairs // 2]
        close = abs(quiet_ns - idle_ns) <= 0.15 * idle_ns
        print(f"physics attempt {attempt}: delay/bandwidth "
              + ", ".join(f"{d}/{b:.0f}" for d, b in zip(delays, bw))
              + f"; median of {pairs} idle {idle_ns:.1f} ns, at delay {delays[-1]} {quiet_ns:.1f} ns")
        if falls and close:
            return
    check(falls, f"bandwidth must fall as delay grows: {list(zip(delays, bw))}")
    check(close, f"median latency at delay {delays[-1]} ({quiet_ns:.1f} ns) must be within 15% of the median idle "
                 f"latency ({idle_ns:.1f} ns)")


SUITE_BAD = [
    (["--bandwidth_scaling", "--threads", "0"], "--threads"),
    (["--bandwidth_scaling", "--threads", "-1"], "--threads"),
    (["--bandwidth_scaling", "--threads", "1,,2"], "--threads"),
    (["--bandwidth_scaling", "--threads", "1,1"], "twice"),
    (["--bandwidth_scaling", "--threads", "9" * 30], "--threads"),
    (["--bandwidth_scaling", "--threads", "1024"], "needs 1024 cpus"),
    (["--bandwidth_scaling", "--threads", "x"], "--threads"),
    (["--working_set", "--sizes", "2"], "--sizes"),
    (["--working_set", "--sizes", "4,4"], "twice"),
    (["--working_set", "--sizes", "-4"], "--sizes"),
    (["--working_set", "--sizes", "1073741824"], "4 GiB"),  # past the cap of -b
    (["--working_set", "--sizes", "4", "-l", "4096"], "16 chase slots"),
    (["--peak_injection_bandwidth", "-t", "0.01"], "at least 0.05"),
    (["--max_bandwidth", "-W", "13"], "traffic type"),
    (["--peak_injection_bandwidth", "-d", "0"], "do not apply"),
    (["--c2c_latency", "-k", "0"], "two cpus"),
    (["--c2c_latency", "-R"], "do not apply"),
    (["--c2c_latency", "-b", "64"], "does not apply"),
    (["--latency_matrix", "--mem_node", "0"], "does not apply"),
    (["--latency_matrix", "-k", "4000"], "cpu"),
    (["--bandwidth_matrix", "--threads", "1"], "belongs to --bandwidth_scaling"),
    (["--idle_latency", "--plan_only"], "belongs to the suite"),
    (["--working_set", "--bogus"], "unknown option"),
    (["--idle_latency", "--windows", "0"], "--windows"),
    (["--loaded_latency", "--windows", "1001"], "--windows"),
    (["--idle_latency", "--windows", "2.5"], "--windows"),
    (["--idle_latency", "--windows"], "--windows"),
    (["--c2c_latency", "--windows", "5"], "does not apply"),
    (["--working_set", "--windows", "5"], "does not apply"),
]




def fake_sysfs(root):
    """the lab's topology: node0 with CPU 0, node1 with CPU 1, both with memory"""
    for rel, text in (("online", "0-1"), ("has_memory", "0-1"), ("node0/cpulist", "0"), ("node1/cpulist", "1")):
        path = os.path.join(root, "devices/system/node", rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as f:
            f.write(text + "\n")


PEAK = [("ALL Reads", "R", 1, 0), ("3:1 Reads-Writes", "W3", 3, 1), ("2:1 Reads-Writes", "W2", 2, 1),
        ("1:1 Reads-Writes", "W5", 1, 1), ("Stream-triad like", "W10", 2, 1)]
SHORT = ["-t", "0.05", "--warmup", "0.02"]


def test_suite_peak_scaling(binary):
    rc, out, err = run(binary, "--peak_injection_bandwidth", *SHORT, "-b", "4096")
    check(rc == 0, f"peak exit {rc}: {err}")
    check("Measuring Peak Injection Memory Bandwidths for the system\nBandwidths are in MB/sec (1 MB/sec = "
          "1,000,000 Bytes/sec)\nUsing all the threads from each core if Hyper-threading is enabled\nUsing traffic "
          "with the following read-write ratios\n" in out, f"peak header: {out}")
    rows = re.findall(r"^(.{17}):\t(\d+\.\d)\t$", out, re.M)
    check([r[0].rstrip() for r in rows] == [p[0] for p in PEAK] and all(float(r[1]) > 0 for r in rows),
          f"peak rows in MLC's order: {rows}")
    traffic = re.findall(r"^Traffic (\w+): reads [\d.]+ MB/sec, writes [\d.]+ MB/sec$", out, re.M)
    check(traffic == [p[1] for p in PEAK], f"one traffic line per row: {traffic}")
    rc, out, err = run(binary, "--max_bandwidth", "-W7", *SHORT, "-b", "4096")
    check(rc == 0 and re.findall(r"^W7 traffic       :\t[\d.]+\t$", out, re.M) and out.count(":\t") == 1,
          f"-W7: one row labelled 'W7 traffic': {out} {err}")
    rc, out, err = run(binary, "--peak_injection_bandwidth", *SHORT, "-b", "4096", "--json")
    check(rc == 0, f"peak JSON exit {rc}: {err}")
    if rc == 0:
        d = json.loads(out)
        check(d["mode"] == "peak" and d["latency_thread"] is False and d["delay"] == 0, f"peak JSON head {d}")
        check([(r["label"], r["traffic"]) for r in d["rows"]] == [(p[0], p[1]) for p in PEAK], "peak JSON rows")
        for r, (_, name, rd, wr) in zip(d["rows"], PEAK):
            # the counting rule: bus bytes read : written per step, and bandwidth = both
            check(r["read_bytes"] * wr == r["write_bytes"] * rd and r["threads"] == len(d["cpus"]),
                  f"{name}: read:write bytes {rd}:{wr}: {r}")
            check(abs(r["bandwidth_mbps"] - r["read_mbps"] - r["write_mbps"]) <= 0.11, f"{name}: sum {r}")
    ncpu = len(os.sched_getaffinity(0))
    rc, out, err = run(binary, "--bandwidth_scaling", "-W2", *SHORT, "-b", "4096")
    rows = re.findall(r"^ (\d+)\t([ \d.]{9,})$", out, re.M)
    check(rc == 0 and [int(r[0]) for r in rows] == list(range(1, ncpu + 1)), f"scaling rows 1..{ncpu}: {out} {err}")
    table_head = "Threads\tBandwidth\n\tMB/sec\n==========================\n"
    check("Using 2:1 Reads-Writes traffic type\n" in out and table_head in out, "scaling header")
    rc, out, err = run(binary, "--bandwidth_scaling", "--threads", "1", *SHORT, "-b", "4096", "--json")
    check(rc == 0 and [r["threads"] for r in json.loads(out)["rows"]] == [1] and json.loads(out)["mode"] == "scaling",
          f"scaling JSON: {out} {err}")


def test_suite_matrices(binary):
    for mode, word in (("--latency_matrix", "Measuring idle latencies for random access (in ns)..."),
                       ("--bandwidth_matrix", "Measuring Memory Bandwidths between nodes within system ")):
        rc, out, err = run(binary, mode, *SHORT, "-b", "4096")
        check(rc == 0 and word in out, f"{mode}: exit {rc} {err}")
        lines = out.splitlines()
        if rc or "\t\tNuma node" not in lines:
            continue
        i = lines.index("\t\tNuma node")
        cols = [int(x) for x in lines[i + 1].split("\t")[1:-1]]
        placed = [x for x in lines if x.startswith("Placement verified: ")]
        rows = [x for x in lines[i + 2:] if re.match(r"^ {0,7}\d+\t", x)]
        check(lines[i + 1].startswith("Numa node\t") and cols, f"{mode}: header row {lines[i + 1]!r}")
        check(len(placed) == len(rows) * len(cols) and all(
            re.match(r"^Placement verified: CPU node \d+, memory node \d+: pages (N\d+=\d+ ?)+ \(\d+-byte pages; "
                     r"/proc/self/numa_maps\)$", x) for x in placed), f"{mode}: one placement line per cell: {placed}")
        check(all(len(r.split("\t")) == len(cols) + 2 for r in rows), f"{mode}: rows {rows}")
        if len(cols) == 1:
            check("*** One NUMA node: the matrix is 1x1" in lines, f"{mode}: one-node line")
        rc, out, err = run(binary, mode, *SHORT, "-b", "4096", "--json")
        if rc == 0:
            d = json.loads(out)
            cell = d["rows"][0]
            pages = cell["numa"]["pages"][str(cell["mem_node"])]
            nbuf = 1 if mode == "--latency_matrix" else cell["threads"]
            check(cell["numa"]["pages_total"] == pages == nbuf * 4096 * 1024 // cell["numa"]["page_bytes"]
                  and cell["numa"]["verified_with"] == "numa_maps", f"{mode}: JSON placement {cell}")
            check(len(d["rows"]) == len(d["cpu_nodes"]) * len(d["mem_nodes"]), f"{mode}: JSON cells")
    with tempfile.TemporaryDirectory() as root:
        fake_sysfs(root)
        env = dict(os.environ, MEMLAT_SYSFS_ROOT=root)
        for mode in ("--latency_matrix", "--bandwidth_matrix"):
            rc, out, err = run(binary, mode, "--plan_only", env=env)
            cells = re.findall(r"^Plan: CPU node (\d) \(CPU\(s\) (\d)\), memory node (\d)$", out, re.M)
            check(rc == 0 and cells == [("0", "0", "0"), ("0", "0", "1"), ("1", "1", "0"), ("1", "1", "1")],
                  f"{mode} plan on two faked nodes: {out} {err}")
        rc, out, err = run(binary, "--c2c_latency", "--plan_only", env=env)
        remote = re.findall(r"^Plan: c2c hitm, writer node (\d) \(CPU \d\), reader node (\d) \(CPU \d\), memory on "
                            r"node (\d) \((\w+)\)$", out, re.M)
        check(rc == 0 and sorted(remote) == [("0", "1", "0", "writer"), ("0", "1", "1", "reader"),
                                             ("1", "0", "0", "reader"), ("1", "0", "1", "writer")],
              f"c2c remote plan: {out} {err}")
        if not os.path.exists("/sys/devices/system/node/node1"):
            # node 1 is faked: binding a buffer there fails, and that is an error, never a figure
            rc, out, err = run(binary, "--latency_matrix", *SHORT, "-b", "4096", env=env)
            check_error("fake node 1", rc, out, err, "node 1", want_rc=1)
            check(not re.search(r"^ {7}1\t", out, re.M), f"no row for a node that could not be bound: {out}")


def test_suite_c2c_wset(binary, sanitized):
    rc, out, err = run(binary, "--c2c_latency", *SHORT)
    check(rc == 0, f"c2c exit {rc}: {err}")
    hit = re.search(r"^Local Socket L2->L2 HIT  latency\t(\d+\.\d)$", out, re.M)
    hitm = re.search(r"^Local Socket L2->L2 HITM latency\t(\d+\.\d)$", out, re.M)
    check(hit and hitm and "Measuring cache-to-cache transfer latency (in ns)...\nUsing writer thread on CPU " in out,
          f"c2c layout: {out}")
    multi = os.path.exists("/sys/devices/system/node/node1")
    check(multi or "*** One NUMA node: no remote cache-to-cache figures" in out, "c2c one-node line")
    rc, out, err = run(binary, "--c2c_latency", *SHORT, "--json")
    if rc == 0:
        d = json.loads(out)
        local = [r for r in d["rows"] if r["scope"] == "local"]
        check([r["c2c"] for r in local] == ["hit", "hitm"] and all(
            r["transfers"] >= d["windows"] * d["lines_per_round"] and len(r["window_ns"]) == d["windows"]
            for r in local), f"c2c JSON: {d}")
        if not sanitized:
            check(all(5 < r["latency_ns"] < 1000 for r in local), f"c2c latencies in range: {local}")
    sizes = "4,512,65536"
    rc, out, err = run(binary, "--working_set", "--sizes", sizes, *SHORT)
    rows = re.findall(r"^ (\d+)\t([ \d.]{8,})$", out, re.M)
    check(rc == 0 and [r[0] for r in rows] == sizes.split(","), f"working-set rows: {out} {err}")
    check(re.search(r"^Using huge pages: (yes|no) \(", out, re.M) and "Buffer\tLatency\n(KiB)\t(ns)\n" in out,
          "working-set header")
    check(re.search(r"^Cache L1d: \d+ KiB \(level 1, Data, shared by CPU\(s\) [\d,-]+\)$", out, re.M)
          or not os.path.exists("/sys/devices/system/cpu/cpu0/cache"), f"cache lines: {out}")
    rc, out, err = run(binary, "--working_set", "--sizes", sizes, "--no_huge_pages", *SHORT, "--json")
    if rc == 0:
        d = json.loads(out)
        lat = [r["latency_ns"] for r in d["rows"]]
        kib = [r["buffer_kib"] for r in d["rows"]]
        check(d["pages"] == "4k" and d["huge_pages"] is False and kib == [4, 512, 65536], f"working-set JSON: {d}")
        # an L1-resident chase, an L2-sized one and a DRAM-sized one: loose physics only
        check(sanitized or (lat[0] < 5 and lat[0] < lat[1] < lat[2] and lat[2] > 40), f"working-set curve {lat}")
    rc, out, err = run(binary, "--working_set", "--plan_only")
    plan = re.findall(r"^Plan: working set (\d+) KiB", out, re.M)
    check(rc == 0 and plan[:5] == ["4", "5", "6", "7", "8"] and int(plan[-1]) >= 65536, f"default sizes: {plan[:6]}")


def test_suite(binary, sanitized):
    usage_errors(binary, SUITE_BAD)
    test_suite_peak_scaling(binary)
    test_suite_matrices(binary)
    test_suite_c2c_wset(binary, sanitized)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--binary", default="build/memlat")
    ap.add_argument("--sanitized", action="store_true", help="sanitizer build: short runs, no physics")
    ap.add_argument("--only", help="run only the sections whose name contains this word")
    a = ap.parse_args()
    for name, fn in (("usage errors", lambda: test_usage_errors(a.binary)),
                     ("counting rule", lambda: test_counting(a.binary)),
                     ("output format", lambda: test_output(a.binary, a.sanitized)),
                     ("sub-windows", lambda: test_windows(a.binary, a.sanitized)),
                     ("numa placement", lambda: test_numa(a.binary)),
                     ("suite modes", lambda: test_suite(a.binary, a.sanitized)),
                     ("physics", None if a.sanitized else lambda: test_physics(a.binary))):
        if a.only and a.only not in name:
            continue
        if fn is None:
            print(f"{name}: skipped (sanitized build)")
            continue
        t0 = time.monotonic()
        before = len(FAILS)
        fn()
        print(f"{name}: {'ok' if len(FAILS) == before else 'FAILED'} ({time.monotonic() - t0:.1f} s)")
    if FAILS:
        print(f"{len(FAILS)} failure(s)")
        sys.exit(1)
    print("all engine tests passed")


if __name__ == "__main__":
    main()
