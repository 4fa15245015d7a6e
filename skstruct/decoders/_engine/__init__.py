"""The decoder families as the compiled per-example engine sees them.

- ``dispatch.py``: the loss-augmented oracle and the part accumulation, one branch per
  family code;
- ``smoothed.py``: the smoothed (entropy and ℓ2) oracles of the smoothed SSVM solvers.
"""
