"""profiler-tui: a terminal profiler for memory and storage."""

__version__ = "0.1.0"
