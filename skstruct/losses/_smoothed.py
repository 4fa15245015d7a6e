"""Smoothed structural hinge losses: entropy and ℓ2 smoothing of the loss-augmented max.

The margin-rescaled structural hinge ℓ(η; ȳ) = max_y [θ_y + Δ(ȳ, y)] − θ_ȳ is not
differentiable; replacing the max by its infimal convolution with μω (Nesterov, 2005)
gives a smooth loss whose gradient the decoders compute from the cost-augmented scores:

- ω = −H (entropy): the log-partition and marginals of the scores divided by μ;
- ω = ½‖·‖² (ℓ2): the projection onto the simplex of the ``top_k`` best scores divided by
  μ, exact when the projection leaves the K-th best output at zero weight.

Both are written once on top of the decoder operations (``cost_augmented``,
``marginals``, ``top_k``, ``parts``) and serve every decoder that answers them. Like the
other training losses they import no decoder module.
"""

import copy
import warnings
from numbers import Integral, Real

import numpy as np
from numba import njit

from ..utils._capabilities import check_capability
from ._task import check_task_loss
from ._training import TrainingLoss

__all__ = [
    "EntropySmoothedHingeLoss",
    "InexactTopKWarning",
    "L2SmoothedHingeLoss",
    "SmoothedHingeLoss",
    "project_sorted_onto_simplex",
    "project_sorted_row",
]


class InexactTopKWarning(UserWarning):
    """The top-K ℓ2 oracle could not certify that its K outputs carry all the weight."""


def _check_strength(strength):
    """μ as a float, or a clear error unless it is a finite real number > 0."""
    if isinstance(strength, (bool, np.bool_)) or not isinstance(strength, Real):
        raise TypeError(
            f"strength (the smoothing parameter μ) must be a real number > 0; got "
            f"{strength!r} ({type(strength).__name__})."
        )
    strength = float(strength)
    if not (np.isfinite(strength) and strength > 0):
        raise ValueError(
            f"strength (the smoothing parameter μ) must be a finite number > 0; got "
            f"{strength}. μ → 0 recovers the structural hinge: use StructuredHingeLoss "
            "for μ = 0."
        )
    return strength


def _check_top_k(top_k):
    """K as an int, or a clear error unless it is an integer >= 1."""
    if isinstance(top_k, (bool, np.bool_)) or not isinstance(top_k, Integral):
        raise TypeError(
            f"top_k (the number of best outputs K) must be an integer >= 1; got {top_k!r} "
            f"({type(top_k).__name__})."
        )
    if top_k < 1:
        raise ValueError(
            f"top_k (the number of best outputs K) must be an integer >= 1; got {top_k}."
        )
    return int(top_k)


def _divided_scores(scores, divisor):
    """``scores / divisor`` (every part score), in a container of the same type.

    A container that defines ``__truediv__`` divides itself; otherwise every float array
    it holds is a part-score array (unary, and for chains transition, start and end),
    which is true of every built-in container, and the others (offsets) are shared. A
    positive divisor keeps -inf (a forbidden part) forbidden, so nothing needs checking.
    """
    if hasattr(type(scores), "__truediv__"):
        return scores / divisor
    divided = copy.copy(scores)
    for name, value in vars(scores).items():
        if isinstance(value, np.ndarray) and np.issubdtype(value.dtype, np.floating):
            setattr(divided, name, value / divisor)
    return divided


def project_sorted_onto_simplex(values, valid=None):
    """Euclidean projection of every row of ``values`` onto the simplex (sparsemax).

    The rows must be sorted in non-increasing order over their valid entries, which come
    first (as ``top_k`` lists its outputs). The projection of v is
    q_i = max(0, v_i − τ), with the threshold τ chosen so that Σ_i q_i = 1: with k the
    number of nonzeros, the largest k such that 1 + k v_(k) > Σ_{i≤k} v_(i),
    τ = (Σ_{i≤k} v_(i) − 1) / k (Held, Wolfe & Crowder, 1974; Martins & Astudillo, 2016).

    Parameters
    ----------
    values : ndarray of shape (n_rows, K)
        Finite where ``valid``; other entries are ignored (they may be -inf).
    valid : ndarray of shape (n_rows, K), bool, default=None
        The entries that take part (a prefix of every row, at least one entry); all
        by default.

    Returns
    -------
    weights : ndarray of shape (n_rows, K)
        The projection, 0 on invalid entries.
    threshold : ndarray of shape (n_rows,)
        τ of every row.
    support : ndarray of shape (n_rows,), int64
        The number of nonzero weights k of every row (≥ 1).

    Examples
    --------
    >>> import numpy as np
    >>> weights, threshold, support = project_sorted_onto_simplex(np.array([[2., 1.5, 0.]]))
    >>> weights, threshold, support
    (array([[0.75, 0.25, 0.  ]]), array([1.25]), array([2]))
    """
    values = np.asarray(values, dtype=np.float64)
    if valid is None:
        valid = np.ones(values.shape, dtype=bool)
    n_rows, k = values.shape
    shifted = np.where(valid, values - values[:, :1], 0.0)
    cumulative = np.cumsum(shifted, axis=1)
    ranks = np.arange(1, k + 1)
    support = np.count_nonzero(valid & (1.0 + ranks * shifted > cumulative), axis=1)
    rows = np.arange(n_rows)
    threshold = (cumulative[rows, support - 1] - 1.0) / support
    weights = np.where(valid, np.maximum(shifted - threshold[:, None], 0.0), 0.0)
    return weights, threshold + values[:, 0], support


@njit(cache=True, nogil=True)
def project_sorted_row(values, n_listed, weights):
    """Compiled projection of one sorted row onto the simplex, for per-example kernels.

    The same projection as :func:`project_sorted_onto_simplex` on one row whose
    ``n_listed`` first entries are listed (sorted, non-increasing); a compiled oracle
    that gets the K best scores of one example (top-K Viterbi) calls it on ``z / μ``.

    Parameters
    ----------
    values : ndarray of shape (K,), float64
        Sorted non-increasing over the first ``n_listed`` entries; the rest are ignored.
    n_listed : int, 1 <= n_listed <= K
    weights : ndarray of shape (K,), float64
        Written: the projection (0 beyond ``n_listed``).

    Returns
    -------
    threshold : float
        τ, with weights[i] = max(0, values[i] − τ).
    support : int
        The number of nonzero weights; the top-K oracle is certified exact when it is
        below K.
    """
    top = values[0]
    cumulative = 0.0
    support = 1
    support_sum = 0.0
    for i in range(n_listed):
        shifted = values[i] - top
        cumulative += shifted
        if 1.0 + (i + 1) * shifted > cumulative:
            support = i + 1
            support_sum = cumulative
    threshold = (support_sum - 1.0) / support
    for i in range(weights.shape[0]):
        weights[i] = max(values[i] - top - threshold, 0.0) if i < n_listed else 0.0
    return threshold + top, support


class SmoothedHingeLoss(TrainingLoss):
    """Base class of the smoothed structural hinge losses (margin rescaling).

    ℓ_μ(η; ȳ) = h_μ(θ + Δ(ȳ, ·)) − θ_ȳ, where h_μ = max □ μω is the max over outputs
    smoothed by infimal convolution with μω (Nesterov, 2005): h_μ(z) = max_{q ∈ simplex}
    [⟨q, z⟩ − μ ω(q)]. Its gradient with respect to the part scores η is
    Σ_y q*_y a_y − a_ȳ, with q* the maximizer. Subclasses choose ω and compute q* from a
    decoder operation on the cost-augmented scores η + c (⟨c, a_y⟩ = Δ(ȳ, y) up to a
    constant per example, which cancels with the gold term scored by the same scores).

    Parameters
    ----------
    task_loss : str or TaskLoss, default="hamming"
        Δ; it must decompose over parts (``decomposition = "parts"``: it defines
        ``unary_costs``), so that the cost-augmented scores score every output
        θ_y + Δ(ȳ, y).
    strength : float > 0, default=1.0
        The smoothing parameter μ. Larger is smoother (gradient Lipschitz constant
        proportional to 1 / μ) and farther from the hinge; μ → 0 gives the hinge.
    """

    #: The decoder operation that gives the maximizer q* (besides ``parts``).
    required_capability = None

    def __init__(self, task_loss="hamming", strength=1.0):
        task_loss = check_task_loss(task_loss, "task_loss")
        if task_loss.decomposition != "parts":
            raise ValueError(
                f"{type(self).__name__} needs a task loss that decomposes over parts "
                f"(decomposition='parts', with unary_costs), so that the cost-augmented "
                f"scores score every output θ_y + Δ(ȳ, y); {type(task_loss).__name__} "
                f"declares decomposition={task_loss.decomposition!r}. Use HammingLoss, or "
                "implement unary_costs(y_true, offsets, n_states) for your loss."
            )
        self.task_loss = task_loss
        self.strength = strength

    @property
    def strength(self):
        """μ, the smoothing parameter (> 0); may be changed between calls (a decreasing
        smoothing schedule)."""
        return self._strength

    @strength.setter
    def strength(self, value):
        self._strength = _check_strength(value)

    def check_decoder(self, decoder):
        """Raise a clear error when ``decoder`` lacks an operation this loss calls."""
        check_capability(decoder, self.required_capability, type(self).__name__)
        check_capability(decoder, "parts", type(self).__name__)

    def __repr__(self):
        return f"{type(self).__name__}(task_loss={self.task_loss!r}, strength={self.strength!r})"


class EntropySmoothedHingeLoss(SmoothedHingeLoss):
    r"""Structural hinge smoothed by the entropy (margin rescaling).

    .. math::

        ℓ_μ(η; ȳ) = μ \log \sum_y \exp\big((θ_y + Δ(ȳ, y)) / μ\big) − θ_ȳ,

    with gradient E_p[a_y] − a_ȳ under p(y) ∝ exp((θ_y + Δ(ȳ, y)) / μ): the
    log-partition and the marginals (``decoder.marginals``) of the cost-augmented scores
    divided by μ. It is the softmax-margin CRF loss at temperature μ
    (``CRFLoss(cost=...)`` is μ = 1) and satisfies, with ℓ the structural hinge and
    :math:`|Y|` the number of outputs of the example,

    .. math::

        ℓ(η; ȳ) ≤ ℓ_μ(η; ȳ) ≤ ℓ(η; ȳ) + μ \log |Y|,

    so ℓ_μ ≥ 0. Its gradient is (1/μ)-Lipschitz in the scores of the outputs.

    Parameters
    ----------
    task_loss : str or TaskLoss, default="hamming"
        Δ, decomposing over parts (``"hamming"`` or a loss with ``unary_costs``).
    strength : float > 0, default=1.0
        μ, the smoothing parameter.

    Notes
    -----
    Called as ``loss(decoder, scores, y_true, gold=None)``; returns the losses, shape
    (n_examples,), and their gradient with respect to the part scores, a part container
    laid out like ``scores``. One ``cost_augmented`` and one ``marginals`` call per
    batch: every decoder with ``"marginals"`` (chains, multiclass, multilabel, trees)
    serves.

    References
    ----------
    Nesterov (2005). Smooth minimization of non-smooth functions. Mathematical
    Programming 103(1).
    Pillutla, Roulet, Kakade & Harchaoui (2018). A smoother way to train structured
    prediction models. NeurIPS.
    Gimpel & Smith (2010). Softmax-margin CRFs: training log-linear models with cost
    functions. NAACL.

    Examples
    --------
    >>> import numpy as np
    >>> from skstruct.decoders import MulticlassDecoder, MulticlassScores
    >>> from skstruct.losses import EntropySmoothedHingeLoss
    >>> scores = MulticlassScores(np.array([[2., 0., 0.]]))
    >>> values, gradient = EntropySmoothedHingeLoss(strength=0.5)(
    ...     MulticlassDecoder(), scores, np.array([0]))
    >>> values.round(4), gradient.unary.round(4)
    (array([0.1198]), array([[-0.213 ,  0.1065,  0.1065]]))
    """

    required_capability = "marginals"

    def __call__(self, decoder, scores, y_true, gold=None):
        mu = self.strength
        augmented = decoder.cost_augmented(scores, y_true, self.task_loss)
        log_z, expected = decoder.marginals(_divided_scores(augmented, mu))
        if gold is None:
            gold = decoder.parts(scores, y_true)
        values = mu * log_z - gold.dot(augmented)
        expected -= gold
        return values, expected


class L2SmoothedHingeLoss(SmoothedHingeLoss):
    r"""Structural hinge smoothed by the squared ℓ2 norm, from the K best outputs.

    .. math::

        ℓ_μ(η; ȳ) = \max_{q ∈ \text{simplex}} \Big[\sum_y q_y (θ_y + Δ(ȳ, y))
                    − \frac{μ}{2} \|q\|^2\Big] − θ_ȳ,

    with gradient Σ_y q*_y a_y − a_ȳ, where q* is the Euclidean projection onto the
    simplex of the vector z / μ of cost-augmented scores z_y = θ_y + Δ(ȳ, y). The
    projection is sparse: it keeps the k best outputs for some k, so it is computed from
    the K best cost-augmented outputs (``decoder.top_k``, K = ``top_k``) with
    :func:`project_sorted_onto_simplex`; the value is ⟨q*, z⟩ − (μ/2)‖q*‖² − θ_ȳ.
    With ℓ the structural hinge,

    .. math::

        ℓ(η; ȳ) − μ/2 ≤ ℓ_μ(η; ȳ) ≤ ℓ(η; ȳ),

    so ℓ_μ may be negative (down to −μ/2 when ȳ wins by a large margin). Its gradient is
    (1/μ)-Lipschitz in the scores of the outputs.

    **Exactness.** The top-K oracle equals the ℓ2 oracle over all outputs when the
    projection of the K best scores leaves the K-th at zero weight, z_(K) ≤ τμ with τ
    the threshold of the projection (then every output beyond the K-th, scoring at most
    z_(K), has zero weight too); this implies the condition μ ≤ Σ_{i≤K} (z_(i) − z_(K+1))
    of Pillutla et al. (2018, Prop. 4), and holds for every μ' ≤ μ. It holds as well
    when the decoder lists fewer than K outputs (all of them are listed). Otherwise the
    oracle is a heuristic surrogate (the paper's top-K strategy), and it is reported:
    after every call :attr:`exact_` flags the examples whose oracle is certified exact,
    :attr:`n_inexact_` counts the others, and ``on_inexact`` may warn or raise.
    An example with K outputs in the support may still be exact (when there is no
    (K+1)-th output, or it scores low enough); certifying that would take K + 1 outputs.

    Outputs that ``top_k`` pads (-1, score -inf) or lists with score -inf (a forbidden
    part) take no weight and never turn a value or a gradient into NaN.

    Parameters
    ----------
    task_loss : str or TaskLoss, default="hamming"
        Δ, decomposing over parts (``"hamming"`` or a loss with ``unary_costs``).
    strength : float > 0, default=1.0
        μ, the smoothing parameter.
    top_k : int >= 1, default=5
        K, the number of best cost-augmented outputs the projection is computed from
        (5 in the paper's experiments). K = 1 gives the hinge minus μ/2 with its
        subgradient.
    on_inexact : {"record", "warn", "raise"}, default="record"
        What to do when the oracle of some example is not certified exact, besides
        recording it in :attr:`exact_` and :attr:`n_inexact_`: nothing more, an
        :class:`InexactTopKWarning`, or a ``ValueError``.

    Attributes
    ----------
    exact_ : ndarray of shape (n_examples,), bool
        Of the last call: whether the top-K oracle of every example is certified exact.
    n_inexact_ : int
        Of the last call: the number of examples whose oracle is not certified exact.
    n_inexact_total_ : int
        The same, summed over every call since the loss was built.
    n_examples_total_ : int
        The examples evaluated over every call since the loss was built.

    Notes
    -----
    Called as ``loss(decoder, scores, y_true, gold=None)``; returns the losses, shape
    (n_examples,), and their gradient with respect to the part scores, a part container
    laid out like ``scores``. One ``cost_augmented`` call, one ``top_k`` call and at
    most K ``parts`` calls per batch (none for a rank that has zero weight in every
    example); every decoder with ``"top_k"`` and ``"parts"`` (chains, multiclass,
    multilabel) serves. :meth:`oracle` returns the flags instead of recording them, for
    callers that evaluate batches concurrently.

    References
    ----------
    Pillutla, Roulet, Kakade & Harchaoui (2018). A smoother way to train structured
    prediction models. NeurIPS.
    Nesterov (2005). Smooth minimization of non-smooth functions. Mathematical
    Programming 103(1).
    Martins & Astudillo (2016). From softmax to sparsemax: a sparse model of attention
    and multi-label classification. ICML.

    Examples
    --------
    >>> import numpy as np
    >>> from skstruct.decoders import MulticlassDecoder, MulticlassScores
    >>> from skstruct.losses import L2SmoothedHingeLoss
    >>> loss = L2SmoothedHingeLoss(strength=1.0, top_k=2)
    >>> scores = MulticlassScores(np.array([[2., 0., -3.], [0., 0.5, 0.]]))
    >>> values, gradient = loss(MulticlassDecoder(), scores, np.array([0, 0]))
    >>> values
    array([-0.5   ,  1.0625])
    >>> gradient.unary
    array([[ 0.  ,  0.  ,  0.  ],
           [-1.  ,  0.75,  0.25]])
    >>> loss.exact_, loss.n_inexact_
    (array([ True, False]), 1)
    """

    required_capability = "top_k"

    def __init__(self, task_loss="hamming", strength=1.0, top_k=5, on_inexact="record"):
        super().__init__(task_loss, strength)
        self.top_k = _check_top_k(top_k)
        if on_inexact not in ("record", "warn", "raise"):
            raise ValueError(
                f"on_inexact must be 'record', 'warn' or 'raise'; got {on_inexact!r}."
            )
        self.on_inexact = on_inexact
        self.exact_ = np.zeros(0, dtype=bool)
        self.n_inexact_ = 0
        self.n_inexact_total_ = 0
        self.n_examples_total_ = 0

    def oracle(self, decoder, scores, y_true, gold=None):
        """Losses, gradient and exactness flags, recording nothing.

        Parameters
        ----------
        decoder : Decoder
            With ``cost_augmented``, ``top_k`` and ``parts``.
        scores : score container
        y_true : ndarray
            Encoded gold outputs, stacked like the decoder's outputs.
        gold : part container, default=None
            ``decoder.parts(scores, y_true)``, when the caller has it.

        Returns
        -------
        values : ndarray of shape (n_examples,)
        gradient : part container laid out like ``scores``
            Σ_j q_j a_{y_(j)} − a_ȳ over the K best outputs y_(j).
        exact : ndarray of shape (n_examples,), bool
            Whether the top-K oracle of every example is certified exact.
        """
        mu, k = self.strength, self.top_k
        augmented = decoder.cost_augmented(scores, y_true, self.task_loss)
        paths, top = decoder.top_k(augmented, k)
        top = np.asarray(top, dtype=np.float64)
        listed = top > -np.inf  # padded and forbidden outputs take no part
        weights, _, support = project_sorted_onto_simplex(top / mu, listed)
        exact = support < k
        z = np.where(listed, top, 0.0)
        values = ((weights * z).sum(axis=1) - 0.5 * mu * (weights * weights).sum(axis=1))
        if gold is None:
            gold = decoder.parts(scores, y_true)
        values -= gold.dot(augmented)
        gradient = self._expected_parts(decoder, scores, paths, listed, weights)
        gradient -= gold
        return values, gradient, exact

    @staticmethod
    def _expected_parts(decoder, scores, paths, listed, weights):
        """Σ_j weights[:, j] a_{paths[..., j]}: one ``parts`` call per rank with weight.

        An example's unlisted rank (padded with -1, or scored -inf) has weight 0; its
        output is replaced by the example's best one so that ``parts`` sees an output.
        """
        lengths = np.diff(scores.offsets)
        best = paths[..., 0]
        # rank 0 always has weight (the best output keeps a positive weight)
        total = decoder.parts(scores, best).scale(weights[:, 0])
        for j in range(1, weights.shape[1]):
            if not weights[:, j].any():
                continue
            unlisted = np.repeat(~listed[:, j], lengths).reshape(best.shape)
            outputs = np.where(unlisted, best, paths[..., j])
            total -= decoder.parts(scores, outputs).scale(-weights[:, j])  # in place
        return total

    def __call__(self, decoder, scores, y_true, gold=None):
        values, gradient, exact = self.oracle(decoder, scores, y_true, gold)
        n_inexact = int(exact.size - np.count_nonzero(exact))
        self.exact_ = exact
        self.n_inexact_ = n_inexact
        self.n_inexact_total_ += n_inexact
        self.n_examples_total_ += int(exact.size)
        if n_inexact and self.on_inexact != "record":
            first = int(np.flatnonzero(~exact)[0])
            message = (
                f"The top-{self.top_k} ℓ2 oracle is not certified exact for {n_inexact} of "
                f"{exact.size} examples (the first is example {first}): the projection "
                f"gives the {self.top_k}-th best output a positive weight, so outputs "
                f"beyond it may deserve weight too. Raise top_k or lower strength "
                f"(μ = {self.strength})."
            )
            if self.on_inexact == "raise":
                raise ValueError(message)
            warnings.warn(message, InexactTopKWarning, stacklevel=2)
        return values, gradient

    def __repr__(self):
        return (f"{type(self).__name__}(task_loss={self.task_loss!r}, "
                f"strength={self.strength!r}, top_k={self.top_k!r}, "
                f"on_inexact={self.on_inexact!r})")
