"""Independent binary labels: score and part containers and the multilabel decoder."""

import numpy as np

from ...losses._base import check_task_loss_values
from ...utils._chunks import even_chunks, weighted_chunks
from ...utils._parallel import dynamic_schedule, threads_for
from . import kernels
from .._core.decoder import Decoder
from .._core.checks import (
    check_encoded_outputs,
    check_k,
    check_slack_gold,
    keeps_operations,
    no_exact_loss_augmented_map,
)
from .._core.sampling import (
    check_n_draws,
    check_neighbour_entries,
    check_neighbourhood_size,
    check_random_state,
)
from .._core.unary import UnaryParts, UnaryScores, _products
from .._core.statistic_table import StatisticTable, _check_monotone

__all__ = ["MultilabelScores", "MultilabelParts", "MultilabelDecoder"]


class MultilabelScores(UnaryScores):
    """Part scores η of a batch of multilabel examples with independent binary labels.

    The score of a 0/1 vector y of example ``i`` is θ_y = Σ_j unary[i, j] y_j: a label
    that is off scores 0.

    Parameters
    ----------
    unary : ndarray of shape (n_samples, n_labels)

    Examples
    --------
    >>> import numpy as np
    >>> from skstruct.decoders import MultilabelScores
    >>> scores = MultilabelScores(np.array([[1., -2., 0.5]]))
    >>> scores.n_examples, scores.n_labels
    (1, 3)
    """

    _output_name = "n_labels"

    @property
    def n_labels(self):
        """Number of binary labels of every example."""
        return self.unary.shape[1]

    @property
    def offsets(self):
        """Example ``i`` is the binary "sequence" ``offsets[i]:offsets[i + 1]`` of labels.

        Lets task losses, which work on stacked tokens, evaluate raveled 0/1 outputs with
        states 0 (off) and 1 (on).
        """
        return np.arange(self.n_examples + 1) * self.n_labels

    def _check_outputs(self, y, name="y"):
        """0/1 indicators ``y`` (n_samples, n_labels) checked against the batch, as int64."""
        return _check_indicators(y, self, name)


class MultilabelParts(UnaryParts):
    """Part vectors of a batch of multilabel examples: indicators or p(y_j = 1).

    Parameters
    ----------
    unary : ndarray of shape (n_samples, n_labels)

    Examples
    --------
    >>> import numpy as np
    >>> from skstruct.decoders import MultilabelParts, MultilabelScores
    >>> parts = MultilabelParts(np.array([[1., 0., 1.]]))
    >>> parts.dot(MultilabelScores(np.array([[1., -2., 0.5]])))
    array([1.5])
    """


def _check_indicators(y, scores, name="y"):
    """Validate a 0/1 indicator matrix (n_samples, n_labels); floats 0. and 1. accepted."""
    return check_encoded_outputs(
        y, scores.offsets, 1, shape=scores.unary.shape, name=name, unit="label",
        expected="0 or 1 (a 0/1 indicator matrix)", whole_floats=True,
    )


def _scores_of(unary, y):
    """θ_y = Σ_j unary[i, j] y[i, j] per example; a label scored -inf that is off adds 0."""
    return _products(y, unary).sum(axis=1)


def _count_grid(n_gold, n_labels):
    """Every (TP, FP) of examples with ``n_gold`` gold positives among ``n_labels`` labels.

    Parameters
    ----------
    n_gold : ndarray of shape (n_grids,), int
    n_labels : int

    Returns
    -------
    tp, fp, owner : ndarray of shape (n_rows,), int64
        Grid ``k`` is rows ``offsets[k]:offsets[k + 1]`` (``owner == k``), TP-major with
        TP in 0 .. n_gold[k] and FP in 0 .. n_labels − n_gold[k].
    offsets : ndarray of shape (n_grids + 1,), int64
    """
    width = n_labels - n_gold + 1
    sizes = (n_gold + 1) * width
    offsets = np.concatenate(([0], np.cumsum(sizes)))
    owner = np.repeat(np.arange(len(n_gold)), sizes)
    tp, fp = np.divmod(np.arange(offsets[-1]) - offsets[owner], width[owner])
    return tp, fp, owner, offsets


#: The count statistics that are functions of (TP, FP) and N* for binary labels.
_STATISTICS = frozenset({"tp", "fp", "pos", "err"})


def _statistics(names, tp, fp, n_gold):
    """The statistics ``names`` of vectors with TP = tp and FP = fp, shape (n_rows, K)."""
    counts = {"tp": tp, "fp": fp, "pos": tp + fp, "err": fp + n_gold - tp}
    return np.stack([counts[name] for name in names], axis=-1)


def _count_loss_augmented_map(scores, y_true, task_loss, rescaling):
    """argmax_y H(θ_y, G(y)) for a loss of statistics G among ``_STATISTICS``.

    The best vector with (TP, FP) = (a, b) scores μ(a, b) = P[a] + Q[b] (see
    :mod:`skstruct.decoders._tabular.kernels`), so the kernel maximizes H(μ(a, b), G(a, b)) over the
    grid of (a, b). Margin and slack rescaling read Δ from one grid per distinct N*; a
    callable H is evaluated on the grid of every example.
    """
    n_labels = scores.n_labels
    n_gold = y_true.sum(axis=1)
    gold = _scores_of(scores.unary, y_true)
    if rescaling == "slack":
        check_slack_gold(gold)
    names = task_loss.statistic_names
    # -inf, then the scores of the gold positives (of the gold negatives) in increasing order
    ranked = np.where(np.stack((y_true == 1, y_true == 0)), scores.unary, -np.inf)
    ranked.sort(axis=2)
    if rescaling in ("margin", "slack"):
        present = np.unique(n_gold)
        tp, fp, owner, offsets = _count_grid(present, n_labels)
        table = task_loss.eta(_statistics(names, tp, fp, present[owner]), present[owner])
        table_start = np.zeros(n_labels + 1, dtype=np.int64)
        table_start[present] = offsets[:-1]
        table_start = table_start[n_gold]
        mode = kernels.MARGIN if rescaling == "margin" else kernels.SLACK
    elif callable(rescaling):
        tp, fp, owner, offsets = _count_grid(n_gold, n_labels)
        prefix = np.zeros((2, scores.n_examples, n_labels + 1))
        np.cumsum(ranked[..., ::-1], axis=2, out=prefix[..., 1:])
        F = prefix[0, owner, tp] + prefix[1, owner, fp]
        stats = _statistics(names, tp, fp, n_gold[owner])
        _check_monotone(rescaling, StatisticTable(F, stats, owner, offsets), gold, n_gold)
        table = rescaling(F, stats, owner, gold, n_gold)
        table_start, mode = offsets[:-1], kernels.GIVEN
    else:
        raise ValueError(f"rescaling must be 'margin', 'slack' or a callable; got {rescaling!r}.")
    # work of every example: its labels and its (TP, FP) grid
    work = np.zeros(scores.n_examples + 1, dtype=np.int64)
    np.cumsum(n_labels + (n_gold + 1) * (n_labels - n_gold + 1), out=work[1:])
    with threads_for(work[-1]), dynamic_schedule():
        return kernels.count_loss_augmented_map(
            scores.unary, y_true, ranked, np.asarray(table, dtype=np.float64), table_start,
            mode, gold, weighted_chunks(work),
        )


class MultilabelDecoder(Decoder):
    """Exact inference for independent binary labels (multilabel classification).

    MAP turns on the labels with positive score (an "off" label scores 0, so every
    example has a feasible output: a label scored -inf is off); the log-partition is
    Σ_j log(1 + exp unary[i, j]) and the marginals p(y_j = 1) are the sigmoids of the
    scores. The ``k`` best vectors flip the labels of the MAP vector in order of
    increasing flip cost (the absolute unary score) (a compiled heap enumeration). Loss-augmented MAP is exact
    for the Hamming and 0/1 losses and for every count-statistic loss (F_β, precision,
    recall, IoU, label count, where a label that is on is a positive), with margin or
    slack rescaling: such a loss is a function of (TP, FP), and the best vector with
    TP = a and FP = b turns on the a best gold positives and the b best gold negatives, so
    a compiled kernel maximizes over the grid of (a, b).

    Notes
    -----
    Time per example with L labels of which N* are gold positives: O(L) for MAP and
    marginals, O(L log L + k log k + k L) for the ``k`` best, O(L log L + N* (L − N*)) for
    count-statistic losses and for the Hamming loss under slack rescaling.

    Examples
    --------
    >>> import numpy as np
    >>> from skstruct.decoders import MultilabelDecoder, MultilabelScores
    >>> scores = MultilabelScores(np.array([[1., -2., 0.5]]))
    >>> MultilabelDecoder().map(scores)
    array([[1, 0, 1]])
    >>> paths, top = MultilabelDecoder().top_k(scores, 3)
    >>> paths[0].T
    array([[1, 0, 1],
           [1, 0, 0],
           [0, 0, 1]])
    >>> top
    array([[1.5, 1. , 0.5]])
    """

    output_kind = "multilabel"
    capabilities = frozenset({"map", "marginals", "top_k", "loss_augmented_map", "parts",
                              "sample_uniform", "neighbours"})
    score_types = MultilabelScores

    def map(self, scores, *, return_score=False):
        """The best 0/1 vector of every example: the labels with positive score.

        Parameters
        ----------
        scores : MultilabelScores
        return_score : bool, default=False

        Returns
        -------
        labels : ndarray of shape (n_samples, n_labels), int64
        best : ndarray of shape (n_samples,)
            Their scores, when ``return_score`` is True.
        """
        self._check_scores(scores)
        labels = (scores.unary > 0).astype(np.int64)
        if return_score:
            return labels, np.maximum(scores.unary, 0.0).sum(axis=1)
        return labels

    def log_partition(self, scores):
        """Σ_j log(1 + exp unary[i, j]) of every example, shape (n_samples,)."""
        return self.marginals(scores)[0]

    def marginals(self, scores):
        """Log-partition and label marginals, by one compiled pass over the scores
        (:func:`~skstruct.decoders._tabular.kernels.logistic_rows`).

        Returns
        -------
        log_z : ndarray of shape (n_samples,)
        marginals : MultilabelParts
            p(y_j = 1), the sigmoid of the scores, shape (n_samples, n_labels); the gradient
            of ``log_z``.
        """
        self._check_scores(scores)
        log_z, probabilities = kernels.logistic_rows(
            np.ascontiguousarray(scores.unary, dtype=np.float64))
        return log_z, MultilabelParts(probabilities)

    def top_k(self, scores, k):
        """The ``k`` best distinct 0/1 vectors of every example.

        Parameters
        ----------
        scores : MultilabelScores
        k : int >= 1

        Returns
        -------
        paths : ndarray of shape (n_samples, n_labels, k), int64
            ``paths[:, :, r]`` holds the ``r``-th best vectors; -1 where an example has
            fewer than ``r + 1`` of finite score (beyond 2 ** n_labels, or because a
            label scored -inf is never turned on).
        path_scores : ndarray of shape (n_samples, k)
            Non-increasing along each row; -inf where fewer exist.
        """
        self._check_scores(scores)
        k = check_k(k)
        work = scores.unary.size * (k + np.log2(scores.n_labels + 1))
        bounds = even_chunks(scores.n_examples, work)
        with threads_for(work), dynamic_schedule():
            return kernels.top_k_binary(scores.unary, k, bounds)

    def sample_uniform(self, scores, n_draws, random_state=None):
        """Independent uniform draws from the 0/1 vectors of finite score.

        Every label is an independent fair coin, except the labels scored -inf, which
        are always off (the all-off vector is always valid, so no example is
        infeasible).

        Parameters
        ----------
        scores : MultilabelScores
        n_draws : int >= 1
        random_state : None, int, numpy.random.Generator or numpy.random.RandomState
            Turned into a Generator by ``numpy.random.default_rng``.

        Returns
        -------
        paths : ndarray of shape (n_samples, n_labels, n_draws), int64
            ``paths[:, :, d]`` holds the d-th draw of every example.

        Examples
        --------
        >>> import numpy as np
        >>> from skstruct.decoders import MultilabelDecoder, MultilabelScores
        >>> scores = MultilabelScores(np.array([[1., -np.inf, 0.5]]))
        >>> paths = MultilabelDecoder().sample_uniform(scores, 1000, random_state=0)
        >>> paths.shape, paths[0, 1].max(), paths[0, [0, 2]].mean().round(1)
        ((1, 3, 1000), np.int64(0), np.float64(0.5))
        """
        self._check_scores(scores)
        n_draws = check_n_draws(n_draws)
        rng = check_random_state(random_state)
        coins = rng.integers(0, 2, size=scores.unary.shape + (n_draws,), dtype=np.int64)
        coins[scores.unary == -np.inf] = 0
        return coins

    def neighbours(self, scores, y, k=1):
        """The 0/1 vectors of finite score at Hamming distance 1 .. k from ``y``.

        A neighbour flips between 1 and k labels (Σ_{j ≤ k} C(L, j) candidates) and is
        kept unless it turns on a label scored -inf. Order: one flip first; within one
        number of flips, the sets of flipped labels in lexicographic order. O(k) per
        candidate.

        Parameters
        ----------
        scores : MultilabelScores
        y : ndarray of shape (n_samples, n_labels)
            0/1 indicators (checked like ``y_true``).
        k : int >= 1, default=1

        Returns
        -------
        paths : ndarray of shape (n_samples, n_labels, max(counts)), int64
            ``paths[:, :, r]`` holds the r-th neighbour of every example; -1 past its
            count.
        counts : ndarray of shape (n_samples,), int64

        Examples
        --------
        >>> import numpy as np
        >>> from skstruct.decoders import MultilabelDecoder, MultilabelScores
        >>> scores = MultilabelScores(np.array([[1., -np.inf, 0.5]]))
        >>> paths, counts = MultilabelDecoder().neighbours(scores, np.array([[1, 0, 0]]))
        >>> paths[0].T, counts
        (array([[0, 0, 0],
               [1, 0, 1]]), array([2]))
        """
        self._check_scores(scores)
        k = check_k(k)
        y = self._check_y_true(scores, y)
        n_samples, n_labels = scores.unary.shape
        check_neighbourhood_size(np.full(n_samples, n_labels), np.full(n_samples, 2), k)
        counts = np.zeros(n_samples, dtype=np.int64)
        work = scores.unary.size * k
        bounds = even_chunks(n_samples, work)
        with threads_for(work), dynamic_schedule():
            kernels.neighbours(scores.unary, y, k, np.empty((0, 0, 0), dtype=np.int64),
                               counts, False, bounds)
            check_neighbour_entries(y.size, counts)
            width = int(counts.max()) if counts.size else 0
            paths = np.full((n_samples, n_labels, width), -1, dtype=np.int64)
            kernels.neighbours(scores.unary, y, k, paths, counts, True, bounds)
        return paths, counts

    def neighbour_differences(self, scores, y, k=1, max_entries=None):
        """The part differences a_{y'} − a_y of every neighbour y' of :meth:`neighbours`,
        without listing the neighbours, or None where this is not offered (k > 1, or a
        subclass that changes :meth:`neighbours` or :meth:`parts`).

        Flipping label j changes one part, by 1 − 2 y_j: O(L) per example instead of the
        O(L²) of listing every neighbour as a vector.

        Parameters
        ----------
        scores : MultilabelScores
        y : ndarray of shape (n_samples, n_labels)
            0/1 indicators (checked like ``y_true``).
        k : int >= 1, default=1
        max_entries : int or None, default=None
            Raise ``MemoryError`` before allocating more entries than this.

        Returns
        -------
        None, or a tuple (counts, positions, entries)
            ``counts`` (n_samples,): the neighbours of every example; ``positions`` (sum
            of counts,): the label each flips (rows in the order of :meth:`neighbours`);
            ``entries``: ``{"unary": (rows, flat, values)}``, the row of the neighbour,
            the flat index into the batch's unary parts and the difference.

        Examples
        --------
        >>> import numpy as np
        >>> from skstruct.decoders import MultilabelDecoder, MultilabelScores
        >>> scores = MultilabelScores(np.array([[1., -np.inf, 0.5]]))
        >>> counts, positions, entries = MultilabelDecoder().neighbour_differences(
        ...     scores, np.array([[1, 0, 0]]))
        >>> counts, positions, entries["unary"][2]
        (array([2]), array([0, 2]), array([-1.,  1.]))
        """
        self._check_scores(scores)
        k = check_k(k)
        if k > 1 or not keeps_operations(self, MultilabelDecoder, ("neighbours", "parts")):
            return None
        y = self._check_y_true(scores, y)
        valid = (y != 0) | (scores.unary != -np.inf)
        n_rows = int(np.count_nonzero(valid))
        if max_entries is not None and n_rows > max_entries:
            raise MemoryError(
                f"the neighbours' part differences have {n_rows:,} entries, more than the "
                f"limit of {int(max_entries):,}.")
        flat = np.flatnonzero(valid)
        counts = valid.sum(axis=1).astype(np.int64)
        values = 1.0 - 2.0 * np.ravel(y)[flat]
        positions = flat % scores.unary.shape[1]
        return counts, positions, {"unary": (np.arange(n_rows), flat, values)}

    def loss_augmented_map(self, scores, y_true, task_loss, rescaling="margin"):
        """argmax_y H(θ_y, Δ(y_true, y)) for every example, exactly.

        Margin rescaling maximizes θ_y + Δ(y_true, y); slack rescaling maximizes
        Δ(y_true, y) (1 + θ_y − θ_{y_true}). Losses that decompose over parts (Hamming)
        under margin rescaling add their per-label costs to the scores; the 0/1 loss
        compares the gold vector with the best other vector (top-2); count-statistic
        losses, and under slack rescaling the losses with a (TP, FP) form
        (:meth:`~skstruct.losses.TaskLoss.binary_counts`: Hamming), maximize over the
        grid of (TP, FP).

        Parameters
        ----------
        scores : MultilabelScores
        y_true : ndarray of shape (n_samples, n_labels)
            Gold 0/1 indicators.
        task_loss : TaskLoss
            A multilabel output is scored as a sequence of n_labels binary states; for a
            count-statistic loss (statistics among "tp", "fp", "pos", "err") a label that
            is on is a positive, whatever the loss is bound to.
        rescaling : {"margin", "slack"} or callable, default="margin"
            A callable ``H(F, stats, example, gold_scores, n_gold)``, non-decreasing in F,
            is accepted for count-statistic losses (see
            :meth:`ChainDecoder.loss_augmented_map`); it is evaluated on every (TP, FP)
            of every example.

        Returns
        -------
        ndarray of shape (n_samples, n_labels), int64
        """
        return super().loss_augmented_map(scores, y_true, task_loss, rescaling)

    def _counting_form(self, scores, task_loss, rescaling):
        """A count-statistic loss, or under slack rescaling the (TP, FP) form of the
        loss on binary labels (:meth:`~skstruct.losses.TaskLoss.binary_counts`:
        Hamming)."""
        counting = super()._counting_form(scores, task_loss, rescaling)
        if counting is None and rescaling == "slack":
            counting = task_loss.binary_counts(scores.n_labels)
        return counting

    def _count_augmented_map(self, scores, y_true, counting_loss, rescaling):
        """The maximum over the grid of (TP, FP), for statistics among "tp", "fp",
        "pos", "err"; ``NotImplemented`` for others."""
        if not _STATISTICS.issuperset(counting_loss.statistic_names):
            return NotImplemented
        return _count_loss_augmented_map(scores, y_true, counting_loss, rescaling)

    def _unsupported_loss(self, task_loss, rescaling):
        return no_exact_loss_augmented_map(
            self, task_loss, rescaling,
            "losses with per-label costs (HammingLoss, or a loss with unary_costs) under "
            "margin rescaling, HammingLoss and ZeroOneLoss under either rescaling, and "
            "count-statistic losses (CountingLoss) of the statistics 'tp', 'fp', 'pos', "
            "'err' under either rescaling",
            f"For a loss that is a sum over labels, implement "
            f"{type(task_loss).__name__}.unary_costs(y_true, offsets, n_states) (with "
            "n_states=2: the cost of off and of on for every label, shape "
            "(n_samples * n_labels, 2)) and use rescaling='margin'; for a function of "
            "(TP, FP), subclass CountingLoss.",
        )

    def sparsemap(self, scores, *, max_iter=100, tol=1e-9, init=None, **options):
        """SparseMAP in closed form: the scores clipped to [0, 1] (independent labels),
        written as a sparse combination of 0/1 vectors, with the same result and options
        as :meth:`Decoder.sparsemap`."""
        if not keeps_operations(self, MultilabelDecoder, ("map", "parts")):
            # the closed form holds for this family's 0/1 indicator parts and MAP; a subclass that
            # redefines them gets the active set, which reads them
            return super().sparsemap(scores, max_iter=max_iter, tol=tol, init=init,
                                     **options)
        from .._sparsemap.sparsemap import clip_sparsemap

        return clip_sparsemap(self, scores, max_iter=max_iter, tol=tol, init=init, **options)

    def compiled_oracle(self, task_loss, rescaling, y, y_offsets, n_unary=None):
        """The compiled per-example oracle of multilabel outputs (see
        :meth:`Decoder.compiled_oracle`)."""
        if not keeps_operations(self, MultilabelDecoder):
            return None
        from .oracle import compiled_multilabel_oracle

        return compiled_multilabel_oracle(self, task_loss, rescaling, y, y_offsets)

    def parts(self, scores, y):
        """Indicator parts of the 0/1 vectors ``y`` (n_samples, n_labels)."""
        self._check_scores(scores)
        return MultilabelParts(_check_indicators(y, scores).astype(np.float64))

    def cost_augmented(self, scores, y_true, task_loss):
        """Scores η + c with Σ_j c_j y_j = Δ(y_true, y) up to a constant per example.

        A label is a binary token (states off, on): c is the cost of "on" minus the cost
        of "off" of every label, for task losses that decompose over labels (Hamming).
        """
        return super().cost_augmented(scores, y_true, task_loss)

    def _cost_augmented(self, scores, y_true, task_loss):
        if task_loss.decomposition != "parts":
            return super()._cost_augmented(scores, y_true, task_loss)
        costs = task_loss.unary_costs(y_true.ravel(), scores.offsets, 2)
        check_task_loss_values(costs, task_loss, "unary_costs")
        on_minus_off = (costs[:, 1] - costs[:, 0]).reshape(scores.unary.shape)
        return scores.replace(unary=scores.unary + on_minus_off)

    def score_outputs(self, scores, y):
        """θ_y = Σ_j unary[i, j] y[i, j] of every example, shape (n_samples,).

        -inf for a vector that turns on a label scored -inf.
        """
        self._check_scores(scores)
        return _scores_of(scores.unary, _check_indicators(y, scores))
