"""Task losses Δ(y_true, y_pred) and training losses (the Fenchel–Young family).

Task losses measure the cost of a prediction; training losses are what an estimator
minimizes, with value and gradient with respect to the part scores.
"""

from ._counting import (
    CountingLoss,
    FBetaLoss,
    IoULoss,
    LabelCountLoss,
    PrecisionLoss,
    RecallLoss,
)
from ._task import HammingLoss, TaskLoss, ZeroOneLoss, check_task_loss
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
    "FBetaLoss",
    "HammingLoss",
    "IoULoss",
    "LabelCountLoss",
    "PerceptronLoss",
    "PrecisionLoss",
    "RecallLoss",
    "SparseMAPLoss",
    "StructuredHingeLoss",
    "TaskLoss",
    "TrainingLoss",
    "ZeroOneLoss",
    "check_task_loss",
]
