"""Fixtures of the QEMU tests (tests/vm): the boot files, and one guest for the session ("the lab").

A plugin of tests/conftest.py rather than a tests/vm/conftest.py: a second module named ``conftest`` would
take the first one's place for the tests that import helpers from it.

The lab is a q35 machine with two NUMA nodes (one CPU and 384 MiB each), an NVMe controller behind a PCIe
root port with two namespaces (nvme0n1 256 MiB for runs, nvme0n2 128 MiB for partitions and filesystems),
a 128 MiB SATA disk, and an sshd reached at 127.0.0.1:PORT (a key made here is the only one it accepts).
tests/conftest.py marks every test under tests/vm ``vm``; without qemu-system-x86_64 (or without the Debian
archive for the kernel) they skip with one sentence.
"""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Iterator

import pytest

from tests.helpers.fleet_agents import free_port
from tests.helpers.vm_guest import Guest, Spec, qemu_missing
from tests.helpers.vm_image import BootFiles, ImageError, prepare

MIB = 1 << 20


@pytest.fixture(scope="session")
def boot_files() -> BootFiles:
    why = qemu_missing()
    if why is not None:
        pytest.skip(why)
    try:
        return prepare()
    except ImageError as e:
        pytest.skip(f"the guest's kernel could not be made ready: {e}")


def keygen(path: Path) -> str:
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(path)], check=True)
    return Path(str(path) + ".pub").read_text().strip()


@pytest.fixture(scope="session")
def lab(boot_files: BootFiles, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Guest]:
    work = tmp_path_factory.mktemp("lab")
    port = free_port()
    guest = Guest(work / "guest", boot_files, Spec(nvme=[256 * MIB, 128 * MIB], sata=128 * MIB, numa=True,
                                                   ssh_port=port))
    xchg = guest.xchg
    xchg.mkdir(parents=True)
    ssh = work / "ssh"
    ssh.mkdir(mode=0o700)
    host_pub = keygen(xchg / "host_key")
    (xchg / "authorized_keys").write_text(keygen(ssh / "id") + "\n")
    (xchg / "sshd_config").write_text("\n".join([
        "Port 22", "HostKey /run/xchg/host_key", "PidFile /run/sshd.pid",
        "AuthorizedKeysFile /run/xchg/authorized_keys",
        "PasswordAuthentication no", "KbdInteractiveAuthentication no", "PubkeyAuthentication yes",
        "PermitRootLogin prohibit-password", "UsePAM no", "StrictModes no", "AllowTcpForwarding yes",
        "AllowStreamLocalForwarding yes", "X11Forwarding no", "UseDNS no", ""]))
    (ssh / "known_hosts").write_text(f"[127.0.0.1]:{port} {host_pub}\n")
    (ssh / "ssh_config").write_text("\n".join([
        "Host 127.0.0.1", f"  IdentityFile {ssh / 'id'}", "  IdentitiesOnly yes",
        f"  UserKnownHostsFile {ssh / 'known_hosts'}", "  StrictHostKeyChecking yes",
        "  GlobalKnownHostsFile /dev/null", "  ConnectTimeout 60", ""]))
    guest.ssh_dir = ssh
    try:
        guest.start()
        yield guest
    finally:
        guest.close()
