"""Task losses that are functions of count statistics: precision, recall, F_β, IoU, count.

Each loss here is Δ(y*, y) = η(G(y)) where G(y) = Σ_t g_t(y_t) is a short vector of
integer counts that decomposes over tokens (true positives, false positives, ...). That is
what exact loss-augmented inference by constrained message passing needs: a dynamic
program over (state, value of G), then argmax over G of H(best score with G, G).

"Positive" means a non-outside label: for tagging every label but ``outside_label`` (a
token is a true positive when it is predicted as its gold label and that label is not
outside; a false positive when it is predicted positive with another label); for
multilabel outputs, a label that is on. Counts are over tokens, not over chunks. TP and
FP are the true and false positives of the prediction, N* the number of positive tokens
of the gold output.
"""

import copy

import numbers

import numpy as np

from ._base import TaskLoss

__all__ = [
    "CountingLoss",
    "PrecisionLoss",
    "RecallLoss",
    "FBetaLoss",
    "IoULoss",
    "LabelCountLoss",
    "MismatchCount",
    "BinaryErrorCosts",
    "mismatch_count_form",
]


def _ratio_loss(numerator, denominator):
    """1 − numerator / denominator, and 0 where the denominator is 0 (nothing to get wrong)."""
    safe = np.where(denominator > 0, denominator, 1.0)
    return np.where(denominator > 0, 1.0 - numerator / safe, 0.0)


class CountingLoss(TaskLoss):
    """Base class of task losses Δ = η(G) of per-token count statistics G.

    Parameters
    ----------
    outside_label : object, default="O"
        The label that is not a positive, used by :meth:`bind`. When the classes do not
        contain it, every label is positive.

    Notes
    -----
    Subclasses define ``statistic_names`` and :meth:`eta`. Before use on encoded labels
    the loss must know which encoded states are positive: ``loss.bind(classes)`` (by
    ``outside_label``) or ``loss.with_positive_states(mask)``.
    """

    decomposition = "counts"

    #: Names of the statistics G, in order: "tp" (true positives), "fp" (false positives),
    #: "pos" (predicted positives), "err" (mislabeled tokens).
    statistic_names = ()
    #: The (n_states,) bool mask of the positive states once bound (:meth:`bind`,
    #: :meth:`with_positive_states`); None before.
    positive_states_ = None

    def __init__(self, outside_label="O"):
        self.outside_label = outside_label

    def bind(self, classes):
        """A copy whose positive states are all classes but ``outside_label``."""
        classes = np.asarray(classes)
        return self.with_positive_states(classes != self.outside_label)

    def with_positive_states(self, positive):
        """A copy with ``positive`` (n_states,) bool marking the positive states."""
        bound = copy.copy(self)
        bound.positive_states_ = np.asarray(positive, dtype=bool)
        return bound

    @property
    def n_classes(self):
        """The number of states the loss is bound to; None before it is bound."""
        return None if self.positive_states_ is None else self.positive_states_.shape[0]

    def _positive(self, n_states=None):
        positive = self.positive_states_
        if positive is None:
            raise ValueError(
                f"{type(self).__name__} does not know which labels are positive: call "
                "bind(classes) or with_positive_states(mask) first."
            )
        if n_states is not None and positive.shape != (n_states,):
            raise ValueError(
                f"{type(self).__name__} was bound to {positive.shape[0]} states; the scores "
                f"have {n_states}."
            )
        return positive

    def increments(self, y_true, n_states):
        """Statistics contributed by each token for each state it could take.

        Parameters
        ----------
        y_true : ndarray of shape (n_tokens,), int
        n_states : int

        Returns
        -------
        ndarray of shape (n_tokens, n_states, n_statistics), int64
            Entry ``[t, s, k]``: how much predicting state ``s`` at token ``t`` adds to
            statistic ``k``.
        """
        y_true = np.asarray(y_true, dtype=np.int64)
        hit = np.arange(n_states)[None, :] == y_true[:, None]
        columns = []
        for name in self.statistic_names:
            if name == "err":
                columns.append(~hit)
                continue
            predicted_positive = np.broadcast_to(self._positive(n_states), hit.shape)
            columns.append({"tp": hit & predicted_positive, "fp": ~hit & predicted_positive,
                            "pos": predicted_positive}[name])
        return np.stack(columns, axis=-1).astype(np.int64)

    def gold_positives(self, y_true, offsets, n_states):
        """N*, the number of positive gold tokens of each example, shape (n_sequences,)."""
        positive = self._positive(n_states)
        return np.add.reduceat(positive[np.asarray(y_true)].astype(np.int64), offsets[:-1])

    def statistics(self, y_true, y_pred, offsets, n_states):
        """G(y_pred) of every example, shape (n_sequences, n_statistics)."""
        incr = self.increments(y_true, n_states)
        per_token = incr[np.arange(len(y_pred)), np.asarray(y_pred)]
        return np.add.reduceat(per_token, offsets[:-1], axis=0)

    def eta(self, stats, n_gold):
        """Loss value from statistics.

        Parameters
        ----------
        stats : ndarray of shape (..., n_statistics)
        n_gold : ndarray broadcastable to ``stats.shape[:-1]``
            N* of the example each row belongs to.

        Returns
        -------
        ndarray of shape stats.shape[:-1]
        """
        raise NotImplementedError

    def __call__(self, y_true, y_pred, offsets):
        n_states = self._positive().shape[0]
        stats = self.statistics(y_true, y_pred, offsets, n_states)
        return self.eta(stats, self.gold_positives(y_true, offsets, n_states))


class RecallLoss(CountingLoss):
    """1 − recall = 1 − TP / N* (0 when the gold output has no positive).

    Examples
    --------
    >>> import numpy as np
    >>> from skstruct.losses import RecallLoss
    >>> loss = RecallLoss(outside_label=0).bind([0, 1, 2])
    >>> loss(np.array([1, 2, 0, 1]), np.array([1, 0, 0, 2]), offsets=np.array([0, 4]))
    array([0.66666667])
    """

    statistic_names = ("tp",)

    def eta(self, stats, n_gold):
        return _ratio_loss(stats[..., 0], n_gold)


class PrecisionLoss(CountingLoss):
    """1 − precision = 1 − TP / (TP + FP) (0 when nothing is predicted positive).

    Examples
    --------
    >>> import numpy as np
    >>> from skstruct.losses import PrecisionLoss
    >>> loss = PrecisionLoss(outside_label=0).bind([0, 1, 2])
    >>> loss(np.array([1, 2, 0, 1]), np.array([1, 0, 0, 2]), offsets=np.array([0, 4]))
    array([0.5])
    """

    statistic_names = ("tp", "fp")

    def eta(self, stats, n_gold):
        return _ratio_loss(stats[..., 0], stats[..., 0] + stats[..., 1])


class FBetaLoss(CountingLoss):
    """1 − F_β = 1 − (1 + β²) TP / (β² N* + TP + FP) (0 when both sides are empty).

    Parameters
    ----------
    beta : float, default=1.0
        Weight of recall relative to precision.
    outside_label : object, default="O"

    Examples
    --------
    >>> import numpy as np
    >>> from skstruct.losses import FBetaLoss
    >>> loss = FBetaLoss(outside_label=0).bind([0, 1, 2])
    >>> loss(np.array([1, 2, 0, 1]), np.array([1, 0, 0, 2]), offsets=np.array([0, 4]))
    array([0.6])
    """

    statistic_names = ("tp", "fp")

    def __init__(self, beta=1.0, outside_label="O"):
        super().__init__(outside_label)
        if (isinstance(beta, bool) or not isinstance(beta, numbers.Real)
                or not np.isfinite(beta) or beta <= 0):
            raise ValueError(f"beta must be a positive finite number; got {beta!r}.")
        self.beta = beta

    def eta(self, stats, n_gold):
        b2 = self.beta**2
        tp, fp = stats[..., 0], stats[..., 1]
        return _ratio_loss((1 + b2) * tp, b2 * n_gold + tp + fp)


class IoULoss(CountingLoss):
    """1 − IoU (Jaccard) = 1 − TP / (N* + FP) (0 when both sides are empty).

    Examples
    --------
    >>> import numpy as np
    >>> from skstruct.losses import IoULoss
    >>> loss = IoULoss(outside_label=0).bind([0, 1, 2])
    >>> loss(np.array([1, 2, 0, 1]), np.array([1, 0, 0, 2]), offsets=np.array([0, 4]))
    array([0.75])
    """

    statistic_names = ("tp", "fp")

    def eta(self, stats, n_gold):
        return _ratio_loss(stats[..., 0], n_gold + stats[..., 1])


class LabelCountLoss(CountingLoss):
    """The absolute difference between the numbers of predicted and of gold positives.

    Examples
    --------
    >>> import numpy as np
    >>> from skstruct.losses import LabelCountLoss
    >>> loss = LabelCountLoss(outside_label=0).bind([0, 1, 2])
    >>> loss(np.array([1, 2, 0, 1]), np.array([1, 0, 0, 0]), offsets=np.array([0, 4]))
    array([2.])
    """

    statistic_names = ("pos",)

    def eta(self, stats, n_gold):
        return np.abs(stats[..., 0] - n_gold).astype(np.float64)


class MismatchCount(CountingLoss):
    """Hamming or 0/1 loss seen as a function of the number of mislabeled tokens.

    Slack-rescaled inference uses it: argmax_y Δ(y*, y)(1 + θ_y − θ_{y*}) depends on y
    only through the mismatch count G and the score, and dividing Δ by the sequence
    length (normalized Hamming) does not move the argmax.

    Parameters
    ----------
    zero_one : bool, default=False
        η(G) = 1[G > 0] instead of η(G) = G.
    """

    statistic_names = ("err",)

    def __init__(self, zero_one=False):
        super().__init__(outside_label=None)
        self.zero_one = zero_one

    def gold_positives(self, y_true, offsets, n_states):
        """Not used by η; zeros of shape (n_sequences,)."""
        return np.zeros(offsets.shape[0] - 1, dtype=np.int64)

    def eta(self, stats, n_gold):
        errors = stats[..., 0].astype(np.float64)
        return (errors > 0).astype(np.float64) if self.zero_one else errors


class BinaryErrorCosts(CountingLoss):
    """Δ = c_FP FP + c_FN FN of binary labels, as a count-statistic loss of (TP, FP).

    With N* gold positives, FN = N* − TP. The form of a Hamming loss (with class costs,
    normalized or not) on multilabel outputs, where "on" is the positive state: see
    :meth:`HammingLoss.binary_counts`.

    Parameters
    ----------
    fp_cost : float
        The cost of turning on a label that is off in the gold output.
    fn_cost : float
        The cost of turning off a label that is on in the gold output.
    """

    statistic_names = ("tp", "fp")

    def __init__(self, fp_cost, fn_cost):
        super().__init__()
        self.fp_cost = fp_cost
        self.fn_cost = fn_cost

    def eta(self, stats, n_gold):
        return self.fp_cost * stats[..., 1] + self.fn_cost * (n_gold - stats[..., 0])


def mismatch_count_form(task_loss, offsets):
    """A :class:`MismatchCount` whose slack-rescaled argmax is that of ``task_loss``.

    Slack rescaling maximizes Δ(y_true, y) (1 + θ_y − θ_{y_true}); multiplying Δ by a
    positive factor per example leaves the argmax in place. So the 0/1 loss is
    η(G) = 1[G > 0] of the number G of mislabeled tokens, and a loss whose
    :meth:`~TaskLoss.mismatch_weights` are the same positive number within every
    example (Hamming, normalized or not) is η(G) = G up to that factor.

    Parameters
    ----------
    task_loss : TaskLoss
    offsets : ndarray of shape (n_examples + 1,)

    Returns
    -------
    MismatchCount or None
        None when the loss is of neither form.
    """
    if task_loss.zero_one:
        return MismatchCount(zero_one=True)
    weights = task_loss.mismatch_weights(offsets)
    if weights is None:
        return None
    weights = np.asarray(weights, dtype=np.float64)
    lengths = np.diff(offsets)
    first = weights[offsets[:-1]]
    if np.all(first > 0) and np.array_equal(weights, np.repeat(first, lengths)):
        return MismatchCount()
    return None
