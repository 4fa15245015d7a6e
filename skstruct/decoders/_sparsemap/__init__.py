"""SparseMAP for any decoder: a sparse combination of a few structures.

- ``sparsemap.py``: :func:`sparsemap`, which asks the decoder for its own solver first;
- ``active_set.py``: the generic active set over MAP calls;
- ``closed_forms.py``, ``closed_form_kernels.py``: sparsemax and independent labels;
- ``pool.py``: the structures a solver has seen, stored once;
- ``kernels.py``: the compiled steps of the solvers;
- ``result.py``: :class:`SparseMAPResult` and the options every solver takes.
"""
