"""Pairwise graphs with multi-state nodes.

- ``decoder.py``: :class:`GraphScores`, :class:`GraphParts`, :class:`GraphDecoder`.
- ``kernels.py``: the compiled per-graph MAP (max-product, exact on forests; listing the
  labelings of small graphs with cycles; loopy with iterated conditional modes
  otherwise) and the batch entry points.
- ``enumeration.py``: the slow reference; ``registration.py``: the family's registration.
"""
