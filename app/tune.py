"""--tune: set the benchmark-friendly values the audit names, record the previous ones, restore them (filled in)."""
