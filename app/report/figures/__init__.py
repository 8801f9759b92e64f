"""The report's figures (matplotlib, Agg, SVG): :mod:`.plots` holds the shared figure helpers and the
single-run figures, every other module one figure family (and, for the heat map, its text).
"""
