"""The engine layer: the session that runs and records a plan, its replay, the import of outputs."""
