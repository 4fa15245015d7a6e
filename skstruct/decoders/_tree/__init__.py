"""The dependency-tree family (arc-factored trees, projective or not).

- ``decoder.py``: :class:`TreeScores`, :class:`TreeParts`, :class:`TreeDecoder`;
- ``kernels.py``: Eisner, Chu–Liu–Edmonds, the matrix-tree theorem, top-K and sampling;
- ``sparsemap.py``: SparseMAP over non-projective trees in one compiled call;
- ``oracle.py``: the tree family of the compiled per-example engine.
"""
