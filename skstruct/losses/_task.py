"""Task losses Δ(y_true, y_pred) on encoded, stacked label sequences."""

import numpy as np

from ._base import TaskLoss, check_task_loss_values
from ._counting import (
    BinaryErrorCosts,
    FBetaLoss,
    IoULoss,
    LabelCountLoss,
    PrecisionLoss,
    RecallLoss,
)

__all__ = ["TaskLoss", "HammingLoss", "ZeroOneLoss", "check_task_loss",
           "check_task_loss_values"]


class HammingLoss(TaskLoss):
    """Number (or fraction) of mislabeled tokens, optionally cost-weighted.

    Δ(y, ŷ) = Σ_t c(y_t, ŷ_t), with c(a, b) = 1[a ≠ b] by default.

    Parameters
    ----------
    normalize : bool, default=False
        Divide by the sequence length (the fraction of mislabeled tokens).
    class_costs : array-like of shape (n_classes,) or (n_classes, n_classes), default=None
        In the order of the estimator's ``classes_``. A vector gives the cost of mislabeling
        a token of each true class: c(a, b) = class_costs[a] 1[a ≠ b]. A matrix gives
        c(a, b) = class_costs[a, b] directly; its diagonal must be zero. Costs must be
        non-negative.

    Examples
    --------
    >>> import numpy as np
    >>> from skstruct.losses import HammingLoss
    >>> loss = HammingLoss()
    >>> loss(np.array([0, 1, 1, 0]), np.array([0, 0, 1, 1]), offsets=np.array([0, 3, 4]))
    array([1., 1.])
    """

    decomposition = "parts"

    def __init__(self, normalize=False, class_costs=None):
        self.normalize = normalize
        self.class_costs = class_costs

    @property
    def n_classes(self):
        """The length of ``class_costs``; None without class costs."""
        return None if self.class_costs is None else len(self.class_costs)

    def _cost_matrix(self, n_states):
        if self.class_costs is None:
            return 1.0 - np.eye(n_states)
        costs = np.asarray(self.class_costs, dtype=np.float64)
        if costs.ndim == 1:
            costs = costs[:, None] * (1.0 - np.eye(costs.shape[0]))
        if costs.shape != (n_states, n_states):
            raise ValueError(
                f"class_costs has shape {np.shape(self.class_costs)}; expected "
                f"({n_states},) or ({n_states}, {n_states}) for {n_states} classes."
            )
        if np.any(costs < 0) or np.any(np.diag(costs) != 0) or not np.all(np.isfinite(costs)):
            raise ValueError("class_costs must be finite, non-negative, zero on the diagonal.")
        return costs

    def _token_scale(self, offsets):
        lengths = np.diff(offsets)
        if self.normalize:
            return np.repeat(1.0 / lengths, lengths)
        return np.ones(int(offsets[-1]))

    def __call__(self, y_true, y_pred, offsets):
        y_true, y_pred = np.asarray(y_true), np.asarray(y_pred)
        if self.class_costs is None:
            # Plain mismatches; also right for states outside 0..n-1 such as an
            # unmatched row's -1.
            per_token = (y_true != y_pred) * self._token_scale(offsets)
            return np.add.reduceat(per_token, offsets[:-1])
        costs = self._cost_matrix(len(self.class_costs))
        n_states = costs.shape[0]
        if max(y_true.max(initial=0), y_pred.max(initial=0)) >= n_states:
            raise ValueError(
                f"class_costs has shape {np.shape(self.class_costs)}, but the labels reach "
                f"state {max(y_true.max(initial=0), y_pred.max(initial=0))}: give one cost "
                "per class (or a n_classes x n_classes matrix)."
            )
        per_token = costs[y_true, y_pred]
        per_token = per_token * self._token_scale(offsets)
        return np.add.reduceat(per_token, offsets[:-1])

    def unary_costs(self, y_true, offsets, n_states):
        """Per-token costs of every state, shape (n_tokens, n_states)."""
        return self._cost_matrix(n_states)[y_true] * self._token_scale(offsets)[:, None]

    def mismatch_weights(self, offsets):
        """1 per token (1 / length when normalized); None with ``class_costs``."""
        if self.class_costs is not None:
            return None
        return self._token_scale(offsets)

    def binary_counts(self, n_labels):
        """Δ = c(0, 1) FP + c(1, 0) FN on ``n_labels`` binary labels (divided by
        ``n_labels`` when normalized), as a :class:`BinaryErrorCosts`."""
        # one-token examples, so that a normalized loss is not divided here
        costs = self.unary_costs(np.array([0, 1]), np.array([0, 1, 2]), 2)
        scale = 1.0 / n_labels if self.normalize else 1.0
        return BinaryErrorCosts(scale * costs[0, 1], scale * costs[1, 0])


class ZeroOneLoss(TaskLoss):
    """1 if any token is mislabeled, else 0.

    Examples
    --------
    >>> import numpy as np
    >>> from skstruct.losses import ZeroOneLoss
    >>> ZeroOneLoss()(np.array([0, 1, 1]), np.array([0, 1, 0]), offsets=np.array([0, 2, 3]))
    array([0., 1.])
    """

    zero_one = True

    def __call__(self, y_true, y_pred, offsets):
        wrong = (np.asarray(y_true) != np.asarray(y_pred)).astype(np.float64)
        return np.maximum.reduceat(wrong, offsets[:-1])


def _task_losses():
    return {
        "hamming": HammingLoss,
        "zero_one": ZeroOneLoss,
        "f1": FBetaLoss,
        "iou": IoULoss,
        "precision": PrecisionLoss,
        "recall": RecallLoss,
        "label_count": LabelCountLoss,
    }


def check_task_loss(loss, name="loss"):
    """Resolve a task loss given by name or as an object.

    Parameters
    ----------
    loss : str or TaskLoss
        One of ``"hamming"``, ``"zero_one"``, ``"f1"``, ``"iou"``, ``"precision"``,
        ``"recall"``, ``"label_count"`` (default parameters), or a :class:`TaskLoss`.
    name : str, default="loss"
        The parameter name, for error messages.

    Returns
    -------
    TaskLoss
    """
    if isinstance(loss, str):
        losses = _task_losses()
        if loss not in losses:
            raise ValueError(
                f"Unknown {name} {loss!r}; expected one of {sorted(losses)} or a TaskLoss "
                "instance."
            )
        return losses[loss]()
    if not isinstance(loss, TaskLoss):
        raise TypeError(f"{name} must be a string or a TaskLoss; got {type(loss).__name__}.")
    return loss
