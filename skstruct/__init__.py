"""skstruct: structured-output learners for scikit-learn.

Estimators predict structured outputs (label sequences, multiclass labels, multilabel sets,
dependency trees) from feature-based inputs, and compose four independent
pieces: a feature map (inputs and weights to part scores), a decoder (inference over one
family of outputs), a training loss, and an optimizer.
"""

import os

# Compiled kernels run on an OpenMP thread pool. Threads that sleep while idle cost nothing
# measurable on large batches and keep the pool from spinning against other processes
# (joblib workers, a busy machine). Users can still choose by setting the variable.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

# Before any kernel is defined: the kernels compiled at run time are cached outside the
# installed package (see _kernel_cache.py).
from . import _kernel_cache  # noqa: E402, F401

# Before any kernel runs: a fork-safe and thread-safe threading layer (see _threading.py).
from . import _threading  # noqa: E402, F401
from ._crf import CRF  # noqa: E402
from ._sparsemap import SparseMAPClassifier  # noqa: E402
from ._ssvm import StructuredPerceptron, StructuredSVM  # noqa: E402
from ._perturbation import PerturbedMAPClassifier  # noqa: E402
from ._version import __version__  # noqa: E402

__all__ = [
    "CRF",
    "PerturbedMAPClassifier",
    "SparseMAPClassifier",
    "StructuredPerceptron",
    "StructuredSVM",
    "__version__",
]
