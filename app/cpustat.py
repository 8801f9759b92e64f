"""The CPUs' busy time over a point's measured window, from /proc/stat (filled in)."""
