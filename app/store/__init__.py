"""The store layer: the results directory (its files, its lock, the runs of a results root)."""
