"""Which signals end a run cleanly (app.core.errors.ENDING_SIGNALS): every one whose default action ends the process
(Term or Core in signal(7)) and that a handler can act on, unless it was ignored when the process started."""

from __future__ import annotations

import signal
import subprocess
import sys

from app.core.errors import ENDING_SIGNALS
from tests.conftest import ROOT

PRINT = "from app.core.errors import ENDING_SIGNALS; print(' '.join(map(str, ENDING_SIGNALS)))"


def test_the_signals_that_end_a_run() -> None:
    named = {signal.Signals(s).name for s in ENDING_SIGNALS if s < signal.SIGRTMIN}
    assert named == {"SIGHUP", "SIGINT", "SIGQUIT", "SIGABRT", "SIGUSR1", "SIGUSR2", "SIGALRM", "SIGTERM",
                     "SIGSTKFLT", "SIGXCPU", "SIGVTALRM", "SIGPROF", "SIGIO", "SIGPWR"}
    assert set(range(signal.SIGRTMIN, signal.SIGRTMAX + 1)) <= set(ENDING_SIGNALS)
    # a fault of the running instruction keeps its default action; Python ignores SIGPIPE and SIGXFSZ (a failed
    # write says it); SIGKILL and SIGSTOP cannot be caught
    for name in ("SIGSEGV", "SIGBUS", "SIGFPE", "SIGILL", "SIGTRAP", "SIGSYS", "SIGPIPE", "SIGXFSZ", "SIGKILL",
                 "SIGSTOP", "SIGCHLD", "SIGWINCH"):
        assert getattr(signal, name) not in ENDING_SIGNALS, name


def test_a_signal_ignored_at_start_stays_ignored() -> None:
    """``nohup profiler-tui run …``: the SSH drop's SIGHUP was meant not to end the run."""
    out = subprocess.run([sys.executable, "-c", PRINT], cwd=ROOT, capture_output=True, text=True, check=True,
                         preexec_fn=lambda: signal.signal(signal.SIGHUP, signal.SIG_IGN)).stdout.split()
    assert str(int(signal.SIGHUP)) not in out and str(int(signal.SIGUSR1)) in out
