"""Task losses Δ(y_true, y_pred) on encoded, stacked label sequences."""

import numpy as np

__all__ = ["TaskLoss", "HammingLoss", "ZeroOneLoss", "check_task_loss",
           "check_task_loss_values"]


class TaskLoss:
    """Base class of task losses.

    A task loss is called as ``loss(y_true, y_pred, offsets)`` on encoded labels of all
    tokens, stacked, and returns Δ of every example, shape (n_sequences,). Δ(y, y) = 0 and
    Δ ≥ 0. Losses that decompose over tokens also provide
    ``unary_costs(y_true, offsets, n_states)``: the (n_tokens, n_states) array whose entry
    ``[t, s]`` is the cost of predicting ``s`` at token ``t``, so that
    Δ(y_true, y) = Σ_t costs[t, y_t]; decoders then do loss-augmented inference by adding
    it to the unary scores.
    """

    def __call__(self, y_true, y_pred, offsets):
        raise NotImplementedError

    def __repr__(self):
        params = ", ".join(f"{k}={v!r}" for k, v in vars(self).items())
        return f"{type(self).__name__}({params})"


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

    def __init__(self, normalize=False, class_costs=None):
        self.normalize = normalize
        self.class_costs = class_costs

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


class ZeroOneLoss(TaskLoss):
    """1 if any token is mislabeled, else 0.

    Examples
    --------
    >>> import numpy as np
    >>> from skstruct.losses import ZeroOneLoss
    >>> ZeroOneLoss()(np.array([0, 1, 1]), np.array([0, 1, 0]), offsets=np.array([0, 2, 3]))
    array([0., 1.])
    """

    def __call__(self, y_true, y_pred, offsets):
        wrong = (np.asarray(y_true) != np.asarray(y_pred)).astype(np.float64)
        return np.maximum.reduceat(wrong, offsets[:-1])


def _task_losses():
    from ._counting import FBetaLoss, IoULoss, LabelCountLoss, PrecisionLoss, RecallLoss

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


def check_task_loss_values(values, task_loss, what="values", shape=None):
    """Reject task-loss values that are negative, NaN or infinite.

    A task loss must satisfy Δ ≥ 0 (and Δ(y, y) = 0): with negative values the structured
    hinge is no longer an upper bound of the loss and the solvers' step sizes and duality
    gaps lose their meaning, so a user's loss that breaks this is an error, not a model.

    Parameters
    ----------
    values : ndarray
        What the loss returned (Δ per example, or its ``unary_costs``).
    task_loss : TaskLoss
    what : str, default="values"
        Which output of the loss, for the message.
    shape : tuple, default=None
        The shape the values must have (one Δ per example: ``(n_examples,)``).
    """
    try:
        values = np.asarray(values, dtype=np.float64)
    except (TypeError, ValueError):
        raise TypeError(f"{task_loss!r} returned non-numeric {what}.") from None
    if shape is not None and values.shape != tuple(shape):
        raise ValueError(
            f"{task_loss!r} returned {what} of shape {values.shape}; expected {tuple(shape)}"
            " (a task loss returns one value per example: loss(y_true, y_pred, offsets) "
            "has shape (len(offsets) - 1,))."
        )
    if not np.all(np.isfinite(values)):
        raise ValueError(
            f"{task_loss!r} returned NaN or infinite {what}; a task loss must return finite "
            "values."
        )
    if np.any(values < 0):
        raise ValueError(
            f"{task_loss!r} returned negative {what} (smallest {values.min():.6g}); a task "
            "loss must satisfy Δ(y_true, y) >= 0 and Δ(y, y) = 0."
        )
