"""Errors a user can cause, each carrying the exit code documented in README.md (exit codes).

The CLI catches :class:`ProfilerError` and prints ``str(err)`` (one or two plain
sentences naming the file, key and value at fault) on stderr, then exits with
``err.exit_code``.  Anything else is a bug and may show a traceback.
"""

from __future__ import annotations

import signal

EXIT_OK = 0
EXIT_USAGE = 2
EXIT_SAFETY = 3
EXIT_TOOL_MISSING = 4
EXIT_INTERRUPTED = 130

# Signals whose default action ends a process (Term or Core in signal(7)) and that a handler can act on: each ends a
# run as interrupted, settings restored, with EXIT_INTERRUPTED, like ^C.  Left out: SIGKILL and SIGSTOP (no handler
# can catch them); SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGTRAP and SIGSYS (the fault of the very instruction running:
# a handler that returns runs it again, so their default action stays); SIGPIPE and SIGXFSZ, which Python ignores from
# its start, so that a write to a closed pipe or past the file-size limit fails (EPIPE, EFBIG) and the run handles
# the failure instead.  A signal ignored when the process started (nohup's SIGHUP) stays ignored; SIGINT, whose
# handler app.__main__ installs first, always ends the run.
_FATAL = ("SIGHUP", "SIGINT", "SIGQUIT", "SIGABRT", "SIGUSR1", "SIGUSR2", "SIGALRM", "SIGTERM", "SIGSTKFLT",
          "SIGXCPU", "SIGVTALRM", "SIGPROF", "SIGIO", "SIGPWR")
ENDING_SIGNALS: tuple[int, ...] = tuple(
    s for s in [*(int(getattr(signal, n)) for n in _FATAL if hasattr(signal, n)),
                *range(getattr(signal, "SIGRTMIN", 0), getattr(signal, "SIGRTMAX", -1) + 1)]
    if s == signal.SIGINT or signal.getsignal(s) != signal.SIG_IGN)


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
