"""The interface every decoder implements."""

from numbers import Integral

import numpy as np
from sklearn.base import BaseEstimator

from ...losses._base import TaskLoss, check_task_loss_values
from ...losses._task import _task_losses, check_task_loss
from .checks import (
    InfeasibleOutputError,
    check_feasible,
    check_k,
    check_slack_gold,
    check_task_loss_argument,
    keeps_operations,
    no_exact_loss_augmented_map,
)

__all__ = ["Decoder"]


#: The class and parameter values last validated, by decoder id (the decoder's state is
#: left alone). Validity depends on the class and the values only, and the values are
#: held here, so an id reused by another decoder with the very same values is valid too.
_VALIDATED = {}


class Decoder(BaseEstimator):
    """Base class of decoders: inference over one family of structured outputs.

    A decoder knows one output family (chains, multilabel sets, trees, ...) and nothing
    about features. It receives *part scores* in the family's score container and answers
    inference questions about the distribution or the argmax they define. The operations a
    decoder supports are listed in its ``capabilities``:

    ``"map"``
        :meth:`map`: the highest-scoring output of every example.
    ``"marginals"``
        :meth:`log_partition` and :meth:`marginals`: log Σ_y exp θ_y and the expected part
        indicators E_p[a_y] under p(y) ∝ exp θ_y.
    ``"top_k"``
        :meth:`top_k`: the ``k`` best distinct outputs, sorted by score.
    ``"loss_augmented_map"``
        :meth:`loss_augmented_map`: argmax_y θ_y + Δ(y_true, y) for a task loss Δ (margin
        rescaling) or argmax_y Δ(y_true, y) (1 + θ_y − θ_{y_true}) (slack rescaling).
    ``"parts"``
        :meth:`parts` and :meth:`score_outputs`: the indicator vector a_y of given outputs
        and their scores θ_y = ⟨η, a_y⟩.
    ``"sample_uniform"``
        :meth:`sample_uniform`: independent draws from the uniform distribution over the
        valid outputs of every example (the outputs of finite score).
    ``"neighbours"``
        :meth:`neighbours`: the valid outputs at Hamming distance 1 .. k from given
        outputs (the positions of the encoded output whose value differs).

    Outputs are *encoded*: integer states ``0 .. n_states - 1``, stacked batch-first.
    Decoders are scikit-learn estimators only so that their hyper-parameters are reachable
    with ``get_params`` / ``set_params`` (``decoder__param`` in a grid search); they hold
    no fitted state.

    Part scores are real numbers or -inf, which forbids a part: an output that contains
    a forbidden part scores -inf and is never returned by ``map``, listed by ``top_k``
    or chosen by ``loss_augmented_map``. The built-in score containers reject NaN and
    +inf when they are built (:func:`check_part_scores`), so every operation is covered.
    An example whose outputs all score -inf has ``log_partition`` -inf, and ``map``,
    ``top_k``, ``marginals`` and ``loss_augmented_map`` raise
    :class:`InfeasibleOutputError` naming it (:func:`check_feasible`). Encoded outputs
    given to ``parts``, ``score_outputs``, ``cost_augmented`` and ``loss_augmented_map``
    must fit the scores: the right shape, integers, every state in range
    (:func:`check_encoded_outputs`).

    Loss-augmented MAP has one default, :meth:`loss_augmented_map`, built on what the
    task loss declares (:attr:`~skstruct.losses.TaskLoss.decomposition`): a family
    implements only the hooks it can answer exactly (``_cost_augmented``,
    ``_counting_form``, ``_count_augmented_map``, ``_zero_one_augmented_map``,
    ``_unsupported_loss``), never a check of the loss's type. :meth:`sparsemap` (the
    active set by default) and :meth:`compiled_oracle` (None by default) are operations a
    family may replace with its own solver.
    """

    #: The operations this decoder answers (a subset of the names above).
    capabilities = frozenset()
    #: The kind of outputs it decodes, as estimators name them ("sequence", "multiclass",
    #: "multilabel", "tree", "matching"); None for decoders of several families.
    output_kind = None
    #: The score containers it reads (a class or a tuple of classes); None accepts any.
    #: Every public operation of a built-in decoder checks its scores against them.
    score_types = None
    #: True when :meth:`cost_augmented` scores every output exactly θ_y + Δ(y_true, y)
    #: (no constant per example), so that the margin-rescaled hinge of a
    #: part-decomposable loss is one MAP score (``StructuredHingeLoss.values``).
    exact_cost_augmentation = False
    #: What an example is called in messages ("sequence", "sentence", ...).
    _example_name = "example"
    _parameter_constraints: dict = {}

    def _check_params(self):
        """Validate the hyper-parameters once per parameter state (about 1 µs after the
        first call; ``set_params`` or an assignment is validated at the next operation)."""
        constraints = self._parameter_constraints
        if not constraints:
            return
        attributes = self.__dict__
        seen = _VALIDATED.get(id(self))
        if seen is not None and seen[0] is type(self):
            for name, value in seen[1]:
                if attributes.get(name) is not value:
                    break
            else:
                return
        self._validate_params()
        if len(_VALIDATED) >= 1024:
            _VALIDATED.clear()
        _VALIDATED[id(self)] = (type(self), tuple(
            (name, attributes.get(name)) for name in constraints))

    def _check_scores(self, scores):
        """Raise a ``TypeError`` unless ``scores`` is a container this decoder reads, and
        validate the hyper-parameters; return ``scores``. Called by every public
        operation: a few microseconds at most."""
        types = self.score_types
        if types is not None and not isinstance(scores, types):
            if isinstance(types, type):
                types = (types,)
            expected = " or ".join(t.__name__ for t in types)
            raise TypeError(
                f"{type(self).__name__} takes {expected}; got {type(scores).__name__}."
            )
        self._check_params()
        return scores

    def _unsupported(self, capability):
        raise NotImplementedError(
            f"{type(self).__name__} does not implement {capability!r}; its capabilities are "
            f"{sorted(self.capabilities)}."
        )

    def map(self, scores, *, return_score=False):
        """Highest-scoring output of every example."""
        self._unsupported("map")

    def log_partition(self, scores):
        """log Σ_y exp θ_y for every example."""
        self._unsupported("marginals")

    def marginals(self, scores):
        """Log-partition and expected part indicators of every example."""
        self._unsupported("marginals")

    def top_k(self, scores, k):
        """The ``k`` best distinct outputs of every example."""
        self._unsupported("top_k")

    def loss_augmented_map(self, scores, y_true, task_loss, rescaling="margin"):
        """argmax_y H(θ_y, Δ(y_true, y)) for every example, exactly.

        Margin rescaling maximizes θ_y + Δ(y_true, y); slack rescaling maximizes
        Δ(y_true, y) (1 + θ_y − θ_{y_true}). The default reads the loss's declaration
        (:attr:`~skstruct.losses.TaskLoss.decomposition`) and asks the family's hooks:

        1. a loss that decomposes over parts, under margin rescaling: MAP on
           :meth:`cost_augmented` scores (every family with ``map`` and
           ``cost_augmented``);
        2. a loss that has a count-statistic form for this family and rescaling
           (:meth:`_counting_form`): :meth:`_count_augmented_map`, if the family
           implements it;
        3. the 0/1 loss (``task_loss.zero_one``): :meth:`_zero_one_augmented_map`, the
           better of ``y_true`` and the best other output (needs ``top_k``);
        4. otherwise a ``ValueError`` naming what the decoder supports
           (:meth:`_unsupported_loss`).

        Parameters
        ----------
        scores : score container
        y_true : ndarray
            Encoded gold outputs, stacked like the outputs of :meth:`map`.
        task_loss : TaskLoss or str
        rescaling : {"margin", "slack"} or callable, default="margin"
            A callable ``H(F, stats, example, gold_scores, n_gold)``, non-decreasing in
            F, is accepted by the families whose count hook takes it.

        Returns
        -------
        ndarray, encoded outputs like those of :meth:`map`

        Raises
        ------
        NotImplementedError
            When ``"loss_augmented_map"`` is not among the decoder's ``capabilities``.
        InfeasibleOutputError
            When an example has no output with a finite score.
        ValueError
            When ``y_true`` does not fit the scores, when the decoder has no exact
            solver for the loss and rescaling, or under slack rescaling when ``y_true``
            scores -inf.
        """
        if "loss_augmented_map" not in self.capabilities:
            self._unsupported("loss_augmented_map")
        self._check_scores(scores)
        task_loss = check_task_loss_argument(task_loss)
        y_true = self._check_y_true(scores, y_true)
        if rescaling == "margin" and task_loss.decomposition == "parts":
            return self.map(self._cost_augmented(scores, y_true, task_loss))
        counting = self._counting_form(scores, task_loss, rescaling)
        if counting is not None:
            labels = self._count_augmented_map(scores, y_true, counting, rescaling)
            if labels is not NotImplemented:
                return labels
        if task_loss.zero_one:
            labels = self._zero_one_augmented_map(scores, y_true, rescaling)
            if labels is not NotImplemented:
                return labels
        raise self._unsupported_loss(task_loss, rescaling)

    # Hooks of loss-augmented MAP: a family implements those it can answer exactly.

    def _check_y_true(self, scores, y_true):
        """The gold outputs checked against the scores (the container's own check)."""
        if hasattr(scores, "_check_outputs"):
            return scores._check_outputs(y_true, name="y_true")
        return y_true

    def _counting_form(self, scores, task_loss, rescaling):
        """The count-statistic loss that :meth:`_count_augmented_map` maximizes in place
        of ``task_loss`` (with the same argmax under ``rescaling``), or None.

        The default is the loss itself when it declares ``decomposition = "counts"``.
        Families override it to also read a loss under slack rescaling as counts (chains:
        mismatch counts; multilabel: true and false positives).
        """
        return task_loss if task_loss.decomposition == "counts" else None

    def _count_augmented_map(self, scores, y_true, counting_loss, rescaling):
        """argmax_y H(θ_y, G(y)) for a count-statistic loss, or ``NotImplemented``.

        Parameters
        ----------
        scores : score container
        y_true : ndarray
            Checked gold outputs.
        counting_loss : CountingLoss
        rescaling : {"margin", "slack"} or callable

        Returns
        -------
        ndarray or NotImplemented
            NotImplemented (the default) when the family has no exact solver for it.
        """
        return NotImplemented

    def _zero_one_augmented_map(self, scores, y_true, rescaling):
        """Loss-augmented MAP of the 0/1 loss from the two best outputs.

        Both rescalings prefer the best output y ≠ y_true iff θ_y + 1 > θ_{y_true}
        (ties keep ``y_true``). Needs ``top_k``; ``NotImplemented`` without it or for
        another rescaling.
        """
        if "top_k" not in self.capabilities or rescaling not in ("margin", "slack"):
            return NotImplemented
        if rescaling == "slack":
            self._check_slack_gold(scores, y_true)
        paths, top = self.top_k(scores, 2)
        gold = self.score_outputs(scores, y_true)
        lengths = np.diff(scores.offsets)
        n_examples = lengths.shape[0]
        owner = np.repeat(np.arange(n_examples), lengths)
        first, second = paths[..., 0], paths[..., 1]
        differ = np.bincount(owner, weights=(first != y_true).reshape(-1),
                             minlength=n_examples)
        best_is_gold = differ == 0
        other = np.where(np.repeat(best_is_gold, lengths).reshape(y_true.shape), second, first)
        other_score = np.where(best_is_gold, top[:, 1], top[:, 0])
        keep_gold = gold >= other_score + 1.0
        return np.where(np.repeat(keep_gold, lengths).reshape(y_true.shape), y_true, other)

    def _check_slack_gold(self, scores, y_true):
        """Slack rescaling needs θ_{y_true} > -inf; an infeasible example is reported
        first."""
        gold = self.score_outputs(scores, y_true)
        if np.any(gold == -np.inf):
            self.map(scores)
            check_slack_gold(gold, self._example_name)

    def _unsupported_loss(self, task_loss, rescaling):
        """The ``ValueError`` for a loss and rescaling no hook answers."""
        return no_exact_loss_augmented_map(
            self, task_loss, rescaling,
            "losses that decompose over parts (HammingLoss, or a loss with unary_costs) "
            "under margin rescaling",
            f"For a loss that is a sum over tokens, implement "
            f"{type(task_loss).__name__}.unary_costs(y_true, offsets, n_states) (the cost "
            "of every state of every token, shape (n_tokens, n_states)) and use "
            "rescaling='margin'.",
        )

    def sparsemap(self, scores, *, max_iter=100, tol=1e-9, init=None, **options):
        """SparseMAP: argmax_{μ ∈ M} ηᵀμ − ½‖u‖² for every example.

        The default is the active set
        (:func:`~skstruct.decoders._sparsemap.sparsemap.active_set_sparsemap`), which needs only
        :meth:`map` and :meth:`parts`; a family with a closed form or its own solver
        overrides it. :func:`~skstruct.decoders.sparsemap` and
        :class:`~skstruct.losses.SparseMAPLoss` call this method.

        Parameters
        ----------
        scores : score container
        max_iter : int, default=100
            Most MAP calls per example.
        tol : float, default=1e-9
            Stopping tolerance on the Frank–Wolfe gap.
        init : SparseMAPResult, default=None
            A previous solution on the same examples, to start from its active sets.
        **options
            Further options of the solver (``method``, ``max_inner``: see
            :func:`~skstruct.decoders.sparsemap`).

        Returns
        -------
        SparseMAPResult
        """
        from .._sparsemap.sparsemap import active_set_sparsemap

        return active_set_sparsemap(self, scores, max_iter=max_iter, tol=tol, init=init,
                                    **options)

    def compiled_oracle(self, task_loss, rescaling, y, y_offsets, n_unary=None):
        """This decoder's compiled fast path for per-example solvers, or None.

        A built-in decoder returns a ``CompiledOracle`` (see
        ``skstruct/decoders/_core/engine_protocol.py``) that the compiled per-example engine
        calls for every example, with no Python in its loop; None (the default, and a
        user's decoder) makes the solvers keep their Python loop over examples. A
        built-in decoder offers it only when the decoder keeps the family's operations
        (:func:`keeps_operations`): a subclass that redefines ``map``, ``parts`` or a
        loss-augmented MAP hook gets the Python loop, which calls them.

        Parameters
        ----------
        task_loss : TaskLoss
        rescaling : None, "margin" or "slack"
            None for plain MAP (the perceptron).
        y : ndarray
            Encoded gold outputs of the training set, stacked.
        y_offsets : ndarray of shape (n_examples + 1,)
            Example ``i`` owns ``y[y_offsets[i]:y_offsets[i + 1]]``.
        n_unary : int, default=None
            K, the unary scores of a feature row the oracle will be called with (the
            ``n_unary`` of the feature map's ``CompiledFeatures``), when the caller knows
            it: a family whose task-loss costs depend on it (a chain's states) reads it.

        Returns
        -------
        CompiledOracle or None
        """
        return None

    def shared_pair_parts(self, classes):
        """The parts this decoder scores beyond one per label, shared by every example,
        or None (the default).

        A decoder of multilabel outputs that scores pairs of labels (a factor graph's
        PAIR factors) asks for a feature map that learns one score per such part
        (:func:`~skstruct.features.decoder_feature_map`).

        Parameters
        ----------
        classes : ndarray or None
            The labels, one per variable.

        Returns
        -------
        dict or None
            ``n_pairs`` (the pair scores), ``n_extra`` (further shared scores) and
            ``scores_type`` (the container, built as ``scores_type(unary, pair,
            extra)``).
        """
        return None

    def shared_pair_map(self):
        """MAP of unary scores with pair scores shared by every example, as whole-batch
        arrays, or None (the default).

        Returns
        -------
        callable or None
            ``map_shared(unary, coupling, warm_start=None, relaxed=False)``, used by the
            cutting plane's batched constraints with a feature map that offers the
            shared pair layout (:meth:`~skstruct.features.FeatureMap.shared_pair_layout`).
        """
        return None

    def fused_crf_constraints(self, n_states):
        """What a fused chain CRF objective must apply to compute what this decoder
        computes, or NotImplemented.

        A chain feature map evaluates the CRF log-likelihood in compiled passes of the
        rescaled forward-backward when the decoder computes exactly that (see
        :meth:`~skstruct.features.LinearChainFeatures.compiled_objective`).

        Parameters
        ----------
        n_states : int
            The number of states of the feature map.

        Returns
        -------
        None, tuple of ndarray or NotImplemented
            None when every label sequence is allowed; the boolean masks
            ``(transition, start, end)`` of the allowed transitions, first and last
            states; NotImplemented (the default) when the decoder has no such form.
        """
        return NotImplemented

    def parts(self, scores, y):
        """Part indicators a_y of the outputs ``y`` (laid out like ``scores``)."""
        self._unsupported("parts")

    def sample_uniform(self, scores, n_draws, random_state=None):
        """Independent draws from the uniform distribution over the valid outputs.

        The valid outputs Y(x) of an example are those of finite score: a part scored
        -inf forbids the outputs that contain it; the values of the finite scores do not
        matter. Every draw is y ~ Uniform(Y(x)), independently of the others.

        Parameters
        ----------
        scores : score container
        n_draws : int >= 1
            Draws per example.
        random_state : None, int, numpy.random.Generator or numpy.random.RandomState
            Turned into a ``numpy.random.Generator`` by ``numpy.random.default_rng`` (a
            RandomState gives it one seed; see
            :func:`skstruct.decoders._core.sampling.check_random_state`). All random numbers
            are drawn from it before the compiled kernels run, so the same seed gives
            the same draws whatever the number of threads.

        Returns
        -------
        paths : ndarray, int64
            Laid out like the paths of :meth:`top_k`: the encoded outputs stacked as
            :meth:`map` returns them, with a trailing axis of length ``n_draws`` (chains
            and trees: (n_tokens, n_draws); multilabel: (n_samples, n_labels, n_draws)).

        Raises
        ------
        NotImplementedError
            When ``"sample_uniform"`` is not among the decoder's ``capabilities``.
        InfeasibleOutputError
            When an example has no valid output.
        """
        self._unsupported("sample_uniform")

    def neighbours(self, scores, y, k=1):
        """The valid outputs at Hamming distance 1 .. k from the outputs ``y``.

        The Hamming distance counts the positions of the encoded output whose value
        differs (tokens whose label differs, labels that differ, tokens whose head
        differs). A neighbour must be valid (of finite score, and an output of the
        decoder under its options); ``y`` itself need not be. The order is
        deterministic: distance 1 first, then 2, ... k; within one distance, the sets of
        changed positions in lexicographic order, then the new values in lexicographic
        order (:mod:`skstruct.decoders._core.sampling`).

        Parameters
        ----------
        scores : score container
        y : ndarray
            Encoded outputs, stacked like the outputs of :meth:`map`; checked like the
            ``y_true`` of :meth:`loss_augmented_map`.
        k : int >= 1, default=1

        Returns
        -------
        paths : ndarray, int64
            Laid out like the paths of :meth:`top_k`, with a trailing axis of length
            ``max(counts)``: column r of example i is its r-th neighbour for
            r < counts[i], -1 beyond.
        counts : ndarray of shape (n_examples,), int64
            The number of neighbours of every example.

        Raises
        ------
        NotImplementedError
            When ``"neighbours"`` is not among the decoder's ``capabilities``.
        ValueError
            When ``y`` does not fit the scores, or when a neighbourhood would be too
            large to enumerate (see :data:`skstruct.decoders._core.sampling.MAX_NEIGHBOUR_CANDIDATES`).
        """
        self._unsupported("neighbours")

    def score_outputs(self, scores, y):
        """Scores θ_y = ⟨η, a_y⟩ of the outputs ``y``, one per example."""
        return self.parts(scores, y).dot(scores)

    def bind_classes(self, classes):
        """This decoder for the states ``classes`` (the labels of a fitted model, in
        state order, or None): ``self`` by default; a decoder that reads class names
        (the chain decoder's constraints given by tag names) returns a bound copy.
        Estimators call it at ``fit`` (the fitted ``decoder_`` holds the result)."""
        return self

    def for_gradients(self, tol):
        """This decoder for a gradient-based fit stopped at ``tol`` on the gradient:
        ``self`` by default. A decoder whose solutions are iterative (the factor graph's
        ADMM) returns a copy solved tightly enough that the gradients it gives are
        accurate well below ``tol``; estimators that train on such gradients
        (:class:`~skstruct.SparseMAPClassifier`) train with it."""
        return self

    def check_training_memory(self, n_examples, solver=None, loss=None, n_features=None):
        """Raise a :class:`MemoryError` when training on ``n_examples`` of
        ``n_features`` features (or None) with ``solver`` (the estimator's, or None) and
        the training ``loss`` (or None) would need more memory than the decoder's limit
        allows; estimators call it before building anything of a fit. The base class has
        no limit (decoders whose memory grows with the batch, as the factor graph's
        ADMM, estimate it)."""

    def check_outputs(self, y, offsets):
        """Raise a clear ``ValueError`` if the encoded outputs ``y`` (stacked over
        ``offsets``) are not outputs this decoder can produce; estimators call it on the
        gold outputs before training. The base class accepts every output."""

    def cost_augmented(self, scores, y_true, task_loss):
        """Scores η + c with ⟨c, a_y⟩ = Δ(y_true, y) up to a constant per example.

        For a task loss that decomposes over the unary parts (Hamming), the cost-augmented
        scores turn MAP into margin-rescaled loss-augmented MAP and marginals into
        softmax-margin marginals. The per-example constant does not change any maximizer
        or any loss that also scores the gold output with the augmented scores (it is
        zero for the decoders that declare ``exact_cost_augmentation``).

        Parameters
        ----------
        scores : score container
        y_true : ndarray
            Encoded gold outputs.
        task_loss : TaskLoss
            Must decompose over parts (``decomposition = "parts"``: it provides
            ``unary_costs(y_true, offsets, n_states)``).

        Returns
        -------
        score container, like ``scores``
        """
        self._check_scores(scores)
        task_loss = check_task_loss_argument(task_loss)
        return self._cost_augmented(scores, self._check_y_true(scores, y_true), task_loss)

    def _cost_augmented(self, scores, y_true, task_loss):
        """:meth:`cost_augmented` on checked gold outputs: the unary costs of the loss
        added to the unary scores, which the family's containers lay out one row per
        token with one column per state. Families with another layout override it."""
        if task_loss.decomposition != "parts":
            raise ValueError(
                f"{type(self).__name__} can add a task loss to the scores only when it "
                f"decomposes over tokens (such as HammingLoss); {type(task_loss).__name__} "
                "does not: implement its unary_costs(y_true, offsets, n_states), the cost "
                "of every state of every token."
            )
        costs = task_loss.unary_costs(np.ravel(y_true), scores.offsets, scores.n_states)
        check_task_loss_values(costs, task_loss, "unary_costs")
        return scores.replace(unary=scores.unary + np.reshape(costs, scores.unary.shape))
