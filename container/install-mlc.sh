#!/bin/sh
# Install Intel MLC's Linux binary to DEST/mlc during the image build (Dockerfile stage "mlc").
#   install-mlc.sh SRC_DIR URL DEST
# A tarball SRC_DIR/mlc*.tgz (copied from vendor/ in the build context) wins; else URL is fetched
# with short timeouts. Whatever happens the build goes on: without MLC the image uses the
# built-in engine, and an MLC binary can still be mounted at /opt/mlc/mlc at run time.
set -eu
src="$1"; url="${2:-}"; dest="$3"
mkdir -p "$dest"
work="$(mktemp -d)"
tgz=""
for f in "$src"/mlc*.tgz "$src"/mlc*.tar.gz; do
    [ -f "$f" ] && { tgz="$f"; echo "MLC: using $(basename "$f") from the build context (vendor/)"; break; }
done
if [ -z "$tgz" ] && [ -n "$url" ]; then
    echo "MLC: fetching $url"
    # curl's own error goes to a file and is quoted in one line of ours: on stderr it would interleave with the
    # build's stdout mid-line
    if curl -fsSL --connect-timeout 10 --max-time 120 --retry 1 -o "$work/mlc.tgz" "$url" 2>"$work/curl.err"; then
        tgz="$work/mlc.tgz"
    else
        echo "MLC: could not download $url ($(tail -n 1 "$work/curl.err" | tr -cd '[:print:]' | cut -c 1-200);" \
             "no internet access from the builder?)."
    fi
fi
if [ -n "$tgz" ]; then
    # Intel's tarball holds Linux/mlc (and Windows/...); take only the Linux binary.
    if tar -xzf "$tgz" -C "$work" --wildcards '*Linux/mlc' 2>/dev/null \
       && bin="$(find "$work" -path '*Linux/mlc' -type f | head -n 1)" && [ -n "$bin" ]; then
        install -m 0755 "$bin" "$dest/mlc"
        echo "MLC: installed $dest/mlc"
    else
        echo "MLC: $(basename "$tgz") has no Linux/mlc inside; not installed."
    fi
fi
if [ ! -x "$dest/mlc" ]; then
    echo "MLC: not in this image. profiler-tui uses its built-in memory engine; to use MLC, put"
    echo "     mlc_v*.tgz in vendor/ and rebuild, or mount the binary at /opt/mlc/mlc at run time."
fi
rm -rf "$work"
