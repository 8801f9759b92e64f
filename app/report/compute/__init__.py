"""What the report computes from the rows: knees and bounds, the queueing view's numbers, intervals,
noise, replicates, the support of a claim, the one verdict rule, the fleet's outliers, contended memory figures
and plateaus.  The sections word these numbers; nothing here draws.
"""
