"""skstruct: structured-output learners for scikit-learn.

Estimators predict structured outputs (label sequences today; multilabel sets, trees and
matchings as the library grows) from feature-based inputs, and compose four independent
pieces: a feature map (inputs and weights to part scores), a decoder (inference over one
family of outputs), a training loss, and an optimizer.
"""

from ._crf import CRF

__version__ = "0.1.0.dev0"

__all__ = ["CRF", "__version__"]
