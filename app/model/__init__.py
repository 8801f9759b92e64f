"""The model layer: the typed values a run carries (points, keys, results line, run.json, histograms)."""
