"""The ``profiler-tui`` command and ``python -m app``.

From the first line of the package on, Ctrl-C ends the process at once with one line and exit 130,
raising nothing into the imports under way (a KeyboardInterrupt raised mid-import can surface as another
exception, with a traceback).  Commands that need more install their own handling: ``run``/``resume``
(``app.cli.commands.StartUpInterrupt``, then their event loop) and the TUI (once Textual is loaded).

A ^C that arrives while the interpreter itself starts (before this module runs) is Python's own
business; a launcher that starts profiler-tui with SIGINT blocked (``env --block-signal=INT``) closes
that window too: the signal stays pending and is delivered here, once the handler is in place.
"""

import os

try:  # the C module: loaded with the interpreter, while `signal` would import enum first (~10 ms)
    import _signal as signal
except ImportError:  # pragma: no cover
    import signal


def _interrupted_at_start_up(signum: int, frame: object) -> None:
    os.write(2, b"profiler-tui: interrupted.\n")
    os._exit(130)


def main() -> None:
    try:
        signal.signal(signal.SIGINT, _interrupted_at_start_up)
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
    except (ValueError, OSError, AttributeError):  # not the main thread, or no such call here
        pass
    from app.cli.commands import main as cli_main

    cli_main()


if __name__ == "__main__":
    main()
