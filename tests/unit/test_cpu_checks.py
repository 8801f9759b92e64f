"""``cpus`` against the machine (app.host.topology.check_cpus: a CPU it lacks, or one this process may not run on) and
``--set`` values in quotes (one value, commas and all; an unquoted list of single CPUs is refused)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from app.core.errors import UsageError
from app.host.topology import check_cpus
from app.model.points import StoragePoint
from app.plan import presets


def sysfs(tmp_path: Path, present: str) -> Path:
    d = tmp_path / "devices" / "system" / "cpu"
    d.mkdir(parents=True)
    (d / "present").write_text(present + "\n")
    return tmp_path


CUSTOM = presets.load("custom").expand()[0]


def point(cpus: str | None) -> StoragePoint:
    assert isinstance(CUSTOM, StoragePoint)
    return replace(CUSTOM, cpus=cpus)


def test_a_cpu_the_machine_lacks_and_one_outside_the_affinity_are_named(tmp_path: Path) -> None:
    root = sysfs(tmp_path, "0-7")
    check_cpus([point("0-1"), point(None), point("node")], allowed=(0, 1), root=root)
    with pytest.raises(UsageError, match=r"^key 'cpus' has value 9: this machine has no CPU 9 \(its CPUs: 0-7\)\.$"):
        check_cpus([point("0"), point("9")], allowed=(0, 1), root=root)
    with pytest.raises(UsageError, match=r"^key 'cpus' has value 0,5: CPU 5 is not one this process may run on "
                                         r"\(taskset or a cgroup's cpuset allows CPUs 0-1\)\.$"):
        check_cpus([point("0,5")], allowed=(0, 1), root=root)


@pytest.mark.parametrize("value, cpus", [
    ('"1,0"', ["1,0"]), ("'0,2'", ["0,2"]), ('"1","0"', ["1", "0"]), ("0-1,3", ["0-1", "3"]), ("0-3", ["0-3"]),
    ('"0-1,4", 2-3', ["0-1,4", "2-3"]), ("1", ["1"])])
def test_quoted_values_are_one_value(value: str, cpus: list[str]) -> None:
    assert presets.parse_overrides("storage", [f"cpus={value}"])["cpus"] == cpus


def test_an_unquoted_list_of_single_cpus_is_refused_and_an_unclosed_quote_too() -> None:
    with pytest.raises(UsageError) as err:
        presets.parse_overrides("memory", ["cpus=0, 1,2"])
    assert str(err.value) == (
        "--set cpus=0, 1,2: key 'cpus' has value 0, 1,2, which --set reads as an axis of 3 points, each on one CPU; "
        """for one point on CPUs 0,1,2 write the list in quotes, --set 'cpus="0,1,2"' (or as ranges, """
        """--set cpus=0-2), and for the axis quote each CPU, --set 'cpus="0","1","2"'.""")
    with pytest.raises(UsageError, match=r"^--set bs=\"4k,8k: key 'bs' has a value whose quote is not closed\.$"):
        presets.parse_overrides("storage", ['bs="4k,8k'])
    assert presets.parse_overrides("storage", ["bs=4k,\"8k\""])["bs"] == [4096, 8192]
