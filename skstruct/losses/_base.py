"""The interface of task losses and the check of the values they return.

A task loss is a plain definition: it imports nothing from the decoders. Decoders read
its declarations (:attr:`TaskLoss.decomposition` and the few methods below) to choose
how to maximize a loss-augmented objective.
"""

import numpy as np

__all__ = ["DECOMPOSITIONS", "TaskLoss", "check_task_loss_values"]

#: The values :attr:`TaskLoss.decomposition` may take.
DECOMPOSITIONS = ("parts", "counts", None)
#: What a loss must define for each declaration (checked when the class is defined).
_DECLARED_METHODS = {"parts": ("unary_costs",),
                     "counts": ("increments", "gold_positives", "statistics", "eta")}


class TaskLoss:
    """Base class of task losses.

    A task loss is called as ``loss(y_true, y_pred, offsets)`` on encoded labels of all
    tokens, stacked, and returns Δ of every example, shape (n_sequences,). Δ(y, y) = 0 and
    Δ ≥ 0.

    A loss declares how it decomposes in :attr:`decomposition`; decoders read the
    declaration, never the loss's type:

    ``"parts"``
        Δ is a sum of per-token costs. The loss provides
        ``unary_costs(y_true, offsets, n_states)``: the (n_tokens, n_states) array whose
        entry ``[t, s]`` is the cost of predicting ``s`` at token ``t``, so that
        Δ(y_true, y) = Σ_t costs[t, y_t]. Every decoder then solves margin-rescaled
        loss-augmented MAP by MAP on cost-augmented scores
        (:meth:`~skstruct.decoders.Decoder.cost_augmented`). A subclass that defines
        ``unary_costs`` and declares nothing is taken to be ``"parts"``; one that declares
        ``"parts"`` without ``unary_costs`` is an error when the class is defined.
    ``"counts"``
        Δ = η(G) is a function of a few integer count statistics G = Σ_t g_t(y_t)
        (:class:`~skstruct.losses.CountingLoss`: F_β, IoU, precision, recall, label
        count). Decoders that can run a dynamic program over the statistics (chains,
        multilabel) solve loss-augmented MAP exactly for either rescaling. The
        statistics are CountingLoss's methods, so a ``"counts"`` loss derives from it.
    ``None``
        No decomposition is declared (the 0/1 loss, a user's loss): only decoders that
        enumerate the outputs (multiclass, brute force) or have a special case for the
        loss (``zero_one``) solve it.

    Besides the declaration, a loss may describe itself in other terms that some decoder
    families exploit: :attr:`zero_one`, :attr:`n_classes`, :meth:`mismatch_weights` and
    :meth:`binary_counts`. Their defaults describe nothing.
    """

    #: How Δ decomposes: ``"parts"``, ``"counts"`` or None (see the class docstring).
    decomposition = None
    #: Δ(y_true, y) = 1[y ≠ y_true]: loss-augmented MAP keeps ``y_true`` or takes the best
    #: other output, which the two best outputs (top-2) decide.
    zero_one = False

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        if ("decomposition" not in cls.__dict__ and cls.decomposition is None
                and "unary_costs" in cls.__dict__):
            cls.decomposition = "parts"
        if cls.decomposition not in DECOMPOSITIONS:
            raise TypeError(
                f"{cls.__name__}.decomposition must be one of {DECOMPOSITIONS}; got "
                f"{cls.decomposition!r}."
            )
        missing = [name for name in _DECLARED_METHODS.get(cls.decomposition, ())
                   if not callable(getattr(cls, name, None))]
        if missing:
            raise TypeError(
                f"{cls.__name__} declares decomposition={cls.decomposition!r} but does not "
                f"define {', '.join(missing)}; "
                + ("define unary_costs(y_true, offsets, n_states)."
                   if cls.decomposition == "parts" else
                   "derive it from skstruct.losses.CountingLoss, which defines them.")
            )

    def __call__(self, y_true, y_pred, offsets):
        raise NotImplementedError

    @property
    def n_classes(self):
        """The number of classes the loss is defined on, or None.

        A loss with costs per class (``HammingLoss(class_costs=...)``) or bound to the
        positive classes (a bound :class:`~skstruct.losses.CountingLoss`) applies only to
        outputs whose states are those classes, not to the heads of a tree or the
        columns of a matching. None (the default): the loss takes any states.
        """
        return None

    def mismatch_weights(self, offsets):
        """Per-token weights w with Δ(y_true, y) = Σ_t w_t 1[y_t ≠ y_true_t], or None.

        A loss that only counts mismatched tokens (Hamming without class costs) is
        meaningful on outputs whose states are not classes (the heads of a tree, the
        columns of a matching), and under slack rescaling its argmax depends on the
        number of mismatches alone when the weights are equal within an example.

        Parameters
        ----------
        offsets : ndarray of shape (n_examples + 1,)

        Returns
        -------
        ndarray of shape (offsets[-1],), float64, or None
            None (the default) when the loss is not of that form.
        """
        return None

    def binary_counts(self, n_labels):
        """This loss on ``n_labels`` binary labels as a count-statistic loss, or None.

        For multilabel outputs (every example a sequence of ``n_labels`` tokens with
        states 0, off, and 1, on) some losses are functions of the true and false
        positives: the returned :class:`~skstruct.losses.CountingLoss` gives the very same
        Δ for every pair of 0/1 vectors, with "on" as the positive state.

        Returns
        -------
        CountingLoss or None
            None (the default) when the loss has no such form.
        """
        return None

    def __repr__(self):
        params = ", ".join(f"{k}={v!r}" for k, v in vars(self).items())
        return f"{type(self).__name__}({params})"


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


def binary_linear_costs(task_loss, y_true, offsets):
    """Δ(ȳ, y) of a loss that decomposes over binary variables, as an affine function
    of y: Δ(ȳ, y) = base_i + Σ_j slope_ij y_ij for 0/1 outputs y, and its linear extension
    to y in [0, 1] (the relaxed hinge's loss on fractional LP solutions).

    With the loss's ``unary_costs`` c_j(s) (defined up to a constant per example),
    slope_ij = c_j(1) − c_j(0) and base_i = Σ_j [c_j(0) − c_j(ȳ_j)], so that Δ(ȳ, ȳ) = 0.

    Parameters
    ----------
    task_loss : TaskLoss
        With ``unary_costs``.
    y_true : ndarray of shape (n_examples, n_vars), int
    offsets : ndarray of shape (n_examples + 1,)

    Returns
    -------
    base : ndarray of shape (n_examples,)
    slope : ndarray of shape (n_examples, n_vars)
    """
    y_true = np.asarray(y_true)
    y_flat = y_true.ravel()
    costs = task_loss.unary_costs(y_flat, offsets, 2)
    check_task_loss_values(costs, task_loss, "unary_costs")
    costs = np.asarray(costs, dtype=np.float64)
    slope = (costs[:, 1] - costs[:, 0]).reshape(y_true.shape)
    base = (costs[:, 0] - costs[np.arange(y_flat.shape[0]), y_flat]).reshape(
        y_true.shape).sum(axis=1)
    return base, slope
