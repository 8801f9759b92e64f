"""Runners: the programs that measure (fio for storage; MLC or the built-in engine for memory)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from app.core.errors import UsageError
from app.model.points import Kind

if TYPE_CHECKING:  # the parsers (fio_parse, which the report reads) come without base's asyncio
    from app.runners.base import Runner


def get_runner(kind: str, engine: str = "auto") -> Runner:
    """The runner of a plan's kind (fio for storage; for memory, the engine ``engine`` chooses).
    ToolMissing (exit 4) when its program is not installed, before anything is created."""
    if kind == Kind.STORAGE:
        from app.runners.fio import FioRunner, fio_binary

        fio_binary()  # ToolMissing (exit 4) before anything is created
        return FioRunner()
    if kind == Kind.MEMORY:
        try:
            from app.runners.memory import MemoryRunner
        except ImportError:
            raise UsageError("Memory presets need the memory runner, which this build does not include.") from None
        return MemoryRunner(engine)
    raise UsageError(f"Unknown preset kind '{kind}'.")
