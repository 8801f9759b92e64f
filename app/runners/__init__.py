"""Runners: the programs that measure (fio for storage; MLC or the built-in engine for memory)."""

from __future__ import annotations

from typing import Any

from app.errors import UsageError


def get_runner(kind: str, engine: str = "auto") -> Any:
    if kind == "storage":
        from app.runners.fio import FioRunner, fio_binary

        fio_binary()  # ToolMissing (exit 4) before anything is created
        return FioRunner()
    if kind == "memory":
        try:
            from app.runners.memory import MemoryRunner
        except ImportError:
            raise UsageError("Memory presets need the memory runner, which this build does not include.") from None
        return MemoryRunner(engine)
    raise UsageError(f"Unknown preset kind '{kind}'.")
