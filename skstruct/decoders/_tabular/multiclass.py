"""Multiclass outputs (one class per example): score and part containers and the decoder."""

import numpy as np

from . import kernels
from .._core.decoder import Decoder
from .._core.checks import (
    check_encoded_outputs,
    check_feasible,
    check_k,
    check_slack_gold,
    check_task_loss_argument,
    keeps_operations,
)
from .._core.sampling import check_n_draws, check_random_state
from .._core.unary import UnaryParts, UnaryScores

__all__ = ["MulticlassScores", "MulticlassParts", "MulticlassDecoder"]


class MulticlassScores(UnaryScores):
    """Part scores η of a batch of multiclass examples.

    The score of class ``k`` for example ``i`` is θ = unary[i, k].

    Parameters
    ----------
    unary : ndarray of shape (n_samples, n_classes)

    Examples
    --------
    >>> import numpy as np
    >>> from skstruct.decoders import MulticlassScores
    >>> scores = MulticlassScores(np.array([[0., 1., 2.], [3., 0., 0.]]))
    >>> scores.n_examples, scores.n_states
    (2, 3)
    """

    _output_name = "n_classes"

    @property
    def n_states(self):
        """Number of classes."""
        return self.unary.shape[1]

    @property
    def offsets(self):
        """Example ``i`` is the one-token "sequence" ``offsets[i]:offsets[i + 1]``.

        Lets task losses, which work on stacked tokens, evaluate multiclass outputs.
        """
        return np.arange(self.n_examples + 1)

    def _check_outputs(self, y, name="y"):
        """Encoded classes ``y`` (n_samples,) checked against the batch, as int64."""
        return _check_classes(y, self, name)


class MulticlassParts(UnaryParts):
    """Part vectors of a batch of multiclass examples: one-hot rows or class probabilities.

    Parameters
    ----------
    unary : ndarray of shape (n_samples, n_classes)

    Examples
    --------
    >>> import numpy as np
    >>> from skstruct.decoders import MulticlassParts, MulticlassScores
    >>> parts = MulticlassParts(np.array([[0., 1.], [0.5, 0.5]]))
    >>> parts.dot(MulticlassScores(np.array([[1., 2.], [3., 4.]])))
    array([2. , 3.5])
    """


def _check_classes(y, scores, name="y"):
    """Validate encoded classes: one class 0 .. n_classes - 1 per example."""
    return check_encoded_outputs(
        y, scores.offsets, scores.n_states - 1, name=name,
        expected="one of the encoded classes {low} .. {high}",
    )


def _loss_matrix(task_loss, y_true, n_classes):
    """Δ(y_true[i], k) for every example ``i`` and class ``k``, shape (n_samples, n_classes)."""
    n_samples = y_true.shape[0]
    if task_loss.decomposition == "counts":
        # increments[i, k] are the statistics of the one-token output k; calling the loss on
        # n_samples * n_classes outputs would build n_classes times more increments.
        n_gold = task_loss.gold_positives(y_true, np.arange(n_samples + 1), n_classes)
        return task_loss.eta(task_loss.increments(y_true, n_classes), n_gold[:, None])
    gold = np.repeat(y_true, n_classes)
    pred = np.tile(np.arange(n_classes), n_samples)
    delta = task_loss(gold, pred, np.arange(n_samples * n_classes + 1))
    return np.asarray(delta, dtype=np.float64).reshape(n_samples, n_classes)


class MulticlassDecoder(Decoder):
    """Exact inference for multiclass outputs: one class out of ``n_classes`` per example.

    MAP is the argmax, the log-partition and marginals are the log-sum-exp and the softmax
    of the scores, the ``k`` best are the ``k`` highest-scoring classes. Loss-augmented MAP
    evaluates Δ(y_true, k) for every class and is exact for every task loss.

    Notes
    -----
    An example is a sequence of one token, so task losses are called on labels stacked
    with ``offsets = arange(n_samples + 1)``; count-statistic losses must be bound to their
    positive classes. Time O(n_classes) per example (O(n_classes log n_classes) for top-K).

    Examples
    --------
    >>> import numpy as np
    >>> from skstruct.decoders import MulticlassDecoder, MulticlassScores
    >>> scores = MulticlassScores(np.array([[0., 1., 2.], [3., 0., 0.]]))
    >>> MulticlassDecoder().map(scores)
    array([2, 0])
    >>> MulticlassDecoder().top_k(scores, 2)[0]
    array([[2, 1],
           [0, 1]])
    """

    output_kind = "multiclass"
    capabilities = frozenset({"map", "marginals", "top_k", "loss_augmented_map", "parts",
                              "sample_uniform", "neighbours"})
    score_types = MulticlassScores

    def map(self, scores, *, return_score=False):
        """The highest-scoring class of every example.

        Parameters
        ----------
        scores : MulticlassScores
        return_score : bool, default=False

        Returns
        -------
        labels : ndarray of shape (n_samples,), int64
        best : ndarray of shape (n_samples,)
            Their scores, when ``return_score`` is True.

        Raises
        ------
        InfeasibleOutputError
            When every class of an example scores -inf.
        """
        self._check_scores(scores)
        labels = scores.unary.argmax(axis=1)
        best = scores.unary[np.arange(labels.shape[0]), labels]
        check_feasible(best)
        return (labels, best) if return_score else labels

    def _softmax(self, scores):
        """log_z (n_samples,) and probabilities (n_samples, n_classes), by one compiled
        pass over the scores (:func:`~skstruct.decoders._tabular.kernels.softmax_rows`);
        an example whose classes all score -inf gets log_z = -inf (and NaN
        probabilities)."""
        self._check_scores(scores)
        return kernels.softmax_rows(np.ascontiguousarray(scores.unary, dtype=np.float64))

    def log_partition(self, scores):
        """log Σ_k exp unary[i, k] of every example, shape (n_samples,).

        -inf for an example whose classes all score -inf.
        """
        return self._softmax(scores)[0]

    def marginals(self, scores):
        """Log-partition and class probabilities (softmax).

        Returns
        -------
        log_z : ndarray of shape (n_samples,)
        marginals : MulticlassParts
            Probabilities of shape (n_samples, n_classes), the gradient of ``log_z``.

        Raises
        ------
        InfeasibleOutputError
            When every class of an example scores -inf.
        """
        log_z, probabilities = self._softmax(scores)
        check_feasible(log_z)
        return log_z, MulticlassParts(probabilities)

    def top_k(self, scores, k):
        """The ``k`` highest-scoring classes of every example.

        Parameters
        ----------
        scores : MulticlassScores
        k : int >= 1

        Returns
        -------
        paths : ndarray of shape (n_samples, k), int64
            Classes by decreasing score (ties by class index); -1 beyond ``n_classes``
            and for the classes scored -inf, which are never listed.
        path_scores : ndarray of shape (n_samples, k)
            Non-increasing along each row; -inf where fewer classes exist.

        Raises
        ------
        InfeasibleOutputError
            When every class of an example scores -inf.
        """
        self._check_scores(scores)
        k = check_k(k)
        n_samples, n_classes = scores.unary.shape
        order = np.argsort(-scores.unary, axis=1, kind="stable")[:, :k]
        paths = np.full((n_samples, k), -1, dtype=np.int64)
        top = np.full((n_samples, k), -np.inf)
        found = np.take_along_axis(scores.unary, order, axis=1)
        paths[:, : order.shape[1]] = np.where(found > -np.inf, order, -1)
        top[:, : order.shape[1]] = found
        check_feasible(top[:, 0])
        return paths, top

    def loss_augmented_map(self, scores, y_true, task_loss, rescaling="margin"):
        """argmax_k H(unary[i, k], Δ(y_true[i], k)) for every example, exactly.

        Margin rescaling maximizes θ_k + Δ(y_true, k); slack rescaling maximizes
        Δ(y_true, k) (1 + θ_k − θ_{y_true}). With one part per class, the classes can be
        enumerated: Δ(y_true[i], k) is evaluated for every class, whatever the loss
        declares (count-statistic losses from their per-class statistics, others by a
        call), so no hook of :meth:`Decoder.loss_augmented_map` is needed.

        Parameters
        ----------
        scores : MulticlassScores
        y_true : ndarray of shape (n_samples,), int
            Encoded gold classes.
        task_loss : TaskLoss
            Any task loss; count-statistic losses must be bound to their positive classes.
        rescaling : {"margin", "slack"}, default="margin"

        Returns
        -------
        ndarray of shape (n_samples,), int64
            Never a class scored -inf.

        Raises
        ------
        InfeasibleOutputError
            When every class of an example scores -inf.
        ValueError
            When ``y_true`` holds classes out of range or has the wrong length, or under
            slack rescaling when a gold class scores -inf.
        """
        self._check_scores(scores)
        task_loss = check_task_loss_argument(task_loss)
        y_true = _check_classes(y_true, scores, "y_true")
        delta = _loss_matrix(task_loss, y_true, scores.n_states)
        if rescaling == "margin":
            objective = scores.unary + delta
        elif rescaling == "slack":
            gold = scores.unary[np.arange(y_true.shape[0]), y_true]
            if np.any(gold == -np.inf):
                self.map(scores)  # an infeasible example is the cause to report first
                check_slack_gold(gold)
            objective = delta * (1.0 + scores.unary - gold[:, None])
        else:
            raise ValueError(f"rescaling must be 'margin' or 'slack'; got {rescaling!r}.")
        forbidden = scores.unary == -np.inf
        objective = np.where(forbidden, -np.inf, objective)
        check_feasible(np.where(forbidden.all(axis=1), -np.inf, 0.0))
        return objective.argmax(axis=1)

    def sparsemap(self, scores, *, max_iter=100, tol=1e-9, init=None, **options):
        """SparseMAP in closed form: the sparsemax of every example's class scores (the
        Euclidean projection onto the simplex), with the same result and options as
        :meth:`Decoder.sparsemap`."""
        if not keeps_operations(self, MulticlassDecoder, ("map", "parts")):
            # the closed form holds for this family's one-hot parts and MAP; a subclass that
            # redefines them gets the active set, which reads them
            return super().sparsemap(scores, max_iter=max_iter, tol=tol, init=init,
                                     **options)
        from .._sparsemap.sparsemap import sparsemax_sparsemap

        return sparsemax_sparsemap(self, scores, max_iter=max_iter, tol=tol, init=init, **options)

    def compiled_oracle(self, task_loss, rescaling, y, y_offsets, n_unary=None):
        """The compiled per-example oracle of multiclass outputs (see
        :meth:`Decoder.compiled_oracle`)."""
        if not keeps_operations(self, MulticlassDecoder):
            return None
        from .oracle import compiled_multiclass_oracle

        return compiled_multiclass_oracle(self, task_loss, rescaling, y, y_offsets)

    def parts(self, scores, y):
        """One-hot parts of the encoded classes ``y`` (n_samples,), as MulticlassParts."""
        self._check_scores(scores)
        y = _check_classes(y, scores)
        unary = np.zeros(scores.unary.shape)
        unary[np.arange(y.shape[0]), y] = 1.0
        return MulticlassParts(unary)

    def score_outputs(self, scores, y):
        """θ_y = unary[i, y[i]] of every example, shape (n_samples,)."""
        self._check_scores(scores)
        y = _check_classes(y, scores)
        return scores.unary[np.arange(y.shape[0]), y]

    def sample_uniform(self, scores, n_draws, random_state=None):
        """Independent uniform draws from the classes of finite score.

        Parameters
        ----------
        scores : MulticlassScores
        n_draws : int >= 1
        random_state : None, int, numpy.random.Generator or numpy.random.RandomState
            Turned into a Generator by ``numpy.random.default_rng``.

        Returns
        -------
        paths : ndarray of shape (n_samples, n_draws), int64

        Raises
        ------
        InfeasibleOutputError
            When every class of an example scores -inf.
        """
        self._check_scores(scores)
        n_draws = check_n_draws(n_draws)
        rng = check_random_state(random_state)
        finite = scores.unary > -np.inf
        counts = finite.sum(axis=1)
        check_feasible(np.where(counts > 0, 0.0, -np.inf))
        # the r-th finite class of every example, r uniform in 0 .. count − 1
        rank = rng.integers(0, counts[:, None], size=(scores.n_examples, n_draws))
        cumulative = np.cumsum(finite, axis=1)
        return _rank_to_class(cumulative, rank)

    def neighbours(self, scores, y, k=1):
        """The other classes of finite score (Hamming distance 1; every ``k`` >= 1), in
        increasing order.

        Parameters
        ----------
        scores : MulticlassScores
        y : ndarray of shape (n_samples,)
        k : int >= 1

        Returns
        -------
        paths : ndarray of shape (n_samples, max(counts)), int64, padded with -1
        counts : ndarray of shape (n_samples,), int64
        """
        self._check_scores(scores)
        check_k(k)
        y = _check_classes(y, scores)
        other = scores.unary > -np.inf
        other[np.arange(y.shape[0]), y] = False
        counts = other.sum(axis=1).astype(np.int64)
        width = int(counts.max()) if counts.size else 0
        paths = np.full((y.shape[0], width), -1, dtype=np.int64)
        rows, classes = np.nonzero(other)
        position = np.arange(rows.shape[0]) - np.repeat(np.cumsum(counts) - counts, counts)
        paths[rows, position] = classes
        return paths, counts


def _rank_to_class(cumulative, rank):
    """The class whose running count of finite classes first exceeds ``rank``, per row:
    cumulative (n, C) non-decreasing, rank (n, D) -> (n, D)."""
    return (cumulative[:, None, :] <= rank[:, :, None]).sum(axis=2).astype(np.int64)
