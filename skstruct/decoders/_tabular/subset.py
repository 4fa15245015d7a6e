"""Subsets of exactly k labels: the k-subset decoder (scores: :class:`MultilabelScores`)."""

import itertools
from math import comb
from numbers import Integral

import numpy as np
from sklearn.utils._param_validation import Interval

from ...losses._base import check_task_loss_values
from ...utils._parallel import threads_for
from . import subset_kernels as kernels
from .._core.decoder import Decoder
from .._core.checks import (
    check_encoded_outputs,
    check_feasible,
    check_k,
    no_exact_loss_augmented_map,
)
from .._core.sampling import (
    MAX_NEIGHBOUR_CANDIDATES,
    check_neighbour_entries,
    check_random_state,
)
from .multilabel import MultilabelParts, MultilabelScores, _check_indicators, _scores_of

__all__ = ["SubsetDecoder"]



class SubsetDecoder(Decoder):
    """Exact inference over the subsets of exactly ``k`` labels.

    An example has L labels with scores unary[j] (:class:`MultilabelScores`); its outputs
    are the 0/1 vectors y with Σ_j y_j = k, scored θ_y = Σ_j unary[j] y_j. A label scored
    -inf is never on; an example with fewer than ``k`` labels of finite score has no
    feasible output.

    MAP turns on the ``k`` best labels. The log-partition is log e_k(exp unary), the
    elementary symmetric polynomial of degree k, by a compiled dynamic programme over the
    labels in log space; the marginals p(y_j = 1) combine it with the same programme run
    from the right (:mod:`skstruct.decoders._tabular.subset_kernels`). The ``K`` best subsets come from a
    best-first search over moves of the sorted positions of the labels that are on: every
    subset is reached by exactly one sequence of moves, and no move raises the score.
    Loss-augmented MAP is exact for losses with per-label costs (Hamming) under margin
    rescaling (MAP on :meth:`cost_augmented` scores) and for the 0/1 loss (top-2).

    Parameters
    ----------
    k : int >= 1, default=1
        The number of labels that are on; at most the number of labels of the scores
        (checked at every operation).

    Notes
    -----
    Encoded outputs are 0/1 indicator matrices (n_samples, n_labels), like those of
    :class:`MultilabelDecoder`; the Hamming distance between two outputs is even (2 j for
    j labels swapped in and out). Time per example with L labels: O(L log L) for MAP,
    O(L k) for the log-partition and the marginals, O(L log L + K (k + log K)) for the
    ``K`` best, O(L n_draws) for uniform samples, and O(L C(k, j) C(L − k, j)) for the
    neighbours j swaps away.

    Examples
    --------
    >>> import numpy as np
    >>> from skstruct.decoders import MultilabelScores, SubsetDecoder
    >>> scores = MultilabelScores(np.array([[1., -2., 0.5, 3.]]))
    >>> SubsetDecoder(k=2).map(scores, return_score=True)
    (array([[1, 0, 0, 1]]), array([4.]))
    >>> paths, top = SubsetDecoder(k=2).top_k(scores, 3)
    >>> paths[0].T
    array([[1, 0, 0, 1],
           [0, 0, 1, 1],
           [1, 0, 1, 0]])
    >>> top
    array([[4. , 3.5, 1.5]])
    """

    output_kind = "multilabel"
    capabilities = frozenset({"map", "marginals", "top_k", "loss_augmented_map", "parts",
                              "sample_uniform", "neighbours"})
    score_types = MultilabelScores
    _parameter_constraints: dict = {"k": [Interval(Integral, 1, None, closed="left")]}

    def __init__(self, k=1):
        self.k = k

    def _check_scores(self, scores):
        """The checks of :meth:`Decoder._check_scores`, then ``k <= n_labels``."""
        super()._check_scores(scores)
        if self.k > scores.n_labels:
            raise ValueError(
                f"SubsetDecoder(k={self.k}) turns on {self.k} labels, but the scores have "
                f"only {scores.n_labels}; use k <= n_labels."
            )
        return scores

    def _check_subsets(self, y, scores, name="y"):
        """0/1 indicators (n_samples, n_labels) with exactly k ones per row, as int64."""
        y = _check_indicators(y, scores, name)
        self._check_counts(y, name)
        return y

    def _check_counts(self, y, name="y"):
        counts = y.sum(axis=1)
        bad = np.flatnonzero(counts != self.k)
        if bad.size:
            raise ValueError(
                f"{name}[{bad[0]}] has {counts[bad[0]]} labels on; SubsetDecoder(k={self.k}) "
                f"outputs have exactly {self.k} ({bad.size} row(s) differ)."
            )

    def _check_y_true(self, scores, y_true):
        return self._check_subsets(y_true, scores, "y_true")

    def map(self, scores, *, return_score=False):
        """The best subset of every example: its ``k`` best labels (ties: the smaller
        label index first).

        Parameters
        ----------
        scores : MultilabelScores
        return_score : bool, default=False

        Returns
        -------
        labels : ndarray of shape (n_samples, n_labels), int64
        best : ndarray of shape (n_samples,)
            Their scores, when ``return_score`` is True.

        Raises
        ------
        InfeasibleOutputError
            When an example has fewer than ``k`` labels of finite score.
        """
        self._check_scores(scores)
        unary = scores.unary
        chosen = np.argsort(-unary, axis=1, kind="stable")[:, : self.k]
        best = np.take_along_axis(unary, chosen, axis=1).sum(axis=1)
        check_feasible(best)
        labels = np.zeros(unary.shape, dtype=np.int64)
        np.put_along_axis(labels, chosen, 1, axis=1)
        return (labels, best) if return_score else labels

    def log_partition(self, scores):
        """log Σ_{y: Σ_j y_j = k} exp θ_y = log e_k(exp unary[i]) of every example.

        Returns
        -------
        ndarray of shape (n_samples,)
            -inf for an example with fewer than ``k`` labels of finite score.
        """
        self._check_scores(scores)
        with threads_for(scores.unary.size * self.k):
            return kernels.log_partition(scores.unary, self.k, False)[0]

    def marginals(self, scores):
        """Log-partition and label marginals.

        Returns
        -------
        log_z : ndarray of shape (n_samples,)
        marginals : MultilabelParts
            p(y_j = 1), shape (n_samples, n_labels); every row sums to ``k``. They are the
            gradient of ``log_z``.

        Raises
        ------
        InfeasibleOutputError
            When an example has fewer than ``k`` labels of finite score.
        """
        self._check_scores(scores)
        with threads_for(2 * scores.unary.size * self.k):
            log_z, marginals = kernels.log_partition(scores.unary, self.k, True)
        check_feasible(log_z)
        return log_z, MultilabelParts(marginals)

    def top_k(self, scores, k):
        """The ``k`` best distinct subsets of every example (``k`` here counts subsets;
        the subsets have ``self.k`` labels).

        Parameters
        ----------
        scores : MultilabelScores
        k : int >= 1

        Returns
        -------
        paths : ndarray of shape (n_samples, n_labels, k), int64
            ``paths[:, :, r]`` holds the ``r``-th best subsets; -1 where an example has
            fewer than ``r + 1`` subsets of finite score.
        path_scores : ndarray of shape (n_samples, k)
            Non-increasing along each row; -inf where fewer exist.

        Raises
        ------
        InfeasibleOutputError
            When an example has fewer than ``self.k`` labels of finite score.
        """
        self._check_scores(scores)
        K = check_k(k)
        n, L = scores.unary.shape
        with threads_for(n * (L * np.log2(L + 1) + K * (self.k + np.log2(K + 1)))):
            paths, top = kernels.top_k(scores.unary, self.k, K)
        check_feasible(top[:, 0])
        return paths, top

    def sample_uniform(self, scores, n_draws, random_state=None):
        """Independent uniform draws of subsets of ``k`` labels of finite score.

        The ``k`` labels with the smallest of independent uniform keys, the labels
        scored -inf excluded: every allowed subset has the same probability.

        Parameters
        ----------
        scores : MultilabelScores
        n_draws : int >= 1
        random_state : None, int, numpy Generator or RandomState, default=None
            See :func:`~skstruct.decoders._core.sampling.check_random_state`.

        Returns
        -------
        ndarray of shape (n_samples, n_labels, n_draws), int64
            ``[..., d]`` holds the ``d``-th draw of every example.

        Raises
        ------
        InfeasibleOutputError
            When an example has fewer than ``k`` labels of finite score.
        """
        self._check_scores(scores)
        n_draws = check_k(n_draws, "n_draws")
        rng = check_random_state(random_state)
        unary = scores.unary
        n, L = unary.shape
        finite = unary > -np.inf
        check_feasible(np.where(finite.sum(axis=1) >= self.k, 0.0, -np.inf))
        keys = rng.random((n, n_draws, L))
        keys[np.broadcast_to(~finite[:, None, :], keys.shape)] = 2.0
        chosen = np.argpartition(keys, self.k - 1, axis=2)[..., : self.k]
        draws = np.zeros((n, n_draws, L), dtype=np.int64)
        np.put_along_axis(draws, chosen, 1, axis=2)
        return np.ascontiguousarray(draws.transpose(0, 2, 1))

    def neighbours(self, scores, y, k=1):
        """Every subset of finite score at Hamming distance 1 .. ``k`` from ``y``.

        Two subsets of the same size differ in an even number of labels: at distance
        2 j, j labels of ``y`` are turned off and j others on. ``k`` here is the largest
        distance (not the subset size ``self.k``): ``k = 1`` has no neighbours, ``k = 2``
        and ``k = 3`` the single swaps.

        Order: by distance (number of swaps j); within it, by the set of labels that
        change (the j turned off and the j turned on, sorted), in lexicographic order.
        A neighbour with a label scored -inf on is left out (``y`` itself may have
        one). At most
        :data:`~skstruct.decoders._core.sampling.MAX_NEIGHBOUR_CANDIDATES` candidates per
        example.

        Parameters
        ----------
        scores : MultilabelScores
        y : ndarray of shape (n_samples, n_labels)
            0/1 subsets of ``self.k`` labels.
        k : int >= 1, default=1

        Returns
        -------
        paths : ndarray of shape (n_samples, n_labels, max(counts)), int64
            ``paths[i, :, r]`` is the ``r``-th neighbour of example ``i``; -1 from
            ``counts[i]`` on.
        counts : ndarray of shape (n_samples,), int64
        """
        self._check_scores(scores)
        distance = check_k(k)
        y = self._check_subsets(y, scores)
        n, L = y.shape
        size = self.k
        swaps = range(1, min(distance // 2, size, L - size) + 1)
        candidates = sum(comb(size, j) * comb(L - size, j) for j in swaps)
        if candidates > MAX_NEIGHBOUR_CANDIDATES:
            raise ValueError(
                f"SubsetDecoder(k={size}).neighbours with k={distance} would list "
                f"{candidates} subsets of {L} labels per example, more than "
                f"{MAX_NEIGHBOUR_CANDIDATES}; use a smaller k."
            )
        forbidden = scores.unary == -np.inf
        bad_y = (forbidden & (y == 1)).sum(axis=1)
        # the labels on, then the labels off, in increasing label index
        ranked = np.argsort(1 - y, axis=1, kind="stable")
        on, off = ranked[:, :size], ranked[:, size:]
        rows = np.arange(n)[:, None, None]
        blocks = []
        for j in swaps:
            removed = np.array(list(itertools.combinations(range(size), j)), dtype=np.int64)
            added = np.array(list(itertools.combinations(range(L - size), j)),
                             dtype=np.int64)
            # (n, candidates, j): the labels turned off and on
            out_labels = np.repeat(on[:, removed], added.shape[0], axis=1)
            in_labels = np.tile(off[:, added], (1, removed.shape[0], 1))
            changed = np.sort(np.concatenate((out_labels, in_labels), axis=2), axis=2)
            order = np.lexsort(np.moveaxis(changed[..., ::-1], 2, 0), axis=-1)[..., None]
            out_labels = np.take_along_axis(out_labels, order, axis=1)
            in_labels = np.take_along_axis(in_labels, order, axis=1)
            valid = bad_y[:, None] == (forbidden[rows, out_labels].sum(axis=2)
                                       - forbidden[rows, in_labels].sum(axis=2))
            blocks.append((out_labels, in_labels, valid))
        counts = sum((valid.sum(axis=1) for *_, valid in blocks),
                     np.zeros(n, dtype=np.int64)).astype(np.int64)
        check_neighbour_entries(n * L, counts)
        width = int(counts.max()) if n else 0
        paths = np.full((n, L, width), -1, dtype=np.int64)
        start = np.zeros(n, dtype=np.int64)
        for out_labels, in_labels, valid in blocks:
            example, candidate = np.nonzero(valid)
            column = (start[:, None] + np.cumsum(valid, axis=1) - 1)[example, candidate]
            paths[example, :, column] = y[example]
            paths[example[:, None], out_labels[example, candidate], column[:, None]] = 0
            paths[example[:, None], in_labels[example, candidate], column[:, None]] = 1
            start += valid.sum(axis=1)
        return paths, counts

    def loss_augmented_map(self, scores, y_true, task_loss, rescaling="margin"):
        """argmax_y H(θ_y, Δ(y_true, y)) over the subsets of ``k`` labels, exactly.

        Losses with per-label costs (Hamming) under margin rescaling: MAP on
        :meth:`cost_augmented` scores; the 0/1 loss under either rescaling: the gold
        subset against the best other one (top-2).

        Parameters
        ----------
        scores : MultilabelScores
        y_true : ndarray of shape (n_samples, n_labels)
            Gold subsets of ``k`` labels.
        task_loss : TaskLoss or str
            A subset is scored as a sequence of n_labels binary states.
        rescaling : {"margin", "slack"}, default="margin"

        Returns
        -------
        ndarray of shape (n_samples, n_labels), int64
        """
        return super().loss_augmented_map(scores, y_true, task_loss, rescaling)

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

    def _unsupported_loss(self, task_loss, rescaling):
        return no_exact_loss_augmented_map(
            self, task_loss, rescaling,
            "losses with per-label costs (HammingLoss, or a loss with unary_costs) under "
            "margin rescaling and ZeroOneLoss under either rescaling",
            f"For a loss that is a sum over labels, implement "
            f"{type(task_loss).__name__}.unary_costs(y_true, offsets, n_states) (with "
            "n_states=2) and use rescaling='margin'.",
        )

    def check_outputs(self, y, offsets):
        """Raise a clear ``ValueError`` unless every row of ``y`` is a 0/1 vector with
        exactly ``k`` ones.

        Parameters
        ----------
        y : ndarray of shape (n_samples, n_labels)
        offsets : ndarray of shape (n_samples + 1,)
            Label offsets (``arange(n_samples + 1) * n_labels``); only their count is read.
        """
        self._check_params()
        y = np.asarray(y)
        if y.ndim != 2:
            raise ValueError(
                f"y has shape {y.shape}; SubsetDecoder outputs are 0/1 indicator "
                "matrices (n_samples, n_labels)."
            )
        if y.shape[1] < self.k:
            raise ValueError(
                f"SubsetDecoder(k={self.k}) turns on {self.k} labels, but y has only "
                f"{y.shape[1]}."
            )
        n, L = y.shape
        y = check_encoded_outputs(y, np.arange(n + 1) * L, 1, shape=y.shape, unit="label",
                                  expected="0 or 1 (a 0/1 indicator matrix)",
                                  whole_floats=True)
        self._check_counts(y)

    def parts(self, scores, y):
        """Indicator parts of the subsets ``y`` (n_samples, n_labels)."""
        self._check_scores(scores)
        return MultilabelParts(self._check_subsets(y, scores).astype(np.float64))

    def score_outputs(self, scores, y):
        """θ_y = Σ_j unary[i, j] y[i, j] of every example, shape (n_samples,); -inf for a
        subset with a label scored -inf."""
        self._check_scores(scores)
        return _scores_of(scores.unary, self._check_subsets(y, scores))

