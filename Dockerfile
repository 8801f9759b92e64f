# profiler-tui — the container (docs/container.md). Multi-stage: compilers live only in the build stages.
#
#   docker build -t profiler-tui .
#   docker run --rm -it --privileged -v /dev:/dev -v "$PWD/results:/results" profiler-tui
#   docker run --rm --privileged --network none -v /dev:/dev \
#       -v /run/profiler-tui:/run/profiler-tui profiler-tui agent     # a fleet agent (docs/fleet.md): its
#       socket in the host's /run/profiler-tui (install -d -m 0700 /run/profiler-tui), no network needed
#
# Build arguments:
#   MLC_URL   Intel MLC tarball fetched at build time (short timeouts; on failure the build goes on
#             with the built-in engine). Empty to skip. A tarball at vendor/mlc*.tgz in the build
#             context is used instead when present; a binary mounted at /opt/mlc/mlc works at run time.
# See docs/container.md.

ARG BASE_IMAGE=debian:bookworm-slim

# ---------------------------------------------------------------------------------------------
# Build tools shared by every build stage (never copied into the final image).
FROM ${BASE_IMAGE} AS build-base
ARG DEBIAN_FRONTEND=noninteractive
ENV LANG=C.UTF-8
# deb-src for fio's source package (deb822 sources as in the official image, or a classic sources.list)
RUN if [ -f /etc/apt/sources.list.d/debian.sources ]; then \
        sed -i 's/^Types: deb$/Types: deb deb-src/' /etc/apt/sources.list.d/debian.sources; \
    else \
        sed -n 's/^deb /deb-src /p' /etc/apt/sources.list >> /etc/apt/sources.list; \
    fi \
 && apt-get update -qq \
 && apt-get install -y -qq --no-install-recommends \
        gcc make libc6-dev libaio-dev libnuma-dev zlib1g-dev dpkg-dev xz-utils \
        python3 python3-venv curl ca-certificates >/dev/null \
 && rm -rf /var/lib/apt/lists/*

# ---------------------------------------------------------------------------------------------
# fio, built from Debian's own source package (same version and patches as bookworm's fio) with
# only the engines a block/file profiler needs: libaio, io_uring (fio's built-in, no liburing
# needed), psync, mmap... Debian's binary package drags in Ceph, GlusterFS, RDMA and PMEM client
# libraries (~80 MB) that this tool never uses.
# apt checks the downloaded source files against the signed Release file's hashes, so dpkg-source's own check of
# the .dsc's inline signature (which needs the maintainers' keyring, not in the image) is skipped rather than
# warned about; /build belongs to _apt, so apt downloads there in its sandbox (no "unsandboxed" warning).
FROM build-base AS fio
WORKDIR /build
RUN chown _apt /build \
 && apt-get update -qq && apt-get source -qq --download-only fio >/dev/null && rm -rf /var/lib/apt/lists/* \
 && dpkg-source --no-check -x fio_*.dsc fio >/dev/null \
 && cd fio \
 && ./configure --prefix=/usr/local --disable-native | grep -E '^(Linux AIO support|NVMe uring|libnuma|zlib) ' \
 && make -j"$(nproc)" >/dev/null \
 && make install DESTDIR=/out >/dev/null \
 && rm -rf /out/usr/local/share/man \
 && /out/usr/local/bin/fio --version

# ---------------------------------------------------------------------------------------------
# The built-in memory engine (native/memlat/README.md).
FROM build-base AS engine
WORKDIR /src
COPY native/memlat/ native/memlat/
RUN make -C native/memlat \
 && install -D -m 0755 native/memlat/build/memlat /out/usr/local/bin/memlat

# ---------------------------------------------------------------------------------------------
# The app in its own venv. Dependencies first (from pyproject.toml only) so that editing the app
# re-runs just the last, quick step.
FROM build-base AS venv
# pip trusts the system's CA store (not its own bundled one), so a builder behind a TLS-inspecting
# proxy can pass its CA bundle: container/build.sh mounts the host's and sets this (docs/container.md).
ARG PIP_CERT=/etc/ssl/certs/ca-certificates.crt
ENV VIRTUAL_ENV=/opt/profiler-tui PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1
RUN python3 -m venv "$VIRTUAL_ENV"
WORKDIR /src
COPY pyproject.toml ./
RUN python3 -c 'import tomllib; print("\n".join(tomllib.load(open("pyproject.toml","rb"))["project"]["dependencies"]))' \
        > /tmp/requirements.txt \
 && "$VIRTUAL_ENV/bin/pip" install -q -r /tmp/requirements.txt
COPY README.md ./
COPY app/ app/
COPY presets/ presets/
RUN "$VIRTUAL_ENV/bin/pip" install -q --no-deps . \
 && share="$VIRTUAL_ENV/share/profiler-tui/presets" \
 && if [ ! -d "$share" ]; then \
        echo "note: the package did not install presets to $share; copying presets/ there"; \
        mkdir -p "$share" && cp -a presets/. "$share/"; \
    fi \
 && "$VIRTUAL_ENV/bin/python" -c 'import app, sys; print("profiler-tui", app.__version__, "in", sys.prefix)' \
 && "$VIRTUAL_ENV/bin/pip" uninstall -q -y pip setuptools \
 && find "$VIRTUAL_ENV/lib" -depth -type d -name tests -path '*/site-packages/*/tests' -exec rm -rf {} +

# ---------------------------------------------------------------------------------------------
# Intel MLC (proprietary, not redistributable): a tarball in the build context, else MLC_URL.
FROM build-base AS mlc
ARG MLC_URL=https://downloadmirror.intel.com/834254/mlc_v3.11b.tgz
ARG CURL_CA_BUNDLE=/etc/ssl/certs/ca-certificates.crt
# "vendor*" may match nothing; the script is always there.
COPY container/install-mlc.sh vendor* /tmp/mlc-src/
RUN sh /tmp/mlc-src/install-mlc.sh /tmp/mlc-src "$MLC_URL" /opt/mlc

# ---------------------------------------------------------------------------------------------
FROM ${BASE_IMAGE}
ARG DEBIAN_FRONTEND=noninteractive
RUN apt-get update -qq \
 && apt-get install -y -qq --no-install-recommends \
        python3 libaio1 liburing2 libnuma1 zlib1g util-linux e2fsprogs nvme-cli smartmontools >/dev/null \
 && rm -rf /var/lib/apt/lists/* /var/cache/debconf/*-old /var/log/apt /var/log/dpkg.log
COPY --from=fio /out/ /
COPY --from=engine /out/ /
COPY --from=venv /opt/profiler-tui /opt/profiler-tui
# Last, so that a build that only changes MLC reuses every layer above.
COPY --from=mlc /opt/mlc /opt/mlc
ENV PATH=/opt/profiler-tui/bin:/opt/mlc:$PATH \
    PROFILER_TUI_RESULTS=/results \
    PROFILER_TUI_MEMLAT=/usr/local/bin/memlat \
    LANG=C.UTF-8 \
    PYTHONDONTWRITEBYTECODE=1
# the tools this image uses, as the final image sees them (fio and memlat are not in the venv stage)
RUN profiler-tui --version
WORKDIR /results
ENTRYPOINT ["profiler-tui"]
