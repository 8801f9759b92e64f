"""The peak of a peak run: the best point, the configuration that reached it, and what ran out (filled in)."""
