# Shared helpers for the container scripts (sourced, not run).

# The flags this machine needs: no Docker engine, podman from Debian with runc and cgroupfs,
# builds in a chroot with the host network (no CNI needed).
PODMAN_RUN=(podman --runtime=runc --cgroup-manager=cgroupfs run --network=host
            --ulimit nofile=1024:1024 --ulimit nproc=1024:1024)
PODMAN_BUILD=(podman --runtime=runc --cgroup-manager=cgroupfs build --isolation=chroot --network=host)

# Install podman, runc and debootstrap when missing (Debian; root or sudo).
need_host_tools() {
    local missing="" p sudo=""
    for p in podman runc debootstrap; do
        command -v "$p" >/dev/null 2>&1 || missing="$missing $p"
    done
    [ -z "$missing" ] && return 0
    [ "$(id -u)" = 0 ] || sudo=sudo
    echo "installing host packages:$missing"
    $sudo apt-get update -q >/dev/null
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q --no-install-recommends $missing >/dev/null
}
