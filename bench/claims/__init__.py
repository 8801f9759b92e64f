"""The ground-truth harness of the tool's claims: synthetic results directories in the real on-disk format from
models whose truth is known (:mod:`bench.claims.synth`, :mod:`bench.claims.cases`), every claim the report and
``compare`` make on them scored against that truth (:mod:`bench.claims.rates`), and the table of error rates
(``python -m bench.claims``, ``make bench-claims``; docs/claims.md)."""
