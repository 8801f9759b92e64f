#!/usr/bin/env bash
# Make the Dockerfile's base image (docker.io/library/debian:bookworm-slim) locally with debootstrap,
# because this machine reaches no image registry. Idempotent: does nothing when the image exists.
# Usage: container/base-image.sh        (root; installs podman, runc, debootstrap when missing)
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
# shellcheck source=container/lib.sh
. "$here/lib.sh"

IMAGE=docker.io/library/debian:bookworm-slim
need_host_tools
# One at a time: the container test and the install test may both need the image first (`make test` runs them side
# by side); the lock is this script itself, opened read-only
exec 9<"$here/base-image.sh"
flock 9

if podman image exists "$IMAGE"; then
    echo "base image $IMAGE present; nothing to do"
    exit 0
fi

# A registry pull is tried first (quick failure where there is none), debootstrap otherwise.
if timeout 20 podman pull -q "$IMAGE" >/dev/null 2>&1; then
    echo "pulled $IMAGE"
    exit 0
fi

echo "no registry reachable: making $IMAGE with debootstrap (a few minutes, once per machine)"
MIRROR="${DEBIAN_MIRROR:-http://deb.debian.org/debian}"
root="$(mktemp -d /var/tmp/bookworm-rootfs.XXXXXX)"
trap 'rm -rf "$root"' EXIT
t0=$(date +%s)
debootstrap --variant=minbase bookworm "$root" "$MIRROR" >"$root.log" 2>&1 || {
    echo "debootstrap failed; last lines of $root.log:" >&2; tail -20 "$root.log" >&2; exit 1; }
rm -f "$root.log"
# The same sources as the official image: the release, its updates and security fixes.
rm -f "$root/etc/apt/sources.list"
cat > "$root/etc/apt/sources.list.d/debian.sources" <<SRC
Types: deb
URIs: $MIRROR
Suites: bookworm bookworm-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb
URIs: ${SECURITY_MIRROR:-http://deb.debian.org/debian-security}
Suites: bookworm-security
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SRC
# Slim it the way the official -slim image is: no apt lists, caches, docs or man pages.
rm -rf "$root"/var/lib/apt/lists/* "$root"/var/cache/apt/*.bin "$root"/var/cache/apt/archives/*.deb \
       "$root"/usr/share/doc/* "$root"/usr/share/man/* "$root"/usr/share/info/* "$root"/tmp/* \
       "$root"/var/cache/debconf/*-old "$root"/var/log/*.log "$root"/var/log/apt/*
find "$root/usr/share/locale" -mindepth 1 -maxdepth 1 ! -name locale.alias -exec rm -rf {} +
# Keep later apt-get runs inside the image from re-adding docs (what the official slim image does).
cat > "$root/etc/dpkg/dpkg.cfg.d/docker" <<'CFG'
path-exclude /usr/share/doc/*
path-include /usr/share/doc/*/copyright
path-exclude /usr/share/man/*
path-exclude /usr/share/groff/*
path-exclude /usr/share/info/*
path-exclude /usr/share/lintian/*
path-exclude /usr/share/linda/*
path-exclude /usr/share/locale/*
path-include /usr/share/locale/locale.alias
CFG
cat > "$root/etc/apt/apt.conf.d/docker-clean" <<'CFG'
DPkg::Post-Invoke { "rm -f /var/cache/apt/archives/*.deb /var/cache/apt/archives/partial/*.deb /var/cache/apt/*.bin || true"; };
APT::Update::Post-Invoke { "rm -f /var/cache/apt/archives/*.deb /var/cache/apt/archives/partial/*.deb /var/cache/apt/*.bin || true"; };
Dir::Cache::pkgcache "";
Dir::Cache::srcpkgcache "";
CFG
tar -C "$root" -c . | podman import -q \
    --change 'CMD ["bash"]' --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
    - "$IMAGE" >/dev/null
echo "made $IMAGE in $(( $(date +%s) - t0 ))s ($(podman image inspect -f '{{.Size}}' "$IMAGE") bytes)"
