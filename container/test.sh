#!/usr/bin/env bash
# The container test (docs/container.md): builds the image with podman and checks, inside it,
#   --version; devices --json; the quick preset on a file (results on the host through a volume);
#   a read-only run on a loop device made here; audit --json reading the host's scheduler of that loop
#   device; the memory engine's idle latency; no compiler in
#   the image; MLC absent without a source and present from a stand-in vendor/ tarball, chosen by
#   --engine auto (on AMD with huge pages reserved for the run and given back; unprivileged, the
#   built-in engine); the agent started as a container through a Docker Engine API (podman's, on a socket
#   here) by app.fleet.containers and reached by fio --client (run --start-agent); the TUI drawing its
#   first screen in a pseudo-terminal.  Holds on AMD and Intel.
# Removes everything it made (loop device, containers, image tags, temp files), also on failure;
# keeps the base image and the layer cache so the next run is quick.
#   container/test.sh            (root; installs podman, runc, debootstrap when missing)
#   KEEP_IMAGE=1 container/test.sh   keeps the tested image as profiler-tui:test
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/.." && pwd)"
. "$here/lib.sh"

[ "$(id -u)" = 0 ] || { echo "container/test.sh: needs root (podman with --privileged, loop devices)" >&2; exit 1; }

TAG=localhost/profiler-tui:test
MLC_TAG=localhost/profiler-tui:test-mlc
NAME="ptui-test-$$"
tmp="$(mktemp -d /var/tmp/profiler-tui-ctest.XXXXXX)"
loop=""
svc_pid=""
made_tags=()
passed=0
failed=0
t_start=$(date +%s)

# The original stdout/stderr: a signal can arrive while a function's output is redirected to a
# log file, and the traps must still report to the terminal.
exec 3>&1 4>&2
cleanup() {
    local rc=$?
    set +e
    exec 1>&3 2>&4
    podman ps -a --format '{{.Names}}' 2>/dev/null | grep "^$NAME" | while read -r c; do
        podman rm -f "$c" >/dev/null 2>&1
    done
    stop_service
    if [ -n "$loop" ]; then
        losetup -d "$loop" && echo "detached $loop"
    fi
    if [ -z "${KEEP_IMAGE:-}" ]; then
        for t in "${made_tags[@]}"; do podman rmi -f "$t" >/dev/null 2>&1; done
    fi
    rm -rf "$tmp"
    # Every app change leaves untagged layers behind; drop those older than three days so the
    # cache stays warm for today's builds without filling the disk.
    podman image prune -f --filter until=72h >/dev/null 2>&1
    echo "container test took $(( $(date +%s) - t_start ))s"
    [ "$rc" != 0 ] && [ "$failed" = 0 ] && echo "container test stopped early (exit $rc)"
    echo "container-test: $passed passed, $failed failed"
    [ "$failed" -gt 0 ] && [ "$rc" = 0 ] && rc=1
    exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# The podman API service of the --start-agent step (stopped here and by the trap, its socket removed).
stop_service() {
    if [ -n "$svc_pid" ]; then
        kill "$svc_pid" 2>/dev/null
        wait "$svc_pid" 2>/dev/null || true
        svc_pid=""
    fi
    rm -f "$tmp/podman.sock"
}
ok()   { passed=$((passed + 1)); echo "PASS  $*"; }
bad()  { failed=$((failed + 1)); echo "FAIL  $*"; }
step() { echo; echo "== [$(( $(date +%s) - t_start ))s] $*"; }

# podman run with this machine's flags, the results volume, and the privileges the product documents.
prun() {
    "${PODMAN_RUN[@]}" --rm --name "$NAME-$((RANDOM))" --privileged -v /dev:/dev -v "$tmp/results:/results" "$@"
}

need_host_tools
for tool in losetup script python3; do
    command -v "$tool" >/dev/null || { apt-get update -q >/dev/null;
        DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends util-linux bsdutils python3 >/dev/null; }
done
mkdir -p "$tmp/results"
# MLC needs huge pages on AMD (not on Intel): on AMD the tool reserves them for each MLC run when it may
# write /proc/sys/vm/nr_hugepages (a privileged container may) and gives them back afterwards.
host_vendor="$(awk -F': *' '/^vendor_id/ {print $2; exit}' /proc/cpuinfo)"
hp_before="$(cat /proc/sys/vm/nr_hugepages)"
echo "host: $host_vendor, nr_hugepages $hp_before"
# engine.py DIR ENGINE [HUGEPAGES]: the first point of the memory run in DIR ran on ENGINE; with HUGEPAGES
# (the host's nr_hugepages before the run) also checks the huge-page record for this host's CPU vendor.
cat >"$tmp/engine.py" <<'PY'
import json, re, sys
d, want = sys.argv[1], sys.argv[2]
r = json.loads(open(f"{d}/results.jsonl").readline())
meta = json.load(open(f"{d}/run.json"))
engine = r.get("engine") or r["point"].get("engine")
assert r["kind"] == "memory" and engine == want and r["metrics"]["latency_ns"] > 0, r
print(f"engine {engine}: idle latency {r['metrics']['latency_ns']:.1f} ns")
if len(sys.argv) > 3:
    before = int(sys.argv[3])
    amd = "AuthenticAMD" in open("/proc/cpuinfo").read()
    hp, notes = r.get("huge_pages"), meta.get("huge_pages")
    raw = open(f"{d}/{r['raw']['txt']}").read()
    during = int(re.search(r"^nr_hugepages during the run: (\d+)", raw, re.M).group(1))
    if not amd:
        assert hp is None and notes is None and during == before, (hp, notes, during)
        print(f"Intel: huge pages untouched ({during} during the run)")
    else:
        assert hp["previous"] == before and hp["granted"] == during, (hp, during)
        if hp["requested"] is not None:  # None: enough huge pages were free already
            assert hp["granted"] == hp["requested"] > before, hp
            assert notes[-1]["restored"] is True and notes[-1]["restored_value"] == before, notes
        print(f"AMD: huge pages {before} -> {during} during the run (requested {hp['requested']}) -> {before}")
PY

# --- build ----------------------------------------------------------------------------------------
step "build $TAG (MLC_URL default: Intel's mirror, unreachable from this machine)"
made_tags+=("$TAG")
if "$here/build.sh" --tag "$TAG" >"$tmp/build.log" 2>&1; then
    tail -n 1 "$tmp/build.log"
    ok "image builds"
else
    tail -n 40 "$tmp/build.log"
    bad "image build"; exit 1
fi
# no line that misleads: the venv stage has no memory engine and must not say "none" about it, and curl's error
# must not run into the MLC lines ("cMLC: could not download")
if grep -E 'memory engine \(--engine auto\): none|.MLC: ' "$tmp/build.log"; then
    bad "the build log has a misleading line (above)"
else
    ok "the build log names no missing engine and has whole MLC lines"
fi
if grep -q '^MLC: not in this image' "$tmp/build.log"; then
    ok "build without a reachable MLC succeeds and says so"
elif ! grep -q '^MLC:' "$tmp/build.log"; then
    ok "build without a reachable MLC succeeds (its MLC step, and message, came from the layer cache)"
else
    grep '^MLC:' "$tmp/build.log"; bad "unexpected MLC messages in the build log"
fi

# --- static checks --------------------------------------------------------------------------------
step "image contents"
if prun --entrypoint sh "$TAG" -c '
    for c in gcc cc c99 c89 clang tcc g++ c++ cpp make ld as; do
        command -v "$c" && exit 1
    done
    ls /usr/lib/gcc/*/*/cc1 2>/dev/null && exit 1
    exit 0'; then ok "no compiler or make in the final image"; else bad "the final image holds a compiler"; fi
if prun --entrypoint sh "$TAG" -c 'fio --version && lsblk --version && blkid --version && command -v memlat && ldconfig -p | grep -E "libaio.so|liburing.so"'; then
    ok "fio, lsblk, blkid, memlat, libaio and liburing in the image"
else
    bad "runtime tools missing"
fi
if prun --entrypoint sh "$TAG" -c 'test ! -e /opt/mlc/mlc'; then ok "no /opt/mlc/mlc without an MLC source"; else bad "/opt/mlc/mlc present without a source"; fi

# --- CLI ------------------------------------------------------------------------------------------
step "profiler-tui --version"
if out="$(prun "$TAG" --version)" && [[ "$out" == *profiler-tui* ]]; then ok "--version: $out"; else bad "--version: $out"; fi

step "profiler-tui presets"
if prun "$TAG" presets >"$tmp/presets.txt" 2>&1 && grep -q quick "$tmp/presets.txt" && grep -q mem-idle "$tmp/presets.txt"; then
    ok "presets lists the shipped presets"
else
    cat "$tmp/presets.txt"; bad "presets"
fi

# A loop device on a small image file made here (the only block device this test touches).
truncate -s 128M "$tmp/loop.img"
head -c 1M /dev/urandom >"$tmp/loop.img.head" && dd if="$tmp/loop.img.head" of="$tmp/loop.img" conv=notrunc status=none
loop="$(losetup -f --show "$tmp/loop.img")"
echo "made $loop on $tmp/loop.img"
sum_before="$(md5sum <"$tmp/loop.img")"

step "profiler-tui devices --json"
if prun "$TAG" devices --json >"$tmp/devices.json" 2>"$tmp/devices.err" \
   && python3 - "$tmp/devices.json" "$loop" <<'PY'
import json, sys
data = json.load(open(sys.argv[1]))
items = data if isinstance(data, list) else data.get("devices", [])
flat = []
def walk(xs):
    for d in xs:
        flat.append(d)
        walk(d.get("children") or d.get("partitions") or [])
walk(items)
names = {str(d.get(k)) for d in flat for k in ("path", "name", "device") if d.get(k)}
assert sys.argv[2] in names or sys.argv[2].rsplit("/", 1)[-1] in names, (sys.argv[2], sorted(names))
print(f"{len(flat)} devices, {sys.argv[2]} among them")
PY
then ok "devices --json lists $loop"; else cat "$tmp/devices.err"; bad "devices --json"; fi

step "profiler-tui run quick --set runtime=1 (on a file in /results)"
if prun "$TAG" run quick --set runtime=1 --set size=64m --yes --out /results/q >"$tmp/quick.log" 2>&1; then
    lines=$(wc -l <"$tmp/results/q/results.jsonl")
    # quick measures its 8 points 3 times (replicates by default)
    if [ "$lines" = 24 ]; then ok "quick: 8 points × 3 replicates in results/q/results.jsonl on the host"; else bad "quick: $lines lines, expected 24"; fi
else
    tail -n 20 "$tmp/quick.log"; bad "run quick"
fi

step "read-only run on $loop"
if prun "$TAG" run custom --target "$loop" --set rw=randread --set runtime=1 --set size=64m --yes --out /results/loop \
       >"$tmp/loop.log" 2>&1 \
   && [ "$(wc -l <"$tmp/results/loop/results.jsonl")" = 1 ] \
   && python3 -c 'import json,sys; r=json.loads(open(sys.argv[1]).readline()); assert r["point"]["rw"]=="randread" and r["metrics"]["read_iops"]>0, r' \
        "$tmp/results/loop/results.jsonl"; then
    ok "randread on $loop: 1 point with read IOPS"
else
    tail -n 20 "$tmp/loop.log"; bad "read-only run on $loop"
fi
if [ "$(md5sum <"$tmp/loop.img")" = "$sum_before" ]; then ok "$loop unchanged by the read-only run"; else bad "$loop was written to"; fi

# The audit reads the host kernel's sysfs from inside: the loop device's scheduler is switched here, on the host,
# to the other one it offers, and the container must report that one (its own choice would be the default).
step "profiler-tui audit --json $loop (the host's sysfs, seen from the container)"
sched="/sys/block/${loop#/dev/}/queue/scheduler"
sched_before="$(sed -n 's/.*\[\(.*\)\].*/\1/p' "$sched")"
sched_set="$(tr -d '[]' <"$sched" | tr ' ' '\n' | grep -v -x -e "$sched_before" -e '' | head -n 1 || true)"
if [ -n "$sched_set" ] && echo "$sched_set" >"$sched" \
   && prun "$TAG" audit "$loop" --json >"$tmp/audit.json" 2>"$tmp/audit.err" \
   && python3 - "$tmp/audit.json" "$sched_set" "${loop#/dev/}" <<'PY'
import json, sys
data, want, name = json.load(open(sys.argv[1])), sys.argv[2], sys.argv[3]
items = {i["key"]: i for i in data["items"]}
assert data["device"] == name and items["scheduler"]["value"] == want, (data["device"], items["scheduler"])
assert "container" in (data["container"] or "") and "host kernel's sysfs" in data["container"], data["container"]
for i in items.values():  # every item: a value, or why it is not available in this container
    assert i["value"] if i["status"] != "unavailable" else i["note"], i
print(f"audit in the container: {name} scheduler {want}; {data['container']}")
PY
then ok "audit --json in the container reads the host's scheduler ($sched_set) of $loop"
else cat "$tmp/audit.err" 2>/dev/null; bad "audit --json in the container (scheduler offered: $(cat "$sched"))"
fi
if [ -n "$sched_before" ]; then echo "$sched_before" >"$sched" || true; fi

# --- memory engine --------------------------------------------------------------------------------
step "memory engine idle latency"
if prun --entrypoint memlat "$TAG" --idle_latency -t 1 >"$tmp/memlat.txt" 2>&1; then
    sed -n '1,12p' "$tmp/memlat.txt"; ok "memlat --idle_latency"
else
    cat "$tmp/memlat.txt"; bad "memlat --idle_latency"
fi
if prun "$TAG" run mem-idle --engine builtin --yes --out /results/mem >"$tmp/mem.log" 2>&1 \
   && python3 -c 'import json,sys; r=json.loads(open(sys.argv[1]).readline()); assert r["kind"]=="memory" and r["metrics"]["latency_ns"]>0, r; print("idle latency %.1f ns" % r["metrics"]["latency_ns"])' \
        "$tmp/results/mem/results.jsonl"; then
    ok "run mem-idle --engine builtin"
else
    tail -n 20 "$tmp/mem.log"; bad "run mem-idle --engine builtin"
fi

# --- MLC from a tarball in the build context (a stand-in of the same layout) -----------------------
step "stand-in MLC tarball in vendor/"
ctx="$tmp/context"
mkdir -p "$ctx"
tar -C "$repo" --exclude=./.git --exclude=./.venv --exclude=./results --exclude=./native/memlat/build \
    --exclude=./vendor -c . | tar -C "$ctx" -x
mkdir -p "$tmp/mlc/Linux" "$ctx/vendor"
cat >"$tmp/mlc/Linux/mlc" <<'SH'
#!/bin/sh
echo "Intel(R) Memory Latency Checker - v3.11b (stand-in for the container test)"
echo "Command line parameters: $*"
echo
echo "Using buffer size of 200.000MiB"
echo "nr_hugepages during the run: $(cat /proc/sys/vm/nr_hugepages)"
echo "*** Unable to modify prefetchers (try executing 'modprobe msr')"
echo "*** So, enabling random access for latency measurements"
echo "Each iteration took 250.0 base frequency clocks (	100.0	ns)"
SH
chmod +x "$tmp/mlc/Linux/mlc"
tar -C "$tmp/mlc" -czf "$ctx/vendor/mlc_v0.0-standin.tgz" Linux
made_tags+=("$MLC_TAG")
if "$here/build.sh" --tag "$MLC_TAG" --context "$ctx" >"$tmp/build-mlc.log" 2>&1; then
    tail -n 1 "$tmp/build-mlc.log"
    grep '^MLC:' "$tmp/build-mlc.log" || true
    if prun --entrypoint sh "$MLC_TAG" -c 'test -x /opt/mlc/mlc && /opt/mlc/mlc --idle_latency | head -n 1'; then
        ok "/opt/mlc/mlc installed from vendor/mlc*.tgz"
    else
        bad "/opt/mlc/mlc missing in the image built with vendor/mlc*.tgz"
    fi
    if prun "$MLC_TAG" run mem-idle --engine auto --yes --out /results/mlc-image >"$tmp/mlc-image.log" 2>&1 \
       && python3 "$tmp/engine.py" "$tmp/results/mlc-image" mlc "$hp_before" \
       && [ "$(cat /proc/sys/vm/nr_hugepages)" = "$hp_before" ]; then
        ok "--engine auto picks the image's /opt/mlc/mlc (huge pages on $host_vendor as expected, given back)"
    else
        tail -n 20 "$tmp/mlc-image.log"; bad "--engine auto with /opt/mlc/mlc in the image"
    fi
else
    tail -n 30 "$tmp/build-mlc.log"; bad "build with the stand-in MLC tarball"
fi
# An MLC binary mounted at run time into the image built without one.
if prun -v "$tmp/mlc/Linux/mlc:/opt/mlc/mlc:ro" "$TAG" run mem-idle --engine auto --yes --out /results/mlc-mount \
       >"$tmp/mlc-mount.log" 2>&1 \
   && python3 "$tmp/engine.py" "$tmp/results/mlc-mount" mlc "$hp_before" \
   && [ "$(cat /proc/sys/vm/nr_hugepages)" = "$hp_before" ]; then
    ok "--engine auto picks an MLC mounted at /opt/mlc/mlc at run time"
else
    tail -n 20 "$tmp/mlc-mount.log"; bad "MLC mounted at /opt/mlc/mlc at run time"
fi
# Without --privileged /proc/sys is read-only: on AMD with no huge pages reserved auto keeps the built-in
# engine and says why; on Intel (or with pages reserved) it runs MLC.
expect=mlc
[ "$host_vendor" = AuthenticAMD ] && [ "$hp_before" = 0 ] && expect=builtin
if "${PODMAN_RUN[@]}" --rm --name "$NAME-$((RANDOM))" -v "$tmp/results:/results" \
       -v "$tmp/mlc/Linux/mlc:/opt/mlc/mlc:ro" "$TAG" run mem-idle --engine auto --yes --out /results/mlc-ro \
       >"$tmp/mlc-ro.log" 2>&1 \
   && python3 "$tmp/engine.py" "$tmp/results/mlc-ro" "$expect" \
   && { [ "$expect" = mlc ] || grep -q "MLC needs huge pages on AMD and /proc/sys/vm/nr_hugepages is 0" "$tmp/mlc-ro.log"; } \
   && [ "$(cat /proc/sys/vm/nr_hugepages)" = "$hp_before" ]; then
    ok "unprivileged (read-only /proc/sys): --engine auto uses $expect on $host_vendor"
else
    tail -n 20 "$tmp/mlc-ro.log"; bad "unprivileged --engine auto with MLC mounted"
fi

# --- the run command without the flags it needs ----------------------------------------------------
# Each missing flag of `docker run --rm -it --privileged -v /dev:/dev -v "$PWD/results:/results"` gets one
# sentence naming it (never "no devices" or a traceback), and a refused run leaves no directory behind.
step "run without --privileged / -v /dev:/dev, without /results, read-only /results, --user 1000"
plain() { "${PODMAN_RUN[@]}" --rm --name "$NAME-$((RANDOM))" "$@"; }
no_tb() { ! grep -q Traceback "$1"; }
rc=0; plain -v "$tmp/results:/results" "$TAG" devices >"$tmp/nopriv-dev.out" 2>"$tmp/nopriv-dev.err" || rc=$?
if [ "$rc" = 0 ] && grep -q -- '--privileged -v /dev:/dev' "$tmp/nopriv-dev.err" && no_tb "$tmp/nopriv-dev.err"; then
    ok "devices without --privileged names the flags: $(head -c 160 "$tmp/nopriv-dev.err")"
else
    cat "$tmp/nopriv-dev.err"; bad "devices without --privileged (exit $rc)"
fi
rc=0; plain -v "$tmp/results:/results" "$TAG" run custom --target "$loop" --set rw=randread --set runtime=1 --yes \
    --out /results/nopriv >"$tmp/nopriv-run.log" 2>&1 || rc=$?
if [ "$rc" = 3 ] && grep -q -- '--privileged -v /dev:/dev' "$tmp/nopriv-run.log" && no_tb "$tmp/nopriv-run.log" \
   && [ ! -e "$tmp/results/nopriv" ]; then
    ok "--target $loop without -v /dev:/dev: exit 3 naming the flags"
else
    cat "$tmp/nopriv-run.log"; bad "--target $loop without -v /dev:/dev (exit $rc)"
fi
rc=0; plain --privileged "$TAG" run custom --set runtime=1 --set size=4m --yes >"$tmp/novol.log" 2>&1 || rc=$?
if [ "$rc" = 0 ] && grep -q 'will be lost when the container exits' "$tmp/novol.log" \
   && grep -q -- '-v "$PWD/results:/results"' "$tmp/novol.log"; then
    ok "no /results volume: the run warns that its results will be lost"
else
    cat "$tmp/novol.log"; bad "no /results volume (exit $rc)"
fi
rc=0; plain --privileged -v "$tmp/results:/results:ro" "$TAG" run custom --set runtime=1 --set size=4m --yes \
    --out /results/ro >"$tmp/ro.log" 2>&1 || rc=$?
if [ "$rc" = 2 ] && grep -q 'read-only' "$tmp/ro.log" && grep -q ':ro' "$tmp/ro.log" && no_tb "$tmp/ro.log" \
   && [ "$(wc -l <"$tmp/ro.log")" -le 2 ] && [ ! -e "$tmp/results/ro" ]; then
    ok "read-only /results: exit 2, one sentence: $(head -c 160 "$tmp/ro.log")"
else
    cat "$tmp/ro.log"; bad "read-only /results (exit $rc)"
fi
mkdir -p "$tmp/rootowned" && chmod 755 "$tmp/rootowned"
rc=0; plain --privileged --user 1000 -v "$tmp/rootowned:/results" "$TAG" run custom --set runtime=1 --set size=4m \
    --yes >"$tmp/user.log" 2>&1 || rc=$?
if [ "$rc" = 2 ] && grep -q 'not writable by uid 1000' "$tmp/user.log" && grep -q -- '--user' "$tmp/user.log" \
   && no_tb "$tmp/user.log" && [ -z "$(ls -A "$tmp/rootowned")" ]; then
    ok "--user 1000 on a root-owned /results: exit 2, one sentence: $(head -c 160 "$tmp/user.log")"
else
    cat "$tmp/user.log"; ls -la "$tmp/rootowned"; bad "--user 1000 on a root-owned /results (exit $rc)"
fi

# --- agents started through the Docker Engine API (run --start-agent) ------------------------------
# podman's Docker-compatible API on a socket here stands in for a fleet host's Docker Engine:
# app.fleet.containers (the host's .venv, which has the docker SDK) starts the image's agent without a network,
# on a socket in a 0700 directory bound into the container, fio --client runs a small job on it, and the
# container is removed again.
step "run --start-agent: the image's agent through the Docker Engine API (podman system service)"
command -v fio >/dev/null || { apt-get update -q >/dev/null;
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends fio >/dev/null; }
# this machine's podman needs low ulimits for every container (lib.sh): the service takes them from here
printf '[containers]\ndefault_ulimits = ["nofile=1024:1024", "nproc=1024:1024"]\n' >"$tmp/containers.conf"
CONTAINERS_CONF="$tmp/containers.conf" podman --runtime=runc --cgroup-manager=cgroupfs system service --time=0 \
    "unix://$tmp/podman.sock" >"$tmp/podman-service.log" 2>&1 &
svc_pid=$!
for _ in $(seq 200); do [ -S "$tmp/podman.sock" ] && break; sleep 0.1; done
install -d -m 0700 "$tmp/agent"
if [ ! -S "$tmp/podman.sock" ]; then
    cat "$tmp/podman-service.log"; bad "podman system service did not start"
elif ! "$repo/.venv/bin/python" -c 'import docker' 2>/dev/null; then
    bad "the docker SDK is not in $repo/.venv (a runtime dependency: make setup-run installs it there)"
else
    rc=0; (cd "$repo" && PYTHONPATH="$repo" "$repo/.venv/bin/python" "$here/agent_check.py" "unix://$tmp/podman.sock" \
        "$TAG" "$tmp/agent/agent.sock" "$NAME-agent" "$loop") >"$tmp/agent-check.log" 2>&1 || rc=$?
    while IFS= read -r line; do
        case "$line" in
            ok:*) ok "${line#ok: }" ;;
            bad:*) bad "${line#bad: }" ;;
            *) echo "      $line" ;;
        esac
    done <"$tmp/agent-check.log"
    if [ "$rc" != 0 ] && ! grep -q '^bad:' "$tmp/agent-check.log"; then bad "agent_check.py exited $rc"; fi
fi
stop_service

# --- the TUI in a pseudo-terminal -----------------------------------------------------------------
step "TUI in a pseudo-terminal (80x24)"
# (the TUI check comes last: it needs the app's TUI, written separately from the core)
if python3 - "$NAME-tui" "$TAG" "$tmp/results" "$tmp/tui.out" "$loop" "${PODMAN_RUN[@]}" <<'PY'
import os, pty, re, select, signal, struct, subprocess, sys, termios, fcntl, time
name, tag, results, dump, loop, *podman_run = sys.argv[1:]
cmd = podman_run + ["--rm", "-it", "--name", name, "--privileged", "-v", "/dev:/dev",
                    "-v", f"{results}:/results", "-e", "TERM=xterm-256color", tag]
pid, fd = pty.fork()
if pid == 0:
    os.execvp(cmd[0], cmd)
fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 80, 0, 0))
buf = b""
def read_for(seconds, until=None):
    global buf
    end = time.time() + seconds
    while time.time() < end:
        r, _, _ = select.select([fd], [], [], 0.2)
        if r:
            try:
                chunk = os.read(fd, 65536)
            except OSError:
                return False
            if not chunk:
                return False
            buf += chunk
            if until and until(text()):
                return True
    return None
def text():
    t = buf.decode("utf-8", "replace")
    t = re.sub(r"\x1b\[[0-9;?<>=]*[ -/]*[@-~]", " ", t)  # CSI
    t = re.sub(r"\x1b\][^\x07\x1b]*(\x07|\x1b\\)", " ", t)  # OSC
    return re.sub(r"\x1b.", " ", t)
loopname = loop.rsplit("/", 1)[-1]
want = ["profiler-tui", "write plan", loopname]
read_for(60, until=lambda t: all(w in t for w in want))
screen = text()
found = {w: (w in screen) for w in want}
os.write(fd, b"q")
exited = read_for(10) is False
if not exited:
    os.write(fd, b"\x11")  # ctrl+q
    exited = read_for(5) is False
if not exited:
    subprocess.run(["podman", "rm", "-f", name], capture_output=True)
    os.kill(pid, signal.SIGKILL)
_, status = os.waitpid(pid, 0)
open(dump, "w").write(screen)
print("first screen shows:", ", ".join(f"{w!r}={'yes' if v else 'NO'}" for w, v in found.items()),
      "| quit with q:", "yes" if exited else "NO")
sys.exit(0 if all(found.values()) and exited else 1)
PY
then
    ok "TUI draws the devices table in a terminal and quits on q"
else
    if ! prun --entrypoint python3 "$TAG" -c 'import app.tui' >/dev/null 2>&1; then
        bad "TUI missing: app.tui is not in the image yet"
    else
        echo "--- screen text (escape sequences removed), first 1500 chars:"; head -c 1500 "$tmp/tui.out"; echo
        bad "TUI did not draw its first screen or did not quit"
    fi
fi

[ "$failed" = 0 ]
