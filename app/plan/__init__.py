"""The plan layer: presets, the procedure around the points, open-loop rates, a plan told and edited."""
