"""The tool as an adversary would try it, on files and loop devices the tests create.

* A read-only plan never changes an existing file: not its bytes, not its size — whatever ``size``
  says, directly or through a symlink, also when the file is a filesystem image behind a loop device.
* A results directory is untrusted input: ``resume`` validates run.json's plan again, checks the
  target again with the confirmations given now, and never deletes a file the tool did not create.
* The fio job-file writer refuses values that would smuggle options or commands into fio.
"""

from __future__ import annotations

import hashlib
import json
import subprocess
from pathlib import Path

import pytest

from app.core.errors import UsageError
from app.model.points import StoragePoint
from app.plan.presets import STORAGE_KEYS
from app.runners.fio import job_file
from tests.conftest import run_cli
from tests.helpers.loopdev import loop_factory, needs_loop  # noqa: F401 - a fixture and the skip mark


def digest(path: str | Path) -> tuple[str, int]:
    h = hashlib.sha256()
    size = 0
    with open(path, "rb") as f:
        while chunk := f.read(1 << 20):
            h.update(chunk)
            size += len(chunk)
    return h.hexdigest(), size


def random_file(path: Path, nbytes: int) -> Path:
    with open("/dev/urandom", "rb") as src, open(path, "wb") as f:
        f.write(src.read(nbytes))
    return path


def no_traceback(proc: subprocess.CompletedProcess[str]) -> None:
    assert "Traceback" not in proc.stderr, proc.stderr


def job_text(out: Path) -> str:
    return "\n".join(p.read_text() for p in sorted((out / "raw").glob("*.fio")))


# --- a read-only plan never changes a file it did not create -------------------------------------------


@needs_loop
def test_read_only_plan_leaves_a_filesystem_image_behind_a_loop_device_intact(loop_factory, tmp_path):
    dev = loop_factory(size_mb=128, mkfs="ext4")
    before = digest(dev.image)
    args = ["run", "custom", "--set", "rw=randread", "--set", "runtime=1", "--set", "size=256m",
            "--target", str(dev.image)]
    refused = run_cli(*args, "--out", str(tmp_path / "r1"))
    no_traceback(refused)
    assert refused.returncode == 3 and "--yes" in refused.stderr and dev.path in refused.stderr
    assert not (tmp_path / "r1").exists()
    ok = run_cli(*args, "--yes", "--out", str(tmp_path / "r2"))
    no_traceback(ok)
    assert ok.returncode == 0, ok.stderr
    assert digest(dev.image) == before
    backing = Path(f"/sys/block/{dev.name}/loop/backing_file").read_text().strip()
    assert not backing.endswith("(deleted)")
    job = job_text(tmp_path / "r2")
    assert "fio --readonly" in job and f"size={128 << 20}" in job
    assert subprocess.run(["blkid", "-p", "-o", "value", "-s", "TYPE", dev.path], capture_output=True,
                          text=True).stdout.strip() == "ext4"


@pytest.mark.parametrize("via_symlink", [False, True])
def test_read_only_plan_reads_a_small_file_as_it_is(tmp_path, via_symlink):
    data = random_file(tmp_path / "data.bin", 1 << 20)
    target = data
    if via_symlink:
        target = tmp_path / "link.bin"
        target.symlink_to(data)
    before = digest(data)
    out = tmp_path / "out"
    proc = run_cli("run", "custom", "--set", "rw=read,randread", "--set", "direct=0,1", "--set", "runtime=1",
                   "--set", "size=16m", "--target", str(target), "--out", str(out))
    no_traceback(proc)
    assert proc.returncode == 0, proc.stderr
    assert digest(data) == before
    assert target.is_symlink() == via_symlink
    records = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    assert len(records) == 4 and all(r["metrics"]["iops"] > 0 for r in records)
    job = job_text(out)
    assert job.count("fio --readonly") == 4 and f"size={1 << 20}" in job


def test_read_only_plan_refuses_a_file_too_small_to_measure(tmp_path):
    small = random_file(tmp_path / "small.bin", 1000)
    before = digest(small)
    proc = run_cli("run", "custom", "--set", "rw=randread", "--set", "runtime=1", "--target", str(small),
                   "--out", str(tmp_path / "out"))
    no_traceback(proc)
    assert proc.returncode == 3 and "1000 bytes" in proc.stderr and "4096-byte block" in proc.stderr
    assert digest(small) == before


def test_write_plan_on_a_new_file_is_still_created_and_laid_out(tmp_path):
    target = tmp_path / "new.bin"
    proc = run_cli("run", "custom", "--set", "rw=randwrite", "--set", "runtime=1", "--set", "size=8m",
                   "--target", str(target), "--out", str(tmp_path / "out"))
    assert proc.returncode == 0, proc.stderr
    assert target.stat().st_size == 8 << 20
    assert "readonly" not in job_text(tmp_path / "out")


# --- resume trusts nothing in run.json -----------------------------------------------------------------


def interrupted_run(tmp_path: Path, target: Path, *sets: str) -> Path:
    """A finished two-point run on ``target`` with its second point removed: resume has one to run."""
    out = tmp_path / "run"
    argv = ["run", "custom", "--set", "bs=4k,8k", "--set", "runtime=1", "--target", str(target), "--out", str(out)]
    for s in sets:
        argv += ["--set", s]
    proc = run_cli(*argv)
    assert proc.returncode == 0, proc.stderr
    lines = (out / "results.jsonl").read_text().splitlines()
    (out / "results.jsonl").write_text(lines[0] + "\n")
    meta = json.loads((out / "run.json").read_text())
    meta["status"] = "interrupted"
    (out / "run.json").write_text(json.dumps(meta))
    return out


def edit_meta(out: Path, change) -> None:
    meta = json.loads((out / "run.json").read_text())
    change(meta)
    (out / "run.json").write_text(json.dumps(meta))


@needs_loop
def test_resume_refuses_options_and_commands_injected_into_the_plan(loop_factory, tmp_path):
    dev = loop_factory(size_mb=32, mkfs="ext4")
    device_before = digest(dev.path)
    data = random_file(tmp_path / "data.bin", 4 << 20)
    out = interrupted_run(tmp_path, data, "rw=randread", "size=4m")
    pwned = tmp_path / "PWNED"
    attacks = [
        ("ioengine", f"libaio\nfilename={dev.path}"),
        ("rw", f"randread\nexec_prerun=touch {pwned}"),
        ("rw", f"randwrite\nfilename={dev.path}"),
        ("bs", "4096\nfilename=/dev/null"),
        ("bs", "4k"),  # not the canonical value a plan stores
        ("iodepth", "1; rm -rf /"),
        ("iodepth", 1.5),
        ("direct", "yes"),
        ("unknown_key", 1),
    ]
    for key, value in attacks:
        edit_meta(out, lambda m: m["plan"][1].__setitem__(key, value))
        proc = run_cli("resume", str(out), "--yes", "--allow-destructive")
        no_traceback(proc)
        assert proc.returncode == 2, (key, value, proc.stdout, proc.stderr)
        assert f"'{key}'" in proc.stderr and "plan[1]" in proc.stderr, proc.stderr
        edit_meta(out, lambda m: m["plan"].__setitem__(1, dict(m["plan"][0], bs=8192)))
    for broken in (None, "x", [], 7):
        edit_meta(out, lambda m: m["plan"].__setitem__(1, broken))
        proc = run_cli("resume", str(out))
        no_traceback(proc)
        assert proc.returncode == 2 and "plan[1]" in proc.stderr, proc.stderr
    for key, value in (("plan", None), ("plan", {"a": 1}), ("kind", "disk"), ("kind", None), ("target", None),
                       ("target", ["/dev/sda"]), ("target", "relative/path"), ("engine", "rm -rf")):
        edit_meta(out, lambda m: m["plan"].__setitem__(1, dict(m["plan"][0], bs=8192)))
        saved = json.loads((out / "run.json").read_text())
        edit_meta(out, lambda m: m.__setitem__(key, value))
        proc = run_cli("resume", str(out))
        no_traceback(proc)
        assert proc.returncode == 2 and f"'{key}'" in proc.stderr, (key, value, proc.stderr)
        (out / "run.json").write_text(json.dumps(saved))
    assert not pwned.exists()
    assert digest(dev.path) == device_before
    # the untouched plan still resumes
    proc = run_cli("resume", str(out))
    assert proc.returncode == 0, proc.stderr
    assert len((out / "results.jsonl").read_text().splitlines()) == 2


@needs_loop
def test_resume_asks_for_the_confirmations_again(loop_factory, tmp_path):
    """run.json's "confirmed" confirms nothing: a target edited to a device needs --yes/--allow-destructive now."""
    dev = loop_factory(size_mb=32, mkfs="ext4")
    device_before = digest(dev.path)
    out = interrupted_run(tmp_path, tmp_path / "scratch.bin", "rw=randwrite", "size=4m")

    def retarget(meta):
        meta["target"] = dev.path
        meta["confirmed"] = {"yes": True, "allow_destructive": True}

    edit_meta(out, retarget)
    for flags in ((), ("--yes",)):
        proc = run_cli("resume", str(out), *flags)
        no_traceback(proc)
        assert proc.returncode == 3 and dev.path in proc.stderr, proc.stderr
    assert digest(dev.path) == device_before
    mounted = loop_factory(size_mb=32, mkfs="ext4", mount=True)
    edit_meta(out, lambda m: m.__setitem__("target", mounted.path))
    proc = run_cli("resume", str(out), "--allow-destructive")
    assert proc.returncode == 3 and "mounted" in proc.stderr, proc.stderr


def test_resume_never_deletes_a_file_the_tool_did_not_create(tmp_path):
    victim = random_file(tmp_path / "precious.bin", 1 << 20)
    before = digest(victim)
    out = interrupted_run(tmp_path, tmp_path / "scratch.bin", "rw=randread", "size=1m")

    def retarget(meta):
        meta["target"] = str(victim)
        meta["target_created_by_tool"] = True

    edit_meta(out, retarget)
    proc = run_cli("resume", str(out))
    assert proc.returncode == 0, proc.stderr
    assert victim.exists() and digest(victim) == before


# --- the job-file writer's own line of defence --------------------------------------------------------


def base_point(**changes):
    """A storage point of the keys' defaults with ``changes`` — not validated, so hostile values reach
    the job file writer, whose own checks are what these tests are about."""
    point = {k: spec.default for k, spec in STORAGE_KEYS.items()}
    point.update(changes)
    return StoragePoint(**point)


@pytest.mark.parametrize("key,value", [
    ("rw", "randread\nexec_prerun=touch /tmp/x"),
    ("ioengine", "libaio\nfilename=/dev/sda"),
    ("ioengine", "libaio\rfilename=/dev/sda"),
    ("ioengine", "libaio;x"),
    ("ioengine", "libaio # x"),
    ("ioengine", "${HOME}"),
    ("ioengine", "libaio\x00"),
    ("bs", "4096\tx"),
])
def test_job_file_refuses_values_that_would_inject(tmp_path, key, value):
    with pytest.raises(UsageError, match=f"'{key}'"):
        job_file(base_point(**{key: value}), str(tmp_path / "t.bin"))


@pytest.mark.parametrize("target", ["/tmp/a\nfilename=/dev/sda", "/tmp/a;b", "/tmp/a#b", "/tmp/$HOME", "/tmp/a\\:b"])
def test_job_file_refuses_target_names_fio_would_misread(target):
    with pytest.raises(UsageError):
        job_file(base_point(), target)


def test_job_file_escapes_a_colon_and_runs(tmp_path):
    """fio splits filename at ':' (two files); the writer escapes it, so fio measures exactly that one file."""
    target = tmp_path / "a:b.bin"
    out = tmp_path / "out"
    proc = run_cli("run", "custom", "--set", "rw=randwrite", "--set", "runtime=1", "--set", "size=1m",
                   "--target", str(target), "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    assert target.stat().st_size == 1 << 20
    assert not (tmp_path / "a").exists() and not Path("b.bin").exists()
    assert f"filename={tmp_path}/a\\:b.bin" in job_text(out)


def test_fractional_runtime_is_written_in_milliseconds(tmp_path):
    text = job_file(base_point(runtime=1.5, ramp_time=0.25), str(tmp_path / "t.bin"))
    assert "runtime=1500ms" in text and "ramp_time=250ms" in text
    assert "runtime=10\n" in job_file(base_point(), str(tmp_path / "t.bin"))
