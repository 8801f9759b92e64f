"""Errors a user can cause, each carrying the exit code documented in README.md (exit codes).

The CLI catches :class:`ProfilerError` and prints ``str(err)`` (one or two plain
sentences naming the file, key and value at fault) on stderr, then exits with
``err.exit_code``.  Anything else is a bug and may show a traceback.
"""

from __future__ import annotations

EXIT_OK = 0
EXIT_USAGE = 2
EXIT_SAFETY = 3
EXIT_TOOL_MISSING = 4
EXIT_INTERRUPTED = 130


class ProfilerError(Exception):
    exit_code = 1


class UsageError(ProfilerError):
    """Bad usage or invalid input: preset, --set value, import file."""

    exit_code = EXIT_USAGE


class SafetyError(ProfilerError):
    """A target refused by the safety rules (docs/safety.md)."""

    exit_code = EXIT_SAFETY


class ToolMissing(ProfilerError):
    """A required external tool (fio, MLC) is not installed."""

    exit_code = EXIT_TOOL_MISSING


class Interrupted(ProfilerError):
    exit_code = EXIT_INTERRUPTED
