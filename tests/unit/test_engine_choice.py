"""The memory engine choice is a function of the machine's facts (no I/O): every branch, on an Intel
and an AMD machine, with the notice the user sees."""

from __future__ import annotations

import pytest

from app.core.errors import ToolMissing
from app.runners.memory import EngineFacts, choose_engine

MLC, MEMLAT = "/opt/mlc/mlc", "/usr/local/bin/memlat"
INTEL = EngineFacts(mlc=MLC, memlat=MEMLAT)
AMD_WRITABLE = EngineFacts(mlc=MLC, memlat=MEMLAT, needs_hugepages=True, nr_hugepages=0, hugepages_writable=True)
AMD_LOCKED = EngineFacts(mlc=MLC, memlat=MEMLAT, needs_hugepages=True, nr_hugepages=0,
                         mlc_unusable="MLC needs huge pages on AMD and nr_hugepages is 0")
AMD_RESERVED = EngineFacts(mlc=MLC, memlat=MEMLAT, needs_hugepages=True, nr_hugepages=1100)


@pytest.mark.parametrize("requested,facts,engine,notice", [
    ("auto", INTEL, "mlc", None),
    ("mlc", INTEL, "mlc", None),
    ("builtin", EngineFacts(memlat=MEMLAT), "builtin", None),
    ("auto", AMD_WRITABLE, "mlc", "is raised to what each MLC run's buffers need"),
    ("auto", AMD_RESERVED, "mlc", None),
    ("auto", AMD_LOCKED, "builtin", "but MLC needs huge pages on AMD"),
    ("mlc", AMD_LOCKED, "mlc", "not writable here"),  # forcing MLC is the user's call; they are told
    ("auto", EngineFacts(mlc=MLC, mlc_unusable="MLC runs on x86 only"), "mlc", "may fail (MLC runs on x86 only)"),
    ("auto", EngineFacts(memlat=MEMLAT), "builtin", "Intel MLC not found: using the built-in"),
    ("auto", EngineFacts(memlat=MEMLAT, mlc_problem="MLC_PATH=/x is not an executable file"), "builtin",
     "not found (MLC_PATH=/x is not an executable file)"),
])
def test_choice_and_notice(requested: str, facts: EngineFacts, engine: str, notice: str | None) -> None:
    choice = choose_engine(requested, facts)
    assert choice.engine == engine
    assert choice.binary == (MLC if engine == "mlc" else MEMLAT)
    if notice is None:
        assert choice.notice is None
    else:
        assert choice.notice is not None and notice in choice.notice


@pytest.mark.parametrize("requested,facts,message", [
    ("mlc", EngineFacts(memlat=MEMLAT), "Intel MLC was not found"),
    ("mlc", EngineFacts(mlc_problem="MLC_PATH=/x is not an executable file"), "(MLC_PATH=/x is not"),
    ("builtin", EngineFacts(mlc=MLC), "The built-in memory engine was not found"),
    ("auto", EngineFacts(), "Neither Intel MLC nor the built-in memory engine"),
    ("auto", EngineFacts(memlat_problem="PROFILER_TUI_MEMLAT=/y is not an executable file"), "(PROFILER_TUI_MEMLAT"),
])
def test_no_engine_is_a_missing_tool(requested: str, facts: EngineFacts, message: str) -> None:
    with pytest.raises(ToolMissing, match=message.replace("(", r"\(")):
        choose_engine(requested, facts)
