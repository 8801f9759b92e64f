#!/usr/bin/env bash
# Build the profiler-tui image with podman (this machine has no Docker engine).
#   container/build.sh [--tag TAG] [--context DIR] [extra podman build args, e.g. --build-arg MLC_URL=]
# Makes the base image first when it is missing (container/base-image.sh) and installs podman,
# runc and debootstrap when missing. Prints the build time and image size.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/.." && pwd)"
. "$here/lib.sh"

tag=profiler-tui:latest
context="$repo"
while [ $# -gt 0 ]; do
    case "$1" in
        --tag) tag="$2"; shift 2 ;;
        --context) context="$2"; shift 2 ;;
        *) break ;;
    esac
done

need_host_tools
"$here/base-image.sh"

# Behind a TLS-inspecting proxy the build's pip and curl must trust the host's CA bundle; the bundle
# is mounted for the RUN steps only (never stored in a layer).
ca_args=()
host_ca=/etc/ssl/certs/ca-certificates.crt
if [ -s "$host_ca" ]; then
    ca_args=(-v "$host_ca:/run/host-ca.crt:ro"
             --build-arg PIP_CERT=/run/host-ca.crt --build-arg CURL_CA_BUNDLE=/run/host-ca.crt)
fi

t0=$(date +%s)
"${PODMAN_BUILD[@]}" "${ca_args[@]}" -f "$context/Dockerfile" -t "$tag" "$@" "$context"
t1=$(date +%s)
size=$(podman image inspect -f '{{.Size}}' "$tag")
echo "built $tag in $((t1 - t0))s; image size $((size / 1000000)) MB ($size bytes)"
