"""Training losses: value and gradient with respect to part scores."""

import numpy as np

from ..utils._capabilities import check_capability
from ._base import check_task_loss_values
from ._task import check_task_loss

__all__ = [
    "TrainingLoss",
    "CRFLoss",
    "PerceptronLoss",
    "SparseMAPLoss",
    "StructuredHingeLoss",
]


class TrainingLoss:
    """Base class of training losses.

    A training loss is called as ``loss(decoder, scores, y_true, gold=None)`` and returns
    the loss of every example, shape (n_examples,), and its gradient with respect to the
    part scores, per example, as a part container laid out like ``scores`` (for the
    Fenchel–Young losses, μ* − a_y: the maximizer minus the gold indicators). ``gold`` may
    pass the indicator parts ``decoder.parts(scores, y_true)`` when the caller has them
    already (they do not depend on the scores). ``required_capability`` is the decoder
    operation it calls.

    The solvers and the objective ask a training loss what it is through the attributes
    below, whose defaults describe a loss with none of these traits.

    Fast paths are offered by the loss, never inferred from its type: :meth:`engine_form`
    tells the compiled per-example engine what the loss maximizes, and
    :attr:`is_log_likelihood` lets a feature map's fused CRF objective stand in for it.
    The defaults offer nothing.
    """

    required_capability = None
    #: The task loss Δ the loss is built on (the structured hinges), or None.
    task_loss = None
    #: ``"margin"`` or ``"slack"`` for the structured hinge, None for other losses.
    rescaling = None
    #: A task loss added to the scores before inference (softmax-margin, m-SparseMAP), or
    #: None.
    cost = None
    #: Whether ``__call__`` takes ``warm_start``, a dict in which the loss keeps its last
    #: solution for the same batch, to start the next evaluation from it.
    warm_startable = False

    def check_decoder(self, decoder):
        """Raise a clear error when ``decoder`` lacks the operation this loss calls."""
        check_capability(decoder, self.required_capability, type(self).__name__)

    def engine_form(self):
        """How the compiled per-example engine reads this loss.

        Returns
        -------
        known : bool
            Whether the engine computes this loss: plain MAP (the perceptron loss) or a
            loss-augmented MAP (the structured hinge). False by default.
        rescaling : {None, "margin", "slack"}
            None for plain MAP, else the rescaling of the task loss ``self.task_loss``.
        """
        return False, None

    @property
    def is_log_likelihood(self):
        """Whether this loss is exactly the CRF negative log-likelihood log Z − θ_ȳ
        (no cost): a fused objective of the log-likelihood may then evaluate it. False
        by default."""
        return False

    @property
    def is_softmax_margin(self):
        """Whether this loss is log Σ_y exp(θ_y + Δ(ȳ, y)) − θ_ȳ with Δ its ``cost`` (or
        0): the CRF loss, which the smoothed solvers compute with entropy smoothing at
        μ = 1. False by default."""
        return False

    @property
    def solver_family(self):
        """The family of losses a solver must solve to train this loss (the keys of
        :data:`~skstruct.optim.LOSS_FAMILIES`): ``"smooth"`` by default."""
        return "smooth"

    def __call__(self, decoder, scores, y_true, gold=None):
        raise NotImplementedError

    def values(self, decoder, scores, y_true, gold, **options):
        """The losses alone, shape (n_examples,); a loss overrides it where the value is
        cheaper than the value and gradient (the default computes both).

        ``options`` are those of ``__call__`` (``warm_start``).
        """
        return self(decoder, scores, y_true, gold=gold, **options)[0]


class CRFLoss(TrainingLoss):
    """Conditional random field log loss, or softmax-margin with a task loss.

    ℓ(η; ȳ) = log Σ_y exp(θ_y + Δ(ȳ, y)) − θ_ȳ, with gradient E_p[a_y] − a_ȳ under
    p(y) ∝ exp(θ_y + Δ(ȳ, y)). Without a cost (Δ = 0) this is the negative conditional
    log-likelihood −log p(ȳ | x).

    Parameters
    ----------
    cost : None, str or TaskLoss, default=None
        A task loss that decomposes over tokens (for instance ``"hamming"``) turns the log
        loss into the softmax-margin loss (Gimpel & Smith, 2010).

    References
    ----------
    Lafferty, McCallum & Pereira (2001). Conditional random fields: probabilistic models for
    segmenting and labeling sequence data. ICML.
    Gimpel & Smith (2010). Softmax-margin CRFs: training log-linear models with cost
    functions. NAACL.
    """

    required_capability = "marginals"

    def __init__(self, cost=None):
        self.cost = None if cost is None else check_task_loss(cost, "cost")
        if self.cost is not None and self.cost.decomposition != "parts":
            raise ValueError(
                f"The softmax-margin cost must decompose over tokens; "
                f"{type(self.cost).__name__} does not."
            )

    def __call__(self, decoder, scores, y_true, gold=None):
        augmented = scores
        if self.cost is not None:
            augmented = decoder.cost_augmented(scores, y_true, self.cost)
        log_z, expected = decoder.marginals(augmented)
        if gold is None:
            gold = decoder.parts(scores, y_true)
        values = log_z - gold.dot(augmented)
        expected -= gold
        return values, expected

    @property
    def is_log_likelihood(self):
        """True without a cost, unless a subclass redefines the loss (``__call__``)."""
        return self.is_softmax_margin and self.cost is None

    @property
    def is_softmax_margin(self):
        """True unless a subclass redefines the loss (``__call__``)."""
        return type(self).__call__ is CRFLoss.__call__


class PerceptronLoss(TrainingLoss):
    """Structured perceptron loss max_y θ_y − θ_ȳ, with gradient a_ŷ − a_ȳ (ŷ the MAP).

    The Fenchel–Young loss with Ω = 0; the averaged structured perceptron takes one
    stochastic subgradient step on it per example.

    References
    ----------
    Collins (2002). Discriminative training methods for hidden Markov models: theory and
    experiments with perceptron algorithms. EMNLP.
    """

    required_capability = "map"

    def __call__(self, decoder, scores, y_true, gold=None):
        y_hat = decoder.map(scores)
        if gold is None:
            gold = decoder.parts(scores, y_true)
        predicted = decoder.parts(scores, y_hat)
        values = predicted.dot(scores) - gold.dot(scores)
        predicted -= gold
        return values, predicted

    solver_family = "perceptron"

    def engine_form(self):
        """Plain MAP: ``(True, None)``; a subclass, which may change the math, ``(False,
        None)``."""
        return (True, None) if type(self) is PerceptronLoss else (False, None)


class StructuredHingeLoss(TrainingLoss):
    """Structured hinge loss with margin or slack rescaling.

    Margin rescaling: ℓ = max_y [θ_y + Δ(ȳ, y)] − θ_ȳ, gradient a_ŷ − a_ȳ.
    Slack rescaling: ℓ = max_y Δ(ȳ, y) (1 + θ_y − θ_ȳ), gradient Δ(ȳ, ŷ) (a_ŷ − a_ȳ).
    ŷ is the decoder's exact loss-augmented MAP; both losses are ≥ 0 (y = ȳ gives 0).

    Parameters
    ----------
    task_loss : str or TaskLoss, default="hamming"
        Δ. Count-statistic losses must be bound to their positive states.
    rescaling : {"margin", "slack"}, default="margin"

    References
    ----------
    Tsochantaridis, Joachims, Hofmann & Altun (2005). Large margin methods for structured
    and interdependent output variables. JMLR.
    """

    required_capability = "loss_augmented_map"

    def __init__(self, task_loss="hamming", rescaling="margin"):
        if rescaling not in ("margin", "slack"):
            raise ValueError(f"rescaling must be 'margin' or 'slack'; got {rescaling!r}.")
        self.task_loss = check_task_loss(task_loss, "task_loss")
        self.rescaling = rescaling

    @property
    def solver_family(self):
        """``"hinge_margin"`` or ``"hinge_slack"``."""
        return f"hinge_{self.rescaling}"

    def engine_form(self):
        """Loss-augmented MAP: ``(True, self.rescaling)``; a subclass, which may change
        the math, ``(False, None)``."""
        return (True, self.rescaling) if type(self) is StructuredHingeLoss else (False, None)

    def warm_started_oracle(self, decoder):
        """Whether :meth:`loss_augmented` takes a ``warm_start`` with this decoder: a
        decoder that relaxes loss-augmented inference by an iterative solver (the
        factor graph's LP-MAP by ADMM) can start it from its state of an earlier call
        on the same examples. Per-example solvers (BCFW) keep one per example."""
        relaxes = getattr(decoder, "relaxes_loss_augmented", None)
        return (type(self).loss_augmented is StructuredHingeLoss.loss_augmented
                and relaxes is not None and relaxes(self.task_loss, self.rescaling))

    def loss_augmented(self, decoder, scores, y_true, warm_start=None):
        """ŷ and Δ(ȳ, ŷ) of every example.

        A decoder that relaxes loss-augmented inference (``relaxed_loss_augmented_map``,
        the factor-graph decoder's LP-MAP) may answer with fractional outputs instead,
        which only its own ``parts`` reads: the hinge over its relaxation.
        ``warm_start``: a dict in which such a decoder keeps its solver's state for the
        next call on the same examples (:meth:`warm_started_oracle`); ignored otherwise.
        """
        relaxed = getattr(decoder, "relaxed_loss_augmented_map", None)
        if relaxed is not None:
            options = {} if warm_start is None else {"warm_start": warm_start}
            found = relaxed(scores, y_true, self.task_loss, self.rescaling, **options)
            if found is not None:
                return found
        y_hat = decoder.loss_augmented_map(scores, y_true, self.task_loss, self.rescaling)
        delta = self.task_loss(np.ravel(y_true), np.ravel(y_hat), scores.offsets)
        check_task_loss_values(delta, self.task_loss)
        return y_hat, delta

    def values(self, decoder, scores, y_true, gold):
        """The losses alone, shape (n_examples,).

        Cheaper than ``__call__`` when the task loss decomposes over parts under margin
        rescaling and the decoder declares ``exact_cost_augmentation`` (its
        cost-augmented scores score every output θ_y + Δ(y_true, y), with no constant):
        then max_y θ_y + Δ(y_true, y) is one MAP score, with no parts to build.
        """
        if (self.rescaling == "margin" and self.task_loss.decomposition == "parts"
                and getattr(decoder, "exact_cost_augmentation", False)):
            augmented = decoder.cost_augmented(scores, y_true, self.task_loss)
            _, best = decoder.map(augmented, return_score=True)
            return np.maximum(best - gold.dot(scores), 0.0)
        return self(decoder, scores, y_true, gold=gold)[0]

    def __call__(self, decoder, scores, y_true, gold=None):
        y_hat, delta = self.loss_augmented(decoder, scores, y_true)
        if gold is None:
            gold = decoder.parts(scores, y_true)
        predicted = decoder.parts(scores, y_hat)
        margin = predicted.dot(scores) - gold.dot(scores)
        predicted -= gold
        if self.rescaling == "margin":
            return np.maximum(margin + delta, 0.0), predicted
        values = delta * (1.0 + margin)
        weights = np.where(values > 0, delta, 0.0)
        return np.maximum(values, 0.0), predicted.scale(weights)


def _squared_norms(unary, unary_offsets):
    """½-less per-example squared norms of the unary blocks, shape (n_examples,)."""
    flat = np.asarray(unary, dtype=np.float64).reshape(-1)
    cumulative = np.concatenate(([0.0], np.cumsum(flat * flat)))
    return cumulative[unary_offsets[1:]] - cumulative[unary_offsets[:-1]]


class SparseMAPLoss(TrainingLoss):
    """SparseMAP loss, or m-SparseMAP with a task loss (cost-augmented).

    The Fenchel–Young loss of Ω(μ) = ½‖u‖² on the marginal polytope:

        ℓ(η; ȳ) = max_{μ ∈ M} [ηᵀμ − ½‖u‖²] − [θ_ȳ − ½‖m_ȳ‖²],

    with gradient μ* − a_ȳ, where μ* = [u*; v*] is the SparseMAP solution
    (the decoder's :meth:`~skstruct.decoders.Decoder.sparsemap`: by default the active
    set, which needs only MAP calls). With a ``cost``,
    η is replaced by the cost-augmented scores η + c (⟨c, a_y⟩ = Δ(ȳ, y) up to a
    constant), in the maximization and in the gold term alike, so ℓ ≥ 0 still holds and
    ℓ = 0 exactly when ȳ wins by the margin Δ.

    Parameters
    ----------
    cost : None, str or TaskLoss, default=None
        A task loss that decomposes over the unary parts (``"hamming"``): m-SparseMAP.
    max_iter : int, default=100
        MAP calls per example and evaluation (see :func:`~skstruct.decoders.sparsemap`).
    tol : float, default=1e-9
        SparseMAP stopping tolerance on the Frank–Wolfe gap.

    Notes
    -----
    ℓ ≥ 0, ℓ is convex in η, and ℓ_{tΩ}(η) = t ℓ_Ω(η/t). With one unary part per class
    (multiclass), SparseMAP is sparsemax and ℓ is the sparsemax loss.

    References
    ----------
    Niculae, Martins, Blondel & Cardie (2018). SparseMAP: differentiable sparse structured
    inference. ICML.
    Blondel, Martins & Niculae (2020). Learning with Fenchel–Young losses. JMLR.
    """

    required_capability = "map"
    #: The full-batch objective keeps the last solution to start the next solve from.
    warm_startable = True

    def __init__(self, cost=None, max_iter=100, tol=1e-9):
        self.cost = None if cost is None else check_task_loss(cost, "cost")
        self.max_iter = max_iter
        self.tol = tol

    @property
    def is_plain_sparsemap(self):
        """True without a ``cost``: the loss is then exactly the SparseMAP loss of the
        scores, which a decoder's fused evaluation (the pairwise factor graph's
        ``shared_pair_sparsemap_loss``) may compute instead."""
        return self.cost is None

    def check_decoder(self, decoder):
        check_capability(decoder, "map", type(self).__name__)
        check_capability(decoder, "parts", type(self).__name__)

    def solve(self, decoder, scores, y_true, init=None):
        """The SparseMAP solution at the (cost-augmented) scores, and those scores."""
        augmented = scores
        if self.cost is not None:
            augmented = decoder.cost_augmented(scores, y_true, self.cost)
        result = decoder.sparsemap(augmented, max_iter=self.max_iter, tol=self.tol,
                                   init=init)
        return result, augmented

    def __call__(self, decoder, scores, y_true, gold=None, warm_start=None):
        """Losses and gradients; ``warm_start`` is a dict in which the caller lets the
        loss keep its last solution for the same batch, to start the next solve from
        its active sets."""
        return self.values_gradients_and_spread(decoder, scores, y_true, gold,
                                                warm_start)[:2]

    def values_gradients_and_spread(self, decoder, scores, y_true, gold=None,
                                    warm_start=None):
        """:meth:`__call__`'s losses and gradients, and how far the subdifferential
        reaches around each gradient.

        The loss is differentiable wherever the SparseMAP solution μ* is unique. Where
        it is not (an LP-SparseMAP PAIR score at exactly zero: its marginal v_f is then
        free in an interval), the subdifferential with respect to that part's score is
        the interval of the maximizers' parts minus the gold part (Danskin's theorem):
        [g − down, g + up] around the returned gradient g.

        Returns
        -------
        values : ndarray of shape (n_examples,)
        gradient : parts
            μ* − a_ȳ.
        spread : (down, up) parts or None
            The solution's ``marginal_spread()`` where it offers one (see
            :meth:`~skstruct.decoders._factor_graph.decoder.LPSparseMAPResult.marginal_spread`),
            else None (μ* is unique).
        """
        init = None if warm_start is None else warm_start.get("result")
        if init is not None and init.n_examples != scores.n_examples:
            init = None
        result, augmented = self.solve(decoder, scores, y_true, init=init)
        if warm_start is not None:
            # a result may offer the part of itself the next solve starts from (the
            # factor-graph ADMM's u, multipliers and penalties), lighter to keep
            slim = getattr(result, "warm_state", None)
            warm_start["result"] = result if slim is None else slim()
        if gold is None:
            gold = decoder.parts(scores, y_true)
        offsets = np.asarray(scores.unary_offsets)
        values = (result.objective - gold.dot(augmented)
                  + 0.5 * _squared_norms(gold.unary, offsets))
        offer = getattr(result, "marginal_spread", None)
        spread = None if offer is None else offer()
        return np.maximum(values, 0.0), result.marginals - gold, spread
