"""The stats layer: what the figures say and how sure (intervals, validity, latency maps, peak, tables)."""
