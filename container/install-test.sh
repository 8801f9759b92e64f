#!/usr/bin/env bash
# The install test (README.md, "Set up"): each way a user installs the tool, on a pristine Debian bookworm root.
#   make:  a clean clone of this repository copied into the root; `make setup-run` (what `make run` does before it
#          starts the TUI; apt-get installs make first, as a fresh Debian lacks it), then instead of the TUI, under
#          TERM=dumb: `profiler-tui --version`, `presets`, `run quick` on a file (runtime 1 s, one replicate)
#   pipx:  the runtime Debian packages and pipx, then `pipx install .`; the same three commands, and the memory
#          engine that setup.py compiled into the package (its path in --version, an idle-latency run)
# Each prints what it installed (Debian packages, MB apt downloaded, the venv's MB) and its seconds, and fails
# when a command fails or the root holds a package only the tests need (a browser, QEMU, podman, runc,
# debootstrap, an SSH server: an sshd would listen on port 22), or the venv holds a test tool or pandas.
# The root is the debootstrapped base image of the container test (container/base-image.sh: made once per machine
# and shared), copied out of podman; it runs in a chroot inside a mount namespace of its own (proc, sys and dev
# bound there vanish with it). Everything is removed at the end, also on failure.
#   container/install-test.sh [make|pipx ...]       (root; default: both, side by side)
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/.." && pwd)"
. "$here/lib.sh"

[ "$(id -u)" = 0 ] || { echo "container/install-test.sh: needs root (debootstrap, chroot, mounts)" >&2; exit 1; }
modes=("$@")
[ ${#modes[@]} -gt 0 ] || modes=(make pipx)
for m in "${modes[@]}"; do
    case "$m" in make|pipx) ;; *) echo "container/install-test.sh: unknown setup '$m' (make or pipx)" >&2; exit 2 ;; esac
done

IMAGE=docker.io/library/debian:bookworm-slim
# what no runtime setup may install (the tests' toolchain) — and the venv's test tools
FORBIDDEN=(chromium qemu-system-x86 podman runc debootstrap openssh-server busybox-static)
FORBIDDEN_PY=(pytest mypy hypothesis ruff import_linter pandas)
t_start=$(date +%s)
tmp="$(mktemp -d /var/tmp/profiler-tui-itest.XXXXXX)"
pids=()
cleanup() {
    local rc=$? p
    set +e
    for p in "$tmp"/*.pid; do [ -f "$p" ] && kill "$(cat "$p")" 2>/dev/null; done
    for p in "${pids[@]}"; do kill -- "-$p" 2>/dev/null; wait "$p" 2>/dev/null; done
    rm -rf "$tmp"
    echo "install test took $(( $(date +%s) - t_start ))s"
    exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

need_host_tools
"$here/base-image.sh" | sed 's/^/base image: /'

# A clean clone: the committed tree of this checkout's HEAD, nothing built or installed in it.
git clone -q --no-hardlinks "$repo" "$tmp/src"
git -C "$tmp/src" checkout -q --detach "$(git -C "$repo" rev-parse HEAD)"
rm -rf "$tmp/src/.git"
run_pkgs="$(make -s --no-print-directory -C "$repo" run-pkgs)"

# the inner scripts (run by bash in the chroot, as root, with a minimal environment)
cat >"$tmp/make.sh" <<'SH'
set -euo pipefail
apt-get update -q >/dev/null
apt-get install -y -q --no-install-recommends make 2>&1 | tee /root/apt-make.log | grep -E '^(Need to get|[0-9]+ upgraded)'
cd /root/profiler-tui
t0=$(date +%s)
make setup-run >/root/setup.log 2>&1 || { echo "make setup-run failed; its last lines:"; tail -n 30 /root/setup.log; exit 1; }
grep -E '^(installing|Need to get|[0-9]+ upgraded)' /root/setup.log || true
echo "SETUP_SECONDS $(( $(date +%s) - t0 ))" >>/root/markers
# run again: everything is there, so nothing is installed (what `make run` does each time)
t0=$(date +%s)
make setup-run >/root/again.log 2>&1 || { cat /root/again.log; exit 1; }
if grep -qE '^installing|pip install' /root/again.log; then
    cat /root/again.log; echo "FAIL  a second make setup-run installed again"; exit 1
fi
echo "AGAIN_SECONDS $(( $(date +%s) - t0 ))" >>/root/markers
echo "VENV /root/profiler-tui/.venv" >>/root/markers
exec env PATH="/root/profiler-tui/.venv/bin:$PATH" bash /root/commands.sh
SH
cat >"$tmp/pipx.sh" <<'SH'
set -euo pipefail
apt-get update -q >/dev/null
t0=$(date +%s)
# shellcheck disable=SC2086
apt-get install -y -q --no-install-recommends pipx $RUN_PKGS 2>&1 | tee /root/apt.log | grep -E '^(Need to get|[0-9]+ upgraded)'
cd /root/profiler-tui
pipx install . >/root/pipx.log 2>&1 || { echo "pipx install . failed:"; tail -n 30 /root/pipx.log; exit 1; }
head -n 3 /root/pipx.log
echo "SETUP_SECONDS $(( $(date +%s) - t0 ))" >>/root/markers
echo "VENV /root/.local/pipx/venvs/profiler-tui" >>/root/markers
cd /root
exec env PATH="/root/.local/bin:$PATH" bash /root/commands.sh
SH
cat >"$tmp/commands.sh" <<'SH'
set -euo pipefail
export TERM=dumb
profiler-tui --version | tee /root/version.txt
profiler-tui presets >/root/presets.txt
grep -q quick /root/presets.txt && grep -q mem-idle /root/presets.txt
echo "presets: $(grep -c . /root/presets.txt) lines, quick and mem-idle among them"
profiler-tui run quick --set runtime=1 --set repeat=1 --set size=4m --target /root/quick.bin --yes --out /root/q \
    >/root/quick.log 2>&1 || { tail -n 20 /root/quick.log; exit 1; }
echo "run quick on /root/quick.bin: $(wc -l </root/q/results.jsonl) points"
[ "$(wc -l </root/q/results.jsonl)" = 8 ]
if grep -q 'built-in engine (memlat)' /root/version.txt; then
    profiler-tui run mem-idle --engine builtin --yes --out /root/m >/root/mem.log 2>&1 || { tail -n 20 /root/mem.log; exit 1; }
    python3 -c 'import json,sys; r=json.loads(open(sys.argv[1]).readline()); assert r["metrics"]["latency_ns"] > 0, r; print("run mem-idle --engine builtin: idle latency %.1f ns" % r["metrics"]["latency_ns"])' /root/m/results.jsonl
fi
SH

# setup MODE: make a root, run the MODE's inner script in it, check and measure; output to $tmp/MODE.out
setup() {
    local mode="$1" root="$tmp/$1/root" cid t0 before after venv rc=0 bad=0 p
    set +e  # every check runs and reports; a failed step is a FAIL line
    mkdir -p "$root"
    cid="$(podman --runtime=runc --cgroup-manager=cgroupfs create "$IMAGE" true)"
    podman export "$cid" | tar -x -C "$root"
    podman rm -f "$cid" >/dev/null
    rm -f "$root/.containerenv" "$root/run/.containerenv" "$root/.dockerenv"
    cp /etc/resolv.conf "$root/etc/resolv.conf"
    cp -a "$tmp/src" "$root/root/profiler-tui"
    cp "$tmp/$mode.sh" "$tmp/commands.sh" "$root/root/"
    local ca_env=()
    # behind a TLS-inspecting proxy pip must trust the host's CA bundle (as container/build.sh passes it)
    if [ -s /etc/ssl/certs/ca-certificates.crt ]; then
        cp /etc/ssl/certs/ca-certificates.crt "$root/root/host-ca.crt"; ca_env=(PIP_CERT=/root/host-ca.crt)
    fi
    before="$(chroot "$root" dpkg-query -W -f '${Package}\n' | sort)"
    echo "== $mode: a pristine bookworm root ($(wc -l <<<"$before") Debian packages)"
    t0=$(date +%s)
    unshare --mount --propagation private -- bash -c '
        r="$1"; shift
        mount -t proc proc "$r/proc" && mount --rbind /sys "$r/sys" && mount --rbind /dev "$r/dev" || exit 1
        exec chroot "$r" /usr/bin/env -i HOME=/root LANG=C.UTF-8 DEBIAN_FRONTEND=noninteractive \
            PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin "$@"' \
        _ "$root" "${ca_env[@]}" RUN_PKGS="$run_pkgs" timeout 1200 bash "/root/$mode.sh" &
    # unshare, bash, chroot and env exec one another: this pid ends up as timeout's, which leads a process group
    # of its own and passes a signal on to all of it (the cleanup's kill)
    echo $! >"$tmp/$mode.pid"
    wait $! || rc=$?
    rm -f "$tmp/$mode.pid"  # gone: its number may be another process's now
    local secs=$(( $(date +%s) - t0 ))
    [ "$rc" = 0 ] || { echo "FAIL  $mode: the setup or a command exited $rc"; bad=1; }
    after="$(chroot "$root" dpkg-query -W -f '${Package}\n' | sort)"
    local added mb
    added="$(comm -13 <(echo "$before") <(echo "$after"))"
    # apt's "Need to get X MB" lines, summed (kB and B too)
    mb="$(cat "$root"/root/apt*.log "$root/root/setup.log" 2>/dev/null | awk '/^Need to get/ {
        v=$4; u=$5; sub(/.*\//, "", v); gsub(/,/, "", v)
        if (u ~ /^kB/) v/=1000; else if (u ~ /^B/) v/=1e6; else if (u ~ /^GB/) v*=1000; s+=v } END {printf "%.0f", s}')"
    venv="$(sed -n 's/^VENV //p' "$root/root/markers" 2>/dev/null || true)"
    for p in "${FORBIDDEN[@]}"; do
        if grep -qx "$p" <<<"$after"; then echo "FAIL  $mode installed $p, which only the tests need"; bad=1; fi
    done
    if [ -e "$root/usr/sbin/sshd" ] || compgen -G "$root/lib/systemd/system/ssh*.service" >/dev/null; then
        echo "FAIL  $mode installed an SSH server"; bad=1
    fi
    local vdir="$root${venv:-/nonexistent}"
    if [ -n "$venv" ] && [ -d "$vdir" ]; then
        for p in "${FORBIDDEN_PY[@]}"; do
            if compgen -G "$vdir/lib/python3*/site-packages/$p" >/dev/null; then
                echo "FAIL  $mode: the venv holds $p, which running does not need"; bad=1
            fi
        done
        echo "venv: $(du -sm "$vdir" | cut -f1) MB installed"
    fi
    if [ "$mode" = pipx ] && ! grep -q "built-in engine (memlat) at /root/.local/pipx/venvs/profiler-tui/" \
            "$root/root/version.txt" 2>/dev/null; then
        echo "FAIL  pipx: --version does not name the engine inside the pipx venv"; bad=1
    fi
    local again
    again="$(sed -n 's/^AGAIN_SECONDS \(.*\)/; again, with everything there: \1 s/p' "$root/root/markers" 2>/dev/null)"
    echo "$mode: $(grep -c . <<<"$added") Debian packages installed, ${mb} MB downloaded by apt, ${secs} s in all" \
         "(the set-up: $(sed -n 's/^SETUP_SECONDS //p' "$root/root/markers" 2>/dev/null) s$again)"
    if [ "$bad" = 0 ]; then
        echo "$mode: none of ${FORBIDDEN[*]} installed; no sshd; no ${FORBIDDEN_PY[*]} in the venv"
        echo "PASS  $mode"
    else
        echo "FAIL  $mode"
    fi
}

# each set-up in a process group of its own (the cleanup ends all of it: apt, pip, the chroot)
set -m
for m in "${modes[@]}"; do
    setup "$m" >"$tmp/$m.out" 2>&1 &
    pids+=($!)
done
set +m
failed=0
for i in "${!modes[@]}"; do
    wait "${pids[$i]}" || true
    m="${modes[$i]}"
    sed "s/^/[$m] /" "$tmp/$m.out"
    grep -q "^PASS  $m\$" "$tmp/$m.out" || failed=$((failed + 1))
done
pids=()
echo "install-test: $(( ${#modes[@]} - failed )) passed, $failed failed"
[ "$failed" = 0 ]
