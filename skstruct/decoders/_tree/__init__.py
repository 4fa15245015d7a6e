"""The dependency-tree family (arc-factored trees, projective or not).

- ``decoder.py``: :class:`TreeScores`, :class:`TreeParts`, :class:`TreeDecoder`;
- ``kernels.py``: Eisner, Chu–Liu–Edmonds, the matrix-tree theorem, top-K and sampling;
- ``sparsemap.py``: SparseMAP over non-projective trees in one compiled call;
- ``oracle.py`` and ``smoothed.py``: the tree family of the compiled per-example engine;
- ``enumeration.py``: its slow reference; ``registration.py``: its registration.
"""
