"""Task losses Δ(y_true, y_pred) and training losses (the Fenchel–Young family).

Task losses measure the cost of a prediction; training losses are what an estimator
minimizes, with value and gradient with respect to the part scores.

Task losses are plain definitions (:mod:`._base`, :mod:`._counting`, :mod:`._task`) that
declare how they decompose; the decoders import them, never the other way round. The
training losses (:mod:`._training`, and the smoothed structural hinges of
:mod:`._smoothed`) call the decoder they are given and import no
decoder module.
"""

from ._counting import (
    CountingLoss,
    FBetaLoss,
    IoULoss,
    LabelCountLoss,
    PrecisionLoss,
    RecallLoss,
)
from ._base import TaskLoss
from ._smoothed import (
    EntropySmoothedHingeLoss,
    InexactTopKWarning,
    L2SmoothedHingeLoss,
    SmoothedHingeLoss,
)
from ._task import HammingLoss, ZeroOneLoss, check_task_loss
from ._training import (
    CRFLoss,
    PerceptronLoss,
    SparseMAPLoss,
    StructuredHingeLoss,
    TrainingLoss,
)

__all__ = [
    "CRFLoss",
    "CountingLoss",
    "EntropySmoothedHingeLoss",
    "FBetaLoss",
    "HammingLoss",
    "InexactTopKWarning",
    "IoULoss",
    "L2SmoothedHingeLoss",
    "LabelCountLoss",
    "PerceptronLoss",
    "PrecisionLoss",
    "RecallLoss",
    "SmoothedHingeLoss",
    "SparseMAPLoss",
    "StructuredHingeLoss",
    "TaskLoss",
    "TrainingLoss",
    "ZeroOneLoss",
    "check_task_loss",
]
