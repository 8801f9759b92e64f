"""A QEMU guest for the tests: Debian's kernel on the host's read-only root, with real devices.

``Guest(workdir, …).start()`` boots ``qemu-system-x86_64`` (TCG: a KVM guest hangs on these machines) with
what the test asks for: NVMe namespaces on one controller, a SATA disk on the q35 machine's AHCI, two NUMA
nodes with one CPU each, and an sshd reached through a port forward bound to 127.0.0.1.  Commands run in the
guest through the second serial port (a Unix socket in the test's root-only folder): the host writes
``ID.sh`` into the exchange folder (shared over virtio-9p, the guest's ``/run/xchg``), says ``run ID`` and
reads ``ID.out``/``ID.err`` when the guest says ``done ID RC``.  QMP answers on another socket there.

QEMU is started with PR_SET_PDEATHSIG: when the test process dies, even by SIGKILL, the guest dies with it;
``close()`` kills it otherwise.  Nothing listens on TCP except the forward, on 127.0.0.1 only.
"""

from __future__ import annotations

import ctypes
import itertools
import json
import os
import shutil
import signal
import socket
import subprocess
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from tests.helpers.vm_image import ROOT, BootFiles

# the emulator; the harness's own test names one that does not exist to see the suite skip
QEMU = os.environ.get("PROFILER_TUI_TEST_QEMU", "qemu-system-x86_64")
GUEST_INIT = Path(__file__).resolve().parents[1] / "vm" / "guest_init.sh"
PR_SET_PDEATHSIG = 1


class GuestError(AssertionError):
    """The guest did not boot, or a command in it failed or timed out (the console's tail is in the text)."""


@dataclass(frozen=True)
class Done:
    rc: int
    out: str
    err: str


@dataclass
class Disk:
    """A raw image file the guest sees as a drive."""

    path: Path
    size: int  # bytes
    serial: str


@dataclass
class Spec:
    nvme: list[int] = field(default_factory=list)  # namespace sizes (bytes), nvme0n1, nvme0n2, …
    sata: int | None = None  # a SATA disk of this size, or none
    numa: bool = True  # two nodes, one CPU and half the memory each
    ssh_port: int | None = None  # 127.0.0.1:PORT → the guest's :22
    memory_mb: int = 768


def _die_with_parent() -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    os.setsid()


class Guest:
    def __init__(self, workdir: Path, boot: BootFiles, spec: Spec) -> None:
        self.dir = workdir
        self.boot = boot
        self.spec = spec
        self.xchg = workdir / "xchg"
        self.console = workdir / "console.log"
        self.ctl_path = workdir / "ctl.sock"
        self.qmp_path = workdir / "qmp.sock"
        self.proc: subprocess.Popen[bytes] | None = None
        self._ctl: socket.socket | None = None
        self._done: dict[int, int] = {}
        self._cond = threading.Condition()
        self._ids = itertools.count(1)
        self._reader: threading.Thread | None = None
        self.disks: list[Disk] = []
        self.boot_s: float | None = None
        self.ssh_dir: Path | None = None  # the controller's ssh_config, key and known_hosts (the lab fixture)

    @property
    def ssh_port(self) -> int | None:
        return self.spec.ssh_port

    # --- start and stop ------------------------------------------------------------------------------

    def _args(self) -> list[str]:
        s = self.spec
        args = [QEMU, "-accel", "tcg", "-cpu", "max", "-M", "q35", "-m", str(s.memory_mb), "-smp", "2",
                "-nodefaults", "-no-user-config", "-display", "none", "-no-reboot",
                "-kernel", str(self.boot.kernel), "-initrd", str(self.boot.initrd),
                "-append", " ".join(["console=ttyS0", "panic=-1", "quiet", f"ptinit={GUEST_INIT}",
                                     f"ptcheckout={ROOT}", f"ptmodules={self.boot.modules}",
                                     *(["ptwait=nvme0n1"] if s.nvme else [])]),
                "-serial", f"file:{self.console}",
                "-chardev", f"socket,id=ctl,path={self.ctl_path},server=on,wait=off",
                "-device", "isa-serial,chardev=ctl",
                "-qmp", f"unix:{self.qmp_path},server=on,wait=off",
                "-fsdev", "local,id=hostroot,path=/,readonly=on,security_model=none,multidevs=remap",
                "-device", "virtio-9p-pci,fsdev=hostroot,mount_tag=hostroot",
                "-fsdev", f"local,id=xchg,path={self.xchg},security_model=none",
                "-device", "virtio-9p-pci,fsdev=xchg,mount_tag=xchg"]
        if s.numa:
            half = s.memory_mb // 2
            for n in (0, 1):
                args += ["-object", f"memory-backend-ram,size={half}M,id=m{n}",
                         "-numa", f"node,nodeid={n},cpus={n},memdev=m{n}"]
        if s.nvme:
            # behind a PCIe root port, so that the drive has a trained link (2.5 GT/s x1) as in a server
            args += ["-device", "pcie-root-port,id=rp0,bus=pcie.0,chassis=1",
                     "-device", "nvme,id=nvme0,bus=rp0,serial=PTUI-NVME-0001"]
            for n, size in enumerate(s.nvme, start=1):
                disk = self._disk(f"nvme-ns{n}.img", size, "PTUI-NVME-0001")
                args += ["-drive", f"file={disk.path},if=none,id=nv{n},format=raw,cache=unsafe",
                         "-device", f"nvme-ns,drive=nv{n},bus=nvme0,nsid={n}"]
        if s.sata is not None:
            disk = self._disk("sata.img", s.sata, "PTUI-SATA-0001")
            args += ["-drive", f"file={disk.path},if=none,id=sd0,format=raw,cache=unsafe",
                     "-device", f"ide-hd,drive=sd0,bus=ide.0,serial={disk.serial},model=PTUI SATA DISK"]
        if s.ssh_port is not None:
            args += ["-netdev", f"user,id=n0,restrict=on,hostfwd=tcp:127.0.0.1:{s.ssh_port}-:22",
                     "-device", "virtio-net-pci,netdev=n0,romfile="]
        return args

    def _disk(self, name: str, size: int, serial: str) -> Disk:
        path = self.dir / name
        with open(path, "wb") as f:
            f.truncate(size)
        disk = Disk(path, size, serial)
        self.disks.append(disk)
        return disk

    def start(self, timeout: float = 180) -> Guest:
        self.dir.mkdir(parents=True, exist_ok=True)
        self.dir.chmod(0o700)  # the control and QMP sockets: root's alone
        self.xchg.mkdir(exist_ok=True)
        t0 = time.monotonic()
        self.proc = subprocess.Popen(self._args(), stdin=subprocess.DEVNULL, stdout=open(self.dir / "qemu.out", "wb"),
                                     stderr=subprocess.STDOUT, preexec_fn=_die_with_parent)
        deadline = t0 + timeout
        while self._ctl is None:
            if self.proc.poll() is not None:
                raise GuestError(f"QEMU exited {self.proc.returncode}: {self._tail()}")
            if time.monotonic() > deadline:
                raise GuestError(f"no control socket within {timeout} s: {self._tail()}")
            try:
                s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                s.connect(str(self.ctl_path))
                self._ctl = s
            except OSError:
                s.close()
                time.sleep(0.05)
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        proc = self.proc
        with self._cond:
            if not self._cond.wait_for(lambda: 0 in self._done or proc.poll() is not None,
                                       max(1.0, deadline - time.monotonic())) or 0 not in self._done:
                self.close()
                raise GuestError(f"the guest did not come up within {timeout} s: {self._tail()}")
        self.boot_s = time.monotonic() - t0
        return self

    def _read(self) -> None:
        assert self._ctl is not None
        buf = b""
        while True:
            try:
                chunk = self._ctl.recv(4096)
            except OSError:
                chunk = b""
            if not chunk:
                with self._cond:
                    self._done.setdefault(-1, 0)  # the line closed: the guest is gone
                    self._cond.notify_all()
                return
            buf += chunk
            while b"\n" in buf:
                line, buf = buf.split(b"\n", 1)
                words = line.decode("ascii", "replace").strip().split()
                with self._cond:
                    if words == ["ready"]:
                        self._done[0] = 0
                    elif len(words) == 3 and words[0] == "done" and words[1].isdigit() and \
                            words[2].lstrip("-").isdigit():
                        self._done[int(words[1])] = int(words[2])
                    self._cond.notify_all()

    def _tail(self, chars: int = 3000) -> str:
        try:
            return self.console.read_text(errors="replace")[-chars:]
        except OSError:
            return "(no console output)"

    def close(self) -> None:
        """Kill QEMU (no shutdown to wait for: the disks are scratch) and close the sockets."""
        if self.proc is not None and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(timeout=30)
        if self._ctl is not None:
            self._ctl.close()
        for disk in self.disks:
            disk.path.unlink(missing_ok=True)

    def __enter__(self) -> Guest:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- commands ------------------------------------------------------------------------------------

    def spawn(self, script: str) -> int:
        """Start ``script`` (sh) in the guest, in /run/xchg; its id for ``wait``."""
        if self._ctl is None:
            raise GuestError("the guest is not running")
        n = next(self._ids)
        (self.xchg / f"{n}.sh").write_text(script + "\n")
        self._ctl.sendall(f"run {n}\n".encode())
        return n

    def wait(self, n: int, timeout: float = 120) -> Done:
        with self._cond:
            ok = self._cond.wait_for(lambda: n in self._done or -1 in self._done, timeout)
        if not ok or n not in self._done:
            raise GuestError(f"command {n} did not finish within {timeout} s "
                             f"({(self.xchg / f'{n}.sh').read_text().strip()!r}): {self._tail()}")
        out = (self.xchg / f"{n}.out").read_text(errors="replace")
        err = (self.xchg / f"{n}.err").read_text(errors="replace")
        return Done(self._done[n], out, err)

    def run(self, script: str, timeout: float = 120, check: bool = True) -> Done:
        done = self.wait(self.spawn(script), timeout)
        if check and done.rc != 0:
            raise GuestError(f"{script!r} exited {done.rc} in the guest:\n{done.out[-3000:]}\n{done.err[-3000:]}")
        return done

    def tool(self, *args: str, timeout: float = 300, check: bool = False) -> Done:
        """``profiler-tui ARGS`` in the guest, from this checkout's venv, in /run/xchg (the host sees its output)."""
        quoted = " ".join(_quote(a) for a in args)
        return self.run(f"exec {ROOT}/.venv/bin/profiler-tui {quoted}", timeout=timeout, check=check)

    def qmp(self, command: str, **arguments: object) -> object:
        """One QMP command; its ``return`` value."""
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
            s.settimeout(30)
            s.connect(str(self.qmp_path))
            f = s.makefile("rwb")
            json.loads(f.readline())  # the greeting
            for msg in ({"execute": "qmp_capabilities"}, {"execute": command, "arguments": arguments}):
                f.write(json.dumps(msg).encode() + b"\n")
                f.flush()
                while True:
                    reply = json.loads(f.readline())
                    if "event" not in reply:
                        break
                if "error" in reply:
                    raise GuestError(f"QMP {msg['execute']}: {reply['error']}")
            return reply.get("return")


def _quote(arg: str) -> str:
    return "'" + arg.replace("'", "'\\''") + "'"


def qemu_missing() -> str | None:
    """Why the VM tests cannot run here, or None."""
    if shutil.which(QEMU) is None:
        return (f"{QEMU} is not installed and could not be (Debian: qemu-system-x86; `make setup` installs it "
                "when apt can reach the Debian archive)")
    return None
