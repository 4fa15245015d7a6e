"""Outputs scored by one row of unary scores per example: one class, independent labels,
subsets of exactly k labels.

- ``multiclass.py``: :class:`MulticlassDecoder` and its containers;
- ``multilabel.py``: :class:`MultilabelDecoder` and its containers;
- ``subset.py`` and ``subset_kernels.py``: :class:`SubsetDecoder` (k-subsets);
- ``kernels.py``: k-best enumeration and sampling of independent examples;
- ``oracle.py`` and ``smoothed.py``: the multiclass and multilabel families of the
  compiled engine;
- ``enumeration.py``: their slow references; ``registration.py``: their registrations.
"""
