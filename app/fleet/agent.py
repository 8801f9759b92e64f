"""``profiler-tui agent``: fio's own server (``fio --server``) on a fleet host, for a controller's ``fio --client``.

fio's server protocol has no authentication: whoever reaches its port runs any job as root, writes to any
device included.  So the agent listens on loopback (127.0.0.1:8765) by default and a controller reaches it
through an SSH tunnel (``run --host ssh://…``); another address needs ``--allow-network`` and prints that
warning.  SIGTERM or SIGINT stops fio's server and every process it started (its process group), and the
kernel kills them too if the agent itself dies.
"""

from __future__ import annotations

import ipaddress
import os
import signal
import socket
import subprocess
import sys
import time
from types import FrameType
from typing import TextIO

from app.errors import UsageError
from app.runners.base import _die_with_parent
from app.runners.fio import fio_binary

WARNING = ("WARNING: fio's server has no authentication: anyone who can reach {addr} port {port} can run any "
           "fio job as root on this host, including writes to any device. Bind to 127.0.0.1 and reach it through "
           "SSH (run --host ssh://HOST) unless this network is trusted.")


def bind_address(text: str, allow_network: bool) -> ipaddress.IPv4Address | ipaddress.IPv6Address:
    try:
        addr = ipaddress.ip_address(text)
    except ValueError:
        raise UsageError(f"--bind {text[:80]!r}: expected an IP address (default 127.0.0.1).") from None
    if not addr.is_loopback and not allow_network:
        raise UsageError(f"--bind {text}: fio's server has no authentication, so the agent listens on a loopback "
                         "address unless --allow-network is given (then anyone who reaches the port can run jobs "
                         "as root).")
    return addr


def server_argv(addr: ipaddress.IPv4Address | ipaddress.IPv6Address, port: int) -> list[str]:
    kind = "ip6" if addr.version == 6 else "ip"
    return [fio_binary(), f"--server={kind}:{addr},{port}"]


def stop_group(proc: subprocess.Popen[bytes], grace: float = 3.0) -> None:
    """SIGTERM fio's server and everything in its process group, then SIGKILL what is left."""
    for sig, wait in ((signal.SIGTERM, grace), (signal.SIGKILL, grace)):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            break
        try:
            proc.wait(wait)
        except subprocess.TimeoutExpired:
            continue
        break
    try:
        os.killpg(proc.pid, signal.SIGKILL)  # connection and job processes that outlived the server
    except ProcessLookupError:
        pass


def wait_listening(addr: ipaddress.IPv4Address | ipaddress.IPv6Address, port: int, proc: subprocess.Popen[bytes],
                   stopping: list[int], timeout: float = 15.0) -> bool:
    """Until fio's server accepts connections on the port (True), exits or is stopped (False)."""
    probe = str(addr)
    if addr.is_unspecified:
        probe = "::1" if addr.version == 6 else "127.0.0.1"
    deadline = time.monotonic() + timeout
    while not stopping and proc.poll() is None and time.monotonic() < deadline:
        try:
            with socket.create_connection((probe, port), timeout=0.5):
                pass
            time.sleep(0.3)  # a port someone else holds answers too: fio, failing to bind it, has exited by now
            return proc.poll() is None
        except OSError:
            time.sleep(0.05)
    return False


def check_port_free(addr: ipaddress.IPv4Address | ipaddress.IPv6Address, port: int) -> None:
    """UsageError when something holds the port already.  fio's server binds with SO_REUSEPORT, so a second one
    on the same port would start and share the connections with the first; a plain bind here fails instead."""
    family = socket.AF_INET6 if addr.version == 6 else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # past connections in TIME_WAIT do not count
        try:
            s.bind((str(addr), port))
        except OSError as e:
            raise UsageError(f"--port {port}: {addr} port {port} cannot be used ({e.strerror}); another agent or "
                             "program holds it — stop it or choose another port.") from None


def run_agent(bind: str, port: int, allow_network: bool, err: TextIO = sys.stderr) -> int:
    addr = bind_address(bind, allow_network)
    check_port_free(addr, port)
    argv = server_argv(addr, port)
    if not addr.is_loopback:
        print(WARNING.format(addr=addr, port=port), file=err, flush=True)
    proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, start_new_session=True, preexec_fn=_die_with_parent)
    stopping: list[int] = []

    def on_signal(signum: int, frame: FrameType | None) -> None:
        stopping.append(signum)

    old = {s: signal.signal(s, on_signal) for s in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)}
    try:
        if wait_listening(addr, port, proc, stopping):  # the line says the port takes connections now
            print(f"profiler-tui agent: fio server on {addr} port {port} (pid {proc.pid}); stop with SIGTERM or ^C.",
                  file=err, flush=True)
        while not stopping and proc.poll() is None:
            time.sleep(0.2)
    finally:
        stop_group(proc)
        for s, handler in old.items():
            signal.signal(s, handler)
    if stopping:
        print("profiler-tui agent: stopped.", file=err, flush=True)
        return 0
    return proc.returncode or 1
