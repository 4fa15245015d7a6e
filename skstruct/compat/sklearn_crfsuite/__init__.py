"""sklearn-crfsuite's interface on skstruct's CRF.

``CRF`` takes sklearn-crfsuite's constructor parameters and its input format (lists of
sequences of token feature dicts, or of lists of attribute strings) and trains
:class:`skstruct.CRF` on CRFsuite's objective and parameter set; :mod:`.metrics` and
:mod:`.scorers` have sklearn-crfsuite's functions, with the same names and signatures.
Replace ``import sklearn_crfsuite`` with ``from skstruct.compat import sklearn_crfsuite``.
"""

from . import metrics, scorers
from ._eli5 import register as _register_eli5
from ._estimator import CRF, Tagger, crfsuite_penalty

#: Whether eli5 is installed and ``eli5.explain_weights(crf)`` explains this CRF.
ELI5_REGISTERED = _register_eli5(CRF)

__all__ = ["CRF", "Tagger", "crfsuite_penalty", "metrics", "scorers"]
