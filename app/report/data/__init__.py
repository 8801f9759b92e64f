"""The results directory read for the report: the typed rows of results.jsonl and run.json (:mod:`.model`),
a fleet run's hosts (:mod:`.fleet_read`).  Nothing here computes, writes or draws.
"""
