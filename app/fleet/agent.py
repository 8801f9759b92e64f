"""``profiler-tui agent``: fio's own server (``fio --server``) on a fleet host, for a controller's ``fio --client``.

fio's server protocol has no authentication: whoever can connect runs any job as root, writes to any device
included.  Loopback TCP is no boundary between the users of one machine, so the agent listens on a Unix socket
(default /run/profiler-tui/agent.sock) in a directory only the agent's user may enter (0700, created and checked
here: a directory or socket with another owner, a group/other mode or a symlink is refused), and a controller
reaches it through an SSH forward of that socket (``run --host ssh://…``).  A TCP listener needs explicit
consent: ``--bind``/``--port`` with ``--allow-local-users`` (loopback) or ``--allow-network`` (any other
address), each printing who can reach it.

One agent per socket or port: an exclusive lock file next to the socket (``NAME.lock``; ``tcp-PORT.lock`` for
a TCP port) is held for the agent's life, so two agents started at the same moment cannot both serve.

fio forks a process per connection and its jobs fork again into sessions of their own, so neither a
parent-death signal of fio's server nor its process group reaches them.  fio therefore runs under a small guard
(:data:`GUARD`), a child subreaper that kills every process under it when the agent dies or stops it.  SIGTERM,
SIGINT or SIGHUP stop the agent.
"""

from __future__ import annotations

import errno
import fcntl
import ipaddress
import os
import signal
import socket
import stat
import subprocess
import sys
import time
from dataclasses import dataclass
from types import FrameType
from typing import TextIO

from app.core.errors import UsageError
from app.fleet.hosts import DEFAULT_AGENT_PORT, DEFAULT_AGENT_SOCKET, check_socket_path
from app.runners.fio import STATUS_INTERVAL_S, fio_binary

Address = ipaddress.IPv4Address | ipaddress.IPv6Address

NETWORK_WARNING = ("WARNING: fio's server has no authentication: anyone who can reach {addr} port {port} can run "
                   "any fio job as root on this host, including writes to any device. Use the default Unix socket "
                   "and reach it through SSH (run --host ssh://HOST) unless this network is trusted.")
LOCAL_WARNING = ("WARNING: fio's server has no authentication: every user of this machine (and every container "
                 "sharing its network) can connect to {addr} port {port} and run any fio job as root, including "
                 "writes to any device. The default Unix socket is reachable by root only.")

# The guard between the agent and fio (``python -I -S -c GUARD AGENT_PID FIO ARGS…``, started in a new session).
# fio's job processes call setsid(), so no process group holds them all: the guard is a child subreaper instead
# (every orphan of the tree is re-parented to it, never to init), and on SIGTERM/SIGINT/SIGHUP, on the agent's
# death (its parent-death signal is SIGTERM) or when fio's server exits, it SIGKILLs every descendant it finds
# in /proc until none is left.  fio's server sets its umask to 0 before binding its socket; the agent narrows
# the socket's mode once it exists.
GUARD = r"""
import ctypes, os, signal, sys, time
libc = ctypes.CDLL(None)
libc.prctl(36, 1)  # PR_SET_CHILD_SUBREAPER
libc.prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
def tree():
    kids = {}
    for d in filter(str.isdigit, os.listdir("/proc")):
        try:
            rest = open(f"/proc/{d}/stat").read().rsplit(")", 1)[1].split()
        except (OSError, IndexError, ValueError):
            continue
        if rest[0] != "Z":
            kids.setdefault(int(rest[1]), []).append(int(d))
    found, todo = [], [os.getpid()]
    while todo:
        for c in kids.get(todo.pop(), []):
            found.append(c)
            todo.append(c)
    return found
def end(signum=None, frame=None, code=0):
    for _ in range(200):
        pids = tree()
        if not pids:
            break
        for p in pids:
            try:
                os.kill(p, signal.SIGKILL)
            except OSError:
                pass
        time.sleep(0.02)
        try:
            while os.waitpid(-1, os.WNOHANG)[0] > 0:
                pass
        except ChildProcessError:
            pass
    os._exit(code)
for s in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
    signal.signal(s, end)
if os.getppid() != int(sys.argv[1]):  # the agent died before the parent-death signal was set
    end()
pid = os.fork()
if pid == 0:
    for s in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(s, signal.SIG_DFL)
    os.execv(sys.argv[2], sys.argv[2:])
status = os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])
end(code=status if status >= 0 else 128 - status)
"""


@dataclass(frozen=True)
class Listen:
    """Where fio's server listens: a Unix socket ``path``, or TCP ``addr``/``port``."""

    path: str | None = None
    addr: Address | None = None
    port: int = DEFAULT_AGENT_PORT

    @property
    def directory(self) -> str:
        """The directory of the socket (a TCP agent's lock lives in the default socket's directory)."""
        return os.path.dirname(self.path or DEFAULT_AGENT_SOCKET)

    @property
    def lock_name(self) -> str:
        return f"{os.path.basename(self.path)}.lock" if self.path else f"tcp-{self.port}.lock"

    @property
    def described(self) -> str:
        return f"socket {self.path}" if self.path else f"{self.addr} port {self.port}"

    def server_argv(self) -> list[str]:
        """fio's server on the listener, sending its jobs' figures once a second besides at their end: the
        controller's per-second histograms of this host (app.fleet.hosthist)."""
        status = f"--status-interval={STATUS_INTERVAL_S * 1000}ms"
        if self.path:
            return [fio_binary(), f"--server=sock:{self.path}", status]
        assert self.addr is not None
        return [fio_binary(), f"--server={'ip6' if self.addr.version == 6 else 'ip'}:{self.addr},{self.port}", status]


def choose_listen(socket_path: str | None, bind: str | None, port: int | None, allow_network: bool,
                  allow_local_users: bool) -> Listen:
    """The agent's listener from its options; UsageError (exit 2) for TCP without the consent its address needs."""
    if bind is None and port is None:
        if allow_network or allow_local_users:
            raise UsageError("--allow-network and --allow-local-users are for a TCP listener: give --bind ADDR "
                             "--port N too (the default Unix socket needs neither).")
        return Listen(path=check_socket_path(socket_path or DEFAULT_AGENT_SOCKET, "--socket"))
    if socket_path is not None:
        raise UsageError("--socket and --bind/--port are two ways to listen: give one of them.")
    text = bind or "127.0.0.1"
    try:
        addr = ipaddress.ip_address(text)
    except ValueError:
        raise UsageError(f"--bind {text[:80]!r}: expected an IP address.") from None
    if addr.is_loopback and not allow_local_users:
        raise UsageError(f"--bind {addr}: fio's server has no authentication and every user of this machine can "
                         "reach a loopback port, so a loopback TCP agent needs --allow-local-users (the default "
                         "Unix socket is reachable by root only).")
    if not addr.is_loopback and not allow_network:
        raise UsageError(f"--bind {text}: fio's server has no authentication, so a non-loopback address needs "
                         "--allow-network (then anyone who reaches the port can run jobs as root).")
    return Listen(addr=addr, port=port or DEFAULT_AGENT_PORT)


# --- the socket's directory, the lock, the socket --------------------------------------------------------


def _refuse(path: str, why: str) -> UsageError:
    return UsageError(f"{path}: {why}; the agent's socket directory must be a directory (not a symlink) owned by "
                      f"uid {os.geteuid()} with mode 0700 — remove or fix it.")


def open_socket_dir(path: str) -> int:
    """The socket's directory, created 0700 if absent, as an O_NOFOLLOW descriptor; UsageError when it (or its
    parent, writable by others without the sticky bit) could let another user in."""
    parent = os.path.dirname(path) or "/"
    try:
        pst = os.stat(parent)
    except OSError as e:
        raise UsageError(f"{path}: its parent directory {parent} cannot be used ({e.strerror}).") from None
    if pst.st_mode & 0o022 and not pst.st_mode & stat.S_ISVTX:
        raise UsageError(f"{path}: its parent directory {parent} is writable by other users (mode "
                         f"{stat.S_IMODE(pst.st_mode):04o}, not sticky), who could replace the socket's directory.")
    try:
        os.mkdir(path, 0o700)  # the umask can only narrow it
    except FileExistsError:
        pass
    except OSError as e:
        raise UsageError(f"{path}: cannot create the agent's socket directory ({e.strerror}).") from None
    try:
        fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError as e:
        raise _refuse(path, "it is a symlink or not a directory" if e.errno in (errno.ELOOP, errno.ENOTDIR)
                      else str(e.strerror)) from None
    st = os.fstat(fd)
    problem = (f"owned by uid {st.st_uid}" if st.st_uid != os.geteuid() else
               f"mode {stat.S_IMODE(st.st_mode):04o} lets group or others in" if st.st_mode & 0o077 else "")
    if problem:
        os.close(fd)
        raise _refuse(path, problem)
    return fd


def take_lock(dir_fd: int, name: str, listen: Listen) -> int:
    """The agent's exclusive lock on its socket or port (a descriptor held for its life, see
    :func:`release_lock`); UsageError when another agent holds it."""
    where = os.path.join(listen.directory, name)
    while True:
        try:
            fd = os.open(name, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600, dir_fd=dir_fd)
        except OSError as e:
            raise UsageError(f"{where}: cannot open the agent's lock file ({e.strerror}).") from None
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_uid != os.geteuid() or st.st_mode & 0o077:
            os.close(fd)
            raise UsageError(f"{where}: the agent's lock file is not a regular file of uid {os.geteuid()} with "
                             "mode 0600; remove it.")
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            raise UsageError(f"{listen.described} cannot be used: another agent serves it (it holds {where}); "
                             "stop it or choose another " + ("--socket." if listen.path else "--port.")) from None
        try:  # the agent that held it may have removed the name meanwhile: then lock the new file
            if os.stat(name, dir_fd=dir_fd, follow_symlinks=False).st_ino == st.st_ino:
                return fd
        except FileNotFoundError:
            pass
        os.close(fd)


def release_lock(dir_fd: int, name: str, fd: int) -> None:
    """Remove the lock file, then let it go: an agent waiting on the old file sees its name gone and retries."""
    try:
        os.unlink(name, dir_fd=dir_fd)
    except OSError:
        pass
    os.close(fd)


def connects(path: str) -> bool:
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.settimeout(1.0)
        try:
            s.connect(path)
            return True
        except OSError:
            return False


def _socket_problem(st: os.stat_result, exact_mode: int | None = None) -> str:
    if stat.S_ISLNK(st.st_mode):
        return "is a symlink"
    if not stat.S_ISSOCK(st.st_mode):
        return "is not a socket"
    if st.st_uid != os.geteuid():
        return f"is owned by uid {st.st_uid}"
    mode = stat.S_IMODE(st.st_mode)
    if (exact_mode is not None and mode != exact_mode) or mode & 0o077:
        return f"has mode {mode:04o}, open to group or others"
    return ""


def clear_old_socket(dir_fd: int, path: str) -> None:
    """Remove the socket a killed agent left behind (we hold the lock, so no agent serves it).  UsageError when
    the name is a symlink, not a socket, another user's, open to others, or something still answers on it."""
    name = os.path.basename(path)
    try:
        st = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except FileNotFoundError:
        return
    problem = _socket_problem(st)
    if problem:
        raise UsageError(f"{path}: refused: it {problem}; remove it if no agent runs.")
    if connects(path):
        raise UsageError(f"{path}: something that is not an agent of this tool already serves this socket; stop it "
                         "or choose another --socket.")
    os.unlink(name, dir_fd=dir_fd)


def secure_socket(dir_fd: int, path: str) -> None:
    """fio's server binds its socket with umask 0 (mode 0777): narrow it to 0600 and check the result."""
    name = os.path.basename(path)
    os.chmod(name, 0o600, dir_fd=dir_fd)  # in our 0700 directory: nobody else can swap the name
    problem = _socket_problem(os.stat(name, dir_fd=dir_fd, follow_symlinks=False), exact_mode=0o600)
    if problem:
        raise UsageError(f"{path}: fio's socket {problem}.")


def remove_socket(dir_fd: int, path: str) -> None:
    """fio's server leaves its socket behind when it is stopped."""
    name = os.path.basename(path)
    try:
        if stat.S_ISSOCK(os.stat(name, dir_fd=dir_fd, follow_symlinks=False).st_mode):
            os.unlink(name, dir_fd=dir_fd)
    except OSError:
        pass


def check_port_free(addr: Address, port: int) -> None:
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


# --- fio's server under its guard --------------------------------------------------------------------------


def start_guarded(argv: list[str], cwd: str) -> subprocess.Popen[bytes]:
    """fio's server as the child of :data:`GUARD` (the agent's stdio), in a session of their own.  Its working
    directory is the agent's own (0700): what fio writes there by a relative name (``JOB.prerun.txt``, the
    output of a job's exec_prerun) stays root's, wherever the agent was started."""
    return subprocess.Popen([sys.executable, "-I", "-S", "-c", GUARD, str(os.getpid()), *argv],
                            stdin=subprocess.DEVNULL, start_new_session=True, cwd=cwd)


def stop_group(proc: subprocess.Popen[bytes], grace: float = 3.0) -> None:
    """SIGTERM the guard (it SIGKILLs every process under it), then SIGKILL what is left of its group."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            break
        try:
            proc.wait(grace)
            break
        except subprocess.TimeoutExpired:
            continue
    try:
        os.killpg(proc.pid, signal.SIGKILL)  # connection and job processes that outlived the server
    except ProcessLookupError:
        pass


def _answers(listen: Listen) -> bool:
    if listen.path:
        return connects(listen.path)
    assert listen.addr is not None
    probe = str(listen.addr)
    if listen.addr.is_unspecified:
        probe = "::1" if listen.addr.version == 6 else "127.0.0.1"
    try:
        with socket.create_connection((probe, listen.port), timeout=0.5):
            return True
    except OSError:
        return False


def wait_listening(listen: Listen, proc: subprocess.Popen[bytes], stopping: list[int],
                   timeout: float = 15.0) -> bool:
    """Until fio's server accepts connections (True), exits or is stopped (False)."""
    deadline = time.monotonic() + timeout
    while not stopping and proc.poll() is None and time.monotonic() < deadline:
        if _answers(listen):
            time.sleep(0.3)  # a port someone else holds answers too: fio, failing to bind it, has exited by now
            return proc.poll() is None
        time.sleep(0.05)
    return False


def _serve(listen: Listen, dir_fd: int, err: TextIO) -> int:
    """fio's server until it ends or a signal stops the agent; the exit status."""
    proc = start_guarded(listen.server_argv(), listen.directory)
    stopping: list[int] = []

    def on_signal(signum: int, frame: FrameType | None) -> None:
        stopping.append(signum)

    old = {s: signal.signal(s, on_signal) for s in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)}
    try:
        if wait_listening(listen, proc, stopping):  # the line says the agent takes connections now
            if listen.path:
                secure_socket(dir_fd, listen.path)
            print(f"profiler-tui agent: fio server on {listen.described} (pid {proc.pid}); stop with SIGTERM or ^C.",
                  file=err, flush=True)
        while not stopping and proc.poll() is None:
            time.sleep(0.2)
    finally:
        stop_group(proc)
        if listen.path:
            remove_socket(dir_fd, listen.path)
        for s, handler in old.items():
            signal.signal(s, handler)
    if stopping:
        print("profiler-tui agent: stopped.", file=err, flush=True)
        return 0
    return proc.returncode or 1


def run_agent(socket_path: str | None = None, bind: str | None = None, port: int | None = None,
              allow_network: bool = False, allow_local_users: bool = False, err: TextIO = sys.stderr) -> int:
    listen = choose_listen(socket_path, bind, port, allow_network, allow_local_users)
    fio_binary()  # ToolMissing (exit 4) before anything is created
    dir_fd = open_socket_dir(listen.directory)
    try:
        lock = take_lock(dir_fd, listen.lock_name, listen)
        try:
            if listen.path:
                clear_old_socket(dir_fd, listen.path)
            else:
                assert listen.addr is not None
                check_port_free(listen.addr, listen.port)
                warning = NETWORK_WARNING if not listen.addr.is_loopback else LOCAL_WARNING
                print(warning.format(addr=listen.addr, port=listen.port), file=err, flush=True)
            return _serve(listen, dir_fd, err)
        finally:
            release_lock(dir_fd, listen.lock_name, lock)
    finally:
        os.close(dir_fd)
