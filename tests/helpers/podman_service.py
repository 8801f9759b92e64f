"""podman's Docker-compatible API on a unix socket, for the tests of app/fleet/containers.py (container/test.sh
starts its own for the real image): ``podman system service --time=0 unix://DIR/podman.sock``, always stopped
again and its socket removed, and a tiny image with no registry (``podman import`` of a tarball holding this
machine's /bin/sh and sleep with their libraries) whose entry point imitates ``profiler-tui agent``.

This machine's podman needs runc, cgroupfs and low ulimits for every container (container/lib.sh): the
service gets the first two as flags and the ulimits from a containers.conf of its own (CONTAINERS_CONF).
"""

from __future__ import annotations

import contextlib
import io
import os
import re
import shutil
import signal
import subprocess
import tarfile
import time
from pathlib import Path
from typing import Iterator

CONF = '[containers]\ndefault_ulimits = ["nofile=1024:1024", "nproc=1024:1024"]\n'

# The fake agent: `ENTRYPOINT ["/agent", MODE]` + `agent --socket PATH` from start_agent.
#   ok    prints the agent's start line and sleeps until SIGTERM
#   dies  exits at once with an error, as fio does when its port is taken
#   late  prints the start line, then the error, and exits (the agent's line comes before fio binds)
#   mute  prints nothing and sleeps
FAKE_AGENT = b"""#!/bin/sh
mode="$1"; shift
line="profiler-tui agent: fio server on socket $3 (pid $$); stop with SIGTERM or ^C."
trap 'echo "profiler-tui agent: stopped." >&2; exit 0' TERM INT
case "$mode" in
ok)   echo "$line" >&2; sleep 600 & wait; exit 0;;
dies) echo "starting"; echo "fio: unable to bind to port $3: Address already in use" >&2; exit 1;;
late) echo "$line" >&2; sleep 0.3; echo "fio: pid=1, got signal=9 (port $3 taken)" >&2; exit 1;;
mute) sleep 600 & wait; exit 0;;
esac
exit 2
"""
MODES = ("ok", "dies", "late", "mute")


def missing() -> str | None:
    """Why the podman tests cannot run here, or None: only without root (podman with --privileged
    containers).  The tools are no reason: see :func:`absent_tools`."""
    if os.geteuid() != 0:
        return "needs root (podman with --privileged containers)"
    return None


def absent_tools() -> list[str]:
    """The tools the podman tests use that are not installed: `make setup` installs podman and runc (ldd is
    libc's), so one missing is a setup that failed, which the tests report as a failure, not a skip."""
    return [tool for tool in ("podman", "runc", "ldd") if not shutil.which(tool)]


def _podman_global() -> list[str]:
    return ["podman", *(["--runtime=runc"] if shutil.which("runc") else []), "--cgroup-manager=cgroupfs"]


@contextlib.contextmanager
def service(directory: Path, start_timeout: float = 20.0) -> Iterator[str]:
    """``podman system service`` on DIRECTORY/podman.sock for the block; its ``unix://`` URL."""
    sock = directory / "podman.sock"
    conf = directory / "containers.conf"
    conf.write_text(CONF)
    log = (directory / "podman-service.log").open("wb")
    proc = subprocess.Popen([*_podman_global(), "system", "service", "--time=0", f"unix://{sock}"],
                            stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                            env={**os.environ, "CONTAINERS_CONF": str(conf)}, start_new_session=True)
    try:
        deadline = time.monotonic() + start_timeout
        while not sock.exists():
            if proc.poll() is not None or time.monotonic() > deadline:
                log_text = (directory / "podman-service.log").read_text()
                raise RuntimeError(f"podman system service did not start: {log_text}")
            time.sleep(0.05)
        yield f"unix://{sock}"
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        log.close()
        sock.unlink(missing_ok=True)


def _rootfs_tar() -> bytes:
    """/bin/sh and sleep with the libraries ldd names (dereferenced) and /agent."""
    files = {"/bin/sh", "/bin/sleep"}
    for binary in sorted(files):
        out = subprocess.run(["ldd", binary], capture_output=True, text=True, check=True).stdout
        files.update(m.group(1) for m in re.finditer(r"(/\S+) \(0x", out))
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        for name, data in [(f, Path(f).read_bytes()) for f in sorted(files)] + [("/agent", FAKE_AGENT)]:
            info = tarfile.TarInfo(name.lstrip("/"))
            info.size, info.mode = len(data), 0o755
            tar.addfile(info, io.BytesIO(data))
    return buf.getvalue()


@contextlib.contextmanager
def fake_agent_images(directory: Path) -> Iterator[dict[str, str]]:
    """One local image per mode of the fake agent (mode -> tag), all removed after the block."""
    tarball = directory / "fake-agent-rootfs.tar"
    tarball.write_bytes(_rootfs_tar())
    tags: dict[str, str] = {}
    try:
        for mode in MODES:
            tag = f"localhost/profiler-tui-fake-agent:{os.getpid()}-{mode}"
            tags[mode] = tag
            subprocess.run(["podman", "import", "--quiet", "--change", f'ENTRYPOINT ["/agent", "{mode}"]',
                            str(tarball), tag], check=True, capture_output=True, timeout=60)
        yield tags
    finally:
        for tag in tags.values():
            subprocess.run(["podman", "rmi", "-f", tag], capture_output=True, timeout=60)
        tarball.unlink(missing_ok=True)


def remove_containers(label: str) -> list[str]:
    """Force-remove every container carrying ``label`` (KEY=VALUE); the names it removed."""
    out = subprocess.run(["podman", "ps", "-a", "--filter", f"label={label}", "--format", "{{.Names}}"],
                         capture_output=True, text=True, timeout=60).stdout.split()
    for name in out:
        subprocess.run(["podman", "rm", "-f", name], capture_output=True, timeout=60)
    return out
