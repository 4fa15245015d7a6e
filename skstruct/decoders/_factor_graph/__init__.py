"""Factor graphs over binary variables: LP-MAP, LP-SparseMAP and exact MAP.

- ``graph.py``: :class:`FactorGraph` and :class:`Variables`, declared in the user's shapes;
- ``decoder.py``: :class:`FactorGraphDecoder` and its containers;
- ``groups.py``: every factor of one type solved in one call;
- ``linear_kernels.py``, ``pair_kernels.py``: the compiled local solvers of the factors;
- ``structure.py``: any decoder of the library as a factor;
- ``admm.py``, ``admm_compiled.py``: the ADMM solver, its batched compiled loop and the
  backward pass;
- ``pair_pruning.py``: the exact peeling of the variables that are off at the optimum of
  a pairwise graph;
- ``pair_loss.py``: the LP-SparseMAP loss of a pairwise model with shared PAIR scores in
  one compiled pass (nothing of size n_examples × n_pairs);
- ``memory.py``: the memory a solve and a fit need, and the limit;
- ``exact.py``: exact MAP of small pairwise graphs;
- ``relaxed.py``: fractional outputs of loss-augmented LP-MAP;
- ``registration.py``: the family's registration.
"""
